//! Defaulting: fill absent fields from the schema's `default`s, as kube does after
//! decoding a custom resource; plus kube's removal of `null`s that may not be null, and
//! the CRD-time checks of the defaults themselves.
//!
//! Follows kube's `defaulting` package (`algorithm.go`, `prunenulls.go`, `validation.go`,
//! `prune.go`, `surroundingobject.go`).

use crate::field::{aggregate_message, Error, ErrorList, Path, Trail};
use crate::schema::props::JSONSchemaProps;
use crate::schema::prune::{prune, PruneOptions};
use crate::schema::structural::{AdditionalProperties, Structural};
use serde_json::{Map, Value};

/// What defaulting filled in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DefaultReport {
    /// Paths of the fields set from a default, in the order they were set, rendered as
    /// field paths (`spec.ports[0].protocol`, `spec.map[key]`).
    pub defaulted: Vec<String>,
}

/// Remove `null` values that their schema does not allow and that have no default to
/// replace them (kube's `PruneNonNullableNullsWithoutDefaults`, run right after pruning).
/// Returns the paths removed. Only object fields are removed, never list items.
pub fn prune_nulls(obj: &mut Value, s: &Structural) -> Vec<String> {
    let mut removed = Vec::new();
    prune_nulls_node(obj, Some(s), &Trail::Root, &mut removed);
    removed
}

fn prune_nulls_node(
    x: &mut Value,
    s: Option<&Structural>,
    path: &Trail,
    removed: &mut Vec<String>,
) {
    // Below the schema (x-kubernetes-preserve-unknown-fields) nothing is removed: stop,
    // rather than walk (and name the paths of) an arbitrarily deep value.
    let Some(s) = s else { return };
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let field = s.field_schema(k);
            let child = path.child(k);
            if v.is_null() && field.is_some_and(|f| !f.nullable && f.default.is_none()) {
                removed.push(child.render());
                return false;
            }
            prune_nulls_node(v, field, &child, removed);
            true
        }),
        Value::Array(a) => {
            let items = s.items.as_deref();
            for (i, v) in a.iter_mut().enumerate() {
                prune_nulls_node(v, items, &path.index(i), removed);
            }
        }
        _ => {}
    }
}

/// Apply the schema's defaults to `obj` (kube's `structuraldefaulting.Default`): absent
/// fields (and `null`s of non-nullable fields) get their default, recursively through
/// `properties`, `items` and `additionalProperties`. A missing parent is only created if
/// it has a default itself; a default value is defaulted further inside.
pub fn apply_defaults(obj: &mut Value, s: &Structural) -> DefaultReport {
    let mut report = DefaultReport::default();
    default_node(obj, s, &Trail::Root, &mut report.defaulted);
    report
}

fn is_non_nullable_null(x: &Value, s: &Structural) -> bool {
    x.is_null() && !s.nullable
}

fn default_node(x: &mut Value, s: &Structural, path: &Trail, set: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, prop),
                };
                if missing {
                    m.insert(k.clone(), d.clone());
                    set.push(path.child(k).render());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default_node(v, prop, &path.child(k), set);
                } else if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
                    let child = path.key(k);
                    if let Some(d) = ap.default.as_ref().filter(|_| is_non_nullable_null(v, ap)) {
                        *v = d.clone();
                        set.push(child.render());
                    }
                    default_node(v, ap, &child, set);
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = &s.items else { return };
            for (i, v) in a.iter_mut().enumerate() {
                let child = path.index(i);
                if let Some(d) = items
                    .default
                    .as_ref()
                    .filter(|_| is_non_nullable_null(v, items))
                {
                    *v = d.clone();
                    set.push(child.render());
                }
                default_node(v, items, &child, set);
            }
        }
        _ => {}
    }
}

/// Coerce and validate the TypeMeta/ObjectMeta of embedded resources in `value` (kube's
/// `objectmeta.Coerce` then `objectmeta.Validate`), reporting under `path`; the flag says
/// whether `value` itself is a resource root (`schema` is treated as embedded then).
pub type ObjectMetaCheck<'a> = &'a dyn Fn(&Path, &Value, &Structural, bool) -> ErrorList;

/// Run the `x-kubernetes-validations` of `schema` on `value`, reporting under `path`; the
/// flag says whether `schema` is a resource root. kube (with CRDValidationRatcheting) runs
/// the rules as an update from the value to itself, then as a create.
pub type CelCheck<'a> = &'a dyn Fn(&Path, &Structural, bool, &Value) -> ErrorList;

/// The checks other stages own that kube also runs on every default value.
#[derive(Clone, Copy, Default)]
pub struct DefaultChecks<'a> {
    /// ObjectMeta/TypeMeta coercion and validation; skipped when `None`.
    pub object_meta: Option<ObjectMetaCheck<'a>>,
    /// CEL rules; skipped when `None`.
    pub cel: Option<CelCheck<'a>>,
}

/// One step from a node to its child, to rebuild the object around a default value.
#[derive(Clone)]
enum Step {
    Child(String),
    Index,
}

/// kube's `ValidateDefaults` at CRD create/update for the `openAPIV3Schema` at `fld`
/// (treated as a resource root): every default must survive pruning unchanged (if
/// `require_pruned_defaults`), have valid embedded metadata, and pass its own schema's
/// validation and CEL rules. `schema` and `s` are the same schema, as written and as
/// structural. Only call this for a structural schema.
pub fn validate_defaults(
    schema: &JSONSchemaProps,
    s: &Structural,
    fld: &Path,
    require_pruned_defaults: bool,
    checks: &DefaultChecks<'_>,
) -> ErrorList {
    // kube treats the root as an embedded resource: TypeMeta/ObjectMeta are implicit.
    let mut root = s.clone();
    root.x_embedded_resource = true;
    let walk = DefaultWalk {
        require_pruned_defaults,
        checks,
    };
    let mut errs = ErrorList::new();
    walk.node(schema, &root, fld, &root, &mut Vec::new(), false, &mut errs);
    errs
}

struct DefaultWalk<'c, 'a> {
    require_pruned_defaults: bool,
    checks: &'c DefaultChecks<'a>,
}

impl DefaultWalk<'_, '_> {
    #[allow(clippy::too_many_arguments)]
    fn node<'s>(
        &self,
        p: &JSONSchemaProps,
        s: &'s Structural,
        fld: &Path,
        mut resource: &'s Structural,
        steps: &mut Vec<Step>,
        mut inside_meta: bool,
        errs: &mut ErrorList,
    ) {
        // Each embedded resource starts a new surrounding object.
        let mut own_steps = Vec::new();
        let steps = if s.x_embedded_resource {
            inside_meta = false;
            resource = s;
            &mut own_steps
        } else {
            steps
        };

        if let Some(d) = &s.default {
            let default_fld = fld.child("default");
            let is_resource_root = std::ptr::eq(s, resource);
            if inside_meta {
                let surrounding = surround(steps, d.clone(), true);
                let meta_errs = match (&self.checks.object_meta, &surrounding) {
                    (Some(check), Some(obj)) => check(&Path::root(), obj, resource, true),
                    _ => ErrorList::new(),
                };
                if !meta_errs.is_empty() {
                    errs.push(Error::invalid(
                        &default_fld,
                        d.clone(),
                        format!(
                            "must result in valid metadata: {}",
                            aggregate_message(&meta_errs)
                        ),
                    ));
                } else {
                    self.value_errors(p, s, is_resource_root, d, &default_fld, errs);
                }
            } else {
                if self.require_pruned_defaults {
                    let mut pruned = d.clone();
                    let opts = PruneOptions {
                        preserve_unknown_fields: false,
                        prune_object_meta: false,
                    };
                    prune(&mut pruned, s, s.x_embedded_resource, &opts);
                    if &pruned != d {
                        errs.push(Error::invalid(
                            &default_fld,
                            d.clone(),
                            "must not have unknown fields",
                        ));
                    }
                }
                let meta_errs = match &self.checks.object_meta {
                    Some(check) => check(&default_fld, d, s, s.x_embedded_resource),
                    None => ErrorList::new(),
                };
                if !meta_errs.is_empty() {
                    errs.extend(meta_errs);
                } else {
                    self.value_errors(p, s, is_resource_root, d, &default_fld, errs);
                }
            }
        }

        // kube does not follow additionalProperties: their defaults are not checked.
        if let (Some(pi), Some(si)) = (p.items_schema(), s.items.as_deref()) {
            steps.push(Step::Index);
            self.node(
                pi,
                si,
                &fld.child("items"),
                resource,
                steps,
                inside_meta,
                errs,
            );
            steps.pop();
        }
        for (k, sub) in &s.properties {
            let Some(pk) = p.properties.as_ref().and_then(|m| m.get(k)) else {
                continue;
            };
            let sub_inside_meta = inside_meta
                || (s.x_embedded_resource
                    && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
            steps.push(Step::Child(k.clone()));
            self.node(
                pk,
                sub,
                &fld.child("properties").key(k),
                resource,
                steps,
                sub_inside_meta,
                errs,
            );
            steps.pop();
        }
    }

    /// The OpenAPI validation of the default against its own schema node, then CEL.
    fn value_errors(
        &self,
        p: &JSONSchemaProps,
        s: &Structural,
        is_resource_root: bool,
        d: &Value,
        default_fld: &Path,
        errs: &mut ErrorList,
    ) {
        // kube validates the default on its own (empty path) and reports under `default`.
        let schema_errs: ErrorList = crate::schema::validate::validate(p, d, &Path::root())
            .into_iter()
            .map(|e| Error {
                field: reroot(default_fld, &e.field),
                ..e
            })
            .collect();
        if !schema_errs.is_empty() {
            errs.extend(schema_errs);
        } else if let Some(cel) = &self.checks.cel {
            errs.extend(cel(default_fld, s, is_resource_root, d));
        }
    }
}

/// kube's `fldPath.Child(name)` with the validator's error name: always a `.` join.
fn reroot(base: &Path, sub: &Path) -> Path {
    // `validate` names root errors kube's way, `<nil>`: they belong at `base` itself.
    if sub.is_root() || sub.as_str() == "<nil>" {
        base.clone()
    } else {
        Path::new(&format!("{base}.{sub}"))
    }
}

/// Build the object around `x` along `steps` (kube's `SurroundingObjectFunc`); with
/// `type_meta`, the outer object gets kube's placeholder `apiVersion`/`kind` if absent.
/// `None` if the outer value is not an object.
fn surround(steps: &[Step], x: Value, type_meta: bool) -> Option<Value> {
    let mut v = x;
    for step in steps.iter().rev() {
        v = match step {
            Step::Child(k) => {
                let mut m = Map::new();
                m.insert(k.clone(), v);
                Value::Object(m)
            }
            Step::Index => Value::Array(vec![v]),
        };
    }
    let Value::Object(mut m) = v else { return None };
    if type_meta {
        m.entry("kind")
            .or_insert_with(|| Value::String("Validation".to_string()));
        m.entry("apiVersion")
            .or_insert_with(|| Value::String("validation/v1".to_string()));
    }
    Some(Value::Object(m))
}

/// The value at the end of `steps` in an object built by [`surround`].
fn extract<'v>(steps: &[Step], obj: &'v Value) -> Option<&'v Value> {
    steps.iter().try_fold(obj, |v, step| match step {
        Step::Child(k) => v.as_object()?.get(k),
        Step::Index => v.as_array()?.first(),
    })
}

/// True if pruning would change some default of the schema (kube's `PruneDefaults`
/// reporting a change); relaxes [`validate_defaults`]' pruning rule on CRD update.
pub fn has_unpruned_defaults(s: &Structural) -> bool {
    unpruned_default_below(s, s, &mut Vec::new())
}

fn unpruned_default_below(s: &Structural, root: &Structural, steps: &mut Vec<Step>) -> bool {
    if let Some(d) = &s.default {
        // kube aborts on a default that cannot be placed in an object: nothing is reported.
        if let Some(mut obj) = surround(steps, d.clone(), false) {
            prune(&mut obj, root, true, &PruneOptions::default());
            if extract(steps, &obj) != Some(d) {
                return true;
            }
        }
    }
    let below = |sub: &Structural, step: Step, steps: &mut Vec<Step>| {
        steps.push(step);
        let changed = unpruned_default_below(sub, root, steps);
        steps.pop();
        changed
    };
    if let Some(AdditionalProperties::Schema(ap)) = &s.additional_properties {
        if below(ap, Step::Child("*".to_string()), steps) {
            return true;
        }
    }
    if let Some(items) = &s.items {
        if below(items, Step::Index, steps) {
            return true;
        }
    }
    s.properties
        .iter()
        .any(|(k, sub)| below(sub, Step::Child(k.clone()), steps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("schema parses")
    }

    /// The schema of the recorded `defaulting` conformance case.
    fn defaulting_crd() -> JSONSchemaProps {
        props(json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "default": {},
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]},
                    "nonNullable": {"type": "string", "default": "filled"},
                    "nullableField": {"type": "string", "nullable": true, "default": "filled"},
                    "nested": {"type": "object", "properties": {"inner": {"type": "string", "default": "x"}}},
                    "withDefaultParent": {"type": "object", "default": {}, "properties": {"inner": {"type": "integer", "default": 7}}},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}}}},
                    "labelsMap": {"type": "object", "additionalProperties": {"type": "object", "properties": {"weight": {"type": "integer", "default": 10}}}}
                }
            }}
        }))
    }

    /// Decode as kube does: prune, drop disallowed nulls, then default.
    fn decode(s: &Structural, mut v: Value) -> (Value, DefaultReport) {
        prune(&mut v, s, true, &PruneOptions::default());
        prune_nulls(&mut v, s);
        let report = apply_defaults(&mut v, s);
        (v, report)
    }

    #[test]
    fn golden_defaulting_create_empty() {
        let s = Structural::from_props(&defaulting_crd());
        let (v, report) = decode(
            &s,
            json!({"apiVersion": "defaulting.example.com/v1", "kind": "Def", "metadata": {"name": "d1"}}),
        );
        assert_eq!(
            v["spec"],
            json!({"replicas": 1, "mode": "fast", "nonNullable": "filled", "nullableField": "filled", "withDefaultParent": {"inner": 7}})
        );
        assert!(
            v["spec"].get("nested").is_none(),
            "a parent without default is not created"
        );
        assert_eq!(report.defaulted[0], "spec");
        assert!(
            report
                .defaulted
                .contains(&"spec.withDefaultParent.inner".to_string()),
            "{:?}",
            report.defaulted
        );
    }

    #[test]
    fn golden_defaulting_create_partial() {
        let s = Structural::from_props(&defaulting_crd());
        let (v, report) = decode(
            &s,
            json!({
                "apiVersion": "defaulting.example.com/v1", "kind": "Def", "metadata": {"name": "d2"},
                "spec": {
                    "replicas": 3, "nonNullable": null, "nullableField": null, "nested": {},
                    "ports": [{"name": "a"}, {"name": "b", "protocol": "UDP"}],
                    "labelsMap": {"x": {}, "y": {"weight": 2}}
                }
            }),
        );
        assert_eq!(
            v["spec"],
            json!({
                "replicas": 3, "mode": "fast", "nonNullable": "filled", "nullableField": null,
                "nested": {"inner": "x"},
                "withDefaultParent": {"inner": 7},
                "ports": [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}],
                "labelsMap": {"x": {"weight": 10}, "y": {"weight": 2}}
            })
        );
        for p in [
            "spec.nonNullable",
            "spec.nested.inner",
            "spec.ports[0].protocol",
            "spec.labelsMap[x].weight",
        ] {
            assert!(
                report.defaulted.contains(&p.to_string()),
                "missing {p} in {:?}",
                report.defaulted
            );
        }
        assert!(!report
            .defaulted
            .iter()
            .any(|p| p == "spec.replicas" || p == "spec.nullableField"));
    }

    #[test]
    fn golden_defaulting_update_defaults_again() {
        let s = Structural::from_props(&defaulting_crd());
        let (v, _) = decode(
            &s,
            json!({"apiVersion": "defaulting.example.com/v1", "kind": "Def", "metadata": {"name": "d1", "resourceVersion": "5"}, "spec": {"replicas": 5}}),
        );
        assert_eq!(
            v["spec"],
            json!({"replicas": 5, "mode": "fast", "nonNullable": "filled", "nullableField": "filled", "withDefaultParent": {"inner": 7}})
        );
    }

    #[test]
    fn prune_nulls_keeps_nullable_defaulted_and_list_nulls() {
        let s = Structural::from_props(&props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "nullable": true},
                "c": {"type": "string", "default": "x"},
                "l": {"type": "array", "items": {"type": "string"}},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"x-kubernetes-preserve-unknown-fields": true, "type": "object"}
            }
        })));
        let mut v = json!({"a": null, "b": null, "c": null, "l": [null], "m": {"k": null}, "free": {"z": null}});
        let removed = prune_nulls(&mut v, &s);
        assert_eq!(
            v,
            json!({"b": null, "c": null, "l": [null], "m": {}, "free": {"z": null}})
        );
        assert_eq!(removed, vec!["a", "m.k"]);
    }

    #[test]
    fn defaults_apply_in_items_and_map_values_replacing_non_nullable_nulls() {
        let s = Structural::from_props(&props(json!({
            "type": "object",
            "properties": {
                "l": {"type": "array", "items": {"type": "string", "default": "d"}},
                "m": {"type": "object", "additionalProperties": {"type": "integer", "default": 3}},
                "n": {"type": "string", "nullable": true, "default": "kept-null"}
            }
        })));
        let mut v = json!({"l": ["a", null], "m": {"x": null, "y": 1}, "n": null});
        let report = apply_defaults(&mut v, &s);
        assert_eq!(
            v,
            json!({"l": ["a", "d"], "m": {"x": 3, "y": 1}, "n": null})
        );
        assert_eq!(report.defaulted, vec!["l[1]", "m[x]"]);
    }

    #[test]
    fn defaults_are_deep_defaulted() {
        let s = Structural::from_props(&props(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "default": {"a": {}}, "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "integer", "default": 2}}},
                "c": {"type": "integer", "default": 4}
            }}}
        })));
        let mut v = json!({});
        let report = apply_defaults(&mut v, &s);
        assert_eq!(v, json!({"spec": {"a": {"b": 2}, "c": 4}}));
        assert_eq!(report.defaulted, vec!["spec", "spec.c", "spec.a.b"]);
    }

    fn crd_path() -> Path {
        Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema")
    }

    fn check(schema: &JSONSchemaProps, checks: &DefaultChecks<'_>) -> Vec<String> {
        let s = Structural::from_props(schema);
        validate_defaults(schema, &s, &crd_path(), true, checks)
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn golden_defaulting_crd_with_invalid_default_rejected() {
        let schema = props(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": "one", "maximum": 3}}}}
        }));
        let s = Structural::from_props(&schema);
        let errs = validate_defaults(&schema, &s, &crd_path(), true, &DefaultChecks::default());
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].field.as_str(),
            "spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default"
        );
        assert_eq!(errs[0].kind.reason(), "FieldValueTypeInvalid");
        assert_eq!(
            errs[0].body(),
            "Invalid value: \"string\":  in body must be of type integer: \"string\""
        );
        // The same through the whole CRD-time chain.
        let all = crate::schema::structural::validate_schema(
            &schema,
            &crd_path(),
            &crate::schema::structural::SchemaCheckOptions::default(),
            &DefaultChecks::default(),
        );
        assert_eq!(all, errs);
    }

    #[test]
    fn nested_validation_errors_are_rerooted_under_default() {
        let schema = props(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "default": {"n": "x"}, "properties": {"n": {"type": "integer"}}}}
        }));
        assert_eq!(
            check(&schema, &DefaultChecks::default()),
            vec!["spec.validation.openAPIV3Schema.properties[spec].default.n: Invalid value: \"string\": n in body must be of type integer: \"string\""]
        );
    }

    #[test]
    fn defaults_must_not_have_unknown_fields() {
        let schema = props(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "default": {"known": 1, "unknown": 2}, "properties": {"known": {"type": "integer"}}}}
        }));
        assert_eq!(
            check(&schema, &DefaultChecks::default()),
            vec!["spec.validation.openAPIV3Schema.properties[spec].default: Invalid value: {\"known\":1,\"unknown\":2}: must not have unknown fields"]
        );
        // Ratcheting: an old CRD with such a default relaxes the rule.
        let s = Structural::from_props(&schema);
        assert!(has_unpruned_defaults(&s));
        assert!(
            validate_defaults(&schema, &s, &crd_path(), false, &DefaultChecks::default())
                .is_empty()
        );
        assert!(!has_unpruned_defaults(&Structural::from_props(
            &defaulting_crd()
        )));
    }

    #[test]
    fn embedded_metadata_defaults_go_through_the_object_meta_check() {
        let schema = props(json!({
            "type": "object",
            "properties": {"template": {
                "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "default": "Bad_Name"}}}}
            }}
        }));
        let seen = std::cell::RefCell::new(Vec::new());
        let meta = |p: &Path, v: &Value, s: &Structural, root: bool| -> ErrorList {
            seen.borrow_mut().push((
                p.as_str().to_string(),
                v.clone(),
                s.x_embedded_resource,
                root,
            ));
            match v.pointer("/metadata/name") {
                Some(Value::String(n)) if n.contains('_') => {
                    vec![Error::invalid(
                        &Path::new("metadata").child("name"),
                        Value::String(n.clone()),
                        "a lowercase RFC 1123 subdomain",
                    )]
                }
                _ => vec![],
            }
        };
        let checks = DefaultChecks {
            object_meta: Some(&meta),
            cel: None,
        };
        assert_eq!(
            check(&schema, &checks),
            vec!["spec.validation.openAPIV3Schema.properties[template].properties[metadata].properties[name].default: Invalid value: \"Bad_Name\": must result in valid metadata: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"]
        );
        let seen = seen.borrow();
        assert_eq!(
            seen[0],
            (
                String::new(),
                json!({"apiVersion": "validation/v1", "kind": "Validation", "metadata": {"name": "Bad_Name"}}),
                true,
                true
            )
        );
    }

    #[test]
    fn cel_runs_only_after_schema_validation_passes() {
        let schema = props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "default": 5},
                "b": {"type": "integer", "default": "x"}
            }
        }));
        let cel = |p: &Path, _: &Structural, root: bool, v: &Value| -> ErrorList {
            assert!(!root);
            vec![Error::invalid(p, v.clone(), "failed rule: self < 3")]
        };
        let checks = DefaultChecks {
            object_meta: None,
            cel: Some(&cel),
        };
        assert_eq!(
            check(&schema, &checks),
            vec![
                "spec.validation.openAPIV3Schema.properties[a].default: Invalid value: 5: failed rule: self < 3",
                "spec.validation.openAPIV3Schema.properties[b].default: Invalid value: \"string\":  in body must be of type integer: \"string\"",
            ]
        );
    }

    #[test]
    fn full_schema_check_only_checks_defaults_of_structural_schemas() {
        use crate::schema::structural::{validate_schema, SchemaCheckOptions};
        let schema = props(json!({
            "type": "object",
            "properties": {
                "a": {"default": "x"},
                "b": {"type": "integer", "default": "y"}
            }
        }));
        let errs = validate_schema(
            &schema,
            &crd_path(),
            &SchemaCheckOptions::default(),
            &DefaultChecks::default(),
        );
        let got: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            got,
            vec!["spec.validation.openAPIV3Schema.properties[a].type: Required value: must not be empty for specified object fields"]
        );
    }

    mod stability {
        use super::*;
        use proptest::prelude::*;

        /// Keys of generated objects: ones the schemas specify, ones they never do, and
        /// the implicit TypeMeta/ObjectMeta fields (plus two ObjectMeta fields).
        const OBJECT_KEYS: [&str; 8] = [
            "a",
            "b",
            "c",
            "junk",
            "apiVersion",
            "kind",
            "metadata",
            "name",
        ];

        /// Property names of generated schemas; kube forbids specifying the implicit
        /// `apiVersion`/`kind`/`metadata` beyond a bare `metadata.name`, so they never occur.
        const PROPERTY_NAMES: [&str; 3] = ["a", "b", "c"];

        fn arb_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<i8>().prop_map(|i| json!(i)),
                Just(json!("s")),
                Just(json!(true)),
            ];
            leaf.prop_recursive(4, 32, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                    prop::collection::btree_map(
                        prop::sample::select(OBJECT_KEYS.to_vec()),
                        inner,
                        0..4
                    )
                    .prop_map(|m| Value::Object(
                        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                    )),
                ]
            })
        }

        /// One decoding round as the pipeline runs it: prune, drop disallowed nulls, default.
        /// Returns whether anything changed.
        fn round(v: &mut Value, s: &Structural, root: bool) -> bool {
            let pruned = prune(v, s, root, &PruneOptions::default());
            let nulls = prune_nulls(v, s);
            let defaulted = apply_defaults(v, s);
            !pruned.is_empty() || !nulls.is_empty() || !defaulted.defaulted.is_empty()
        }

        /// A default as kube admits it: pruned (`must not have unknown fields`) and, like
        /// every value, without nulls its schema forbids; then defaulted inside.
        fn admitted_default(d: Option<Value>, s: &Structural) -> Option<Value> {
            let mut d = d.filter(|d| !d.is_null())?;
            round(&mut d, s, false);
            Some(d)
        }

        /// The shape of a node below the root: properties, or a map, or neither.
        #[derive(Clone, Debug)]
        enum Shape {
            Properties(Vec<(&'static str, Structural)>),
            Map(Option<Box<Structural>>),
            Leaf,
        }

        /// Structural schemas as kube admits them (no `additionalProperties` beside
        /// `properties` or on embedded resources), with admitted defaults anywhere.
        fn arb_schema() -> impl Strategy<Value = Structural> {
            let leaf = (any::<bool>(), prop::option::of(arb_value())).prop_map(|(nullable, d)| {
                let s = Structural {
                    type_: "string".to_string(),
                    nullable,
                    ..Default::default()
                };
                Structural {
                    default: admitted_default(d, &s),
                    ..s
                }
            });
            leaf.prop_recursive(3, 24, 3, |inner| {
                let shape = prop_oneof![
                    prop::collection::vec(
                        (prop::sample::select(PROPERTY_NAMES.to_vec()), inner.clone()),
                        0..3
                    )
                    .prop_map(Shape::Properties),
                    prop::option::of(inner.clone().prop_map(Box::new)).prop_map(Shape::Map),
                    Just(Shape::Leaf),
                ];
                (
                    shape,
                    prop::option::of(inner),
                    any::<(bool, bool, bool)>(),
                    prop::option::of(arb_value()),
                )
                    .prop_map(
                        |(shape, items, (nullable, preserve, embedded), d)| {
                            let mut s = Structural {
                                type_: "object".to_string(),
                                nullable,
                                x_preserve_unknown_fields: preserve,
                                items: items.map(Box::new),
                                ..Default::default()
                            };
                            match shape {
                                Shape::Properties(props) => {
                                    s.x_embedded_resource = embedded;
                                    s.properties = props
                                        .into_iter()
                                        .map(|(k, v)| (k.to_string(), v))
                                        .collect();
                                }
                                Shape::Map(Some(values)) if !embedded => {
                                    s.additional_properties =
                                        Some(AdditionalProperties::Schema(values));
                                }
                                Shape::Map(None) if !embedded => {
                                    s.additional_properties =
                                        Some(AdditionalProperties::Bool(nullable));
                                }
                                _ => s.x_embedded_resource = embedded,
                            }
                            s.default = admitted_default(d, &s);
                            s
                        },
                    )
            })
        }

        /// A resource root: kube forbids `additionalProperties` there, and a root default
        /// is never applied.
        fn arb_root_schema() -> impl Strategy<Value = Structural> {
            arb_schema().prop_map(|s| Structural {
                additional_properties: None,
                default: None,
                ..s
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(128))]

            /// default∘prune is stable: a second decoding round (prune, null removal,
            /// defaulting) finds nothing to do, at the resource root and below it.
            #[test]
            fn default_after_prune_is_stable(
                s in arb_root_schema(),
                nested in arb_schema(),
                v in arb_value(),
            ) {
                for (schema, root) in [(&s, true), (&nested, false)] {
                    let mut once = v.clone();
                    round(&mut once, schema, root);
                    let mut twice = once.clone();
                    let changed = round(&mut twice, schema, root);
                    prop_assert_eq!(&once, &twice);
                    prop_assert!(!changed, "second round reported changes on {}", once);
                }
            }
        }
    }
}
