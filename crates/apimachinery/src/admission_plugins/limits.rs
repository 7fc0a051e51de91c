//! LimitRanger: a namespace's LimitRanges default the resources of the containers of
//! new pods (and say so in an annotation), and bound pods' and claims' resources
//! (min, max, max limit/request ratio), in kube's words.

use super::resources::{self, Amount, List};
use super::Denied;
use serde_json::{json, Value};

/// The annotation LimitRanger writes on pods it defaulted.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

fn limits_of<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |l| l.get("type").and_then(Value::as_str) == Some(kind))
}

/// Default the containers' requests and limits of a pod being created from `ranges`.
pub fn mutate_pod(pod: &mut Value, ranges: &[Value]) {
    for range in ranges {
        let (mut requests, mut limits) = (json!({}), json!({}));
        for l in limits_of(range, "Container") {
            for (from, to) in [("defaultRequest", &mut requests), ("default", &mut limits)] {
                if let (Some(src), Some(dst)) =
                    (l.get(from).and_then(Value::as_object), to.as_object_mut())
                {
                    for (k, v) in src {
                        dst.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        let mut notes = Vec::new();
        for (list, what) in [
            ("containers", "container"),
            ("initContainers", "init container"),
        ] {
            let Some(cs) = pod
                .pointer_mut(&format!("/spec/{list}"))
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            for c in cs.iter_mut() {
                let name = c
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let Some(c) = c.as_object_mut() else { continue };
                let res = c.entry("resources").or_insert_with(|| json!({}));
                let mut set = |key: &str, defaults: &Value| -> Vec<String> {
                    let Some(res) = res.as_object_mut() else {
                        return Vec::new();
                    };
                    let target = res.entry(key).or_insert_with(|| json!({}));
                    if target.is_null() {
                        *target = json!({});
                    }
                    let mut set = Vec::new();
                    if let (Some(t), Some(d)) = (target.as_object_mut(), defaults.as_object()) {
                        for (k, v) in d {
                            if !t.contains_key(k) {
                                t.insert(k.clone(), v.clone());
                                set.push(k.clone());
                            }
                        }
                    }
                    set.sort();
                    set
                };
                let req = set("requests", &requests);
                let lim = set("limits", &limits);
                if !req.is_empty() {
                    notes.push(format!("{} request for {what} {name}", req.join(", ")));
                }
                if !lim.is_empty() {
                    notes.push(format!("{} limit for {what} {name}", lim.join(", ")));
                }
            }
        }
        if !notes.is_empty() {
            let meta = crate::object::meta_mut(pod);
            let a = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(a) = a.as_object_mut() {
                a.insert(
                    ANNOTATION.into(),
                    json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
                );
            }
        }
    }
}

/// Check a pod's (`resource`: `pods`) or claim's (`persistentvolumeclaims`) resources
/// against `ranges`; the first range that refuses says why (kube's aggregate).
pub fn validate(resource: &str, obj: &Value, ranges: &[Value]) -> Result<(), Denied> {
    for range in ranges {
        let errs = match resource {
            "pods" => pod_errors(obj, range),
            "persistentvolumeclaims" => claim_errors(obj, range),
            _ => Vec::new(),
        };
        match errs.len() {
            0 => {}
            1 => return Err(Denied(errs[0].clone())),
            _ => return Err(Denied(format!("[{}]", errs.join(", ")))),
        }
    }
    Ok(())
}

fn bounds(l: &Value, key: &str) -> List {
    resources::list(l.get(key))
}

fn container_lists(c: &Value) -> (List, List) {
    (
        resources::list(c.pointer("/resources/requests")),
        resources::list(c.pointer("/resources/limits")),
    )
}

fn pod_errors(pod: &Value, range: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let containers = |key: &str| {
        pod.pointer(&format!("/spec/{key}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let (main, init) = (containers("containers"), containers("initContainers"));
    for l in range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match l.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for c in main.iter().chain(init.iter()) {
                    let (req, lim) = container_lists(c);
                    check(&mut errs, "Container", l, &req, &lim);
                }
            }
            Some("Pod") => {
                let (req, lim) = resources::pod_totals(pod);
                check(&mut errs, "Pod", l, &req, &lim);
            }
            _ => {}
        }
    }
    errs
}

fn claim_errors(pvc: &Value, range: &Value) -> Vec<String> {
    let mut errs = Vec::new();
    let req = resources::list(pvc.pointer("/spec/resources/requests"));
    for l in limits_of(range, "PersistentVolumeClaim") {
        for (k, min) in bounds(l, "min") {
            match req.get(&k) {
                None => errs.push(format!(
                    "minimum {k} usage per PersistentVolumeClaim is {}.  No request is specified",
                    min.text()
                )),
                Some(r) if less(r, &min) => errs.push(format!(
                    "minimum {k} usage per PersistentVolumeClaim is {}, but request is {}",
                    min.text(),
                    r.text()
                )),
                _ => {}
            }
        }
        for (k, max) in bounds(l, "max") {
            match req.get(&k) {
                None => errs.push(format!(
                    "maximum {k} usage per PersistentVolumeClaim is {}.  No request is specified",
                    max.text()
                )),
                Some(r) if less(&max, r) => errs.push(format!(
                    "maximum {k} usage per PersistentVolumeClaim is {}, but request is {}",
                    max.text(),
                    r.text()
                )),
                _ => {}
            }
        }
    }
    errs
}

fn less(a: &Amount, b: &Amount) -> bool {
    a.q.compare(&b.q) == std::cmp::Ordering::Less
}

fn check(errs: &mut Vec<String>, kind: &str, l: &Value, req: &List, lim: &List) {
    for (k, min) in bounds(l, "min") {
        let (r, li) = (req.get(&k), lim.get(&k));
        match r {
            None => errs.push(format!(
                "minimum {k} usage per {kind} is {}.  No request is specified",
                min.text()
            )),
            Some(r) if less(r, &min) => errs.push(format!(
                "minimum {k} usage per {kind} is {}, but request is {}",
                min.text(),
                r.text()
            )),
            _ => {
                if let Some(li) = li.filter(|li| less(li, &min)) {
                    errs.push(format!(
                        "minimum {k} usage per {kind} is {}, but limit is {}",
                        min.text(),
                        li.text()
                    ));
                }
            }
        }
    }
    for (k, max) in bounds(l, "max") {
        let (r, li) = (req.get(&k), lim.get(&k));
        match li {
            None => errs.push(format!(
                "maximum {k} usage per {kind} is {}.  No limit is specified",
                max.text()
            )),
            Some(li) if less(&max, li) => errs.push(format!(
                "maximum {k} usage per {kind} is {}, but limit is {}",
                max.text(),
                li.text()
            )),
            _ => {
                if let Some(r) = r.filter(|r| less(&max, r)) {
                    errs.push(format!(
                        "maximum {k} usage per {kind} is {}, but request is {}",
                        max.text(),
                        r.text()
                    ));
                }
            }
        }
    }
    for (k, ratio) in bounds(l, "maxLimitRequestRatio") {
        let r = req.get(&k).filter(|r| !r.q.is_zero());
        let li = lim.get(&k).filter(|l| !l.q.is_zero());
        match (r, li) {
            (None, _) => errs.push(format!(
                "{k} max limit to request ratio per {kind} is {}, but no request is specified or request is 0",
                ratio.text()
            )),
            (_, None) => errs.push(format!(
                "{k} max limit to request ratio per {kind} is {}, but no limit is specified or limit is 0",
                ratio.text()
            )),
            (Some(r), Some(li)) => {
                let observed = li.q.approx() / r.q.approx();
                if observed > ratio.q.approx() {
                    errs.push(format!(
                        "{k} max limit to request ratio per {kind} is {}, but provided ratio is {observed:.6}",
                        ratio.text()
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range() -> Value {
        json!({"spec": {"limits": [{"type": "Container",
            "default": {"cpu": "500m", "memory": "256Mi"}, "defaultRequest": {"cpu": "250m"},
            "min": {"cpu": "100m"}, "max": {"cpu": "1"}}]}})
    }

    #[test]
    fn defaults_are_set_and_announced() {
        let mut pod = json!({"spec": {"containers": [{"name": "app", "resources": {"limits": {"memory": "1Gi"}}}]}});
        mutate_pod(&mut pod, &[range()]);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "250m"}, "limits": {"memory": "1Gi", "cpu": "500m"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container app; cpu limit for container app"
        );
    }

    #[test]
    fn bounds_are_kubes_messages() {
        let pod = json!({"spec": {"containers": [{"name": "app", "resources": {"requests": {"cpu": "50m"}, "limits": {"cpu": "2"}}}]}});
        let err = validate("pods", &pod, &[range()]).unwrap_err();
        assert_eq!(err.0, "[minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 1, but limit is 2]");
    }
}
