//! Simulated nodes (kwok's idea, in-process): `--simulate-nodes=N` keeps N Ready Nodes,
//! a scheduler binds pending pods to them (the node running fewest pods that matches
//! the pod's `nodeSelector`), and each node's kubelet runs its pods without containers:
//! it reports them Running and Ready (conditions, container statuses with `startedAt`,
//! a pod IP from the node's pod CIDR) and finishes their deletion.
//!
//! What a pod does is its [`OUTCOME`] annotation: `run` (Running and Ready; the default
//! for `restartPolicy: Always`), `succeed` (exit 0; the default for `Never` and
//! `OnFailure`, so Jobs complete), `fail` (exit 1), `crash-loop` (Running, its
//! containers in `CrashLoopBackOff`) or `unready` (Running, never Ready).

use super::client::Client;
use super::informer::Informer;
use super::objects::{pod_is_terminal, str_at};
use super::Informers;
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// The annotation that chooses what a pod on a simulated node does.
pub const OUTCOME: &str = "sim.crd-apiserver.io/outcome";

/// The label every simulated node carries.
pub const SIMULATED_LABEL: &str = "sim.crd-apiserver.io/node";

/// The kubelet version simulated nodes report.
const KUBELET_VERSION: &str = "v1.36.2";

/// The name of simulated node `i` (0-based).
pub fn node_name(i: u32) -> String {
    format!("node-{}", i + 1)
}

/// The Node object of simulated node `i`.
pub fn node(i: u32) -> Value {
    let name = node_name(i);
    let cidr = format!("10.244.{}.0/24", i + 1);
    let resources = json!({
        "cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti",
    });
    let condition = |t: &str, s: &str, reason: &str, message: &str| json!({"type": t, "status": s, "reason": reason, "message": message});
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                SIMULATED_LABEL: "true",
            },
        },
        "spec": {"podCIDR": cidr, "podCIDRs": [cidr]},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [
                {"type": "InternalIP", "address": format!("172.18.0.{}", i + 2)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": "", "systemUUID": "", "bootID": "",
                "kernelVersion": "", "osImage": "crd-apiserver simulated node",
                "containerRuntimeVersion": "simulated://1.0",
                "kubeletVersion": KUBELET_VERSION, "kubeProxyVersion": "",
                "operatingSystem": "linux", "architecture": "amd64",
            },
        },
    })
}

/// What a pod on a simulated node does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Running and Ready until deleted.
    Run,
    /// Every container exits 0.
    Succeed,
    /// Every container exits 1.
    Fail,
    /// Running, its containers restarting in `CrashLoopBackOff`.
    CrashLoop,
    /// Running, never Ready.
    Unready,
}

impl Outcome {
    /// The outcome of `pod`: its annotation, else by its restart policy.
    pub fn of(pod: &Value) -> Outcome {
        let annotation = pod
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(OUTCOME))
            .and_then(Value::as_str);
        match annotation {
            Some("run") => Outcome::Run,
            Some("succeed") => Outcome::Succeed,
            Some("fail") => Outcome::Fail,
            Some("crash-loop") => Outcome::CrashLoop,
            Some("unready") => Outcome::Unready,
            _ => match str_at(pod, "/spec/restartPolicy") {
                "Never" | "OnFailure" => Outcome::Succeed,
                _ => Outcome::Run,
            },
        }
    }

    /// The phase a pod with this outcome settles in.
    fn phase(self, pod: &Value) -> &'static str {
        match (self, str_at(pod, "/spec/restartPolicy")) {
            (Outcome::Succeed, _) => "Succeeded",
            (Outcome::Fail, "Never") => "Failed",
            _ => "Running",
        }
    }
}

/// `lastTransitionTime`-style now.
fn now() -> String {
    crate::rest::object::now()
}

/// A container ID of the simulated runtime: 64 hex digits from the pod uid and name.
fn container_id(uid: &str, name: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{uid}/{name}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("simulated://{hex}")
}

/// The image ID a runtime reports for `image`.
fn image_id(image: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(image.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let repo = image.split(['@', ':']).next().unwrap_or(image);
    format!("{repo}@sha256:{hex}")
}

/// The status a simulated kubelet reports for `pod` settled in `outcome`, started at
/// `started` with `pod_ip` on a node at `host_ip`.
pub fn pod_status(
    pod: &Value,
    outcome: Outcome,
    started: &str,
    host_ip: &str,
    pod_ip: &str,
) -> Value {
    let uid = str_at(pod, "/metadata/uid");
    let phase = outcome.phase(pod);
    let ready = outcome == Outcome::Run;
    let running = phase == "Running";
    let container = |c: &Value, init: bool| {
        let name = str_at(c, "/name");
        let image = str_at(c, "/image");
        let exit = |code: i64, reason: &str| {
            json!({"terminated": {
                "exitCode": code, "reason": reason, "startedAt": started,
                "finishedAt": started, "containerID": container_id(uid, name),
            }})
        };
        let (state, last, restarts, c_ready, c_started) = if init {
            (exit(0, "Completed"), json!({}), 0, true, false)
        } else {
            match outcome {
                Outcome::Run => (
                    json!({"running": {"startedAt": started}}),
                    json!({}),
                    0,
                    true,
                    true,
                ),
                Outcome::Unready => (
                    json!({"running": {"startedAt": started}}),
                    json!({}),
                    0,
                    false,
                    true,
                ),
                Outcome::Succeed => (exit(0, "Completed"), json!({}), 0, false, false),
                Outcome::Fail if !running => (exit(1, "Error"), json!({}), 0, false, false),
                Outcome::Fail | Outcome::CrashLoop => (
                    json!({"waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": format!("back-off 10s restarting failed container={name} pod={}_{}({uid})",
                            str_at(pod, "/metadata/name"), str_at(pod, "/metadata/namespace")),
                    }}),
                    exit(1, "Error"),
                    1,
                    false,
                    false,
                ),
            }
        };
        let mut s = Map::new();
        s.insert("name".into(), json!(name));
        s.insert("state".into(), state);
        s.insert("lastState".into(), last);
        s.insert("ready".into(), json!(c_ready));
        s.insert("restartCount".into(), json!(restarts));
        s.insert("image".into(), json!(image));
        s.insert("imageID".into(), json!(image_id(image)));
        s.insert("containerID".into(), json!(container_id(uid, name)));
        if !init {
            s.insert("started".into(), json!(c_started));
        }
        Value::Object(s)
    };
    let statuses = |field: &str, init: bool| -> Vec<Value> {
        pod.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .map(|cs| cs.iter().map(|c| container(c, init)).collect())
            .unwrap_or_default()
    };
    let cond = |t: &str, ok: bool, reason: Option<&str>| {
        let mut c = json!({"type": t, "status": if ok { "True" } else { "False" },
            "lastProbeTime": null, "lastTransitionTime": started});
        if let Some(r) = reason {
            c["reason"] = json!(r);
        }
        c
    };
    let not_ready_reason = if running {
        "ContainersNotReady"
    } else {
        "PodCompleted"
    };
    let ready_reason = (!ready).then_some(not_ready_reason);
    let mut conditions = vec![
        cond("PodReadyToStartContainers", running, None),
        cond(
            "Initialized",
            true,
            (!running && phase == "Succeeded").then_some("PodCompleted"),
        ),
        cond("Ready", ready, ready_reason),
        cond("ContainersReady", ready, ready_reason),
    ];
    let scheduled = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "PodScheduled"))
        .cloned()
        .unwrap_or_else(|| cond("PodScheduled", true, None));
    conditions.push(scheduled);
    let mut status = json!({
        "phase": phase,
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started,
        "containerStatuses": statuses("containers", false),
    });
    let init = statuses("initContainers", true);
    if !init.is_empty() {
        status["initContainerStatuses"] = json!(init);
    }
    if let Some(q) = pod.pointer("/status/qosClass") {
        status["qosClass"] = q.clone();
    }
    status
}

/// Whether `pod`'s status is already what a kubelet settled in `outcome` reports.
fn settled(pod: &Value, outcome: Outcome) -> bool {
    let phase = str_at(pod, "/status/phase");
    if phase != outcome.phase(pod) || str_at(pod, "/status/podIP").is_empty() {
        return false;
    }
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| str_at(c, "/type") == "Ready"))
        .map(|c| str_at(c, "/status") == "True")
        .unwrap_or(false);
    ready == (outcome == Outcome::Run)
}

/// Whether one node selector requirement (`key`, `operator`, `values`) holds for
/// `value` (a label's or a field's, absent: `None`).
fn requirement_holds(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    let bound = values.first().copied().and_then(number);
    match str_at(req, "/operator") {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => !value.is_some_and(|v| values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => value
            .and_then(number)
            .zip(bound)
            .is_some_and(|(v, b)| v > b),
        "Lt" => value
            .and_then(number)
            .zip(bound)
            .is_some_and(|(v, b)| v < b),
        _ => false,
    }
}

/// Whether `pod` may run on `node`: its `nodeSelector` matches the node's labels and
/// one of its required node affinity terms holds (label expressions and
/// `metadata.name` fields, as a DaemonSet pins its pods).
fn fits(pod: &Value, node: &Value) -> bool {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let label = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
    let selector_ok = pod
        .pointer("/spec/nodeSelector")
        .and_then(Value::as_object)
        .is_none_or(|sel| sel.iter().all(|(k, v)| label(k) == v.as_str()));
    let terms = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    let affinity_ok = terms.is_none_or(|terms| {
        terms.iter().any(|term| {
            let exprs = term.get("matchExpressions").and_then(Value::as_array);
            let fields = term.get("matchFields").and_then(Value::as_array);
            let name = str_at(node, "/metadata/name");
            exprs
                .into_iter()
                .flatten()
                .all(|r| requirement_holds(r, label(str_at(r, "/key"))))
                && fields.into_iter().flatten().all(|r| {
                    let field = (str_at(r, "/key") == "metadata.name").then_some(name);
                    requirement_holds(r, field)
                })
        })
    });
    selector_ok && affinity_ok && super::objects::tolerates_node(&pod["spec"], node)
}

fn pod_path(pod: &Value) -> String {
    super::objects::path_of("v1", "pods", pod)
}

/// The simulated nodes, their scheduler and kubelets.
struct Simulation {
    client: Client,
    count: u32,
    nodes: Arc<Informer>,
    pods: Arc<Informer>,
    /// Pod IPs handed out, by pod uid, and the next host number per node.
    ips: HashMap<String, String>,
    next_host: HashMap<String, u32>,
}

impl super::Reconcile for Simulation {
    async fn reconcile(&mut self) -> Option<std::time::Duration> {
        // Nodes: there and Ready (a reset may have deleted them).
        for i in 0..self.count {
            if self.nodes.get(&node_name(i)).is_none() {
                let _ = self.client.create("/api/v1/nodes", &node(i)).await;
            }
        }
        let nodes: Vec<Arc<Value>> = self
            .nodes
            .list()
            .into_iter()
            .filter(|n| {
                str_at(
                    n,
                    &format!("/metadata/labels/{}", SIMULATED_LABEL.replace('/', "~1")),
                ) == "true"
            })
            .collect();
        let pods = self.pods.list();
        let mut load: HashMap<String, usize> = nodes
            .iter()
            .map(|n| (str_at(n, "/metadata/name").to_string(), 0))
            .collect();
        for p in pods.iter().filter(|p| !pod_is_terminal(p)) {
            if let Some(n) = load.get_mut(str_at(p, "/spec/nodeName")) {
                *n += 1;
            }
        }
        let mut retry = false;
        for pod in &pods {
            let node_name = str_at(pod, "/spec/nodeName");
            if node_name.is_empty() {
                retry |= !self.schedule(pod, &nodes, &mut load).await;
                continue;
            }
            let Some(node) = nodes
                .iter()
                .find(|n| str_at(n, "/metadata/name") == node_name)
            else {
                continue;
            };
            retry |= !self.kubelet(pod, node).await;
        }
        retry.then_some(std::time::Duration::from_millis(200))
    }
}

impl Simulation {
    /// Bind `pod` to the fitting node with the fewest pods; false when it could not be.
    async fn schedule(
        &mut self,
        pod: &Value,
        nodes: &[Arc<Value>],
        load: &mut HashMap<String, usize>,
    ) -> bool {
        let scheduler = str_at(pod, "/spec/schedulerName");
        if (!scheduler.is_empty() && scheduler != "default-scheduler")
            || pod.pointer("/metadata/deletionTimestamp").is_some()
            || pod_is_terminal(pod)
            || pod
                .pointer("/spec/schedulingGates")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
        {
            return true;
        }
        let Some(target) = nodes
            .iter()
            .filter(|n| fits(pod, n))
            .map(|n| str_at(n, "/metadata/name"))
            .min_by_key(|n| (load.get(*n).copied().unwrap_or(0), n.to_string()))
            .map(str::to_string)
        else {
            return true;
        };
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": str_at(pod, "/metadata/name"), "namespace": str_at(pod, "/metadata/namespace")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": target},
        });
        match self
            .client
            .create(&format!("{}/binding", pod_path(pod)), &binding)
            .await
        {
            Ok(_) => {
                let key = super::informer::key_of(pod);
                self.pods
                    .amend(&key, |p| p["spec"]["nodeName"] = json!(target.clone()));
                *load.entry(target).or_default() += 1;
                true
            }
            Err(e) => e.is_not_found() || e.is_conflict(),
        }
    }

    /// Run `pod` on `node`; false when a write failed.
    async fn kubelet(&mut self, pod: &Value, node: &Value) -> bool {
        let uid = str_at(pod, "/metadata/uid").to_string();
        if pod.pointer("/metadata/deletionTimestamp").is_some() {
            // The containers are stopped at once: the pod ends (as a kubelet reports a
            // pod it killed, so whoever holds a finalizer sees it terminal), then its
            // deletion is finished.
            if !pod_is_terminal(pod) && str_at(pod, "/status/phase") == "Running" {
                let patch = json!({"status": {"phase": "Failed"}});
                if let Err(e) = self
                    .client
                    .merge_patch(&format!("{}/status", pod_path(pod)), &patch)
                    .await
                {
                    return e.is_not_found();
                }
            }
            self.ips.remove(&uid);
            let opts = json!({"gracePeriodSeconds": 0, "preconditions": {"uid": uid}});
            return match self.client.delete(&pod_path(pod), &opts).await {
                Ok(_) => true,
                Err(e) => e.is_not_found() || e.is_conflict(),
            };
        }
        let outcome = Outcome::of(pod);
        if settled(pod, outcome) || pod_is_terminal(pod) {
            return true;
        }
        let host_ip = node
            .pointer("/status/addresses/0/address")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let pod_ip = match self.ips.get(&uid) {
            Some(ip) => ip.clone(),
            None => {
                let node_name = str_at(node, "/metadata/name").to_string();
                let host = self.next_host.entry(node_name).or_insert(1);
                let cidr = str_at(node, "/spec/podCIDR");
                let base = cidr.rsplit_once('.').map_or("10.244.0", |(b, _)| b);
                let ip = format!("{base}.{}", *host % 254 + 1);
                *host += 1;
                self.ips.insert(uid.clone(), ip.clone());
                ip
            }
        };
        let started = pod
            .pointer("/status/startTime")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(now);
        let status = pod_status(pod, outcome, &started, &host_ip, &pod_ip);
        let patch = json!({"status": status});
        match self
            .client
            .merge_patch(&format!("{}/status", pod_path(pod)), &patch)
            .await
        {
            Ok(_) => true,
            Err(e) => e.is_not_found(),
        }
    }
}

/// Start `count` simulated nodes with their scheduler and kubelets.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, count: u32, stop: watch::Receiver<bool>) {
    let nodes = informers.of("/api/v1/nodes");
    let pods = informers.of("/api/v1/pods");
    let sim = Simulation {
        client: Client::service_account(api, "simulated-kubelet"),
        count,
        nodes: nodes.clone(),
        pods: pods.clone(),
        ips: HashMap::new(),
        next_host: HashMap::new(),
    };
    super::spawn_controller(vec![nodes, pods], &api.clock, stop, sim);
}
