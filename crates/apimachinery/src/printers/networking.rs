//! Printers of `networking.k8s.io` and `discovery.k8s.io` kinds: Ingresses, their
//! classes, NetworkPolicies and EndpointSlices.

use super::{
    age, array_at, at, col, format_label_selector, list_with_more, name, str_at, Doc, KindPrinter,
    AGE, NAME,
};
use serde_json::{json, Value};

pub(super) const INGRESS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Class",
            "string",
            Doc::Text("The name of the IngressClass resource that should be used for additional configuration"),
        ),
        col(
            "Hosts",
            "string",
            Doc::Text("Hosts that incoming requests are matched against before the ingress rule"),
        ),
        col(
            "Address",
            "string",
            Doc::Text("Address is a list containing ingress points for the load-balancer"),
        ),
        col("Ports", "string", Doc::Text("Ports of TLS configurations that open")),
        AGE,
    ],
    cells: |ing, now| {
        let class = at(ing, "/spec/ingressClassName")
            .as_str()
            .unwrap_or("<none>");
        let ports = if array_at(ing, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        vec![
            name(ing),
            json!(class),
            json!(hosts(array_at(ing, "/spec/rules"))),
            json!(load_balancer(ing)),
            json!(ports),
            age(ing, now),
        ]
    },
};

/// kube's `formatHosts`: the first three hosts, `*` for none.
fn hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut list = Vec::new();
    let mut more = false;
    for rule in rules {
        more |= list.len() == MAX;
        let host = str_at(rule, "/host");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".to_string();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

/// The load balancer's IPs (or hostnames), sorted and distinct (the wide view: whole).
fn load_balancer(obj: &Value) -> String {
    let mut all: Vec<String> = array_at(obj, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            [str_at(i, "/ip"), str_at(i, "/hostname")]
                .into_iter()
                .find(|s| !s.is_empty())
                .map(String::from)
        })
        .collect();
    all.sort();
    all.dedup();
    all.join(",")
}

/// The annotation marking the default IngressClass.
const DEFAULT_INGRESS_CLASS: &str = "ingressclass.kubernetes.io/is-default-class";

pub(super) const INGRESS_CLASS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Controller",
            "string",
            Doc::Text("Controller that is responsible for handling this class"),
        ),
        col(
            "Parameters",
            "string",
            Doc::Text("A reference to a resource with additional parameters"),
        ),
        AGE,
    ],
    cells: |ic, now| {
        let mut n = str_at(ic, "/metadata/name").to_string();
        if at(ic, "/metadata/annotations")
            .get(DEFAULT_INGRESS_CLASS)
            .and_then(Value::as_str)
            == Some("true")
        {
            n.push_str(" (default)");
        }
        let params = at(ic, "/spec/parameters");
        let parameters = if params.is_object() {
            let mut p = str_at(params, "/kind").to_string();
            if let Some(group) = at(params, "/apiGroup").as_str() {
                p = format!("{p}.{group}");
            }
            format!("{p}/{}", str_at(params, "/name"))
        } else {
            "<none>".to_string()
        };
        vec![
            json!(n),
            json!(str_at(ic, "/spec/controller")),
            json!(parameters),
            age(ic, now),
        ]
    },
};

pub(super) const NETWORK_POLICY: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Pod-Selector",
            "string",
            Doc::Field("networking.v1.NetworkPolicySpec", "podSelector"),
        ),
        AGE,
    ],
    cells: |np, now| {
        vec![
            name(np),
            json!(format_label_selector(at(np, "/spec/podSelector"))),
            age(np, now),
        ]
    },
};

pub(super) const ENDPOINT_SLICE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "AddressType",
            "string",
            Doc::Field("discovery.v1.EndpointSlice", "addressType"),
        ),
        col(
            "Ports",
            "string",
            Doc::Field("discovery.v1.EndpointSlice", "ports"),
        ),
        col(
            "Endpoints",
            "string",
            Doc::Field("discovery.v1.EndpointSlice", "endpoints"),
        ),
        AGE,
    ],
    cells: |es, now| {
        const MAX: usize = 3;
        let ports: Vec<String> = array_at(es, "/ports")
            .iter()
            .map(
                |p| match (at(p, "/port").as_i64(), at(p, "/name").as_str()) {
                    (Some(n), _) => n.to_string(),
                    (None, Some(name)) => name.to_string(),
                    (None, None) => "*".to_string(),
                },
            )
            .collect();
        let addresses: Vec<String> = array_at(es, "/endpoints")
            .iter()
            .flat_map(|e| array_at(e, "/addresses"))
            .filter_map(Value::as_str)
            .map(String::from)
            .collect();
        let shown = |all: &[String]| list_with_more(&all[..all.len().min(MAX)], all.len(), MAX);
        vec![
            name(es),
            json!(str_at(es, "/addressType")),
            json!(shown(&ports)),
            json!(shown(&addresses)),
            age(es, now),
        ]
    },
};

pub(super) const SERVICE_CIDR: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "CIDRs",
            "string",
            Doc::Field("networking.v1.ServiceCIDRSpec", "cidrs"),
        ),
        AGE,
    ],
    cells: |c, now| {
        let cidrs: Vec<&str> = array_at(c, "/spec/cidrs")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        vec![name(c), json!(cidrs.join(",")), age(c, now)]
    },
};

pub(super) const IP_ADDRESS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "ParentRef",
            "string",
            Doc::Field("networking.v1.IPAddressSpec", "parentRef"),
        ),
    ],
    cells: |ip, _| {
        let parent = at(ip, "/spec/parentRef");
        let parent_ref = if parent.is_object() {
            let group = str_at(parent, "/group");
            let resource = str_at(parent, "/resource");
            let mut p = if group.is_empty() {
                resource.to_lowercase()
            } else {
                format!("{resource}.{group}").to_lowercase()
            };
            let ns = str_at(parent, "/namespace");
            if !ns.is_empty() {
                p = format!("{p}/{ns}");
            }
            format!("{p}/{}", str_at(parent, "/name"))
        } else {
            "<none>".to_string()
        };
        vec![name(ip), json!(parent_ref)]
    },
};
