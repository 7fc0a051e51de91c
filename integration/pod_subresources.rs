//! The subresources a scheduler, `kubectl drain`, `kubectl debug` and a CSR approver
//! use: `pods/binding` (and `bindings`), `pods/eviction` with PodDisruptionBudgets,
//! `pods/ephemeralcontainers`, `pods/resize` and `certificatesigningrequests/approval`,
//! each answered as kube-apiserver without controllers answers it.

mod common;

use common::TestServer;
use serde_json::{json, Value};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn server() -> TestServer {
    TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"])
}

fn create_pod(http: &common::Http, name: &str, labels: Value) -> Value {
    let r = http.send_json(
        "POST",
        PODS,
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                "spec": {"containers": [{"name": "app", "image": "nginx",
                                         "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}}}]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json().unwrap()
}

fn success_201(r: &common::HttpResponse) {
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().unwrap(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
}

#[test]
fn binding_assigns_a_node_once() {
    let server = server();
    let http = server.http();
    create_pod(&http, "p", json!({}));
    let binding = |pod: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": pod, "annotations": {"scheduled-by": "test"}},
               "target": {"kind": "Node", "name": node}})
    };
    let r = http.send_json(
        "POST",
        &format!("{PODS}/p/binding"),
        &binding("other", "n1"),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "name in URL does not match name in Binding object"
    );
    success_201(&http.send_json("POST", &format!("{PODS}/p/binding"), &binding("p", "n1")));
    let p = http.get(&format!("{PODS}/p")).json().unwrap();
    assert_eq!(p["spec"]["nodeName"], "n1");
    assert_eq!(p["metadata"]["annotations"]["scheduled-by"], "test");
    let scheduled = p["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .cloned()
        .unwrap();
    assert_eq!(scheduled["status"], "True");

    let r = http.send_json("POST", &format!("{PODS}/p/binding"), &binding("p", "n2"));
    assert_eq!(r.status, 409, "{}", r.text());
    let s = r.json().unwrap();
    assert_eq!(
        s["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
    );
    assert_eq!(s["reason"], "Conflict");

    // The `bindings` collection names the pod in the body.
    create_pod(&http, "q", json!({}));
    success_201(&http.send_json(
        "POST",
        "/api/v1/namespaces/default/bindings",
        &binding("q", "n2"),
    ));
    assert_eq!(
        http.get(&format!("{PODS}/q")).json().unwrap()["spec"]["nodeName"],
        "n2"
    );
}

#[test]
fn eviction_respects_disruption_budgets() {
    let server = server();
    let http = server.http();
    let evict = |pod: &str| {
        http.send_json(
            "POST",
            &format!("{PODS}/{pod}/eviction"),
            &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": pod}}),
        )
    };
    // A pending pod goes whatever guards it.
    create_pod(&http, "pending", json!({"app": "web"}));
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let r = http.send_json(
        "POST",
        pdbs,
        &json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    success_201(&evict("pending"));
    assert_eq!(http.get(&format!("{PODS}/pending")).status, 404);

    // A running pod: the budget no controller has processed refuses with a 429.
    create_pod(&http, "running", json!({"app": "web"}));
    let r = http.merge_patch(
        &format!("{PODS}/running/status"),
        &json!({"status": {"phase": "Running"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = evict("running");
    assert_eq!(r.status, 429, "{}", r.text());
    let s = r.json().unwrap();
    assert_eq!(s["reason"], "TooManyRequests");
    assert_eq!(
        s["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        s["details"],
        json!({"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget web is still being processed by the server."}],
               "retryAfterSeconds": 10})
    );
    // Processed, with no disruption allowed: refused again; with one: taken.
    let status = |allowed: i64| {
        json!({"status": {"observedGeneration": 1, "disruptionsAllowed": allowed,
                          "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}})
    };
    let r = http.merge_patch(&format!("{pdbs}/web/status"), &status(0));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = evict("running");
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["details"]["causes"][0]["message"],
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    let r = http.merge_patch(&format!("{pdbs}/web/status"), &status(1));
    assert_eq!(r.status, 200, "{}", r.text());
    success_201(&evict("running"));
    assert_eq!(http.get(&format!("{PODS}/running")).status, 404);
    let pdb = http.get(&format!("{pdbs}/web")).json().unwrap();
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0);
    assert!(
        pdb["status"]["disruptedPods"]["running"].is_string(),
        "{pdb}"
    );
}

#[test]
fn ephemeral_containers_and_resize_change_only_their_part() {
    let server = server();
    let http = server.http();
    create_pod(&http, "p", json!({}));
    let r = http.merge_patch(
        &format!("{PODS}/p/ephemeralcontainers"),
        &json!({"metadata": {"labels": {"ignored": "yes"}},
                "spec": {"ephemeralContainers": [{"name": "debug", "image": "busybox"}],
                         "containers": [{"name": "app", "image": "ignored"}]}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let p = r.json().unwrap();
    assert_eq!(p["spec"]["ephemeralContainers"][0]["name"], "debug");
    assert_eq!(p["spec"]["containers"][0]["image"], "nginx");
    assert!(p["metadata"].get("labels").is_none(), "{p}");
    let r = http.get(&format!("{PODS}/p/ephemeralcontainers"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap()["kind"], "Pod");

    let r = http.request(
        "PATCH",
        &format!("{PODS}/p/resize"),
        &[],
        &[
            ("Content-Type".into(), "application/strategic-merge-patch+json".into()),
            ("Accept".into(), "application/json".into()),
        ],
        Some(
            serde_json::to_vec(&json!({"spec": {"containers": [
                {"name": "app", "image": "ignored", "resources": {"requests": {"cpu": "150m"}, "limits": {"cpu": "300m"}}}
            ]}}))
            .unwrap(),
        ),
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let c = &r.json().unwrap()["spec"]["containers"][0];
    assert_eq!(c["resources"]["limits"]["cpu"], "300m");
    assert_eq!(c["image"], "nginx");
}

#[test]
fn csr_approval_writes_only_conditions() {
    let server = server();
    let http = server.http();
    let csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    // A PEM CSR made once with `openssl req -new -newkey ec` (P-256, CN=test), base64.
    let request = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISU1IRUNBUUF3RHpFTk1Bc0dBMVVFQXd3RWRHVnpkREJaTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSApBMElBQkFVMk0rMnhaWXRpSjU3U2NIeGp3aE5zSTczM3dRd1NzSjdZOHA4c2VzenpQaXNuTGRtejRBRFk0ZVpmCnR0cm9QUUI2Q0VSbFIvL2thOHlXR3h0Qk9ER2dBREFLQmdncWhrak9QUVFEQWdOSEFEQkVBaUFTazJaWnJUcksKOWpqa1BmL0NMeHk5TjFZQWxkeDhndUd5c1k3QW1KM0plQUlnWDB6Rno4Si9ONjFoUk1EWnJKM0tTVDhrelhDUQpzUlJWWk8rMk05bGh2SjQ9Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=";
    let r = http.send_json(
        "POST",
        csrs,
        &json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": "c"},
                "spec": {"request": request, "signerName": "example.com/signer", "usages": ["client auth"]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let mut csr = r.json().unwrap();
    csr["status"] = json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Test", "message": "ok"}]});
    csr["spec"]["usages"] = json!(["server auth"]);
    let r = http.send_json("PUT", &format!("{csrs}/c/approval"), &csr);
    assert_eq!(r.status, 200, "{}", r.text());
    let c = r.json().unwrap();
    assert_eq!(c["status"]["conditions"][0]["type"], "Approved");
    assert_eq!(c["spec"]["usages"], json!(["client auth"]));
}

#[test]
fn pods_and_services_are_selected_by_kubes_field_labels() {
    let server = server();
    let http = server.http();
    create_pod(&http, "on-n1", json!({}));
    create_pod(&http, "pending", json!({}));
    let r = http.send_json(
        "POST",
        &format!("{PODS}/on-n1/binding"),
        &json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "on-n1"},
                "target": {"kind": "Node", "name": "n1"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let names = |selector: &str| -> Vec<String> {
        let r = http
            .request(
                "GET",
                PODS,
                &[("fieldSelector".into(), selector.into())],
                &[],
                None,
            )
            .unwrap();
        assert_eq!(r.status, 200, "{selector}: {}", r.text());
        r.json().unwrap()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names("spec.nodeName=n1"), ["on-n1"]);
    assert_eq!(names("spec.nodeName="), ["pending"]);
    assert_eq!(
        names("status.phase=Pending,spec.restartPolicy=Always"),
        ["on-n1", "pending"]
    );
    assert_eq!(names("spec.host=n1"), ["on-n1"]);
    let r = http
        .request(
            "GET",
            PODS,
            &[("fieldSelector".into(), "spec.containers=x".into())],
            &[],
            None,
        )
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "field label not supported: spec.containers"
    );
    // kubectl's own flag, and Services by type.
    let out = server.kubectl(&[
        "get",
        "pods",
        "--field-selector",
        "spec.nodeName=n1",
        "-o",
        "name",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "pod/on-n1\n");
    let r = http.request(
        "GET",
        "/api/v1/namespaces/default/services",
        &[("fieldSelector".into(), "spec.type=ClusterIP".into())],
        &[],
        None,
    );
    let r = r.unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["items"][0]["metadata"]["name"],
        "kubernetes"
    );
}
