//! `componentstatuses`: kube serves only get and list of them (no watch, no writes),
//! probing the components on every request (`rest::builtin::component_status`).

use super::{object_reply, read};
use crate::apiserver::ApiServer;
use crate::http::response::{Body, Reply};
use crate::http::ApiRequest;
use crate::status::{GroupResource, Status};
use http::Response;
use serde_json::json;
use std::sync::Arc;

/// Serve a request to `/api/v1/componentstatuses[/NAME]`.
pub async fn serve(api: &Arc<ApiServer>, req: &ApiRequest) -> Result<Response<Body>, Status> {
    let kind = api.component_statuses.as_ref();
    let info = &req.info;
    // `/api/v1/watch/componentstatuses`: kube registers no watch routes for them.
    let legacy_watch = info.segment(2) == Some("watch");
    if !info.subresource().is_empty() || legacy_watch {
        return Err(Status::route_not_found());
    }
    match &*info.verb {
        // `?watch=true` on an object's path reaches kube's getter, which ignores it.
        "get" | "watch" if !info.name().is_empty() => {
            let obj = kind.get(&api.store, info.name()).await.ok_or_else(|| {
                // kube names the singular resource here.
                Status::not_found(&GroupResource::new("", "componentstatus"), info.name())
            })?;
            Ok(object_reply(req, kind, Reply::ok(obj)))
        }
        "list" => {
            // Selectors are checked as kube's list handler checks them, and applied to
            // what the probes answer; limit, continue and resourceVersion mean nothing.
            let opts = read::list_options(req)?;
            let mut items = Vec::new();
            for obj in kind.list(&api.store).await {
                if api.store.matches(kind, &obj, &opts)? {
                    items.push(obj);
                }
            }
            read::list_reply(req, kind, &items, json!({}))
        }
        "watch" => Err(Status::method_not_supported(
            &GroupResource::new("", "componentstatuses"),
            "watch",
        )),
        _ => Err(Status::route_method_not_allowed()),
    }
}
