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
    object::ensure_namespace(&mut obj, req.info.namespace(), d.namespaced)?;
    if let Some(crd) = api.catalog.lookup(&d.gr.group, &d.gr.resource) {
        if crd.terminating {
            return Err(Status::method_not_allowed(
                "create not allowed while custom resource definition is terminating",
            ));
        }
    }
    if d.namespaced {
        api.check_namespace(req.info.namespace(), &d.gr, object::name(&obj))
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
    object::ensure_namespace(&mut obj, req.info.namespace(), d.namespaced)?;
    let answer = crate::rest::access_review::review(
        review,
        &obj,
        &req.user,
        req.info.namespace(),
        api.authorizer.as_ref(),
    )
    .await?;
    let reply = crate::http::response::Reply::with_code(StatusCode::CREATED, answer);
    Ok(super::object_reply(req, kind, reply))
}

/// `POST serviceaccounts/NAME/token`: a TokenRequest, answered with a signed token and
/// never stored.
pub async fn service_account_token(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = write_options(api, req, "CreateOptions")?;
    let obj = decode_object(req, kind, &mut opts)?;
    let Some(tokens) = api.options.service_account_tokens.as_deref() else {
        return Err(Status::route_not_found());
    };
    let core = |resource| {
        api.builtin("", "v1", resource)
            .ok_or_else(|| Status::internal(format!("{resource} is not served")))
    };
    let objects = crate::rest::builtin::token_request::Objects {
        store: &api.store,
        service_accounts: core("serviceaccounts")?,
        secrets: core("secrets")?,
    };
    let answer = crate::rest::builtin::token_request::create(
        &objects,
        tokens,
        req.info.namespace(),
        req.info.name(),
        obj,
        chrono::Utc::now(),
    )
    .await?;
    let reply = crate::http::response::Reply::with_code(StatusCode::CREATED, answer);
    Ok(crate::http::response::reply(reply, req.output))
}

/// Answer a TokenReview or SelfSubjectReview (`authentication.k8s.io`): decoded as a
/// create, never stored.
pub async fn authentication_review(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    review: crate::rest::builtin::token_review::Review,
) -> Result<Response<Body>, Status> {
    use crate::rest::builtin::token_review::{self, Review};
    let mut opts = write_options(api, req, "CreateOptions")?;
    let obj = decode_object(req, kind, &mut opts)?;
    let answer = match review {
        Review::SelfSubject => token_review::self_subject(&req.user, chrono::Utc::now()),
        Review::Token => {
            let Some(authenticator) = api.token_authenticator() else {
                return Err(Status::route_not_found());
            };
            let static_tokens = api.options.token_file.as_deref();
            token_review::token(&obj, req.info.namespace(), &authenticator, static_tokens).await?
        }
    };
    let reply = crate::http::response::Reply::with_code(StatusCode::CREATED, answer);
    Ok(super::object_reply(req, kind, reply))
}
