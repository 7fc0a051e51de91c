//! The structural schema: the skeleton of a CRD schema that pruning, defaulting and the
//! other stages walk, and kube's CRD-time checks that a schema is structural.
//!
//! Mirrors kube's `apiserver/schema` package (`structural.go`, `convert.go`,
//! `validation.go`, `complete.go`) and the schema part of the CRD validation in
//! `apis/apiextensions/validation` (everything except CEL rules). Value validations inside
//! `allOf`/`anyOf`/`oneOf`/`not` never contribute to the skeleton.

use crate::field::{Error, ErrorList, Path};
use crate::schema::props::{JSONSchemaProps, SchemaOrArray, SchemaOrBool, ValidationRule};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

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
    pub properties: BTreeMap<String, Structural>,
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
    pub value_validation: ValueValidation,
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
            value_validation: ValueValidation {
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
            },
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

/// kube's `openapiV3Types`, sorted as kube lists them in `supported values`.
const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Fields of an object that are TypeMeta/ObjectMeta at a resource root.
const META_FIELDS: [&str; 3] = ["metadata", "kind", "apiVersion"];

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
    let ssv = SpecValidator {
        allow_defaults: true,
        forbidden_defaults_reason: String::new(),
        inside_meta: false,
    };
    openapi_schema_errors(schema, fld, &ssv, true, opts, &mut errs);
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

/// The first error kube's `NewStructural` would return for this schema, if any.
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
        .and_then(nested_conversion_error)
        .or_else(|| s.all_of.iter().flatten().find_map(nested_conversion_error))
        .or_else(|| s.any_of.iter().flatten().find_map(nested_conversion_error))
        .or_else(|| s.one_of.iter().flatten().find_map(nested_conversion_error))
}

fn nested_conversion_error(s: &JSONSchemaProps) -> Option<String> {
    unsupported_field_error(s)
        .or_else(|| value_validation_conversion_error(s))
        .or_else(|| preserve_false_error(s))
        .or_else(|| match &s.items {
            Some(SchemaOrArray::Array(_)) => Some(ITEMS_ARRAY.to_string()),
            Some(SchemaOrArray::Schema(i)) => nested_conversion_error(i),
            None => None,
        })
        .or_else(|| {
            s.properties
                .iter()
                .flatten()
                .find_map(|(_, p)| nested_conversion_error(p))
        })
        .or_else(|| {
            s.additional_properties_schema()
                .and_then(nested_conversion_error)
        })
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

fn type_of(s: &JSONSchemaProps) -> &str {
    s.type_.as_deref().unwrap_or("")
}

fn non_empty_props(s: &JSONSchemaProps) -> Option<&BTreeMap<String, JSONSchemaProps>> {
    s.properties.as_ref().filter(|p| !p.is_empty())
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
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            errs.push(Error::required(&fld.child("type"), msg));
        } else {
            errs.push(Error::invalid(
                &fld.child("type"),
                Value::String(ty.to_string()),
                msg,
            ));
        }
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

// ---------------------------------------------------------------------------------------
// The schema rules of kube's CRD validation (ValidateCustomResourceDefinitionOpenAPISchema)
// ---------------------------------------------------------------------------------------

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
            let msg = "must be object if x-kubernetes-map-type is specified";
            if ty.is_empty() {
                errs.push(Error::required(&fld.child("type"), msg));
            } else {
                errs.push(Error::invalid(
                    &fld.child("type"),
                    Value::String(ty.to_string()),
                    msg,
                ));
            }
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
        let msg = "must be array if x-kubernetes-list-type is specified";
        if ty.is_empty() {
            errs.push(Error::required(&fld.child("type"), msg));
        } else {
            errs.push(Error::invalid(
                &fld.child("type"),
                Value::String(ty.to_string()),
                msg,
            ));
        }
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
fn map_list_keys_map_set_errors(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
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

fn has_non_atomic_set_items(s: &JSONSchemaProps) -> bool {
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
fn schema_has(s: &JSONSchemaProps, pred: &dyn Fn(&JSONSchemaProps) -> bool) -> bool {
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

// ---------------------------------------------------------------------------------------
// Go regular expressions
// ---------------------------------------------------------------------------------------

/// Compile a `pattern` with Go `regexp` (RE2) semantics where they differ from the
/// `regex` crate; the error is Go's message (`error parsing regexp: ...`).
///
/// Covers the common differences: Go treats a `{` that does not start a valid repeat as
/// a literal, rejects repeat counts above 1000 and nested repetition operators (`a**`,
/// `a++`). Uncommon syntax errors keep the `regex` crate's description.
pub fn compile_go_regexp(pattern: &str) -> Result<regex::Regex, String> {
    let translated = translate_go_regexp(pattern)?;
    regex::RegexBuilder::new(&translated)
        .size_limit(1 << 26)
        .build()
        .map_err(|e| go_regexp_message(pattern, &e.to_string()))
}

/// Rewrite Go-only literal `{` into `\{` and detect the errors Go raises but `regex` does not.
fn translate_go_regexp(p: &str) -> Result<String, String> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // The start of the previous token if it was a repetition operator, and whether a
    // lazy `?` may still follow it (Go's nested-repetition error).
    let mut after_repeat: Option<(usize, bool)> = None;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            out.push(c);
            if let Some(&n) = chars.get(i + 1) {
                out.push(n);
            }
            i += 2;
            after_repeat = None;
            continue;
        }
        if in_class {
            match c {
                ']' => in_class = false,
                // Go has no nested classes or set operations: these are literals there.
                '[' if chars.get(i + 1) != Some(&':') => out.push('\\'),
                '&' | '~' => out.push('\\'),
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a literal member.
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                i += 1;
                after_repeat = None;
            }
            '*' | '+' | '?' => {
                if let Some((start, lazy_ok)) = after_repeat {
                    if c == '?' && lazy_ok {
                        out.push(c);
                        i += 1;
                        after_repeat = Some((start, false));
                        continue;
                    }
                    let op: String = chars[start..=i].iter().collect();
                    return Err(format!(
                        "error parsing regexp: invalid nested repetition operator: `{op}`"
                    ));
                }
                out.push(c);
                after_repeat = Some((i, true));
                i += 1;
            }
            '{' => match parse_go_repeat(&chars[i..]) {
                Some((len, min, max)) => {
                    let text: String = chars[i..i + len].iter().collect();
                    if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
                        return Err(format!(
                            "error parsing regexp: invalid repeat count: `{text}`"
                        ));
                    }
                    if let Some((start, _)) = after_repeat {
                        let op: String = chars[start..i + len].iter().collect();
                        return Err(format!(
                            "error parsing regexp: invalid nested repetition operator: `{op}`"
                        ));
                    }
                    out.push_str(&text);
                    after_repeat = Some((i, true));
                    i += len;
                }
                None => {
                    out.push_str("\\{");
                    i += 1;
                    after_repeat = None;
                }
            },
            _ => {
                out.push(c);
                i += 1;
                after_repeat = None;
            }
        }
    }
    Ok(out)
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `s`: (length, min, max).
fn parse_go_repeat(s: &[char]) -> Option<(usize, u64, Option<u64>)> {
    let mut i = 1;
    let digits = |i: &mut usize| -> Option<u64> {
        let start = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        let text: String = s[start..*i].iter().collect();
        Some(text.parse().unwrap_or(u64::MAX))
    };
    let min = digits(&mut i)?;
    let max = if s.get(i) == Some(&',') {
        i += 1;
        if s.get(i) == Some(&'}') {
            None
        } else {
            Some(digits(&mut i)?)
        }
    } else {
        Some(min)
    };
    (s.get(i) == Some(&'}')).then_some((i + 1, min, max))
}

/// Map a `regex` crate syntax error onto Go's wording for the common cases.
fn go_regexp_message(pattern: &str, rust_message: &str) -> String {
    let reason = rust_message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(rust_message)
        .trim();
    let (code, expr) = if reason.starts_with("unclosed character class") {
        let start = pattern.rfind('[').unwrap_or(0);
        ("missing closing ]", pattern[start..].to_string())
    } else if reason.starts_with("unclosed group") {
        ("missing closing )", pattern.to_string())
    } else if reason.starts_with("unopened group") {
        ("unexpected )", pattern.to_string())
    } else if reason.starts_with("repetition operator missing expression") {
        let op = pattern
            .chars()
            .find(|c| matches!(c, '*' | '+' | '?'))
            .map(String::from)
            .unwrap_or_default();
        ("missing argument to repetition operator", op)
    } else if reason.starts_with("incomplete escape sequence") {
        ("trailing backslash at end of expression", String::new())
    } else if reason.starts_with("look-around") {
        let start = pattern.find("(?").unwrap_or(0);
        (
            "invalid or unsupported Perl syntax",
            pattern[start..].chars().take(3).collect(),
        )
    } else if reason.starts_with("unrecognized escape sequence")
        || reason.starts_with("backreferences are not supported")
    {
        let start = pattern.find('\\').unwrap_or(0);
        (
            "invalid escape sequence",
            pattern[start..].chars().take(2).collect(),
        )
    } else if reason.starts_with("invalid character class range") {
        ("invalid character class range", pattern.to_string())
    } else {
        return format!("error parsing regexp: {reason}: `{pattern}`");
    };
    format!("error parsing regexp: {code}: `{expr}`")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("schema parses")
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn base() -> Path {
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
    fn go_regexp_differences() {
        assert!(compile_go_regexp("a{,5}").is_ok_and(|r| r.is_match("a{,5}")));
        assert!(compile_go_regexp("^[a-z]{2,3}$")
            .is_ok_and(|r| r.is_match("ab") && !r.is_match("abcd")));
        assert!(compile_go_regexp("a*?b+?").is_ok());
        assert_eq!(
            compile_go_regexp("a**").err().as_deref(),
            Some("error parsing regexp: invalid nested repetition operator: `**`")
        );
        assert_eq!(
            compile_go_regexp("a{1001}").err().as_deref(),
            Some("error parsing regexp: invalid repeat count: `{1001}`")
        );
        assert_eq!(
            compile_go_regexp("(ab").err().as_deref(),
            Some("error parsing regexp: missing closing ): `(ab`")
        );
        assert_eq!(
            compile_go_regexp("ab)").err().as_deref(),
            Some("error parsing regexp: unexpected ): `ab)`")
        );
        assert_eq!(
            compile_go_regexp("\\q").err().as_deref(),
            Some("error parsing regexp: invalid escape sequence: `\\q`")
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
