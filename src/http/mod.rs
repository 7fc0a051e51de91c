//! HTTP: parse the request (RequestInfo, query, negotiation), dispatch to a handler,
//! encode the reply. No API semantics live here.

pub mod negotiate;
pub mod request_info;
pub mod response;

use crate::apiserver::ApiServer;
use crate::handlers;
use crate::status::Status;
use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use negotiate::Output;
use response::Body;
use std::collections::HashMap;
use std::sync::Arc;

/// Largest request body accepted (kube's default is 3 MiB for most writes).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// A parsed API request, as handlers see it.
pub struct ApiRequest {
    /// Method.
    pub method: Method,
    /// What the path addresses.
    pub info: request_info::RequestInfo,
    /// Query parameters (first value of each).
    pub query: HashMap<String, String>,
    /// Request headers.
    pub headers: http::HeaderMap,
    /// The whole body.
    pub body: Bytes,
    /// The representation the client accepts.
    pub output: Output,
    /// The raw path.
    pub path: String,
}

impl ApiRequest {
    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A boolean query parameter as Go's `strconv.ParseBool` reads it (absent = false).
    pub fn param_bool(&self, name: &str) -> bool {
        matches!(
            self.param(name),
            Some("1" | "t" | "T" | "TRUE" | "true" | "True")
        )
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

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Serve one HTTP request.
pub async fn serve(api: Arc<ApiServer>, req: Request<Incoming>) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query());
    let watch = matches!(
        query.get("watch").map(String::as_str),
        Some("true") | Some("1")
    );
    let info = request_info::parse(&parts.method, &path, watch);
    let accept = parts
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let aggregated_ok =
        info.parts.len() == 1 && (info.parts[0] == "api" || info.parts[0] == "apis");
    let output = match negotiate::choose_output(accept, aggregated_ok, info.is_resource_request) {
        Some(o) => o,
        None => {
            return response::status(
                &Status::not_acceptable(negotiate::NOT_ACCEPTABLE),
                Output::Json,
            );
        }
    };
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => {
            let s = Status {
                code: 413,
                reason: "RequestEntityTooLarge".into(),
                message:
                    "the server has rejected the request because the request body is too large"
                        .into(),
                details: None,
            };
            return response::status(&s, output);
        }
    };
    let request = ApiRequest {
        method: parts.method,
        info,
        query,
        headers: parts.headers,
        body,
        output,
        path,
    };
    let started = std::time::Instant::now();
    let resp = handlers::dispatch(&api, request).await;
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        status = resp.status().as_u16(),
        "request"
    );
    resp
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
}
