//! The schema strategy: how a built-in kind without a hand strategy of its own is
//! served. Its OpenAPI schema decodes it (types, unknown fields per `fieldValidation`)
//! and defaults it (`default`s, Go's zero values); kube's defaulting functions
//! (`builtin_defaults`) and validation (`builtin_validation`) of the kind follow;
//! `TypedKind` keeps `status` apart when the kind has a status subresource and moves
//! the generation where kube does (`registry::builtin::GENERATION`). Its Table columns
//! are kube's printer of the kind (`apimachinery::printers`; Services: `service::printer`),
//! NAME and AGE for a kind kube prints no more of. A kind kube serves in several
//! versions from one storage (HorizontalPodAutoscalers, the beta versions
//! `--runtime-config` turns on) is stored in kube's storage version and converted on
//! the way out (`builtin_conversion`).

use super::age_cell;
use crate::field::{ErrorList, Path};
use crate::rest::typed::TypedStrategy;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use apimachinery::{builtin_conversion, builtin_defaults, builtin_validation};
use serde_json::{json, Value};

/// The strategy of a kind served from its schema and kube's rules for it.
pub struct SchemaStrategy {
    /// API group (`""`: core).
    pub group: String,
    /// Version served.
    pub version: String,
    /// The version objects are stored in (`version` unless kube stores another:
    /// `registry::builtin`'s `storage_version`).
    pub storage_version: String,
    /// `Kind`.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// `--allow-privileged`: whether pod specs may ask for privileged containers.
    pub allow_privileged: bool,
}

impl SchemaStrategy {
    /// kube's `--allow-privileged=false` check of the kind's pod spec, if any.
    fn privileged(&self, obj: &Value) -> ErrorList {
        if self.allow_privileged {
            return ErrorList::new();
        }
        builtin_validation::privileged_containers(&self.group, &self.kind, obj)
    }
}

impl TypedStrategy for SchemaStrategy {
    fn schema_defaults(&self) -> bool {
        true
    }

    fn default(&self, obj: &mut Value) {
        builtin_defaults::apply(&self.group, &self.version, &self.kind, obj);
        builtin_defaults::round_trip(&self.group, &self.version, &self.kind, obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // kube answers a create with the stored object decoded again, defaults
        // included: those of a status just reset (a claim's `phase: Pending`) too.
        self.default(obj);
        match (self.group.as_str(), self.kind.as_str()) {
            ("", "Pod") => {
                builtin_defaults::core::pod_prepare_for_create(obj, &crate::rest::object::now())
            }
            ("apps", "DaemonSet") => builtin_defaults::apps::daemon_set_prepare_for_create(obj),
            ("apiregistration.k8s.io", "APIService") => {
                apimachinery::apiservice::prepare_for_create(obj, &crate::rest::object::now())
            }
            ("batch", "Job") => {
                let uid = crate::rest::object::meta_str(obj, "uid").to_string();
                builtin_defaults::batch::job_prepare_for_create(obj, &uid);
            }
            _ => {}
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if (self.group.as_str(), self.kind.as_str()) == ("apps", "DaemonSet") {
            builtin_defaults::apps::daemon_set_prepare_for_update(new, old);
        }
    }

    fn keeps_status_on_create(&self) -> bool {
        (self.group.as_str(), self.kind.as_str()) == ("", "Node")
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        if !builtin_validation::validates_metadata(&self.group, &self.kind) {
            let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
            errs = crate::schema::objectmeta::validate_object_meta(
                &meta,
                self.namespaced,
                &Path::new("metadata"),
            );
        }
        errs.extend(builtin_validation::validate(
            &self.group,
            &self.version,
            &self.kind,
            obj,
        ));
        errs.extend(self.privileged(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        // `TypedKind` checks the metadata update; the kind's own rules follow.
        let mut errs =
            builtin_validation::validate_update(&self.group, &self.version, &self.kind, new, old);
        errs.extend(self.privileged(new));
        errs
    }

    fn to_storage(&self, obj: &mut Value) {
        if self.storage_version != self.version {
            let storage = self.storage_version.as_str();
            builtin_conversion::convert(&self.group, &self.kind, storage, obj);
            // The defaults kube's decoder gives the stored version when it reads it.
            builtin_defaults::apply(&self.group, storage, &self.kind, obj);
        }
    }

    fn on_read(&self, obj: &mut Value) {
        if self.storage_version != self.version {
            builtin_conversion::convert(&self.group, &self.kind, &self.version, obj);
        }
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        apimachinery::builtin_fields::field_value(
            &self.group,
            &self.version,
            &self.kind,
            obj,
            field,
        )
    }

    fn printer(&self) -> BuiltinPrinter {
        if self.group.is_empty() && self.kind == "Service" {
            return super::service::printer();
        }
        apimachinery::printers::for_kind(&self.group, &self.kind).unwrap_or_else(|| {
            BuiltinPrinter {
                columns: vec![BuiltinColumn::name(0), BuiltinColumn::age()],
                cells: |obj, now| vec![json!(crate::rest::object::name(obj)), age_cell(obj, now)],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(namespaced: bool) -> SchemaStrategy {
        SchemaStrategy {
            group: "example.test".into(),
            version: "v1".into(),
            storage_version: "v1".into(),
            kind: "Thing".into(),
            namespaced,
            allow_privileged: true,
        }
    }

    #[test]
    fn cluster_scoped_objects_may_not_name_a_namespace() {
        let s = strategy(false);
        let errs = s.validate(&json!({"metadata": {"name": "x", "namespace": "default"}}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        let s = strategy(true);
        assert!(s
            .validate(&json!({"metadata": {"name": "x", "namespace": "default"}}))
            .is_empty());
    }
}
