//! PUT: replace an object (or its `/status`, or a namespace's `/finalize`).

use super::{authorize_create, decode_object, finish_write, write_options};
use crate::apiserver::ApiServer;
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::{object, ResourceKind};
use crate::status::Status;
use http::{Response, StatusCode};
use std::sync::Arc;

/// Replace an object; custom resources and CRDs need `metadata.resourceVersion`. Kinds
/// whose strategy allows create on update (leases, events, RBAC) are created when
/// missing: authorized and admitted as a create, answered with 201.
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
    let (ns, name) = (&req.info.namespace, &req.info.name);
    for _ in 0..2 {
        match api
            .store
            .update(kind, ns, name, &opts, require_rv, |_| Ok(body.clone()))
            .await
        {
            Ok(w) => {
                return Ok(finish_write(
                    api,
                    req,
                    kind,
                    w,
                    opts.dry_run,
                    StatusCode::OK,
                ))
            }
            Err(s) if may_create && s.code == 404 && s.reason == "NotFound" => {}
            Err(s) => return Err(s),
        }
        let mut obj = body.clone();
        let body_name = object::name(&obj).to_string();
        if body_name.is_empty() {
            object::meta_mut(&mut obj).insert("name".into(), name.as_str().into());
        } else if body_name != *name {
            return Err(Status::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        // kube's storage ignores a resourceVersion sent with an object it creates.
        object::meta_mut(&mut obj).remove("resourceVersion");
        object::ensure_namespace(&mut obj, ns, kind.descriptor().namespaced)?;
        authorize_create(api, req).await?;
        if kind.descriptor().namespaced {
            api.check_namespace(ns, &kind.descriptor().gr, name).await?;
        }
        match api.store.create(kind, obj, &opts).await {
            Ok(w) => {
                return Ok(finish_write(
                    api,
                    req,
                    kind,
                    w,
                    opts.dry_run,
                    StatusCode::CREATED,
                ))
            }
            // Someone created it meanwhile: update theirs.
            Err(s) if s.reason == "AlreadyExists" => continue,
            Err(s) => return Err(s),
        }
    }
    Err(Status::stale(&kind.descriptor().gr, name))
}
