//! Object metadata validation, as kube-apiserver applies it to custom resources.
//!
//! - [`validate_object_meta`]: `ValidateObjectMetaAccessor` with DNS-1123-subdomain
//!   names, run on create (kube reads the object through unstructured accessors: a
//!   field of the wrong JSON type reads as absent).
//! - [`validate_object_meta_update`]: `ValidateObjectMetaAccessorUpdate` (immutable
//!   fields, generation, labels, annotations, owner references, managed fields).
//! - [`validate_embedded_resources`]: apiextensions' `objectmeta.Validate` for every
//!   `x-kubernetes-embedded-resource` object (apiVersion/kind required, metadata checked
//!   with path-segment names).
//!
//! The name and label checks reproduce apimachinery's messages exactly. Note the two
//! length wordings kube uses: DNS names say "characters", label keys/values say "bytes".

use super::structural::Structural;
use crate::field::{BadValue, Error, ErrorList, ErrorType, Path, Trail};
use crate::goformat::go_json;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Fields of an object that are TypeMeta/ObjectMeta at a resource root (or in an
/// embedded resource).
pub const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The JSON fields of kube's `metav1.ObjectMeta` (what pruning keeps in `metadata` and
/// what `PartialObjectMetadata` carries).
pub const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Total size limit of annotation keys plus values (kube's `TotalAnnotationSizeLimitB`).
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

// The formats above, matched without a regular expression: every write checks a name,
// a namespace and each label, and each has one shape, a run of bytes whose first byte,
// last byte and the bytes between come from three small sets (`is_run`). The tests
// hold each matcher to its format compiled as a regular expression.

/// `s` is one byte from `first`, or a byte from `first`, bytes from `end` or `inner`,
/// and a last byte from `end`.
fn is_run(s: &str, first: fn(u8) -> bool, end: fn(u8) -> bool, inner: fn(u8) -> bool) -> bool {
    let b = s.as_bytes();
    let (Some(&head), Some(&last)) = (b.first(), b.last()) else {
        return false;
    };
    let between = b.get(1..b.len() - 1).unwrap_or_default();
    first(head) && end(last) && between.iter().all(|&c| end(c) || inner(c))
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn dash(c: u8) -> bool {
    c == b'-'
}

/// [`DNS1123_LABEL_FMT`].
fn is_dns1123_label_format(s: &str) -> bool {
    is_run(s, lower_alnum, lower_alnum, dash)
}

/// [`DNS1123_SUBDOMAIN_FMT`]: labels joined by dots.
fn is_dns1123_subdomain_format(s: &str) -> bool {
    s.split('.').all(is_dns1123_label_format)
}

/// [`DNS1035_LABEL_FMT`].
fn is_dns1035_label_format(s: &str) -> bool {
    is_run(s, |c| c.is_ascii_lowercase(), lower_alnum, dash)
}

/// [`LABEL_KEY_FMT`].
fn is_label_key_format(s: &str) -> bool {
    let alnum: fn(u8) -> bool = |c| c.is_ascii_alphanumeric();
    is_run(s, alnum, alnum, |c| matches!(c, b'-' | b'_' | b'.'))
}

/// [`LABEL_VALUE_FMT`].
fn is_label_value_format(s: &str) -> bool {
    s.is_empty() || is_label_key_format(s)
}

/// apimachinery's `RegexError`: the message, examples, and the pattern used.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    // Go appends "'ex', " per example and " or " between them, hence kube's double space.
    let shown: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        shown.join(" or ")
    )
}

/// `IsDNS1123Subdomain` (length wording in characters).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if !is_dns1123_subdomain_format(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1123Label` (length wording in characters).
pub fn validate_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1123_label_format(value) {
        if is_dns1123_subdomain_format(value) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1035Label`.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !is_dns1035_label_format(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// kube's `maskTrailingDash` for name prefixes: the last two characters become `a`.
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let mut cut = name.len() - 2;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}a", &name[..cut])
    } else {
        name.to_string()
    }
}

/// Name rule of custom resources (`NameIsDNSSubdomain`): messages for `metadata.name`.
pub fn validate_name(name: &str) -> Vec<String> {
    is_dns1123_subdomain(name)
}

/// The same rule for a `metadata.generateName` prefix (a trailing `-` is allowed).
pub fn validate_generate_name(prefix: &str) -> Vec<String> {
    is_dns1123_subdomain(&mask_trailing_dash(prefix))
}

/// Namespace names (`ValidateNamespaceName`): a DNS-1123 label.
pub fn validate_namespace_name(name: &str) -> Vec<String> {
    validate_dns1123_label(name)
}

/// `ValidatePathSegmentName`: names of embedded resources.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for illegal in [".", ".."] {
            if name == illegal {
                return vec![format!("may not be '{illegal}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(*c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `content.IsDNS1123Subdomain` as used for label-key prefixes (length in bytes).
fn is_dns1123_subdomain_bytes(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !is_dns1123_subdomain_format(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsQualifiedName`: a label key, optionally prefixed by a DNS subdomain and `/`.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    is_dns1123_subdomain_bytes(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_label_key_format(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !is_label_value_format(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `ValidateLabels`: every error is reported at the `labels` path itself.
pub fn validate_labels<K: AsRef<str>, V: AsRef<str>>(
    labels: &BTreeMap<K, V>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for (k, v) in labels {
        let (k, v) = (k.as_ref(), v.as_ref());
        for msg in is_qualified_name(k) {
            errs.push(Error::invalid(path, Value::String(k.to_string()), msg));
        }
        for msg in is_label_value(v) {
            errs.push(Error::invalid(path, Value::String(v.to_string()), msg));
        }
    }
    errs
}

/// `ValidateAnnotations`: keys are qualified names (checked lower-cased), total size limited.
pub fn validate_annotations<K: AsRef<str>, V: AsRef<str>>(
    annotations: &BTreeMap<K, V>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    for k in annotations.keys() {
        let k = k.as_ref();
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(Error::invalid(path, Value::String(k.to_string()), msg));
        }
    }
    let total: usize = annotations
        .iter()
        .map(|(k, v)| k.as_ref().len() + v.as_ref().len())
        .sum();
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(Error::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT as i64));
    }
    errs
}

/// `ValidateFinalizers`: qualified names, and not both `orphan` and `foregroundDeletion`.
pub fn validate_finalizers<S: AsRef<str>>(finalizers: &[S], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for f in finalizers {
        let f = f.as_ref();
        for msg in is_qualified_name(f) {
            errs.push(Error::invalid(path, Value::String(f.to_string()), msg));
        }
    }
    if finalizers.iter().any(|f| f.as_ref() == "orphan")
        && finalizers
            .iter()
            .any(|f| f.as_ref() == "foregroundDeletion")
    {
        let list = Value::Array(
            finalizers
                .iter()
                .map(|f| Value::String(f.as_ref().to_string()))
                .collect(),
        );
        errs.push(Error::invalid(
            path,
            list,
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

/// Warnings kube returns for finalizers newly added to a custom resource.
pub fn finalizer_warnings(new: &[String], old: Option<&[String]>) -> Vec<String> {
    const STANDARD: [&str; 3] = ["orphan", "foregroundDeletion", "kubernetes"];
    let before: BTreeSet<&String> = old.unwrap_or(&[]).iter().collect();
    let added: BTreeSet<&String> = new.iter().filter(|f| !before.contains(f)).collect();
    let mut out = Vec::new();
    for f in added {
        let quoted = crate::field::go_quote(f);
        for msg in is_qualified_name(f) {
            out.push(format!("metadata.finalizers: {quoted}: {msg}"));
        }
        if !f.contains('/') && !STANDARD.contains(&f.as_str()) {
            if f.contains('.') {
                out.push(format!("metadata.finalizers: {quoted}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"));
            } else {
                out.push(format!("metadata.finalizers: {quoted}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"));
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------
// A typed view of `metadata`, borrowing its strings.

#[derive(Clone, Debug, Default)]
struct OwnerRef<'a> {
    api_version: &'a str,
    kind: &'a str,
    name: &'a str,
    uid: &'a str,
    controller: Option<bool>,
    block_owner_deletion: Option<bool>,
}

impl OwnerRef<'_> {
    /// JSON of a `metav1.OwnerReference` in Go's field order.
    fn go_json(&self) -> String {
        let s = |v: &str| go_json(&Value::String(v.to_string()));
        let mut out = format!(
            "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
            s(self.api_version),
            s(self.kind),
            s(self.name),
            s(self.uid)
        );
        if let Some(c) = self.controller {
            out.push_str(&format!(",\"controller\":{c}"));
        }
        if let Some(b) = self.block_owner_deletion {
            out.push_str(&format!(",\"blockOwnerDeletion\":{b}"));
        }
        out.push('}');
        out
    }
}

#[derive(Clone, Debug, Default)]
struct ManagedField<'a> {
    manager: &'a str,
    operation: &'a str,
    fields_type: &'a str,
    subresource: &'a str,
}

#[derive(Clone, Debug, Default)]
struct Meta<'a> {
    name: &'a str,
    generate_name: &'a str,
    namespace: &'a str,
    uid: &'a str,
    resource_version: &'a str,
    generation: i64,
    labels: BTreeMap<&'a str, &'a str>,
    annotations: BTreeMap<&'a str, &'a str>,
    owner_references: Vec<OwnerRef<'a>>,
    finalizers: Vec<&'a str>,
    managed_fields: Vec<ManagedField<'a>>,
    creation_timestamp: Option<DateTime<Utc>>,
    deletion_timestamp: Option<DateTime<Utc>>,
    deletion_grace_period_seconds: Option<i64>,
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A metav1.Time as kube's JSON prints it (UTC, whole seconds), or null.
fn time_value(t: Option<DateTime<Utc>>) -> Value {
    t.map_or(Value::Null, |t| {
        Value::String(t.to_rfc3339_opts(SecondsFormat::Secs, true))
    })
}

fn string_map(v: &Value) -> Option<BTreeMap<&str, &str>> {
    v.as_object()?
        .iter()
        .map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)))
        .collect()
}

fn string_list(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

/// A list's items read by `item`; empty when it is not a list or one item is not read.
fn items<'a, T>(v: &'a Value, item: fn(&'a Value) -> Option<T>) -> Vec<T> {
    v.as_array()
        .and_then(|list| list.iter().map(item).collect())
        .unwrap_or_default()
}

/// A JSON integer as Go decodes it into an int64 (floats and strings are not).
fn json_int(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) if n.is_i64() || n.is_u64() => n.as_i64(),
        _ => None,
    }
}

impl<'a> Meta<'a> {
    /// Read `metadata` through unstructured accessors: wrongly typed fields read as unset.
    /// One pass over the map (every write reads it two or three times).
    fn from_unstructured(meta: &'a Value) -> Meta<'a> {
        Meta::read(meta, true)
    }

    /// What an update compares of the stored object's metadata: all but labels,
    /// annotations, owner references and managedFields, which only the new object's
    /// checks read.
    fn stored_for_update(meta: &'a Value) -> Meta<'a> {
        Meta::read(meta, false)
    }

    fn read(meta: &'a Value, collections: bool) -> Meta<'a> {
        let mut out = Meta::default();
        let Some(m) = meta.as_object() else {
            return out;
        };
        let text = |v: &'a Value| v.as_str().unwrap_or("");
        for (k, v) in m {
            match k.as_str() {
                "labels" | "annotations" | "ownerReferences" | "managedFields" if !collections => {}
                "name" => out.name = text(v),
                "generateName" => out.generate_name = text(v),
                "namespace" => out.namespace = text(v),
                "uid" => out.uid = text(v),
                "resourceVersion" => out.resource_version = text(v),
                "generation" => out.generation = json_int(v).unwrap_or(0),
                "labels" => out.labels = string_map(v).unwrap_or_default(),
                "annotations" => out.annotations = string_map(v).unwrap_or_default(),
                "ownerReferences" => out.owner_references = items(v, owner_ref),
                "finalizers" => out.finalizers = string_list(v).unwrap_or_default(),
                "managedFields" => out.managed_fields = items(v, managed_field),
                "creationTimestamp" => out.creation_timestamp = parse_time(text(v)),
                "deletionTimestamp" => out.deletion_timestamp = parse_time(text(v)),
                "deletionGracePeriodSeconds" => out.deletion_grace_period_seconds = json_int(v),
                _ => {}
            }
        }
        out
    }

    /// Decode `metadata` into an ObjectMeta as Go's JSON decoder does, with its error text.
    fn decode(meta: &'a Value) -> Result<Meta<'a>, String> {
        let m = match meta {
            Value::Null => return Ok(Meta::default()),
            Value::Object(m) => m,
            other => {
                return Err(format!(
                    "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                    crate::goformat::go_json_kind(other)
                ))
            }
        };
        let field_err = |field: &str, v: &Value, go_type: &str| {
            format!(
                "json: cannot unmarshal {} into Go struct field ObjectMeta.{field} of type {go_type}",
                json_kind_detail(v, go_type)
            )
        };
        // Go reports the first mismatch in document order; keys are visited sorted here.
        for (k, v) in m {
            if v.is_null() {
                continue;
            }
            let expected = match k.as_str() {
                "name" | "generateName" | "namespace" | "selfLink" | "resourceVersion" => "string",
                "uid" => "types.UID",
                "generation" => "int64",
                "deletionGracePeriodSeconds" => "int64",
                "labels" | "annotations" => "map[string]string",
                "finalizers" => "[]string",
                "ownerReferences" => "[]v1.OwnerReference",
                "managedFields" => "[]v1.ManagedFieldsEntry",
                "creationTimestamp" | "deletionTimestamp" => {
                    match v.as_str() {
                        None => {
                            return Err(format!(
                                "json: cannot unmarshal {} into Go value of type string",
                                crate::goformat::go_json_kind(v)
                            ))
                        }
                        Some(s) if parse_time(s).is_none() => {
                            return Err(format!(
                                "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                                crate::field::go_quote(s),
                                crate::field::go_quote(s)
                            ))
                        }
                        Some(_) => continue,
                    }
                }
                _ => continue,
            };
            let ok = match expected {
                "string" | "types.UID" => v.is_string(),
                "int64" => json_int(v).is_some(),
                "map[string]string" => match v.as_object() {
                    None => false,
                    Some(inner) => {
                        if let Some(bad) = inner.values().find(|x| !x.is_string() && !x.is_null()) {
                            return Err(field_err(k, bad, "string"));
                        }
                        true
                    }
                },
                "[]string" => match v.as_array() {
                    None => false,
                    Some(items) => {
                        if let Some(bad) = items.iter().find(|x| !x.is_string() && !x.is_null()) {
                            return Err(field_err(k, bad, "string"));
                        }
                        true
                    }
                },
                _ => v.is_array(),
            };
            if !ok {
                return Err(field_err(k, v, expected));
            }
            if k == "ownerReferences" || k == "managedFields" {
                let (strukt, strings, bools): (&str, &[&str], &[&str]) = if k == "ownerReferences" {
                    (
                        "OwnerReference",
                        &["apiVersion", "kind", "name", "uid"],
                        &["controller", "blockOwnerDeletion"],
                    )
                } else {
                    (
                        "ManagedFieldsEntry",
                        &[
                            "manager",
                            "operation",
                            "apiVersion",
                            "fieldsType",
                            "subresource",
                        ],
                        &[],
                    )
                };
                for item in v.as_array().into_iter().flatten() {
                    let Some(obj) = item.as_object() else {
                        if item.is_null() {
                            continue;
                        }
                        return Err(field_err(k, item, &format!("v1.{strukt}")));
                    };
                    for (fk, fv) in obj {
                        if fv.is_null() {
                            continue;
                        }
                        let bad = (strings.contains(&fk.as_str()) && !fv.is_string())
                            || (bools.contains(&fk.as_str()) && !fv.is_boolean());
                        if bad {
                            let go_type = if bools.contains(&fk.as_str()) {
                                "bool"
                            } else {
                                "string"
                            };
                            return Err(format!(
                                "json: cannot unmarshal {} into Go struct field {strukt}.{k}.{fk} of type {go_type}",
                                crate::goformat::go_json_kind(fv)
                            ));
                        }
                    }
                }
            }
        }
        Ok(Meta::from_unstructured(meta))
    }
}

/// An owner reference read through unstructured accessors (`None`: not an object).
fn owner_ref(v: &Value) -> Option<OwnerRef<'_>> {
    let r = v.as_object()?;
    let mut out = OwnerRef::default();
    for (k, v) in r {
        match k.as_str() {
            "apiVersion" => out.api_version = v.as_str().unwrap_or(""),
            "kind" => out.kind = v.as_str().unwrap_or(""),
            "name" => out.name = v.as_str().unwrap_or(""),
            "uid" => out.uid = v.as_str().unwrap_or(""),
            "controller" => out.controller = v.as_bool(),
            "blockOwnerDeletion" => out.block_owner_deletion = v.as_bool(),
            _ => {}
        }
    }
    Some(out)
}

/// A managedFields entry's strings (`None`: not an object, or one of them is neither a
/// string nor null).
fn managed_field(v: &Value) -> Option<ManagedField<'_>> {
    let m = v.as_object()?;
    let mut out = ManagedField::default();
    for (k, v) in m {
        let slot = match k.as_str() {
            "manager" => &mut out.manager,
            "operation" => &mut out.operation,
            "fieldsType" => &mut out.fields_type,
            "subresource" => &mut out.subresource,
            _ => continue,
        };
        *slot = match v {
            Value::Null => "",
            Value::String(s) => s,
            _ => return None,
        };
    }
    Some(out)
}

/// Go names a fractional number going into an integer by its text: `number 1.5`.
fn json_kind_detail(v: &Value, go_type: &str) -> String {
    match v {
        Value::Number(n) if go_type == "int64" && !n.is_i64() => format!("number {n}"),
        other => crate::goformat::go_json_kind(other).to_string(),
    }
}

// ---------------------------------------------------------------------------------
// Validation.

/// Whether every ObjectMeta field of `meta` has a JSON type Go decodes without
/// question: strings, integers, maps and lists of strings, and owner references and
/// managedFields entries whose fields are such (`null` anywhere). Then
/// [`crate::typed::go_type_error`] finds nothing, and its walk through the OpenAPI
/// definitions is not needed; `false` only means "ask it".
pub fn plainly_typed(meta: &Map<String, Value>) -> bool {
    fn string(v: &Value) -> bool {
        v.is_string() || v.is_null()
    }
    fn integer(v: &Value) -> bool {
        v.is_null() || v.is_i64() || v.is_u64()
    }
    fn strings_map(v: &Value) -> bool {
        v.is_null() || v.as_object().is_some_and(|m| m.values().all(string))
    }
    fn strings_list(v: &Value) -> bool {
        v.is_null() || v.as_array().is_some_and(|a| a.iter().all(string))
    }
    /// A list of structs whose fields `field` accepts.
    fn structs(v: &Value, field: fn(&str, &Value) -> bool) -> bool {
        v.is_null()
            || v.as_array().is_some_and(|a| {
                a.iter().all(|e| {
                    e.is_null()
                        || e.as_object()
                            .is_some_and(|m| m.iter().all(|(k, v)| field(k, v)))
                })
            })
    }
    meta.iter().all(|(k, v)| match k.as_str() {
        "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion"
        | "creationTimestamp" | "deletionTimestamp" => string(v),
        "generation" | "deletionGracePeriodSeconds" => integer(v),
        "labels" | "annotations" => strings_map(v),
        "finalizers" => strings_list(v),
        "ownerReferences" => structs(v, |k, v| match k {
            "apiVersion" | "kind" | "name" | "uid" => string(v),
            "controller" | "blockOwnerDeletion" => v.is_null() || v.is_boolean(),
            _ => true,
        }),
        "managedFields" => structs(v, |k, v| match k {
            "apiVersion" | "fieldsType" | "manager" | "operation" | "subresource" | "time" => {
                string(v)
            }
            "fieldsV1" => v.is_null() || v.is_object(),
            _ => true,
        }),
        // Not a field of ObjectMeta: Go's decoder skips it.
        _ => true,
    })
}

/// Create-time validation of a custom resource's `metadata` (at `path`, usually `metadata`).
pub fn validate_object_meta(meta: &Value, namespaced: bool, path: &Path) -> ErrorList {
    validate_meta(
        &Meta::from_unstructured(meta),
        namespaced,
        NameRule::DnsSubdomain,
        path,
    )
}

/// kube's `validateCommonFields` (every kind, on update) and RBAC's `ValidateRBACName`:
/// `metadata` with names checked only as path segments (no `/`, `%`, `.`, `..`).
pub fn validate_object_meta_path_segment(meta: &Value, namespaced: bool, path: &Path) -> ErrorList {
    validate_meta(
        &Meta::from_unstructured(meta),
        namespaced,
        NameRule::PathSegment,
        path,
    )
}

/// Create-time validation of a Namespace's `metadata` (names are DNS-1123 labels).
pub fn validate_namespace_meta(meta: &Value, path: &Path) -> ErrorList {
    validate_meta(
        &Meta::from_unstructured(meta),
        false,
        NameRule::DnsLabel,
        path,
    )
}

#[derive(Clone, Copy)]
enum NameRule {
    DnsSubdomain,
    DnsLabel,
    PathSegment,
}

impl NameRule {
    fn check(self, name: &str, prefix: bool) -> Vec<String> {
        match self {
            NameRule::DnsSubdomain if prefix => validate_generate_name(name),
            NameRule::DnsSubdomain => validate_name(name),
            NameRule::DnsLabel if prefix => validate_dns1123_label(&mask_trailing_dash(name)),
            NameRule::DnsLabel => validate_namespace_name(name),
            NameRule::PathSegment => validate_path_segment_name(name, prefix),
        }
    }
}

fn validate_meta(meta: &Meta, requires_namespace: bool, rule: NameRule, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !meta.generate_name.is_empty() {
        for msg in rule.check(meta.generate_name, true) {
            errs.push(Error::invalid(
                &path.child("generateName"),
                Value::String(meta.generate_name.to_string()),
                msg,
            ));
        }
    }
    if meta.name.is_empty() {
        errs.push(Error::required(
            &path.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in rule.check(meta.name, false) {
            errs.push(Error::invalid(
                &path.child("name"),
                Value::String(meta.name.to_string()),
                msg,
            ));
        }
    }
    if requires_namespace {
        if meta.namespace.is_empty() {
            errs.push(Error::required(&path.child("namespace"), ""));
        } else {
            for msg in validate_namespace_name(meta.namespace) {
                errs.push(Error::invalid(
                    &path.child("namespace"),
                    Value::String(meta.namespace.to_string()),
                    msg,
                ));
            }
        }
    } else if !meta.namespace.is_empty() {
        errs.push(Error::forbidden(
            &path.child("namespace"),
            "not allowed on this type",
        ));
    }
    if meta.generation < 0 {
        errs.push(Error::invalid(
            &path.child("generation"),
            Value::from(meta.generation),
            "must be greater than or equal to 0",
        ));
    }
    validate_collections(meta, true, path, &mut errs);
    errs
}

/// The checks of `meta`'s labels, annotations, owner references, finalizers (when
/// `finalizers`: an update does not check them) and managedFields, in kube's order.
/// Each finds nothing in an empty collection, which gets no path made for it.
fn validate_collections(meta: &Meta, finalizers: bool, path: &Path, errs: &mut ErrorList) {
    if !meta.labels.is_empty() {
        errs.extend(validate_labels(&meta.labels, &path.child("labels")));
    }
    if !meta.annotations.is_empty() {
        errs.extend(validate_annotations(
            &meta.annotations,
            &path.child("annotations"),
        ));
    }
    if !meta.owner_references.is_empty() {
        errs.extend(validate_owner_references(
            &meta.owner_references,
            &path.child("ownerReferences"),
        ));
    }
    if finalizers && !meta.finalizers.is_empty() {
        errs.extend(validate_finalizers(
            &meta.finalizers,
            &path.child("finalizers"),
        ));
    }
    if !meta.managed_fields.is_empty() {
        errs.extend(validate_managed_fields(
            &meta.managed_fields,
            &path.child("managedFields"),
        ));
    }
}

/// An error whose value kube prints as JSON text we already have.
fn invalid_raw(path: &Path, json: String, detail: impl Into<String>) -> Error {
    Error {
        kind: ErrorType::Invalid,
        field: path.clone(),
        bad_value: BadValue::Raw(json),
        detail: detail.into(),
    }
}

/// `ValidateOwnerReferences`: field errors are at the list path (kube does not index them).
fn validate_owner_references(refs: &[OwnerRef], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut first_controller: Option<String> = None;
    for r in refs {
        let (group, version) = parse_group_version(r.api_version).unwrap_or_default();
        if version.is_empty() {
            errs.push(Error::invalid(
                &path.child("apiVersion"),
                Value::String(r.api_version.to_string()),
                "version must not be empty",
            ));
        }
        if r.kind.is_empty() {
            errs.push(Error::invalid(
                &path.child("kind"),
                Value::String(r.kind.to_string()),
                "must not be empty",
            ));
        }
        if r.name.is_empty() {
            errs.push(Error::invalid(
                &path.child("name"),
                Value::String(r.name.to_string()),
                "must not be empty",
            ));
        }
        if r.uid.is_empty() {
            errs.push(Error::invalid(
                &path.child("uid"),
                Value::String(r.uid.to_string()),
                "must not be empty",
            ));
        }
        if group.is_empty() && version == "v1" && r.kind == "Event" {
            errs.push(invalid_raw(
                path,
                r.go_json(),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.controller == Some(true) {
            let current = format!("{}/{}", r.kind, r.name);
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = refs.iter().map(OwnerRef::go_json).collect();
                    errs.push(invalid_raw(
                        path,
                        format!("[{}]", all.join(",")),
                        format!(
                            "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                        ),
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `schema.ParseGroupVersion`: `""`/`"/"` is empty, one `/` splits group and version.
fn parse_group_version(gv: &str) -> Result<(String, String), String> {
    if gv.is_empty() || gv == "/" {
        return Ok((String::new(), String::new()));
    }
    match gv.matches('/').count() {
        0 => Ok((String::new(), gv.to_string())),
        1 => {
            let (g, v) = gv.split_once('/').unwrap_or(("", gv));
            Ok((g.to_string(), v.to_string()))
        }
        _ => Err(format!("unexpected GroupVersion string: {gv}")),
    }
}

/// Go's `unicode.IsPrint`, closely enough for field manager names.
fn is_print(c: char) -> bool {
    if c == ' ' || c.is_ascii_graphic() {
        return true;
    }
    let u = c as u32;
    !(c.is_control()
        || c.is_whitespace()
        || matches!(u, 0xAD | 0x600..=0x605 | 0x61C | 0x6DD | 0x70F | 0x180E | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0xFEFF | 0xFFF9..=0xFFFB)
        || (0xE000..=0xF8FF).contains(&u)
        || u >= 0xF0000
        || (u & 0xFFFE) == 0xFFFE)
}

/// `ValidateManagedFields`.
fn validate_managed_fields(fields: &[ManagedField], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, f) in fields.iter().enumerate() {
        // The entry's path is made only for an error (entries are nearly always valid).
        let p = || path.index(i);
        if f.operation != "Apply" && f.operation != "Update" {
            errs.push(Error::invalid(
                &p().child("operation"),
                Value::String(f.operation.to_string()),
                "must be `Apply` or `Update`",
            ));
        }
        if !f.fields_type.is_empty() && f.fields_type != "FieldsV1" {
            errs.push(Error::invalid(
                &p().child("fieldsType"),
                Value::String(f.fields_type.to_string()),
                "must be `FieldsV1`",
            ));
        }
        if f.manager.len() > FIELD_MANAGER_MAX_LENGTH {
            errs.push(Error::too_long(
                &p().child("manager"),
                FIELD_MANAGER_MAX_LENGTH as i64,
            ));
        }
        for (pos, c) in f.manager.char_indices() {
            if !is_print(c) {
                errs.push(Error::invalid(
                    &p().child("manager"),
                    Value::String(f.manager.to_string()),
                    format!("invalid character U+{:04X} (at position {pos})", c as u32),
                ));
            }
        }
        if f.subresource.len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(Error::too_long(
                &p().child("subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH as i64,
            ));
        }
    }
    errs
}

/// Update-time validation of `metadata` (`ValidateObjectMetaAccessorUpdate`).
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &Path) -> ErrorList {
    let (n, o) = (Meta::from_unstructured(new), Meta::stored_for_update(old));
    let mut errs = ErrorList::new();
    if o.deletion_timestamp.is_some() {
        let before: BTreeSet<&str> = o.finalizers.iter().copied().collect();
        let extra: BTreeSet<&str> = n
            .finalizers
            .iter()
            .copied()
            .filter(|f| !before.contains(f))
            .collect();
        if !extra.is_empty() {
            let listed: Vec<String> = extra.iter().map(|f| crate::field::go_quote(f)).collect();
            errs.push(Error::forbidden(
                &path.child("finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    listed.join(", ")
                ),
            ));
        }
    }
    if n.resource_version.is_empty() {
        errs.push(Error::invalid(
            &path.child("resourceVersion"),
            Value::String(String::new()),
            "must be specified for an update",
        ));
    }
    if n.generation < o.generation {
        errs.push(Error::invalid(
            &path.child("generation"),
            Value::from(n.generation),
            "must not be decremented",
        ));
    }
    // Each immutable field as kube prints it, made only for a changed one.
    let string = |v: &str| Value::String(v.to_string());
    let seconds = |v: Option<i64>| v.map_or(Value::Null, Value::from);
    let changed: [(&str, bool, &dyn Fn() -> Value); 6] = [
        ("name", n.name != o.name, &|| string(n.name)),
        ("namespace", n.namespace != o.namespace, &|| {
            string(n.namespace)
        }),
        ("uid", n.uid != o.uid, &|| string(n.uid)),
        (
            "creationTimestamp",
            n.creation_timestamp != o.creation_timestamp,
            &|| time_value(n.creation_timestamp),
        ),
        (
            "deletionTimestamp",
            n.deletion_timestamp != o.deletion_timestamp,
            &|| time_value(n.deletion_timestamp),
        ),
        (
            "deletionGracePeriodSeconds",
            n.deletion_grace_period_seconds != o.deletion_grace_period_seconds,
            &|| seconds(n.deletion_grace_period_seconds),
        ),
    ];
    for (field, changed, value) in changed {
        if changed {
            errs.push(Error::invalid(
                &path.child(field),
                value(),
                "field is immutable",
            ));
        }
    }
    validate_collections(&n, false, path, &mut errs);
    errs
}

/// Checks of every `x-kubernetes-embedded-resource` object inside `value` (at `path`).
pub fn validate_embedded_resources(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    walk_embedded(schema, value, &Trail::At(path), &mut errs);
    errs
}

/// The walk names a path only at an embedded resource (most schemas have none).
fn walk_embedded(schema: &Structural, value: &Value, trail: &Trail, errs: &mut ErrorList) {
    match value {
        Value::Object(obj) => {
            if schema.x_embedded_resource {
                errs.extend(validate_embedded_resource(obj, &Path::new(&trail.render())));
            }
            for (k, v) in obj {
                if let Some(prop) = schema.properties.get(k) {
                    walk_embedded(prop, v, &trail.child(k), errs);
                } else if let Some(additional) = schema
                    .additional_properties
                    .as_ref()
                    .and_then(|a| a.schema())
                {
                    walk_embedded(additional, v, &trail.key(k), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items.as_deref() {
                for (i, v) in items.iter().enumerate() {
                    walk_embedded(item_schema, v, &trail.index(i), errs);
                }
            }
        }
        _ => {}
    }
}

/// apiextensions' `validateEmbeddedResource`.
fn validate_embedded_resource(obj: &Map<String, Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !obj.contains_key("apiVersion") {
        errs.push(Error::required(&path.child("apiVersion"), ""));
    }
    if !obj.contains_key("kind") {
        errs.push(Error::required(&path.child("kind"), ""));
    }
    for (k, v) in obj {
        match k.as_str() {
            "apiVersion" => match v.as_str() {
                None => errs.push(Error::invalid(
                    &path.child("apiVersion"),
                    v.clone(),
                    "must be a string",
                )),
                Some("") => errs.push(Error::required(&path.child("apiVersion"), "")),
                Some(api_version) => {
                    if let Err(e) = parse_group_version(api_version) {
                        errs.push(Error::invalid(&path.child("apiVersion"), v.clone(), e));
                    }
                }
            },
            "kind" => match v.as_str() {
                None => errs.push(Error::invalid(
                    &path.child("kind"),
                    v.clone(),
                    "must be a string",
                )),
                Some("") => errs.push(Error::required(&path.child("kind"), "")),
                Some(kind) => {
                    let msgs = is_dns1035_label(&kind.to_lowercase());
                    if !msgs.is_empty() {
                        errs.push(Error::invalid(
                            &path.child("kind"),
                            v.clone(),
                            format!(
                                "may have mixed case, but should otherwise match: {}",
                                msgs.join(",")
                            ),
                        ));
                    }
                }
            },
            "metadata" => match Meta::decode(v) {
                Err(e) => errs.push(Error::invalid(&path.child("metadata"), v.clone(), e)),
                Ok(mut meta) => {
                    if meta.name.is_empty() {
                        meta.name = "fakename";
                    }
                    let namespaced = !meta.namespace.is_empty();
                    errs.extend(validate_meta(
                        &meta,
                        namespaced,
                        NameRule::PathSegment,
                        &path.child("metadata"),
                    ));
                }
            },
            _ => {}
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// [`plainly_typed`] checks every field of the types it passes: a wrongly typed
    /// value in any field the definitions name (a fraction fits none of them) is one
    /// Go's decoding refuses, and one it does not pass.
    #[test]
    fn plainly_typed_checks_every_field_of_the_types_it_passes() {
        let defs = crate::typed::builtin_definitions();
        let props = |definition: &str| -> Vec<String> {
            defs[definition]["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        };
        let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
        let mut cases: Vec<Value> = props(meta).iter().map(|f| json!({ f: 12.5 })).collect();
        for (list, item) in [
            (
                "ownerReferences",
                "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
            ),
            (
                "managedFields",
                "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
            ),
        ] {
            cases.extend(props(item).iter().map(|f| json!({ list: [{ f: 12.5 }] })));
        }
        assert!(cases.len() > 25, "{cases:?}");
        for case in cases {
            assert!(crate::typed::go_type_error(&case, meta).is_some(), "{case}");
            assert!(!plainly_typed(case.as_object().unwrap()), "{case}");
        }
    }

    /// Each name format's matcher agrees with the format compiled as an anchored
    /// regular expression (kube matches with Go's `regexp`, which agrees with Rust's on
    /// these ASCII classes), on strings over the bytes the formats tell apart.
    #[test]
    fn name_format_matchers_agree_with_the_formats_as_regexes() {
        use proptest::prelude::*;
        let anchored = |fmt: &str| regex::Regex::new(&format!("^{fmt}$")).unwrap();
        type Matcher = fn(&str) -> bool;
        let oracles: [(&str, Matcher); 5] = [
            (DNS1123_LABEL_FMT, is_dns1123_label_format),
            (DNS1123_SUBDOMAIN_FMT, is_dns1123_subdomain_format),
            (DNS1035_LABEL_FMT, is_dns1035_label_format),
            (LABEL_KEY_FMT, is_label_key_format),
            (LABEL_VALUE_FMT, is_label_value_format),
        ];
        let oracles: Vec<_> = oracles.iter().map(|(f, m)| (anchored(f), *m)).collect();
        let matched: [std::cell::Cell<usize>; 5] = Default::default();
        let strings = proptest::collection::vec(
            prop::sample::select(vec![
                'a', 'z', 'A', 'Z', '0', '9', '-', '_', '.', '/', ' ', '\n', 'é', 'k',
            ]),
            0..8,
        )
        .prop_map(|cs| cs.into_iter().collect::<String>());
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(4000));
        runner
            .run(&strings, |s| {
                for (i, (re, matcher)) in oracles.iter().enumerate() {
                    prop_assert_eq!(matcher(&s), re.is_match(&s), "{:?} against {}", s, re);
                    matched[i].set(matched[i].get() + usize::from(re.is_match(&s)));
                }
                Ok(())
            })
            .unwrap();
        // The strings reach both sides of every format.
        assert!(matched.iter().all(|m| m.get() > 100), "{matched:?}");
        for (case, want) in [("a", true), ("a-0", true), ("-a", false), ("a.b", false)] {
            assert_eq!(is_dns1123_label_format(case), want, "{case}");
        }
        assert!(is_dns1123_subdomain_format("a.b-c.d") && !is_dns1123_subdomain_format("a..b"));
        assert!(is_label_value_format("") && !is_label_key_format(""));
        assert!(!is_dns1035_label_format("0a") && is_dns1035_label_format("a0"));
    }

    fn meta_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let scalar = prop_oneof![
            Just(Value::Null),
            Just(json!("s")),
            Just(json!("2024-01-01T00:00:00Z")),
            Just(json!(3)),
            Just(json!(-3)),
            Just(json!(1.5)),
            Just(json!(18446744073709551615u64)),
            Just(json!(true)),
            Just(json!({})),
            Just(json!([])),
        ];
        scalar.prop_recursive(3, 24, 4, |inner| {
            let keys = prop_oneof![
                Just("apiVersion"),
                Just("kind"),
                Just("name"),
                Just("uid"),
                Just("controller"),
                Just("blockOwnerDeletion"),
                Just("fieldsV1"),
                Just("fieldsType"),
                Just("time"),
                Just("manager"),
                Just("other"),
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(keys.prop_map(str::to_string), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// What [`plainly_typed`] passes, Go's typed decoding passes too.
        #[test]
        fn plainly_typed_metadata_decodes_into_object_meta(
            fields in proptest::collection::btree_map(
                proptest::sample::select(vec![
                    "name", "uid", "creationTimestamp", "generation", "deletionGracePeriodSeconds",
                    "labels", "annotations", "finalizers", "ownerReferences", "managedFields",
                    "unknown",
                ]),
                meta_value(),
                0..5,
            )
        ) {
            let meta: Map<String, Value> =
                fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            if plainly_typed(&meta) {
                let generic = crate::typed::go_type_error(
                    &Value::Object(meta.clone()),
                    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                );
                proptest::prop_assert_eq!(generic, None, "{:?}", meta);
            }
        }
    }

    #[test]
    fn metadata_reads_through_unstructured_accessors() {
        let meta = json!({
            "name": "a", "generateName": "g-", "namespace": "n", "uid": "u",
            "resourceVersion": "5", "generation": 2, "labels": {"a": "b"},
            "annotations": {"x": "y"}, "finalizers": ["f"],
            "creationTimestamp": "2024-01-01T00:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u2",
                "controller": true, "other": 1}],
            "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                "subresource": null, "time": "t"}],
            "extra": 1
        });
        let m = Meta::from_unstructured(&meta);
        assert_eq!(
            (
                m.name,
                m.generate_name,
                m.namespace,
                m.uid,
                m.resource_version,
                m.generation
            ),
            ("a", "g-", "n", "u", "5", 2)
        );
        assert_eq!(m.labels.get("a"), Some(&"b"));
        assert_eq!(m.annotations.get("x"), Some(&"y"));
        assert_eq!(m.finalizers, vec!["f"]);
        assert!(m.creation_timestamp.is_some() && m.deletion_timestamp.is_none());
        assert_eq!(m.deletion_grace_period_seconds, Some(30));
        let r = &m.owner_references[0];
        assert_eq!(
            (r.api_version, r.kind, r.name, r.uid),
            ("v1", "K", "o", "u2")
        );
        assert_eq!((r.controller, r.block_owner_deletion), (Some(true), None));
        let f = &m.managed_fields[0];
        assert_eq!(
            (f.manager, f.operation, f.fields_type, f.subresource),
            ("m", "Update", "FieldsV1", "")
        );
        // Wrongly typed fields read as unset; one bad entry unsets its whole list.
        let odd = json!({"name": 1, "generation": "2", "labels": {"a": 1},
            "managedFields": [{"manager": "m"}, {"manager": 1}], "ownerReferences": ["x"]});
        let m = Meta::from_unstructured(&odd);
        assert_eq!((m.name, m.generation), ("", 0));
        assert!(m.labels.is_empty() && m.managed_fields.is_empty());
        assert!(m.owner_references.is_empty());
        assert_eq!(Meta::from_unstructured(&json!("x")).name, "");
    }

    #[test]
    fn plainly_typed_metadata_of_a_written_object() {
        let meta = json!({
            "name": "a", "namespace": "n", "uid": "u", "resourceVersion": "5", "generation": 2,
            "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"a": "b"},
            "annotations": {"x": "y"}, "finalizers": ["f"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u2", "controller": true}],
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]
        });
        assert!(plainly_typed(meta.as_object().unwrap()));
        for odd in [
            json!({"generation": 1.5}),
            json!({"labels": {"a": 1}}),
            json!({"managedFields": [{"fieldsV1": "x"}]}),
            json!({"ownerReferences": ["x"]}),
        ] {
            assert!(!plainly_typed(odd.as_object().unwrap()), "{odd}");
        }
    }

    fn rendered(errs: &ErrorList) -> Vec<String> {
        let mut v: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn validation_golden_bad_name() {
        let errs = validate_object_meta(
            &json!({"name": "Bad_Name", "namespace": "default"}),
            true,
            &Path::new("metadata"),
        );
        assert_eq!(
            rendered(&errs),
            vec!["metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]
        );
        assert_eq!(errs[0].kind.reason(), "FieldValueInvalid");
    }

    #[test]
    fn names_namespaces_and_scope() {
        let p = Path::new("metadata");
        assert_eq!(
            rendered(&validate_object_meta(&json!({}), false, &p)),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        assert_eq!(
            rendered(&validate_object_meta(&json!({"name": "a"}), true, &p)),
            vec!["metadata.namespace: Required value"]
        );
        assert_eq!(
            rendered(&validate_object_meta(
                &json!({"name": "a", "namespace": "x"}),
                false,
                &p
            )),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
        assert_eq!(
            validate_namespace_name("a.b"),
            vec!["must not contain dots"]
        );
        assert_eq!(
            validate_name(&"a".repeat(254))[0],
            "must be no more than 253 characters"
        );
        // A generateName may end with '-'.
        assert!(validate_generate_name("web-").is_empty());
        assert_eq!(validate_generate_name("Web-").len(), 1);
    }

    #[test]
    fn label_messages() {
        assert_eq!(
            is_label_value("-bad"),
            vec!["a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]
        );
        assert_eq!(
            is_label_value(&"a".repeat(64))[0],
            "must be no more than 63 bytes"
        );
        assert_eq!(
            is_qualified_name("example.com/"),
            vec![
                "name part must be non-empty".to_string(),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string()
            ]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert!(is_qualified_name("a/b/c")[0].starts_with("a valid label key must consist of"));
        let errs = validate_labels(
            &BTreeMap::from([("ok".to_string(), "bad value".to_string())]),
            &Path::new("metadata").child("labels"),
        );
        assert_eq!(errs.len(), 1);
        assert!(errs[0]
            .to_string()
            .starts_with("metadata.labels: Invalid value: \"bad value\": a valid label"));
    }

    #[test]
    fn annotations_size_and_keys() {
        let big = BTreeMap::from([("a".to_string(), "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT))]);
        assert_eq!(
            rendered(&validate_annotations(
                &big,
                &Path::new("metadata").child("annotations")
            )),
            vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
        );
        // Keys are checked lower-cased, so upper case passes.
        let keys = BTreeMap::from([("Example.COM/Key".to_string(), String::new())]);
        assert!(validate_annotations(&keys, &Path::new("a")).is_empty());
    }

    #[test]
    fn finalizers_and_owner_references() {
        let p = Path::new("metadata");
        let meta = json!({"name": "a", "finalizers": ["orphan", "foregroundDeletion"], "ownerReferences": [
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "1"},
            {"apiVersion": "", "kind": "", "name": "", "uid": ""}
        ]});
        assert_eq!(
            rendered(&validate_object_meta(&meta, false, &p)),
            vec![
                "metadata.finalizers: Invalid value: [\"orphan\",\"foregroundDeletion\"]: finalizer orphan and foregroundDeletion cannot be both set",
                "metadata.ownerReferences.apiVersion: Invalid value: \"\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": must not be empty",
                "metadata.ownerReferences: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"1\"}: /v1, Kind=Event is disallowed from being an owner",
            ]
        );
        assert_eq!(
            finalizer_warnings(&["example.com".to_string(), "orphan".to_string()], None),
            vec!["metadata.finalizers: \"example.com\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"]
        );
    }

    #[test]
    fn update_checks_the_new_objects_collections_and_the_stored_finalizers() {
        let old = json!({"name": "a", "resourceVersion": "1", "labels": {"bad key!": "x"},
            "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["keep"],
            "managedFields": [{"manager": "m", "operation": "Bogus"}]});
        let mut new = old.clone();
        new["labels"] = json!({"ok": "x"});
        new["managedFields"] = json!([]);
        assert!(validate_object_meta_update(&new, &old, &Path::new("metadata")).is_empty());
        new["labels"] = json!({"bad key!": "x"});
        new["finalizers"] = json!(["keep", "more"]);
        let errs = rendered(&validate_object_meta_update(
            &new,
            &old,
            &Path::new("metadata"),
        ));
        assert_eq!(errs.len(), 2, "{errs:#?}");
        assert!(errs[0].starts_with("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"more\"}"), "{errs:#?}");
        assert!(
            errs[1].starts_with("metadata.labels: Invalid value: \"bad key!\""),
            "{errs:#?}"
        );
    }

    #[test]
    fn update_immutable_fields() {
        let old = json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "1", "generation": 2, "creationTimestamp": "2024-01-01T00:00:00Z"});
        let same_instant = json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "1", "generation": 2, "creationTimestamp": "2024-01-01T01:00:00+01:00"});
        assert!(
            validate_object_meta_update(&same_instant, &old, &Path::new("metadata")).is_empty()
        );
        let new = json!({"name": "b", "namespace": "ns", "uid": "u2", "generation": 1, "creationTimestamp": "2024-01-02T00:00:00Z"});
        assert_eq!(
            rendered(&validate_object_meta_update(&new, &old, &Path::new("metadata"))),
            vec![
                "metadata.creationTimestamp: Invalid value: \"2024-01-02T00:00:00Z\": field is immutable",
                "metadata.generation: Invalid value: 1: must not be decremented",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
            ]
        );
    }

    #[test]
    fn embedded_resources() {
        let schema = crate::schema::props::JSONSchemaProps::from_value(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
        }}}}))
        .expect("schema parses");
        let schema = Structural::from_props(&schema);
        let obj = json!({"spec": {"template": {"kind": "Foo_Bar", "metadata": {"name": "a/b", "labels": {"x": 1}}}}});
        assert_eq!(
            rendered(&validate_embedded_resources(&schema, &obj, &Path::root())),
            vec![
                "spec.template.apiVersion: Required value",
                "spec.template.kind: Invalid value: \"Foo_Bar\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "spec.template.metadata: Invalid value: {\"labels\":{\"x\":1},\"name\":\"a/b\"}: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string",
            ]
        );
        let obj = json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "Pod", "metadata": {"name": "a/b", "namespace": "x.y"}}}});
        assert_eq!(
            rendered(&validate_embedded_resources(&schema, &obj, &Path::root())),
            vec![
                "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "spec.template.metadata.namespace: Invalid value: \"x.y\": must not contain dots",
            ]
        );
    }
}
