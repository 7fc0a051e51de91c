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

const IP_ADDRESSES: &str = "/apis/networking.k8s.io/v1/ipaddresses";

fn node_port_service(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
}

#[test]
fn two_servers_on_one_etcd_never_hand_out_the_same_ip_or_node_port() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let servers = [
        TestServer::start_on_etcd(&etcd.url(), &[]),
        TestServer::start_on_etcd(&etcd.url(), &[]),
    ];
    let clients = [servers[0].http(), servers[1].http()];
    // 20 creates through each server at once, alternating between them.
    let taken: Vec<(String, i64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..40)
            .map(|i| {
                let http = &clients[i % 2];
                s.spawn(move || {
                    let r = http.send_json("POST", SERVICES, &node_port_service(&format!("s{i}")));
                    assert_eq!(r.status, 201, "{}", r.text());
                    let v = r.json().unwrap();
                    (
                        cluster_ip(&v),
                        v["spec"]["ports"][0]["nodePort"].as_i64().unwrap(),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ips: BTreeSet<&String> = taken.iter().map(|(ip, _)| ip).collect();
    let ports: BTreeSet<i64> = taken.iter().map(|(_, p)| *p).collect();
    assert_eq!(ips.len(), 40, "{taken:?}");
    assert_eq!(ports.len(), 40, "{taken:?}");
    assert!(!ips.contains(&"10.0.0.1".to_string()), "{taken:?}");
    // Every IP is an IPAddress either server serves.
    for http in &clients {
        let list = http.get(IP_ADDRESSES).json().unwrap();
        let names: BTreeSet<String> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        for ip in &ips {
            assert!(names.contains(*ip), "{ip} missing from {names:?}");
        }
        assert!(names.contains("10.0.0.1"), "{names:?}");
    }
}

#[test]
fn an_allocated_ip_is_an_ipaddress_that_goes_with_its_service() {
    let server = TestServer::start();
    let http = server.http();
    let r = http.send_json("POST", SERVICES, &service("web"));
    assert_eq!(r.status, 201, "{}", r.text());
    let ip = cluster_ip(&r.json().unwrap());
    let r = http.get(&format!("{IP_ADDRESSES}/{ip}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let obj = r.json().unwrap();
    assert_eq!(obj["kind"], "IPAddress");
    assert_eq!(
        obj["metadata"]["labels"],
        json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
               "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
    );
    assert_eq!(
        obj["spec"]["parentRef"],
        json!({"resource": "services", "namespace": "default", "name": "web"})
    );
    // The kubernetes Service's IP too.
    let k = http
        .get(&format!("{IP_ADDRESSES}/10.0.0.1"))
        .json()
        .unwrap();
    assert_eq!(k["spec"]["parentRef"]["name"], "kubernetes");
    let out = server.kubectl(&["get", "ipaddresses"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let row = text
        .lines()
        .find(|l| l.starts_with(&format!("{ip} ")))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains("services"), "{text}");
    // An IP someone holds as an IPAddress cannot be a Service's.
    let mut clash = service("clash");
    clash["spec"]["clusterIP"] = json!(ip);
    let r = http.send_json("POST", SERVICES, &clash);
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        format!("Service \"clash\" is invalid: spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated")
    );
    let r = http.send_json("DELETE", &format!("{SERVICES}/web"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.get(&format!("{IP_ADDRESSES}/{ip}"));
    assert_eq!(r.status, 404, "{}", r.text());
    // Given back: the address can be asked for again.
    let r = http.send_json("POST", SERVICES, &clash);
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn failed_and_dry_run_creates_leave_nothing_taken() {
    let server = TestServer::start();
    let http = server.http();
    let mut bad = node_port_service("bad");
    bad["spec"]["clusterIP"] = json!("10.0.0.50");
    bad["spec"]["ports"][0]["nodePort"] = json!(30500);
    bad["spec"]["sessionAffinity"] = json!("Bogus");
    let r = http.send_json("POST", SERVICES, &bad);
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(r.text().contains("spec.sessionAffinity"), "{}", r.text());
    let r = http.get(&format!("{IP_ADDRESSES}/10.0.0.50"));
    assert_eq!(r.status, 404, "{}", r.text());
    // A dry run takes nothing either.
    let mut good = bad.clone();
    good["spec"]
        .as_object_mut()
        .unwrap()
        .remove("sessionAffinity");
    let r = http.send_json("POST", &format!("{SERVICES}?dryRun=All"), &good);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(cluster_ip(&r.json().unwrap()), "10.0.0.50");
    let r = http.get(&format!("{IP_ADDRESSES}/10.0.0.50"));
    assert_eq!(r.status, 404, "{}", r.text());
    // Both the address and the node port are free.
    let r = http.send_json("POST", SERVICES, &good);
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json().unwrap();
    assert_eq!(cluster_ip(&v), "10.0.0.50");
    assert_eq!(v["spec"]["ports"][0]["nodePort"], 30500);
    // A node port held is refused with kube's message, and the refused create's
    // cluster IP is given back.
    let mut again = node_port_service("again");
    again["spec"]["clusterIP"] = json!("10.0.0.51");
    again["spec"]["ports"][0]["nodePort"] = json!(30500);
    let r = http.send_json("POST", SERVICES, &again);
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "Service \"again\" is invalid: spec.ports[0].nodePort: Invalid value: 30500: provided port is already allocated"
    );
    let r = http.get(&format!("{IP_ADDRESSES}/10.0.0.51"));
    assert_eq!(r.status, 404, "{}", r.text());
    // Deleting the Service gives its node port back.
    let r = http.send_json("DELETE", &format!("{SERVICES}/bad"), &json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http.send_json("POST", SERVICES, &again);
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn the_default_service_cidr_describes_the_range() {
    let server = TestServer::start_with(&["--service-cluster-ip-range", "10.7.0.0/24"]);
    let http = server.http();
    let r = http.get("/apis/networking.k8s.io/v1/servicecidrs/kubernetes");
    assert_eq!(r.status, 200, "{}", r.text());
    let cidr = r.json().unwrap();
    assert_eq!(cidr["spec"]["cidrs"], json!(["10.7.0.0/24"]));
    let ready = &cidr["status"]["conditions"][0];
    assert_eq!(ready["type"], "Ready");
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["message"], "Kubernetes default Service CIDR is ready");
}
