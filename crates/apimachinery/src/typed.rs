//! What kube's Go types make of JSON, for the built-in kinds: their OpenAPI
//! definitions (`openapi_builtin.json`), `encoding/json`'s type errors, the typed round
//! trip (nulls are zero values, empty `omitempty` fields are not written), and the
//! structural schema a kind's definition describes.

use crate::object;
use crate::schema::structural::{AdditionalProperties, Structural};
use crate::selector::SelectorError;
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// Every built-in definition (kube's `definitions` of `/openapi/v2`): the schemas of
/// kube v1.36's recorded `/openapi/v3` documents, merged and written in v2's form by
/// `scripts/kube-api-data.py`; regenerate deliberately rather than edit by hand.
const BUILTIN_DEFINITIONS: &str = include_str!("openapi_builtin.json");

/// The built-in definitions by name (`io.k8s.api.core.v1.ConfigMap`, ...).
pub fn builtin_definitions() -> &'static Map<String, Value> {
    static DEFS: OnceLock<Map<String, Value>> = OnceLock::new();
    DEFS.get_or_init(|| serde_json::from_str(BUILTIN_DEFINITIONS).unwrap_or_default())
}

/// `metadata.name` / `metadata.namespace`, the field labels every kind supports.
pub fn meta_field_value(obj: &Value, field: &str) -> Result<Option<String>, SelectorError> {
    match field {
        "metadata.name" => Ok(Some(object::name(obj).to_string())),
        "metadata.namespace" => Ok(Some(object::namespace(obj).to_string())),
        _ => Err(SelectorError::FieldLabelNotSupported(field.to_string())),
    }
}

/// The field-selector value of a kind kube registers no field labels for (its
/// `DefaultMetaV1FieldSelectorConversion`): `metadata.name` and `metadata.namespace`
/// only, anything else `"x" is not a known field selector: ...`.
pub fn default_field_value(obj: &Value, field: &str) -> Result<Option<String>, SelectorError> {
    meta_field_value(obj, field).map_err(|_| SelectorError::FieldLabelUnknown(field.to_string()))
}

/// A string field of an object at a JSON pointer (`""` when absent, as Go's zero value).
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// A `[]byte` field that is no base64 (Go's `base64.CorruptInputError`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("illegal base64 data at input byte {at}")]
pub struct Base64Error {
    /// The offset of the first byte that does not fit.
    pub at: usize,
}

/// Go's `base64.StdEncoding` check of a `[]byte` field, with its error
/// (`illegal base64 data at input byte N`); newlines are skipped as Go skips them.
pub fn check_base64(s: &str) -> Result<(), Base64Error> {
    let b = s.as_bytes();
    let err = |at: usize| Err(Base64Error { at });
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let in_alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            if si == b.len() {
                return if j == 0 { Ok(()) } else { err(si - j) };
            }
            let c = b[si];
            si += 1;
            if in_alphabet(c) {
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return err(si - 1);
            }
            if j == 2 {
                // "==" is expected; the first "=" is consumed.
                while si < b.len() && is_newline(b[si]) {
                    si += 1;
                }
                if si == b.len() {
                    return err(b.len());
                }
                if b[si] != b'=' {
                    return err(si - 1);
                }
                si += 1;
            }
            while si < b.len() && is_newline(b[si]) {
                si += 1;
            }
            return if si < b.len() { err(si) } else { Ok(()) };
        }
    }
}

/// Go's `encoding/json` error when `obj` does not fit the Go types of OpenAPI
/// definition `definition` (kube decodes built-in kinds into typed structs):
/// `json: cannot unmarshal number into Go struct field ConfigMap.data of type string`.
pub fn go_type_error(obj: &Value, definition: &str) -> Option<String> {
    let defs = builtin_definitions();
    let def = defs.get(definition)?;
    let name = definition.rsplit('.').next().unwrap_or(definition);
    go_struct_error(obj, def, defs, name, &mut Vec::new(), 0)
}

/// The first mismatch among the fields of a Go struct; `stack` is the field path so far.
fn go_struct_error<'v>(
    obj: &'v Value,
    def: &Value,
    defs: &Map<String, Value>,
    struct_name: &str,
    stack: &mut Vec<&'v str>,
    depth: usize,
) -> Option<String> {
    let fields = obj.as_object()?;
    let props = def.get("properties").and_then(Value::as_object)?;
    for (k, v) in fields {
        let Some(prop) = props.get(k) else { continue };
        stack.push(k);
        let err = go_value_error(v, prop, defs, struct_name, stack, depth + 1);
        stack.pop();
        if err.is_some() {
            return err;
        }
    }
    None
}

/// The Go type of a schema node, named only for an error message.
enum GoType<'a> {
    /// A definition (`$ref`), by its short name: `v1.ObjectMeta`.
    Ref(&'a str),
    /// `string`, `[]uint8`, `bool`, `float64`, or an integer's format (`int64`).
    Scalar(&'a str),
    /// A slice of the items' type (`[]interface {}` without items).
    Slice(Option<&'a Value>),
    /// A map of the additional properties' type (`map[string]interface {}` without).
    Map(Option<&'a Value>),
    /// `interface {}`.
    Interface,
}

impl GoType<'_> {
    /// Go's name of the type: `[]v1.OwnerReference`, `map[string]string`.
    fn name(&self, defs: &Map<String, Value>) -> String {
        match self {
            GoType::Ref(short) => format!("v1.{short}"),
            GoType::Scalar(t) => t.to_string(),
            GoType::Slice(Some(items)) => format!("[]{}", go_type_of(items, defs).0.name(defs)),
            GoType::Slice(None) => "[]interface {}".to_string(),
            GoType::Map(Some(ap)) => format!("map[string]{}", go_type_of(ap, defs).0.name(defs)),
            GoType::Map(None) => "map[string]interface {}".to_string(),
            GoType::Interface => "interface {}".to_string(),
        }
    }
}

/// The Go type of a schema node, and the node it resolves to (a definition's, for a
/// `$ref`).
fn go_type_of<'a>(node: &'a Value, defs: &'a Map<String, Value>) -> (GoType<'a>, &'a Value) {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let full = r.rsplit('/').next().unwrap_or("");
        let short = full.rsplit('.').next().unwrap_or(full);
        if let Some(target) = defs.get(full) {
            return (GoType::Ref(short), target);
        }
    }
    let ty = match node.get("type").and_then(Value::as_str).unwrap_or("") {
        "string" if node.get("format").and_then(Value::as_str) == Some("byte") => {
            GoType::Scalar("[]uint8")
        }
        "string" => GoType::Scalar("string"),
        "boolean" => GoType::Scalar("bool"),
        "number" => GoType::Scalar("float64"),
        "integer" => GoType::Scalar(
            node.get("format")
                .and_then(Value::as_str)
                .unwrap_or("int64"),
        ),
        "array" => GoType::Slice(node.get("items")),
        "object" => GoType::Map(node.get("additionalProperties").filter(|ap| ap.is_object())),
        _ => GoType::Interface,
    };
    (ty, node)
}

/// The first mismatch of one value (Go names the innermost struct and the full path).
fn go_value_error<'v>(
    v: &'v Value,
    node: &Value,
    defs: &Map<String, Value>,
    struct_name: &str,
    stack: &mut Vec<&'v str>,
    depth: usize,
) -> Option<String> {
    if v.is_null() || depth > MAX_REF_DEPTH {
        return None;
    }
    let (go_type, target) = go_type_of(node, defs);
    // The path, the type and the value's kind are named only in an error.
    let mismatch = |stack: &[&str], what: &str| {
        let path = stack.join(".");
        let go_type = go_type.name(defs);
        Some(format!(
            "json: cannot unmarshal {what} into Go struct field {struct_name}.{path} of type {go_type}"
        ))
    };
    let kind = || crate::goformat::go_json_kind(v);
    match (&go_type, v) {
        (GoType::Ref(name), _) => {
            // Time and MicroTime decode themselves from strings.
            if target.get("type").and_then(Value::as_str) == Some("string") {
                return if v.is_string() {
                    None
                } else {
                    mismatch(stack, kind())
                };
            }
            // IntOrString and Quantity (`oneOf` scalars) decode from strings and numbers.
            if target.get("type").is_none() && target.get("oneOf").is_some() {
                return if v.is_string() || v.is_number() {
                    None
                } else {
                    mismatch(stack, kind())
                };
            }
            if !v.is_object() {
                return mismatch(stack, kind());
            }
            go_struct_error(v, target, defs, name, stack, depth + 1)
        }
        (GoType::Scalar("string" | "[]uint8"), Value::String(_))
        | (GoType::Scalar("bool"), Value::Bool(_))
        | (GoType::Scalar("float64"), Value::Number(_)) => None,
        (GoType::Scalar("int32" | "int64"), Value::Number(n)) => {
            if n.is_i64() || n.is_u64() {
                None
            } else {
                mismatch(stack, &format!("number {n}"))
            }
        }
        (GoType::Slice(items), Value::Array(values)) => {
            let item = (*items)?;
            values
                .iter()
                .find_map(|i| go_value_error(i, item, defs, struct_name, stack, depth + 1))
        }
        (GoType::Map(ap), Value::Object(m)) => {
            let ap = (*ap)?;
            m.values()
                .find_map(|i| go_value_error(i, ap, defs, struct_name, stack, depth + 1))
        }
        (GoType::Map(None) | GoType::Interface, _) => None,
        _ => mismatch(stack, kind()),
    }
}

/// Optional list fields kube's types write without `omitempty` (`null` when nil): a
/// `null` or empty value there is kept as it is.
const NOT_OMITEMPTY: [(&str, &str); 4] = [
    ("io.k8s.api.rbac.v1.Role", "rules"),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules"),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "conditions",
    ),
    (
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "storedVersions",
    ),
];

/// Fields Go always writes, as `null` when zero: times kube's types hold as Go structs
/// (`metav1.Time`, not a pointer; `omitempty` does not apply to structs) and lists
/// without `omitempty`.
const WRITTEN_WHEN_ZERO: [(&str, &str); 27] = [
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
        "currentMetrics",
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.apps.v1.DeploymentCondition",
        "lastTransitionTime",
    ),
    ("io.k8s.api.apps.v1.DeploymentCondition", "lastUpdateTime"),
    (
        "io.k8s.api.apps.v1.ReplicaSetCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.autoscaling.v1.HorizontalPodAutoscalerCondition",
        "lastTransitionTime",
    ),
    ("io.k8s.api.batch.v1.JobCondition", "lastProbeTime"),
    ("io.k8s.api.batch.v1.JobCondition", "lastTransitionTime"),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.certificates.v1.CertificateSigningRequestCondition",
        "lastUpdateTime",
    ),
    ("io.k8s.api.core.v1.ContainerStateRunning", "startedAt"),
    ("io.k8s.api.core.v1.ContainerStateTerminated", "finishedAt"),
    ("io.k8s.api.core.v1.ContainerStateTerminated", "startedAt"),
    (
        "io.k8s.api.core.v1.NamespaceCondition",
        "lastTransitionTime",
    ),
    ("io.k8s.api.core.v1.NodeCondition", "lastHeartbeatTime"),
    ("io.k8s.api.core.v1.NodeCondition", "lastTransitionTime"),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimCondition",
        "lastProbeTime",
    ),
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimCondition",
        "lastTransitionTime",
    ),
    ("io.k8s.api.core.v1.PodCondition", "lastProbeTime"),
    ("io.k8s.api.core.v1.PodCondition", "lastTransitionTime"),
    ("io.k8s.api.core.v1.PreferAvoidPodsEntry", "evictionTime"),
    (
        "io.k8s.api.core.v1.ReplicationControllerCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.flowcontrol.v1.FlowSchemaCondition",
        "lastTransitionTime",
    ),
    (
        "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationCondition",
        "lastTransitionTime",
    ),
    ("io.k8s.api.storage.v1.VolumeError", "time"),
];

/// The definition metadata is round-tripped by (`schema::prune` treats ObjectMeta).
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// kube's typed decoding then encoding of a built-in object of OpenAPI definition
/// `definition`, on its JSON: a `null` field is Go's zero value, so it is not written
/// (defaults then apply), and an empty list or map in an optional (`omitempty`) field
/// is not written either. Objects (Go structs) stay even when empty.
pub fn go_round_trip(obj: &mut Value, definition: &str) {
    let defs = builtin_definitions();
    if let Some(def) = defs.get(definition) {
        round_trip_struct(obj, definition, def, defs, true);
    }
}

/// The round trip of an ObjectMeta inside an object (a pod template's): every field is
/// `omitempty` (`creationTimestamp` `omitzero` since kube v1.34), so a `null`, an empty
/// list and an empty map are not written.
fn round_trip_nested_meta(meta: &mut Value) {
    if let Some(m) = meta.as_object_mut() {
        m.retain(|_, v| match v {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        });
    }
}

/// [`go_round_trip`] of one Go struct (`def`, named `name`; `root`: the object itself,
/// whose metadata `schema::prune` treats).
fn round_trip_struct(
    obj: &mut Value,
    name: &str,
    def: &Value,
    defs: &Map<String, Value>,
    root: bool,
) {
    let (Some(fields), Some(props)) = (
        obj.as_object_mut(),
        def.get("properties").and_then(Value::as_object),
    ) else {
        return;
    };
    let required = |k: &str| {
        def.get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|f| f.as_str() == Some(k)))
    };
    for (_, field) in WRITTEN_WHEN_ZERO.iter().filter(|(d, _)| *d == name) {
        fields.entry(*field).or_insert(Value::Null);
    }
    fields.retain(|k, v| {
        let Some(prop) = props.get(k) else {
            return true;
        };
        if NOT_OMITEMPTY.contains(&(name, k.as_str()))
            || WRITTEN_WHEN_ZERO.contains(&(name, k.as_str()))
        {
            return true;
        }
        let empty_collection = match v {
            Value::Null => return false,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty() && prop.get("additionalProperties").is_some(),
            _ => false,
        };
        !empty_collection || required(k)
    });
    for (k, v) in fields.iter_mut() {
        if let Some(prop) = props.get(k) {
            round_trip_value(v, prop, defs, root);
        }
    }
}

/// [`go_round_trip`] of a field's value: structs, and the items of lists and maps.
fn round_trip_value(v: &mut Value, node: &Value, defs: &Map<String, Value>, root: bool) {
    if let Some(r) = node.get("$ref").and_then(Value::as_str) {
        let full = r.rsplit('/').next().unwrap_or("");
        if full == OBJECT_META {
            if !root {
                round_trip_nested_meta(v);
            }
        } else if let Some(target) = defs.get(full) {
            round_trip_struct(v, full, target, defs, false);
        }
        return;
    }
    match v {
        Value::Array(items) => {
            if let Some(item) = node.get("items") {
                for i in items.iter_mut() {
                    round_trip_value(i, item, defs, false);
                }
            }
        }
        Value::Object(m) => {
            if let Some(ap @ Value::Object(_)) = node.get("additionalProperties") {
                for i in m.values_mut() {
                    round_trip_value(i, ap, defs, false);
                }
            }
        }
        _ => {}
    }
}

/// How deep `$ref`s are followed (a CronJob's pod template nests about 20 levels).
const MAX_REF_DEPTH: usize = 40;

/// The structural schema of an OpenAPI v2 definition, `$ref`s resolved against `defs`.
/// The root's `metadata` stays a plain object: pruning treats ObjectMeta itself. A
/// definition met again inside itself (JSONSchemaProps) and an object without
/// properties (RawExtension) keep whatever they hold, as Go's raw JSON does.
pub fn structural_from_definition(
    def: &Value,
    defs: &Map<String, Value>,
    depth: usize,
) -> Structural {
    structural_at(def, defs, depth, &mut Vec::new())
}

fn preserve_unknown() -> Structural {
    Structural {
        type_: "object".into(),
        x_preserve_unknown_fields: true,
        ..Default::default()
    }
}

fn structural_at(
    def: &Value,
    defs: &Map<String, Value>,
    depth: usize,
    expanding: &mut Vec<String>,
) -> Structural {
    let resolved;
    let mut expanded = None;
    let def = match def.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or("");
            if depth >= MAX_REF_DEPTH || expanding.iter().any(|n| n == name) {
                return preserve_unknown();
            }
            match defs.get(name) {
                Some(target) => {
                    // The referring property's extensions and default apply on top of the target.
                    let mut merged = target.clone();
                    if let (Some(m), Some(own)) = (merged.as_object_mut(), def.as_object()) {
                        for (k, v) in own
                            .iter()
                            .filter(|(k, _)| k.starts_with("x-kubernetes-") || *k == "default")
                        {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    expanding.push(name.to_string());
                    expanded = Some(());
                    resolved = merged;
                    &resolved
                }
                None => def,
            }
        }
        _ => def,
    };
    let str_of = |k: &str| def.get(k).and_then(Value::as_str).map(str::to_string);
    let mut s = Structural {
        type_: str_of("type").unwrap_or_default(),
        default: def.get("default").cloned(),
        x_int_or_string: str_of("format").as_deref() == Some("int-or-string"),
        x_list_type: str_of("x-kubernetes-list-type"),
        x_map_type: str_of("x-kubernetes-map-type"),
        x_list_map_keys: def
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        ..Default::default()
    };
    s.value_validation.format = str_of("format");
    // A list patched by merge key and not typed otherwise merges as a map keyed by it.
    if s.x_list_type.is_none() && str_of("x-kubernetes-patch-strategy").as_deref() == Some("merge")
    {
        if let Some(key) = str_of("x-kubernetes-patch-merge-key") {
            s.x_list_type = Some("map".into());
            s.x_list_map_keys = vec![key];
        }
    }
    if let Some(items) = def.get("items") {
        s.items = Some(Box::new(structural_at(items, defs, depth + 1, expanding)));
    }
    if let Some(props) = def.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let child = if depth == 0 && k == "metadata" {
                Structural {
                    type_: "object".into(),
                    ..Default::default()
                }
            } else {
                structural_at(v, defs, depth + 1, expanding)
            };
            s.properties.insert(k.clone(), child);
        }
    }
    match def.get("additionalProperties") {
        Some(Value::Bool(b)) => s.additional_properties = Some(AdditionalProperties::Bool(*b)),
        Some(v @ Value::Object(_)) => {
            s.additional_properties = Some(AdditionalProperties::Schema(Box::new(structural_at(
                v,
                defs,
                depth + 1,
                expanding,
            ))))
        }
        _ => {}
    }
    if s.type_ == "object" && def.get("properties").is_none() && s.additional_properties.is_none() {
        s.x_preserve_unknown_fields = true;
    }
    if expanded.is_some() {
        expanding.pop();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::prune;
    use serde_json::json;

    #[test]
    fn typed_round_trip_writes_zero_struct_times_as_null() {
        let mut d = json!({"status": {"conditions": [
            {"type": "Progressing", "status": "True"},
            {"type": "Available", "status": "True", "lastUpdateTime": "2024-01-01T00:00:00Z",
             "lastTransitionTime": null}
        ]}});
        go_round_trip(&mut d, "io.k8s.api.apps.v1.Deployment");
        assert_eq!(
            d["status"]["conditions"],
            json!([
                {"type": "Progressing", "status": "True", "lastUpdateTime": null,
                 "lastTransitionTime": null},
                {"type": "Available", "status": "True", "lastUpdateTime": "2024-01-01T00:00:00Z",
                 "lastTransitionTime": null}
            ])
        );
    }

    #[test]
    fn typed_round_trip_drops_nulls_and_empty_omitempty_collections_like_go() {
        let mut hooks = json!({
            "apiVersion": null, "metadata": {"name": "x"},
            "webhooks": [{
                "name": "a.example.com", "objectSelector": null, "namespaceSelector": {},
                "failurePolicy": null, "timeoutSeconds": null, "matchConditions": [],
                "admissionReviewVersions": [],
                "rules": [{"scope": null, "apiGroups": [""], "resources": []}],
                "clientConfig": {"url": null, "service": {"name": "s", "path": null}}
            }]
        });
        go_round_trip(
            &mut hooks,
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        );
        // Structs stay when empty; a required list stays (no `omitempty` in Go).
        assert_eq!(
            hooks,
            json!({"metadata": {"name": "x"}, "webhooks": [{
                "name": "a.example.com", "namespaceSelector": {}, "admissionReviewVersions": [],
                "rules": [{"apiGroups": [""]}],
                "clientConfig": {"service": {"name": "s"}}
            }]})
        );
        let mut empty = json!({"metadata": {"name": "x"}, "webhooks": []});
        go_round_trip(
            &mut empty,
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        );
        assert_eq!(empty, json!({"metadata": {"name": "x"}}));

        let mut lease = json!({"spec": {"holderIdentity": null}});
        go_round_trip(&mut lease, "io.k8s.api.coordination.v1.Lease");
        assert_eq!(lease, json!({"spec": {}}));
        let mut cm = json!({"data": null, "binaryData": {}, "metadata": {"labels": {}}});
        go_round_trip(&mut cm, "io.k8s.api.core.v1.ConfigMap");
        // Metadata is ObjectMeta's business (schema::prune).
        assert_eq!(cm, json!({"metadata": {"labels": {}}}));
        // Role.rules has no `omitempty`: Go writes a nil slice as `null`.
        let mut role = json!({"rules": null});
        go_round_trip(&mut role, "io.k8s.api.rbac.v1.Role");
        assert_eq!(role, json!({"rules": null}));
    }

    fn schema_of(definition: &str) -> Structural {
        let defs = builtin_definitions();
        structural_from_definition(&defs[definition], defs, 0)
    }

    #[test]
    fn service_account_secrets_merge_by_name_from_openapi_extensions() {
        let s = schema_of("io.k8s.api.core.v1.ServiceAccount");
        let secrets = &s.properties["secrets"];
        assert_eq!(secrets.x_list_type.as_deref(), Some("map"));
        assert_eq!(secrets.x_list_map_keys, vec!["name".to_string()]);
        assert_eq!(
            s.properties["imagePullSecrets"].x_list_type.as_deref(),
            Some("atomic")
        );
        let item = secrets.items.as_deref().expect("items");
        assert!(item.properties.contains_key("fieldPath"));
    }

    #[test]
    fn pruning_a_config_map_drops_unknown_fields_and_keeps_metadata() {
        let s = schema_of("io.k8s.api.core.v1.ConfigMap");
        let mut obj = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "bogus": 1},
            "data": {"k": "v"}, "spec": {"x": 1}
        });
        let report = prune::prune(&mut obj, &s, true, &prune::PruneOptions::default());
        assert_eq!(report.unknown_fields, vec!["metadata.bogus", "spec"]);
        assert_eq!(
            obj,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})
        );
    }

    #[test]
    fn base64_errors_name_the_byte_as_go_does() {
        assert!(check_base64("YWJj").is_ok());
        assert!(check_base64("YQ==").is_ok());
        assert!(check_base64("").is_ok());
        assert_eq!(
            check_base64("YW!j").unwrap_err().to_string(),
            "illegal base64 data at input byte 2"
        );
        assert_eq!(
            check_base64("abc").unwrap_err().to_string(),
            "illegal base64 data at input byte 0"
        );
        assert_eq!(
            check_base64("YWJjZ").unwrap_err().to_string(),
            "illegal base64 data at input byte 4"
        );
        assert_eq!(
            check_base64("YQ=").unwrap_err().to_string(),
            "illegal base64 data at input byte 3"
        );
    }

    #[test]
    fn type_mismatches_are_reported_as_gos_decoder_does() {
        let cm = json!({"data": {"a": 1}});
        assert_eq!(
            go_type_error(&cm, "io.k8s.api.core.v1.ConfigMap").as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            )
        );
        let lease = json!({"spec": {"leaseDurationSeconds": "15"}});
        assert_eq!(
            go_type_error(&lease, "io.k8s.api.coordination.v1.Lease").as_deref(),
            Some("json: cannot unmarshal string into Go struct field LeaseSpec.spec.leaseDurationSeconds of type int32")
        );
        let sa = json!({"secrets": {"name": "x"}});
        assert_eq!(
            go_type_error(&sa, "io.k8s.api.core.v1.ServiceAccount").as_deref(),
            Some("json: cannot unmarshal object into Go struct field ServiceAccount.secrets of type []v1.ObjectReference")
        );
        let ok = json!({"spec": {"holderIdentity": "a", "renewTime": "2024-01-01T00:00:00Z"}, "extra": 1});
        assert_eq!(go_type_error(&ok, "io.k8s.api.coordination.v1.Lease"), None);
    }

    #[test]
    fn lease_spec_times_resolve_to_strings() {
        let s = schema_of("io.k8s.api.coordination.v1.Lease");
        let spec = &s.properties["spec"];
        assert_eq!(spec.properties["renewTime"].type_, "string");
        assert_eq!(spec.properties["leaseDurationSeconds"].type_, "integer");
    }
}
