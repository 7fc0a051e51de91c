//! What the two CRD-time passes over a schema share: the options they run under
//! (relaxed on update, see `checks`), OpenAPI's type names, and the small reads and the
//! error both make of a node.

use crate::field::{Error, Path};
use crate::schema::props::JSONSchemaProps;
use serde_json::Value;
use std::collections::BTreeMap;

/// Ratcheting switches of the CRD-time schema checks. `Default` is what kube uses on
/// create; on update use [`SchemaCheckOptions::for_update`] with the old CRD's schemas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemaCheckOptions {
    /// `type` must be one of the OpenAPI v3 types.
    pub require_valid_property_type: bool,
    /// The schema must be structural (and its defaults are then checked).
    pub require_structural_schema: bool,
    /// Defaults must survive pruning unchanged.
    pub require_pruned_defaults: bool,
    /// Items of `x-kubernetes-list-type: set` lists must be atomic.
    pub require_atomic_set_type: bool,
    /// list-type map keys must be required or defaulted and not nullable; set/map items not nullable.
    pub require_map_list_keys_map_set_validation: bool,
    /// The CRD version has the status subresource: the root may only use a few fields.
    pub status_subresource: bool,
}

impl Default for SchemaCheckOptions {
    fn default() -> Self {
        SchemaCheckOptions {
            require_valid_property_type: true,
            require_structural_schema: true,
            require_pruned_defaults: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
            status_subresource: false,
        }
    }
}

/// kube's `openapiV3Types`, sorted as kube lists them in `supported values`.
pub(super) const OPENAPI_V3_TYPES: [&str; 6] =
    ["array", "boolean", "integer", "number", "object", "string"];

/// kube's error for a `type` that must be another: `Required` when it is empty,
/// `Invalid` with the type otherwise.
pub(super) fn wrong_type(fld: &Path, ty: &str, msg: &str) -> Error {
    if ty.is_empty() {
        Error::required(&fld.child("type"), msg)
    } else {
        Error::invalid(&fld.child("type"), Value::String(ty.to_string()), msg)
    }
}

/// A node's `type`, empty when unset.
pub(super) fn type_of(s: &JSONSchemaProps) -> &str {
    s.type_.as_deref().unwrap_or("")
}

/// A node's `properties` when it has some.
pub(super) fn non_empty_props(s: &JSONSchemaProps) -> Option<&BTreeMap<String, JSONSchemaProps>> {
    s.properties.as_ref().filter(|p| !p.is_empty())
}
