//! Controllers that only report: kube's horizontalpodautoscaling controller as it reports
//! without a metrics API (the target's scale read through its `scale` subresource,
//! `AbleToScale`, `ScalingActive` false with `FailedGetResourceMetric`; it never
//! scales), and kube's disruption controller (each PodDisruptionBudget's healthy,
//! desired and expected pods and `disruptionsAllowed`, which evictions consult).

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    int_at, int_or_percent, is_deleting, namespace, pod_is_active, pod_is_ready, selector_matches,
    set_condition, str_at,
};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::watch;

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> Value {
    json!({
        "type": type_, "status": status, "lastTransitionTime": crate::rest::object::now(),
        "reason": reason, "message": message,
    })
}

struct Autoscalers {
    api: Weak<ApiServer>,
    client: Client,
    hpas: Arc<Informer>,
}

impl Autoscalers {
    async fn sync(&self, hpa: &Value) -> bool {
        let target = hpa
            .pointer("/spec/scaleTargetRef")
            .cloned()
            .unwrap_or(Value::Null);
        let (kind, target_name) = (str_at(&target, "/kind"), str_at(&target, "/name"));
        let path = self.api.upgrade().and_then(|api| {
            super::object_path(
                &api,
                str_at(&target, "/apiVersion"),
                kind,
                namespace(hpa),
                target_name,
            )
        });
        let scale = match &path {
            Some(p) => self
                .client
                .get(&format!("{p}/scale"))
                .await
                .map_err(|e| e.message),
            None => Err(format!("no matches for kind \"{kind}\"")),
        };
        let mut conditions: Vec<Value> = hpa
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut status = Map::new();
        match scale {
            Ok(scale) => {
                let current = int_at(&scale, "/status/replicas", 0);
                status.insert("currentReplicas".into(), json!(current));
                status.insert("desiredReplicas".into(), json!(current));
                set_condition(
                    &mut conditions,
                    condition(
                        "AbleToScale",
                        "True",
                        "SucceededGetScale",
                        "the HPA controller was able to get the target's current scale",
                    ),
                );
                set_condition(&mut conditions, condition("ScalingActive", "False", "FailedGetResourceMetric",
                    "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: no metrics returned from resource metrics API"));
            }
            Err(message) => {
                status.insert("currentReplicas".into(), json!(0));
                status.insert("desiredReplicas".into(), json!(0));
                set_condition(&mut conditions, condition("AbleToScale", "False", "FailedGetScale",
                    &format!("the HPA controller was unable to get the target's current scale: {message}")));
            }
        }
        status.insert("conditions".into(), json!(conditions));
        let group_version = str_at(hpa, "/apiVersion").to_string();
        let group_version = if group_version.is_empty() {
            "autoscaling/v2".to_string()
        } else {
            group_version
        };
        super::write_status(
            &self.client,
            &self.hpas,
            &group_version,
            "horizontalpodautoscalers",
            hpa,
            Value::Object(status),
        )
        .await
    }
}

impl Reconcile for Autoscalers {
    async fn reconcile(&mut self) -> Option<Duration> {
        let mut retry = false;
        for hpa in self.hpas.list() {
            if !is_deleting(&hpa) {
                retry |= !self.sync(&hpa).await;
            }
        }
        // kube's controller resyncs every 15 s; the target's scale has no watch here.
        Some(if retry {
            Duration::from_millis(200)
        } else {
            Duration::from_secs(1)
        })
    }
}

/// Start the horizontalpodautoscaling controller (status only).
pub fn start_autoscalers(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let hpas = informers.of("/apis/autoscaling/v2/horizontalpodautoscalers");
    let controller = Autoscalers {
        api: Arc::downgrade(api),
        client: Client::service_account(api, "horizontal-pod-autoscaler"),
        hpas: hpas.clone(),
    };
    super::spawn_controller(vec![hpas], &api.clock, stop, controller);
}

/// A PodDisruptionBudget's status from the pods it selects.
pub fn budget_status(pdb: &Value, pods: &[&Value]) -> Value {
    let selected: Vec<&&Value> = pods
        .iter()
        .filter(|p| namespace(p) == namespace(pdb) && pod_is_active(p))
        .filter(|p| selector_matches(pdb.pointer("/spec/selector"), p))
        .collect();
    let expected = selected.len() as i64;
    let healthy = selected.iter().filter(|p| pod_is_ready(p)).count() as i64;
    let desired = if let Some(min) = pdb.pointer("/spec/minAvailable") {
        int_or_percent(min, expected, true).unwrap_or(0)
    } else if let Some(max) = pdb.pointer("/spec/maxUnavailable") {
        (expected - int_or_percent(max, expected, true).unwrap_or(0)).max(0)
    } else {
        0
    };
    let allowed = (healthy - desired).max(0);
    let mut conditions: Vec<Value> = pdb
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let c = if allowed > 0 {
        condition("DisruptionAllowed", "True", "SufficientPods", "")
    } else {
        condition("DisruptionAllowed", "False", "InsufficientPods", "")
    };
    let mut c = c;
    if let Some(g) = pdb.pointer("/metadata/generation") {
        c["observedGeneration"] = g.clone();
    }
    set_condition(&mut conditions, c);
    let mut s = Map::new();
    if let Some(g) = pdb.pointer("/metadata/generation") {
        s.insert("observedGeneration".into(), g.clone());
    }
    s.insert("disruptionsAllowed".into(), json!(allowed));
    s.insert("currentHealthy".into(), json!(healthy));
    s.insert("desiredHealthy".into(), json!(desired));
    s.insert("expectedPods".into(), json!(expected));
    s.insert("conditions".into(), json!(conditions));
    Value::Object(s)
}

struct Budgets {
    client: Client,
    pdbs: Arc<Informer>,
    pods: Arc<Informer>,
}

impl Reconcile for Budgets {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let pods: Vec<&Value> = pods.iter().map(|p| p.as_ref()).collect();
        let mut retry = false;
        for pdb in self.pdbs.list() {
            if is_deleting(&pdb) {
                continue;
            }
            let status = budget_status(&pdb, &pods);
            retry |= !super::write_status(
                &self.client,
                &self.pdbs,
                "policy/v1",
                "poddisruptionbudgets",
                &pdb,
                status,
            )
            .await;
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// Start the disruption controller.
pub fn start_budgets(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let pdbs = informers.of("/apis/policy/v1/poddisruptionbudgets");
    let pods = informers.of("/api/v1/pods");
    let controller = Budgets {
        client: Client::service_account(api, "disruption-controller"),
        pdbs: pdbs.clone(),
        pods: pods.clone(),
    };
    super::spawn_controller(vec![pdbs, pods], &api.clock, stop, controller);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_allows_what_exceeds_its_minimum() {
        let pdb = json!({
            "metadata": {"name": "web", "namespace": "default", "generation": 1},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        });
        let pod = |ready: bool| {
            json!({
                "metadata": {"namespace": "default", "labels": {"app": "web"}},
                "status": {"phase": "Running", "conditions": [
                    {"type": "Ready", "status": if ready { "True" } else { "False" }}]},
            })
        };
        let (a, b, c) = (pod(true), pod(true), pod(false));
        let s = budget_status(&pdb, &[&a, &b, &c]);
        assert_eq!(s["expectedPods"], 3);
        assert_eq!(s["currentHealthy"], 2);
        assert_eq!(s["desiredHealthy"], 2);
        assert_eq!(s["disruptionsAllowed"], 0);
        assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
        let max = json!({"metadata": {"namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
        assert_eq!(budget_status(&max, &[&a, &b, &c])["disruptionsAllowed"], 0);
        assert_eq!(budget_status(&max, &[&a, &b])["disruptionsAllowed"], 1);
    }
}
