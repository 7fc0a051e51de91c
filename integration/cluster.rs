//! The opt-in cluster that moves (`--controllers`, `--simulate-nodes`), driven with the
//! real kubectl as on a cluster: Deployments roll out (`kubectl rollout status`,
//! `kubectl wait --for=condition=Available`), scale, update and roll back; Jobs
//! complete and fail; deletion cascades through owner references for every kind; new
//! namespaces get their `default` ServiceAccount and `kube-root-ca.crt`. Without the
//! flags nothing moves, as on a kube-apiserver alone.

mod common;

use common::{describe_output, poll, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);

/// A server with every controller and three nodes, once its `default` ServiceAccount
/// exists (before, pods are refused, as on a cluster just started).
fn cluster() -> TestServer {
    let server = TestServer::start_with(&["--controllers=*", "--simulate-nodes=3"]);
    let ready = poll(WAIT, || {
        (server
            .http()
            .get("/api/v1/namespaces/default/serviceaccounts/default")
            .status
            == 200)
            .then_some(())
    });
    assert!(ready.is_some(), "no default ServiceAccount");
    server
}

fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?}\n{}",
        describe_output(&out)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn get_json(server: &TestServer, path: &str) -> Value {
    let resp = server.http().get(path);
    assert_eq!(resp.status, 200, "{path}: {}", resp.text());
    resp.json().expect("json")
}

fn items(server: &TestServer, path: &str) -> Vec<Value> {
    get_json(server, path)["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_deployment_rolls_out_scales_updates_and_cascades_like_on_a_cluster() {
    let server = cluster();
    let nodes = kubectl_ok(&server, &["get", "nodes", "--no-headers"]);
    assert_eq!(nodes.lines().count(), 3, "{nodes}");
    assert!(nodes.lines().all(|l| l.contains(" Ready ")), "{nodes}");

    kubectl_ok(
        &server,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    let out = kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    assert!(out.contains("successfully rolled out"), "{out}");
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Available",
            "deployment/web",
            "--timeout=20s",
        ],
    );

    let d = get_json(&server, "/apis/apps/v1/namespaces/default/deployments/web");
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    for field in [
        "replicas",
        "updatedReplicas",
        "readyReplicas",
        "availableReplicas",
    ] {
        assert_eq!(d["status"][field], 3, "{field}: {}", d["status"]);
    }
    let reasons: Vec<(&str, &str)> = d["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("Available", "MinimumReplicasAvailable"),
            ("Progressing", "NewReplicaSetAvailable")
        ]
    );
    let rss = items(&server, "/apis/apps/v1/namespaces/default/replicasets");
    assert_eq!(rss.len(), 1);
    let rs = &rss[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .expect("hash");
    assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    assert_eq!(rs["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
        hash
    );
    let pods = items(&server, "/api/v1/namespaces/default/pods");
    assert_eq!(pods.len(), 3);
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap_or("");
        assert!(name.starts_with(&format!("web-{hash}-")), "{name}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
        assert_eq!(p["status"]["phase"], "Running");
        assert!(p["spec"]["nodeName"]
            .as_str()
            .unwrap_or("")
            .starts_with("node-"));
        assert!(p["status"]["podIP"]
            .as_str()
            .unwrap_or("")
            .starts_with("10.244."));
        let c = &p["status"]["containerStatuses"][0];
        assert_eq!(c["ready"], true);
        assert!(c["state"]["running"]["startedAt"].is_string(), "{c}");
    }
    let table = kubectl_ok(&server, &["get", "pods", "--no-headers"]);
    assert!(
        table
            .lines()
            .all(|l| l.contains("1/1") && l.contains("Running")),
        "{table}"
    );

    // Scale.
    kubectl_ok(&server, &["scale", "deployment/web", "--replicas=5"]);
    kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    assert_eq!(items(&server, "/api/v1/namespaces/default/pods").len(), 5);

    // An image update rolls out a second ReplicaSet; the first is scaled to zero.
    kubectl_ok(
        &server,
        &["set", "image", "deployment/web", "nginx=nginx:1.27"],
    );
    kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    let rss = items(&server, "/apis/apps/v1/namespaces/default/replicasets");
    assert_eq!(rss.len(), 2);
    let by_rev = |rev: &str| {
        rss.iter()
            .find(|rs| rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == rev)
            .unwrap_or_else(|| panic!("revision {rev}: {rss:?}"))
    };
    assert_eq!(by_rev("1")["spec"]["replicas"], 0);
    assert_eq!(by_rev("2")["spec"]["replicas"], 5);
    assert_eq!(
        by_rev("2")["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    let pods = items(&server, "/api/v1/namespaces/default/pods");
    assert_eq!(pods.len(), 5);
    assert!(pods
        .iter()
        .all(|p| p["spec"]["containers"][0]["image"] == "nginx:1.27"));

    // A rollback brings the first template back as revision 3, in the same ReplicaSet.
    kubectl_ok(&server, &["rollout", "undo", "deployment/web"]);
    kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    let rss = items(&server, "/apis/apps/v1/namespaces/default/replicasets");
    assert_eq!(rss.len(), 2);
    let back = rss
        .iter()
        .find(|rs| rs["metadata"]["labels"]["pod-template-hash"] == hash)
        .expect("the first ReplicaSet");
    assert_eq!(
        back["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "3"
    );
    assert_eq!(back["spec"]["replicas"], 5);

    // Deleting the Deployment takes its ReplicaSets and pods with it.
    kubectl_ok(&server, &["delete", "deployment", "web"]);
    let gone = poll(WAIT, || {
        (items(&server, "/apis/apps/v1/namespaces/default/replicasets").is_empty()
            && items(&server, "/api/v1/namespaces/default/pods").is_empty())
        .then_some(())
    });
    assert!(gone.is_some(), "ReplicaSets or pods left behind");
}

#[test]
fn statefulsets_and_daemonsets_roll_out_and_update() {
    let server = cluster();
    let manifests = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
         "spec": {"serviceName": "db", "replicas": 3, "selector": {"matchLabels": {"app": "db"}},
                  "template": {"metadata": {"labels": {"app": "db"}},
                               "spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}},
                  "volumeClaimTemplates": [{"metadata": {"name": "data"},
                      "spec": {"accessModes": ["ReadWriteOnce"],
                               "resources": {"requests": {"storage": "1Gi"}}}}]}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
         "spec": {"selector": {"matchLabels": {"app": "agent"}},
                  "template": {"metadata": {"labels": {"app": "agent"}},
                               "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}}},
    ]});
    let file = server.write_file("workloads.json", &manifests.to_string());
    kubectl_ok(&server, &["apply", "-f", file.to_str().expect("path")]);
    kubectl_ok(
        &server,
        &["rollout", "status", "statefulset/db", "--timeout=20s"],
    );
    kubectl_ok(
        &server,
        &["rollout", "status", "daemonset/agent", "--timeout=20s"],
    );
    for i in 0..3 {
        let pod = get_json(&server, &format!("/api/v1/namespaces/default/pods/db-{i}"));
        assert_eq!(pod["spec"]["hostname"], format!("db-{i}"));
        assert_eq!(pod["spec"]["subdomain"], "db");
        assert_eq!(
            pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
            i.to_string()
        );
        assert_eq!(pod["status"]["phase"], "Running");
        let claim = get_json(
            &server,
            &format!("/api/v1/namespaces/default/persistentvolumeclaims/data-db-{i}"),
        );
        assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
    }
    let agents = items(
        &server,
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dagent",
    );
    let mut nodes: Vec<&str> = agents
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2", "node-3"]);

    // Template updates roll out through new ControllerRevisions.
    kubectl_ok(
        &server,
        &["set", "image", "statefulset/db", "pg=postgres:17"],
    );
    kubectl_ok(&server, &["set", "image", "daemonset/agent", "a=agent:2"]);
    kubectl_ok(
        &server,
        &["rollout", "status", "statefulset/db", "--timeout=20s"],
    );
    kubectl_ok(
        &server,
        &["rollout", "status", "daemonset/agent", "--timeout=20s"],
    );
    let set = get_json(&server, "/apis/apps/v1/namespaces/default/statefulsets/db");
    assert_eq!(
        set["status"]["currentRevision"],
        set["status"]["updateRevision"]
    );
    assert_eq!(set["status"]["updatedReplicas"], 3);
    let pods = items(&server, "/api/v1/namespaces/default/pods");
    for p in &pods {
        let image = p["spec"]["containers"][0]["image"].as_str().unwrap_or("");
        assert!(image == "postgres:17" || image == "agent:2", "{image}");
    }
    let history = kubectl_ok(&server, &["rollout", "history", "statefulset/db"]);
    assert!(
        history.contains("\n1 ") && history.contains("\n2 "),
        "{history}"
    );
    let ds = get_json(&server, "/apis/apps/v1/namespaces/default/daemonsets/agent");
    assert_eq!(
        ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"],
        "2"
    );
    assert_eq!(ds["status"]["updatedNumberScheduled"], 3);
    assert_eq!(ds["status"]["numberAvailable"], 3);

    // Scaled down, the highest ordinals go.
    kubectl_ok(&server, &["scale", "statefulset/db", "--replicas=1"]);
    let left = poll(WAIT, || {
        let names: Vec<String> = items(
            &server,
            "/api/v1/namespaces/default/pods?labelSelector=app%3Ddb",
        )
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
        .collect();
        (names == ["db-0"]).then_some(())
    });
    assert!(left.is_some());
}

#[test]
fn services_list_their_ready_pods_in_endpoint_slices_and_endpoints() {
    let server = cluster();
    kubectl_ok(
        &server,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=2",
            "--port=80",
        ],
    );
    kubectl_ok(
        &server,
        &[
            "expose",
            "deployment",
            "web",
            "--port=8080",
            "--target-port=80",
        ],
    );
    kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    let pod_ips = || -> Vec<String> {
        let mut ips: Vec<String> = items(
            &server,
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        )
        .iter()
        .filter_map(|p| p["status"]["podIP"].as_str().map(str::to_string))
        .collect();
        ips.sort();
        ips
    };
    let slice_ips = || -> Option<Vec<String>> {
        let slices = items(
            &server,
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb",
        );
        let slice = slices.first()?;
        let mut ips: Vec<String> = slice["endpoints"]
            .as_array()?
            .iter()
            .filter(|e| e["conditions"]["ready"] == true)
            .filter_map(|e| e["addresses"][0].as_str().map(str::to_string))
            .collect();
        ips.sort();
        Some(ips)
    };
    let settled = poll(WAIT, || (slice_ips()? == pod_ips()).then_some(()));
    assert!(
        settled.is_some(),
        "slices {:?} vs pods {:?}",
        slice_ips(),
        pod_ips()
    );
    let slice = &items(
        &server,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dweb",
    )[0];
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "port": 80, "protocol": "TCP"}])
    );
    assert_eq!(slice["endpoints"][0]["targetRef"]["kind"], "Pod");
    let endpoints = poll(WAIT, || {
        let e = get_json(&server, "/api/v1/namespaces/default/endpoints/web");
        (e["subsets"][0]["addresses"].as_array().map(Vec::len) == Some(2)).then_some(e)
    })
    .expect("the Endpoints object lists both pods");
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"port": 80, "protocol": "TCP"}])
    );
    // Scaled up, the new pod is listed too.
    kubectl_ok(&server, &["scale", "deployment/web", "--replicas=3"]);
    let grown = poll(WAIT, || {
        (slice_ips()?.len() == 3 && slice_ips()? == pod_ips()).then_some(())
    });
    assert!(grown.is_some());
}

#[test]
fn jobs_complete_fail_and_count_as_kube() {
    let server = cluster();
    kubectl_ok(
        &server,
        &[
            "create",
            "job",
            "pi",
            "--image=perl",
            "--",
            "perl",
            "-e",
            "print 1",
        ],
    );
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Complete",
            "job/pi",
            "--timeout=20s",
        ],
    );
    let job = get_json(&server, "/apis/batch/v1/namespaces/default/jobs/pi");
    assert_eq!(job["status"]["succeeded"], 1, "{}", job["status"]);
    assert!(job["status"]["completionTime"].is_string());
    assert_eq!(job["status"]["uncountedTerminatedPods"], json!({}));
    let types: Vec<&str> = job["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    let pods = items(
        &server,
        "/api/v1/namespaces/default/pods?labelSelector=job-name%3Dpi",
    );
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0]["status"]["phase"], "Succeeded");
    // Counted: the tracking finalizer is gone.
    assert!(
        pods[0]["metadata"].get("finalizers").is_none(),
        "{}",
        pods[0]["metadata"]
    );

    let manifests = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "indexed"},
         "spec": {"completions": 4, "parallelism": 2, "completionMode": "Indexed",
                  "template": {"spec": {"restartPolicy": "Never",
                      "containers": [{"name": "c", "image": "busybox"}]}}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "failing"},
         "spec": {"backoffLimit": 1,
                  "template": {"metadata": {"annotations": {"sim.crd-apiserver.io/outcome": "fail"}},
                               "spec": {"restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "busybox"}]}}}},
    ]});
    let file = server.write_file("jobs.json", &manifests.to_string());
    kubectl_ok(&server, &["apply", "-f", file.to_str().expect("path")]);
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Complete",
            "job/indexed",
            "--timeout=20s",
        ],
    );
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Failed",
            "job/failing",
            "--timeout=20s",
        ],
    );
    let indexed = get_json(&server, "/apis/batch/v1/namespaces/default/jobs/indexed");
    assert_eq!(indexed["status"]["succeeded"], 4);
    assert_eq!(indexed["status"]["completedIndexes"], "0-3");
    let pods = items(
        &server,
        "/api/v1/namespaces/default/pods?labelSelector=job-name%3Dindexed",
    );
    let mut hosts: Vec<&str> = pods
        .iter()
        .filter_map(|p| p["spec"]["hostname"].as_str())
        .collect();
    hosts.sort();
    assert_eq!(hosts, ["indexed-0", "indexed-1", "indexed-2", "indexed-3"]);
    let failing = get_json(&server, "/apis/batch/v1/namespaces/default/jobs/failing");
    assert_eq!(failing["status"]["failed"], 2, "{}", failing["status"]);
    let failed = failing["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "Failed")
        .cloned()
        .expect("Failed");
    assert_eq!(failed["reason"], "BackoffLimitExceeded");
    assert_eq!(
        failed["message"],
        "Job has reached the specified backoff limit"
    );
}

#[test]
fn a_cronjob_fires_when_the_clock_is_advanced() {
    let server = cluster();
    let http = server.http();
    kubectl_ok(
        &server,
        &[
            "create",
            "cronjob",
            "backup",
            "--image=busybox",
            "--schedule=0 * * * *",
            "--",
            "echo",
            "hi",
        ],
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(items(&server, "/apis/batch/v1/namespaces/default/jobs").is_empty());
    let advance = |by: &str| {
        let resp = http
            .request(
                "POST",
                &format!("/debug/crd-apiserver/clock?advance={by}"),
                &[],
                &[],
                None,
            )
            .expect("advance");
        assert_eq!(resp.status, 200, "{}", resp.text());
        resp.json().expect("json")
    };
    let clock = advance("1h");
    assert_eq!(clock["offsetSeconds"], 3600);
    let job = poll(WAIT, || {
        items(&server, "/apis/batch/v1/namespaces/default/jobs")
            .into_iter()
            .next()
    })
    .expect("a Job at the top of the hour");
    let name = job["metadata"]["name"].as_str().expect("name").to_string();
    let minutes: i64 = name
        .strip_prefix("backup-")
        .and_then(|m| m.parse().ok())
        .expect("minutes");
    assert_eq!(minutes % 60, 0, "{name}");
    let scheduled = job["metadata"]["annotations"]
        ["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .expect("scheduled");
    assert!(scheduled.ends_with(":00:00Z"), "{scheduled}");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for=condition=Complete",
            &format!("job/{name}"),
            "--timeout=20s",
        ],
    );
    // Three more hours: the missed times collapse into the latest, one more Job.
    advance("3h");
    let two = poll(WAIT, || {
        let jobs = items(&server, "/apis/batch/v1/namespaces/default/jobs");
        (jobs.len() == 2).then_some(jobs)
    });
    assert!(
        two.is_some(),
        "{:?}",
        items(&server, "/apis/batch/v1/namespaces/default/jobs")
    );
    let cj = poll(WAIT, || {
        let cj = get_json(&server, "/apis/batch/v1/namespaces/default/cronjobs/backup");
        cj["status"]["lastSuccessfulTime"].is_string().then_some(cj)
    })
    .expect("a successful run recorded");
    assert!(cj["status"]["lastScheduleTime"].is_string());
    // A duration Go does not parse is refused.
    let resp = http
        .request(
            "POST",
            "/debug/crd-apiserver/clock?advance=soon",
            &[],
            &[],
            None,
        )
        .expect("advance");
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.json().expect("json")["message"],
        "advance: time: invalid duration \"soon\""
    );
}

#[test]
fn budgets_guard_a_drain_and_autoscalers_report_their_target() {
    let server = cluster();
    kubectl_ok(
        &server,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    kubectl_ok(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=20s"],
    );
    kubectl_ok(
        &server,
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=2",
        ],
    );
    kubectl_ok(
        &server,
        &[
            "autoscale",
            "deployment",
            "web",
            "--min=2",
            "--max=5",
            "--cpu-percent=80",
        ],
    );
    let pdb = poll(WAIT, || {
        let p = get_json(
            &server,
            "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web",
        );
        (p["status"]["expectedPods"] == 3).then_some(p)
    })
    .expect("the budget's status");
    assert_eq!(pdb["status"]["currentHealthy"], 3);
    assert_eq!(pdb["status"]["desiredHealthy"], 2);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 1);
    assert_eq!(pdb["status"]["conditions"][0]["reason"], "SufficientPods");
    let hpa = poll(WAIT, || {
        let h = get_json(
            &server,
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web",
        );
        h["status"]["conditions"].is_array().then_some(h)
    })
    .expect("the autoscaler's status");
    assert_eq!(hpa["status"]["currentReplicas"], 3);
    let reasons: Vec<&str> = hpa["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .filter_map(|c| c["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["SucceededGetScale", "FailedGetResourceMetric"]);
    // A drain evicts within the budget; the replacement lands on another node.
    kubectl_ok(
        &server,
        &["drain", "node-1", "--ignore-daemonsets", "--timeout=60s"],
    );
    let moved = poll(WAIT, || {
        let pods = items(
            &server,
            "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb",
        );
        let running = pods
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count();
        (running == 3 && pods.iter().all(|p| p["spec"]["nodeName"] != "node-1")).then_some(())
    });
    assert!(
        moved.is_some(),
        "{:?}",
        items(&server, "/api/v1/namespaces/default/pods")
    );
}

#[test]
fn events_expire_when_the_clock_passes_their_ttl() {
    let server = TestServer::start();
    let http = server.http();
    let event = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Started", "message": "started", "type": "Normal",
    });
    let resp = http.send_json("POST", "/api/v1/namespaces/default/events", &event);
    assert_eq!(resp.status, 201, "{}", resp.text());
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(http.get("/api/v1/namespaces/default/events/e1").status, 200);
    let resp = http
        .request(
            "POST",
            "/debug/crd-apiserver/clock?advance=61m",
            &[],
            &[],
            None,
        )
        .expect("advance");
    assert_eq!(resp.status, 200);
    let gone = poll(WAIT, || {
        (http.get("/api/v1/namespaces/default/events/e1").status == 404).then_some(())
    });
    assert!(
        gone.is_some(),
        "the Event outlived kube's default one-hour TTL"
    );
}

#[test]
fn replication_controllers_run_and_pods_of_a_deleted_node_are_collected() {
    let server = cluster();
    let http = server.http();
    let rc = json!({"apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "legacy"},
        "spec": {"replicas": 2, "selector": {"app": "legacy"},
                 "template": {"metadata": {"labels": {"app": "legacy"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let resp = http.send_json(
        "POST",
        "/api/v1/namespaces/default/replicationcontrollers",
        &rc,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let rc = poll(WAIT, || {
        let rc = get_json(
            &server,
            "/api/v1/namespaces/default/replicationcontrollers/legacy",
        );
        (rc["status"]["readyReplicas"] == 2).then_some(rc)
    })
    .expect("two ready replicas");
    assert!(
        rc["status"].get("terminatingReplicas").is_none(),
        "{}",
        rc["status"]
    );
    let pods = items(
        &server,
        "/api/v1/namespaces/default/pods?labelSelector=app%3Dlegacy",
    );
    assert_eq!(
        pods[0]["metadata"]["ownerReferences"][0]["kind"],
        "ReplicationController"
    );

    // A node with no kubelet, a pod bound to it, then the node goes: podgc collects it.
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "extra"}});
    assert_eq!(http.send_json("POST", "/api/v1/nodes", &node).status, 201);
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stranded"},
        "spec": {"nodeName": "extra", "containers": [{"name": "c", "image": "busybox"}]}});
    let resp = http.send_json("POST", "/api/v1/namespaces/default/pods", &pod);
    assert_eq!(resp.status, 201, "{}", resp.text());
    kubectl_ok(&server, &["delete", "node", "extra"]);
    let gone = poll(WAIT, || {
        (http.get("/api/v1/namespaces/default/pods/stranded").status == 404).then_some(())
    });
    assert!(gone.is_some(), "the pod of the deleted node stayed");
}

#[test]
fn pods_on_simulated_nodes_do_what_their_annotation_says() {
    let server = cluster();
    let http = server.http();
    let pod = |name: &str, outcome: Option<&str>| {
        let mut p = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "busybox"}]},
        });
        if let Some(o) = outcome {
            p["metadata"]["annotations"] = json!({"sim.crd-apiserver.io/outcome": o});
        }
        let resp = http.send_json("POST", "/api/v1/namespaces/default/pods", &p);
        assert_eq!(resp.status, 201, "{}", resp.text());
    };
    pod("runs", None);
    pod("crashes", Some("crash-loop"));
    pod("unready", Some("unready"));
    pod("exits", Some("succeed"));
    let settled = |name: &str, check: &dyn Fn(&Value) -> bool| {
        poll(WAIT, || {
            let p = get_json(&server, &format!("/api/v1/namespaces/default/pods/{name}"));
            check(&p).then_some(p)
        })
        .unwrap_or_else(|| panic!("{name} never settled"))
    };
    let runs = settled("runs", &|p| p["status"]["phase"] == "Running");
    let conditions: Vec<(&str, &str)> = runs["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("PodReadyToStartContainers", "True"),
            ("Initialized", "True"),
            ("Ready", "True"),
            ("ContainersReady", "True"),
            ("PodScheduled", "True"),
        ]
    );
    let crashes = settled("crashes", &|p| p["status"]["containerStatuses"].is_array());
    assert_eq!(
        crashes["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "CrashLoopBackOff"
    );
    let unready = settled("unready", &|p| p["status"]["phase"] == "Running");
    assert_eq!(unready["status"]["containerStatuses"][0]["ready"], false);
    let exits = settled("exits", &|p| p["status"]["phase"] == "Succeeded");
    assert_eq!(
        exits["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    let table = kubectl_ok(&server, &["get", "pods", "--no-headers"]);
    assert!(table.contains("CrashLoopBackOff"), "{table}");
    assert!(table.contains("Completed"), "{table}");
    // A pod held by a finalizer ends, then goes once the finalizer is removed.
    let mut held = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/hold"]},
        "spec": {"containers": [{"name": "app", "image": "busybox"}]},
    });
    assert_eq!(
        http.send_json("POST", "/api/v1/namespaces/default/pods", &held)
            .status,
        201
    );
    settled("held", &|p| p["status"]["phase"] == "Running");
    let resp = http.request(
        "DELETE",
        "/api/v1/namespaces/default/pods/held",
        &[],
        &[],
        None,
    );
    assert_eq!(resp.expect("delete").status, 200);
    settled("held", &|p| p["status"]["phase"] == "Failed");
    // The simulated kubelet may still write the pod's status: read, change, write
    // again on a conflict, as client-go's RetryOnConflict does (CI once got a 409).
    let mut removed = None;
    for _ in 0..20 {
        held = get_json(&server, "/api/v1/namespaces/default/pods/held");
        held["metadata"]["finalizers"] = json!([]);
        let resp = http.send_json("PUT", "/api/v1/namespaces/default/pods/held", &held);
        if resp.status != 409 {
            removed = Some(resp);
            break;
        }
    }
    let resp = removed.expect("the finalizer removed within 20 conflicts");
    assert_eq!(resp.status, 200, "{}", resp.text());
    let gone = poll(WAIT, || {
        (http.get("/api/v1/namespaces/default/pods/held").status == 404).then_some(())
    });
    assert!(gone.is_some());
}

const WIDGETS: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.gc.example.com"},
  "spec": {"group": "gc.example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
}"#;

#[test]
fn garbage_collection_cascades_between_custom_resources_and_built_ins() {
    let server = TestServer::start_with(&["--controllers=garbagecollector"]);
    let http = server.http();
    let crd: Value = serde_json::from_str(WIDGETS).expect("crd");
    let resp = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let widgets = "/apis/gc.example.com/v1/namespaces/default/widgets";
    assert!(poll(WAIT, || (http.get(widgets).status == 200).then_some(())).is_some());
    let create = |path: &str, obj: Value| -> Value {
        let resp = http.send_json("POST", path, &obj);
        assert_eq!(resp.status, 201, "{path}: {}", resp.text());
        resp.json().expect("json")
    };
    let widget = |name: &str| {
        create(
            widgets,
            json!({"apiVersion": "gc.example.com/v1", "kind": "Widget",
            "metadata": {"name": name}}),
        )
    };
    let owner_ref = |owner: &Value, block: bool| {
        json!({"apiVersion": owner["apiVersion"], "kind": owner["kind"],
               "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"],
               "blockOwnerDeletion": block})
    };
    let config_map = |name: &str, owners: Vec<Value>| {
        create(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1",
            "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": owners}}),
        )
    };
    let gone = |path: &str| poll(WAIT, || (http.get(path).status == 404).then_some(())).is_some();
    let delete = |path: &str, policy: &str| {
        let body = json!({"propagationPolicy": policy})
            .to_string()
            .into_bytes();
        let headers = [("Content-Type".to_string(), "application/json".to_string())];
        let resp = http
            .request("DELETE", path, &[], &headers, Some(body))
            .expect("delete");
        assert!(
            resp.status == 200 || resp.status == 202,
            "{path}: {}",
            resp.text()
        );
    };

    // Background: a custom resource owning a ConfigMap.
    let w = widget("background");
    config_map("of-background", vec![owner_ref(&w, false)]);
    delete(&format!("{widgets}/background"), "Background");
    assert!(gone("/api/v1/namespaces/default/configmaps/of-background"));

    // And the reverse: a ConfigMap owning a custom resource.
    let cm = config_map("owner", vec![]);
    create(
        widgets,
        json!({"apiVersion": "gc.example.com/v1", "kind": "Widget",
        "metadata": {"name": "owned", "ownerReferences": [owner_ref(&cm, false)]}}),
    );
    delete("/api/v1/namespaces/default/configmaps/owner", "Background");
    assert!(gone(&format!("{widgets}/owned")));

    // Foreground: the owner waits, with kube's finalizer, until its blocking dependent
    // is gone.
    let w = widget("foreground");
    config_map("of-foreground", vec![owner_ref(&w, true)]);
    delete(&format!("{widgets}/foreground"), "Foreground");
    assert!(gone("/api/v1/namespaces/default/configmaps/of-foreground"));
    assert!(gone(&format!("{widgets}/foreground")));

    // Orphan: the dependent stays, without the reference.
    let w = widget("orphan");
    config_map("of-orphan", vec![owner_ref(&w, false)]);
    delete(&format!("{widgets}/orphan"), "Orphan");
    assert!(gone(&format!("{widgets}/orphan")));
    let cm = get_json(&server, "/api/v1/namespaces/default/configmaps/of-orphan");
    assert!(
        cm["metadata"].get("ownerReferences").is_none(),
        "{}",
        cm["metadata"]
    );

    // Two owners, one gone: the dependent stays with the other.
    let a = widget("a");
    let b = widget("b");
    config_map("shared", vec![owner_ref(&a, false), owner_ref(&b, false)]);
    delete(&format!("{widgets}/a"), "Background");
    let kept = poll(WAIT, || {
        let cm = get_json(&server, "/api/v1/namespaces/default/configmaps/shared");
        (cm["metadata"]["ownerReferences"].as_array().map(Vec::len) == Some(1)).then_some(cm)
    })
    .expect("the dangling reference is dropped");
    assert_eq!(kept["metadata"]["ownerReferences"][0]["name"], "b");
}

/// kube's e2e "should support cascading deletion of custom resources": a cluster-scoped
/// custom resource owned by another of its kind goes with it in background deletion,
/// with kube's default controllers (`--controllers=*`), on both backends.
#[test]
fn background_deletion_cascades_between_custom_resources() {
    let server = TestServer::start_with(&["--controllers=*"]);
    let http = server.http();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "noxus.mygroup.example.com"},
        "spec": {"group": "mygroup.example.com", "scope": "Cluster",
          "names": {"plural": "noxus", "singular": "nonenglishnoxu", "kind": "WishIHadChosenNoxu",
                    "listKind": "NoxuItemList"},
          "versions": [{"name": "v1beta1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    });
    let resp = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let noxus = "/apis/mygroup.example.com/v1beta1/noxus";
    assert!(poll(WAIT, || (http.get(noxus).status == 200).then_some(())).is_some());
    let create = |obj: Value| -> Value {
        let resp = http.send_json("POST", noxus, &obj);
        assert_eq!(resp.status, 201, "{}", resp.text());
        resp.json().expect("json")
    };
    let noxu = |name: &str, owners: Value| {
        json!({"apiVersion": "mygroup.example.com/v1beta1", "kind": "WishIHadChosenNoxu",
               "metadata": {"name": name, "ownerReferences": owners}})
    };
    let owner = create(noxu("owner", json!([])));
    create(noxu(
        "dependent",
        json!([{"apiVersion": "mygroup.example.com/v1beta1", "kind": "WishIHadChosenNoxu",
                "name": "owner", "uid": owner["metadata"]["uid"]}]),
    ));
    let delete = |name: &str, policy: &str| {
        let body = json!({"propagationPolicy": policy})
            .to_string()
            .into_bytes();
        let headers = [("Content-Type".to_string(), "application/json".to_string())];
        let resp = http
            .request(
                "DELETE",
                &format!("{noxus}/{name}"),
                &[],
                &headers,
                Some(body),
            )
            .expect("delete");
        assert!(
            resp.status == 200 || resp.status == 202,
            "{name}: {}",
            resp.text()
        );
    };
    delete("owner", "Background");
    // The e2e's canary: a foreground deletion the collector must finish.
    create(noxu("canary", json!([])));
    delete("canary", "Foreground");
    let gone = |name: &str| {
        let path = format!("{noxus}/{name}");
        poll(WAIT, || (http.get(&path).status == 404).then_some(())).is_some()
    };
    assert!(
        gone("canary"),
        "the canary's foreground deletion never finished"
    );
    assert!(gone("owner"));
    assert!(gone("dependent"), "the dependent outlived its owner");
}

#[test]
fn new_namespaces_get_a_default_service_account_and_the_root_ca() {
    let server = TestServer::start_with(&["--controllers=serviceaccount,root-ca-cert-publisher"]);
    kubectl_ok(&server, &["create", "namespace", "team-a"]);
    let found = poll(WAIT, || {
        let sa = server
            .http()
            .get("/api/v1/namespaces/team-a/serviceaccounts/default");
        let cm = server
            .http()
            .get("/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt");
        (sa.status == 200 && cm.status == 200).then_some(cm.json().expect("json"))
    })
    .expect("default ServiceAccount and kube-root-ca.crt");
    assert!(found["data"].get("ca.crt").is_some(), "{found}");
    // Deleted, it comes back.
    kubectl_ok(
        &server,
        &["delete", "serviceaccount", "default", "-n", "team-a"],
    );
    let back = poll(WAIT, || {
        (server
            .http()
            .get("/api/v1/namespaces/team-a/serviceaccounts/default")
            .status
            == 200)
            .then_some(())
    });
    assert!(back.is_some());
}

#[test]
fn a_legacy_token_secret_is_filled_and_its_token_authenticates() {
    let server = TestServer::start_with(&["--controllers=serviceaccount,serviceaccount-token"]);
    let http = server.http();
    kubectl_ok(&server, &["create", "serviceaccount", "robot"]);
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}},
        "type": "kubernetes.io/service-account-token"});
    let resp = http.send_json("POST", "/api/v1/namespaces/default/secrets", &secret);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let filled = poll(WAIT, || {
        let s = get_json(&server, "/api/v1/namespaces/default/secrets/robot-token");
        s["data"]["token"].is_string().then_some(s)
    })
    .expect("data.token");
    use base64::Engine;
    let decode = |v: &Value| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or(""))
            .expect("base64");
        String::from_utf8(bytes).expect("utf-8")
    };
    assert_eq!(decode(&filled["data"]["namespace"]), "default");
    let account = get_json(&server, "/api/v1/namespaces/default/serviceaccounts/robot");
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        account["metadata"]["uid"]
    );
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": decode(&filled["data"]["token"])}});
    let resp = http.send_json(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &review,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let status = resp.json().expect("json")["status"].clone();
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
}

#[test]
fn without_flags_nothing_moves() {
    let server = TestServer::start();
    kubectl_ok(&server, &["create", "deployment", "web", "--image=nginx"]);
    kubectl_ok(&server, &["create", "namespace", "quiet"]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(items(&server, "/apis/apps/v1/namespaces/default/replicasets").is_empty());
    assert!(items(&server, "/api/v1/nodes").is_empty());
    assert_eq!(
        server
            .http()
            .get("/api/v1/namespaces/quiet/serviceaccounts/default")
            .status,
        404
    );
    let out = server.kubectl(&["get", "deployment", "web", "-o", "jsonpath={.status}"]);
    // kube-apiserver alone: an empty status, never filled in.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{}");
}

#[test]
fn unknown_controllers_are_refused_in_kubes_words() {
    let out = std::process::Command::new(common::server_binary())
        .args(["--controllers=deployment,red-controller", "--port", "0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("\"red-controller\" is not in the list of known controllers"),
        "{stderr}"
    );
}
