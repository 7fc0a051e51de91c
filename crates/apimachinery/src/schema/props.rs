//! `JSONSchemaProps` of `apiextensions.k8s.io/v1`, as a typed value.
//!
//! This is the schema exactly as a CRD author wrote it (what kube validates at CRD
//! create/update and publishes in OpenAPI). The derived structural schema used by
//! the pipeline stages lives in `schema::structural`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One `x-kubernetes-validations` rule.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ValidationRule {
    /// The CEL expression.
    pub rule: String,
    /// Static message on failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// CEL expression producing the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_expression: Option<String>,
    /// `FieldValueInvalid` | `FieldValueForbidden` | `FieldValueRequired` | `FieldValueDuplicate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// JSONPath-like field path relative to the node, for error reporting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// Run the transition rule even when there is no old value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_old_self: Option<bool>,
}

/// `items`: one schema, or (not allowed in structural schemas) an array of schemas.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchemaOrArray {
    /// A single schema for every item.
    Schema(Box<JSONSchemaProps>),
    /// Tuple-style schemas (rejected for CRDs).
    Array(Vec<JSONSchemaProps>),
}

/// `additionalProperties` / `additionalItems`: a boolean or a schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchemaOrBool {
    /// `true` / `false`.
    Bool(bool),
    /// A schema for every extra value.
    Schema(Box<JSONSchemaProps>),
}

/// `dependencies` values: a schema or a list of property names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SchemaOrStringArray {
    /// A schema.
    Schema(Box<JSONSchemaProps>),
    /// Property names.
    Strings(Vec<String>),
}

/// The OpenAPI v3 schema subset of `apiextensions.k8s.io/v1` `JSONSchemaProps`,
/// plus the `x-kubernetes-*` extensions this server understands.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JSONSchemaProps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    #[serde(rename = "$ref", default, skip_serializing_if = "Option::is_none")]
    pub ref_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_maximum: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusive_minimum: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_items: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<f64>,
    #[serde(rename = "enum", default, skip_serializing_if = "Option::is_none")]
    pub enum_: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_properties: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_properties: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<SchemaOrArray>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_of: Option<Vec<JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not: Option<Box<JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<BTreeMap<String, JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<SchemaOrBool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern_properties: Option<BTreeMap<String, JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<BTreeMap<String, SchemaOrStringArray>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_items: Option<SchemaOrBool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definitions: Option<BTreeMap<String, JSONSchemaProps>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_docs: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub nullable: bool,
    #[serde(
        rename = "x-kubernetes-preserve-unknown-fields",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_preserve_unknown_fields: Option<bool>,
    #[serde(
        rename = "x-kubernetes-embedded-resource",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub x_embedded_resource: bool,
    #[serde(
        rename = "x-kubernetes-int-or-string",
        default,
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub x_int_or_string: bool,
    #[serde(
        rename = "x-kubernetes-list-map-keys",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_list_map_keys: Option<Vec<String>>,
    #[serde(
        rename = "x-kubernetes-list-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_list_type: Option<String>,
    #[serde(
        rename = "x-kubernetes-map-type",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_map_type: Option<String>,
    #[serde(
        rename = "x-kubernetes-validations",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_validations: Option<Vec<ValidationRule>>,
    /// Immutability KEP: the subtree may not change once set (`true` only).
    #[serde(
        rename = "x-kubernetes-immutable",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_immutable: Option<Value>,
    /// Immutability KEP: the set of keys of a map / list-map is fixed (`true` only).
    #[serde(
        rename = "x-kubernetes-immutable-keys",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_immutable_keys: Option<Value>,
    /// KEP-5667: a string schema every map key must satisfy.
    #[serde(
        rename = "x-kubernetes-property-names",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub x_property_names: Option<Box<JSONSchemaProps>>,
}

impl JSONSchemaProps {
    /// Parse from the JSON of a CRD's `openAPIV3Schema`.
    pub fn from_value(v: &Value) -> Result<Self, serde_json::Error> {
        JSONSchemaProps::deserialize(v)
    }

    /// The single `items` schema, if any.
    pub fn items_schema(&self) -> Option<&JSONSchemaProps> {
        match &self.items {
            Some(SchemaOrArray::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The `additionalProperties` schema, if it is a schema.
    pub fn additional_properties_schema(&self) -> Option<&JSONSchemaProps> {
        match &self.additional_properties {
            Some(SchemaOrBool::Schema(s)) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_extensions() {
        let v = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "additionalProperties": {"type": "string"},
                    "x-kubernetes-property-names": {"type": "string", "maxLength": 5},
                    "x-kubernetes-immutable-keys": true,
                    "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]
                },
                "list": {"type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"}
            }
        });
        let p = JSONSchemaProps::from_value(&v).expect("parses");
        let spec = &p.properties.as_ref().unwrap()["spec"];
        assert_eq!(spec.x_preserve_unknown_fields, Some(true));
        assert_eq!(
            spec.additional_properties_schema()
                .unwrap()
                .type_
                .as_deref(),
            Some("string")
        );
        assert_eq!(spec.x_property_names.as_ref().unwrap().max_length, Some(5));
        assert_eq!(serde_json::to_value(&p).unwrap(), v);
    }
}
