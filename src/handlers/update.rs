//! PUT: replace an object (or its `/status`, or a namespace's `/finalize`).

use super::{decode_object, finish_write, write_options};
use crate::apiserver::ApiServer;
use crate::http::response::Body;
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
    let require_rv = !kind.strategy().allow_unconditional_update();
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
    Ok(finish_write(
        api,
        req,
        kind,
        w,
        opts.dry_run,
        http::StatusCode::OK,
    ))
}
