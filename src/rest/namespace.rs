//! core/v1 Namespaces: name rules, `spec.finalizers`, `status.phase`.

use super::crd::type_meta_errors;
use super::typed::go_round_trip;
use super::{object, Admitted, Descriptor, ResourceKind, WriteOptions};
use crate::field::{Error, Path};
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
}

impl NamespaceKind {
    /// The kind, storing under `prefix`.
    pub fn new(prefix: &str) -> Self {
        NamespaceKind {
            descriptor: crate::registry::builtin::descriptor("", "namespaces", prefix),
        }
    }

    fn validate(obj: &Value, old: Option<&Value>) -> Vec<Error> {
        let meta_path = Path::new("metadata");
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        let mut errs = type_meta_errors(obj, "v1", "Namespace");
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

    fn admit_create(&self, mut obj: Value, _opts: &WriteOptions) -> Result<Admitted, Status> {
        go_round_trip(&mut obj, DEFINITION);
        object::prepare_for_create(&mut obj, false);
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), json!("v1"));
            m.insert("kind".into(), json!("Namespace"));
            m.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
            m.insert("status".into(), json!({"phase": "Active"}));
        }
        // kube labels every namespace with its own name.
        let name = object::name(&obj).to_string();
        let meta = object::meta_mut(&mut obj);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
        let errs = Self::validate(&obj, None);
        if !errs.is_empty() {
            return Err(Status::invalid("Namespace", "", object::name(&obj), &errs));
        }
        Ok(Admitted {
            object: obj,
            ..Default::default()
        })
    }

    fn admit_update(
        &self,
        mut new: Value,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        go_round_trip(&mut new, DEFINITION);
        // kube's namespace status and finalize strategies keep the rest of what was
        // sent, metadata included: only the other half comes from the stored object.
        match opts.subresource.as_str() {
            "status" => {
                if let Some(m) = new.as_object_mut() {
                    m.insert("spec".into(), old.get("spec").cloned().unwrap_or(json!({})));
                }
            }
            "finalize" => {
                if let Some(m) = new.as_object_mut() {
                    m.insert(
                        "status".into(),
                        old.get("status").cloned().unwrap_or(json!({})),
                    );
                }
            }
            _ => {
                // spec.finalizers change only through /finalize; status only through /status.
                if let Some(m) = new.as_object_mut() {
                    m.insert("spec".into(), old.get("spec").cloned().unwrap_or(json!({})));
                    m.insert(
                        "status".into(),
                        old.get("status").cloned().unwrap_or(json!({})),
                    );
                }
            }
        }
        object::prepare_for_update(&mut new, old);
        let name = object::name(&new).to_string();
        let meta = object::meta_mut(&mut new);
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(l) = labels.as_object_mut() {
            l.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
        let errs = Self::validate(&new, Some(old));
        if !errs.is_empty() {
            return Err(Status::invalid("Namespace", "", object::name(&new), &errs));
        }
        Ok(Admitted {
            object: new,
            ..Default::default()
        })
    }
}
