//! `metadata.managedFields`: decoding and encoding the entries, manager identities,
//! and kube's field manager layers around the merge (apimachinery's
//! `util/managedfields/internal`):
//!
//! - an entry is identified by manager, operation, subresource and, for `Update`
//!   entries only, apiVersion;
//! - an update's fields are first computed for a temporary manager and then joined
//!   with the updater's previous entry (consecutive updates of one manager make one
//!   entry), stamped with the request time;
//! - `apiVersion`, `kind` and the system metadata (`name`, `namespace`, `uid`, ...)
//!   are never owned;
//! - objects without managedFields are not tracked by updates (a client resets them
//!   with `managedFields: []`); the first apply gives their fields to
//!   `before-first-apply`;
//! - more than 10 `Update` entries fold the oldest into `ancient-changes`.

use super::fieldpath::{FieldSet, PathElement};
use super::merge::{Managers, VersionedSet};
use super::FieldSetError;
use crate::goformat::push_go_json_string;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// `operation: Apply`.
pub const APPLY: &str = "Apply";
/// `operation: Update`.
pub const UPDATE: &str = "Update";
/// The only `fieldsType`.
pub const FIELDS_V1: &str = "FieldsV1";
/// The manager of fields that existed before the first apply to an untracked object.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The manager that absorbs the oldest update entries past the cap.
pub const ANCIENT_CHANGES: &str = "ancient-changes";
/// kube keeps at most this many `Update` entries.
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// kube's limit on a field manager name (and on the prefix taken from a user agent).
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Who wrote: the identity of one managedFields entry (kube's manager identifier).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerId {
    /// `manager`.
    pub manager: String,
    /// `operation`: `Apply` or `Update`.
    pub operation: String,
    /// `apiVersion` (part of the identity of `Update` entries only).
    pub api_version: String,
    /// `subresource`.
    pub subresource: String,
}

impl ManagerId {
    /// The identity of a write by `manager` (`unknown` when empty).
    pub fn new(manager: &str, operation: &str, api_version: &str, subresource: &str) -> Self {
        ManagerId {
            manager: if manager.is_empty() {
                "unknown".to_string()
            } else {
                manager.to_string()
            },
            operation: operation.to_string(),
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// The key managers are stored under: kube's JSON identifier, so that entries sort
    /// and group as kube's do.
    pub fn key(&self) -> String {
        Self::key_of(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    /// [`ManagerId::key`] of the identity these fields make, as they are (an empty
    /// manager stays empty).
    pub fn key_of(manager: &str, operation: &str, api_version: &str, subresource: &str) -> String {
        let mut out = String::with_capacity(96);
        out.push('{');
        let mut field = |name: &str, v: &str| {
            if !v.is_empty() {
                if out.len() > 1 {
                    out.push(',');
                }
                // The names are plain: quoted as they are.
                out.push('"');
                out.push_str(name);
                out.push_str("\":");
                push_go_json_string(&mut out, v);
            }
        };
        field("manager", manager);
        field("operation", operation);
        if operation != APPLY {
            field("apiVersion", api_version);
        }
        field("subresource", subresource);
        out.push('}');
        out
    }

    /// Read a key back.
    pub fn parse(key: &str) -> Option<ManagerId> {
        /// A key as [`ManagerId::key`] writes it: string fields only.
        #[derive(serde::Deserialize)]
        struct Written<'a> {
            #[serde(default, borrow)]
            manager: std::borrow::Cow<'a, str>,
            #[serde(default, borrow)]
            operation: std::borrow::Cow<'a, str>,
            #[serde(default, borrow, rename = "apiVersion")]
            api_version: std::borrow::Cow<'a, str>,
            #[serde(default, borrow)]
            subresource: std::borrow::Cow<'a, str>,
        }
        if let Ok(w) = serde_json::from_str::<Written<'_>>(key) {
            return Some(ManagerId {
                manager: w.manager.into_owned(),
                operation: w.operation.into_owned(),
                api_version: w.api_version.into_owned(),
                subresource: w.subresource.into_owned(),
            });
        }
        // Any other JSON object: fields that are not strings read as empty.
        let v: Value = serde_json::from_str(key).ok()?;
        let s = |name: &str| {
            v.get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        Some(ManagerId {
            manager: s("manager"),
            operation: s("operation"),
            api_version: s("apiVersion"),
            subresource: s("subresource"),
        })
    }
}

/// How kube names a manager in conflict messages: `"alice"`, `"carol" using v1`,
/// `"x" with subresource "status"`.
pub fn print_manager(key: &str) -> String {
    let Some(id) = ManagerId::parse(key) else {
        return crate::field::go_quote(key);
    };
    let mut s = crate::field::go_quote(&id.manager);
    if !id.subresource.is_empty() {
        s = format!(
            "{s} with subresource {}",
            crate::field::go_quote(&id.subresource)
        );
    }
    if id.operation == UPDATE {
        // Identities carry no time, so kube never prints "at <time>" here.
        s = format!("{s} using {}", id.api_version);
    }
    s
}

/// kube's default manager name for a write without `fieldManager`: the user agent up to
/// the first `/`, without unprintable characters, cut at 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let prefix = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_print(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Go's `unicode.IsPrint`: graphic characters and the ASCII space.
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(c as u32, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x200b..=0x200f
            | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff | 0xfff9..=0xfffb
            | 0xe000..=0xf8ff | 0xf0000..=0x10ffff)
        || (0xd800..=0xdfff).contains(&(c as u32)))
}

/// One decoded `managedFields[]` entry (kube's `ManagedFieldsEntry`), borrowed from
/// the object it was read from.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry<'a> {
    /// `manager`.
    pub manager: &'a str,
    /// `operation`.
    pub operation: &'a str,
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `time`, normalised to UTC seconds (`2024-01-02T03:04:05Z`).
    pub time: Option<Cow<'a, str>>,
    /// `fieldsType`.
    pub fields_type: &'a str,
    /// `fieldsV1`.
    pub fields_v1: Option<&'a Value>,
    /// `subresource`.
    pub subresource: &'a str,
}

/// metav1.Time's wire form: RFC 3339 in UTC, whole seconds.
pub fn normalize_time(s: &str) -> Option<Cow<'_, str>> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    // Already in that form (as every stored entry is): kept as it is.
    if s.len() == "2024-01-02T03:04:05Z".len() && s.ends_with('Z') && s.as_bytes()[10] == b'T' {
        return Some(Cow::Borrowed(s));
    }
    Some(Cow::Owned(
        t.with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    ))
}

fn unix_seconds(t: Option<&str>) -> i64 {
    t.and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
        .map(|t| t.timestamp())
        .unwrap_or(0)
}

/// Read `metadata.managedFields` as kube's `GetManagedFields`: `None` when absent or
/// not decodable (kube then treats the object as having none).
pub fn parse_entries(v: Option<&Value>) -> Option<Vec<Entry<'_>>> {
    let items = v?.as_array()?;
    items.iter().map(parse_entry).collect()
}

fn parse_entry(v: &Value) -> Option<Entry<'_>> {
    let m = v.as_object()?;
    let s = |name: &str| -> Option<&str> {
        match m.get(name) {
            None | Some(Value::Null) => Some(""),
            Some(Value::String(s)) => Some(s),
            Some(_) => None,
        }
    };
    let time = match m.get("time") {
        None | Some(Value::Null) => None,
        Some(Value::String(t)) => Some(normalize_time(t)?),
        Some(_) => return None,
    };
    Some(Entry {
        manager: s("manager")?,
        operation: s("operation")?,
        api_version: s("apiVersion")?,
        time,
        fields_type: s("fieldsType")?,
        fields_v1: m.get("fieldsV1").filter(|v| !v.is_null()),
        subresource: s("subresource")?,
    })
}

/// kube's `isResetManagedFields`: `managedFields: []` or `[{}]` asks to drop them.
pub fn is_reset(entries: Option<&[Entry]>) -> bool {
    match entries {
        Some([]) => true,
        Some([only]) => *only == Entry::default(),
        _ => false,
    }
}

/// The managers of an object and when each last changed it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managed {
    /// Owned fields by manager key ([`ManagerId::key`]).
    pub fields: Managers,
    /// `time` by manager key (`None`: the entry has no time).
    pub times: BTreeMap<String, Option<String>>,
}

impl Managed {
    /// Decode entries (kube's `DecodeManagedFields`), with kube's errors.
    pub fn decode(entries: &[Entry<'_>]) -> Result<Managed, FieldSetError> {
        let mut out = Managed::default();
        for (i, e) in entries.iter().enumerate() {
            if e.operation != APPLY && e.operation != UPDATE {
                return Err(FieldSetError::Operation);
            }
            if e.api_version.is_empty() {
                return Err(FieldSetError::EmptyApiVersion);
            }
            match e.fields_type {
                FIELDS_V1 => {}
                "" => return Err(FieldSetError::MissingFieldsType(i)),
                other => {
                    return Err(FieldSetError::InvalidFieldsType {
                        fields_type: other.to_string(),
                        entry: i,
                    })
                }
            }
            let key = ManagerId::key_of(e.manager, e.operation, e.api_version, e.subresource);
            let set = match e.fields_v1 {
                Some(v) => FieldSet::from_fields_v1(v)
                    .map_err(|err| FieldSetError::VersionedSet(Box::new(err)))?,
                None => FieldSet::new(),
            };
            out.fields.insert(
                key.clone(),
                VersionedSet {
                    set,
                    api_version: e.api_version.to_string(),
                    applied: e.operation == APPLY,
                },
            );
            out.times.insert(key, e.time.as_deref().map(str::to_string));
        }
        Ok(out)
    }

    /// The `managedFields` list in kube's order (Apply before Update, then by time,
    /// manager, apiVersion, subresource); `None` when there are no managers (kube then
    /// leaves the field out).
    pub fn encode(&self) -> Option<Value> {
        if self.fields.is_empty() {
            return None;
        }
        let mut entries: Vec<(ManagerId, Option<&String>, i64, &VersionedSet)> = self
            .fields
            .iter()
            .map(|(key, vs)| {
                let mut id = ManagerId::parse(key).unwrap_or_default();
                id.api_version = vs.api_version.clone();
                if vs.applied {
                    id.operation = APPLY.to_string();
                }
                let time = self.times.get(key).and_then(Option::as_ref);
                // Parsed once, not per comparison.
                let seconds = unix_seconds(time.map(String::as_str));
                (id, time, seconds, vs)
            })
            .collect();
        entries.sort_by(|(a, _, at, _), (b, _, bt, _)| {
            a.operation
                .cmp(&b.operation)
                .then_with(|| at.cmp(bt))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        let list = entries
            .into_iter()
            .map(|(id, time, _, vs)| {
                entry_value(id, time.map(String::as_str), vs.set.to_fields_v1())
            })
            .collect();
        Some(Value::Array(list))
    }

    /// Fold the oldest `Update` entries into `ancient-changes` (one per apiVersion)
    /// until at most `max` remain (kube's `capManagersManager`).
    pub fn cap_update_managers(&mut self, max: usize) {
        let mut updaters: Vec<String> = self
            .fields
            .iter()
            .filter(|(_, vs)| !vs.applied)
            .map(|(k, _)| k.clone())
            .collect();
        if updaters.len() <= max {
            return;
        }
        let seconds = |k: &String| unix_seconds(self.times.get(k).and_then(|t| t.as_deref()));
        updaters.sort_by(|a, b| seconds(a).cmp(&seconds(b)).then_with(|| a.cmp(b)));
        let mut first_by_version: BTreeMap<String, String> = BTreeMap::new();
        let mut length = updaters.len();
        for key in updaters {
            if length <= max {
                break;
            }
            let Some(vs) = self.fields.get(&key).cloned() else {
                continue;
            };
            let time = self.times.get(&key).cloned().flatten();
            let bucket = ManagerId::new(ANCIENT_CHANGES, UPDATE, &vs.api_version, "").key();
            match first_by_version.get(&vs.api_version) {
                Some(first) => {
                    if !self.fields.contains_key(&bucket) {
                        if let Some(s) = self.fields.remove(first) {
                            self.fields.insert(bucket.clone(), s);
                        }
                    }
                    let joined = self
                        .fields
                        .get(&bucket)
                        .map(|b| vs.set.union(&b.set))
                        .unwrap_or_else(|| vs.set.clone());
                    self.fields.insert(
                        bucket.clone(),
                        VersionedSet {
                            set: joined,
                            api_version: vs.api_version.clone(),
                            applied: vs.applied,
                        },
                    );
                    self.fields.remove(&key);
                    length -= 1;
                    self.times.insert(bucket, time);
                }
                None => {
                    first_by_version.insert(vs.api_version.clone(), key);
                }
            }
        }
    }
}

/// One `managedFields[]` entry as kube writes it (empty strings left out).
pub fn entry_value(id: ManagerId, time: Option<&str>, fields_v1: Value) -> Value {
    let mut m = Map::new();
    if !id.manager.is_empty() {
        m.insert("manager".into(), Value::String(id.manager));
    }
    if !id.operation.is_empty() {
        m.insert("operation".into(), Value::String(id.operation));
    }
    m.insert("apiVersion".into(), Value::String(id.api_version));
    if let Some(t) = time {
        m.insert("time".into(), Value::String(t.to_string()));
    }
    m.insert("fieldsType".into(), Value::String(FIELDS_V1.into()));
    m.insert("fieldsV1".into(), fields_v1);
    if !id.subresource.is_empty() {
        m.insert("subresource".into(), Value::String(id.subresource));
    }
    Value::Object(m)
}

/// Fields nobody owns (kube's `stripMetaManager`).
pub fn strip_set() -> &'static FieldSet {
    static SET: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(make_strip_set);
    &SET
}

fn make_strip_set() -> FieldSet {
    let f = PathElement::field;
    let mut s = FieldSet::new();
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

/// Strip the system fields from one manager's set, dropping the manager if nothing is left.
pub fn strip_manager(fields: &mut Managers, key: &str) {
    if let Some(vs) = fields.get_mut(key) {
        vs.set.subtract(strip_set());
        if vs.set.is_empty() {
            fields.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manager_keys_read_back() {
        let id = ManagerId::new("ctl \"q\" \u{e9}\\", "Update", "example.com/v1", "status");
        assert_eq!(ManagerId::parse(&id.key()), Some(id));
        let apply = ManagerId::new("a", APPLY, "v1", "");
        let read = ManagerId::parse(&apply.key()).unwrap();
        assert_eq!(
            (read.manager.as_str(), read.api_version.as_str()),
            ("a", "")
        );
        // Other JSON: fields that are not strings read as empty; not JSON: no manager.
        let odd = ManagerId::parse(r#"{"manager": 7, "operation": "Update", "x": null}"#);
        assert_eq!(
            odd,
            Some(ManagerId {
                operation: "Update".into(),
                ..ManagerId::default()
            })
        );
        assert_eq!(ManagerId::parse("\"m\""), Some(ManagerId::default()));
        assert_eq!(ManagerId::parse("{"), None);
    }

    #[test]
    fn manager_from_user_agent_matches_kube_prefix() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"),
            "kubectl"
        );
        assert_eq!(
            manager_from_user_agent("python-requests/2.31"),
            "python-requests"
        );
        assert_eq!(manager_from_user_agent(""), "");
        assert_eq!(manager_from_user_agent("a\u{7}b/1"), "ab");
        assert_eq!(manager_from_user_agent(&"x".repeat(200)).len(), 128);
    }

    #[test]
    fn times_are_normalized_to_utc_seconds() {
        assert_eq!(
            normalize_time("2024-01-02T03:04:05Z").as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        assert_eq!(
            normalize_time("2024-01-02T05:04:05.75+02:00").as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        assert_eq!(
            normalize_time("2024-01-02t03:04:05z").as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        assert_eq!(normalize_time("2024-13-02T03:04:05Z"), None);
    }

    #[test]
    fn identifiers_are_kube_json() {
        assert_eq!(
            ManagerId::new("alice", APPLY, "ssa.example.com/v1", "").key(),
            r#"{"manager":"alice","operation":"Apply"}"#
        );
        let k = ManagerId::new("carol", UPDATE, "ssa.example.com/v1", "status").key();
        assert_eq!(
            k,
            r#"{"manager":"carol","operation":"Update","apiVersion":"ssa.example.com/v1","subresource":"status"}"#
        );
        assert_eq!(
            print_manager(&k),
            "\"carol\" with subresource \"status\" using ssa.example.com/v1"
        );
        assert_eq!(
            print_manager(&ManagerId::new("", APPLY, "", "").key()),
            "\"unknown\""
        );
    }

    #[test]
    fn decode_encode_round_trip_in_kube_order() {
        let recorded = json!([
            {"apiVersion": "crud.example.com/v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {".": {}, "f:ready": {}}}, "manager": "python-requests",
             "operation": "Update", "subresource": "status", "time": "2024-05-01T10:00:01Z"},
            {"apiVersion": "crud.example.com/v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {".": {}, "f:size": {}}}, "manager": "python-requests",
             "operation": "Update", "time": "2024-05-01T12:00:00+02:00"},
            {"apiVersion": "crud.example.com/v1", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:spec": {"f:color": {}}}, "manager": "zed", "operation": "Apply"}
        ]);
        let entries = parse_entries(Some(&recorded)).unwrap();
        let managed = Managed::decode(&entries).unwrap();
        let out = managed.encode().unwrap();
        // Apply first; then updates by time (the +02:00 time is the earlier one).
        assert_eq!(out[0]["manager"], "zed");
        assert!(out[0].get("time").is_none());
        assert_eq!(out[1]["time"], "2024-05-01T10:00:00Z");
        assert!(out[1].get("subresource").is_none());
        assert_eq!(out[2]["subresource"], "status");
        assert_eq!(
            out[2]["fieldsV1"],
            json!({"f:status": {".": {}, "f:ready": {}}})
        );
    }

    #[test]
    fn decode_errors_are_kube_texts() {
        let bad = |e: Value| {
            Managed::decode(&parse_entries(Some(&json!([e]))).unwrap())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            bad(
                json!({"manager": "m", "operation": "Delete", "apiVersion": "v1", "fieldsType": "FieldsV1"})
            ),
            "operation must be `Apply` or `Update`"
        );
        assert_eq!(
            bad(json!({"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1"})),
            "apiVersion must not be empty"
        );
        assert_eq!(
            bad(json!({"manager": "m", "operation": "Apply", "apiVersion": "v1"})),
            "missing fieldsType in managed fields entry 0"
        );
        assert_eq!(
            bad(
                json!({"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"})
            ),
            "invalid fieldsType \"FieldsV2\" in managed fields entry 0"
        );
        assert!(parse_entries(Some(&json!([{"manager": 1}]))).is_none());
    }

    #[test]
    fn reset_is_empty_list_or_one_empty_entry() {
        assert!(is_reset(parse_entries(Some(&json!([]))).as_deref()));
        assert!(is_reset(parse_entries(Some(&json!([{}]))).as_deref()));
        assert!(!is_reset(parse_entries(None).as_deref()));
        assert!(!is_reset(
            parse_entries(Some(&json!([{"manager": "m"}]))).as_deref()
        ));
    }

    #[test]
    fn cap_folds_oldest_updates_into_ancient_changes() {
        let mut m = Managed::default();
        for i in 0..12 {
            let key = ManagerId::new(&format!("m{i:02}"), UPDATE, "x/v1", "").key();
            let mut set = FieldSet::new();
            set.insert(&[PathElement::field(&format!("f{i}"))]);
            m.fields.insert(
                key.clone(),
                VersionedSet {
                    set,
                    api_version: "x/v1".into(),
                    applied: false,
                },
            );
            m.times
                .insert(key, Some(format!("2024-01-01T00:00:{i:02}Z")));
        }
        m.cap_update_managers(MAX_UPDATE_MANAGERS);
        assert_eq!(m.fields.len(), 10);
        let bucket = ManagerId::new(ANCIENT_CHANGES, UPDATE, "x/v1", "").key();
        let b = &m.fields[&bucket];
        assert!(b.set.has(&[PathElement::field("f0")]));
        assert!(b.set.has(&[PathElement::field("f1")]));
        assert!(b.set.has(&[PathElement::field("f2")]));
        assert_eq!(m.times[&bucket].as_deref(), Some("2024-01-01T00:00:02Z"));
    }
}
