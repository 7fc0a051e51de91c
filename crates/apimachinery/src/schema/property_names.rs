//! `x-kubernetes-property-names` (KEP-5667): a string schema every map key must satisfy.
//!
//! Keys are validated on every write as part of the OpenAPI pass in `schema::validate`
//! (so ratcheting applies to them like to values): an invalid key `Bad` of the map at
//! `spec.labels` is reported at `spec.labels[Bad]`, with kube-openapi's message for the
//! failed keyword, e.g. `spec.labels[Bad]: Invalid value: "Bad": spec.labels[Bad] in
//! body should match '^[a-z]+$'` or `spec.labels[toolong]: Too long: may not be more
//! than 5 bytes`. [`validate_map_keys`] gives only the key errors of one map.
//!
//! At CRD admission, [`validate_property_names_schema`] enforces the KEP's constraints:
//! the extension sits on a map (`type: object` with `additionalProperties`), and the key
//! schema is `type: string` with string value validations only (`enum`, `format`,
//! `maxLength`, `minLength`, `pattern`) plus `x-kubernetes-validations`. The KEP gives
//! no error texts; these follow the wording kube uses for its other extensions
//! (`must be object if x-kubernetes-map-type is specified`).

use super::props::{JSONSchemaProps, SchemaOrBool};
use super::validate::Validator;
use crate::field::{Error, ErrorList, Path};
use serde_json::Value;

const EXTENSION: &str = "x-kubernetes-property-names";
const ONLY_STRING_VALIDATIONS: &str = "must not be set for map keys: only type, format, enum, maxLength, minLength, pattern and x-kubernetes-validations are allowed";

/// Key errors of the map `value` (at `path`) under `map_schema`'s `x-kubernetes-property-names`.
pub fn validate_map_keys(map_schema: &JSONSchemaProps, value: &Value, path: &Path) -> ErrorList {
    let Some(key_schema) = &map_schema.x_property_names else {
        return ErrorList::new();
    };
    let only_keys = JSONSchemaProps {
        x_property_names: Some(key_schema.clone()),
        ..JSONSchemaProps::default()
    };
    Validator::new(&only_keys).validate_schema(value, path)
}

/// CRD-time check of every `x-kubernetes-property-names` in `schema` (at `fld`, e.g.
/// `spec.versions[0].schema.openAPIV3Schema`).
pub fn validate_property_names_schema(schema: &JSONSchemaProps, fld: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    walk(schema, fld, &mut errs);
    errs
}

fn walk(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    if let Some(key_schema) = &s.x_property_names {
        check_map(s, fld, errs);
        check_key_schema(key_schema, &fld.child(EXTENSION), errs);
    }
    for (k, sub) in s.properties.iter().flatten() {
        walk(sub, &fld.child("properties").key(k), errs);
    }
    if let Some(sub) = s.additional_properties_schema() {
        walk(sub, &fld.child("additionalProperties"), errs);
    }
    if let Some(sub) = s.items_schema() {
        walk(sub, &fld.child("items"), errs);
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("anyOf", &s.any_of),
        ("oneOf", &s.one_of),
    ] {
        for (i, sub) in list.iter().flatten().enumerate() {
            walk(sub, &fld.child(name).index(i), errs);
        }
    }
    if let Some(sub) = &s.not {
        walk(sub, &fld.child("not"), errs);
    }
}

/// The extension is only meaningful on maps: `type: object` with `additionalProperties`.
fn check_map(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    let requirement = format!("must be object if {EXTENSION} is specified");
    match s.type_.as_deref() {
        None | Some("") => errs.push(Error::required(&fld.child("type"), requirement)),
        Some("object") => {}
        Some(other) => errs.push(Error::invalid(
            &fld.child("type"),
            Value::String(other.to_string()),
            requirement,
        )),
    }
    match &s.additional_properties {
        None => errs.push(Error::required(
            &fld.child("additionalProperties"),
            format!("must be specified if {EXTENSION} is specified"),
        )),
        Some(SchemaOrBool::Bool(false)) => errs.push(Error::invalid(
            &fld.child("additionalProperties"),
            Value::Bool(false),
            format!("must not be false if {EXTENSION} is specified"),
        )),
        Some(_) => {}
    }
}

/// Keys are strings: only string value validations may constrain them.
fn check_key_schema(k: &JSONSchemaProps, pn: &Path, errs: &mut ErrorList) {
    match k.type_.as_deref() {
        None | Some("") => errs.push(Error::required(&pn.child("type"), "must be string")),
        Some("string") => {}
        Some(other) => errs.push(Error::not_supported(
            &pn.child("type"),
            Value::String(other.to_string()),
            &["string"],
        )),
    }
    if k.nullable {
        errs.push(Error::forbidden(
            &pn.child("nullable"),
            "map keys cannot be null",
        ));
    }
    for (i, v) in k.enum_.iter().flatten().enumerate() {
        if !v.is_string() {
            errs.push(Error::invalid(
                &pn.child("enum").index(i),
                v.clone(),
                "must be a string",
            ));
        }
    }
    if let Some(d) = &k.default {
        if !d.is_string() {
            errs.push(Error::invalid(
                &pn.child("default"),
                d.clone(),
                "must be a string",
            ));
        }
    }
    // Everything that is not a string value validation, by its JSON name.
    let forbidden: [(&str, bool); 34] = [
        ("id", k.id.is_some()),
        ("$schema", k.schema.is_some()),
        ("$ref", k.ref_path.is_some()),
        ("maximum", k.maximum.is_some()),
        ("exclusiveMaximum", k.exclusive_maximum.is_some()),
        ("minimum", k.minimum.is_some()),
        ("exclusiveMinimum", k.exclusive_minimum.is_some()),
        ("maxItems", k.max_items.is_some()),
        ("minItems", k.min_items.is_some()),
        ("uniqueItems", k.unique_items.is_some()),
        ("multipleOf", k.multiple_of.is_some()),
        ("maxProperties", k.max_properties.is_some()),
        ("minProperties", k.min_properties.is_some()),
        ("required", k.required.is_some()),
        ("items", k.items.is_some()),
        ("allOf", k.all_of.is_some()),
        ("oneOf", k.one_of.is_some()),
        ("anyOf", k.any_of.is_some()),
        ("not", k.not.is_some()),
        ("properties", k.properties.is_some()),
        ("additionalProperties", k.additional_properties.is_some()),
        ("patternProperties", k.pattern_properties.is_some()),
        ("dependencies", k.dependencies.is_some()),
        ("additionalItems", k.additional_items.is_some()),
        ("definitions", k.definitions.is_some()),
        (
            "x-kubernetes-preserve-unknown-fields",
            k.x_preserve_unknown_fields.is_some(),
        ),
        ("x-kubernetes-embedded-resource", k.x_embedded_resource),
        ("x-kubernetes-int-or-string", k.x_int_or_string),
        ("x-kubernetes-list-map-keys", k.x_list_map_keys.is_some()),
        ("x-kubernetes-list-type", k.x_list_type.is_some()),
        ("x-kubernetes-map-type", k.x_map_type.is_some()),
        ("x-kubernetes-immutable", k.x_immutable.is_some()),
        ("x-kubernetes-immutable-keys", k.x_immutable_keys.is_some()),
        (EXTENSION, k.x_property_names.is_some()),
    ];
    for (name, set) in forbidden {
        if set {
            errs.push(Error::forbidden(&pn.child(name), ONLY_STRING_VALIDATIONS));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("test schema parses")
    }

    fn rendered(errs: &ErrorList) -> Vec<String> {
        let mut v: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        v.sort();
        v
    }

    /// The KEP's summary example: keys and values of at most 32 characters.
    fn kep_summary() -> JSONSchemaProps {
        schema(json!({"type": "object", "properties": {"exampleMap": {
            "type": "object",
            "x-kubernetes-property-names": {"type": "string", "maxLength": 32},
            "additionalProperties": {"type": "string", "maxLength": 32}
        }}}))
    }

    #[test]
    fn kep_summary_example_is_a_valid_schema() {
        assert!(
            validate_property_names_schema(&kep_summary(), &Path::new("openAPIV3Schema"))
                .is_empty()
        );
    }

    #[test]
    fn kep_summary_example_limits_key_length() {
        let long = "k".repeat(33);
        let obj = json!({"exampleMap": {"short": "v", long.clone(): "v"}});
        let errs = super::super::validate::validate(&kep_summary(), &obj, &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![format!(
                "exampleMap[{long}]: Too long: may not be more than 32 bytes"
            )]
        );
        // Values keep their own limit, reported at the value's path.
        let obj = json!({"exampleMap": {"k": "v".repeat(33)}});
        let errs = super::super::validate::validate(&kep_summary(), &obj, &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["exampleMap.k: Too long: may not be more than 32 bytes"]
        );
    }

    #[test]
    fn kep_story_2_max_length_keys() {
        let s = schema(json!({"type": "object", "properties": {"labels": {
            "type": "object",
            "x-kubernetes-property-names": {"type": "string", "maxLength": 64},
            "additionalProperties": {"type": "string"}
        }}}));
        assert!(validate_property_names_schema(&s, &Path::new("openAPIV3Schema")).is_empty());
        let long = "a".repeat(65);
        let errs = validate_map_keys(
            &s.properties.as_ref().expect("labels")["labels"],
            &json!({long.clone(): "x", "ok": "y"}),
            &Path::new("spec").child("labels"),
        );
        assert_eq!(
            rendered(&errs),
            vec![format!(
                "spec.labels[{long}]: Too long: may not be more than 64 bytes"
            )]
        );
    }

    #[test]
    fn key_pattern_enum_and_format() {
        let s = schema(json!({"type": "object", "properties": {"m": {
            "type": "object",
            "x-kubernetes-property-names": {"type": "string", "pattern": "^[a-z]+$", "enum": ["abc", "Zed"], "format": "k8s-short-name"},
            "additionalProperties": {"type": "integer"}
        }}}));
        let errs = super::super::validate::validate(
            &s,
            &json!({"m": {"abc": 1, "Zed": 2, "xyz": 3}}),
            &Path::root(),
        );
        assert_eq!(
            rendered(&errs),
            vec![
                "m[Zed]: Invalid value: \"Zed\": m[Zed] in body must be of type k8s-short-name: \"Zed\"",
                "m[Zed]: Invalid value: \"Zed\": m[Zed] in body should match '^[a-z]+$'",
                "m[xyz]: Unsupported value: \"xyz\": supported values: \"abc\", \"Zed\"",
            ]
        );
    }

    #[test]
    fn only_maps_may_use_the_extension() {
        let s = schema(json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-property-names": {"type": "string"}},
            "open": {"x-kubernetes-property-names": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false, "x-kubernetes-property-names": {"type": "string"}}
        }}));
        let at = Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        assert_eq!(
            rendered(&validate_property_names_schema(&s, &at)),
            vec![
                "spec.validation.openAPIV3Schema.properties[closed].additionalProperties: Invalid value: false: must not be false if x-kubernetes-property-names is specified",
                "spec.validation.openAPIV3Schema.properties[list].additionalProperties: Required value: must be specified if x-kubernetes-property-names is specified",
                "spec.validation.openAPIV3Schema.properties[list].type: Invalid value: \"array\": must be object if x-kubernetes-property-names is specified",
                "spec.validation.openAPIV3Schema.properties[open].additionalProperties: Required value: must be specified if x-kubernetes-property-names is specified",
                "spec.validation.openAPIV3Schema.properties[open].type: Required value: must be object if x-kubernetes-property-names is specified",
            ]
        );
    }

    #[test]
    fn key_schema_allows_only_string_validations() {
        let s = schema(
            json!({"type": "object", "additionalProperties": {"type": "string"},
            "x-kubernetes-property-names": {"type": "integer", "maximum": 3, "nullable": true, "enum": ["a", 1],
                "x-kubernetes-validations": [{"rule": "self.size() > 1"}]}}),
        );
        let pn = "x.x-kubernetes-property-names";
        assert_eq!(
            rendered(&validate_property_names_schema(&s, &Path::new("x"))),
            vec![
                format!("{pn}.enum[1]: Invalid value: 1: must be a string"),
                format!("{pn}.maximum: Forbidden: {ONLY_STRING_VALIDATIONS}"),
                format!("{pn}.nullable: Forbidden: map keys cannot be null"),
                format!("{pn}.type: Unsupported value: \"integer\": supported values: \"string\""),
            ]
        );
    }
}
