//! The API on the wire: what a request addresses (`RequestInfo`), its query and
//! body limits, content negotiation, and how replies and `Status`es are encoded
//! (`response`: the one place a `Status` becomes an HTTP response). Serving
//! connections, authentication and dispatch are `server::gate`'s.

pub mod negotiate;
pub mod request_info;
pub mod response;

use crate::status::Status;
use crate::user::UserInfo;
use bytes::Bytes;
use http::Method;
use negotiate::Output;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Largest request body accepted (kube's `MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Largest request line plus headers, as Go's `net/http` with kube's `MaxHeaderBytes`
/// (1 MiB) and Go's 4 KiB allowance; beyond it the answer is 431.
pub const MAX_HEADER_BYTES: usize = (1 << 20) + 4096;

/// hyper's HTTP/1 read buffer bound. hyper only checks its bound on incomplete heads,
/// so heads between it and twice it may pass: it is set well above
/// [`MAX_HEADER_BYTES`] and `serve_gated` measures each head exactly.
pub const MAX_READ_BUFFER_BYTES: usize = 4 * MAX_HEADER_BYTES;

/// Most header lines in one HTTP/1 request. Go counts none, only bytes; hyper allocates
/// and fills room for this many on every request head it parses, a cost every request
/// pays: GET in `benches/wire.rs` ran at 58-60% of the floor at 2,048, 63-66% at 256
/// or 512 and 68-72% at hyper's own 100 (kept on the stack), 2026-11-26. The bound
/// stays well above what clients send (a front proxy
/// sends one `X-Remote-Group` per group; `integration/hostile.rs` sends 2,000, which Go
/// takes) but not the 262,144 four-byte lines 1 MiB could hold. Beyond it: 431.
pub const MAX_HEADERS: usize = 2048;

/// How long a client may take to send a request's headers (kube's
/// `ReadHeaderTimeout`, 32 s); then the connection is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// kube's `--request-timeout` default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What a request's method and URI address, parsed once per request: the metrics,
/// the gate and the handler share it.
pub struct Head {
    /// Query parameters (first value of each).
    pub query: HashMap<String, String>,
    /// What the path addresses (the raw path included).
    pub info: Arc<request_info::RequestInfo>,
}

impl Head {
    /// Parse `method` and `uri` as kube's request-info factory does.
    pub fn of(method: &Method, uri: &http::Uri) -> Head {
        let query = parse_query(uri.query());
        let watch = query_bool(query.get("watch").map(String::as_str));
        let info = Arc::new(request_info::parse(method, uri.path(), watch));
        Head { query, info }
    }
}

/// A parsed API request, as handlers see it.
pub struct ApiRequest {
    /// Method.
    pub method: Method,
    /// What the path addresses.
    pub info: Arc<request_info::RequestInfo>,
    /// Query parameters (first value of each).
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: http::HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// The representation the client accepts.
    pub output: Output,
    /// Who sent it.
    pub user: std::sync::Arc<UserInfo>,
}

impl ApiRequest {
    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A boolean query parameter as kube converts one (absent = false).
    pub fn param_bool(&self, name: &str) -> bool {
        query_bool(self.param(name))
    }

    /// An integer query parameter as kube converts one (`strconv.ParseInt`): `None`
    /// when absent; a 400 with Go's error when present and not an int64 (even empty).
    pub fn param_i64(&self, name: &str) -> Result<Option<i64>, Status> {
        self.param(name)
            .map(|v| go_parse_int(v).map_err(Status::bad_request))
            .transpose()
    }

    /// A header as a string.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Parse a query string into its first values (percent-decoded).
pub fn parse_query(q: Option<&str>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if let Some(q) = q {
        for pair in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.entry(percent_decode(k))
                .or_insert_with(|| percent_decode(v));
        }
    }
    out
}

/// Decode `%XX` escapes and `+` as in form-encoded queries.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Decode `%XX` escapes only (Go's `url.PathUnescape`; `+` stays).
pub fn percent_decode_path(s: &str) -> String {
    percent_decode(&s.replace('+', "%2B"))
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// A boolean query parameter as kube's `Convert_Slice_string_To_bool` reads it: once
/// present, anything but `0` and `false` (any case) is true, the empty string included.
pub fn query_bool(value: Option<&str>) -> bool {
    value.is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
}

/// Go's `strconv.ParseInt(s, 10, 64)`, with its error texts.
fn go_parse_int(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.ParseInt: parsing {}: invalid syntax",
            crate::field::go_quote(s)
        ));
    }
    s.parse::<i64>().map_err(|_| {
        format!(
            "strconv.ParseInt: parsing {}: value out of range",
            crate::field::go_quote(s)
        )
    })
}

/// kube's 413 for a body over [`MAX_BODY_BYTES`].
pub fn too_large() -> Status {
    Status::request_entity_too_large(format!("limit is {MAX_BODY_BYTES}"))
}

/// Watches are long-running (kube's `BasicLongRunningRequestCheck`: verb `watch`,
/// subresources attach/exec/proxy/log/portforward): no request timeout.
pub fn is_long_running(info: &request_info::RequestInfo) -> bool {
    matches!(&*info.verb, "watch" | "proxy")
        || matches!(
            info.subresource(),
            "attach" | "exec" | "proxy" | "log" | "portforward"
        )
}

/// The time limit of a request: `?timeout=` (a Go duration) when shorter than the
/// server's limit and positive, else the server's; kube's 400 for an invalid value.
pub fn request_timeout(query: Option<&str>, server: Duration) -> Result<Duration, Status> {
    let Some(value) = query.filter(|v| !v.is_empty()) else {
        return Ok(server);
    };
    let nanos = crate::duration::go_parse_duration(value).ok_or_else(|| {
        Status::bad_request(format!(
            "invalid timeout specified in the request URL - time: invalid duration {}",
            crate::field::go_quote(value)
        ))
    })?;
    let asked = Duration::from_nanos(nanos.max(0) as u64);
    Ok(if nanos > 0 && asked < server {
        asked
    } else {
        server
    })
}

/// kube's 504 for a request that outlived its deadline.
pub fn timed_out() -> Status {
    Status {
        code: 504,
        reason: "Timeout".into(),
        message: "Timeout: request did not complete within the allotted timeout".into(),
        details: Some(Box::default()),
        metadata_continue: None,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decoding() {
        let q = parse_query(Some(
            "labelSelector=tier+in+%28gold%29%2Cextra&limit=1&limit=2",
        ));
        assert_eq!(q["labelSelector"], "tier in (gold),extra");
        assert_eq!(q["limit"], "1");
        assert_eq!(percent_decode("a%2"), "a%2");
    }

    #[test]
    fn timeout_query_as_kube() {
        let server = Duration::from_secs(60);
        assert_eq!(request_timeout(None, server).unwrap(), server);
        assert_eq!(
            request_timeout(Some("1s"), server).unwrap(),
            Duration::from_secs(1)
        );
        // Longer than the server's limit, zero or negative: the server's limit.
        assert_eq!(request_timeout(Some("2m"), server).unwrap(), server);
        assert_eq!(request_timeout(Some("-1s"), server).unwrap(), server);
        assert_eq!(
            request_timeout(Some("abc"), server).unwrap_err().message,
            "invalid timeout specified in the request URL - time: invalid duration \"abc\""
        );
    }
}
