//! Request-info parsing, as kube's `RequestInfoFactory`: which API, group, version,
//! namespace, resource, name, subresource and verb a request addresses.

use http::Method;
use std::borrow::Cow;

/// What a request path and method address. The names it finds are read from its
/// path, which is its one allocation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for `/api/...` and `/apis/...` resource requests.
    pub is_resource_request: bool,
    /// `api` or `apis` (empty for non-resource paths).
    pub api_prefix: &'static str,
    /// kube verb: get, list, watch, create, update, patch, delete, deletecollection;
    /// for a non-resource request, the method lower-cased (allocated only for a method
    /// beyond HTTP's own).
    pub verb: Cow<'static, str>,
    /// The raw path ([`RequestInfo::segments`] splits it).
    pub path: String,
    /// Where each [`Part`] is in `path` (empty when the path names none).
    spans: [Span; PARTS],
}

/// A byte range of a request's path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Span {
    start: u32,
    end: u32,
}

/// The names a resource path carries, in [`RequestInfo`]'s spans.
#[derive(Clone, Copy)]
enum Part {
    Group,
    Version,
    Namespace,
    Resource,
    Name,
    Subresource,
}

const PARTS: usize = 6;

impl RequestInfo {
    /// API group (empty for core).
    pub fn group(&self) -> &str {
        self.part(Part::Group)
    }

    /// API version.
    pub fn version(&self) -> &str {
        self.part(Part::Version)
    }

    /// Namespace, when the path names one.
    pub fn namespace(&self) -> &str {
        self.part(Part::Namespace)
    }

    /// Plural resource name.
    pub fn resource(&self) -> &str {
        self.part(Part::Resource)
    }

    /// Object name.
    pub fn name(&self) -> &str {
        self.part(Part::Name)
    }

    /// Subresource (`status`, `scale`, ...; deeper paths keep their rest, `a/b`).
    pub fn subresource(&self) -> &str {
        self.part(Part::Subresource)
    }

    fn part(&self, part: Part) -> &str {
        let Span { start, end } = self.spans[part as usize];
        self.path.get(start as usize..end as usize).unwrap_or("")
    }

    /// The path's non-empty segments.
    pub fn segments(&self) -> impl Iterator<Item = &str> {
        segments(&self.path)
    }

    /// The path's `i`th non-empty segment.
    pub fn segment(&self, i: usize) -> Option<&str> {
        self.segments().nth(i)
    }

    /// A resource request's info from its names (for tests of what reads one): the
    /// path is made of them.
    #[cfg(test)]
    pub(crate) fn of_parts(verb: &str, parts: [&str; PARTS]) -> RequestInfo {
        let mut info = RequestInfo {
            is_resource_request: true,
            verb: Cow::Owned(verb.to_string()),
            ..RequestInfo::default()
        };
        for (i, p) in parts.iter().enumerate() {
            info.path.push('/');
            let start = info.path.len() as u32;
            info.path.push_str(p);
            info.spans[i] = Span {
                start,
                end: info.path.len() as u32,
            };
        }
        info
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
/// The path is copied once; the names are ranges of it (the API prefix and, but for
/// an extension method, the verb are not allocated).
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
    let mut info = address(method, path, parts, watch);
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

/// Records where the segments of a path are, as [`RequestInfo`]'s spans.
struct Spans<'a> {
    path: &'a str,
    spans: [Span; PARTS],
}

impl Spans<'_> {
    /// `part` is `segment`, a slice of the path.
    fn set(&mut self, part: Part, segment: &str) {
        self.set_through(part, segment, segment);
    }

    /// `part` runs from the start of `first` to the end of `last`, slices of the path.
    fn set_through(&mut self, part: Part, first: &str, last: &str) {
        let base = self.path.as_ptr() as usize;
        let start = first.as_ptr() as usize - base;
        let end = last.as_ptr() as usize - base + last.len();
        self.spans[part as usize] = Span {
            start: start as u32,
            end: end as u32,
        };
    }
}

/// The fields of [`RequestInfo`] but `path`, from the path's segments (slices of
/// `path`; the verb is left empty for non-resource requests: the method,
/// lower-cased).
fn address(method: &Method, path: &str, parts: &[&str], watch: bool) -> RequestInfo {
    let mut info = RequestInfo::default();
    // Paths past 4 GiB are refused long before (the head's limit); such a path would
    // name nothing rather than wrap.
    if u32::try_from(path.len()).is_err() {
        return info;
    }
    let mut at = Spans {
        path,
        spans: Default::default(),
    };
    let mut rest: &[&str] = match parts {
        [api, version, rest @ ..] if *api == "api" => {
            info.api_prefix = "api";
            at.set(Part::Version, version);
            rest
        }
        [apis, group, version, rest @ ..] if *apis == "apis" => {
            info.api_prefix = "apis";
            at.set(Part::Group, group);
            at.set(Part::Version, version);
            rest
        }
        [apis, group] if *apis == "apis" => {
            info.api_prefix = "apis";
            at.set(Part::Group, group);
            info.spans = at.spans;
            return info;
        }
        [apis] if *apis == "apis" => {
            info.api_prefix = "apis";
            return info;
        }
        _ => return info,
    };
    if rest.is_empty() {
        info.spans = at.spans;
        return info;
    }
    let mut legacy_watch = false;
    if rest[0] == "watch" {
        legacy_watch = true;
        rest = &rest[1..];
        if rest.is_empty() {
            info.spans = at.spans;
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
            [namespaces, name, sub] if *sub == "status" || *sub == "finalize" => {
                at.set(Part::Resource, namespaces);
                at.set(Part::Name, name);
                at.set(Part::Subresource, sub);
                info.spans = at.spans;
                return finish(info, verb, legacy_watch, watch);
            }
            // `/namespaces/{name}` addresses the namespace itself.
            [namespaces, name] => {
                at.set(Part::Resource, namespaces);
                at.set(Part::Name, name);
                info.spans = at.spans;
                return finish(info, verb, legacy_watch, watch);
            }
            [_, namespace, more @ ..] => {
                at.set(Part::Namespace, namespace);
                rest = more;
            }
            _ => {}
        }
    }
    if let Some(resource) = rest.first() {
        at.set(Part::Resource, resource);
    }
    if let Some(name) = rest.get(1) {
        at.set(Part::Name, name);
    }
    // Deeper paths are not resources we serve: their rest is kept, distinguishable.
    if let (Some(first), Some(last)) = (rest.get(2), rest.last()) {
        at.set_through(Part::Subresource, first, last);
    }
    info.spans = at.spans;
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
    } else if verb == "get" && info.spans[Part::Name as usize] == Span::default() {
        "list"
    } else if verb == "delete" && info.spans[Part::Name as usize] == Span::default() {
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
        assert_eq!(i.subresource(), "a/b/c");
        // The names are ranges of the path: a deeper rest keeps its empty segments.
        let i = parse(&Method::GET, "/apis/g/v1/namespaces/n/r/x/a//b/", false);
        assert_eq!(
            (i.namespace(), i.resource(), i.name(), i.subresource()),
            ("n", "r", "x", "a//b")
        );
        let i = parse(&Method::GET, "//apis//g/v1/r", false);
        assert_eq!(
            (i.group(), i.version(), i.resource(), i.name()),
            ("g", "v1", "r", "")
        );
        assert_eq!(&*i.verb, "list");
    }

    #[test]
    fn namespaced_custom_resource() {
        let i = parse(
            &Method::GET,
            "/apis/crud.example.com/v1/namespaces/default/widgets/w1",
            false,
        );
        assert!(i.is_resource_request);
        assert_eq!((i.group(), i.version()), ("crud.example.com", "v1"));
        assert_eq!(
            (i.namespace(), i.resource(), i.name()),
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
        assert_eq!((&*s.verb, s.subresource()), ("update", "status"));
    }

    #[test]
    fn namespaces_themselves() {
        let i = parse(&Method::GET, "/api/v1/namespaces/default", false);
        assert_eq!(
            (i.resource(), i.name(), i.namespace()),
            ("namespaces", "default", "")
        );
        let l = parse(&Method::GET, "/api/v1/namespaces", false);
        assert_eq!((l.resource(), &*l.verb), ("namespaces", "list"));
        let f = parse(&Method::PUT, "/api/v1/namespaces/x/finalize", false);
        assert_eq!(
            (f.resource(), f.name(), f.subresource()),
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
