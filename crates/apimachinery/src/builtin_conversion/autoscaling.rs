//! HorizontalPodAutoscalers between autoscaling/v1 and autoscaling/v2, as kube's
//! conversion (`pkg/apis/autoscaling/v1/conversion.go`) through its internal version.
//!
//! v1 has one metric field, `spec.targetCPUUtilizationPercentage` (a v2 `Resource` cpu
//! `Utilization` metric), and one status field, `currentCPUUtilizationPercentage`.
//! What else v2 holds travels in annotations of the v1 object, written as Go's
//! `encoding/json` writes them (fields in declaration order, `omitempty` honoured):
//! the other metrics and the current metrics as lists of v1's `MetricSpec` /
//! `MetricStatus`, the conditions as v1's `HorizontalPodAutoscalerCondition`s, and
//! `behavior` as kube's internal type, which has no JSON tags (`{"ScaleUp": ...}`).
//! Reading a v1 object back takes those annotations out again; one that does not
//! decode is dropped as kube drops it. v2 never shows them.

use crate::typed::{go_round_trip, go_type_error};
use serde_json::{json, Map, Value};

/// The metrics v1 has no field for: a JSON list of v1 `MetricSpec`s.
pub const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The current metrics: a JSON list of v1 `MetricStatus`es.
pub const CURRENT_METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// The conditions: a JSON list of v1 `HorizontalPodAutoscalerCondition`s.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `spec.behavior`, as kube's internal `HorizontalPodAutoscalerBehavior`.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Every annotation of the round trip (kube also drops the two tolerance annotations,
/// which no conversion writes).
const ROUND_TRIP_ANNOTATIONS: [&str; 6] = [
    METRICS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
    "autoscaling.alpha.kubernetes.io/scale-down-tolerance",
    "autoscaling.alpha.kubernetes.io/scale-up-tolerance",
    CURRENT_METRICS_ANNOTATION,
    CONDITIONS_ANNOTATION,
];

const V2_HPA: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler";
const V2_METRIC_SPEC: &str = "io.k8s.api.autoscaling.v2.MetricSpec";
const V2_METRIC_STATUS: &str = "io.k8s.api.autoscaling.v2.MetricStatus";
const V2_CONDITION: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition";
const V2_BEHAVIOR: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerBehavior";

/// An autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1 serves it.
pub fn hpa_v2_to_v1(obj: &mut Value) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    m.insert("apiVersion".into(), json!("autoscaling/v1"));
    let spec = m.remove("spec").unwrap_or(Value::Null);
    let status = m.remove("status").unwrap_or(Value::Null);
    let mut annotations = Map::new();

    let metrics = list(&spec, "metrics");
    let mut v1_spec = Map::new();
    v1_spec.insert("scaleTargetRef".into(), scale_target_ref(&spec));
    put(&mut v1_spec, "minReplicas", field(&spec, "minReplicas"));
    v1_spec.insert(
        "maxReplicas".into(),
        field(&spec, "maxReplicas").cloned().unwrap_or(json!(0)),
    );
    let cpu = metrics.iter().find(|m| is_cpu_utilization(m));
    put(
        &mut v1_spec,
        "targetCPUUtilizationPercentage",
        cpu.and_then(|m| m.pointer("/resource/target/averageUtilization")),
    );
    let other: Vec<String> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_spec_text)
        .collect();
    if !other.is_empty() {
        annotations.insert(METRICS_ANNOTATION.into(), Value::String(array_text(other)));
    }

    let current = list(&status, "currentMetrics");
    if !current.is_empty() {
        let text = array_text(current.iter().map(metric_status_text).collect());
        annotations.insert(CURRENT_METRICS_ANNOTATION.into(), Value::String(text));
    }
    if let Some(behavior) = field(&spec, "behavior") {
        annotations.insert(
            BEHAVIOR_ANNOTATION.into(),
            Value::String(behavior_text(behavior)),
        );
    }
    let conditions = list(&status, "conditions");
    if !conditions.is_empty() {
        let text = array_text(conditions.iter().map(condition_text).collect());
        annotations.insert(CONDITIONS_ANNOTATION.into(), Value::String(text));
    }

    let mut v1_status = Map::new();
    put(
        &mut v1_status,
        "observedGeneration",
        field(&status, "observedGeneration"),
    );
    put(
        &mut v1_status,
        "lastScaleTime",
        field(&status, "lastScaleTime"),
    );
    for key in ["currentReplicas", "desiredReplicas"] {
        let n = field(&status, key).cloned().unwrap_or(json!(0));
        v1_status.insert(key.into(), n);
    }
    // Every cpu utilization counts: the last one wins.
    let cpu_now = current
        .iter()
        .rev()
        .filter(|m| {
            str_at(m, "type") == "Resource" && m.pointer("/resource/name") == Some(&json!("cpu"))
        })
        .filter_map(|m| {
            m.pointer("/resource/current/averageUtilization")
                .filter(|v| !v.is_null())
        })
        .next();
    put(&mut v1_status, "currentCPUUtilizationPercentage", cpu_now);

    m.insert("spec".into(), Value::Object(v1_spec));
    m.insert("status".into(), Value::Object(v1_status));
    let _ = take_round_trip_annotations(obj);
    if !annotations.is_empty() {
        let meta = meta_mut(obj);
        let notes = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(notes) = notes.as_object_mut() {
            for (k, v) in annotations {
                notes.insert(k, v);
            }
        }
    }
}

/// An autoscaling/v1 HorizontalPodAutoscaler in its autoscaling/v2 form (kube's
/// storage version).
pub fn hpa_v1_to_v2(obj: &mut Value) {
    if !obj.is_object() {
        return;
    }
    let notes = take_round_trip_annotations(obj);
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    m.insert("apiVersion".into(), json!("autoscaling/v2"));
    let spec = m.remove("spec").unwrap_or(Value::Null);
    let status = m.remove("status").unwrap_or(Value::Null);

    let mut v2_spec = Map::new();
    v2_spec.insert("scaleTargetRef".into(), scale_target_ref(&spec));
    put(&mut v2_spec, "minReplicas", field(&spec, "minReplicas"));
    v2_spec.insert(
        "maxReplicas".into(),
        field(&spec, "maxReplicas").cloned().unwrap_or(json!(0)),
    );
    let cpu = field(&spec, "targetCPUUtilizationPercentage").map(|n| {
        json!({"type": "Resource", "resource": {"name": "cpu",
               "target": {"type": "Utilization", "averageUtilization": n}}})
    });
    let mut metrics =
        decode_list(&notes, METRICS_ANNOTATION, metric_spec_v2, V2_METRIC_SPEC).unwrap_or_default();
    metrics.extend(cpu);
    if metrics.is_empty() {
        // v1's implicit target, made explicit here (the annotation may hold others).
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization",
                       "averageUtilization": crate::builtin_defaults::autoscaling::DEFAULT_CPU_UTILIZATION}}}));
    }
    v2_spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = notes.get(BEHAVIOR_ANNOTATION).and_then(behavior_v2) {
        v2_spec.insert("behavior".into(), b);
    }

    let mut v2_status = Map::new();
    put(
        &mut v2_status,
        "observedGeneration",
        field(&status, "observedGeneration"),
    );
    put(
        &mut v2_status,
        "lastScaleTime",
        field(&status, "lastScaleTime"),
    );
    // `omitempty` in v2.
    let replicas = field(&status, "currentReplicas").filter(|n| n.as_i64() != Some(0));
    put(&mut v2_status, "currentReplicas", replicas);
    v2_status.insert(
        "desiredReplicas".into(),
        field(&status, "desiredReplicas")
            .cloned()
            .unwrap_or(json!(0)),
    );
    let cpu_now = field(&status, "currentCPUUtilizationPercentage").map(|n| {
        vec![json!({"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": n}}})]
    });
    // The annotation, when it decodes, has more than the cpu figure.
    let current = decode_list(
        &notes,
        CURRENT_METRICS_ANNOTATION,
        metric_status_v2,
        V2_METRIC_STATUS,
    )
    .or(cpu_now);
    put(
        &mut v2_status,
        "currentMetrics",
        current.map(Value::Array).as_ref(),
    );
    let conditions = decode_list(&notes, CONDITIONS_ANNOTATION, condition_v2, V2_CONDITION);
    put(
        &mut v2_status,
        "conditions",
        conditions.map(Value::Array).as_ref(),
    );

    m.insert("spec".into(), Value::Object(v2_spec));
    m.insert("status".into(), Value::Object(v2_status));
    go_round_trip(obj, V2_HPA);
}

/// Remove the round-trip annotations, returning those that are strings; an emptied
/// annotation map is removed (Go omits an empty map).
fn take_round_trip_annotations(obj: &mut Value) -> Map<String, Value> {
    let mut taken = Map::new();
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return taken;
    };
    let Some(notes) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return taken;
    };
    for key in ROUND_TRIP_ANNOTATIONS {
        if let Some(v) = notes.remove(key) {
            taken.insert(key.into(), v);
        }
    }
    if notes.is_empty() && !taken.is_empty() {
        meta.remove("annotations");
    }
    taken
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    match obj.get_mut("metadata") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A field that is set (`null` is Go's zero value: unset).
fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn list(v: &Value, key: &str) -> Vec<Value> {
    v.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn put(m: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        m.insert(key.into(), v.clone());
    }
}

fn scale_target_ref(spec: &Value) -> Value {
    field(spec, "scaleTargetRef")
        .cloned()
        .unwrap_or_else(|| json!({"kind": "", "name": ""}))
}

/// kube's test for the metric v1 keeps in `targetCPUUtilizationPercentage`.
fn is_cpu_utilization(m: &Value) -> bool {
    str_at(m, "type") == "Resource"
        && m.pointer("/resource/name").and_then(Value::as_str) == Some("cpu")
        && m.pointer("/resource/target/averageUtilization")
            .is_some_and(|v| !v.is_null())
}

// ---- Go's encoding/json, fields in declaration order --------------------------------

/// A JSON object's text with its fields in the order given (`None`: omitted).
#[derive(Default)]
struct Obj(Vec<(&'static str, String)>);

impl Obj {
    fn with(mut self, key: &'static str, text: String) -> Self {
        self.0.push((key, text));
        self
    }

    fn opt(self, key: &'static str, text: Option<String>) -> Self {
        match text {
            Some(t) => self.with(key, t),
            None => self,
        }
    }

    fn text(self) -> String {
        let fields: Vec<String> = self
            .0
            .into_iter()
            .map(|(k, v)| format!("{}:{v}", lit(&json!(k))))
            .collect();
        format!("{{{}}}", fields.join(","))
    }
}

/// A value as Go writes it: `<`, `>`, `&` and the JS line separators escaped.
fn lit(v: &Value) -> String {
    serde_json::to_string(v)
        .unwrap_or_else(|_| "null".into())
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

fn array_text(items: Vec<String>) -> String {
    format!("[{}]", items.join(","))
}

/// A string field (`""` when unset).
fn str_text(v: &Value, key: &str) -> String {
    lit(&json!(str_at(v, key)))
}

/// An `omitempty` string field.
fn opt_str_text(v: &Value, key: &str) -> Option<String> {
    Some(str_at(v, key))
        .filter(|s| !s.is_empty())
        .map(|s| lit(&json!(s)))
}

/// A `resource.Quantity` (always a string in JSON).
fn quantity_text(v: &Value) -> String {
    match v {
        Value::String(_) => lit(v),
        other => lit(&json!(other.to_string())),
    }
}

fn opt_quantity(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(quantity_text)
}

/// A quantity field that is not a pointer: `"0"` when unset.
fn quantity_or_zero(v: Option<&Value>) -> String {
    opt_quantity(v).unwrap_or_else(|| "\"0\"".into())
}

fn opt_lit(v: Option<&Value>) -> Option<String> {
    v.filter(|v| !v.is_null()).map(lit)
}

/// A `metav1.LabelSelector` (`omitempty` throughout).
fn selector_text(v: Option<&Value>) -> Option<String> {
    let v = v.filter(|v| v.is_object())?;
    let labels = v
        .get("matchLabels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .map(lit);
    let exprs = v
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| {
            array_text(
                a.iter()
                    .map(|e| {
                        let values = e
                            .get("values")
                            .filter(|x| x.as_array().is_some_and(|a| !a.is_empty()))
                            .map(lit);
                        Obj::default()
                            .with("key", str_text(e, "key"))
                            .with("operator", str_text(e, "operator"))
                            .opt("values", values)
                            .text()
                    })
                    .collect(),
            )
        });
    Some(
        Obj::default()
            .opt("matchLabels", labels)
            .opt("matchExpressions", exprs)
            .text(),
    )
}

/// v1's `CrossVersionObjectReference`.
fn reference_text(v: Option<&Value>) -> String {
    let v = v.unwrap_or(&Value::Null);
    Obj::default()
        .with("kind", str_text(v, "kind"))
        .with("name", str_text(v, "name"))
        .opt("apiVersion", opt_str_text(v, "apiVersion"))
        .text()
}

fn ptr<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    v.pointer(path).filter(|x| !x.is_null())
}

/// A v2 `MetricSpec` as v1's `MetricSpec`.
fn metric_spec_text(m: &Value) -> String {
    let object = field(m, "object").map(|o| {
        Obj::default()
            .with("target", reference_text(field(o, "describedObject")))
            .with(
                "metricName",
                lit(&json!(ptr(o, "/metric/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""))),
            )
            .with("targetValue", quantity_or_zero(ptr(o, "/target/value")))
            .opt("selector", selector_text(ptr(o, "/metric/selector")))
            .opt("averageValue", opt_quantity(ptr(o, "/target/averageValue")))
            .text()
    });
    let pods = field(m, "pods").map(|p| {
        Obj::default()
            .with(
                "metricName",
                lit(&json!(ptr(p, "/metric/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""))),
            )
            .with(
                "targetAverageValue",
                quantity_or_zero(ptr(p, "/target/averageValue")),
            )
            .opt("selector", selector_text(ptr(p, "/metric/selector")))
            .text()
    });
    let resource = field(m, "resource").map(|r| {
        Obj::default()
            .with("name", str_text(r, "name"))
            .opt(
                "targetAverageUtilization",
                opt_lit(ptr(r, "/target/averageUtilization")),
            )
            .opt(
                "targetAverageValue",
                opt_quantity(ptr(r, "/target/averageValue")),
            )
            .text()
    });
    let container = field(m, "containerResource").map(|r| {
        Obj::default()
            .with("name", str_text(r, "name"))
            .opt(
                "targetAverageUtilization",
                opt_lit(ptr(r, "/target/averageUtilization")),
            )
            .opt(
                "targetAverageValue",
                opt_quantity(ptr(r, "/target/averageValue")),
            )
            .with("container", str_text(r, "container"))
            .text()
    });
    let external = field(m, "external").map(|e| {
        Obj::default()
            .with(
                "metricName",
                lit(&json!(ptr(e, "/metric/name")
                    .and_then(Value::as_str)
                    .unwrap_or(""))),
            )
            .opt("metricSelector", selector_text(ptr(e, "/metric/selector")))
            .opt("targetValue", opt_quantity(ptr(e, "/target/value")))
            .opt(
                "targetAverageValue",
                opt_quantity(ptr(e, "/target/averageValue")),
            )
            .text()
    });
    Obj::default()
        .with("type", str_text(m, "type"))
        .opt("object", object)
        .opt("pods", pods)
        .opt("resource", resource)
        .opt("containerResource", container)
        .opt("external", external)
        .text()
}

/// A v2 `MetricStatus` as v1's `MetricStatus`.
fn metric_status_text(m: &Value) -> String {
    let name_of = |v: &Value| {
        lit(&json!(ptr(v, "/metric/name")
            .and_then(Value::as_str)
            .unwrap_or("")))
    };
    let object = field(m, "object").map(|o| {
        Obj::default()
            .with("target", reference_text(field(o, "describedObject")))
            .with("metricName", name_of(o))
            .with("currentValue", quantity_or_zero(ptr(o, "/current/value")))
            .opt("selector", selector_text(ptr(o, "/metric/selector")))
            .opt(
                "averageValue",
                opt_quantity(ptr(o, "/current/averageValue")),
            )
            .text()
    });
    let pods = field(m, "pods").map(|p| {
        Obj::default()
            .with("metricName", name_of(p))
            .with(
                "currentAverageValue",
                quantity_or_zero(ptr(p, "/current/averageValue")),
            )
            .opt("selector", selector_text(ptr(p, "/metric/selector")))
            .text()
    });
    let resource = field(m, "resource").map(|r| {
        Obj::default()
            .with("name", str_text(r, "name"))
            .opt(
                "currentAverageUtilization",
                opt_lit(ptr(r, "/current/averageUtilization")),
            )
            .with(
                "currentAverageValue",
                quantity_or_zero(ptr(r, "/current/averageValue")),
            )
            .text()
    });
    let container = field(m, "containerResource").map(|r| {
        Obj::default()
            .with("name", str_text(r, "name"))
            .opt(
                "currentAverageUtilization",
                opt_lit(ptr(r, "/current/averageUtilization")),
            )
            .with(
                "currentAverageValue",
                quantity_or_zero(ptr(r, "/current/averageValue")),
            )
            .with("container", str_text(r, "container"))
            .text()
    });
    let external = field(m, "external").map(|e| {
        Obj::default()
            .with("metricName", name_of(e))
            .opt("metricSelector", selector_text(ptr(e, "/metric/selector")))
            .with("currentValue", quantity_or_zero(ptr(e, "/current/value")))
            .opt(
                "currentAverageValue",
                opt_quantity(ptr(e, "/current/averageValue")),
            )
            .text()
    });
    Obj::default()
        .with("type", str_text(m, "type"))
        .opt("object", object)
        .opt("pods", pods)
        .opt("resource", resource)
        .opt("containerResource", container)
        .opt("external", external)
        .text()
}

/// A v2 condition as v1's (`lastTransitionTime` is a struct: `null` when unset).
fn condition_text(c: &Value) -> String {
    Obj::default()
        .with("type", str_text(c, "type"))
        .with("status", str_text(c, "status"))
        .with(
            "lastTransitionTime",
            opt_lit(field(c, "lastTransitionTime")).unwrap_or_else(|| "null".into()),
        )
        .opt("reason", opt_str_text(c, "reason"))
        .opt("message", opt_str_text(c, "message"))
        .text()
}

/// `spec.behavior` as kube's internal type encodes: Go's field names, `null` pointers.
fn behavior_text(b: &Value) -> String {
    let rules = |r: Option<&Value>| {
        let Some(r) = r else {
            return "null".to_string();
        };
        let policies = r.get("policies").and_then(Value::as_array).map(|ps| {
            array_text(
                ps.iter()
                    .map(|p| {
                        Obj::default()
                            .with("Type", str_text(p, "type"))
                            .with(
                                "Value",
                                opt_lit(field(p, "value")).unwrap_or_else(|| "0".into()),
                            )
                            .with(
                                "PeriodSeconds",
                                opt_lit(field(p, "periodSeconds")).unwrap_or_else(|| "0".into()),
                            )
                            .text()
                    })
                    .collect(),
            )
        });
        let null = || "null".to_string();
        Obj::default()
            .with(
                "StabilizationWindowSeconds",
                opt_lit(field(r, "stabilizationWindowSeconds")).unwrap_or_else(null),
            )
            .with(
                "SelectPolicy",
                opt_lit(field(r, "selectPolicy")).unwrap_or_else(null),
            )
            .with("Policies", policies.unwrap_or_else(null))
            .with(
                "Tolerance",
                opt_quantity(field(r, "tolerance")).unwrap_or_else(null),
            )
            .text()
    };
    Obj::default()
        .with("ScaleUp", rules(field(b, "scaleUp")))
        .with("ScaleDown", rules(field(b, "scaleDown")))
        .text()
}

// ---- decoding the annotations --------------------------------------------------------

/// The items of annotation `key` (a JSON list) converted by `convert`, or `None` when
/// it is absent or does not decode (an item that is not an object, or whose converted
/// form has a field of the wrong type: Go's decoder fails the whole list).
fn decode_list(
    notes: &Map<String, Value>,
    key: &str,
    convert: fn(&Value) -> Value,
    definition: &str,
) -> Option<Vec<Value>> {
    let text = notes.get(key)?.as_str()?;
    let Ok(Value::Array(items)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    items
        .iter()
        .map(|item| {
            let item = fold_keys(item, V1_FIELDS);
            if !item.is_object() {
                return None;
            }
            let out = convert(&item);
            go_type_error(&out, definition).is_none().then_some(out)
        })
        .collect()
}

/// The JSON names of v1's metric and condition fields: Go's decoder matches keys
/// without regard to case.
const V1_FIELDS: &[&str] = &[
    "type",
    "object",
    "pods",
    "resource",
    "containerResource",
    "external",
    "target",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "kind",
    "name",
    "apiVersion",
    "metricName",
    "targetValue",
    "selector",
    "averageValue",
    "targetAverageValue",
    "targetAverageUtilization",
    "container",
    "metricSelector",
    "currentValue",
    "currentAverageValue",
    "currentAverageUtilization",
    "status",
    "lastTransitionTime",
    "reason",
    "message",
];

/// `v` with each key that matches one of `names` but for case renamed to it (labels
/// inside selectors included: a harmless widening of Go's rule).
fn fold_keys(v: &Value, names: &[&str]) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let exact = names.contains(&k.as_str());
                let name = if exact {
                    k.clone()
                } else {
                    names
                        .iter()
                        .find(|n| n.eq_ignore_ascii_case(k))
                        .map(|n| n.to_string())
                        .unwrap_or_else(|| k.clone())
                };
                // Go keeps the last of keys that fold together; an exact key wins ties.
                if exact || !out.contains_key(&name) {
                    // Label keys are data, not field names.
                    let x = if name == "matchLabels" {
                        x.clone()
                    } else {
                        fold_keys(x, names)
                    };
                    out.insert(name, x);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| fold_keys(x, names)).collect()),
        other => other.clone(),
    }
}

fn insert(m: &mut Map<String, Value>, key: &str, v: Option<&Value>) {
    put(m, key, v);
}

fn metric_identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), name.cloned().unwrap_or(json!("")));
    insert(&mut m, "selector", selector);
    Value::Object(m)
}

fn target(
    kind: &str,
    value: Option<&Value>,
    average: Option<&Value>,
    util: Option<&Value>,
) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(kind));
    insert(&mut m, "value", value);
    insert(&mut m, "averageValue", average);
    insert(&mut m, "averageUtilization", util);
    Value::Object(m)
}

/// Whether a quantity is zero (`0`, `0m`, `0.0Ki`, ...).
fn is_zero_quantity(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => {
            let digits = s.trim_start_matches(['+', '-']);
            let mantissa: String = digits
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            !mantissa.is_empty() && mantissa.chars().all(|c| c == '0' || c == '.')
        }
        _ => true,
    }
}

/// A v1 `MetricSpec` (from the annotation) as v2's.
fn metric_spec_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(o) = field(m, "object") {
        let average = field(o, "averageValue");
        let value = field(o, "targetValue").cloned().unwrap_or(json!("0"));
        let (kind, value) = match average {
            None => ("Value", Some(value)),
            // A zero value v1 cannot omit is not kept beside an average.
            Some(_) => ("AverageValue", Some(value).filter(|v| !is_zero_quantity(v))),
        };
        out.insert(
            "object".into(),
            json!({
                "describedObject": field(o, "target").cloned().unwrap_or(json!({"kind": "", "name": ""})),
                "target": target(kind, value.as_ref(), average, None),
                "metric": metric_identifier(field(o, "metricName"), field(o, "selector")),
            }),
        );
    }
    if let Some(p) = field(m, "pods") {
        let average = field(p, "targetAverageValue")
            .cloned()
            .unwrap_or(json!("0"));
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(field(p, "metricName"), field(p, "selector")),
                "target": target("AverageValue", None, Some(&average), None),
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = field(m, key) {
            let util = field(r, "targetAverageUtilization");
            let kind = if util.is_some() {
                "Utilization"
            } else {
                "AverageValue"
            };
            let mut v = Map::new();
            v.insert("name".into(), r.get("name").cloned().unwrap_or(json!("")));
            v.insert(
                "target".into(),
                target(kind, None, field(r, "targetAverageValue"), util),
            );
            if key == "containerResource" {
                v.insert(
                    "container".into(),
                    r.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = field(m, "external") {
        let value = field(e, "targetValue");
        let kind = if value.is_some() {
            "Value"
        } else {
            "AverageValue"
        };
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(field(e, "metricName"), field(e, "metricSelector")),
                "target": target(kind, value, field(e, "targetAverageValue"), None),
            }),
        );
    }
    Value::Object(out)
}

fn current(value: Option<&Value>, average: Option<&Value>, util: Option<&Value>) -> Value {
    let mut m = Map::new();
    insert(&mut m, "value", value);
    insert(&mut m, "averageValue", average);
    insert(&mut m, "averageUtilization", util);
    Value::Object(m)
}

/// A v1 `MetricStatus` (from the annotation) as v2's.
fn metric_status_v2(m: &Value) -> Value {
    let zero = json!("0");
    let or_zero = |v: Option<&Value>| v.cloned().unwrap_or_else(|| zero.clone());
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(o) = field(m, "object") {
        let value = or_zero(field(o, "currentValue"));
        out.insert(
            "object".into(),
            json!({
                "metric": metric_identifier(field(o, "metricName"), field(o, "selector")),
                "current": current(Some(&value), field(o, "averageValue"), None),
                "describedObject": field(o, "target").cloned().unwrap_or(json!({"kind": "", "name": ""})),
            }),
        );
    }
    if let Some(p) = field(m, "pods") {
        let average = or_zero(field(p, "currentAverageValue"));
        out.insert(
            "pods".into(),
            json!({
                "metric": metric_identifier(field(p, "metricName"), field(p, "selector")),
                "current": current(None, Some(&average), None),
            }),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(r) = field(m, key) {
            let average = or_zero(field(r, "currentAverageValue"));
            let mut v = Map::new();
            v.insert("name".into(), r.get("name").cloned().unwrap_or(json!("")));
            v.insert(
                "current".into(),
                current(None, Some(&average), field(r, "currentAverageUtilization")),
            );
            if key == "containerResource" {
                v.insert(
                    "container".into(),
                    r.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(v));
        }
    }
    if let Some(e) = field(m, "external") {
        let value = or_zero(field(e, "currentValue"));
        out.insert(
            "external".into(),
            json!({
                "metric": metric_identifier(field(e, "metricName"), field(e, "metricSelector")),
                "current": current(Some(&value), field(e, "currentAverageValue"), None),
            }),
        );
    }
    Value::Object(out)
}

/// A v1 condition (from the annotation) as v2's: the same fields.
fn condition_v2(c: &Value) -> Value {
    let mut out = Map::new();
    for key in ["type", "status"] {
        out.insert(key.into(), c.get(key).cloned().unwrap_or(json!("")));
    }
    for key in ["lastTransitionTime", "reason", "message"] {
        insert(&mut out, key, field(c, key));
    }
    Value::Object(out)
}

/// The behavior annotation (kube's internal type, matched without regard to case) as
/// v2's `behavior`; `None` when it does not decode or holds neither direction.
fn behavior_v2(text: &Value) -> Option<Value> {
    const NAMES: &[&str] = &[
        "scaleUp",
        "scaleDown",
        "stabilizationWindowSeconds",
        "selectPolicy",
        "policies",
        "tolerance",
        "type",
        "value",
        "periodSeconds",
    ];
    let parsed: Value = serde_json::from_str(text.as_str()?).ok()?;
    let folded = fold_keys(&parsed, NAMES);
    let Value::Object(b) = folded else {
        return None;
    };
    let mut out = Map::new();
    for key in ["scaleUp", "scaleDown"] {
        match b.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Object(r)) => {
                let rules: Map<String, Value> = r
                    .iter()
                    .filter(|(k, v)| NAMES.contains(&k.as_str()) && !v.is_null())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                out.insert(key.into(), Value::Object(rules));
            }
            Some(_) => return None,
        }
    }
    let out = Value::Object(out);
    (out.as_object().is_some_and(|m| !m.is_empty()) && go_type_error(&out, V2_BEHAVIOR).is_none())
        .then_some(out)
}

#[cfg(test)]
mod tests;
