//! PUT: replace an object (or its `/status`, or a namespace's `/finalize`).

use super::{decode_object, update_or_create, write_options};
use crate::apiserver::ApiServer;
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::{object, ResourceKind};
use crate::status::Status;
use http::Response;
use std::sync::Arc;

/// Replace an object; custom resources and CRDs need `metadata.resourceVersion`. Kinds
/// whose strategy allows create on update (leases, events, RBAC) are created when
/// missing, with the URL's name and without the resourceVersion sent (kube's storage
/// ignores it on a create).
pub async fn update(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = write_options(api, req, "UpdateOptions")?;
    let body = decode_object(req, kind, &mut opts)?;
    let strategy = kind.strategy();
    let require_rv = !strategy.allow_unconditional_update();
    let may_create = strategy.allow_create_on_update() && opts.subresource.is_empty();
    let name = req.info.name();
    let build = |stored: Option<&serde_json::Value>| {
        let mut obj = body.clone();
        if stored.is_some() {
            return Ok(obj);
        }
        let body_name = object::name(&obj).to_string();
        if body_name.is_empty() {
            object::meta_mut(&mut obj).insert("name".into(), name.into());
        } else if body_name != *name {
            return Err(Status::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        object::meta_mut(&mut obj).remove("resourceVersion");
        object::ensure_namespace(&mut obj, req.info.namespace(), kind.descriptor().namespaced)?;
        Ok(obj)
    };
    update_or_create(api, req, kind, &opts, require_rv, may_create, build, |w| w).await
}
