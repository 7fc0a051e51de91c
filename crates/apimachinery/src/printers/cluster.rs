//! Printers of cluster-level kinds: PodDisruptionBudgets, storage (classes, CSI kinds,
//! attachments), PriorityClasses, RuntimeClasses, CSRs, HPAs, API priority and fairness,
//! and dynamic resource allocation.

use super::{age, at, col, int_at, name, str_at, Column, Doc, KindPrinter, AGE, NAME};
use serde_json::{json, Value};

/// An IntOrString as kube's `String()` writes it; `N/A` when unset.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => "N/A".to_string(),
    }
}

pub(super) const POD_DISRUPTION_BUDGET: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Min Available",
            "string",
            Doc::Text("The minimum number of pods that must be available."),
        ),
        col(
            "Max Unavailable",
            "string",
            Doc::Text("The maximum number of pods that may be unavailable."),
        ),
        col(
            "Allowed Disruptions",
            "integer",
            Doc::Text("Calculated number of pods that may be disrupted at this time."),
        ),
        AGE,
    ],
    cells: |pdb, now| {
        vec![
            name(pdb),
            json!(int_or_string(at(pdb, "/spec/minAvailable"))),
            json!(int_or_string(at(pdb, "/spec/maxUnavailable"))),
            json!(int_at(pdb, "/status/disruptionsAllowed")),
            age(pdb, now),
        ]
    },
};

/// The annotations marking the default StorageClass (GA, then beta).
const DEFAULT_STORAGE_CLASS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

pub(super) const STORAGE_CLASS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Provisioner",
            "string",
            Doc::Field("storage.v1.StorageClass", "provisioner"),
        ),
        col(
            "ReclaimPolicy",
            "string",
            Doc::Field("storage.v1.StorageClass", "reclaimPolicy"),
        ),
        col(
            "VolumeBindingMode",
            "string",
            Doc::Field("storage.v1.StorageClass", "volumeBindingMode"),
        ),
        col(
            "AllowVolumeExpansion",
            "string",
            Doc::Field("storage.v1.StorageClass", "allowVolumeExpansion"),
        ),
        AGE,
    ],
    cells: |sc, now| {
        let annotations = at(sc, "/metadata/annotations");
        let default = DEFAULT_STORAGE_CLASS
            .iter()
            .any(|a| annotations.get(a).and_then(Value::as_str) == Some("true"));
        let mut n = str_at(sc, "/metadata/name").to_string();
        if default {
            n.push_str(" (default)");
        }
        vec![
            json!(n),
            json!(str_at(sc, "/provisioner")),
            json!(at(sc, "/reclaimPolicy").as_str().unwrap_or("Delete")),
            json!(at(sc, "/volumeBindingMode").as_str().unwrap_or("Immediate")),
            json!(at(sc, "/allowVolumeExpansion").as_bool().unwrap_or(false)),
            age(sc, now),
        ]
    },
};

pub(super) const PRIORITY_CLASS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Value",
            "integer",
            Doc::Field("scheduling.v1.PriorityClass", "value"),
        ),
        col(
            "Global-Default",
            "boolean",
            Doc::Field("scheduling.v1.PriorityClass", "globalDefault"),
        ),
        AGE,
        col(
            "PreemptionPolicy",
            "string",
            Doc::Field("scheduling.v1.PriorityClass", "preemptionPolicy"),
        ),
    ],
    cells: |pc, now| {
        vec![
            name(pc),
            json!(int_at(pc, "/value")),
            json!(at(pc, "/globalDefault").as_bool().unwrap_or(false)),
            age(pc, now),
            json!(str_at(pc, "/preemptionPolicy")),
        ]
    },
};

pub(super) const RUNTIME_CLASS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        // kube describes this column with ObjectMeta's doc of a `handler` field it
        // does not have: empty.
        col("Handler", "string", Doc::Text("")),
        AGE,
    ],
    cells: |rc, now| vec![name(rc), json!(str_at(rc, "/handler")), age(rc, now)],
};

/// kube describes the CSR columns with the certificates.k8s.io/v1beta1 field docs.
const CSR_SIGNER_NAME_DOC: &str = "Requested signer for the request. It is a qualified name in the form: `scope-hostname.io/name`. If empty, it will be defaulted:\n 1. If it's a kubelet client certificate, it is assigned\n    \"kubernetes.io/kube-apiserver-client-kubelet\".\n 2. If it's a kubelet serving certificate, it is assigned\n    \"kubernetes.io/kubelet-serving\".\n 3. Otherwise, it is assigned \"kubernetes.io/legacy-unknown\".\nDistribution of trust for signers happens out of band. You can select on this field using `spec.signerName`.";
const CSR_REQUEST_DOC: &str = "Base64-encoded PKCS#10 CSR data";
const CSR_EXPIRATION_DOC: &str = "expirationSeconds is the requested duration of validity of the issued certificate. The certificate signer may issue a certificate with a different validity duration so a client must check the delta between the notBefore and and notAfter fields in the issued certificate to determine the actual duration.\n\nThe v1.22+ in-tree implementations of the well-known Kubernetes signers will honor this field as long as the requested duration is not greater than the maximum duration they will honor per the --cluster-signing-duration CLI flag to the Kubernetes controller manager.\n\nCertificate signers may not honor this field for various reasons:\n\n  1. Old signer that is unaware of the field (such as the in-tree\n     implementations prior to v1.22)\n  2. Signer whose configured maximum is shorter than the requested duration\n  3. Signer whose configured minimum is longer than the requested duration\n\nThe minimum valid value for expirationSeconds is 600, i.e. 10 minutes.";
const CSR_CONDITIONS_DOC: &str = "Conditions applied to the request, such as approval or denial.";

pub(super) const CERTIFICATE_SIGNING_REQUEST: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        AGE,
        col("SignerName", "string", Doc::Text(CSR_SIGNER_NAME_DOC)),
        col("Requestor", "string", Doc::Text(CSR_REQUEST_DOC)),
        col("RequestedDuration", "string", Doc::Text(CSR_EXPIRATION_DOC)),
        col("Condition", "string", Doc::Text(CSR_CONDITIONS_DOC)),
    ],
    cells: |csr, now| {
        let has = |t: &str| {
            super::array_at(csr, "/status/conditions")
                .iter()
                .any(|c| str_at(c, "/type") == t)
        };
        let mut condition = if has("Denied") {
            "Denied".to_string()
        } else if has("Approved") {
            "Approved".to_string()
        } else {
            "Pending".to_string()
        };
        if has("Failed") {
            condition.push_str(",Failed");
        }
        if !str_at(csr, "/status/certificate").is_empty() {
            condition.push_str(",Issued");
        }
        let duration = match at(csr, "/spec/expirationSeconds").as_i64() {
            Some(s) => crate::table::human_duration(chrono::TimeDelta::seconds(s)),
            None => "<none>".to_string(),
        };
        let signer = match str_at(csr, "/spec/signerName") {
            "" => "<none>",
            s => s,
        };
        vec![
            name(csr),
            age(csr, now),
            json!(signer),
            json!(str_at(csr, "/spec/username")),
            json!(duration),
            json!(condition),
        ]
    },
};

pub(super) const HORIZONTAL_POD_AUTOSCALER: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Reference",
            "string",
            Doc::Field(
                "autoscaling.v2.HorizontalPodAutoscalerSpec",
                "scaleTargetRef",
            ),
        ),
        col(
            "Targets",
            "string",
            Doc::Field("autoscaling.v2.HorizontalPodAutoscalerSpec", "metrics"),
        ),
        col(
            "MinPods",
            "string",
            Doc::Field("autoscaling.v2.HorizontalPodAutoscalerSpec", "minReplicas"),
        ),
        col(
            "MaxPods",
            "string",
            Doc::Field("autoscaling.v2.HorizontalPodAutoscalerSpec", "maxReplicas"),
        ),
        col(
            "Replicas",
            "string",
            Doc::Field(
                "autoscaling.v2.HorizontalPodAutoscalerStatus",
                "currentReplicas",
            ),
        ),
        AGE,
    ],
    cells: |hpa, now| {
        let min = match at(hpa, "/spec/minReplicas").as_i64() {
            Some(m) => m.to_string(),
            None => "<unset>".to_string(),
        };
        vec![
            name(hpa),
            json!(format!(
                "{}/{}",
                str_at(hpa, "/spec/scaleTargetRef/kind"),
                str_at(hpa, "/spec/scaleTargetRef/name")
            )),
            json!(hpa_targets(hpa)),
            json!(min),
            json!(int_at(hpa, "/spec/maxReplicas")),
            json!(int_at(hpa, "/status/currentReplicas")),
            age(hpa, now),
        ]
    },
};

/// kube's `formatHPAMetrics` over autoscaling/v2's metrics; an autoscaling/v1 object's
/// CPU target is the one Resource metric kube converts it to.
fn hpa_targets(hpa: &Value) -> String {
    const MAX: usize = 2;
    // kube prints the internal object: a v1 object with its annotations' metrics.
    let is_v1 = hpa.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1")
        || hpa.pointer("/spec/metrics").is_none();
    let converted;
    let hpa = if is_v1 {
        let mut v2 = hpa.clone();
        v2["apiVersion"] = json!("autoscaling/v1");
        crate::builtin_conversion::autoscaling::hpa_v1_to_v2(&mut v2);
        converted = v2;
        &converted
    } else {
        hpa
    };
    let specs = super::array_at(hpa, "/spec/metrics").to_vec();
    let statuses = super::array_at(hpa, "/status/currentMetrics").to_vec();
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let quantity = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => "0".to_string(),
    };
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i).unwrap_or(&Value::Null);
            let source = |key: &str| (at(spec, &format!("/{key}")), at(status, &format!("/{key}")));
            let avg_or_value = |key: &str| {
                let (s, st) = source(key);
                if at(s, "/target/averageValue").is_null() {
                    let current = if st.is_object() {
                        quantity(at(st, "/current/value"))
                    } else {
                        "<unknown>".to_string()
                    };
                    format!("{current}/{}", quantity(at(s, "/target/value")))
                } else {
                    let current = match at(st, "/current/averageValue") {
                        v if !v.is_null() => quantity(v),
                        _ => "<unknown>".to_string(),
                    };
                    format!(
                        "{current}/{} (avg)",
                        quantity(at(s, "/target/averageValue"))
                    )
                }
            };
            let resource = |key: &str| {
                let (s, st) = source(key);
                let res = str_at(s, "/name");
                if !at(s, "/target/averageValue").is_null() {
                    let current = if st.is_object() {
                        quantity(at(st, "/current/averageValue"))
                    } else {
                        "<unknown>".to_string()
                    };
                    format!(
                        "{res}: {current}/{}",
                        quantity(at(s, "/target/averageValue"))
                    )
                } else {
                    let current = match at(st, "/current/averageUtilization").as_i64() {
                        Some(u) => format!("{u}%"),
                        None => "<unknown>".to_string(),
                    };
                    let target = match at(s, "/target/averageUtilization").as_i64() {
                        Some(u) => format!("{u}%"),
                        None => "<auto>".to_string(),
                    };
                    format!("{res}: {current}/{target}")
                }
            };
            match str_at(spec, "/type") {
                "External" => avg_or_value("external"),
                "Object" => avg_or_value("object"),
                "Pods" => {
                    let (s, st) = source("pods");
                    let current = if st.is_object() {
                        quantity(at(st, "/current/averageValue"))
                    } else {
                        "<unknown>".to_string()
                    };
                    format!("{current}/{}", quantity(at(s, "/target/averageValue")))
                }
                "Resource" => resource("resource"),
                "ContainerResource" => resource("containerResource"),
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    let joined = list[..list.len().min(MAX)].join(", ");
    if list.len() > MAX {
        format!("{joined} + {} more...", list.len() - MAX)
    } else {
        joined
    }
}

pub(super) const CSI_DRIVER: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "AttachRequired",
            "boolean",
            Doc::Field("storage.v1.CSIDriverSpec", "attachRequired"),
        ),
        col(
            "PodInfoOnMount",
            "boolean",
            Doc::Field("storage.v1.CSIDriverSpec", "podInfoOnMount"),
        ),
        col(
            "StorageCapacity",
            "boolean",
            Doc::Field("storage.v1.CSIDriverSpec", "storageCapacity"),
        ),
        col(
            "TokenRequests",
            "string",
            Doc::Field("storage.v1.CSIDriverSpec", "tokenRequests"),
        ),
        col(
            "RequiresRepublish",
            "boolean",
            Doc::Field("storage.v1.CSIDriverSpec", "requiresRepublish"),
        ),
        col(
            "Modes",
            "string",
            Doc::Field("storage.v1.CSIDriverSpec", "volumeLifecycleModes"),
        ),
        AGE,
    ],
    cells: |d, now| {
        let flag = |p: &str, default: bool| at(d, p).as_bool().unwrap_or(default);
        let tokens = match at(d, "/spec/tokenRequests").as_array() {
            Some(t) => t
                .iter()
                .map(|t| str_at(t, "/audience"))
                .collect::<Vec<_>>()
                .join(","),
            None => "<unset>".to_string(),
        };
        let modes = super::array_at(d, "/spec/volumeLifecycleModes")
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(",");
        vec![
            name(d),
            json!(flag("/spec/attachRequired", true)),
            json!(flag("/spec/podInfoOnMount", false)),
            json!(flag("/spec/storageCapacity", false)),
            json!(tokens),
            json!(flag("/spec/requiresRepublish", false)),
            json!(if modes.is_empty() {
                "<none>".to_string()
            } else {
                modes
            }),
            age(d, now),
        ]
    },
};

pub(super) const CSI_NODE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Drivers",
            "integer",
            Doc::Text("Drivers indicates the number of CSI drivers registered on the node"),
        ),
        AGE,
    ],
    cells: |n, now| {
        vec![
            name(n),
            json!(super::array_at(n, "/spec/drivers").len()),
            age(n, now),
        ]
    },
};

pub(super) const CSI_STORAGE_CAPACITY: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "StorageClassName",
            "string",
            Doc::Field("storage.v1.CSIStorageCapacity", "storageClassName"),
        ),
        col(
            "Capacity",
            "string",
            Doc::Field("storage.v1.CSIStorageCapacity", "capacity"),
        ),
    ],
    cells: |c, _| {
        let capacity = match at(c, "/capacity") {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => "<unset>".to_string(),
        };
        vec![
            name(c),
            json!(str_at(c, "/storageClassName")),
            json!(capacity),
        ]
    },
};

pub(super) const VOLUME_ATTACHMENT: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        Column {
            name: "Attacher",
            type_: "string",
            priority: 0,
            // kube marks this column as one of names too.
            format: "name",
            doc: Doc::Field("storage.v1.VolumeAttachmentSpec", "attacher"),
        },
        col(
            "PV",
            "string",
            Doc::Field("storage.v1.VolumeAttachmentSource", "persistentVolumeName"),
        ),
        col(
            "Node",
            "string",
            Doc::Field("storage.v1.VolumeAttachmentSpec", "nodeName"),
        ),
        col(
            "Attached",
            "boolean",
            Doc::Field("storage.v1.VolumeAttachmentStatus", "attached"),
        ),
        AGE,
    ],
    cells: |va, now| {
        vec![
            name(va),
            json!(str_at(va, "/spec/attacher")),
            json!(str_at(va, "/spec/source/persistentVolumeName")),
            json!(str_at(va, "/spec/nodeName")),
            json!(at(va, "/status/attached").as_bool().unwrap_or(false)),
            age(va, now),
        ]
    },
};

pub(super) const VOLUME_ATTRIBUTES_CLASS: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "DriverName",
            "string",
            Doc::Field("storage.v1.VolumeAttributesClass", "driverName"),
        ),
        AGE,
    ],
    cells: |c, now| vec![name(c), json!(str_at(c, "/driverName")), age(c, now)],
};

pub(super) const FLOW_SCHEMA: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "PriorityLevel",
            "string",
            Doc::Field("flowcontrol.v1.PriorityLevelConfigurationReference", "name"),
        ),
        col(
            "MatchingPrecedence",
            "string",
            Doc::Field("flowcontrol.v1.FlowSchemaSpec", "matchingPrecedence"),
        ),
        col(
            "DistinguisherMethod",
            "string",
            Doc::Field("flowcontrol.v1.FlowSchemaSpec", "distinguisherMethod"),
        ),
        AGE,
        col(
            "MissingPL",
            "string",
            Doc::Text("references a broken or non-existent PriorityLevelConfiguration"),
        ),
    ],
    cells: |fs, now| {
        let method = match at(fs, "/spec/distinguisherMethod") {
            m if m.is_object() => str_at(m, "/type").to_string(),
            _ => "<none>".to_string(),
        };
        let missing = super::array_at(fs, "/status/conditions")
            .iter()
            .find(|c| str_at(c, "/type") == "Dangling")
            .map_or("?".to_string(), |c| str_at(c, "/status").to_string());
        vec![
            name(fs),
            json!(str_at(fs, "/spec/priorityLevelConfiguration/name")),
            json!(int_at(fs, "/spec/matchingPrecedence")),
            json!(method),
            age(fs, now),
            json!(missing),
        ]
    },
};

pub(super) const PRIORITY_LEVEL_CONFIGURATION: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Type",
            "string",
            Doc::Field("flowcontrol.v1.PriorityLevelConfigurationSpec", "type"),
        ),
        col(
            "NominalConcurrencyShares",
            "string",
            Doc::Field(
                "flowcontrol.v1.LimitedPriorityLevelConfiguration",
                "nominalConcurrencyShares",
            ),
        ),
        col(
            "Queues",
            "string",
            Doc::Field("flowcontrol.v1.QueuingConfiguration", "queues"),
        ),
        col(
            "HandSize",
            "string",
            Doc::Field("flowcontrol.v1.QueuingConfiguration", "handSize"),
        ),
        col(
            "QueueLengthLimit",
            "string",
            Doc::Field("flowcontrol.v1.QueuingConfiguration", "queueLengthLimit"),
        ),
        AGE,
    ],
    cells: |pl, now| {
        let none = || json!("<none>");
        let limited = at(pl, "/spec/limited");
        let (ncs, queues, hand, limit) = if limited.is_object() {
            let q = at(limited, "/limitResponse/queuing");
            let ncs = json!(int_at(limited, "/nominalConcurrencyShares"));
            if q.is_object() {
                (
                    ncs,
                    json!(int_at(q, "/queues")),
                    json!(int_at(q, "/handSize")),
                    json!(int_at(q, "/queueLengthLimit")),
                )
            } else {
                (ncs, none(), none(), none())
            }
        } else {
            (none(), none(), none(), none())
        };
        vec![
            name(pl),
            json!(str_at(pl, "/spec/type")),
            ncs,
            queues,
            hand,
            limit,
            age(pl, now),
        ]
    },
};

pub(super) const RESOURCE_SLICE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Node",
            "string",
            Doc::Field("resource.v1.ResourceSliceSpec", "nodeName"),
        ),
        col(
            "Driver",
            "string",
            Doc::Field("resource.v1.ResourceSliceSpec", "driver"),
        ),
        col(
            "Pool",
            "string",
            Doc::Field("resource.v1.ResourcePool", "name"),
        ),
        AGE,
    ],
    cells: |s, now| {
        vec![
            name(s),
            json!(str_at(s, "/spec/nodeName")),
            json!(str_at(s, "/spec/driver")),
            json!(str_at(s, "/spec/pool/name")),
            age(s, now),
        ]
    },
};

pub(super) const RESOURCE_CLAIM: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "State",
            "string",
            Doc::Text("A summary of the current state (allocated, pending, reserved, etc.)."),
        ),
        AGE,
    ],
    cells: |c, now| {
        let deleted = at(c, "/metadata/deletionTimestamp").is_string();
        let mut states = Vec::new();
        if deleted {
            states.push("deleted");
        }
        if at(c, "/status/allocation").is_object() {
            states.push("allocated");
            if !super::array_at(c, "/status/reservedFor").is_empty() {
                states.push("reserved");
            }
        } else if !deleted {
            states.push("pending");
        }
        vec![name(c), json!(states.join(",")), age(c, now)]
    },
};

/// kube-aggregator's own table of APIServices (its `ConvertToTable`): where the API is
/// served (`Local`, or the Service) and whether it is available.
pub(super) const API_SERVICE: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Service",
            "string",
            Doc::Text("The reference to the service that hosts this API endpoint."),
        ),
        col(
            "Available",
            "string",
            Doc::Text("Whether this service is available."),
        ),
        AGE,
    ],
    cells: |svc, now| {
        let service = match at(svc, "/spec/service") {
            Value::Null => "Local".to_string(),
            s => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
        };
        let available = at(svc, "/status/conditions")
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| str_at(c, "/type") == "Available");
        let status = match available {
            None => "Unknown".to_string(),
            Some(c) => match (str_at(c, "/status"), str_at(c, "/reason")) {
                ("True", _) | (_, "") => str_at(c, "/status").to_string(),
                (status, reason) => format!("{status} ({reason})"),
            },
        };
        vec![name(svc), json!(service), json!(status), age(svc, now)]
    },
};
