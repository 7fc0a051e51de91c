//! Encoding replies: JSON or YAML bodies, `Status` errors, `Warning` headers.

use super::negotiate::{Output, NOT_ACCEPTABLE};
use crate::codec::protobuf;
use crate::status::Status;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use serde_json::Value;
use std::convert::Infallible;

/// The response body type used everywhere (full or streaming).
pub type Body = BoxBody<Bytes, Infallible>;

/// A whole body from bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// What a handler answers, before encoding.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub code: StatusCode,
    /// The object to encode.
    pub body: Value,
    /// `Warning` texts.
    pub warnings: Vec<String>,
    /// Pipeline trace lines (sent as `X-Pipeline-Trace` when asked for).
    pub trace: Vec<String>,
}

impl Reply {
    /// 200 with `body`.
    pub fn ok(body: Value) -> Self {
        Reply {
            code: StatusCode::OK,
            body,
            warnings: Vec::new(),
            trace: Vec::new(),
        }
    }

    /// `code` with `body`.
    pub fn with_code(code: StatusCode, body: Value) -> Self {
        Reply {
            code,
            body,
            warnings: Vec::new(),
            trace: Vec::new(),
        }
    }
}

/// Encode a value as JSON, YAML or (kinds that have a message) protobuf.
pub fn encode_value(value: &Value, output: Output) -> (Vec<u8>, &'static str) {
    match output {
        Output::Protobuf(_) if protobuf_kind(value) => (
            protobuf::encode(value).unwrap_or_default(),
            protobuf::MEDIA_TYPE,
        ),
        Output::Yaml => (
            serde_norway::to_string(value)
                .unwrap_or_default()
                .into_bytes(),
            "application/yaml",
        ),
        _ => {
            let mut bytes = serde_json::to_vec(value).unwrap_or_default();
            bytes.push(b'\n');
            (bytes, "application/json")
        }
    }
}

/// The `Warning` header value kube sends: `299 - "<text>"`, escaping only `"` and `\`
/// (kube's `makeQuotedString`); line breaks become spaces, as Go's HTTP server writes them.
pub fn warning_header(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '\n' | '\r' => quoted.push(' '),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    format!("299 - {quoted}")
}

/// Whether `value`'s `apiVersion`/`kind` has a protobuf form.
pub fn protobuf_kind(value: &Value) -> bool {
    let field = |k| value.get(k).and_then(Value::as_str).unwrap_or("");
    protobuf::is_registered(field("apiVersion"), field("kind"))
}

/// Build the HTTP response for a reply.
pub fn reply(r: Reply, output: Output) -> Response<Body> {
    if output == Output::Protobuf(false) && !protobuf_kind(&r.body) {
        // Only protobuf accepted, for a kind without it (a custom resource).
        return status(&Status::not_acceptable(NOT_ACCEPTABLE), Output::Json);
    }
    let (bytes, content_type) = encode_value(&r.body, output);
    let mut resp = Response::new(full(bytes));
    *resp.status_mut() = r.code;
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    with_headers(resp, &r.warnings, &r.trace)
}

/// `resp` with a reply's `Warning` headers (each text once) and its pipeline trace.
pub fn with_headers(
    mut resp: Response<Body>,
    warnings: &[String],
    trace: &[String],
) -> Response<Body> {
    let headers = resp.headers_mut();
    for w in dedup(warnings) {
        if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
            headers.append("Warning", v);
        }
    }
    if !trace.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&trace.join("; ")) {
            headers.insert("X-Pipeline-Trace", v);
        }
    }
    resp
}

/// A JSON reply of bytes encoded already (as [`encode_value`] encodes for
/// `Output::Json`), with the headers [`reply`] sends.
pub fn json_bytes(code: StatusCode, bytes: Bytes) -> Response<Body> {
    let mut resp = Response::new(full(bytes));
    *resp.status_mut() = code;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

fn dedup(warnings: &[String]) -> Vec<&String> {
    let mut seen = std::collections::HashSet::new();
    warnings
        .iter()
        .filter(|w| seen.insert(w.as_str()))
        .collect()
}

/// The error response for a `Status` (always JSON unless YAML was asked for).
pub fn status(s: &Status, output: Output) -> Response<Body> {
    if s.is_page_not_found() {
        // Go's `http.NotFound`, behind kube's cache-control filter.
        let mut r = text(StatusCode::NOT_FOUND, format!("{}\n", s.message));
        r.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, private"),
        );
        return r;
    }
    let output = match output {
        Output::Yaml => Output::Yaml,
        Output::Protobuf(_) => Output::Protobuf(true),
        _ => Output::Json,
    };
    let code = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = if output == Output::Json {
        // Serialised from the struct, so the fields come in kube's order.
        let mut bytes = serde_json::to_vec(s).unwrap_or_default();
        bytes.push(b'\n');
        Response::builder()
            .status(code)
            .header(header::CONTENT_TYPE, "application/json")
            .header("Cache-Control", "no-cache, private")
            .body(full(bytes))
            .unwrap_or_else(|_| Response::new(full("")))
    } else {
        reply(Reply::with_code(code, s.to_json()), output)
    };
    for w in dedup(&s.warnings) {
        if let Ok(v) = HeaderValue::from_str(&warning_header(w)) {
            r.headers_mut().append("Warning", v);
        }
    }
    if let Some(secs) = s.details.as_ref().and_then(|d| d.retry_after_seconds) {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            r.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    r
}

/// A plain-text response (health checks).
pub fn text(code: StatusCode, body: impl Into<String>) -> Response<Body> {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
        .header("X-Content-Type-Options", "nosniff")
        .body(full(body.into()))
        .unwrap_or_else(|_| Response::new(full("")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_quote_like_kube() {
        assert_eq!(
            warning_header("unknown field \"spec.x\""),
            "299 - \"unknown field \\\"spec.x\\\"\""
        );
        assert_eq!(warning_header("a\nb é"), "299 - \"a b é\"");
    }

    #[test]
    fn status_responses_carry_the_code() {
        let r = status(&Status::bad_request("nope"), Output::Json);
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/json");
    }
}
