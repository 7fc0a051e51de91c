//! The schema strategy: how a built-in kind without a hand strategy of its own is
//! served. Its OpenAPI schema decodes it (types, unknown fields per `fieldValidation`)
//! and defaults it (`default`s, Go's zero values); object metadata is validated;
//! `TypedKind` keeps `status` apart when the kind has a status subresource and moves
//! the generation where kube does (`registry::builtin::GENERATION`). What kube's own
//! strategy of such a kind adds (its defaulting functions, validation, printer
//! columns) is not here yet.

use super::age_cell;
use crate::field::{ErrorList, Path};
use crate::rest::typed::TypedStrategy;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use serde_json::{json, Value};

/// The strategy of a kind served from its schema alone.
pub struct SchemaStrategy {
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl TypedStrategy for SchemaStrategy {
    fn schema_defaults(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        crate::schema::objectmeta::validate_object_meta(
            &meta,
            self.namespaced,
            &Path::new("metadata"),
        )
    }

    fn validate_update(&self, _new: &Value, _old: &Value) -> ErrorList {
        // `TypedKind` checks the metadata update; the kind adds nothing yet.
        Vec::new()
    }

    fn printer(&self) -> BuiltinPrinter {
        BuiltinPrinter {
            columns: vec![BuiltinColumn::name(0), BuiltinColumn::age()],
            cells: |obj, now| vec![json!(crate::rest::object::name(obj)), age_cell(obj, now)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_scoped_objects_may_not_name_a_namespace() {
        let s = SchemaStrategy { namespaced: false };
        let errs = s.validate(&json!({"metadata": {"name": "x", "namespace": "default"}}));
        assert_eq!(errs.len(), 1, "{errs:?}");
        let s = SchemaStrategy { namespaced: true };
        assert!(s
            .validate(&json!({"metadata": {"name": "x", "namespace": "default"}}))
            .is_empty());
    }
}
