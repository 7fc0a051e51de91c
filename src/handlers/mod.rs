//! Handlers: one file per verb family, each a short script over the REST layer.
//! `dispatch` routes a parsed request to the right one.

pub mod admin;
pub mod binding;
pub mod component_status;
pub mod create;
pub mod delete;
pub mod discovery;
pub mod openapi;
pub mod patch;
pub mod read;
pub mod scale;
pub mod update;
pub mod watch;

use crate::apiserver::{ApiServer, Resolved};
use crate::apply;
use crate::codec;
use crate::field::{Error as FieldError, Path};
use crate::http::negotiate::{body_type, BodyType, Output};
use crate::http::request_info::RequestInfo;
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::rest::store::Written;
use crate::rest::{FieldValidation, ResourceKind, WriteOptions};
use crate::status::{GroupResource, Status};
use http::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// What a resource request resolved to: its kind, or kube's 404.
pub type Resolution = Result<Resolved, Status>;

/// What the resource request `info` resolves to (`None` for other requests).
pub fn resolve(api: &ApiServer, info: &RequestInfo) -> Option<Resolution> {
    info.is_resource_request
        .then(|| api.resolve(info.group(), info.version(), info.resource()))
}

/// Route a request and encode whatever comes back.
pub async fn dispatch(api: &Arc<ApiServer>, req: &ApiRequest) -> Response<Body> {
    dispatch_resolved(api, req, None).await
}

/// [`dispatch`] of a request whose kind the caller resolved already (with
/// [`resolve`], for its metrics); resolved here when it did not.
pub async fn dispatch_resolved(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolution: Option<Resolution>,
) -> Response<Body> {
    let output = req.output;
    // Resolved once: the handler's kind and the deprecation warning's version.
    let resolved = resolution.or_else(|| resolve(api, &req.info));
    let result = match &resolved {
        Some(resolved) => resource(api, req, resolved).await,
        None => Box::pin(discovery::non_resource(api, req)).await,
    };
    let mut resp = match result {
        Ok(r) => r,
        Err(s) => response::status(&s, output),
    };
    // kube warns on every request to a deprecated version, whatever its outcome.
    if let Some(w) = resolved.as_ref().and_then(|r| deprecation_warning(req, r)) {
        prepend_warning(&mut resp, &w);
    }
    resp
}

/// The deprecation warning of the built-in resource or served CRD version a resource
/// request addresses.
fn deprecation_warning(req: &ApiRequest, resolved: &Result<Resolved, Status>) -> Option<String> {
    let info = &req.info;
    if let Some(w) =
        crate::registry::builtin::deprecation_warning(info.group(), info.version(), info.resource())
    {
        return Some(w.to_string());
    }
    match resolved {
        Ok(Resolved::Custom(kind)) => kind.deprecation_warning().map(str::to_string),
        _ => None,
    }
}

/// Put `text` first among the `Warning` headers (kube records it before the handler
/// runs), without repeating it.
fn prepend_warning(resp: &mut Response<Body>, text: &str) {
    let Ok(value) = http::HeaderValue::from_bytes(response::warning_header(text).as_bytes()) else {
        return;
    };
    let headers = resp.headers_mut();
    let others: Vec<http::HeaderValue> = headers
        .get_all("warning")
        .iter()
        .filter(|v| **v != value)
        .cloned()
        .collect();
    headers.remove("warning");
    headers.append("warning", value);
    for v in others {
        headers.append("warning", v);
    }
}

/// A path kube routes nowhere: below a built-in group go-restful answers (a 404 Status
/// with empty details), in a CRD group the crdHandler hands it to the NotFound handler.
fn unrouted(builtin: bool) -> Status {
    if builtin {
        Status::route_not_found()
    } else {
        Status::page_not_found()
    }
}

/// A verb the addressed path does not serve: go-restful's 405 for built-in kinds, the
/// crdHandler's `NewMethodNotSupported` for custom resources.
fn method_not_allowed(builtin: bool, gr: &GroupResource, verb: &str) -> Status {
    if builtin {
        Status::route_method_not_allowed()
    } else {
        Status::method_not_supported(gr, verb)
    }
}

async fn resource(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Result<Resolved, Status>,
) -> Result<Response<Body>, Status> {
    let info = &req.info;
    // `bindings` (nothing is stored): a pod's binding, the pod named by the body.
    if info.group().is_empty()
        && info.version() == "v1"
        && info.resource() == "bindings"
        && !info.namespace().is_empty()
        && info.name().is_empty()
        && info.verb == "create"
    {
        let pods = api
            .builtin("", "v1", "pods")
            .ok_or_else(Status::route_not_found)?;
        return Box::pin(binding::bind(api, req, pods.as_ref())).await;
    }
    let resolved = resolved.as_ref().map_err(Clone::clone)?;
    let kind = resolved.kind();
    let d = kind.descriptor();
    let builtin = matches!(resolved, Resolved::Builtin(_));
    let verb = &*info.verb;
    // Cluster-scoped kinds addressed under a namespace do not exist.
    if !d.namespaced && !info.namespace().is_empty() {
        return Err(unrouted(builtin));
    }
    // A namespaced kind's path without a namespace lists and watches only. go-restful
    // knows the collection path (so other methods there are 405) when it lists.
    if d.namespaced && info.namespace().is_empty() && !matches!(verb, "list" | "watch") {
        let collection = info.name().is_empty()
            && info.subresource().is_empty()
            && crate::registry::builtin::lookup(info.group(), info.version(), info.resource())
                .is_some_and(|r| r.has_verb("list"));
        return Err(if builtin && collection {
            Status::route_method_not_allowed()
        } else {
            unrouted(builtin)
        });
    }
    let sub = info.subresource();
    // Component statuses are probed, never stored: get and list only.
    if builtin && d.gr.group.is_empty() && d.gr.resource == "componentstatuses" {
        return Box::pin(component_status::serve(api, req)).await;
    }
    // Access reviews are answered, never stored: create is their only verb.
    if let Some(review) = crate::rest::access_review::Review::of(&d.gr) {
        return match (verb, sub) {
            ("create", "") if info.name().is_empty() => {
                Box::pin(create::access_review(api, req, kind, review)).await
            }
            _ => Err(Status::route_method_not_allowed()),
        };
    }
    // TokenReviews and SelfSubjectReviews too.
    if let Some(review) = crate::rest::builtin::token_review::Review::of(&d.gr) {
        return match (verb, sub) {
            ("create", "") if info.name().is_empty() => {
                Box::pin(create::authentication_review(api, req, kind, review)).await
            }
            _ => Err(Status::route_method_not_allowed()),
        };
    }
    let status_ok = d.status_subresource;
    let scale_ok = scale::ScaleTarget::of(resolved).is_some();
    let part = crate::pipeline::subresource::Part::of(&d.gr.group, &d.gr.resource, sub)
        .filter(|_| builtin);
    let is_pods = builtin && d.gr.group.is_empty() && d.gr.resource == "pods";
    match (verb, sub) {
        ("get", "") => read::get(api, req, kind).await,
        ("list", "") => Box::pin(read::list(api, req, kind)).await,
        ("watch", "") => Box::pin(watch::watch(api, req, kind)).await,
        ("create", "") if info.name().is_empty() => Box::pin(create::create(api, req, kind)).await,
        // kube's custom resource handler takes a POST to an object's path as a create
        // of the body (the name in the path is not looked at); built-ins answer 405.
        ("create", "") if !is_builtin(kind) => Box::pin(create::create(api, req, kind)).await,
        ("update", "") => Box::pin(update::update(api, req, kind)).await,
        ("patch", "") => Box::pin(patch::patch(api, req, kind)).await,
        ("delete", "") => Box::pin(delete::delete(api, req, kind)).await,
        ("deletecollection", "") => Box::pin(delete::delete_collection(api, req, kind)).await,
        ("get", "status") if status_ok => read::get(api, req, kind).await,
        ("update", "status") if status_ok => Box::pin(update::update(api, req, kind)).await,
        ("patch", "status") if status_ok => Box::pin(patch::patch(api, req, kind)).await,
        ("create", "token") if d.gr.group.is_empty() && d.gr.resource == "serviceaccounts" => {
            Box::pin(create::service_account_token(api, req, kind)).await
        }
        ("update", "finalize") if d.gr.resource == "namespaces" => {
            Box::pin(update::update(api, req, kind)).await
        }
        ("get", _) if part.is_some() => read::get(api, req, kind).await,
        ("update", _) if part.is_some() => Box::pin(update::update(api, req, kind)).await,
        ("patch", _) if part.is_some() => Box::pin(patch::patch(api, req, kind)).await,
        ("create", "binding") if is_pods => Box::pin(binding::bind(api, req, kind)).await,
        ("create", "eviction") if is_pods => Box::pin(binding::evict(api, req, kind)).await,
        ("get", "scale") if scale_ok => Box::pin(scale::get(api, req, resolved)).await,
        ("update", "scale") if scale_ok => Box::pin(scale::update(api, req, resolved)).await,
        ("patch", "scale") if scale_ok => Box::pin(scale::patch(api, req, resolved)).await,
        (_, "") => Err(method_not_allowed(builtin, &d.gr, verb)),
        (_, "status") if status_ok => Err(method_not_allowed(builtin, &d.gr, verb)),
        (_, "scale") if scale_ok => Err(method_not_allowed(builtin, &d.gr, verb)),
        // A subresource the kind does not have: the crdHandler's NotFound names the object.
        _ if builtin => Err(Status::route_not_found()),
        _ => Err(Status::not_found(&d.gr, info.name())),
    }
}

/// Options every write shares, from the query (`dryRun`, `fieldValidation`) and
/// headers (`X-Pipeline-Trace`). `options_kind` names kube's options type in errors.
pub fn write_options(
    api: &ApiServer,
    req: &ApiRequest,
    options_kind: &str,
) -> Result<WriteOptions, Status> {
    let dry_run = match req.param("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            let err = FieldError::not_supported(&Path::new("dryRun"), json!([other]), &["All"]);
            return Err(Status::invalid(options_kind, "meta.k8s.io", "", &[err]));
        }
    };
    let field_manager = req.param("fieldManager").unwrap_or("");
    let is_apply = options_kind == "PatchOptions"
        && body_type(req.header("content-type")) == BodyType::ApplyPatch;
    if options_kind == "PatchOptions" {
        let force = req.param("force").map(|f| f == "true");
        apply::validate_patch_options(field_manager, force, is_apply)?;
    } else {
        let errs = apply::validate_field_manager(field_manager);
        if !errs.is_empty() {
            return Err(Status::invalid(options_kind, "meta.k8s.io", "", &errs));
        }
    }
    Ok(WriteOptions {
        field_validation: FieldValidation::parse(req.param("fieldValidation"))?,
        dry_run,
        subresource: req.info.subresource().to_string(),
        trace: api.options.log_pipeline || req.header("x-pipeline-trace") == Some("true"),
        duplicate_fields: Vec::new(),
        is_patch: options_kind == "PatchOptions",
        is_apply,
        field_manager: apply::manager_name(field_manager, req.header("user-agent").unwrap_or("")),
        user: req.user.clone(),
    })
}

/// Decode a create/update body (JSON or YAML) into an object, with kube's errors.
pub fn decode_object(
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    opts: &mut WriteOptions,
) -> Result<Value, Status> {
    let ct = req.header("content-type");
    match body_type(ct) {
        BodyType::Json | BodyType::Yaml => {}
        // Typed clients (kubectl, client-go) send built-in kinds as protobuf; custom
        // resources get kube's 400 (their negotiation accepts it, their decoding not).
        BodyType::Protobuf => {
            let d = kind.descriptor();
            let target = (d.api_version(), d.kind.as_str());
            return codec::protobuf::decode_body(&req.body, (&target.0, target.1), !is_builtin(kind))
                .map_err(Status::bad_request);
        }
        _ => {
            return Err(Status::unsupported_media_type("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf".to_string()))
        }
    }
    let kind_name = &kind.descriptor().kind;
    let json_body = body_type(ct) == BodyType::Json;
    // A JSON body is read once: the duplicate fields come with the value.
    let decoded = if json_body {
        codec::decode_json_with_duplicates(&req.body)
    } else {
        codec::decode_body(&req.body, ct.unwrap_or("application/json")).map(|v| (v, Vec::new()))
    };
    let (obj, duplicates) = decoded.map_err(|e| {
        Status::bad_request(codec::unrecognized_object_message(kind_name, &e, &req.body))
    })?;
    if !obj.is_object() {
        return Err(Status::bad_request(codec::unrecognized_object_message(
            kind_name,
            &codec::DecodeError::NotAnObject,
            &req.body,
        )));
    }
    // `/scale` bodies are autoscaling/v1 Scales, checked by the scale handler.
    if !is_builtin(kind) && req.info.subresource() != "scale" {
        let d = kind.descriptor();
        crate::pipeline::decode::check_body_type_meta(
            &obj,
            (&d.gr.group, &d.version, &d.kind),
            &req.body,
            json_body,
            opts.field_validation != FieldValidation::Ignore,
        )?;
        // kube decodes metadata into ObjectMeta before anything else looks at it.
        crate::pipeline::decode::metadata_type_check(&obj, (&d.kind, &d.version), false)?;
    }
    if json_body && opts.field_validation != FieldValidation::Ignore {
        opts.duplicate_fields = duplicates;
    }
    Ok(obj)
}

/// After a write: log its pipeline trace (`--log-pipeline`), run the server's
/// after-write hooks unless it was a dry run, and encode the reply with its warnings.
pub fn finish_write(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    w: crate::rest::store::Written,
    dry_run: bool,
    code: http::StatusCode,
) -> Response<Body> {
    if api.options.log_pipeline && !w.trace.is_empty() {
        tracing::info!(verb = %req.info.verb, path = %req.info.path, trace = %w.trace.join("; "), "pipeline");
    }
    if !dry_run {
        api.after_write(kind.descriptor(), &w.object, w.deleted);
    }
    if let (Some(json), Output::Json) = (&w.json, req.output) {
        let trace = if req.header("x-pipeline-trace") == Some("true") {
            &w.trace[..]
        } else {
            &[]
        };
        return response::with_headers(
            response::json_bytes(code, json.clone()),
            &w.warnings,
            trace,
        );
    }
    let mut reply = Reply::with_code(code, Arc::unwrap_or_clone(w.object));
    reply.warnings = w.warnings;
    reply.trace = w.trace;
    object_reply(req, kind, reply)
}

/// Whether `kind` is built in (namespaces, CRDs) rather than a custom resource.
pub fn is_builtin(kind: &dyn ResourceKind) -> bool {
    kind.strategy().allow_unconditional_update()
        || kind.descriptor().gr.group == "apiextensions.k8s.io"
}

/// Encode a single-object reply in the representation the client asked for.
pub fn object_reply(req: &ApiRequest, kind: &dyn ResourceKind, mut reply: Reply) -> Response<Body> {
    let trace_wanted = req.header("x-pipeline-trace") == Some("true");
    if !trace_wanted {
        reply.trace.clear();
    }
    match req.output {
        Output::Table(v) if reply.body.get("kind").and_then(Value::as_str) != Some("Status") => {
            // kube's table of one object carries the object's resourceVersion.
            let meta = match reply.body.pointer("/metadata/resourceVersion") {
                Some(rv) => json!({"resourceVersion": rv}),
                None => json!({}),
            };
            reply.body = read::table(req, kind, std::slice::from_ref(&reply.body), v, meta);
            response::reply(reply, Output::Json)
        }
        Output::PartialMetadata(_, true)
            if reply.body.get("kind").and_then(Value::as_str) != Some("Status") =>
        {
            response::status(&partial_metadata_form_mismatch(kind, true), Output::Json)
        }
        Output::PartialMetadata(v, false)
            if reply.body.get("kind").and_then(Value::as_str) != Some("Status") =>
        {
            reply.body = read::partial_metadata(&reply.body, v);
            response::reply(reply, Output::Json)
        }
        other => response::reply(reply, other),
    }
}

/// kube's 406 when the `PartialObjectMetadata` form asked for does not fit the answer:
/// the list form for one object (or a watch event), the object form for a list. The
/// type printed is Go's `%T` of what kube holds: unstructured for custom resources,
/// the internal type of a built-in kind.
pub fn partial_metadata_form_mismatch(kind: &dyn ResourceKind, asked_list: bool) -> Status {
    let d = kind.descriptor();
    let (package, name) = if is_builtin(kind) {
        let package = match d.gr.group.as_str() {
            "" | "events.k8s.io" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        let kind_name = if d.gr.group == "events.k8s.io" {
            "Event"
        } else {
            d.kind.as_str()
        };
        (package, kind_name.to_string())
    } else {
        ("unstructured", "Unstructured".to_string())
    };
    let message = if asked_list {
        format!("you requested PartialObjectMetadataList, but the requested object is not a list (*{package}.{name})")
    } else {
        format!("you requested PartialObjectMetadata, but the requested object is a list (*{package}.{name}List)")
    };
    Status::not_acceptable(message)
}

/// kube's extra check when an update or an apply creates the object: the user must
/// also be allowed to `create` it.
pub async fn authorize_create(api: &ApiServer, req: &ApiRequest) -> Result<(), Status> {
    let mut attrs = crate::auth::authz::request_attributes(&req.user, &req.info, &req.info.path);
    attrs.verb = "create".into();
    let (decision, reason) = api.authorizer.authorize(&attrs).await;
    if decision == crate::auth::authz::Decision::Allow {
        Ok(())
    } else {
        Err(crate::auth::authz::forbidden(&attrs, &reason))
    }
}

/// An update that creates the object when it is missing: a PUT of a kind that allows
/// create on update, or a server-side apply (`may_create`). `build` makes the desired
/// object from the stored one (`Some`) or from nothing (`None`, checked by the caller
/// as its verb requires). A create is authorized as a create, waits on the namespace
/// lifecycle and answers 201; someone creating the object meanwhile means updating
/// theirs.
#[allow(clippy::too_many_arguments)]
pub async fn update_or_create(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    opts: &WriteOptions,
    require_rv: bool,
    may_create: bool,
    mut build: impl FnMut(Option<&Value>) -> Result<Value, Status>,
    finish: impl Fn(Written) -> Written,
) -> Result<Response<Body>, Status> {
    let d = kind.descriptor();
    let (ns, name) = (req.info.namespace(), req.info.name());
    for _ in 0..2 {
        match api
            .store
            .update(kind, ns, name, opts, require_rv, |cur| build(Some(cur)))
            .await
        {
            Ok(w) => {
                return Ok(finish_write(
                    api,
                    req,
                    kind,
                    finish(w),
                    opts.dry_run,
                    StatusCode::OK,
                ))
            }
            Err(s) if may_create && s.code == 404 && s.reason == "NotFound" => {}
            Err(s) => return Err(s),
        }
        let obj = build(None)?;
        authorize_create(api, req).await?;
        if d.namespaced {
            api.check_namespace(ns, &d.gr, name).await?;
        }
        match api.store.create(kind, obj, opts).await {
            Ok(w) => {
                let created = finish(w);
                return Ok(finish_write(
                    api,
                    req,
                    kind,
                    created,
                    opts.dry_run,
                    StatusCode::CREATED,
                ));
            }
            Err(s) if s.reason == "AlreadyExists" => continue,
            Err(s) => return Err(s),
        }
    }
    Err(Status::stale(&d.gr, name))
}
