//! kube's endpointslice and endpoints controllers: a Service with a selector gets the
//! addresses of the pods it selects — EndpointSlices (`<service>-<random>`, labelled
//! `kubernetes.io/service-name` and managed by `endpointslice-controller.k8s.io`,
//! owned by the Service, ready/serving/terminating conditions, node names, target
//! references, ports resolved per pod, named target ports included) and the
//! deprecated Endpoints object (ready and not-ready addresses in subsets).

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    controller_ref, is_deleting, name, namespace, pod_is_ready, pod_is_terminal, str_at, uid,
};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The label naming an EndpointSlice's Service.
pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The label naming who manages an EndpointSlice.
pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";

/// Whether `service` selects pods (a selector, not ExternalName).
fn has_selector(service: &Value) -> bool {
    service
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .is_some_and(|s| !s.is_empty())
        && str_at(service, "/spec/type") != "ExternalName"
}

fn selects(service: &Value, pod: &Value) -> bool {
    let Some(sel) = service.pointer("/spec/selector").and_then(Value::as_object) else {
        return false;
    };
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    namespace(service) == namespace(pod)
        && sel
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The ports of `service` as `pod` serves them (`targetPort` by number, by a container
/// port's name, or the service port): `None` when a named port is not there.
pub fn resolve_ports(service: &Value, pod: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for p in service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let number = match p.get("targetPort") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(named)) => pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|c| {
                    c.get("ports")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                })
                .find(|cp| str_at(cp, "/name") == named)
                .and_then(|cp| cp.get("containerPort"))
                .and_then(Value::as_i64),
            _ => p.get("port").and_then(Value::as_i64),
        };
        let Some(number) = number else {
            continue;
        };
        let mut port = Map::new();
        port.insert("name".into(), json!(str_at(p, "/name")));
        port.insert("port".into(), json!(number));
        port.insert(
            "protocol".into(),
            json!(p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")),
        );
        if let Some(a) = p.get("appProtocol") {
            port.insert("appProtocol".into(), a.clone());
        }
        out.push(Value::Object(port));
    }
    out
}

/// The pods a Service's endpoints list: selected, with an IP, not finished (and ready
/// unless the Service publishes not-ready addresses).
fn endpoint_pods<'a>(service: &Value, pods: &'a [Arc<Value>]) -> Vec<&'a Value> {
    pods.iter()
        .map(|p| p.as_ref())
        .filter(|p| selects(service, p))
        .filter(|p| !str_at(p, "/status/podIP").is_empty() && !pod_is_terminal(p))
        .collect()
}

fn target_ref(pod: &Value) -> Value {
    json!({"kind": "Pod", "namespace": namespace(pod), "name": name(pod), "uid": uid(pod)})
}

/// The EndpointSlices' content of `service`: `(ports, endpoints)` per port set.
pub fn slices(service: &Value, pods: &[&Value]) -> Vec<(Vec<Value>, Vec<Value>)> {
    let mut by_ports: BTreeMap<String, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    let publish = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        == Some(true);
    for pod in pods {
        let ports = resolve_ports(service, pod);
        let terminating = is_deleting(pod);
        let ready = (pod_is_ready(pod) || publish) && !terminating;
        let mut endpoint = json!({
            "addresses": [str_at(pod, "/status/podIP")],
            "conditions": {"ready": ready, "serving": pod_is_ready(pod) || publish, "terminating": terminating},
            "targetRef": target_ref(pod),
        });
        if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
            endpoint["nodeName"] = json!(node);
        }
        let entry = by_ports
            .entry(serde_json::to_string(&ports).unwrap_or_default())
            .or_insert_with(|| (ports, Vec::new()));
        entry.1.push(endpoint);
    }
    by_ports.into_values().collect()
}

struct SliceController {
    client: Client,
    services: Arc<Informer>,
    pods: Arc<Informer>,
    slices: Arc<Informer>,
}

impl SliceController {
    async fn sync(&self, service: &Value, pods: &[Arc<Value>], cached: &[Arc<Value>]) -> bool {
        let ns = namespace(service);
        let mine: Vec<&Value> = cached
            .iter()
            .map(|s| s.as_ref())
            .filter(|s| namespace(s) == ns)
            .filter(|s| {
                str_at(
                    s,
                    &format!("/metadata/labels/{}", SERVICE_NAME.replace('/', "~1")),
                ) == name(service)
            })
            .filter(|s| {
                str_at(
                    s,
                    &format!("/metadata/labels/{}", MANAGED_BY.replace('/', "~1")),
                ) == CONTROLLER
            })
            .collect();
        let selected = endpoint_pods(service, pods);
        let mut wanted = slices(service, &selected);
        if wanted.is_empty() {
            // kube keeps one slice with no endpoints for a Service that selects none.
            wanted.push((resolve_ports(service, &json!({})), Vec::new()));
        }
        let mut ok = true;
        let mut existing: Vec<&Value> = mine.clone();
        for (ports, endpoints) in wanted {
            let body = |base: Option<&Value>| {
                let mut labels: Map<String, Value> = service
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                labels.insert(SERVICE_NAME.into(), json!(name(service)));
                labels.insert(MANAGED_BY.into(), json!(CONTROLLER));
                let mut s = base.cloned().unwrap_or_else(|| {
                    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                           "metadata": {"generateName": format!("{}-", name(service)), "namespace": ns,
                                        "ownerReferences": [controller_ref(service)]}})
                });
                s["metadata"]["labels"] = Value::Object(labels);
                s["addressType"] = json!("IPv4");
                s["endpoints"] = json!(endpoints);
                s["ports"] = json!(ports);
                s
            };
            // Reuse a slice of the same ports, else any left, else a new one.
            let reuse = existing
                .iter()
                .position(|s| s.get("ports") == Some(&json!(ports)))
                .or(if existing.is_empty() { None } else { Some(0) });
            let result = match reuse {
                Some(i) => {
                    let current = existing.remove(i);
                    let desired = body(Some(current));
                    if desired == *current {
                        continue;
                    }
                    let path = format!(
                        "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/{}",
                        name(current)
                    );
                    self.client.update(&path, &desired).await
                }
                None => {
                    let path = format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices");
                    self.client.create(&path, &body(None)).await
                }
            };
            match result {
                Ok(w) => self.slices.observe(&w),
                Err(e) => ok &= e.is_not_found(),
            }
        }
        for stale in existing {
            let path = format!(
                "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices/{}",
                name(stale)
            );
            let _ = self.client.delete(&path, &json!({})).await;
            self.slices.forget(stale);
        }
        ok
    }
}

impl Reconcile for SliceController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let slices = self.slices.list();
        let mut retry = false;
        for service in self.services.list() {
            if has_selector(&service) && !is_deleting(&service) {
                retry |= !self.sync(&service, &pods, &slices).await;
            }
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// The subsets of the Endpoints object of `service` (kube's Endpoints controller).
pub fn subsets(service: &Value, pods: &[&Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for (ports, endpoints) in slices(service, pods) {
        let address = |e: &Value| {
            let mut a = json!({"ip": e["addresses"][0], "targetRef": e["targetRef"]});
            if let Some(n) = e.get("nodeName") {
                a["nodeName"] = n.clone();
            }
            a
        };
        let ready: Vec<Value> = endpoints
            .iter()
            .filter(|e| e["conditions"]["ready"] == true)
            .map(address)
            .collect();
        let not_ready: Vec<Value> = endpoints
            .iter()
            .filter(|e| e["conditions"]["ready"] != true && e["conditions"]["terminating"] != true)
            .map(address)
            .collect();
        let mut subset = Map::new();
        if !ready.is_empty() {
            subset.insert("addresses".into(), json!(ready));
        }
        if !not_ready.is_empty() {
            subset.insert("notReadyAddresses".into(), json!(not_ready));
        }
        if subset.is_empty() {
            continue;
        }
        let ports: Vec<Value> = ports
            .into_iter()
            .map(|mut p| {
                if p["name"] == "" {
                    if let Some(m) = p.as_object_mut() {
                        m.remove("name");
                    }
                }
                p
            })
            .collect();
        subset.insert("ports".into(), json!(ports));
        out.push(Value::Object(subset));
    }
    out
}

struct EndpointsController {
    client: Client,
    services: Arc<Informer>,
    pods: Arc<Informer>,
    endpoints: Arc<Informer>,
}

impl Reconcile for EndpointsController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let mut retry = false;
        for service in self.services.list() {
            if !has_selector(&service) || is_deleting(&service) {
                continue;
            }
            let ns = namespace(&service);
            let selected = endpoint_pods(&service, &pods);
            let subsets = subsets(&service, &selected);
            let mut labels: Map<String, Value> = service
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            labels.insert(
                "endpoints.kubernetes.io/managed-by".into(),
                json!("endpoint-controller"),
            );
            let existing = self.endpoints.get(&format!("{ns}/{}", name(&service)));
            let result = match existing {
                Some(current) => {
                    let mut desired = (*current).clone();
                    desired["metadata"]["labels"] = Value::Object(labels);
                    match desired.as_object_mut() {
                        Some(m) if subsets.is_empty() => {
                            m.remove("subsets");
                        }
                        Some(m) => {
                            m.insert("subsets".into(), json!(subsets));
                        }
                        None => {}
                    }
                    if desired == *current {
                        continue;
                    }
                    let path = format!("/api/v1/namespaces/{ns}/endpoints/{}", name(&service));
                    self.client.update(&path, &desired).await
                }
                None => {
                    let mut e = json!({"apiVersion": "v1", "kind": "Endpoints",
                        "metadata": {"name": name(&service), "namespace": ns, "labels": labels}});
                    if !subsets.is_empty() {
                        e["subsets"] = json!(subsets);
                    }
                    self.client
                        .create(&format!("/api/v1/namespaces/{ns}/endpoints"), &e)
                        .await
                }
            };
            match result {
                Ok(w) => self.endpoints.observe(&w),
                Err(e) => retry |= !(e.is_not_found() || e.reason == "AlreadyExists"),
            }
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// Start kube's endpointslice controller.
pub fn start_slices(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let services = informers.of("/api/v1/services");
    let pods = informers.of("/api/v1/pods");
    let slices = informers.of("/apis/discovery.k8s.io/v1/endpointslices");
    let controller = SliceController {
        client: Client::service_account(api, "endpointslice-controller"),
        services: services.clone(),
        pods: pods.clone(),
        slices: slices.clone(),
    };
    super::spawn_controller(vec![services, pods, slices], &api.clock, stop, controller);
}

/// Start kube's endpoints controller.
pub fn start_endpoints(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let services = informers.of("/api/v1/services");
    let pods = informers.of("/api/v1/pods");
    let endpoints = informers.of("/api/v1/endpoints");
    let controller = EndpointsController {
        client: Client::service_account(api, "endpoint-controller"),
        services: services.clone(),
        pods: pods.clone(),
        endpoints: endpoints.clone(),
    };
    super::spawn_controller(
        vec![services, pods, endpoints],
        &api.clock,
        stop,
        controller,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}"),
                         "labels": {"app": "web"}},
            "spec": {"nodeName": "node-1", "containers": [{"name": "c", "ports": [
                {"name": "http", "containerPort": 8080}]}]},
            "status": {"podIP": ip, "phase": "Running",
                       "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        })
    }

    #[test]
    fn a_service_lists_its_pods_with_resolved_ports() {
        let svc = json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}]},
        });
        let (a, b) = (pod("a", "10.244.1.2", true), pod("b", "10.244.1.3", false));
        let got = slices(&svc, &[&a, &b]);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].0,
            vec![json!({"name": "http", "port": 8080, "protocol": "TCP"})]
        );
        assert_eq!(
            got[0].1[0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(got[0].1[1]["conditions"]["ready"], false);
        let subsets = subsets(&svc, &[&a, &b]);
        assert_eq!(
            subsets,
            vec![json!({
                "addresses": [{"ip": "10.244.1.2", "nodeName": "node-1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "a", "uid": "u-a"}}],
                "notReadyAddresses": [{"ip": "10.244.1.3", "nodeName": "node-1",
                    "targetRef": {"kind": "Pod", "namespace": "default", "name": "b", "uid": "u-b"}}],
                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
            })]
        );
    }
}
