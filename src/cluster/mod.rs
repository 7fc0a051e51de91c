//! The opt-in cluster that moves (`--controllers`, `--simulate-nodes`): kube-controller-
//! manager's controllers, a scheduler and simulated kubelets, all clients of the
//! server's own API ([`client`]: in-process requests through the same dispatch as
//! HTTP ones, as the controller's service account), reading from informer caches
//! ([`informer`]). Off by default: without the flags the server is a kube-apiserver
//! with no controller manager, as envtest's.
//!
//! - [`nodes`]: simulated Nodes, the scheduler binding pods to them, and their kubelets
//!   running pods without containers (outcomes chosen per pod by annotation).
//! - [`service_accounts`]: the `default` ServiceAccount and the `kube-root-ca.crt`
//!   ConfigMap in every namespace (kube's serviceaccount and root-ca-cert-publisher);
//!   [`token_secrets`]: legacy service-account token Secrets filled in.
//! - [`garbage_collector`]: ownerReference cascades (background, foreground, orphan)
//!   for every kind.
//! - [`replicaset`], [`deployment`]: kube's ReplicaSet (and ReplicationController) and
//!   Deployment controllers; [`podgc`]: pods of nodes that are gone are collected.
//! - [`job`]: kube's Job controller (and its ttl-after-finished); [`cronjob`]: kube's
//!   CronJob controller on the server's clock, which tests advance.
//! - [`endpoints`]: kube's endpointslice and endpoints controllers.
//! - [`status_only`]: kube's horizontalpodautoscaling (status only: no metrics API)
//!   and disruption controllers.
//! - [`statefulset`], [`daemonset`]: kube's StatefulSet and DaemonSet controllers, with
//!   their ControllerRevisions ([`revisions`]).
//!
//! Each controller is level-triggered: whenever a resource it reads changes it
//! reconciles everything it owns from the caches, as kube's controllers converge.

pub mod client;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod endpoints;
pub mod garbage_collector;
pub mod informer;
pub mod job;
pub mod nodes;
pub mod objects;
pub mod podgc;
pub mod replicaset;
pub mod revisions;
pub mod service_accounts;
pub mod statefulset;
pub mod status_only;
pub mod token_secrets;

use crate::apiserver::clock::Clock;
use crate::apiserver::ApiServer;
use apimachinery::controller_names::Controllers;
use client::Client;
use informer::Informer;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// What the cluster runs.
#[derive(Clone, Debug, Default)]
pub struct ClusterOptions {
    /// `--controllers`.
    pub controllers: Controllers,
    /// `--simulate-nodes`: how many Ready Nodes with simulated kubelets (and a
    /// scheduler when there is at least one).
    pub simulated_nodes: u32,
}

impl ClusterOptions {
    /// Whether anything runs.
    pub fn is_empty(&self) -> bool {
        self.controllers.is_empty() && self.simulated_nodes == 0
    }
}

/// The informers of one server, one per resource path, shared by its controllers.
pub struct Informers {
    client: Client,
    stop: watch::Receiver<bool>,
    by_path: Mutex<HashMap<String, Arc<Informer>>>,
}

impl Informers {
    fn new(client: Client, stop: watch::Receiver<bool>) -> Informers {
        Informers {
            client,
            stop,
            by_path: Mutex::new(HashMap::new()),
        }
    }

    /// The informer of the collection at `path`, started on first use.
    pub fn of(&self, path: &str) -> Arc<Informer> {
        let mut map = match self.by_path.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(path.to_string())
            .or_insert_with(|| Informer::start(self.client.clone(), path, self.stop.clone()))
            .clone()
    }
}

/// The API path of the object `namespace/name` of `api_version`/`kind`, built-in or
/// custom (in the version named when served, else the kind's served one); `None` for a
/// kind this server does not serve.
pub fn object_path(
    api: &ApiServer,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<String> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (gv, resource, namespaced) = match api.options.served.resources().find(|r| {
        r.group == group && r.kind == kind && (r.version == version || r.storage_version == version)
    }) {
        Some(r) => (r.group_version(), r.resource.to_string(), r.namespaced),
        None => {
            let crd = api.catalog.lookup_kind(group, kind)?;
            let served = crd
                .served_version(version)
                .map(|_| version.to_string())
                .or_else(|| {
                    crd.info
                        .versions
                        .iter()
                        .find(|v| v.served)
                        .map(|v| v.name.clone())
                })?;
            (
                format!("{group}/{served}"),
                crd.info.plural.clone(),
                crd.info.namespaced,
            )
        }
    };
    let ns = if namespaced { namespace } else { "" };
    Some(format!(
        "{}/{name}",
        objects::collection(&gv, &resource, ns)
    ))
}

/// Delete `obj` (of `resource` in `group_version`) as the cache saw it (its uid a
/// precondition; `propagation`: kube's `propagationPolicy`), the cache following at
/// once. False when the delete failed; gone already counts as done.
pub async fn delete_object(
    client: &Client,
    cache: &Informer,
    group_version: &str,
    resource: &str,
    obj: &serde_json::Value,
    propagation: Option<&str>,
) -> bool {
    let mut opts = serde_json::json!({"preconditions": {"uid": objects::uid(obj)}});
    if let Some(p) = propagation {
        opts["propagationPolicy"] = serde_json::json!(p);
    }
    match client
        .delete(&objects::path_of(group_version, resource, obj), &opts)
        .await
    {
        Ok(answer) => {
            // Held by finalizers, it is still there, being deleted.
            if objects::is_deleting(&answer) && objects::uid(&answer) == objects::uid(obj) {
                cache.observe(&answer);
            } else {
                cache.forget(obj);
            }
            true
        }
        Err(e) => e.is_not_found(),
    }
}

/// Write `status` on `obj` (of `resource` in `group_version`) unless it has it already,
/// the cache following at once. False when the write failed; gone counts as done.
pub async fn write_status(
    client: &Client,
    cache: &Informer,
    group_version: &str,
    resource: &str,
    obj: &serde_json::Value,
    status: serde_json::Value,
) -> bool {
    if obj.get("status") == Some(&status) {
        return true;
    }
    let mut updated = obj.clone();
    updated["status"] = status;
    let path = format!("{}/status", objects::path_of(group_version, resource, obj));
    match client.update(&path, &updated).await {
        Ok(written) => {
            cache.observe(&written);
            true
        }
        Err(e) => e.is_not_found(),
    }
}

/// Run `task` until it ends or `stop` turns true.
pub async fn until_stopped(mut stop: watch::Receiver<bool>, task: impl Future<Output = ()>) {
    if *stop.borrow() {
        return;
    }
    tokio::select! {
        _ = stop.wait_for(|s| *s) => {}
        _ = task => {}
    }
}

/// A controller's pass over everything it owns.
pub trait Reconcile: Send + 'static {
    /// Bring what the caches show to the desired state; `Some(delay)`: pass again
    /// after `delay` even if nothing changes (a failed write, a time to wait for).
    fn reconcile(&mut self) -> impl Future<Output = Option<Duration>> + Send + '_;
}

/// Run `controller` once `informers` have synced, then whenever one of them changes,
/// `clock` is advanced, or the delay it last asked for has passed, until `stop` turns
/// true.
pub fn spawn_controller(
    informers: Vec<Arc<Informer>>,
    clock: &Clock,
    stop: watch::Receiver<bool>,
    mut controller: impl Reconcile,
) {
    let changed = Arc::new(Notify::new());
    for i in &informers {
        i.subscribe(changed.clone());
    }
    clock.subscribe(changed.clone());
    let work = async move {
        for i in &informers {
            i.wait_synced().await;
        }
        let mut again: Option<Duration> = Some(Duration::ZERO);
        loop {
            match again {
                Some(d) => {
                    let _ = tokio::time::timeout(d, changed.notified()).await;
                }
                None => changed.notified().await,
            }
            // Let a burst of events land before reading the caches.
            tokio::time::sleep(Duration::from_millis(1)).await;
            again = controller.reconcile().await;
        }
    };
    tokio::spawn(until_stopped(stop, work));
}

/// Start what `options` asks for on `api` (`root_ca`: the CA of its serving
/// certificate, what `kube-root-ca.crt` publishes); everything stops when `stop` turns
/// true.
pub fn start(
    api: &Arc<ApiServer>,
    options: &ClusterOptions,
    root_ca: Option<String>,
    stop: watch::Receiver<bool>,
) {
    if options.is_empty() {
        return;
    }
    let informers = Arc::new(Informers::new(
        Client::service_account(api, "informers"),
        stop.clone(),
    ));
    let on = |name: &str| options.controllers.enabled(name);
    if options.simulated_nodes > 0 {
        nodes::start(api, &informers, options.simulated_nodes, stop.clone());
    }
    if on("serviceaccount") {
        service_accounts::start_default_accounts(api, &informers, stop.clone());
    }
    if on("serviceaccount-token") {
        token_secrets::start(api, &informers, root_ca.clone(), stop.clone());
    }
    if on("root-ca-cert-publisher") {
        service_accounts::start_root_ca_publisher(api, &informers, root_ca, stop.clone());
    }
    if on("garbagecollector") {
        garbage_collector::start(api, stop.clone());
    }
    if on("replicaset") {
        replicaset::start(api, &informers, stop.clone());
    }
    if on("podgc") {
        podgc::start(api, &informers, stop.clone());
    }
    if on("replicationcontroller") {
        replicaset::start_replication_controllers(api, &informers, stop.clone());
    }
    if on("statefulset") {
        statefulset::start(api, &informers, stop.clone());
    }
    if on("daemonset") {
        daemonset::start(api, &informers, stop.clone());
    }
    if on("endpointslice") {
        endpoints::start_slices(api, &informers, stop.clone());
    }
    if on("endpoints-controller") {
        endpoints::start_endpoints(api, &informers, stop.clone());
    }
    if on("cronjob") {
        cronjob::start(api, &informers, stop.clone());
    }
    if on("horizontalpodautoscaling") {
        status_only::start_autoscalers(api, &informers, stop.clone());
    }
    if on("disruption") {
        status_only::start_budgets(api, &informers, stop.clone());
    }
    if on("job") {
        job::start(api, &informers, on("ttl-after-finished"), stop.clone());
    }
    if on("deployment") {
        deployment::start(api, &informers, stop.clone());
    }
}
