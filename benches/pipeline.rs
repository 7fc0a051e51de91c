//! Per-stage cost of the custom-resource write pipeline on one large object.
//!
//! Run: `cargo bench --bench pipeline` (or `-- --quick` for a short pass).
//!
//! The CRD schema and the object are generated below; the constants say how big they
//! are. Stages: decode (JSON bytes → Value), prune, default, validate, and the whole
//! `pipeline::create` / `pipeline::update` on a `VersionSchema` compiled once, as the
//! catalog compiles it when a CRD is written.

use crd_apiserver::codec::decode_body;
use crd_apiserver::field::Path;
use crd_apiserver::pipeline;
use crd_apiserver::registry::catalog::CompiledCrd;
use crd_apiserver::registry::crd::{default_crd, validate_crd};
use crd_apiserver::rest::WriteOptions;
use crd_apiserver::schema::default::apply_defaults;
use crd_apiserver::schema::prune::{prune, PruneOptions};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Map, Value};
use std::hint::black_box;
use std::time::Duration;

/// Scalar fields directly under `spec`, cycling through [`SCALAR_KINDS`].
const SPEC_SCALARS: usize = 200;
/// Entries of `spec.endpoints`, a list-type map of objects keyed by `name`.
const ENDPOINTS: usize = 24;
/// Members of each endpoint's `ports` (a list-type set of integers).
const PORTS_PER_ENDPOINT: usize = 4;
/// Objects in each endpoint's `headers` (an atomic list of objects).
const HEADERS_PER_ENDPOINT: usize = 3;
/// Entries of `spec.labels`, a string map via `additionalProperties`.
const LABELS: usize = 64;
/// Entries of `spec.pools`, a map of objects via `additionalProperties`.
const POOLS: usize = 16;
/// Members of `spec.tags`, a list-type set of strings.
const TAGS: usize = 32;
/// Fields the schema does not know, spread over `spec`, endpoints and pools.
const UNKNOWN_SPEC_FIELDS: usize = 20;

/// The kinds of scalar under `spec`, by `index % SCALAR_KINDS`.
const SCALAR_KINDS: usize = 8;

/// Whether scalar `i` has a schema default (the "missing defaults" object omits it).
fn scalar_has_default(i: usize) -> bool {
    matches!(i % SCALAR_KINDS, 3 | 5 | 6)
}

/// Schema of scalar field `i` of `spec`.
fn scalar_schema(i: usize) -> Value {
    match i % SCALAR_KINDS {
        0 => json!({"type": "string", "maxLength": 63,
                    "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$"}),
        1 => json!({"type": "string", "format": "uuid"}),
        2 => json!({"type": "string", "format": "date-time"}),
        3 => json!({"type": "integer", "minimum": 0, "maximum": 1_000_000, "default": 7}),
        4 => json!({"type": "number", "minimum": 0.0, "exclusiveMinimum": true}),
        5 => json!({"type": "boolean", "default": true}),
        6 => json!({"type": "string", "enum": ["alpha", "beta", "gamma"], "default": "beta"}),
        _ => json!({"type": "string", "format": "email"}),
    }
}

/// Value of scalar field `i` of `spec` (valid for [`scalar_schema`]).
fn scalar_value(i: usize) -> Value {
    match i % SCALAR_KINDS {
        0 => json!(format!("name-{i}")),
        1 => json!(format!("123e4567-e89b-42d3-a456-{:012}", i)),
        2 => json!(format!("2024-05-01T12:{:02}:{:02}Z", i % 60, (i * 7) % 60)),
        3 => json!(i * 3),
        4 => json!(i as f64 + 0.5),
        5 => json!(i.is_multiple_of(2)),
        6 => json!("gamma"),
        _ => json!(format!("user{i}@example.com")),
    }
}

/// Schema of one `spec.endpoints[*]` entry.
fn endpoint_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "port"],
        "properties": {
            "name": {"type": "string", "pattern": "^[a-z][a-z0-9-]*$", "maxLength": 63},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "protocol": {"type": "string", "enum": ["TCP", "UDP", "SCTP"], "default": "TCP"},
            "weight": {"type": "integer", "minimum": 0, "default": 1},
            "enabled": {"type": "boolean", "default": false},
            "host": {"type": "string", "format": "hostname"},
            "address": {"type": "string", "format": "ipv4"},
            "path": {"type": "string", "pattern": "^/[a-zA-Z0-9/_.-]*$"},
            "timeout": {"type": "string", "format": "duration"},
            "ports": {
                "type": "array", "x-kubernetes-list-type": "set", "maxItems": 64,
                "items": {"type": "integer", "minimum": 1, "maximum": 65535}
            },
            "headers": {
                "type": "array", "x-kubernetes-list-type": "atomic",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "pattern": "^[A-Za-z-]+$"},
                        "value": {"type": "string", "maxLength": 256}
                    }
                }
            }
        }
    })
}

/// Endpoint `i`; with `defaults` false the defaulted fields are left out.
fn endpoint_value(i: usize, defaults: bool) -> Value {
    let mut e = json!({
        "name": format!("endpoint-{i}"),
        "port": 8000 + i,
        "host": format!("svc-{i}.example.internal"),
        "address": format!("10.0.{}.{}", i / 250, i % 250 + 1),
        "path": format!("/api/v{}/items", i % 3 + 1),
        "timeout": "1m30s",
        "ports": (0..PORTS_PER_ENDPOINT).map(|p| 9000 + i * 10 + p).collect::<Vec<_>>(),
        "headers": (0..HEADERS_PER_ENDPOINT)
            .map(|h| json!({"name": format!("X-Header-{}", ["A", "B", "C"][h % 3]),
                            "value": format!("value {i}/{h}")}))
            .collect::<Vec<_>>(),
    });
    if defaults {
        e["protocol"] = json!("UDP");
        e["weight"] = json!(i % 5);
        e["enabled"] = json!(true);
    }
    e
}

/// Schema of one `spec.pools` value.
fn pool_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "image": {"type": "string", "pattern": "^[a-z0-9./-]+(:[a-zA-Z0-9._-]+)?$"},
            "zone": {"type": "string", "enum": ["a", "b", "c"]},
            "selector": {"type": "object", "additionalProperties": {"type": "string"}}
        }
    })
}

/// Pool `i`; with `defaults` false `replicas` is left out.
fn pool_value(i: usize, defaults: bool) -> Value {
    let zone = ["a", "b", "c"][i % 3];
    let mut p = json!({
        "image": format!("registry.example.com/app/pool-{i}:v1.{i}"),
        "zone": zone,
        "selector": {"app": format!("pool-{i}"), "tier": "backend"},
    });
    if defaults {
        p["replicas"] = json!(i + 2);
    }
    p
}

/// The CRD (`bigs.bench.example.com`) whose schema covers everything generated below.
fn big_crd() -> Value {
    let mut spec_props = Map::new();
    for i in 0..SPEC_SCALARS {
        spec_props.insert(format!("field{i:03}"), scalar_schema(i));
    }
    spec_props.insert(
        "endpoints".into(),
        json!({"type": "array", "x-kubernetes-list-type": "map",
               "x-kubernetes-list-map-keys": ["name"], "items": endpoint_schema()}),
    );
    spec_props.insert(
        "labels".into(),
        json!({"type": "object",
               "additionalProperties": {"type": "string", "maxLength": 63}}),
    );
    spec_props.insert(
        "pools".into(),
        json!({"type": "object", "additionalProperties": pool_schema()}),
    );
    spec_props.insert(
        "tags".into(),
        json!({"type": "array", "x-kubernetes-list-type": "set",
               "items": {"type": "string", "pattern": "^[a-z0-9-]+$"}}),
    );
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bigs.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "bigs", "singular": "big", "kind": "Big", "listKind": "BigList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "required": ["field000"],
                                 "properties": spec_props},
                        "status": {"type": "object",
                                   "properties": {"phase": {"type": "string"}}}
                    }
                }}
            }]
        }
    })
}

/// A `Big` object. `defaults`: whether the defaulted fields are present (as after the
/// default stage); `unknown`: whether fields the schema does not know are added.
fn big_object(defaults: bool, unknown: bool) -> Value {
    let mut spec = Map::new();
    for i in 0..SPEC_SCALARS {
        if defaults || !scalar_has_default(i) {
            spec.insert(format!("field{i:03}"), scalar_value(i));
        }
    }
    let mut endpoints: Vec<Value> = (0..ENDPOINTS)
        .map(|i| endpoint_value(i, defaults))
        .collect();
    let labels: Map<String, Value> = (0..LABELS)
        .map(|i| {
            (
                format!("example.com/label-{i}"),
                json!(format!("value-{i}")),
            )
        })
        .collect();
    let mut pools: Map<String, Value> = (0..POOLS)
        .map(|i| (format!("pool-{i}"), pool_value(i, defaults)))
        .collect();
    if unknown {
        for i in 0..UNKNOWN_SPEC_FIELDS {
            spec.insert(format!("unknown{i}"), json!({"nested": [i, i + 1]}));
        }
        for e in endpoints.iter_mut().step_by(3) {
            e["legacyField"] = json!("dropped");
        }
        for p in pools.values_mut().step_by(4) {
            p["stray"] = json!(1);
        }
    }
    spec.insert("endpoints".into(), Value::Array(endpoints));
    spec.insert("labels".into(), Value::Object(labels));
    spec.insert("pools".into(), Value::Object(pools));
    spec.insert(
        "tags".into(),
        json!((0..TAGS).map(|i| format!("tag-{i}")).collect::<Vec<_>>()),
    );
    let mut obj = json!({
        "apiVersion": "bench.example.com/v1",
        "kind": "Big",
        "metadata": {"name": "big-1", "namespace": "default",
                     "labels": {"app": "bench"}},
        "spec": spec,
    });
    if unknown {
        obj["topLevelJunk"] = json!("dropped");
    }
    obj
}

/// Number of scalar leaves in `v` (the "fields" a stage walks).
fn leaf_count(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaf_count).sum(),
        Value::Array(a) => a.iter().map(leaf_count).sum(),
        _ => 1,
    }
}

/// The CRD compiled once, as the catalog does; the setup checks it is a valid CRD.
fn compiled_crd() -> CompiledCrd {
    let mut crd = big_crd();
    default_crd(&mut crd);
    let errs = validate_crd(&crd);
    assert!(errs.is_empty(), "the generated CRD is invalid: {errs:?}");
    let compiled = match CompiledCrd::compile(crd, 1) {
        Ok(c) => c,
        Err(e) => panic!("compiling the generated CRD: {e}"),
    };
    assert!(
        !compiled.versions.is_empty(),
        "the generated CRD has no version"
    );
    compiled
}

fn stages(c: &mut Criterion) {
    let crd = compiled_crd();
    let schema = &crd.versions[0].schema();
    let full = big_object(true, false);
    let request = big_object(false, true);
    let request_bytes = match serde_json::to_vec(&request) {
        Ok(b) => b,
        Err(e) => panic!("encoding the object: {e}"),
    };
    let leaves = leaf_count(&full);
    assert!(leaves >= 500, "the object has only {leaves} leaf fields");
    eprintln!(
        "object: {leaves} leaf fields, request body {} bytes",
        request_bytes.len()
    );
    let opts = WriteOptions::default();

    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(request_bytes.len() as u64));
    g.bench_function("json", |b| {
        b.iter(|| decode_body(black_box(&request_bytes), "application/json"))
    });
    // Plain serde_json on the same bytes: what kube's Go-exact decoding costs on top.
    g.bench_function("serde_json_baseline", |b| {
        b.iter(|| serde_json::from_slice::<Value>(black_box(&request_bytes)))
    });
    g.finish();

    let mut g = c.benchmark_group("prune");
    let prune_opts = PruneOptions::default();
    g.bench_function("unknown_fields", |b| {
        b.iter_batched(
            || request.clone(),
            |mut obj| {
                let report = prune(&mut obj, &schema.structural, true, &prune_opts);
                (obj, report)
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("default");
    let undefaulted = big_object(false, false);
    g.bench_function("missing_defaults", |b| {
        b.iter_batched(
            || undefaulted.clone(),
            |mut obj| {
                let report = apply_defaults(&mut obj, &schema.structural);
                (obj, report)
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("validate");
    let errs = schema.validator.validate(&full, &Path::root());
    assert!(errs.is_empty(), "the generated object is invalid: {errs:?}");
    g.bench_function("valid_object", |b| {
        b.iter(|| schema.validator.validate(black_box(&full), &Path::root()))
    });
    g.finish();

    let mut stored = match pipeline::create(request.clone(), schema, &opts) {
        Ok(a) => a.object,
        Err(e) => panic!("pipeline::create rejected the object: {e:?}"),
    };
    // Updates carry the resourceVersion the store set on the object they read.
    stored["metadata"]["resourceVersion"] = json!("1");
    let mut changed = request.clone();
    changed["metadata"]["resourceVersion"] = json!("1");
    changed["spec"]["field000"] = json!("name-changed");
    changed["spec"]["endpoints"][0]["port"] = json!(9999);
    if let Err(e) = pipeline::update(changed.clone(), &stored, schema, &opts) {
        panic!("pipeline::update rejected the object: {e:?}");
    }

    let mut g = c.benchmark_group("pipeline");
    g.bench_function("create", |b| {
        b.iter_batched(
            || request.clone(),
            |obj| pipeline::create(obj, schema, &opts),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("update", |b| {
        b.iter_batched(
            || changed.clone(),
            |obj| pipeline::update(obj, &stored, schema, &opts),
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = stages
}
criterion_main!(benches);
