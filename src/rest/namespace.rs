//! core/v1 Namespaces: name rules, `spec.finalizers`, `status.phase`.

use super::typed::go_round_trip;
use super::{object, Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::field::ErrorList;
use crate::field::{Error, Path};
use crate::pipeline::decode::type_meta_errors;
use crate::pipeline::trace::Trace;
use crate::schema::objectmeta;
use crate::status::Status;
use serde_json::{json, Value};

/// Namespaces created at start-up (and which may not be deleted where kube forbids it).
pub const SYSTEM_NAMESPACES: [&str; 3] = ["default", "kube-system", "kube-public"];

/// The OpenAPI definition of Namespaces.
const DEFINITION: &str = "io.k8s.api.core.v1.Namespace";

/// The `namespaces` resource.
pub struct NamespaceKind {
    descriptor: Descriptor,
    schema: std::sync::Arc<crate::schema::structural::Structural>,
}

impl NamespaceKind {
    /// The kind, storing under `prefix`.
    pub fn new(prefix: &str) -> Self {
        NamespaceKind {
            descriptor: crate::registry::builtin::descriptor("", "namespaces", prefix),
            schema: super::typed::schema_of(DEFINITION),
        }
    }

    fn validate_namespace(obj: &Value, old: Option<&Value>) -> Vec<Error> {
        let meta_path = Path::new("metadata");
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        let mut errs = type_meta_errors(obj, "v1", "Namespace", true);
        errs.extend(objectmeta::validate_namespace_meta(&meta, &meta_path));
        if let Some(old) = old {
            let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
            errs.extend(objectmeta::validate_object_meta_update(
                &meta, &old_meta, &meta_path,
            ));
        }
        if let Some(fins) = obj.pointer("/spec/finalizers").and_then(Value::as_array) {
            let names: Vec<String> = fins
                .iter()
                .map(|f| f.as_str().unwrap_or("").to_string())
                .collect();
            errs.extend(objectmeta::validate_finalizers(
                &names,
                &Path::new("spec").child("finalizers"),
            ));
        }
        errs
    }
}

impl ResourceKind for NamespaceKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }
}

/// kube labels every namespace with its own name.
fn label_with_name(obj: &mut Value) {
    let name = object::name(obj).to_string();
    let meta = object::meta_mut(obj);
    let labels = meta.entry("labels").or_insert_with(|| json!({}));
    if let Some(l) = labels.as_object_mut() {
        l.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

impl Strategy for NamespaceKind {
    fn decode(
        &self,
        obj: &mut Value,
        _old: Option<&Value>,
        _opts: &WriteOptions,
        _t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        go_round_trip(obj, DEFINITION);
        Ok(Vec::new())
    }

    fn decode_admitted(&self, obj: &mut Value, _t: &mut Trace) {
        go_round_trip(obj, DEFINITION);
    }

    fn has_generation(&self) -> bool {
        false
    }

    fn default(&self, obj: &mut Value, _t: &mut Trace) {
        // kube's SetDefaults_Namespace: the name label is a default, so the write's
        // managedFields entry owns it.
        if !object::name(obj).is_empty() {
            label_with_name(obj);
        }
    }

    fn record_managed_fields(&self, old: Option<&Value>, obj: &mut Value, opts: &WriteOptions) {
        super::typed::record_update_entry(&self.descriptor, &self.schema, old, obj, opts);
    }

    fn merge_schema(&self) -> &crate::schema::structural::Structural {
        &self.schema
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), json!("v1"));
            m.insert("kind".into(), json!("Namespace"));
            m.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
            m.insert("status".into(), json!({"phase": "Active"}));
        }
        label_with_name(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        // kube's namespace status and finalize strategies keep the rest of what was
        // sent, metadata included: only the other half comes from the stored object.
        // The main resource changes neither: spec.finalizers change only through
        // /finalize, status only through /status.
        let (keep_spec, keep_status) = match opts.subresource.as_str() {
            "status" => (true, false),
            "finalize" => (false, true),
            _ => (true, true),
        };
        if let Some(m) = new.as_object_mut() {
            if keep_spec {
                m.insert("spec".into(), old.get("spec").cloned().unwrap_or(json!({})));
            }
            if keep_status {
                m.insert(
                    "status".into(),
                    old.get("status").cloned().unwrap_or(json!({})),
                );
            }
        }
        label_with_name(new);
    }

    fn validate(&self, obj: &Value, _warnings: &mut Vec<String>, _t: &mut Trace) -> ErrorList {
        Self::validate_namespace(obj, None)
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        _opts: &WriteOptions,
        _warnings: &mut Vec<String>,
        _t: &mut Trace,
    ) -> Result<ErrorList, Status> {
        Ok(Self::validate_namespace(new, Some(old)))
    }

    fn invalid(&self, obj: &Value, errs: &[Error]) -> Status {
        Status::invalid("Namespace", "", object::name(obj), errs)
    }

    fn printer_columns(&self) -> Vec<crate::table::PrinterColumn> {
        vec![
            crate::table::PrinterColumn {
                name: "Status".into(),
                type_: "string".into(),
                format: String::new(),
                description: "The status of the namespace".into(),
                priority: 0,
                json_path: ".status.phase".into(),
            },
            crate::table::PrinterColumn::age(),
        ]
    }

    fn finalizers_pending(&self, obj: &Value) -> bool {
        !object::finalizers(obj).is_empty()
            || obj
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    }
}
