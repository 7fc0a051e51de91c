//! Worked examples, derived by hand from kube's `pkg/apis/autoscaling/v1/conversion.go`
//! and the JSON tags of `k8s.io/api/autoscaling/v1` (and the tag-less internal
//! `HorizontalPodAutoscalerBehavior`).

use super::*;

fn v2_hpa() -> Value {
    json!({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {"team": "a"}},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 60}}},
                {"type": "Pods", "pods": {"metric": {"name": "packets-per-second"},
                    "target": {"type": "AverageValue", "averageValue": "1k"}}},
                {"type": "Resource", "resource": {"name": "memory",
                    "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
            ],
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Min",
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}},
        },
        "status": {
            "currentReplicas": 3, "desiredReplicas": 4,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": 55, "averageValue": "110m"}}}],
            "conditions": [{"type": "AbleToScale", "status": "True",
                "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "ReadyForNewScale"}],
        },
    })
}

fn v1_hpa() -> Value {
    json!({
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": "default", "annotations": {
            "team": "a",
            "autoscaling.alpha.kubernetes.io/metrics":
                r#"[{"type":"Pods","pods":{"metricName":"packets-per-second","targetAverageValue":"1k"}},{"type":"Resource","resource":{"name":"memory","targetAverageValue":"500Mi"}}]"#,
            "autoscaling.alpha.kubernetes.io/current-metrics":
                r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":55,"currentAverageValue":"110m"}}]"#,
            "autoscaling.alpha.kubernetes.io/behavior":
                r#"{"ScaleUp":null,"ScaleDown":{"StabilizationWindowSeconds":300,"SelectPolicy":"Min","Policies":[{"Type":"Pods","Value":1,"PeriodSeconds":60}],"Tolerance":null}}"#,
            "autoscaling.alpha.kubernetes.io/conditions":
                r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"ReadyForNewScale"}]"#,
        }},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 10, "targetCPUUtilizationPercentage": 60,
        },
        "status": {"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 55},
    })
}

#[test]
fn v2_reads_as_v1_with_the_rest_in_annotations() {
    let mut obj = v2_hpa();
    hpa_v2_to_v1(&mut obj);
    assert_eq!(obj, v1_hpa());
}

#[test]
fn v1_with_annotations_converts_back_other_metrics_first() {
    let mut obj = v1_hpa();
    hpa_v1_to_v2(&mut obj);
    let mut want = v2_hpa();
    // The CPU target comes after the annotation's metrics.
    let metrics = want["spec"]["metrics"].as_array_mut().expect("metrics");
    let cpu = metrics.remove(0);
    metrics.push(cpu);
    assert_eq!(obj, want);
}

#[test]
fn a_bare_v1_object_targets_80_percent_cpu() {
    let mut obj = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "x"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 3},
        "status": {"currentReplicas": 0, "desiredReplicas": 0}});
    hpa_v1_to_v2(&mut obj);
    assert_eq!(obj["apiVersion"], "autoscaling/v2");
    assert_eq!(
        obj["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    // v2 writes `currentMetrics` without `omitempty`.
    assert_eq!(
        obj["status"],
        json!({"currentMetrics": null, "desiredReplicas": 0})
    );
    hpa_v2_to_v1(&mut obj);
    assert_eq!(obj["spec"]["targetCPUUtilizationPercentage"], 80);
    assert_eq!(
        obj["status"],
        json!({"currentReplicas": 0, "desiredReplicas": 0})
    );
    assert!(obj["metadata"].get("annotations").is_none(), "{obj}");
}

#[test]
fn object_and_external_targets_pick_their_type_from_what_is_set() {
    let mut obj = json!({"apiVersion": "autoscaling/v1", "metadata": {"annotations": {
        METRICS_ANNOTATION: r#"[
          {"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"0","averageValue":"2"}},
          {"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"5"}},
          {"type":"External","external":{"metricName":"queue","targetValue":"30"}},
          {"type":"External","external":{"metricName":"queue","targetAverageValue":"3"}}]"#}},
        "spec": {"maxReplicas": 2}});
    hpa_v1_to_v2(&mut obj);
    let targets: Vec<&Value> = obj["spec"]["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| {
            m.pointer("/object/target")
                .or(m.pointer("/external/target"))
                .expect("target")
        })
        .collect();
    assert_eq!(
        targets,
        [
            &json!({"type": "AverageValue", "averageValue": "2"}),
            &json!({"type": "Value", "value": "5"}),
            &json!({"type": "Value", "value": "30"}),
            &json!({"type": "AverageValue", "averageValue": "3"}),
        ]
    );
    // Back in v1, a value the v1 type cannot omit is written as "0".
    hpa_v2_to_v1(&mut obj);
    let text = obj["metadata"]["annotations"][METRICS_ANNOTATION]
        .as_str()
        .expect("metrics");
    assert!(
        text.starts_with(r#"[{"type":"Object","object":{"target":{"kind":"Service","name":"s"},"metricName":"rps","targetValue":"0","averageValue":"2"}}"#),
        "{text}"
    );
}

#[test]
fn annotations_that_do_not_decode_are_dropped() {
    let mut obj = json!({"apiVersion": "autoscaling/v1", "metadata": {"annotations": {
        METRICS_ANNOTATION: "not json",
        BEHAVIOR_ANNOTATION: r#"{"ScaleUp": 5}"#,
        CONDITIONS_ANNOTATION: r#"[{"type": 1}]"#}},
        "spec": {"maxReplicas": 2, "targetCPUUtilizationPercentage": 50}});
    hpa_v1_to_v2(&mut obj);
    assert!(obj["metadata"].get("annotations").is_none(), "{obj}");
    assert_eq!(obj["spec"]["metrics"].as_array().map(Vec::len), Some(1));
    assert!(obj["spec"].get("behavior").is_none());
    assert!(obj["status"].get("conditions").is_none());
}

#[test]
fn behavior_keys_match_without_regard_to_case() {
    let mut obj = json!({"apiVersion": "autoscaling/v1", "metadata": {"annotations": {
        BEHAVIOR_ANNOTATION: r#"{"scaleUp":{"selectPolicy":"Disabled","tolerance":"50m"}}"#}},
        "spec": {"maxReplicas": 2}});
    hpa_v1_to_v2(&mut obj);
    assert_eq!(
        obj["spec"]["behavior"],
        json!({"scaleUp": {"selectPolicy": "Disabled", "tolerance": "50m"}})
    );
    hpa_v2_to_v1(&mut obj);
    assert_eq!(
        obj["metadata"]["annotations"][BEHAVIOR_ANNOTATION],
        r#"{"ScaleUp":{"StabilizationWindowSeconds":null,"SelectPolicy":"Disabled","Policies":null,"Tolerance":"50m"},"ScaleDown":null}"#
    );
}

#[test]
fn go_escapes_html_characters_in_annotation_text() {
    let mut obj = v2_hpa();
    obj["status"]["conditions"][0]["message"] = json!("a < b & c");
    hpa_v2_to_v1(&mut obj);
    let text = obj["metadata"]["annotations"][CONDITIONS_ANNOTATION]
        .as_str()
        .expect("text");
    assert!(
        text.contains(r#""message":"a \u003c b \u0026 c""#),
        "{text}"
    );
}

#[test]
fn converting_to_the_version_an_object_has_changes_nothing() {
    let mut obj = v2_hpa();
    super::super::convert("autoscaling", "HorizontalPodAutoscaler", "v2", &mut obj);
    assert_eq!(obj, v2_hpa());
    let mut obj = v2_hpa();
    super::super::convert("autoscaling", "HorizontalPodAutoscaler", "v1", &mut obj);
    assert_eq!(obj, v1_hpa());
}

#[test]
fn the_last_cpu_utilization_is_v1s_current_figure() {
    let cpu = |n: i64| {
        json!({"type": "Resource", "resource": {"name": "cpu",
        "current": {"averageUtilization": n}}})
    };
    let mut obj = json!({"apiVersion": "autoscaling/v2", "spec": {"maxReplicas": 2},
        "status": {"currentMetrics": [cpu(10), cpu(20)]}});
    hpa_v2_to_v1(&mut obj);
    assert_eq!(obj["status"]["currentCPUUtilizationPercentage"], 20);
}
