//! Pruning: drop the fields of a custom resource that its structural schema does not
//! specify, as kube does when decoding a request body or reading from storage.
//!
//! Follows kube's `pruning` package (not the KEP's printed examples 7 and 9: there kube,
//! like the KEP's own rule 1, restarts pruning below `properties`/`additionalProperties`
//! of a `x-kubernetes-preserve-unknown-fields` node), plus the ObjectMeta part of kube's
//! decoding: unknown fields of `metadata` are dropped at the resource root and inside
//! `x-kubernetes-embedded-resource` objects.

use super::objectmeta::{META_FIELDS, OBJECT_META_FIELDS};
use crate::field::{Path, Trail};
use crate::schema::structural::{AdditionalProperties, Structural};
use serde_json::{Map, Value};

/// How to prune.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PruneOptions {
    /// The CRD's legacy `spec.preserveUnknownFields: true`: skip schema pruning, still
    /// prune unknown ObjectMeta fields.
    pub preserve_unknown_fields: bool,
    /// Drop unknown ObjectMeta fields of the root (if it is a resource root) and of
    /// embedded resources (kube's ObjectMeta round trip while decoding).
    pub prune_object_meta: bool,
}

impl Default for PruneOptions {
    fn default() -> Self {
        PruneOptions {
            preserve_unknown_fields: false,
            prune_object_meta: true,
        }
    }
}

/// What pruning removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneReport {
    /// Paths of the dropped fields in kube's order: root `metadata` fields first, then the
    /// schema-pruned fields sorted, then embedded-resource `metadata` fields sorted.
    /// Rendered as kube renders them for `unknown field "<path>"` (`spec.list[0].x`).
    pub unknown_fields: Vec<String>,
}

impl PruneReport {
    /// True if nothing was dropped.
    pub fn is_empty(&self) -> bool {
        self.unknown_fields.is_empty()
    }

    /// kube's messages for the dropped fields: `unknown field "spec.foo"`, as used for
    /// `fieldValidation=Warn` warnings and `Strict` decoding errors.
    pub fn messages(&self) -> Vec<String> {
        self.unknown_fields
            .iter()
            .map(|p| format!("unknown field \"{p}\""))
            .collect()
    }
}

/// Prune `obj` by `s`. With `is_resource_root`, `obj` is a whole custom resource: its
/// `apiVersion`, `kind` and `metadata` are implicitly specified.
pub fn prune(
    obj: &mut Value,
    s: &Structural,
    is_resource_root: bool,
    opts: &PruneOptions,
) -> PruneReport {
    let mut report = PruneReport::default();
    if opts.prune_object_meta && is_resource_root {
        if let Some(meta) = obj.get_mut("metadata") {
            let path = Trail::Root.child("metadata");
            prune_meta(meta, &path, &mut report.unknown_fields);
        }
    }
    if !opts.preserve_unknown_fields {
        let mut pruned = Vec::new();
        prune_node(obj, Some(s), is_resource_root, &Trail::Root, &mut pruned);
        pruned.sort();
        report.unknown_fields.extend(pruned);
    }
    if opts.prune_object_meta {
        let mut embedded = Vec::new();
        prune_embedded_meta(obj, s, is_resource_root, &Trail::Root, &mut embedded);
        embedded.sort();
        report.unknown_fields.extend(embedded);
    }
    report
}

/// kube's `prune`: `resource_root` marks a node whose TypeMeta/ObjectMeta fields are kept.
fn prune_node(
    x: &mut Value,
    s: Option<&Structural>,
    resource_root: bool,
    path: &Trail,
    pruned: &mut Vec<String>,
) {
    if let Some(s) = s.filter(|s| s.x_preserve_unknown_fields) {
        skip_prune(x, Some(s), resource_root, path, pruned);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                pruned.extend(m.keys().map(|k| path.child(k).render()));
                m.clear();
                return;
            };
            let keeps_meta = s.x_embedded_resource || resource_root;
            m.retain(|k, v| {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                if let Some(p) = s.properties.get(k) {
                    prune_node(v, Some(p), false, &path.child(k), pruned);
                    true
                } else if let Some(ap) = &s.additional_properties {
                    prune_node(v, ap.schema(), false, &path.child(k), pruned);
                    true
                } else {
                    // kube does not report TypeMeta/ObjectMeta dropped at a non-resource root.
                    if !META_FIELDS.contains(&k.as_str()) || !path.is_root() {
                        pruned.push(path.child(k).render());
                    }
                    false
                }
            });
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for (i, v) in a.iter_mut().enumerate() {
                prune_node(v, items, false, &path.index(i), pruned);
            }
        }
        _ => {}
    }
}

/// kube's `skipPrune`: below `x-kubernetes-preserve-unknown-fields`, unknown fields stay,
/// but specified ones are pruned by their own schema.
fn skip_prune(
    x: &mut Value,
    s: Option<&Structural>,
    resource_root: bool,
    path: &Trail,
    pruned: &mut Vec<String>,
) {
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => {
            let keeps_meta = s.x_embedded_resource || resource_root;
            for (k, v) in m.iter_mut() {
                if keeps_meta && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = s.properties.get(k) {
                    prune_node(v, Some(p), false, &path.child(k), pruned);
                } else if let Some(ap) = &s.additional_properties {
                    prune_node(v, ap.schema(), false, &path.child(k), pruned);
                }
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter_mut().enumerate() {
                skip_prune(v, s.items.as_deref(), false, &path.index(i), pruned);
            }
        }
        _ => {}
    }
}

/// kube's ObjectMeta coercion of embedded resources: walk the schema and drop unknown
/// ObjectMeta fields of every `x-kubernetes-embedded-resource` object. Paths use kube's
/// field-path rendering here (`spec.map[key].metadata.x`), unlike pruning.
fn prune_embedded_meta(
    x: &mut Value,
    s: &Structural,
    is_resource_root: bool,
    path: &Trail,
    out: &mut Vec<String>,
) {
    match x {
        Value::Object(m) => {
            // The resource root's metadata was handled before schema pruning.
            if s.x_embedded_resource && !(is_resource_root && path.is_root()) {
                if let Some(meta) = m.get_mut("metadata") {
                    prune_meta(meta, &path.child("metadata"), out);
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.properties.get(k) {
                    prune_embedded_meta(v, p, false, &path.child(k), out);
                } else if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
                    prune_embedded_meta(v, ap, false, &path.key(k), out);
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = &s.items {
                for (i, v) in a.iter_mut().enumerate() {
                    prune_embedded_meta(v, items, false, &path.index(i), out);
                }
            }
        }
        _ => {}
    }
}

/// The JSON fields of kube's `metav1.OwnerReference`.
const OWNER_REFERENCE_FIELDS: [&str; 6] = [
    "apiVersion",
    "kind",
    "name",
    "uid",
    "controller",
    "blockOwnerDeletion",
];

/// The JSON fields of kube's `metav1.ManagedFieldsEntry` (`fieldsV1` is free-form).
const MANAGED_FIELDS_ENTRY_FIELDS: [&str; 7] = [
    "manager",
    "operation",
    "apiVersion",
    "time",
    "fieldsType",
    "fieldsV1",
    "subresource",
];

/// Drop what strict decoding into `metav1.ObjectMeta` would call unknown, in the order
/// kube reports it (document order of sorted keys). Values of the wrong type are left
/// for the ObjectMeta validation to reject.
pub fn prune_object_meta(meta: &mut Value, path: &Path, out: &mut Vec<String>) {
    prune_meta(meta, &Trail::At(path), out)
}

fn prune_meta(meta: &mut Value, path: &Trail, out: &mut Vec<String>) {
    let Value::Object(m) = meta else { return };
    retain_known(m, &OBJECT_META_FIELDS, path, out, |k, v, p, out| {
        match (k, v) {
            ("ownerReferences", Value::Array(refs)) => {
                prune_list_entries(refs, &OWNER_REFERENCE_FIELDS, p, out)
            }
            ("managedFields", Value::Array(entries)) => {
                prune_list_entries(entries, &MANAGED_FIELDS_ENTRY_FIELDS, p, out)
            }
            _ => {}
        }
    });
    // kube round-trips metadata through ObjectMeta, whose `omitempty` fields vanish when
    // empty. (`managedFields: []` stays: it asks the field manager to reset tracking.)
    m.retain(|k, v| !is_omitted_when_empty(k, v));
}

/// Whether ObjectMeta's JSON encoding drops this value (`omitempty` of an empty value).
fn is_omitted_when_empty(field: &str, v: &Value) -> bool {
    match (field, v) {
        ("managedFields", _) => false,
        (_, Value::Null) => true,
        (
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion",
            Value::String(s),
        ) => s.is_empty(),
        ("generation", Value::Number(n)) => n.as_i64() == Some(0),
        ("labels" | "annotations", Value::Object(o)) => o.is_empty(),
        ("ownerReferences" | "finalizers", Value::Array(a)) => a.is_empty(),
        _ => false,
    }
}

fn prune_list_entries(list: &mut [Value], known: &[&str], path: &Trail, out: &mut Vec<String>) {
    for (i, entry) in list.iter_mut().enumerate() {
        if let Value::Object(m) = entry {
            retain_known(m, known, &path.index(i), out, |_, _, _, _| {});
        }
    }
}

fn retain_known(
    m: &mut Map<String, Value>,
    known: &[&str],
    path: &Trail,
    out: &mut Vec<String>,
    mut nested: impl FnMut(&str, &mut Value, &Trail, &mut Vec<String>),
) {
    m.retain(|k, v| {
        let p = path.child(k);
        if known.contains(&k.as_str()) {
            nested(k, v, &p, out);
            true
        } else {
            out.push(p.render());
            false
        }
    });
}

#[cfg(test)]
mod metadata_round_trip_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_omitempty_metadata_fields_vanish_like_kube() {
        let mut meta = json!({"name": "a", "labels": {}, "annotations": {}, "finalizers": [],
                              "generateName": "", "generation": 0, "deletionTimestamp": null,
                              "managedFields": [], "uid": "u"});
        let mut out = Vec::new();
        prune_object_meta(&mut meta, &Path::new("metadata"), &mut out);
        assert_eq!(meta, json!({"name": "a", "managedFields": [], "uid": "u"}));
        assert!(out.is_empty(), "nothing unknown was pruned: {out:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::props::JSONSchemaProps;
    use proptest::prelude::*;
    use serde_json::json;

    fn schema(v: Value) -> Structural {
        Structural::from_props(&JSONSchemaProps::from_value(&v).expect("schema parses"))
    }

    /// Prune a non-root value (as the KEP's examples do) and return it with the report.
    fn pruned(s: &Structural, v: Value) -> (Value, Vec<String>) {
        let mut v = v;
        let report = prune(&mut v, s, false, &PruneOptions::default());
        (v, report.unknown_fields)
    }

    #[test]
    fn pruning_kep_example_1_unspecified() {
        let s = schema(json!({"type": "object"}));
        let (v, paths) = pruned(&s, json!({"foo": 42, "json": {"bar": 43}}));
        assert_eq!(v, json!({}));
        assert_eq!(paths, vec!["foo", "json"]);
    }

    #[test]
    fn pruning_kep_example_2_properties_at_top_level() {
        let s = schema(json!({"type": "object", "properties": {"foo": {"type": "object"}}}));
        let (v, paths) = pruned(&s, json!({"foo": {"abc": 42}, "json": {"bar": 43}}));
        assert_eq!(v, json!({"foo": {}}));
        assert_eq!(paths, vec!["foo.abc", "json"]);
    }

    #[test]
    fn pruning_kep_example_3_properties_at_multiple_levels() {
        let s = schema(json!({
            "type": "object",
            "properties": {"foo": {"type": "object", "properties": {"bar": {"type": "object"}}}}
        }));
        let (v, _) = pruned(
            &s,
            json!({"foo": {"bar": {"abc": 42}, "def": 43}, "json": {"ghi": 44}}),
        );
        assert_eq!(v, json!({"foo": {"bar": {}}}));
    }

    #[test]
    fn pruning_kep_example_4_additional_properties_with_schema() {
        let s = schema(json!({
            "type": "object",
            "properties": {"foo": {"type": "object", "additionalProperties": {"type": "object"}}}
        }));
        let (v, paths) = pruned(
            &s,
            json!({"foo": {"abc": {"x": 42}, "def": {"y": 43}}, "json": {"ghi": 44}}),
        );
        assert_eq!(v, json!({"foo": {"abc": {}, "def": {}}}));
        // kube joins map keys with dots in unknown-field paths (golden: ex4.foo.abc.x).
        assert_eq!(paths, vec!["foo.abc.x", "foo.def.y", "json"]);
    }

    #[test]
    fn pruning_kep_example_5_additional_properties_false() {
        let s = schema(json!({
            "type": "object",
            "properties": {"foo": {"type": "object", "additionalProperties": false}}
        }));
        let (v, _) = pruned(
            &s,
            json!({"foo": {"abc": {"x": 42}, "def": {"y": 43}}, "json": {"ghi": 44}}),
        );
        assert_eq!(v, json!({"foo": {"abc": {}, "def": {}}}));
    }

    #[test]
    fn pruning_kep_example_6_arbitrary_json() {
        let s = schema(json!({
            "type": "object",
            "properties": {"json": {"x-kubernetes-preserve-unknown-fields": true, "nullable": true}}
        }));
        let (v, _) = pruned(&s, json!({"foo": 42, "json": {"bar": 43}}));
        assert_eq!(v, json!({"json": {"bar": 43}}));
    }

    // The KEP prints `bar: {abc: 43}` here, contradicting its own rule 1; kube (and the
    // recorded conformance case) prunes inside `bar` because `properties` restarts pruning.
    #[test]
    fn pruning_kep_example_7_preserve_unknown_with_properties() {
        let s = schema(json!({
            "type": "object",
            "properties": {"json": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true,
                "properties": {"bar": {"type": "object"}}
            }}
        }));
        let (v, paths) = pruned(
            &s,
            json!({"foo": 42, "json": {"bar": {"abc": 43}, "def": 44}}),
        );
        assert_eq!(v, json!({"json": {"bar": {}, "def": 44}}));
        assert_eq!(paths, vec!["foo", "json.bar.abc"]);
    }

    #[test]
    fn pruning_kep_example_8_preserve_unknown_with_nested_properties() {
        let s = schema(json!({
            "type": "object",
            "properties": {"json": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true,
                "properties": {"bar": {"type": "object", "properties": {"inner": {"type": "integer"}}}}
            }}
        }));
        let (v, _) = pruned(
            &s,
            json!({"foo": 42, "json": {"bar": {"inner": 43, "abc": 44}, "def": 45}}),
        );
        assert_eq!(v, json!({"json": {"bar": {"inner": 43}, "def": 45}}));
    }

    // The KEP prints the input unchanged inside `json`; kube (and the recorded conformance
    // case) prunes every value by the `additionalProperties` schema, which specifies nothing.
    #[test]
    fn pruning_kep_example_9_additional_properties_within_json() {
        let s = schema(json!({
            "type": "object",
            "properties": {"json": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true,
                "additionalProperties": {"type": "object"}
            }}
        }));
        let (v, _) = pruned(
            &s,
            json!({"foo": 42, "json": {"bar": {"inner": 43, "abc": 44}, "def": 45}}),
        );
        assert_eq!(v, json!({"json": {"bar": {}, "def": 45}}));
    }

    #[test]
    fn pruning_kep_example_10_embedded_resource() {
        let s = schema(json!({
            "type": "object",
            "properties": {"object": {
                "type": "object", "nullable": true,
                "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true
            }}
        }));
        let (v, paths) = pruned(
            &s,
            json!({"foo": 42, "object": {"bar": 43, "abc": 44, "metadata": {"name": "example", "garbage": 45}}}),
        );
        assert_eq!(
            v,
            json!({"object": {"bar": 43, "abc": 44, "metadata": {"name": "example"}}})
        );
        assert_eq!(paths, vec!["foo", "object.metadata.garbage"]);
    }

    #[test]
    fn pruning_kep_example_11_implicit_type_meta_and_object_meta() {
        let s = schema(json!({"type": "object"}));
        let mut v = json!({
            "apiVersion": "example/v1", "kind": "Foo",
            "metadata": {"name": "example", "garbage": 43},
            "foo": 42
        });
        let report = prune(&mut v, &s, true, &PruneOptions::default());
        assert_eq!(
            v,
            json!({"apiVersion": "example/v1", "kind": "Foo", "metadata": {"name": "example"}})
        );
        assert_eq!(report.unknown_fields, vec!["metadata.garbage", "foo"]);
    }

    /// The CRD of the recorded `pruning-kep` conformance case.
    fn pruning_kep_crd_schema() -> Structural {
        schema(json!({
            "type": "object",
            "properties": {
                "ex2": {"type": "object", "properties": {"foo": {"type": "object"}}},
                "ex3": {"type": "object", "properties": {"foo": {"type": "object", "properties": {"bar": {"type": "object"}}}}},
                "ex4": {"type": "object", "properties": {"foo": {"type": "object", "additionalProperties": {"type": "object"}}}},
                "ex6": {"type": "object", "properties": {"json": {"x-kubernetes-preserve-unknown-fields": true, "nullable": true}}},
                "ex7": {"type": "object", "properties": {"json": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true, "properties": {"bar": {"type": "object"}}}}},
                "ex8": {"type": "object", "properties": {"json": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true, "properties": {"bar": {"type": "object", "properties": {"inner": {"type": "integer"}}}}}}},
                "ex9": {"type": "object", "properties": {"json": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "nullable": true, "additionalProperties": {"type": "object"}}}},
                "ex10": {"type": "object", "properties": {"object": {"type": "object", "nullable": true, "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}
            }
        }))
    }

    #[test]
    fn golden_pruning_kep_create_all_examples() {
        let s = pruning_kep_crd_schema();
        let mut v = json!({
            "apiVersion": "pruning.example.com/v1", "kind": "Prune",
            "metadata": {"name": "p1", "garbage": 43, "labels": {"a": "b"}},
            "topLevelUnknown": 42,
            "ex2": {"foo": {"abc": 42}, "json": {"bar": 43}},
            "ex3": {"foo": {"bar": {"abc": 42}, "def": 43}, "json": {"ghi": 44}},
            "ex4": {"foo": {"abc": {"x": 42}, "def": {"y": 43}}, "json": {"ghi": 44}},
            "ex6": {"foo": 42, "json": {"bar": 43}},
            "ex7": {"foo": 42, "json": {"bar": {"abc": 43}, "def": 44}},
            "ex8": {"foo": 42, "json": {"bar": {"inner": 43, "abc": 44}, "def": 45}},
            "ex9": {"foo": 42, "json": {"bar": {"inner": 43, "abc": 44}, "def": {"y": 45}}},
            "ex10": {"foo": 42, "object": {"apiVersion": "v1", "kind": "ConfigMap", "bar": 43, "abc": 44, "metadata": {"name": "example", "garbage": 45}}}
        });
        let report = prune(&mut v, &s, true, &PruneOptions::default());
        assert_eq!(
            v,
            json!({
                "apiVersion": "pruning.example.com/v1", "kind": "Prune",
                "metadata": {"name": "p1", "labels": {"a": "b"}},
                "ex2": {"foo": {}},
                "ex3": {"foo": {"bar": {}}},
                "ex4": {"foo": {"abc": {}, "def": {}}},
                "ex6": {"json": {"bar": 43}},
                "ex7": {"json": {"bar": {}, "def": 44}},
                "ex8": {"json": {"bar": {"inner": 43}, "def": 45}},
                "ex9": {"json": {"bar": {}, "def": {}}},
                "ex10": {"object": {"apiVersion": "v1", "kind": "ConfigMap", "bar": 43, "abc": 44, "metadata": {"name": "example"}}}
            })
        );
        // The golden Warning header lists exactly these, in this order.
        let golden = [
            "metadata.garbage",
            "ex10.foo",
            "ex2.foo.abc",
            "ex2.json",
            "ex3.foo.bar.abc",
            "ex3.foo.def",
            "ex3.json",
            "ex4.foo.abc.x",
            "ex4.foo.def.y",
            "ex4.json",
            "ex6.foo",
            "ex7.foo",
            "ex7.json.bar.abc",
            "ex8.foo",
            "ex8.json.bar.abc",
            "ex9.foo",
            "ex9.json.bar.abc",
            "ex9.json.bar.inner",
            "ex9.json.def.y",
            "topLevelUnknown",
            "ex10.object.metadata.garbage",
        ];
        assert_eq!(report.unknown_fields, golden);
    }

    #[test]
    fn golden_pruning_kep_strict_field_validation_paths() {
        let s = pruning_kep_crd_schema();
        let mut v = json!({
            "apiVersion": "pruning.example.com/v1", "kind": "Prune", "metadata": {"name": "p2"},
            "topLevelUnknown": 1, "ex2": {"json": 1}
        });
        let report = prune(&mut v, &s, true, &PruneOptions::default());
        assert_eq!(
            report.messages().join(", "),
            "unknown field \"ex2.json\", unknown field \"topLevelUnknown\""
        );
    }

    #[test]
    fn golden_pruning_kep_warn_field_validation() {
        let s = pruning_kep_crd_schema();
        let mut v = json!({"apiVersion": "pruning.example.com/v1", "kind": "Prune", "metadata": {"name": "p3"}, "topLevelUnknown": 1});
        let report = prune(&mut v, &s, true, &PruneOptions::default());
        assert_eq!(report.messages(), vec!["unknown field \"topLevelUnknown\""]);
        assert_eq!(
            v,
            json!({"apiVersion": "pruning.example.com/v1", "kind": "Prune", "metadata": {"name": "p3"}})
        );
    }

    #[test]
    fn list_items_are_pruned_with_indexed_paths() {
        let s = schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}}
        }));
        let (v, paths) = pruned(&s, json!({"spec": {"list": [{"a": 1}, {"a": 2, "x": 3}]}}));
        assert_eq!(v, json!({"spec": {"list": [{"a": 1}, {"a": 2}]}}));
        assert_eq!(paths, vec!["spec.list[1].x"]);
    }

    #[test]
    fn scalars_of_the_wrong_type_are_left_for_validation() {
        let s = schema(
            json!({"type": "object", "properties": {"ex2": {"type": "object", "properties": {"foo": {"type": "object"}}}}}),
        );
        let (v, paths) = pruned(&s, json!({"ex2": "not-an-object"}));
        assert_eq!(v, json!({"ex2": "not-an-object"}));
        assert!(paths.is_empty());
    }

    #[test]
    fn object_meta_unknown_fields_are_dropped_recursively() {
        let s = schema(json!({"type": "object"}));
        let mut v = json!({
            "apiVersion": "a/v1", "kind": "K",
            "metadata": {
                "name": "n", "Name": "case matters", "zzz": 1,
                "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u", "extra": true}],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}, "bogus": 1}]
            }
        });
        let report = prune(&mut v, &s, true, &PruneOptions::default());
        assert_eq!(
            report.unknown_fields,
            vec![
                "metadata.Name",
                "metadata.managedFields[0].bogus",
                "metadata.ownerReferences[0].extra",
                "metadata.zzz"
            ]
        );
        assert_eq!(
            v["metadata"],
            json!({
                "name": "n",
                "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u"}],
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]
            })
        );
    }

    #[test]
    fn embedded_resources_in_maps_and_lists_use_field_path_rendering() {
        let s = schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "templates": {"type": "object", "additionalProperties": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
                "list": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}}}
            }}}
        }));
        let mut v = json!({"spec": {
            "templates": {"a": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "junk": 1}, "free": 1}},
            "list": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"k": "v"}, "junk": 2}, "spec": {"x": 1}, "other": 1}]
        }});
        let report = prune(&mut v, &s, false, &PruneOptions::default());
        assert_eq!(
            report.unknown_fields,
            vec![
                "spec.list[0].other",
                "spec.list[0].spec.x",
                "spec.list[0].metadata.junk",
                "spec.templates[a].metadata.junk"
            ]
        );
        assert_eq!(
            v["spec"]["templates"]["a"],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "free": 1})
        );
        assert_eq!(
            v["spec"]["list"][0],
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"k": "v"}}, "spec": {}})
        );
    }

    #[test]
    fn preserve_unknown_fields_crd_only_prunes_metadata() {
        let s = schema(json!({"type": "object"}));
        let mut v = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n", "junk": 1}, "spec": {"x": 1}});
        let opts = PruneOptions {
            preserve_unknown_fields: true,
            ..Default::default()
        };
        let report = prune(&mut v, &s, true, &opts);
        assert_eq!(report.unknown_fields, vec!["metadata.junk"]);
        assert_eq!(
            v,
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}})
        );
    }

    #[test]
    fn items_under_preserve_unknown_keep_their_own_unknown_fields() {
        // kube's skipPrune walks items without pruning at the item level.
        let s = schema(json!({
            "type": "object",
            "properties": {"p": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                "items": {"type": "object", "properties": {"a": {"type": "object"}}}}}
        }));
        let (v, paths) = pruned(&s, json!({"p": [{"a": {"x": 1}, "b": 2}]}));
        assert_eq!(v, json!({"p": [{"a": {}, "b": 2}]}));
        assert_eq!(paths, vec!["p[0].a.x"]);
    }

    // Same behaviour as kube's own pruning test "nested x-kubernetes-preserve-unknown-fields".
    #[test]
    fn nested_preserve_unknown_fields_restart_and_stop_pruning() {
        let pruning_map = json!({"type": "object", "additionalProperties": {"type": "object", "properties": {"specified": {"type": "object"}}}});
        let mut preserving_map = pruning_map.clone();
        preserving_map["x-kubernetes-preserve-unknown-fields"] = json!(true);
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "alpha": {"type": "string"},
                "beta": {"type": "number"},
                "pruning": {"type": "object", "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"}
                }},
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "preservingUnknownType": {"x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"}
                }},
                "preservingMap": preserving_map,
                "pruningMap": pruning_map
            }
        }));
        let map_value = json!({"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}});
        let (v, paths) = pruned(
            &s,
            json!({
                "unspecified": "bar", "alpha": "abc", "beta": 42.0,
                "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {
                    "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {"unspecified": "bar"}, "apiVersion": "unknown",
                    "preserving": {"unspecified": "bar"}
                },
                "preserving": {
                    "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
                    "preservingUnknownType": [{"foo": true}, {"bar": true}]
                },
                "preservingMap": map_value.clone(),
                "pruningMap": map_value
            }),
        );
        assert_eq!(
            v,
            json!({
                "unspecified": "bar", "alpha": "abc", "beta": 42.0,
                "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
                "preserving": {
                    "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {}, "preserving": {"unspecified": "bar"},
                    "preservingUnknownType": [{"foo": true}, {"bar": true}]
                },
                "preservingMap": {"foo": {"specified": {}}},
                "pruningMap": {"foo": {"specified": {}}}
            })
        );
        assert_eq!(
            paths,
            vec![
                "preserving.pruning.unspecified",
                "preservingMap.foo.specified.unspecified",
                "preservingMap.foo.unspecified",
                "pruning.apiVersion",
                "pruning.pruning.unspecified",
                "pruning.unspecified",
                "pruning.unspecifiedObject",
                "pruningMap.foo.specified.unspecified",
                "pruningMap.foo.unspecified",
            ]
        );
    }

    #[test]
    fn additional_properties_false_prunes_values_and_reports_nested_meta_fields() {
        let s = schema(
            json!({"type": "object", "properties": {"a": {"type": "integer"}, "c": {"type": "object", "additionalProperties": false}}}),
        );
        let (v, paths) = pruned(
            &s,
            json!({"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1, "apiVersion": "unknown"}}}),
        );
        assert_eq!(v, json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}));
        assert_eq!(paths, vec!["b", "c.c.a", "c.c.apiVersion"]);
    }

    fn arb_structural() -> impl Strategy<Value = Structural> {
        let leaf = (any::<bool>(), any::<bool>()).prop_map(|(preserve, embedded)| Structural {
            type_: "object".to_string(),
            x_preserve_unknown_fields: preserve,
            x_embedded_resource: embedded,
            ..Default::default()
        });
        leaf.prop_recursive(3, 24, 3, |inner| {
            (
                prop::collection::btree_map(
                    prop::sample::select(vec!["a", "b", "metadata", "kind"]),
                    inner.clone(),
                    0..3,
                ),
                prop::option::of(inner.clone()),
                prop::option::of(prop_oneof![
                    any::<bool>().prop_map(AdditionalProperties::Bool),
                    inner.prop_map(|s| AdditionalProperties::Schema(Box::new(s))),
                ]),
                any::<bool>(),
                any::<bool>(),
            )
                .prop_map(|(props, items, ap, preserve, embedded)| Structural {
                    type_: "object".to_string(),
                    properties: props.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    items: items.map(Box::new),
                    additional_properties: ap,
                    x_preserve_unknown_fields: preserve,
                    x_embedded_resource: embedded,
                    ..Default::default()
                })
        })
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<i8>().prop_map(|i| json!(i)),
            Just(json!("s"))
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop::sample::select(vec!["a", "b", "c", "metadata", "kind", "name", "junk"]),
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(
                    m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn prune_is_idempotent(s in arb_structural(), v in arb_json(), root in any::<bool>()) {
            let mut once = v;
            prune(&mut once, &s, root, &PruneOptions::default());
            let mut twice = once.clone();
            let report = prune(&mut twice, &s, root, &PruneOptions::default());
            prop_assert_eq!(&once, &twice);
            prop_assert!(report.is_empty(), "second pass pruned {:?}", report.unknown_fields);
        }
    }
}
