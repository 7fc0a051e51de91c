//! GET of one object and of lists, in JSON, YAML, Table or PartialObjectMetadata form.

use super::object_reply;
use crate::apiserver::ApiServer;
use crate::http::negotiate::{MetaVersion, Output};
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::rest::store::{ListOptions, ListPage};
use crate::rest::ResourceKind;
use crate::selector::{fields, labels};
use crate::status::Status;
use crate::table;
use http::Response;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// GET one object (or its `/status`).
pub async fn get(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    not_older_than(api, req).await?;
    if req.output == Output::Json && req.header("x-pipeline-trace") != Some("true") {
        // Plain JSON: the served bytes as they are (kept across reads).
        let bytes = api
            .store
            .get_json(kind, req.info.namespace(), req.info.name())
            .await?;
        return Ok(response::json_bytes(http::StatusCode::OK, bytes));
    }
    let obj = api
        .store
        .get(kind, req.info.namespace(), req.info.name())
        .await?;
    Ok(object_reply(req, kind, Reply::ok(obj)))
}

/// Parse list options from the query, with kube's errors for bad selectors and limits.
pub fn list_options(req: &ApiRequest) -> Result<ListOptions, Status> {
    if let Some(i) = req.param("includeObject") {
        table::IncludeObject::parse(Some(i)).map_err(|e| Status::bad_request(e.to_string()))?;
    }
    let labels = match req.param("labelSelector") {
        Some(s) if !s.is_empty() => {
            Some(labels::parse(s).map_err(|e| Status::bad_request(e.to_string()))?)
        }
        _ => None,
    };
    let fields = match req.param("fieldSelector") {
        Some(s) if !s.is_empty() => {
            Some(fields::parse(s).map_err(|e| Status::bad_request(e.to_string()))?)
        }
        _ => None,
    };
    // kube converts every ListOptions parameter (a 400 with Go's error), then validates.
    let limit = req.param_i64("limit")?.unwrap_or(0);
    req.param_i64("timeoutSeconds")?;
    validate_list_options(req)?;
    if let Some(rv) = req.param("resourceVersion").filter(|rv| !rv.is_empty()) {
        crate::rest::object::parse_resource_version(rv)?;
    }
    Ok(ListOptions {
        labels,
        fields,
        limit: limit.max(0),
        continue_token: req
            .param("continue")
            .filter(|c| !c.is_empty())
            .map(String::from),
        resource_version: req.param("resourceVersion").map(String::from),
        resource_version_match: req
            .param("resourceVersionMatch")
            .filter(|m| !m.is_empty())
            .map(String::from),
        encoded: false,
    })
}

/// A read at a `resourceVersion` (not `0`, not `Exact`) must see at least that revision:
/// one the store has not reached is kube's 504 "Too large resource version", with the
/// current revision and a retry after 1 s. (kube's watch cache first waits up to 3 s
/// for it; this server reads the store itself, which is never behind.)
pub async fn not_older_than(api: &ApiServer, req: &ApiRequest) -> Result<(), Status> {
    let Some(rv) = req
        .param("resourceVersion")
        .filter(|rv| !rv.is_empty() && *rv != "0")
    else {
        return Ok(());
    };
    if req.param("resourceVersionMatch") == Some("Exact") {
        return Ok(());
    }
    let requested = crate::rest::object::parse_resource_version(rv)?;
    let current = api.store.current_revision().await?;
    if requested > current {
        return Err(Status::too_large_resource_version(requested, current, 1));
    }
    Ok(())
}

/// kube's `ValidateListOptions` (and its watch form): a 422 `ListOptions` `Invalid`.
fn validate_list_options(req: &ApiRequest) -> Result<(), Status> {
    use crate::field::{Error, Path};
    let path = Path::new("resourceVersionMatch");
    let has = |name: &str| req.param(name).is_some_and(|v| !v.is_empty());
    let rv_match = req.param("resourceVersionMatch").unwrap_or("");
    let send_initial = req.param("sendInitialEvents").is_some();
    let mut errs = Vec::new();
    if req.info.verb == "watch" {
        if send_initial && rv_match != "NotOlderThan" {
            errs.push(Error::forbidden(
                &path,
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            ));
        }
        if !rv_match.is_empty() {
            if !send_initial {
                errs.push(Error::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            if rv_match != "NotOlderThan" {
                errs.push(Error::not_supported(
                    &path,
                    json!(rv_match),
                    &["NotOlderThan"],
                ));
            }
            if has("continue") {
                errs.push(Error::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
        }
    } else {
        if !rv_match.is_empty() {
            if !has("resourceVersion") {
                errs.push(Error::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                ));
            }
            if has("continue") {
                errs.push(Error::forbidden(
                    &path,
                    "resourceVersionMatch is forbidden when continue is provided",
                ));
            }
            if rv_match != "Exact" && rv_match != "NotOlderThan" {
                errs.push(Error::not_supported(
                    &path,
                    json!(rv_match),
                    &["Exact", "NotOlderThan", ""],
                ));
            }
            if rv_match == "Exact" && req.param("resourceVersion") == Some("0") {
                errs.push(Error::forbidden(
                    &path,
                    "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ));
            }
        }
        if send_initial {
            errs.push(Error::forbidden(
                &Path::new("sendInitialEvents"),
                "sendInitialEvents is forbidden for list",
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid("ListOptions", "meta.k8s.io", "", &errs))
    }
}

/// `metadata` of a list.
pub fn list_meta(page: &ListPage) -> Value {
    let mut m = Map::new();
    m.insert(
        "resourceVersion".into(),
        json!(page.resource_version.to_string()),
    );
    if let Some(c) = &page.continue_token {
        m.insert("continue".into(), json!(c));
    }
    if let Some(r) = page.remaining {
        m.insert("remainingItemCount".into(), json!(r));
    }
    Value::Object(m)
}

/// GET a list.
pub async fn list(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    let mut opts = list_options(req)?;
    check_field_labels(kind, &opts)?;
    opts.encoded = req.output == Output::Json;
    not_older_than(api, req).await?;
    let page = api.store.list(kind, req.info.namespace(), &opts).await?;
    if let Some(encoded) = &page.encoded {
        return Ok(encoded_list_reply(kind, encoded, list_meta(&page)));
    }
    list_reply(req, kind, &page.items, list_meta(&page))
}

/// kube converts a `fieldSelector`'s labels for the kind when it decodes the request,
/// so an unsupported label is a 400 whether or not any object would be looked at.
pub fn check_field_labels(kind: &dyn ResourceKind, opts: &ListOptions) -> Result<(), Status> {
    match &opts.fields {
        Some(fields) => kind
            .strategy()
            .check_field_labels(fields, kind.descriptor().namespaced)
            .map_err(|e| Status::bad_request(e.to_string())),
        None => Ok(()),
    }
}

/// A JSON list of items encoded already: the bytes [`list_reply`] would send for them
/// decoded, spliced into the list's envelope without decoding them.
fn encoded_list_reply(
    kind: &dyn ResourceKind,
    items: &[bytes::Bytes],
    meta: Value,
) -> Response<Body> {
    let d = kind.descriptor();
    let mut meta = meta;
    if !super::is_builtin(kind) {
        if let Some(m) = meta.as_object_mut() {
            m.entry("continue").or_insert_with(|| json!(""));
        }
    }
    let envelope = json!({
        "apiVersion": d.api_version(),
        "kind": d.list_kind,
        "metadata": meta,
        "items": [],
    });
    let bytes = serde_json::to_vec(&envelope).unwrap_or_default();
    // The envelope's only `"items":[]` (the other values hold no quotes of that shape).
    const EMPTY: &[u8] = b"\"items\":[]";
    let Some(at) = bytes.windows(EMPTY.len()).position(|w| w == EMPTY) else {
        return response::status(&Status::internal("encoding a list"), Output::Json);
    };
    let split = at + EMPTY.len() - 1;
    let total: usize = items.iter().map(|b| b.len()).sum::<usize>() + bytes.len() + 1;
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&bytes[..split]);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(item.strip_suffix(b"\n").unwrap_or(item));
    }
    out.extend_from_slice(&bytes[split..]);
    out.push(b'\n');
    response::json_bytes(http::StatusCode::OK, bytes::Bytes::from(out))
}

/// A list of `items` with list metadata `meta`, in the representation the client asked
/// for (JSON, YAML, protobuf, Table or PartialObjectMetadataList).
pub fn list_reply(
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    items: &[Value],
    meta: Value,
) -> Result<Response<Body>, Status> {
    let d = kind.descriptor();
    let body = match req.output {
        Output::Table(v) => table(req, kind, items, v, meta),
        Output::PartialMetadata(_, false) => {
            return Err(super::partial_metadata_form_mismatch(kind, false))
        }
        Output::PartialMetadata(v, true) => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": v.api_version(),
            "metadata": meta,
            "items": items.iter().map(|o| partial_metadata(o, v)).collect::<Vec<_>>(),
        }),
        _ => {
            let mut meta = meta;
            // Custom resources are unstructured lists: kube writes `continue` even
            // when empty; typed lists (built-in kinds) omit it.
            if !super::is_builtin(kind) {
                if let Some(m) = meta.as_object_mut() {
                    m.entry("continue").or_insert_with(|| json!(""));
                }
            }
            json!({
                "apiVersion": d.api_version(),
                "kind": d.list_kind,
                "metadata": meta,
                "items": items,
            })
        }
    };
    let output = match req.output {
        o @ (Output::Yaml | Output::Protobuf(_)) => o,
        _ => Output::Json,
    };
    Ok(response::reply(Reply::ok(body), output))
}

/// A Table of `objs` with the kind's printer columns.
pub fn table(
    req: &ApiRequest,
    kind: &dyn ResourceKind,
    objs: &[Value],
    v: MetaVersion,
    meta: Value,
) -> Value {
    let include = table::IncludeObject::parse(req.param("includeObject")).unwrap_or_default();
    let mut t = match kind.strategy().builtin_printer() {
        Some(p) => {
            let options = table::TableOptions {
                include_object: include,
                ..Default::default()
            };
            table::builtin_table(objs, p, &options, &meta, chrono::Utc::now())
        }
        None => table::table_for_objects(objs, &kind.strategy().printer_columns(), include, meta),
    };
    if let Some(m) = t.as_object_mut() {
        m.insert("apiVersion".into(), json!(v.api_version()));
    }
    t
}

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value, v: MetaVersion) -> Value {
    table::partial_object_metadata(obj, v.api_version())
}
