//! Concurrency proof: optimistic concurrency holds under contention. Many writers run
//! read-modify-write loops (GET, increment a counter in spec, PUT with the
//! resourceVersion read, retry on 409 Conflict) on a few shared objects; no increment
//! may be lost, so each object's counter ends equal to its successful PUTs.
//! Runs on the embedded store, and on etcd under `TEST_BACKEND=etcd`.

mod common;

use common::{Http, TestServer};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(30);
const COUNTERS: &str = "/apis/load.example.com/v1/namespaces/default/counters";

/// Concurrent writers, shared objects and increments per writer.
const WRITERS: usize = 8;
const OBJECTS: usize = 3;
const INCREMENTS_PER_WRITER: usize = 50;

/// A writer gives up after this many conflicts in a row (a livelock, not contention).
const MAX_RETRIES: usize = 500;

fn counter_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "counters.load.example.com"},
        "spec": {
            "group": "load.example.com",
            "scope": "Namespaced",
            "names": {"plural": "counters", "singular": "counter", "kind": "Counter"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "count": {"type": "integer", "minimum": 0}
                    }}}
                }}
            }]
        }
    })
}

/// One writer: `increments` read-modify-write cycles spread over the objects; returns
/// the successful PUTs per object and the conflicts it retried.
fn writer(http: &Http, id: usize, increments: usize) -> Result<(Vec<u64>, u64), String> {
    let mut done = vec![0u64; OBJECTS];
    let mut conflicts = 0u64;
    for i in 0..increments {
        let target = (id + i) % OBJECTS;
        let path = format!("{COUNTERS}/c{target}");
        let mut attempts = 0;
        loop {
            attempts += 1;
            if attempts > MAX_RETRIES {
                return Err(format!(
                    "writer {id}: {MAX_RETRIES} conflicts in a row on {path}"
                ));
            }
            let r = http.get(&path);
            if r.status != 200 {
                return Err(format!(
                    "writer {id}: GET {path}: {} {}",
                    r.status,
                    r.text()
                ));
            }
            let mut obj = r.json().ok_or("GET answered no JSON")?;
            let count = obj["spec"]["count"].as_i64().ok_or("no spec.count")?;
            obj["spec"]["count"] = json!(count + 1);
            let r = http.send_json("PUT", &path, &obj);
            match r.status {
                200 => {
                    done[target] += 1;
                    break;
                }
                409 => conflicts += 1,
                s => return Err(format!("writer {id}: PUT {path}: {s} {}", r.text())),
            }
        }
    }
    Ok((done, conflicts))
}

#[test]
fn concurrent_read_modify_write_loses_no_update() {
    let server = TestServer::start();
    let http = server.http();
    let r = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &counter_crd(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(http.wait_for_status(COUNTERS, 200, TIMEOUT).status, 200);
    for i in 0..OBJECTS {
        let obj = json!({"apiVersion": "load.example.com/v1", "kind": "Counter",
                         "metadata": {"name": format!("c{i}")}, "spec": {"count": 0}});
        let r = http.send_json("POST", COUNTERS, &obj);
        assert_eq!(r.status, 201, "{}", r.text());
    }

    let conflicts = AtomicU64::new(0);
    let results: Vec<Result<Vec<u64>, String>> = thread::scope(|scope| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|id| {
                let http = server.http();
                let conflicts = &conflicts;
                scope.spawn(move || {
                    writer(&http, id, INCREMENTS_PER_WRITER).map(|(done, c)| {
                        conflicts.fetch_add(c, Ordering::Relaxed);
                        done
                    })
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".into())))
            .collect()
    });
    let mut successes = [0u64; OBJECTS];
    for r in results {
        match r {
            Ok(done) => {
                for (total, n) in successes.iter_mut().zip(done) {
                    *total += n;
                }
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(
        successes.iter().sum::<u64>(),
        (WRITERS * INCREMENTS_PER_WRITER) as u64
    );
    for (i, want) in successes.iter().enumerate() {
        let obj = http
            .get(&format!("{COUNTERS}/c{i}"))
            .json()
            .unwrap_or_default();
        assert_eq!(
            obj["spec"]["count"].as_u64(),
            Some(*want),
            "c{i}: the counter must equal its successful PUTs ({} conflicts retried)",
            conflicts.load(Ordering::Relaxed)
        );
        // Every successful PUT was one write: generation counts spec changes.
        assert_eq!(
            obj["metadata"]["generation"].as_u64(),
            Some(want + 1),
            "c{i}"
        );
    }
}
