//! batch/v1 defaults (`pkg/apis/batch/v1/defaults.go`): Job and CronJob with their pod
//! templates, and the selector and labels the Job's `PrepareForCreate` generates from
//! its uid (`pkg/registry/batch/job/strategy.go`).

use super::core::{pod_template_spec, service_account_alias};
use super::{
    child_mut, field, is_empty_collection, items_mut, ptr, set_defaults, struct_at,
    struct_value_at, FieldDefault, Lit::*,
};
use serde_json::{json, Value};

/// batch/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "Job" => job(obj),
        "CronJob" => cron_job(obj),
        _ => {}
    }
}

/// batch/v1 conversion round trip: the pod spec's `serviceAccount` alias.
pub fn round_trip(kind: &str, obj: &mut Value) {
    let at = match kind {
        "Job" => "/spec/template/spec",
        "CronJob" => "/spec/jobTemplate/spec/template/spec",
        _ => return,
    };
    service_account_alias(obj.pointer_mut(at));
}

const JOB: &[FieldDefault] = &[
    ptr("/spec/completionMode", Str("NonIndexed")),
    ptr("/spec/suspend", Bool(false)),
    ptr("/spec/manualSelector", Bool(false)),
];

const POD_CONDITIONS_PATTERN: &[FieldDefault] = &[field("/status", Str("True"))];

/// `backoffLimit` with a per-index limit: Go's `math.MaxInt32`.
const UNLIMITED_BACKOFF: i64 = i32::MAX as i64;

/// `SetDefaults_Job`.
fn job(obj: &mut Value) {
    let template_labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let unset_labels = is_empty_collection(obj.get("metadata").unwrap_or(&Value::Null), "labels");
    if let (true, Some(labels)) = (unset_labels, template_labels) {
        if let Some(meta) = struct_at(obj, "/metadata") {
            meta.insert("labels".into(), labels);
        }
    }
    set_defaults(obj, JOB);
    let Some(spec) = struct_value_at(obj, "/spec") else {
        return;
    };
    let unset = |spec: &Value, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec["completions"] = json!(1);
    }
    if unset(spec, "parallelism") {
        spec["parallelism"] = json!(1);
    }
    if unset(spec, "backoffLimit") {
        let limit = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            UNLIMITED_BACKOFF
        };
        spec["backoffLimit"] = json!(limit);
    }
    if unset(spec, "podReplacementPolicy") {
        let policy = if unset(spec, "podFailurePolicy") {
            "TerminatingOrFailed"
        } else {
            "Failed"
        };
        spec["podReplacementPolicy"] = json!(policy);
    }
    job_spec_below(spec);
}

/// What a job spec's parts get, in a Job and in a CronJob's job template.
fn job_spec_below(spec: &mut Value) {
    if let Some(policy) = child_mut(spec, "podFailurePolicy") {
        for rule in items_mut(policy, "rules") {
            for pattern in items_mut(rule, "onPodConditions") {
                set_defaults(pattern, POD_CONDITIONS_PATTERN);
            }
        }
    }
    pod_template_spec(spec, "template");
}

const CRON_JOB: &[FieldDefault] = &[
    field("/spec/concurrencyPolicy", Str("Allow")),
    ptr("/spec/suspend", Bool(false)),
    ptr("/spec/successfulJobsHistoryLimit", Int(3)),
    ptr("/spec/failedJobsHistoryLimit", Int(1)),
];

/// `SetDefaults_CronJob`; its job template gets only the pod template's defaults and
/// the pod failure policy's, not the Job's own.
fn cron_job(obj: &mut Value) {
    set_defaults(obj, CRON_JOB);
    if let Some(spec) = struct_value_at(obj, "/spec/jobTemplate/spec") {
        job_spec_below(spec);
    }
}

/// The Job's `PrepareForCreate` selector: unless `spec.manualSelector` is true, the
/// template gets the `job-name` and `controller-uid` labels (legacy and
/// `batch.kubernetes.io/` forms, a label the client set is kept) and the selector
/// matches `batch.kubernetes.io/controller-uid: <uid>`.
///
/// When the Job's labels are its template's (the defaulting copies them when the Job
/// has none), kube shares one map between the two, so they gain the same labels.
pub fn job_prepare_for_create(obj: &mut Value, uid: &str) {
    if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let template_labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    let shared = template_labels.as_ref().is_some_and(|t| {
        t.as_object().is_some_and(|m| !m.is_empty()) && obj.pointer("/metadata/labels") == Some(t)
    });
    let generated = [
        ("job-name", name.as_str()),
        ("batch.kubernetes.io/job-name", name.as_str()),
        ("controller-uid", uid),
        ("batch.kubernetes.io/controller-uid", uid),
    ];
    let mut targets = vec!["/spec/template/metadata/labels"];
    if shared {
        targets.push("/metadata/labels");
    }
    for at in targets {
        if let Some(labels) = struct_at(obj, at) {
            for (k, v) in generated {
                labels.entry(k).or_insert(json!(v));
            }
        }
    }
    if let Some(match_labels) = struct_at(obj, "/spec/selector/matchLabels") {
        match_labels
            .entry("batch.kubernetes.io/controller-uid")
            .or_insert(json!(uid));
    }
}
