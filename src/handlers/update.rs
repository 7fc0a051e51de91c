//! PUT: replace an object (or its `/status`, or a namespace's `/finalize`).

use super::{decode_object, log_trace, object_reply, write_options};
use crate::apiserver::ApiServer;
use crate::http::response::{Body, Reply};
use crate::http::ApiRequest;
use crate::rest::ResourceKind;
use crate::status::Status;
use http::Response;
use std::sync::Arc;

/// Replace an object; custom resources and CRDs need `metadata.resourceVersion`.
pub async fn update(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = write_options(api, req, "UpdateOptions")?;
    let body = decode_object(req, kind, &mut opts)?;
    let require_rv = !kind.allow_unconditional_update();
    let w = api
        .store
        .update(
            kind,
            &req.info.namespace,
            &req.info.name,
            &opts,
            require_rv,
            |_| Ok(body.clone()),
        )
        .await?;
    log_trace(api, req, &w.trace);
    if !opts.dry_run {
        api.after_write(kind.descriptor(), &w.object, w.deleted);
    }
    let mut reply = Reply::ok(w.object);
    reply.warnings = w.warnings;
    reply.trace = w.trace;
    Ok(object_reply(req, kind, reply))
}
