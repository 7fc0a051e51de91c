//! Kube's structural-ness checks of a CRD schema: `NewStructural`'s conversion errors,
//! `ValidateStructural`'s invariants and completeness, the status-subresource root rules,
//! and [`validate_schema`], which runs them with the defaults and the schema rules in
//! kube's order, under [`SchemaCheckOptions`] (relaxed on update).

use super::go_regexp::compile_go_regexp;
use super::openapi_schema::{
    has_non_atomic_set_items, map_list_keys_map_set_errors, openapi_schema_root_errors, schema_has,
};
use super::options::{non_empty_props, type_of, wrong_type, SchemaCheckOptions, OPENAPI_V3_TYPES};
use super::Structural;
use crate::field::{Error, ErrorList, Path};
use crate::schema::props::{JSONSchemaProps, SchemaOrArray, SchemaOrBool};
use serde_json::Value;

/// The options follow from the old CRD's schemas by these checks.
impl SchemaCheckOptions {
    /// The options kube uses on CRD update: every rule the old CRD already broke is relaxed.
    pub fn for_update(old_schemas: &[&JSONSchemaProps]) -> Self {
        let any = |pred: &dyn Fn(&JSONSchemaProps) -> bool| {
            old_schemas.iter().any(|s| schema_has(s, pred))
        };
        SchemaCheckOptions {
            require_valid_property_type: !any(&|s| {
                s.type_
                    .as_deref()
                    .is_some_and(|t| !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t))
            }),
            require_structural_schema: !old_schemas.iter().any(|s| !is_structural(s)),
            require_pruned_defaults: !old_schemas.iter().any(|s| {
                schema_has(s, &|n| n.default.as_ref().is_some_and(|d| !d.is_null()))
                    && is_structural(s)
                    && crate::schema::default::has_unpruned_defaults(&Structural::from_props(s))
            }),
            require_atomic_set_type: !any(&has_non_atomic_set_items),
            require_map_list_keys_map_set_validation: !any(&|s| {
                let mut errs = ErrorList::new();
                map_list_keys_map_set_errors(s, &Path::root(), &mut errs);
                !errs.is_empty()
            }),
            status_subresource: false,
        }
    }
}

/// True if the schema is structural (kube's `NewStructural` succeeds and
/// `ValidateStructural` reports nothing); used for ratcheting on update.
pub fn is_structural(schema: &JSONSchemaProps) -> bool {
    conversion_error(schema).is_none()
        && structural_invariant_errors(schema, &Path::root()).is_empty()
}

/// Kube's structural-ness checks of one CRD schema (no defaults, no CEL), with create
/// options: `NewStructural` and `ValidateStructural`, plus the schema rules of the CRD
/// validation (`$ref`, `x-kubernetes-*` extension rules, ...). `fld` is the path of the
/// `openAPIV3Schema` node, e.g. `spec.versions[0].schema.openAPIV3Schema`.
pub fn validate_structural(schema: &JSONSchemaProps, fld: &Path) -> ErrorList {
    let opts = SchemaCheckOptions::default();
    schema_errors(schema, fld, &opts, None)
}

/// All CRD-time checks kube runs on one `openAPIV3Schema` except CEL rules, in kube's
/// order: status-subresource root rules, `nullable` at the root, structural invariants,
/// then (only if structural) the defaults (see [`crate::schema::default::validate_defaults`]),
/// then the generic schema rules.
pub fn validate_schema(
    schema: &JSONSchemaProps,
    fld: &Path,
    opts: &SchemaCheckOptions,
    checks: &crate::schema::default::DefaultChecks<'_>,
) -> ErrorList {
    schema_errors(schema, fld, opts, Some(checks))
}

fn schema_errors(
    schema: &JSONSchemaProps,
    fld: &Path,
    opts: &SchemaCheckOptions,
    checks: Option<&crate::schema::default::DefaultChecks<'_>>,
) -> ErrorList {
    let mut errs = ErrorList::new();
    if opts.status_subresource {
        status_root_errors(schema, fld, &mut errs);
    }
    if schema.nullable {
        errs.push(Error::forbidden(
            &fld.child("nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut init_err = None;
    if opts.require_structural_schema {
        match conversion_error(schema) {
            Some(msg) => init_err = Some(Error::invalid(fld, Value::String(String::new()), msg)),
            None => {
                let invariant_errs = structural_invariant_errors(schema, fld);
                if invariant_errs.is_empty() {
                    if let Some(checks) = checks {
                        let s = Structural::from_props(schema);
                        errs.extend(crate::schema::default::validate_defaults(
                            schema,
                            &s,
                            fld,
                            opts.require_pruned_defaults,
                            checks,
                        ));
                    }
                } else {
                    errs.extend(invariant_errs);
                }
            }
        }
    }
    openapi_schema_root_errors(schema, fld, opts, &mut errs);
    if errs.is_empty() {
        errs.extend(init_err);
    }
    errs
}

/// kube's `allowedFieldsAtRootSchema` (Go field names) for the status subresource rule.
const ALLOWED_AT_STATUS_ROOT: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";

fn status_root_errors(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    // Walk the fields in the order of kube's internal JSONSchemaProps struct; the first
    // offending field ends the check, as in kube.
    let set: [(&str, bool); 44] = [
        ("ID", s.id.as_deref().is_some_and(|x| !x.is_empty())),
        ("Schema", s.schema.as_deref().is_some_and(|x| !x.is_empty())),
        ("Ref", s.ref_path.is_some()),
        (
            "Description",
            s.description.as_deref().is_some_and(|x| !x.is_empty()),
        ),
        ("Type", s.type_.as_deref().is_some_and(|x| !x.is_empty())),
        ("Format", s.format.as_deref().is_some_and(|x| !x.is_empty())),
        ("Title", s.title.as_deref().is_some_and(|x| !x.is_empty())),
        ("Default", s.default.is_some()),
        ("Maximum", s.maximum.is_some()),
        ("ExclusiveMaximum", s.exclusive_maximum == Some(true)),
        ("Minimum", s.minimum.is_some()),
        ("ExclusiveMinimum", s.exclusive_minimum == Some(true)),
        ("MaxLength", s.max_length.is_some()),
        ("MinLength", s.min_length.is_some()),
        (
            "Pattern",
            s.pattern.as_deref().is_some_and(|x| !x.is_empty()),
        ),
        ("MaxItems", s.max_items.is_some()),
        ("MinItems", s.min_items.is_some()),
        ("UniqueItems", s.unique_items == Some(true)),
        ("MultipleOf", s.multiple_of.is_some()),
        ("Enum", s.enum_.is_some()),
        ("MaxProperties", s.max_properties.is_some()),
        ("MinProperties", s.min_properties.is_some()),
        ("Required", s.required.is_some()),
        ("Items", s.items.is_some()),
        ("AllOf", s.all_of.is_some()),
        ("OneOf", s.one_of.is_some()),
        ("AnyOf", s.any_of.is_some()),
        ("Not", s.not.is_some()),
        ("Properties", s.properties.is_some()),
        ("AdditionalProperties", s.additional_properties.is_some()),
        ("PatternProperties", s.pattern_properties.is_some()),
        ("Dependencies", s.dependencies.is_some()),
        ("AdditionalItems", s.additional_items.is_some()),
        ("Definitions", s.definitions.is_some()),
        ("ExternalDocs", s.external_docs.is_some()),
        ("Example", s.example.is_some()),
        ("Nullable", s.nullable),
        (
            "XPreserveUnknownFields",
            s.x_preserve_unknown_fields.is_some(),
        ),
        ("XEmbeddedResource", s.x_embedded_resource),
        ("XIntOrString", s.x_int_or_string),
        ("XListMapKeys", s.x_list_map_keys.is_some()),
        ("XListType", s.x_list_type.is_some()),
        ("XMapType", s.x_map_type.is_some()),
        ("XValidations", s.x_validations.is_some()),
    ];
    const ALLOWED: [&str; 22] = [
        "Description",
        "Type",
        "Format",
        "Title",
        "Maximum",
        "ExclusiveMaximum",
        "Minimum",
        "ExclusiveMinimum",
        "MaxLength",
        "MinLength",
        "Pattern",
        "MaxItems",
        "MinItems",
        "UniqueItems",
        "MultipleOf",
        "Required",
        "Items",
        "Properties",
        "ExternalDocs",
        "Example",
        "XPreserveUnknownFields",
        "XValidations",
    ];
    for (name, present) in set {
        if !present {
            continue;
        }
        if name == "Type" {
            let t = s.type_.clone().unwrap_or_default();
            if t != "object" {
                errs.push(Error::invalid(
                    &fld.child("type"),
                    Value::String(t),
                    "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                ));
                break;
            }
            continue;
        }
        if !ALLOWED.contains(&name) {
            // kube prints its internal schema struct as JSON; we print the schema as written.
            let shown = serde_json::to_value(s).unwrap_or(Value::Null);
            errs.push(Error::invalid(
                fld,
                shown,
                format!("only {ALLOWED_AT_STATUS_ROOT} fields are allowed at the root of the schema if the status subresource is enabled"),
            ));
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------
// NewStructural conversion errors
// ---------------------------------------------------------------------------------------

/// The first error kube's `NewStructural` would return for this schema, if any (the
/// same walk below `allOf`/`anyOf`/`oneOf`/`not`, kube's `newNestedValueValidation`).
fn conversion_error(s: &JSONSchemaProps) -> Option<String> {
    unsupported_field_error(s)
        .or_else(|| value_validation_conversion_error(s))
        .or_else(|| preserve_false_error(s))
        .or_else(|| match &s.items {
            Some(SchemaOrArray::Array(_)) => Some(ITEMS_ARRAY.to_string()),
            Some(SchemaOrArray::Schema(i)) => conversion_error(i),
            None => None,
        })
        .or_else(|| {
            s.properties
                .iter()
                .flatten()
                .find_map(|(_, p)| conversion_error(p))
        })
        .or_else(|| s.additional_properties_schema().and_then(conversion_error))
}

const ITEMS_ARRAY: &str = "OpenAPIV3Schema 'items' must be a schema, but is an array";

fn unsupported_field_error(s: &JSONSchemaProps) -> Option<String> {
    let msg = if s.id.as_deref().is_some_and(|x| !x.is_empty()) {
        "OpenAPIV3Schema 'id' is not supported"
    } else if s.schema.as_deref().is_some_and(|x| !x.is_empty()) {
        "OpenAPIV3Schema 'schema' is not supported"
    } else if s.ref_path.as_deref().is_some_and(|x| !x.is_empty()) {
        "OpenAPIV3Schema '$ref' is not supported"
    } else if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
        "OpenAPIV3Schema 'patternProperties' is not supported"
    } else if s.dependencies.as_ref().is_some_and(|m| !m.is_empty()) {
        "OpenAPIV3Schema 'dependencies' is not supported"
    } else if s.additional_items.is_some() {
        "OpenAPIV3Schema 'additionalItems' is not supported"
    } else if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
        "OpenAPIV3Schema 'definitions' is not supported"
    } else {
        return None;
    };
    Some(msg.to_string())
}

fn preserve_false_error(s: &JSONSchemaProps) -> Option<String> {
    (s.x_preserve_unknown_fields == Some(false)).then(|| {
        "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
            .to_string()
    })
}

fn value_validation_conversion_error(s: &JSONSchemaProps) -> Option<String> {
    s.not
        .as_deref()
        .and_then(conversion_error)
        .or_else(|| s.all_of.iter().flatten().find_map(conversion_error))
        .or_else(|| s.any_of.iter().flatten().find_map(conversion_error))
        .or_else(|| s.one_of.iter().flatten().find_map(conversion_error))
}

// ---------------------------------------------------------------------------------------
// ValidateStructural: invariants and completeness
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// kube's `ValidateStructural` (invariants, then completeness), sorted by message as kube
/// sorts them. Assumes the conversion to a structural schema succeeded.
fn structural_invariant_errors(schema: &JSONSchemaProps, fld: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    invariants(schema, Level::Root, fld, &mut errs);
    completeness(schema, fld, &mut errs);
    errs.sort_by_cached_key(|e| e.to_string());
    errs
}

fn invariants(s: &JSONSchemaProps, lvl: Level, fld: &Path, errs: &mut ErrorList) {
    let items = s.items_schema();
    if type_of(s) == "array" && items.is_none() {
        errs.push(Error::required(&fld.child("items"), "must be specified"));
    }
    if let Some(items) = items {
        invariants(items, Level::Item, &fld.child("items"), errs);
    }
    for (k, v) in s.properties.iter().flatten() {
        invariants(v, Level::Field, &fld.child("properties").key(k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(Error::forbidden(
                &fld.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let SchemaOrBool::Schema(ap) = ap {
            invariants(ap, Level::Field, &fld.child("additionalProperties"), errs);
        }
    }

    let preserve = s.x_preserve_unknown_fields == Some(true);
    if s.x_int_or_string && preserve {
        errs.push(Error::invalid(
            &fld.child("x-kubernetes-preserve-unknown-fields"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(Error::invalid(
            &fld.child("x-kubernetes-embedded-resource"),
            Value::Bool(true),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }

    let skip_any_of = is_int_or_string_any_of(s.any_of.as_deref());
    let skip_first_all_of_any_of = s
        .all_of
        .as_deref()
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.any_of.as_deref()));
    value_validation_errors(s, skip_any_of, skip_first_all_of_any_of, lvl, fld, errs);

    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    let ty = type_of(s);
    if s.x_embedded_resource && ty != "object" {
        errs.push(wrong_type(
            fld,
            ty,
            "must be object if x-kubernetes-embedded-resource is true",
        ));
    } else if ty.is_empty() && !s.x_int_or_string && !preserve {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(Error::required(&fld.child("type"), msg));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(Error::forbidden(
            &fld.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(Error::invalid(
            &fld.child("type"),
            Value::String(ty.to_string()),
            "must be object at the root",
        ));
    }

    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.as_ref().and_then(|m| m.get(name)) {
                if type_of(p) != "string" {
                    errs.push(Error::invalid(
                        &fld.child("properties").key(name).child("type"),
                        Value::String(type_of(p).to_string()),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(metadata) = s.properties.as_ref().and_then(|m| m.get("metadata")) {
        metadata_invariants(
            metadata,
            check_metadata,
            lvl,
            &fld.child("properties").key("metadata"),
            errs,
        );
    }

    if s.x_embedded_resource && !preserve && non_empty_props(s).is_none() {
        errs.push(Error::required(
            &fld.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn metadata_invariants(
    s: &JSONSchemaProps,
    check_metadata: bool,
    lvl: Level,
    fld: &Path,
    errs: &mut ErrorList,
) {
    if check_metadata && type_of(s) != "object" {
        errs.push(Error::invalid(
            &fld.child("type"),
            Value::String(type_of(s).to_string()),
            "must be object",
        ));
    }
    if lvl != Level::Root {
        return;
    }
    // Root metadata may only restrict name and generateName: clear what is allowed and
    // require that nothing else remains (type and default are checked elsewhere).
    let mut rest = s.clone();
    rest.type_ = None;
    rest.default = None;
    if let Some(props) = &rest.properties {
        let name = props.contains_key("name");
        let generate_name = props.contains_key("generateName");
        if props.is_empty()
            || (name && generate_name && props.len() == 2)
            || ((name || generate_name) && props.len() == 1)
        {
            rest.properties = None;
        }
    }
    // kube builds these lists by appending, so an empty list counts as unset.
    for list in [&mut rest.all_of, &mut rest.any_of, &mut rest.one_of] {
        if list.as_ref().is_some_and(|l| l.is_empty()) {
            *list = None;
        }
    }
    if rest.enum_.as_ref().is_some_and(|e| e.is_empty()) {
        rest.enum_ = None;
    }
    if rest.example.as_ref().is_some_and(Value::is_null) {
        rest.example = None;
    }
    if rest.exclusive_maximum == Some(false) {
        rest.exclusive_maximum = None;
    }
    if rest.exclusive_minimum == Some(false) {
        rest.exclusive_minimum = None;
    }
    if rest.unique_items == Some(false) {
        rest.unique_items = None;
    }
    for text in [
        &mut rest.description,
        &mut rest.title,
        &mut rest.format,
        &mut rest.pattern,
    ] {
        if text.as_deref() == Some("") {
            *text = None;
        }
    }
    if rest != JSONSchemaProps::default() {
        errs.push(Error::forbidden(
            fld,
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }
}

/// kube's int-or-string `anyOf` pattern: exactly `[{type: integer}, {type: string}]`.
fn is_int_or_string_any_of(any_of: Option<&[JSONSchemaProps]>) -> bool {
    let Some(any_of) = any_of else { return false };
    let only_type = |t: &str| JSONSchemaProps {
        type_: Some(t.to_string()),
        ..Default::default()
    };
    any_of.len() == 2 && any_of[0] == only_type("integer") && any_of[1] == only_type("string")
}

fn value_validation_errors(
    s: &JSONSchemaProps,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    lvl: Level,
    fld: &Path,
    errs: &mut ErrorList,
) {
    if !skip_any_of {
        for (i, v) in s.any_of.iter().flatten().enumerate() {
            nested_value_validation_errors(v, false, lvl, &fld.child("anyOf").index(i), errs);
        }
    }
    for (i, v) in s.all_of.iter().flatten().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested_value_validation_errors(v, skip, lvl, &fld.child("allOf").index(i), errs);
    }
    for (i, v) in s.one_of.iter().flatten().enumerate() {
        nested_value_validation_errors(v, false, lvl, &fld.child("oneOf").index(i), errs);
    }
    if let Some(not) = &s.not {
        nested_value_validation_errors(not, false, lvl, &fld.child("not"), errs);
    }
    if let Some(pattern) = s.pattern.as_deref().filter(|p| !p.is_empty()) {
        if let Err(e) = compile_go_regexp(pattern) {
            errs.push(Error::invalid(
                &fld.child("pattern"),
                Value::String(pattern.to_string()),
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

/// A schema under `allOf`/`anyOf`/`oneOf`/`not` may carry only value validations.
fn nested_value_validation_errors(
    v: &JSONSchemaProps,
    skip_any_of: bool,
    lvl: Level,
    fld: &Path,
    errs: &mut ErrorList,
) {
    value_validation_errors(v, skip_any_of, false, lvl, fld, errs);
    if let Some(items) = v.items_schema() {
        nested_value_validation_errors(items, false, lvl, &fld.child("items"), errs);
    }
    for (k, p) in v.properties.iter().flatten() {
        nested_value_validation_errors(
            p,
            false,
            Level::Field,
            &fld.child("properties").key(k),
            errs,
        );
    }
    if v.type_.as_deref().is_some_and(|t| !t.is_empty()) {
        errs.push(Error::forbidden(
            &fld.child("type"),
            "must be empty to be structural",
        ));
    }
    // `additionalProperties: false` converts to nothing in a nested context.
    if matches!(
        v.additional_properties,
        Some(SchemaOrBool::Schema(_)) | Some(SchemaOrBool::Bool(true))
    ) {
        errs.push(Error::forbidden(
            &fld.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if v.default.as_ref().is_some_and(|d| !d.is_null()) {
        errs.push(Error::forbidden(
            &fld.child("default"),
            "must be undefined to be structural",
        ));
    }
    if v.title.as_deref().is_some_and(|t| !t.is_empty()) {
        errs.push(Error::forbidden(
            &fld.child("title"),
            "must be empty to be structural",
        ));
    }
    if v.description.as_deref().is_some_and(|t| !t.is_empty()) {
        errs.push(Error::forbidden(
            &fld.child("description"),
            "must be empty to be structural",
        ));
    }
    if v.nullable {
        errs.push(Error::forbidden(
            &fld.child("nullable"),
            "must be false to be structural",
        ));
    }
    if v.external_docs.is_some() {
        errs.push(Error::forbidden(
            &fld.child("externalDocs"),
            "must be undefined to be structural",
        ));
    }
    if v.x_preserve_unknown_fields == Some(true) {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if v.x_embedded_resource {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if v.x_int_or_string {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if v.x_list_map_keys.as_ref().is_some_and(|k| !k.is_empty()) {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if v.x_list_type.is_some() {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if v.x_map_type.is_some() {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if v.x_validations.as_ref().is_some_and(|r| !r.is_empty()) {
        errs.push(Error::forbidden(
            &fld.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }
    // The immutability extensions only mean something on the structural skeleton.
    for (name, set) in [
        ("x-kubernetes-immutable", v.x_immutable.is_some()),
        ("x-kubernetes-immutable-keys", v.x_immutable_keys.is_some()),
    ] {
        if set {
            errs.push(Error::forbidden(
                &fld.child(name),
                "must be undefined to be structural",
            ));
        }
    }
    if v.properties
        .as_ref()
        .is_some_and(|p| p.contains_key("metadata"))
    {
        errs.push(Error::forbidden(
            &fld.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// kube only checks the junctors of the root node for completeness: every property or
/// items they mention must exist in the structural skeleton.
fn completeness(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    junctor_completeness(s, Some(s), fld, fld, errs);
}

fn junctor_completeness(
    v: &JSONSchemaProps,
    s: Option<&JSONSchemaProps>,
    s_path: &Path,
    v_path: &Path,
    errs: &mut ErrorList,
) {
    let Some(s) = s else {
        errs.push(Error::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_path, &v_path.child("not"), errs);
    }
    for (i, x) in v.all_of.iter().flatten().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("allOf").index(i), errs);
    }
    for (i, x) in v.any_of.iter().flatten().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("anyOf").index(i), errs);
    }
    for (i, x) in v.one_of.iter().flatten().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("oneOf").index(i), errs);
    }
}

fn nested_completeness(
    v: &JSONSchemaProps,
    s: Option<&JSONSchemaProps>,
    s_path: &Path,
    v_path: &Path,
    errs: &mut ErrorList,
) {
    let Some(s) = s else {
        errs.push(Error::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    junctor_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(items) = v.items_schema() {
        nested_completeness(
            items,
            s.items_schema(),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vp) in v.properties.iter().flatten() {
        let s_fld = s_path.child("properties").key(k);
        let v_fld = v_path.child("properties").key(k);
        match s.properties.as_ref().and_then(|p| p.get(k)) {
            None => errs.push(Error::required(
                &s_fld,
                format!("because it is defined in {v_fld}"),
            )),
            Some(sp) => nested_completeness(vp, Some(sp), &s_fld, &v_fld, errs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural::tests::{base, messages, props};
    use serde_json::json;

    #[test]
    fn type_is_required_for_fields_items_and_root() {
        let p = props(json!({
            "properties": {
                "spec": {"properties": {"a": {}}},
                "list": {"type": "array", "items": {}},
                "free": {"x-kubernetes-preserve-unknown-fields": true},
                "ios": {"x-kubernetes-int-or-string": true}
            }
        }));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec![
                "spec.validation.openAPIV3Schema.properties[list].items.type: Required value: must not be empty for specified array items",
                "spec.validation.openAPIV3Schema.properties[spec].properties[a].type: Required value: must not be empty for specified object fields",
                "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
                "spec.validation.openAPIV3Schema.type: Required value: must not be empty at the root",
            ]
        );
    }

    #[test]
    fn root_must_be_object_and_arrays_need_items() {
        let p = props(json!({"type": "array"}));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec![
                "spec.validation.openAPIV3Schema.items: Required value: must be specified",
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": must be object at the root",
            ]
        );
    }

    #[test]
    fn additional_properties_rules() {
        let p = props(json!({
            "type": "object",
            "additionalProperties": {"type": "string"},
            "properties": {
                "m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false},
                "ok": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": true}
            }
        }));
        let got = messages(&validate_structural(&p, &base()));
        assert!(got.contains(&"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root".to_string()), "{got:?}");
        assert!(got.contains(&"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive".to_string()), "{got:?}");
        assert!(got.contains(&"spec.validation.openAPIV3Schema.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive".to_string()), "{got:?}");
        assert!(!got.iter().any(|m| m.contains("properties[ok]")), "{got:?}");
    }

    #[test]
    fn conversion_error_shows_when_nothing_else_is_wrong() {
        let p =
            props(json!({"type": "object", "$schema": "http://json-schema.org/draft-04/schema#"}));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec!["spec.validation.openAPIV3Schema: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"]
        );
    }

    #[test]
    fn root_metadata_may_only_restrict_name_and_generate_name() {
        let ok = props(json!({
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}, "generateName": {"type": "string"}}}}
        }));
        assert!(validate_structural(&ok, &base()).is_empty());
        let bad = props(json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
                "kind": {"type": "integer"},
                "apiVersion": {"type": "string"}
            }
        }));
        assert_eq!(
            messages(&validate_structural(&bad, &base())),
            vec![
                "spec.validation.openAPIV3Schema.properties[kind].type: Invalid value: \"integer\": must be string",
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ]
        );
        let described = props(json!({
            "type": "object",
            "properties": {"metadata": {"type": "object", "description": "meta"}}
        }));
        assert_eq!(validate_structural(&described, &base()).len(), 1);
    }

    #[test]
    fn embedded_resource_rules() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "a": {"x-kubernetes-embedded-resource": true},
                "b": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"kind": {"type": "string"}, "metadata": {"type": "string"}}},
                "c": {"type": "string", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                "d": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": {"type": "string"}}
            }
        }));
        let got = messages(&validate_structural(&p, &base()));
        let want = [
            "spec.validation.openAPIV3Schema.properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true",
            "spec.validation.openAPIV3Schema.properties[a].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
            "spec.validation.openAPIV3Schema.properties[b].properties[metadata].type: Invalid value: \"string\": must be object",
            "spec.validation.openAPIV3Schema.properties[c].type: Invalid value: \"string\": must be object if x-kubernetes-embedded-resource is true",
            "spec.validation.openAPIV3Schema.properties[d].additionalProperties: Forbidden: must not be used if x-kubernetes-embedded-resource is set",
        ];
        for w in want {
            assert!(got.contains(&w.to_string()), "missing {w}\n got {got:#?}");
        }
    }

    #[test]
    fn int_or_string_patterns_are_structural() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "a": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "b": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^a"}]},
                "c": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 3}]},
                "d": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}
            }
        }));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec![
                "spec.validation.openAPIV3Schema.properties[c].anyOf[0].type: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[c].anyOf[1].type: Forbidden: must be empty to be structural",
                "spec.validation.openAPIV3Schema.properties[d].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true",
            ]
        );
    }

    #[test]
    fn junctors_may_only_hold_value_validations() {
        let p = props(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "anyOf": [{
                        "description": "d", "nullable": true, "default": 1, "title": "t",
                        "x-kubernetes-list-type": "atomic", "additionalProperties": {"type": "string"},
                        "x-kubernetes-validations": [{"rule": "true"}],
                        "properties": {"a": {"minLength": 1}, "metadata": {}}
                    }]
                }
            }
        }));
        let got = messages(&validate_structural(&p, &base()));
        let f = "spec.validation.openAPIV3Schema.properties[spec].anyOf[0]";
        let want = [
            format!("{f}.additionalProperties: Forbidden: must be undefined to be structural"),
            format!("{f}.default: Forbidden: must be undefined to be structural"),
            format!("{f}.description: Forbidden: must be empty to be structural"),
            format!("{f}.nullable: Forbidden: must be false to be structural"),
            format!(
                "{f}.properties[metadata]: Forbidden: must not be specified in a nested context"
            ),
            format!("{f}.title: Forbidden: must be empty to be structural"),
            format!("{f}.x-kubernetes-list-type: Forbidden: must be undefined to be structural"),
            format!("{f}.x-kubernetes-validations: Forbidden: must be empty to be structural"),
        ];
        for w in &want {
            assert!(got.contains(w), "missing {w}\n got {got:#?}");
        }
    }

    #[test]
    fn root_junctors_must_be_complete() {
        let p = props(json!({
            "type": "object",
            "properties": {"foo": {"type": "string"}},
            "allOf": [{"properties": {"foo": {"minLength": 1}, "bar": {"minLength": 1}}, "items": {"maxLength": 1}}]
        }));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec![
                "spec.validation.openAPIV3Schema.items: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].items",
                "spec.validation.openAPIV3Schema.properties[bar]: Required value: because it is defined in spec.validation.openAPIV3Schema.allOf[0].properties[bar]",
            ]
        );
    }

    #[test]
    fn nullable_root_and_status_root_rules() {
        let p = props(json!({"type": "object", "nullable": true}));
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec!["spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root"]
        );
        let opts = SchemaCheckOptions {
            status_subresource: true,
            ..Default::default()
        };
        let checks = crate::schema::default::DefaultChecks::default();
        let p = props(json!({"type": "string"}));
        let got = messages(&validate_schema(&p, &base(), &opts, &checks));
        assert!(got.contains(&"spec.validation.openAPIV3Schema.type: Invalid value: \"string\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled".to_string()), "{got:?}");
    }

    #[test]
    fn invalid_pattern_reports_go_error() {
        let p = props(
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "[a-z"}, "b": {"type": "string", "pattern": "x{5"}}}),
        );
        assert_eq!(
            messages(&validate_structural(&p, &base())),
            vec!["spec.validation.openAPIV3Schema.properties[a].pattern: Invalid value: \"[a-z\": must be a valid regular expression, but isn't: error parsing regexp: missing closing ]: `[a-z`"]
        );
    }

    #[test]
    fn ratcheting_options_relax_rules_the_old_schema_broke() {
        let old = props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "strin"},
                "s": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}
            }
        }));
        let opts = SchemaCheckOptions::for_update(&[&old]);
        assert!(!opts.require_valid_property_type);
        assert!(!opts.require_atomic_set_type);
        assert!(opts.require_structural_schema);
        assert!(opts.require_map_list_keys_map_set_validation);
        assert_eq!(
            SchemaCheckOptions::for_update(&[]),
            SchemaCheckOptions::default()
        );
    }
}
