//! ResourceQuota, as kube's admission plugin: what an object counts against a quota
//! (kube's evaluators: object counts, pods' compute resources, claims' storage,
//! Services' node ports and load balancers), the quota's checks, and its new usage.
//! A quota constrains only what its `status.hard` names: with no quota controller
//! running (as here) a quota nobody gave a status constrains nothing, as on kube.

use super::resources::{self, Amount, List};
use super::Denied;
use serde_json::Value;

const COMPUTE: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// The usage of `obj` (of `group`/`resource`) for quota.
pub fn usage(group: &str, resource: &str, obj: &Value) -> List {
    let mut u = List::new();
    let count_name = if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    };
    u.insert(count_name, Amount::count(1));
    if !group.is_empty() {
        return u;
    }
    match resource {
        "pods" => {
            let phase = obj.pointer("/status/phase").and_then(Value::as_str);
            if matches!(phase, Some("Succeeded" | "Failed")) {
                return List::new();
            }
            u.insert("pods".into(), Amount::count(1));
            let (req, lim) = resources::pod_totals(obj);
            for (k, v) in req {
                if COMPUTE.contains(&k.as_str()) {
                    u.insert(k.clone(), v.clone());
                }
                u.insert(format!("requests.{k}"), v);
            }
            for (k, v) in lim {
                u.insert(format!("limits.{k}"), v);
            }
        }
        "persistentvolumeclaims" => {
            u.insert("persistentvolumeclaims".into(), Amount::count(1));
            let storage =
                resources::list(obj.pointer("/spec/resources/requests")).remove("storage");
            let class = obj
                .pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !class.is_empty() {
                u.insert(
                    format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
                    Amount::count(1),
                );
            }
            if let Some(s) = storage {
                if !class.is_empty() {
                    u.insert(
                        format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                        s.clone(),
                    );
                }
                u.insert("requests.storage".into(), s);
            }
        }
        "services" => {
            u.insert("services".into(), Amount::count(1));
            let kind = obj
                .pointer("/spec/type")
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let ports = obj
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .map_or(0, Vec::len) as i64;
            match kind {
                "NodePort" => {
                    u.insert("services.nodeports".into(), Amount::count(ports));
                }
                "LoadBalancer" => {
                    u.insert("services.loadbalancers".into(), Amount::count(1));
                    let alloc = obj
                        .pointer("/spec/allocateLoadBalancerNodePorts")
                        .and_then(Value::as_bool)
                        .unwrap_or(true);
                    if alloc {
                        u.insert("services.nodeports".into(), Amount::count(ports));
                    }
                }
                _ => {}
            }
        }
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            u.insert(resource.into(), Amount::count(1));
        }
        _ => {}
    }
    u
}

/// Whether a quota's `name` constrains objects of `group`/`resource`.
fn covers(group: &str, resource: &str, name: &str) -> bool {
    let count = if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    };
    if name == count {
        return true;
    }
    if !group.is_empty() {
        return false;
    }
    match resource {
        "pods" => {
            name == "pods"
                || COMPUTE.contains(&name)
                || name.starts_with("requests.")
                || name.starts_with("limits.")
                || name.starts_with("hugepages-")
        }
        "persistentvolumeclaims" => {
            name == "persistentvolumeclaims"
                || name == "requests.storage"
                || name.ends_with(".storageclass.storage.k8s.io/requests.storage")
                || name.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
        }
        "services" => matches!(
            name,
            "services" | "services.nodeports" | "services.loadbalancers"
        ),
        other => name == other,
    }
}

/// Whether the quota's scopes select `obj` (pods only; other kinds are selected by
/// scoped quotas never).
fn selects(quota: &Value, resource: &str, obj: &Value) -> bool {
    let scopes: Vec<&str> = quota
        .pointer("/spec/scopes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let expressions: Vec<&Value> = quota
        .pointer("/spec/scopeSelector/matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    if scopes.is_empty() && expressions.is_empty() {
        return true;
    }
    if resource != "pods" {
        return false;
    }
    let (req, lim) = resources::pod_totals(obj);
    let best_effort = req.is_empty() && lim.is_empty();
    let terminating = obj
        .pointer("/spec/activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null());
    let class = obj
        .pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    let scope_holds = |scope: &str| match scope {
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        _ => false,
    };
    scopes.iter().all(|s| scope_holds(s))
        && expressions.iter().all(|e| {
            let scope = e.get("scopeName").and_then(Value::as_str).unwrap_or("");
            let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if scope == "PriorityClass" {
                match op {
                    "In" => values.contains(&class),
                    "NotIn" => !values.contains(&class),
                    "Exists" => !class.is_empty(),
                    "DoesNotExist" => class.is_empty(),
                    _ => false,
                }
            } else {
                match op {
                    "Exists" => scope_holds(scope),
                    "DoesNotExist" => !scope_holds(scope),
                    _ => false,
                }
            }
        })
}

/// A pod must name the compute resources a quota tracks (kube's backward-compatible
/// requirement), in kube's words.
fn constraints(resource: &str, restricted: &[String], obj: &Value) -> Result<(), String> {
    if resource != "pods" {
        return Ok(());
    }
    let mut missing: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for key in ["containers", "initContainers"] {
        for c in obj
            .pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let req = resources::list(c.pointer("/resources/requests"));
            let lim = resources::list(c.pointer("/resources/limits"));
            for r in restricted {
                let need = match r.as_str() {
                    "cpu" | "requests.cpu" => !req.contains_key("cpu"),
                    "memory" | "requests.memory" => !req.contains_key("memory"),
                    "limits.cpu" => !lim.contains_key("cpu"),
                    "limits.memory" => !lim.contains_key("memory"),
                    _ => false,
                };
                if need {
                    let names = missing.entry(r.clone()).or_default();
                    if !names.contains(&name) {
                        names.push(name.clone());
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            let mut names = names.clone();
            names.sort();
            format!("{r} for: {}", names.join(","))
        })
        .collect();
    Err(format!("must specify {}", parts.join("; ")))
}

/// One quota's decision on a write of `obj` (`old`: the stored object of an update):
/// `Ok(Some(used))` when its usage changes to `used`, `Ok(None)` when it is not
/// concerned, `Err` when it refuses (kube's texts).
pub fn admit(
    quota: &Value,
    group: &str,
    resource: &str,
    obj: &Value,
    old: Option<&Value>,
    status_write: bool,
) -> Result<Option<List>, Denied> {
    if !selects(quota, resource, obj) {
        return Ok(None);
    }
    let name = crate::object::name(quota);
    let hard = resources::list(quota.pointer("/status/hard"));
    let used = resources::list(quota.pointer("/status/used"));
    let restricted: Vec<String> = hard
        .keys()
        .filter(|k| covers(group, resource, k))
        .cloned()
        .collect();
    constraints(resource, &restricted, obj)
        .map_err(|e| Denied(format!("failed quota: {name}: {e}")))?;
    let unknown: Vec<&String> = restricted
        .iter()
        .filter(|r| !used.contains_key(*r))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = restricted.iter().map(String::as_str).collect();
        return Err(Denied(format!(
            "status unknown for quota: {name}, resources: {}",
            names.join(",")
        )));
    }
    let new_usage = usage(group, resource, obj);
    let old_usage = old.map(|o| usage(group, resource, o)).unwrap_or_default();
    let mut delta = List::new();
    for r in &restricted {
        let n = new_usage.get(r).cloned().unwrap_or(Amount::count(0));
        let d = match old_usage.get(r) {
            Some(o) => n.minus(o),
            None => n,
        };
        if !d.q.is_zero() {
            delta.insert(r.clone(), d);
        }
    }
    if delta.is_empty() {
        return Ok(None);
    }
    let next = resources::add(&used, &delta);
    if !status_write {
        let exceeded: Vec<&String> = delta
            .keys()
            .filter(|k| {
                matches!((next.get(*k), hard.get(*k)), (Some(n), Some(h))
                    if n.q.compare(&h.q) == std::cmp::Ordering::Greater)
            })
            .collect();
        if !exceeded.is_empty() {
            let mask = |l: &List| -> List {
                l.iter()
                    .filter(|(k, _)| exceeded.contains(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            };
            return Err(Denied(format!(
                "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                resources::pretty(&mask(&delta)),
                resources::pretty(&mask(&used)),
                resources::pretty(&mask(&hard)),
            )));
        }
    }
    Ok(Some(next))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(hard: Value, used: Value) -> Value {
        json!({"metadata": {"name": "q"}, "spec": {"hard": hard.clone()}, "status": {"hard": hard, "used": used}})
    }

    #[test]
    fn a_quota_without_status_constrains_nothing() {
        let q = json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}});
        assert_eq!(admit(&q, "", "pods", &json!({}), None, false), Ok(None));
    }

    #[test]
    fn usage_adds_up_and_is_refused_past_hard() {
        let q = quota(
            json!({"pods": "2", "requests.cpu": "1"}),
            json!({"pods": "1", "requests.cpu": "800m"}),
        );
        let pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "300m"}}}]}});
        let err = admit(&q, "", "pods", &pod, None, false).unwrap_err();
        assert_eq!(err.0, "exceeded quota: q, requested: requests.cpu=300m, used: requests.cpu=800m, limited: requests.cpu=1");
        let small = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": "200m"}}}]}});
        let next = admit(&q, "", "pods", &small, None, false).unwrap().unwrap();
        assert_eq!(resources::pretty(&next), "pods=2,requests.cpu=1");
        let bare = json!({"spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            admit(&q, "", "pods", &bare, None, false).unwrap_err().0,
            "failed quota: q: must specify requests.cpu for: a"
        );
        let unknown = quota(json!({"pods": "2"}), json!({}));
        assert_eq!(
            admit(&unknown, "", "pods", &small, None, false)
                .unwrap_err()
                .0,
            "status unknown for quota: q, resources: pods"
        );
    }
}
