//! discovery.k8s.io/v1 defaults (`pkg/apis/discovery/v1/defaults.go`): an
//! EndpointSlice's ports get an empty name and protocol TCP.

use super::{items_mut, ptr, set_defaults, FieldDefault, Lit::*};
use serde_json::Value;

/// discovery.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    if kind == "EndpointSlice" {
        for port in items_mut(obj, "ports") {
            set_defaults(port, ENDPOINT_PORT);
        }
    }
}

const ENDPOINT_PORT: &[FieldDefault] = &[ptr("/name", Str("")), ptr("/protocol", Str("TCP"))];
