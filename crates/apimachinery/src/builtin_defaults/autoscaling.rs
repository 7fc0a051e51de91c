//! autoscaling defaults (`pkg/apis/autoscaling/{v1,v2}/defaults.go`) of the
//! HorizontalPodAutoscaler, and the CPU target v1 gains in its round trip through v2.

use super::{is_empty_collection, ptr, set_defaults, struct_value_at, FieldDefault, Lit::*};
use serde_json::{json, Map, Value};

/// The CPU utilization an HPA without metrics targets.
pub const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Where autoscaling/v1 keeps the metrics it has no field for.
const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";

const HPA: &[FieldDefault] = &[ptr("/spec/minReplicas", Int(1))];

/// autoscaling/v1 defaults of `kind`.
pub fn apply_v1(kind: &str, obj: &mut Value) {
    if kind == "HorizontalPodAutoscaler" {
        set_defaults(obj, HPA);
    }
}

/// autoscaling/v1 round trip: without a CPU target and without other metrics (kept in
/// an annotation), kube's conversion targets 80% CPU utilization.
pub fn round_trip_v1(kind: &str, obj: &mut Value) {
    if kind != "HorizontalPodAutoscaler" {
        return;
    }
    let has_metrics = obj
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(METRICS_ANNOTATION))
        .is_some();
    let unset = obj
        .pointer("/spec/targetCPUUtilizationPercentage")
        .is_none_or(Value::is_null);
    if unset && !has_metrics {
        if let Some(spec) = struct_value_at(obj, "/spec") {
            spec["targetCPUUtilizationPercentage"] = json!(DEFAULT_CPU_UTILIZATION);
        }
    }
}

/// autoscaling/v2 defaults of `kind`: `minReplicas`, the CPU metric of an HPA without
/// metrics, and the scaling rules of a `behavior` the client gave.
pub fn apply_v2(kind: &str, obj: &mut Value) {
    if kind != "HorizontalPodAutoscaler" {
        return;
    }
    set_defaults(obj, HPA);
    let Some(spec) = struct_value_at(obj, "/spec") else {
        return;
    };
    if is_empty_collection(spec, "metrics") {
        spec["metrics"] = json!([{
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION},
            },
        }]);
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = json!({
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        });
        // No scale-down stabilization window: the controller's flag decides it.
        let down = json!({
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        });
        for (key, defaults) in [("scaleUp", up), ("scaleDown", down)] {
            let rules = scaling_rules(behavior.get(key), defaults);
            behavior.insert(key.into(), rules);
        }
    }
}

/// The rules a client gave, each unset one taken from `defaults`.
fn scaling_rules(given: Option<&Value>, defaults: Value) -> Value {
    let Value::Object(mut rules) = defaults else {
        return defaults;
    };
    if let Some(Value::Object(given)) = given {
        let set: Map<String, Value> = given
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        rules.extend(set);
    }
    Value::Object(rules)
}
