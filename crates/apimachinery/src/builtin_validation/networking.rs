//! The networking.k8s.io group: Ingress.

use super::*;
use crate::schema::objectmeta::is_dns1123_subdomain;

/// Validate an Ingress (create and update check the same rules for new objects).
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    match kind {
        "Ingress" => ingress_spec(value_at(obj, "spec"), &Path::new("spec")),
        _ => ErrorList::new(),
    }
}

const WILDCARD_DNS1123_SUBDOMAIN_ERR: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// `IsWildcardDNS1123Subdomain`.
fn wildcard_dns1123_subdomain(host: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if host.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let valid = host
        .strip_prefix("*.")
        .is_some_and(|rest| !rest.contains('*') && is_dns1123_subdomain(rest).is_empty());
    if !valid {
        errs.push(WILDCARD_DNS1123_SUBDOMAIN_ERR.to_string());
    }
    errs
}

/// A host name of a rule or TLS entry: a (wildcard) DNS subdomain.
fn host_errors(host: &str, path: &Path) -> ErrorList {
    let msgs = if host.contains('*') {
        wildcard_dns1123_subdomain(host)
    } else {
        is_dns1123_subdomain(host)
    };
    msgs.into_iter()
        .map(|msg| Error::invalid(path, Value::from(host), msg))
        .collect()
}

/// `ValidateIngressSpec` (TLS secret names and resource backends' references aside).
pub fn ingress_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let rules = list_at(spec, "rules");
    let default_backend = spec.get("defaultBackend").filter(|b| !b.is_null());
    if rules.is_empty() && default_backend.is_none() {
        errs.push(Error::invalid(
            path,
            value_at(spec, "rules").clone(),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    if let Some(backend) = default_backend {
        errs.extend(backend_errors(backend, &path.child("defaultBackend")));
    }
    for (i, rule) in rules.iter().enumerate() {
        let p = path.child("rules").index(i);
        let host = str_at(rule, "host");
        if !host.is_empty() {
            if host.parse::<std::net::IpAddr>().is_ok() {
                errs.push(Error::invalid(
                    &p.child("host"),
                    Value::from(host),
                    "must be a DNS name, not an IP address",
                ));
            }
            errs.extend(host_errors(host, &p.child("host")));
        }
        if let Some(http) = rule.get("http").filter(|h| !h.is_null()) {
            let hp = p.child("http");
            let paths = list_at(http, "paths");
            if paths.is_empty() {
                errs.push(Error::required(&hp.child("paths"), ""));
            }
            for (j, ingress_path) in paths.iter().enumerate() {
                errs.extend(http_path(ingress_path, &hp.child("paths").index(j)));
            }
        }
    }
    for (t, tls) in list_at(spec, "tls").iter().enumerate() {
        for (i, host) in list_at(tls, "hosts").iter().enumerate() {
            let host = host.as_str().unwrap_or("");
            errs.extend(host_errors(
                host,
                &path.child("tls").index(t).child("hosts").index(i),
            ));
        }
    }
    if let Some(class) = opt_str(spec, "ingressClassName") {
        for msg in is_dns1123_subdomain(class) {
            errs.push(Error::invalid(
                &path.child("ingressClassName"),
                Value::from(class),
                msg,
            ));
        }
    }
    errs
}

/// `validateHTTPIngressPath`.
fn http_path(ingress_path: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(path_type) = opt_str(ingress_path, "pathType") else {
        return vec![Error::required(
            &path.child("pathType"),
            "pathType must be specified",
        )];
    };
    let value = str_at(ingress_path, "path");
    let invalid = |msg: String| Error::invalid(&path.child("path"), Value::from(value), msg);
    match path_type {
        "Exact" | "Prefix" => {
            if !value.starts_with('/') {
                errs.push(invalid("must be an absolute path".into()));
            }
            if !value.is_empty() {
                for seq in ["//", "/./", "/../", "%2f", "%2F"] {
                    if value.contains(seq) {
                        errs.push(invalid(format!("must not contain '{seq}'")));
                    }
                }
                for suffix in ["/..", "/."] {
                    if value.ends_with(suffix) {
                        errs.push(invalid(format!("cannot end with '{suffix}'")));
                    }
                }
            }
        }
        "ImplementationSpecific" => {
            if !value.is_empty() && !value.starts_with('/') {
                errs.push(invalid("must be an absolute path".into()));
            }
        }
        other => errs.push(Error::not_supported(
            &path.child("pathType"),
            Value::from(other),
            &["Exact", "ImplementationSpecific", "Prefix"],
        )),
    }
    errs.extend(backend_errors(
        value_at(ingress_path, "backend"),
        &path.child("backend"),
    ));
    errs
}

/// `validateIngressBackend` (service names as DNS labels: kube v1.36's relaxed rule).
fn backend_errors(backend: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let resource = is_set(backend, "resource");
    let Some(service) = backend.get("service").filter(|s| !s.is_null()) else {
        if !resource {
            errs.push(Error::invalid(
                path,
                Value::from(""),
                "resource or service backend is required",
            ));
        }
        return errs;
    };
    if resource {
        return vec![Error::invalid(
            path,
            Value::from(""),
            "cannot set both resource and service backends",
        )];
    }
    let name = str_at(service, "name");
    let service_path = path.child("service");
    if name.is_empty() {
        errs.push(Error::required(&service_path.child("name"), ""));
    } else {
        errs.extend(dns1123_label(name, &service_path.child("name")));
    }
    let port = value_at(service, "port");
    let port_name_value = str_at(port, "name");
    let number = int_at(port, "number");
    match (!port_name_value.is_empty(), number != 0) {
        (true, true) => errs.push(Error::invalid(
            path,
            Value::from(""),
            "cannot set both port name & port number",
        )),
        (true, false) => {
            for msg in port_name(port_name_value) {
                errs.push(Error::invalid(
                    &service_path.child("port").child("name"),
                    Value::from(port_name_value),
                    msg,
                ));
            }
        }
        (false, true) => {
            for msg in port_num(number) {
                errs.push(Error::invalid(
                    &service_path.child("port").child("number"),
                    Value::from(number),
                    msg,
                ));
            }
        }
        (false, false) => errs.push(Error::required(path, "port name or number is required")),
    }
    errs
}
