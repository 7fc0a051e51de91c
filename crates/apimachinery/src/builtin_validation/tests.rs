//! The recorded built-in cases (`testdata/conformance/*/builtins-*`, kube-apiserver
//! v1.36): each rejected request, defaulted as kube does, validated here, compared with
//! the `details.causes` kube answered (field, reason, message; sorted, as recorded).
//! Then one test per rule.

use super::*;
use crate::builtin_defaults;
use serde_json::json;

const CORE_CASE: &str = include_str!("../../testdata/conformance/cases/builtins-core.yaml");
const CORE_GOLDEN: &str =
    include_str!("../../testdata/conformance/golden/builtins-core.golden.json");
const APPS_CASE: &str = include_str!("../../testdata/conformance/cases/builtins-apps.yaml");
const APPS_GOLDEN: &str =
    include_str!("../../testdata/conformance/golden/builtins-apps.golden.json");
const BATCH_CASE: &str = include_str!("../../testdata/conformance/cases/builtins-batch-net.yaml");
const BATCH_GOLDEN: &str =
    include_str!("../../testdata/conformance/golden/builtins-batch-net.golden.json");

type Cause = (String, String, String);

fn step_body(case: &str, step: &str) -> Value {
    let case: Value = serde_norway::from_str(case).unwrap();
    case["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == step)
        .map(|s| s["body"].clone())
        .unwrap_or_else(|| panic!("no step {step}"))
}

fn golden_causes(golden: &str, step: &str) -> Vec<Cause> {
    let g: Value = serde_json::from_str(golden).unwrap();
    let causes = g[step]["body"]["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("no causes for {step}"));
    let mut out: Vec<Cause> = causes
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_string(),
                c["reason"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn causes(errs: &ErrorList) -> Vec<Cause> {
    let mut out: Vec<Cause> = errs
        .iter()
        .map(|e| (e.field.to_string(), e.kind.reason().to_string(), e.body()))
        .collect();
    out.sort();
    out
}

fn group_version_kind(obj: &Value) -> (String, String, String) {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    (
        group.to_string(),
        version.to_string(),
        obj["kind"].as_str().unwrap().to_string(),
    )
}

/// The request of `step` as kube validates it: defaulted and round-tripped.
fn defaulted(case: &str, step: &str) -> Value {
    let mut obj = step_body(case, step);
    let (group, version, kind) = group_version_kind(&obj);
    builtin_defaults::apply(&group, &version, &kind, &mut obj);
    builtin_defaults::round_trip(&group, &version, &kind, &mut obj);
    obj
}

fn validate_obj(obj: &Value) -> ErrorList {
    let (group, version, kind) = group_version_kind(obj);
    validate(&group, &version, &kind, obj)
}

fn validate_update_obj(new: &Value, old: &Value) -> ErrorList {
    let (group, version, kind) = group_version_kind(new);
    validate_update(&group, &version, &kind, new, old)
}

/// RFC 7386 merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    match (target.as_object_mut(), patch.as_object()) {
        (Some(t), Some(p)) => {
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        _ => *target = patch.clone(),
    }
}

fn assert_create(case: &str, golden: &str, step: &str) {
    let obj = defaulted(case, step);
    assert_eq!(
        causes(&validate_obj(&obj)),
        golden_causes(golden, step),
        "{step}"
    );
}

// ---------------------------------------------------------------------------------------
// The recorded answers

#[test]
fn recorded_pod_missing_image() {
    assert_create(CORE_CASE, CORE_GOLDEN, "pod-invalid-missing-image");
}

#[test]
fn recorded_pod_duplicate_container_names() {
    assert_create(
        CORE_CASE,
        CORE_GOLDEN,
        "pod-invalid-duplicate-container-names",
    );
}

#[test]
fn recorded_pod_unsupported_restart_policy() {
    assert_create(CORE_CASE, CORE_GOLDEN, "pod-invalid-restart-policy");
}

#[test]
fn recorded_valid_pods_and_services_validate_clean() {
    for step in [
        "pod-create-defaults",
        "pod-create-besteffort-latest",
        "service-create-clusterip",
        "service-create-explicit-clusterip",
        "service-headless",
        "service-nodeport-explicit",
        "service-nodeport-allocated",
        "pvc-create-defaults",
        // Rejected by the allocators, not by validation.
        "service-clusterip-already-allocated",
        "service-clusterip-out-of-range",
        "service-nodeport-out-of-range",
    ] {
        let obj = defaulted(CORE_CASE, step);
        assert_eq!(causes(&validate_obj(&obj)), vec![], "{step}");
    }
}

#[test]
fn recorded_pod_update_of_a_fixed_field() {
    let old = defaulted(CORE_CASE, "pod-create-defaults");
    let mut new = old.clone();
    merge_patch(
        &mut new,
        &step_body(CORE_CASE, "pod-update-immutable-field"),
    );
    let ours = causes(&validate_update_obj(&new, &old));
    let kube = golden_causes(CORE_GOLDEN, "pod-update-immutable-field");
    assert_eq!(ours.len(), 1);
    assert_eq!((&ours[0].0, &ours[0].1), (&kube[0].0, &kube[0].1));
    // kube's diff prints its internal Go structs: the fixed text is compared.
    let fixed = |m: &str| m.split('\n').next().unwrap().to_string();
    assert_eq!(fixed(&ours[0].2), fixed(&kube[0].2));
    assert!(ours[0]
        .2
        .contains("- dnsPolicy: \"ClusterFirst\"\n+ dnsPolicy: \"Default\""));

    // The recorded strategic merge patch changes the image of the container by name.
    let patch = step_body(CORE_CASE, "pod-update-image-allowed");
    let mut image = old.clone();
    image["spec"]["containers"][0]["image"] = patch["spec"]["containers"][0]["image"].clone();
    assert_ne!(image, old);
    assert_eq!(causes(&validate_update_obj(&image, &old)), vec![]);
}

#[test]
fn recorded_service_port_out_of_range() {
    assert_create(CORE_CASE, CORE_GOLDEN, "service-invalid-port");
}

#[test]
fn recorded_deployment_selector_does_not_match_template() {
    assert_create(
        APPS_CASE,
        APPS_GOLDEN,
        "invalid-selector-does-not-match-template",
    );
}

#[test]
fn recorded_deployment_without_containers() {
    assert_create(APPS_CASE, APPS_GOLDEN, "invalid-missing-containers");
}

#[test]
fn recorded_deployment_bad_container_name_and_negative_replicas() {
    assert_create(
        APPS_CASE,
        APPS_GOLDEN,
        "invalid-container-name-and-replicas",
    );
}

#[test]
fn recorded_valid_apps_objects_validate_clean() {
    for step in [
        "deploy-create-minimal",
        "deploy-create-untagged-image",
        "statefulset-create",
        "daemonset-create",
        "replicaset-create",
    ] {
        let obj = defaulted(APPS_CASE, step);
        assert_eq!(causes(&validate_obj(&obj)), vec![], "{step}");
    }
}

#[test]
fn recorded_deployment_selector_is_immutable() {
    let old = defaulted(APPS_CASE, "deploy-create-minimal");
    let mut new = old.clone();
    merge_patch(&mut new, &step_body(APPS_CASE, "immutable-selector-update"));
    assert_eq!(
        causes(&validate_update_obj(&new, &old)),
        golden_causes(APPS_GOLDEN, "immutable-selector-update")
    );
}

#[test]
fn recorded_priority_class_value_is_immutable() {
    let old = defaulted(BATCH_CASE, "priorityclass-create");
    let mut new = old.clone();
    merge_patch(
        &mut new,
        &step_body(BATCH_CASE, "priorityclass-value-immutable"),
    );
    assert_eq!(
        causes(&validate_update_obj(&new, &old)),
        golden_causes(BATCH_GOLDEN, "priorityclass-value-immutable")
    );
    let mut policy = old.clone();
    policy["preemptionPolicy"] = json!("Never");
    assert_eq!(
        causes(&validate_update_obj(&policy, &old)),
        [(
            "preemptionPolicy".to_string(),
            "FieldValueInvalid".to_string(),
            "Invalid value: \"Never\": field is immutable".to_string()
        )]
    );
}

#[test]
fn recorded_storage_class_parameters_are_immutable() {
    let old = defaulted(BATCH_CASE, "storageclass-create-defaults");
    let mut new = old.clone();
    merge_patch(
        &mut new,
        &step_body(BATCH_CASE, "storageclass-parameters-immutable"),
    );
    assert_eq!(
        causes(&validate_update_obj(&new, &old)),
        golden_causes(BATCH_GOLDEN, "storageclass-parameters-immutable")
    );
    let mut mode = old.clone();
    mode["volumeBindingMode"] = json!("WaitForFirstConsumer");
    mode["provisioner"] = json!("example.com/other");
    assert_eq!(causes(&validate_update_obj(&mode, &old)).len(), 2);
}

const JOB_UID: &str = "e5edb1f9-0b00-4372-8638-3f75f016844c";

fn created_job(step: &str) -> Value {
    let mut job = defaulted(BATCH_CASE, step);
    job["metadata"]["uid"] = json!(JOB_UID);
    builtin_defaults::batch::job_prepare_for_create(&mut job, JOB_UID);
    job
}

#[test]
fn recorded_job_template_is_immutable() {
    let old = created_job("job-create-defaults");
    assert_eq!(causes(&validate_obj(&old)), vec![]);
    let mut new = old.clone();
    // The recorded strategic merge patch replaces the image of the container by name.
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:1.37");
    let ours = causes(&validate_update_obj(&new, &old));
    let kube = golden_causes(BATCH_GOLDEN, "job-template-immutable");
    assert_eq!(ours.len(), 1);
    assert_eq!((&ours[0].0, &ours[0].1), (&kube[0].0, &kube[0].1));
    // kube prints its internal PodTemplateSpec: the fixed parts are compared.
    for m in [&ours[0].2, &kube[0].2] {
        assert!(
            m.starts_with("Invalid value: {\"labels\":{\"app\":\"migrate\","),
            "{m}"
        );
        assert!(m.ends_with("}}: field is immutable"), "{m}");
    }

    let mut suspended = old.clone();
    merge_patch(
        &mut suspended,
        &step_body(BATCH_CASE, "job-suspend-allowed"),
    );
    assert_eq!(causes(&validate_update_obj(&suspended, &old)), vec![]);
}

#[test]
fn recorded_job_negative_parallelism_and_missing_restart_policy() {
    let job = created_job("job-invalid-restart-policy");
    assert_eq!(
        causes(&validate_obj(&job)),
        golden_causes(BATCH_GOLDEN, "job-invalid-restart-policy")
    );
}

#[test]
fn recorded_cron_jobs() {
    assert_create(BATCH_CASE, BATCH_GOLDEN, "cronjob-bad-schedule");
    assert_create(BATCH_CASE, BATCH_GOLDEN, "cronjob-bad-timezone");
    let ok = defaulted(BATCH_CASE, "cronjob-create-defaults");
    assert_eq!(causes(&validate_obj(&ok)), vec![]);
}

#[test]
fn recorded_ingress_pdb_and_hpa() {
    for step in ["ingress-invalid", "pdb-invalid-both-bounds", "hpa-invalid"] {
        assert_create(BATCH_CASE, BATCH_GOLDEN, step);
    }
    for step in ["ingress-create", "pdb-create", "hpa-create-defaults"] {
        let obj = defaulted(BATCH_CASE, step);
        assert_eq!(causes(&validate_obj(&obj)), vec![], "{step}");
    }
}

// ---------------------------------------------------------------------------------------
// One test per rule

fn pod(spec: Value) -> Value {
    let mut obj =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
    builtin_defaults::apply("", "v1", "Pod", &mut obj);
    obj
}

fn messages(errs: &ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn pod_ports_env_mounts_and_resources() {
    let obj = pod(json!({"containers": [{
        "name": "c", "image": "i",
        "ports": [{"containerPort": 70000, "name": "Bad--"}],
        "env": [{"name": "A=B"}],
        "volumeMounts": [{"name": "missing", "mountPath": "/m"}],
        "resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}
    }]}));
    let got = messages(&validate_obj(&obj));
    for want in [
        "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        "spec.containers[0].ports[0].name: Invalid value: \"Bad--\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "spec.containers[0].ports[0].name: Invalid value: \"Bad--\": must not contain consecutive hyphens",
        "spec.containers[0].env[0].name: Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='",
        "spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
        "spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
    ] {
        assert!(got.contains(&want.to_string()), "{want}\n{got:#?}");
    }
}

#[test]
fn pod_volumes_unique_with_one_source() {
    // A volume without a source is given an emptyDir by kube's defaulting.
    let obj = pod(
        json!({"containers": [{"name": "c", "image": "i"}], "volumes": [
            {"name": "a", "emptyDir": {}},
            {"name": "a", "emptyDir": {}},
            {"name": "b"},
            {"name": "c", "emptyDir": {}, "configMap": {"name": "x"}}
        ]}),
    );
    assert_eq!(
        messages(&validate_obj(&obj)),
        vec![
            "spec.volumes[1].name: Duplicate value: \"a\"",
            "spec.volumes[3].configMap: Forbidden: may not specify more than 1 volume type",
        ]
    );
}

#[test]
fn pod_dns_policy_and_grace_period() {
    let mut obj = pod(json!({"containers": [{"name": "c", "image": "i"}], "dnsPolicy": "Nope"}));
    obj["spec"]["terminationGracePeriodSeconds"] = Value::Null;
    assert_eq!(
        messages(&validate_obj(&obj)),
        vec![
            "spec.terminationGracePeriodSeconds: Required value",
            "spec.dnsPolicy: Unsupported value: \"Nope\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
        ]
    );
}

#[test]
fn deployment_rolling_update_may_not_be_all_zero() {
    let mut obj = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "strategy": {"rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    builtin_defaults::apply("apps", "v1", "Deployment", &mut obj);
    assert_eq!(
        messages(&validate_obj(&obj)),
        vec![
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
        ]
    );
}

#[test]
fn stateful_set_spec_updates_are_limited() {
    let mut old = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
        "spec": {"serviceName": "s", "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
    builtin_defaults::apply("apps", "v1", "StatefulSet", &mut old);
    let mut new = old.clone();
    new["spec"]["serviceName"] = json!("other");
    new["spec"]["replicas"] = json!(3);
    assert_eq!(
        messages(&validate_update_obj(&new, &old)),
        vec!["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]
    );
}

#[test]
fn service_ports_unique_and_cluster_ip_fixed() {
    let mut old = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "a", "port": 80}, {"name": "a", "port": 80}]}});
    builtin_defaults::apply("", "v1", "Service", &mut old);
    let got = messages(&validate_obj(&old));
    assert_eq!(
        got,
        vec![
            "spec.ports[1].name: Duplicate value: \"a\"",
            "spec.ports[1]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"TCP\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
        ]
    );
    let mut new = old.clone();
    new["spec"]["clusterIP"] = json!("10.96.0.11");
    assert!(messages(&validate_update_obj(&new, &old)).contains(
        &"spec.clusterIPs[0]: Invalid value: [\"10.96.0.11\"]: may not change once set".to_string()
    ));
}

#[test]
fn persistent_volume_claim_spec_is_immutable() {
    let old = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(messages(&validate_obj(&old)), Vec::<String>::new());
    let mut new = old.clone();
    new["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let got = messages(&validate_update_obj(&new, &old));
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"));
    let empty = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "spec": {}});
    assert_eq!(
        messages(&validate_obj(&empty)),
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
        ]
    );
}

#[test]
fn cron_schedules_as_robfig_parses_them() {
    use super::cron::{parse_standard, CronError};
    assert_eq!(parse_standard("*/5 * * * *"), Ok(()));
    assert_eq!(parse_standard("@hourly"), Ok(()));
    assert_eq!(parse_standard("0 0 * JAN-mar mon"), Ok(()));
    assert_eq!(
        parse_standard("61 * * * *"),
        Err(CronError("end of range (61) above maximum (59): 61".into()))
    );
    assert_eq!(
        parse_standard("x * * * *"),
        Err(CronError(
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax".into()
        ))
    );
    assert_eq!(
        parse_standard("@sometimes"),
        Err(CronError("unrecognized descriptor: @sometimes".into()))
    );
}
