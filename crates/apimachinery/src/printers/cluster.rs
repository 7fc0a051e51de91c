//! Printers of cluster-wide policy kinds: PodDisruptionBudgets, StorageClasses,
//! PriorityClasses and RuntimeClasses.

use super::{age, at, col, int_at, name, str_at, Doc, KindPrinter, AGE, NAME};
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
