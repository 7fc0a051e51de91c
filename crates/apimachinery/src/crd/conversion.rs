//! Custom resources across the versions of their CRD: the conversion kube's storage
//! codec makes between the version a request addresses and the storage version, and
//! the deprecation warning of a deprecated version.
//!
//! kube's order, which this module follows:
//!
//! ```text
//! write:  request pipeline in the addressed version (prune/default/validate by its schema)
//!         → convert to the storage version → prune by the storage version's schema → storage
//! read:   storage → prune + default by the schema of the version the object was stored in
//!         → convert to the addressed version → prune by the addressed version's schema
//! ```
//!
//! Defaults of the addressed version are therefore not applied on read (kube applies
//! the stored version's), and fields the storage version does not know are dropped on
//! write. "Convert" is strategy `None` (rewrite `apiVersion`, no IO: [`to_storage`],
//! [`to_served`]) or `Webhook`: a `ConversionReview` ([`webhook_review`]) posted to
//! the CRD's webhook by the server, its answer checked here as kube checks it
//! ([`webhook_converted_objects`], [`webhook_accept_converted`]).
//!
//! kube (without its watch cache) decodes every stored object on its own, so it sends
//! one object per review; a list page here is converted in one review (the webhook
//! contract allows any number of objects), with kube's per-object error texts.

use super::compiled::CompiledCrd;
use crate::goformat::{go_json_kind, go_type_name};
use crate::pipeline::decode::is_foreign_kind;
use crate::pipeline::VersionSchema;
use crate::schema::{default, prune};
use serde_json::Value;
use std::sync::Arc;

/// Conversion strategy `None`: only `apiVersion` changes.
pub fn set_version(obj: &mut Value, group: &str, version: &str) {
    if let Some(m) = obj.as_object_mut() {
        m.insert(
            "apiVersion".into(),
            Value::String(format!("{group}/{version}")),
        );
    }
}

/// kube's schema coercion after decoding or converting: prune by `s` and drop the
/// `null`s it does not allow (objects of another group or kind are left alone).
pub fn coerce(obj: &mut Value, s: &VersionSchema) {
    if is_foreign_kind(obj, s) {
        return;
    }
    prune::prune(obj, &s.structural, true, &prune::PruneOptions::default());
    default::prune_nulls(obj, &s.structural);
}

/// The version part of an object's `apiVersion`.
pub fn object_version(obj: &Value) -> &str {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    api_version.rsplit_once('/').map_or("", |(_, v)| v)
}

/// The compiled schema of `version` (served or not), if the CRD has it.
pub fn version_schema(crd: &CompiledCrd, version: &str) -> Option<Arc<VersionSchema>> {
    crd.versions
        .iter()
        .find(|v| v.name == version)
        .map(|v| v.schema())
}

/// An admitted object (in the addressed version) as it is stored: converted to the
/// storage version and pruned by its schema.
pub fn to_storage(crd: &CompiledCrd, obj: &mut Value) {
    let Some(storage) = crd.versions.iter().find(|v| v.storage) else {
        return;
    };
    let s = &storage.schema();
    if object_version(obj) != s.version {
        set_version(obj, &crd.info.group, &s.version);
    }
    coerce(obj, s);
}

/// A stored object as the addressed version serves it: pruned and defaulted by the
/// schema of the version it was stored in, converted, then pruned by `target`'s schema.
pub fn to_served(crd: &CompiledCrd, target: &VersionSchema, obj: &mut Value) {
    // An object stored in a version the CRD no longer lists is only converted (kube
    // refuses to convert it; there is no schema to decode it by).
    if let Some(stored) = version_schema(crd, object_version(obj)) {
        coerce(obj, &stored);
        if !is_foreign_kind(obj, &stored) {
            default::apply_defaults(obj, &stored.structural);
        }
        if stored.version == target.version {
            return;
        }
    }
    set_version(obj, &crd.info.group, &target.version);
    coerce(obj, target);
}

/// kube's `isEmptyUnstructuredObject`: nothing but `apiVersion` and `kind` (converted
/// without calling the webhook).
pub fn is_empty_object(obj: &Value) -> bool {
    obj.as_object()
        .is_some_and(|m| m.len() == 2 && m.contains_key("apiVersion") && m.contains_key("kind"))
}

/// Go's `GroupVersionKind.String()` of an object, as kube names it in conversion errors.
pub fn gvk_string(obj: &Value) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{group}/{version}, Kind={kind}")
}

/// Go's `GroupVersion.String()` of an `apiVersion` as an unstructured object parses it
/// (`v1` for the core group, empty when it does not parse).
pub fn group_version_string(api_version: &str) -> String {
    match api_version.split_once('/') {
        None => api_version.to_string(),
        Some((_, v)) if v.contains('/') => String::new(),
        Some(("", v)) => v.to_string(),
        Some(_) => api_version.to_string(),
    }
}

/// Why a conversion webhook cannot be asked, or its answer is not taken (an answer's
/// complaint is wrapped as `conversion webhook for <gvk> failed: <complaint>`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConversionWebhookError {
    /// None of the CRD's `conversionReviewVersions` is `v1` or `v1beta1`.
    #[error("no supported conversion review versions")]
    ReviewVersions,
    /// A `v1` answer that is no `ConversionReview`.
    #[error(
        "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {0}"
    )]
    NotAReview(String),
    /// An answer without `response`.
    #[error("no response provided")]
    NoResponse,
    /// A `v1` answer to another request.
    #[error("expected response.uid={}, got {}", crate::field::go_quote(.expected), crate::field::go_quote(.got))]
    Uid {
        /// The request's uid.
        expected: String,
        /// The answer's uid.
        got: String,
    },
    /// A failed conversion, with the webhook's own message.
    #[error("{0}")]
    Failed(String),
    /// A failed conversion without message.
    #[error("response.result.status was '{0}', not 'Success'")]
    Status(String),
}

/// Strategy `Webhook`: the `ConversionReview` kube posts for `objects` (those not yet
/// in `desired`), in the first of the CRD's `conversionReviewVersions` it speaks.
pub fn webhook_review(
    objects: Vec<Value>,
    desired: &str,
    uid: &str,
    review_versions: &[String],
) -> Result<Value, ConversionWebhookError> {
    let version = review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .ok_or(ConversionWebhookError::ReviewVersions)?;
    Ok(serde_json::json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
    }))
}

/// The converted objects of a webhook's answer, or kube's complaint about it.
pub fn webhook_converted_objects(
    review_version: &str,
    expected_uid: &str,
    mut answer: Value,
) -> Result<Vec<Value>, ConversionWebhookError> {
    if review_version == "v1" {
        let got = gvk_string(&answer);
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
            return Err(ConversionWebhookError::NotAReview(got));
        }
    }
    let response = match answer.get_mut("response") {
        Some(r) if !r.is_null() => r,
        _ => return Err(ConversionWebhookError::NoResponse),
    };
    let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if review_version == "v1" && uid != expected_uid {
        return Err(ConversionWebhookError::Uid {
            expected: expected_uid.to_string(),
            got: uid.to_string(),
        });
    }
    let result = response.get("result");
    let status = result
        .and_then(|r| r.get("status"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if status != "Success" {
        let message = result
            .and_then(|r| r.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if !message.is_empty() {
            return Err(ConversionWebhookError::Failed(message.to_string()));
        }
        return Err(ConversionWebhookError::Status(status.to_string()));
    }
    match response.get_mut("convertedObjects").map(Value::take) {
        Some(Value::Array(objects)) => Ok(objects),
        _ => Ok(Vec::new()),
    }
}

/// Why a converted object was refused, worded by the stage of kube's checks.
#[derive(Debug, PartialEq)]
pub enum Refusal {
    /// Not an object with a `kind` (kube's decoding error, served as it is).
    Undecodable(String),
    /// Wrong group/version or kind: `returned invalid object at index 0: ...`.
    AtIndex(String),
    /// Kind, name, namespace or UID changed: `returned invalid object: ...`.
    Object(String),
    /// Labels or annotations not acceptable: `returned invalid metadata: ...`.
    Metadata(String),
}

impl Refusal {
    /// The message kube gives for a refused object of a conversion from `gvk`.
    pub fn message(&self, gvk: &str) -> String {
        match self {
            Refusal::Undecodable(e) => e.clone(),
            Refusal::AtIndex(e) => {
                format!("conversion webhook for {gvk} returned invalid object at index 0: {e}")
            }
            Refusal::Object(e) => {
                format!("conversion webhook for {gvk} returned invalid object: {e}")
            }
            Refusal::Metadata(e) => {
                format!("conversion webhook for {gvk} returned invalid metadata: {e}")
            }
        }
    }
}

/// Check one object a webhook converted to `desired` (`group/version`) against its
/// original and keep only what a webhook may change: everything but `metadata`, of
/// which only labels and annotations (the rest is restored from the original).
pub fn webhook_accept_converted(
    original: &Value,
    mut converted: Value,
    desired: &str,
) -> Result<Value, Refusal> {
    let text = |v: &Value, path: &str| {
        v.pointer(path)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let kind = converted.get("kind").and_then(Value::as_str).unwrap_or("");
    if !converted.is_object() && !converted.is_null() {
        return Err(Refusal::Undecodable(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(&converted)
        )));
    }
    if kind.is_empty() {
        return Err(Refusal::Undecodable(format!(
            "Object 'Kind' is missing in '{converted}'"
        )));
    }
    let gv = group_version_string(
        converted
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or(""),
    );
    if gv != desired {
        return Err(Refusal::AtIndex(format!(
            "invalid groupVersion (expected {desired}, received {gv})"
        )));
    }
    let original_kind = text(original, "/kind");
    if kind != original_kind {
        return Err(Refusal::AtIndex(format!(
            "invalid kind (expected {original_kind}, received {kind})"
        )));
    }
    for (what, path) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (e, a) = (text(original, path), text(&converted, path));
        if e != a {
            return Err(Refusal::Object(format!(
                "must have the same {what}: {e} != {a}"
            )));
        }
    }
    let meta = restore_metadata(original, converted.get_mut("metadata").map(Value::take))
        .map_err(Refusal::Metadata)?;
    if let Some(o) = converted.as_object_mut() {
        o.insert("metadata".into(), Value::Object(meta));
    }
    Ok(converted)
}

/// kube's `restoreObjectMeta`: the original's metadata with the labels and annotations
/// the webhook answered (validated when they changed).
fn restore_metadata(
    original: &Value,
    response_meta: Option<Value>,
) -> Result<serde_json::Map<String, Value>, String> {
    let Some(response_meta) = response_meta else {
        return Err("missing metadata in converted object".into());
    };
    let Value::Object(mut response_meta) = response_meta else {
        return Err(format!(
            "invalid metadata of type {} in converted object",
            go_type_name(&response_meta)
        ));
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for fld in ["labels", "annotations"] {
        match response_meta.remove(fld) {
            None | Some(Value::Null) => {
                meta.remove(fld);
            }
            Some(Value::Object(m)) => {
                let mut strings = std::collections::BTreeMap::new();
                for (k, v) in &m {
                    let Some(v) = v.as_str() else {
                        return Err(format!(
                            "metadata.{fld}[{k}] must be a string, but is {} in converted object",
                            go_type_name(v)
                        ));
                    };
                    strings.insert(k.clone(), v.to_string());
                }
                if meta.get(fld).and_then(Value::as_object) != Some(&m) {
                    let errs = if fld == "labels" {
                        crate::schema::objectmeta::validate_labels(
                            &strings,
                            &crate::field::Path::new("metadata").child("labels"),
                        )
                    } else {
                        crate::schema::objectmeta::validate_annotations(
                            &strings,
                            &crate::field::Path::new("metadata").child("annotation"),
                        )
                    };
                    if !errs.is_empty() {
                        return Err(crate::field::aggregate_message(&errs));
                    }
                }
                meta.insert(fld.into(), Value::Object(m));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{fld} of type {} in converted object",
                    go_type_name(&other)
                ))
            }
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{default_deprecation_warning, VersionInfo};
    use serde_json::json;

    fn version(name: &str, served: bool, deprecated: bool) -> VersionInfo {
        VersionInfo {
            name: name.into(),
            served,
            storage: false,
            deprecated,
            deprecation_warning: None,
            schema: None,
            status_subresource: false,
            scale: None,
            printer_columns: Vec::new(),
            selectable_fields: Vec::new(),
        }
    }

    #[test]
    fn deprecation_warning_names_the_newest_served_version() {
        let versions = [
            version("v1alpha1", true, true),
            version("v1beta1", true, true),
            version("v1", true, false),
            version("v2", false, false),
        ];
        assert_eq!(
            default_deprecation_warning("example.com", "Widget", "v1alpha1", &versions),
            "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"
        );
    }

    #[test]
    fn deprecation_warning_without_a_newer_version() {
        let versions = [version("v1", true, false), version("v2", true, true)];
        assert_eq!(
            default_deprecation_warning("example.com", "Widget", "v2", &versions),
            "example.com/v2 Widget is deprecated"
        );
    }

    /// A two-version CRD: v1beta1 has `spec.size`, v1 has `spec.size` and `spec.color`
    /// with default `blue`; v1 is the storage version.
    fn widgets() -> CompiledCrd {
        let schema = |extra: Value| {
            json!({"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": extra}
            }}})
        };
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [
                    {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                     "schema": schema(json!({"size": {"type": "integer"}, "legacy": {"type": "string"}}))},
                    {"name": "v1", "served": true, "storage": true,
                     "schema": schema(json!({"size": {"type": "integer"},
                                              "color": {"type": "string", "default": "blue"}}))}
                ]
            }
        });
        match CompiledCrd::compile(crd, 1) {
            Ok(c) => c,
            Err(e) => panic!("compiling: {e}"),
        }
    }

    #[test]
    fn created_through_v1beta1_is_stored_as_v1_without_v1beta1_only_fields() {
        let crd = widgets();
        let mut obj = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3, "legacy": "x"}});
        to_storage(&crd, &mut obj);
        assert_eq!(
            obj,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}})
        );
    }

    #[test]
    fn read_through_each_version_applies_the_storage_versions_defaults() {
        let crd = widgets();
        let stored = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3}});
        let mut v1 = stored.clone();
        to_served(&crd, &crd.versions[1].schema(), &mut v1);
        assert_eq!(
            v1,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3, "color": "blue"}})
        );
        // v1beta1 has no `color`: the default applied by v1 is pruned again.
        let mut beta = stored;
        to_served(&crd, &crd.versions[0].schema(), &mut beta);
        assert_eq!(
            beta,
            json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}})
        );
    }

    #[test]
    fn objects_stored_in_an_older_version_are_decoded_by_its_schema() {
        let crd = widgets();
        let mut obj = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 1, "legacy": "kept", "other": 1}});
        to_served(&crd, &crd.versions[0].schema(), &mut obj);
        assert_eq!(
            obj["spec"],
            json!({"size": 1, "legacy": "kept"}),
            "pruned by v1beta1, no v1 default"
        );
    }

    #[test]
    fn webhook_review_uses_the_first_supported_review_version() {
        let obj = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget"});
        let review = webhook_review(
            vec![obj.clone()],
            "example.com/v1",
            "u1",
            &["v2".into(), "v1".into(), "v1beta1".into()],
        );
        let review = review.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v1");
        assert_eq!(review["request"]["objects"], json!([obj]));
        assert_eq!(
            webhook_review(Vec::new(), "example.com/v1", "u1", &["v2".into()]),
            Err(ConversionWebhookError::ReviewVersions)
        );
    }

    #[test]
    fn webhook_answers_are_checked_as_kube_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(
            webhook_converted_objects("v1", "u1", ok.clone()),
            Ok(vec![json!({"a": 1})])
        );
        assert_eq!(
            webhook_converted_objects("v1", "u2", ok).map_err(|e| e.to_string()),
            Err("expected response.uid=\"u2\", got \"u1\"".into())
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Failure"}}});
        assert_eq!(
            webhook_converted_objects("v1", "u1", failed).map_err(|e| e.to_string()),
            Err("response.result.status was 'Failure', not 'Success'".into())
        );
        assert_eq!(
            webhook_converted_objects("v1", "u1", json!({"kind": "Other"})).map_err(|e| e.to_string()),
            Err("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got /, Kind=Other".into())
        );
    }

    #[test]
    fn webhook_may_change_labels_but_not_names() {
        let original = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
            "metadata": {"name": "w", "uid": "1", "generation": 2, "labels": {"a": "1"}}});
        let converted = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "uid": "1", "generation": 9, "labels": {"b": "2"}},
            "spec": {"x": 1}});
        assert_eq!(
            webhook_accept_converted(&original, converted, "example.com/v1"),
            Ok(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "uid": "1", "generation": 2, "labels": {"b": "2"}},
                "spec": {"x": 1}}))
        );
        let renamed = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "x", "uid": "1"}});
        let refusal = webhook_accept_converted(&original, renamed, "example.com/v1");
        assert_eq!(
            refusal.map_err(|r| r.message("example.com/v1beta1, Kind=Widget")),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid object: must have the same name: w != x".into())
        );
    }

    #[test]
    fn webhook_answers_in_the_wrong_version_or_kind_are_refused_at_index_0() {
        let original = json!({"apiVersion": "example.com/v1beta1", "kind": "Widget",
            "metadata": {"name": "w"}});
        let gvk = "example.com/v1beta1, Kind=Widget";
        let refuse = |converted: Value| {
            webhook_accept_converted(&original, converted, "example.com/v1")
                .map_err(|r| r.message(gvk))
        };
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}})),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected example.com/v1, received example.com/v2)".into())
        );
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "w"}})),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid object at index 0: invalid kind (expected Widget, received Gadget)".into())
        );
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v1"})),
            Err("Object 'Kind' is missing in '{\"apiVersion\":\"example.com/v1\"}'".into())
        );
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid object: must have the same name: w != ".into()),
            "kube compares names before it looks for metadata"
        );
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"a": 1}}})),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid metadata: metadata.labels[a] must be a string, but is int64 in converted object".into())
        );
        // Kube decodes the response as unstructured JSON: an integer past int64 is a float64.
        assert_eq!(
            refuse(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"a": 9223372036854775808u64}}})),
            Err("conversion webhook for example.com/v1beta1, Kind=Widget returned invalid metadata: metadata.labels[a] must be a string, but is float64 in converted object".into())
        );
    }

    #[test]
    fn empty_objects_and_objects_in_the_desired_version_are_not_sent() {
        assert!(is_empty_object(&json!({"apiVersion": "a/v1", "kind": "K"})));
        assert!(!is_empty_object(
            &json!({"apiVersion": "a/v1", "kind": "K", "spec": {}})
        ));
        assert_eq!(group_version_string("example.com/v1"), "example.com/v1");
        assert_eq!(group_version_string("v1"), "v1");
        assert_eq!(group_version_string("a/b/c"), "");
    }
}
