//! kube's APIService autoregistration (`kube-apiserver-autoregistration`: the
//! autoregister and crdregistration controllers): after start-up's pass, another pass
//! of [`ApiServer::autoregister_api_services`] runs whenever the CRD catalog changes
//! (a CRD or a served version comes or goes, here or through another server on the same
//! etcd) or an APIService is written (a user deleting or editing a CRD's APIService gets
//! it back), and again after a pass that failed.

use crate::apiserver::{wait_bootstrapped, ApiServer, APIREGISTRATION_GROUP};
use crate::storage::{StorageError, WatchItem, WatchStream};
use futures::StreamExt;
use std::sync::Weak;
use std::time::Duration;

/// How long to wait before retrying a failed pass or a lost watch.
const RETRY: Duration = Duration::from_secs(1);

/// How often to wake without news, to notice the server is gone.
const IDLE: Duration = Duration::from_secs(5);

/// The least time between two passes: a pass reads every CRD and APIService, so while
/// hundreds of CRDs are applied one after another, changes that arrive meanwhile are
/// taken together by the next pass instead of one pass each.
const MIN_PASS_INTERVAL: Duration = Duration::from_millis(50);

/// Once start-up is done, keep the local APIServices in step until the server is gone.
pub async fn run(api: Weak<ApiServer>) {
    let Some(progress) = api.upgrade().map(|a| a.bootstrap_progress()) else {
        return;
    };
    if wait_bootstrapped(progress).await.is_none() {
        return;
    }
    let Some(mut crds) = api.upgrade().map(|a| a.catalog.changes()) else {
        return;
    };
    let mut watch: Option<WatchStream> = None;
    // Start-up's pass may have been cut short; and CRDs may have changed since.
    let mut dirty = true;
    let mut last_pass: Option<tokio::time::Instant> = None;
    loop {
        if dirty {
            if let Some(last) = last_pass {
                tokio::time::sleep_until(last + MIN_PASS_INTERVAL).await;
            }
        }
        let Some(strong) = api.upgrade() else { return };
        if watch.is_none() {
            watch = open_watch(&strong).await;
        }
        if dirty {
            // The pass reads the catalog as it is now: changes so far are taken.
            crds.borrow_and_update();
            last_pass = Some(tokio::time::Instant::now());
            dirty = strong.autoregister_api_services().await.is_err();
        }
        drop(strong);
        let wait = if dirty || watch.is_none() {
            RETRY
        } else {
            IDLE
        };
        tokio::select! {
            changed = crds.changed() => {
                if changed.is_err() {
                    return;
                }
                dirty = true;
            }
            item = next(&mut watch) => match item {
                Some(Ok(WatchItem::Event(_))) => dirty = true,
                Some(Ok(WatchItem::Progress(_))) => {}
                // Lost (compacted, storage down): reopen, and look again.
                Some(Err(_)) | None => {
                    watch = None;
                    dirty = true;
                }
            },
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// A watch of every APIService from now on (`None` when storage does not answer).
async fn open_watch(api: &ApiServer) -> Option<WatchStream> {
    let kind = api.builtin(APIREGISTRATION_GROUP, "v1", "apiservices")?;
    let prefix = kind.descriptor().list_prefix("");
    api.store.storage.watch(&prefix, 0).await.ok()
}

/// The next item of the watch, if there is one (pending forever without a watch).
async fn next(watch: &mut Option<WatchStream>) -> Option<Result<WatchItem, StorageError>> {
    match watch {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}
