//! Request-info parsing, as kube's `RequestInfoFactory`: which API, group, version,
//! namespace, resource, name, subresource and verb a request addresses.

use http::Method;
use std::borrow::Cow;

/// What a request path and method address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for `/api/...` and `/apis/...` resource requests.
    pub is_resource_request: bool,
    /// `api` or `apis` (empty for non-resource paths).
    pub api_prefix: &'static str,
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
    /// kube verb: get, list, watch, create, update, patch, delete, deletecollection;
    /// for a non-resource request, the method lower-cased (allocated only for a method
    /// beyond HTTP's own).
    pub verb: Cow<'static, str>,
    /// The raw path ([`RequestInfo::segments`] splits it).
    pub path: String,
}

impl RequestInfo {
    /// The path's non-empty segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        segments(&self.path)
    }

    /// The path's `i`th non-empty segment.
    pub fn segment(&self, i: usize) -> Option<&str> {
        self.segments().nth(i)
    }
}

/// The non-empty segments of a path.
fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

/// The non-empty segments of `path` written into `out`, and how many there are;
/// `None` when there are more than `out` holds.
fn split_segments<'a>(path: &'a str, out: &mut [&'a str]) -> Option<usize> {
    let bytes = path.as_bytes();
    let mut n = 0;
    let mut start = 0;
    // The end of the path ends the last segment as a slash would.
    for i in 0..=bytes.len() {
        if i < bytes.len() && bytes[i] != b'/' {
            continue;
        }
        if i > start {
            *out.get_mut(n)? = &path[start..i];
            n += 1;
        }
        start = i + 1;
    }
    Some(n)
}

/// Parse a request as kube does. `watch` is the value of the `watch` query parameter.
/// Every request is parsed so: each field is allocated once, from the path's segments
/// (the API prefix and, but for an extension method, the verb are not allocated).
pub fn parse(method: &Method, path: &str, watch: bool) -> RequestInfo {
    // Every request's path is parsed: its segments go on the stack (API paths have at
    // most 8), a longer path's into a Vec.
    let mut short = [""; 8];
    let longer: Vec<&str>;
    let parts: &[&str] = match split_segments(path, &mut short) {
        Some(n) => &short[..n],
        None => {
            longer = segments(path).collect();
            &longer
        }
    };
    let mut info = address(method, parts, watch);
    if info.verb.is_empty() && !info.is_resource_request {
        info.verb = lower_method(method);
    }
    info.path = path.to_string();
    info
}

/// kube's verb of a non-resource request: the method, lower-cased.
fn lower_method(method: &Method) -> Cow<'static, str> {
    Cow::Borrowed(match *method {
        Method::GET => "get",
        Method::POST => "post",
        Method::PUT => "put",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        Method::HEAD => "head",
        Method::OPTIONS => "options",
        Method::CONNECT => "connect",
        Method::TRACE => "trace",
        _ => return Cow::Owned(method.as_str().to_lowercase()),
    })
}

/// The fields of [`RequestInfo`] but `path`, from the path's segments (the verb is
/// left empty for non-resource requests: the method, lower-cased).
fn address(method: &Method, parts: &[&str], watch: bool) -> RequestInfo {
    let mut info = RequestInfo::default();
    let mut rest: &[&str] = match parts {
        [api, version, rest @ ..] if *api == "api" => {
            info.api_prefix = "api";
            info.version = version.to_string();
            rest
        }
        [apis, group, version, rest @ ..] if *apis == "apis" => {
            info.api_prefix = "apis";
            info.group = group.to_string();
            info.version = version.to_string();
            rest
        }
        [apis, group] if *apis == "apis" => {
            info.api_prefix = "apis";
            info.group = group.to_string();
            return info;
        }
        [apis] if *apis == "apis" => {
            info.api_prefix = "apis";
            return info;
        }
        _ => return info,
    };
    if rest.is_empty() {
        return info;
    }
    let mut legacy_watch = false;
    if rest[0] == "watch" {
        legacy_watch = true;
        rest = &rest[1..];
        if rest.is_empty() {
            return info;
        }
    }
    info.is_resource_request = true;
    let verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    };
    if rest[0] == "namespaces" {
        match rest {
            [_, name, sub] if *sub == "status" || *sub == "finalize" => {
                info.resource = "namespaces".into();
                info.name = name.to_string();
                info.subresource = sub.to_string();
                return finish(info, verb, legacy_watch, watch);
            }
            // `/namespaces/{name}` addresses the namespace itself.
            [_, name] => {
                info.resource = "namespaces".into();
                info.name = name.to_string();
                return finish(info, verb, legacy_watch, watch);
            }
            [_, namespace, more @ ..] => {
                info.namespace = namespace.to_string();
                rest = more;
            }
            _ => {}
        }
    }
    if let Some(resource) = rest.first() {
        info.resource = resource.to_string();
    }
    if let Some(name) = rest.get(1) {
        info.name = name.to_string();
    }
    match rest.len() {
        3 => info.subresource = rest[2].to_string(),
        // Deeper paths are not resources we serve; keep them distinguishable.
        n if n > 3 => info.subresource = rest[2..].join("/"),
        _ => {}
    }
    finish(info, verb, legacy_watch, watch)
}

fn finish(
    mut info: RequestInfo,
    verb: &'static str,
    legacy_watch: bool,
    watch: bool,
) -> RequestInfo {
    let verb = if legacy_watch || (watch && verb == "get") {
        "watch"
    } else if verb == "get" && info.name.is_empty() {
        "list"
    } else if verb == "delete" && info.name.is_empty() {
        "deletecollection"
    } else {
        verb
    };
    info.verb = Cow::Borrowed(verb);
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_split_on_the_stack_as_they_split_into_a_vec() {
        for path in [
            "",
            "/",
            "//",
            "/api",
            "/apis/g/v1/namespaces/ns/widgets/w1/status",
            "a/b",
            "/a//b/",
            "/é/ü//ß",
            "/1/2/3/4/5/6/7/8",
            "/1/2/3/4/5/6/7/8/",
        ] {
            let mut out = [""; 8];
            let n = split_segments(path, &mut out).expect(path);
            assert_eq!(&out[..n], segments(path).collect::<Vec<_>>(), "{path}");
        }
        assert_eq!(split_segments("/1/2/3/4/5/6/7/8/9", &mut [""; 8]), None);
        // A longer path still parses (its segments in a Vec).
        let i = parse(&Method::GET, "/apis/g/v1/namespaces/n/r/x/a/b/c", false);
        assert_eq!(i.subresource, "a/b/c");
    }

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
        assert_eq!((&*s.verb, s.subresource.as_str()), ("update", "status"));
    }

    #[test]
    fn namespaces_themselves() {
        let i = parse(&Method::GET, "/api/v1/namespaces/default", false);
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.namespace.as_str()),
            ("namespaces", "default", "")
        );
        let l = parse(&Method::GET, "/api/v1/namespaces", false);
        assert_eq!((l.resource.as_str(), &*l.verb), ("namespaces", "list"));
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

    #[test]
    fn non_resource_verbs_are_the_method_lower_cased() {
        let verb = |method: &[u8]| {
            let method = Method::from_bytes(method).expect("method");
            parse(&method, "/healthz", false).verb.into_owned()
        };
        assert_eq!(verb(b"GET"), "get");
        assert_eq!(verb(b"POST"), "post");
        assert_eq!(verb(b"OPTIONS"), "options");
        // Extension methods as Go's strings.ToLower makes them.
        assert_eq!(verb(b"PROPFIND"), "propfind");
        assert_eq!(verb(b"Fetch"), "fetch");
        assert_eq!(parse(&Method::GET, "/apis", false).api_prefix, "apis");
        assert_eq!(parse(&Method::GET, "/version", false).api_prefix, "");
    }
}
