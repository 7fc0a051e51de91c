//! A cache of one resource, kept by listing it and following its watch (client-go's
//! reflector and informer): controllers read objects from it and are woken when it
//! changes. A watch that ends or fails is followed by a new list.

use super::client::Client;
use futures::StreamExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// `namespace/name` (`name` for cluster-scoped objects).
pub fn key_of(obj: &Value) -> String {
    let meta = |k: &str| {
        obj.pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_str)
    };
    match meta("namespace") {
        Some(ns) if !ns.is_empty() => format!("{ns}/{}", meta("name").unwrap_or("")),
        _ => meta("name").unwrap_or("").to_string(),
    }
}

/// A resourceVersion as a number (ours are storage revisions); `None`: not one.
fn revision(obj: &Value) -> Option<u64> {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| rv.parse().ok())
}

/// The cached objects of one resource.
pub struct Informer {
    objects: RwLock<BTreeMap<String, Arc<Value>>>,
    /// Keys a controller deleted, with the revision it saw: older events of them are
    /// stale (client-go's controllers keep expectations for the same reason).
    deleted: RwLock<BTreeMap<String, u64>>,
    synced: watch::Sender<bool>,
    subscribers: Mutex<Vec<Arc<Notify>>>,
}

impl Informer {
    /// Start caching the collection at `path` (`/api/v1/pods`) through `client`; the
    /// task ends when `stop` turns true or the server is gone.
    pub fn start(client: Client, path: &str, stop: watch::Receiver<bool>) -> Arc<Informer> {
        let informer = Arc::new(Informer {
            objects: RwLock::new(BTreeMap::new()),
            deleted: RwLock::new(BTreeMap::new()),
            synced: watch::channel(false).0,
            subscribers: Mutex::new(Vec::new()),
        });
        let task = reflect(client, path.to_string(), Arc::downgrade(&informer));
        tokio::spawn(super::until_stopped(stop, task));
        informer
    }

    /// Wake `notify` whenever the cache changes.
    pub fn subscribe(&self, notify: Arc<Notify>) {
        if let Ok(mut subs) = self.subscribers.lock() {
            subs.push(notify);
        }
    }

    fn changed(&self) {
        if let Ok(subs) = self.subscribers.lock() {
            for n in subs.iter() {
                n.notify_one();
            }
        }
    }

    /// Every cached object (shared: a pass reads them without copying).
    pub fn list(&self) -> Vec<Arc<Value>> {
        self.objects
            .read()
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }

    /// The cached object at `key` (`namespace/name`).
    pub fn get(&self, key: &str) -> Option<Arc<Value>> {
        self.objects.read().ok().and_then(|m| m.get(key).cloned())
    }

    /// Wait until the first list has been cached.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Cache what a write of a controller answered, ahead of its watch event, so the
    /// next pass counts it (a newer cached version wins).
    pub fn observe(&self, obj: &Value) {
        let key = key_of(obj);
        if let Ok(mut m) = self.objects.write() {
            let newer = match (m.get(&key).and_then(|c| revision(c)), revision(obj)) {
                (Some(cached), Some(new)) => new > cached,
                _ => true,
            };
            if newer {
                m.insert(key, Arc::new(obj.clone()));
            }
        }
    }

    /// Change the cached object at `key` as a write that answered without the object
    /// did (a pod's binding), ahead of its watch event, which replaces it.
    pub fn amend(&self, key: &str, change: impl FnOnce(&mut Value)) {
        if let Ok(mut m) = self.objects.write() {
            if let Some(obj) = m.get_mut(key) {
                change(Arc::make_mut(obj));
            }
        }
    }

    /// Drop `obj`, deleted by a controller, ahead of its watch event.
    pub fn forget(&self, obj: &Value) {
        let key = key_of(obj);
        if let Ok(mut m) = self.objects.write() {
            m.remove(&key);
        }
        if let (Ok(mut d), Some(rv)) = (self.deleted.write(), revision(obj)) {
            d.insert(key, rv);
        }
    }

    fn replace(&self, items: Vec<Value>) {
        if let Ok(mut m) = self.objects.write() {
            *m = items
                .into_iter()
                .map(|o| (key_of(&o), Arc::new(o)))
                .collect();
        }
        if let Ok(mut d) = self.deleted.write() {
            d.clear();
        }
        self.synced.send_replace(true);
        self.changed();
    }

    /// Apply one watch event (bookmarks and errors change nothing).
    fn apply(&self, event: &Value) {
        let Some(obj) = event.get("object") else {
            return;
        };
        let key = key_of(obj);
        match event.get("type").and_then(Value::as_str) {
            Some("ADDED" | "MODIFIED") => {
                let stale = self.deleted.read().ok().and_then(|d| d.get(&key).copied());
                if stale.is_some_and(|at| revision(obj).is_some_and(|rv| rv <= at)) {
                    return;
                }
                self.observe(obj);
            }
            Some("DELETED") => {
                if let Ok(mut m) = self.objects.write() {
                    m.remove(&key);
                }
                if let Ok(mut d) = self.deleted.write() {
                    d.remove(&key);
                }
            }
            _ => return,
        }
        self.changed();
    }
}

/// List, then follow the watch; list again when it ends.
async fn reflect(client: Client, path: String, informer: std::sync::Weak<Informer>) {
    while client.is_alive() {
        let Some(me) = informer.upgrade() else { return };
        let listed = match client.get(&path).await {
            Ok(list) => list,
            Err(_) => {
                drop(me);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let rv = listed
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // Items carry the list's type (kube may leave it to the list).
        let api_version = listed.get("apiVersion").cloned().unwrap_or(Value::Null);
        let kind = listed
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| k.strip_suffix("List"))
            .map(|k| Value::String(k.to_string()))
            .unwrap_or(Value::Null);
        let mut items = listed
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for item in &mut items {
            if let Some(m) = item.as_object_mut() {
                m.entry("apiVersion").or_insert_with(|| api_version.clone());
                m.entry("kind").or_insert_with(|| kind.clone());
            }
        }
        me.replace(items);
        drop(me);
        let Ok(events) = client.watch(&path, &rv).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            let Some(me) = informer.upgrade() else { return };
            if event.get("type").and_then(Value::as_str) == Some("ERROR") {
                break;
            }
            me.apply(&event);
        }
    }
}
