//! The policy group: PodDisruptionBudget.

use super::*;

/// Validate a PodDisruptionBudget (create and update check the same rules).
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    match kind {
        "PodDisruptionBudget" => {
            pod_disruption_budget_spec(value_at(obj, "spec"), &Path::new("spec"))
        }
        _ => ErrorList::new(),
    }
}

/// `ValidatePodDisruptionBudgetSpec`. Both bounds set prints the spec as kube's internal
/// Go struct does (field names, declaration order).
pub fn pod_disruption_budget_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let min = spec.get("minAvailable").filter(|v| !v.is_null());
    let max = spec.get("maxUnavailable").filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        let value = go_struct(&[
            ("MinAvailable", value_at(spec, "minAvailable")),
            ("Selector", value_at(spec, "selector")),
            ("MaxUnavailable", value_at(spec, "maxUnavailable")),
            (
                "UnhealthyPodEvictionPolicy",
                value_at(spec, "unhealthyPodEvictionPolicy"),
            ),
        ]);
        errs.push(with_value(
            Error::invalid(
                path,
                Value::Null,
                "minAvailable and maxUnavailable cannot be both set",
            ),
            value,
        ));
    }
    for (key, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if v.is_some() {
            errs.extend(positive_int_or_percent(v, &path.child(key)));
            errs.extend(not_more_than_100_percent(v, &path.child(key)));
        }
    }
    if let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) {
        errs.extend(label_selector(selector, &path.child("selector")));
    }
    if let Some(policy) = opt_str(spec, "unhealthyPodEvictionPolicy") {
        if policy != "IfHealthyBudget" && policy != "AlwaysAllow" {
            errs.push(Error::not_supported(
                &path.child("unhealthyPodEvictionPolicy"),
                Value::from(policy),
                &["AlwaysAllow", "IfHealthyBudget"],
            ));
        }
    }
    errs
}
