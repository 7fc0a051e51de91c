//! The cluster that moves (`--controllers='*' --simulate-nodes=3`), on the real binary
//! with the real kubectl, each number beside a floor measured in the same run:
//!
//! 1. **apply → Available**: `kubectl apply -f` of a 3-replica Deployment, then `GET`s
//!    every 2 ms until its `Available` condition is true with 3 available replicas;
//!    median and p95 over `CLUSTER_RUNS` Deployments (default 20). Floor: `kubectl
//!    apply -f` of a ConfigMap and one `GET` (what kubectl and the request cost when no
//!    controller has anything to do).
//! 2. **pods/second**: one Deployment of `CLUSTER_PODS` replicas (default 300) from its
//!    `POST` until all are available (each pod created by the ReplicaSet controller,
//!    bound by the scheduler, run by a simulated kubelet: three writes per pod, plus the
//!    controllers' status writes). Floor: the same number of pods `POST`ed one after the
//!    other by one client to a server without controllers (the create path alone).
//!
//! Run: `cargo bench --bench cluster`.

#[path = "../integration/common/mod.rs"]
mod common;

use common::TestServer;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn deployment(name: &str, replicas: usize) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "web", "image": "nginx"}]}},
        },
    })
}

fn available(server: &TestServer, name: &str, replicas: usize) -> bool {
    let d = server
        .http()
        .get(&format!(
            "/apis/apps/v1/namespaces/default/deployments/{name}"
        ))
        .json()
        .unwrap_or(Value::Null);
    let ok = d["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    });
    ok && d["status"]["availableReplicas"] == json!(replicas)
}

fn wait_available(server: &TestServer, name: &str, replicas: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !available(server, name, replicas) {
        assert!(Instant::now() < deadline, "{name} never became Available");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn kubectl_apply(server: &TestServer, file: &std::path::Path) {
    let out = server.kubectl(&["apply", "-f", file.to_str().unwrap_or_default()]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let runs = env_usize("CLUSTER_RUNS", 20);
    let pods = env_usize("CLUSTER_PODS", 300);

    let server = TestServer::start_with(&["--controllers=*", "--simulate-nodes=3"]);
    // The default ServiceAccount first (pods need it), then one warm-up rollout.
    let warm = server.write_file("warm.json", &deployment("warm", 3).to_string());
    kubectl_apply(&server, &warm);
    wait_available(&server, "warm", 3);

    let mut rollout = Vec::new();
    let mut floor = Vec::new();
    for i in 0..runs {
        let name = format!("web-{i}");
        let file = server.write_file(&format!("{name}.json"), &deployment(&name, 3).to_string());
        let started = Instant::now();
        kubectl_apply(&server, &file);
        wait_available(&server, &name, 3);
        rollout.push(started.elapsed());

        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("floor-{i}"), "namespace": "default"}});
        let file = server.write_file(&format!("floor-{i}.json"), &cm.to_string());
        let started = Instant::now();
        kubectl_apply(&server, &file);
        let _ = server
            .http()
            .get(&format!("/api/v1/namespaces/default/configmaps/floor-{i}"));
        floor.push(started.elapsed());
    }
    rollout.sort();
    floor.sort();
    println!(
        "apply -> Available (3 replicas): median {:.1} ms, p95 {:.1} ms; floor (kubectl apply of a ConfigMap + GET): median {:.1} ms, p95 {:.1} ms; over {runs} runs",
        ms(percentile(&rollout, 0.5)),
        ms(percentile(&rollout, 0.95)),
        ms(percentile(&floor, 0.5)),
        ms(percentile(&floor, 0.95)),
    );

    let big = deployment("many", pods);
    let started = Instant::now();
    let resp =
        server
            .http()
            .send_json("POST", "/apis/apps/v1/namespaces/default/deployments", &big);
    assert_eq!(resp.status, 201, "{}", resp.text());
    wait_available(&server, "many", pods);
    let sim = started.elapsed();
    drop(server);

    let plain = TestServer::start_with(&["--disable-admission-plugins=ServiceAccount"]);
    let pod = |i: usize| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p-{i}"), "namespace": "default", "labels": {"app": "many"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
    };
    let started = Instant::now();
    for i in 0..pods {
        let resp = plain
            .http()
            .send_json("POST", "/api/v1/namespaces/default/pods", &pod(i));
        assert_eq!(resp.status, 201, "{}", resp.text());
    }
    let created = started.elapsed();
    println!(
        "pods/second: {:.0} ({pods} pods of one Deployment created, scheduled and Running+Ready in {:.0} ms); floor (one client POSTing {pods} pods): {:.0} pods/s",
        pods as f64 / sim.as_secs_f64(),
        ms(sim),
        pods as f64 / created.as_secs_f64(),
    );
}
