//! The typed built-in kinds controllers touch: one [`TypedStrategy`](super::typed::TypedStrategy)
//! per kind (kube's defaults, registry strategy, validation and printer), served by
//! [`TypedKind`](super::typed::TypedKind).

pub mod component_status;
pub mod configmap;
pub mod event;
pub mod lease;
pub mod schema;
pub mod secret;
pub mod service;
pub mod service_account;
pub mod service_allocation;
pub mod token_request;
pub mod token_review;

use super::typed::TypedKind;
use crate::field::{Error, ErrorList, Path};
use crate::rest::Descriptor;
use serde_json::Value;

/// kube's `MaxSecretSize`: the most bytes a ConfigMap's or Secret's values may hold.
pub const MAX_DATA_SIZE: i64 = 1024 * 1024;

/// kube's message for a field an update may not change.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

/// kube's message when an `immutable: true` ConfigMap or Secret is changed.
pub const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";

/// The typed kind for the built-in resource at `group/version/resource`, if it has a
/// hand strategy here (its `Descriptor` comes from `registry::builtin`).
pub fn kind_for(descriptor: Descriptor, definition: &str) -> Option<TypedKind> {
    let strategy: Box<dyn super::typed::TypedStrategy> = match (
        descriptor.gr.group.as_str(),
        descriptor.gr.resource.as_str(),
    ) {
        ("", "configmaps") => Box::new(configmap::ConfigMapStrategy),
        ("", "secrets") => Box::new(secret::SecretStrategy),
        ("", "serviceaccounts") => Box::new(service_account::ServiceAccountStrategy),
        ("", "events") => Box::new(event::EventStrategy::core()),
        (event::EVENTS_GROUP, "events") => Box::new(event::EventStrategy::events_v1()),
        (lease::GROUP, "leases") => Box::new(lease::LeaseStrategy),
        _ => return None,
    };
    Some(TypedKind::new(descriptor, definition, strategy))
}

/// The kind of a built-in resource without a hand strategy: served from its schema
/// (`allow_privileged`: kube's `--allow-privileged`).
pub fn schema_kind(descriptor: Descriptor, definition: &str, allow_privileged: bool) -> TypedKind {
    let storage_version = crate::registry::builtin::lookup(
        &descriptor.gr.group,
        &descriptor.version,
        &descriptor.gr.resource,
    )
    .map_or(descriptor.version.as_str(), |r| r.storage_version)
    .to_string();
    let strategy = schema::SchemaStrategy {
        group: descriptor.gr.group.clone(),
        version: descriptor.version.clone(),
        storage_version,
        kind: descriptor.kind.clone(),
        namespaced: descriptor.namespaced,
        allow_privileged,
    };
    TypedKind::new(descriptor, definition, Box::new(strategy))
}

/// kube's `IsConfigMapKey`: the rules for keys of `data`, `binaryData`, `stringData`.
pub fn config_map_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let valid_chars = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid_chars {
        errs.push("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')".to_string());
    }
    match key {
        "." => errs.push("must not be '.'".to_string()),
        ".." => errs.push("must not be '..'".to_string()),
        k if k.starts_with("..") => errs.push("must not start with '..'".to_string()),
        _ => {}
    }
    errs
}

/// Errors for the keys of a map field (`data`, ...), sorted by key (Go's map order is random).
pub fn key_errors(map: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if let Some(m) = map.and_then(Value::as_object) {
        for key in m.keys() {
            for msg in config_map_key_errors(key) {
                errs.push(Error::invalid(
                    &path.key(key),
                    Value::String(key.clone()),
                    msg,
                ));
            }
        }
    }
    errs
}

/// kube's `ValidateImmutableField`.
pub fn immutable_field(new: &Value, old: &Value, path: &Path) -> ErrorList {
    if new == old {
        return Vec::new();
    }
    vec![Error::invalid(path, new.clone(), FIELD_IMMUTABLE)]
}

/// The value at a JSON pointer, `null` when absent.
pub fn at<'a>(obj: &'a Value, pointer: &str) -> &'a Value {
    obj.pointer(pointer).unwrap_or(&Value::Null)
}

/// The description of `property` in OpenAPI definition `definition` (kube's printers
/// describe their columns with the documentation of the field shown).
pub fn field_doc(definition: &str, property: &str) -> String {
    crate::registry::openapi::builtin_definitions()
        .get(definition)
        .and_then(|d| d.pointer(&format!("/properties/{property}/description")))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Metadata validation of a namespaced object (names are DNS subdomains).
pub fn object_meta_errors(obj: &Value) -> ErrorList {
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    crate::schema::objectmeta::validate_object_meta(&meta, true, &Path::new("metadata"))
}

/// Metadata update validation.
pub fn object_meta_update_errors(new: &Value, old: &Value) -> ErrorList {
    let meta = new.get("metadata").cloned().unwrap_or(Value::Null);
    let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
    crate::schema::objectmeta::validate_object_meta_update(&meta, &old_meta, &Path::new("metadata"))
}

/// The `Age` cell of an object.
pub fn age_cell(obj: &Value, now: chrono::DateTime<chrono::Utc>) -> Value {
    Value::String(crate::table::timestamp_since(
        obj.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str),
        now,
    ))
}

/// The number of entries of a map field.
pub fn map_len(obj: &Value, field: &str) -> i64 {
    obj.get(field)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_map_keys_follow_kubes_is_config_map_key() {
        assert!(config_map_key_errors("key.name").is_empty());
        assert!(config_map_key_errors("KEY_NAME-1").is_empty());
        assert_eq!(config_map_key_errors(".."), vec!["must not be '..'"]);
        assert_eq!(
            config_map_key_errors("..a"),
            vec!["must not start with '..'"]
        );
        let errs = config_map_key_errors("a b");
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("a valid config key must consist of alphanumeric characters"));
        assert_eq!(
            config_map_key_errors(&"a".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
    }
}
