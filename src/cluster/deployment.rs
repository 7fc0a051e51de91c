//! kube's Deployment controller (`pkg/controller/deployment`): a ReplicaSet per pod
//! template (`<deployment>-<pod-template-hash>`, the hash also a label and a selector
//! term), rolled out as the strategy says — `RollingUpdate` within `maxSurge` and
//! `maxUnavailable`, `Recreate` old pods first — with kube's revision annotations,
//! `revisionHistoryLimit`, status counts and its `Available` and `Progressing`
//! conditions (reasons and messages as kube's), so `kubectl rollout status` and
//! `kubectl wait --for=condition=Available` behave as on a cluster.
//!
//! Simplified: the pod-template-hash is an FNV-1a hash of the template's JSON (kube
//! hashes its Go struct dump: other letters, same length and alphabet); a replica
//! change during a rollout is not spread proportionally; `progressDeadlineSeconds` is
//! not enforced.

use super::client::{ApiError, Client};
use super::informer::Informer;
use super::objects::{
    collection, controller_ref, int_at, is_deleting, name, namespace, owned_by, path_of,
    set_condition, str_at, uid,
};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The label and selector term naming a ReplicaSet's template.
pub const TEMPLATE_HASH: &str = "pod-template-hash";
/// The revision annotation of Deployments and their ReplicaSets.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";

/// kube's `rand.SafeEncodeString` alphabet (no vowels, no look-alikes).
const SAFE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// The pod-template-hash of `template` with `collision_count`: the FNV-1a 32-bit hash
/// of its JSON, its decimal digits written in kube's safe alphabet.
pub fn template_hash(template: &Value, collision_count: i64) -> String {
    let mut h: u32 = 0x811c_9dc5;
    let text = format!("{template}{collision_count}");
    for b in text.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h.to_string()
        .bytes()
        .map(|d| SAFE_ALPHABET[usize::from(d) % SAFE_ALPHABET.len()] as char)
        .collect()
}

/// `template` without the pod-template-hash label (how a ReplicaSet's template is
/// compared with its Deployment's; a zero `creationTimestamp` is no difference).
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.get("creationTimestamp").is_some_and(Value::is_null) {
            meta.remove("creationTimestamp");
        }
    }
    if let Some(labels) = t
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.remove(TEMPLATE_HASH);
        if labels.is_empty() {
            if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("labels");
            }
        }
    }
    t
}

/// An int-or-percent of `total`, `default` when absent.
fn scaled(v: Option<&Value>, total: i64, round_up: bool, default: &str) -> i64 {
    let default = json!(default);
    super::objects::int_or_percent(v.unwrap_or(&default), total, round_up).unwrap_or(0)
}

/// `(maxSurge, maxUnavailable)` of a RollingUpdate Deployment, resolved as kube does
/// (both zero: one unavailable).
pub fn surge_and_unavailable(d: &Value) -> (i64, i64) {
    let replicas = int_at(d, "/spec/replicas", 1);
    let ru = d.pointer("/spec/strategy/rollingUpdate");
    let surge = scaled(ru.and_then(|r| r.get("maxSurge")), replicas, true, "25%");
    let mut unavailable = scaled(
        ru.and_then(|r| r.get("maxUnavailable")),
        replicas,
        false,
        "25%",
    );
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    (surge, unavailable.min(replicas))
}

fn revision(rs: &Value) -> i64 {
    rs.pointer("/metadata/annotations")
        .and_then(|a| a.get(REVISION))
        .and_then(Value::as_str)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn spec_replicas(rs: &Value) -> i64 {
    int_at(rs, "/spec/replicas", 0)
}

fn status_count(obj: &Value, field: &str) -> i64 {
    int_at(obj, &format!("/status/{field}"), 0)
}

/// The ReplicaSet a Deployment makes for its current template.
pub fn new_replica_set(d: &Value, hash: &str, replicas: i64, revision: i64) -> Value {
    let mut template = d.pointer("/spec/template").cloned().unwrap_or(json!({}));
    template["metadata"]["labels"][TEMPLATE_HASH] = json!(hash);
    let mut selector = d.pointer("/spec/selector").cloned().unwrap_or(json!({}));
    selector["matchLabels"][TEMPLATE_HASH] = json!(hash);
    let (surge, _) = surge_and_unavailable(d);
    let desired = int_at(d, "/spec/replicas", 1);
    let mut spec = json!({
        "replicas": replicas,
        "selector": selector,
        "template": template,
    });
    if let Some(m) = d.pointer("/spec/minReadySeconds") {
        spec["minReadySeconds"] = m.clone();
    }
    let mut annotations: Map<String, Value> = d
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for skip in ["kubectl.kubernetes.io/last-applied-configuration", REVISION] {
        annotations.remove(skip);
    }
    annotations.insert(DESIRED.into(), json!(desired.to_string()));
    annotations.insert(MAX.into(), json!((desired + surge).to_string()));
    annotations.insert(REVISION.into(), json!(revision.to_string()));
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{}-{hash}", name(d)),
            "namespace": namespace(d),
            "labels": template["metadata"]["labels"],
            "annotations": annotations,
            "ownerReferences": [controller_ref(d)],
        },
        "spec": spec,
    })
}

fn condition(type_: &str, status: &str, reason: &str, message: String) -> Value {
    let now = crate::rest::object::now();
    json!({
        "type": type_, "status": status, "lastUpdateTime": now,
        "lastTransitionTime": now, "reason": reason, "message": message,
    })
}

/// A Deployment's status from its ReplicaSets (`new`: the current template's).
pub fn status(d: &Value, new: Option<&Value>, all: &[&Value], progressing: Option<Value>) -> Value {
    let replicas = int_at(d, "/spec/replicas", 1);
    let sum = |f: &str| all.iter().map(|rs| status_count(rs, f)).sum::<i64>();
    let available = sum("availableReplicas");
    let updated = new.map_or(0, |rs| status_count(rs, "replicas"));
    let (_, max_unavailable) = surge_and_unavailable(d);
    let mut conditions: Vec<Value> = d
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let min_available = if str_at(d, "/spec/strategy/type") == "Recreate" {
        replicas
    } else {
        replicas - max_unavailable
    };
    set_condition(
        &mut conditions,
        if available >= min_available {
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.".into(),
            )
        } else {
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.".into(),
            )
        },
    );
    if d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) {
        set_condition(
            &mut conditions,
            condition(
                "Progressing",
                "Unknown",
                "DeploymentPaused",
                "Deployment is paused".into(),
            ),
        );
    } else if let Some(p) = progressing {
        set_condition(&mut conditions, p);
    }
    let mut s = Map::new();
    if let Some(g) = d.pointer("/metadata/generation") {
        s.insert("observedGeneration".into(), g.clone());
    }
    let mut nonzero = |k: &str, n: i64| {
        if n > 0 {
            s.insert(k.into(), json!(n));
        }
    };
    nonzero("replicas", sum("replicas"));
    nonzero("updatedReplicas", updated);
    nonzero("readyReplicas", sum("readyReplicas"));
    nonzero("availableReplicas", available);
    nonzero("unavailableReplicas", (replicas - available).max(0));
    s.insert(
        "terminatingReplicas".into(),
        json!(sum("terminatingReplicas")),
    );
    s.insert("conditions".into(), json!(conditions));
    if let Some(c) = d.pointer("/status/collisionCount") {
        s.insert("collisionCount".into(), c.clone());
    }
    Value::Object(s)
}

struct DeploymentController {
    client: Client,
    deployments: Arc<Informer>,
    replicasets: Arc<Informer>,
}

impl DeploymentController {
    async fn scale(&self, rs: &Value, replicas: i64, d: &Value) -> Result<Value, ApiError> {
        let desired = int_at(d, "/spec/replicas", 1);
        let (surge, _) = surge_and_unavailable(d);
        let mut updated = rs.clone();
        updated["spec"]["replicas"] = json!(replicas);
        updated["metadata"]["annotations"][DESIRED] = json!(desired.to_string());
        updated["metadata"]["annotations"][MAX] = json!((desired + surge).to_string());
        if updated == *rs {
            return Ok(updated);
        }
        let written = self
            .client
            .update(&path_of("apps/v1", "replicasets", rs), &updated)
            .await?;
        self.replicasets.observe(&written);
        Ok(written)
    }

    /// One pass over one Deployment; `Err` when a write failed.
    async fn sync(&self, d: &Value, all_rs: &[Arc<Value>]) -> Result<(), ApiError> {
        let owned: Vec<Value> = owned_by(d, all_rs).into_iter().cloned().collect();
        let template = without_hash(d.pointer("/spec/template").unwrap_or(&Value::Null));
        let mut new = owned
            .iter()
            .find(|rs| {
                without_hash(rs.pointer("/spec/template").unwrap_or(&Value::Null)) == template
            })
            .cloned();
        let mut old: Vec<Value> = owned
            .iter()
            .filter(|rs| new.as_ref().map(uid) != Some(uid(rs)))
            .cloned()
            .collect();
        old.sort_by(|a, b| {
            str_at(a, "/metadata/creationTimestamp").cmp(str_at(b, "/metadata/creationTimestamp"))
        });
        let replicas = int_at(d, "/spec/replicas", 1);
        let recreate = str_at(d, "/spec/strategy/type") == "Recreate";
        let paused = d.pointer("/spec/paused").and_then(Value::as_bool) == Some(true);
        let (surge, max_unavailable) = surge_and_unavailable(d);
        let next_revision = old.iter().map(revision).max().unwrap_or(0) + 1;
        let mut progressing: Option<Value> = None;
        if new.is_none() && !paused {
            let hash = template_hash(&template, int_at(d, "/status/collisionCount", 0));
            let start = if recreate {
                if old
                    .iter()
                    .any(|rs| spec_replicas(rs) > 0 || status_count(rs, "replicas") > 0)
                {
                    0
                } else {
                    replicas
                }
            } else {
                let total: i64 = old.iter().map(spec_replicas).sum();
                (replicas + surge - total).clamp(0, replicas)
            };
            let rs = new_replica_set(d, &hash, start, next_revision);
            let path = collection("apps/v1", "replicasets", namespace(d));
            let created = match self.client.create(&path, &rs).await {
                Ok(c) => c,
                Err(e) if e.reason == "AlreadyExists" => {
                    // Another template has this name: kube counts a collision.
                    let mut bumped = d.clone();
                    let count = int_at(d, "/status/collisionCount", 0) + 1;
                    bumped["status"]["collisionCount"] = json!(count);
                    let p = format!("{}/status", path_of("apps/v1", "deployments", d));
                    self.client.update(&p, &bumped).await?;
                    return Err(e);
                }
                Err(e) => return Err(e),
            };
            self.replicasets.observe(&created);
            progressing = Some(condition(
                "Progressing",
                "True",
                "NewReplicaSetCreated",
                format!("Created new replica set \"{}\"", name(&created)),
            ));
            new = Some(created);
        } else if let Some(rs) = new.clone() {
            let rs = &rs;
            if revision(rs) < next_revision {
                // A rollback to an old template: it becomes the newest revision.
                let mut bumped = rs.clone();
                bumped["metadata"]["annotations"][REVISION] = json!(next_revision.to_string());
                let written = self
                    .client
                    .update(&path_of("apps/v1", "replicasets", rs), &bumped)
                    .await?;
                self.replicasets.observe(&written);
                new = Some(written);
            }
            if super::objects::condition(d, "Progressing").is_none() {
                progressing = Some(condition(
                    "Progressing",
                    "True",
                    "FoundNewReplicaSet",
                    format!("Found new replica set \"{}\"", name(rs)),
                ));
            }
        }
        if !paused {
            if let Some(rs) = new.clone() {
                let scaled = if recreate {
                    self.recreate(d, &rs, &old).await?
                } else {
                    self.rolling(d, &rs, &old, surge, max_unavailable).await?
                };
                if scaled {
                    progressing = Some(condition(
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        format!("ReplicaSet \"{}\" is progressing.", name(&rs)),
                    ));
                }
            }
        }
        // The ReplicaSets as they are now.
        let all_rs = self.replicasets.list();
        let owned: Vec<Value> = owned_by(d, &all_rs).into_iter().cloned().collect();
        let new = new.and_then(|n| owned.iter().find(|rs| uid(rs) == uid(&n)).cloned());
        let old: Vec<&Value> = owned
            .iter()
            .filter(|rs| new.as_ref().map(uid) != Some(uid(rs)))
            .collect();
        self.cleanup(d, &old).await;
        if let Some(rs) = &new {
            let complete = spec_replicas(rs) == replicas
                && status_count(rs, "replicas") == replicas
                && status_count(rs, "availableReplicas") == replicas
                && old.iter().all(|o| status_count(o, "replicas") == 0);
            if complete {
                progressing = Some(condition(
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    format!("ReplicaSet \"{}\" has successfully progressed.", name(rs)),
                ));
            }
        }
        let all: Vec<&Value> = owned.iter().collect();
        let s = status(d, new.as_ref(), &all, progressing);
        let mut updated = d.clone();
        if let Some(rs) = &new {
            updated["metadata"]["annotations"][REVISION] = json!(revision(rs).to_string());
        }
        if updated != *d {
            let written = self
                .client
                .update(&path_of("apps/v1", "deployments", d), &updated)
                .await?;
            self.deployments.observe(&written);
            updated = written;
        }
        if updated.get("status") != Some(&s) {
            updated["status"] = s;
            let p = format!("{}/status", path_of("apps/v1", "deployments", d));
            let written = self.client.update(&p, &updated).await?;
            self.deployments.observe(&written);
        }
        Ok(())
    }

    /// kube's rolling update step; whether anything was scaled.
    async fn rolling(
        &self,
        d: &Value,
        new: &Value,
        old: &[Value],
        surge: i64,
        max_unavailable: i64,
    ) -> Result<bool, ApiError> {
        let replicas = int_at(d, "/spec/replicas", 1);
        let mut scaled = false;
        // Scale the new ReplicaSet up within the surge.
        let total: i64 = old.iter().map(spec_replicas).sum::<i64>() + spec_replicas(new);
        let new_count =
            if spec_replicas(new) > replicas || old.iter().all(|rs| spec_replicas(rs) == 0) {
                replicas
            } else {
                let room = (replicas + surge - total).max(0);
                (spec_replicas(new) + room).min(replicas)
            };
        let mut new = new.clone();
        if new_count != spec_replicas(&new) {
            new = self.scale(&new, new_count, d).await?;
            scaled = true;
        }
        // Scale old ReplicaSets down as far as availability allows.
        let all_pods: i64 = old.iter().map(spec_replicas).sum::<i64>() + spec_replicas(&new);
        let min_available = replicas - max_unavailable;
        let new_unavailable = spec_replicas(&new) - status_count(&new, "availableReplicas");
        let mut budget = all_pods - min_available - new_unavailable;
        // First the old pods that are not available anyway.
        for rs in old.iter() {
            if budget <= 0 {
                break;
            }
            let unhealthy = spec_replicas(rs) - status_count(rs, "availableReplicas");
            if unhealthy <= 0 {
                continue;
            }
            let down = unhealthy.min(budget);
            self.scale(rs, spec_replicas(rs) - down, d).await?;
            budget -= down;
            scaled = true;
        }
        let olds: Vec<Value> = {
            let all = self.replicasets.list();
            old.iter()
                .filter_map(|o| {
                    all.iter()
                        .find(|rs| uid(rs) == uid(o))
                        .map(|rs| (**rs).clone())
                })
                .collect()
        };
        let available: i64 = olds
            .iter()
            .chain(std::iter::once(&new))
            .map(|rs| status_count(rs, "availableReplicas").min(spec_replicas(rs)))
            .sum();
        let mut down_total = (available - min_available).max(0);
        for rs in &olds {
            if down_total <= 0 {
                break;
            }
            let down = spec_replicas(rs).min(down_total);
            if down > 0 {
                self.scale(rs, spec_replicas(rs) - down, d).await?;
                down_total -= down;
                scaled = true;
            }
        }
        Ok(scaled)
    }

    /// kube's Recreate: old pods all gone before the new ReplicaSet scales up.
    async fn recreate(&self, d: &Value, new: &Value, old: &[Value]) -> Result<bool, ApiError> {
        let mut scaled = false;
        for rs in old.iter().filter(|rs| spec_replicas(rs) > 0) {
            self.scale(rs, 0, d).await?;
            scaled = true;
        }
        if old.iter().any(|rs| status_count(rs, "replicas") > 0) || scaled {
            return Ok(scaled);
        }
        let replicas = int_at(d, "/spec/replicas", 1);
        if spec_replicas(new) != replicas {
            self.scale(new, replicas, d).await?;
            scaled = true;
        }
        Ok(scaled)
    }

    /// Delete the oldest empty old ReplicaSets beyond `revisionHistoryLimit`.
    async fn cleanup(&self, d: &Value, old: &[&Value]) {
        let limit = int_at(d, "/spec/revisionHistoryLimit", 10).max(0) as usize;
        let mut empty: Vec<&&Value> = old
            .iter()
            .filter(|rs| {
                spec_replicas(rs) == 0 && status_count(rs, "replicas") == 0 && !is_deleting(rs)
            })
            .collect();
        if empty.len() <= limit {
            return;
        }
        empty.sort_by_key(|rs| revision(rs));
        for rs in empty.into_iter().take(old.len().saturating_sub(limit)) {
            let opts = json!({"preconditions": {"uid": uid(rs)}});
            if self
                .client
                .delete(&path_of("apps/v1", "replicasets", rs), &opts)
                .await
                .is_ok()
            {
                self.replicasets.forget(rs);
            }
        }
    }
}

impl Reconcile for DeploymentController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let mut again = None;
        for d in self.deployments.list() {
            if is_deleting(&d) {
                continue;
            }
            let all_rs = self.replicasets.list();
            if let Err(e) = self.sync(&d, &all_rs).await {
                if !e.is_not_found() {
                    tracing::debug!(deployment = %name(&d), error = %e, "deployment sync failed; again");
                    again = Some(Duration::from_millis(100));
                }
            }
        }
        again
    }
}

/// Start the Deployment controller.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let deployments = informers.of("/apis/apps/v1/deployments");
    let replicasets = informers.of("/apis/apps/v1/replicasets");
    let controller = DeploymentController {
        client: Client::service_account(api, "deployment-controller"),
        deployments: deployments.clone(),
        replicasets: replicasets.clone(),
    };
    super::spawn_controller(vec![deployments, replicasets], &api.clock, stop, controller);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_hash_is_kube_shaped_and_moves_with_collisions() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
        let h = template_hash(&t, 0);
        assert!(h.len() <= 10 && !h.is_empty(), "{h}");
        assert!(h.bytes().all(|b| SAFE_ALPHABET.contains(&b)), "{h}");
        assert_eq!(h, template_hash(&t, 0));
        assert_ne!(h, template_hash(&t, 1));
    }

    #[test]
    fn surge_rounds_up_and_unavailable_down() {
        let d = |ru: Value, replicas: i64| json!({"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate", "rollingUpdate": ru}}});
        assert_eq!(surge_and_unavailable(&d(json!({}), 3)), (1, 0));
        assert_eq!(
            surge_and_unavailable(&d(json!({"maxSurge": 0, "maxUnavailable": 0}), 3)),
            (0, 1)
        );
        assert_eq!(
            surge_and_unavailable(&d(json!({"maxSurge": "50%", "maxUnavailable": "50%"}), 5)),
            (3, 2)
        );
    }

    #[test]
    fn the_new_replica_set_carries_the_hash_and_revision() {
        let d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "d1",
                         "annotations": {"team": "a", REVISION: "1"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}},
        });
        let rs = new_replica_set(&d, "abc", 1, 2);
        assert_eq!(rs["metadata"]["name"], "web-abc");
        assert_eq!(
            rs["metadata"]["labels"],
            json!({"app": "web", TEMPLATE_HASH: "abc"})
        );
        assert_eq!(
            rs["spec"]["selector"],
            json!({"matchLabels": {"app": "web", TEMPLATE_HASH: "abc"}})
        );
        assert_eq!(
            rs["metadata"]["annotations"],
            json!({"team": "a", DESIRED: "3", MAX: "4", REVISION: "2"})
        );
        assert_eq!(rs["metadata"]["ownerReferences"][0]["uid"], "d1");
        assert_eq!(without_hash(&rs["spec"]["template"]), d["spec"]["template"]);
    }
}
