//! `/admin/snapshots`: snapshots over HTTP (`crate::snapshots`), for any language.
//! Authorized as kube authorizes non-resource URLs (the gate runs first): under RBAC
//! only users granted `/admin/*` (`system:masters` among them) reach these.
//!
//! - `GET /admin/snapshots`: the snapshots, by name;
//! - `POST /admin/snapshots?name=N`: take one (201);
//! - `POST /admin/snapshots/N/restore`: put the server back to it;
//! - `POST /admin/snapshots/N/fork`: start a server from it (201, its URL and a
//!   kubeconfig).

use std::sync::Arc;

use http::{Method, Response, StatusCode};
use serde_json::{json, Value};

use crate::apiserver::ApiServer;
use crate::http::negotiate::Output;
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::status::Status;

/// Serves `parts` (the path below `/admin/snapshots`).
pub async fn snapshots(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    parts: &[&str],
) -> Result<Response<Body>, Status> {
    let snapshots = api
        .snapshots
        .get()
        .cloned()
        .ok_or_else(|| Status::from(crate::snapshots::SnapshotError::NotEmbedded))?;
    let (code, body): (StatusCode, Value) = match (&req.method, parts) {
        (&Method::GET, []) => {
            let items: Vec<Value> = snapshots
                .list()?
                .into_iter()
                .map(|(name, rv)| json!({"name": name, "resourceVersion": rv.to_string()}))
                .collect();
            (StatusCode::OK, json!({"snapshots": items}))
        }
        (&Method::POST, []) => {
            let name = req.param("name").unwrap_or("");
            let rv = snapshots.take(name)?;
            (
                StatusCode::CREATED,
                json!({"name": name, "resourceVersion": rv.to_string()}),
            )
        }
        (&Method::POST, [name, "restore"]) => {
            let restored = snapshots.restore(name, |change| api.written_behind(change))?;
            (
                StatusCode::OK,
                json!({
                    "name": name,
                    "written": restored.written,
                    "resourceVersion": restored.revision.to_string(),
                }),
            )
        }
        (&Method::POST, [name, "fork"]) => {
            let (url, kubeconfig) = snapshots.fork(name).await?;
            (
                StatusCode::CREATED,
                json!({"name": name, "url": url, "kubeconfig": kubeconfig}),
            )
        }
        (_, [] | [_, "restore" | "fork"]) => {
            return Err(Status::method_not_allowed(format!(
                "{} is not supported on /admin/snapshots{}",
                req.method,
                parts.iter().map(|p| format!("/{p}")).collect::<String>()
            )))
        }
        _ => return Err(Status::page_not_found()),
    };
    let mut reply = Reply::ok(body);
    reply.code = code;
    Ok(response::reply(reply, Output::Json))
}
