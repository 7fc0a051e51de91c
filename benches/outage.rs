//! Outage windows on a real 3-member etcd cluster (issue 23): for each fault, the
//! longest time without a successful write through the server, next to etcd's own —
//! threads putting keys straight into the cluster through its members' JSON gateways
//! (each put to the members in turn, 300 ms a try), in the same run.
//!
//! Run: `cargo bench --bench outage` (`OUTAGE_FAULTS=leader,follower,quorum,freeze`,
//! default all; `OUTAGE_SECONDS`, how long a fault lasts, default 10). Needs `etcd`
//! (`/usr/bin/etcd`, Debian's `etcd-server`, or `ETCD_BIN`). The server is the release
//! binary cargo builds for benches, started with `--etcd-servers` naming all three
//! members, the first of which leads when each fault starts; 4 writers create custom
//! resources back to back (a failed write retries after 20 ms).
//!
//! Faults: `leader` — the leader, which the server talks to, is killed (`kill -9`) and
//! restarted after the fault's time; `follower` — a follower is killed, likewise;
//! `quorum` — two members are killed, then restarted; `freeze` — the leader is
//! stopped (SIGSTOP) for the fault's time, then continued.

#[path = "../integration/common/mod.rs"]
mod common;

use common::outage::{longest_gap, longest_pause, EtcdPutters, Writers};
use common::{Etcd, EtcdCluster, TestServer};
use serde_json::{json, Value};
use std::thread;
use std::time::Duration;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name}, "spec": {"color": "red"}})
}

/// One fault's result.
struct Window {
    fault: &'static str,
    server: Duration,
    etcd: Duration,
    writes: usize,
    statuses: std::collections::BTreeMap<u16, usize>,
}

fn run(fault: &'static str, seconds: Duration) -> Window {
    let mut cluster = EtcdCluster::start(3);
    cluster.make_leader(0);
    let server = TestServer::start_on_etcd(&cluster.urls(), &[]);
    let http = server.http();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    let crd = common::testdata_json("crds/widgets.yaml");
    assert_eq!(http.send_json("POST", CRDS, &crd).status, 201);
    http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
    let urls: Vec<String> = cluster.members.iter().map(Etcd::url).collect();
    let writers = Writers::start(&http, WIDGETS, 4, widget);
    let alone = EtcdPutters::start(&urls, 3, Duration::from_millis(300));
    thread::sleep(Duration::from_secs(2));
    match fault {
        "leader" => {
            cluster.members[0].stop();
            thread::sleep(seconds);
            cluster.members[0].restart();
        }
        "follower" => {
            cluster.members[1].stop();
            thread::sleep(seconds);
            cluster.members[1].restart();
        }
        "quorum" => {
            cluster.members[1].stop();
            cluster.members[2].stop();
            thread::sleep(seconds);
            cluster.members[1].restart();
            cluster.members[2].restart();
        }
        "freeze" => {
            cluster.members[0].signal("STOP");
            thread::sleep(seconds);
            cluster.members[0].signal("CONT");
        }
        other => panic!("unknown fault {other} (leader, follower, quorum, freeze)"),
    }
    // Long enough after the fault for both to be writing again.
    thread::sleep(Duration::from_secs(5));
    let outcomes = writers.finish();
    let alone = alone.finish();
    let mut statuses = std::collections::BTreeMap::new();
    for o in &outcomes {
        *statuses.entry(o.status).or_insert(0) += 1;
    }
    Window {
        fault,
        server: longest_gap(&outcomes),
        etcd: longest_pause(&alone),
        writes: outcomes.len(),
        statuses,
    }
}

fn main() {
    let seconds = std::env::var("OUTAGE_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map(Duration::from_secs)
        .unwrap_or(Duration::from_secs(10));
    let faults =
        std::env::var("OUTAGE_FAULTS").unwrap_or_else(|_| "leader,follower,quorum,freeze".into());
    let names: Vec<&'static str> = faults
        .split(',')
        .filter_map(|f| {
            ["leader", "follower", "quorum", "freeze"]
                .into_iter()
                .find(|n| *n == f.trim())
        })
        .collect();
    println!(
        "outage windows, 3-member etcd, faults of {} s; longest time without a successful write",
        seconds.as_secs()
    );
    println!(
        "{:<10} {:>12} {:>12} {:>12}  {:>7}  statuses",
        "fault", "server", "etcd alone", "difference", "writes"
    );
    for name in names {
        let w = run(name, seconds);
        let diff = w.server.as_secs_f64() - w.etcd.as_secs_f64();
        println!(
            "{:<10} {:>10.2} s {:>10.2} s {:>+10.2} s  {:>7}  {:?}   target: difference <= 1 s",
            w.fault,
            w.server.as_secs_f64(),
            w.etcd.as_secs_f64(),
            diff,
            w.writes,
            w.statuses
        );
    }
}
