//! Where a backend's Service is reached, and kube's checks of it before a probe.
//!
//! This server has no cluster network. A `--webhook-service NS/NAME[:PORT]=HOST:PORT`
//! mapping says where a Service is (and stands in for its endpoints); otherwise, as
//! kube, the Service's cluster IP and port, or with `--enable-aggregator-routing` a
//! ready endpoint of its EndpointSlices (addresses used as given, loopback included,
//! which kube refuses: this is a test server).

use super::Backend;
use crate::rest::store::{ListOptions, Store};
use crate::rest::ResourceKind;
use crate::webhook::client::ServiceResolver;
use serde_json::Value;

/// The stores a check reads.
pub struct Lookup<'a> {
    /// The REST store.
    pub store: &'a Store,
    /// The `services` kind.
    pub services: &'a dyn ResourceKind,
    /// The `endpointslices` kind.
    pub endpoint_slices: &'a dyn ResourceKind,
    /// The `--webhook-service` mappings.
    pub mappings: &'a ServiceResolver,
    /// `--enable-aggregator-routing`.
    pub routing: bool,
}

/// What the checks before a probe found: the addresses to try, or the `Available`
/// condition's status, reason and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    /// The Service resolves (or kube's resolver error, which the probe reports).
    Resolved(Result<Vec<String>, String>),
    /// kube's `Available` condition says why not, without a probe.
    Unavailable {
        /// `False` or `Unknown`.
        status: &'static str,
        /// kube's reason.
        reason: &'static str,
        /// kube's message.
        message: String,
    },
}

/// Go's `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The EndpointSlices of Service `namespace/name` (label `kubernetes.io/service-name`).
async fn slices(lookup: &Lookup<'_>, namespace: &str, name: &str) -> Result<Vec<Value>, String> {
    let selector =
        apimachinery::selector::labels::parse(&format!("kubernetes.io/service-name={name}"))
            .map_err(|e| e.to_string())?;
    let opts = ListOptions {
        labels: Some(selector),
        ..Default::default()
    };
    lookup
        .store
        .list(lookup.endpoint_slices, namespace, &opts)
        .await
        .map(|page| page.items)
        .map_err(|s| s.message)
}

/// An endpoint counts unless it says it is not ready.
fn ready(endpoint: &Value) -> bool {
    endpoint
        .pointer("/conditions/ready")
        .and_then(Value::as_bool)
        .unwrap_or(true)
}

/// The name of the Service port `port` (`None`: the Service has no such port).
fn port_name(service: &Value, port: u16) -> Option<(String, i64)> {
    service
        .pointer("/spec/ports")
        .and_then(Value::as_array)?
        .iter()
        .find(|p| p["port"].as_i64() == Some(i64::from(port)))
        .map(|p| {
            (
                p["name"].as_str().unwrap_or("").to_string(),
                p["port"].as_i64().unwrap_or(0),
            )
        })
}

/// The ready `ip:port`s of `slices` on the port named `name`.
fn ready_addresses(slices: &[Value], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for slice in slices {
        let Some(port) = slice
            .get("ports")
            .and_then(Value::as_array)
            .and_then(|ps| {
                ps.iter()
                    .find(|p| p["name"].as_str().unwrap_or("") == name && p.get("name").is_some())
            })
            .and_then(|p| p["port"].as_i64())
        else {
            continue;
        };
        for ep in slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(ip) = ep.pointer("/addresses/0").and_then(Value::as_str) {
                if ready(ep) {
                    out.push(join_host_port(ip, port));
                }
            }
        }
    }
    out
}

/// kube's checks of `backend`'s Service (the remote availability controller's, then its
/// resolver's), with the addresses found.
pub async fn check(lookup: &Lookup<'_>, backend: &Backend) -> Checked {
    let (ns, name, port) = (&backend.namespace, &backend.service, backend.port);
    let service = match lookup.store.get(lookup.services, ns, name).await {
        Ok(s) => s,
        Err(s) if s.code == 404 => {
            return Checked::Unavailable {
                status: "False",
                reason: "ServiceNotFound",
                message: format!("service/{name} in {ns:?} is not present"),
            }
        }
        Err(s) => {
            return Checked::Unavailable {
                status: "Unknown",
                reason: "ServiceAccessError",
                message: format!(
                    "service/{name} in {ns:?} cannot be checked due to: {}",
                    s.message
                ),
            }
        }
    };
    // A mapping stands in for the cluster network, the Service's endpoints included.
    if let Ok(address) = lookup.mappings.resolve(ns, name, port) {
        return Checked::Resolved(Ok(vec![address]));
    }
    let kind = service
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let found = port_name(&service, port);
    let mut endpoint_slices = None;
    if kind == "ClusterIP" {
        let Some((port_name, _)) = &found else {
            return Checked::Unavailable {
                status: "False",
                reason: "ServicePortError",
                message: format!("service/{name} in {ns:?} is not listening on port {port}"),
            };
        };
        let listed = match slices(lookup, ns, name).await {
            Ok(l) => l,
            Err(e) => {
                return Checked::Unavailable {
                    status: "Unknown",
                    reason: "EndpointsAccessError",
                    message: format!("service/{name} in {ns:?} cannot be checked due to: {e}"),
                }
            }
        };
        if listed.is_empty() {
            return Checked::Unavailable {
                status: "False",
                reason: "EndpointsNotFound",
                message: format!("cannot find endpointslices for service/{name} in {ns:?}"),
            };
        }
        if ready_addresses(&listed, port_name).is_empty() {
            return Checked::Unavailable {
                status: "False",
                reason: "MissingEndpoints",
                message: format!(
                    "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
                ),
            };
        }
        endpoint_slices = Some(listed);
    }
    Checked::Resolved(resolve(lookup, &service, backend, found, endpoint_slices).await)
}

/// kube's `ResolveEndpoint` (aggregator routing) or `ResolveCluster`: the addresses to
/// dial, or the resolver's error.
async fn resolve(
    lookup: &Lookup<'_>,
    service: &Value,
    backend: &Backend,
    found: Option<(String, i64)>,
    listed: Option<Vec<Value>>,
) -> Result<Vec<String>, String> {
    let (ns, name, port) = (&backend.namespace, &backend.service, backend.port);
    let kind = service
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    let no_port = || format!("no service port {port} found for service {name:?}");
    if lookup.routing {
        if !matches!(kind, "ClusterIP" | "LoadBalancer" | "NodePort") {
            return Err(format!("unsupported service type {kind:?}"));
        }
        let (port_name, _) = found.ok_or_else(no_port)?;
        let listed = match listed {
            Some(l) => l,
            None => slices(lookup, ns, name).await?,
        };
        let addresses = ready_addresses(&listed, &port_name);
        if addresses.is_empty() {
            return Err(format!("no endpoints available for service {name:?}"));
        }
        return Ok(addresses);
    }
    let cluster_ip = service
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("");
    match kind {
        "ClusterIP" if cluster_ip == "None" => {
            Err(r#"cannot route to service with ClusterIP "None""#.to_string())
        }
        "ClusterIP" | "LoadBalancer" | "NodePort" => {
            let (_, p) = found.ok_or_else(no_port)?;
            Ok(vec![join_host_port(cluster_ip, p)])
        }
        "ExternalName" => {
            let external = service
                .pointer("/spec/externalName")
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(vec![join_host_port(external, i64::from(port))])
        }
        other => Err(format!("unsupported service type {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ready_addresses_follow_the_port_name_and_readiness() {
        let slices = [json!({
            "ports": [{"name": "https", "port": 8443}],
            "endpoints": [
                {"addresses": ["127.0.0.1"]},
                {"addresses": ["10.0.0.2"], "conditions": {"ready": false}},
                {"addresses": ["::1"], "conditions": {"ready": true}},
            ],
        })];
        assert_eq!(
            ready_addresses(&slices, "https"),
            ["127.0.0.1:8443", "[::1]:8443"]
        );
        assert!(ready_addresses(&slices, "").is_empty());
    }
}
