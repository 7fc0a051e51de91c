//! scheduling.k8s.io/v1 defaults (`pkg/apis/scheduling/v1/defaults.go`).

use super::{ptr, set_defaults, FieldDefault, Lit::*};
use serde_json::Value;

/// scheduling.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    if kind == "PriorityClass" {
        set_defaults(obj, PRIORITY_CLASS);
    }
}

const PRIORITY_CLASS: &[FieldDefault] = &[ptr("/preemptionPolicy", Str("PreemptLowerPriority"))];
