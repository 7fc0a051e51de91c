//! core/v1 ConfigMaps (`pkg/registry/core/configmap`, `ValidateConfigMap`).

use super::{
    age_cell, at, field_doc, key_errors, map_len, object_meta_errors, object_meta_update_errors,
    IMMUTABLE_WHEN_SET, MAX_DATA_SIZE,
};
use crate::field::{Error, ErrorList, Path};
use crate::rest::typed::TypedStrategy;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use base64::Engine;
use serde_json::{json, Value};

const DEFINITION: &str = "io.k8s.api.core.v1.ConfigMap";

/// The `configmaps` strategy.
pub struct ConfigMapStrategy;

/// kube's `ValidateConfigMap` without the metadata part: data and binaryData keys,
/// no key in both, at most 1 MiB of values.
pub fn validate_data(obj: &Value) -> ErrorList {
    let data_path = Path::new("data");
    let mut errs = key_errors(obj.get("data"), &data_path);
    let binary = obj.get("binaryData").and_then(Value::as_object);
    let mut total = 0i64;
    if let Some(data) = obj.get("data").and_then(Value::as_object) {
        for (key, value) in data {
            if binary.is_some_and(|b| b.contains_key(key)) {
                errs.push(Error::invalid(
                    &data_path.key(key),
                    json!(key),
                    "duplicate of key present in binaryData",
                ));
            }
            total += value.as_str().map_or(0, str::len) as i64;
        }
    }
    // kube reports a key in both maps next to the data key errors, before binaryData's.
    errs.sort_by(|a, b| a.field.as_str().cmp(b.field.as_str()));
    errs.extend(key_errors(obj.get("binaryData"), &Path::new("binaryData")));
    for value in binary.into_iter().flat_map(|b| b.values()) {
        total += decoded_len(value);
    }
    if total > MAX_DATA_SIZE {
        errs.push(Error::too_long(&Path::new(""), MAX_DATA_SIZE));
    }
    errs
}

/// The byte length of a base64 value as kube decodes it.
pub fn decoded_len(value: &Value) -> i64 {
    value
        .as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .map_or(0, |b| b.len() as i64)
}

/// The checks of `immutable: true` (ConfigMaps and Secrets): the flag stays and the
/// listed fields do not change.
pub fn immutable_errors(new: &Value, old: &Value, fields: &[&str]) -> ErrorList {
    let mut errs = Vec::new();
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return errs;
    }
    if new.get("immutable").and_then(Value::as_bool) != Some(true) {
        errs.push(Error::forbidden(
            &Path::new("immutable"),
            IMMUTABLE_WHEN_SET,
        ));
    }
    for f in fields {
        // Go compares maps with DeepEqual: nil and empty differ.
        if at(new, &format!("/{f}")) != at(old, &format!("/{f}")) {
            errs.push(Error::forbidden(&Path::new(f), IMMUTABLE_WHEN_SET));
        }
    }
    errs
}

impl TypedStrategy for ConfigMapStrategy {
    fn check_decodable(&self, obj: &Value) -> Result<(), crate::rest::typed::Base64Error> {
        let binary = obj.get("binaryData").and_then(Value::as_object);
        for value in binary.into_iter().flat_map(|m| m.values()) {
            if let Some(s) = value.as_str() {
                crate::rest::typed::check_base64(s)?;
            }
        }
        Ok(())
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = object_meta_errors(obj);
        errs.extend(validate_data(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = object_meta_update_errors(new, old);
        errs.extend(immutable_errors(new, old, &["data", "binaryData"]));
        errs.extend(self.validate(new));
        errs
    }

    fn printer(&self) -> BuiltinPrinter {
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new("Data", "string", 0, &field_doc(DEFINITION, "data")),
                BuiltinColumn::age(),
            ],
            cells: |obj, now| {
                let n = map_len(obj, "data") + map_len(obj, "binaryData");
                vec![
                    json!(crate::rest::object::name(obj)),
                    json!(n),
                    age_cell(obj, now),
                ]
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(extra: Value) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "resourceVersion": "1"}});
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        v
    }

    #[test]
    fn invalid_data_key_is_reported_with_kubes_text() {
        let errs = ConfigMapStrategy.validate(&cm(json!({"data": {"a b": "x"}})));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field.as_str(), "data[a b]");
        assert!(errs[0]
            .to_string()
            .starts_with("data[a b]: Invalid value: \"a b\": a valid config key must consist"));
    }

    #[test]
    fn key_in_data_and_binary_data_is_a_duplicate() {
        let errs = ConfigMapStrategy.validate(&cm(
            json!({"data": {"k": "x"}, "binaryData": {"k": "eA=="}}),
        ));
        assert_eq!(
            errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec!["data[k]: Invalid value: \"k\": duplicate of key present in binaryData"]
        );
    }

    #[test]
    fn more_than_one_mebibyte_of_data_is_too_long() {
        let big = "x".repeat(MAX_DATA_SIZE as usize + 1);
        let errs = ConfigMapStrategy.validate(&cm(json!({"data": {"k": big}})));
        assert_eq!(
            errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec![": Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn immutable_config_map_rejects_data_changes() {
        let old = cm(json!({"immutable": true, "data": {"k": "1"}}));
        let new = cm(json!({"immutable": false, "data": {"k": "2"}}));
        let msgs: Vec<String> = ConfigMapStrategy
            .validate_update(&new, &old)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            msgs,
            vec![
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
        // Metadata may still change.
        let mut relabelled = old.clone();
        relabelled["metadata"]["labels"] = json!({"a": "b"});
        assert!(ConfigMapStrategy
            .validate_update(&relabelled, &old)
            .is_empty());
    }
}
