//! The structural schema: the skeleton of a CRD schema that pruning, defaulting and the
//! other stages walk, and kube's CRD-time checks that a schema is structural.
//!
//! Mirrors kube's `apiserver/schema` package (`structural.go`, `convert.go`,
//! `validation.go`, `complete.go`) and the schema part of the CRD validation in
//! `apis/apiextensions/validation` (everything except CEL rules). Value validations inside
//! `allOf`/`anyOf`/`oneOf`/`not` never contribute to the skeleton.
//!
//! The model lives here; `checks` holds the structural-ness checks (`NewStructural`,
//! `ValidateStructural`), `openapi_schema` the schema rules of kube's CRD validation,
//! `options` what both share, and `go_regexp` the translation of Go regular
//! expressions (`pattern`).

mod checks;
mod go_regexp;
mod openapi_schema;
mod options;

pub use checks::{is_structural, validate_schema, validate_structural};
pub use go_regexp::{compile_go_regexp, RegexpError};
pub use options::SchemaCheckOptions;

use crate::schema::props::{JSONSchemaProps, SchemaOrArray, SchemaOrBool, ValidationRule};
use crate::schema::sorted_map::SortedMap;
use serde_json::Value;

/// A structural schema node (kube's `schema.Structural`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structural {
    /// `type`; empty when unset (allowed for int-or-string and preserve-unknown-fields nodes).
    pub type_: String,
    /// `nullable`.
    pub nullable: bool,
    /// `default` (a JSON `null` default counts as no default, as in kube).
    pub default: Option<Value>,
    /// `items` (only the single-schema form is structural).
    pub items: Option<Box<Structural>>,
    /// `properties`.
    pub properties: SortedMap<Structural>,
    /// `additionalProperties`.
    pub additional_properties: Option<AdditionalProperties>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub x_preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub x_embedded_resource: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub x_int_or_string: bool,
    /// `x-kubernetes-list-type`.
    pub x_list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub x_list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`.
    pub x_map_type: Option<String>,
    /// `x-kubernetes-property-names`: the schema every map key must satisfy.
    pub x_property_names: Option<Box<Structural>>,
    /// `x-kubernetes-immutable: true`.
    pub x_immutable: bool,
    /// `x-kubernetes-immutable-keys: true`.
    pub x_immutable_keys: bool,
    /// `x-kubernetes-validations`.
    pub x_validations: Vec<ValidationRule>,
    /// Value validations of this node (they never shape pruning or defaulting).
    pub value_validation: ValueValidations,
}

/// `additionalProperties` of a structural node: a bare boolean or a schema.
#[derive(Clone, Debug, PartialEq)]
pub enum AdditionalProperties {
    /// `true` / `false`: both stop pruning at this level; values below are unspecified.
    Bool(bool),
    /// A schema for every value.
    Schema(Box<Structural>),
}

impl AdditionalProperties {
    /// The schema for the values, if one is given.
    pub fn schema(&self) -> Option<&Structural> {
        match self {
            AdditionalProperties::Schema(s) => Some(s),
            AdditionalProperties::Bool(_) => None,
        }
    }
}

/// A node's [`ValueValidation`], allocated only when it has one: most nodes of a
/// large schema have none, and the struct is most of a node's size. Reads see an
/// empty `ValueValidation` when there is none; writes allocate it.
#[derive(Clone, Debug, Default)]
pub struct ValueValidations(Option<Box<ValueValidation>>);

impl From<ValueValidation> for ValueValidations {
    fn from(v: ValueValidation) -> Self {
        if v == ValueValidation::default() {
            ValueValidations(None)
        } else {
            ValueValidations(Some(Box::new(v)))
        }
    }
}

impl std::ops::Deref for ValueValidations {
    type Target = ValueValidation;
    fn deref(&self) -> &ValueValidation {
        static NONE: std::sync::LazyLock<ValueValidation> =
            std::sync::LazyLock::new(ValueValidation::default);
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl std::ops::DerefMut for ValueValidations {
    fn deref_mut(&mut self) -> &mut ValueValidation {
        self.0.get_or_insert_with(Box::default)
    }
}

impl PartialEq for ValueValidations {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

/// The value validations of a node (kube's `ValueValidation`); junctors are kept as written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueValidation {
    /// `format`.
    pub format: Option<String>,
    /// `maximum`.
    pub maximum: Option<f64>,
    /// `exclusiveMaximum`.
    pub exclusive_maximum: bool,
    /// `minimum`.
    pub minimum: Option<f64>,
    /// `exclusiveMinimum`.
    pub exclusive_minimum: bool,
    /// `maxLength`.
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: Option<String>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `enum`.
    pub enum_: Vec<Value>,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `required`.
    pub required: Vec<String>,
    /// `allOf`.
    pub all_of: Vec<JSONSchemaProps>,
    /// `oneOf`.
    pub one_of: Vec<JSONSchemaProps>,
    /// `anyOf`.
    pub any_of: Vec<JSONSchemaProps>,
    /// `not`.
    pub not: Option<Box<JSONSchemaProps>>,
}

impl Structural {
    /// Build the structural schema of a CRD schema (kube's `NewStructural`).
    ///
    /// Never fails: parts that are not structural (`items` arrays, `$ref`, ...) are left
    /// out; [`validate_structural`] reports them at CRD create/update.
    pub fn from_props(p: &JSONSchemaProps) -> Structural {
        Structural {
            type_: p.type_.clone().unwrap_or_default(),
            nullable: p.nullable,
            default: p.default.clone().filter(|d| !d.is_null()),
            items: match &p.items {
                Some(SchemaOrArray::Schema(s)) => Some(Box::new(Structural::from_props(s))),
                _ => None,
            },
            properties: p
                .properties
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), Structural::from_props(v)))
                .collect(),
            additional_properties: p.additional_properties.as_ref().map(|ap| match ap {
                SchemaOrBool::Bool(b) => AdditionalProperties::Bool(*b),
                SchemaOrBool::Schema(s) => {
                    AdditionalProperties::Schema(Box::new(Structural::from_props(s)))
                }
            }),
            x_preserve_unknown_fields: p.x_preserve_unknown_fields == Some(true),
            x_embedded_resource: p.x_embedded_resource,
            x_int_or_string: p.x_int_or_string,
            x_list_type: p.x_list_type.clone(),
            x_list_map_keys: p.x_list_map_keys.clone().unwrap_or_default(),
            x_map_type: p.x_map_type.clone(),
            x_property_names: p
                .x_property_names
                .as_ref()
                .map(|s| Box::new(Structural::from_props(s))),
            x_immutable: p.x_immutable == Some(Value::Bool(true)),
            x_immutable_keys: p.x_immutable_keys == Some(Value::Bool(true)),
            x_validations: p.x_validations.clone().unwrap_or_default(),
            value_validation: ValueValidations::from(ValueValidation {
                format: p.format.clone(),
                maximum: p.maximum,
                exclusive_maximum: p.exclusive_maximum.unwrap_or(false),
                minimum: p.minimum,
                exclusive_minimum: p.exclusive_minimum.unwrap_or(false),
                max_length: p.max_length,
                min_length: p.min_length,
                pattern: p.pattern.clone(),
                max_items: p.max_items,
                min_items: p.min_items,
                unique_items: p.unique_items.unwrap_or(false),
                multiple_of: p.multiple_of,
                enum_: p.enum_.clone().unwrap_or_default(),
                max_properties: p.max_properties,
                min_properties: p.min_properties,
                required: p.required.clone().unwrap_or_default(),
                all_of: p.all_of.clone().unwrap_or_default(),
                one_of: p.one_of.clone().unwrap_or_default(),
                any_of: p.any_of.clone().unwrap_or_default(),
                not: p.not.clone(),
            }),
        }
    }

    /// The schema of the value under key `k` of an object node: `properties[k]`, else the
    /// `additionalProperties` schema (kube's field lookup for pruning and defaulting).
    pub fn field_schema(&self, k: &str) -> Option<&Structural> {
        match self.properties.get(k) {
            Some(p) => Some(p),
            None => self
                .additional_properties
                .as_ref()
                .and_then(AdditionalProperties::schema),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::field::{ErrorList, Path};
    use serde_json::json;

    pub(super) fn props(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("schema parses")
    }

    pub(super) fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    pub(super) fn base() -> Path {
        Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema")
    }

    #[test]
    fn from_props_keeps_the_skeleton_and_drops_junctors_from_it() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "additionalProperties": {"type": "string", "default": "x"},
                    "allOf": [{"properties": {"a": {"maxLength": 3}}}]
                },
                "list": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"k": {"type": "string"}}},
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["k"]
                },
                "free": {"x-kubernetes-preserve-unknown-fields": true, "nullable": true, "default": null}
            }
        }));
        let s = Structural::from_props(&p);
        let spec = &s.properties["spec"];
        assert_eq!(spec.default, Some(json!({})));
        assert!(
            spec.properties.is_empty(),
            "allOf properties are not structural"
        );
        assert_eq!(spec.value_validation.all_of.len(), 1);
        assert_eq!(
            spec.field_schema("anything").map(|x| x.type_.as_str()),
            Some("string")
        );
        let list = &s.properties["list"];
        assert_eq!(list.x_list_type.as_deref(), Some("map"));
        assert_eq!(list.x_list_map_keys, vec!["k".to_string()]);
        assert_eq!(
            list.items.as_ref().map(|i| i.type_.as_str()),
            Some("object")
        );
        let free = &s.properties["free"];
        assert!(free.x_preserve_unknown_fields && free.nullable);
        assert_eq!(
            free.default, None,
            "a null default is no default, as in kube"
        );
    }
}
