//! kube's validation of built-in kinds (the `Validate*` functions of
//! `pkg/apis/<group>/validation` that the registry strategies call on create and
//! update), as functions over the JSON of a defaulted, versioned object.
//!
//! One file per API group. Each function covers the kind's spec and its kind-specific
//! metadata rules; `ObjectMeta` itself is checked by `schema::objectmeta`. The input is
//! what kube validates: the request defaulted (`builtin_defaults::apply`) and prepared
//! (the strategy's `PrepareForCreate`/`PrepareForUpdate`). Field paths, error types and
//! messages are kube v1.36's; where kube prints one of its internal Go structs in a
//! message, the fixed text is kube's and the value is ours (see each function).
//!
//! A field of the wrong JSON type reads as its Go zero value: the typed decoder
//! rejects such requests before validation runs.

pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod core;
mod cron;
pub mod networking;
pub mod policy;
pub mod scheduling;
pub mod storage;

#[cfg(test)]
mod tests;

use crate::field::{Error, ErrorList, Path};
use crate::schema::objectmeta::{is_label_value, is_qualified_name, validate_dns1123_label};
use serde_json::{Map, Value};

/// Validate a new object of `kind` in `group`/`version` (core is group `""`); kinds
/// without rules here validate clean.
pub fn validate(group: &str, version: &str, kind: &str, obj: &Value) -> ErrorList {
    match (group, version) {
        ("", "v1") => core::validate(kind, obj),
        ("apps", "v1") => apps::validate(kind, obj),
        ("batch", "v1") => batch::validate(kind, obj),
        ("networking.k8s.io", "v1") => networking::validate(kind, obj),
        ("policy", "v1") => policy::validate(kind, obj),
        ("autoscaling", "v2") => autoscaling::validate_v2(kind, obj),
        ("autoscaling", "v1") => autoscaling::validate_v1(kind, obj),
        ("apiregistration.k8s.io", "v1") => apiregistration::validate(kind, obj),
        _ => ErrorList::new(),
    }
}

/// Where a kind keeps its pod spec (`spec` of a Pod, `spec.template.spec` of a
/// Deployment, ...), as field path segments.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    match (group, kind) {
        ("", "Pod") => Some(&["spec"]),
        ("", "PodTemplate") => Some(&["template", "spec"]),
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => Some(&["spec", "template", "spec"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// kube-apiserver's `--allow-privileged=false` (its default): every container of a pod
/// spec asking `securityContext.privileged: true` is forbidden, in kube's words.
pub fn privileged_containers(group: &str, kind: &str, obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(segments) = pod_spec_path(group, kind) else {
        return errs;
    };
    let mut spec = obj;
    let mut path = Path::new(segments[0]);
    for (i, segment) in segments.iter().enumerate() {
        spec = spec.get(*segment).unwrap_or(&Value::Null);
        if i > 0 {
            path = path.child(segment);
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            if c.pointer("/securityContext/privileged") == Some(&Value::Bool(true)) {
                errs.push(Error::forbidden(
                    &path
                        .child(list)
                        .index(i)
                        .child("securityContext")
                        .child("privileged"),
                    "disallowed by cluster policy",
                ));
            }
        }
    }
    errs
}

/// Whether [`validate`] checks the kind's `metadata` itself (kinds whose names follow
/// a rule of their own: APIServices are `<version>.<group>`); for the others the
/// caller checks it with the DNS-subdomain name rule.
pub fn validates_metadata(group: &str, kind: &str) -> bool {
    (group, kind) == ("apiregistration.k8s.io", "APIService")
}

/// Validate an update of an object of `kind` from `old` to `new`.
pub fn validate_update(
    group: &str,
    version: &str,
    kind: &str,
    new: &Value,
    old: &Value,
) -> ErrorList {
    match (group, version) {
        ("", "v1") => core::validate_update(kind, new, old),
        ("apps", "v1") => apps::validate_update(kind, new, old),
        ("batch", "v1") => batch::validate_update(kind, new, old),
        ("networking.k8s.io", "v1") => networking::validate(kind, new),
        ("policy", "v1") => policy::validate(kind, new),
        ("autoscaling", "v2") => autoscaling::validate_v2(kind, new),
        ("autoscaling", "v1") => autoscaling::validate_v1(kind, new),
        ("scheduling.k8s.io", "v1") => scheduling::validate_update(kind, new, old),
        ("storage.k8s.io", "v1") => storage::validate_update(kind, new, old),
        ("apiregistration.k8s.io", "v1") => apiregistration::validate_update(kind, new),
        _ => ErrorList::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Reading a versioned object as kube's Go structs read

/// The string at `key` (Go's `""` when absent or not a string).
pub(crate) fn str_at<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The string at `key` when it is set (a Go `*string`).
pub(crate) fn opt_str<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

/// The integer at `key` when it is set (a Go pointer to an integer).
pub(crate) fn opt_int(obj: &Value, key: &str) -> Option<i64> {
    obj.get(key).and_then(Value::as_i64)
}

/// The integer at `key`, 0 when unset (a Go integer value field).
pub(crate) fn int_at(obj: &Value, key: &str) -> i64 {
    opt_int(obj, key).unwrap_or(0)
}

/// The list at `key` (empty when absent).
pub(crate) fn list_at<'a>(obj: &'a Value, key: &str) -> &'a [Value] {
    obj.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// The object at `key` when it is set (a Go struct pointer or map).
pub(crate) fn obj_at<'a>(obj: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    obj.get(key).and_then(Value::as_object)
}

static NULL: Value = Value::Null;

/// The value at `key`, `null` when absent (what a nil Go pointer or map prints as).
pub(crate) fn value_at<'a>(obj: &'a Value, key: &str) -> &'a Value {
    obj.get(key).unwrap_or(&NULL)
}

/// Whether the field `key` is set (present and not `null`).
pub(crate) fn is_set(obj: &Value, key: &str) -> bool {
    obj.get(key).is_some_and(|v| !v.is_null())
}

/// The string map at `key` (a Go `map[string]string`; non-string values are skipped).
pub(crate) fn string_map<'a>(obj: &'a Value, key: &str) -> Vec<(&'a str, &'a str)> {
    obj_at(obj, key)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// Equality as kube's `Semantic.DeepEqual` sees JSON: an absent field equals `null`
/// and, for lists and maps, an empty one.
pub(crate) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn empty(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        }
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => x
            .keys()
            .chain(y.keys())
            .all(|k| semantic_eq(x.get(k), y.get(k))),
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(Some(p), Some(q)))
        }
        (Some(x), Some(y)) if !x.is_null() && !y.is_null() => x == y,
        _ => empty(a) && empty(b),
    }
}

// ---------------------------------------------------------------------------------------
// kube's generic field checks

/// `ValidateNonnegativeField`.
pub(crate) fn nonnegative(value: i64, path: &Path) -> ErrorList {
    if value < 0 {
        vec![Error::invalid(
            path,
            Value::from(value),
            "must be greater than or equal to 0",
        )]
    } else {
        ErrorList::new()
    }
}

/// `ValidateImmutableField` over the field `key` of `new` and `old`.
pub(crate) fn immutable(new: &Value, old: &Value, key: &str, path: &Path) -> ErrorList {
    if semantic_eq(new.get(key), old.get(key)) {
        ErrorList::new()
    } else {
        vec![Error::invalid(
            path,
            value_at(new, key).clone(),
            "field is immutable",
        )]
    }
}

/// `ValidateDNS1123Label`.
pub(crate) fn dns1123_label(value: &str, path: &Path) -> ErrorList {
    validate_dns1123_label(value)
        .into_iter()
        .map(|msg| Error::invalid(path, Value::from(value), msg))
        .collect()
}

/// `InclusiveRangeError`.
pub(crate) fn inclusive_range(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// `IsValidPortNum`.
pub(crate) fn port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range(1, 65535)]
    }
}

/// `IsValidPortName` (an IANA service name).
pub(crate) fn port_name(name: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if name.len() > 15 {
        errs.push("must be no more than 15 characters".to_string());
    }
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b == b'-' || b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if name.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `ValidatePortNumOrName` of an `IntOrString`.
pub(crate) fn port_num_or_name(port: Option<&Value>, path: &Path) -> ErrorList {
    match port {
        Some(Value::String(name)) => port_name(name)
            .into_iter()
            .map(|msg| Error::invalid(path, Value::from(name.as_str()), msg))
            .collect(),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            port_num(n)
                .into_iter()
                .map(|msg| Error::invalid(path, Value::from(n), msg))
                .collect()
        }
    }
}

/// `ValidateLabelName`.
pub(crate) fn label_name(key: &str, path: &Path) -> ErrorList {
    is_qualified_name(key)
        .into_iter()
        .map(|msg| Error::invalid(path, Value::from(key), msg))
        .collect()
}

/// `ValidateLabels` of the map at `key` of `obj` (every error at `path`), in key order.
pub(crate) fn labels(obj: &Value, key: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut entries = string_map(obj, key);
    entries.sort();
    for (k, v) in entries {
        errs.extend(label_name(k, path));
        for msg in is_label_value(v) {
            errs.push(Error::invalid(path, Value::from(v), msg));
        }
    }
    errs
}

/// kube's `metav1validation.ValidateLabelSelector` (strict: unknown operators and
/// invalid keys or values are errors); admission policies and RBAC use it too.
pub fn label_selector(selector: &Value, path: &Path) -> ErrorList {
    let mut errs = labels(selector, "matchLabels", &path.child("matchLabels"));
    for (i, expr) in list_at(selector, "matchExpressions").iter().enumerate() {
        let p = path.child("matchExpressions").index(i);
        let values = list_at(expr, "values");
        match str_at(expr, "operator") {
            "In" | "NotIn" => {
                if values.is_empty() {
                    errs.push(Error::required(
                        &p.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    errs.push(Error::forbidden(
                        &p.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(Error::invalid(
                &p.child("operator"),
                Value::from(other),
                "not a valid selector operator",
            )),
        }
        errs.extend(label_name(str_at(expr, "key"), &p.child("key")));
        for (j, v) in values.iter().enumerate() {
            let v = v.as_str().unwrap_or("");
            for msg in is_label_value(v) {
                errs.push(Error::invalid(
                    &p.child("values").index(j),
                    Value::from(v),
                    msg,
                ));
            }
        }
    }
    errs
}

/// Whether a `metav1.LabelSelector` has no requirement.
pub(crate) fn selector_is_empty(selector: &Value) -> bool {
    obj_at(selector, "matchLabels").is_none_or(Map::is_empty)
        && list_at(selector, "matchExpressions").is_empty()
}

/// Whether `selector` (a `metav1.LabelSelector`) selects the labels at `key` of `meta`;
/// `None` when the selector does not convert (kube then reports it elsewhere).
pub(crate) fn selector_matches(selector: &Value, meta: &Value, key: &str) -> Option<bool> {
    let sel = crate::selector::labels::from_label_selector_json(selector).ok()?;
    let empty = Map::new();
    Some(sel.matches(obj_at(meta, key).unwrap_or(&empty)))
}

/// `IsValidPercent`.
pub(crate) fn is_percent(s: &str) -> bool {
    s.strip_suffix('%')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// An `IntOrString` as kube's apps validation reads it: the percentage or integer.
pub(crate) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    match v {
        Some(Value::String(s)) if is_percent(s) => s[..s.len() - 1].parse().unwrap_or(i64::MAX),
        Some(Value::String(s)) => s.parse().unwrap_or(0),
        Some(v) => v.as_i64().unwrap_or(0),
        None => 0,
    }
}

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn positive_int_or_percent(v: Option<&Value>, path: &Path) -> ErrorList {
    match v {
        Some(Value::String(s)) => {
            if is_percent(s) {
                ErrorList::new()
            } else {
                vec![Error::invalid(
                    path,
                    Value::from(s.as_str()),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
                )]
            }
        }
        other => nonnegative(other.and_then(Value::as_i64).unwrap_or(0), path),
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(v: Option<&Value>, path: &Path) -> ErrorList {
    match v {
        Some(Value::String(s)) if is_percent(s) && int_or_percent_value(v) > 100 => {
            vec![Error::invalid(
                path,
                Value::from(s.as_str()),
                "must not be greater than 100%",
            )]
        }
        _ => ErrorList::new(),
    }
}

/// How kube prints one of its internal Go structs (no JSON tags): the fields by their Go
/// names, in declaration order, values as JSON.
pub(crate) fn go_struct(fields: &[(&str, &Value)]) -> crate::field::BadValue {
    let rendered: Vec<(&str, String)> = fields
        .iter()
        .map(|(name, value)| (*name, crate::goformat::go_json(value)))
        .collect();
    crate::field::BadValue::Raw(go_struct_text(&rendered))
}

/// [`go_struct`] over values already printed (nested structs).
pub(crate) fn go_struct_text(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("\"{name}\":{value}"))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// `err` with its value replaced (for values kube prints as Go structs).
pub(crate) fn with_value(mut err: Error, value: crate::field::BadValue) -> Error {
    err.bad_value = value;
    err
}
