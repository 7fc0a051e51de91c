//! Object metadata rules shared by every kind (kube's `rest.BeforeCreate` /
//! `BeforeUpdate` and `FillObjectMetaSystemFields`): pure functions over JSON objects.

use crate::status::Status;
use rand::Rng;
use serde_json::{json, Map, Value};

/// `metadata` of an object (empty map when absent or not an object).
pub fn meta(obj: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    obj.get("metadata")
        .and_then(Value::as_object)
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// Mutable `metadata`, created when missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let m = obj.as_object_mut().expect("object ensured above");
    // Looked up, not `entry`: an entry's key would be a new String on every call, and
    // nearly every object has its metadata already.
    if !matches!(m.get("metadata"), Some(Value::Object(_))) {
        m.insert("metadata".into(), Value::Object(Map::new()));
    }
    m.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .expect("object ensured above")
}

/// A string field of `metadata` ("" when absent).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj).get(field).and_then(Value::as_str).unwrap_or("")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

/// `metadata.labels` as a map (empty when absent).
pub fn labels(obj: &Value) -> Map<String, Value> {
    meta(obj)
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `metadata.finalizers` (empty when absent).
pub fn finalizers(obj: &Value) -> Vec<String> {
    strings(meta(obj).get("finalizers"))
}

/// The strings of a JSON list, other items skipped (none when `v` is absent or no list).
pub fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_terminating(obj: &Value) -> bool {
    meta(obj)
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// Drop `metadata.managedFields`; whether there were any.
pub fn remove_managed_fields(obj: &mut Value) -> bool {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
        .is_some_and(|f| f.as_array().is_none_or(|a| !a.is_empty()))
}

/// Set `metadata.resourceVersion` from a storage revision.
pub fn set_resource_version(obj: &mut Value, rv: i64) {
    let meta = meta_mut(obj);
    // Every write sets it, mostly over a previous one: written into that string.
    if let Some(Value::String(s)) = meta.get_mut("resourceVersion") {
        s.clear();
        push_decimal(s, rv);
        return;
    }
    let mut s = String::with_capacity(20);
    push_decimal(&mut s, rv);
    meta.insert("resourceVersion".into(), Value::String(s));
}

/// `n` in decimal, as `to_string` writes it, without the formatting machinery.
fn push_decimal(out: &mut String, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        out.push('-');
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// `metadata.resourceVersion` parsed; `Ok(None)` when absent or empty.
pub fn resource_version(obj: &Value) -> Result<Option<i64>, Status> {
    match meta(obj).get("resourceVersion") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => parse_resource_version(s).map(Some),
        Some(other) => Err(Status::bad_request(format!(
            "invalid resource version: {other}"
        ))),
    }
}

/// Parse a resourceVersion string as kube does (`invalid resource version` on junk).
pub fn parse_resource_version(s: &str) -> Result<i64, Status> {
    s.parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| {
            Status::bad_request(format!(
                "resourceVersion: Invalid value: \"{s}\": strconv.ParseUint: parsing \"{s}\": invalid syntax"
            ))
        })
}

/// The current time as kube serialises `metav1.Time` (RFC 3339, seconds, `Z`).
pub fn now() -> String {
    // Formatted once a second per thread: every write stamps it, often twice.
    thread_local! {
        static LAST: std::cell::RefCell<(i64, String)> = const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let t = chrono::Utc::now();
    LAST.with_borrow_mut(|(secs, text)| {
        if *secs != t.timestamp() {
            *secs = t.timestamp();
            *text = t.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        }
        text.clone()
    })
}

/// A random (version 4) UUID from the thread's CSPRNG: `Uuid::new_v4` asks the OS
/// for every one, a system call per created object.
pub fn new_uid() -> String {
    uuid::Builder::from_random_bytes(rand::random())
        .into_uuid()
        .to_string()
}

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// kube's `SimpleNameGenerator`: `generateName` + 5 random characters, the prefix cut
/// so the whole name fits 63 characters.
pub fn generate_name(prefix: &str) -> String {
    let mut rng = rand::rng();
    let suffix: String = (0..5)
        .map(|_| GENERATE_ALPHABET[rng.random_range(0..GENERATE_ALPHABET.len())] as char)
        .collect();
    let max_prefix = 63 - 5;
    let base: String = if prefix.len() > max_prefix {
        prefix.chars().take(max_prefix).collect()
    } else {
        prefix.to_string()
    };
    format!("{base}{suffix}")
}

/// Make the object's namespace agree with the request's (kube's
/// `EnsureObjectNamespaceMatchesRequestNamespace`).
pub fn ensure_namespace(obj: &mut Value, request_ns: &str, namespaced: bool) -> Result<(), Status> {
    let expected = if namespaced { request_ns } else { "" };
    let current = namespace(obj).to_string();
    if current == expected {
        return Ok(());
    }
    if current.is_empty() {
        meta_mut(obj).insert("namespace".into(), json!(expected));
        return Ok(());
    }
    if expected.is_empty() {
        meta_mut(obj).remove("namespace");
        return Ok(());
    }
    Err(Status::bad_request(
        "the namespace of the provided object does not match the namespace sent on the request",
    ))
}

/// System fields on create: name from `generateName`, `uid`, `creationTimestamp`,
/// `generation` (when the kind keeps it); deletion fields cleared.
pub fn prepare_for_create(obj: &mut Value, has_generation: bool) {
    let m = meta_mut(obj);
    let needs_name = m
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty();
    if needs_name {
        if let Some(prefix) = m.get("generateName").and_then(Value::as_str) {
            if !prefix.is_empty() {
                let generated = generate_name(prefix);
                m.insert("name".into(), json!(generated));
            }
        }
    }
    m.insert("uid".into(), json!(new_uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    m.remove("deletionTimestamp");
    m.remove("deletionGracePeriodSeconds");
    m.remove("resourceVersion");
    m.remove("selfLink");
    if has_generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
}

/// System fields on update: generation, uid, timestamps and deletion fields carried
/// over from the stored object (kube's `BeforeUpdate`).
pub fn prepare_for_update(new: &mut Value, old: &Value) {
    let old_meta = meta(old);
    let m = meta_mut(new);
    match old_meta.get("generation") {
        Some(g) => {
            m.insert("generation".into(), g.clone());
        }
        None => {
            m.remove("generation");
        }
    }
    if m.get("uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        if let Some(uid) = old_meta.get("uid") {
            m.insert("uid".into(), uid.clone());
        }
    }
    if let Some(ts) = old_meta.get("creationTimestamp") {
        m.insert("creationTimestamp".into(), ts.clone());
    }
    match old_meta.get("deletionTimestamp") {
        Some(ts) if !ts.is_null() => {
            m.insert("deletionTimestamp".into(), ts.clone());
        }
        _ => {
            m.remove("deletionTimestamp");
        }
    }
    if let Some(g) = old_meta.get("deletionGracePeriodSeconds") {
        if m.get("deletionGracePeriodSeconds")
            .is_none_or(Value::is_null)
        {
            m.insert("deletionGracePeriodSeconds".into(), g.clone());
        }
    }
    m.remove("selfLink");
}

/// Whether the objects differ outside `metadata` (and outside `status` when
/// `drop_status`): what decides whether `generation` moves. Compared in place.
fn content_differs(a: &Value, b: &Value, drop_status: bool) -> bool {
    let counted = |k: &String| k != "metadata" && !(drop_status && k == "status");
    let empty = Map::new();
    let a = a.as_object().unwrap_or(&empty);
    let b = b.as_object().unwrap_or(&empty);
    a.keys().filter(|k| counted(k)).count() != b.keys().filter(|k| counted(k)).count()
        || a.iter()
            .filter(|(k, _)| counted(k))
            .any(|(k, v)| b.get(k) != Some(v))
}

/// `generation + 1` when anything outside metadata (and status, with the status
/// subresource on) changed.
pub fn bump_generation_if_changed(new: &mut Value, old: &Value, status_subresource: bool) {
    if content_differs(new, old, status_subresource) {
        let current = meta(old)
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(new).insert("generation".into(), json!(current + 1));
    }
}

/// With the status subresource on, the main resource cannot write status: keep the old
/// one (or none on create).
pub fn keep_status(new: &mut Value, old: Option<&Value>) {
    let Some(obj) = new.as_object_mut() else {
        return;
    };
    match old.and_then(|o| o.get("status")) {
        Some(s) => {
            obj.insert("status".into(), s.clone());
        }
        None => {
            obj.remove("status");
        }
    }
}

/// A `/status` write changes only `status`: everything else comes from the stored object.
pub fn status_only(new: &Value, old: &Value) -> Value {
    let mut out = old.clone();
    if let Some(obj) = out.as_object_mut() {
        match new.get("status") {
            Some(s) => {
                obj.insert("status".into(), s.clone());
            }
            None => {
                obj.remove("status");
            }
        }
        // managedFields are the request's: the status write recorded its own entry.
        match meta(new).get("managedFields") {
            Some(mf) => {
                meta_mut(&mut out).insert("managedFields".into(), mf.clone());
            }
            None => {
                meta_mut(&mut out).remove("managedFields");
            }
        }
    }
    out
}

/// A string field of `v` (`""` when absent or not a string).
pub fn str_field<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// A list field of `v` (empty when absent or not a list).
pub fn list_field<'v>(v: &'v Value, k: &str) -> &'v [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// Go's zero value of a JSON field: what `omitempty` drops, and what Go's semantic
/// equality treats as equal to an absent field.
pub fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_versions_are_written_as_to_string_writes_them() {
        for rv in [0, 1, 9, 10, 42, 1_000_007, i64::MAX, -1, -90, i64::MIN] {
            let mut fresh = serde_json::json!({"kind": "Widget"});
            set_resource_version(&mut fresh, rv);
            assert_eq!(fresh["metadata"]["resourceVersion"], rv.to_string());
            let mut stored =
                serde_json::json!({"metadata": {"resourceVersion": "123456789012", "name": "a"}});
            set_resource_version(&mut stored, rv);
            assert_eq!(stored["metadata"]["resourceVersion"], rv.to_string());
            assert_eq!(stored["metadata"]["name"], "a");
        }
        // Metadata that is not an object, or an object that is not one, is replaced.
        let mut odd = serde_json::json!({"metadata": "x"});
        set_resource_version(&mut odd, 7);
        assert_eq!(
            odd,
            serde_json::json!({"metadata": {"resourceVersion": "7"}})
        );
        let mut not_object = serde_json::json!([1]);
        set_resource_version(&mut not_object, 8);
        assert_eq!(
            not_object,
            serde_json::json!({"metadata": {"resourceVersion": "8"}})
        );
    }

    #[test]
    fn uids_are_random_version_4_uuids() {
        let a = new_uid();
        let u = uuid::Uuid::parse_str(&a).expect("a UUID");
        assert_eq!(u.get_version_num(), 4);
        assert_eq!(u.get_variant(), uuid::Variant::RFC4122);
        assert_eq!(a.len(), 36);
        assert_ne!(a, new_uid());
    }

    #[test]
    fn generate_name_uses_kube_alphabet_and_length() {
        let n = generate_name("gen-");
        assert!(n.starts_with("gen-") && n.len() == 9);
        assert!(n[4..].bytes().all(|b| GENERATE_ALPHABET.contains(&b)));
        let long = "x".repeat(80);
        assert_eq!(generate_name(&long).len(), 63);
    }

    #[test]
    fn namespace_agreement() {
        let mut o = json!({"metadata": {"name": "a"}});
        ensure_namespace(&mut o, "default", true).unwrap();
        assert_eq!(namespace(&o), "default");
        let mut o = json!({"metadata": {"name": "a", "namespace": "other"}});
        let err = ensure_namespace(&mut o, "default", true).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "the namespace of the provided object does not match the namespace sent on the request"
        );
        let mut o = json!({"metadata": {"name": "a", "namespace": "x"}});
        ensure_namespace(&mut o, "", false).unwrap();
        assert_eq!(namespace(&o), "");
    }

    #[test]
    fn generation_moves_only_for_content_changes() {
        let old = json!({"metadata": {"generation": 2}, "spec": {"a": 1}, "status": {"x": 1}});
        let mut same = json!({"metadata": {"generation": 2, "labels": {"l": "v"}}, "spec": {"a": 1}, "status": {"x": 2}});
        bump_generation_if_changed(&mut same, &old, true);
        assert_eq!(meta(&same)["generation"], 2);
        let mut status_without_subresource = same.clone();
        bump_generation_if_changed(&mut status_without_subresource, &old, false);
        assert_eq!(meta(&status_without_subresource)["generation"], 3);
        let mut changed = json!({"metadata": {"generation": 2}, "spec": {"a": 2}});
        bump_generation_if_changed(&mut changed, &old, true);
        assert_eq!(meta(&changed)["generation"], 3);
    }

    #[test]
    fn status_separation() {
        let old =
            json!({"metadata": {"name": "w"}, "spec": {"size": 5}, "status": {"ready": false}});
        let new = json!({"metadata": {"name": "w", "labels": {"x": "y"}}, "spec": {"size": 99}, "status": {"ready": true}});
        let out = status_only(&new, &old);
        assert_eq!(out["spec"]["size"], 5);
        assert_eq!(out["status"]["ready"], true);
        assert!(meta(&out).get("labels").is_none());
        let mut main = new.clone();
        keep_status(&mut main, Some(&old));
        assert_eq!(main["status"]["ready"], false);
    }

    #[test]
    fn update_keeps_system_fields() {
        let old = json!({"metadata": {"uid": "u1", "creationTimestamp": "2020-01-01T00:00:00Z", "generation": 4, "deletionTimestamp": "2021-01-01T00:00:00Z"}});
        let mut new =
            json!({"metadata": {"creationTimestamp": "1999-01-01T00:00:00Z", "generation": 9}});
        prepare_for_update(&mut new, &old);
        let m = meta(&new);
        assert_eq!(m["uid"], "u1");
        assert_eq!(m["creationTimestamp"], "2020-01-01T00:00:00Z");
        assert_eq!(m["generation"], 4);
        assert_eq!(m["deletionTimestamp"], "2021-01-01T00:00:00Z");
    }
}
