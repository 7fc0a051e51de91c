//! CustomResourceDefinitions as a resource kind: defaulting, validation, status as
//! kube's controllers leave it, and the catalog kept in step with every write.

use super::typed::go_round_trip;
use super::{object, Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::field::ErrorList;
use crate::pipeline::decode::type_meta_errors;
use crate::pipeline::trace::Trace;
use crate::registry::{catalog::Catalog, crd, crd_cache};
use crate::status::Status;
use serde_json::{json, Value};
use std::sync::Arc;

/// The finalizer kube puts on a deleted CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The OpenAPI definition of CRDs.
const DEFINITION: &str =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition";

/// The `customresourcedefinitions` resource.
pub struct CrdKind {
    descriptor: Descriptor,
    catalog: Arc<Catalog>,
}

impl CrdKind {
    /// The kind, storing under `prefix`.
    pub fn new(prefix: &str, catalog: Arc<Catalog>) -> Self {
        CrdKind {
            descriptor: crate::registry::builtin::descriptor(
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                prefix,
            ),
            catalog,
        }
    }

    fn check_type_meta(&self, obj: &Value) -> Result<(), Status> {
        let errs = type_meta_errors(
            obj,
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            true,
        );
        if errs.is_empty() {
            return Ok(());
        }
        Err(self.invalid(obj, &errs))
    }

    fn status_for(&self, obj: &Value, old_status: &Value) -> Value {
        // Only CRDs of the same group can conflict on names.
        let group = obj
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let in_group = self.catalog.in_group(group);
        let others: Vec<&Value> = in_group
            .iter()
            .filter(|c| c.name != object::name(obj))
            .map(|c| &c.object)
            .collect();
        crd::crd_status_with_others(obj, old_status, &others, &object::now())
    }
}

impl ResourceKind for CrdKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }
}

impl Strategy for CrdKind {
    fn decode(
        &self,
        obj: &mut Value,
        _old: Option<&Value>,
        _opts: &WriteOptions,
        _t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        self.check_type_meta(obj)?;
        go_round_trip(obj, DEFINITION);
        Ok(Vec::new())
    }

    fn decode_admitted(&self, obj: &mut Value, _t: &mut Trace) {
        go_round_trip(obj, DEFINITION);
    }

    fn default(&self, obj: &mut Value, _t: &mut Trace) {
        crd::default_crd(obj);
    }

    fn has_generation(&self) -> bool {
        true
    }

    fn status_subresource(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        crd::reset_status_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        if opts.subresource == "status" {
            *new = object::status_only(new, old);
        } else {
            crd::carry_status_for_update(new, old);
        }
    }

    fn validate(&self, obj: &Value, _warnings: &mut Vec<String>, _t: &mut Trace) -> ErrorList {
        // The spec's checks are the costly part: once per spec content in the process.
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        crd::validate_crd_given_spec(obj, crd_cache::validate_spec(spec))
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        opts: &WriteOptions,
        _warnings: &mut Vec<String>,
        _t: &mut Trace,
    ) -> Result<ErrorList, Status> {
        Ok(if opts.subresource == "status" {
            crd::validate_crd_status_update(new, old)
        } else {
            crd::validate_crd_update(new, old)
        })
    }

    fn invalid(&self, obj: &Value, errs: &[crate::field::Error]) -> Status {
        Status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            object::name(obj),
            errs,
        )
    }

    /// The conditions kube's CRD controllers would set, and the type metadata.
    fn canonicalize(&self, obj: &mut Value, _old: Option<&Value>, opts: &WriteOptions) {
        if opts.subresource != "status" {
            let status = self.status_for(obj, &obj.get("status").cloned().unwrap_or(Value::Null));
            if let Some(m) = obj.as_object_mut() {
                m.insert("status".into(), status);
            }
        }
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), json!("apiextensions.k8s.io/v1"));
            m.insert("kind".into(), json!("CustomResourceDefinition"));
        }
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn printer_columns(&self) -> Vec<crate::table::PrinterColumn> {
        // kube prints the creation time itself, not an age.
        vec![crate::table::PrinterColumn {
            name: "Created At".into(),
            type_: "string".into(),
            format: String::new(),
            description: "Time the object was created".into(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".into(),
        }]
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        // apiextensions registers no field labels of its own.
        crate::rest::typed::default_field_value(obj, field)
    }
}
