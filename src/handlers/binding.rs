//! `pods/binding` (and the `bindings` collection) and `pods/eviction`: what a
//! scheduler and `kubectl drain` send. Both answer kube's `Status` with
//! `status: Success` and code 201.

use super::write_options;
use crate::apiserver::ApiServer;
use crate::field::{Error as FieldError, Path};
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::pipeline::subresource;
use crate::rest::store::Deleted;
use crate::rest::{object, ResourceKind};
use crate::selector::labels::from_label_selector_json;
use crate::status::GroupResource;
use crate::status::{Cause, Status};
use http::{Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// The request body as JSON (`kind` names it in decode errors).
fn body(req: &ApiRequest, kind: &str) -> Result<Value, Status> {
    let ct = req.header("content-type");
    let v = if crate::http::negotiate::body_type(ct) == crate::http::negotiate::BodyType::Protobuf {
        crate::codec::protobuf::decode(&req.body).map_err(Status::from)?
    } else {
        crate::codec::decode_body(&req.body, ct.unwrap_or("application/json")).map_err(|e| {
            Status::bad_request(crate::codec::unrecognized_object_message(
                kind, &e, &req.body,
            ))
        })?
    };
    if !v.is_object() {
        return Err(Status::bad_request(format!("not a {kind} object")));
    }
    Ok(v)
}

/// kube's answer to a binding or an eviction.
fn created(req: &ApiRequest) -> Response<Body> {
    let mut reply = Reply::ok(json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201,
    }));
    reply.code = StatusCode::CREATED;
    response::reply(reply, req.output)
}

/// Bind a pod to a node: `POST pods/NAME/binding`, or `POST bindings` naming the pod.
pub async fn bind(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    pods: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = write_options(api, req, "CreateOptions")?;
    let binding = body(req, "Binding")?;
    let name = if req.info.subresource() == "binding" {
        if object::name(&binding) != req.info.name() {
            return Err(Status::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        req.info.name().to_string()
    } else {
        object::name(&binding).to_string()
    };
    let target_kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or("");
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut errs = Vec::new();
    if !target_kind.is_empty() && target_kind != "Node" {
        errs.push(FieldError::not_supported(
            &Path::new("target").child("kind"),
            json!(target_kind),
            &["Node", "<empty>"],
        ));
    }
    if node.is_empty() {
        errs.push(FieldError::required(&Path::new("target").child("name"), ""));
    }
    if !errs.is_empty() {
        // kube answers these with a bare 500; a client mistake is a 422 here.
        return Err(Status::invalid("Binding", "", &name, &errs));
    }
    opts.subresource = "binding".into();
    let annotations = binding.pointer("/metadata/annotations").cloned();
    let conflict = |e: subresource::BindRefused| {
        Status::conflict(&GroupResource::new("", "pods/binding"), &name, &e.0)
    };
    api.store
        .update(pods, req.info.namespace(), &name, &opts, false, |pod| {
            subresource::bind(pod, &node, annotations.as_ref()).map_err(conflict)
        })
        .await?;
    Ok(created(req))
}

/// Evict a pod (`POST pods/NAME/eviction`): deleted at once when no
/// PodDisruptionBudget guards it, else as its budget allows (kube's 429s).
pub async fn evict(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    pods: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let eviction = body(req, "Eviction")?;
    if object::name(&eviction) != req.info.name() {
        return Err(Status::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let ns = req.info.namespace().to_string();
    let pod = api.store.get(pods, &ns, req.info.name()).await?;
    let mut opts = super::delete::delete_options(req)?;
    if let Some(d) = eviction.get("deleteOptions").filter(|d| d.is_object()) {
        opts.grace_period_seconds = d.get("gracePeriodSeconds").and_then(Value::as_i64);
        opts.uid = d
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(String::from);
        opts.resource_version = d
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(String::from);
        if d.get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
        {
            opts.dry_run = true;
        }
    }
    let phase = pod
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ignore_budgets =
        matches!(phase, "Succeeded" | "Failed" | "Pending") || object::is_terminating(&pod);
    if !ignore_budgets {
        check_budgets(api, &ns, &pod, opts.dry_run).await?;
    }
    let mut warnings = Vec::new();
    let deleted = api
        .store
        .delete(pods, &ns, req.info.name(), &opts, &[], &mut warnings)
        .await?;
    if !opts.dry_run {
        let (obj, gone) = match &deleted {
            Deleted::Gone(o) => (o, true),
            Deleted::Terminating(o) => (o, false),
        };
        api.after_write(pods.descriptor(), obj, gone);
    }
    Ok(created(req))
}

/// kube's PodDisruptionBudget check of an eviction: one budget may guard the pod;
/// it must be up to date and allow a disruption, which the eviction takes.
async fn check_budgets(
    api: &Arc<ApiServer>,
    ns: &str,
    pod: &Value,
    dry_run: bool,
) -> Result<(), Status> {
    let Some(pdbs) = api.builtin("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let list = api
        .store
        .list(pdbs.as_ref(), ns, &Default::default())
        .await?;
    let guarding: Vec<&Value> = list
        .items
        .iter()
        .filter(|b| {
            b.pointer("/spec/selector")
                .and_then(|s| from_label_selector_json(s).ok())
                .is_some_and(|s| !s.matches_nothing() && s.matches_object(pod))
        })
        .collect();
    let budget = match guarding.as_slice() {
        [] => return Ok(()),
        [one] => *one,
        _ => {
            return Err(Status::without_reason(
                500,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    let name = object::name(budget).to_string();
    let int = |p: &str| budget.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let too_many = |retry: i64, msg: String| {
        let mut s = Status::too_many_requests(
            "Cannot evict pod as it would violate the pod's disruption budget.",
            retry,
        );
        if let Some(d) = s.details.as_mut() {
            d.causes.push(Cause {
                reason: "DisruptionBudget".into(),
                message: msg,
                field: String::new(),
            });
        }
        s
    };
    if int("/status/observedGeneration") < int("/metadata/generation") {
        return Err(too_many(
            10,
            format!("The disruption budget {name} is still being processed by the server."),
        ));
    }
    let allowed = int("/status/disruptionsAllowed");
    if allowed < 0 {
        return Err(Status::forbidden(
            &GroupResource::new("policy", "poddisruptionbudget"),
            &name,
            "pdb disruptions allowed is negative",
        ));
    }
    if allowed == 0 {
        let (current, desired) = (int("/status/currentHealthy"), int("/status/desiredHealthy"));
        let msg = if current <= desired {
            format!("The disruption budget {name} needs {desired} healthy pods and has {current} currently")
        } else {
            format!("The disruption budget {name} does not allow evicting pods currently")
        };
        return Err(too_many(0, msg));
    }
    if dry_run {
        return Ok(());
    }
    // Take one disruption, noting the pod as kube's `disruptedPods`.
    let pod_name = object::name(pod).to_string();
    let mut opts = crate::write::WriteOptions {
        subresource: "status".into(),
        field_manager: "kube-apiserver".into(),
        ..Default::default()
    };
    opts.user = Default::default();
    api.store
        .update(pdbs.as_ref(), ns, &name, &opts, false, |stored| {
            let mut next = stored.clone();
            let left = stored
                .pointer("/status/disruptionsAllowed")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if left <= 0 {
                return Err(Status::conflict(
                    &GroupResource::new("policy", "poddisruptionbudgets"),
                    &name,
                    "the disruption budget changed",
                ));
            }
            if let Some(status) = next.get_mut("status").and_then(Value::as_object_mut) {
                status.insert("disruptionsAllowed".into(), json!(left - 1));
                let disrupted = status.entry("disruptedPods").or_insert_with(|| json!({}));
                if let Some(d) = disrupted.as_object_mut() {
                    d.insert(pod_name.clone(), json!(object::now()));
                }
            }
            Ok(next)
        })
        .await?;
    Ok(())
}
