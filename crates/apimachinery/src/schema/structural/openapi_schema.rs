//! The schema rules of kube's CRD validation (`ValidateCustomResourceDefinitionOpenAPISchema`):
//! unsupported OpenAPI fields, where defaults may stand, and the `x-kubernetes-*`
//! extension rules, node by node.

use super::options::{non_empty_props, type_of, wrong_type, SchemaCheckOptions, OPENAPI_V3_TYPES};
use crate::field::{Error, ErrorList, Path};
use crate::schema::objectmeta::META_FIELDS;
use crate::schema::props::{JSONSchemaProps, SchemaOrArray, SchemaOrBool};
use serde_json::Value;
use std::collections::HashSet;

/// kube's `specStandardValidatorV3` state while walking the schema.
#[derive(Clone)]
struct SpecValidator {
    allow_defaults: bool,
    forbidden_defaults_reason: String,
    inside_meta: bool,
}

impl SpecValidator {
    fn forbid_defaults(&self, reason: &str) -> Self {
        SpecValidator {
            allow_defaults: false,
            forbidden_defaults_reason: reason.to_string(),
            ..self.clone()
        }
    }

    fn within_meta(&self) -> Self {
        SpecValidator {
            inside_meta: true,
            ..self.clone()
        }
    }

    fn node_errors(
        &self,
        s: &JSONSchemaProps,
        fld: &Path,
        opts: &SchemaCheckOptions,
        errs: &mut ErrorList,
    ) {
        let ty = type_of(s);
        if opts.require_valid_property_type && !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
            errs.push(Error::not_supported(
                &fld.child("type"),
                Value::String(ty.to_string()),
                &OPENAPI_V3_TYPES,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.forbidden_defaults_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.forbidden_defaults_reason);
            }
            errs.push(Error::forbidden(&fld.child("default"), detail));
        }
        if s.id.as_deref().is_some_and(|x| !x.is_empty()) {
            errs.push(Error::forbidden(&fld.child("id"), "id is not supported"));
        }
        if s.additional_items.is_some() {
            errs.push(Error::forbidden(
                &fld.child("additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
            errs.push(Error::forbidden(
                &fld.child("patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
            errs.push(Error::forbidden(
                &fld.child("definitions"),
                "definitions is not supported",
            ));
        }
        if s.dependencies.is_some() {
            errs.push(Error::forbidden(
                &fld.child("dependencies"),
                "dependencies is not supported",
            ));
        }
        if s.ref_path.is_some() {
            errs.push(Error::forbidden(
                &fld.child("$ref"),
                "$ref is not supported",
            ));
        }
        if ty == "null" {
            errs.push(Error::forbidden(
                &fld.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(&s.items, Some(SchemaOrArray::Array(a)) if !a.is_empty()) {
            errs.push(Error::forbidden(
                &fld.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_meta && s.x_embedded_resource {
            errs.push(Error::forbidden(
                &fld.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

/// The schema rules of a whole schema, walked from its root.
pub(super) fn openapi_schema_root_errors(
    s: &JSONSchemaProps,
    fld: &Path,
    opts: &SchemaCheckOptions,
    errs: &mut ErrorList,
) {
    let ssv = SpecValidator {
        allow_defaults: true,
        forbidden_defaults_reason: String::new(),
        inside_meta: false,
    };
    openapi_schema_errors(s, fld, &ssv, true, opts, errs);
}

fn openapi_schema_errors(
    s: &JSONSchemaProps,
    fld: &Path,
    ssv: &SpecValidator,
    is_root: bool,
    opts: &SchemaCheckOptions,
    errs: &mut ErrorList,
) {
    ssv.node_errors(s, fld, opts, errs);

    if s.unique_items == Some(true) {
        errs.push(Error::forbidden(
            &fld.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }

    if let Some(ap) = &s.additional_properties {
        if non_empty_props(s).is_some() && !matches!(ap, SchemaOrBool::Bool(true)) {
            errs.push(Error::forbidden(
                &fld.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let SchemaOrBool::Schema(ap) = ap {
            // Pruning without an actual value is ambiguous for maps inside metadata.
            let sub = if ssv.inside_meta {
                ssv.forbid_defaults("inside additionalProperties applying to object metadata")
            } else {
                ssv.clone()
            };
            openapi_schema_errors(
                ap,
                &fld.child("additionalProperties"),
                &sub,
                false,
                opts,
                errs,
            );
        }
    }

    for (k, p) in s.properties.iter().flatten() {
        let mut sub = ssv.clone();
        if (is_root || s.x_embedded_resource) && META_FIELDS.contains(&k.as_str()) {
            sub = sub.within_meta();
            if is_root {
                sub = sub.forbid_defaults(&format!("in top-level {k}"));
            }
        }
        openapi_schema_errors(p, &fld.child("properties").key(k), &sub, false, opts, errs);
    }

    if let Some(not) = &s.not {
        openapi_schema_errors(not, &fld.child("not"), ssv, false, opts, errs);
    }
    for (i, x) in s.all_of.iter().flatten().enumerate() {
        openapi_schema_errors(x, &fld.child("allOf").index(i), ssv, false, opts, errs);
    }
    for (i, x) in s.one_of.iter().flatten().enumerate() {
        openapi_schema_errors(x, &fld.child("oneOf").index(i), ssv, false, opts, errs);
    }
    for (i, x) in s.any_of.iter().flatten().enumerate() {
        openapi_schema_errors(x, &fld.child("anyOf").index(i), ssv, false, opts, errs);
    }
    for (k, x) in s.definitions.iter().flatten() {
        openapi_schema_errors(x, &fld.child("definitions").key(k), ssv, false, opts, errs);
    }
    match &s.items {
        Some(SchemaOrArray::Schema(i)) => {
            openapi_schema_errors(i, &fld.child("items"), ssv, false, opts, errs)
        }
        Some(SchemaOrArray::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                openapi_schema_errors(x, &fld.child("items").index(i), ssv, false, opts, errs);
            }
        }
        None => {}
    }
    for (k, d) in s.dependencies.iter().flatten() {
        if let crate::schema::props::SchemaOrStringArray::Schema(x) = d {
            openapi_schema_errors(x, &fld.child("dependencies").key(k), ssv, false, opts, errs);
        }
    }

    extension_errors(s, fld, opts, errs);
}

/// The rules of the `x-kubernetes-*` extensions on one node.
fn extension_errors(
    s: &JSONSchemaProps,
    fld: &Path,
    opts: &SchemaCheckOptions,
    errs: &mut ErrorList,
) {
    let ty = type_of(s);
    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(Error::invalid(
            &fld.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(false),
            "must be true or undefined",
        ));
    }

    if let Some(map_type) = &s.x_map_type {
        if ty != "object" {
            errs.push(wrong_type(
                fld,
                ty,
                "must be object if x-kubernetes-map-type is specified",
            ));
        }
        if map_type != "atomic" && map_type != "granular" {
            errs.push(Error::not_supported(
                &fld.child("x-kubernetes-map-type"),
                Value::String(map_type.clone()),
                &["atomic", "granular"],
            ));
        }
    }

    let list_type = s.x_list_type.as_deref();
    if list_type.is_some() && ty != "array" {
        errs.push(wrong_type(
            fld,
            ty,
            "must be array if x-kubernetes-list-type is specified",
        ));
    } else if opts.require_atomic_set_type && list_type == Some("set") {
        if let Some(is) = s.items_schema() {
            let msg = "must be atomic as item of a list with x-kubernetes-list-type=set";
            match type_of(is) {
                "array" => {
                    if let Some(lt) = is.x_list_type.as_deref().filter(|lt| *lt != "atomic") {
                        errs.push(Error::invalid(
                            &fld.child("items").child("x-kubernetes-list-type"),
                            Value::String(lt.to_string()),
                            msg,
                        ));
                    }
                }
                "object" if is.x_map_type.as_deref() != Some("atomic") => {
                    // kube prints the items' list type here (usually unset: null).
                    let shown = is.x_list_type.clone().map_or(Value::Null, Value::String);
                    errs.push(Error::invalid(
                        &fld.child("items").child("x-kubernetes-map-type"),
                        shown,
                        msg,
                    ));
                }
                _ => {}
            }
        }
    }

    if let Some(lt) = list_type {
        if lt != "atomic" && lt != "set" && lt != "map" {
            errs.push(Error::not_supported(
                &fld.child("x-kubernetes-list-type"),
                Value::String(lt.to_string()),
                &["atomic", "set", "map"],
            ));
        }
    }

    let keys = s.x_list_map_keys.as_deref().unwrap_or(&[]);
    if !keys.is_empty() {
        let msg = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(Error::required(&fld.child("x-kubernetes-list-type"), msg)),
            Some(lt) if lt != "map" => errs.push(Error::invalid(
                &fld.child("x-kubernetes-list-type"),
                Value::String(lt.to_string()),
                msg,
            )),
            _ => {}
        }
    }

    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(Error::required(
                &fld.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => errs.push(Error::required(
                &fld.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(SchemaOrArray::Array(a)) => errs.push(Error::invalid(
                &fld.child("items"),
                serde_json::to_value(a).unwrap_or(Value::Null),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(SchemaOrArray::Schema(is)) => {
                let item_type = type_of(is);
                if item_type != "object" {
                    errs.push(Error::invalid(
                        &fld.child("items").child("type"),
                        Value::String(item_type.to_string()),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = HashSet::new();
                    for k in keys {
                        match is.properties.as_ref().and_then(|p| p.get(k)) {
                            Some(kp) => {
                                if matches!(type_of(kp), "array" | "object") {
                                    // kube prints the item type here, not the key's type.
                                    errs.push(Error::invalid(
                                        &fld.child("items").child("properties").key(k).child("type"),
                                        Value::String(item_type.to_string()),
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(Error::invalid(
                                &fld.child("x-kubernetes-list-map-keys"),
                                string_list(keys),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(k.as_str()) {
                            errs.push(Error::invalid(
                                &fld.child("x-kubernetes-list-map-keys"),
                                string_list(keys),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
        }
    }

    if opts.require_map_list_keys_map_set_validation {
        map_list_keys_map_set_errors(s, fld, errs);
    }
}

/// kube's `validateMapListKeysMapSet`: set/map items are not nullable; map keys are
/// required or defaulted and not nullable.
pub(super) fn map_list_keys_map_set_errors(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    let Some(is) = s.items_schema() else { return };
    let lt = match s.x_list_type.as_deref() {
        Some(lt @ ("set" | "map")) => lt,
        _ => return,
    };
    if is.nullable {
        errs.push(Error::forbidden(
            &fld.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt != "map" {
        return;
    }
    let required: HashSet<&str> = is.required.iter().flatten().map(String::as_str).collect();
    for k in s.x_list_map_keys.iter().flatten() {
        let Some(kp) = is.properties.as_ref().and_then(|p| p.get(k)) else {
            continue;
        };
        let key_fld = fld.child("items").child("properties").key(k);
        if !required.contains(k.as_str()) && kp.default.is_none() {
            errs.push(Error::required(
                &key_fld.child("default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if kp.nullable {
            errs.push(Error::forbidden(
                &key_fld.child("nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

pub(super) fn has_non_atomic_set_items(s: &JSONSchemaProps) -> bool {
    if s.x_list_type.as_deref() != Some("set") {
        return false;
    }
    let Some(is) = s.items_schema() else {
        return false;
    };
    match type_of(is) {
        "array" => is.x_list_type.as_deref().is_some_and(|lt| lt != "atomic"),
        "object" => is.x_map_type.as_deref() != Some("atomic"),
        _ => false,
    }
}

/// kube's `SchemaHas`: true if `pred` holds for any node of the schema.
pub(super) fn schema_has(s: &JSONSchemaProps, pred: &dyn Fn(&JSONSchemaProps) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    let items: Vec<&JSONSchemaProps> = match &s.items {
        Some(SchemaOrArray::Schema(i)) => vec![i],
        Some(SchemaOrArray::Array(a)) => a.iter().collect(),
        None => vec![],
    };
    items.into_iter().any(|x| schema_has(x, pred))
        || s.all_of.iter().flatten().any(|x| schema_has(x, pred))
        || s.any_of.iter().flatten().any(|x| schema_has(x, pred))
        || s.one_of.iter().flatten().any(|x| schema_has(x, pred))
        || s.not.as_deref().is_some_and(|x| schema_has(x, pred))
        || s.properties.iter().flatten().any(|(_, x)| schema_has(x, pred))
        || s.additional_properties_schema().is_some_and(|x| schema_has(x, pred))
        || s.pattern_properties.iter().flatten().any(|(_, x)| schema_has(x, pred))
        || matches!(&s.additional_items, Some(SchemaOrBool::Schema(x)) if schema_has(x, pred))
        || s.definitions.iter().flatten().any(|(_, x)| schema_has(x, pred))
        || s.dependencies.iter().flatten().any(
            |(_, d)| matches!(d, crate::schema::props::SchemaOrStringArray::Schema(x) if schema_has(x, pred)),
        )
}

/// A list of strings as a JSON value (kube prints composite bad values as JSON).
fn string_list(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

#[cfg(test)]
mod tests {
    use crate::schema::structural::tests::{base, messages, props};
    use crate::schema::structural::validate_structural;
    use serde_json::json;

    #[test]
    fn unsupported_openapi_fields() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "$ref": "#/definitions/x"},
                "b": {"type": "array", "items": [{"type": "string"}]},
                "c": {"type": "null"},
                "d": {"type": "object", "patternProperties": {"x": {"type": "string"}}},
                "e": {"type": "array", "items": {"type": "string"}, "uniqueItems": true, "additionalItems": false},
                "f": {"type": "strin"}
            }
        }));
        let got = messages(&validate_structural(&p, &base()));
        let want = [
            "spec.validation.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported",
            "spec.validation.openAPIV3Schema.properties[b].items: Forbidden: items must be a schema object and not an array",
            "spec.validation.openAPIV3Schema.properties[c].type: Forbidden: type cannot be set to null, use nullable as an alternative",
            "spec.validation.openAPIV3Schema.properties[d].patternProperties: Forbidden: patternProperties is not supported",
            "spec.validation.openAPIV3Schema.properties[e].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            "spec.validation.openAPIV3Schema.properties[e].additionalItems: Forbidden: additionalItems is not supported",
            "spec.validation.openAPIV3Schema.properties[f].type: Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
        ];
        for w in want {
            assert!(got.contains(&w.to_string()), "missing {w}\n got {got:#?}");
        }
        // The conversion error is hidden behind the generic errors, as in kube.
        assert!(
            !got.iter().any(|m| m.contains("OpenAPIV3Schema '")),
            "{got:?}"
        );
    }

    #[test]
    fn defaults_are_forbidden_in_top_level_metadata() {
        let p = props(json!({
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "x"}}}}
        }));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec!["spec.validation.openAPIV3Schema.properties[metadata].properties[name].default: Forbidden: must not be set in top-level metadata"]
        );
    }

    #[test]
    fn list_and_map_type_rules() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-kubernetes-list-type": "set"},
                "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"},
                "c": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}, "x-kubernetes-list-map-keys": ["k"]},
                "d": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "object"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "z", "k"]},
                "e": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "map"},
                "f": {"type": "string", "x-kubernetes-map-type": "sparse"},
                "g": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}
            }
        }));
        let got = messages(&validate_structural(&p, &base()));
        let f = "spec.validation.openAPIV3Schema.properties";
        let want = [
            format!("{f}[a].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"),
            format!("{f}[b].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""),
            format!("{f}[c].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"),
            format!("{f}[d].items.properties[k].type: Invalid value: \"object\": must be a scalar type if parent array's x-kubernetes-list-type is map"),
            format!("{f}[d].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"z\",\"k\"]: entries must all be names of item properties"),
            format!("{f}[d].x-kubernetes-list-map-keys: Invalid value: [\"k\",\"z\",\"k\"]: must not contain duplicate entries"),
            format!("{f}[d].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"),
            format!("{f}[e].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"),
            format!("{f}[e].items.type: Invalid value: \"string\": must be object if parent array's x-kubernetes-list-type is map"),
            format!("{f}[f].type: Invalid value: \"string\": must be object if x-kubernetes-map-type is specified"),
            format!("{f}[f].x-kubernetes-map-type: Unsupported value: \"sparse\": supported values: \"atomic\", \"granular\""),
            format!("{f}[g].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"),
        ];
        for w in &want {
            assert!(got.contains(w), "missing {w}\n got {got:#?}");
        }
    }

    #[test]
    fn preserve_unknown_fields_must_be_true() {
        let p = props(
            json!({"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}}}),
        );
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec!["spec.validation.openAPIV3Schema.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"]
        );
    }
}
