//! Services as kube-apiserver serves them: cluster IPs and node ports allocated on
//! create, never twice, given back on delete, kept across restarts on etcd; the
//! `kubernetes` Service at start; `kubectl expose` and `kubectl get svc`.

mod common;

use common::{Etcd, TestServer};
use serde_json::{json, Value};
use std::collections::BTreeSet;

fn service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"ports": [{"port": 80}]}})
}

const SERVICES: &str = "/api/v1/namespaces/default/services";

fn cluster_ip(v: &Value) -> String {
    v["spec"]["clusterIP"].as_str().unwrap_or("").to_string()
}

#[test]
fn concurrent_creates_never_share_an_ip() {
    let server = TestServer::start();
    let http = server.http();
    let ips: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|i| {
                let http = &http;
                s.spawn(move || {
                    let r = http.send_json("POST", SERVICES, &service(&format!("s{i}")));
                    assert_eq!(r.status, 201, "{}", r.text());
                    cluster_ip(&r.json().unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let distinct: BTreeSet<&String> = ips.iter().collect();
    assert_eq!(distinct.len(), 20, "{ips:?}");
    // The kubernetes Service holds the first address.
    assert!(!ips.contains(&"10.0.0.1".to_string()), "{ips:?}");
}

#[test]
fn a_full_range_answers_kubes_error_and_a_delete_frees_an_ip() {
    // A /29 has 6 usable addresses; the kubernetes Service holds the first.
    let server = TestServer::start_with(&["--service-cluster-ip-range", "10.5.0.0/29"]);
    let http = server.http();
    for i in 0..5 {
        let r = http.send_json("POST", SERVICES, &service(&format!("s{i}")));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = http.send_json("POST", SERVICES, &service("full"));
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "Internal error occurred: failed to allocate a serviceIP for Service \"full\": range is full"
    );
    let freed = cluster_ip(&http.get(&format!("{SERVICES}/s3")).json().unwrap());
    let r = http.send_json("DELETE", &format!("{SERVICES}/s3"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.send_json("POST", SERVICES, &service("full"));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(cluster_ip(&r.json().unwrap()), freed);
}

#[test]
fn allocations_survive_a_restart_on_etcd() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let args = ["--service-cluster-ip-range", "10.6.0.0/29"];
    let mut held = BTreeSet::new();
    {
        let server = TestServer::start_on_etcd(&etcd.url(), &args);
        let http = server.http();
        for i in 0..5 {
            let r = http.send_json("POST", SERVICES, &service(&format!("s{i}")));
            assert_eq!(r.status, 201, "{}", r.text());
            held.insert(cluster_ip(&r.json().unwrap()));
        }
    }
    let server = TestServer::start_on_etcd(&etcd.url(), &args);
    let http = server.http();
    let r = http.send_json("POST", SERVICES, &service("after"));
    assert_eq!(r.status, 500, "the range is still full: {}", r.text());
    let mut explicit = service("explicit");
    explicit["spec"]["clusterIP"] = json!(held.iter().next().unwrap());
    let r = http.send_json("POST", SERVICES, &explicit);
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.text().contains("provided IP is already allocated"),
        "{}",
        r.text()
    );
    // The kubernetes Service is still there, with the first address.
    let k = http.get(&format!("{SERVICES}/kubernetes")).json().unwrap();
    assert_eq!(cluster_ip(&k), "10.6.0.1");
}

#[test]
fn kubectl_sees_the_kubernetes_service_and_exposes_a_deployment() {
    let server = TestServer::start();
    let out = server.kubectl(&["get", "svc", "kubernetes", "-n", "default"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE"
        ]
    );
    assert!(
        text.contains("kubernetes   ClusterIP   10.0.0.1     <none>        443/TCP"),
        "{text}"
    );
    let http = server.http();
    let ep = http.get("/api/v1/namespaces/default/endpoints/kubernetes");
    assert_eq!(ep.status, 200);
    let ep = ep.json().unwrap();
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "127.0.0.1");
    let slice = http.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes");
    assert_eq!(slice.status, 200, "{}", slice.text());

    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx",
                                                       "ports": [{"containerPort": 80}]}]}}}});
    let r = http.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let out = server.kubectl(&[
        "expose",
        "deployment",
        "web",
        "--port",
        "8080",
        "--target-port",
        "80",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = server.kubectl(&["get", "svc", "web", "-o", "wide"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    let row: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[0], "web");
    assert_eq!(row[1], "ClusterIP");
    assert!(row[2].starts_with("10.0.0."), "{text}");
    assert_eq!(row[3], "<none>");
    assert_eq!(row[4], "8080/TCP");
    assert_eq!(row[6], "app=web");
}
