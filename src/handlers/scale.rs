//! The `/scale` subresource: an `autoscaling/v1` Scale view of a custom resource,
//! read from and written to the CRD's `specReplicasPath`/`statusReplicasPath`.

use super::patch::Patch;
use super::{decode_object, write_options};
use crate::apiserver::{ApiServer, Resolved};
use crate::http::negotiate::body_type;
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::registry::crd::ScaleSpec;
use crate::rest::custom_resource::CustomResourceKind;
use crate::rest::{object, ResourceKind};
use crate::status::{GroupResource, Status};
use http::Response;
use serde_json::{json, Map, Value};
use std::sync::Arc;

fn custom(resolved: &Resolved) -> Result<&Arc<CustomResourceKind>, Status> {
    match resolved {
        Resolved::Custom(k) => Ok(k),
        Resolved::Builtin(_) => Err(Status::route_not_found()),
    }
}

fn scale_spec(kind: &CustomResourceKind) -> Result<ScaleSpec, Status> {
    kind.schema().scale.clone().ok_or_else(|| {
        Status::not_found_message("the server could not find the requested resource")
    })
}

fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.trim_start_matches('.').split('.') {
        cur = cur.get(part)?;
    }
    Some(cur)
}

fn set_path(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut cur = obj;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Some(m) = cur.as_object_mut() else { return };
        if i + 1 == parts.len() {
            m.insert((*part).to_string(), value);
            return;
        }
        cur = m
            .entry((*part).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// The Scale of a custom resource, as kube builds it.
pub fn scale_of(obj: &Value, spec: &ScaleSpec) -> Value {
    let meta = object::meta(obj);
    let mut m = Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            m.insert(f.into(), v.clone());
        }
    }
    let spec_replicas = get_path(obj, &spec.spec_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = get_path(obj, &spec.status_replicas_path)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut scale_spec = Map::new();
    if spec_replicas != 0 {
        scale_spec.insert("replicas".into(), json!(spec_replicas));
    }
    let mut status = Map::new();
    status.insert("replicas".into(), json!(status_replicas));
    if let Some(sel_path) = &spec.label_selector_path {
        if let Some(sel) = get_path(obj, sel_path).and_then(Value::as_str) {
            if !sel.is_empty() {
                status.insert("selector".into(), json!(sel));
            }
        }
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(m),
        "spec": Value::Object(scale_spec),
        "status": Value::Object(status),
    })
}

/// GET `/scale`.
pub async fn get(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let kind = custom(resolved)?;
    let spec = scale_spec(kind)?;
    let obj = api
        .store
        .get(kind.as_ref(), &req.info.namespace, &req.info.name)
        .await?;
    Ok(response::reply(
        Reply::ok(scale_of(&obj, &spec)),
        req.output,
    ))
}

/// Write `spec.replicas` of a new Scale into the object (kube's scale update).
async fn write_scale<F>(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &CustomResourceKind,
    mut new_scale: F,
) -> Result<Response<Body>, Status>
where
    F: FnMut(&Value) -> Result<Value, Status>,
{
    let spec = scale_spec(kind)?;
    let mut opts = write_options(api, req, "UpdateOptions")?;
    opts.subresource = String::new();
    let gr = GroupResource::new("autoscaling", "scale");
    let w = api
        .store
        .update(
            kind,
            &req.info.namespace,
            &req.info.name,
            &opts,
            false,
            |cur| {
                let scale = new_scale(&scale_of(cur, &spec))?;
                if let Some(rv) = object::resource_version(&scale)? {
                    if Some(rv) != object::resource_version(cur)? {
                        return Err(Status::stale(&kind.descriptor().gr, &req.info.name));
                    }
                }
                let replicas = match scale.pointer("/spec/replicas") {
                    None | Some(Value::Null) => 0,
                    Some(v) => v.as_i64().ok_or_else(|| {
                        let err = crate::field::Error::invalid(
                            &crate::field::Path::new("spec").child("replicas"),
                            v.clone(),
                            "must be an integer",
                        );
                        Status::invalid("Scale", &gr.group, &req.info.name, &[err])
                    })?,
                };
                if replicas < 0 {
                    let err = crate::field::Error::invalid(
                        &crate::field::Path::new("spec").child("replicas"),
                        json!(replicas),
                        "must be greater than or equal to 0",
                    );
                    return Err(Status::invalid(
                        "Scale",
                        "autoscaling",
                        &req.info.name,
                        &[err],
                    ));
                }
                let mut out = cur.clone();
                set_path(&mut out, &spec.spec_replicas_path, json!(replicas));
                Ok(out)
            },
        )
        .await?;
    Ok(response::reply(
        Reply::ok(scale_of(&w.object, &spec)),
        req.output,
    ))
}

/// PUT `/scale`.
pub async fn update(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let kind = custom(resolved)?;
    let mut opts = write_options(api, req, "UpdateOptions")?;
    let body = decode_object(req, kind.as_ref(), &mut opts)?;
    write_scale(api, req, kind, |_| Ok(body.clone())).await
}

/// PATCH `/scale`.
pub async fn patch(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let kind = custom(resolved)?;
    let patch = Patch::parse(body_type(req.header("content-type")), &req.body, false)?;
    write_scale(api, req, kind, |cur| patch.apply(cur)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_view_follows_paths() {
        let spec = ScaleSpec {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        };
        let obj = json!({"metadata": {"name": "w", "namespace": "d", "resourceVersion": "5"},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=x"}});
        let s = scale_of(&obj, &spec);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=x"}));
        assert_eq!(s["metadata"]["resourceVersion"], "5");
        let mut o = json!({});
        set_path(&mut o, ".spec.replicas", json!(4));
        assert_eq!(o, json!({"spec": {"replicas": 4}}));
    }
}
