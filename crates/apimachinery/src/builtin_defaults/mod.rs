//! kube's defaulting of built-in kinds (the `SetDefaults_*` functions of
//! `pkg/apis/<group>/<version>/defaults.go` and the declarative `+default` values their
//! generated defaulters carry), as functions over the JSON of a versioned object.
//!
//! One file per API group. Scalar defaults are data: tables of [`FieldDefault`], each
//! written for one Go struct and applied to every instance of it; rules that read other
//! fields are functions next to their table. Every rule only fills a field that is
//! unset, so applying twice changes nothing, and a default the OpenAPI schema already
//! applied is left alone.
//!
//! Beyond defaulting:
//! - [`round_trip`]: what kube's conversion to its internal version and back leaves in
//!   a served object (field aliases), which a server storing JSON must do itself;
//! - the kind-specific parts of kube's `PrepareForCreate` that fill fields:
//!   [`core::pod_prepare_for_create`], [`batch::job_prepare_for_create`] (needs the
//!   uid), [`apps::daemon_set_prepare_for_create`].
//!
//! Groups with no defaults in kube v1.36: policy (PodDisruptionBudget), certificates
//! (CertificateSigningRequest), node (RuntimeClass), coordination, events.

pub mod apiregistration;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod core;
pub mod discovery;
pub mod flowcontrol;
pub mod networking;
pub mod rbac;
pub mod scheduling;
pub mod storage;

#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

/// Apply kube's defaults for `kind` of `group`/`version` (core is group `""`) to `obj`;
/// a `<Kind>List` defaults each of its items. Unknown kinds are left as they are.
pub fn apply(group: &str, version: &str, kind: &str, obj: &mut Value) {
    if let Some(item_kind) = kind.strip_suffix("List") {
        if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
            for item in items {
                apply(group, version, item_kind, item);
            }
            return;
        }
    }
    match (group, version) {
        ("", "v1") => core::apply(kind, obj),
        ("apps", "v1") => apps::apply(kind, obj),
        ("batch", "v1") => batch::apply(kind, obj),
        ("autoscaling", "v1") => autoscaling::apply_v1(kind, obj),
        ("autoscaling", "v2") => autoscaling::apply_v2(kind, obj),
        ("networking.k8s.io", "v1") => networking::apply(kind, obj),
        ("storage.k8s.io", "v1") => storage::apply(kind, obj),
        ("discovery.k8s.io", "v1") => discovery::apply(kind, obj),
        ("scheduling.k8s.io", "v1") => scheduling::apply(kind, obj),
        ("rbac.authorization.k8s.io", "v1") => rbac::apply(kind, obj),
        ("flowcontrol.apiserver.k8s.io", "v1") => flowcontrol::apply(kind, obj),
        ("apiregistration.k8s.io", "v1") => apiregistration::apply(kind, obj),
        _ => {}
    }
}

/// What kube's conversion of a served object to its internal version and back adds
/// (aliases kept in step, `TypeMeta` of embedded objects): kube stores and serves the
/// result, so a server without an internal version applies this after [`apply`].
pub fn round_trip(group: &str, version: &str, kind: &str, obj: &mut Value) {
    match (group, version) {
        ("", "v1") => core::round_trip(kind, obj),
        ("apps", "v1") => apps::round_trip(kind, obj),
        ("batch", "v1") => batch::round_trip(kind, obj),
        ("autoscaling", "v1") => autoscaling::round_trip_v1(kind, obj),
        _ => {}
    }
}

/// A literal default value.
#[derive(Debug, Clone, Copy)]
pub enum Lit {
    /// A string.
    Str(&'static str),
    /// An integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// An empty object (a Go struct pointer set to its zero value).
    EmptyObject,
}

impl Lit {
    /// The JSON value.
    pub fn value(self) -> Value {
        match self {
            Lit::Str(s) => Value::from(s),
            Lit::Int(i) => Value::from(i),
            Lit::Bool(b) => Value::from(b),
            Lit::EmptyObject => Value::Object(Map::new()),
        }
    }
}

/// One default of a Go struct: the field at `at` (a JSON pointer below the struct;
/// missing structs on the way are created, as Go's are never nil) gets `value` when it
/// is unset.
#[derive(Debug, Clone, Copy)]
pub struct FieldDefault {
    /// JSON pointer below the struct the table is written for.
    pub at: &'static str,
    /// The default.
    pub value: Lit,
    /// A Go value field (not a pointer): its zero value (`""`, `0`) counts as unset.
    pub zero_is_unset: bool,
}

/// A default for a Go value field: absent, `null` and the zero value are unset.
pub const fn field(at: &'static str, value: Lit) -> FieldDefault {
    FieldDefault {
        at,
        value,
        zero_is_unset: true,
    }
}

/// A default for a Go pointer field: only absent and `null` are unset.
pub const fn ptr(at: &'static str, value: Lit) -> FieldDefault {
    FieldDefault {
        at,
        value,
        zero_is_unset: false,
    }
}

/// Apply a table of defaults to `obj` (an instance of the struct the table is for).
pub fn set_defaults(obj: &mut Value, table: &[FieldDefault]) {
    for d in table {
        let Some((parent, key)) = d.at.rsplit_once('/') else {
            continue;
        };
        let Some(parent) = struct_at(obj, parent) else {
            continue;
        };
        let current = parent.get(key);
        let unset = match current {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => d.zero_is_unset && s.is_empty(),
            Some(Value::Number(n)) => d.zero_is_unset && n.as_f64() == Some(0.0),
            Some(_) => false,
        };
        if unset {
            parent.insert(key.to_string(), d.value.value());
        }
    }
}

/// The object at `pointer` below `obj`, creating missing (or `null`) objects on the way
/// (Go structs); `None` when something on the way is not an object.
pub fn struct_at<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj;
    for seg in pointer.split('/').skip(1) {
        let map = cur.as_object_mut()?;
        let child = map.entry(seg.to_string()).or_insert(Value::Null);
        if child.is_null() {
            *child = Value::Object(Map::new());
        }
        cur = child;
    }
    cur.as_object_mut()
}

/// Like [`struct_at`], as a value.
pub fn struct_value_at<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut Value> {
    struct_at(obj, pointer)?;
    obj.pointer_mut(pointer)
}

/// The existing, non-null child `key` of `obj` (a Go pointer field that is set).
pub fn child_mut<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    obj.get_mut(key).filter(|v| !v.is_null())
}

/// The elements of the list `key` of `obj` (none when absent or not a list).
pub fn items_mut<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// The string at `key` of `obj`, `""` when absent or not a string (Go's zero value).
pub fn str_of<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether the list or map at `key` of `obj` has no element (Go's `len(x) == 0`).
pub fn is_empty_collection(obj: &Value, key: &str) -> bool {
    match obj.get(key) {
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(m)) => m.is_empty(),
        _ => true,
    }
}
