//! kube's built-in admission plugins over HTTP, on by default as in kube-apiserver and
//! switched with `--enable-admission-plugins` / `--disable-admission-plugins`
//! (ServiceAccount, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! StorageObjectInUseProtection, DefaultIngressClass, NamespaceLifecycle), and what a
//! delete does per kind: graceful pod deletion, the garbage collector's finalizers,
//! the deleted object answered where kube answers it.

mod common;

use common::{server_binary, TestServer};
use serde_json::{json, Value};

fn pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
}

fn namespace(http: &common::Http, name: &str) {
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

fn service_account(http: &common::Http, ns: &str, body: Value) {
    let r = http.send_json(
        "POST",
        &format!("/api/v1/namespaces/{ns}/serviceaccounts"),
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn a_pod_needs_its_service_account_and_gets_its_token_volume() {
    let server = TestServer::start();
    let http = server.http();
    namespace(&http, "sa");
    let pods = "/api/v1/namespaces/sa/pods";
    let r = http.send_json("POST", pods, &pod("p"));
    assert_eq!(r.status, 403, "{}", r.text());
    let status = r.json().unwrap();
    assert_eq!(
        status["message"],
        "pods \"p\" is forbidden: error looking up service account sa/default: serviceaccount \"default\" not found"
    );
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(status["details"], json!({"name": "p", "kind": "pods"}));

    service_account(
        &http,
        "sa",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"},
               "imagePullSecrets": [{"name": "registry"}]}),
    );
    let r = http.send_json("POST", pods, &pod("p"));
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json().unwrap();
    let spec = &p["spec"];
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["serviceAccount"], "default");
    assert_eq!(spec["imagePullSecrets"], json!([{"name": "registry"}]));
    let volume = &spec["volumes"][0];
    let name = volume["name"].as_str().unwrap();
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{name}"
    );
    assert_eq!(
        volume["projected"],
        json!({"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ]})
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{"name": name, "readOnly": true, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}])
    );
    // DefaultTolerationSeconds and Priority, on by default.
    assert_eq!(
        spec["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");

    // A ServiceAccount that opts out of the token leaves the pod without the volume.
    service_account(
        &http,
        "sa",
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "quiet"},
               "automountServiceAccountToken": false}),
    );
    let mut quiet = pod("q");
    quiet["spec"]["serviceAccountName"] = json!("quiet");
    let r = http.send_json("POST", pods, &quiet);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.json().unwrap()["spec"].get("volumes").is_none());
}

#[test]
fn envtest_turns_the_service_account_plugin_off() {
    let server = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let http = server.http();
    let r = http.send_json("POST", "/api/v1/namespaces/default/pods", &pod("p"));
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json().unwrap();
    assert!(p["spec"].get("volumes").is_none(), "{p}");
    assert!(p["spec"].get("serviceAccountName").is_none(), "{p}");
    // The other default plugins still run.
    assert_eq!(p["spec"]["priority"], 0);
}

#[test]
fn unknown_or_contradictory_plugin_flags_stop_the_server_in_kubes_words() {
    let out = std::process::Command::new(server_binary())
        .args([
            "--port",
            "0",
            "--enable-admission-plugins=Priority,NoSuchPlugin",
            "--disable-admission-plugins",
            "Priority",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("enable-admission-plugins plugin \"NoSuchPlugin\" is unknown"),
        "{err}"
    );
    assert!(
        err.contains(
            "[Priority] in enable-admission-plugins and disable-admission-plugins overlapped"
        ),
        "{err}"
    );
}

#[test]
fn priority_classes_set_a_pods_priority_and_only_one_is_the_default() {
    let server = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let http = server.http();
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    // kube-apiserver's two system classes exist from the start.
    let system = http
        .get(&format!("{classes}/system-node-critical"))
        .json()
        .unwrap();
    assert_eq!(system["value"], 2_000_001_000);
    assert_eq!(system["preemptionPolicy"], "PreemptLowerPriority");
    let system = http
        .get(&format!("{classes}/system-cluster-critical"))
        .json()
        .unwrap();
    assert_eq!(system["value"], 2_000_000_000);
    let class = |name: &str, value: i64, default: bool| {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name}, "value": value, "globalDefault": default})
    };
    let r = http.send_json("POST", classes, &class("normal", 100, true));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("POST", classes, &class("other", 5, true));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "priorityclasses.scheduling.k8s.io \"other\" is forbidden: PriorityClass normal is already marked as default. Only one default can exist"
    );
    let r = http.send_json("POST", classes, &class("high", 1000, false));
    assert_eq!(r.status, 201, "{}", r.text());

    let pods = "/api/v1/namespaces/default/pods";
    let r = http.send_json("POST", pods, &pod("by-default"));
    assert_eq!(r.status, 201, "{}", r.text());
    let spec = r.json().unwrap()["spec"].clone();
    assert_eq!(spec["priority"], 100);
    assert_eq!(spec["priorityClassName"], "normal");
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");

    let mut named = pod("named");
    named["spec"]["priorityClassName"] = json!("high");
    let r = http.send_json("POST", pods, &named);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json().unwrap()["spec"]["priority"], 1000);

    let mut missing = pod("missing");
    missing["spec"]["priorityClassName"] = json!("nope");
    let r = http.send_json("POST", pods, &missing);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods \"missing\" is forbidden: no PriorityClass with name nope was found"
    );

    let mut wrong = pod("wrong");
    wrong["spec"]["priority"] = json!(7);
    let r = http.send_json("POST", pods, &wrong);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods \"wrong\" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 100 from the given PriorityClass name"
    );
}

#[test]
fn claims_get_the_default_class_and_the_protection_finalizer() {
    let server = TestServer::start();
    let http = server.http();
    let class = |name: &str, default: bool| {
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": name, "annotations": {"storageclass.kubernetes.io/is-default-class": default.to_string()}},
               "provisioner": "example.com/disk"})
    };
    for (name, default) in [("slow", false), ("standard", true)] {
        let r = http.send_json(
            "POST",
            "/apis/storage.k8s.io/v1/storageclasses",
            &class(name, default),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let claims = "/api/v1/namespaces/default/persistentvolumeclaims";
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let r = http.send_json("POST", claims, &claim);
    assert_eq!(r.status, 201, "{}", r.text());
    let c = r.json().unwrap();
    assert_eq!(c["spec"]["storageClassName"], "standard");
    assert_eq!(
        c["metadata"]["finalizers"],
        json!(["kubernetes.io/pvc-protection"])
    );

    // The finalizer holds the claim: the delete answers it terminating.
    let r = http.send_json("DELETE", &format!("{claims}/data"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let c = r.json().unwrap();
    assert_eq!(c["kind"], "PersistentVolumeClaim");
    assert!(c["metadata"]["deletionTimestamp"].is_string(), "{c}");
    let r = http.merge_patch(
        &format!("{claims}/data"),
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(http.get(&format!("{claims}/data")).status, 404);

    // Persistent volumes get theirs.
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv1"}}});
    let r = http.send_json("POST", "/api/v1/persistentvolumes", &pv);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["metadata"]["finalizers"],
        json!(["kubernetes.io/pv-protection"])
    );
}

#[test]
fn ingresses_get_the_default_ingress_class() {
    let server = TestServer::start();
    let http = server.http();
    let r = http.send_json(
        "POST",
        "/apis/networking.k8s.io/v1/ingressclasses",
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
                "metadata": {"name": "nginx", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
                "spec": {"controller": "k8s.io/ingress-nginx"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json(
        "POST",
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
                "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json().unwrap()["spec"]["ingressClassName"], "nginx");
}

#[test]
fn without_namespace_lifecycle_objects_land_in_missing_namespaces() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let server = TestServer::start();
    let r = server
        .http()
        .send_json("POST", "/api/v1/namespaces/nowhere/configmaps", &cm);
    assert_eq!(r.status, 404, "{}", r.text());
    let server = TestServer::start_with(&["--disable-admission-plugins=NamespaceLifecycle"]);
    let r = server
        .http()
        .send_json("POST", "/api/v1/namespaces/nowhere/configmaps", &cm);
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn pods_are_deleted_gracefully() {
    let server = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let http = server.http();
    let pods = "/api/v1/namespaces/default/pods";
    // Scheduled (a node named): the grace period holds it.
    let mut scheduled = pod("scheduled");
    scheduled["spec"]["nodeName"] = json!("node-1");
    let r = http.send_json("POST", pods, &scheduled);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("DELETE", &format!("{pods}/scheduled"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let p = r.json().unwrap();
    assert_eq!(p["kind"], "Pod");
    assert_eq!(p["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(p["metadata"]["generation"], 2);
    assert_eq!(http.get(&format!("{pods}/scheduled")).status, 200);
    // A second delete with no shorter period changes nothing.
    let again = http.send_json("DELETE", &format!("{pods}/scheduled"), &json!({}));
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(
        again.json().unwrap()["metadata"]["resourceVersion"],
        p["metadata"]["resourceVersion"]
    );
    // A shorter one moves it; zero removes it.
    let r = http.send_json(
        "DELETE",
        &format!("{pods}/scheduled"),
        &json!({"gracePeriodSeconds": 5}),
    );
    assert_eq!(
        r.json().unwrap()["metadata"]["deletionGracePeriodSeconds"],
        5
    );
    let r = http.send_json(
        "DELETE",
        &format!("{pods}/scheduled?gracePeriodSeconds=0"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(http.get(&format!("{pods}/scheduled")).status, 404);

    // Unscheduled: marked, then removed at once; watchers see both.
    let r = http.send_json("POST", pods, &pod("pending"));
    assert_eq!(r.status, 201, "{}", r.text());
    let rv = r.json().unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let r = http.send_json("DELETE", &format!("{pods}/pending"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["metadata"]["deletionGracePeriodSeconds"],
        0
    );
    assert_eq!(http.get(&format!("{pods}/pending")).status, 404);
    let w = http.watch_for(
        pods,
        1,
        &[
            ("resourceVersion", rv.as_str()),
            ("fieldSelector", "metadata.name=pending"),
        ],
    );
    let events: Vec<Value> = w
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types, ["MODIFIED", "DELETED"], "{events:?}");
    assert!(events[0]["object"]["metadata"]["deletionTimestamp"].is_string());
}

#[test]
fn deletes_add_the_garbage_collectors_finalizers() {
    let server = TestServer::start();
    let http = server.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    let r = http.send_json(
        "POST",
        cms,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fg"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json(
        "DELETE",
        &format!("{cms}/fg"),
        &json!({"propagationPolicy": "Foreground"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let cm = r.json().unwrap();
    assert_eq!(cm["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    assert!(cm["metadata"]["deletionTimestamp"].is_string());
    // Both options at once are kube's 422.
    let r = http.send_json(
        "DELETE",
        &format!("{cms}/fg"),
        &json!({"propagationPolicy": "Orphan", "orphanDependents": true}),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
    );

    // batch/v1 Jobs orphan their pods by default, and say so.
    let jobs = "/apis/batch/v1/namespaces/default/jobs";
    let r = http.send_json(
        "POST",
        jobs,
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("DELETE", &format!("{jobs}/j"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r
        .header("warning")
        .unwrap_or_default()
        .contains("child pods are preserved by default when jobs are deleted"));
    assert_eq!(
        r.json().unwrap()["metadata"]["finalizers"],
        json!(["orphan"])
    );
}

#[test]
fn limit_ranges_default_and_bound_resources() {
    let server = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let http = server.http();
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces/default/limitranges",
        &json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
                "spec": {"limits": [
                    {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
                     "defaultRequest": {"cpu": "250m", "memory": "128Mi"}, "max": {"cpu": "1"}},
                    {"type": "PersistentVolumeClaim", "max": {"storage": "2Gi"}}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let pods = "/api/v1/namespaces/default/pods";
    let r = http.send_json("POST", pods, &pod("defaulted"));
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json().unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "250m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app"
    );
    assert_eq!(p["status"]["qosClass"], "Burstable");

    let mut big = pod("big");
    big["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "2"}});
    let r = http.send_json("POST", pods, &big);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
    );
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces/default/persistentvolumeclaims",
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "huge"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "persistentvolumeclaims \"huge\" is forbidden: maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"
    );
}

#[test]
fn resource_quotas_count_once_their_status_is_known() {
    let server = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let http = server.http();
    namespace(&http, "quota");
    let quotas = "/api/v1/namespaces/quota/resourcequotas";
    let pods = "/api/v1/namespaces/quota/pods";
    let r = http.send_json(
        "POST",
        quotas,
        &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
                "spec": {"hard": {"pods": "2", "requests.cpu": "1"}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // No quota controller has given it a status: it constrains nothing, as on kube.
    let r = http.send_json("POST", pods, &pod("free"));
    assert_eq!(r.status, 201, "{}", r.text());

    // With a status (here set by the test, as a quota controller would), it counts.
    let r = http.merge_patch(
        &format!("{quotas}/q/status"),
        &json!({"status": {"hard": {"pods": "2", "requests.cpu": "1"}, "used": {"pods": "0", "requests.cpu": "0"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.send_json("POST", pods, &pod("bare"));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods \"bare\" is forbidden: failed quota: q: must specify requests.cpu for: app"
    );
    let sized = |name: &str, cpu: &str| {
        let mut p = pod(name);
        p["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": cpu}});
        p
    };
    let r = http.send_json("POST", pods, &sized("a", "600m"));
    assert_eq!(r.status, 201, "{}", r.text());
    let q = http.get(&format!("{quotas}/q")).json().unwrap();
    assert_eq!(
        q["status"]["used"],
        json!({"pods": "1", "requests.cpu": "600m"})
    );
    let r = http.send_json("POST", pods, &sized("b", "500m"));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods \"b\" is forbidden: exceeded quota: q, requested: requests.cpu=500m, used: requests.cpu=600m, limited: requests.cpu=1"
    );
    // A dry run is checked but not counted.
    let r = http.request(
        "POST",
        pods,
        &[("dryRun".into(), "All".into())],
        &[("Content-Type".into(), "application/json".into())],
        Some(serde_json::to_vec(&sized("c", "400m")).unwrap()),
    );
    let r = r.unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let q = http.get(&format!("{quotas}/q")).json().unwrap();
    assert_eq!(q["status"]["used"]["requests.cpu"], "600m");

    // Hard limits whose usage is unknown refuse what they cover.
    let r = http.merge_patch(
        &format!("{quotas}/q/status"),
        &json!({"status": {"hard": {"configmaps": "5"}, "used": {"configmaps": null}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces/quota/configmaps",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "configmaps \"cm\" is forbidden: status unknown for quota: q, resources: configmaps"
    );
}
