//! Snapshots (`crate::snapshots`): what they cost, and what they save a test suite.
//!
//! 1. Per store size (`SNAP_SIZES`, default `1000,10000,100000` widgets with their
//!    CRD, created through the full pipeline by the in-process harness): the time of
//!    `snapshot`, of `restore` after a test's writes (10 objects created, changed or
//!    deleted) and with nothing changed, of a store fork (`fork_store`) and of a whole
//!    forked server (`TestServer::fork`, start to serving); RSS before and after
//!    taking a snapshot, and after rewriting a tenth of the objects under it (what
//!    copy-on-write costs).
//! 2. A suite of `SNAP_TESTS` (default 1000) tests over the same fixtures (the
//!    widgets CRD and 50 widgets), each test creating 5 widgets, patching one and
//!    listing: (a) every test starts from a snapshot of the loaded server (`restore`);
//!    (b) every test starts its own server and loads the fixtures (isolation the way
//!    envtest users get it without snapshots); (c) one server shared by all tests,
//!    each in its own namespace, no isolation (what suites do with one kube-apiserver,
//!    which cannot run on this machine: no kube-apiserver binary, and Go modules
//!    cannot be downloaded; (c) is the same pattern on this server, so the floor).
//!    Printed as totals, per test, and ratios.
//!
//! Run: `cargo bench --bench snapshots` (`SNAP_SIZES=1000,10000 SNAP_TESTS=200` for a
//! quicker one).

use std::time::{Duration, Instant};

use crd_apiserver::harness::TestServer;
use futures::StreamExt;
use serde_json::{json, Value};

const CRD: &str = include_str!("../testdata/crds/widgets.yaml");

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    match std::env::var(name) {
        Ok(v) => v.split(',').filter_map(|s| s.trim().parse().ok()).collect(),
        Err(_) => default.to_vec(),
    }
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

fn widget(namespace: &str, name: &str, color: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": namespace}, "spec": {"color": color}})
}

/// Creates `count` widgets named `{prefix}{i}` in `namespace`, 64 at a time.
async fn create(server: &TestServer, namespace: &str, prefix: &str, count: usize) {
    futures::stream::iter(0..count)
        .map(|i| server.load(widget(namespace, &format!("{prefix}{i}"), "red")))
        .buffer_unordered(64)
        .for_each(|r| async move {
            if let Err(e) = r {
                panic!("create: {e}");
            }
        })
        .await;
}

/// How long each of `n` runs of `run` took.
fn times(n: usize, mut run: impl FnMut()) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            run();
            t.elapsed()
        })
        .collect()
}

/// Median and worst of `samples`.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let median = samples[samples.len() / 2];
    let worst = samples[samples.len() - 1];
    format!("median {median:>10.1?}, max {worst:>10.1?}")
}

async fn sizes() {
    println!("== snapshot, restore and fork by store size (widgets and their CRD)");
    for size in env_list("SNAP_SIZES", &[1000, 10_000, 100_000]) {
        let server = TestServer::start().await.expect("start");
        server.load_yaml(CRD).await.expect("CRD");
        let loading = Instant::now();
        create(&server, "default", "w", size).await;
        let loaded_in = loading.elapsed();
        let before = rss_bytes();
        let taking = times(100, || {
            server.snapshot("loaded").expect("snapshot");
        });
        let with_snapshot = rss_bytes();
        let mut after_writes = Vec::new();
        for round in 0..20 {
            // A test's writes: 4 created, 3 changed, 3 deleted.
            create(&server, "default", &format!("new-{round}-"), 4).await;
            for i in 0..3 {
                server
                    .load(widget("default", &format!("w{i}"), "blue"))
                    .await
                    .expect("change");
            }
            let api = server.api();
            for i in 3..6 {
                let key = format!("/registry/example.com/widgets/default/w{i}");
                api.store.storage.delete(&key, None).await.expect("delete");
            }
            let t = Instant::now();
            let restored = server.restore("loaded").expect("restore");
            after_writes.push(t.elapsed());
            assert_eq!(restored.written, 10, "round {round}");
        }
        let unchanged = times(100, || {
            server.restore("loaded").expect("restore");
        });
        let snapshots = server.api().snapshots.get().expect("snapshots").clone();
        // The stores are dropped after the timings.
        let mut made = Vec::with_capacity(100);
        let stores = times(100, || {
            made.push(snapshots.fork_store("loaded").expect("fork store"));
        });
        drop(made);
        let mut forks = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let fork = server.fork("loaded").await.expect("fork");
            forks.push(t.elapsed());
            fork.shutdown().await;
        }
        // Copy-on-write: rewrite a tenth of the objects under the snapshot.
        let rewrite = Instant::now();
        futures::stream::iter(0..size / 10)
            .map(|i| server.load(widget("default", &format!("w{i}"), "green")))
            .buffer_unordered(64)
            .for_each(|r| async move {
                r.expect("rewrite");
            })
            .await;
        let rewritten_in = rewrite.elapsed();
        let rewritten = rss_bytes();
        let t = Instant::now();
        let restored = server.restore("loaded").expect("restore");
        let restore_tenth = t.elapsed();
        println!(
            "{size} objects (loaded in {:.1} s):",
            loaded_in.as_secs_f64()
        );
        println!("  snapshot                  {}", summary(taking));
        println!("  restore after 10 writes   {}", summary(after_writes));
        println!("  restore, nothing changed  {}", summary(unchanged));
        println!("  fork of the store         {}", summary(stores));
        println!(
            "  fork of the server        {}  (start to serving)",
            summary(forks)
        );
        println!(
            "  restore after rewriting {} objects: {:.1?} ({} written back; rewrite took {:.1} s)",
            size / 10,
            restore_tenth,
            restored.written,
            rewritten_in.as_secs_f64()
        );
        println!(
            "  RSS: {} loaded, {} with the snapshot (+{}), {} after rewriting a tenth under it (+{}, {:.0} bytes per rewritten object)",
            mib(before as f64),
            mib(with_snapshot as f64),
            mib(with_snapshot.saturating_sub(before) as f64),
            mib(rewritten as f64),
            mib(rewritten.saturating_sub(with_snapshot) as f64),
            rewritten.saturating_sub(with_snapshot) as f64 / (size / 10).max(1) as f64
        );
        server.shutdown().await;
    }
}

/// One test's body: 5 creates, a patch, a list.
async fn test_body(server: &TestServer, namespace: &str, n: usize) {
    create(server, namespace, &format!("t{n}-"), 5).await;
    server
        .load(widget(namespace, &format!("t{n}-0"), "blue"))
        .await
        .expect("patch");
    let client = server.client().expect("client");
    let api: kube::Api<kube::core::DynamicObject> = kube::Api::namespaced_with(
        client,
        namespace,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("example.com", "v1", "Widget"),
            "widgets",
        ),
    );
    let list = api.list(&Default::default()).await.expect("list");
    assert!(list.items.len() >= 5);
}

async fn fixtures(server: &TestServer) {
    server.load_yaml(CRD).await.expect("CRD");
    create(server, "default", "fixture-", 50).await;
}

async fn suite() {
    let tests = env_list("SNAP_TESTS", &[1000])[0];
    println!("== a suite of {tests} tests over the same fixtures (CRD + 50 widgets)");
    // (a) every test from the snapshot.
    let server = TestServer::start().await.expect("start");
    fixtures(&server).await;
    server.snapshot("fixtures").expect("snapshot");
    let started = Instant::now();
    for n in 0..tests {
        test_body(&server, "default", n).await;
        server.restore("fixtures").expect("restore");
    }
    let from_snapshot = started.elapsed();
    server.shutdown().await;
    // (b) every test its own server, fixtures loaded.
    let started = Instant::now();
    for n in 0..tests {
        let server = TestServer::start().await.expect("start");
        fixtures(&server).await;
        test_body(&server, "default", n).await;
        server.shutdown().await;
    }
    let recreated = started.elapsed();
    // (c) one shared server, a namespace per test.
    let server = TestServer::start().await.expect("start");
    fixtures(&server).await;
    let started = Instant::now();
    for n in 0..tests {
        let ns = server.namespace().await.expect("namespace");
        test_body(&server, &ns, n).await;
    }
    let shared = started.elapsed();
    server.shutdown().await;
    let per = |d: Duration| d / tests as u32;
    println!(
        "  (a) each test from a snapshot:        {:>8.2} s  ({:.2?} per test)",
        from_snapshot.as_secs_f64(),
        per(from_snapshot)
    );
    println!(
        "  (b) each test its own server+fixtures: {:>8.2} s  ({:.2?} per test)  = {:.1}x (a)",
        recreated.as_secs_f64(),
        per(recreated),
        recreated.as_secs_f64() / from_snapshot.as_secs_f64()
    );
    println!(
        "  (c) one shared server, no isolation:  {:>8.2} s  ({:.2?} per test)  (a) = {:.2}x (c)",
        shared.as_secs_f64(),
        per(shared),
        from_snapshot.as_secs_f64() / shared.as_secs_f64()
    );
    println!("  one kube-apiserver shared by all: not measurable here (no kube-apiserver binary on this machine)");
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        sizes().await;
        suite().await;
    });
}
