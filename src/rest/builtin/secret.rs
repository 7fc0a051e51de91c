//! core/v1 Secrets (`pkg/registry/core/secret`, `ValidateSecret`): `stringData` merged
//! into `data` on write, `type` defaulted to `Opaque` and immutable, per-type keys.

use super::configmap::{decoded_len, immutable_errors};
use super::{
    age_cell, at, field_doc, immutable_field, key_errors, map_len, object_meta_errors,
    object_meta_update_errors, MAX_DATA_SIZE,
};
use crate::field::{Error, ErrorList, Path};
use crate::rest::typed::{meta_field_value, str_at, TypedStrategy};
use crate::table::{BuiltinColumn, BuiltinPrinter};
use base64::Engine;
use serde_json::{json, Value};

const DEFINITION: &str = "io.k8s.api.core.v1.Secret";

/// kube's default secret type.
pub const OPAQUE: &str = "Opaque";

/// The `secrets` strategy.
pub struct SecretStrategy;

/// The decoded bytes of `data[key]`, if present and valid base64.
fn data_bytes(obj: &Value, key: &str) -> Option<Vec<u8>> {
    let s = obj.get("data")?.get(key)?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(s).ok()
}

fn has_data_key(obj: &Value, key: &str) -> bool {
    obj.get("data").and_then(|d| d.get(key)).is_some()
}

/// The per-type rules of `ValidateSecret`.
fn type_errors(obj: &Value) -> ErrorList {
    let data_path = Path::new("data");
    let mut errs = Vec::new();
    let json_config = |key: &str, errs: &mut ErrorList| {
        if !has_data_key(obj, key) {
            errs.push(Error::required(&data_path.key(key), ""));
            return;
        }
        let bytes = data_bytes(obj, key).unwrap_or_default();
        if let Some(e) = crate::codec::go_json_error(&bytes, "map[string]interface {}") {
            errs.push(Error::invalid(
                &data_path.key(key),
                json!("<secret contents redacted>"),
                e,
            ));
        }
    };
    match str_at(obj, "/type") {
        "kubernetes.io/service-account-token" => {
            let name = str_at(
                obj,
                "/metadata/annotations/kubernetes.io~1service-account.name",
            );
            if name.is_empty() {
                errs.push(Error::required(
                    &Path::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => json_config(".dockercfg", &mut errs),
        "kubernetes.io/dockerconfigjson" => json_config(".dockerconfigjson", &mut errs),
        // Username or password may be empty, but one of the keys must be there.
        "kubernetes.io/basic-auth"
            if !has_data_key(obj, "username") && !has_data_key(obj, "password") =>
        {
            errs.push(Error::required(&data_path.key("username"), ""));
            errs.push(Error::required(&data_path.key("password"), ""));
        }
        "kubernetes.io/ssh-auth"
            if data_bytes(obj, "ssh-privatekey").is_none_or(|b| b.is_empty()) =>
        {
            errs.push(Error::required(&data_path.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has_data_key(obj, key) {
                    errs.push(Error::required(&data_path.key(key), ""));
                }
            }
        }
        _ => {}
    }
    errs
}

impl TypedStrategy for SecretStrategy {
    fn check_decodable(&self, obj: &Value) -> Result<(), crate::rest::typed::Base64Error> {
        for value in obj
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.values())
        {
            if let Some(s) = value.as_str() {
                crate::rest::typed::check_base64(s)?;
            }
        }
        Ok(())
    }

    fn default(&self, obj: &mut Value) {
        let Some(m) = obj.as_object_mut() else {
            return;
        };
        // v1 → internal conversion: stringData overwrites data and is never stored.
        if let Some(Value::Object(string_data)) = m.remove("stringData") {
            let data = m.entry("data").or_insert_with(|| json!({}));
            if !data.is_object() {
                *data = json!({});
            }
            if let Some(d) = data.as_object_mut() {
                for (k, v) in string_data {
                    let text = v.as_str().unwrap_or("");
                    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
                    d.insert(k, json!(encoded));
                }
            }
        }
        if m.get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            m.insert("type".into(), json!(OPAQUE));
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = object_meta_errors(obj);
        let data_path = Path::new("data");
        errs.extend(key_errors(obj.get("data"), &data_path));
        let total: i64 = obj
            .get("data")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.values())
            .map(decoded_len)
            .sum();
        if total > MAX_DATA_SIZE {
            errs.push(Error::too_long(&data_path, MAX_DATA_SIZE));
        }
        errs.extend(type_errors(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = object_meta_update_errors(new, old);
        errs.extend(immutable_field(
            at(new, "/type"),
            at(old, "/type"),
            &Path::new("type"),
        ));
        errs.extend(immutable_errors(new, old, &["data"]));
        errs.extend(self.validate(new));
        errs
    }

    fn printer(&self) -> BuiltinPrinter {
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new("Type", "string", 0, &field_doc(DEFINITION, "type")),
                BuiltinColumn::new("Data", "string", 0, &field_doc(DEFINITION, "data")),
                BuiltinColumn::age(),
            ],
            cells: |obj, now| {
                vec![
                    json!(crate::rest::object::name(obj)),
                    json!(str_at(obj, "/type")),
                    json!(map_len(obj, "data")),
                    age_cell(obj, now),
                ]
            },
        }
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        match field {
            "type" => Ok(Some(str_at(obj, "/type").to_string())),
            _ => meta_field_value(obj, field),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(extra: Value) -> Value {
        let mut v = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default", "resourceVersion": "1"}});
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        v
    }

    fn messages(errs: &[Error]) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn string_data_is_merged_into_data_and_type_defaults_to_opaque() {
        let mut s = secret(json!({"data": {"a": "MQ==", "b": "Mg=="}, "stringData": {"b": "two"}}));
        SecretStrategy.default(&mut s);
        assert_eq!(s["data"], json!({"a": "MQ==", "b": "dHdv"}));
        assert!(s.get("stringData").is_none());
        assert_eq!(s["type"], "Opaque");
    }

    #[test]
    fn secret_type_is_immutable() {
        let old = secret(json!({"type": "Opaque"}));
        let new = secret(json!({"type": "kubernetes.io/basic-auth", "data": {"username": ""}}));
        assert_eq!(
            messages(&SecretStrategy.validate_update(&new, &old)),
            vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
        );
    }

    #[test]
    fn tls_secret_requires_cert_and_key() {
        let s = secret(json!({"type": "kubernetes.io/tls", "data": {}}));
        assert_eq!(
            messages(&SecretStrategy.validate(&s)),
            vec![
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value"
            ]
        );
    }

    #[test]
    fn immutable_secret_rejects_data_changes() {
        let old = secret(json!({"type": "Opaque", "immutable": true, "data": {"a": "MQ=="}}));
        let new = secret(json!({"type": "Opaque", "immutable": true, "data": {"a": "Mg=="}}));
        assert_eq!(
            messages(&SecretStrategy.validate_update(&new, &old)),
            vec!["data: Forbidden: field is immutable when `immutable` is set"]
        );
    }

    #[test]
    fn invalid_base64_data_cannot_be_decoded() {
        let s = secret(json!({"data": {"a": "!!"}}));
        assert_eq!(
            SecretStrategy.check_decodable(&s).unwrap_err().to_string(),
            "illegal base64 data at input byte 0"
        );
    }

    #[test]
    fn secrets_select_by_type() {
        let s = secret(json!({"type": "Opaque"}));
        assert_eq!(
            SecretStrategy.field_value(&s, "type").unwrap().as_deref(),
            Some("Opaque")
        );
        assert_eq!(
            SecretStrategy
                .field_value(&s, "data")
                .unwrap_err()
                .to_string(),
            "field label not supported: data"
        );
    }
}
