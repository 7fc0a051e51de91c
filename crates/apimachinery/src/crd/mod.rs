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
//!
//! Submodules by concern: `defaults` (defaulting and the status parts of create and
//! update), `validation` (create, update and `/status` update), `jsonpath` (selectable
//! fields' JSON paths), `webhook` (the `spec.conversion` checks), `approval` (protected
//! groups' API approval), `status` (conditions and the status controllers converge to).

pub mod compiled;
pub mod conversion;
pub mod on_demand;
pub mod scale;

mod approval;
mod defaults;
mod jsonpath;
mod status;
mod validation;
mod webhook;

pub use approval::is_protected_community_group;
pub use defaults::{carry_status_for_update, default_crd, reset_status_for_create};
pub use status::{
    condition_is_true, crd_status, crd_status_with_others, is_established, set_condition,
};
pub use validation::{
    validate_crd, validate_crd_given_spec, validate_crd_spec, validate_crd_status_update,
    validate_crd_update, validate_crd_update_with, validate_crd_with,
};

use crate::object::strings;
use serde_json::Value;

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

// ---------------------------------------------------------------------------------------
// Typed view
// ---------------------------------------------------------------------------------------

pub use scale::ScaleSpec;

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
    /// `schema.openAPIV3Schema` as written, kept as JSON text.
    pub schema: Option<SchemaText>,
    /// `subresources.status` is enabled.
    pub status_subresource: bool,
    /// `subresources.scale`, if enabled.
    pub scale: Option<ScaleSpec>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// `selectableFields[*].jsonPath`.
    pub selectable_fields: Vec<String>,
}

/// A version's schema kept as its JSON text, compressed: large schemas are mostly
/// descriptions, which compress several times over, and the text is read only when a
/// document is made from it (OpenAPI, compilation), whose results are kept.
#[derive(Clone, Debug, PartialEq)]
pub struct SchemaText(crate::codec::Packed);

impl SchemaText {
    /// The text of `schema`.
    pub fn of(schema: &Value) -> SchemaText {
        // Schemas may nest as deep as kube allows (10,000 levels): stack to match.
        let text = stacker::maybe_grow(1 << 20, 64 << 20, || schema.to_string());
        SchemaText(crate::codec::Packed::pack(text.as_bytes()))
    }

    /// Bytes of JSON text.
    pub fn len(&self) -> usize {
        self.0.unpacked_len()
    }

    /// Whether the text is empty (never: a schema is at least `{}`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The schema, parsed again, however deep (`Null` never: the text was written
    /// from a value).
    pub fn value(&self) -> Value {
        self.decode().unwrap_or(Value::Null)
    }

    /// The schema decoded as `T` straight from the text (no `Value` in between),
    /// however deep.
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> serde_json::Result<T> {
        crate::codec::decode_stored_json(&self.0.unpack())
    }
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

/// Why a CRD object cannot be read or compiled (only CRDs that would not pass
/// validation fail).
#[derive(Debug, thiserror::Error)]
pub enum CrdError {
    /// A required field is missing or empty (`spec.group`, `spec.names.kind`, ...).
    #[error("{0} is missing")]
    Missing(&'static str),
    /// `spec.scope` is neither `Namespaced` nor `Cluster`.
    #[error("unsupported scope {0:?}")]
    Scope(String),
    /// `spec.versions` is empty.
    #[error("spec.versions is empty")]
    NoVersions,
    /// A version without name.
    #[error("a version has no name")]
    VersionName,
    /// A version's `schema.openAPIV3Schema` is no JSONSchemaProps.
    #[error("version {version}: {error}")]
    Schema {
        /// The version's name.
        version: String,
        /// Why the schema does not decode.
        #[source]
        error: serde_json::Error,
    },
}

impl CrdInfo {
    /// Read the typed view from a (defaulted) CRD; fails only on CRDs that would not
    /// pass [`validate_crd`].
    pub fn from_crd(crd: &Value) -> Result<CrdInfo, CrdError> {
        Self::from_input(&compiled::CompileInput::of(crd))
    }

    /// The typed view from exactly what it reads of a CRD: its name, its spec and
    /// whether it is terminating.
    pub fn from_input(input: &compiled::CompileInput<'_>) -> Result<CrdInfo, CrdError> {
        let spec = input.spec.ok_or(CrdError::Missing("spec"))?;
        let names = spec.get("names").ok_or(CrdError::Missing("spec.names"))?;
        let group = non_empty(spec, "group").ok_or(CrdError::Missing("spec.group"))?;
        let plural = non_empty(names, "plural").ok_or(CrdError::Missing("spec.names.plural"))?;
        let kind = non_empty(names, "kind").ok_or(CrdError::Missing("spec.names.kind"))?;
        let namespaced = match str_of(spec.get("scope")) {
            "Namespaced" => true,
            "Cluster" => false,
            other => return Err(CrdError::Scope(other.to_string())),
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
            return Err(CrdError::NoVersions);
        }
        Ok(CrdInfo {
            name: input.name.to_string(),
            group,
            plural,
            singular,
            kind,
            list_kind,
            short_names: strings(names.get("shortNames")),
            categories: strings(names.get("categories")),
            namespaced,
            terminating: input.terminating,
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

fn version_info(v: &Value) -> Result<VersionInfo, CrdError> {
    let name = non_empty(v, "name").ok_or(CrdError::VersionName)?;
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
            .map(SchemaText::of),
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

fn storage_version_name(crd: &Value) -> Option<String> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)?
        .iter()
        .find(|v| bool_of(v.get("storage")))
        .map(|v| str_of(v.get("name")).to_string())
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

/// kube's default `Warning` text for a deprecated version: `<group>/<version> <Kind> is
/// deprecated`, naming the highest-priority served, non-deprecated version that ranks
/// above it when there is one (`; use <group>/<version> <Kind>`).
pub fn default_deprecation_warning(
    group: &str,
    kind: &str,
    deprecated: &str,
    versions: &[VersionInfo],
) -> String {
    let msg = format!("{group}/{deprecated} {kind} is deprecated");
    let newer = versions
        .iter()
        .filter(|v| {
            v.served
                && !v.deprecated
                && compare_kube_aware_versions(deprecated, &v.name) == std::cmp::Ordering::Less
        })
        .max_by(|a, b| compare_kube_aware_versions(&a.name, &b.name));
    match newer {
        Some(v) => format!("{msg}; use {group}/{} {kind}", v.name),
        None => msg,
    }
}

/// A required field that takes one of `accepted` (kube's `Required`, then
/// `NotSupported`): shared by the CRD's own checks and `spec.conversion`'s.
pub(crate) fn validate_enum(
    errs: &mut crate::field::ErrorList,
    fld: &crate::field::Path,
    value: &str,
    accepted: &[&str],
) {
    use crate::field::Error;
    if value.is_empty() {
        errs.push(Error::required(fld, ""));
    } else if !accepted.contains(&value) {
        errs.push(Error::not_supported(fld, Value::from(value), accepted));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::field::ErrorList;
    use serde_json::json;

    pub(super) fn testdata(rel: &str) -> std::path::PathBuf {
        // The repository's testdata, two levels above this crate.
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata")
            .join(rel)
    }

    /// The CRDs of the recorded conformance cases and of `testdata/crds`, as sent.
    pub(super) fn conformance_crds() -> Vec<Value> {
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

    pub(super) fn widget_crd() -> Value {
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

    pub(super) fn created(mut crd: Value) -> Value {
        default_crd(&mut crd);
        reset_status_for_create(&mut crd);
        crd
    }

    pub(super) fn messages(errs: &ErrorList) -> Vec<String> {
        let mut m: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        m.sort();
        m
    }

    pub(super) fn established(crd: &Value) -> Value {
        let mut crd = crd.clone();
        crd["status"] = crd_status(&crd, &Value::Null, "2026-01-01T00:00:00Z");
        crd
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
        assert!(v
            .schema
            .as_ref()
            .is_some_and(|s| s.value()["type"] == "object"));
        assert!(info.served_version("v2").is_none());
    }
}
