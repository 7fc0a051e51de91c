//! The batch group: Job and CronJob.

use super::core::{one_of, pod_template_spec};
use super::cron::{is_time_zone, parse_standard};
use super::*;
use crate::field::BadValue;
use crate::goformat::go_json;

/// Validate a new batch object.
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    match kind {
        "Job" => job(obj),
        "CronJob" => {
            let mut errs = cron_job_spec(value_at(obj, "spec"), None, &Path::new("spec"));
            let name = str_at(value_at(obj, "metadata"), "name");
            if name.len() > 52 {
                errs.push(Error::invalid(
                    &Path::new("metadata").child("name"),
                    Value::from(name),
                    "must be no more than 52 characters",
                ));
            }
            errs
        }
        _ => ErrorList::new(),
    }
}

/// Validate an update of a batch object.
pub fn validate_update(kind: &str, new: &Value, old: &Value) -> ErrorList {
    match kind {
        "Job" => job_spec_update(value_at(new, "spec"), value_at(old, "spec")),
        "CronJob" => {
            let old_spec = value_at(old, "spec");
            cron_job_spec(value_at(new, "spec"), Some(old_spec), &Path::new("spec"))
        }
        _ => ErrorList::new(),
    }
}

/// `ValidateJob` without `ObjectMeta`: the generated selector's labels, the spec, and
/// the indexed pods' host names.
pub fn job(obj: &Value) -> ErrorList {
    let meta = value_at(obj, "metadata");
    let spec = value_at(obj, "spec");
    let mut errs = generated_selector(meta, spec);
    errs.extend(job_spec(spec, &Path::new("spec")));
    if opt_str(spec, "completionMode") == Some("Indexed") {
        if let Some(completions) = opt_int(spec, "completions").filter(|c| *c > 0) {
            let name = str_at(meta, "name");
            let host = format!("{name}-{}", completions - 1);
            if !validate_dns1123_label(&host).is_empty() {
                errs.push(Error::invalid(
                    &Path::new("metadata").child("name"),
                    Value::from(name),
                    format!("will not able to create pod with invalid DNS label: {host}"),
                ));
            }
        }
    }
    errs
}

/// `validateGeneratedSelector`: unless `manualSelector`, the template carries the
/// controller's labels and the selector selects them.
fn generated_selector(meta: &Value, spec: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return errs;
    }
    let Some(selector) = spec.get("selector").filter(|s| !s.is_null()) else {
        return errs;
    };
    let uid = str_at(meta, "uid");
    let name = str_at(meta, "name");
    if uid.is_empty() {
        errs.push(Error::required(&Path::new("metadata").child("uid"), ""));
    }
    let template_meta = value_at(value_at(spec, "template"), "metadata");
    let labels_path = Path::new("spec").child("template").child("metadata");
    let wanted = [
        ("controller-uid", uid),
        ("job-name", name),
        ("batch.kubernetes.io/controller-uid", uid),
        ("batch.kubernetes.io/job-name", name),
    ];
    let have = string_map(template_meta, "labels");
    for (key, value) in wanted {
        let p = labels_path.child("labels");
        match have.iter().find(|(k, _)| *k == key) {
            None => errs.push(Error::required(&p.key(key), format!("must be '{value}'"))),
            Some((_, v)) if *v != value => errs.push(Error::invalid(
                &p.key(key),
                value_at(template_meta, "labels").clone(),
                format!("must be '{value}'"),
            )),
            _ => {}
        }
    }
    let expected: Map<String, Value> = wanted
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    if let Ok(sel) = crate::selector::labels::from_label_selector_json(selector) {
        if !sel.matches(&expected) {
            errs.push(Error::invalid(
                &Path::new("spec").child("selector"),
                selector.clone(),
                "`selector` not auto-generated",
            ));
        }
    }
    errs
}

/// `ValidateJobSpec`: the spec, a required selector matching the template.
pub fn job_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = job_spec_common(spec, path);
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => errs.push(Error::required(&path.child("selector"), "")),
        Some(selector) => errs.extend(label_selector(selector, &path.child("selector"))),
    }
    let template_meta = value_at(value_at(spec, "template"), "metadata");
    if selector_matches(value_at(spec, "selector"), template_meta, "labels") == Some(false) {
        errs.push(Error::invalid(
            &path.child("template").child("metadata").child("labels"),
            value_at(template_meta, "labels").clone(),
            "`selector` does not match template `labels`",
        ));
    }
    errs
}

/// `validateJobSpec` (pod failure and success policies are checked for their modes,
/// not rule by rule).
fn job_spec_common(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(v) = opt_int(spec, key) {
            errs.extend(nonnegative(v, &path.child(key)));
        }
    }
    let max_failed = opt_int(spec, "maxFailedIndexes");
    let per_index = opt_int(spec, "backoffLimitPerIndex");
    if max_failed.is_some() && per_index.is_none() {
        errs.push(Error::required(
            &path.child("backoffLimitPerIndex"),
            "when maxFailedIndexes is specified",
        ));
    }
    if let Some(managed_by) = opt_str(spec, "managedBy") {
        if managed_by.len() > 63 {
            errs.push(Error::too_long_characters(&path.child("managedBy"), 63));
        }
    }
    let mode = opt_str(spec, "completionMode");
    let completions = opt_int(spec, "completions");
    let parallelism = opt_int(spec, "parallelism");
    if let Some(mode) = mode {
        if mode != "NonIndexed" && mode != "Indexed" {
            errs.push(Error::not_supported(
                &path.child("completionMode"),
                Value::from(mode),
                &["NonIndexed", "Indexed"],
            ));
        }
        if mode == "Indexed" {
            if completions.is_none() {
                errs.push(Error::required(
                    &path.child("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = parallelism.filter(|p| *p > 100_000) {
                errs.push(Error::invalid(
                    &path.child("parallelism"),
                    Value::from(p),
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(m)) = (completions, max_failed) {
                if m > c {
                    errs.push(Error::invalid(
                        &path.child("maxFailedIndexes"),
                        Value::from(m),
                        "must be less than or equal to completions",
                    ));
                }
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(p) = per_index {
            errs.push(Error::invalid(
                &path.child("backoffLimitPerIndex"),
                Value::from(p),
                "requires indexed completion mode",
            ));
        }
        if let Some(m) = max_failed {
            errs.push(Error::invalid(
                &path.child("maxFailedIndexes"),
                Value::from(m),
                "requires indexed completion mode",
            ));
        }
    }
    let failure_policy = is_set(spec, "podFailurePolicy");
    if let Some(policy) = opt_str(spec, "podReplacementPolicy") {
        let p = path.child("podReplacementPolicy");
        if failure_policy {
            if policy != "Failed" {
                errs.push(Error::not_supported(&p, Value::from(policy), &["Failed"]));
            }
        } else if policy != "Failed" && policy != "TerminatingOrFailed" {
            errs.push(Error::not_supported(
                &p,
                Value::from(policy),
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let template = value_at(spec, "template");
    errs.extend(pod_template_spec(template, &path.child("template")));
    let policy = str_at(value_at(template, "spec"), "restartPolicy");
    let policy_path = path.child("template").child("spec").child("restartPolicy");
    if policy == "Always" || policy.is_empty() {
        errs.push(Error::required(
            &policy_path,
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if policy != "OnFailure" && policy != "Never" {
        errs.push(Error::not_supported(
            &policy_path,
            Value::from(policy),
            &["OnFailure", "Never"],
        ));
    } else if failure_policy && policy != "Never" {
        errs.push(Error::invalid(
            &policy_path,
            Value::from(policy),
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    errs
}

/// `ValidateJobSpecUpdate`: the spec again, then what may not change. The template's
/// `Invalid` value is its JSON (kube prints its internal Go struct).
fn job_spec_update(ns: &Value, os: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = job_spec(ns, &path);
    let indexed = opt_str(ns, "completionMode") == Some("Indexed");
    if !indexed {
        errs.extend(immutable(ns, os, "completions", &path.child("completions")));
    } else if !semantic_eq(ns.get("completions"), os.get("completions")) {
        if let Some(c) = opt_int(ns, "completions") {
            if Some(c) != opt_int(ns, "parallelism") {
                errs.push(Error::invalid(
                    &path.child("completions"),
                    Value::from(c),
                    "can only be modified in tandem with spec.parallelism",
                ));
            }
        }
    }
    errs.extend(immutable(ns, os, "selector", &path.child("selector")));
    errs.extend(template_update(ns, os, &path));
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "managedBy",
        "successPolicy",
    ] {
        errs.extend(immutable(ns, os, key, &path.child(key)));
    }
    errs
}

/// `validatePodTemplateUpdate`: the template is immutable but for scheduling directives
/// and metadata (kube's `AllowMutableSchedulingDirectives` holds while the job is
/// suspended and has not started; the caller's `PrepareForUpdate` decides, we allow
/// them when the old job is suspended).
fn template_update(ns: &Value, os: &Value, path: &Path) -> ErrorList {
    let new_template = value_at(ns, "template");
    let mut old_template = value_at(os, "template").clone();
    let suspended = os.get("suspend").and_then(Value::as_bool) == Some(true);
    if suspended {
        let new_spec = value_at(new_template, "spec");
        if let Some(spec) = old_template.get_mut("spec").and_then(Value::as_object_mut) {
            for key in ["nodeSelector", "tolerations", "schedulingGates"] {
                match new_spec.get(key) {
                    Some(v) => spec.insert(key.to_string(), v.clone()),
                    None => spec.remove(key),
                };
            }
            let node_affinity = new_spec.pointer("/affinity/nodeAffinity").cloned();
            let mut affinity = spec.get("affinity").cloned().unwrap_or(Value::Null);
            match (&mut affinity, node_affinity) {
                (Value::Object(a), Some(na)) => {
                    a.insert("nodeAffinity".into(), na);
                }
                (Value::Object(a), None) => {
                    a.remove("nodeAffinity");
                }
                (_, Some(na)) => affinity = serde_json::json!({ "nodeAffinity": na }),
                (_, None) => {}
            }
            if affinity.as_object().is_some_and(Map::is_empty) {
                spec.remove("affinity");
            } else if !affinity.is_null() {
                spec.insert("affinity".into(), affinity);
            }
        }
        let new_meta = value_at(new_template, "metadata");
        if let Some(meta) = old_template
            .as_object_mut()
            .map(|t| {
                t.entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .and_then(Value::as_object_mut)
        {
            for key in ["labels", "annotations"] {
                match new_meta.get(key) {
                    Some(v) => meta.insert(key.to_string(), v.clone()),
                    None => meta.remove(key),
                };
            }
        }
    }
    if semantic_eq(Some(new_template), Some(&old_template)) {
        ErrorList::new()
    } else {
        vec![with_value(
            Error::invalid(&path.child("template"), Value::Null, "field is immutable"),
            BadValue::Raw(pod_template_text(new_template)),
        )]
    }
}

/// `validateCronJobSpec`; `old` is the spec before an update.
fn cron_job_spec(spec: &Value, old: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let schedule = str_at(spec, "schedule");
    let schedule_path = path.child("schedule");
    let time_zone = opt_str(spec, "timeZone");
    if schedule.is_empty() {
        errs.push(Error::required(&schedule_path, ""));
    } else {
        let allow_tz = old.is_some_and(|o| str_at(o, "schedule").contains("TZ"));
        if let Err(e) = parse_standard(schedule) {
            errs.push(Error::invalid(&schedule_path, Value::from(schedule), e.0));
        }
        if allow_tz && schedule.contains("TZ") && is_set(spec, "timeZone") {
            errs.push(Error::invalid(
                &schedule_path,
                Value::from(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(Error::invalid(
                &schedule_path,
                Value::from(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    if let Some(deadline) = opt_int(spec, "startingDeadlineSeconds") {
        errs.extend(nonnegative(
            deadline,
            &path.child("startingDeadlineSeconds"),
        ));
    }
    if old.is_none_or(|o| opt_str(o, "timeZone") != time_zone) {
        if let Some(tz) = time_zone {
            errs.extend(time_zone_errors(tz, &path.child("timeZone")));
        }
    }
    errs.extend(one_of(
        str_at(spec, "concurrencyPolicy"),
        &["Allow", "Forbid", "Replace"],
        &path.child("concurrencyPolicy"),
    ));
    let template = value_at(spec, "jobTemplate");
    let template_path = path.child("jobTemplate");
    let job_spec = value_at(template, "spec");
    errs.extend(job_spec_common(job_spec, &template_path.child("spec")));
    if let Some(selector) = job_spec.get("selector").filter(|s| !s.is_null()) {
        errs.push(Error::invalid(
            &template_path.child("spec").child("selector"),
            selector.clone(),
            "`selector` will be auto-generated",
        ));
    }
    if job_spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        errs.push(Error::not_supported(
            &template_path.child("spec").child("manualSelector"),
            Value::Bool(true),
            &["nil", "false"],
        ));
    }
    for key in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        if let Some(limit) = opt_int(spec, key) {
            errs.extend(nonnegative(limit, &path.child(key)));
        }
    }
    errs
}

/// `validateTimeZone`.
fn time_zone_errors(tz: &str, path: &Path) -> ErrorList {
    let invalid = |msg: String| vec![Error::invalid(path, Value::from(tz), msg)];
    if tz.is_empty() {
        return invalid("timeZone must be nil or non-empty string".into());
    }
    let part_ok = |part: &str| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-_+".contains(&b))
    };
    if !tz.split('/').all(part_ok) {
        return invalid(format!("unknown time zone {tz}"));
    }
    let mut errs = ErrorList::new();
    if tz.eq_ignore_ascii_case("Local") {
        errs.extend(invalid(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .into(),
        ));
    }
    if !is_time_zone(tz) && tz != "Local" {
        errs.extend(invalid(format!("unknown time zone {tz}")));
    }
    errs
}

/// kube's internal `PodTemplateSpec` as it prints: the metadata's fields inline (they
/// carry JSON tags), then `"Spec"` (ours as JSON: kube prints its Go field names there).
fn pod_template_text(template: &Value) -> String {
    let mut fields: Vec<(&str, String)> = obj_at(template, "metadata")
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), go_json(v)))
        .collect();
    fields.push(("Spec", go_json(value_at(template, "spec"))));
    go_struct_text(&fields)
}
