//! kube's ReplicaSet controller (`pkg/controller/replicaset`), which also runs
//! ReplicationControllers (`v1`, no terminating count in their status): each keeps
//! `spec.replicas` active pods from its template (named `<replicaset>-<random>`, owned
//! by it as controller), deletes the surplus in kube's order (unscheduled, pending,
//! not ready, lower deletion cost, newest first) and reports `status` as kube does
//! (replicas, fully labeled, ready, available after `minReadySeconds`, terminating,
//! `observedGeneration`).

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    controller_ref, int_at, is_deleting, name, namespace, owned_by, pod_available, pod_is_active,
    pod_is_ready, str_at,
};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// At most this many pods created or deleted per ReplicaSet and pass (kube's burst).
const BURST: usize = 500;

/// The pod a ReplicaSet's template makes.
pub fn pod_from_template(owner: &Value, template: &Value) -> Value {
    let mut meta = Map::new();
    meta.insert("generateName".into(), json!(format!("{}-", name(owner))));
    meta.insert("namespace".into(), json!(namespace(owner)));
    for field in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template.pointer(&format!("/metadata/{field}")) {
            meta.insert(field.into(), v.clone());
        }
    }
    meta.insert("ownerReferences".into(), json!([controller_ref(owner)]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// kube's order of pods to delete first (`ActivePodsWithRanks`): unscheduled before
/// scheduled, pending before unknown before running, not ready before ready, lower
/// `controller.kubernetes.io/pod-deletion-cost` first, then the newest.
pub fn deletion_order(a: &Value, b: &Value) -> Ordering {
    let scheduled = |p: &Value| !str_at(p, "/spec/nodeName").is_empty();
    let phase = |p: &Value| match str_at(p, "/status/phase") {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let cost = |p: &Value| {
        p.pointer("/metadata/annotations/controller.kubernetes.io~1pod-deletion-cost")
            .and_then(Value::as_str)
            .and_then(|c| c.parse::<i32>().ok())
            .unwrap_or(0)
    };
    let created = |p: &Value| str_at(p, "/metadata/creationTimestamp").to_string();
    scheduled(a)
        .cmp(&scheduled(b))
        .then(phase(a).cmp(&phase(b)))
        .then(pod_is_ready(a).cmp(&pod_is_ready(b)))
        .then(cost(a).cmp(&cost(b)))
        .then(created(b).cmp(&created(a)))
}

/// A ReplicaSet's status from its pods, and when it should be computed again (a pod
/// still to become available after `minReadySeconds`).
pub fn status(
    rs: &Value,
    owned: &[&Value],
    now: chrono::DateTime<chrono::Utc>,
    count_terminating: bool,
) -> (Value, Option<Duration>) {
    let active: Vec<&&Value> = owned.iter().filter(|p| pod_is_active(p)).collect();
    let template_labels = rs
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object);
    let fully_labeled = active
        .iter()
        .filter(|p| {
            let labels = p.pointer("/metadata/labels").and_then(Value::as_object);
            template_labels
                .into_iter()
                .flatten()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .count();
    let ready = active.iter().filter(|p| pod_is_ready(p)).count();
    let min_ready = int_at(rs, "/spec/minReadySeconds", 0);
    let mut wait: Option<i64> = None;
    let mut available = 0;
    for p in &active {
        match pod_available(p, min_ready, now) {
            Ok(()) => available += 1,
            Err(left) if left != i64::MAX => wait = Some(wait.map_or(left, |w| w.min(left))),
            Err(_) => {}
        }
    }
    let terminating = owned
        .iter()
        .filter(|p| is_deleting(p) && !super::objects::pod_is_terminal(p))
        .count();
    let mut s = Map::new();
    s.insert("replicas".into(), json!(active.len()));
    let mut nonzero = |k: &str, n: usize| {
        if n > 0 {
            s.insert(k.into(), json!(n));
        }
    };
    nonzero("fullyLabeledReplicas", fully_labeled);
    nonzero("readyReplicas", ready);
    nonzero("availableReplicas", available);
    if let Some(g) = rs.pointer("/metadata/generation") {
        s.insert("observedGeneration".into(), g.clone());
    }
    if count_terminating {
        s.insert("terminatingReplicas".into(), json!(terminating));
    }
    if let Some(c) = rs.pointer("/status/conditions") {
        s.insert("conditions".into(), c.clone());
    }
    (
        Value::Object(s),
        wait.map(|w| Duration::from_secs(w.max(1) as u64)),
    )
}

/// What the controller runs: ReplicaSets or ReplicationControllers.
#[derive(Clone, Copy)]
struct Managed {
    group_version: &'static str,
    resource: &'static str,
    /// Whether the status counts terminating pods (ReplicaSets, with kube's
    /// `DeploymentReplicaSetTerminatingReplicas` on).
    count_terminating: bool,
}

const REPLICA_SETS: Managed = Managed {
    group_version: "apps/v1",
    resource: "replicasets",
    count_terminating: true,
};

const REPLICATION_CONTROLLERS: Managed = Managed {
    group_version: "v1",
    resource: "replicationcontrollers",
    count_terminating: false,
};

struct ReplicaSetController {
    client: Client,
    clock: crate::apiserver::clock::Clock,
    managed: Managed,
    replicasets: Arc<Informer>,
    pods: Arc<Informer>,
}

impl ReplicaSetController {
    /// Bring one ReplicaSet's pods to its replicas; false when a write failed.
    async fn manage(&self, rs: &Value, owned: &[&Value]) -> bool {
        let active: Vec<&Value> = owned.iter().copied().filter(|p| pod_is_active(p)).collect();
        let want = int_at(rs, "/spec/replicas", 1).max(0) as usize;
        let mut ok = true;
        if active.len() < want {
            let template = rs.pointer("/spec/template").cloned().unwrap_or(Value::Null);
            let pod = pod_from_template(rs, &template);
            let path = format!("/api/v1/namespaces/{}/pods", namespace(rs));
            for _ in 0..(want - active.len()).min(BURST) {
                match self.client.create(&path, &pod).await {
                    Ok(created) => self.pods.observe(&created),
                    Err(e) => {
                        tracing::debug!(replicaset = %name(rs), error = %e, "pod create failed");
                        ok = false;
                        break;
                    }
                }
            }
        } else if active.len() > want {
            let mut victims = active.clone();
            victims.sort_by(|a, b| deletion_order(a, b));
            for pod in victims.into_iter().take((active.len() - want).min(BURST)) {
                ok &= super::delete_object(&self.client, &self.pods, "v1", "pods", pod, None).await;
            }
        }
        ok
    }
}

impl Reconcile for ReplicaSetController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let mut again: Option<Duration> = None;
        let mut soon = |d: Duration| again = Some(again.map_or(d, |a: Duration| a.min(d)));
        for rs in self.replicasets.list() {
            let owned = owned_by(&rs, &pods);
            if !is_deleting(&rs) && !self.manage(&rs, &owned).await {
                soon(Duration::from_millis(200));
            }
            let pods = self.pods.list();
            let owned = owned_by(&rs, &pods);
            let (status, wait) = status(
                &rs,
                &owned,
                self.clock.now(),
                self.managed.count_terminating,
            );
            if let Some(w) = wait {
                soon(w);
            }
            let m = self.managed;
            if !super::write_status(
                &self.client,
                &self.replicasets,
                m.group_version,
                m.resource,
                &rs,
                status,
            )
            .await
            {
                soon(Duration::from_millis(100));
            }
        }
        again
    }
}

/// Start the ReplicaSet controller.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    start_for(api, informers, REPLICA_SETS, "replicaset-controller", stop);
}

/// Start the ReplicationController controller.
pub fn start_replication_controllers(
    api: &Arc<ApiServer>,
    informers: &Informers,
    stop: watch::Receiver<bool>,
) {
    start_for(
        api,
        informers,
        REPLICATION_CONTROLLERS,
        "replication-controller",
        stop,
    );
}

fn start_for(
    api: &Arc<ApiServer>,
    informers: &Informers,
    managed: Managed,
    account: &str,
    stop: watch::Receiver<bool>,
) {
    let path = super::objects::collection(managed.group_version, managed.resource, "");
    let replicasets = informers.of(&path);
    let pods = informers.of("/api/v1/pods");
    let controller = ReplicaSetController {
        client: Client::service_account(api, account),
        clock: api.clock.clone(),
        managed,
        replicasets: replicasets.clone(),
        pods: pods.clone(),
    };
    super::spawn_controller(vec![replicasets, pods], &api.clock, stop, controller);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, node: &str, phase: &str, ready: bool, created: &str) -> Value {
        json!({
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}
            ]},
        })
    }

    #[test]
    fn surplus_pods_go_in_kubes_order() {
        let mut pods = [
            pod("ready-old", "n", "Running", true, "2026-01-01T00:00:00Z"),
            pod("ready-new", "n", "Running", true, "2026-01-02T00:00:00Z"),
            pod("unready", "n", "Running", false, "2026-01-01T00:00:00Z"),
            pod("pending", "n", "Pending", false, "2026-01-01T00:00:00Z"),
            pod("unscheduled", "", "Pending", false, "2026-01-01T00:00:00Z"),
        ];
        pods.sort_by(deletion_order);
        let names: Vec<&str> = pods.iter().map(name).collect();
        assert_eq!(
            names,
            [
                "unscheduled",
                "pending",
                "unready",
                "ready-new",
                "ready-old"
            ]
        );
    }

    #[test]
    fn a_pod_from_the_template_is_owned_and_generated() {
        let rs = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-5d9c7", "namespace": "default", "uid": "u1"},
        });
        let template = json!({
            "metadata": {"labels": {"app": "web", "pod-template-hash": "5d9c7"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
        });
        let p = pod_from_template(&rs, &template);
        assert_eq!(p["metadata"]["generateName"], "web-5d9c7-");
        assert_eq!(p["metadata"]["labels"]["pod-template-hash"], "5d9c7");
        assert_eq!(
            p["metadata"]["ownerReferences"],
            json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d9c7",
                     "uid": "u1", "controller": true, "blockOwnerDeletion": true}])
        );
        assert_eq!(p["spec"], template["spec"]);
    }

    #[test]
    fn status_counts_as_kube() {
        let rs = json!({
            "metadata": {"generation": 3},
            "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "web"}}}},
        });
        let mut a = pod("a", "n", "Running", true, "2026-01-01T00:00:00Z");
        a["metadata"]["labels"] = json!({"app": "web"});
        let b = pod("b", "n", "Pending", false, "2026-01-01T00:00:00Z");
        let mut gone = pod("c", "n", "Running", true, "2026-01-01T00:00:00Z");
        gone["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let (s, wait) = status(&rs, &[&a, &b, &gone], chrono::Utc::now(), true);
        assert_eq!(
            s,
            json!({"replicas": 2, "fullyLabeledReplicas": 1, "readyReplicas": 1,
                   "availableReplicas": 1, "observedGeneration": 3, "terminatingReplicas": 1})
        );
        assert_eq!(wait, None);
    }
}
