//! apiregistration.k8s.io/v1 defaults (kube-aggregator's `apis/apiregistration/v1/defaults.go`).

use super::{child_mut, ptr, set_defaults, FieldDefault, Lit::*};
use serde_json::Value;

/// apiregistration.k8s.io/v1 defaults of `kind`: an APIService's Service port is 443.
pub fn apply(kind: &str, obj: &mut Value) {
    if kind != "APIService" {
        return;
    }
    if let Some(service) = obj
        .get_mut("spec")
        .and_then(|spec| child_mut(spec, "service"))
    {
        set_defaults(service, SERVICE_REFERENCE);
    }
}

const SERVICE_REFERENCE: &[FieldDefault] = &[ptr("/port", Int(443))];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_service_reference_defaults_to_port_443_and_local_ones_get_none() {
        let mut remote = json!({"spec": {"service": {"namespace": "n", "name": "s"}}});
        apply("APIService", &mut remote);
        assert_eq!(remote["spec"]["service"]["port"], 443);
        let mut set = json!({"spec": {"service": {"name": "s", "port": 8443}}});
        apply("APIService", &mut set);
        assert_eq!(set["spec"]["service"]["port"], 8443);
        let mut local = json!({"spec": {"group": "a.io"}});
        apply("APIService", &mut local);
        assert_eq!(local, json!({"spec": {"group": "a.io"}}));
    }
}
