//! What a CRD costs a server before its first custom resource: the manifests read,
//! the CRD defaulted and validated (the create), and compiled for serving (structural
//! schemas, validators, CEL programs, immutability plans, which a server makes on a
//! version's first request) — for the 15 realistic CRDs of
//! `testdata/crds-realistic/` (made from kube's built-in kinds). Then the same
//! validation and compilation through the process-wide caches (`registry::crd_cache`)
//! once they hold the set: a content hash of each spec and a hit.
//!
//! Run: `cargo bench --bench crd_compile` (or `-- --quick` for a short pass).

use crd_apiserver::codec::decode_manifests;
use crd_apiserver::registry::catalog::CompiledCrd;
use crd_apiserver::registry::crd::{default_crd, validate_crd, validate_crd_given_spec};
use crd_apiserver::registry::crd_cache;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use serde_json::Value;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/crds-realistic");

/// Every manifest file of the set, sorted, with its bytes.
fn files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(DIR) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect(),
        Err(e) => panic!("{DIR}: {e}"),
    };
    paths.sort();
    paths
        .into_iter()
        .map(|p| match std::fs::read(&p) {
            Ok(bytes) => (p, bytes),
            Err(e) => panic!("{}: {e}", p.display()),
        })
        .collect()
}

fn decode_all(files: &[(PathBuf, Vec<u8>)]) -> Vec<Value> {
    files
        .iter()
        .flat_map(|(p, bytes)| match decode_manifests(bytes, true) {
            Ok(docs) => docs,
            Err(e) => panic!("{}: {e}", p.display()),
        })
        .collect()
}

fn name(crd: &Value) -> &str {
    crd.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn bench(c: &mut Criterion) {
    let files = files();
    let mut crds = decode_all(&files);
    for crd in &mut crds {
        default_crd(crd);
        let errs = validate_crd(crd);
        assert!(errs.is_empty(), "{} is invalid: {errs:?}", name(crd));
    }
    let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
    eprintln!(
        "{} CRDs in {} files, {} KiB of YAML ({})",
        crds.len(),
        files.len(),
        bytes / 1024,
        Path::new(DIR).display()
    );

    let mut g = c.benchmark_group("crd_set");
    g.throughput(Throughput::Elements(crds.len() as u64));
    g.bench_function("decode_yaml", |b| b.iter(|| decode_all(black_box(&files))));
    g.bench_function("validate", |b| {
        b.iter(|| {
            for crd in &crds {
                black_box(validate_crd(crd));
            }
        })
    });
    g.bench_function("compile", |b| {
        b.iter(|| {
            for crd in &crds {
                // Each version's schema is compiled on first use: use it.
                let compiled = CompiledCrd::compile(crd.clone(), 1).ok();
                for v in compiled.iter().flat_map(|c| c.versions.iter()) {
                    black_box(v.schema());
                }
            }
        })
    });
    // Through the caches, filled once here: what a later server pays.
    for crd in &crds {
        assert!(crd_cache::compile(crd.clone(), 1).is_ok());
        assert!(crd_cache::validate_spec(&crd["spec"]).is_empty());
    }
    g.bench_function("validate_cached", |b| {
        b.iter(|| {
            for crd in &crds {
                let spec_errors = crd_cache::validate_spec(&crd["spec"]);
                black_box(validate_crd_given_spec(crd, spec_errors));
            }
        })
    });
    g.bench_function("compile_cached", |b| {
        b.iter(|| {
            for crd in &crds {
                black_box(crd_cache::compile(crd.clone(), 1).map(|_| ()).ok());
            }
        })
    });
    g.finish();
    let stats = crd_cache::stats();
    assert_eq!(
        (stats.compiled.misses, stats.validated.misses),
        (crds.len() as u64, crds.len() as u64),
        "the cached runs compiled or validated again: {stats:?}"
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
