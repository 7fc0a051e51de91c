//! The `/scale` subresource: an `autoscaling/v1` Scale view of an object, read from
//! and written to its replicas fields: a custom resource's CRD names them
//! (`specReplicasPath`, `statusReplicasPath`, `labelSelectorPath`); the built-in
//! workloads (deployments, replicasets, statefulsets, replicationcontrollers) keep them
//! at `spec.replicas`, `status.replicas` and `spec.selector`. A write changes only the
//! parent's replicas, through the parent's update (generation, validation, admission),
//! and moves the ownership of that field as kube's scale handler does (`apply::scale`).

use super::patch::Patch;
use super::{decode_object, write_options};
use crate::admission::{ObjectKind, SubresourceView};
use crate::apiserver::{ApiServer, Resolved};
use crate::apply::scale::{
    record_scale_apply, record_scale_update, scale_managed_fields, ScaleWrite,
};
use crate::field::{Error as FieldError, Path};
use crate::http::negotiate::{body_type, BodyType};
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::rest::object;
use crate::status::{GroupResource, Status};
use http::Response;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The OpenAPI definition a Scale body is decoded by.
const SCALE_DEFINITION: &str = "io.k8s.api.autoscaling.v1.Scale";

/// Where a selector shown in `status.selector` comes from.
#[derive(Clone, Debug)]
enum SelectorSource {
    /// A custom resource's `labelSelectorPath`: a string, shown as it is.
    Path(Option<String>),
    /// A `metav1.LabelSelector` at `spec.selector`, shown in kube's selector syntax.
    LabelSelector,
    /// A label map at `spec.selector` (ReplicationControllers).
    Map,
}

/// What a kind's Scale is made of.
#[derive(Clone, Debug)]
pub struct ScaleTarget {
    spec_replicas_path: String,
    status_replicas_path: String,
    selector: SelectorSource,
    /// Built-in kinds validate the Scale (kube's `ValidateScale`) and its uid.
    builtin: bool,
}

impl ScaleTarget {
    /// The Scale of a resource, if it has a `/scale` subresource.
    pub fn of(resolved: &Resolved) -> Option<ScaleTarget> {
        match resolved {
            Resolved::Custom(k) => k.schema().scale.as_ref().map(|s| ScaleTarget {
                spec_replicas_path: s.spec_replicas_path.clone(),
                status_replicas_path: s.status_replicas_path.clone(),
                selector: SelectorSource::Path(s.label_selector_path.clone()),
                builtin: false,
            }),
            Resolved::Builtin(k) => {
                let d = k.descriptor();
                crate::registry::builtin::lookup(&d.gr.group, &d.version, &d.gr.resource)
                    .filter(|r| r.has_subresource("scale"))?;
                let selector = if d.gr.group.is_empty() {
                    SelectorSource::Map
                } else {
                    SelectorSource::LabelSelector
                };
                Some(ScaleTarget {
                    spec_replicas_path: ".spec.replicas".into(),
                    status_replicas_path: ".status.replicas".into(),
                    selector,
                    builtin: true,
                })
            }
        }
    }

    /// The Scale of `obj`, as kube builds it (a selector that does not convert is
    /// kube's 400).
    pub fn scale_of(&self, obj: &Value) -> Result<Value, Status> {
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
        let int_at = |path: &str| get_path(obj, path).and_then(Value::as_i64).unwrap_or(0);
        let mut spec = Map::new();
        let spec_replicas = int_at(&self.spec_replicas_path);
        if spec_replicas != 0 {
            spec.insert("replicas".into(), json!(spec_replicas));
        }
        let mut status = Map::new();
        status.insert("replicas".into(), json!(int_at(&self.status_replicas_path)));
        let selector = self.selector_of(obj)?;
        if !selector.is_empty() {
            status.insert("selector".into(), json!(selector));
        }
        Ok(json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": Value::Object(m),
            "spec": Value::Object(spec),
            "status": Value::Object(status),
        }))
    }

    fn selector_of(&self, obj: &Value) -> Result<String, Status> {
        let selector = obj.pointer("/spec/selector").unwrap_or(&Value::Null);
        Ok(match &self.selector {
            SelectorSource::Path(None) => String::new(),
            SelectorSource::Path(Some(path)) => get_path(obj, path)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            SelectorSource::LabelSelector => {
                crate::selector::labels::from_label_selector_json(selector)
                    .map_err(|e| Status::bad_request(e.to_string()))?
                    .to_string()
            }
            SelectorSource::Map => {
                // kube's SelectorFromSet: requirements ordered by key.
                let mut pairs: Vec<(&String, &str)> = selector
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                    .collect();
                pairs.sort_by(|a, b| a.0.cmp(b.0));
                let terms: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                terms.join(",")
            }
        })
    }

    /// The parent `cur` with the replicas of `scale` (the Scale after the request),
    /// checked as kube checks a Scale write.
    fn parent_with(
        &self,
        cur: &Value,
        scale: &Value,
        gr: &GroupResource,
        name: &str,
    ) -> Result<(Value, i64), Status> {
        if let Some(e) = crate::rest::typed::go_type_error(scale, SCALE_DEFINITION) {
            return Err(Status::bad_request(
                crate::codec::cannot_be_handled_message("Scale", "v1", "Scale", &e),
            ));
        }
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let replicas_path = Path::new("spec").child("replicas");
        let mut errs = Vec::new();
        if self.builtin {
            let meta = scale.get("metadata").cloned().unwrap_or(Value::Null);
            errs = crate::schema::objectmeta::validate_object_meta(
                &meta,
                true,
                &Path::new("metadata"),
            );
        }
        if replicas < 0 {
            errs.push(FieldError::invalid(
                &replicas_path,
                json!(replicas),
                "must be greater than or equal to 0",
            ));
        }
        if !errs.is_empty() {
            return Err(Status::invalid("Scale", "autoscaling", name, &errs));
        }
        let uid = object::meta_str(scale, "uid");
        let cur_uid = object::meta_str(cur, "uid");
        if self.builtin && !uid.is_empty() && uid != cur_uid {
            let sub = GroupResource::new(&gr.group, &format!("{}/scale", gr.resource));
            return Err(Status::conflict(
                &sub,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {cur_uid}"
                ),
            ));
        }
        let mut out = cur.clone();
        set_path(&mut out, &self.spec_replicas_path, json!(replicas));
        let rv = object::meta_str(scale, "resourceVersion");
        if !rv.is_empty() {
            object::meta_mut(&mut out).insert("resourceVersion".into(), json!(rv));
        }
        Ok((out, replicas))
    }
}

/// What admission sees of a `/scale` write: the Scale of the parent (kube admits the
/// autoscaling/v1 Scale), a mutating hook's replicas written back into the parent.
struct ScaleAdmission<'a> {
    target: &'a ScaleTarget,
    gr: &'a GroupResource,
}

impl SubresourceView for ScaleAdmission<'_> {
    fn kind(&self) -> ObjectKind {
        ObjectKind {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
        }
    }

    fn view(&self, parent: &Value) -> Result<Value, Status> {
        self.target.scale_of(parent)
    }

    fn merge(&self, parent: &Value, view: &Value) -> Result<Value, Status> {
        let name = object::name(parent).to_string();
        Ok(self.target.parent_with(parent, view, self.gr, &name)?.0)
    }
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

fn target(resolved: &Resolved) -> Result<ScaleTarget, Status> {
    ScaleTarget::of(resolved).ok_or_else(|| {
        Status::not_found_message("the server could not find the requested resource")
    })
}

/// GET `/scale`.
pub async fn get(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let target = target(resolved)?;
    let obj = api
        .store
        .get(resolved.kind(), req.info.namespace(), req.info.name())
        .await?;
    Ok(response::reply(
        Reply::ok(target.scale_of(&obj)?),
        req.output,
    ))
}

/// Write `spec.replicas` of a new Scale into the parent (kube's scale update): the
/// parent's update with the Scale's replicas and resourceVersion (its precondition).
async fn write_scale<F>(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
    mut new_scale: F,
) -> Result<Response<Body>, Status>
where
    F: FnMut(&Value) -> Result<Value, Status>,
{
    let target = target(resolved)?;
    let kind = resolved.kind();
    let opts = write_options(api, req, "UpdateOptions")?;
    let d = kind.descriptor();
    let api_version = d.api_version();
    let replicas_path: Vec<&str> = target
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .collect();
    let name = req.info.name();
    let view = ScaleAdmission {
        target: &target,
        gr: &d.gr,
    };
    let w = api
        .store
        .update_viewed(
            kind,
            req.info.namespace(),
            name,
            &opts,
            false,
            Some(&view),
            |cur| {
                let old_scale = target.scale_of(cur)?;
                let scale = new_scale(&old_scale)?;
                let (mut out, replicas) = target.parent_with(cur, &scale, &d.gr, name)?;
                let old_replicas = old_scale
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let write = ScaleWrite {
                    manager: &opts.field_manager,
                    replicas_path: &replicas_path,
                    api_version: &api_version,
                    replicas: (old_replicas, replicas),
                };
                record_scale_update(cur, &mut out, &write);
                Ok(out)
            },
        )
        .await?;
    Ok(response::reply(
        Reply::ok(target.scale_of(&w.object)?),
        req.output,
    ))
}

/// PUT `/scale`: the body is the new Scale (its name and namespace those of the URL).
pub async fn update(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let mut opts = write_options(api, req, "UpdateOptions")?;
    let mut body = decode_object(req, resolved.kind(), &mut opts)?;
    let name = req.info.name();
    let body_name = object::name(&body).to_string();
    if body_name.is_empty() {
        object::meta_mut(&mut body).insert("name".into(), json!(name));
    } else if body_name != *name {
        return Err(Status::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let namespaced = resolved.kind().descriptor().namespaced;
    object::ensure_namespace(&mut body, req.info.namespace(), namespaced)?;
    write_scale(api, req, resolved, |_| Ok(body.clone())).await
}

/// PATCH `/scale`: the patch applies to the current Scale.
pub async fn patch(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let builtin = matches!(resolved, Resolved::Builtin(_));
    let ty = body_type(req.header("content-type"));
    if ty == BodyType::ApplyPatch {
        return apply(api, req, resolved).await;
    }
    let patch = Patch::parse(ty, &req.body, builtin)?;
    write_scale(api, req, resolved, |cur| patch.apply(cur)).await
}

/// Server-side apply of a Scale (kube's scale field manager): the applied
/// configuration merges into the current Scale, whose managedFields are the parent's
/// owners of the replicas (`apply::scale::scale_managed_fields`), with kube's conflicts;
/// the parent gets the Scale's replicas and its owners back
/// (`apply::scale::record_scale_apply`). A Scale is never created by an apply.
async fn apply(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolved: &Resolved,
) -> Result<Response<Body>, Status> {
    let target = target(resolved)?;
    let kind = resolved.kind();
    let opts = write_options(api, req, "PatchOptions")?;
    let config = super::patch::decode_apply_config(&req.body)?;
    // kube's query booleans: only "0" and "false" (any case) are false once present.
    let force = req
        .param("force")
        .is_some_and(|f| f != "0" && !f.eq_ignore_ascii_case("false"));
    let d = kind.descriptor();
    let api_version = d.api_version();
    let replicas_path: Vec<&str> = target
        .spec_replicas_path
        .trim_start_matches('.')
        .split('.')
        .collect();
    let schema = crate::rest::typed::schema_of(SCALE_DEFINITION);
    let now = object::now();
    let scope = crate::apply::Scope {
        schema: &schema,
        api_version: "autoscaling/v1",
        kind: "Scale",
        subresource: "scale",
        // A Scale's status is the parent's: an applier never owns it.
        status_subresource: true,
        versions: &[],
        now: &now,
    };
    let view = ScaleAdmission {
        target: &target,
        gr: &d.gr,
    };
    let name = req.info.name();
    let w = api
        .store
        .update_viewed(
            kind,
            req.info.namespace(),
            name,
            &opts,
            false,
            Some(&view),
            |cur| {
                let mut live = target.scale_of(cur)?;
                let old_replicas = live
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                if let Some(entries) = scale_managed_fields(cur, &replicas_path) {
                    object::meta_mut(&mut live).insert("managedFields".into(), entries);
                }
                let merged =
                    crate::apply::apply(Some(&live), &config, &opts.field_manager, force, &scope)
                        .map_err(|e| e.to_status())?;
                let (mut out, replicas) = target.parent_with(cur, &merged, &d.gr, name)?;
                let write = ScaleWrite {
                    manager: &opts.field_manager,
                    replicas_path: &replicas_path,
                    api_version: &api_version,
                    replicas: (old_replicas, replicas),
                };
                record_scale_apply(cur, &mut out, &merged, &write);
                Ok(out)
            },
        )
        .await?;
    Ok(response::reply(
        Reply::ok(target.scale_of(&w.object)?),
        req.output,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::crd::ScaleSpec;

    #[test]
    fn scale_view_follows_paths() {
        let spec = ScaleSpec {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: Some(".status.selector".into()),
        };
        let obj = json!({"metadata": {"name": "w", "namespace": "d", "resourceVersion": "5"},
                         "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "app=x"}});
        let target = ScaleTarget {
            spec_replicas_path: spec.spec_replicas_path,
            status_replicas_path: spec.status_replicas_path,
            selector: SelectorSource::Path(spec.label_selector_path),
            builtin: false,
        };
        let s = target.scale_of(&obj).expect("scale");
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=x"}));
        assert_eq!(s["metadata"]["resourceVersion"], "5");
        let mut o = json!({});
        set_path(&mut o, ".spec.replicas", json!(4));
        assert_eq!(o, json!({"spec": {"replicas": 4}}));
    }

    #[test]
    fn built_in_selectors_print_in_kubes_selector_syntax() {
        let workload = ScaleTarget {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            selector: SelectorSource::LabelSelector,
            builtin: true,
        };
        let obj = json!({"metadata": {"name": "d"}, "spec": {"replicas": 0, "selector": {
            "matchLabels": {"tier": "web", "app": "x"},
            "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]}}});
        let s = workload.scale_of(&obj).expect("scale");
        assert_eq!(s["spec"], json!({}));
        assert_eq!(
            s["status"],
            json!({"replicas": 0, "selector": "app=x,!canary,env in (dev,prod),tier=web"})
        );
        let rc = ScaleTarget {
            selector: SelectorSource::Map,
            ..workload
        };
        let obj = json!({"spec": {"replicas": 2, "selector": {"b": "2", "a": "1"}}});
        assert_eq!(
            rc.scale_of(&obj).expect("scale")["status"]["selector"],
            "a=1,b=2"
        );
    }
}
