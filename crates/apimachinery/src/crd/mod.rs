//! `apiextensions.k8s.io/v1` CustomResourceDefinitions: defaulting, validation on create
//! and update, the status kube's controllers converge to, and [`CrdInfo`], the typed view
//! of a CRD the rest of the server works with.
//!
//! CRDs are kept as the JSON the user sent (after [`default_crd`]). Kube validates the
//! *internal* version of a CRD, which its v1 conversion builds by moving per-version
//! schemas, subresources, printer columns and selectable fields to the top level when
//! they are identical in every version. Error paths follow that: `spec.validation.…`,
//! `spec.subresources.…`, `spec.additionalPrinterColumns[i].JSONPath` when identical,
//! `spec.versions[i].…` otherwise.
//!
//! The checks of one `openAPIV3Schema` are `schema::structural::validate_schema`'s (plus
//! `schema::property_names` for map-key schemas), and metadata checks are
//! `schema::objectmeta`'s; this module adds what is specific to CRDs.
//!
//! Order of calls for a write (kube's strategy):
//! - create: [`default_crd`], [`reset_status_for_create`], [`validate_crd`], then store
//!   with [`crd_status_with_others`] as the status;
//! - update: [`default_crd`], [`carry_status_for_update`], [`validate_crd_update`] (not
//!   also `validate_crd`), then [`crd_status_with_others`];
//! - `/status` update: [`validate_crd_status_update`].

pub mod compiled;
pub mod conversion;

use crate::field::{BadValue, Error, ErrorList, Path};
use crate::schema::default::DefaultChecks;
use crate::schema::immutable;
use crate::schema::objectmeta;
use crate::schema::property_names;
use crate::schema::props::JSONSchemaProps;
use crate::schema::structural::{self, SchemaCheckOptions};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// The API group of CustomResourceDefinitions.
pub const APIEXTENSIONS_GROUP: &str = "apiextensions.k8s.io";
/// The annotation protected groups (`*.k8s.io`, `*.kubernetes.io`) must carry.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";
/// Condition type: the names in `spec.names` are accepted.
pub const CONDITION_NAMES_ACCEPTED: &str = "NamesAccepted";
/// Condition type: the CRD is served.
pub const CONDITION_ESTABLISHED: &str = "Established";
/// Condition type: the CRD is being deleted.
pub const CONDITION_TERMINATING: &str = "Terminating";
/// Condition type: the API approval annotation of protected groups.
pub const CONDITION_API_APPROVAL: &str = "KubernetesAPIApprovalPolicyConformant";
/// The most selectable fields a version may declare.
pub const MAX_SELECTABLE_FIELDS: i64 = 8;

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
const ACCEPTED_CONVERSION_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];
const APPROVAL_DOC: &str = "see https://github.com/kubernetes/enhancements/pull/1111";

// ---------------------------------------------------------------------------------------
// Typed view
// ---------------------------------------------------------------------------------------

/// The scale subresource of a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSpec {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// `statusReplicasPath`, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// `labelSelectorPath`, if set.
    pub label_selector_path: Option<String>,
}

pub use crate::table::PrinterColumn;

/// One entry of `spec.versions`.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionInfo {
    /// Version name, e.g. `v1beta1`.
    pub name: String,
    /// Served over REST.
    pub served: bool,
    /// The storage version (exactly one per valid CRD).
    pub storage: bool,
    /// Marked deprecated.
    pub deprecated: bool,
    /// Custom deprecation warning.
    pub deprecation_warning: Option<String>,
    /// `schema.openAPIV3Schema` as written.
    pub schema: Option<Value>,
    /// `subresources.status` is enabled.
    pub status_subresource: bool,
    /// `subresources.scale`, if enabled.
    pub scale: Option<ScaleSpec>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// `selectableFields[*].jsonPath`.
    pub selectable_fields: Vec<String>,
}

/// The facts about a CRD that serving, discovery and OpenAPI need.
#[derive(Clone, Debug, PartialEq)]
pub struct CrdInfo {
    /// `metadata.name` (`<plural>.<group>`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.names.plural`.
    pub plural: String,
    /// `spec.names.singular`.
    pub singular: String,
    /// `spec.names.kind`.
    pub kind: String,
    /// `spec.names.listKind`.
    pub list_kind: String,
    /// `spec.names.shortNames`.
    pub short_names: Vec<String>,
    /// `spec.names.categories`.
    pub categories: Vec<String>,
    /// `spec.scope == Namespaced`.
    pub namespaced: bool,
    /// Being deleted (kube then drops the write verbs from discovery).
    pub terminating: bool,
    /// `spec.versions` in the order written.
    pub versions: Vec<VersionInfo>,
}

impl CrdInfo {
    /// Read the typed view from a (defaulted) CRD; fails only on CRDs that would not
    /// pass [`validate_crd`].
    pub fn from_crd(crd: &Value) -> Result<CrdInfo, String> {
        let spec = crd.get("spec").ok_or("spec is missing")?;
        let names = spec.get("names").ok_or("spec.names is missing")?;
        let group = non_empty(spec, "group").ok_or("spec.group is missing")?;
        let plural = non_empty(names, "plural").ok_or("spec.names.plural is missing")?;
        let kind = non_empty(names, "kind").ok_or("spec.names.kind is missing")?;
        let namespaced = match str_of(spec.get("scope")) {
            "Namespaced" => true,
            "Cluster" => false,
            other => return Err(format!("unsupported scope {other:?}")),
        };
        let singular = non_empty(names, "singular").unwrap_or_else(|| kind.to_lowercase());
        let list_kind = non_empty(names, "listKind").unwrap_or_else(|| format!("{kind}List"));
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().map(version_info).collect::<Result<Vec<_>, _>>())
            .transpose()?
            .unwrap_or_default();
        if versions.is_empty() {
            return Err("spec.versions is empty".into());
        }
        let terminating = crd
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
            || condition_is_true(crd, CONDITION_TERMINATING);
        Ok(CrdInfo {
            name: str_of(crd.pointer("/metadata/name")).to_string(),
            group,
            plural,
            singular,
            kind,
            list_kind,
            short_names: strings(names.get("shortNames")),
            categories: strings(names.get("categories")),
            namespaced,
            terminating,
            versions,
        })
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// The storage version.
    pub fn storage_version(&self) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.storage)
    }

    /// The served version named `name`.
    pub fn served_version(&self, name: &str) -> Option<&VersionInfo> {
        self.version(name).filter(|v| v.served)
    }
}

fn version_info(v: &Value) -> Result<VersionInfo, String> {
    let name = non_empty(v, "name").ok_or("a version has no name")?;
    let sub = non_null(v.get("subresources"));
    let scale = sub
        .and_then(|s| non_null(s.get("scale")))
        .map(|s| ScaleSpec {
            spec_replicas_path: str_of(s.get("specReplicasPath")).to_string(),
            status_replicas_path: str_of(s.get("statusReplicasPath")).to_string(),
            label_selector_path: s
                .get("labelSelectorPath")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .map(str::to_string),
        });
    let printer_columns = v
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .map(|cols| {
            cols.iter()
                .filter_map(PrinterColumn::from_crd_json)
                .collect()
        })
        .unwrap_or_default();
    let selectable_fields = v
        .get("selectableFields")
        .and_then(Value::as_array)
        .map(|fs| {
            fs.iter()
                .map(|f| str_of(f.get("jsonPath")).to_string())
                .collect()
        })
        .unwrap_or_default();
    Ok(VersionInfo {
        name,
        served: bool_of(v.get("served")),
        storage: bool_of(v.get("storage")),
        deprecated: bool_of(v.get("deprecated")),
        deprecation_warning: v
            .get("deprecationWarning")
            .and_then(Value::as_str)
            .map(str::to_string),
        schema: v
            .pointer("/schema/openAPIV3Schema")
            .filter(|s| !s.is_null())
            .cloned(),
        status_subresource: sub.and_then(|s| non_null(s.get("status"))).is_some(),
        scale,
        printer_columns,
        selectable_fields,
    })
}

/// Kube's `version.CompareKubeAwareVersionStrings`: `Greater` when `a` has the higher
/// priority. Kube-like versions (`v1`, `v2beta3`, `v1alpha1`) rank GA > beta > alpha,
/// then by major and minor number; other names rank below them, alphabetically.
pub fn compare_kube_aware_versions(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    if a == b {
        return Ordering::Equal;
    }
    match (parse_kube_version(a), parse_kube_version(b)) {
        (None, None) => b.cmp(a),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((a_major, a_type, a_minor)), Some((b_major, b_type, b_minor))) => a_type
            .cmp(&b_type)
            .then(a_major.cmp(&b_major))
            .then(a_minor.cmp(&b_minor)),
    }
}

/// `v<major>[(alpha|beta)<minor>]` as (major, stability rank, minor).
fn parse_kube_version(v: &str) -> Option<(u64, u8, u64)> {
    let rest = v.strip_prefix('v')?;
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u64 = rest[..digits_end].parse().ok()?;
    let suffix = &rest[digits_end..];
    if suffix.is_empty() {
        return Some((major, 2, 0));
    }
    let (rank, minor) = if let Some(m) = suffix.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = suffix.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, rank, minor.parse().ok()?))
}

/// True when the CRD's status has a condition of this type with status `True`.
pub fn condition_is_true(crd: &Value, condition_type: &str) -> bool {
    find_condition(crd.get("status"), condition_type)
        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

/// True once the CRD is served (`Established=True`).
pub fn is_established(crd: &Value) -> bool {
    condition_is_true(crd, CONDITION_ESTABLISHED)
}

// ---------------------------------------------------------------------------------------
// Defaulting
// ---------------------------------------------------------------------------------------

/// Apply the `apiextensions.k8s.io/v1` defaults kube applies when decoding a CRD:
/// `names.singular` (lower-case kind), `names.listKind` (`<kind>List`),
/// `conversion` (`{strategy: None}`), a conversion webhook service's `port` (443),
/// `status.storedVersions` (the storage version, when empty), and the
/// always-serialized `served`/`storage` booleans of each version.
pub fn default_crd(crd: &mut Value) {
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            if is_empty_string_or_null(names.get("singular")) {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if is_empty_string_or_null(names.get("listKind")) {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
        .and_then(Value::as_object_mut)
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".into(), json!(443));
        }
    }
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut().filter_map(Value::as_object_mut) {
            // Go's non-omitempty booleans: kube always writes them back.
            for key in ["served", "storage"] {
                if v.get(key).is_none_or(Value::is_null) {
                    v.insert(key.into(), json!(false));
                }
            }
        }
    }
    if let (Some(storage), Some(obj)) = (storage, crd.as_object_mut()) {
        let status = obj.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            let empty = status
                .get("storedVersions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            if empty {
                status.insert("storedVersions".into(), json!([storage]));
            }
        }
    }
}

/// The status part of kube's `PrepareForCreate` for CRDs: whatever status the client
/// sent is dropped, and `storedVersions` starts with the storage version. Call it after
/// [`default_crd`] and before [`validate_crd`]; generation and other system metadata are
/// the generic object code's.
pub fn reset_status_for_create(crd: &mut Value) {
    // Without a storage version kube's list stays nil: `null` in its messages.
    let stored = match storage_version_name(crd) {
        Some(v) => json!([v]),
        None => Value::Null,
    };
    if let Some(obj) = crd.as_object_mut() {
        obj.insert("status".into(), json!({"storedVersions": stored}));
    }
}

/// The status part of kube's `PrepareForUpdate` for CRDs (main resource): the status is
/// the stored one, with the (possibly new) storage version appended to
/// `storedVersions`. Call it after [`default_crd`] and before [`validate_crd_update`].
pub fn carry_status_for_update(new: &mut Value, old: &Value) {
    let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
    if let (Some(storage), Some(st)) = (storage_version_name(new), status.as_object_mut()) {
        let list = st.entry("storedVersions").or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut() {
            if !list.iter().any(|v| v.as_str() == Some(storage.as_str())) {
                list.push(json!(storage));
            }
        }
    }
    if let Some(obj) = new.as_object_mut() {
        obj.insert("status".into(), status);
    }
}

fn storage_version_name(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| bool_of(v.get("storage")))
        .map(|v| str_of(v.get("name")).to_string())
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

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
pub fn validate_crd(crd: &Value) -> ErrorList {
    validate_crd_with(crd, &DefaultChecks::default())
}

/// [`validate_crd`] with the checks kube also runs on every default value.
pub fn validate_crd_with(crd: &Value, checks: &DefaultChecks<'_>) -> ErrorList {
    let mut errs = validate_crd_meta(crd);
    let ctx = SchemaContext {
        require_openapi_schema: true,
        options: SchemaCheckOptions::default(),
        checks,
        old_schemas: &[],
    };
    validate_spec(crd.get("spec").unwrap_or(&Value::Null), &ctx, &mut errs);
    validate_status_names(crd, &mut errs);
    validate_stored_versions(crd, &mut errs);
    validate_api_approval(crd, None, &mut errs);
    validate_preserve_unknown_fields(crd, None, &mut errs);
    errs
}

/// Validate an update of a CRD (kube's `ValidateCustomResourceDefinitionUpdate`), after
/// [`default_crd`] and [`carry_status_for_update`]. Run it instead of, not after,
/// [`validate_crd`]: it validates the whole new object.
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

fn validate_enum(errs: &mut ErrorList, fld: &Path, value: &str, accepted: &[&str]) {
    if value.is_empty() {
        errs.push(Error::required(fld, ""));
    } else if !accepted.contains(&value) {
        errs.push(Error::not_supported(fld, json!(value), accepted));
    }
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

/// Groups reserved for Kubernetes, whose CRDs need the API approval annotation.
pub fn is_protected_community_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Approval {
    Approved,
    Bypassed,
    Invalid,
    Missing,
}

fn approval_state(crd: &Value) -> (Approval, String) {
    let annotation = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    if annotation.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {API_APPROVED_ANNOTATION:?}, {APPROVAL_DOC}"),
        );
    }
    if annotation.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", crate::field::go_quote(annotation)),
        );
    }
    if is_absolute_url_with_host(annotation) {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    (
        Approval::Invalid,
        format!(
            "protected groups must have approval annotation {API_APPROVED_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", {APPROVAL_DOC}"
        ),
    )
}

/// `scheme://host…` with a valid scheme and a non-empty host, as Go's
/// `url.ParseRequestURI` accepts it.
fn is_absolute_url_with_host(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    scheme_ok && !host.is_empty() && !s.contains(' ')
}

fn validate_api_approval(crd: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    if !is_protected_community_group(str_of(crd.pointer("/spec/group"))) {
        return;
    }
    let (state, reason) = approval_state(crd);
    if let Some(old) = old {
        // An unchanged state never fails, so controllers updating the spec keep working.
        if approval_state(old).0 == state {
            return;
        }
    }
    let fld = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVED_ANNOTATION);
    let value = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    match state {
        Approval::Approved | Approval::Bypassed => {}
        Approval::Missing => errs.push(Error::required(&fld, reason)),
        Approval::Invalid => errs.push(Error::invalid(&fld, json!(value), reason)),
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
    let spec_path = fld.child("scale.specReplicasPath");
    let spec_replicas = str_of(scale.get("specReplicasPath"));
    if spec_replicas.is_empty() {
        errs.push(Error::required(&spec_path, ""));
    } else if !validate_simple_json_path(spec_replicas, &spec_path, errs)
        && !spec_replicas.starts_with(".spec.")
    {
        errs.push(Error::invalid(
            &spec_path,
            json!(spec_replicas),
            "should be a json path under .spec",
        ));
    }
    let status_path = fld.child("scale.statusReplicasPath");
    let status_replicas = str_of(scale.get("statusReplicasPath"));
    if status_replicas.is_empty() {
        errs.push(Error::required(&status_path, ""));
    } else if !validate_simple_json_path(status_replicas, &status_path, errs)
        && !status_replicas.starts_with(".status.")
    {
        errs.push(Error::invalid(
            &status_path,
            json!(status_replicas),
            "should be a json path under .status",
        ));
    }
    let selector_path = fld.child("scale.labelSelectorPath");
    let selector = str_of(scale.get("labelSelectorPath"));
    if !selector.is_empty()
        && !validate_simple_json_path(selector, &selector_path, errs)
        && !selector.starts_with(".spec.")
        && !selector.starts_with(".status.")
    {
        errs.push(Error::invalid(
            &selector_path,
            json!(selector),
            "should be a json path under either .spec or .status",
        ));
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

fn validate_selectable_fields(fields: &Value, schema: &Value, fld: &Path, errs: &mut ErrorList) {
    let props = match JSONSchemaProps::from_value(schema) {
        Ok(p) => p,
        Err(e) => {
            errs.push(Error::invalid(
                &Path::new("spec").child("schema.openAPIV3Schema"),
                json!(""),
                e.to_string(),
            ));
            return;
        }
    };
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let jp_path = fld.index(i).child("jsonPath");
        let json_path = str_of(f.get("jsonPath"));
        if json_path.is_empty() {
            errs.push(Error::required(&jp_path, ""));
            continue;
        }
        let (path, root, found) = match valid_field_path(json_path, &props) {
            Ok(found) => found,
            Err(e) => {
                errs.push(Error::invalid(
                    &jp_path,
                    json!(json_path),
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if root == "metadata" {
            errs.push(Error::invalid(
                &jp_path,
                json!(json_path),
                "must not point to fields in metadata",
            ));
        }
        let allowed = found
            .and_then(|s| s.type_.as_deref())
            .is_some_and(|t| matches!(t, "string" | "boolean" | "integer"));
        if !allowed {
            errs.push(Error::invalid(
                &jp_path,
                json!(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&path) {
            errs.push(Error::duplicate(&jp_path, json!(json_path)));
        } else {
            unique.push(path);
        }
    }
    if unique.len() as i64 > MAX_SELECTABLE_FIELDS {
        errs.push(Error::too_many(
            fld,
            unique.len() as i64,
            MAX_SELECTABLE_FIELDS,
        ));
    }
}

/// Kube's `ValidFieldPath` without array notation: walks `.a.b['c']` through
/// `properties` / `additionalProperties`, returning the rendered path, its first
/// element and the schema found.
fn valid_field_path<'a>(
    json_path: &str,
    schema: &'a JSONSchemaProps,
) -> Result<(String, String, Option<&'a JSONSchemaProps>), String> {
    let tokens = field_path_tokens(json_path);
    let mut current = Some(schema);
    let mut path: Option<Path> = None;
    let mut root = String::new();
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        let name = match tok.as_str() {
            "[" => {
                let quoted = it.next().ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape_single_quote(&quoted[1..quoted.len() - 1]);
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    // Kube resolves the name before checking the bracket; the error is
                    // the same either way for an unknown name.
                    let s = current.ok_or("does not refer to a valid field")?;
                    step(s, &name, &mut path, &mut root, &mut current)?;
                    return Err(format!("expected ] but got {close}"));
                }
                name
            }
            "." => it.next().ok_or("unexpected end of JSON path")?,
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        let s = current.ok_or("does not refer to a valid field")?;
        step(s, &name, &mut path, &mut root, &mut current)?;
    }
    Ok((
        path.map(|p| p.to_string()).unwrap_or_default(),
        root,
        current,
    ))
}

fn step<'a>(
    s: &'a JSONSchemaProps,
    name: &str,
    path: &mut Option<Path>,
    root: &mut String,
    current: &mut Option<&'a JSONSchemaProps>,
) -> Result<(), String> {
    let has_props = s.properties.as_ref().is_some_and(|p| !p.is_empty());
    if path.is_none() {
        *root = name.to_string();
    }
    if has_props {
        *path = Some(match path.take() {
            None => Path::new(name),
            Some(p) => p.child(name),
        });
        let child = s
            .properties
            .as_ref()
            .and_then(|p| p.get(name))
            .ok_or("does not refer to a valid field")?;
        *current = Some(child);
    } else if s.additional_properties.is_some() {
        *path = Some(match path.take() {
            None => Path::root().key(name),
            Some(p) => p.key(name),
        });
        *current = s.additional_properties_schema();
    } else {
        return Err("does not refer to a valid field".into());
    }
    Ok(())
}

/// Split like kube's scanner: `.`, `[` and `]` are tokens, single-quoted strings are
/// kept whole, everything else between delimiters is one token.
fn field_path_tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            out.push(chars[i..end].iter().collect());
            i = end;
        } else if matches!(c, '.' | '[' | ']') {
            out.push(c.to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !matches!(chars[j], '.' | '[' | ']') {
                j += 1;
            }
            out.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    out
}

fn unescape_single_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn validate_conversion(conversion: Option<&Value>, fld: &Path, errs: &mut ErrorList) {
    let Some(conv) = conversion else {
        return;
    };
    let strategy = str_of(conv.get("strategy"));
    validate_enum(errs, &fld.child("strategy"), strategy, &["None", "Webhook"]);
    // Internal field names: `webhookClientConfig`, `conversionReviewVersions`.
    let client_config = conv
        .pointer("/webhook/clientConfig")
        .filter(|c| !c.is_null());
    let review_versions = conv.pointer("/webhook/conversionReviewVersions");
    let cc_path = fld.child("webhookClientConfig");
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(Error::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => validate_webhook_client_config(cc, &cc_path, errs),
        }
        let rv_path = fld.child("conversionReviewVersions");
        let versions = strings(review_versions);
        if versions.is_empty() {
            errs.push(Error::required(&rv_path, ""));
        } else {
            let mut seen = BTreeSet::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if !seen.insert(v.clone()) {
                    errs.push(Error::invalid(
                        &rv_path.index(i),
                        json!(v),
                        "duplicate version",
                    ));
                    continue;
                }
                for msg in objectmeta::is_dns1035_label(v) {
                    errs.push(Error::invalid(&rv_path.index(i), json!(v), msg));
                }
                accepted |= ACCEPTED_CONVERSION_REVIEW_VERSIONS.contains(&v.as_str());
            }
            if !accepted {
                errs.push(Error::invalid(
                    &rv_path,
                    json!(versions),
                    format!(
                        "must include at least one of {}",
                        ACCEPTED_CONVERSION_REVIEW_VERSIONS.join(", ")
                    ),
                ));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(Error::forbidden(
                &cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !strings(review_versions).is_empty() {
            errs.push(Error::forbidden(
                &fld.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

fn validate_webhook_client_config(cc: &Value, fld: &Path, errs: &mut ErrorList) {
    let url = cc.get("url").and_then(Value::as_str);
    let service = non_null(cc.get("service"));
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => errs.push(Error::required(
            fld,
            "exactly one of url or service is required",
        )),
        (Some(url), None) => validate_webhook_url(url, &fld.child("url"), errs),
        (None, Some(svc)) => validate_webhook_service(svc, &fld.child("service"), errs),
    }
}

fn validate_webhook_url(url: &str, fld: &Path, errs: &mut ErrorList) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        before_query.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(Error::invalid(
            fld,
            json!(scheme),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(Error::invalid(
            fld,
            json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_webhook_service(svc: &Value, fld: &Path, errs: &mut ErrorList) {
    if str_of(svc.get("name")).is_empty() {
        errs.push(Error::required(
            &fld.child("name"),
            "service name is required",
        ));
    }
    if str_of(svc.get("namespace")).is_empty() {
        errs.push(Error::required(
            &fld.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(Error::invalid(
            &fld.child("port"),
            json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    if path == "/" || path.is_empty() {
        return;
    }
    let path_fld = fld.child("path");
    if path == "//" {
        errs.push(Error::invalid(
            &path_fld,
            json!(path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !path.starts_with('/') {
        errs.push(Error::invalid(
            &path_fld,
            json!(path),
            "must start with a '/'",
        ));
    }
    let trimmed = path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(Error::invalid(
                &path_fld,
                json!(path),
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in objectmeta::is_dns1123_subdomain(step) {
            errs.push(Error::invalid(
                &path_fld,
                json!(path),
                format!("segment[{i}]: {failure}"),
            ));
        }
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

// ---------------------------------------------------------------------------------------
// Status
// ---------------------------------------------------------------------------------------

/// The status kube's controllers converge to for `crd` (no other CRD competing for its
/// names): `acceptedNames`, `NamesAccepted` and `Established` conditions, and
/// `storedVersions`. `old_status` is the stored status (`null` on create); conditions
/// whose status is unchanged keep their `lastTransitionTime`.
pub fn crd_status(crd: &Value, old_status: &Value, now_rfc3339: &str) -> Value {
    crd_status_with_others(crd, old_status, &[], now_rfc3339)
}

/// Like [`crd_status`], with the other CRDs of the store: names already accepted by
/// another CRD of the same group are refused (`NamesAccepted=False` with kube's
/// `PluralConflict`/`SingularConflict`/`ShortNamesConflict`/`KindConflict`/
/// `ListKindConflict` reasons), and the refused names stay as previously accepted.
pub fn crd_status_with_others(
    crd: &Value,
    old_status: &Value,
    others: &[&Value],
    now_rfc3339: &str,
) -> Value {
    let group = str_of(crd.pointer("/spec/group"));
    let own_name = str_of(crd.pointer("/metadata/name"));
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for other in others {
        if str_of(other.pointer("/spec/group")) != group
            || str_of(other.pointer("/metadata/name")) == own_name
        {
            continue;
        }
        let names = other
            .pointer("/status/acceptedNames")
            .filter(|n| !str_of(n.get("plural")).is_empty())
            .or_else(|| other.pointer("/spec/names"))
            .unwrap_or(&Value::Null);
        for key in ["plural", "singular"] {
            resources.insert(str_of(names.get(key)).to_string());
        }
        resources.extend(strings(names.get("shortNames")));
        for key in ["kind", "listKind"] {
            kinds.insert(str_of(names.get(key)).to_string());
        }
    }

    let requested = crd.pointer("/spec/names").unwrap_or(&Value::Null);
    let accepted = old_status.get("acceptedNames").unwrap_or(&Value::Null);
    let mut new_names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let mut conflict: Option<(&str, String)> = None;

    let fresh = |req: &str, acc: &str, used: &BTreeSet<String>| -> Result<(), String> {
        if req == acc || !used.contains(req) {
            Ok(())
        } else {
            Err(format!("{} is already in use", crate::field::go_quote(req)))
        }
    };
    for (key, reason, used) in [
        ("plural", "PluralConflict", &resources),
        ("singular", "SingularConflict", &resources),
    ] {
        match fresh(str_of(requested.get(key)), str_of(accepted.get(key)), used) {
            Ok(()) => set_name(&mut new_names, key, requested.get(key)),
            Err(e) => conflict = Some((reason, e)),
        }
    }
    let requested_short = strings(requested.get("shortNames"));
    let accepted_short = strings(accepted.get("shortNames"));
    if requested_short != accepted_short {
        let errs: Vec<String> = requested_short
            .iter()
            .filter(|s| !accepted_short.contains(s))
            .filter_map(|s| fresh(s, "", &resources).err())
            .collect();
        if errs.is_empty() {
            set_name(&mut new_names, "shortNames", requested.get("shortNames"));
        } else {
            let msg = if errs.len() == 1 {
                errs[0].clone()
            } else {
                format!("[{}]", errs.join(", "))
            };
            conflict = Some(("ShortNamesConflict", msg));
        }
    }
    for (key, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match fresh(
            str_of(requested.get(key)),
            str_of(accepted.get(key)),
            &kinds,
        ) {
            Ok(()) => set_name(&mut new_names, key, requested.get(key)),
            Err(e) => conflict = Some((reason, e)),
        }
    }
    set_name(&mut new_names, "categories", requested.get("categories"));
    // `plural` and `kind` are always serialized by kube.
    for key in ["plural", "kind"] {
        new_names
            .entry(key.to_string())
            .or_insert_with(|| json!(""));
    }

    let names_accepted = match &conflict {
        None => condition(
            CONDITION_NAMES_ACCEPTED,
            "True",
            "NoConflicts",
            "no conflicts found",
        ),
        Some((reason, msg)) => condition(CONDITION_NAMES_ACCEPTED, "False", reason, msg),
    };
    let old_established = find_condition(Some(old_status), CONDITION_ESTABLISHED);
    let established = match old_established {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => c.clone(),
        _ if conflict.is_none() => condition(
            CONDITION_ESTABLISHED,
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        ),
        Some(c) => c.clone(),
        None => condition(
            CONDITION_ESTABLISHED,
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    };

    let mut conditions: Vec<Value> = old_status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    set_condition(&mut conditions, names_accepted, now_rfc3339);
    set_condition(&mut conditions, established, now_rfc3339);
    if let Some(c) = approval_condition(crd) {
        set_condition(&mut conditions, c, now_rfc3339);
    }

    let mut stored = strings(old_status.get("storedVersions"));
    if let Some(storage) = storage_version_name(crd) {
        if !stored.contains(&storage) {
            stored.push(storage);
        }
    }
    json!({
        "acceptedNames": Value::Object(new_names),
        "conditions": conditions,
        "storedVersions": stored,
    })
}

fn set_name(names: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    match value {
        Some(v) if !v.is_null() && v != &json!("") && v != &json!([]) => {
            names.insert(key.to_string(), v.clone());
        }
        _ => {
            names.remove(key);
        }
    }
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({"type": type_, "status": status, "reason": reason, "message": message})
}

fn approval_condition(crd: &Value) -> Option<Value> {
    if !is_protected_community_group(str_of(crd.pointer("/spec/group"))) {
        return None;
    }
    let (state, reason) = approval_state(crd);
    let (status, why) = match state {
        Approval::Approved => ("True", "ApprovedAnnotation"),
        Approval::Bypassed => ("False", "UnapprovedAnnotation"),
        Approval::Invalid => ("False", "InvalidAnnotation"),
        Approval::Missing => ("False", "MissingAnnotation"),
    };
    Some(condition(CONDITION_API_APPROVAL, status, why, &reason))
}

/// Set `new` (a condition without time) in `conditions` as kube's `SetCRDCondition`
/// does: appended when its type is new; otherwise reason and message are replaced and
/// `lastTransitionTime` only moves when the status changes (or was unset).
pub fn set_condition(conditions: &mut Vec<Value>, new: Value, now_rfc3339: &str) {
    let type_ = str_of(new.get("type")).to_string();
    let existing = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_.as_str()));
    match existing {
        None => {
            let mut c = new;
            if let Some(obj) = c.as_object_mut() {
                obj.insert("lastTransitionTime".into(), json!(now_rfc3339));
            }
            conditions.push(c);
        }
        Some(old) => {
            let status_changed = old.get("status") != new.get("status");
            let time_unset = str_of(old.get("lastTransitionTime")).is_empty();
            let time = if status_changed || time_unset {
                json!(now_rfc3339)
            } else {
                old.get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            let mut c = new;
            if let Some(obj) = c.as_object_mut() {
                obj.insert("lastTransitionTime".into(), time);
                for key in ["reason", "message"] {
                    if str_of(obj.get(key)).is_empty() {
                        obj.remove(key);
                    }
                }
            }
            *old = c;
        }
    }
}

fn find_condition<'a>(status: Option<&'a Value>, type_: &str) -> Option<&'a Value> {
    status?
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

// ---------------------------------------------------------------------------------------
// JSON access
// ---------------------------------------------------------------------------------------

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

fn bool_of(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool).unwrap_or(false)
}

fn non_null(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

fn non_empty(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn is_empty_string_or_null(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn testdata(rel: &str) -> std::path::PathBuf {
        // The repository's testdata, two levels above this crate.
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata")
            .join(rel)
    }

    /// The CRDs of the recorded conformance cases and of `testdata/crds`, as sent.
    pub(crate) fn conformance_crds() -> Vec<Value> {
        let mut out = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(testdata("conformance/cases"))
            .expect("conformance cases")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).expect("readable case");
            let case: Value = serde_norway::from_str(&text).expect("yaml case");
            out.extend(case["crds"].as_array().cloned().unwrap_or_default());
        }
        for name in ["crds/widgets.yaml", "crds/gadgets.yaml"] {
            let text = std::fs::read_to_string(testdata(name)).expect("readable CRD");
            out.push(serde_norway::from_str(&text).expect("yaml CRD"));
        }
        out
    }

    fn widget_crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.crud.example.com"},
            "spec": {
                "group": "crud.example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {
                            "size": {"type": "integer"}, "color": {"type": "string"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "nested": {"type": "object", "properties": {"x": {"type": "string"}}}
                        }},
                        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                    }}},
                    "subresources": {"status": {}}
                }]
            }
        })
    }

    fn created(mut crd: Value) -> Value {
        default_crd(&mut crd);
        reset_status_for_create(&mut crd);
        crd
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        let mut m: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        m.sort();
        m
    }

    #[test]
    fn conformance_crds_are_valid_and_readable() {
        let crds = conformance_crds();
        assert!(crds.len() >= 8, "found {} CRDs", crds.len());
        for crd in crds {
            let crd = created(crd);
            assert_eq!(
                messages(&validate_crd(&crd)),
                Vec::<String>::new(),
                "{}",
                crd["metadata"]["name"]
            );
            let info = CrdInfo::from_crd(&crd).expect("valid CRD reads");
            assert_eq!(info.name, format!("{}.{}", info.plural, info.group));
        }
    }

    #[test]
    fn defaulting_fills_what_kube_defaults() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("served");
        default_crd(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["spec"]["versions"][0]["served"], false);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        // Explicit names are kept.
        let mut crd = widget_crd();
        crd["spec"]["names"]["singular"] = json!("wid");
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}});
        default_crd(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "wid");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
            443
        );
    }

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
    fn selectable_fields() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["selectableFields"] = json!([
            {"jsonPath": ".spec.color"}, {"jsonPath": ".spec['color']"}, {"jsonPath": ".spec.nested"},
            {"jsonPath": ".spec.missing"}, {"jsonPath": ".spec.labels.foo"}, {"jsonPath": "spec.size"}, {}
        ]);
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.selectableFields[1].jsonPath: Duplicate value: \".spec['color']\"",
                "spec.selectableFields[2].jsonPath: Invalid value: \".spec.nested\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                "spec.selectableFields[3].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[5].jsonPath: Invalid value: \"spec.size\": is an invalid path: expected [ or . but got: spec",
                "spec.selectableFields[6].jsonPath: Required value",
            ]
        );
        let mut crd = widget_crd();
        let spec_props = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
            ["spec"]["properties"];
        let mut fields = Vec::new();
        for i in 0..9 {
            spec_props[format!("f{i}")] = json!({"type": "string"});
            fields.push(json!({"jsonPath": format!(".spec.f{i}")}));
        }
        crd["spec"]["versions"][0]["selectableFields"] = json!(fields);
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["spec.selectableFields: Too many: 9: must have at most 8 items"]
        );
    }

    #[test]
    fn field_path_tokens_keep_quoted_names() {
        assert_eq!(
            field_path_tokens(".spec['a.b'].c"),
            vec![".", "spec", "[", "'a.b'", "]", ".", "c"]
        );
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
    fn webhook_conversion_needs_config_and_review_versions() {
        let mut crd = widget_crd();
        crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec![
                "spec.conversion.conversionReviewVersions: Required value",
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            ]
        );
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://conv.example.com/x?y=1"}, "conversionReviewVersions": ["v2"]}});
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec![
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            ]
        );
        crd["spec"]["conversion"] =
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}});
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]
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

    fn established(crd: &Value) -> Value {
        let mut crd = crd.clone();
        crd["status"] = crd_status(&crd, &Value::Null, "2026-01-01T00:00:00Z");
        crd
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
    fn status_after_create_and_update() {
        let crd = created(widget_crd());
        let status = crd_status(&crd, &Value::Null, "2026-01-01T00:00:00Z");
        assert_eq!(
            status,
            json!({
                "acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]},
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                ],
                "storedVersions": ["v1"]
            })
        );
        // A later update with a new storage version keeps the condition times.
        let mut crd2 = widget_crd();
        crd2["spec"]["versions"][0]["storage"] = json!(false);
        let mut v2 = crd2["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(true);
        crd2["spec"]["versions"].as_array_mut().unwrap().push(v2);
        crd2["spec"]["names"]["shortNames"] = json!(["wd", "wdg"]);
        default_crd(&mut crd2);
        let later = crd_status(&crd2, &status, "2026-02-02T00:00:00Z");
        assert_eq!(
            later["conditions"][0]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(
            later["conditions"][1]["lastTransitionTime"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(later["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(later["acceptedNames"]["shortNames"], json!(["wd", "wdg"]));
    }

    #[test]
    fn name_conflicts_refuse_names() {
        let existing = established(&created(widget_crd()));
        let mut other = widget_crd();
        other["metadata"]["name"] = json!("gizmos.crud.example.com");
        other["spec"]["names"] = json!({"plural": "gizmos", "kind": "Widget", "listKind": "GizmoList", "shortNames": ["wd"]});
        let other = created(other);
        let status =
            crd_status_with_others(&other, &Value::Null, &[&existing], "2026-01-01T00:00:00Z");
        assert_eq!(status["conditions"][0]["status"], "False");
        assert_eq!(status["conditions"][0]["reason"], "KindConflict");
        assert_eq!(
            status["conditions"][0]["message"],
            "\"Widget\" is already in use"
        );
        assert_eq!(status["conditions"][1]["reason"], "NotAccepted");
        assert_eq!(status["conditions"][1]["status"], "False");
        // The free names are accepted, the conflicting ones are not.
        assert_eq!(status["acceptedNames"]["plural"], "gizmos");
        assert_eq!(status["acceptedNames"]["kind"], "");
        assert!(status["acceptedNames"].get("shortNames").is_none());
        assert!(!is_established(&json!({"status": status})));
        // Other groups never conflict.
        let mut elsewhere = other.clone();
        elsewhere["spec"]["group"] = json!("else.example.com");
        let status = crd_status_with_others(
            &elsewhere,
            &Value::Null,
            &[&existing],
            "2026-01-01T00:00:00Z",
        );
        assert_eq!(status["conditions"][0]["reason"], "NoConflicts");
    }

    #[test]
    fn crd_info_reads_versions() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["subresources"]["scale"] =
            json!({"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.replicas"});
        crd["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1}]);
        crd["spec"]["versions"][0]["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
        let info = CrdInfo::from_crd(&created(crd)).expect("reads");
        assert_eq!(
            (info.singular.as_str(), info.list_kind.as_str()),
            ("widget", "WidgetList")
        );
        let v = info.storage_version().expect("storage version");
        assert!(v.status_subresource);
        assert_eq!(
            v.scale.as_ref().map(|s| s.spec_replicas_path.as_str()),
            Some(".spec.size")
        );
        assert_eq!(v.printer_columns[0].priority, 1);
        assert_eq!(v.selectable_fields, vec![".spec.color"]);
        assert!(v.schema.as_ref().is_some_and(|s| s["type"] == "object"));
        assert!(info.served_version("v2").is_none());
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
