//! CustomResourceDefinitions as a resource kind: defaulting, validation, status as
//! kube's controllers leave it, and the catalog kept in step with every write.

use super::typed::go_round_trip;
use super::{object, Admitted, Descriptor, ResourceKind, WriteOptions};
use crate::registry::{catalog::Catalog, crd};
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
        let errs = type_meta_errors(obj, "apiextensions.k8s.io/v1", "CustomResourceDefinition");
        if errs.is_empty() {
            return Ok(());
        }
        Err(Status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            object::name(obj),
            &errs,
        ))
    }

    fn status_for(&self, obj: &Value, old_status: &Value) -> Value {
        let others: Vec<Value> = self
            .catalog
            .all()
            .iter()
            .filter(|c| c.name != object::name(obj))
            .map(|c| c.object.clone())
            .collect();
        let others: Vec<&Value> = others.iter().collect();
        crd::crd_status_with_others(obj, old_status, &others, &object::now())
    }

    fn invalid(obj: &Value, errs: &[crate::field::Error]) -> Status {
        Status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            object::name(obj),
            errs,
        )
    }
}

/// `apiVersion`/`kind` checks for built-in kinds.
pub fn type_meta_errors(obj: &Value, api_version: &str, kind: &str) -> crate::field::ErrorList {
    let mut errs = Vec::new();
    let k = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let v = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !k.is_empty() && k != kind {
        errs.push(crate::field::Error::invalid(
            &crate::field::Path::new("kind"),
            json!(k),
            format!("must be {kind}"),
        ));
    }
    if !v.is_empty() && v != api_version {
        errs.push(crate::field::Error::invalid(
            &crate::field::Path::new("apiVersion"),
            json!(v),
            format!("must be {api_version}"),
        ));
    }
    errs
}

impl ResourceKind for CrdKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
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

    fn admit_create(&self, mut obj: Value, _opts: &WriteOptions) -> Result<Admitted, Status> {
        self.check_type_meta(&obj)?;
        go_round_trip(&mut obj, DEFINITION);
        crd::default_crd(&mut obj);
        crd::reset_status_for_create(&mut obj);
        object::prepare_for_create(&mut obj, true);
        let errs = crd::validate_crd(&obj);
        if !errs.is_empty() {
            return Err(Self::invalid(&obj, &errs));
        }
        let status = self.status_for(&obj, &obj.get("status").cloned().unwrap_or(Value::Null));
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), status);
            m.insert("apiVersion".into(), json!("apiextensions.k8s.io/v1"));
            m.insert("kind".into(), json!("CustomResourceDefinition"));
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
        self.check_type_meta(&new)?;
        go_round_trip(&mut new, DEFINITION);
        let status_write = opts.subresource == "status";
        if status_write {
            new = object::status_only(&new, old);
        } else {
            crd::default_crd(&mut new);
            crd::carry_status_for_update(&mut new, old);
        }
        object::prepare_for_update(&mut new, old);
        if !status_write {
            object::bump_generation_if_changed(&mut new, old, true);
        }
        let errs = if status_write {
            crd::validate_crd_status_update(&new, old)
        } else {
            crd::validate_crd_update(&new, old)
        };
        if !errs.is_empty() {
            return Err(Self::invalid(&new, &errs));
        }
        if opts.subresource != "status" {
            let status = self.status_for(&new, &new.get("status").cloned().unwrap_or(Value::Null));
            if let Some(m) = new.as_object_mut() {
                m.insert("status".into(), status);
            }
        }
        if let Some(m) = new.as_object_mut() {
            m.insert("apiVersion".into(), json!("apiextensions.k8s.io/v1"));
            m.insert("kind".into(), json!("CustomResourceDefinition"));
        }
        Ok(Admitted {
            object: new,
            ..Default::default()
        })
    }
}
