//! kube's serviceaccount controller (the `default` ServiceAccount in every namespace,
//! which the ServiceAccount admission plugin requires before a pod is created) and its
//! root-ca-cert-publisher (the `kube-root-ca.crt` ConfigMap with the cluster's CA in
//! every namespace, put back when deleted or changed).

use super::client::Client;
use super::informer::Informer;
use super::objects::{is_deleting, name, str_at};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The ConfigMap the root CA is published in.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";

/// Namespaces that are there and not terminating.
fn active_namespaces(namespaces: &Informer) -> Vec<String> {
    namespaces
        .list()
        .iter()
        .filter(|ns| !is_deleting(ns) && str_at(ns, "/status/phase") != "Terminating")
        .map(|ns| name(ns).to_string())
        .collect()
}

struct DefaultAccounts {
    client: Client,
    namespaces: Arc<Informer>,
    accounts: Arc<Informer>,
}

impl Reconcile for DefaultAccounts {
    async fn reconcile(&mut self) -> Option<Duration> {
        let mut again = None;
        for ns in active_namespaces(&self.namespaces) {
            if self.accounts.get(&format!("{ns}/default")).is_some() {
                continue;
            }
            let sa = json!({
                "apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": ns},
            });
            match self
                .client
                .create(&format!("/api/v1/namespaces/{ns}/serviceaccounts"), &sa)
                .await
            {
                Ok(created) => self.accounts.observe(&created),
                Err(e) if e.reason == "AlreadyExists" || e.is_not_found() => {}
                Err(_) => again = Some(Duration::from_millis(200)),
            }
        }
        again
    }
}

/// Start kube's serviceaccount controller.
pub fn start_default_accounts(
    api: &Arc<ApiServer>,
    informers: &Informers,
    stop: watch::Receiver<bool>,
) {
    let namespaces = informers.of("/api/v1/namespaces");
    let accounts = informers.of("/api/v1/serviceaccounts");
    let controller = DefaultAccounts {
        client: Client::service_account(api, "service-account-controller"),
        namespaces: namespaces.clone(),
        accounts: accounts.clone(),
    };
    super::spawn_controller(vec![namespaces, accounts], &api.clock, stop, controller);
}

struct RootCaPublisher {
    client: Client,
    namespaces: Arc<Informer>,
    config_maps: Arc<Informer>,
    ca: String,
}

impl Reconcile for RootCaPublisher {
    async fn reconcile(&mut self) -> Option<Duration> {
        let mut again = None;
        let data = json!({"ca.crt": self.ca});
        for ns in active_namespaces(&self.namespaces) {
            let existing = self.config_maps.get(&format!("{ns}/{ROOT_CA_CONFIG_MAP}"));
            let result = match existing {
                Some(cm) if cm.get("data") == Some(&data) => continue,
                Some(cm) => {
                    let mut updated: Value = (*cm).clone();
                    updated["data"] = data.clone();
                    let path = format!("/api/v1/namespaces/{ns}/configmaps/{ROOT_CA_CONFIG_MAP}");
                    self.client.update(&path, &updated).await
                }
                None => {
                    let cm = json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {
                            "name": ROOT_CA_CONFIG_MAP, "namespace": ns,
                            "annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."},
                        },
                        "data": data,
                    });
                    self.client
                        .create(&format!("/api/v1/namespaces/{ns}/configmaps"), &cm)
                        .await
                }
            };
            match result {
                Ok(written) => self.config_maps.observe(&written),
                Err(e) if e.reason == "AlreadyExists" || e.is_not_found() => {}
                Err(_) => again = Some(Duration::from_millis(200)),
            }
        }
        again
    }
}

/// Start kube's root-ca-cert-publisher with `ca` (none: the server serves plain HTTP
/// and has no CA; the ConfigMap's `ca.crt` is empty).
pub fn start_root_ca_publisher(
    api: &Arc<ApiServer>,
    informers: &Informers,
    ca: Option<String>,
    stop: watch::Receiver<bool>,
) {
    let namespaces = informers.of("/api/v1/namespaces");
    let config_maps = informers.of("/api/v1/configmaps");
    let controller = RootCaPublisher {
        client: Client::service_account(api, "root-ca-cert-publisher"),
        namespaces: namespaces.clone(),
        config_maps: config_maps.clone(),
        ca: ca.unwrap_or_default(),
    };
    super::spawn_controller(vec![namespaces, config_maps], &api.clock, stop, controller);
}
