//! The cost of the immutability check (KEP "Immutable fields": at most 15% on updates of
//! CRDs that use the extensions, nothing for those that don't).
//!
//! `pipeline::update` of a large object (500 list-map entries, a 500-key map, a nested
//! object, a set) under two versions of one schema: without markers (no plan is
//! compiled) and with markers on every part of the object, so the check walks all of
//! it. The update changes only mutable fields, the common case. Also the check alone.

use std::hint::black_box;
use std::time::{Duration, Instant};

use crd_apiserver::pipeline::{self, VersionSchema};
use crd_apiserver::registry::catalog::CompiledCrd;
use crd_apiserver::rest::WriteOptions;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde_json::{json, Map, Value};

const ENTRIES: usize = 500;

/// The CRD; `marked` adds the immutability extensions.
fn crd(marked: bool) -> Value {
    let mark = |mut schema: Value, ext: &str| {
        if marked {
            schema[ext] = json!(true);
        }
        schema
    };
    let imm = "x-kubernetes-immutable";
    let keys = "x-kubernetes-immutable-keys";
    let containers = mark(
        json!({
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": mark(json!({"type": "string"}), imm),
                "image": mark(json!({"type": "string"}), imm),
                "ports": {"type": "array", "items": mark(json!({"type": "integer"}), imm)},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "note": {"type": "string"}
            }}
        }),
        keys,
    );
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "fleets.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {"plural": "fleets", "singular": "fleet", "kind": "Fleet", "listKind": "FleetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "containers": containers,
                        "labels": {"type": "object",
                                   "additionalProperties": mark(json!({"type": "string"}), imm)},
                        "config": mark(json!({"type": "object", "properties": {
                            "tiers": {"type": "array", "items": {"type": "object", "properties": {
                                "name": {"type": "string"}, "weight": {"type": "integer"}
                            }}},
                            "zones": {"type": "array", "x-kubernetes-list-type": "set",
                                      "items": {"type": "string"}}
                        }}), imm),
                        "revision": {"type": "integer"}
                    }}
                }}}
            }]
        }
    })
}

fn fleet() -> Value {
    let containers: Vec<Value> = (0..ENTRIES)
        .map(|i| {
            json!({
                "name": format!("c{i}"),
                "image": format!("registry.example.com/app:{i}"),
                "ports": [8000 + i, 9000 + i],
                "env": (0..4).map(|j| (format!("K{j}"), json!(format!("v{j}")))).collect::<Map<_, _>>(),
                "note": "n"
            })
        })
        .collect();
    let labels: Map<String, Value> = (0..ENTRIES)
        .map(|i| (format!("label-{i}"), json!(format!("value-{i}"))))
        .collect();
    let tiers: Vec<Value> = (0..100)
        .map(|i| json!({"name": format!("t{i}"), "weight": i}))
        .collect();
    let zones: Vec<Value> = (0..50).map(|i| json!(format!("zone-{i}"))).collect();
    json!({
        "apiVersion": "bench.example.com/v1", "kind": "Fleet",
        "metadata": {"name": "f", "namespace": "default", "resourceVersion": "1"},
        "spec": {"containers": containers, "labels": labels,
                 "config": {"tiers": tiers, "zones": zones}, "revision": 1}
    })
}

/// The stored object (created, then read) and an update changing mutable fields only.
fn scenario(s: &VersionSchema) -> (Value, Value) {
    let opts = WriteOptions::default();
    let mut old = match pipeline::create(fleet(), s, &opts) {
        Ok(a) => a.object,
        Err(e) => panic!("create: {e}"),
    };
    old["metadata"]["resourceVersion"] = json!("1");
    pipeline::read(&mut old, s);
    let mut new = old.clone();
    new["spec"]["revision"] = json!(2);
    new["spec"]["containers"][7]["note"] = json!("changed");
    new["spec"]["containers"][9]["env"]["K1"] = json!("changed");
    new["spec"]["labels"]["label-new"] = json!("added");
    (old, new)
}

fn compiled(marked: bool) -> CompiledCrd {
    match CompiledCrd::compile(crd(marked), 1) {
        Ok(c) => c,
        Err(e) => panic!("compile: {e}"),
    }
}

fn bench_update(c: &mut Criterion) {
    let plain = compiled(false);
    let marked = compiled(true);
    assert!(plain.versions[0].schema().immutability.is_none());
    assert!(marked.versions[0].schema().immutability.is_some());
    let opts = WriteOptions::default();
    let mut group = c.benchmark_group("immutable/update");
    for (name, crd) in [("without_extensions", &plain), ("with_extensions", &marked)] {
        let s = &crd.versions[0].schema();
        let (old, new) = scenario(s);
        if let Err(e) = pipeline::update(new.clone(), &old, s, &opts) {
            panic!("{name}: the update must be admitted: {e}");
        }
        group.bench_function(name, |b| {
            b.iter_batched(
                || new.clone(),
                |new| black_box(pipeline::update(new, &old, s, &opts)),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    paired_overhead(&plain, &marked, &opts);

    let s = &marked.versions[0].schema();
    let (old, new) = scenario(s);
    if let Some(plan) = &s.immutability {
        c.bench_function("immutable/check_alone", |b| {
            b.iter(|| black_box(plan.check(black_box(&old), black_box(&new))))
        });
    }
}

/// The overhead as a ratio of medians measured in alternation: the machine is shared,
/// and alternating keeps load changes out of the comparison.
fn paired_overhead(plain: &CompiledCrd, marked: &CompiledCrd, opts: &WriteOptions) {
    const ROUNDS: usize = 300;
    let setups: Vec<(std::sync::Arc<VersionSchema>, Value, Value)> = [plain, marked]
        .iter()
        .map(|c| {
            let s = c.versions[0].schema();
            let (old, new) = scenario(&s);
            (s, old, new)
        })
        .collect();
    let mut samples = [Vec::with_capacity(ROUNDS), Vec::with_capacity(ROUNDS)];
    for round in 0..ROUNDS {
        // Alternate which goes first, so neither always runs on a warm cache.
        let order = if round.is_multiple_of(2) {
            [0, 1]
        } else {
            [1, 0]
        };
        for which in order {
            let (s, old, new) = &setups[which];
            let new = new.clone();
            let start = Instant::now();
            black_box(pipeline::update(new, old, s, opts).is_ok());
            samples[which].push(start.elapsed());
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let [mut without, mut with] = samples;
    let (a, b) = (median(&mut without), median(&mut with));
    println!(
        "immutable/paired: median update without extensions {a:?}, with {b:?}: overhead {:+.1}%",
        (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0
    );
}

criterion_group!(benches, bench_update);
criterion_main!(benches);
