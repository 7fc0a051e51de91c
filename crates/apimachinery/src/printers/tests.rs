use super::*;
use chrono::TimeZone;
use serde_json::json;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 12, 0, 0).unwrap()
}

fn cells(group: &str, kind: &str, obj: Value) -> Vec<Value> {
    let p = for_kind(group, kind).expect("a printer");
    let cells = (p.cells)(&obj, now());
    assert_eq!(cells.len(), p.columns.len(), "one cell per column");
    cells
}

fn headers(group: &str, kind: &str) -> Vec<(&'static str, &'static str, i64)> {
    for_kind(group, kind)
        .expect("a printer")
        .columns
        .iter()
        .map(|c| (c.name, c.type_, c.priority))
        .collect()
}

const CREATED: &str = "2026-01-01T11:55:00Z";

#[test]
fn pod_columns_are_kubes_with_the_wide_ones_at_priority_1() {
    assert_eq!(
        headers("", "Pod"),
        vec![
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ]
    );
    let p = for_kind("", "Pod").unwrap();
    assert!(p.columns[5]
        .description
        .starts_with("podIP address allocated"));
    assert_eq!(p.columns[0].format, "name");
}

#[test]
fn a_pending_pod_without_node_shows_pending_and_none_in_wide_cells() {
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": CREATED},
        "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
        "status": {"phase": "Pending"}
    });
    assert_eq!(
        cells("", "Pod", pod),
        vec![
            json!("p"),
            json!("0/2"),
            json!("Pending"),
            json!("0"),
            json!("5m"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
        ]
    );
}

#[test]
fn a_running_pod_counts_ready_containers_and_restarts_with_their_age() {
    let pod = json!({
        "metadata": {"name": "p", "creationTimestamp": CREATED},
        "spec": {"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}],
                 "readinessGates": [{"conditionType": "x/gate"}]},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}],
            "conditions": [{"type": "x/gate", "status": "True"}],
            "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "state": {"running": {}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2026-01-01T11:58:00Z"}}},
                {"name": "b", "ready": false, "restartCount": 0,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}
    });
    let c = cells("", "Pod", pod);
    assert_eq!(c[1], json!("1/2"));
    assert_eq!(c[2], json!("CrashLoopBackOff"));
    assert_eq!(c[3], json!("2 (2m ago)"));
    assert_eq!(c[5], json!("10.1.0.5"));
    assert_eq!(c[6], json!("n1"));
    assert_eq!(c[8], json!("1/1"));
}

#[test]
fn a_deleted_pod_is_terminating_and_init_containers_show_their_progress() {
    let deleting = json!({
        "metadata": {"name": "p", "deletionTimestamp": CREATED},
        "spec": {"containers": [{"name": "a"}]},
        "status": {"phase": "Running"}
    });
    assert_eq!(cells("", "Pod", deleting)[2], json!("Terminating"));
    let init = json!({
        "metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i0"}, {"name": "i1"}],
                 "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "i0", "state": {"terminated": {"exitCode": 0}}},
            {"name": "i1", "state": {"running": {}}}
        ]}
    });
    let c = cells("", "Pod", init);
    assert_eq!(c[2], json!("Init:1/2"));
    assert_eq!(c[4], json!("<unknown>"));
    let failed_init = json!({
        "metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "i0"}], "containers": [{"name": "a"}]},
        "status": {"phase": "Pending", "initContainerStatuses": [
            {"name": "i0", "state": {"terminated": {"exitCode": 3}}}
        ]}
    });
    assert_eq!(cells("", "Pod", failed_init)[2], json!("Init:ExitCode:3"));
    let sidecar = json!({
        "metadata": {"name": "p"},
        "spec": {"initContainers": [{"name": "s", "restartPolicy": "Always"}],
                 "containers": [{"name": "a"}]},
        "status": {"phase": "Running",
            "initContainerStatuses": [{"name": "s", "started": true, "ready": true, "state": {"running": {}}}],
            "containerStatuses": [{"name": "a", "ready": true, "state": {"running": {}}}]}
    });
    let c = cells("", "Pod", sidecar);
    assert_eq!((&c[1], &c[2]), (&json!("2/2"), &json!("Running")));
}

#[test]
fn deployment_cells_show_ready_of_desired_and_the_wide_template() {
    let d = json!({
        "metadata": {"name": "web", "creationTimestamp": CREATED},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "a"}},
                 "template": {"spec": {"containers": [
                     {"name": "nginx", "image": "nginx:1"}, {"name": "side", "image": "busybox"}]}}},
        "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1}
    });
    assert_eq!(
        cells("apps", "Deployment", d),
        vec![
            json!("web"),
            json!("1/3"),
            json!(2),
            json!(1),
            json!("5m"),
            json!("nginx,side"),
            json!("nginx:1,busybox"),
            json!("app=web,tier=a"),
        ]
    );
    assert_eq!(
        headers("apps", "Deployment")
            .iter()
            .map(|h| h.0)
            .collect::<Vec<_>>(),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
}

#[test]
fn job_status_completions_and_duration_follow_kube() {
    let running = json!({
        "metadata": {"name": "j", "creationTimestamp": CREATED},
        "spec": {"parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                 "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}},
        "status": {"startTime": "2026-01-01T11:56:30Z"}
    });
    let c = cells("batch", "Job", running);
    assert_eq!(c[1..4], [json!("Running"), json!("0/1"), json!("3m30s")]);
    assert_eq!(c[7], json!("batch.kubernetes.io/controller-uid=u"));
    let done = json!({
        "metadata": {"name": "j"},
        "spec": {"completions": 2, "parallelism": 2},
        "status": {"succeeded": 2, "startTime": "2026-01-01T10:00:00Z",
                   "completionTime": "2026-01-01T10:00:40Z",
                   "conditions": [{"type": "Complete", "status": "True"}]}
    });
    let c = cells("batch", "Job", done);
    assert_eq!(c[1..4], [json!("Complete"), json!("2/2"), json!("40s")]);
    let parallel = json!({"metadata": {"name": "j"}, "spec": {"parallelism": 4},
        "status": {"conditions": [{"type": "Suspended", "status": "True"}]}});
    let c = cells("batch", "Job", parallel);
    assert_eq!(c[1..4], [json!("Suspended"), json!("0/1 of 4"), json!("")]);
}

#[test]
fn node_status_roles_and_system_info() {
    let n = json!({
        "metadata": {"name": "n1", "creationTimestamp": CREATED,
                     "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
        "spec": {"unschedulable": true},
        "status": {"conditions": [{"type": "Ready", "status": "False"}],
                   "addresses": [{"type": "InternalIP", "address": "192.168.0.2"}],
                   "nodeInfo": {"kubeletVersion": "v1.36.0", "kernelVersion": "6.1", "architecture": "amd64"}}
    });
    assert_eq!(
        cells("", "Node", n),
        vec![
            json!("n1"),
            json!("NotReady,SchedulingDisabled"),
            json!("control-plane,worker"),
            json!("5m"),
            json!("v1.36.0"),
            json!("192.168.0.2"),
            json!("<none>"),
            json!("<unknown>"),
            json!("6.1 (amd64)"),
            json!("<unknown>"),
        ]
    );
    let bare = json!({"metadata": {"name": "n2"}});
    assert_eq!(
        cells("", "Node", bare)[1..3],
        [json!("Unknown"), json!("<none>")]
    );
}

#[test]
fn endpoints_show_three_addresses_then_how_many_more() {
    let ep = json!({"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}
    ]});
    assert_eq!(
        cells("", "Endpoints", ep)[1],
        json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...")
    );
    assert_eq!(
        cells("", "Endpoints", json!({"metadata": {"name": "e"}}))[1],
        json!("<none>")
    );
}

#[test]
fn volumes_claims_and_classes() {
    let pvc = json!({"metadata": {"name": "c"}, "spec": {"volumeName": "pv1", "storageClassName": "fast"},
        "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
    let c = cells("", "PersistentVolumeClaim", pvc);
    assert_eq!(
        c[1..7],
        [
            json!("Bound"),
            json!("pv1"),
            json!("1Gi"),
            json!("RWO,RWX"),
            json!("fast"),
            json!("<unset>")
        ]
    );
    let sc = json!({"metadata": {"name": "std", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "x.io/p"});
    assert_eq!(
        cells("storage.k8s.io", "StorageClass", sc)[..5],
        [
            json!("std (default)"),
            json!("x.io/p"),
            json!("Delete"),
            json!("Immediate"),
            json!(false)
        ]
    );
}

#[test]
fn cron_jobs_pdbs_and_controller_revisions() {
    let cj = json!({"metadata": {"name": "cj"}, "spec": {"schedule": "*/5 * * * *", "suspend": false,
        "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}}});
    assert_eq!(
        cells("batch", "CronJob", cj)[..6],
        [
            json!("cj"),
            json!("*/5 * * * *"),
            json!("<none>"),
            json!("False"),
            json!(0),
            json!("<none>")
        ]
    );
    let pdb = json!({"metadata": {"name": "b"}, "spec": {"minAvailable": "50%"}});
    assert_eq!(
        cells("policy", "PodDisruptionBudget", pdb)[1..4],
        [json!("50%"), json!("N/A"), json!(0)]
    );
    let cr = json!({"metadata": {"name": "r", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": true}]},
        "revision": 3});
    assert_eq!(
        cells("apps", "ControllerRevision", cr)[1..3],
        [json!("statefulset.apps/db"), json!(3)]
    );
}

#[test]
fn ingresses_and_endpoint_slices() {
    let ing = json!({"metadata": {"name": "i"}, "spec": {"rules": [{"host": "a.io"}, {}, {"host": "b.io"}, {"host": "c.io"}, {"host": "d.io"}],
        "tls": [{}]}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.io"}]}}});
    assert_eq!(
        cells("networking.k8s.io", "Ingress", ing)[1..5],
        [
            json!("<none>"),
            json!("a.io,b.io,c.io + 2 more..."),
            json!("1.2.3.4,lb.io"),
            json!("80, 443")
        ]
    );
    let es = json!({"metadata": {"name": "s"}, "addressType": "IPv4", "ports": [{"port": 80}, {"name": "x"}, {}],
        "endpoints": []});
    assert_eq!(
        cells("discovery.k8s.io", "EndpointSlice", es)[1..4],
        [json!("IPv4"), json!("80,x,*"), json!("<unset>")]
    );
}

#[test]
fn every_field_description_resolves() {
    for (g, k) in [
        ("", "Pod"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ReplicationController"),
        ("", "Endpoints"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "DaemonSet"),
        ("apps", "ControllerRevision"),
        ("batch", "CronJob"),
        ("batch", "Job"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("storage.k8s.io", "StorageClass"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSIStorageCapacity"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("storage.k8s.io", "VolumeAttributesClass"),
        ("resource.k8s.io", "ResourceSlice"),
        ("networking.k8s.io", "ServiceCIDR"),
        ("networking.k8s.io", "IPAddress"),
    ] {
        for c in for_kind(g, k).unwrap().columns {
            assert!(!c.description.is_empty(), "{k} {}", c.name);
        }
    }
}

#[test]
fn csrs_hpas_quotas_and_storage_kinds() {
    let csr = json!({"metadata": {"name": "c"}, "spec": {"signerName": "example.com/s", "username": "alice",
        "expirationSeconds": 3600}, "status": {"conditions": [{"type": "Approved", "status": "True"}],
        "certificate": "Y2VydA=="}});
    assert_eq!(
        cells("certificates.k8s.io", "CertificateSigningRequest", csr)[2..],
        [
            json!("example.com/s"),
            json!("alice"),
            json!("60m"),
            json!("Approved,Issued")
        ]
    );
    let hpa = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "maxReplicas": 5, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Pods", "pods": {"target": {"averageValue": "1k"}}},
            {"type": "External", "external": {"target": {"value": "3"}}}]},
        "status": {"currentReplicas": 2, "currentMetrics": [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}]}});
    assert_eq!(
        cells("autoscaling", "HorizontalPodAutoscaler", hpa)[1..6],
        [
            json!("Deployment/web"),
            json!("cpu: 40%/80%, <unknown>/1k + 1 more..."),
            json!("<unset>"),
            json!(5),
            json!(2)
        ]
    );
    let v1 = json!({"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
        "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 70}});
    assert_eq!(
        cells("autoscaling", "HorizontalPodAutoscaler", v1)[2..4],
        [json!("cpu: <unknown>/70%"), json!("1")]
    );
    let quota = json!({"metadata": {"name": "q"}, "status": {
        "hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi"},
        "used": {"pods": "1", "limits.cpu": "500m"}}});
    assert_eq!(
        cells("", "ResourceQuota", quota)[1..3],
        [
            json!("pods: 1/10, requests.memory: 0/1Gi"),
            json!("limits.cpu: 500m/2")
        ]
    );
    let driver = json!({"metadata": {"name": "d"}, "spec": {}});
    assert_eq!(
        cells("storage.k8s.io", "CSIDriver", driver)[1..7],
        [
            json!(true),
            json!(false),
            json!(false),
            json!("<unset>"),
            json!(false),
            json!("<none>")
        ]
    );
    let va = for_kind("storage.k8s.io", "VolumeAttachment").unwrap();
    assert_eq!(
        (va.columns[1].name, va.columns[1].format),
        ("Attacher", "name")
    );
    let ip = json!({"metadata": {"name": "10.0.0.5"}, "spec": {"parentRef":
        {"group": "", "resource": "services", "namespace": "default", "name": "web"}}});
    assert_eq!(
        cells("networking.k8s.io", "IPAddress", ip)[1],
        json!("services/default/web")
    );
    let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps"},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
    assert_eq!(
        cells("apiregistration.k8s.io", "APIService", local)[1..3],
        [json!("Local"), json!("True")]
    );
    let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False",
            "reason": "MissingEndpoints"}]}});
    assert_eq!(
        cells("apiregistration.k8s.io", "APIService", remote)[1..3],
        [
            json!("kube-system/metrics-server"),
            json!("False (MissingEndpoints)")
        ]
    );
    let unknown = json!({"metadata": {"name": "v1.a.io"}, "spec": {"service": {"name": "s"}}});
    assert_eq!(
        cells("apiregistration.k8s.io", "APIService", unknown)[1..3],
        [json!("/s"), json!("Unknown")]
    );
}
