//! A collection admission reads on every write, kept in memory and followed through
//! a storage watch (kube's plugins read informer caches the same way): the objects
//! under one key root, with the revision each was written at. Until the first list
//! has loaded, reads go to storage.

use crate::status::Status;
use crate::storage::{EventKind, ListOptions, Storage, StorageError, WatchItem};
use futures::StreamExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// One stored object: its key, revision and content.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Storage key.
    pub key: String,
    /// The revision it was last written at.
    pub revision: i64,
    /// The object.
    pub object: Arc<Value>,
}

/// The objects under a key root.
pub struct Followed {
    storage: Arc<dyn Storage>,
    root: String,
    cache: RwLock<Option<Cache>>,
}

/// The loaded objects, and the revisions at which this server deleted some: the watch
/// may still bring an older event of such a key, which must not bring it back (nor
/// an older event replace a newer write: each key only moves forward).
#[derive(Default)]
struct Cache {
    entries: BTreeMap<String, Entry>,
    deleted: BTreeMap<String, i64>,
}

impl Cache {
    /// Whether a write of `key` at `revision` is older than what is known: a newer
    /// write, or a delete at or after it.
    fn stale(&self, key: &str, revision: i64) -> bool {
        self.newer(key, revision) || self.deleted.get(key).is_some_and(|&r| r >= revision)
    }

    /// Whether the cached object at `key` was written after `revision`.
    fn newer(&self, key: &str, revision: i64) -> bool {
        self.entries.get(key).is_some_and(|e| e.revision > revision)
    }

    fn put(&mut self, key: &str, revision: i64, object: Arc<Value>) {
        self.deleted.remove(key);
        self.entries.insert(
            key.to_string(),
            Entry {
                key: key.to_string(),
                revision,
                object,
            },
        );
    }

    fn delete(&mut self, key: &str, revision: i64, remember: bool) {
        self.entries.remove(key);
        if remember {
            self.deleted.insert(key.to_string(), revision);
        } else if self.deleted.get(key).is_some_and(|&r| r <= revision) {
            self.deleted.remove(key);
        }
    }
}

impl Followed {
    /// Follow `root` (`""`: nothing is followed and reads find nothing).
    pub fn start(storage: Arc<dyn Storage>, root: &str) -> Arc<Followed> {
        let f = Arc::new(Followed {
            storage,
            root: root.to_string(),
            cache: RwLock::new(None),
        });
        if !root.is_empty() && tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(follow(Arc::downgrade(&f)));
        }
        f
    }

    /// The objects whose key starts with `root/` + `sub` (`sub`: a namespace and `/`,
    /// or empty for all), in key order. `fresh`: read storage, not the cache.
    pub async fn under(&self, sub: &str, fresh: bool) -> Result<Vec<Entry>, Status> {
        if self.root.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = crate::field::concat(&[&self.root, "/", sub]);
        if !fresh {
            if let Ok(cache) = self.cache.read() {
                if let Some(cache) = cache.as_ref() {
                    use std::ops::Bound;
                    return Ok(cache
                        .entries
                        .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                        .take_while(|(k, _)| k.starts_with(&prefix))
                        .map(|(_, e)| e.clone())
                        .collect());
                }
            }
        }
        let res = self
            .storage
            .list(&prefix, &ListOptions::default())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(res
            .items
            .iter()
            .filter_map(|kv| {
                Some(Entry {
                    key: kv.key.clone(),
                    revision: kv.mod_revision,
                    object: Arc::new(crate::codec::decode_stored_json::<Value>(&kv.value).ok()?),
                })
            })
            .collect())
    }

    /// The object at `key` as last seen: `None` when it is not in the cache, or the
    /// cache has not loaded yet (then only storage can tell).
    pub fn cached(&self, key: &str) -> Option<Arc<Value>> {
        let cache = self.cache.read().ok()?;
        cache.as_ref()?.entries.get(key).map(|e| e.object.clone())
    }

    /// Whether keys under `key_root` (a kind's, as `Descriptor::key` makes them) can
    /// lie under this root: one is the other, or lies below it.
    pub fn may_hold(&self, key_root: &str) -> bool {
        let below = |long: &str, short: &str| {
            long.strip_prefix(short)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        };
        !self.root.is_empty() && (below(key_root, &self.root) || below(&self.root, key_root))
    }

    /// An object under the root was written through this server: reads see it at
    /// once (the watch would bring it a moment later). `None`: it was deleted.
    pub fn written(&self, key: &str, revision: i64, object: Option<&Value>) {
        if self.root.is_empty()
            || !key
                .strip_prefix(self.root.as_str())
                .is_some_and(|k| k.starts_with('/'))
        {
            return;
        }
        let Ok(mut cache) = self.cache.write() else {
            return;
        };
        let Some(cache) = cache.as_mut() else {
            return;
        };
        match object {
            Some(o) if !cache.stale(key, revision) => cache.put(key, revision, Arc::new(o.clone())),
            None if !cache.newer(key, revision) => cache.delete(key, revision, true),
            _ => {}
        }
    }

    async fn load(&self) -> Result<i64, StorageError> {
        let res = self
            .storage
            .list(&format!("{}/", self.root), &ListOptions::default())
            .await?;
        let entries = res
            .items
            .iter()
            .filter_map(|kv| {
                let object = crate::codec::decode_stored_json::<Value>(&kv.value).ok()?;
                Some((
                    kv.key.clone(),
                    Entry {
                        key: kv.key.clone(),
                        revision: kv.mod_revision,
                        object: Arc::new(object),
                    },
                ))
            })
            .collect();
        if let Ok(mut cache) = self.cache.write() {
            *cache = Some(Cache {
                entries,
                deleted: BTreeMap::new(),
            });
        }
        Ok(res.revision)
    }

    fn apply(&self, kind: EventKind, key: &str, revision: i64, value: &[u8]) {
        let Ok(mut cache) = self.cache.write() else {
            return;
        };
        let Some(cache) = cache.as_mut() else {
            return;
        };
        match kind {
            EventKind::Delete if !cache.newer(key, revision) => cache.delete(key, revision, false),
            EventKind::Delete => {}
            _ if cache.stale(key, revision) => {}
            _ => match crate::codec::decode_stored_json::<Value>(value) {
                Ok(object) => cache.put(key, revision, Arc::new(object)),
                Err(_) => cache.delete(key, revision, false),
            },
        }
    }
}

async fn follow(source: Weak<Followed>) {
    let mut revision: Option<i64> = None;
    loop {
        let Some(strong) = source.upgrade() else {
            return;
        };
        let from = match revision {
            Some(r) => r,
            None => match strong.load().await {
                Ok(r) => r,
                Err(_) => {
                    drop(strong);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        revision = Some(from);
        let watch = strong
            .storage
            .watch(&format!("{}/", strong.root), from)
            .await;
        drop(strong);
        let mut stream = match watch {
            Ok(s) => s,
            Err(StorageError::Compacted { .. }) => {
                revision = None;
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            let Some(strong) = source.upgrade() else {
                return;
            };
            match item {
                Ok(WatchItem::Event(ev)) => {
                    revision = Some(ev.kv.mod_revision);
                    strong.apply(ev.kind, &ev.kv.key, ev.kv.mod_revision, &ev.kv.value);
                }
                Ok(WatchItem::Progress(r)) => revision = Some(from.max(r)),
                Err(StorageError::Compacted { .. }) => {
                    revision = None;
                    break;
                }
                Err(_) => break,
            }
        }
        // The watch ended: resume from the last revision seen (a compacted one lists
        // again).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_may_hold_the_keys_of_kinds_stored_at_it_above_it_or_below_it() {
        let storage: Arc<dyn Storage> = Arc::new(crate::storage::memory::MemoryStorage::new());
        let f = Followed::start(storage.clone(), "/registry/serviceaccounts");
        assert!(f.may_hold("/registry/serviceaccounts"));
        // A kind stored at `/registry` has keys such as `/registry/serviceaccounts/a`.
        assert!(f.may_hold("/registry"));
        assert!(f.may_hold("/registry/serviceaccounts/default"));
        assert!(!f.may_hold("/registry/serviceaccount"));
        assert!(!f.may_hold("/registry/serviceaccountsx"));
        assert!(!f.may_hold("/registry/example.com/widgets"));
        assert!(!Followed::start(storage, "").may_hold("/registry/serviceaccounts"));
    }
}
