//! core/v1 defaults (`pkg/apis/core/v1/defaults.go` and its generated defaulter), the
//! pod spec walk shared by every kind that embeds a pod template, and the pod's
//! `PrepareForCreate` (`pkg/registry/core/pod/strategy.go`).
//!
//! Left to other stages: Namespace (its `kubernetes.io/metadata.name` label and phase
//! are set by `src/rest/namespace.rs`), Secret `type: Opaque` (`src/rest/builtin/
//! secret.rs`), ConfigMap (kube's `data: {}` is not written back, being `omitempty`).
//! Not done: rounding resource quantities up to milli scale, and the pod-level
//! resources defaults (`spec.resources`, feature PodLevelResources).

use super::{
    child_mut, field, is_empty_collection, items_mut, ptr, set_defaults, str_of, struct_at,
    struct_value_at, FieldDefault, Lit::*,
};
use crate::cel::kubelib::Quantity;
use regex::Regex;
use serde_json::{json, Map, Value};
use std::sync::LazyLock;

/// core/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "Pod" => pod(obj),
        "PodTemplate" => pod_template_spec(obj, "template"),
        "ReplicationController" => replication_controller(obj),
        "Service" => service(obj),
        "Endpoints" => endpoints(obj),
        "PersistentVolume" => persistent_volume(obj),
        "PersistentVolumeClaim" => persistent_volume_claim(obj),
        "Node" => node(obj),
        "LimitRange" => limit_range(obj),
        _ => {}
    }
}

/// core/v1 conversion round trip: the pod spec's `serviceAccount` alias, the node's
/// `podCIDR` alias.
pub fn round_trip(kind: &str, obj: &mut Value) {
    match kind {
        "Pod" => {
            service_account_alias(obj.get_mut("spec"));
            pod_ip_alias(obj);
        }
        "PodTemplate" | "ReplicationController" => {
            let at = if kind == "PodTemplate" {
                "/template/spec"
            } else {
                "/spec/template/spec"
            };
            service_account_alias(obj.pointer_mut(at));
        }
        "Node" => pod_cidr_alias(obj),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Pod spec

const POD_SPEC: &[FieldDefault] = &[
    field("/dnsPolicy", Str("ClusterFirst")),
    field("/restartPolicy", Str("Always")),
    ptr("/securityContext", EmptyObject),
    ptr("/terminationGracePeriodSeconds", Int(30)),
    field("/schedulerName", Str("default-scheduler")),
];

const CONTAINER: &[FieldDefault] = &[
    field("/terminationMessagePath", Str("/dev/termination-log")),
    field("/terminationMessagePolicy", Str("File")),
];

const PORT: &[FieldDefault] = &[field("/protocol", Str("TCP"))];

const PROBE: &[FieldDefault] = &[
    field("/timeoutSeconds", Int(1)),
    field("/periodSeconds", Int(10)),
    field("/successThreshold", Int(1)),
    field("/failureThreshold", Int(3)),
];

const HTTP_GET: &[FieldDefault] = &[field("/path", Str("/")), field("/scheme", Str("HTTP"))];

const GRPC: &[FieldDefault] = &[ptr("/service", Str(""))];

const FIELD_REF: &[FieldDefault] = &[field("/apiVersion", Str("v1"))];

const FILE_KEY_REF: &[FieldDefault] = &[ptr("/optional", Bool(false))];

const SERVICE_ACCOUNT_TOKEN: &[FieldDefault] = &[ptr("/expirationSeconds", Int(3600))];

/// Defaults of a volume source (or persistent volume source), by its field name.
const VOLUME_SOURCES: &[(&str, &[FieldDefault])] = &[
    ("hostPath", &[ptr("/type", Str(""))]),
    ("secret", &[ptr("/defaultMode", Int(0o644))]),
    ("configMap", &[ptr("/defaultMode", Int(0o644))]),
    ("downwardAPI", &[ptr("/defaultMode", Int(0o644))]),
    ("projected", &[ptr("/defaultMode", Int(0o644))]),
    ("iscsi", &[field("/iscsiInterface", Str("default"))]),
    (
        "rbd",
        &[
            field("/pool", Str("rbd")),
            field("/user", Str("admin")),
            field("/keyring", Str("/etc/ceph/keyring")),
        ],
    ),
    (
        "azureDisk",
        &[
            ptr("/cachingMode", Str("ReadWrite")),
            ptr("/fsType", Str("ext4")),
            ptr("/readOnly", Bool(false)),
            ptr("/kind", Str("Shared")),
        ],
    ),
    (
        "scaleIO",
        &[
            field("/storageMode", Str("ThinProvisioned")),
            field("/fsType", Str("xfs")),
        ],
    ),
];

const PVC_SPEC: &[FieldDefault] = &[ptr("/volumeMode", Str("Filesystem"))];

/// `SetDefaults_PodSpec` and everything below a pod spec (volumes, containers): what
/// every pod template gets. `spec` is the PodSpec.
pub fn pod_spec(spec: &mut Value) {
    set_defaults(spec, POD_SPEC);
    for v in items_mut(spec, "volumes") {
        volume(v);
    }
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for c in items_mut(spec, key) {
            container(c);
        }
    }
}

/// The pod spec of the template at `key` of `parent` (a Go struct: created when absent,
/// as kube defaults the zero template).
pub fn pod_template_spec(parent: &mut Value, key: &str) {
    if let Some(spec) = struct_value_at(parent, &format!("/{key}/spec")) {
        pod_spec(spec);
    }
}

fn volume(v: &mut Value) {
    let Some(vol) = v.as_object_mut() else {
        return;
    };
    // A volume naming no source is an emptyDir.
    if !vol.iter().any(|(k, val)| k != "name" && !val.is_null()) {
        vol.insert("emptyDir".into(), json!({}));
    }
    volume_sources(v);
    if let Some(image) = child_mut(v, "image") {
        if str_of(image, "pullPolicy").is_empty() {
            let policy = pull_policy(str_of(image, "reference"));
            image["pullPolicy"] = json!(policy);
        }
    }
    if let Some(d) = child_mut(v, "downwardAPI") {
        field_refs_of_items(d);
    }
    if let Some(p) = child_mut(v, "projected") {
        for s in items_mut(p, "sources") {
            if let Some(d) = child_mut(s, "downwardAPI") {
                field_refs_of_items(d);
            }
            if let Some(t) = child_mut(s, "serviceAccountToken") {
                set_defaults(t, SERVICE_ACCOUNT_TOKEN);
            }
        }
    }
    if let Some(t) = v.pointer_mut("/ephemeral/volumeClaimTemplate") {
        if !t.is_null() {
            if let Some(spec) = struct_value_at(t, "/spec") {
                set_defaults(spec, PVC_SPEC);
            }
        }
    }
}

/// The defaults of whichever volume sources `v` (a Volume or PersistentVolumeSpec) sets.
fn volume_sources(v: &mut Value) {
    for (source, table) in VOLUME_SOURCES {
        if let Some(s) = child_mut(v, source) {
            set_defaults(s, table);
        }
    }
}

fn field_refs_of_items(downward_api: &mut Value) {
    for item in items_mut(downward_api, "items") {
        if let Some(r) = child_mut(item, "fieldRef") {
            set_defaults(r, FIELD_REF);
        }
    }
}

fn container(c: &mut Value) {
    if !c.is_object() {
        return;
    }
    if str_of(c, "imagePullPolicy").is_empty() {
        let policy = pull_policy(str_of(c, "image"));
        c["imagePullPolicy"] = json!(policy);
    }
    set_defaults(c, CONTAINER);
    for p in items_mut(c, "ports") {
        set_defaults(p, PORT);
    }
    for e in items_mut(c, "env") {
        if let Some(from) = child_mut(e, "valueFrom") {
            if let Some(r) = child_mut(from, "fieldRef") {
                set_defaults(r, FIELD_REF);
            }
            if let Some(r) = child_mut(from, "fileKeyRef") {
                set_defaults(r, FILE_KEY_REF);
            }
        }
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child_mut(c, probe) {
            set_defaults(p, PROBE);
            if let Some(h) = child_mut(p, "httpGet") {
                set_defaults(h, HTTP_GET);
            }
            if let Some(g) = child_mut(p, "grpc") {
                set_defaults(g, GRPC);
            }
        }
    }
    if let Some(l) = child_mut(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = child_mut(l, hook).and_then(|h| child_mut(h, "httpGet")) {
                set_defaults(h, HTTP_GET);
            }
        }
    }
}

/// kube's image pull policy for `image`: `Always` when its tag is `latest` (or it has
/// neither tag nor digest), else `IfNotPresent` (also when it does not parse).
pub fn pull_policy(image: &str) -> &'static str {
    match image_tag(image) {
        Some(tag) if tag == "latest" => "Always",
        _ => "IfNotPresent",
    }
}

/// A docker reference's name (domain optional), tag and digest.
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    let path_component = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
    let domain_component = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])";
    let host = format!(r"(?:{domain_component}(?:\.{domain_component})*|\[[a-fA-F0-9:]+\])");
    let domain = format!(r"{host}(?::[0-9]+)?");
    let name = format!(r"(?:{domain}/)?{path_component}(?:/{path_component})*");
    let tag = r"[\w][\w.-]{0,127}";
    let digest = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}";
    Regex::new(&format!(r"^({name})(?::({tag}))?(?:@({digest}))?$"))
        .unwrap_or_else(|e| unreachable!("the docker reference pattern is valid: {e}"))
});

/// The tag Go's `parsers.ParseImageName` finds: `latest` when there is neither tag nor
/// digest, `""` with only a digest, `None` when the reference does not parse.
fn image_tag(image: &str) -> Option<String> {
    // An image id (64 lowercase hex digits) is not a reference.
    if image.len() == 64
        && image
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let full = normalized_name(image);
    let remainder = full.split_once('/').map_or("", |(_, r)| r);
    let remote = remainder.split(':').next().unwrap_or("");
    if remote.to_lowercase() != remote {
        return None;
    }
    let m = REFERENCE.captures(&full)?;
    if m[1].len() > NAME_TOTAL_LENGTH_MAX {
        return None;
    }
    if let Some(d) = m.get(3) {
        let (alg, hex) = d.as_str().split_once(':')?;
        let want = match alg {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return None,
        };
        if hex.len() != want || hex.bytes().any(|b| b.is_ascii_uppercase()) {
            return None;
        }
    }
    Some(match (m.get(2), m.get(3)) {
        (Some(t), _) => t.as_str().to_string(),
        (None, Some(_)) => String::new(),
        (None, None) => "latest".to_string(),
    })
}

/// The longest repository name docker accepts, domain included.
const NAME_TOTAL_LENGTH_MAX: usize = 255;

/// docker's normalised form of a familiar image name: the first path element is a
/// domain when it is `localhost`, has a `.` or a `:`, or is not lowercase; otherwise
/// the image is on `docker.io`, under `library/` when it has a single element.
fn normalized_name(image: &str) -> String {
    let Some((first, rest)) = image.split_once('/') else {
        return format!("docker.io/library/{image}");
    };
    let (domain, remote) =
        if first == "localhost" || first.contains(['.', ':']) || first.to_lowercase() != first {
            (
                if first == "index.docker.io" {
                    "docker.io"
                } else {
                    first
                },
                rest,
            )
        } else {
            ("docker.io", image)
        };
    if domain == "docker.io" && !remote.contains('/') {
        format!("docker.io/library/{remote}")
    } else {
        format!("{domain}/{remote}")
    }
}

// ---------------------------------------------------------------------------------------
// Pod

const POD: &[FieldDefault] = &[ptr("/spec/enableServiceLinks", Bool(true))];

/// `SetDefaults_Pod` (only on pods, not templates) and the pod spec.
fn pod(obj: &mut Value) {
    set_defaults(obj, POD);
    let Some(spec) = struct_value_at(obj, "/spec") else {
        return;
    };
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for key in ["containers", "initContainers"] {
        for c in items_mut(spec, key) {
            requests_from_limits(c);
            if host_network {
                for p in items_mut(c, "ports") {
                    host_port_from_container_port(p);
                }
            }
        }
    }
    pod_spec(spec);
}

/// A container's resource requests default to its limits, per resource.
fn requests_from_limits(c: &mut Value) {
    let Some(Value::Object(limits)) = c.pointer("/resources/limits").cloned() else {
        return;
    };
    let Some(res) = struct_at(c, "/resources") else {
        return;
    };
    let mut requests = match res.get("requests") {
        Some(Value::Object(r)) => r.clone(),
        _ => Map::new(),
    };
    for (k, v) in limits {
        requests.entry(k).or_insert(v);
    }
    if !requests.is_empty() {
        res.insert("requests".into(), Value::Object(requests));
    }
}

fn host_port_from_container_port(p: &mut Value) {
    let unset = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0;
    if let (true, Some(port)) = (unset, p.get("containerPort").cloned()) {
        p["hostPort"] = port;
    }
}

/// The pod's `PrepareForCreate` beyond dropping disabled fields: generation 1, status
/// reset to phase `Pending` with its QoS class (a client's `status.qosClass` is kept,
/// as kube computes it before the reset), and the `PodScheduled=False` condition of a
/// pod with scheduling gates, stamped `now`.
pub fn pod_prepare_for_create(obj: &mut Value, now: &str) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let qos = match map.get("status").map(|s| str_of(s, "qosClass")) {
        Some(q) if !q.is_empty() => q.to_string(),
        _ => qos_class(map.get("spec").unwrap_or(&Value::Null)).to_string(),
    };
    let mut status = json!({"phase": "Pending", "qosClass": qos});
    let gated = map
        .get("spec")
        .is_some_and(|s| !is_empty_collection(s, "schedulingGates"));
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
            "lastProbeTime": null,
            "lastTransitionTime": now,
        }]);
    }
    map.insert("status".into(), status);
    if let Some(meta) = struct_at(obj, "/metadata") {
        meta.insert("generation".into(), json!(1));
    }
}

/// The QoS class of a pod spec (kube's `ComputePodQOS`): `BestEffort` without cpu or
/// memory requests and limits, `Guaranteed` when every container limits both and the
/// summed requests equal the summed limits, else `Burstable`. Pod-level resources,
/// when set, decide instead of the containers.
pub fn qos_class(spec: &Value) -> &'static str {
    let mut requests: Vec<(String, Quantity)> = Vec::new();
    let mut limits: Vec<(String, Quantity)> = Vec::new();
    let mut guaranteed = true;
    let sum_into = |list: Option<&Value>, into: &mut Vec<(String, Quantity)>| {
        let mut found = Vec::new();
        for (name, q) in positive_qos_resources(list) {
            found.push(name.clone());
            match into.iter_mut().find(|(n, _)| *n == name) {
                Some((_, sum)) => {
                    if let Ok(s) = sum.add(&q, false) {
                        *sum = s;
                    }
                }
                None => into.push((name, q)),
            }
        }
        found
    };
    let pod_level = spec.get("resources").filter(|r| !r.is_null());
    if let Some(res) = pod_level {
        sum_into(res.get("requests"), &mut requests);
        if !is_empty_collection(res, "limits") {
            let found = sum_into(res.get("limits"), &mut limits);
            if !(found.iter().any(|n| n == "cpu") && found.iter().any(|n| n == "memory")) {
                guaranteed = false;
            }
        }
    } else {
        let containers = ["containers", "initContainers"]
            .iter()
            .filter_map(|k| spec.get(*k).and_then(Value::as_array))
            .flatten();
        for c in containers {
            sum_into(c.pointer("/resources/requests"), &mut requests);
            let found = sum_into(c.pointer("/resources/limits"), &mut limits);
            if !(found.iter().any(|n| n == "cpu") && found.iter().any(|n| n == "memory")) {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed {
        guaranteed = requests.iter().all(|(name, req)| {
            limits
                .iter()
                .any(|(n, lim)| n == name && lim.compare(req) == std::cmp::Ordering::Equal)
        });
    }
    if guaranteed && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The cpu and memory entries of a resource list with a quantity above zero.
fn positive_qos_resources(list: Option<&Value>) -> Vec<(String, Quantity)> {
    let Some(Value::Object(list)) = list else {
        return Vec::new();
    };
    let Ok(zero) = Quantity::parse("0") else {
        return Vec::new();
    };
    list.iter()
        .filter(|(name, _)| *name == "cpu" || *name == "memory")
        .filter_map(|(name, q)| {
            let q = match q {
                Value::String(s) => Quantity::parse(s).ok()?,
                Value::Number(n) => Quantity::parse(&n.to_string()).ok()?,
                _ => return None,
            };
            (q.compare(&zero) == std::cmp::Ordering::Greater).then(|| (name.clone(), q))
        })
        .collect()
}

/// `serviceAccount` is an alias of `serviceAccountName` in every pod spec (`spec` may
/// be absent): the latter wins when both are
/// set, and the alias is written from it.
pub fn service_account_alias(spec: Option<&mut Value>) {
    let Some(spec) = spec.and_then(Value::as_object_mut) else {
        return;
    };
    let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => spec
            .get("serviceAccount")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    if name.is_empty() {
        spec.remove("serviceAccount");
        return;
    }
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
}

// ---------------------------------------------------------------------------------------
// Workloads and services

const REPLICATION_CONTROLLER: &[FieldDefault] = &[ptr("/spec/replicas", Int(1))];

/// `SetDefaults_ReplicationController`: the selector and the labels default to the
/// template's labels; its template (a pointer) only when present.
fn replication_controller(obj: &mut Value) {
    // An empty map would not be written back (`omitempty`): only labels count.
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = labels {
        if is_empty_collection(obj.get("spec").unwrap_or(&Value::Null), "selector") {
            if let Some(spec) = struct_at(obj, "/spec") {
                spec.insert("selector".into(), labels.clone());
            }
        }
        if is_empty_collection(obj.get("metadata").unwrap_or(&Value::Null), "labels") {
            if let Some(meta) = struct_at(obj, "/metadata") {
                meta.insert("labels".into(), labels);
            }
        }
    }
    set_defaults(obj, REPLICATION_CONTROLLER);
    // The template is a pointer: defaulted only when present.
    if let Some(spec) = obj
        .get_mut("spec")
        .filter(|s| s.get("template").is_some_and(Value::is_object))
    {
        pod_template_spec(spec, "template");
    }
}

const SERVICE: &[FieldDefault] = &[
    field("/spec/sessionAffinity", Str("None")),
    field("/spec/type", Str("ClusterIP")),
];

/// Default client IP affinity timeout: three hours.
const CLIENT_IP_TIMEOUT_SECONDS: i64 = 10800;

/// `SetDefaults_Service`. Cluster IPs and IP families are allocated at create time by
/// the registry, not defaulted.
fn service(obj: &mut Value) {
    set_defaults(obj, SERVICE);
    let Some(spec) = struct_at(obj, "/spec") else {
        return;
    };
    let spec_v = Value::Object(spec.clone());
    let affinity = str_of(&spec_v, "sessionAffinity");
    if affinity == "None" {
        spec.remove("sessionAffinityConfig");
    } else if affinity == "ClientIP"
        && spec_v
            .pointer("/sessionAffinityConfig/clientIP/timeoutSeconds")
            .is_none_or(Value::is_null)
    {
        spec.insert(
            "sessionAffinityConfig".into(),
            json!({"clientIP": {"timeoutSeconds": CLIENT_IP_TIMEOUT_SECONDS}}),
        );
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for p in ports {
            set_defaults(p, PORT);
            let unset = match p.get("targetPort") {
                None | Some(Value::Null) => true,
                Some(Value::Number(n)) => n.as_i64() == Some(0),
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if unset {
                let port = p.get("port").cloned().unwrap_or(json!(0));
                p["targetPort"] = port;
            }
        }
    }
    let ty = str_of(&spec_v, "type");
    let externally_accessible = ty == "LoadBalancer"
        || ty == "NodePort"
        || (ty == "ClusterIP" && !is_empty_collection(&spec_v, "externalIPs"));
    if externally_accessible && str_of(&spec_v, "externalTrafficPolicy").is_empty() {
        spec.insert("externalTrafficPolicy".into(), json!("Cluster"));
    }
    if matches!(ty, "NodePort" | "LoadBalancer" | "ClusterIP")
        && spec.get("internalTrafficPolicy").is_none_or(Value::is_null)
    {
        spec.insert("internalTrafficPolicy".into(), json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        if spec
            .get("allocateLoadBalancerNodePorts")
            .is_none_or(Value::is_null)
        {
            spec.insert("allocateLoadBalancerNodePorts".into(), json!(true));
        }
        if let Some(ingress) = obj.pointer_mut("/status/loadBalancer/ingress") {
            for ing in ingress.as_array_mut().into_iter().flatten() {
                let has_ip = !str_of(ing, "ip").is_empty();
                if has_ip && ing.get("ipMode").is_none_or(Value::is_null) {
                    ing["ipMode"] = json!("VIP");
                }
            }
        }
    }
}

/// `SetDefaults_Endpoints`: ports' protocol.
fn endpoints(obj: &mut Value) {
    for subset in items_mut(obj, "subsets") {
        for p in items_mut(subset, "ports") {
            set_defaults(p, PORT);
        }
    }
}

const PERSISTENT_VOLUME: &[FieldDefault] = &[
    field("/status/phase", Str("Pending")),
    field("/spec/persistentVolumeReclaimPolicy", Str("Retain")),
    ptr("/spec/volumeMode", Str("Filesystem")),
];

fn persistent_volume(obj: &mut Value) {
    set_defaults(obj, PERSISTENT_VOLUME);
    if let Some(spec) = obj.get_mut("spec") {
        volume_sources(spec);
    }
}

const PERSISTENT_VOLUME_CLAIM: &[FieldDefault] = &[
    field("/status/phase", Str("Pending")),
    ptr("/spec/volumeMode", Str("Filesystem")),
];

/// A PersistentVolumeClaim's defaults (also those of a StatefulSet's claim templates).
pub fn persistent_volume_claim(obj: &mut Value) {
    set_defaults(obj, PERSISTENT_VOLUME_CLAIM);
}

/// `SetDefaults_NodeStatus`: allocatable defaults to capacity.
fn node(obj: &mut Value) {
    let Some(status) = child_mut(obj, "status") else {
        return;
    };
    if status.get("allocatable").is_none_or(Value::is_null) {
        if let Some(capacity @ Value::Object(_)) = status.get("capacity").cloned() {
            status["allocatable"] = capacity;
        }
    }
}

/// A pod's `status.podIP` is an alias of `status.podIPs[0].ip` (kube's conversion).
fn pod_ip_alias(obj: &mut Value) {
    single_alias(obj, "status", "podIP", "podIPs", Some("ip"));
}

/// `podCIDR` is an alias of `podCIDRs[0]`.
fn pod_cidr_alias(obj: &mut Value) {
    single_alias(obj, "spec", "podCIDR", "podCIDRs", None);
}

/// A single-valued field that aliases the first item of a list (kube's conversions of
/// `podIP`/`podIPs`, `podCIDR`/`podCIDRs`): with both set and different the single
/// one wins and becomes the list; the list alone fills the single one. List items are
/// strings, or objects holding the value under `item_key`.
fn single_alias(
    obj: &mut Value,
    parent: &str,
    single_key: &str,
    list_key: &str,
    item_key: Option<&str>,
) {
    let item_of = |v: &str| match item_key {
        Some(k) => json!({ k: v }),
        None => json!(v),
    };
    let Some(parent) = obj.get_mut(parent).and_then(Value::as_object_mut) else {
        return;
    };
    let single = parent
        .get(single_key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first = parent
        .get(list_key)
        .and_then(|c| c.get(0))
        .and_then(|item| match item_key {
            Some(k) => item.get(k),
            None => Some(item),
        })
        .and_then(Value::as_str)
        .map(str::to_string);
    match (single.is_empty(), first) {
        (false, Some(f)) if f != single => {
            parent.insert(list_key.into(), json!([item_of(&single)]));
        }
        (false, None) => {
            parent.insert(list_key.into(), json!([item_of(&single)]));
        }
        (true, Some(f)) => {
            parent.insert(single_key.into(), json!(f));
        }
        _ => {}
    }
}

/// `SetDefaults_LimitRangeItem`: for `Container` items the default limit comes from
/// `max`, the default request from the default limit, then from `min`.
fn limit_range(obj: &mut Value) {
    let Some(limits) = obj
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits {
        if str_of(item, "type") != "Container" {
            continue;
        }
        let list = |item: &Value, key: &str| match item.get(key) {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        let mut default = list(item, "default");
        for (k, v) in list(item, "max") {
            default.entry(k).or_insert(v);
        }
        let mut request = list(item, "defaultRequest");
        for (k, v) in default.iter().chain(list(item, "min").iter()) {
            request.entry(k.clone()).or_insert(v.clone());
        }
        for (key, m) in [("default", default), ("defaultRequest", request)] {
            if !m.is_empty() {
                item[key] = Value::Object(m);
            }
        }
    }
}
