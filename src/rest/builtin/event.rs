//! Events: core/v1 `events` and `events.k8s.io/v1` `events` share one storage
//! (`/registry/events/<ns>/<name>`, in the core/v1 shape) and are converted between the
//! two shapes on write and read (`pkg/apis/events/v1/conversion.go`). Validation is
//! kube's `ValidateEventCreate`/`ValidateEventUpdate`, which depend on the request's
//! version: core/v1 gets the legacy rules only, events.k8s.io/v1 the strict ones.

use super::{at, field_doc, immutable_field, object_meta_update_errors};
use crate::field::{Error, ErrorList, Path};
use crate::rest::typed::{str_at, TypedStrategy};
use crate::schema::objectmeta;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// The API group of the new Events API.
pub const EVENTS_GROUP: &str = "events.k8s.io";

const CORE_DEFINITION: &str = "io.k8s.api.core.v1.Event";

/// `(events.k8s.io/v1 field, core/v1 field)` pairs that differ only by name.
const RENAMED: [(&str, &str); 6] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
];

/// Longest `reportingInstance`, `action`, `reason` of an event with `eventTime`.
const NAME_LIKE_LIMIT: usize = 128;
/// Longest `message` (`note`) of an event with `eventTime`.
const NOTE_LIMIT: usize = 1024;

/// Which Events API an endpoint serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventsApi {
    /// core/v1 `Event`.
    Core,
    /// `events.k8s.io/v1` `Event`.
    EventsV1,
}

/// The `events` strategy of one of the two APIs.
pub struct EventStrategy {
    api: EventsApi,
}

impl EventStrategy {
    /// core/v1 events.
    pub fn core() -> Self {
        EventStrategy {
            api: EventsApi::Core,
        }
    }

    /// `events.k8s.io/v1` events.
    pub fn events_v1() -> Self {
        EventStrategy {
            api: EventsApi::EventsV1,
        }
    }

    /// The object in the core/v1 shape (validation, printing and selection use it).
    fn as_core(&self, obj: &Value) -> Value {
        match self.api {
            EventsApi::Core => obj.clone(),
            EventsApi::EventsV1 => to_core(obj),
        }
    }

    /// The name of the reporting-controller field in this API's error paths.
    fn reporting_controller_field(&self) -> &'static str {
        match self.api {
            EventsApi::Core => "reportingComponent",
            EventsApi::EventsV1 => "reportingController",
        }
    }
}

/// An `events.k8s.io/v1` Event in the core/v1 shape (`deprecatedCount` → `count`, ...).
pub fn to_core(obj: &Value) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let key = match k.as_str() {
            "deprecatedCount" => "count",
            "apiVersion" => {
                out.insert("apiVersion".into(), json!("v1"));
                continue;
            }
            other => RENAMED
                .iter()
                .find(|(new, _)| *new == other)
                .map_or(other, |(_, core)| core),
        };
        out.insert(key.to_string(), v.clone());
    }
    Value::Object(out)
}

/// A core/v1 Event in the `events.k8s.io/v1` shape.
pub fn to_events_v1(obj: &Value) -> Value {
    let Some(m) = obj.as_object() else {
        return obj.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let key = match k.as_str() {
            "count" => "deprecatedCount",
            "apiVersion" => {
                out.insert("apiVersion".into(), json!(format!("{EVENTS_GROUP}/v1")));
                continue;
            }
            other => RENAMED
                .iter()
                .find(|(_, core)| *core == other)
                .map_or(other, |(new, _)| new),
        };
        out.insert(key.to_string(), v.clone());
    }
    Value::Object(out)
}

/// Fields Go always writes for an Event of `api` (struct-typed or without `omitempty`):
/// zero timestamps as `null`, empty sources and references as `{}`, empty strings.
fn fill_go_zero_values(obj: &mut Value, api: EventsApi) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let always: &[(&str, Value)] = match api {
        EventsApi::Core => &[
            ("involvedObject", json!({})),
            ("source", json!({})),
            ("firstTimestamp", Value::Null),
            ("lastTimestamp", Value::Null),
            ("eventTime", Value::Null),
            ("reportingComponent", json!("")),
            ("reportingInstance", json!("")),
        ],
        EventsApi::EventsV1 => &[
            ("eventTime", Value::Null),
            ("regarding", json!({})),
            ("deprecatedSource", json!({})),
            ("deprecatedFirstTimestamp", Value::Null),
            ("deprecatedLastTimestamp", Value::Null),
        ],
    };
    for (k, zero) in always {
        m.entry(k.to_string()).or_insert_with(|| zero.clone());
    }
    // `omitempty` strings and numbers at their zero value are not written.
    let omit_empty: &[&str] = match api {
        EventsApi::Core => &["reason", "message", "type", "action", "count"],
        EventsApi::EventsV1 => &[
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
            "note",
            "type",
            "deprecatedCount",
        ],
    };
    m.retain(|k, v| {
        !(omit_empty.contains(&k.as_str())
            && (v.is_null() || v.as_str() == Some("") || v.as_i64() == Some(0)))
    });
}

/// Go's `metav1.Time` (seconds) and `metav1.MicroTime` (microseconds) wire forms.
pub fn normalize_time(v: &mut Value, micro: bool) {
    let Some(s) = v.as_str() else {
        return;
    };
    let Ok(t) = DateTime::parse_from_rfc3339(s) else {
        return;
    };
    let t = t.with_timezone(&Utc);
    let fmt = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    *v = json!(t.format(fmt).to_string());
}

/// Whether a time field is Go's zero time (absent or null).
fn is_zero_time(obj: &Value, pointer: &str) -> bool {
    at(obj, pointer).as_str().unwrap_or("").is_empty()
}

impl EventStrategy {
    /// kube's `legacyValidateEvent` on the core-shaped event.
    fn legacy_errors(&self, ev: &Value) -> ErrorList {
        let mut errs = Vec::new();
        let ns = str_at(ev, "/metadata/namespace");
        let involved_ns = str_at(ev, "/involvedObject/namespace");
        let ns_mismatch = || {
            Error::invalid(
                &Path::new("involvedObject").child("namespace"),
                json!(involved_ns),
                "does not match event.namespace",
            )
        };
        if is_zero_time(ev, "/eventTime") {
            let mismatch = if involved_ns.is_empty() {
                !ns.is_empty() && ns != "default"
            } else {
                ns != involved_ns
            };
            if mismatch {
                errs.push(ns_mismatch());
            }
        } else {
            if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
                errs.push(ns_mismatch());
            }
            let controller_path = Path::new(self.reporting_controller_field());
            let controller = str_at(ev, "/reportingComponent");
            if controller.is_empty() {
                errs.push(Error::required(&controller_path, ""));
            }
            for msg in objectmeta::is_qualified_name(controller) {
                errs.push(Error::invalid(&controller_path, json!(controller), msg));
            }
            for (field, limit) in [
                ("reportingInstance", NAME_LIKE_LIMIT),
                ("action", NAME_LIKE_LIMIT),
                ("reason", NAME_LIKE_LIMIT),
            ] {
                let value = str_at(ev, &format!("/{field}"));
                if value.is_empty() {
                    errs.push(Error::required(&Path::new(field), ""));
                }
                if value.len() > limit {
                    errs.push(Error::invalid(
                        &Path::new(field),
                        json!(""),
                        format!("can have at most {limit} characters"),
                    ));
                }
            }
            if str_at(ev, "/message").len() > NOTE_LIMIT {
                errs.push(Error::invalid(
                    &Path::new("message"),
                    json!(""),
                    format!("can have at most {NOTE_LIMIT} characters"),
                ));
            }
        }
        for msg in objectmeta::is_dns1123_subdomain(ns) {
            errs.push(Error::invalid(&Path::new("namespace"), json!(ns), msg));
        }
        errs
    }

    /// kube's `validateV1EventSeries`.
    fn series_errors(ev: &Value) -> ErrorList {
        let mut errs = Vec::new();
        let Some(series) = ev.get("series").filter(|s| s.is_object()) else {
            return errs;
        };
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errs.push(Error::invalid(
                &Path::new("series.count"),
                json!(""),
                "should be at least 2",
            ));
        }
        if is_zero_time(series, "/lastObservedTime") {
            errs.push(Error::required(&Path::new("series.lastObservedTime"), ""));
        }
        errs
    }

    /// core/v1 writes: metadata as kube's generic registry checks it (names are path
    /// segments), after the strategy's own checks passed.
    fn core_meta_errors(ev: &Value) -> ErrorList {
        let mut meta = ev.get("metadata").cloned().unwrap_or(Value::Null);
        let name = str_at(ev, "/metadata/name").to_string();
        let mut errs = Vec::new();
        if let Some(m) = meta.as_object_mut() {
            // Name rules differ from the DNS-subdomain ones validate_object_meta applies.
            if !name.is_empty() {
                m.insert("name".into(), json!("name"));
                for msg in objectmeta::validate_path_segment_name(&name, false) {
                    errs.push(Error::invalid(
                        &Path::new("metadata").child("name"),
                        json!(name),
                        msg,
                    ));
                }
            }
        }
        errs.extend(objectmeta::validate_object_meta(
            &meta,
            true,
            &Path::new("metadata"),
        ));
        errs
    }
}

impl TypedStrategy for EventStrategy {
    fn default(&self, obj: &mut Value) {
        let micro = ["/eventTime", "/series/lastObservedTime"];
        let seconds: &[&str] = match self.api {
            EventsApi::Core => &["/firstTimestamp", "/lastTimestamp"],
            EventsApi::EventsV1 => &["/deprecatedFirstTimestamp", "/deprecatedLastTimestamp"],
        };
        for p in micro {
            if let Some(v) = obj.pointer_mut(p) {
                normalize_time(v, true);
            }
        }
        for p in seconds {
            if let Some(v) = obj.pointer_mut(p) {
                normalize_time(v, false);
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let ev = self.as_core(obj);
        let mut errs = self.legacy_errors(&ev);
        if self.api == EventsApi::Core {
            if errs.is_empty() {
                errs.extend(Self::core_meta_errors(&ev));
            }
            return errs;
        }
        errs.extend(super::object_meta_errors(&ev));
        errs.extend(Self::series_errors(&ev));
        if is_zero_time(&ev, "/eventTime") {
            errs.push(Error::required(&Path::new("eventTime"), ""));
        }
        let ty = str_at(&ev, "/type");
        if ty != "Normal" && ty != "Warning" {
            errs.push(Error::invalid(
                &Path::new("type"),
                json!(""),
                format!("has invalid value: {ty}"),
            ));
        }
        for field in ["firstTimestamp", "lastTimestamp"] {
            if !is_zero_time(&ev, &format!("/{field}")) {
                errs.push(Error::invalid(
                    &Path::new(field),
                    json!(""),
                    "needs to be unset",
                ));
            }
        }
        if at(&ev, "/count").as_i64().unwrap_or(0) != 0 {
            errs.push(Error::invalid(
                &Path::new("count"),
                json!(""),
                "needs to be unset",
            ));
        }
        if !str_at(&ev, "/source/component").is_empty() || !str_at(&ev, "/source/host").is_empty() {
            errs.push(Error::invalid(
                &Path::new("source"),
                json!(""),
                "needs to be unset",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let (ev, old_ev) = (self.as_core(new), self.as_core(old));
        let mut errs = self.legacy_errors(&ev);
        if self.api == EventsApi::Core {
            return errs;
        }
        errs.extend(object_meta_update_errors(&ev, &old_ev));
        if at(&ev, "/series") != at(&old_ev, "/series") {
            errs.extend(Self::series_errors(&ev));
        }
        // kube's list (with `reason` twice), each compared as Go compares the field.
        for field in [
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reason",
            "type",
            "eventTime",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
        ] {
            let pointer = format!("/{field}");
            let (n, o) = (go_value(&ev, field), go_value(&old_ev, field));
            let path = match field {
                "reportingComponent" => Path::new("reportingController"),
                other => Path::new(other),
            };
            if n != o {
                errs.extend(immutable_field(at(&ev, &pointer), &o, &path));
            }
        }
        errs
    }

    fn to_storage(&self, obj: &mut Value) {
        if self.api == EventsApi::EventsV1 {
            *obj = to_core(obj);
        }
    }

    fn on_read(&self, obj: &mut Value) {
        if self.api == EventsApi::EventsV1 {
            *obj = to_events_v1(obj);
            if let Some(m) = obj.as_object_mut() {
                m.insert("kind".into(), json!("Event"));
            }
        }
        fill_go_zero_values(obj, self.api);
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> BuiltinPrinter {
        let doc = |f: &str| field_doc(CORE_DEFINITION, f);
        let columns = vec![
            BuiltinColumn::new("Last Seen", "string", 0, &doc("lastTimestamp")),
            BuiltinColumn::new("Type", "string", 0, &doc("type")),
            BuiltinColumn::new("Reason", "string", 0, &doc("reason")),
            BuiltinColumn::new("Object", "string", 0, &doc("involvedObject")),
            BuiltinColumn::new(
                "Subobject",
                "string",
                1,
                &field_doc("io.k8s.api.core.v1.ObjectReference", "fieldPath"),
            ),
            BuiltinColumn::new("Source", "string", 1, &doc("source")),
            BuiltinColumn::new("Message", "string", 0, &doc("message")),
            BuiltinColumn::new("First Seen", "string", 1, &doc("firstTimestamp")),
            BuiltinColumn::new("Count", "string", 1, &doc("count")),
            BuiltinColumn::name(1),
        ];
        let cells = match self.api {
            EventsApi::Core => |obj: &Value, now| event_cells(obj, now),
            EventsApi::EventsV1 => |obj: &Value, now| event_cells(&to_core(obj), now),
        };
        BuiltinPrinter { columns, cells }
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        let label = match self.api {
            EventsApi::Core => field,
            EventsApi::EventsV1 => match field {
                "reason" | "type" | "metadata.namespace" | "metadata.name" => field,
                "reportingController" => "reportingComponent",
                f => match f.strip_prefix("regarding.") {
                    Some(rest) if REGARDING_FIELDS.contains(&rest) => {
                        return Ok(Some(str_at(obj, &format!("/regarding/{rest}")).to_string()))
                    }
                    _ => {
                        return Err(crate::selector::SelectorError::FieldLabelNotSupported(
                            field.to_string(),
                        ))
                    }
                },
            },
        };
        core_field_value(&self.as_core(obj), label)
    }
}

/// The `involvedObject.*` (`regarding.*`) fields events select by.
const REGARDING_FIELDS: [&str; 7] = [
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
];

/// kube's `ToSelectableFields` of an Event, on the core shape.
fn core_field_value(
    ev: &Value,
    field: &str,
) -> Result<Option<String>, crate::selector::SelectorError> {
    let value = match field {
        "metadata.name" | "metadata.namespace" => {
            return crate::rest::typed::meta_field_value(ev, field)
        }
        "reason" | "reportingComponent" | "type" => str_at(ev, &format!("/{field}")),
        "source" => {
            let component = str_at(ev, "/source/component");
            if component.is_empty() {
                str_at(ev, "/reportingComponent")
            } else {
                component
            }
        }
        f => match f.strip_prefix("involvedObject.") {
            Some(rest) if REGARDING_FIELDS.contains(&rest) => {
                str_at(ev, &format!("/involvedObject/{rest}"))
            }
            _ => {
                return Err(crate::selector::SelectorError::FieldLabelNotSupported(
                    field.to_string(),
                ))
            }
        },
    };
    Ok(Some(value.to_string()))
}

/// A field as Go holds it after decoding (absent and zero are the same value).
fn go_value(ev: &Value, field: &str) -> Value {
    match at(ev, &format!("/{field}")) {
        Value::Null => match field {
            "involvedObject" | "source" => json!({}),
            "count" => json!(0),
            "related" | "firstTimestamp" | "lastTimestamp" | "eventTime" => Value::Null,
            _ => json!(""),
        },
        Value::Object(m) if m.is_empty() && field == "related" => json!({}),
        v => v.clone(),
    }
}

/// kube's `printEvent` cells (wide), on the core shape.
fn event_cells(ev: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let since = |p: &str| crate::table::timestamp_since(at(ev, p).as_str(), now);
    let first = if is_zero_time(ev, "/firstTimestamp") {
        since("/eventTime")
    } else {
        since("/firstTimestamp")
    };
    let mut last = if is_zero_time(ev, "/lastTimestamp") {
        first.clone()
    } else {
        since("/lastTimestamp")
    };
    let mut count = at(ev, "/count").as_i64().unwrap_or(0);
    if ev.get("series").is_some_and(Value::is_object) {
        last = since("/series/lastObservedTime");
        count = at(ev, "/series/count").as_i64().unwrap_or(0);
    } else if count == 0 {
        // Singleton events of the new API carry no count.
        count = 1;
    }
    let kind = str_at(ev, "/involvedObject/kind").to_lowercase();
    let name = str_at(ev, "/involvedObject/name");
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let first_non_empty = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else {
            a.to_string()
        }
    };
    let component = first_non_empty(
        str_at(ev, "/source/component"),
        str_at(ev, "/reportingComponent"),
    );
    let instance = first_non_empty(str_at(ev, "/source/host"), str_at(ev, "/reportingInstance"));
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(str_at(ev, "/type")),
        json!(str_at(ev, "/reason")),
        json!(target),
        json!(str_at(ev, "/involvedObject/fieldPath")),
        json!(source),
        json!(str_at(ev, "/message").trim()),
        json!(first),
        json!(count),
        json!(str_at(ev, "/metadata/name")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_event(extra: Value) -> Value {
        let mut v = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e.1", "namespace": "default", "resourceVersion": "1"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctrl", "reportingInstance": "ctrl-1",
            "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "regarding": {"kind": "Widget", "name": "w", "namespace": "default"},
            "note": "done"
        });
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        v
    }

    fn messages(errs: &[Error]) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn events_v1_and_core_shapes_convert_both_ways() {
        let ev = new_event(
            json!({"deprecatedCount": 3, "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}}),
        );
        let core = to_core(&ev);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "w");
        assert_eq!(core["message"], "done");
        assert_eq!(core["reportingComponent"], "example.com/ctrl");
        assert_eq!(core["count"], 3);
        assert_eq!(core["series"]["count"], 2);
        assert_eq!(to_events_v1(&core), ev);
    }

    #[test]
    fn events_v1_requires_reporting_fields_and_event_time() {
        let mut ev = new_event(json!({"type": "Bogus"}));
        let m = ev.as_object_mut().unwrap();
        for f in ["eventTime", "reportingController", "action"] {
            m.remove(f);
        }
        // Without eventTime kube applies the legacy checks, then the strict ones.
        assert_eq!(
            messages(&EventStrategy::events_v1().validate(&ev)),
            vec![
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Bogus",
            ]
        );
        let ev = new_event(json!({"reportingController": "", "action": ""}));
        let msgs = messages(&EventStrategy::events_v1().validate(&ev));
        assert_eq!(msgs[0], "reportingController: Required value");
        assert!(msgs.contains(&"action: Required value".to_string()));
    }

    #[test]
    fn legacy_event_namespace_must_match_involved_object() {
        let ev = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "a"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "b"}});
        assert_eq!(
            messages(&EventStrategy::core().validate(&ev)),
            vec!["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
        );
    }

    #[test]
    fn events_v1_series_count_must_be_at_least_two() {
        let ev = new_event(
            json!({"series": {"count": 1, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}}),
        );
        assert_eq!(
            messages(&EventStrategy::events_v1().validate(&ev)),
            vec!["series.count: Invalid value: \"\": should be at least 2"]
        );
    }

    #[test]
    fn events_v1_update_keeps_note_immutable() {
        let old = new_event(json!({}));
        let new = new_event(json!({"note": "changed"}));
        assert_eq!(
            messages(&EventStrategy::events_v1().validate_update(&new, &old)),
            vec!["message: Invalid value: \"changed\": field is immutable"]
        );
    }

    #[test]
    fn event_cells_follow_kubes_print_event() {
        let now = DateTime::parse_from_rfc3339("2024-01-01T00:05:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let ev = json!({"metadata": {"name": "w.1"}, "type": "Normal", "reason": "Synced",
            "message": " ok ", "involvedObject": {"kind": "Widget", "name": "w"},
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:04:00Z",
            "count": 2, "source": {"component": "ctrl"}});
        assert_eq!(
            event_cells(&ev, now),
            vec![
                json!("60s"),
                json!("Normal"),
                json!("Synced"),
                json!("widget/w"),
                json!(""),
                json!("ctrl"),
                json!("ok"),
                json!("5m"),
                json!(2),
                json!("w.1")
            ]
        );
    }

    #[test]
    fn events_v1_field_labels_map_to_core_fields() {
        let s = EventStrategy::events_v1();
        let ev = new_event(json!({}));
        assert_eq!(
            s.field_value(&ev, "regarding.name").unwrap().as_deref(),
            Some("w")
        );
        assert_eq!(
            s.field_value(&ev, "reportingController")
                .unwrap()
                .as_deref(),
            Some("example.com/ctrl")
        );
        assert_eq!(
            s.field_value(&ev, "involvedObject.name")
                .unwrap_err()
                .to_string(),
            "field label not supported: involvedObject.name"
        );
        let core = EventStrategy::core();
        assert_eq!(
            core.field_value(&to_core(&ev), "source")
                .unwrap()
                .as_deref(),
            Some("example.com/ctrl")
        );
    }
}
