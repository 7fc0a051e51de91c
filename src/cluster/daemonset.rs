//! kube's DaemonSet controller (`pkg/controller/daemon`): a pod on every node the
//! template fits (its `nodeSelector`; nodes' `NoSchedule` taints unless tolerated),
//! pinned there by kube's node affinity on `metadata.name`, labelled with its
//! `controller-revision-hash` and `pod-template-generation`; a template change rolls
//! out node by node within `maxUnavailable` (`RollingUpdate`) or waits for deletions
//! (`OnDelete`). Status as kube's: desired, current, ready, available, updated,
//! misscheduled and unavailable counts.

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    int_at, int_or_percent, is_deleting, name, namespace, owned_by, pod_available, pod_is_active,
    pod_is_ready, str_at,
};
use super::revisions::{self, REVISION_HASH};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The node a DaemonSet pod is pinned to (kube's `matchFields` node affinity).
fn pinned_node(pod: &Value) -> &str {
    let terms = pod.pointer(
        "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchFields/0/values/0",
    );
    match terms.and_then(Value::as_str) {
        Some(n) => n,
        None => str_at(pod, "/spec/nodeName"),
    }
}

/// The daemon pods on `node`, oldest first (of one second, those of an older
/// revision than `revision` first).
fn pods_on<'a>(pods: &[&'a Value], node: &str, revision: &str) -> Vec<&'a Value> {
    let mut on: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|p| pinned_node(p) == node)
        .collect();
    on.sort_by_key(|p| {
        (
            str_at(p, "/metadata/creationTimestamp").to_string(),
            revisions::of_pod(p) == revision,
        )
    });
    on
}

/// Whether the DaemonSet's pods belong on `node`.
pub fn should_run(set: &Value, node: &Value) -> bool {
    let labels = node.pointer("/metadata/labels").and_then(Value::as_object);
    let selector_ok = set
        .pointer("/spec/template/spec/nodeSelector")
        .and_then(Value::as_object)
        .is_none_or(|sel| {
            sel.iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        });
    // With the tolerations kube adds to DaemonSet pods (a cordoned node is fine).
    let pod = pod_for(set, "", "");
    selector_ok && super::objects::tolerates_node(&pod["spec"], node)
}

/// The DaemonSet's pod for `node` at `revision`.
pub fn pod_for(set: &Value, node: &str, revision: &str) -> Value {
    let template = set.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut pod = super::replicaset::pod_from_template(set, &template);
    pod["metadata"]["labels"][REVISION_HASH] = json!(revision);
    let generation = set
        .pointer("/metadata/annotations/deprecated.daemonset.template.generation")
        .and_then(Value::as_str)
        .unwrap_or("1");
    pod["metadata"]["labels"]["pod-template-generation"] = json!(generation);
    let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}});
    pod["spec"]["affinity"] = affinity;
    // kube's DaemonSet pods tolerate the node conditions a DaemonSet must outlive.
    let mut tolerations: Vec<Value> = pod
        .pointer("/spec/tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !tolerations.iter().any(|t| str_at(t, "/key") == key) {
            tolerations.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
    pod["spec"]["tolerations"] = json!(tolerations);
    pod
}

struct DaemonSetController {
    client: Client,
    clock: crate::apiserver::clock::Clock,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    nodes: Arc<Informer>,
    revisions: Arc<Informer>,
}

impl DaemonSetController {
    async fn delete_pod(&self, pod: &Value) -> bool {
        super::delete_object(&self.client, &self.pods, "v1", "pods", pod, None).await
    }

    async fn sync(&self, set: &Value, pods: &[Arc<Value>], nodes: &[Arc<Value>]) -> bool {
        let Ok(revision) = revisions::current(&self.client, &self.revisions, set).await else {
            return false;
        };
        let owned: Vec<&Value> = owned_by(set, pods)
            .into_iter()
            .filter(|p| pod_is_active(p))
            .collect();
        let mut ok = true;
        let wanted: Vec<&str> = nodes
            .iter()
            .filter(|n| should_run(set, n))
            .map(|n| name(n))
            .collect();
        for node in &wanted {
            if owned.iter().any(|p| pinned_node(p) == *node) {
                continue;
            }
            let path = format!("/api/v1/namespaces/{}/pods", namespace(set));
            match self
                .client
                .create(&path, &pod_for(set, node, &revision))
                .await
            {
                Ok(p) => self.pods.observe(&p),
                Err(_) => ok = false,
            }
        }
        // A node runs one daemon pod: the oldest stays (kube's `podsShouldBeOnNode`).
        for node in &wanted {
            for extra in pods_on(&owned, node, &revision).into_iter().skip(1) {
                ok &= self.delete_pod(extra).await;
            }
        }
        // Pods on nodes they no longer belong on go.
        for p in owned.iter().filter(|p| !wanted.contains(&pinned_node(p))) {
            ok &= self.delete_pod(p).await;
        }
        // Roll out: replace stale pods while the unavailable stay within the budget.
        if str_at(set, "/spec/updateStrategy/type") != "OnDelete" {
            let max_unavailable =
                match set.pointer("/spec/updateStrategy/rollingUpdate/maxUnavailable") {
                    Some(n @ Value::Number(_)) => int_or_percent(n, 0, false).unwrap_or(1),
                    Some(p) => int_or_percent(p, wanted.len() as i64, false)
                        .unwrap_or(0)
                        .max(1),
                    None => 1,
                };
            let unavailable = wanted.len() as i64
                - owned
                    .iter()
                    .filter(|p| pod_is_ready(p) && revisions::of_pod(p) == revision)
                    .count() as i64;
            let stale: Vec<&&Value> = owned
                .iter()
                .filter(|p| revisions::of_pod(p) != revision && !is_deleting(p))
                .collect();
            let budget = (max_unavailable - (unavailable - stale.len() as i64)).max(0);
            for p in stale.into_iter().take(budget as usize) {
                ok &= self.delete_pod(p).await;
            }
        }
        ok &= self.write_status(set, &revision, &wanted).await;
        ok
    }

    /// kube's status: per node that should run the daemon, its oldest pod counts.
    async fn write_status(&self, set: &Value, revision: &str, wanted: &[&str]) -> bool {
        let pods = self.pods.list();
        let owned: Vec<&Value> = owned_by(set, &pods)
            .into_iter()
            .filter(|p| pod_is_active(p))
            .collect();
        let first: Vec<&Value> = wanted
            .iter()
            .filter_map(|n| pods_on(&owned, n, revision).into_iter().next())
            .collect();
        let misscheduled = owned
            .iter()
            .filter(|p| !wanted.contains(&pinned_node(p)))
            .count();
        let min_ready = int_at(set, "/spec/minReadySeconds", 0);
        let desired = wanted.len();
        let available = first
            .iter()
            .filter(|p| pod_available(p, min_ready, self.clock.now()).is_ok())
            .count();
        let mut s = Map::new();
        s.insert("currentNumberScheduled".into(), json!(first.len()));
        s.insert("numberMisscheduled".into(), json!(misscheduled));
        s.insert("desiredNumberScheduled".into(), json!(desired));
        s.insert(
            "numberReady".into(),
            json!(first.iter().filter(|p| pod_is_ready(p)).count()),
        );
        if let Some(g) = set.pointer("/metadata/generation") {
            s.insert("observedGeneration".into(), g.clone());
        }
        let updated = first
            .iter()
            .filter(|p| revisions::of_pod(p) == revision)
            .count();
        if updated > 0 {
            s.insert("updatedNumberScheduled".into(), json!(updated));
        }
        if available > 0 {
            s.insert("numberAvailable".into(), json!(available));
        }
        if desired > available {
            s.insert("numberUnavailable".into(), json!(desired - available));
        }
        let status = Value::Object(s);
        super::write_status(
            &self.client,
            &self.sets,
            "apps/v1",
            "daemonsets",
            set,
            status,
        )
        .await
    }
}

impl Reconcile for DaemonSetController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let nodes = self.nodes.list();
        let mut retry = false;
        for set in self.sets.list() {
            if is_deleting(&set) {
                continue;
            }
            retry |= !self.sync(&set, &pods, &nodes).await;
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// Start the DaemonSet controller.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let sets = informers.of("/apis/apps/v1/daemonsets");
    let pods = informers.of("/api/v1/pods");
    let nodes = informers.of("/api/v1/nodes");
    let revisions = informers.of("/apis/apps/v1/controllerrevisions");
    let controller = DaemonSetController {
        client: Client::service_account(api, "daemon-set-controller"),
        clock: api.clock.clone(),
        sets: sets.clone(),
        pods: pods.clone(),
        nodes: nodes.clone(),
        revisions: revisions.clone(),
    };
    super::spawn_controller(
        vec![sets, pods, nodes, revisions],
        &api.clock,
        stop,
        controller,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_daemon_pod_is_pinned_to_its_node_and_placed_by_selector_and_taints() {
        let set = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system", "uid": "d1", "generation": 3,
                         "annotations": {"deprecated.daemonset.template.generation": "2"}},
            "spec": {"template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                         "containers": [{"name": "a", "image": "agent"}]}}},
        });
        let pod = pod_for(&set, "node-2", "agent-xyz");
        assert_eq!(pinned_node(&pod), "node-2");
        assert_eq!(pod["metadata"]["labels"][REVISION_HASH], "agent-xyz");
        assert_eq!(pod["metadata"]["labels"]["pod-template-generation"], "2");
        let linux = json!({"metadata": {"name": "n", "labels": {"kubernetes.io/os": "linux"}}});
        let windows = json!({"metadata": {"name": "w", "labels": {"kubernetes.io/os": "windows"}}});
        let tainted = json!({"metadata": {"name": "t", "labels": {"kubernetes.io/os": "linux"}},
            "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}});
        assert!(should_run(&set, &linux));
        assert!(!should_run(&set, &windows));
        assert!(!should_run(&set, &tainted));
    }
}
