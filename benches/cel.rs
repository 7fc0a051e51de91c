//! The cost of CEL validation rules (issue 5): the 20 rules of one CRD evaluated on a
//! 500-field object, on create (no `oldSelf`) and on update (with the old object, so
//! transition rules run and unchanged values are correlated), and the per-CRD work:
//! compiling the rules (parse, type-check, cost estimate) and kube's CRD-time checks.
//!
//! Run: `cargo bench --bench cel` (or `-- --quick` for a short pass).
//!
//! The rules have the shapes CRD authors write: transition rules (`self == oldSelf`,
//! monotonic counters, list-map items keyed by name), `size()` bounds, regexes,
//! `all()`/`exists()` over a list with `maxItems`, map keys, `quantity()`, a
//! `date-time` format and a `format` library check, type-scoped rules comparing fields,
//! a `messageExpression`.

use crd_apiserver::cel::{self, CompiledRules};
use crd_apiserver::field::Path;
use crd_apiserver::registry::catalog::CompiledCrd;
use crd_apiserver::registry::crd::{default_crd, validate_crd};
use crd_apiserver::schema::props::JSONSchemaProps;
use crd_apiserver::schema::structural::Structural;
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::{json, Map, Value};
use std::hint::black_box;
use std::time::Duration;

/// Scalar fields directly under `spec`, cycling through [`SCALAR_KINDS`] kinds.
const SCALARS: usize = 450;
/// Items of `spec.containers` (a list-type map keyed by `name`, three fields each).
const CONTAINERS: usize = 10;
/// Entries of `spec.labels` (a string map).
const LABELS: usize = 20;
/// The kinds of scalar under `spec`, by `index % SCALAR_KINDS`.
const SCALAR_KINDS: usize = 5;

fn scalar_name(i: usize) -> String {
    format!("f{i:03}")
}

/// Schema of scalar field `i`: string, integer, date-time, quantity, boolean.
fn scalar_schema(i: usize) -> Value {
    match i % SCALAR_KINDS {
        0 => json!({"type": "string", "maxLength": 63}),
        1 => json!({"type": "integer"}),
        2 => json!({"type": "string", "format": "date-time"}),
        3 => json!({"type": "string", "maxLength": 20}),
        _ => json!({"type": "boolean"}),
    }
}

/// Value of scalar field `i`, valid for every rule.
fn scalar_value(i: usize, revision: i64) -> Value {
    match i % SCALAR_KINDS {
        0 => json!(format!("app-{i}")),
        1 => json!(i as i64 * 10 + revision),
        2 => json!("2024-05-06T07:08:09Z"),
        3 => json!(format!("{}Mi", 64 + i)),
        _ => json!(i.is_multiple_of(2)),
    }
}

/// The 20 rules: (field they sit on, or `None` for `spec` itself, rule JSON).
fn field_rules() -> Vec<(&'static str, Value)> {
    vec![
        // Transition rules.
        (
            "f000",
            json!({"rule": "self == oldSelf", "message": "f000 is immutable"}),
        ),
        (
            "f005",
            json!({"rule": "self == oldSelf", "message": "f005 is immutable"}),
        ),
        (
            "f011",
            json!({"rule": "self >= oldSelf", "message": "f011 may only grow"}),
        ),
        // Strings: regex, size, prefix, the format library.
        (
            "f010",
            json!({"rule": "self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')"}),
        ),
        (
            "f015",
            json!({"rule": "size(self) >= 3 && size(self) <= 63"}),
        ),
        ("f020", json!({"rule": "self.startsWith('app-')"})),
        (
            "f025",
            json!({"rule": "!format.dns1123Label().validate(self).hasValue()"}),
        ),
        // Numbers, timestamps (format date-time), quantities.
        ("f001", json!({"rule": "self >= 0 && self <= 1000000"})),
        (
            "f002",
            json!({"rule": "self > timestamp('2000-01-01T00:00:00Z')"}),
        ),
        (
            "f003",
            json!({"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('64Gi'))"}),
        ),
        // Lists with maxItems: all(), exists().
        (
            "containers",
            json!({"rule": "self.all(c, c.image.startsWith('registry.example.com/'))"}),
        ),
        (
            "containers",
            json!({"rule": "self.exists(c, c.name == 'main')", "message": "a main container is required"}),
        ),
        // Maps: keys.
        (
            "labels",
            json!({"rule": "self.all(k, k.size() <= 63 && !k.startsWith('kubernetes.io/'))"}),
        ),
        ("labels", json!({"rule": "!('forbidden' in self)"})),
    ]
}

/// Rules on each container (run once per item; the transition rule correlates items by
/// their `name` key).
fn item_rules() -> Value {
    json!([
        {"rule": "self.port > 0 && self.port < 65536"},
        {"rule": "self.port == oldSelf.port", "message": "ports are immutable"}
    ])
}

/// Type-scoped rules on `spec`.
fn spec_rules() -> Value {
    json!([
        {"rule": "self.f001 <= self.f006", "fieldPath": ".f001", "reason": "FieldValueForbidden"},
        {"rule": "has(self.f010) || has(self.f015)"},
        {"rule": "size(self.containers) <= 20",
         "messageExpression": "'at most 20 containers, not %d'.format([size(self.containers)])"}
    ])
}

/// Type-scoped rule on the object: `spec` can't be removed once set.
fn root_rules() -> Value {
    json!([{"rule": "!has(oldSelf.spec) || has(self.spec)", "message": "spec is required once set"}])
}

fn crd() -> Value {
    let mut props = Map::new();
    for i in 0..SCALARS {
        props.insert(scalar_name(i), scalar_schema(i));
    }
    props.insert(
        "containers".into(),
        json!({
            "type": "array", "maxItems": 20,
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "maxLength": 63},
                "image": {"type": "string", "maxLength": 255},
                "port": {"type": "integer"}
            }, "x-kubernetes-validations": item_rules()}
        }),
    );
    props.insert(
        "labels".into(),
        json!({"type": "object", "maxProperties": 64,
               "additionalProperties": {"type": "string", "maxLength": 63}}),
    );
    for (field, rule) in field_rules() {
        let schema = props
            .get_mut(field)
            .unwrap_or_else(|| panic!("no field {field}"));
        match schema["x-kubernetes-validations"].as_array_mut() {
            Some(rules) => rules.push(rule),
            None => schema["x-kubernetes-validations"] = json!([rule]),
        }
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "services.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "services", "singular": "service", "kind": "Service", "listKind": "ServiceList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": root_rules(),
                    "properties": {"spec": {
                        "type": "object",
                        "properties": props,
                        "x-kubernetes-validations": spec_rules()
                    }}
                }}
            }]
        }
    })
}

/// The object at `revision`: every rule holds, and updates between revisions only
/// change mutable fields (the common update).
fn object(revision: i64) -> Value {
    let mut spec = Map::new();
    for i in 0..SCALARS {
        spec.insert(scalar_name(i), scalar_value(i, revision));
    }
    let containers: Vec<Value> = (0..CONTAINERS)
        .map(|i| {
            let name = if i == 0 {
                "main".to_string()
            } else {
                format!("sidecar-{i}")
            };
            json!({"name": name, "image": format!("registry.example.com/app:{revision}"), "port": 8000 + i})
        })
        .collect();
    spec.insert("containers".into(), Value::Array(containers));
    let labels: Map<String, Value> = (0..LABELS)
        .map(|i| (format!("label-{i}"), json!(format!("value-{i}"))))
        .collect();
    spec.insert("labels".into(), Value::Object(labels));
    json!({
        "apiVersion": "bench.example.com/v1", "kind": "Service",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": spec
    })
}

fn leaf_count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaf_count).sum(),
        Value::Array(a) => a.iter().map(leaf_count).sum(),
        _ => 1,
    }
}

fn rule_count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match (k.as_str(), v) {
                ("x-kubernetes-validations", Value::Array(a)) => a.len(),
                _ => rule_count(v),
            })
            .sum(),
        Value::Array(a) => a.iter().map(rule_count).sum(),
        _ => 0,
    }
}

/// The CRD as it is written (checked valid, with kube's defaults) and its schema.
fn schema_of(crd: &Value) -> (JSONSchemaProps, Structural) {
    let raw = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let props = match JSONSchemaProps::from_value(raw) {
        Ok(p) => p,
        Err(e) => panic!("the generated schema does not decode: {e}"),
    };
    let structural = Structural::from_props(&props);
    (props, structural)
}

fn bench(c: &mut Criterion) {
    let mut crd = crd();
    default_crd(&mut crd);
    let errs = validate_crd(&crd);
    assert!(errs.is_empty(), "the generated CRD is invalid: {errs:?}");
    let rules = rule_count(&crd);
    assert_eq!(rules, 20, "the CRD should carry 20 rules");
    let (props, structural) = schema_of(&crd);
    let compiled = match CompiledCrd::compile(crd.clone(), 1) {
        Ok(c) => c,
        Err(e) => panic!("compiling the CRD: {e}"),
    };
    let Some(compiled_rules) = compiled
        .versions
        .first()
        .and_then(|v| v.schema().cel.clone())
    else {
        panic!("the CRD compiled without rules");
    };

    let old = object(1);
    let new = object(2);
    let leaves = leaf_count(&new);
    assert!(leaves >= 500, "the object has only {leaves} leaf fields");
    eprintln!("CRD: {rules} rules; object: {leaves} leaf fields");
    for (what, report) in [
        ("create", cel::validate(&compiled_rules, &new, None)),
        ("update", cel::validate(&compiled_rules, &new, Some(&old))),
    ] {
        assert!(
            report.errors.is_empty() && report.warnings.is_empty(),
            "{what} should pass every rule: {:?} {:?}",
            report.errors,
            report.warnings
        );
        eprintln!(
            "{what}: runtime cost {} of the {} budget",
            cel::eval::RUNTIME_COST_BUDGET - report.remaining_budget,
            cel::eval::RUNTIME_COST_BUDGET
        );
    }
    // Sanity: the transition rules do run on updates.
    let mut changed = new.clone();
    changed["spec"]["f000"] = json!("app-changed");
    let report = cel::validate(&compiled_rules, &changed, Some(&old));
    assert_eq!(
        report.errors.len(),
        1,
        "changing f000 breaks one rule: {:?}",
        report.errors
    );

    let mut g = c.benchmark_group("cel_validate");
    g.bench_function("create", |b| {
        b.iter(|| cel::validate(black_box(&compiled_rules), black_box(&new), None))
    });
    g.bench_function("update", |b| {
        b.iter(|| {
            cel::validate(
                black_box(&compiled_rules),
                black_box(&new),
                Some(black_box(&old)),
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("cel_per_crd");
    // What the catalog does once per CRD version: parse, check, estimate every rule.
    g.bench_function("compile_rules", |b| {
        b.iter(|| CompiledRules::compile(black_box(&structural)))
    });
    // What CRD create/update validation does for the rules (kube's cost budget checks).
    g.bench_function("validate_crd_rules", |b| {
        b.iter(|| {
            cel::validate_crd_rules(
                black_box(&props),
                &Path::new("spec.validation.openAPIV3Schema"),
                &Vec::new(),
                true,
                false,
            )
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
