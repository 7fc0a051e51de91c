//! Defaulting of CRDs (kube's v1 defaults) and the status parts of kube's
//! `PrepareForCreate`/`PrepareForUpdate`.

use super::{is_empty_string_or_null, storage_version_name};
use serde_json::{json, Value};

/// Apply the `apiextensions.k8s.io/v1` defaults kube applies when decoding a CRD:
/// `names.singular` (lower-case kind), `names.listKind` (`<kind>List`),
/// `conversion` (`{strategy: None}`), a conversion webhook service's `port` (443),
/// `status.storedVersions` (the storage version, when empty), and the
/// always-serialized `served`/`storage` booleans of each version.
pub fn default_crd(crd: &mut Value) {
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if !kind.is_empty() {
            if is_empty_string_or_null(names.get("singular")) {
                names.insert("singular".into(), json!(kind.to_lowercase()));
            }
            if is_empty_string_or_null(names.get("listKind")) {
                names.insert("listKind".into(), json!(format!("{kind}List")));
            }
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
        .and_then(Value::as_object_mut)
    {
        if service.get("port").is_none_or(Value::is_null) {
            service.insert("port".into(), json!(443));
        }
    }
    if let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut) {
        for v in versions.iter_mut().filter_map(Value::as_object_mut) {
            // Go's non-omitempty booleans: kube always writes them back.
            for key in ["served", "storage"] {
                if v.get(key).is_none_or(Value::is_null) {
                    v.insert(key.into(), json!(false));
                }
            }
        }
    }
    if let (Some(storage), Some(obj)) = (storage, crd.as_object_mut()) {
        let status = obj.entry("status").or_insert_with(|| json!({}));
        if let Some(status) = status.as_object_mut() {
            let empty = status
                .get("storedVersions")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            if empty {
                status.insert("storedVersions".into(), json!([storage]));
            }
        }
    }
}

/// The status part of kube's `PrepareForCreate` for CRDs: whatever status the client
/// sent is dropped, and `storedVersions` starts with the storage version. Call it after
/// [`default_crd`] and before [`validate_crd`]; generation and other system metadata are
/// the generic object code's.
///
/// [`validate_crd`]: super::validate_crd
pub fn reset_status_for_create(crd: &mut Value) {
    // Without a storage version kube's list stays nil: `null` in its messages.
    let stored = match storage_version_name(crd) {
        Some(v) => json!([v]),
        None => Value::Null,
    };
    if let Some(obj) = crd.as_object_mut() {
        obj.insert("status".into(), json!({"storedVersions": stored}));
    }
}

/// The status part of kube's `PrepareForUpdate` for CRDs (main resource): the status is
/// the stored one, with the (possibly new) storage version appended to
/// `storedVersions`. Call it after [`default_crd`] and before [`validate_crd_update`].
///
/// [`validate_crd_update`]: super::validate_crd_update
pub fn carry_status_for_update(new: &mut Value, old: &Value) {
    let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
    if let (Some(storage), Some(st)) = (storage_version_name(new), status.as_object_mut()) {
        let list = st.entry("storedVersions").or_insert_with(|| json!([]));
        if !list.is_array() {
            *list = json!([]);
        }
        if let Some(list) = list.as_array_mut() {
            if !list.iter().any(|v| v.as_str() == Some(storage.as_str())) {
                list.push(json!(storage));
            }
        }
    }
    if let Some(obj) = new.as_object_mut() {
        obj.insert("status".into(), status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::tests::widget_crd;

    #[test]
    fn defaulting_fills_what_kube_defaults() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]
            .as_object_mut()
            .unwrap()
            .remove("served");
        default_crd(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"], json!({"strategy": "None"}));
        assert_eq!(crd["spec"]["versions"][0]["served"], false);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        // Explicit names are kept.
        let mut crd = widget_crd();
        crd["spec"]["names"]["singular"] = json!("wid");
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}});
        default_crd(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "wid");
        assert_eq!(
            crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"],
            443
        );
    }
}
