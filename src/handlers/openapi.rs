//! `/openapi/v2`, `/openapi/v3` and `/openapi/v3/apis/{group}/{version}`, built from the
//! CRDs, with kube's ETag and caching headers.

use crate::apiserver::ApiServer;
use crate::http::response::{full, Body};
use crate::http::ApiRequest;
use crate::registry::openapi;
use crate::status::Status;
use http::{header, Response, StatusCode};
use serde_json::Value;
use std::sync::Arc;

fn document(req: &ApiRequest, doc: &Value, immutable: bool) -> Result<Response<Body>, Status> {
    let bytes = serde_json::to_vec(doc).map_err(|e| Status::internal(e.to_string()))?;
    let etag = openapi::etag(&bytes);
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
        builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "application/json")
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
    let not_found =
        || Status::not_found_message("the server could not find the requested resource");
    match parts {
        ["v2"] => document(req, &openapi::openapi_v2(&crds), false),
        ["v3"] => document(req, &openapi::openapi_v3_index(&crds), false),
        ["v3", rest @ ..] => {
            let path = rest.join("/");
            let doc = openapi::openapi_v3_path(&path, &crds).ok_or_else(not_found)?;
            document(req, &doc, req.param("hash").is_some())
        }
        _ => Err(not_found()),
    }
}
