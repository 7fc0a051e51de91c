//! `apiregistration.k8s.io`: kube-aggregator's validation of APIServices
//! (`pkg/apis/apiregistration/validation`), metadata included: an APIService's name is
//! a path segment that must read `<spec.version>.<spec.group>` (`v1.` for the core group).

use super::{int_at, obj_at, port_num, str_at};
use crate::field::{Error, ErrorList, Path};
use crate::schema::objectmeta::{
    is_dns1035_label, is_dns1123_subdomain, validate_object_meta_path_segment,
};
use base64::Engine;
use serde_json::{json, Value};

/// kube's `ValidateAPIService`, `metadata` included.
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    if kind != "APIService" {
        return ErrorList::new();
    }
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    let mut errs = validate_object_meta_path_segment(&meta, false, &Path::new("metadata"));
    insert_name_errors(&mut errs, obj);
    errs.extend(validate_spec(obj));
    errs
}

/// kube's `ValidateAPIServiceUpdate` and `ValidateAPIServiceStatusUpdate` beyond the
/// metadata update rules (checked by the caller): on the main resource the status is
/// the old one, on `/status` the spec is, so both sets of rules hold either way.
pub fn validate_update(kind: &str, new: &Value) -> ErrorList {
    if kind != "APIService" {
        return ErrorList::new();
    }
    let mut errs = ErrorList::new();
    insert_name_errors(&mut errs, new);
    errs.extend(validate_spec(new));
    errs.extend(validate_status(new));
    errs
}

/// The name rule (`spec.version + "." + spec.group`) of `name` and `generateName`,
/// where kube's `ValidateObjectMeta` reports it: after that field's path-segment
/// errors, and only when there are none.
fn insert_name_errors(errs: &mut ErrorList, obj: &Value) {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let required = format!("{}.{}", str_at(spec, "version"), str_at(spec, "group"));
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    for field in ["generateName", "name"] {
        let value = str_at(meta, field);
        let path = Path::new("metadata").child(field);
        let reported = errs.iter().filter(|e| e.field == path).count();
        if value.is_empty() || value == required || reported > 0 {
            continue;
        }
        let at = errs
            .iter()
            .take_while(|e| {
                e.field == Path::new("metadata.generateName")
                    || (field == "name" && e.field == Path::new("metadata.name"))
            })
            .count();
        errs.insert(
            at,
            Error::invalid(
                &path,
                json!(value),
                format!(
                    "must be `spec.version+\".\"+spec.group`: {}",
                    crate::field::go_quote(&required)
                ),
            ),
        );
    }
}

fn validate_spec(obj: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let (group, version) = (str_at(spec, "group"), str_at(spec, "version"));
    if group.is_empty() && version != "v1" {
        errs.push(Error::required(
            &path.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for msg in is_dns1123_subdomain(group) {
            errs.push(Error::invalid(&path.child("group"), json!(group), msg));
        }
    }
    for msg in is_dns1035_label(version) {
        errs.push(Error::invalid(&path.child("version"), json!(version), msg));
    }
    let group_priority = int_at(spec, "groupPriorityMinimum");
    if group_priority <= 0 || group_priority > 20000 {
        errs.push(Error::invalid(
            &path.child("groupPriorityMinimum"),
            json!(group_priority),
            "must be positive and less than 20000",
        ));
    }
    let version_priority = int_at(spec, "versionPriority");
    if version_priority <= 0 || version_priority > 1000 {
        errs.push(Error::invalid(
            &path.child("versionPriority"),
            json!(version_priority),
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = str_at(spec, "caBundle");
    let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
    let Some(service) = obj_at(spec, "service") else {
        if !ca_bundle.is_empty() {
            errs.push(Error::invalid(
                &path.child("caBundle"),
                json!(format!("{} bytes", decoded_len(ca_bundle))),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(Error::invalid(
                &path.child("insecureSkipTLSVerify"),
                json!(true),
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    let service = Value::Object(service.clone());
    let service_path = path.child("service");
    for field in ["namespace", "name"] {
        if str_at(&service, field).is_empty() {
            errs.push(Error::required(&service_path.child(field), ""));
        }
    }
    // Defaulted to 443 when unset; an explicit 0 reads as Go's zero.
    let port = int_at(&service, "port");
    let port_errs = port_num(port);
    if !port_errs.is_empty() {
        errs.push(Error::invalid(
            &service_path.child("port"),
            json!(port),
            format!("port is not valid: {}", port_errs.join(", ")),
        ));
    }
    if insecure && !ca_bundle.is_empty() {
        errs.push(Error::invalid(
            &path.child("insecureSkipTLSVerify"),
            json!(true),
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// kube's `ValidateAPIServiceStatus`: conditions are `True`, `False` or `Unknown`.
fn validate_status(obj: &Value) -> ErrorList {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let path = Path::new("status").child("conditions");
    super::list_at(status, "conditions")
        .iter()
        .enumerate()
        .filter(|(_, c)| !matches!(str_at(c, "status"), "True" | "False" | "Unknown"))
        .map(|(i, c)| {
            Error::not_supported(
                &path.index(i).child("status"),
                json!(str_at(c, "status")),
                &["True", "False", "Unknown"],
            )
        })
        .collect()
}

/// The bytes a base64 `caBundle` holds (Go's `len([]byte)`).
fn decoded_len(b64: &str) -> usize {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_or(b64.len() / 4 * 3, |b| b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::aggregate_message;

    fn api_service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": spec})
    }

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter()
            .map(|e| aggregate_message(std::slice::from_ref(e)))
            .collect()
    }

    #[test]
    fn local_and_core_apiservices_are_valid() {
        let core = api_service(
            "v1.",
            json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000,
                "versionPriority": 1}),
        );
        assert_eq!(validate("APIService", &core), vec![]);
        let remote = api_service(
            "v1beta1.metrics.k8s.io",
            json!({"group": "metrics.k8s.io", "version": "v1beta1",
                "groupPriorityMinimum": 100, "versionPriority": 100,
                "service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                "insecureSkipTLSVerify": true}),
        );
        assert_eq!(validate("APIService", &remote), vec![]);
    }

    #[test]
    fn names_must_be_version_dot_group() {
        let obj = api_service(
            "v1.other.io",
            json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1,
                "versionPriority": 1}),
        );
        assert_eq!(
            messages(&validate("APIService", &obj)),
            ["metadata.name: Invalid value: \"v1.other.io\": must be `spec.version+\".\"+spec.group`: \"v1.example.com\""]
        );
        let slash = api_service(
            "v1/x",
            json!({"group": "x", "version": "v1",
            "groupPriorityMinimum": 1, "versionPriority": 1}),
        );
        assert_eq!(
            messages(&validate("APIService", &slash)),
            ["metadata.name: Invalid value: \"v1/x\": may not contain '/'"]
        );
    }

    #[test]
    fn spec_rules_with_kubes_messages() {
        let obj = api_service(
            "v2.",
            json!({"group": "", "version": "v2", "groupPriorityMinimum": 0,
                "versionPriority": 1001, "caBundle": "aGVsbG8=", "insecureSkipTLSVerify": true}),
        );
        assert_eq!(
            messages(&validate("APIService", &obj)),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.caBundle: Invalid value: \"5 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let remote = api_service(
            "v1.a.io",
            json!({"group": "a.io", "version": "v1", "groupPriorityMinimum": 1,
                "versionPriority": 1, "service": {"port": 0}, "caBundle": "aGVsbG8=",
                "insecureSkipTLSVerify": true}),
        );
        assert_eq!(
            messages(&validate("APIService", &remote)),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn status_conditions_are_true_false_or_unknown() {
        let mut obj = api_service(
            "v1.a.io",
            json!({"group": "a.io", "version": "v1",
            "groupPriorityMinimum": 1, "versionPriority": 1}),
        );
        obj["status"] = json!({"conditions": [{"type": "Available", "status": "Maybe"}]});
        assert_eq!(
            messages(&validate_update("APIService", &obj)),
            ["status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\""]
        );
    }
}
