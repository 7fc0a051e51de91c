//! Services as kube's service REST storage serves them: the schema strategy's rules
//! plus cluster IP and node port allocation around every write (planned by
//! `service_alloc`, kept in storage by `service_allocation`: IPAddress objects and the
//! node port range), kube's printer, and the `kubernetes` Service its bootstrap
//! controller keeps in `default` with its Endpoints and EndpointSlice.

use super::age_cell;
pub use super::service_allocation::ServiceAllocators;
use crate::rest::typed::TypedKind;
use crate::rest::{Conversion, Descriptor, Reservation, ResourceKind, Strategy, WriteOptions};
use crate::service_alloc::Allocators;
use crate::status::Status;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::net::SocketAddr;

/// The OpenAPI definition of a ServiceSpec (the printer's column descriptions).
const SPEC_DEFINITION: &str = "io.k8s.api.core.v1.ServiceSpec";

/// kube's `loadBalancerWidth`: longer ingress lists are cut in the default view.
const LOAD_BALANCER_WIDTH: usize = 16;

/// The `services` kind: the schema strategy's kind with kube's allocation hooks.
pub struct ServiceKind {
    typed: TypedKind,
    allocators: ServiceAllocators,
}

impl ServiceKind {
    /// Serves Services over `typed`, allocating from `allocators`.
    pub fn new(typed: TypedKind, allocators: ServiceAllocators) -> Self {
        ServiceKind { typed, allocators }
    }
}

impl ResourceKind for ServiceKind {
    fn descriptor(&self) -> &Descriptor {
        self.typed.descriptor()
    }

    fn strategy(&self) -> &dyn Strategy {
        self.typed.strategy()
    }

    fn write_check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        opts: &'a WriteOptions,
    ) -> Option<futures::future::BoxFuture<'a, Result<(), Status>>> {
        self.typed.write_check(obj, old, opts)
    }

    fn begin_write<'a>(
        &'a self,
        obj: &'a mut Value,
        old: Option<&'a Value>,
        dry_run: bool,
    ) -> BoxFuture<'a, Result<Option<Reservation>, Status>> {
        let allocators = self.allocators.clone();
        let mut filled = obj.clone();
        let old = old.cloned();
        Box::pin(async move {
            // Its own task: a request dropped half-way still ends with what was taken
            // held by a reservation (given back when dropped), never leaked.
            let task = tokio::spawn(async move {
                let taken = allocators.take(&mut filled, old.as_ref(), dry_run).await?;
                Ok::<_, Status>((filled, taken.map(|r| allocators.reservation(r))))
            });
            let (filled, reservation) = task
                .await
                .map_err(|e| Status::internal(format!("allocating the Service's IPs: {e}")))??;
            *obj = filled;
            Ok(reservation)
        })
    }

    fn after_delete<'a>(&'a self, obj: &'a Value) -> BoxFuture<'a, ()> {
        let release = Allocators::release_of(obj);
        let allocators = self.allocators.clone();
        Box::pin(async move {
            let _ = tokio::spawn(async move { allocators.finish(release, true).await }).await;
        })
    }

    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.typed.to_storage(obj)
    }

    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.typed.on_read(obj)
    }

    fn on_read_all<'a>(&'a self, objs: &'a mut [Value]) -> Conversion<'a> {
        self.typed.on_read_all(objs)
    }

    fn served_form(&self) -> Option<(i64, usize)> {
        self.typed.served_form()
    }
}

/// kube's Service printer: NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE, and SELECTOR
/// with `-o wide`.
pub fn printer() -> BuiltinPrinter {
    let doc = |field| super::field_doc(SPEC_DEFINITION, field);
    BuiltinPrinter {
        columns: vec![
            BuiltinColumn::name(0),
            BuiltinColumn::new("Type", "string", 0, &doc("type")),
            BuiltinColumn::new("Cluster-IP", "string", 0, &doc("clusterIP")),
            BuiltinColumn::new("External-IP", "string", 0, &doc("externalIPs")),
            BuiltinColumn::new("Port(s)", "string", 0, &doc("ports")),
            BuiltinColumn::age(),
            BuiltinColumn::new("Selector", "string", 1, &doc("selector")),
        ],
        cells: |obj, now| {
            let spec = obj.get("spec").unwrap_or(&Value::Null);
            let cluster_ip = spec
                .pointer("/clusterIPs/0")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                json!(crate::rest::object::name(obj)),
                json!(str_of(spec, "type")),
                json!(cluster_ip),
                json!(external_ip(obj)),
                json!(port_string(spec)),
                age_cell(obj, now),
                json!(selector_string(spec)),
            ]
        },
    }
}

fn str_of<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

fn strings_of(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// kube's `getServiceExternalIP` (default view).
fn external_ip(obj: &Value) -> String {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let external = strings_of(spec, "externalIPs");
    match str_of(spec, "type") {
        "ClusterIP" | "NodePort" if external.is_empty() => "<none>".into(),
        "ClusterIP" | "NodePort" => external.join(","),
        "LoadBalancer" => {
            let mut ingress: Vec<String> = obj
                .pointer("/status/loadBalancer/ingress")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    [str_of(i, "ip"), str_of(i, "hostname")]
                        .into_iter()
                        .find(|s| !s.is_empty())
                        .map(String::from)
                })
                .collect();
            ingress.sort();
            ingress.dedup();
            let mut lb = ingress.join(",");
            if lb.len() > LOAD_BALANCER_WIDTH {
                lb = format!("{}...", &lb[..LOAD_BALANCER_WIDTH - 3]);
            }
            let mut all: Vec<String> = if lb.is_empty() {
                Vec::new()
            } else {
                lb.split(',').map(String::from).collect()
            };
            all.extend(external);
            if all.is_empty() {
                "<pending>".into()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => str_of(spec, "externalName").into(),
        _ => "<unknown>".into(),
    }
}

/// kube's `makePortString`: `80/TCP`, `80:30080/TCP`.
fn port_string(spec: &Value) -> String {
    let ports: Vec<String> = spec
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = str_of(p, "protocol");
            match p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    }
}

/// kube's `labels.FormatLabels` of the selector: sorted `k=v` pairs, or `<none>`.
fn selector_string(spec: &Value) -> String {
    let Some(m) = spec.get("selector").and_then(Value::as_object) else {
        return "<none>".into();
    };
    if m.is_empty() {
        return "<none>".into();
    }
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// The namespace of the `kubernetes` Service.
pub const KUBERNETES_NAMESPACE: &str = "default";

/// The group of EndpointSlices.
pub const DISCOVERY_GROUP: &str = "discovery.k8s.io";

/// The `kubernetes` Service kube's bootstrap controller creates: `cluster_ip` is the
/// range's first address, the target port the secure port.
pub fn kubernetes_service(cluster_ip: &str, port: u16) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": KUBERNETES_NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"}
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": cluster_ip,
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]
        }
    })
}

/// The `kubernetes` Endpoints: the server's address and secure port.
pub fn kubernetes_endpoints(endpoint: SocketAddr) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": "kubernetes",
            "namespace": KUBERNETES_NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}
        },
        "subsets": [{
            "addresses": [{"ip": advertised_ip(endpoint)}],
            "ports": [{"name": "https", "port": endpoint.port(), "protocol": "TCP"}]
        }]
    })
}

/// The `kubernetes` EndpointSlice.
pub fn kubernetes_endpoint_slice(endpoint: SocketAddr) -> Value {
    let family = if endpoint.is_ipv6() { "IPv6" } else { "IPv4" };
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": KUBERNETES_NAMESPACE,
            "labels": {"kubernetes.io/service-name": "kubernetes"}
        },
        "addressType": family,
        "endpoints": [{"addresses": [advertised_ip(endpoint)], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": endpoint.port(), "protocol": "TCP"}]
    })
}

/// The address clients reach the server at (a wildcard bind advertises loopback).
fn advertised_ip(endpoint: SocketAddr) -> String {
    let ip = endpoint.ip();
    if ip.is_unspecified() {
        if ip.is_ipv6() {
            "::1".into()
        } else {
            "127.0.0.1".into()
        }
    } else {
        ip.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printer_shows_kubes_service_columns() {
        let p = printer();
        let names: Vec<&str> = p.columns.iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            [
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        let svc = json!({"metadata": {"name": "web"}, "spec": {
            "type": "NodePort", "clusterIPs": ["10.0.0.9"], "selector": {"b": "2", "a": "1"},
            "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        let cells = (p.cells)(&svc, chrono::Utc::now());
        assert_eq!(cells[1], "NodePort");
        assert_eq!(cells[2], "10.0.0.9");
        assert_eq!(cells[3], "<none>");
        assert_eq!(cells[4], "80:30080/TCP,53/UDP");
        assert_eq!(cells[6], "a=1,b=2");
        let lb = json!({"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer"}});
        let cells = (p.cells)(&lb, chrono::Utc::now());
        assert_eq!(cells[2], "<none>");
        assert_eq!(cells[3], "<pending>");
        assert_eq!(cells[4], "<none>");
    }
}
