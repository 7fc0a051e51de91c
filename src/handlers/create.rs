//! POST: create an object.

use super::{decode_object, finish_write, write_options};
use crate::apiserver::ApiServer;
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::{object, ResourceKind};
use crate::status::Status;
use http::{Response, StatusCode};
use std::sync::Arc;

/// Create an object in the request's namespace.
pub async fn create(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let d = kind.descriptor();
    let mut opts = write_options(api, req, "CreateOptions")?;
    let mut obj = decode_object(req, kind, &mut opts)?;
    object::ensure_namespace(&mut obj, &req.info.namespace, d.namespaced)?;
    if let Some(crd) = api.catalog.lookup(&d.gr.group, &d.gr.resource) {
        if crd.terminating {
            return Err(Status::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
    }
    if d.namespaced {
        api.check_namespace(&req.info.namespace, &d.gr, object::name(&obj))
            .await?;
    }
    let w = api.store.create(kind, obj, &opts).await?;
    Ok(finish_write(
        api,
        req,
        kind,
        w,
        opts.dry_run,
        StatusCode::CREATED,
    ))
}

/// Answer an access review (`authorization.k8s.io`): decoded as a create, judged by the
/// server's authorizer, never stored.
pub async fn access_review(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    review: crate::rest::access_review::Review,
) -> Result<Response<Body>, Status> {
    let d = kind.descriptor();
    let mut opts = write_options(api, req, "CreateOptions")?;
    let mut obj = decode_object(req, kind, &mut opts)?;
    object::ensure_namespace(&mut obj, &req.info.namespace, d.namespaced)?;
    let answer = crate::rest::access_review::review(
        review,
        &obj,
        &req.user,
        &req.info.namespace,
        api.authorizer.as_ref(),
    )
    .await?;
    let reply = crate::http::response::Reply::with_code(StatusCode::CREATED, answer);
    Ok(super::object_reply(req, kind, reply))
}
