//! The CRD catalog follower (apiextensions' CRD informer): CRD writes in storage,
//! made by this server or by another one on the same etcd, keep the catalog of served
//! CRDs in step; missed history (compaction) reloads them all.

use crate::apiserver::{wait_bootstrapped, ApiServer};
use crate::rest::store::decode_stored;
use crate::storage::{EventKind, StorageError, WatchItem};
use futures::StreamExt;
use std::sync::Weak;

/// Once start-up is done, follow CRD writes in storage from the revision CRDs were
/// loaded at, until the server is gone.
pub async fn run(api: Weak<ApiServer>) {
    let Some(progress) = api.upgrade().map(|a| a.bootstrap_progress()) else {
        return;
    };
    if let Some(revision) = wait_bootstrapped(progress).await {
        follow(api, revision).await;
    }
}

async fn follow(api: Weak<ApiServer>, mut revision: i64) {
    loop {
        let Some(strong) = api.upgrade() else { return };
        let prefix = strong.crd_prefix();
        let watch = strong.store.storage.watch(&prefix, revision).await;
        drop(strong);
        let mut stream = match watch {
            Ok(s) => s,
            Err(StorageError::Compacted { .. }) => {
                // Missed history: reload everything from the current state.
                match api.upgrade() {
                    Some(a) => {
                        if let Ok(r) = a.load_crds().await {
                            revision = r;
                        }
                    }
                    None => return,
                }
                continue;
            }
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            let Some(api) = api.upgrade() else { return };
            match item {
                Ok(WatchItem::Event(ev)) => {
                    revision = ev.kv.mod_revision;
                    let name = ev.kv.key.rsplit('/').next().unwrap_or("");
                    match ev.kind {
                        EventKind::Delete => {
                            api.catalog.remove(name, ev.kv.mod_revision);
                        }
                        // A write through this server is in the catalog already: not
                        // decoded again (a CRD can be megabytes of JSON).
                        _ if api.catalog.holds(name, ev.kv.mod_revision) => {}
                        _ => {
                            if let Ok(obj) = decode_stored(&ev.kv) {
                                let _ = api.catalog.upsert(obj, ev.kv.mod_revision);
                            }
                        }
                    }
                }
                Ok(WatchItem::Progress(r)) => revision = revision.max(r),
                // etcd reports compacted history on the stream, not when the watch opens.
                Err(StorageError::Compacted { .. }) => {
                    if let Ok(r) = api.load_crds().await {
                        revision = r;
                    }
                    break;
                }
                Err(_) => break,
            }
        }
        if api.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
