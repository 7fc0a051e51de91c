//! storage.k8s.io/v1 defaults (`pkg/apis/storage/v1/defaults.go`): StorageClass and
//! CSIDriver. `preventPodSchedulingIfMissing` needs the alpha VolumeLimitScaling
//! feature: not defaulted.

use super::{is_empty_collection, ptr, set_defaults, struct_value_at, FieldDefault, Lit::*};
use serde_json::{json, Value};

/// storage.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "StorageClass" => set_defaults(obj, STORAGE_CLASS),
        "CSIDriver" => {
            set_defaults(obj, CSI_DRIVER);
            if let Some(spec) = struct_value_at(obj, "/spec") {
                if is_empty_collection(spec, "volumeLifecycleModes") {
                    spec["volumeLifecycleModes"] = json!(["Persistent"]);
                }
            }
        }
        _ => {}
    }
}

const STORAGE_CLASS: &[FieldDefault] = &[
    ptr("/reclaimPolicy", Str("Delete")),
    ptr("/volumeBindingMode", Str("Immediate")),
];

const CSI_DRIVER: &[FieldDefault] = &[
    ptr("/spec/attachRequired", Bool(true)),
    ptr("/spec/podInfoOnMount", Bool(false)),
    ptr("/spec/storageCapacity", Bool(false)),
    ptr("/spec/fsGroupPolicy", Str("ReadWriteOnceWithFSType")),
    ptr("/spec/requiresRepublish", Bool(false)),
    ptr("/spec/seLinuxMount", Bool(false)),
];
