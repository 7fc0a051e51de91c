//! Validation of CRDs on create, update and `/status` update (kube's
//! `ValidateCustomResourceDefinition*`), over the internal layout kube validates: fields
//! identical in every version are checked once at the top level.

use super::approval::validate_api_approval;
use super::jsonpath::validate_selectable_fields;
use super::validate_enum;
use super::webhook::validate_conversion;
use super::{bool_of, is_established, non_null, str_of, strings};
use crate::field::{BadValue, Error, ErrorList, Path};
use crate::schema::default::DefaultChecks;
use crate::schema::immutable;
use crate::schema::objectmeta;
use crate::schema::property_names;
use crate::schema::props::JSONSchemaProps;
use crate::schema::structural::{self, SchemaCheckOptions};
use serde_json::{json, Value};
use std::collections::BTreeSet;

const PRINTER_COLUMN_TYPES: &[&str] = &["boolean", "date", "integer", "number", "string"];
const PRINTER_COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];

/// What the schema checks need: kube's options (relaxed on update for what the stored
/// CRD already had) and the per-default checks other modules own.
struct SchemaContext<'c, 'a> {
    require_openapi_schema: bool,
    options: SchemaCheckOptions,
    checks: &'c DefaultChecks<'a>,
    /// The old CRD's schemas (updates): an unchanged schema keeps rules over the per-rule
    /// cost budget (kube suppresses that error for unchanged schemas).
    old_schemas: &'c [JSONSchemaProps],
}

/// Validate a new CRD (kube's `ValidateCustomResourceDefinition`), after [`default_crd`]
/// and [`reset_status_for_create`]. Defaults are checked without ObjectMeta/CEL checks;
/// use [`validate_crd_with`] to run them.
///
/// [`default_crd`]: super::default_crd
/// [`reset_status_for_create`]: super::reset_status_for_create
pub fn validate_crd(crd: &Value) -> ErrorList {
    validate_crd_with(crd, &DefaultChecks::default())
}

/// [`validate_crd`] with the checks kube also runs on every default value.
pub fn validate_crd_with(crd: &Value, checks: &DefaultChecks<'_>) -> ErrorList {
    let spec_errors = validate_crd_spec(crd.get("spec").unwrap_or(&Value::Null), checks);
    validate_crd_given_spec(crd, spec_errors)
}

/// The checks of a new CRD's `spec` (names, versions, schemas and their CEL rules,
/// subresources, columns, conversion): the costly part of [`validate_crd_with`], and a
/// function of the spec alone (the rest of the CRD blocks no rule's compilation: its
/// errors are outside `spec`).
pub fn validate_crd_spec(spec: &Value, checks: &DefaultChecks<'_>) -> ErrorList {
    let ctx = SchemaContext {
        require_openapi_schema: true,
        options: SchemaCheckOptions::default(),
        checks,
        old_schemas: &[],
    };
    let mut errs = ErrorList::new();
    validate_spec(spec, &ctx, &mut errs);
    errs
}

/// [`validate_crd_with`] given its spec's errors ([`validate_crd_spec`]'s, computed
/// before or elsewhere): the metadata, status and cross-field checks, in kube's order.
pub fn validate_crd_given_spec(crd: &Value, spec_errors: ErrorList) -> ErrorList {
    let mut errs = validate_crd_meta(crd);
    errs.extend(spec_errors);
    validate_status_names(crd, &mut errs);
    validate_stored_versions(crd, &mut errs);
    validate_api_approval(crd, None, &mut errs);
    validate_preserve_unknown_fields(crd, None, &mut errs);
    errs
}

/// Validate an update of a CRD (kube's `ValidateCustomResourceDefinitionUpdate`), after
/// [`default_crd`] and [`carry_status_for_update`]. Run it instead of, not after,
/// [`validate_crd`]: it validates the whole new object.
///
/// [`default_crd`]: super::default_crd
/// [`carry_status_for_update`]: super::carry_status_for_update
pub fn validate_crd_update(new: &Value, old: &Value) -> ErrorList {
    validate_crd_update_with(new, old, &DefaultChecks::default())
}

/// [`validate_crd_update`] with the checks kube also runs on every default value.
pub fn validate_crd_update_with(new: &Value, old: &Value, checks: &DefaultChecks<'_>) -> ErrorList {
    let mut errs = objectmeta::validate_object_meta_update(
        new.get("metadata").unwrap_or(&Value::Null),
        old.get("metadata").unwrap_or(&Value::Null),
        &Path::new("metadata"),
    );
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    let spec = new.get("spec").unwrap_or(&Value::Null);
    let old_schemas = parsed_schemas(old_spec);
    let old_schema_refs: Vec<&JSONSchemaProps> = old_schemas.iter().collect();
    let ctx = SchemaContext {
        // Don't tighten validation on what is already stored.
        require_openapi_schema: all_versions_have_schema(old_spec),
        options: SchemaCheckOptions::for_update(&old_schema_refs),
        checks,
        old_schemas: &old_schemas,
    };
    validate_spec(spec, &ctx, &mut errs);
    let spec_path = Path::new("spec");
    if is_established(old) {
        // These affect storage and cannot change once served.
        immutable(
            &mut errs,
            spec.get("scope"),
            old_spec.get("scope"),
            &spec_path.child("scope"),
        );
        immutable(
            &mut errs,
            spec.pointer("/names/kind"),
            old_spec.pointer("/names/kind"),
            &spec_path.child("names").child("kind"),
        );
    }
    // Part of the resource name, which never changes.
    immutable(
        &mut errs,
        spec.get("group"),
        old_spec.get("group"),
        &spec_path.child("group"),
    );
    immutable(
        &mut errs,
        spec.pointer("/names/plural"),
        old_spec.pointer("/names/plural"),
        &spec_path.child("names").child("plural"),
    );
    validate_status_names(new, &mut errs);
    validate_stored_versions(new, &mut errs);
    validate_api_approval(new, Some(old), &mut errs);
    validate_preserve_unknown_fields(new, Some(old), &mut errs);
    errs
}

/// Validate an update of the `status` subresource of a CRD (kube's
/// `ValidateUpdateCustomResourceDefinitionStatus`).
pub fn validate_crd_status_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = objectmeta::validate_object_meta_update(
        new.get("metadata").unwrap_or(&Value::Null),
        old.get("metadata").unwrap_or(&Value::Null),
        &Path::new("metadata"),
    );
    validate_status_names(new, &mut errs);
    errs
}

/// The `openAPIV3Schema`s of a spec that parse.
fn parsed_schemas(spec: &Value) -> Vec<JSONSchemaProps> {
    spec.get("versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter_map(|v| v.pointer("/schema/openAPIV3Schema"))
                .filter_map(|s| JSONSchemaProps::from_value(s).ok())
                .collect()
        })
        .unwrap_or_default()
}

fn immutable(errs: &mut ErrorList, new: Option<&Value>, old: Option<&Value>, fld: &Path) {
    let new = new.cloned().unwrap_or_else(|| json!(""));
    let old = old.cloned().unwrap_or_else(|| json!(""));
    if new != old {
        errs.push(Error::invalid(fld, new, "field is immutable"));
    }
}

/// Kube validates a CRD's metadata like any cluster-scoped object's, with one more
/// rule for the name (and a `generateName`): it must be `<plural>.<group>`.
fn validate_crd_meta(crd: &Value) -> ErrorList {
    let meta_path = Path::new("metadata");
    let mut errs = objectmeta::validate_object_meta(
        crd.get("metadata").unwrap_or(&Value::Null),
        false,
        &meta_path,
    );
    let required = format!(
        "{}.{}",
        str_of(crd.pointer("/spec/names/plural")),
        str_of(crd.pointer("/spec/group"))
    );
    for key in ["generateName", "name"] {
        let value = str_of(crd.get("metadata").and_then(|m| m.get(key)));
        if !value.is_empty() && value != required {
            errs.push(Error::invalid(
                &meta_path.child(key),
                json!(value),
                "must be spec.names.plural+\".\"+spec.group",
            ));
        }
    }
    errs
}

/// The internal (kube-validated) shape of the spec: which per-version fields are
/// identical in every version and therefore validated once at the top level.
struct Layout<'a> {
    versions: Vec<&'a Value>,
    schemas_identical: bool,
    subresources_identical: bool,
    columns_identical: bool,
    selectable_identical: bool,
}

impl<'a> Layout<'a> {
    fn of(spec: &'a Value) -> Self {
        let versions: Vec<&Value> = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().collect())
            .unwrap_or_default();
        let identical = |key: &str| {
            let first = versions.first().and_then(|v| semantic(v.get(key)));
            versions.iter().all(|v| semantic(v.get(key)) == first)
        };
        Layout {
            schemas_identical: identical("schema"),
            subresources_identical: identical("subresources"),
            columns_identical: identical("additionalPrinterColumns"),
            selectable_identical: identical("selectableFields"),
            versions,
        }
    }

    fn top(&self, key: &str, identical: bool) -> Option<&'a Value> {
        if identical {
            self.versions.first().and_then(|v| semantic(v.get(key)))
        } else {
            None
        }
    }

    fn per_version(&self, v: &'a Value, key: &str, identical: bool) -> Option<&'a Value> {
        if identical {
            None
        } else {
            semantic(v.get(key))
        }
    }

    fn top_schema(&self) -> Option<&'a Value> {
        self.top("schema", self.schemas_identical)
    }

    fn top_subresources(&self) -> Option<&'a Value> {
        self.top("subresources", self.subresources_identical)
    }

    fn top_selectable(&self) -> Option<&'a Value> {
        self.top(
            "selectableFields",
            self.schemas_identical && self.selectable_identical,
        )
    }

    /// The subresources that apply to a version (kube's `getSubresourcesForVersion`).
    fn subresources_for(&self, v: &'a Value) -> Option<&'a Value> {
        if self.subresources_identical {
            self.top_subresources()
        } else {
            semantic(v.get("subresources"))
        }
    }

    fn any_status_enabled(&self) -> bool {
        self.versions
            .iter()
            .any(|v| status_enabled(semantic(v.get("subresources"))))
    }
}

/// `null`, absent, `[]` and `{}`-less values compare equal the way kube's semantic
/// equality treats nil and empty slices.
fn semantic(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(v) => Some(v),
    }
}

fn status_enabled(sub: Option<&Value>) -> bool {
    sub.and_then(|s| non_null(s.get("status"))).is_some()
}

fn validate_spec(spec: &Value, ctx: &SchemaContext<'_, '_>, errs: &mut ErrorList) {
    let fld = Path::new("spec");
    let layout = Layout::of(spec);

    let group = str_of(spec.get("group"));
    let group_path = fld.child("group");
    if group.is_empty() {
        errs.push(Error::required(&group_path, ""));
    } else {
        let msgs = objectmeta::is_dns1123_subdomain(group);
        if !msgs.is_empty() {
            errs.push(Error::invalid(&group_path, json!(group), msgs.join(",")));
        } else if !group.contains('.') {
            errs.push(Error::invalid(
                &group_path,
                json!(group),
                "should be a domain with at least one dot",
            ));
        }
    }

    validate_enum(
        errs,
        &fld.child("scope"),
        str_of(spec.get("scope")),
        &["Cluster", "Namespaced"],
    );

    let preserve_unknown = bool_of(spec.get("preserveUnknownFields"));
    let top_has_schema = layout
        .top_schema()
        .and_then(|s| non_null(s.get("openAPIV3Schema")))
        .is_some();
    if ctx.require_openapi_schema {
        if !top_has_schema {
            for (i, v) in layout.versions.iter().enumerate() {
                if v.pointer("/schema/openAPIV3Schema")
                    .is_none_or(Value::is_null)
                {
                    let p = fld
                        .child("versions")
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema");
                    errs.push(Error::required(&p, "schemas are required"));
                }
            }
        }
    } else if !preserve_unknown && !top_has_schema {
        for (i, v) in layout.versions.iter().enumerate() {
            if bool_of(v.get("served"))
                && v.pointer("/schema/openAPIV3Schema")
                    .is_none_or(Value::is_null)
            {
                let p = fld
                    .child("versions")
                    .index(i)
                    .child("schema")
                    .child("openAPIV3Schema");
                errs.push(Error::required(
                    &p,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if preserve_unknown && spec_has_defaults(&layout) {
        errs.push(Error::invalid(
            &fld.child("preserveUnknownFields"),
            json!(true),
            "must be false in order to use defaults in the schema",
        ));
    }

    let mut storage_count = 0;
    let mut seen = BTreeSet::new();
    let mut unique = true;
    for (i, v) in layout.versions.iter().enumerate() {
        let vpath = fld.child("versions").index(i);
        if bool_of(v.get("storage")) {
            storage_count += 1;
        }
        let name = str_of(v.get("name"));
        if !seen.insert(name.to_string()) {
            unique = false;
        }
        let msgs = objectmeta::is_dns1035_label(name);
        if !msgs.is_empty() {
            errs.push(Error::invalid(
                &vpath.child("name"),
                json!(name),
                msgs.join(","),
            ));
        }
        let status = status_enabled(layout.subresources_for(v));
        validate_version(ctx, &layout, v, &vpath, status, errs);
    }
    if !unique {
        errs.push(Error {
            bad_value: BadValue::Raw(internal_versions(&layout)),
            ..Error::invalid(
                &fld.child("versions"),
                Value::Null,
                "must contain unique version names",
            )
        });
    }
    if storage_count != 1 {
        errs.push(Error {
            bad_value: BadValue::Raw(internal_versions(&layout)),
            ..Error::invalid(
                &fld.child("versions"),
                Value::Null,
                "must have exactly one version marked as storage version",
            )
        });
    }
    // The internal `spec.version` mirrors versions[0].name and is checked again.
    if let Some(first) = layout.versions.first() {
        let name = str_of(first.get("name"));
        if !name.is_empty() {
            let msgs = objectmeta::is_dns1035_label(name);
            if !msgs.is_empty() {
                errs.push(Error::invalid(
                    &fld.child("version"),
                    json!(name),
                    msgs.join(","),
                ));
            }
        }
    }

    let names = spec.get("names").unwrap_or(&Value::Null);
    let names_path = fld.child("names");
    for key in ["plural", "singular", "kind", "listKind"] {
        if str_of(names.get(key)).is_empty() {
            errs.push(Error::required(&names_path.child(key), ""));
        }
    }
    validate_names(names, &names_path, errs);

    validate_validation(
        layout.top_schema(),
        layout.any_status_enabled(),
        &fld.child("validation"),
        ctx,
        errs,
    );
    validate_subresources(layout.top_subresources(), &fld.child("subresources"), errs);
    if let Some(cols) = layout
        .top("additionalPrinterColumns", layout.columns_identical)
        .and_then(Value::as_array)
    {
        for (i, col) in cols.iter().enumerate() {
            validate_column(col, &fld.child("additionalPrinterColumns").index(i), errs);
        }
    }
    if let Some(fields) = layout.top_selectable() {
        let schema = layout
            .top_schema()
            .and_then(|s| non_null(s.get("openAPIV3Schema")));
        match schema {
            None => errs.push(Error::invalid(
                &fld.child("selectableFields"),
                json!(""),
                "selectableFields may only be set when validations.schema is included",
            )),
            Some(schema) => {
                validate_selectable_fields(fields, schema, &fld.child("selectableFields"), errs)
            }
        }
    }

    let conversion = non_null(spec.get("conversion"));
    if let Some(conv) = conversion {
        let strategy = str_of(conv.get("strategy"));
        if strategy != "None" && preserve_unknown {
            errs.push(Error::invalid(
                &fld.child("conversion").child("strategy"),
                json!(strategy),
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
    }
    validate_conversion(conversion, &fld.child("conversion"), errs);
}

fn validate_version(
    ctx: &SchemaContext<'_, '_>,
    layout: &Layout<'_>,
    v: &Value,
    fld: &Path,
    status: bool,
    errs: &mut ErrorList,
) {
    let deprecated = bool_of(v.get("deprecated"));
    if let Some(warning) = v.get("deprecationWarning").and_then(Value::as_str) {
        for msg in deprecation_warning_errors(deprecated, warning) {
            errs.push(Error::invalid(
                &fld.child("deprecationWarning"),
                json!(warning),
                msg,
            ));
        }
    }
    let schema = layout.per_version(v, "schema", layout.schemas_identical);
    validate_validation(schema, status, &fld.child("schema"), ctx, errs);
    let sub = layout.per_version(v, "subresources", layout.subresources_identical);
    validate_subresources(sub, &fld.child("subresources"), errs);
    if let Some(cols) = layout
        .per_version(v, "additionalPrinterColumns", layout.columns_identical)
        .and_then(Value::as_array)
    {
        for (i, col) in cols.iter().enumerate() {
            validate_column(col, &fld.child("additionalPrinterColumns").index(i), errs);
        }
    }
    let per_version_selectable = layout.per_version(
        v,
        "selectableFields",
        layout.schemas_identical && layout.selectable_identical,
    );
    if let Some(fields) = per_version_selectable {
        // Kube looks at the internal per-version schema, which is empty when all
        // versions share one schema.
        match schema.and_then(|s| non_null(s.get("openAPIV3Schema"))) {
            None => errs.push(Error::invalid(
                &fld.child("selectableFields"),
                json!(""),
                "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
            )),
            Some(s) => validate_selectable_fields(fields, s, &fld.child("selectableFields"), errs),
        }
    }
}

fn deprecation_warning_errors(deprecated: bool, warning: &str) -> Vec<String> {
    if !deprecated {
        return vec!["can only be set for deprecated versions".to_string()];
    }
    let mut out = Vec::new();
    if warning.len() > 256 {
        out.push("must be <= 256 characters long".to_string());
    }
    if warning.is_empty() {
        out.push("must not be an empty string".to_string());
    }
    // Go checks `unicode.IsPrint` first, which already rejects control characters.
    for (i, c) in warning.char_indices() {
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            out.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    out
}

/// Kube's `ValidateCustomResourceDefinitionNames`, for `spec.names` and
/// `status.acceptedNames`.
fn validate_names(names: &Value, fld: &Path, errs: &mut ErrorList) {
    for key in ["plural", "singular"] {
        let value = str_of(names.get(key));
        let msgs = objectmeta::is_dns1035_label(value);
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(Error::invalid(
                &fld.child(key),
                json!(value),
                msgs.join(","),
            ));
        }
    }
    for key in ["kind", "listKind"] {
        let value = str_of(names.get(key));
        let msgs = objectmeta::is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !msgs.is_empty() {
            errs.push(Error::invalid(
                &fld.child(key),
                json!(value),
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                ),
            ));
        }
    }
    for (i, short) in strings(names.get("shortNames")).iter().enumerate() {
        let msgs = objectmeta::is_dns1035_label(short);
        if !msgs.is_empty() {
            errs.push(Error::invalid(
                &fld.child("shortNames").index(i),
                json!(short),
                msgs.join(","),
            ));
        }
    }
    let kind = str_of(names.get("kind"));
    let list_kind = str_of(names.get("listKind"));
    if !kind.is_empty() && kind == list_kind {
        errs.push(Error::invalid(
            &fld.child("listKind"),
            json!(list_kind),
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in strings(names.get("categories")).iter().enumerate() {
        let msgs = objectmeta::is_dns1035_label(category);
        if !msgs.is_empty() {
            errs.push(Error::invalid(
                &fld.child("categories").index(i),
                json!(category),
                msgs.join(","),
            ));
        }
    }
}

fn validate_status_names(crd: &Value, errs: &mut ErrorList) {
    let names = crd.pointer("/status/acceptedNames").unwrap_or(&Value::Null);
    validate_names(names, &Path::new("status").child("acceptedNames"), errs);
}

fn validate_stored_versions(crd: &Value, errs: &mut ErrorList) {
    let fld = Path::new("status").child("storedVersions");
    let raw = crd
        .pointer("/status/storedVersions")
        .cloned()
        .unwrap_or(Value::Null);
    let stored = strings(Some(&raw));
    if stored.is_empty() {
        errs.push(Error::invalid(
            &fld,
            raw,
            "must have at least one stored version",
        ));
        return;
    }
    let versions: Vec<&Value> = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().collect())
        .unwrap_or_default();
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in &versions {
        let name = str_of(v.get("name"));
        let found = stored.iter().any(|s| s == name);
        if bool_of(v.get("storage")) && !found {
            errs.push(Error::invalid(
                &fld,
                raw.clone(),
                format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, s)| s.as_str() != name);
    }
    for (i, v) in remaining {
        errs.push(Error::invalid(
            &fld.index(i),
            json!(v),
            format!(
                "missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"
            ),
        ));
    }
}

fn validate_preserve_unknown_fields(crd: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    if old.is_some_and(|o| bool_of(o.pointer("/spec/preserveUnknownFields"))) {
        // Compatibility with data stored before v1.
        return;
    }
    if bool_of(crd.pointer("/spec/preserveUnknownFields")) {
        errs.push(Error::invalid(
            &Path::new("spec").child("preserveUnknownFields"),
            json!(true),
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
}

fn all_versions_have_schema(spec: &Value) -> bool {
    spec.get("versions")
        .and_then(Value::as_array)
        .is_none_or(|vs| {
            vs.iter().all(|v| {
                v.pointer("/schema/openAPIV3Schema")
                    .is_some_and(|s| !s.is_null())
            })
        })
}

fn spec_has_defaults(layout: &Layout<'_>) -> bool {
    fn has_default(s: &JSONSchemaProps) -> bool {
        s.default.is_some()
            || s.items_schema().is_some_and(has_default)
            || s.additional_properties_schema().is_some_and(has_default)
            || s.not.as_deref().is_some_and(has_default)
            || s.x_property_names.as_deref().is_some_and(has_default)
            || [&s.all_of, &s.one_of, &s.any_of]
                .into_iter()
                .flatten()
                .any(|list| list.iter().any(has_default))
            || [&s.properties, &s.pattern_properties, &s.definitions]
                .into_iter()
                .flatten()
                .any(|map| map.values().any(has_default))
    }
    layout.versions.iter().any(|v| {
        v.pointer("/schema/openAPIV3Schema")
            .and_then(|s| JSONSchemaProps::from_value(s).ok())
            .is_some_and(|s| has_default(&s))
    })
}

/// Kube's `validateCustomResourceDefinitionValidation` for one `{openAPIV3Schema: …}`:
/// the schema checks are `schema::structural`'s, the map-key schema checks
/// `schema::property_names`', the immutability rules `schema::immutable`'.
fn validate_validation(
    validation: Option<&Value>,
    status_enabled: bool,
    fld: &Path,
    ctx: &SchemaContext<'_, '_>,
    errs: &mut ErrorList,
) {
    let Some(schema) = validation.and_then(|v| non_null(v.get("openAPIV3Schema"))) else {
        return;
    };
    let schema_path = fld.child("openAPIV3Schema");
    let props = match JSONSchemaProps::from_value(schema) {
        Ok(p) => p,
        Err(e) => {
            errs.push(Error::invalid(
                &schema_path,
                json!(""),
                format!("invalid schema: {e}"),
            ));
            return;
        }
    };
    let mut opts = ctx.options;
    opts.status_subresource = status_enabled;
    errs.extend(structural::validate_schema(
        &props,
        &schema_path,
        &opts,
        ctx.checks,
    ));
    errs.extend(property_names::validate_property_names_schema(
        &props,
        &schema_path,
    ));
    errs.extend(immutable::validate_immutability_schema(
        &props,
        &schema_path,
    ));
    // x-kubernetes-validations: rule fields, then (in a structural schema) compiling.
    let compile_rules = opts.require_structural_schema && structural::is_structural(&props);
    let unchanged = ctx.old_schemas.contains(&props);
    let rule_errs =
        crate::cel::validate_crd_rules(&props, &schema_path, errs, compile_rules, unchanged);
    errs.extend(rule_errs);
}

fn validate_subresources(sub: Option<&Value>, fld: &Path, errs: &mut ErrorList) {
    let Some(scale) = sub.and_then(|s| non_null(s.get("scale"))) else {
        return;
    };
    // (field, required, the prefixes it must start with, kube's message otherwise)
    let paths: [(&str, bool, &[&str], &str); 3] = [
        (
            "specReplicasPath",
            true,
            &[".spec."],
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            true,
            &[".status."],
            "should be a json path under .status",
        ),
        (
            "labelSelectorPath",
            false,
            &[".spec.", ".status."],
            "should be a json path under either .spec or .status",
        ),
    ];
    for (key, required, under, msg) in paths {
        let path = fld.child(&format!("scale.{key}"));
        let value = str_of(scale.get(key));
        if value.is_empty() {
            if required {
                errs.push(Error::required(&path, ""));
            }
        } else if !validate_simple_json_path(value, &path, errs)
            && !under.iter().any(|p| value.starts_with(p))
        {
            errs.push(Error::invalid(&path, json!(value), msg));
        }
    }
}

/// Kube's `validateSimpleJSONPath`; returns true when it reported an error.
fn validate_simple_json_path(s: &str, fld: &Path, errs: &mut ErrorList) -> bool {
    if s.is_empty() {
        errs.push(Error::invalid(fld, json!(s), "must not be empty"));
        return true;
    }
    if !s.starts_with('.') {
        errs.push(Error::invalid(
            fld,
            json!(s),
            "must be a simple json path starting with .",
        ));
        return true;
    }
    false
}

fn validate_column(col: &Value, fld: &Path, errs: &mut ErrorList) {
    if str_of(col.get("name")).is_empty() {
        errs.push(Error::required(&fld.child("name"), ""));
    }
    let types = format!("must be one of {}", PRINTER_COLUMN_TYPES.join(","));
    let t = str_of(col.get("type"));
    if t.is_empty() {
        errs.push(Error::required(&fld.child("type"), types));
    } else if !PRINTER_COLUMN_TYPES.contains(&t) {
        errs.push(Error::invalid(&fld.child("type"), json!(t), types));
    }
    let format = str_of(col.get("format"));
    if !format.is_empty() && !PRINTER_COLUMN_FORMATS.contains(&format) {
        errs.push(Error::invalid(
            &fld.child("format"),
            json!(format),
            format!("must be one of {}", PRINTER_COLUMN_FORMATS.join(",")),
        ));
    }
    // The internal type's field is `JSONPath`, and kube's path says so.
    let path_fld = fld.child("JSONPath");
    let json_path = str_of(col.get("jsonPath"));
    if json_path.is_empty() {
        errs.push(Error::required(&path_fld, ""));
    } else {
        validate_simple_json_path(json_path, &path_fld, errs);
    }
}

/// Render the internal `spec.versions` the way kube prints it in field errors (JSON of
/// the internal Go structs, whose fields carry no json tags).
fn internal_versions(layout: &Layout<'_>) -> String {
    let go =
        |v: Option<&Value>| serde_json::to_string(v.unwrap_or(&Value::Null)).unwrap_or_default();
    let items: Vec<String> = layout
        .versions
        .iter()
        .map(|v| {
            let schema = layout
                .per_version(v, "schema", layout.schemas_identical)
                .map(|s| format!("{{\"OpenAPIV3Schema\":{}}}", go(s.get("openAPIV3Schema"))));
            let sub = layout
                .per_version(v, "subresources", layout.subresources_identical)
                .map(|s| {
                    let scale = non_null(s.get("scale")).map(|sc| {
                        format!(
                            "{{\"SpecReplicasPath\":{},\"StatusReplicasPath\":{},\"LabelSelectorPath\":{}}}",
                            go(Some(&json!(str_of(sc.get("specReplicasPath"))))),
                            go(Some(&json!(str_of(sc.get("statusReplicasPath"))))),
                            go(sc.get("labelSelectorPath")),
                        )
                    });
                    format!(
                        "{{\"Status\":{},\"Scale\":{}}}",
                        if status_enabled(Some(s)) { "{}" } else { "null" },
                        scale.unwrap_or_else(|| "null".into())
                    )
                });
            let cols = layout
                .per_version(v, "additionalPrinterColumns", layout.columns_identical)
                .and_then(Value::as_array)
                .map(|cols| {
                    let items: Vec<String> = cols
                        .iter()
                        .map(|c| {
                            format!(
                                "{{\"Name\":{},\"Type\":{},\"Format\":{},\"Description\":{},\"Priority\":{},\"JSONPath\":{}}}",
                                go(Some(&json!(str_of(c.get("name"))))),
                                go(Some(&json!(str_of(c.get("type"))))),
                                go(Some(&json!(str_of(c.get("format"))))),
                                go(Some(&json!(str_of(c.get("description"))))),
                                c.get("priority").and_then(Value::as_i64).unwrap_or(0),
                                go(Some(&json!(str_of(c.get("jsonPath"))))),
                            )
                        })
                        .collect();
                    format!("[{}]", items.join(","))
                });
            let selectable = layout
                .per_version(v, "selectableFields", layout.schemas_identical && layout.selectable_identical)
                .and_then(Value::as_array)
                .map(|fs| {
                    let items: Vec<String> = fs
                        .iter()
                        .map(|f| format!("{{\"JSONPath\":{}}}", go(Some(&json!(str_of(f.get("jsonPath")))))))
                        .collect();
                    format!("[{}]", items.join(","))
                });
            format!(
                "{{\"Name\":{},\"Served\":{},\"Storage\":{},\"Deprecated\":{},\"DeprecationWarning\":{},\"Schema\":{},\"Subresources\":{},\"AdditionalPrinterColumns\":{},\"SelectableFields\":{}}}",
                go(Some(&json!(str_of(v.get("name"))))),
                bool_of(v.get("served")),
                bool_of(v.get("storage")),
                bool_of(v.get("deprecated")),
                go(v.get("deprecationWarning")),
                schema.unwrap_or_else(|| "null".into()),
                sub.unwrap_or_else(|| "null".into()),
                cols.unwrap_or_else(|| "null".into()),
                selectable.unwrap_or_else(|| "null".into()),
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::tests::{created, established, messages, testdata, widget_crd};
    use crate::crd::{
        carry_status_for_update, crd_status, default_crd, CrdInfo, CONDITION_API_APPROVAL,
    };

    #[test]
    fn golden_invalid_default_is_reported_under_spec_validation() {
        let golden: Value = serde_json::from_str(
            &std::fs::read_to_string(testdata("conformance/golden/defaulting.golden.json"))
                .expect("golden"),
        )
        .expect("golden json");
        let case: Value = serde_norway::from_str(
            &std::fs::read_to_string(testdata("conformance/cases/defaulting.yaml")).expect("case"),
        )
        .expect("case yaml");
        let step = case["steps"]
            .as_array()
            .and_then(|s| {
                s.iter()
                    .find(|s| s["name"] == "crd-with-invalid-default-rejected")
            })
            .expect("step");
        let expected = &golden["crd-with-invalid-default-rejected"]["body"]["details"]["causes"];
        let errs = validate_crd(&created(step["body"].clone()));
        let causes: Vec<Value> = errs
            .iter()
            .map(|e| json!({"field": e.field.as_str(), "message": e.body(), "reason": e.kind.reason()}))
            .collect();
        assert_eq!(&json!(causes), expected);
    }

    #[test]
    fn differing_schemas_are_reported_per_version() {
        let mut crd = widget_crd();
        let mut v2 = crd["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"]["default"] =
            json!("big");
        crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
        let errs = validate_crd(&created(crd));
        assert_eq!(errs.len(), 1, "{:?}", messages(&errs));
        assert!(errs[0].field.as_str().starts_with(
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[size].default"
        ));
    }

    #[test]
    fn name_must_be_plural_dot_group() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("gadgets.crud.example.com");
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["metadata.name: Invalid value: \"gadgets.crud.example.com\": must be spec.names.plural+\".\"+spec.group"]
        );
    }

    #[test]
    fn group_needs_a_dot_and_scope_an_enum() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("widgets.example");
        crd["spec"]["group"] = json!("example");
        crd["spec"]["scope"] = json!("Global");
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
            ]
        );
    }

    #[test]
    fn names_follow_dns_1035() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("Widgets.crud.example.com");
        crd["spec"]["names"]["plural"] = json!("Widgets");
        crd["spec"]["names"]["listKind"] = json!("Widget");
        crd["spec"]["names"]["shortNames"] = json!(["w_d"]);
        let msgs = messages(&validate_crd(&created(crd)));
        let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
        assert!(
            msgs.contains(&format!(
                "spec.names.plural: Invalid value: \"Widgets\": {dns1035}"
            )),
            "{msgs:#?}"
        );
        assert!(msgs.contains(&format!(
            "spec.names.shortNames[0]: Invalid value: \"w_d\": {dns1035}"
        )));
        assert!(msgs.contains(&"spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".to_string()));
        assert!(msgs.contains(&"metadata.name: Invalid value: \"Widgets.crud.example.com\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string()), "{msgs:#?}");
    }

    #[test]
    fn exactly_one_storage_version_and_schemas_required() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["storage"] = json!(false);
        crd["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("schema");
        let errs = validate_crd(&created(crd));
        let msgs = messages(&errs);
        assert!(
            msgs.contains(
                &"spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"
                    .to_string()
            ),
            "{msgs:#?}"
        );
        assert!(
            msgs.contains(
                &"status.storedVersions: Invalid value: null: must have at least one stored version"
                    .to_string()
            ),
            "{msgs:#?}"
        );
        let storage = errs
            .iter()
            .find(|e| e.detail == "must have exactly one version marked as storage version")
            .expect("storage error");
        assert_eq!(storage.field.as_str(), "spec.versions");
        assert_eq!(
            storage.body(),
            "Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must have exactly one version marked as storage version"
        );
    }

    #[test]
    fn duplicate_and_invalid_version_names() {
        let mut crd = widget_crd();
        let mut v = crd["spec"]["versions"][0].clone();
        v["storage"] = json!(false);
        crd["spec"]["versions"].as_array_mut().unwrap().push(v);
        crd["spec"]["versions"][0]["name"] = json!("V1");
        crd["spec"]["versions"][1]["name"] = json!("V1");
        let errs = validate_crd(&created(crd));
        let fields: Vec<String> = errs
            .iter()
            .map(|e| format!("{}|{}", e.field, e.detail))
            .collect();
        assert!(fields
            .iter()
            .any(|f| f.starts_with("spec.versions[0].name|a DNS-1035 label")));
        assert!(
            fields
                .iter()
                .any(|f| f.starts_with("spec.version|a DNS-1035 label")),
            "{fields:#?}"
        );
        assert!(fields.contains(&"spec.versions|must contain unique version names".to_string()));
    }

    #[test]
    fn scale_subresource_paths() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["subresources"]["scale"] = json!({
            "specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas", "labelSelectorPath": ".metadata.labels"
        });
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.subresources.scale.labelSelectorPath: Invalid value: \".metadata.labels\": should be a json path under either .spec or .status",
                "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
                "spec.subresources.scale.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with .",
            ]
        );
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["subresources"]["scale"] = json!({});
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.subresources.scale.specReplicasPath: Required value",
                "spec.subresources.scale.statusReplicasPath: Required value",
            ]
        );
    }

    #[test]
    fn printer_columns_top_level_and_per_version() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
            {"name": "Size", "type": "bool", "format": "uuid", "jsonPath": "spec.size"},
            {"type": "integer"}
        ]);
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec![
                "spec.additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.size\": must be a simple json path starting with .",
                "spec.additionalPrinterColumns[0].format: Invalid value: \"uuid\": must be one of byte,date,date-time,double,float,int32,int64,password",
                "spec.additionalPrinterColumns[0].type: Invalid value: \"bool\": must be one of boolean,date,integer,number,string",
                "spec.additionalPrinterColumns[1].JSONPath: Required value",
                "spec.additionalPrinterColumns[1].name: Required value",
            ]
        );
        let mut v2 = crd["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
        crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
        let fields: Vec<String> = validate_crd(&created(crd))
            .iter()
            .map(|e| e.field.to_string())
            .collect();
        assert!(
            fields.contains(&"spec.versions[0].additionalPrinterColumns[0].type".to_string()),
            "{fields:#?}"
        );
        assert!(!fields
            .iter()
            .any(|f| f.starts_with("spec.additionalPrinterColumns")));
    }

    #[test]
    fn status_subresource_restricts_the_root_schema() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["default"] = json!({});
        let errs = validate_crd(&created(crd));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field.as_str(), "spec.validation.openAPIV3Schema");
        assert!(errs[0].detail.starts_with("only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed"));
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
            json!({"type": "array", "items": {"type": "string"}});
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            // Kube reports the structural rule too.
            vec![
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": must be object at the root",
                "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
            ]
        );
    }

    #[test]
    fn unparsable_schema_is_a_field_error() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["type"] =
            json!(5);
        let errs = validate_crd(&created(crd));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field.as_str(), "spec.validation.openAPIV3Schema");
        // Garbage everywhere never panics.
        for garbage in [
            json!(null),
            json!([]),
            json!({"spec": 5}),
            json!({"spec": {"versions": [5, null]}}),
        ] {
            let mut g = garbage;
            default_crd(&mut g);
            let _ = validate_crd(&g);
            assert!(CrdInfo::from_crd(&g).is_err());
        }
    }

    #[test]
    fn nullable_root_and_preserve_unknown_fields() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["subresources"] = json!(null);
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["nullable"] = json!(true);
        crd["spec"]["preserveUnknownFields"] = json!(true);
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
            ]
        );
    }

    #[test]
    fn protected_groups_need_api_approval() {
        let mut crd = widget_crd();
        crd["metadata"]["name"] = json!("widgets.apps.k8s.io");
        crd["spec"]["group"] = json!("apps.k8s.io");
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec!["metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"]
        );
        crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
        assert!(validate_crd(&created(crd.clone())).is_empty());
        let status = crd_status(&created(crd), &Value::Null, "2026-01-01T00:00:00Z");
        assert_eq!(status["conditions"][2]["type"], CONDITION_API_APPROVAL);
        assert_eq!(status["conditions"][2]["reason"], "ApprovedAnnotation");
        assert_eq!(
            status["conditions"][2]["message"],
            "approved in https://github.com/kubernetes/kubernetes/pull/1"
        );
    }

    #[test]
    fn update_keeps_group_plural_and_established_scope_kind() {
        let old = established(&created(widget_crd()));
        let mut new = widget_crd();
        new["metadata"]["resourceVersion"] = json!("7");
        new["spec"]["group"] = json!("other.example.com");
        new["spec"]["names"]["plural"] = json!("gadgets");
        new["spec"]["names"]["kind"] = json!("Gadget");
        new["spec"]["names"]["listKind"] = json!("GadgetList");
        new["spec"]["scope"] = json!("Cluster");
        default_crd(&mut new);
        carry_status_for_update(&mut new, &old);
        assert_eq!(
            messages(&validate_crd_update(&new, &old)),
            vec![
                "spec.group: Invalid value: \"other.example.com\": field is immutable",
                "spec.names.kind: Invalid value: \"Gadget\": field is immutable",
                "spec.names.plural: Invalid value: \"gadgets\": field is immutable",
                "spec.scope: Invalid value: \"Cluster\": field is immutable",
            ]
        );
        // Not yet established: scope and kind may change.
        let mut not_established = old.clone();
        not_established["status"]["conditions"] = json!([]);
        let errs = validate_crd_update(&new, &not_established);
        assert_eq!(errs.len(), 2, "{:#?}", messages(&errs));
    }

    #[test]
    fn removing_a_stored_version_is_refused() {
        let mut crd = widget_crd();
        let mut v1beta1 = crd["spec"]["versions"][0].clone();
        v1beta1["name"] = json!("v1beta1");
        v1beta1["storage"] = json!(false);
        crd["spec"]["versions"]
            .as_array_mut()
            .unwrap()
            .push(v1beta1);
        let mut old = established(&created(crd.clone()));
        old["status"]["storedVersions"] = json!(["v1beta1", "v1"]);
        let mut new = widget_crd();
        new["metadata"]["resourceVersion"] = json!("7");
        default_crd(&mut new);
        carry_status_for_update(&mut new, &old);
        assert_eq!(
            messages(&validate_crd_update(&new, &old)),
            vec!["status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions"]
        );
    }

    #[test]
    fn deprecation_warning_rules() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["deprecationWarning"] = json!("old");
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec!["spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions"]
        );
        crd["spec"]["versions"][0]["deprecated"] = json!(true);
        crd["spec"]["versions"][0]["deprecationWarning"] = json!("bad\u{7}");
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["spec.versions[0].deprecationWarning: Invalid value: \"bad\\a\": must only contain printable UTF-8 characters; non-printable character found at index 3"]
        );
    }
}
