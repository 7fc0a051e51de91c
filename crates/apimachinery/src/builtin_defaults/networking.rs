//! networking.k8s.io/v1 defaults (`pkg/apis/networking/v1/defaults.go`): NetworkPolicy
//! and IngressClass. Ingress has none.

use super::{child_mut, is_empty_collection, items_mut, ptr, set_defaults, FieldDefault, Lit::*};
use serde_json::{json, Value};

/// networking.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "NetworkPolicy" => network_policy(obj),
        "IngressClass" => {
            if let Some(p) = obj
                .pointer_mut("/spec/parameters")
                .filter(|p| p.is_object())
            {
                set_defaults(p, INGRESS_CLASS_PARAMETERS);
            }
        }
        _ => {}
    }
}

const NETWORK_POLICY_PORT: &[FieldDefault] = &[ptr("/protocol", Str("TCP"))];

const INGRESS_CLASS_PARAMETERS: &[FieldDefault] = &[ptr("/scope", Str("Cluster"))];

/// `SetDefaults_NetworkPolicy`: without `policyTypes` a policy is an `Ingress` policy,
/// and an `Egress` one too when it has egress rules; every port's protocol is TCP.
fn network_policy(obj: &mut Value) {
    let Some(spec) = child_mut(obj, "spec").filter(|s| s.is_object()) else {
        return;
    };
    if is_empty_collection(spec, "policyTypes") {
        let mut types = vec!["Ingress"];
        if !is_empty_collection(spec, "egress") {
            types.push("Egress");
        }
        spec["policyTypes"] = json!(types);
    }
    for direction in ["ingress", "egress"] {
        for rule in items_mut(spec, direction) {
            for port in items_mut(rule, "ports") {
                set_defaults(port, NETWORK_POLICY_PORT);
            }
        }
    }
}
