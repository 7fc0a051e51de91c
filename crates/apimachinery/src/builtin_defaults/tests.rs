//! The recorded built-in cases (`testdata/conformance/*/builtins-*`, kube-apiserver
//! v1.36) at the module level: a request body in, defaulted, compared with the body kube
//! answered; then one test per rule.

use super::*;
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

/// Fields of the recorded pods set by admission plugins, not by defaulting: Priority
/// (`priority`, `preemptionPolicy`) and DefaultTolerationSeconds (`tolerations`).
const POD_ADMISSION: &[&str] = &[
    "/spec/priority",
    "/spec/preemptionPolicy",
    "/spec/tolerations",
];

/// Fields of the recorded services the registry allocates on create.
const SERVICE_ALLOCATED: &[&str] = &[
    "/spec/clusterIP",
    "/spec/clusterIPs",
    "/spec/ipFamilies",
    "/spec/ipFamilyPolicy",
];

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

fn golden_body(golden: &str, step: &str) -> Value {
    let g: Value = serde_json::from_str(golden).unwrap();
    let body = g[step]["body"].clone();
    assert!(body.is_object(), "no golden body for {step}");
    body
}

/// Whether `v` is an object holding only (objects holding only) empty objects: Go
/// writes empty structs that are not `omitempty`, which is encoding, not defaulting.
fn only_empty_structs(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|m| m.values().all(only_empty_structs))
}

/// `ours` equals `kube` field by field, where kube's empty structs may be absent.
fn assert_same(ours: &Value, kube: &Value, path: &str) {
    match (ours, kube) {
        (Value::Object(o), Value::Object(k)) => {
            for (key, kv) in k {
                let p = format!("{path}/{key}");
                match o.get(key) {
                    Some(ov) => assert_same(ov, kv, &p),
                    None => assert!(only_empty_structs(kv), "{p}: missing, kube has {kv}"),
                }
            }
            if let Some(key) = o.keys().find(|key| !k.contains_key(*key)) {
                panic!("{path}/{key}: {} is not in kube's answer", o[key]);
            }
        }
        (Value::Array(o), Value::Array(k)) => {
            assert_eq!(o.len(), k.len(), "{path}: list lengths");
            for (i, (ov, kv)) in o.iter().zip(k).enumerate() {
                assert_same(ov, kv, &format!("{path}/{i}"));
            }
        }
        _ => assert_eq!(ours, kube, "{path}"),
    }
}

fn remove(obj: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    if let Some(Value::Object(m)) = obj.pointer_mut(parent) {
        m.remove(key);
    }
}

/// The request of `step` defaulted (and round-tripped) as kube does.
fn defaulted(case: &str, step: &str) -> Value {
    let mut obj = step_body(case, step);
    let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            obj["apiVersion"].as_str().unwrap().to_string(),
        ),
    };
    let kind = obj["kind"].as_str().unwrap().to_string();
    apply(&group, &version, &kind, &mut obj);
    round_trip(&group, &version, &kind, &mut obj);
    let once = obj.clone();
    apply(&group, &version, &kind, &mut obj);
    round_trip(&group, &version, &kind, &mut obj);
    assert_eq!(obj, once, "{step}: defaulting twice changes the object");
    obj
}

/// Compare everything but `metadata` and `status` (the strategy's) with kube's answer,
/// fields of `other_stages` aside.
fn assert_body(ours: &Value, kube: &Value, other_stages: &[&str]) {
    let (mut ours, mut kube) = (ours.clone(), kube.clone());
    for p in other_stages.iter().chain(&["/metadata", "/status"]) {
        remove(&mut ours, p);
        remove(&mut kube, p);
    }
    assert_same(&ours, &kube, "");
}

fn assert_step(case: &str, golden: &str, step: &str, other_stages: &[&str]) {
    let ours = defaulted(case, step);
    assert_body(&ours, &golden_body(golden, step), other_stages);
}

// ---------------------------------------------------------------------------------------
// The recorded answers

#[test]
fn recorded_pod_with_limits_probe_env_and_port() {
    let mut ours = defaulted(CORE_CASE, "pod-create-defaults");
    pod_prepare_for_create_now(&mut ours);
    let kube = golden_body(CORE_GOLDEN, "pod-create-defaults");
    assert_body(&ours, &kube, POD_ADMISSION);
    assert_eq!(ours["status"], kube["status"]);
    assert_eq!(
        ours["metadata"]["generation"],
        kube["metadata"]["generation"]
    );
}

#[test]
fn recorded_pod_best_effort_untagged_image() {
    let mut ours = defaulted(CORE_CASE, "pod-create-besteffort-latest");
    pod_prepare_for_create_now(&mut ours);
    let kube = golden_body(CORE_GOLDEN, "pod-create-besteffort-latest");
    assert_body(&ours, &kube, POD_ADMISSION);
    assert_eq!(ours["status"], kube["status"]);
}

fn pod_prepare_for_create_now(obj: &mut Value) {
    core::pod_prepare_for_create(obj, "2025-01-01T00:00:00Z");
}

#[test]
fn recorded_services() {
    for step in [
        "service-create-clusterip",
        "service-create-explicit-clusterip",
        "service-headless",
        "service-nodeport-explicit",
    ] {
        assert_step(CORE_CASE, CORE_GOLDEN, step, SERVICE_ALLOCATED);
    }
}

#[test]
fn recorded_node_port_service_with_named_target_port() {
    // The case pins this answer by hand (a subset: the node port is allocated).
    let ours = defaulted(CORE_CASE, "service-nodeport-allocated");
    let case: Value = serde_norway::from_str(CORE_CASE).unwrap();
    let step = case["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "service-nodeport-allocated")
        .unwrap();
    let kube = &step["expect"]["json"]["spec"];
    for (key, value) in kube.as_object().unwrap() {
        if !SERVICE_ALLOCATED.contains(&format!("/spec/{key}").as_str()) {
            assert_eq!(&ours["spec"][key], value, "spec.{key}");
        }
    }
}

#[test]
fn recorded_persistent_volume_claim() {
    let ours = defaulted(CORE_CASE, "pvc-create-defaults");
    let kube = golden_body(CORE_GOLDEN, "pvc-create-defaults");
    assert_body(&ours, &kube, &[]);
    assert_eq!(ours["status"], kube["status"]);
}

#[test]
fn recorded_endpoints() {
    assert_step(CORE_CASE, CORE_GOLDEN, "endpoints-create", &[]);
}

#[test]
fn recorded_deployments() {
    for step in ["deploy-create-minimal", "deploy-create-untagged-image"] {
        assert_step(APPS_CASE, APPS_GOLDEN, step, &[]);
    }
}

#[test]
fn recorded_stateful_set_with_claim_template() {
    assert_step(APPS_CASE, APPS_GOLDEN, "statefulset-create", &[]);
}

#[test]
fn recorded_daemon_set_and_its_template_generation() {
    let mut ours = defaulted(APPS_CASE, "daemonset-create");
    apps::daemon_set_prepare_for_create(&mut ours);
    let kube = golden_body(APPS_GOLDEN, "daemonset-create");
    assert_body(&ours, &kube, &[]);
    assert_eq!(
        ours["metadata"]["annotations"],
        kube["metadata"]["annotations"]
    );
}

#[test]
fn recorded_replica_set() {
    assert_step(APPS_CASE, APPS_GOLDEN, "replicaset-create", &[]);
}

#[test]
fn recorded_job_with_generated_selector() {
    let kube = golden_body(BATCH_GOLDEN, "job-create-defaults");
    // The uid is the server's: taken from kube's answer.
    let uid = kube["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"]
        .as_str()
        .unwrap();
    let mut ours = defaulted(BATCH_CASE, "job-create-defaults");
    batch::job_prepare_for_create(&mut ours, uid);
    assert_body(&ours, &kube, &[]);
    assert_eq!(ours["metadata"]["labels"], kube["metadata"]["labels"]);
}

#[test]
fn recorded_cron_job() {
    assert_step(BATCH_CASE, BATCH_GOLDEN, "cronjob-create-defaults", &[]);
}

#[test]
fn recorded_networking_policy_autoscaling_discovery_scheduling_storage() {
    for step in [
        "ingress-create",
        "networkpolicy-ingress-only",
        "networkpolicy-with-egress",
        "pdb-create",
        "hpa-create-defaults",
        "endpointslice-create",
        "priorityclass-create",
        "storageclass-create-defaults",
    ] {
        assert_step(BATCH_CASE, BATCH_GOLDEN, step, &[]);
    }
}

// ---------------------------------------------------------------------------------------
// Rules

fn pod_with(spec: Value) -> Value {
    let mut pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec});
    apply("", "v1", "Pod", &mut pod);
    pod
}

#[test]
fn image_pull_policy_follows_the_tag() {
    let digest = "sha256:7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa";
    for (image, policy) in [
        ("nginx", "Always"),
        ("nginx:latest", "Always"),
        ("nginx:1.27", "IfNotPresent"),
        (&format!("nginx@{digest}"), "IfNotPresent"),
        (&format!("nginx:latest@{digest}"), "Always"),
        ("localhost:5000/team/app", "Always"),
        ("localhost:5000/team/app:v2", "IfNotPresent"),
        ("registry.example.com/app:latest", "Always"),
        ("MyRegistry/app", "Always"),
        ("docker.io/library/busybox:1.36", "IfNotPresent"),
        // References that do not parse: no tag found.
        ("Nginx", "IfNotPresent"),
        ("", "IfNotPresent"),
        ("nginx@sha256:abc", "IfNotPresent"),
        (
            "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa",
            "IfNotPresent",
        ),
    ] {
        assert_eq!(core::pull_policy(image), policy, "{image}");
    }
}

#[test]
fn a_pull_policy_the_client_set_stays() {
    let pod = pod_with(
        json!({"containers": [{"name": "a", "image": "nginx", "imagePullPolicy": "Never"}]}),
    );
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Never");
}

#[test]
fn pod_spec_scalars_and_pod_only_service_links() {
    let pod = pod_with(json!({"containers": []}));
    assert_eq!(pod["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["spec"]["schedulerName"], "default-scheduler");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["spec"]["securityContext"], json!({}));
    assert_eq!(pod["spec"]["enableServiceLinks"], true);
    // A template gets the pod spec's defaults, not the pod's.
    let mut tmpl = json!({"template": {"spec": {"containers": []}}});
    apply("", "v1", "PodTemplate", &mut tmpl);
    assert_eq!(tmpl["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert!(tmpl["template"]["spec"].get("enableServiceLinks").is_none());
}

#[test]
fn zero_values_of_value_fields_are_defaulted_pointer_fields_are_not() {
    let pod = pod_with(json!({
        "restartPolicy": "",
        "terminationGracePeriodSeconds": 0,
        "containers": [{"name": "a", "image": "x:1", "readinessProbe": {"periodSeconds": 0, "exec": {}}}],
    }));
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["spec"]["terminationGracePeriodSeconds"], 0);
    assert_eq!(
        pod["spec"]["containers"][0]["readinessProbe"]["periodSeconds"],
        10
    );
}

#[test]
fn probes_and_lifecycle_hooks() {
    let pod = pod_with(json!({"containers": [{
        "name": "a", "image": "x:1",
        "livenessProbe": {"httpGet": {"port": 80}, "timeoutSeconds": 5},
        "startupProbe": {"grpc": {"port": 9000}},
        "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}},
    }]}));
    let c = &pod["spec"]["containers"][0];
    assert_eq!(
        c["livenessProbe"],
        json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 5,
               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        c["startupProbe"]["grpc"],
        json!({"port": 9000, "service": ""})
    );
    assert_eq!(
        c["lifecycle"]["preStop"]["httpGet"],
        json!({"port": 80, "path": "/stop", "scheme": "HTTP"})
    );
}

#[test]
fn env_field_refs_and_file_key_refs() {
    let pod = pod_with(
        json!({"initContainers": [{"name": "i", "image": "x:1", "env": [
        {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "B", "valueFrom": {"fileKeyRef": {"path": "f", "key": "k", "volumeName": "v"}}},
    ]}], "containers": []}),
    );
    let env = &pod["spec"]["initContainers"][0]["env"];
    assert_eq!(env[0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
    assert_eq!(env[1]["valueFrom"]["fileKeyRef"]["optional"], false);
}

#[test]
fn volumes_get_their_source_defaults() {
    let pod = pod_with(json!({"containers": [], "volumes": [
        {"name": "scratch"},
        {"name": "s", "secret": {"secretName": "x"}},
        {"name": "c", "configMap": {"name": "x", "defaultMode": 256}},
        {"name": "h", "hostPath": {"path": "/tmp"}},
        {"name": "d", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}},
        {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}},
        {"name": "i", "image": {"reference": "quay.io/x/y"}},
        {"name": "r", "rbd": {"monitors": ["m"], "image": "i"}},
    ]}));
    let v = &pod["spec"]["volumes"];
    assert_eq!(v[0], json!({"name": "scratch", "emptyDir": {}}));
    assert_eq!(v[1]["secret"]["defaultMode"], 420);
    assert_eq!(v[2]["configMap"]["defaultMode"], 256);
    assert_eq!(v[3]["hostPath"]["type"], "");
    assert_eq!(v[4]["downwardAPI"]["defaultMode"], 420);
    assert_eq!(
        v[4]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(v[5]["projected"]["defaultMode"], 420);
    assert_eq!(
        v[5]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
        3600
    );
    assert_eq!(
        v[6]["ephemeral"]["volumeClaimTemplate"]["spec"]["volumeMode"],
        "Filesystem"
    );
    assert_eq!(v[7]["image"]["pullPolicy"], "Always");
    assert_eq!(v[8]["rbd"]["pool"], "rbd");
    assert_eq!(v[8]["rbd"]["user"], "admin");
    assert_eq!(v[8]["rbd"]["keyring"], "/etc/ceph/keyring");
}

#[test]
fn requests_default_to_limits_on_pods_only() {
    let pod = pod_with(json!({"containers": [{"name": "a", "image": "x:1",
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}));
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    let mut deploy = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1",
        "resources": {"limits": {"cpu": "1"}}}]}}}});
    apply("apps", "v1", "Deployment", &mut deploy);
    assert!(deploy
        .pointer("/spec/template/spec/containers/0/resources/requests")
        .is_none());
}

#[test]
fn host_network_pods_get_host_ports() {
    let pod = pod_with(
        json!({"hostNetwork": true, "containers": [{"name": "a", "image": "x:1",
        "ports": [{"containerPort": 8080}, {"containerPort": 53, "hostPort": 5353, "protocol": "UDP"}]}]}),
    );
    let ports = &pod["spec"]["containers"][0]["ports"];
    assert_eq!(
        ports[0],
        json!({"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"})
    );
    assert_eq!(ports[1]["hostPort"], 5353);
}

#[test]
fn qos_classes() {
    let spec = |res: Value| json!({"containers": [{"name": "a", "resources": res}]});
    assert_eq!(core::qos_class(&spec(json!({}))), "BestEffort");
    assert_eq!(
        core::qos_class(&spec(json!({"requests": {"cpu": "1", "memory": "1Gi"},
            "limits": {"cpu": "1000m", "memory": "1Gi"}}))),
        "Guaranteed"
    );
    assert_eq!(
        core::qos_class(&spec(
            json!({"requests": {"cpu": "1"}, "limits": {"cpu": "1"}})
        )),
        "Burstable"
    );
    // Only cpu and memory count; zero quantities do not.
    assert_eq!(
        core::qos_class(&spec(
            json!({"requests": {"ephemeral-storage": "1Gi", "cpu": "0"}})
        )),
        "BestEffort"
    );
}

#[test]
fn pod_prepare_keeps_a_given_qos_class_and_gates_scheduling() {
    let mut pod = json!({"metadata": {"name": "p"}, "spec": {"schedulingGates": [{"name": "g"}], "containers": []},
        "status": {"qosClass": "Guaranteed", "phase": "Running"}});
    core::pod_prepare_for_create(&mut pod, "2025-01-01T00:00:00Z");
    assert_eq!(pod["status"]["phase"], "Pending");
    assert_eq!(pod["status"]["qosClass"], "Guaranteed");
    assert_eq!(pod["status"]["conditions"][0]["reason"], "SchedulingGated");
    assert_eq!(pod["metadata"]["generation"], 1);
}

#[test]
fn service_account_alias() {
    let mut pod = json!({"spec": {"serviceAccount": "old", "containers": []}});
    round_trip("", "v1", "Pod", &mut pod);
    assert_eq!(pod["spec"]["serviceAccountName"], "old");
    let mut pod = json!({"spec": {"serviceAccount": "old", "serviceAccountName": "new"}});
    round_trip("", "v1", "Pod", &mut pod);
    assert_eq!(pod["spec"]["serviceAccount"], "new");
}

#[test]
fn service_affinity_and_traffic_policies() {
    let mut svc = json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
        "ports": [{"port": 443, "targetPort": 0}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}, {"hostname": "lb"}]}}});
    apply("", "v1", "Service", &mut svc);
    assert_eq!(
        svc["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
        10800
    );
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 443);
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["internalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(svc["status"]["loadBalancer"]["ingress"][0]["ipMode"], "VIP");
    assert!(svc["status"]["loadBalancer"]["ingress"][1]
        .get("ipMode")
        .is_none());

    let mut svc = json!({"spec": {"type": "ExternalName", "externalName": "x.example.com",
        "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 5}}}});
    apply("", "v1", "Service", &mut svc);
    assert!(svc["spec"].get("sessionAffinityConfig").is_none());
    assert!(svc["spec"].get("internalTrafficPolicy").is_none());
    assert!(svc["spec"].get("externalTrafficPolicy").is_none());

    let mut svc = json!({"spec": {"externalIPs": ["192.0.2.9"], "ports": [{"port": 80}]}});
    apply("", "v1", "Service", &mut svc);
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
}

#[test]
fn replication_controller_selector_and_labels_from_template() {
    let mut rc = json!({"metadata": {"name": "rc"}, "spec": {"template": {"metadata": {"labels": {"a": "b"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
    apply("", "v1", "ReplicationController", &mut rc);
    assert_eq!(rc["spec"]["selector"], json!({"a": "b"}));
    assert_eq!(rc["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(rc["spec"]["replicas"], 1);
    assert_eq!(
        rc["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
}

#[test]
fn persistent_volume_and_node_and_limit_range() {
    let mut pv = json!({"spec": {"hostPath": {"path": "/d"}}});
    apply("", "v1", "PersistentVolume", &mut pv);
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
    assert_eq!(pv["spec"]["hostPath"]["type"], "");
    assert_eq!(pv["status"]["phase"], "Pending");

    let mut node = json!({"status": {"capacity": {"cpu": "4"}}});
    apply("", "v1", "Node", &mut node);
    assert_eq!(node["status"]["allocatable"], json!({"cpu": "4"}));

    let mut lr = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}},
        {"type": "Pod", "max": {"cpu": "2"}},
    ]}});
    apply("", "v1", "LimitRange", &mut lr);
    assert_eq!(lr["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
    assert_eq!(
        lr["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "2", "memory": "1Mi"})
    );
    assert!(lr["spec"]["limits"][1].get("default").is_none());
}

#[test]
fn lists_default_each_item() {
    let mut list = json!({"items": [{"spec": {"ports": [{"port": 80}]}}]});
    apply("", "v1", "ServiceList", &mut list);
    assert_eq!(list["items"][0]["spec"]["type"], "ClusterIP");
}

#[test]
fn deployment_recreate_gets_no_rolling_update() {
    let mut d = json!({"spec": {"strategy": {"type": "Recreate"}}});
    apply("apps", "v1", "Deployment", &mut d);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    let mut d = json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}});
    apply("apps", "v1", "Deployment", &mut d);
    assert_eq!(
        d["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
    );
}

#[test]
fn stateful_set_named_rolling_update_without_parameters_gets_no_partition() {
    let mut s = json!({"spec": {"updateStrategy": {"type": "RollingUpdate"}}});
    apply("apps", "v1", "StatefulSet", &mut s);
    assert_eq!(
        s["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate"})
    );
    let mut s = json!({"spec": {"updateStrategy": {"type": "OnDelete"}}});
    apply("apps", "v1", "StatefulSet", &mut s);
    assert_eq!(s["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn daemon_set_rolling_update_and_template_generation() {
    let mut d = json!({"metadata": {"annotations": {"deprecated.daemonset.template.generation": "4"}}, "spec": {}});
    apply("apps", "v1", "DaemonSet", &mut d);
    apps::daemon_set_prepare_for_create(&mut d);
    assert_eq!(
        d["spec"]["updateStrategy"]["rollingUpdate"],
        json!({"maxUnavailable": 1, "maxSurge": 0})
    );
    assert_eq!(
        d["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "4"
    );
}

#[test]
fn daemon_set_template_generation_is_the_servers_and_moves_with_the_template() {
    let annotation = |d: &Value| {
        d["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
    };
    // Served (before the strategy sets it) as kube's conversion writes it: 0 when unset.
    let mut d = json!({"metadata": {}, "spec": {"template": {"spec": {}}}});
    round_trip("apps", "v1", "DaemonSet", &mut d);
    assert_eq!(annotation(&d), "0");
    apps::daemon_set_prepare_for_create(&mut d);
    assert_eq!(annotation(&d), "1");
    let old = d.clone();
    let mut new = old.clone();
    new["metadata"]["annotations"]["deprecated.daemonset.template.generation"] = json!("9");
    apps::daemon_set_prepare_for_update(&mut new, &old);
    assert_eq!(annotation(&new), "1");
    new["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    apps::daemon_set_prepare_for_update(&mut new, &old);
    assert_eq!(annotation(&new), "2");
}

#[test]
fn job_parallelism_backoff_and_replacement_policy() {
    let mut j = json!({"spec": {"parallelism": 3, "backoffLimitPerIndex": 1, "completionMode": "Indexed",
        "completions": 3, "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}});
    apply("batch", "v1", "Job", &mut j);
    assert_eq!(j["spec"]["parallelism"], 3);
    assert_eq!(j["spec"]["backoffLimit"], 2147483647);
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(j["spec"]["completionMode"], "Indexed");
    assert_eq!(
        j["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    let mut j = json!({"spec": {"completions": 5}});
    apply("batch", "v1", "Job", &mut j);
    assert_eq!(j["spec"]["parallelism"], 1);
    assert_eq!(j["spec"]["completions"], 5);
}

#[test]
fn job_manual_selector_generates_nothing() {
    let mut j = json!({"metadata": {"name": "j"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}}}});
    let before = j.clone();
    batch::job_prepare_for_create(&mut j, "u");
    assert_eq!(j, before);
    // Job labels of its own do not gain the generated ones.
    let mut j = json!({"metadata": {"name": "j", "labels": {"own": "x"}}, "spec": {"template": {"metadata": {"labels": {"a": "b"}}}}});
    apply("batch", "v1", "Job", &mut j);
    batch::job_prepare_for_create(&mut j, "u");
    assert_eq!(j["metadata"]["labels"], json!({"own": "x"}));
    assert_eq!(
        j["spec"]["template"]["metadata"]["labels"]["controller-uid"],
        "u"
    );
}

#[test]
fn hpa_v2_behavior_rules_and_v1_cpu_target() {
    let mut h = json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
    apply("autoscaling", "v2", "HorizontalPodAutoscaler", &mut h);
    assert_eq!(h["spec"]["minReplicas"], 1);
    assert_eq!(
        h["spec"]["behavior"]["scaleUp"]["policies"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        h["spec"]["behavior"]["scaleUp"]["stabilizationWindowSeconds"],
        0
    );
    assert_eq!(
        h["spec"]["behavior"]["scaleDown"],
        json!({"stabilizationWindowSeconds": 60, "selectPolicy": "Max",
               "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
    );
    let mut h = json!({"spec": {"maxReplicas": 3}});
    apply("autoscaling", "v1", "HorizontalPodAutoscaler", &mut h);
    round_trip("autoscaling", "v1", "HorizontalPodAutoscaler", &mut h);
    assert_eq!(
        h["spec"],
        json!({"maxReplicas": 3, "minReplicas": 1, "targetCPUUtilizationPercentage": 80})
    );
}

#[test]
fn network_policy_egress_only_keeps_its_types() {
    let mut np =
        json!({"spec": {"policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53}]}]}});
    apply("networking.k8s.io", "v1", "NetworkPolicy", &mut np);
    assert_eq!(np["spec"]["policyTypes"], json!(["Egress"]));
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
    let mut ic = json!({"spec": {"parameters": {"kind": "K", "name": "n"}}});
    apply("networking.k8s.io", "v1", "IngressClass", &mut ic);
    assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
}

#[test]
fn csi_driver_rbac_flowcontrol_endpoint_slice() {
    let mut d = json!({"metadata": {"name": "x"}, "spec": {}});
    apply("storage.k8s.io", "v1", "CSIDriver", &mut d);
    assert_eq!(
        d["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "volumeLifecycleModes": ["Persistent"],
               "requiresRepublish": false, "seLinuxMount": false})
    );
    let mut rb = json!({"roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]});
    apply("rbac.authorization.k8s.io", "v1", "RoleBinding", &mut rb);
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][1]["apiGroup"], "");
    let mut plc = json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}});
    apply(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        &mut plc,
    );
    assert_eq!(plc["spec"]["limited"]["nominalConcurrencyShares"], 30);
    assert_eq!(
        plc["spec"]["limited"]["limitResponse"]["queuing"],
        json!({"handSize": 8, "queues": 64, "queueLengthLimit": 50})
    );
    let mut es = json!({"ports": [{"port": 80}]});
    apply("discovery.k8s.io", "v1", "EndpointSlice", &mut es);
    assert_eq!(
        es["ports"][0],
        json!({"port": 80, "name": "", "protocol": "TCP"})
    );
}

#[test]
fn unknown_kinds_and_versions_are_left_alone() {
    let mut obj = json!({"spec": {"x": 1}});
    let before = obj.clone();
    apply("apps", "v1beta1", "Deployment", &mut obj);
    apply("example.com", "v1", "Widget", &mut obj);
    apply("", "v1", "ConfigMap", &mut obj);
    assert_eq!(obj, before);
}

#[test]
#[should_panic(expected = "missing")]
fn the_comparison_sees_a_missing_default() {
    let undefaulted = step_body(APPS_CASE, "replicaset-create");
    assert_body(
        &undefaulted,
        &golden_body(APPS_GOLDEN, "replicaset-create"),
        &[],
    );
}

#[test]
#[should_panic(expected = "not in kube's answer")]
fn the_comparison_sees_an_extra_field() {
    let mut ours = defaulted(APPS_CASE, "replicaset-create");
    ours["spec"]["minReadySeconds"] = json!(0);
    assert_body(&ours, &golden_body(APPS_GOLDEN, "replicaset-create"), &[]);
}

#[test]
fn empty_template_labels_are_not_copied() {
    let mut rc = json!({"spec": {"template": {"metadata": {"labels": {}}, "spec": {}}}});
    apply("", "v1", "ReplicationController", &mut rc);
    assert!(rc["spec"].get("selector").is_none());
    assert!(rc.pointer("/metadata/labels").is_none());
    let mut job = json!({"spec": {"template": {"metadata": {"labels": {}}}}});
    apply("batch", "v1", "Job", &mut job);
    assert!(job.pointer("/metadata/labels").is_none());
}
