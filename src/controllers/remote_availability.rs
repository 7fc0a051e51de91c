//! kube's remote availability controller, driven as kube drives it: a pass of
//! [`crate::aggregator::Aggregator::sync`] whenever an APIService, Service or
//! EndpointSlice changes (in storage, so writes of other servers on the same etcd
//! count), every 30 s (kube's resync), and a second after a pass that failed.

use crate::aggregator::endpoints::Lookup;
use crate::apiserver::{wait_bootstrapped, ApiServer, APIREGISTRATION_GROUP};
use crate::storage::{StorageError, WatchItem, WatchStream};
use futures::StreamExt;
use std::sync::Weak;
use std::time::Duration;

/// kube's resync period of APIServices in this controller.
const RESYNC: Duration = Duration::from_secs(30);

/// How long to wait before retrying a failed pass or lost watches.
const RETRY: Duration = Duration::from_secs(1);

/// How often to wake without news, to notice the server is gone.
const IDLE: Duration = Duration::from_secs(5);

/// The resources whose changes start a pass: `(group, version, resource)`.
const WATCHED: [(&str, &str, &str); 3] = [
    (APIREGISTRATION_GROUP, "v1", "apiservices"),
    ("", "v1", "services"),
    ("discovery.k8s.io", "v1", "endpointslices"),
];

/// Once start-up is done, keep remote APIServices' availability current until the
/// server is gone.
pub async fn run(api: Weak<ApiServer>) {
    let Some(progress) = api.upgrade().map(|a| a.bootstrap_progress()) else {
        return;
    };
    if wait_bootstrapped(progress).await.is_none() {
        return;
    }
    let mut watches: Option<futures::stream::SelectAll<WatchStream>> = None;
    let mut dirty = true;
    let mut last_pass = tokio::time::Instant::now();
    loop {
        let Some(strong) = api.upgrade() else { return };
        if watches.is_none() {
            watches = open_watches(&strong).await;
        }
        if dirty || last_pass.elapsed() >= RESYNC {
            dirty = !pass(&strong).await;
            last_pass = tokio::time::Instant::now();
        }
        drop(strong);
        let wait = if dirty || watches.is_none() {
            RETRY
        } else {
            IDLE.min(RESYNC.saturating_sub(last_pass.elapsed()))
        };
        tokio::select! {
            item = next(&mut watches) => match item {
                Some(Ok(WatchItem::Event(_))) => dirty = true,
                Some(Ok(WatchItem::Progress(_))) => {}
                Some(Err(_)) | None => {
                    watches = None;
                    dirty = true;
                }
            },
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

/// One pass; whether it succeeded.
async fn pass(api: &ApiServer) -> bool {
    let kinds = WATCHED.map(|(g, v, r)| api.builtin(g, v, r));
    let [Some(apiservices), Some(services), Some(endpoint_slices)] = kinds else {
        // A server without these resources has no remote APIServices.
        return true;
    };
    let lookup = Lookup {
        store: &api.store,
        services: services.as_ref(),
        endpoint_slices: endpoint_slices.as_ref(),
        mappings: api.admission.service_resolver(),
        routing: api.aggregator.options.enable_aggregator_routing,
    };
    api.aggregator
        .sync(&lookup, apiservices.as_ref())
        .await
        .is_ok()
}

/// Watches of the watched resources from now on (`None` when storage does not answer).
async fn open_watches(api: &ApiServer) -> Option<futures::stream::SelectAll<WatchStream>> {
    let mut all = futures::stream::SelectAll::new();
    for (g, v, r) in WATCHED {
        let Some(kind) = api.builtin(g, v, r) else {
            continue;
        };
        let prefix = kind.descriptor().list_prefix("");
        all.push(api.store.storage.watch(&prefix, 0).await.ok()?);
    }
    Some(all)
}

/// The next item of the watches (pending forever without them).
async fn next(
    watches: &mut Option<futures::stream::SelectAll<WatchStream>>,
) -> Option<Result<WatchItem, StorageError>> {
    match watches {
        Some(stream) => stream.next().await,
        None => std::future::pending().await,
    }
}
