//! apps/v1 defaults (`pkg/apis/apps/v1/defaults.go`): Deployment, StatefulSet,
//! DaemonSet, ReplicaSet, each with its pod template; the DaemonSet's template
//! generation of `PrepareForCreate`.
//!
//! StatefulSet `rollingUpdate.maxUnavailable` is defaulted only with the feature
//! MaxUnavailableStatefulSet, off by default in v1.36: not defaulted here.

use super::core::{persistent_volume_claim, pod_template_spec, service_account_alias};
use super::{
    child_mut, field, items_mut, ptr, set_defaults, str_of, struct_at, struct_value_at,
    FieldDefault, Lit::*,
};
use serde_json::{json, Value};

/// apps/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    let table = match kind {
        "Deployment" => DEPLOYMENT,
        "StatefulSet" => STATEFUL_SET,
        "DaemonSet" => DAEMON_SET,
        "ReplicaSet" => REPLICA_SET,
        _ => return,
    };
    set_defaults(obj, table);
    match kind {
        "Deployment" => rolling_update(obj, "/spec/strategy", DEPLOYMENT_ROLLING_UPDATE),
        "DaemonSet" => rolling_update(obj, "/spec/updateStrategy", DAEMON_SET_ROLLING_UPDATE),
        "StatefulSet" => stateful_set(obj),
        _ => {}
    }
    if let Some(spec) = struct_value_at(obj, "/spec") {
        pod_template_spec(spec, "template");
    }
}

/// apps/v1 conversion round trip: the template's `serviceAccount` alias; a
/// StatefulSet's claim templates carry their `apiVersion` and `kind` (kube's behaviour
/// since 1.17).
pub fn round_trip(kind: &str, obj: &mut Value) {
    if !matches!(
        kind,
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet"
    ) {
        return;
    }
    service_account_alias(obj.pointer_mut("/spec/template/spec"));
    if kind == "DaemonSet" {
        // kube's internal DaemonSet holds the template generation as a field, written
        // back as the annotation (0 when it was not set) whenever it is served.
        match template_generation(obj) {
            Some(Some(g)) => set_template_generation(obj, g),
            Some(None) => {}
            None => set_template_generation(obj, 0),
        }
    }
    if kind != "StatefulSet" {
        return;
    }
    if let Some(spec) = obj.get_mut("spec") {
        for claim in items_mut(spec, "volumeClaimTemplates") {
            if claim.is_object() {
                claim["apiVersion"] = json!("v1");
                claim["kind"] = json!("PersistentVolumeClaim");
            }
        }
    }
}

const DEPLOYMENT: &[FieldDefault] = &[
    ptr("/spec/replicas", Int(1)),
    field("/spec/strategy/type", Str("RollingUpdate")),
    ptr("/spec/revisionHistoryLimit", Int(10)),
    ptr("/spec/progressDeadlineSeconds", Int(600)),
];

const DEPLOYMENT_ROLLING_UPDATE: &[FieldDefault] = &[
    ptr("/maxUnavailable", Str("25%")),
    ptr("/maxSurge", Str("25%")),
];

const DAEMON_SET: &[FieldDefault] = &[
    field("/spec/updateStrategy/type", Str("RollingUpdate")),
    ptr("/spec/revisionHistoryLimit", Int(10)),
];

const DAEMON_SET_ROLLING_UPDATE: &[FieldDefault] =
    &[ptr("/maxUnavailable", Int(1)), ptr("/maxSurge", Int(0))];

const REPLICA_SET: &[FieldDefault] = &[ptr("/spec/replicas", Int(1))];

const STATEFUL_SET: &[FieldDefault] = &[
    field("/spec/podManagementPolicy", Str("OrderedReady")),
    field(
        "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
        Str("Retain"),
    ),
    field(
        "/spec/persistentVolumeClaimRetentionPolicy/whenScaled",
        Str("Retain"),
    ),
    ptr("/spec/replicas", Int(1)),
    ptr("/spec/revisionHistoryLimit", Int(10)),
];

/// A `RollingUpdate` strategy at `at` gets its `rollingUpdate` parameters.
fn rolling_update(obj: &mut Value, at: &str, table: &[FieldDefault]) {
    let Some(strategy) = obj.pointer_mut(at) else {
        return;
    };
    if str_of(strategy, "type") != "RollingUpdate" {
        return;
    }
    if strategy.get("rollingUpdate").is_none_or(Value::is_null) {
        strategy["rollingUpdate"] = json!({});
    }
    if let Some(ru) = child_mut(strategy, "rollingUpdate") {
        set_defaults(ru, table);
    }
}

/// `SetDefaults_StatefulSet` beyond its table: an unset update strategy becomes
/// `RollingUpdate` with partition 0 (a `RollingUpdate` the client named gets the
/// partition only with `rollingUpdate` given), and the claim templates' defaults.
fn stateful_set(obj: &mut Value) {
    let Some(strategy) = struct_at(obj, "/spec/updateStrategy") else {
        return;
    };
    if strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        strategy.insert("type".into(), json!("RollingUpdate"));
        if strategy.get("rollingUpdate").is_none_or(Value::is_null) {
            strategy.insert("rollingUpdate".into(), json!({}));
        }
    }
    let rolling = strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate");
    if let Some(ru) = strategy
        .get_mut("rollingUpdate")
        .filter(|r| rolling && r.is_object())
    {
        set_defaults(ru, &[ptr("/partition", Int(0))]);
    }
    if let Some(spec) = obj.get_mut("spec") {
        for claim in items_mut(spec, "volumeClaimTemplates") {
            persistent_volume_claim(claim);
        }
    }
}

/// The annotation a DaemonSet's template generation is served as.
const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// A DaemonSet's template generation: `None` without the annotation, `Some(None)`
/// when it is not a number (kube's decoding refuses those).
pub fn template_generation(obj: &Value) -> Option<Option<i64>> {
    let value = obj
        .pointer("/metadata/annotations")?
        .get(TEMPLATE_GENERATION)?;
    Some(value.as_str().and_then(|v| v.parse().ok()))
}

fn set_template_generation(obj: &mut Value, generation: i64) {
    if let Some(annotations) = struct_at(obj, "/metadata/annotations") {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// The DaemonSet's `PrepareForCreate`: its template generation starts at 1, served as
/// the `deprecated.daemonset.template.generation` annotation.
pub fn daemon_set_prepare_for_create(obj: &mut Value) {
    match template_generation(obj) {
        Some(None) => {}
        Some(Some(g)) if g >= 1 => {}
        _ => set_template_generation(obj, 1),
    }
}

/// The DaemonSet's `PrepareForUpdate`: the template generation is the server's, one
/// more when the pod template changed.
pub fn daemon_set_prepare_for_update(new: &mut Value, old: &Value) {
    let mut generation = template_generation(old).flatten().unwrap_or(0);
    if new.pointer("/spec/template") != old.pointer("/spec/template") {
        generation += 1;
    }
    set_template_generation(new, generation);
}
