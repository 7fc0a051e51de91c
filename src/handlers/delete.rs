//! DELETE of one object and of collections, with `DeleteOptions` preconditions.

use super::object_reply;
use super::read::list_options;
use crate::apiserver::ApiServer;
use crate::field::{Error as FieldError, Path};
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::pipeline::deletion;
use crate::rest::crd::CLEANUP_FINALIZER;
use crate::rest::namespace::SYSTEM_NAMESPACES;
use crate::rest::store::{delete_success, Deleted};
use crate::rest::{object, ResourceKind};
use crate::status::Status;
use crate::write::DeleteOptions;
use http::Response;
use serde_json::{json, Value};
use std::sync::Arc;

/// `DeleteOptions` from the query and the (optional) body.
pub fn delete_options(req: &ApiRequest) -> Result<DeleteOptions, Status> {
    // kube converts the query first: a malformed number is a 400 and deletes nothing.
    let query_grace = req.param_i64("gracePeriodSeconds")?;
    let body: Value = if req.body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else if crate::http::negotiate::body_type(req.header("content-type"))
        == crate::http::negotiate::BodyType::Protobuf
    {
        crate::codec::protobuf::decode(&req.body).map_err(Status::from)?
    } else {
        crate::codec::decode_body(
            &req.body,
            req.header("content-type").unwrap_or("application/json"),
        )
        .map_err(|e| {
            Status::bad_request(crate::codec::unrecognized_object_message(
                "DeleteOptions",
                &e,
                &req.body,
            ))
        })?
    };
    let mut dry_run: Vec<String> = body
        .get("dryRun")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    if let Some(d) = req.param("dryRun") {
        if !d.is_empty() {
            dry_run.push(d.to_string());
        }
    }
    if let Some(bad) = dry_run.iter().find(|d| d.as_str() != "All") {
        let err = FieldError::not_supported(&Path::new("dryRun"), json!([bad]), &["All"]);
        return Err(Status::invalid("DeleteOptions", "meta.k8s.io", "", &[err]));
    }
    let policy = req
        .param("propagationPolicy")
        .map(String::from)
        .or_else(|| {
            body.get("propagationPolicy")
                .and_then(Value::as_str)
                .map(String::from)
        });
    if let Some(p) = &policy {
        if !["Orphan", "Background", "Foreground"].contains(&p.as_str()) {
            let err = FieldError::not_supported(
                &Path::new("propagationPolicy"),
                json!(p),
                &["Foreground", "Background", "Orphan", "nil"],
            );
            return Err(Status::invalid("DeleteOptions", "meta.k8s.io", "", &[err]));
        }
    }
    let orphan_dependents = match req.param("orphanDependents") {
        Some(v) => Some(v == "true"),
        None => body.get("orphanDependents").and_then(Value::as_bool),
    };
    if orphan_dependents.is_some() && policy.is_some() {
        let err = FieldError::invalid(
            &Path::new("propagationPolicy"),
            json!(policy),
            "orphanDependents and deletionPropagation cannot be both set",
        );
        return Err(Status::invalid("DeleteOptions", "meta.k8s.io", "", &[err]));
    }
    Ok(DeleteOptions {
        orphan_dependents,
        grace_period_seconds: query_grace
            .or_else(|| body.get("gracePeriodSeconds").and_then(Value::as_i64)),
        uid: body
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(String::from),
        resource_version: body
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(String::from),
        dry_run: !dry_run.is_empty(),
        propagation_policy: policy,
        collection: None,
        user: req.user.clone(),
    })
}

fn finalizers_on_delete(kind: &dyn ResourceKind) -> &'static [&'static str] {
    let d = kind.descriptor();
    if d.gr.group == "apiextensions.k8s.io" {
        &[CLEANUP_FINALIZER]
    } else {
        &[]
    }
}

/// Delete one object.
pub async fn delete(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let opts = delete_options(req)?;
    let d = kind.descriptor();
    if d.gr.group.is_empty() && d.gr.resource == "namespaces" {
        return delete_namespace(api, req, kind, &opts).await;
    }
    let mut warnings = Vec::new();
    let res = api
        .store
        .delete(
            kind,
            req.info.namespace(),
            req.info.name(),
            &opts,
            finalizers_on_delete(kind),
            &mut warnings,
        )
        .await
        .map_err(|s| s.with_warnings_before(&kind_warnings(d, &opts)))?;
    warnings.splice(0..0, kind_warnings(d, &opts));
    match res {
        Deleted::Gone(obj) => {
            if !opts.dry_run {
                api.after_write(d, &obj, true);
            }
            if deletion::returns_deleted_object(d) {
                let mut reply = Reply::ok(obj);
                reply.warnings = warnings;
                return Ok(object_reply(req, kind, reply));
            }
            let mut reply = Reply::ok(delete_success(&d.gr, &obj));
            reply.warnings = warnings;
            Ok(response::reply(reply, req.output))
        }
        Deleted::Terminating(obj) => {
            if !opts.dry_run {
                api.after_write(d, &obj, false);
            }
            let mut reply = Reply::ok(obj);
            // kube's 202 for a cascading delete (`orphanDependents: false`) not done yet.
            if opts.orphan_dependents == Some(false) {
                reply.code = http::StatusCode::ACCEPTED;
            }
            reply.warnings = warnings;
            Ok(object_reply(req, kind, reply))
        }
    }
}

/// Warnings of the kind's delete (batch/v1 Jobs orphaning their pods by default).
fn kind_warnings(d: &crate::rest::Descriptor, opts: &DeleteOptions) -> Vec<String> {
    deletion::warning(d, opts)
        .map(|w| vec![w.to_string()])
        .unwrap_or_default()
}

/// Namespaces: mark terminating (`status.phase: Terminating`) and let the cleanup
/// delete their contents, then them.
async fn delete_namespace(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    opts: &DeleteOptions,
) -> Result<Response<Body>, Status> {
    let name = req.info.name();
    let d = kind.descriptor();
    if SYSTEM_NAMESPACES.contains(&name) {
        return Err(Status::forbidden(
            &d.gr,
            name,
            "this namespace may not be deleted",
        ));
    }
    let mut warnings = Vec::new();
    let ns = api
        .store
        .mark_terminating(kind, "", name, opts, &mut warnings, |obj| {
            if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
                status.insert("phase".into(), json!("Terminating"));
            }
        })
        .await?;
    if !opts.dry_run {
        // Caches of this server (NamespaceLifecycle's) see it terminating at once.
        api.after_write(d, &ns, false);
        api.namespace_terminating(object::name(&ns));
    }
    let mut reply = Reply::ok(ns);
    reply.warnings = warnings;
    Ok(object_reply(req, kind, reply))
}

/// Delete every object a list would return.
pub async fn delete_collection(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = delete_options(req)?;
    opts.collection = Some(req.info.namespace().to_string());
    let mut list_opts = list_options(req)?;
    list_opts.limit = 0;
    let d = kind.descriptor();
    let page = api
        .store
        .list(kind, req.info.namespace(), &list_opts)
        .await?;
    let mut items = Vec::new();
    let mut warnings = kind_warnings(d, &opts);
    // kube answers the objects as listed (before their deletes).
    for obj in page.items {
        let ns = object::namespace(&obj).to_string();
        let name = object::name(&obj).to_string();
        let mut item_warnings = Vec::new();
        let deleted = api
            .store
            .delete(
                kind,
                &ns,
                &name,
                &opts,
                finalizers_on_delete(kind),
                &mut item_warnings,
            )
            .await;
        warnings.append(&mut item_warnings);
        match deleted {
            Ok(Deleted::Gone(o)) => {
                if !opts.dry_run {
                    api.after_write(d, &o, true);
                }
                items.push(obj);
            }
            Ok(Deleted::Terminating(o)) => {
                if !opts.dry_run {
                    api.after_write(d, &o, false);
                }
                items.push(obj);
            }
            Err(s) if s.code == 404 => {}
            Err(s) => return Err(s),
        }
    }
    let body = json!({
        "apiVersion": d.api_version(),
        "kind": d.list_kind,
        "metadata": {"resourceVersion": page.resource_version.to_string()},
        "items": items,
    });
    let mut reply = Reply::ok(body);
    reply.warnings = warnings;
    Ok(response::reply(reply, req.output))
}
