//! PATCH: JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied to the stored
//! object, then the same pipeline as an update. Strategic merge patch is not defined
//! for custom resources (415, as kube).

use super::{finish_write, write_options};
use crate::apiserver::ApiServer;
use crate::http::negotiate::{body_type, BodyType};
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::ResourceKind;
use crate::status::Status;
use http::Response;
use serde_json::Value;
use std::sync::Arc;

/// kube's limit on JSON patch operations.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// A parsed patch body.
#[derive(Clone, Debug)]
pub enum Patch {
    /// RFC 6902 operations.
    Json(json_patch::Patch),
    /// RFC 7386 merge document.
    Merge(Value),
}

impl Patch {
    /// Parse a patch body of the given type, with kube's errors.
    pub fn parse(ty: BodyType, body: &[u8], builtin: bool) -> Result<Patch, Status> {
        match ty {
            BodyType::JsonPatch => {
                let p: json_patch::Patch = serde_json::from_slice(body).map_err(|e| {
                    Status::bad_request(
                        crate::codec::go_json_error(body, "[]jsonpatch.Operation")
                            .unwrap_or_else(|| e.to_string()),
                    )
                })?;
                if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
                    return Err(Status {
                        code: 413,
                        reason: "RequestEntityTooLarge".into(),
                        message: format!(
                            "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                            p.0.len()
                        ),
                        details: None,
                    });
                }
                Ok(Patch::Json(p))
            }
            BodyType::MergePatch => Ok(Patch::Merge(parse_merge(body)?)),
            // Built-in kinds accept strategic merge patches; for the map fields they
            // carry here (labels, annotations, spec) it merges like a merge patch.
            BodyType::StrategicMergePatch if builtin => Ok(Patch::Merge(parse_merge(body)?)),
            _ => Err(Status::unsupported_media_type(if builtin {
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
            } else {
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            })),
        }
    }

    /// Apply to a JSON document (kube: any failure of a JSON patch is a 422).
    pub fn apply(&self, doc: &Value) -> Result<Value, Status> {
        let mut out = doc.clone();
        match self {
            Patch::Json(p) => {
                json_patch::patch(&mut out, p).map_err(|_| {
                    Status::unprocessable(
                        "the server rejected our request due to an error in our request",
                    )
                })?;
            }
            Patch::Merge(m) => json_patch::merge(&mut out, m),
        }
        Ok(out)
    }
}

fn parse_merge(body: &[u8]) -> Result<Value, Status> {
    let v: Value = serde_json::from_slice(body).map_err(|e| {
        let msg = crate::codec::go_json_error(body, "map[string]interface {}")
            .unwrap_or_else(|| e.to_string());
        Status::bad_request(format!("error decoding patch: {msg}"))
    })?;
    if !v.is_object() {
        return Err(Status::bad_request(format!(
            "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::codec::go_json_kind(&v)
        )));
    }
    Ok(v)
}

/// Patch an object (or its `/status`).
pub async fn patch(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let builtin =
        kind.allow_unconditional_update() || kind.descriptor().gr.group == "apiextensions.k8s.io";
    let ty = body_type(req.header("content-type"));
    if ty == BodyType::ApplyPatch {
        return Err(Status::unsupported_media_type(
            "server-side apply is not supported yet - accepted media types include: application/json-patch+json, application/merge-patch+json",
        ));
    }
    let patch = Patch::parse(ty, &req.body, builtin)?;
    let mut opts = write_options(api, req, "PatchOptions")?;
    opts.is_patch = true;
    let w = api
        .store
        .update(
            kind,
            &req.info.namespace,
            &req.info.name,
            &opts,
            false,
            |cur| patch.apply(cur),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn failed_json_patch_test_is_kube_422() {
        let p = Patch::parse(
            BodyType::JsonPatch,
            br#"[{"op":"test","path":"/spec/size","value":1}]"#,
            false,
        )
        .unwrap();
        let err = p.apply(&json!({"spec": {"size": 5}})).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(err.to_json()["details"], json!({}));
        assert_eq!(
            err.message,
            "the server rejected our request due to an error in our request"
        );
    }

    #[test]
    fn strategic_merge_is_415_for_custom_resources() {
        let err = Patch::parse(BodyType::StrategicMergePatch, b"{}", false).unwrap_err();
        assert_eq!(err.code, 415);
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn merge_patch_null_removes() {
        let p = Patch::parse(
            BodyType::MergePatch,
            br#"{"metadata":{"finalizers":null}}"#,
            false,
        )
        .unwrap();
        let out = p
            .apply(&json!({"metadata": {"name": "a", "finalizers": ["x"]}}))
            .unwrap();
        assert_eq!(out, json!({"metadata": {"name": "a"}}));
    }
}
