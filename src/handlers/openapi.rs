//! `/openapi/v2`, `/openapi/v3` and `/openapi/v3/apis/{group}/{version}`, built from the
//! CRDs, with kube's ETag and caching headers.
//!
//! These paths negotiate as kube-openapi's handlers do, not as API paths: `/openapi/v2`
//! serves JSON or gnostic's protobuf (the form kubectl asks for), a group-version
//! document JSON, the v3 index JSON whatever is asked; an `Accept` nothing matches gets
//! a bare 406.

use crate::apiserver::ApiServer;
use crate::http::response::{full, Body};
use crate::http::ApiRequest;
use crate::registry::{openapi, openapi_v2_proto};
use crate::status::Status;
use http::{header, Response, StatusCode};
use serde_json::Value;
use std::sync::Arc;

/// The protobuf media type kube answers with (kubectl asks for the `@` spelling).
pub const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTOBUF_V2_SUBTYPES: [&str; 2] = [
    "com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// The encodings of one document.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    Json,
    ProtobufV2,
}

/// kube-openapi's choice: `Accept` clauses ordered as goautoneg orders them (higher `q`
/// first, then concrete types before wildcards), each tried against the served
/// `(subtype, form)`s in order; `None` when nothing matches.
fn negotiate(accept: Option<&str>, served: &[(&str, Form)]) -> Option<Form> {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let mut clauses: Vec<(f64, &str, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let range = parts.next()?.trim();
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim() == "q")
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            match range.split_once('/') {
                Some((t, s)) => Some((q, t.trim(), s.trim())),
                None if range == "*" => Some((q, "*", "*")),
                None => None,
            }
        })
        .collect();
    clauses.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then((a.1 == "*").cmp(&(b.1 == "*")))
            .then((a.2 == "*").cmp(&(b.2 == "*")))
    });
    clauses.iter().find_map(|(_, t, s)| {
        served
            .iter()
            .find(|(sub, _)| (*t == "application" || *t == "*") && (s == sub || *s == "*"))
            .map(|(_, form)| *form)
    })
}

/// kube-openapi's 406: no body.
fn not_acceptable() -> Result<Response<Body>, Status> {
    let mut resp = bare(StatusCode::NOT_ACCEPTABLE)?;
    resp.headers_mut()
        .insert("Vary", http::HeaderValue::from_static("Accept"));
    Ok(resp)
}

/// A status without a body, as kube-openapi (406) and kube-aggregator's OpenAPI v3
/// proxier (404 for a group-version nobody serves) write them.
fn bare(code: StatusCode) -> Result<Response<Body>, Status> {
    Response::builder()
        .status(code)
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(full(""))
        .map_err(|e| Status::internal(e.to_string()))
}

/// One document in `form`; the ETag is the JSON document's in every form (the
/// response varies by `Accept`), as kube-openapi sets it.
fn document(
    req: &ApiRequest,
    doc: &Value,
    form: Form,
    immutable: bool,
) -> Result<Response<Body>, Status> {
    let json = serde_json::to_vec(doc).map_err(|e| Status::internal(e.to_string()))?;
    let etag = openapi::etag(&json);
    let cache = if immutable {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    let builder = Response::builder()
        .header(header::ETAG, &etag)
        .header(header::CACHE_CONTROL, cache)
        .header("Vary", "Accept");
    let not_modified = req
        .header("if-none-match")
        .is_some_and(|inm| inm.split(',').any(|t| t.trim() == etag));
    let resp = if not_modified {
        builder.status(StatusCode::NOT_MODIFIED).body(full(""))
    } else {
        let (content_type, bytes) = match form {
            Form::Json => ("application/json", json),
            Form::ProtobufV2 => (PROTOBUF_V2, openapi_v2_proto::encode(doc)),
        };
        builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, content_type)
            .body(full(bytes))
    };
    resp.map_err(|e| Status::internal(e.to_string()))
}

/// Serve `/openapi/...` (`parts` after `openapi`).
pub fn serve(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    parts: &[&str],
) -> Result<Response<Body>, Status> {
    let crds: Vec<_> = api.catalog.all().iter().map(|c| c.info.clone()).collect();
    let accept = req.header("accept");
    match parts {
        ["v2"] => {
            let served = [
                ("json", Form::Json),
                (PROTOBUF_V2_SUBTYPES[0], Form::ProtobufV2),
                (PROTOBUF_V2_SUBTYPES[1], Form::ProtobufV2),
            ];
            let Some(form) = negotiate(accept, &served) else {
                return not_acceptable();
            };
            document(req, &openapi::openapi_v2(&crds), form, false)
        }
        ["v3"] => document(req, &openapi::openapi_v3_index(&crds), Form::Json, false),
        ["v3", rest @ ..] => {
            let path = rest.join("/");
            let Some(doc) = openapi::openapi_v3_path(&path, &crds) else {
                return bare(StatusCode::NOT_FOUND);
            };
            if negotiate(accept, &[("json", Form::Json)]).is_none() {
                return not_acceptable();
            }
            document(req, &doc, Form::Json, req.param("hash").is_some())
        }
        _ => Err(Status::page_not_found()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V2: [(&str, Form); 3] = [
        ("json", Form::Json),
        (PROTOBUF_V2_SUBTYPES[0], Form::ProtobufV2),
        (PROTOBUF_V2_SUBTYPES[1], Form::ProtobufV2),
    ];

    #[test]
    fn kubectl_gets_protobuf_and_browsers_json() {
        let kubectl = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(negotiate(Some(kubectl), &V2), Some(Form::ProtobufV2));
        assert_eq!(
            negotiate(Some(&format!("{PROTOBUF_V2}, application/json")), &V2),
            Some(Form::ProtobufV2)
        );
        assert_eq!(negotiate(None, &V2), Some(Form::Json));
        assert_eq!(negotiate(Some("*/*"), &V2), Some(Form::Json));
        // Higher q first; concrete before wildcard.
        assert_eq!(
            negotiate(Some(&format!("application/json;q=0.5, {kubectl}")), &V2),
            Some(Form::ProtobufV2)
        );
        assert_eq!(
            negotiate(Some(&format!("*/*, {kubectl}")), &V2),
            Some(Form::ProtobufV2)
        );
        assert_eq!(negotiate(Some("application/yaml"), &V2), None);
        assert_eq!(negotiate(Some("text/html"), &V2), None);
    }
}
