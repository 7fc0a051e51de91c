//! Conversion between the versions of a built-in kind kube serves in several versions
//! from one storage (`pkg/apis/<group>/<version>/conversion.go`): the object is kept in
//! kube's storage version and converted to the version an endpoint serves on the way
//! in and out.
//!
//! Invariant: converting to the version an object already has changes nothing, so a
//! kind or version without conversion passes through untouched.

pub mod autoscaling;

use serde_json::Value;

/// The version kube stores `kind` of `group` in, when it serves it in several versions
/// that convert (`None`: each version is its own).
pub fn storage_version(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("autoscaling", "HorizontalPodAutoscaler") => Some("v2"),
        _ => None,
    }
}

/// Convert `obj` (of the version its `apiVersion` names) to `version` of its group.
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
    if let ("autoscaling", "HorizontalPodAutoscaler") = (group, kind) {
        match (from, version) {
            ("v1", "v2") => autoscaling::hpa_v1_to_v2(obj),
            ("v2", "v1") => autoscaling::hpa_v2_to_v1(obj),
            _ => {}
        }
    }
}
