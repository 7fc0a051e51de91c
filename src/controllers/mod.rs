//! The controllers this server runs over its own API, as kube-controller-manager and
//! kube-apiserver's own loops would: they read and write through the REST store
//! (`rest::Store`) of an [`ApiServer`], never beneath it, and stop with the server.
//!
//! - [`cleanup`]: finishes deletions of namespaces (kube's namespace controller) and
//!   CRDs (apiextensions' finalizer), from `ApiServer`'s cleanup queue, and resumes
//!   those under way after a restart.
//! - [`crd_follower`]: the catalog of served CRDs follows CRD writes in storage.
//! - [`rbac_aggregation`]: aggregated ClusterRoles follow the roles they select.
//! - [`event_ttl`]: Events expire a TTL after their last write (`--event-ttl`).
//! - [`autoregistration`]: the local APIServices follow the CRDs' served versions.
//! - [`remote_availability`]: remote APIServices' `Available` condition and what the
//!   aggregator knows of their backends follow the backends, Services and EndpointSlices.

pub mod autoregistration;
pub mod cleanup;
pub mod crd_follower;
pub mod event_ttl;
pub mod rbac_aggregation;
pub mod remote_availability;

use crate::apiserver::ApiServer;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Start the controllers of `api`; they stop when `stop` turns true or the server is
/// dropped.
pub fn start(api: &Arc<ApiServer>, event_ttl: Duration, stop: watch::Receiver<bool>) {
    tokio::spawn(crd_follower::run(Arc::downgrade(api)));
    tokio::spawn(autoregistration::run(Arc::downgrade(api)));
    tokio::spawn(remote_availability::run(Arc::downgrade(api)));
    if let Some(queue) = api.take_cleanup_queue() {
        tokio::spawn(cleanup::work(Arc::downgrade(api), queue));
    }
    tokio::spawn(cleanup::resume(Arc::downgrade(api)));
    if api.rbac_enabled() {
        rbac_aggregation::start(api);
    }
    tokio::spawn(event_ttl::expire_events(api.clone(), event_ttl, stop));
}
