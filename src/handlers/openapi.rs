//! `/openapi/v2`, `/openapi/v3` and `/openapi/v3/apis/{group}/{version}` with kube's
//! ETag and caching headers (a `?hash=` that is not the document's redirects to the
//! current one).
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
use bytes::Bytes;
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

/// How a response may be cached.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Caching {
    /// The generic API server's default.
    NoCache,
    /// A `?hash=` that is the document's: cached for a year, as kube-openapi allows.
    Immutable,
}

/// One document: `json` is its JSON bytes (whose [`openapi::hash`] is `hash` and makes
/// the ETag in every form, the response varying by `Accept`, as kube-openapi sets it);
/// `body` the bytes of the negotiated form.
fn document(
    req: &ApiRequest,
    hash: &str,
    content_type: &str,
    body: Bytes,
    caching: Caching,
) -> Result<Response<Body>, Status> {
    let etag = openapi::etag(hash);
    let mut builder = Response::builder()
        .header(header::ETAG, &etag)
        .header("Vary", "Accept");
    builder = match caching {
        Caching::NoCache => builder.header(header::CACHE_CONTROL, "no-cache, private"),
        Caching::Immutable => builder
            .header(header::CACHE_CONTROL, "public, immutable")
            .header(header::EXPIRES, a_year_from_now()),
    };
    let not_modified = req
        .header("if-none-match")
        .is_some_and(|inm| inm.split(',').any(|t| t.trim() == etag));
    let resp = if not_modified {
        builder.status(StatusCode::NOT_MODIFIED).body(full(""))
    } else {
        builder
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, content_type)
            .body(full(body))
    };
    resp.map_err(|e| Status::internal(e.to_string()))
}

/// Go's `time.RFC1123` of now plus one year (kube-openapi's `Expires`).
fn a_year_from_now() -> String {
    let now = chrono::Utc::now();
    now.checked_add_months(chrono::Months::new(12))
        .unwrap_or(now)
        .format("%a, %d %b %Y %H:%M:%S UTC")
        .to_string()
}

/// kube-openapi's answer to a `?hash=` that is not the document's: a redirect to the
/// current one, with no body (Go's `http.Redirect` after the JSON `Content-Type` is set).
fn moved(gv: &str, hash: &str) -> Result<Response<Body>, Status> {
    Response::builder()
        .status(StatusCode::MOVED_PERMANENTLY)
        .header(header::LOCATION, format!("/openapi/v3/{gv}?hash={hash}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-cache, private")
        .header(header::ETAG, format!("\"{hash}\""))
        .header("Vary", "Accept")
        .body(full(""))
        .map_err(|e| Status::internal(e.to_string()))
}

fn json_bytes(doc: &Value) -> Result<Bytes, Status> {
    serde_json::to_vec(doc)
        .map(Bytes::from)
        .map_err(|e| Status::internal(e.to_string()))
}

/// Serve `/openapi/...` (`parts` after `openapi`).
pub fn serve(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    parts: &[&str],
) -> Result<Response<Body>, Status> {
    // The generation first: a document kept under it is made from CRDs at least as new.
    let generation = api.catalog.generation();
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
            let doc = api.openapi.v2(generation, || {
                openapi::openapi_v2(&api.options.served, &api.catalog.infos())
            });
            let (content_type, body) = match form {
                Form::Json => ("application/json", doc.bytes),
                Form::ProtobufV2 => {
                    let value: Value = crate::codec::decode_stored_json(&doc.bytes)
                        .map_err(|e| Status::internal(e.to_string()))?;
                    (PROTOBUF_V2, Bytes::from(openapi_v2_proto::encode(&value)))
                }
            };
            document(req, &doc.hash, content_type, body, Caching::NoCache)
        }
        ["v3"] => {
            let index = api
                .openapi
                .v3_index(generation, &api.options.served, &api.catalog.infos());
            let mut index = Value::clone(&index);
            // The backends' group-versions, at the URLs their backends give.
            for backend in api.aggregator.backends().values() {
                let Some(url) = &backend.openapi_url else {
                    continue;
                };
                if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
                    let key = format!("apis/{}/{}", backend.group, backend.version);
                    paths.insert(key, serde_json::json!({"serverRelativeURL": url}));
                }
            }
            let json = json_bytes(&index)?;
            let hash = openapi::hash(&json);
            document(req, &hash, "application/json", json, Caching::NoCache)
        }
        ["v3", rest @ ..] => {
            let gv = rest.join("/");
            let doc = api
                .openapi
                .v3_path(&api.options.served, &gv, &api.catalog.infos());
            let Some(doc) = doc else {
                return bare(StatusCode::NOT_FOUND);
            };
            if negotiate(accept, &[("json", Form::Json)]).is_none() {
                return not_acceptable();
            }
            let caching = match req.param("hash").filter(|h| !h.is_empty()) {
                Some(h) if h != doc.hash => return moved(&gv, &doc.hash),
                Some(_) => Caching::Immutable,
                None => Caching::NoCache,
            };
            document(req, &doc.hash, "application/json", doc.bytes, caching)
        }
        _ => Err(Status::page_not_found()),
    }
}

/// `/openapi/v3/apis/<group>/<version>` of a remote group-version: the backend's
/// answer, fetched as the aggregator itself (`Accept`, `If-None-Match` and the query
/// passed on).
pub async fn from_backend(
    api: &ApiServer,
    req: &ApiRequest,
    backend: &crate::aggregator::Backend,
) -> Response<Body> {
    use crate::aggregator::availability::AGGREGATOR_USER;
    let mut uri = req.info.path.clone();
    let query: Vec<String> = req
        .query
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    if !query.is_empty() {
        uri = format!("{uri}?{}", query.join("&"));
    }
    let mut builder = http::Request::get(uri);
    for name in [header::ACCEPT, header::IF_NONE_MATCH] {
        if let Some(v) = req.headers.get(&name) {
            builder = builder.header(name, v);
        }
    }
    let parts = match builder.body(()) {
        Ok(r) => r.into_parts().0,
        Err(e) => {
            return crate::http::response::status(
                &Status::bad_request(e.to_string()),
                crate::http::negotiate::Output::Json,
            )
        }
    };
    let user = crate::auth::UserInfo {
        username: AGGREGATOR_USER.0.into(),
        groups: vec![AGGREGATOR_USER.1.into()],
        ..Default::default()
    };
    let forward = crate::aggregator::proxy::Forward {
        parts: &parts,
        body: Bytes::new(),
        user: &user,
        discovery: false,
    };
    api.aggregator.forward(backend, forward).await
}

/// A query part percent-encoded (unreserved characters kept).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
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
