//! What the cluster's controllers read off objects: owner references, selectors,
//! pod readiness, conditions, and the paths objects are written at.

use crate::selector::labels::from_label_selector_json;
use serde_json::{json, Value};
use std::borrow::Borrow;

/// The string at `pointer`, `""` when absent.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The integer at `pointer`, `default` when absent.
pub fn int_at(v: &Value, pointer: &str, default: i64) -> i64 {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .unwrap_or(default)
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    str_at(obj, "/metadata/uid")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    str_at(obj, "/metadata/namespace")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The uid of the controller owner of `obj` (the owner reference with
/// `controller: true`).
pub fn controller_uid(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
}

/// The owner reference a controller puts on what it creates for `owner`.
pub fn controller_ref(owner: &Value) -> Value {
    json!({
        "apiVersion": str_at(owner, "/apiVersion"),
        "kind": str_at(owner, "/kind"),
        "name": name(owner),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The objects of `candidates` in `owner`'s namespace whose controller is `owner`.
pub fn owned_by<'a, T: Borrow<Value>>(owner: &Value, candidates: &'a [T]) -> Vec<&'a Value> {
    let (ns, owner_uid) = (namespace(owner), uid(owner));
    candidates
        .iter()
        .map(Borrow::borrow)
        .filter(|c| namespace(c) == ns && controller_uid(c) == Some(owner_uid))
        .collect()
}

/// Whether `obj`'s labels match the label selector at `selector` (none: nothing).
pub fn selector_matches(selector: Option<&Value>, obj: &Value) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    match from_label_selector_json(selector) {
        Ok(s) => !s.is_empty() && s.matches_object(obj),
        Err(_) => false,
    }
}

/// An int-or-percent (`3`, `"25%"`) of `total` (kube's
/// `GetScaledValueFromIntOrPercent`); `None` for anything else.
pub fn int_or_percent(v: &Value, total: i64, round_up: bool) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let pct: i64 = s.strip_suffix('%')?.parse().ok()?;
            Some(if round_up {
                (pct * total + 99) / 100
            } else {
                pct * total / 100
            })
        }
        _ => None,
    }
}

/// The condition of `type` in `status.conditions`.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| str_at(c, "/type") == type_)
}

/// Whether a pod has succeeded or failed.
pub fn pod_is_terminal(pod: &Value) -> bool {
    matches!(str_at(pod, "/status/phase"), "Succeeded" | "Failed")
}

/// Whether a pod counts as active: not terminal, not being deleted.
pub fn pod_is_active(pod: &Value) -> bool {
    !pod_is_terminal(pod) && !is_deleting(pod)
}

/// Whether a pod's Ready condition is true.
pub fn pod_is_ready(pod: &Value) -> bool {
    condition(pod, "Ready").is_some_and(|c| str_at(c, "/status") == "True")
}

/// Seconds from an RFC 3339 time to `now` (`None` when unparsable).
pub fn seconds_since(time: &str, now: chrono::DateTime<chrono::Utc>) -> Option<i64> {
    let t = chrono::DateTime::parse_from_rfc3339(time).ok()?;
    Some((now - t.with_timezone(&chrono::Utc)).num_seconds())
}

/// Whether a pod has been Ready for `min_ready_seconds` at `now`: the seconds still to
/// wait when not yet (`Ok`: available).
pub fn pod_available(
    pod: &Value,
    min_ready_seconds: i64,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), i64> {
    if !pod_is_ready(pod) {
        return Err(i64::MAX);
    }
    if min_ready_seconds <= 0 {
        return Ok(());
    }
    let since = condition(pod, "Ready")
        .map(|c| str_at(c, "/lastTransitionTime"))
        .and_then(|t| seconds_since(t, now))
        .unwrap_or(0);
    if since >= min_ready_seconds {
        Ok(())
    } else {
        Err(min_ready_seconds - since)
    }
}

/// Whether a pod spec's `tolerations` allow it on `node`: every `NoSchedule` and
/// `NoExecute` taint tolerated, and a cordoned node (`spec.unschedulable`) only with
/// the `node.kubernetes.io/unschedulable` toleration.
pub fn tolerates_node(pod_spec: &Value, node: &Value) -> bool {
    let tolerations: Vec<&Value> = pod_spec
        .get("tolerations")
        .and_then(Value::as_array)
        .map(|t| t.iter().collect())
        .unwrap_or_default();
    let tolerated = |key: &str, value: &str, effect: &str| {
        tolerations.iter().any(|t| {
            let key_ok = str_at(t, "/key").is_empty() || str_at(t, "/key") == key;
            let effect_ok = str_at(t, "/effect").is_empty() || str_at(t, "/effect") == effect;
            let value_ok = str_at(t, "/operator") == "Exists" || str_at(t, "/value") == value;
            key_ok && effect_ok && value_ok
        })
    };
    let cordoned = node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true);
    if cordoned && !tolerated("node.kubernetes.io/unschedulable", "", "NoSchedule") {
        return false;
    }
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|t| matches!(str_at(t, "/effect"), "NoSchedule" | "NoExecute"))
        .all(|t| tolerated(str_at(t, "/key"), str_at(t, "/value"), str_at(t, "/effect")))
}

/// The collection path of `resource` in `group/version` (`""` group: core) and
/// namespace (`""`: cluster-scoped).
pub fn collection(group_version: &str, resource: &str, namespace: &str) -> String {
    let root = if group_version.contains('/') {
        format!("/apis/{group_version}")
    } else {
        format!("/api/{group_version}")
    };
    if namespace.is_empty() {
        format!("{root}/{resource}")
    } else {
        format!("{root}/namespaces/{namespace}/{resource}")
    }
}

/// The path of `obj` of `resource` in `group_version`.
pub fn path_of(group_version: &str, resource: &str, obj: &Value) -> String {
    format!(
        "{}/{}",
        collection(group_version, resource, namespace(obj)),
        name(obj)
    )
}

/// kube's `SetCondition` of a workload status: a condition whose status and reason
/// are unchanged is left as it is; otherwise the old one goes and the new one is
/// appended, keeping `lastTransitionTime` when only the reason changed.
pub fn set_condition(conditions: &mut Vec<Value>, mut new: Value) {
    if let Some(i) = conditions
        .iter()
        .position(|c| str_at(c, "/type") == str_at(&new, "/type"))
    {
        let old = conditions.remove(i);
        if str_at(&old, "/status") == str_at(&new, "/status") {
            if str_at(&old, "/reason") == str_at(&new, "/reason") {
                conditions.insert(i, old);
                return;
            }
            if let Some(t) = old.get("lastTransitionTime") {
                new["lastTransitionTime"] = t.clone();
            }
        }
    }
    conditions.push(new);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_condition_keeps_the_order_kube_leaves() {
        let cond = |t: &str, s: &str, r: &str, at: &str| json!({"type": t, "status": s, "reason": r, "lastTransitionTime": at});
        let mut cs = Vec::new();
        set_condition(
            &mut cs,
            cond("Progressing", "True", "NewReplicaSetCreated", "t1"),
        );
        set_condition(
            &mut cs,
            cond("Available", "False", "MinimumReplicasUnavailable", "t1"),
        );
        set_condition(
            &mut cs,
            cond("Available", "False", "MinimumReplicasUnavailable", "t2"),
        );
        assert_eq!(cs[1]["lastTransitionTime"], "t1");
        set_condition(
            &mut cs,
            cond("Available", "True", "MinimumReplicasAvailable", "t3"),
        );
        set_condition(
            &mut cs,
            cond("Progressing", "True", "NewReplicaSetAvailable", "t4"),
        );
        let types: Vec<&str> = cs.iter().map(|c| str_at(c, "/type")).collect();
        assert_eq!(types, ["Available", "Progressing"]);
        assert_eq!(cs[1]["lastTransitionTime"], "t1");
        assert_eq!(cs[0]["lastTransitionTime"], "t3");
    }

    #[test]
    fn paths_of_core_and_group_resources() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}});
        assert_eq!(path_of("v1", "pods", &pod), "/api/v1/namespaces/ns/pods/p");
        assert_eq!(
            collection("apps/v1", "replicasets", ""),
            "/apis/apps/v1/replicasets"
        );
    }
}
