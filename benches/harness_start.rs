//! Servers started per second by the in-process harness (`TestServer`), start to
//! ready: `start().await` returns once the server serves and every `load_dir` CRD is
//! Established. Each case is timed per server (shutdown is outside the timing):
//!
//! * `floor` — no CRDs: what every server costs (storage, bootstrap, listener);
//! * `crds_cold` — `load_dir(testdata/crds-realistic)` (15 realistic CRDs made from
//!   kube's built-in kinds) with the process-wide caches emptied before each start
//!   (`crd_cache::clear`, `server::manifests::clear`): manifests parsed, every CRD
//!   validated and compiled, as for the first server of a process (which also compiles
//!   the schemas' regexes once: printed before the cases, one sample);
//! * `crds_warm` — the same directory, caches kept: what every later server costs
//!   (parsed manifests, validated and compiled CRDs from the caches);
//!
//! Throughput is servers per second. Run: `cargo bench --bench harness_start`.

use crd_apiserver::harness::{TestServer, TestServerBuilder};
use crd_apiserver::registry::crd_cache;
use crd_apiserver::server::manifests;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::time::{Duration, Instant};

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/crds-realistic");

/// CRDs in [`CRDS`].
const CRD_COUNT: usize = 15;

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    }
}

/// Start `iters` servers from `builder` one after the other; the time to ready, summed.
fn start_servers(
    rt: &tokio::runtime::Runtime,
    builder: &TestServerBuilder,
    iters: u64,
    cold: bool,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        if cold {
            crd_cache::clear();
            manifests::clear();
        }
        let started = Instant::now();
        let server = match rt.block_on(builder.clone().start()) {
            Ok(s) => s,
            Err(e) => panic!("start: {e}"),
        };
        total += started.elapsed();
        rt.block_on(server.shutdown());
    }
    total
}

fn bench(c: &mut Criterion) {
    let rt = runtime();
    let with_crds = TestServer::builder().load_dir(CRDS);
    // Sanity: every CRD is served, and a second server compiles nothing. The very
    // first start also compiles the schemas' `pattern` regexes, which the validator
    // keeps process-wide and `crds_cold` does not empty: one sample of it, printed.
    let started = Instant::now();
    let first = match rt.block_on(with_crds.clone().start()) {
        Ok(s) => s,
        Err(e) => panic!("start with {CRDS}: {e}"),
    };
    let first_start = started.elapsed();
    assert_eq!(first.api().catalog.all().len(), CRD_COUNT);
    let before = crd_cache::stats();
    let started = Instant::now();
    let second = match rt.block_on(with_crds.clone().start()) {
        Ok(s) => s,
        Err(e) => panic!("start with {CRDS}: {e}"),
    };
    let second_start = started.elapsed();
    eprintln!(
        "first server of the process with {CRD_COUNT} CRDs: {first_start:.1?}; the second: \
         {second_start:.1?} (one sample each)"
    );
    let after = crd_cache::stats();
    assert_eq!(
        (after.compiled.misses, after.validated.misses),
        (before.compiled.misses, before.validated.misses),
        "the second server compiled or validated a CRD"
    );
    assert!(after.compiled.hits >= before.compiled.hits + CRD_COUNT as u64);
    rt.block_on(first.shutdown());
    rt.block_on(second.shutdown());

    let mut g = c.benchmark_group("harness_start");
    g.throughput(Throughput::Elements(1));
    g.bench_function("floor", |b| {
        b.iter_custom(|iters| start_servers(&rt, &TestServer::builder(), iters, false))
    });
    g.bench_function("crds_cold", |b| {
        b.iter_custom(|iters| start_servers(&rt, &with_crds, iters, true))
    });
    g.bench_function("crds_warm", |b| {
        b.iter_custom(|iters| start_servers(&rt, &with_crds, iters, false))
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
    targets = bench
}
criterion_main!(benches);
