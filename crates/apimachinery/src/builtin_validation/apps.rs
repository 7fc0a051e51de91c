//! The apps group: Deployment, ReplicaSet, StatefulSet and DaemonSet.

use super::core::{persistent_volume_claim_spec, pod_template_spec, template_restart_always};
use super::*;
use crate::field::BadValue;
use crate::goformat::go_json;

/// Validate a new apps object.
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    let spec = value_at(obj, "spec");
    let path = Path::new("spec");
    match kind {
        "Deployment" => deployment_spec(spec, &path),
        "ReplicaSet" => replica_set_spec(spec, &path),
        "StatefulSet" => stateful_set_spec(spec, &path, false, true),
        "DaemonSet" => daemon_set_spec(spec, &path),
        _ => ErrorList::new(),
    }
}

/// Validate an update of an apps object.
pub fn validate_update(kind: &str, new: &Value, old: &Value) -> ErrorList {
    let (ns, os) = (value_at(new, "spec"), value_at(old, "spec"));
    let path = Path::new("spec");
    match kind {
        "Deployment" | "ReplicaSet" => {
            let mut errs = validate(kind, new);
            errs.extend(immutable(ns, os, "selector", &path.child("selector")));
            errs
        }
        "StatefulSet" => stateful_set_update(ns, os),
        "DaemonSet" => {
            let mut errs = daemon_set_spec_update(new, old);
            errs.extend(daemon_set_spec(ns, &path));
            errs
        }
        _ => ErrorList::new(),
    }
}

/// The selector rules shared by Deployment, ReplicaSet and StatefulSet: required,
/// valid, not empty.
fn required_selector(spec: &Value, path: &Path, kind: &str) -> ErrorList {
    let p = path.child("selector");
    match spec.get("selector").filter(|s| !s.is_null()) {
        None => vec![Error::required(&p, "")],
        Some(selector) => {
            let mut errs = label_selector(selector, &p);
            if selector_is_empty(selector) {
                errs.push(Error::invalid(
                    &p,
                    selector.clone(),
                    format!("empty selector is invalid for {kind}"),
                ));
            }
            errs
        }
    }
}

/// `selector` must select the template's labels (an empty selector is not checked).
fn selector_matches_template(spec: &Value, template: &Value, path: &Path) -> ErrorList {
    let selector = value_at(spec, "selector");
    let meta = value_at(template, "metadata");
    if selector.is_null() || selector_is_empty(selector) {
        return ErrorList::new();
    }
    match selector_matches(selector, meta, "labels") {
        Some(false) => vec![Error::invalid(
            &path.child("metadata").child("labels"),
            value_at(meta, "labels").clone(),
            "`selector` does not match template `labels`",
        )],
        _ => ErrorList::new(),
    }
}

/// `ValidatePodTemplateSpecForReplicaSet` (and for Deployments).
fn template_for_replica_set(spec: &Value, path: &Path, kind: &str) -> ErrorList {
    let p = path.child("template");
    if crate::selector::labels::from_label_selector_json(value_at(spec, "selector")).is_err() {
        return vec![Error::invalid(
            &path.child("selector"),
            value_at(spec, "selector").clone(),
            "invalid label selector",
        )];
    }
    let template = value_at(spec, "template");
    let mut errs = selector_matches_template(spec, template, &p);
    errs.extend(pod_template_spec(template, &p));
    errs.extend(template_restart_always(template, &p, kind));
    errs
}

/// `ValidateDeploymentSpec`.
pub fn deployment_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = nonnegative(int_at(spec, "replicas"), &path.child("replicas"));
    errs.extend(required_selector(spec, path, "deployment"));
    errs.extend(template_for_replica_set(spec, path, "ReplicaSet"));
    errs.extend(deployment_strategy(
        value_at(spec, "strategy"),
        &path.child("strategy"),
    ));
    let min_ready = int_at(spec, "minReadySeconds");
    errs.extend(nonnegative(min_ready, &path.child("minReadySeconds")));
    if let Some(limit) = opt_int(spec, "revisionHistoryLimit") {
        errs.extend(nonnegative(limit, &path.child("revisionHistoryLimit")));
    }
    if let Some(rollback) = obj_at(spec, "rollbackTo") {
        let revision = rollback
            .get("revision")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        errs.extend(nonnegative(
            revision,
            &path.child("rollback").child("version"),
        ));
    }
    if let Some(deadline) = opt_int(spec, "progressDeadlineSeconds") {
        let p = path.child("progressDeadlineSeconds");
        errs.extend(nonnegative(deadline, &p));
        if deadline <= min_ready {
            errs.push(Error::invalid(
                &p,
                Value::from(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// `ValidateDeploymentStrategy`. An unknown type prints kube's internal struct.
fn deployment_strategy(strategy: &Value, path: &Path) -> ErrorList {
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match str_at(strategy, "type") {
        "Recreate" => match rolling {
            Some(_) => vec![Error::forbidden(
                &path.child("rollingUpdate"),
                "may not be specified when strategy `type` is 'Recreate'",
            )],
            None => ErrorList::new(),
        },
        "RollingUpdate" => match rolling {
            None => vec![Error::required(
                &path.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )],
            Some(r) => rolling_update_deployment(r, &path.child("rollingUpdate")),
        },
        other => {
            let rolling = rolling.map_or("null".to_string(), |r| {
                go_struct_text(&[
                    ("MaxUnavailable", go_json(value_at(r, "maxUnavailable"))),
                    ("MaxSurge", go_json(value_at(r, "maxSurge"))),
                ])
            });
            let value = go_struct_text(&[
                ("Type", go_json(&Value::from(other))),
                ("RollingUpdate", rolling),
            ]);
            vec![with_value(
                Error::not_supported(path, Value::Null, &["Recreate", "RollingUpdate"]),
                BadValue::Raw(value),
            )]
        }
    }
}

/// `ValidateRollingUpdateDeployment`.
fn rolling_update_deployment(r: &Value, path: &Path) -> ErrorList {
    let (unavailable, surge) = (r.get("maxUnavailable"), r.get("maxSurge"));
    let mut errs = positive_int_or_percent(unavailable, &path.child("maxUnavailable"));
    errs.extend(positive_int_or_percent(surge, &path.child("maxSurge")));
    if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
        errs.push(Error::invalid(
            &path.child("maxUnavailable"),
            value_at(r, "maxUnavailable").clone(),
            "may not be 0 when `maxSurge` is 0",
        ));
    }
    errs.extend(not_more_than_100_percent(
        unavailable,
        &path.child("maxUnavailable"),
    ));
    errs
}

/// `ValidateReplicaSetSpec`.
pub fn replica_set_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = nonnegative(int_at(spec, "replicas"), &path.child("replicas"));
    errs.extend(nonnegative(
        int_at(spec, "minReadySeconds"),
        &path.child("minReadySeconds"),
    ));
    // kube words the empty ReplicaSet selector as a Deployment's.
    errs.extend(required_selector(spec, path, "deployment"));
    errs.extend(template_for_replica_set(spec, path, "ReplicaSet"));
    errs
}

/// `ValidateStatefulSetSpec`; `check_claims` validates `volumeClaimTemplates` (create
/// only), `check_service_name` the service name (create only).
fn stateful_set_spec(
    spec: &Value,
    path: &Path,
    skip_template: bool,
    check_claims: bool,
) -> ErrorList {
    let mut errs = ErrorList::new();
    match str_at(spec, "podManagementPolicy") {
        "" => errs.push(Error::required(&path.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(Error::invalid(
            &path.child("podManagementPolicy"),
            Value::from(other),
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let strategy = value_at(spec, "updateStrategy");
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    let strategy_path = path.child("updateStrategy");
    match str_at(strategy, "type") {
        "" => errs.push(Error::required(&strategy_path, "")),
        "OnDelete" => {
            if let Some(r) = rolling {
                let value = go_struct(&[
                    ("Partition", &Value::from(int_at(r, "partition"))),
                    ("MaxUnavailable", value_at(r, "maxUnavailable")),
                ]);
                errs.push(with_value(
                    Error::invalid(
                        &strategy_path.child("rollingUpdate"),
                        Value::Null,
                        "only allowed for updateStrategy 'RollingUpdate'",
                    ),
                    value,
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(r) = rolling {
                let p = strategy_path.child("rollingUpdate");
                errs.extend(nonnegative(int_at(r, "partition"), &p.child("partition")));
                if let Some(max) = r.get("maxUnavailable").filter(|m| !m.is_null()) {
                    let mp = p.child("maxUnavailable");
                    errs.extend(positive_int_or_percent(Some(max), &mp));
                    if int_or_percent_value(Some(max)) == 0 {
                        errs.push(Error::invalid(&mp, max.clone(), "cannot be 0"));
                    }
                    errs.extend(not_more_than_100_percent(Some(max), &mp));
                }
            }
        }
        other => errs.push(with_value(
            Error::invalid(
                &strategy_path,
                Value::Null,
                "must be 'RollingUpdate' or 'OnDelete'",
            ),
            go_struct(&[
                ("Type", &Value::from(other)),
                ("RollingUpdate", &Value::Null),
            ]),
        )),
    }
    if let Some(policy) = obj_at(spec, "persistentVolumeClaimRetentionPolicy") {
        let p = path.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = policy.get(key).and_then(Value::as_str).unwrap_or("");
            if v != "Retain" && v != "Delete" {
                errs.push(Error::not_supported(
                    &p.child(key),
                    Value::from(v),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    if check_claims {
        for (i, claim) in list_at(spec, "volumeClaimTemplates").iter().enumerate() {
            errs.extend(persistent_volume_claim_spec(
                value_at(claim, "spec"),
                &path.child("volumeClaimTemplates").index(i).child("spec"),
            ));
        }
    }
    errs.extend(nonnegative(
        int_at(spec, "replicas"),
        &path.child("replicas"),
    ));
    errs.extend(nonnegative(
        int_at(spec, "minReadySeconds"),
        &path.child("minReadySeconds"),
    ));
    if let Some(ordinals) = obj_at(spec, "ordinals") {
        let start = ordinals.get("start").and_then(Value::as_i64).unwrap_or(0);
        errs.extend(nonnegative(start, &path.child("ordinals.start")));
    }
    let service_name = str_at(spec, "serviceName");
    if check_claims && !service_name.is_empty() {
        errs.extend(dns1123_label(service_name, &path.child("serviceName")));
    }
    errs.extend(required_selector(spec, path, "statefulset"));
    let selector = value_at(spec, "selector");
    if crate::selector::labels::from_label_selector_json(selector).is_err() {
        errs.push(Error::invalid(
            &path.child("selector"),
            selector.clone(),
            "",
        ));
    } else {
        // kube validates a copy of the template without hostname and subdomain, and
        // with a volume per claim template.
        let mut template = value_at(spec, "template").clone();
        if let Some(tspec) = template.get_mut("spec").and_then(Value::as_object_mut) {
            tspec.remove("hostname");
            tspec.remove("subdomain");
            let claims: Vec<&str> = list_at(spec, "volumeClaimTemplates")
                .iter()
                .map(|c| str_at(value_at(c, "metadata"), "name"))
                .collect();
            if !claims.is_empty() {
                let mut volumes: Vec<Value> = claims
                    .iter()
                    .map(|n| serde_json::json!({"name": n, "persistentVolumeClaim": {"claimName": n}}))
                    .collect();
                if let Some(existing) = tspec.get("volumes").and_then(Value::as_array) {
                    volumes.extend(
                        existing
                            .iter()
                            .filter(|v| !claims.contains(&str_at(v, "name")))
                            .cloned(),
                    );
                }
                tspec.insert("volumes".into(), Value::Array(volumes));
            }
        }
        let p = path.child("template");
        errs.extend(selector_matches_template(spec, &template, &p));
        if !skip_template {
            errs.extend(pod_template_spec(&template, &p));
        }
    }
    let template = value_at(spec, "template");
    let tspec = value_at(template, "spec");
    let policy = str_at(tspec, "restartPolicy");
    if policy != "Always" {
        errs.push(Error::not_supported(
            &path.child("template").child("spec").child("restartPolicy"),
            Value::from(policy),
            &["Always"],
        ));
    }
    if is_set(tspec, "activeDeadlineSeconds") {
        errs.push(Error::forbidden(
            &path
                .child("template")
                .child("spec")
                .child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    errs
}

/// `ValidateStatefulSetUpdate` without `ObjectMeta`.
fn stateful_set_update(ns: &Value, os: &Value) -> ErrorList {
    let path = Path::new("spec");
    let skip_template = !stateful_set_spec(os, &path, false, false).is_empty();
    let mut errs = stateful_set_spec(ns, &path, skip_template, false);
    let mutable = [
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "revisionHistoryLimit",
        "persistentVolumeClaimRetentionPolicy",
    ];
    let strip = |spec: &Value| {
        let mut s = spec.clone();
        if let Some(m) = s.as_object_mut() {
            for key in mutable {
                m.remove(key);
            }
        }
        s
    };
    if !semantic_eq(Some(&strip(ns)), Some(&strip(os))) {
        errs.push(Error::forbidden(
            &path,
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

/// `ValidateDaemonSetSpec`.
pub fn daemon_set_spec(spec: &Value, path: &Path) -> ErrorList {
    let selector = value_at(spec, "selector");
    let mut errs = if selector.is_null() {
        ErrorList::new()
    } else {
        label_selector(selector, &path.child("selector"))
    };
    let template = value_at(spec, "template");
    let meta = value_at(template, "metadata");
    if selector_matches(selector, meta, "labels") == Some(false) {
        errs.push(Error::invalid(
            &path.child("template").child("metadata").child("labels"),
            value_at(meta, "labels").clone(),
            "`selector` does not match template `labels`",
        ));
    }
    if !selector.is_null() && selector_is_empty(selector) {
        errs.push(Error::invalid(
            &path.child("selector"),
            selector.clone(),
            "empty selector is invalid for daemonset",
        ));
    }
    let template_path = path.child("template");
    errs.extend(pod_template_spec(template, &template_path));
    errs.extend(template_restart_always(
        template,
        &template_path,
        "DaemonSet",
    ));
    errs.extend(nonnegative(
        int_at(spec, "minReadySeconds"),
        &path.child("minReadySeconds"),
    ));
    errs.extend(nonnegative(
        int_at(spec, "templateGeneration"),
        &path.child("templateGeneration"),
    ));
    let strategy = value_at(spec, "updateStrategy");
    let strategy_path = path.child("updateStrategy");
    match str_at(strategy, "type") {
        "OnDelete" => {}
        "RollingUpdate" => match strategy.get("rollingUpdate").filter(|r| !r.is_null()) {
            None => errs.push(Error::required(&strategy_path.child("rollingUpdate"), "")),
            Some(r) => errs.extend(rolling_update_daemon_set(
                r,
                &strategy_path.child("rollingUpdate"),
            )),
        },
        other => errs.push(with_value(
            Error::not_supported(&strategy_path, Value::Null, &["RollingUpdate", "OnDelete"]),
            go_struct(&[
                ("Type", &Value::from(other)),
                ("RollingUpdate", &Value::Null),
            ]),
        )),
    }
    if let Some(limit) = opt_int(spec, "revisionHistoryLimit") {
        errs.extend(nonnegative(limit, &path.child("revisionHistoryLimit")));
    }
    errs
}

/// `ValidateRollingUpdateDaemonSet`.
fn rolling_update_daemon_set(r: &Value, path: &Path) -> ErrorList {
    let (unavailable, surge) = (r.get("maxUnavailable"), r.get("maxSurge"));
    let mut errs = positive_int_or_percent(unavailable, &path.child("maxUnavailable"));
    errs.extend(positive_int_or_percent(surge, &path.child("maxSurge")));
    errs.extend(not_more_than_100_percent(
        unavailable,
        &path.child("maxUnavailable"),
    ));
    errs.extend(not_more_than_100_percent(surge, &path.child("maxSurge")));
    let has_unavailable = int_or_percent_value(unavailable) != 0;
    let has_surge = int_or_percent_value(surge) != 0;
    if has_unavailable && has_surge {
        errs.push(Error::invalid(
            &path.child("maxSurge"),
            value_at(r, "maxSurge").clone(),
            "may not be set when maxUnavailable is non-zero",
        ));
    } else if !has_unavailable && !has_surge {
        errs.push(Error::required(
            &path.child("maxUnavailable"),
            "cannot be 0 when maxSurge is 0",
        ));
    }
    errs
}

/// `ValidateDaemonSetSpecUpdate`: the template generation follows the template, the
/// selector is immutable. apps/v1 serves the generation as an annotation (kube's
/// internal `spec.templateGeneration`).
fn daemon_set_spec_update(new: &Value, old: &Value) -> ErrorList {
    let (ns, os) = (value_at(new, "spec"), value_at(old, "spec"));
    let mut errs = ErrorList::new();
    let path = Path::new("spec").child("templateGeneration");
    let generation = |obj: &Value| {
        crate::builtin_defaults::apps::template_generation(obj)
            .flatten()
            .unwrap_or(0)
    };
    let (n, o) = (generation(new), generation(old));
    if n < o {
        errs.push(Error::invalid(
            &path,
            Value::from(n),
            "must not be decremented",
        ));
    }
    let updated = !semantic_eq(ns.get("template"), os.get("template"));
    if n == o && updated {
        errs.push(Error::invalid(
            &path,
            Value::from(n),
            "must be incremented upon template update",
        ));
    } else if n > o && !updated {
        errs.push(Error::invalid(
            &path,
            Value::from(n),
            "must not be incremented without template update",
        ));
    }
    errs.extend(immutable(
        ns,
        os,
        "selector",
        &Path::new("spec").child("selector"),
    ));
    errs
}
