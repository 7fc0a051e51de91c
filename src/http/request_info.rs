//! Request-info parsing, as kube's `RequestInfoFactory`: which API, group, version,
//! namespace, resource, name, subresource and verb a request addresses.

use http::Method;

/// What a request path and method address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for `/api/...` and `/apis/...` resource requests.
    pub is_resource_request: bool,
    /// `api` or `apis` (empty for non-resource paths).
    pub api_prefix: String,
    /// API group (empty for core).
    pub group: String,
    /// API version.
    pub version: String,
    /// Namespace, when the path names one.
    pub namespace: String,
    /// Plural resource name.
    pub resource: String,
    /// Object name.
    pub name: String,
    /// Subresource (`status`, `scale`, ...).
    pub subresource: String,
    /// kube verb: get, list, watch, create, update, patch, delete, deletecollection.
    pub verb: String,
    /// The raw path split into segments.
    pub parts: Vec<String>,
}

/// Parse a request as kube does. `watch` is the value of the `watch` query parameter.
pub fn parse(method: &Method, path: &str, watch: bool) -> RequestInfo {
    let mut info = RequestInfo {
        parts: split_path(path),
        ..Default::default()
    };
    info.verb = method.as_str().to_lowercase();
    let mut parts: &[String] = &info.parts.clone();
    if parts.is_empty() {
        return info;
    }
    match parts[0].as_str() {
        "api" => {
            if parts.len() < 2 {
                return info;
            }
            info.api_prefix = "api".into();
            info.version = parts[1].clone();
            parts = &parts[2..];
        }
        "apis" => {
            if parts.len() < 3 {
                if parts.len() == 2 {
                    info.group = parts[1].clone();
                }
                info.api_prefix = "apis".into();
                return info;
            }
            info.api_prefix = "apis".into();
            info.group = parts[1].clone();
            info.version = parts[2].clone();
            parts = &parts[3..];
        }
        _ => return info,
    }
    if parts.is_empty() {
        return info;
    }
    info.is_resource_request = true;
    let mut legacy_watch = false;
    if parts[0] == "watch" {
        legacy_watch = true;
        parts = &parts[1..];
        if parts.is_empty() {
            info.is_resource_request = false;
            return info;
        }
    }
    info.verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
    .to_string();
    if parts[0] == "namespaces" {
        if parts.len() == 3 && (parts[2] == "status" || parts[2] == "finalize") {
            info.resource = "namespaces".into();
            info.name = parts[1].clone();
            info.subresource = parts[2].clone();
            return finish(info, 3, legacy_watch, watch);
        }
        if parts.len() > 1 {
            info.namespace = parts[1].clone();
            if parts.len() > 2 {
                parts = &parts[2..];
            } else {
                // `/namespaces/{name}` addresses the namespace itself.
                info.resource = "namespaces".into();
                info.name = parts[1].clone();
                info.namespace = String::new();
                return finish(info, 2, legacy_watch, watch);
            }
        }
    }
    let n = parts.len();
    if n >= 1 {
        info.resource = parts[0].clone();
    }
    if n >= 2 {
        info.name = parts[1].clone();
    }
    if n >= 3 {
        info.subresource = parts[2].clone();
    }
    if n > 3 {
        // Deeper paths are not resources we serve; keep them distinguishable.
        info.subresource = parts[2..].join("/");
    }
    let count = if info.name.is_empty() { 1 } else { 2 };
    finish(info, count, legacy_watch, watch)
}

fn finish(mut info: RequestInfo, _segments: usize, legacy_watch: bool, watch: bool) -> RequestInfo {
    if legacy_watch || (watch && info.verb == "get") {
        info.verb = "watch".into();
        if !info.name.is_empty() && legacy_watch {
            // legacy `/watch/.../name` watches one object
        }
    }
    if info.verb == "get" && info.name.is_empty() {
        info.verb = "list".into();
    }
    if info.verb == "delete" && info.name.is_empty() {
        info.verb = "deletecollection".into();
    }
    info
}

/// Split a path into non-empty segments.
pub fn split_path(path: &str) -> Vec<String> {
    path.trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_custom_resource() {
        let i = parse(
            &Method::GET,
            "/apis/crud.example.com/v1/namespaces/default/widgets/w1",
            false,
        );
        assert!(i.is_resource_request);
        assert_eq!(
            (i.group.as_str(), i.version.as_str()),
            ("crud.example.com", "v1")
        );
        assert_eq!(
            (i.namespace.as_str(), i.resource.as_str(), i.name.as_str()),
            ("default", "widgets", "w1")
        );
        assert_eq!(i.verb, "get");
    }

    #[test]
    fn list_watch_and_collections() {
        assert_eq!(
            parse(&Method::GET, "/apis/g.io/v1/widgets", false).verb,
            "list"
        );
        assert_eq!(
            parse(&Method::GET, "/apis/g.io/v1/widgets", true).verb,
            "watch"
        );
        assert_eq!(
            parse(
                &Method::GET,
                "/apis/g.io/v1/watch/namespaces/a/widgets",
                false
            )
            .verb,
            "watch"
        );
        assert_eq!(
            parse(&Method::DELETE, "/apis/g.io/v1/namespaces/a/widgets", false).verb,
            "deletecollection"
        );
        let s = parse(
            &Method::PUT,
            "/apis/g.io/v1/namespaces/a/widgets/w/status",
            false,
        );
        assert_eq!(
            (s.verb.as_str(), s.subresource.as_str()),
            ("update", "status")
        );
    }

    #[test]
    fn namespaces_themselves() {
        let i = parse(&Method::GET, "/api/v1/namespaces/default", false);
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.namespace.as_str()),
            ("namespaces", "default", "")
        );
        let l = parse(&Method::GET, "/api/v1/namespaces", false);
        assert_eq!(
            (l.resource.as_str(), l.verb.as_str()),
            ("namespaces", "list")
        );
        let f = parse(&Method::PUT, "/api/v1/namespaces/x/finalize", false);
        assert_eq!(
            (f.resource.as_str(), f.name.as_str(), f.subresource.as_str()),
            ("namespaces", "x", "finalize")
        );
    }

    #[test]
    fn non_resource_paths() {
        assert!(!parse(&Method::GET, "/apis", false).is_resource_request);
        assert!(!parse(&Method::GET, "/apis/g.io", false).is_resource_request);
        assert!(!parse(&Method::GET, "/apis/g.io/v1", false).is_resource_request);
        assert!(!parse(&Method::GET, "/version", false).is_resource_request);
    }
}
