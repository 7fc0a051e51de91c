//! Printers of core (`v1`) kinds: Pods, pod templates, replication controllers, Nodes,
//! persistent volumes and claims, Endpoints.

use super::{
    age, array_at, at, col, containers_and_images, format_labels, int_at, name, str_at, wide, Doc,
    KindPrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

pub(super) const POD: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Ready",
            "string",
            Doc::Text("The aggregate readiness state of this pod for accepting traffic."),
        ),
        col(
            "Status",
            "string",
            Doc::Text("The aggregate status of the containers in this pod."),
        ),
        col(
            "Restarts",
            "string",
            Doc::Text("The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        ),
        AGE,
        wide("IP", "string", Doc::Field("core.v1.PodStatus", "podIP")),
        wide("Node", "string", Doc::Field("core.v1.PodSpec", "nodeName")),
        wide(
            "Nominated Node",
            "string",
            Doc::Field("core.v1.PodStatus", "nominatedNodeName"),
        ),
        wide(
            "Readiness Gates",
            "string",
            Doc::Field("core.v1.PodSpec", "readinessGates"),
        ),
    ],
    cells: pod_cells,
};

/// kube's reason a pod is not terminal after deletion when its node is lost.
const NODE_LOST: &str = "NodeLost";

/// The RFC 3339 timestamp of a container's last termination, if any.
fn last_terminated(status: &Value) -> Option<&str> {
    at(status, "/lastState/terminated/finishedAt").as_str()
}

/// Keeps the later of two RFC 3339 timestamps (same format: string order is time order
/// only when both parse; compare parsed times).
fn later<'a>(a: Option<&'a str>, b: Option<&'a str>) -> Option<&'a str> {
    let parse = |t: &str| DateTime::parse_from_rfc3339(t).ok();
    match (a, b) {
        (Some(x), Some(y)) => match (parse(x), parse(y)) {
            (Some(px), Some(py)) if py > px => Some(y),
            (None, Some(_)) => Some(y),
            _ => Some(x),
        },
        (None, y) => y,
        (x, None) => x,
    }
}

/// The reason text of a terminated state: its reason, else the signal, else the exit code.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    let reason = str_at(t, "/reason");
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int_at(t, "/signal");
    if signal != 0 {
        return format!("{prefix}Signal:{signal}");
    }
    format!("{prefix}ExitCode:{}", int_at(t, "/exitCode"))
}

fn has_condition(pod: &Value, type_: &str) -> bool {
    array_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == type_ && str_at(c, "/status") == "True")
}

/// kube's `printPod`: READY counts ready containers (and started restartable init
/// containers), STATUS is the phase refined by the containers' states.
fn pod_cells(pod: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let init_specs = array_at(pod, "/spec/initContainers");
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == "Always")
    };
    let total = array_at(pod, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| str_at(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart: Option<&str> = None;
    let mut last_sidecar_restart: Option<&str> = None;

    let phase = str_at(pod, "/status/phase");
    let mut reason = match str_at(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if array_at(pod, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let mut initializing = false;
    for (i, c) in array_at(pod, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        let name = str_at(c, "/name");
        restarts += int_at(c, "/restartCount");
        last_restart = later(last_restart, last_terminated(c));
        if restartable(name) {
            sidecar_restarts += int_at(c, "/restartCount");
            last_sidecar_restart = later(last_sidecar_restart, last_terminated(c));
        }
        let terminated = at(c, "/state/terminated");
        let waiting_reason = str_at(c, "/state/waiting/reason");
        if terminated.is_object() && int_at(terminated, "/exitCode") == 0 {
            continue;
        }
        if restartable(name) && at(c, "/started").as_bool() == Some(true) {
            if at(c, "/ready").as_bool() == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if terminated.is_object() {
            terminated_reason(terminated, "Init:")
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    if !initializing || has_condition(pod, "Initialized") {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        let mut error_reason = String::new();
        for c in array_at(pod, "/status/containerStatuses").iter().rev() {
            restarts += int_at(c, "/restartCount");
            last_restart = later(last_restart, last_terminated(c));
            let waiting_reason = str_at(c, "/state/waiting/reason");
            let terminated = at(c, "/state/terminated");
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if terminated.is_object() {
                reason = terminated_reason(terminated, "");
                if int_at(terminated, "/exitCode") != 0 {
                    error_reason = reason.clone();
                }
            } else if at(c, "/ready").as_bool() == Some(true) && at(c, "/state/running").is_object()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" {
            if has_running && has_condition(pod, "Ready") {
                reason = "Running".to_string();
            } else if !error_reason.is_empty() {
                reason = error_reason;
            } else if has_running {
                reason = "NotReady".to_string();
            }
        }
    }

    let deleting = at(pod, "/metadata/deletionTimestamp").is_string();
    if deleting && str_at(pod, "/status/reason") == NODE_LOST {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!(
            "{restarts} ({} ago)",
            crate::table::timestamp_since(Some(t), now)
        ),
        _ => restarts.to_string(),
    };

    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    let gates = array_at(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = array_at(pod, "/status/conditions");
        let true_count = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| str_at(c, "/type") == str_at(g, "/conditionType"))
                    .is_some_and(|c| str_at(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };
    vec![
        name(pod),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        age(pod, now),
        json!(or_none(str_at(pod, "/status/podIPs/0/ip"))),
        json!(or_none(str_at(pod, "/spec/nodeName"))),
        json!(or_none(str_at(pod, "/status/nominatedNodeName"))),
        json!(readiness_gates),
    ]
}

pub(super) const POD_TEMPLATE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Containers",
            "string",
            Doc::Text("Names of each container in the template."),
        ),
        col(
            "Images",
            "string",
            Doc::Text("Images referenced by each container in the template."),
        ),
        col(
            "Pod Labels",
            "string",
            Doc::Text("The labels for the pod template."),
        ),
    ],
    cells: |obj, _| {
        let (names, images) = containers_and_images(array_at(obj, "/template/spec/containers"));
        vec![
            name(obj),
            names,
            images,
            json!(format_labels(at(obj, "/template/metadata/labels"))),
        ]
    },
};

pub(super) const REPLICATION_CONTROLLER: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            Doc::Field("core.v1.ReplicationControllerSpec", "replicas"),
        ),
        col(
            "Current",
            "integer",
            Doc::Field("core.v1.ReplicationControllerStatus", "replicas"),
        ),
        col(
            "Ready",
            "integer",
            Doc::Field("core.v1.ReplicationControllerStatus", "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            Doc::Field("core.v1.ReplicationControllerSpec", "selector"),
        ),
    ],
    cells: |obj, now| {
        let (names, images) =
            containers_and_images(array_at(obj, "/spec/template/spec/containers"));
        vec![
            name(obj),
            json!(int_at(obj, "/spec/replicas")),
            json!(int_at(obj, "/status/replicas")),
            json!(int_at(obj, "/status/readyReplicas")),
            age(obj, now),
            names,
            images,
            json!(format_labels(at(obj, "/spec/selector"))),
        ]
    },
};

const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_ROLE_LABEL: &str = "kubernetes.io/role";

pub(super) const NODE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col("Status", "string", Doc::Text("The status of the node")),
        col("Roles", "string", Doc::Text("The roles of the node")),
        AGE,
        col(
            "Version",
            "string",
            Doc::Field("core.v1.NodeSystemInfo", "kubeletVersion"),
        ),
        wide(
            "Internal-IP",
            "string",
            Doc::Field("core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "External-IP",
            "string",
            Doc::Field("core.v1.NodeStatus", "addresses"),
        ),
        wide(
            "OS-Image",
            "string",
            Doc::Field("core.v1.NodeSystemInfo", "osImage"),
        ),
        wide(
            "Kernel-Version",
            "string",
            Doc::Field("core.v1.NodeSystemInfo", "kernelVersion"),
        ),
        wide(
            "Container-Runtime",
            "string",
            Doc::Field("core.v1.NodeSystemInfo", "containerRuntimeVersion"),
        ),
    ],
    cells: node_cells,
};

/// kube's `printNode`: STATUS from the Ready condition (the last one of that type
/// wins, as kube's map does), ROLES from the role labels.
fn node_cells(node: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let mut status: Vec<String> = array_at(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| str_at(c, "/type") == "Ready")
        .map(|c| {
            if str_at(c, "/status") == "True" {
                "Ready".to_string()
            } else {
                "NotReady".to_string()
            }
        })
        .into_iter()
        .collect();
    if status.is_empty() {
        status.push("Unknown".to_string());
    }
    if at(node, "/spec/unschedulable").as_bool() == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }
    let mut roles: Vec<String> = at(node, "/metadata/labels")
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix(NODE_ROLE_PREFIX) {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            Some(_) => None,
            None if k == NODE_ROLE_LABEL => v.as_str().filter(|v| !v.is_empty()).map(String::from),
            None => None,
        })
        .collect();
    roles.sort();
    roles.dedup();
    let roles = if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    };
    let address = |type_: &str| {
        array_at(node, "/status/addresses")
            .iter()
            .find(|a| str_at(a, "/type") == type_)
            .map_or("<none>".to_string(), |a| str_at(a, "/address").to_string())
    };
    let info = |field: &str| match str_at(node, &format!("/status/nodeInfo/{field}")) {
        "" => "<unknown>".to_string(),
        v => v.to_string(),
    };
    let mut kernel = info("kernelVersion");
    let arch = str_at(node, "/status/nodeInfo/architecture");
    if !arch.is_empty() {
        kernel = format!("{kernel} ({arch})");
    }
    vec![
        name(node),
        json!(status.join(",")),
        json!(roles),
        age(node, now),
        json!(str_at(node, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(kernel),
        json!(info("containerRuntimeVersion")),
    ]
}

/// kube's `GetAccessModesAsString`: the short names, in kube's order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| has(long))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The beta annotation naming a volume's or claim's class, which wins over the field.
const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

fn storage_class(obj: &Value) -> String {
    match at(obj, "/metadata/annotations")
        .get(STORAGE_CLASS_ANNOTATION)
        .and_then(Value::as_str)
    {
        Some(class) => class.to_string(),
        None => str_at(obj, "/spec/storageClassName").to_string(),
    }
}

/// `Terminating` once deletion started, else the phase.
fn phase_or_terminating(obj: &Value) -> String {
    if at(obj, "/metadata/deletionTimestamp").is_string() {
        "Terminating".to_string()
    } else {
        str_at(obj, "/status/phase").to_string()
    }
}

fn unset_or(v: &str) -> String {
    if v.is_empty() {
        "<unset>".to_string()
    } else {
        v.to_string()
    }
}

pub(super) const PERSISTENT_VOLUME: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Capacity",
            "string",
            Doc::Field("core.v1.PersistentVolumeSpec", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            Doc::Field("core.v1.PersistentVolumeSpec", "accessModes"),
        ),
        col(
            "Reclaim Policy",
            "string",
            Doc::Field(
                "core.v1.PersistentVolumeSpec",
                "persistentVolumeReclaimPolicy",
            ),
        ),
        col(
            "Status",
            "string",
            Doc::Field("core.v1.PersistentVolumeStatus", "phase"),
        ),
        col(
            "Claim",
            "string",
            Doc::Field("core.v1.PersistentVolumeSpec", "claimRef"),
        ),
        col(
            "StorageClass",
            "string",
            Doc::Text("StorageClass of the pv"),
        ),
        col(
            "VolumeAttributesClass",
            "string",
            Doc::Text("VolumeAttributesClass of the pv"),
        ),
        col(
            "Reason",
            "string",
            Doc::Field("core.v1.PersistentVolumeStatus", "reason"),
        ),
        AGE,
        wide(
            "VolumeMode",
            "string",
            Doc::Field("core.v1.PersistentVolumeSpec", "volumeMode"),
        ),
    ],
    cells: |pv, now| {
        let claim = match at(pv, "/spec/claimRef") {
            r if r.is_object() => format!("{}/{}", str_at(r, "/namespace"), str_at(r, "/name")),
            _ => String::new(),
        };
        vec![
            name(pv),
            json!(str_at(pv, "/spec/capacity/storage")),
            json!(access_modes(array_at(pv, "/spec/accessModes"))),
            json!(str_at(pv, "/spec/persistentVolumeReclaimPolicy")),
            json!(phase_or_terminating(pv)),
            json!(claim),
            json!(storage_class(pv)),
            json!(unset_or(str_at(pv, "/spec/volumeAttributesClassName"))),
            json!(str_at(pv, "/status/reason")),
            age(pv, now),
            json!(unset_or(str_at(pv, "/spec/volumeMode"))),
        ]
    },
};

pub(super) const PERSISTENT_VOLUME_CLAIM: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Status",
            "string",
            Doc::Field("core.v1.PersistentVolumeClaimStatus", "phase"),
        ),
        col(
            "Volume",
            "string",
            Doc::Field("core.v1.PersistentVolumeClaimSpec", "volumeName"),
        ),
        col(
            "Capacity",
            "string",
            Doc::Field("core.v1.PersistentVolumeClaimStatus", "capacity"),
        ),
        col(
            "Access Modes",
            "string",
            Doc::Field("core.v1.PersistentVolumeClaimStatus", "accessModes"),
        ),
        col(
            "StorageClass",
            "string",
            Doc::Text("StorageClass of the pvc"),
        ),
        col(
            "VolumeAttributesClass",
            "string",
            Doc::Text("VolumeAttributesClass of the pvc"),
        ),
        AGE,
        wide(
            "VolumeMode",
            "string",
            Doc::Field("core.v1.PersistentVolumeClaimSpec", "volumeMode"),
        ),
    ],
    cells: |pvc, now| {
        let bound = !str_at(pvc, "/spec/volumeName").is_empty();
        let (capacity, modes) = if bound {
            (
                str_at(pvc, "/status/capacity/storage").to_string(),
                access_modes(array_at(pvc, "/status/accessModes")),
            )
        } else {
            (String::new(), String::new())
        };
        vec![
            name(pvc),
            json!(phase_or_terminating(pvc)),
            json!(str_at(pvc, "/spec/volumeName")),
            json!(capacity),
            json!(modes),
            json!(storage_class(pvc)),
            json!(unset_or(str_at(pvc, "/spec/volumeAttributesClassName"))),
            age(pvc, now),
            json!(unset_or(str_at(pvc, "/spec/volumeMode"))),
        ]
    },
};

pub(super) const ENDPOINTS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Endpoints",
            "string",
            Doc::Field("core.v1.Endpoints", "subsets"),
        ),
        AGE,
    ],
    cells: |obj, now| vec![name(obj), json!(endpoints_cell(obj)), age(obj, now)],
};

/// kube's `formatEndpoints`: the first three `ip:port`s (or IPs of port-less
/// subsets), then `+ N more...`; `<none>` without subsets.
fn endpoints_cell(obj: &Value) -> String {
    const MAX: usize = 3;
    let subsets = array_at(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut list = Vec::new();
    let mut count = 0;
    for ss in subsets {
        let addresses = array_at(ss, "/addresses");
        let ports = array_at(ss, "/ports");
        if ports.is_empty() {
            count += addresses.len();
            list.extend(addresses.iter().map(|a| str_at(a, "/ip").to_string()));
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                let ip = str_at(a, "/ip");
                let p = int_at(port, "/port");
                list.push(if ip.contains(':') {
                    format!("[{ip}]:{p}")
                } else {
                    format!("{ip}:{p}")
                });
            }
        }
    }
    list.truncate(MAX);
    let joined = list.join(",");
    if count > MAX {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

pub(super) const RESOURCE_QUOTA: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Request",
            "string",
            Doc::Text("Request represents a minimum amount of cpu/memory that a container may consume."),
        ),
        col(
            "Limit",
            "string",
            Doc::Text("Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
        ),
        AGE,
    ],
    cells: |q, now| {
        let quantity = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => "0".to_string(),
        };
        let mut requests = Vec::new();
        let mut limits = Vec::new();
        // Sorted by resource name, as kube's `SortableResourceNames`.
        let hard = at(q, "/status/hard").as_object();
        for (resource, hard) in hard.into_iter().flatten() {
            let used = at(q, "/status/used").get(resource).unwrap_or(&Value::Null);
            let text = format!("{resource}: {}/{}", quantity(used), quantity(hard));
            match resource.split_once('.') {
                Some(("limits", _)) => limits.push(text),
                _ => requests.push(text),
            }
        }
        vec![
            name(q),
            json!(requests.join(", ")),
            json!(limits.join(", ")),
            age(q, now),
        ]
    },
};

pub(super) const COMPONENT_STATUS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Status",
            "string",
            Doc::Text("Status of the component conditions"),
        ),
        col(
            "Message",
            "string",
            Doc::Text("Message of the component conditions"),
        ),
        col(
            "Error",
            "string",
            Doc::Text("Error of the component conditions"),
        ),
    ],
    cells: |cs, _| {
        let healthy = array_at(cs, "/conditions")
            .iter()
            .find(|c| str_at(c, "/type") == "Healthy");
        let (status, message, error) = match healthy {
            Some(c) => (
                if str_at(c, "/status") == "True" {
                    "Healthy"
                } else {
                    "Unhealthy"
                },
                str_at(c, "/message"),
                str_at(c, "/error"),
            ),
            None => ("Unknown", "", ""),
        };
        vec![name(cs), json!(status), json!(message), json!(error)]
    },
};
