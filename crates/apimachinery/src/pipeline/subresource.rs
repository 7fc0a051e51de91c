//! Subresources that write one part of a built-in object, as kube's per-subresource
//! strategies do: the object stored is the stored one with that part taken from the
//! request (`pods/ephemeralcontainers`: the ephemeral containers; `pods/resize`: the
//! containers' resources and resize policies; `certificatesigningrequests/approval`:
//! the status conditions; `pods/binding`: the node a scheduler chose). `/status` and
//! `/scale` are handled apart.

use crate::object;
use serde_json::Value;

/// A part-writing subresource of a built-in kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// `pods/ephemeralcontainers`.
    EphemeralContainers,
    /// `pods/resize`.
    Resize,
    /// `certificatesigningrequests/approval`.
    Approval,
    /// `pods/binding`: the node, the binding's annotations, the PodScheduled condition.
    Binding,
}

impl Part {
    /// The part `subresource` of `group`/`resource` writes, if it is one.
    pub fn of(group: &str, resource: &str, subresource: &str) -> Option<Part> {
        match (group, resource, subresource) {
            ("", "pods", "ephemeralcontainers") => Some(Part::EphemeralContainers),
            ("", "pods", "resize") => Some(Part::Resize),
            ("", "pods", "binding") => Some(Part::Binding),
            ("certificates.k8s.io", "certificatesigningrequests", "approval") => {
                Some(Part::Approval)
            }
            _ => None,
        }
    }

    /// The object to store: `old` with this part (and the request's managedFields)
    /// from `new`.
    pub fn merge(self, new: &Value, old: &Value) -> Value {
        let mut out = old.clone();
        match self {
            Part::EphemeralContainers => copy(new, &mut out, "/spec", "ephemeralContainers"),
            Part::Approval => copy(new, &mut out, "/status", "conditions"),
            Part::Binding => {
                copy(new, &mut out, "/spec", "nodeName");
                copy(new, &mut out, "/metadata", "annotations");
                copy(new, &mut out, "/status", "conditions");
            }
            Part::Resize => {
                for list in ["containers", "initContainers"] {
                    let from = new
                        .pointer(&format!("/spec/{list}"))
                        .and_then(Value::as_array);
                    let to = out
                        .pointer_mut(&format!("/spec/{list}"))
                        .and_then(Value::as_array_mut);
                    let (Some(from), Some(to)) = (from, to) else {
                        continue;
                    };
                    for c in to.iter_mut() {
                        let name = c.get("name").cloned();
                        let Some(src) = from.iter().find(|n| n.get("name") == name.as_ref()) else {
                            continue;
                        };
                        for field in ["resources", "resizePolicy"] {
                            copy(src, c, "", field);
                        }
                    }
                }
            }
        }
        match object::meta(new).get("managedFields") {
            Some(mf) => {
                object::meta_mut(&mut out).insert("managedFields".into(), mf.clone());
            }
            None => {
                object::meta_mut(&mut out).remove("managedFields");
            }
        }
        out
    }
}

/// Why a pod cannot be bound (kube answers it as a 409 on `pods/binding`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BindRefused(pub String);

/// `pods/binding` (kube's `setPodNodeAndMetadata`): the pod bound to `node`, the
/// binding's annotations added and `PodScheduled` true; `Err`: why it cannot be.
pub fn bind(pod: &Value, node: &str, annotations: Option<&Value>) -> Result<Value, BindRefused> {
    let name = object::name(pod);
    if object::is_terminating(pod) {
        return Err(BindRefused(format!(
            "pod {name} is being deleted, cannot be assigned to a host"
        )));
    }
    let current = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !current.is_empty() {
        return Err(BindRefused(format!(
            "pod {name} is already assigned to node {current:?}"
        )));
    }
    if pod
        .pointer("/spec/schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty())
    {
        return Err(BindRefused(format!(
            "pod {name} has non-empty .spec.schedulingGates"
        )));
    }
    let mut out = pod.clone();
    if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), Value::from(node));
    }
    if let Some(extra) = annotations.and_then(Value::as_object) {
        let meta = object::meta_mut(&mut out);
        let a = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(a) = a.as_object_mut() {
            for (k, v) in extra {
                a.insert(k.clone(), v.clone());
            }
        }
    }
    let Some(o) = out.as_object_mut() else {
        return Ok(out);
    };
    let status = o
        .entry("status")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(status) = status.as_object_mut() {
        let conditions = status
            .entry("conditions")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = conditions.as_array_mut() {
            let now = object::now();
            match list
                .iter_mut()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
            {
                Some(c) => {
                    if c.get("status").and_then(Value::as_str) != Some("True") {
                        c["lastTransitionTime"] = Value::from(now);
                    }
                    c["status"] = Value::from("True");
                }
                None => list.push(serde_json::json!({
                    "type": "PodScheduled", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": now,
                })),
            }
        }
    }
    Ok(out)
}

/// `to[at][field]` = `from[at][field]` (removed when `from` has none).
fn copy(from: &Value, to: &mut Value, at: &str, field: &str) {
    let value = from.pointer(at).and_then(|p| p.get(field)).cloned();
    let parent = if at.is_empty() {
        Some(to)
    } else {
        to.pointer_mut(at)
    };
    let Some(parent) = parent.and_then(Value::as_object_mut) else {
        return;
    };
    match value {
        Some(v) => {
            parent.insert(field.into(), v);
        }
        None => {
            parent.remove(field);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_part_changes() {
        let old = json!({"metadata": {"name": "p", "labels": {"a": "1"}},
                         "spec": {"containers": [{"name": "c", "image": "old", "resources": {}}]},
                         "status": {"phase": "Pending"}});
        let new = json!({"metadata": {"name": "p", "labels": {"a": "2"}},
                         "spec": {"containers": [{"name": "c", "image": "new", "resources": {"limits": {"cpu": "1"}}}],
                                  "ephemeralContainers": [{"name": "debug", "image": "busybox"}]},
                         "status": {"phase": "Running"}});
        let e = Part::EphemeralContainers.merge(&new, &old);
        assert_eq!(e["spec"]["ephemeralContainers"][0]["name"], "debug");
        assert_eq!(e["spec"]["containers"][0]["image"], "old");
        assert_eq!(e["metadata"]["labels"]["a"], "1");
        let r = Part::Resize.merge(&new, &old);
        assert_eq!(
            r["spec"]["containers"][0]["resources"]["limits"]["cpu"],
            "1"
        );
        assert_eq!(r["spec"]["containers"][0]["image"], "old");
        assert!(r["spec"].get("ephemeralContainers").is_none());
        assert_eq!(Part::of("", "pods", "status"), None);
    }
}
