//! kube's StatefulSet controller (`pkg/controller/statefulset`): pods named
//! `<statefulset>-<ordinal>` with kube's labels (`statefulset.kubernetes.io/pod-name`,
//! `apps.kubernetes.io/pod-index`, `controller-revision-hash`), hostname and
//! subdomain, a PersistentVolumeClaim per `volumeClaimTemplates` entry
//! (`<claim>-<statefulset>-<ordinal>`); `OrderedReady` creates one pod at a time, each
//! after the previous is Running and Ready, and removes from the highest ordinal;
//! `Parallel` does all at once. A template change rolls out from the highest ordinal
//! down (`RollingUpdate`, `partition` honoured), one pod at a time; `OnDelete` waits
//! for pods to be deleted. Status as kube's: replicas, ready, available, current and
//! updated counts and revisions.

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    controller_ref, int_at, is_deleting, name, namespace, owned_by, pod_available, pod_is_active,
    pod_is_ready, str_at,
};
use super::revisions::{self, REVISION_HASH};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The ordinal of a StatefulSet's pod (`web-3` of `web`: 3).
fn ordinal(set: &Value, pod: &Value) -> Option<i64> {
    name(pod)
        .strip_prefix(&format!("{}-", name(set)))?
        .parse()
        .ok()
}

/// Pod `ordinal` of `set` at `revision`.
pub fn pod_for(set: &Value, ordinal: i64, revision: &str) -> Value {
    let template = set.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut pod = super::replicaset::pod_from_template(set, &template);
    let pod_name = format!("{}-{ordinal}", name(set));
    let meta = pod["metadata"]
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut meta: Map<String, Value> = meta;
    meta.remove("generateName");
    meta.insert("name".into(), json!(pod_name));
    let mut labels = meta
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(REVISION_HASH.into(), json!(revision));
    labels.insert("statefulset.kubernetes.io/pod-name".into(), json!(pod_name));
    labels.insert(
        "apps.kubernetes.io/pod-index".into(),
        json!(ordinal.to_string()),
    );
    meta.insert("labels".into(), Value::Object(labels));
    pod["metadata"] = Value::Object(meta);
    pod["spec"]["hostname"] = json!(pod_name);
    if let Some(svc) = set.pointer("/spec/serviceName").and_then(Value::as_str) {
        if !svc.is_empty() {
            pod["spec"]["subdomain"] = json!(svc);
        }
    }
    // Each claim template becomes the pod's own claim.
    if let Some(claims) = set
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
    {
        let mut volumes: Vec<Value> = pod
            .pointer("/spec/volumes")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for c in claims {
            let claim = str_at(c, "/metadata/name");
            volumes.retain(|v| str_at(v, "/name") != claim);
            volumes.push(json!({"name": claim, "persistentVolumeClaim": {
                "claimName": format!("{claim}-{pod_name}")}}));
        }
        pod["spec"]["volumes"] = json!(volumes);
    }
    pod
}

struct StatefulSetController {
    client: Client,
    clock: crate::apiserver::clock::Clock,
    sets: Arc<Informer>,
    pods: Arc<Informer>,
    revisions: Arc<Informer>,
    claims: Arc<Informer>,
}

impl StatefulSetController {
    async fn ensure_claims(&self, set: &Value, ordinal: i64) -> bool {
        let Some(templates) = set
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
        else {
            return true;
        };
        let mut ok = true;
        for t in templates {
            let claim = format!("{}-{}-{ordinal}", str_at(t, "/metadata/name"), name(set));
            if self
                .claims
                .get(&format!("{}/{claim}", namespace(set)))
                .is_some()
            {
                continue;
            }
            let mut pvc = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": namespace(set),
                             "labels": t.pointer("/metadata/labels").cloned().unwrap_or(json!({}))},
                "spec": t.get("spec").cloned().unwrap_or(json!({})),
            });
            let policy = str_at(
                set,
                "/spec/persistentVolumeClaimRetentionPolicy/whenDeleted",
            );
            if policy == "Delete" {
                pvc["metadata"]["ownerReferences"] = json!([controller_ref(set)]);
            }
            let path = format!(
                "/api/v1/namespaces/{}/persistentvolumeclaims",
                namespace(set)
            );
            match self.client.create(&path, &pvc).await {
                Ok(c) => self.claims.observe(&c),
                Err(e) if e.reason == "AlreadyExists" => {}
                Err(_) => ok = false,
            }
        }
        ok
    }

    async fn delete_pod(&self, pod: &Value) -> bool {
        super::delete_object(&self.client, &self.pods, "v1", "pods", pod, None).await
    }

    /// One pass over one StatefulSet; false when something is to be tried again.
    async fn sync(&self, set: &Value, pods: &[Arc<Value>]) -> bool {
        let Ok(update_revision) = revisions::current(&self.client, &self.revisions, set).await
        else {
            return false;
        };
        let replicas = int_at(set, "/spec/replicas", 1).max(0);
        let parallel = str_at(set, "/spec/podManagementPolicy") == "Parallel";
        let owned: Vec<&Value> = owned_by(set, pods);
        let by_ordinal = |i: i64| owned.iter().copied().find(|p| ordinal(set, p) == Some(i));
        let mut ok = true;
        // Create the missing ordinals (in order, each after the last is ready).
        for i in 0..replicas {
            match by_ordinal(i) {
                Some(p) if pod_is_active(p) => {
                    if !parallel && !pod_is_ready(p) {
                        break;
                    }
                }
                Some(p) => {
                    // A failed or terminating pod is replaced once it is gone.
                    if !is_deleting(p) {
                        ok &= self.delete_pod(p).await;
                    }
                    if !parallel {
                        break;
                    }
                }
                None => {
                    ok &= self.ensure_claims(set, i).await;
                    let path = format!("/api/v1/namespaces/{}/pods", namespace(set));
                    match self
                        .client
                        .create(&path, &pod_for(set, i, &update_revision))
                        .await
                    {
                        Ok(p) => self.pods.observe(&p),
                        Err(e) if e.reason == "AlreadyExists" => {}
                        Err(_) => ok = false,
                    }
                    if !parallel {
                        break;
                    }
                }
            }
        }
        // Remove ordinals beyond replicas, highest first.
        let mut extra: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|p| ordinal(set, p).is_some_and(|i| i >= replicas) && !is_deleting(p))
            .collect();
        extra.sort_by_key(|p| std::cmp::Reverse(ordinal(set, p)));
        for p in extra
            .into_iter()
            .take(if parallel { usize::MAX } else { 1 })
        {
            ok &= self.delete_pod(p).await;
        }
        // Roll the template out from the highest ordinal down, one pod at a time.
        let rolling = str_at(set, "/spec/updateStrategy/type") != "OnDelete";
        let partition = int_at(set, "/spec/updateStrategy/rollingUpdate/partition", 0);
        let all_ready = (0..replicas)
            .all(|i| by_ordinal(i).is_some_and(|p| pod_is_active(p) && pod_is_ready(p)));
        if rolling && all_ready {
            if let Some(stale) = (partition..replicas)
                .rev()
                .filter_map(by_ordinal)
                .find(|p| revisions::of_pod(p) != update_revision)
            {
                ok &= self.delete_pod(stale).await;
            }
        }
        ok &= self.write_status(set, &update_revision).await;
        ok
    }

    async fn write_status(&self, set: &Value, update_revision: &str) -> bool {
        let pods = self.pods.list();
        let owned: Vec<&Value> = owned_by(set, &pods);
        let active: Vec<&Value> = owned.iter().copied().filter(|p| pod_is_active(p)).collect();
        let replicas = int_at(set, "/spec/replicas", 1).max(0);
        let min_ready = int_at(set, "/spec/minReadySeconds", 0);
        let updated = active
            .iter()
            .filter(|p| revisions::of_pod(p) == update_revision)
            .count() as i64;
        let previous = set
            .pointer("/status/currentRevision")
            .and_then(Value::as_str)
            .unwrap_or(update_revision)
            .to_string();
        // The roll-out is over when every pod runs the update revision.
        let current_revision = if updated == replicas && active.len() as i64 == replicas {
            update_revision.to_string()
        } else {
            previous
        };
        let current = active
            .iter()
            .filter(|p| revisions::of_pod(p) == current_revision)
            .count();
        let mut s = Map::new();
        if let Some(g) = set.pointer("/metadata/generation") {
            s.insert("observedGeneration".into(), g.clone());
        }
        s.insert("replicas".into(), json!(active.len()));
        let mut nonzero = |k: &str, n: usize| {
            if n > 0 {
                s.insert(k.into(), json!(n));
            }
        };
        nonzero(
            "readyReplicas",
            active.iter().filter(|p| pod_is_ready(p)).count(),
        );
        nonzero("currentReplicas", current);
        nonzero("updatedReplicas", updated as usize);
        s.insert("currentRevision".into(), json!(current_revision));
        s.insert("updateRevision".into(), json!(update_revision));
        s.insert("collisionCount".into(), json!(0));
        s.insert(
            "availableReplicas".into(),
            json!(active
                .iter()
                .filter(|p| pod_available(p, min_ready, self.clock.now()).is_ok())
                .count()),
        );
        let status = Value::Object(s);
        super::write_status(
            &self.client,
            &self.sets,
            "apps/v1",
            "statefulsets",
            set,
            status,
        )
        .await
    }
}

impl Reconcile for StatefulSetController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let mut retry = false;
        for set in self.sets.list() {
            if is_deleting(&set) {
                continue;
            }
            retry |= !self.sync(&set, &pods).await;
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// Start the StatefulSet controller.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let sets = informers.of("/apis/apps/v1/statefulsets");
    let pods = informers.of("/api/v1/pods");
    let revisions = informers.of("/apis/apps/v1/controllerrevisions");
    let claims = informers.of("/api/v1/persistentvolumeclaims");
    let controller = StatefulSetController {
        client: Client::service_account(api, "statefulset-controller"),
        clock: api.clock.clone(),
        sets: sets.clone(),
        pods: pods.clone(),
        revisions: revisions.clone(),
        claims: claims.clone(),
    };
    super::spawn_controller(
        vec![sets, pods, revisions, claims],
        &api.clock,
        stop,
        controller,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pod_of_a_statefulset_is_named_labelled_and_claims_its_volume() {
        let set = json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default", "uid": "s1"},
            "spec": {"serviceName": "db",
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "pg", "image": "postgres"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}}]},
        });
        let pod = pod_for(&set, 2, "db-abc");
        assert_eq!(pod["metadata"]["name"], "db-2");
        assert!(pod["metadata"].get("generateName").is_none());
        assert_eq!(
            pod["metadata"]["labels"],
            json!({"app": "db", REVISION_HASH: "db-abc",
                   "statefulset.kubernetes.io/pod-name": "db-2",
                   "apps.kubernetes.io/pod-index": "2"})
        );
        assert_eq!(pod["spec"]["hostname"], "db-2");
        assert_eq!(pod["spec"]["subdomain"], "db");
        assert_eq!(
            pod["spec"]["volumes"],
            json!([{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-2"}}])
        );
        assert_eq!(ordinal(&set, &pod), Some(2));
    }
}
