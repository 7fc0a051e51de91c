//! The field-selector labels kube supports per built-in kind (its
//! `AddFieldLabelConversionFunc` lists and `ToSelectableFields`), as data: each label
//! and how its value is read from the object. Kinds not listed select by
//! `metadata.name` and `metadata.namespace` only.

use crate::selector::SelectorError;
use crate::typed::{default_field_value, meta_field_value};
use serde_json::Value;

/// How a label's value is read.
#[derive(Clone, Copy)]
enum Read {
    /// `metadata.name` / `metadata.namespace`.
    Meta,
    /// A string at a JSON pointer (`""` when absent).
    Str(&'static str),
    /// A boolean at a JSON pointer (`false` when absent).
    Bool(&'static str),
    /// An integer at a JSON pointer (`0` when absent).
    Int(&'static str),
    /// The first of a list's `ip`s (a pod's `status.podIP`, from `podIPs`).
    FirstIp(&'static str),
    /// A label kube accepts whose value it never sets (a pod's `status.podIPs`).
    Empty,
    /// Another label's value (kube's `spec.host` → `spec.nodeName`).
    Alias(&'static str),
}

use Read::*;

/// One kind's labels and how each is read.
type Labels = &'static [(&'static str, Read)];

/// `(group, kind)` → its labels.
const TABLE: &[(&str, &str, Labels)] = &[
    (
        "",
        "Pod",
        &[
            ("metadata.name", Meta),
            ("metadata.namespace", Meta),
            ("spec.nodeName", Str("/spec/nodeName")),
            ("spec.restartPolicy", Str("/spec/restartPolicy")),
            ("spec.schedulerName", Str("/spec/schedulerName")),
            ("spec.serviceAccountName", Str("/spec/serviceAccountName")),
            ("spec.hostNetwork", Bool("/spec/hostNetwork")),
            ("status.phase", Str("/status/phase")),
            ("status.podIP", FirstIp("/status/podIPs")),
            ("status.podIPs", Empty),
            ("status.nominatedNodeName", Str("/status/nominatedNodeName")),
            ("spec.host", Alias("spec.nodeName")),
        ],
    ),
    (
        "",
        "Node",
        &[
            ("metadata.name", Meta),
            ("spec.unschedulable", Bool("/spec/unschedulable")),
        ],
    ),
    (
        "",
        "ReplicationController",
        &[
            ("metadata.name", Meta),
            ("metadata.namespace", Meta),
            ("status.replicas", Int("/status/replicas")),
        ],
    ),
    (
        "",
        "Service",
        &[
            ("metadata.name", Meta),
            ("metadata.namespace", Meta),
            ("spec.clusterIP", Str("/spec/clusterIP")),
            ("spec.type", Str("/spec/type")),
        ],
    ),
    (
        "batch",
        "Job",
        &[
            ("metadata.name", Meta),
            ("metadata.namespace", Meta),
            ("status.successful", Int("/status/succeeded")),
        ],
    ),
    (
        "certificates.k8s.io",
        "CertificateSigningRequest",
        &[
            ("metadata.name", Meta),
            ("spec.signerName", Str("/spec/signerName")),
        ],
    ),
    (
        "resource.k8s.io",
        "ResourceSlice",
        &[
            ("metadata.name", Meta),
            ("spec.nodeName", Str("/spec/nodeName")),
            ("spec.driver", Str("/spec/driver")),
        ],
    ),
];

/// The value of field-selector `label` of `obj`, a `group`/`version` `kind`; `Err`
/// in kube's words when the kind cannot be selected by it.
pub fn field_value(
    group: &str,
    version: &str,
    kind: &str,
    obj: &Value,
    label: &str,
) -> Result<Option<String>, SelectorError> {
    let Some((_, _, labels)) = TABLE.iter().find(|(g, k, _)| *g == group && *k == kind) else {
        return default_field_value(obj, label);
    };
    let unsupported = || {
        if kind == "ResourceSlice" {
            SelectorError::Requirement(format!(
                "field label not supported for {group}/{version}, Kind={kind}: {label}"
            ))
        } else {
            SelectorError::FieldLabelNotSupported(label.to_string())
        }
    };
    let Some((_, read)) = labels.iter().find(|(l, _)| *l == label) else {
        return Err(unsupported());
    };
    let at = |p: &str| obj.pointer(p);
    Ok(Some(match read {
        Meta => return meta_field_value(obj, label),
        Str(p) => at(p).and_then(Value::as_str).unwrap_or("").to_string(),
        Bool(p) => at(p).and_then(Value::as_bool).unwrap_or(false).to_string(),
        Int(p) => at(p).and_then(Value::as_i64).unwrap_or(0).to_string(),
        FirstIp(p) => at(p)
            .and_then(|l| l.get(0))
            .and_then(|ip| ip.get("ip"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        Empty => String::new(),
        Alias(to) => return field_value(group, version, kind, obj, to),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pods_select_by_node_phase_and_ip() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"},
                         "status": {"phase": "Running", "podIPs": [{"ip": "10.1.0.5"}]}});
        let v = |l: &str| field_value("", "v1", "Pod", &pod, l);
        assert_eq!(v("spec.nodeName").unwrap().as_deref(), Some("n1"));
        assert_eq!(v("spec.host").unwrap().as_deref(), Some("n1"));
        assert_eq!(v("status.podIP").unwrap().as_deref(), Some("10.1.0.5"));
        assert_eq!(v("spec.hostNetwork").unwrap().as_deref(), Some("false"));
        assert_eq!(
            v("spec.containers").unwrap_err().to_string(),
            "field label not supported: spec.containers"
        );
        let node = json!({"metadata": {"name": "n"}});
        assert!(field_value("", "v1", "Node", &node, "metadata.namespace").is_err());
        let deploy = json!({"metadata": {"name": "d", "namespace": "x"}});
        assert_eq!(
            field_value("apps", "v1", "Deployment", &deploy, "metadata.namespace")
                .unwrap()
                .as_deref(),
            Some("x")
        );
    }

    #[test]
    fn kinds_without_field_labels_answer_kubes_default_conversion_error() {
        let svc = json!({"metadata": {"name": "v1.apps"}});
        let v = |l: &str| field_value("apiregistration.k8s.io", "v1", "APIService", &svc, l);
        assert_eq!(v("metadata.name").unwrap().as_deref(), Some("v1.apps"));
        assert_eq!(
            v("spec.group").unwrap_err().to_string(),
            "\"spec.group\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
    }
}
