//! kube's garbage collector (`pkg/controller/garbagecollector`) for every kind, custom
//! resources included: a graph of owner references kept from one watch on the whole
//! storage prefix, and kube's three cascades on top of it —
//!
//! - **Background**: an object whose owners are all gone is deleted; references to
//!   owners that are gone are dropped from an object that still has others.
//! - **Foreground**: an owner being deleted with the `foregroundDeletion` finalizer has
//!   its dependents deleted (those that block its deletion in the foreground too); the
//!   finalizer goes once no dependent with `blockOwnerDeletion` is left.
//! - **Orphan**: an owner being deleted with the `orphan` finalizer has its references
//!   removed from its dependents, then the finalizer goes.
//!
//! An owner missing from the graph is looked up through the API before anything is
//! deleted (it may be newer than the graph), as kube's collector does.

use super::client::{ApiError, Client};
use super::objects::str_at;
use crate::apiserver::ApiServer;
use crate::storage::{EventKind, ListOptions, WatchItem};
use futures::StreamExt;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::watch;

const ORPHAN: &str = "orphan";
const FOREGROUND: &str = "foregroundDeletion";

/// One owner reference (`raw`: as written, to write back the ones kept).
#[derive(Clone, Debug, PartialEq, Eq)]
struct OwnerRef {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
    raw: Value,
}

/// One object of the graph.
#[derive(Clone, Debug)]
struct Node {
    api_version: String,
    kind: String,
    namespace: String,
    name: String,
    uid: String,
    resource_version: String,
    owners: Vec<OwnerRef>,
    deleting: bool,
    finalizers: Vec<String>,
}

impl Node {
    fn from_object(obj: &Value) -> Option<Node> {
        let meta = obj.get("metadata")?;
        let uid = meta.get("uid").and_then(Value::as_str)?.to_string();
        let owners = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .filter_map(|r| {
                        Some(OwnerRef {
                            api_version: r.get("apiVersion")?.as_str()?.to_string(),
                            kind: r.get("kind")?.as_str()?.to_string(),
                            name: r.get("name")?.as_str()?.to_string(),
                            uid: r.get("uid")?.as_str()?.to_string(),
                            block: r.get("blockOwnerDeletion").and_then(Value::as_bool)
                                == Some(true),
                            raw: r.clone(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let finalizers = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some(Node {
            api_version: str_at(obj, "/apiVersion").to_string(),
            kind: str_at(obj, "/kind").to_string(),
            namespace: str_at(obj, "/metadata/namespace").to_string(),
            name: str_at(obj, "/metadata/name").to_string(),
            uid,
            resource_version: str_at(obj, "/metadata/resourceVersion").to_string(),
            owners,
            deleting: meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()),
            finalizers,
        })
    }
}

/// The owner-reference graph: objects by uid, the uid of each storage key, the
/// dependents of each owner uid, and the uids whose cascade is to be looked at again.
#[derive(Default)]
struct Graph {
    nodes: HashMap<String, Node>,
    by_key: HashMap<String, String>,
    dependents: HashMap<String, HashSet<String>>,
    dirty: HashSet<String>,
}

impl Graph {
    fn unlink(&mut self, node: &Node) {
        for o in &node.owners {
            if let Some(d) = self.dependents.get_mut(&o.uid) {
                d.remove(&node.uid);
                if d.is_empty() {
                    self.dependents.remove(&o.uid);
                }
            }
        }
    }

    /// Mark the owners and dependents of `uid` (and itself) to be looked at again.
    fn touch_around(&mut self, uid: &str, owners: &[OwnerRef]) {
        self.dirty.insert(uid.to_string());
        self.dirty.extend(owners.iter().map(|o| o.uid.clone()));
        if let Some(d) = self.dependents.get(uid) {
            self.dirty.extend(d.iter().cloned());
        }
    }

    fn put(&mut self, key: &str, obj: &Value) {
        let Some(node) = Node::from_object(obj) else {
            return;
        };
        if let Some(old_uid) = self.by_key.insert(key.to_string(), node.uid.clone()) {
            if let Some(old) = self.nodes.remove(&old_uid) {
                self.unlink(&old);
                if old_uid != node.uid {
                    self.touch_around(&old_uid, &old.owners);
                }
            }
        }
        for o in &node.owners {
            self.dependents
                .entry(o.uid.clone())
                .or_default()
                .insert(node.uid.clone());
        }
        self.touch_around(&node.uid.clone(), &node.owners.clone());
        self.nodes.insert(node.uid.clone(), node);
    }

    fn remove(&mut self, key: &str) {
        if let Some(uid) = self.by_key.remove(key) {
            if let Some(node) = self.nodes.remove(&uid) {
                self.unlink(&node);
                self.touch_around(&uid, &node.owners);
            }
        }
    }

    fn dependents(&self, owner: &str) -> Vec<&Node> {
        self.dependents
            .get(owner)
            .into_iter()
            .flatten()
            .filter_map(|uid| self.nodes.get(uid))
            .collect()
    }
}

struct Collector {
    api: Weak<ApiServer>,
    client: Client,
    graph: Graph,
}

impl Collector {
    /// The API path of an object of `api_version`/`kind`.
    fn path(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> Option<String> {
        let api = self.api.upgrade()?;
        super::object_path(&api, api_version, kind, namespace, name)
    }

    /// Whether `owner` (referenced from an object in `namespace`) is gone: not in the
    /// graph and, asked through the API, missing or another object by now. An owner
    /// whose kind is not served here is not known to be gone.
    async fn owner_gone(&self, owner: &OwnerRef, namespace: &str) -> bool {
        if self.graph.nodes.contains_key(&owner.uid) {
            return false;
        }
        let Some(path) = self.path(&owner.api_version, &owner.kind, namespace, &owner.name) else {
            return false;
        };
        match self.client.get(&path).await {
            Ok(live) => str_at(&live, "/metadata/uid") != owner.uid,
            Err(e) => e.is_not_found(),
        }
    }

    async fn delete(&self, node: &Node, policy: &str) -> Result<(), ApiError> {
        let Some(path) = self.path(&node.api_version, &node.kind, &node.namespace, &node.name)
        else {
            return Ok(());
        };
        let opts = json!({"propagationPolicy": policy, "preconditions": {"uid": node.uid}});
        match self.client.delete(&path, &opts).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Merge-patch `node`'s metadata (`patch`), at the version the graph saw.
    async fn patch_meta(&self, node: &Node, mut patch: Value) -> Result<(), ApiError> {
        let Some(path) = self.path(&node.api_version, &node.kind, &node.namespace, &node.name)
        else {
            return Ok(());
        };
        patch["resourceVersion"] = json!(node.resource_version);
        patch["uid"] = json!(node.uid);
        match self
            .client
            .merge_patch(&path, &json!({"metadata": patch}))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() || e.is_conflict() => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// One pass over what changed since the last; `true` when something should be
    /// tried again (it stays marked).
    async fn collect(&mut self) -> bool {
        let dirty: Vec<String> = self.graph.dirty.drain().collect();
        let mut failed: Vec<String> = Vec::new();
        for uid in dirty {
            let Some(node) = self.graph.nodes.get(&uid).cloned() else {
                continue;
            };
            let ok = if node.deleting {
                self.cascade_from(&node).await
            } else if !node.owners.is_empty() {
                self.check_owners(&node).await
            } else {
                true
            };
            if !ok {
                failed.push(uid);
            }
        }
        let retry = !failed.is_empty();
        self.graph.dirty.extend(failed);
        retry
    }

    /// An owner being deleted: its `orphan` or `foregroundDeletion` cascade; false
    /// when a write failed or dependents remain to wait for.
    async fn cascade_from(&self, owner: &Node) -> bool {
        let dependents: Vec<Node> = self
            .graph
            .dependents(&owner.uid)
            .into_iter()
            .cloned()
            .collect();
        let mut ok = true;
        if owner.finalizers.iter().any(|f| f == ORPHAN) {
            for d in &dependents {
                let kept: Vec<&OwnerRef> = d.owners.iter().filter(|o| o.uid != owner.uid).collect();
                ok &= self.patch_owner_refs(d, &kept).await.is_ok();
            }
            if ok {
                ok &= self.drop_finalizer(owner, ORPHAN).await.is_ok();
            }
        } else if owner.finalizers.iter().any(|f| f == FOREGROUND) {
            let mut blocking = false;
            for d in &dependents {
                let blocks = d.owners.iter().any(|o| o.uid == owner.uid && o.block);
                blocking |= blocks;
                if d.deleting {
                    continue;
                }
                let policy = if blocks { "Foreground" } else { "Background" };
                ok &= self.delete(d, policy).await.is_ok();
            }
            if !blocking {
                ok &= self.drop_finalizer(owner, FOREGROUND).await.is_ok();
            }
        }
        ok
    }

    /// A dependent: deleted when all its owners are gone, its references to the gone
    /// ones dropped when some remain; false when a write failed.
    async fn check_owners(&self, node: &Node) -> bool {
        let mut gone = Vec::new();
        for o in &node.owners {
            if self.owner_gone(o, &node.namespace).await {
                gone.push(o.uid.clone());
            }
        }
        if gone.is_empty() {
            return true;
        }
        if gone.len() == node.owners.len() {
            self.delete(node, "Background").await.is_ok()
        } else {
            let kept: Vec<&OwnerRef> = node
                .owners
                .iter()
                .filter(|o| !gone.contains(&o.uid))
                .collect();
            self.patch_owner_refs(node, &kept).await.is_ok()
        }
    }

    /// Keep only the owner references `kept` on `node` (none: the field goes).
    async fn patch_owner_refs(&self, node: &Node, kept: &[&OwnerRef]) -> Result<(), ApiError> {
        let refs = if kept.is_empty() {
            Value::Null
        } else {
            json!(kept.iter().map(|r| r.raw.clone()).collect::<Vec<_>>())
        };
        self.patch_meta(node, json!({"ownerReferences": refs}))
            .await
    }

    async fn drop_finalizer(&self, owner: &Node, finalizer: &str) -> Result<(), ApiError> {
        let kept: Vec<&String> = owner
            .finalizers
            .iter()
            .filter(|f| *f != finalizer)
            .collect();
        let value = if kept.is_empty() {
            Value::Null
        } else {
            json!(kept)
        };
        self.patch_meta(owner, json!({"finalizers": value})).await
    }
}

/// Follow storage into the graph and collect after each burst of changes.
async fn run(api: Weak<ApiServer>, client: Client) {
    let mut collector = Collector {
        api: api.clone(),
        client,
        graph: Graph::default(),
    };
    loop {
        let Some(strong) = api.upgrade() else { return };
        let storage = strong.store.storage.clone();
        let prefix = format!("{}/", strong.options.prefix);
        drop(strong);
        let listed = match storage.list(&prefix, &ListOptions::default()).await {
            Ok(l) => l,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        collector.graph = Graph::default();
        for kv in &listed.items {
            if let Ok(obj) = crate::rest::store::decode_stored(kv) {
                collector.graph.put(&kv.key, &obj);
            }
        }
        let Ok(mut events) = storage.watch(&prefix, listed.revision).await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let mut retry_at: Option<tokio::time::Instant> = Some(tokio::time::Instant::now());
        loop {
            let item = match retry_at {
                Some(at) => match tokio::time::timeout_at(at, events.next()).await {
                    Ok(item) => item,
                    Err(_) => {
                        let again = collector.collect().await;
                        retry_at =
                            again.then(|| tokio::time::Instant::now() + Duration::from_millis(200));
                        continue;
                    }
                },
                None => events.next().await,
            };
            match item {
                Some(Ok(WatchItem::Event(ev))) => {
                    match ev.kind {
                        EventKind::Delete => collector.graph.remove(&ev.kv.key),
                        EventKind::Create | EventKind::Modify => {
                            if let Ok(obj) = crate::rest::store::decode_stored(&ev.kv) {
                                collector.graph.put(&ev.kv.key, &obj);
                            }
                        }
                    }
                    // Collect once the burst has landed.
                    let soon = tokio::time::Instant::now() + Duration::from_millis(2);
                    retry_at = Some(retry_at.map_or(soon, |at| at.min(soon)));
                }
                Some(Ok(WatchItem::Progress(_))) => {}
                Some(Err(_)) | None => break,
            }
        }
    }
}

/// Start the garbage collector.
pub fn start(api: &Arc<ApiServer>, stop: watch::Receiver<bool>) {
    let client = Client::service_account(api, "generic-garbage-collector");
    tokio::spawn(super::until_stopped(stop, run(Arc::downgrade(api), client)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_read_owner_references_and_finalizers() {
        let obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "d", "uid": "u2", "resourceVersion": "7",
                "deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["orphan"],
                "ownerReferences": [
                    {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u1",
                     "blockOwnerDeletion": true},
                    {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u0"},
                ]},
        });
        let n = Node::from_object(&obj).expect("a node");
        assert!(n.deleting);
        assert_eq!(n.finalizers, ["orphan"]);
        assert_eq!(n.owners.len(), 2);
        assert!(n.owners[0].block && !n.owners[1].block);
        let mut g = Graph::default();
        g.put("/registry/configmaps/d/c", &obj);
        assert_eq!(g.dependents("u1").len(), 1);
        g.remove("/registry/configmaps/d/c");
        assert!(g.nodes.is_empty());
    }
}
