//! kube's pod garbage collector (`pkg/controller/podgc`): a pod bound to a Node that
//! is gone (asked through the API, not just missing from the cache) is marked `Failed`
//! with kube's `DisruptionTarget` condition (`DeletionByPodGC`) and deleted at once; and
//! beyond kube's 12,500 terminated pods the oldest are deleted.
//!
//! Simplified: kube waits 40 s after a node disappears before it collects its pods.

use super::client::Client;
use super::informer::Informer;
use super::objects::{name, pod_is_terminal, str_at};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// kube-controller-manager's `--terminated-pod-gc-threshold` default.
const TERMINATED_THRESHOLD: usize = 12_500;

struct PodGc {
    client: Client,
    pods: Arc<Informer>,
    nodes: Arc<Informer>,
}

impl PodGc {
    async fn collect(&self, pod: &Value, orphaned: bool) -> bool {
        if orphaned && !pod_is_terminal(pod) {
            let condition = json!({
                "type": "DisruptionTarget", "status": "True",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
                "lastTransitionTime": crate::rest::object::now(),
            });
            let mut conditions: Vec<Value> = pod
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            conditions.retain(|c| str_at(c, "/type") != "DisruptionTarget");
            conditions.push(condition);
            let patch = json!({"status": {"phase": "Failed", "conditions": conditions}});
            let path = format!("{}/status", super::objects::path_of("v1", "pods", pod));
            if let Err(e) = self.client.merge_patch(&path, &patch).await {
                return e.is_not_found();
            }
        }
        let opts =
            json!({"gracePeriodSeconds": 0, "preconditions": {"uid": super::objects::uid(pod)}});
        match self
            .client
            .delete(&super::objects::path_of("v1", "pods", pod), &opts)
            .await
        {
            Ok(_) => {
                self.pods.forget(pod);
                true
            }
            Err(e) => e.is_not_found() || e.is_conflict(),
        }
    }
}

impl Reconcile for PodGc {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let mut retry = false;
        for pod in &pods {
            let node = str_at(pod, "/spec/nodeName");
            if node.is_empty() || self.nodes.get(node).is_some() {
                continue;
            }
            // The cache may lag: the API says whether the node is gone.
            match self.client.get(&format!("/api/v1/nodes/{node}")).await {
                Err(e) if e.is_not_found() => retry |= !self.collect(pod, true).await,
                _ => {}
            }
        }
        let mut terminated: Vec<&Arc<Value>> = pods.iter().filter(|p| pod_is_terminal(p)).collect();
        if terminated.len() > TERMINATED_THRESHOLD {
            terminated.sort_by_key(|p| {
                (
                    str_at(p, "/metadata/creationTimestamp").to_string(),
                    name(p).to_string(),
                )
            });
            let extra = terminated.len() - TERMINATED_THRESHOLD;
            for pod in terminated.into_iter().take(extra) {
                retry |= !self.collect(pod, false).await;
            }
        }
        retry.then_some(Duration::from_millis(500))
    }
}

/// Start the pod garbage collector.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let pods = informers.of("/api/v1/pods");
    let nodes = informers.of("/api/v1/nodes");
    let controller = PodGc {
        client: Client::service_account(api, "pod-garbage-collector"),
        pods: pods.clone(),
        nodes: nodes.clone(),
    };
    super::spawn_controller(vec![pods, nodes], &api.clock, stop, controller);
}
