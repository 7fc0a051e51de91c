//! CRD conditions and the status kube's controllers converge to: accepted names (with
//! conflicts against the other CRDs of a group), `NamesAccepted`, `Established`, the API
//! approval condition and `storedVersions`.

use super::approval::{approval_state, Approval};
use super::{
    is_protected_community_group, storage_version_name, str_of, strings, CONDITION_API_APPROVAL,
    CONDITION_ESTABLISHED, CONDITION_NAMES_ACCEPTED,
};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// True when the CRD's status has a condition of this type with status `True`.
pub fn condition_is_true(crd: &Value, condition_type: &str) -> bool {
    find_condition(crd.get("status"), condition_type)
        .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

/// True once the CRD is served (`Established=True`).
pub fn is_established(crd: &Value) -> bool {
    condition_is_true(crd, CONDITION_ESTABLISHED)
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::default_crd;
    use crate::crd::tests::{created, established, widget_crd};

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
}
