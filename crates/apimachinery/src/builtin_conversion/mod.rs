//! Conversion between the versions of a built-in kind kube serves in several versions
//! from one storage (`pkg/apis/<group>/<version>/conversion.go`): the object is kept in
//! kube's storage version and converted to the version an endpoint serves on the way
//! in and out.
//!
//! Most versions of a kind have the same schema (a beta version and the GA version that
//! followed it, an alpha and its beta): they convert by their `apiVersion` alone. The
//! kinds whose versions differ convert field by field: HorizontalPodAutoscalers
//! (`autoscaling/v1` and `v2`) and dynamic resource allocation's `resource.k8s.io/v1beta1`
//! kinds (to and from `v1`).
//!
//! Invariant: converting to the version an object already has changes nothing.

pub mod autoscaling;
pub mod resource;

use serde_json::{json, Value};

/// Convert `obj` (of the version its `apiVersion` names) to `version` of `group`.
pub fn convert(group: &str, kind: &str, version: &str, obj: &mut Value) {
    let from = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let from = from.rsplit('/').next().unwrap_or("");
    if from == version {
        return;
    }
    match (group, kind, from, version) {
        ("autoscaling", "HorizontalPodAutoscaler", "v1", "v2") => autoscaling::hpa_v1_to_v2(obj),
        ("autoscaling", "HorizontalPodAutoscaler", "v2", "v1") => autoscaling::hpa_v2_to_v1(obj),
        ("resource.k8s.io", _, "v1beta1", "v1") => resource::v1beta1_to_v1(kind, obj),
        ("resource.k8s.io", _, "v1", "v1beta1") => resource::v1_to_v1beta1(kind, obj),
        _ => {
            if let Some(m) = obj.as_object_mut() {
                let api_version = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                m.insert("apiVersion".into(), json!(api_version));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_of_one_schema_convert_by_their_api_version() {
        let mut obj = json!({
            "apiVersion": "networking.k8s.io/v1beta1",
            "kind": "IPAddress",
            "metadata": {"name": "10.0.0.1"},
            "spec": {"parentRef": {"resource": "services", "name": "s", "namespace": "d"}},
        });
        let before = obj.clone();
        convert("networking.k8s.io", "IPAddress", "v1", &mut obj);
        assert_eq!(obj["apiVersion"], "networking.k8s.io/v1");
        assert_eq!(obj["spec"], before["spec"]);
        convert("networking.k8s.io", "IPAddress", "v1beta1", &mut obj);
        assert_eq!(obj, before);
    }
}
