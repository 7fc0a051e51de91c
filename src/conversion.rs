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
//! write. Reads and writes use the `None` strategy (rewrite `apiVersion`), also for a
//! CRD that asks for `Webhook`: the webhook's `ConversionReview` and kube's checks of
//! its answer are here ([`webhook_review`] and after), but nothing calls a webhook yet
//! (it needs the asynchronous HTTPS client and async reads in `rest::store`).

use crate::pipeline::decode::is_foreign_kind;
use crate::pipeline::VersionSchema;
use crate::registry::catalog::CompiledCrd;
use crate::registry::crd::{compare_kube_aware_versions, VersionInfo};
use crate::schema::{default, prune};
use serde_json::Value;

/// kube's default `Warning` text for a deprecated version: `<group>/<version> <Kind> is
/// deprecated`, naming the highest-priority served, non-deprecated version that ranks
/// above it when there is one (`; use <group>/<version> <Kind>`).
pub fn default_deprecation_warning(
    group: &str,
    kind: &str,
    deprecated: &str,
    versions: &[VersionInfo],
) -> String {
    let msg = format!("{group}/{deprecated} {kind} is deprecated");
    let newer = versions
        .iter()
        .filter(|v| {
            v.served
                && !v.deprecated
                && compare_kube_aware_versions(deprecated, &v.name) == std::cmp::Ordering::Less
        })
        .max_by(|a, b| compare_kube_aware_versions(&a.name, &b.name));
    match newer {
        Some(v) => format!("{msg}; use {group}/{} {kind}", v.name),
        None => msg,
    }
}

/// Conversion strategy `None`: only `apiVersion` changes.
fn set_version(obj: &mut Value, group: &str, version: &str) {
    if let Some(m) = obj.as_object_mut() {
        m.insert(
            "apiVersion".into(),
            Value::String(format!("{group}/{version}")),
        );
    }
}

/// kube's schema coercion after decoding or converting: prune by `s` and drop the
/// `null`s it does not allow (objects of another group or kind are left alone).
fn coerce(obj: &mut Value, s: &VersionSchema) {
    if is_foreign_kind(obj, s) {
        return;
    }
    prune::prune(obj, &s.structural, true, &prune::PruneOptions::default());
    default::prune_nulls(obj, &s.structural);
}

/// The version part of an object's `apiVersion`.
fn object_version(obj: &Value) -> &str {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    api_version.rsplit_once('/').map_or("", |(_, v)| v)
}

/// The compiled schema of `version` (served or not), if the CRD has it.
fn version_schema<'a>(crd: &'a CompiledCrd, version: &str) -> Option<&'a VersionSchema> {
    crd.versions
        .iter()
        .map(|v| &v.schema)
        .find(|s| s.version == version)
}

/// An admitted object (in the addressed version) as it is stored: converted to the
/// storage version and pruned by its schema.
pub fn to_storage(crd: &CompiledCrd, obj: &mut Value) {
    let Some(storage) = crd.versions.iter().find(|v| v.storage) else {
        return;
    };
    let s = &storage.schema;
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
        coerce(obj, stored);
        if !is_foreign_kind(obj, stored) {
            default::apply_defaults(obj, &stored.structural);
        }
        if std::ptr::eq(stored, target) {
            return;
        }
    }
    set_version(obj, &crd.info.group, &target.version);
    coerce(obj, target);
}

/// Go's `GroupVersionKind.String()` of an object, as kube names it in conversion errors.
pub fn gvk_string(obj: &Value) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{group}/{version}, Kind={kind}")
}

/// Strategy `Webhook`: the `ConversionReview` kube posts for `objects` (those not yet
/// in `desired`), in the first of the CRD's `conversionReviewVersions` it speaks.
/// Groundwork: the webhook call itself is not wired into reads and writes yet.
pub fn webhook_review(
    objects: &[Value],
    desired: &str,
    uid: &str,
    review_versions: &[String],
) -> Result<Value, String> {
    let version = review_versions
        .iter()
        .find(|v| *v == "v1" || *v == "v1beta1")
        .ok_or_else(|| "no supported conversion review versions".to_string())?;
    Ok(serde_json::json!({
        "kind": "ConversionReview",
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
        "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}}
    }))
}

/// The converted objects of a webhook's answer, or kube's complaint about it (to be
/// wrapped as `conversion webhook for <gvk> failed: <complaint>`).
pub fn webhook_converted_objects(
    review_version: &str,
    expected_uid: &str,
    answer: &Value,
) -> Result<Vec<Value>, String> {
    if review_version == "v1" {
        let got = gvk_string(answer);
        let want = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        if got != want {
            return Err(format!("expected webhook response of {want}, got {got}"));
        }
    }
    let response = match answer.get("response") {
        Some(r) if !r.is_null() => r,
        _ => return Err("no response provided".into()),
    };
    let uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if review_version == "v1" && uid != expected_uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            crate::field::go_quote(expected_uid),
            crate::field::go_quote(uid)
        ));
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
            return Err(message.to_string());
        }
        return Err(format!(
            "response.result.status was '{status}', not 'Success'"
        ));
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Check one object a webhook converted against its original and keep only what a
/// webhook may change: everything but `metadata`, of which only labels and annotations.
pub fn webhook_accept_converted(original: &Value, converted: &Value) -> Result<Value, String> {
    let text = |v: &Value, path: &str| {
        v.pointer(path)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    for (what, path) in [
        ("kind", "/kind"),
        ("name", "/metadata/name"),
        ("namespace", "/metadata/namespace"),
        ("UID", "/metadata/uid"),
    ] {
        let (e, a) = (text(original, path), text(converted, path));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    let mut out = converted.clone();
    let Some(response_meta) = converted.get("metadata") else {
        return Err("missing metadata in converted object".into());
    };
    let Some(response_meta) = response_meta.as_object() else {
        return Err(format!(
            "invalid metadata of type {} in converted object",
            go_type(response_meta)
        ));
    };
    let mut meta = original
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for fld in ["labels", "annotations"] {
        match response_meta.get(fld) {
            None | Some(Value::Null) => {
                meta.remove(fld);
            }
            Some(Value::Object(m)) => {
                let mut strings = std::collections::BTreeMap::new();
                for (k, v) in m {
                    let Some(v) = v.as_str() else {
                        return Err(format!(
                            "metadata.{fld}[{k}] must be a string, but is {} in converted object",
                            go_type(v)
                        ));
                    };
                    strings.insert(k.clone(), v.to_string());
                }
                if meta.get(fld) != Some(&Value::Object(m.clone())) {
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
                meta.insert(fld.into(), Value::Object(m.clone()));
            }
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{fld} of type {} in converted object",
                    go_type(other)
                ))
            }
        }
    }
    if let Some(o) = out.as_object_mut() {
        o.insert("metadata".into(), Value::Object(meta));
    }
    Ok(out)
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        to_served(&crd, &crd.versions[1].schema, &mut v1);
        assert_eq!(
            v1,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3, "color": "blue"}})
        );
        // v1beta1 has no `color`: the default applied by v1 is pruned again.
        let mut beta = stored;
        to_served(&crd, &crd.versions[0].schema, &mut beta);
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
        to_served(&crd, &crd.versions[0].schema, &mut obj);
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
            std::slice::from_ref(&obj),
            "example.com/v1",
            "u1",
            &["v2".into(), "v1".into(), "v1beta1".into()],
        );
        let review = review.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(review["request"]["desiredAPIVersion"], "example.com/v1");
        assert_eq!(review["request"]["objects"], json!([obj]));
        assert_eq!(
            webhook_review(&[], "example.com/v1", "u1", &["v2".into()]),
            Err("no supported conversion review versions".into())
        );
    }

    #[test]
    fn webhook_answers_are_checked_as_kube_checks_them() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Success"}, "convertedObjects": [{"a": 1}]}});
        assert_eq!(
            webhook_converted_objects("v1", "u1", &ok),
            Ok(vec![json!({"a": 1})])
        );
        assert_eq!(
            webhook_converted_objects("v1", "u2", &ok),
            Err("expected response.uid=\"u2\", got \"u1\"".into())
        );
        let failed = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "u1", "result": {"status": "Failure"}}});
        assert_eq!(
            webhook_converted_objects("v1", "u1", &failed),
            Err("response.result.status was 'Failure', not 'Success'".into())
        );
        assert_eq!(
            webhook_converted_objects("v1", "u1", &json!({"kind": "Other"})),
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
            webhook_accept_converted(&original, &converted),
            Ok(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "uid": "1", "generation": 2, "labels": {"b": "2"}},
                "spec": {"x": 1}}))
        );
        let renamed = json!({"kind": "Widget", "metadata": {"name": "x", "uid": "1"}});
        assert_eq!(
            webhook_accept_converted(&original, &renamed),
            Err("must have the same name: w != x".into())
        );
    }
}
