//! PATCH: JSON patch (RFC 6902) and JSON merge patch (RFC 7386) applied to the stored
//! object, then the same pipeline as an update. Strategic merge patch is not defined
//! for custom resources (415, as kube).

use super::{finish_write, is_builtin, write_options};
use crate::apiserver::ApiServer;
use crate::apply;
use crate::http::negotiate::{body_type, BodyType};
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::object;
use crate::rest::{FieldValidation, ResourceKind};
use crate::status::Status;
use http::Response;
use serde_json::Value;
use std::sync::Arc;

/// kube's limit on JSON patch operations.
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// kube-apiserver's `JSONPatchMaxCopyBytes` (its `--max-request-bytes`-sized default,
/// 3 MiB): what the `copy` operations of one patch may add in all, counted as the JSON
/// size of each copied value, as evanphx/json-patch counts it.
const MAX_JSON_PATCH_COPY_BYTES: u64 = 3 * 1024 * 1024;

/// A parsed patch body.
#[derive(Clone, Debug)]
pub enum Patch {
    /// RFC 6902 operations.
    Json(json_patch::Patch),
    /// RFC 7386 merge document.
    Merge(Value),
    /// Strategic merge patch (built-in kinds, `rest::strategic`): merged by the patch
    /// metadata of the kind's OpenAPI definition.
    Strategic(Value),
}

impl Patch {
    /// Parse a patch body of the given type, with kube's errors.
    pub fn parse(ty: BodyType, body: &[u8], builtin: bool) -> Result<Patch, Status> {
        match ty {
            BodyType::JsonPatch => {
                // Our decoder takes values as deep as kube's (serde_json's stops at 128).
                let p: json_patch::Patch = crate::codec::decode_json(body)
                    .map_err(|e| e.message())
                    .and_then(|v| serde_json::from_value(v).map_err(|e| e.to_string()))
                    .map_err(|e| {
                        Status::bad_request(
                            crate::codec::go_json_error(body, "[]jsonpatch.Operation").unwrap_or(e),
                        )
                    })?;
                if p.0.len() > MAX_JSON_PATCH_OPERATIONS {
                    return Err(Status::request_entity_too_large(format!(
                        "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                        p.0.len()
                    )));
                }
                Ok(Patch::Json(p))
            }
            BodyType::MergePatch => Ok(Patch::Merge(parse_merge(body)?)),
            // Built-in kinds accept strategic merge patches.
            BodyType::StrategicMergePatch if builtin => Ok(Patch::Strategic(parse_merge(body)?)),
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
            Patch::Json(p) => apply_json_patch(&mut out, p)?,
            Patch::Merge(m) => json_patch::merge(&mut out, m),
            Patch::Strategic(m) => {
                crate::rest::strategic::apply(&mut out, m).map_err(|e| e.to_status())?
            }
        }
        Ok(out)
    }
}

/// Apply JSON patch operations one by one, refusing (as kube, with a 422) a patch whose
/// `copy` operations would add more than [`MAX_JSON_PATCH_COPY_BYTES`]: a small patch
/// must not be able to double a value until the server runs out of memory.
fn apply_json_patch(doc: &mut Value, p: &json_patch::Patch) -> Result<(), Status> {
    // kube answers every failure of a JSON patch alike (its error text is not sent).
    let rejected =
        || Status::unprocessable("the server rejected our request due to an error in our request");
    let mut copied = 0u64;
    for op in &p.0 {
        if let json_patch::PatchOperation::Copy(c) = op {
            if let Some(v) = doc.pointer(c.from.as_str()) {
                copied += json_size_up_to(v, MAX_JSON_PATCH_COPY_BYTES - copied + 1);
                if copied > MAX_JSON_PATCH_COPY_BYTES {
                    tracing::debug!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                    );
                    return Err(rejected());
                }
            }
        }
        // `doc` is a copy dropped on failure, so no undo is needed; json-patch's undo
        // can itself panic (an `add` at `/-` followed by a failing op).
        json_patch::patch_unsafe(doc, std::slice::from_ref(op)).map_err(|_| rejected())?;
    }
    Ok(())
}

/// The length of `v` as compact JSON, counting no further than `cap` bytes.
fn json_size_up_to(v: &Value, cap: u64) -> u64 {
    struct Counter {
        n: u64,
        cap: u64,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.n += buf.len() as u64;
            if self.n > self.cap {
                // Stop serializing: the size is already known to be over the cap.
                return Err(std::io::Error::other("cap reached"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut w = Counter { n: 0, cap };
    let _ = serde_json::to_writer(&mut w, v);
    w.n
}

fn parse_merge(body: &[u8]) -> Result<Value, Status> {
    let v: Value = crate::codec::decode_json(body).map_err(|e| {
        let msg =
            crate::codec::go_json_error(body, "map[string]interface {}").unwrap_or(e.message());
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

/// Server-side apply: merge the applied configuration into the live object by the
/// schema, owning fields per manager; creates the object when it does not exist.
async fn server_side_apply(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    // kube validates the options before it reads the body.
    let opts = write_options(api, req, "PatchOptions")?;
    let (config, duplicates) = decode_apply_config_and_duplicates(&req.body)?;
    // kube decodes the configuration leniently and then, unless told to ignore them,
    // reports repeated keys: a 400 when strict, else a warning.
    let duplicate_keys = match opts.field_validation {
        FieldValidation::Ignore => None,
        _ => duplicates.map(|e| format!("error converting YAML to JSON: {e}")),
    };
    let strict_error = match (&duplicate_keys, opts.field_validation) {
        (Some(e), FieldValidation::Strict) => Some(format!("error strict decoding YAML: {e}")),
        _ => None,
    };
    // kube's query booleans: only "0" and "false" (any case) are false once present.
    let force = req
        .param("force")
        .is_some_and(|f| f != "0" && !f.eq_ignore_ascii_case("false"));
    let d = kind.descriptor();
    let (now, api_version) = (object::now(), d.api_version());
    let scope = apply::Scope {
        schema: kind.strategy().merge_schema(),
        api_version: &api_version,
        kind: &d.kind,
        subresource: &opts.subresource,
        status_subresource: d.status_subresource,
        versions: &[],
        now: &now,
    };
    // Conflicts and typing errors come first, as kube checks strictness after merging.
    let merge = |live: Option<&Value>| {
        let merged = apply::apply(live, &config, &opts.field_manager, force, &scope)
            .map_err(|e| e.to_status())?;
        match &strict_error {
            Some(e) => Err(Status::bad_request(e.clone())),
            None => Ok(merged),
        }
    };
    let warn = |mut w: crate::rest::store::Written| {
        if let Some(d) = &duplicate_keys {
            w.warnings.insert(0, d.clone());
        }
        w
    };
    let (ns, name) = (req.info.namespace(), req.info.name());
    // Create on apply: the object is the configuration merged into nothing, checked as
    // kube's patcher checks it (uid, then namespace, then name: the URL's name is not
    // filled in).
    let build = |live: Option<&Value>| {
        let mut obj = merge(live)?;
        if live.is_some() {
            return Ok(obj);
        }
        let uid = object::meta(&obj)
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !uid.is_empty() {
            return Err(Status::conflict(
                &d.gr,
                name,
                &format!(
                    "uid mismatch: the provided object specified uid {uid}, and no existing object was found"
                ),
            ));
        }
        object::ensure_namespace(&mut obj, ns, d.namespaced)?;
        if object::name(&obj) != name {
            return Err(Status::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                object::name(&obj)
            )));
        }
        Ok(obj)
    };
    let may_create = opts.subresource.is_empty();
    super::update_or_create(api, req, kind, &opts, false, may_create, build, warn).await
}

/// The applied configuration, decoded as kube's `yaml.Unmarshal` into a map: `null`
/// (or an empty body) is an empty configuration, anything but a map a 400.
pub(super) fn decode_apply_config(body: &[u8]) -> Result<Value, Status> {
    decode_apply_config_and_duplicates(body).map(|(config, _)| config)
}

/// [`decode_apply_config`], and kube's text for the repeated keys of the body, if any.
fn decode_apply_config_and_duplicates(body: &[u8]) -> Result<(Value, Option<String>), Status> {
    let (config, duplicates) =
        crate::codec::decode_yaml_with_duplicate_keys(body).map_err(|e| {
            Status::bad_request(format!(
                "error decoding YAML: error converting YAML to JSON: {e}"
            ))
        })?;
    match config {
        Value::Object(_) => Ok((config, duplicates)),
        Value::Null => Ok((Value::Object(serde_json::Map::new()), duplicates)),
        other => Err(Status::bad_request(format!(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            crate::goformat::go_json_kind(&other)
        ))),
    }
}

/// Patch an object (or its `/status`).
pub async fn patch(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let builtin = is_builtin(kind);
    let ty = body_type(req.header("content-type"));
    if ty == BodyType::ApplyPatch {
        return server_side_apply(api, req, kind).await;
    }
    let mut opts = write_options(api, req, "PatchOptions")?;
    let strict_decoding = opts.field_validation != FieldValidation::Ignore;
    // kube's strict decoder reads JSON patches into its own operation type first.
    if ty == BodyType::JsonPatch && strict_decoding {
        if let Some(e) = crate::codec::go_json_error(&req.body, "[]handlers.jsonPatchOp") {
            return Err(Status::bad_request(format!("error decoding patch: {e}")));
        }
    }
    let patch = Patch::parse(ty, &req.body, builtin)?;
    opts.is_patch = true;
    // Duplicate fields of a merge patch are reported like those of a create body.
    if ty == BodyType::MergePatch && strict_decoding {
        opts.duplicate_fields = crate::codec::find_duplicate_fields(&req.body);
    }
    let w = api
        .store
        .update(
            kind,
            req.info.namespace(),
            req.info.name(),
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
