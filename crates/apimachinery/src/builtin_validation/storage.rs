//! `storage.k8s.io`: the update rules of StorageClasses.

use super::immutable;
use crate::field::{ErrorList, Path};
use serde_json::Value;

/// kube's `ValidateStorageClassUpdate` (beyond metadata): `parameters`,
/// `provisioner`, `reclaimPolicy` and `volumeBindingMode` never change.
pub fn validate_update(kind: &str, new: &Value, old: &Value) -> ErrorList {
    if kind != "StorageClass" {
        return ErrorList::new();
    }
    [
        "parameters",
        "provisioner",
        "reclaimPolicy",
        "volumeBindingMode",
    ]
    .into_iter()
    .flat_map(|f| immutable(new, old, f, &Path::new(f)))
    .collect()
}
