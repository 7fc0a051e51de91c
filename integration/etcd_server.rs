//! The real `crd-apiserver` binary on a real etcd (`--etcd-servers`): restarts keep
//! every acknowledged write, two replicas share one etcd (and one cut off past a
//! compaction catches up), etcd stopped, hung and restarted under a running server, a
//! 3-member cluster losing a member, kube's key layout in etcd, compaction (410
//! Expired) and the TLS flags.
//!
//! Every test starts its own etcd (single member or cluster) on free loopback ports with
//! a temp data dir (`common::Etcd`, killed on drop); the etcd binary is `ETCD_BIN` or
//! `/usr/bin/etcd` (Debian's `etcd-server`, which `scripts/test.sh` installs). Keys are
//! read back through etcd's JSON gateway (`POST /v3/kv/range`), since `etcdctl` is not
//! guaranteed on the machine.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use common::outage::{
    counter, longest_gap, longest_pause, EtcdPutters, UpdateOutcome, Updaters, WriteOutcome,
    Writers,
};
use common::{describe_output, poll, Etcd, EtcdCluster, Http, HttpResponse, TestServer};
use serde_json::{json, Value};

/// The CRD collection.
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// Widgets in namespace `default` (`testdata/crds/widgets.yaml`).
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// How long a new or reloaded CRD may take to be served.
const SERVED_TIMEOUT: Duration = Duration::from_secs(20);

/// How quickly a request must fail once etcd is gone (connections are refused at once).
const OUTAGE_ANSWER: Duration = Duration::from_secs(2);

/// The server's deadline of one etcd call (`storage::etcd::DEFAULT_REQUEST_TIMEOUT`).
const ETCD_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a test waits for a watch event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------
// Restart

#[test]
fn restart_keeps_every_acknowledged_write() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let first = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = first.http();
    install_widgets(&http);

    // Creates, updates and deletes, each acknowledged before the next.
    let mut acknowledged: BTreeMap<String, Value> = BTreeMap::new();
    for i in 0..12 {
        let name = format!("w{i}");
        let created = expect_status(http.send_json("POST", WIDGETS, &widget(&name, "red")), 201);
        acknowledged.insert(name, created);
    }
    for i in (0..12).step_by(2) {
        let name = format!("w{i}");
        let mut object = acknowledged[&name].clone();
        object["spec"]["replicas"] = json!(i + 2);
        let updated = expect_status(
            http.send_json("PUT", &format!("{WIDGETS}/{name}"), &object),
            200,
        );
        assert_ne!(resource_version(&updated), resource_version(&object));
        acknowledged.insert(name, updated);
    }
    for name in ["w1", "w3"] {
        expect_status(delete(&http, &format!("{WIDGETS}/{name}")), 200);
        acknowledged.remove(name);
    }

    // Creates in flight while SIGTERM arrives: whatever was acknowledged must stay.
    let writer_http = http.clone();
    let writer = thread::spawn(move || {
        let mut acknowledged = Vec::new();
        for n in 0..10_000 {
            let name = format!("inflight-{n}");
            match writer_http.request(
                "POST",
                WIDGETS,
                &[],
                &json_content(),
                Some(widget(&name, "blue").to_string().into_bytes()),
            ) {
                Ok(r) if r.status == 201 => acknowledged.push(r.json().unwrap_or(Value::Null)),
                _ => break,
            }
        }
        acknowledged
    });
    thread::sleep(Duration::from_millis(300));
    let exit = first.terminate();
    assert!(
        exit.is_some_and(|s| s.success()),
        "the server did not exit cleanly on SIGTERM: {exit:?}\n{}",
        first.stderr_tail(20)
    );
    let in_flight = writer.join().expect("the writer thread");
    assert!(
        !in_flight.is_empty(),
        "no write was acknowledged before SIGTERM"
    );
    for object in &in_flight {
        acknowledged.insert(name_of(object).to_owned(), object.clone());
    }

    let second = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = second.http();
    let list = wait_served(&http, WIDGETS);
    let stored: BTreeMap<String, Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| (name_of(item).to_owned(), item.clone()))
        .collect();
    for (name, object) in &acknowledged {
        let Some(now) = stored.get(name) else {
            panic!("acknowledged write of {name} is lost after the restart");
        };
        assert_eq!(
            resource_version(now),
            resource_version(object),
            "{name}: resourceVersion changed across the restart"
        );
        assert_eq!(now["spec"], object["spec"], "{name}: spec changed");
        assert_eq!(
            now["metadata"]["uid"], object["metadata"]["uid"],
            "{name}: uid changed"
        );
    }
    // At most the one create cut off by the shutdown was stored unacknowledged.
    let extra: Vec<&String> = stored
        .keys()
        .filter(|name| !acknowledged.contains_key(*name))
        .collect();
    assert!(
        extra.len() <= 1 && extra.iter().all(|name| name.starts_with("inflight-")),
        "objects nobody acknowledged or that were deleted: {extra:?}"
    );
    for name in ["w1", "w3"] {
        expect_status(http.get(&format!("{WIDGETS}/{name}")), 404);
    }

    // kubectl sees the same objects through the new server.
    let output = second.kubectl(&["get", "widgets", "-o", "name"]);
    assert!(output.status.success(), "{}", describe_output(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), stored.len(), "{stdout}");
    assert!(stdout.contains("widget.example.com/w10"), "{stdout}");
}

// ---------------------------------------------------------------------------
// Two replicas on one etcd

#[test]
fn two_replicas_serve_the_same_crds_watches_and_conflicts() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let a = TestServer::start_on_etcd(&etcd.url(), &[]);
    let b = TestServer::start_on_etcd(&etcd.url(), &[]);
    let (http_a, http_b) = (a.http(), b.http());

    // A CRD created through A is served by B (B follows CRDs in etcd by watch).
    expect_status(http_b.get(WIDGETS), 404);
    install_widgets(&http_a);
    wait_served(&http_b, WIDGETS);
    let discovery = expect_status(http_b.get("/apis/example.com/v1"), 200);
    assert!(
        discovery["resources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["name"] == "widgets")),
        "B's discovery lacks widgets: {discovery}"
    );
    let crd_on_b = expect_status(http_b.get(&format!("{CRDS}/widgets.example.com")), 200);
    let crd_on_a = expect_status(http_a.get(&format!("{CRDS}/widgets.example.com")), 200);
    assert_eq!(resource_version(&crd_on_a), resource_version(&crd_on_b));

    // A watch on B sees a create through A.
    let mut watch = Watch::open(&http_b, &format!("{WIDGETS}?watch=true&timeoutSeconds=60"));
    let created = expect_status(
        http_a.send_json("POST", WIDGETS, &widget("shared", "red")),
        201,
    );
    let event = watch.next_event();
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(event["object"]["metadata"]["name"], "shared");
    assert_eq!(
        resource_version(&event["object"]),
        resource_version(&created)
    );

    // kubectl against B lists it too.
    let output = b.kubectl(&["get", "widget", "shared", "-o", "jsonpath={.spec.color}"]);
    assert!(output.status.success(), "{}", describe_output(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "red");

    // Optimistic concurrency across replicas: B read it, A updated it, B's stale
    // update is refused.
    let read_by_b = expect_status(http_b.get(&format!("{WIDGETS}/shared")), 200);
    let mut by_a = read_by_b.clone();
    by_a["spec"]["color"] = json!("green");
    let updated = expect_status(
        http_a.send_json("PUT", &format!("{WIDGETS}/shared"), &by_a),
        200,
    );
    let event = watch.next_event();
    assert_eq!(event["type"], "MODIFIED", "{event}");
    assert_eq!(
        resource_version(&event["object"]),
        resource_version(&updated)
    );
    let mut by_b = read_by_b;
    by_b["spec"]["color"] = json!("blue");
    let refused = http_b.send_json("PUT", &format!("{WIDGETS}/shared"), &by_b);
    assert_eq!(refused.status, 409, "{}", refused.text());
    assert_eq!(
        refused.json().unwrap_or_default(),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Operation cannot be fulfilled on widgets.example.com \"shared\": the object has been modified; please apply your changes to the latest version and try again",
            "reason": "Conflict",
            "details": {"name": "shared", "group": "example.com", "kind": "widgets"},
            "code": 409
        })
    );
    let now = expect_status(http_b.get(&format!("{WIDGETS}/shared")), 200);
    assert_eq!(now["spec"]["color"], "green");

    // Deleting the CRD through A stops B serving it.
    expect_status(delete(&http_a, &format!("{CRDS}/widgets.example.com")), 200);
    let gone = http_b.wait_for_status(WIDGETS, 404, SERVED_TIMEOUT);
    assert_eq!(gone.status, 404, "B still serves widgets: {}", gone.text());
}

#[test]
fn replica_cut_off_past_compaction_drops_a_crd_deleted_meanwhile() {
    // etcd drops a connection that does not answer its keepalive pings within ~2 s.
    let etcd = Etcd::start_with(&[
        "--grpc-keepalive-interval",
        "1s",
        "--grpc-keepalive-timeout",
        "1s",
    ]);
    etcd.wait_ready();
    let a = TestServer::start_on_etcd(&etcd.url(), &["--etcd-compaction-interval", "0"]);
    let b = TestServer::start_on_etcd(&etcd.url(), &["--etcd-compaction-interval", "0"]);
    let (http_a, http_b) = (a.http(), b.http());
    install_widgets(&http_a);
    wait_served(&http_b, WIDGETS);

    // B freezes; etcd closes its CRD watch; meanwhile the CRD is deleted through A
    // and the history of the deletion compacted away.
    b.signal("STOP");
    thread::sleep(Duration::from_secs(3));
    expect_status(delete(&http_a, &format!("{CRDS}/widgets.example.com")), 200);
    let gone = http_a.wait_for_status(&format!("{CRDS}/widgets.example.com"), 404, SERVED_TIMEOUT);
    assert_eq!(gone.status, 404, "{}", gone.text());
    etcd.compact(etcd.revision());
    b.signal("CONT");

    // B's watch cannot resume from before the compaction: it reloads the CRDs, and the
    // deleted one must go.
    let gone = http_b.wait_for_status(WIDGETS, 404, SERVED_TIMEOUT);
    assert_eq!(
        gone.status,
        404,
        "B still serves a CRD deleted while it was cut off: {}\n--- B's stderr ---\n{}",
        gone.text(),
        b.stderr_tail(30)
    );
}

// ---------------------------------------------------------------------------
// etcd outages under a running server

#[test]
fn etcd_stopped_and_started_under_a_running_server() {
    let mut etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    install_widgets(&http);
    let kept = expect_status(http.send_json("POST", WIDGETS, &widget("kept", "red")), 201);
    let watch = Watch::open(
        &http,
        &format!(
            "{WIDGETS}?watch=true&timeoutSeconds=60&resourceVersion={}",
            resource_version(&kept)
        ),
    );

    etcd.stop();
    for (what, response) in [
        ("get", timed(|| http.get(&format!("{WIDGETS}/kept")))),
        ("list", timed(|| http.get(WIDGETS))),
        (
            "create",
            timed(|| http.send_json("POST", WIDGETS, &widget("lost", "red"))),
        ),
    ] {
        let (response, took) = response;
        assert!(
            matches!(response.status, 503 | 504),
            "{what} with etcd down: {} {}",
            response.status,
            response.text()
        );
        assert_eq!(
            response.json().map(|s| s["kind"].clone()),
            Some(json!("Status")),
            "{what}: {}",
            response.text()
        );
        assert!(took <= OUTAGE_ANSWER, "{what} took {took:?} with etcd down");
    }
    let (readyz, took) = timed(|| http.get("/readyz?verbose"));
    assert_eq!(readyz.status, 500, "{}", readyz.text());
    assert!(
        readyz.text().contains("[-]etcd failed"),
        "{}",
        readyz.text()
    );
    assert!(
        took <= OUTAGE_ANSWER,
        "/readyz took {took:?} with etcd down"
    );
    assert_eq!(
        http.get("/livez").status,
        200,
        "liveness does not need etcd"
    );

    // The open watch stays open and silent (kube's watch cache: issue 24).
    match watch.lines.recv_timeout(Duration::from_millis(500)) {
        Err(mpsc::RecvTimeoutError::Timeout) => {}
        other => panic!("the watch sent {other:?} with etcd down"),
    }

    // etcd comes back: the same server serves again without a restart.
    etcd.restart();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    let again = expect_status(http.get(&format!("{WIDGETS}/kept")), 200);
    assert_eq!(resource_version(&again), resource_version(&kept));
    expect_status(http.get(&format!("{WIDGETS}/lost")), 404);

    // A client re-establishes its watch from the last version it saw.
    let mut open_through = watch;
    let mut watch = Watch::open(
        &http,
        &format!(
            "{WIDGETS}?watch=true&timeoutSeconds=60&resourceVersion={}",
            resource_version(&kept)
        ),
    );
    let created = expect_status(
        http.send_json("POST", WIDGETS, &widget("after", "blue")),
        201,
    );
    let event = watch.next_event();
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(
        resource_version(&event["object"]),
        resource_version(&created)
    );
    // The watch open through the outage resumed by itself: its next event is the same.
    let event = open_through.next_event();
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(
        resource_version(&event["object"]),
        resource_version(&created)
    );
    let output = server.kubectl(&["get", "widgets", "-o", "name"]);
    assert!(output.status.success(), "{}", describe_output(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "widget.example.com/after\nwidget.example.com/kept\n"
    );
}

#[test]
fn hung_etcd_answers_504_then_recovers() {
    let (etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    expect_status(http.send_json("POST", WIDGETS, &widget("kept", "red")), 201);

    // Frozen, etcd keeps its connections open and answers nothing: the server's
    // per-call deadline turns that into 504s instead of hanging requests.
    etcd.signal("STOP");
    let (response, took) = timed(|| http.get(&format!("{WIDGETS}/kept")));
    assert_eq!(response.status, 504, "{}", response.text());
    assert_eq!(
        response.json().map(|s| s["reason"].clone()),
        Some(json!("Timeout")),
        "{}",
        response.text()
    );
    assert!(
        took <= ETCD_REQUEST_TIMEOUT + Duration::from_secs(2),
        "get took {took:?} from a hung etcd"
    );

    etcd.signal("CONT");
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    expect_status(http.get(&format!("{WIDGETS}/kept")), 200);
    expect_status(http.send_json("POST", WIDGETS, &widget("new", "red")), 201);
}

#[test]
fn unreachable_etcd_answers_503_with_retry_after_and_applies_nothing() {
    let mut etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    install_widgets(&http);

    // Nothing listens: no request reaches etcd, so each says "not processed, retry".
    etcd.stop();
    for (what, response) in [
        ("get", http.get(&format!("{WIDGETS}/w1"))),
        ("list", http.get(WIDGETS)),
        (
            "create",
            http.send_json("POST", WIDGETS, &widget("w1", "red")),
        ),
    ] {
        let body = expect_status(response.clone(), 503);
        assert_eq!(body["reason"], "ServiceUnavailable", "{what}: {body}");
        assert_eq!(body["details"]["retryAfterSeconds"], 1, "{what}: {body}");
        assert_eq!(
            response.header("Retry-After").as_deref(),
            Some("1"),
            "{what}"
        );
        let (readyz, took) = timed(|| http.get("/readyz"));
        assert_eq!(readyz.status, 500, "{}", readyz.text());
        assert!(took < Duration::from_secs(1), "/readyz took {took:?}");
    }

    etcd.restart();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    expect_status(http.get(&format!("{WIDGETS}/w1")), 404);
}

#[test]
fn write_whose_outcome_is_unknown_is_never_a_503() {
    let mut etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());

    // A namespace's create writes without reading first, so its write is the call that
    // is in flight. Sent to a hung etcd: no answer within the deadline, 504 Timeout
    // naming the member asked, and no invitation to retry.
    let namespace =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    etcd.signal("STOP");
    let (response, took) =
        timed(|| http.send_json("POST", "/api/v1/namespaces", &namespace("hung")));
    let body = expect_status(response.clone(), 504);
    assert_eq!(body["reason"], "Timeout", "{body}");
    assert!(
        body["message"].as_str().unwrap_or("").contains(&etcd.url()),
        "{body}"
    );
    assert_eq!(response.header("Retry-After"), None);
    assert!(
        took <= ETCD_REQUEST_TIMEOUT + Duration::from_secs(2),
        "took {took:?}"
    );
    let (readyz, took) = timed(|| http.get("/readyz?verbose"));
    assert_eq!(readyz.status, 500, "{}", readyz.text());
    assert!(
        readyz.text().contains("[-]etcd failed"),
        "{}",
        readyz.text()
    );
    assert!(
        took < Duration::from_secs(1),
        "/readyz took {took:?} on a hung etcd"
    );

    // Sent, then the connection breaks with it in flight (etcd dies): etcd may have
    // applied it, so 500 InternalError, not 503.
    let (tx, rx) = mpsc::channel();
    let writer = http.clone();
    thread::spawn(move || {
        let _ = tx.send(writer.send_json("POST", "/api/v1/namespaces", &namespace("broken")));
    });
    thread::sleep(Duration::from_secs(1));
    etcd.stop();
    let response = rx.recv_timeout(EVENT_TIMEOUT).expect("the create answers");
    let body = expect_status(response.clone(), 500);
    assert_eq!(body["reason"], "InternalError", "{body}");
    assert_eq!(response.header("Retry-After"), None);

    etcd.restart();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    expect_status(
        http.send_json("POST", "/api/v1/namespaces", &namespace("after")),
        201,
    );
}

#[test]
fn server_started_while_etcd_is_down_serves_once_it_is_up() {
    let mut etcd = Etcd::stopped();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    assert_eq!(http.get("/readyz").status, 500);
    let (response, took) = timed(|| http.get("/api/v1/namespaces/default"));
    assert!(
        matches!(response.status, 503 | 504),
        "{} {}",
        response.status,
        response.text()
    );
    assert!(took <= OUTAGE_ANSWER, "took {took:?}");

    etcd.restart();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    // Start-up completed late: system namespaces exist, CRDs can be created.
    expect_status(http.get("/api/v1/namespaces/default"), 200);
    install_widgets(&http);
    expect_status(http.send_json("POST", WIDGETS, &widget("w1", "red")), 201);
}

// ---------------------------------------------------------------------------
// A 3-member etcd cluster

#[test]
fn three_member_cluster_keeps_serving_with_one_member_killed() {
    let mut cluster = EtcdCluster::start(3);
    // The server talks to the first member in --etcd-servers; as a follower, killing
    // it tests the server's move to another member alone, without an election.
    cluster.make_leader(1);
    let server = TestServer::start_on_etcd(&cluster.urls(), &[]);
    let http = server.http();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    install_widgets(&http);
    create_update_get(&http, "before", 3);

    cluster.members[0].stop();
    // Not one request fails, not even a first one that writes without reading first.
    create_namespace(&http, "first-write");
    create_update_get(&http, "follower-down", 5);
    assert_eq!(http.get("/readyz").status, 200);

    // The member comes back; then the leader dies: after the election (about a second
    // with etcd's default timeouts) everything succeeds again.
    cluster.members[0].restart();
    cluster.members[0].wait_ready();
    let leader = cluster.leader().expect("a leader");
    cluster.members[leader].stop();
    let resumed = poll(Duration::from_secs(15), || {
        let r = http.send_json("POST", WIDGETS, &widget("after-election", "red"));
        (r.status == 201).then_some(())
    });
    assert!(
        resumed.is_some(),
        "no write succeeded within 15 s of the leader dying"
    );
    create_update_get(&http, "leader-down", 5);
    let list = expect_status(http.get(WIDGETS), 200);
    assert_eq!(list["items"].as_array().map(Vec::len), Some(14));
    assert_eq!(http.get("/readyz").status, 200);
}

/// The longest a write may fail after a member in use is frozen or killed: etcd's
/// election (about a second with its default timeouts) plus one request timeout, with
/// room for a loaded machine. Speed belongs in benchmarks; this catches staying on the
/// hung member until HTTP/2 keepalive drops it (10–16 s before issue 23).
const FAILOVER_BOUND: Duration = Duration::from_secs(8);

/// How much longer than etcd alone (its own clients' longest wait, same run) the server
/// may go without a successful write under a fault: the issue's second, and room for a
/// loaded 2-core machine. Waiting out a whole 5 s request timeout on a member that lost
/// its leader exceeds it (3.7 s beyond etcd in the outage benchmark before the 2 s
/// attempts).
const BEYOND_ETCD: Duration = Duration::from_millis(2500);

/// What runs through a fault: 3 writers creating widgets, 2 updaters each updating
/// its own, and 3 clients of etcd alone (each try 300 ms) as the measure of etcd's own
/// outage.
struct FaultLoad {
    writers: Writers,
    updaters: Updaters,
    alone: EtcdPutters,
    /// Client watches open through the fault, with bookmarks.
    watches: Vec<Watch>,
}

impl FaultLoad {
    fn start(http: &Http, cluster: &EtcdCluster) -> FaultLoad {
        let urls: Vec<String> = cluster.members.iter().map(Etcd::url).collect();
        let list = expect_status(http.get(WIDGETS), 200);
        let from = list["metadata"]["resourceVersion"]
            .as_str()
            .expect("list resourceVersion")
            .to_owned();
        let watches = (0..3)
            .map(|_| {
                Watch::open(
                    http,
                    &format!(
                        "{WIDGETS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=300&resourceVersion={from}"
                    ),
                )
            })
            .collect();
        FaultLoad {
            watches,
            writers: Writers::start(http, WIDGETS, 3, red_widget),
            updaters: Updaters::start(http, WIDGETS, 2, red_widget),
            alone: EtcdPutters::start(&urls, 3, Duration::from_millis(300)),
        }
    }

    /// Stops everything: the writes, the updates and etcd alone's successes; hands
    /// back the watches for [`check_watches`].
    fn finish(
        self,
    ) -> (
        Vec<WriteOutcome>,
        Vec<UpdateOutcome>,
        Vec<Instant>,
        Vec<Watch>,
    ) {
        (
            self.writers.finish(),
            self.updaters.finish(),
            self.alone.finish(),
            self.watches,
        )
    }
}

/// Client watches stay open through an etcd fault that etcd itself survives (issue
/// 24): no ERROR event, every acknowledged create arrives as ADDED, and no BOOKMARK
/// runs ahead of an event.
fn check_watches(watches: Vec<Watch>, outcomes: &[WriteOutcome]) {
    let created: std::collections::BTreeSet<&str> = outcomes
        .iter()
        .filter(|o| o.status == 201)
        .map(|o| o.name.as_str())
        .collect();
    for (i, watch) in watches.into_iter().enumerate() {
        let mut missing = created.clone();
        let mut bookmark = 0u64;
        let deadline = Instant::now() + Duration::from_secs(20);
        while !missing.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = match watch.lines.recv_timeout(left) {
                Ok(Some(line)) => serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|e| panic!("watch {i}: bad event {line:?}: {e}")),
                Ok(None) => panic!("watch {i} ended with {} creates unseen", missing.len()),
                Err(_) => panic!(
                    "watch {i}: {} acknowledged creates never arrived, e.g. {:?}",
                    missing.len(),
                    missing.iter().take(5).collect::<Vec<_>>()
                ),
            };
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            assert_ne!(
                kind, "ERROR",
                "watch {i} got an error through the fault: {event}"
            );
            let rv: u64 = event["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|rv| rv.parse().ok())
                .unwrap_or_else(|| panic!("watch {i}: event without a resourceVersion: {event}"));
            if kind == "BOOKMARK" {
                bookmark = bookmark.max(rv);
                continue;
            }
            assert!(
                rv > bookmark,
                "watch {i}: {kind} at {rv} after a bookmark at {bookmark}"
            );
            if kind == "ADDED" {
                missing.remove(name_of(&event["object"]));
            }
        }
    }
}

/// Every acknowledged create is stored; every 503 was not applied (a 503 tells a
/// client its request was not processed); only 500/503/504 failures, and a
/// `Retry-After` on 503s alone.
fn check_outcomes(http: &Http, outcomes: &[WriteOutcome]) {
    let list = expect_status(http.get(WIDGETS), 200);
    let stored: std::collections::BTreeSet<String> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| name_of(item).to_owned())
        .collect();
    for outcome in outcomes {
        match outcome.status {
            201 => assert!(
                stored.contains(&outcome.name),
                "acknowledged {} was lost",
                outcome.name
            ),
            503 => {
                assert!(
                    !stored.contains(&outcome.name),
                    "{} answered 503 but was applied",
                    outcome.name
                );
                assert!(outcome.retry_after.is_some(), "503 without Retry-After");
            }
            500 | 504 => assert_eq!(
                outcome.retry_after, None,
                "an outcome-unknown {} must not invite a retry",
                outcome.status
            ),
            other => panic!("create {} answered {other}", outcome.name),
        }
    }
}

/// No acknowledged update was lost: each object holds its updater's last acknowledged
/// counter, or one more (a last PUT applied despite its error); only 200, 500, 503 and
/// 504 answered (one writer per object never conflicts: a write sent again that finds
/// its own bytes stored is a success).
fn check_updates(http: &Http, outcomes: &[UpdateOutcome]) {
    for outcome in outcomes {
        let stored = counter(&expect_status(http.get(&outcome.path), 200));
        assert!(
            stored == outcome.acknowledged || stored == outcome.acknowledged + 1,
            "{}: acknowledged {} but {stored} is stored",
            outcome.path,
            outcome.acknowledged
        );
        assert!(
            outcome.acknowledged > 0,
            "{}: no update acknowledged",
            outcome.path
        );
        for status in &outcome.statuses {
            assert!(
                [200, 500, 503, 504].contains(status),
                "{}: PUT answered {status}",
                outcome.path
            );
        }
    }
}

/// A server on a 3-member cluster whose first member (the one the server uses) leads,
/// with widgets installed.
fn cluster_with_server() -> (EtcdCluster, TestServer) {
    let cluster = EtcdCluster::start(3);
    cluster.make_leader(0);
    let server = TestServer::start_on_etcd(&cluster.urls(), &[]);
    let http = server.http();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    install_widgets(&http);
    (cluster, server)
}

#[test]
fn frozen_member_in_use_is_left_within_an_election_and_a_timeout() {
    let (cluster, server) = cluster_with_server();
    let http = server.http();
    let load = FaultLoad::start(&http, &cluster);
    thread::sleep(Duration::from_secs(1));

    // The leader, which the server talks to, hangs (SIGSTOP; a stuck disk or a
    // partition looks the same). Health answers at once throughout.
    cluster.members[0].signal("STOP");
    let frozen = Instant::now();
    let mut slowest_health = Duration::ZERO;
    while frozen.elapsed() < Duration::from_secs(9) {
        for path in ["/readyz", "/healthz", "/livez"] {
            let (_, took) = timed(|| http.get(path));
            slowest_health = slowest_health.max(took);
        }
        thread::sleep(Duration::from_millis(200));
    }
    let (outcomes, updates, alone, watches) = load.finish();
    let etcd_gap = longest_pause(&alone);
    cluster.members[0].signal("CONT");

    let gap = longest_gap(&outcomes);
    eprintln!(
        "member in use frozen: longest time without a successful write {gap:?} (etcd alone {etcd_gap:?}); slowest health check {slowest_health:?}; {} writes",
        outcomes.len()
    );
    assert!(
        gap < FAILOVER_BOUND && gap < etcd_gap + BEYOND_ETCD,
        "no write succeeded for {gap:?} after the member in use froze (etcd alone: {etcd_gap:?})"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| o.status == 201 && o.done > frozen + gap),
        "writes did not resume"
    );
    // Generous for a loaded 2-core machine; the target is 100 ms.
    assert!(
        slowest_health < Duration::from_secs(1),
        "a health check took {slowest_health:?} under a frozen member"
    );
    check_outcomes(&http, &outcomes);
    check_updates(&http, &updates);
    check_watches(watches, &outcomes);
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(10));
    assert_eq!(ready.status, 200, "{}", ready.text());
}

#[test]
fn killed_leader_in_use_is_left_within_an_election() {
    let (mut cluster, server) = cluster_with_server();
    let http = server.http();
    let load = FaultLoad::start(&http, &cluster);
    thread::sleep(Duration::from_secs(1));
    cluster.members[0].stop();
    let killed = Instant::now();
    thread::sleep(Duration::from_secs(6));
    let (outcomes, updates, alone, watches) = load.finish();
    let etcd_gap = longest_pause(&alone);

    let gap = longest_gap(&outcomes);
    eprintln!(
        "leader in use killed: longest time without a successful write {gap:?} (etcd alone {etcd_gap:?}); {} writes",
        outcomes.len()
    );
    assert!(
        gap < FAILOVER_BOUND && gap < etcd_gap + BEYOND_ETCD,
        "no write succeeded for {gap:?} after the leader was killed (etcd alone: {etcd_gap:?})"
    );
    assert!(
        outcomes
            .iter()
            .any(|o| o.status == 201 && o.done > killed + gap),
        "writes did not resume"
    );
    check_outcomes(&http, &outcomes);
    check_updates(&http, &updates);
    check_watches(watches, &outcomes);
}

/// Quorum lost (two of three members killed) for five seconds, then regained: writes
/// fail at once meanwhile (kube's hang until its timeout, 10 s), each with an honest
/// status, and the server writes again within a second of etcd itself (measured from
/// the restart by a client of etcd alone, in the same run).
#[test]
fn quorum_lost_and_regained_fails_fast_and_serves_again_with_etcd() {
    let (mut cluster, server) = cluster_with_server();
    let http = server.http();
    let load = FaultLoad::start(&http, &cluster);
    thread::sleep(Duration::from_secs(1));
    cluster.members[1].stop();
    cluster.members[2].stop();
    let lost = Instant::now();
    // Until the leader notices (an election timeout) writes hang as in etcd itself, up
    // to the request timeout; then a member without a leader refuses them at once.
    thread::sleep(Duration::from_secs(3));
    let (failed, took) = timed(|| http.send_json("POST", WIDGETS, &widget("no-quorum", "red")));
    assert!(
        [500, 503, 504].contains(&failed.status),
        "{} {}",
        failed.status,
        failed.text()
    );
    eprintln!(
        "a write without quorum answered {} in {took:?}: {}",
        failed.status,
        failed.text()
    );
    thread::sleep(Duration::from_secs(3));
    cluster.members[1].restart();
    cluster.members[2].restart();
    let back = Instant::now();
    thread::sleep(Duration::from_secs(6));
    let (outcomes, updates, alone, watches) = load.finish();

    let etcd_again = alone
        .iter()
        .find(|t| **t > back)
        .copied()
        .expect("etcd took writes again");
    let server_again = outcomes
        .iter()
        .find(|o| o.status == 201 && o.done > back)
        .map(|o| o.done)
        .expect("the server wrote again");
    let (etcd_after, server_after) = (
        etcd_again - back,
        server_again.saturating_duration_since(back),
    );
    eprintln!(
        "quorum regained: etcd alone wrote again {etcd_after:?} after the restart, the server {server_after:?}; quorum lost for {:?}",
        back - lost
    );
    assert!(
        outcomes.iter().all(|o| o.status == 201 || o.done > lost),
        "a write failed before quorum was lost"
    );
    // A second of the issue's bound, and room for a loaded 2-core machine.
    assert!(
        server_again.saturating_duration_since(etcd_again) < Duration::from_secs(3),
        "the server wrote again {:?} after etcd did",
        server_again.saturating_duration_since(etcd_again)
    );
    assert!(
        took < Duration::from_secs(1),
        "a write without quorum took {took:?}"
    );
    check_outcomes(&http, &outcomes);
    check_updates(&http, &updates);
    check_watches(watches, &outcomes);
}

/// Creates `count` widgets `{prefix}-{i}`, updates each and reads it back; every
/// request must succeed.
fn create_update_get(http: &Http, prefix: &str, count: usize) {
    for i in 0..count {
        let name = format!("{prefix}-{i}");
        let created = expect_status(http.send_json("POST", WIDGETS, &widget(&name, "red")), 201);
        let mut object = created;
        object["spec"]["replicas"] = json!(i);
        expect_status(
            http.send_json("PUT", &format!("{WIDGETS}/{name}"), &object),
            200,
        );
        let read = expect_status(http.get(&format!("{WIDGETS}/{name}")), 200);
        assert_eq!(read["spec"]["replicas"], json!(i));
    }
}

// ---------------------------------------------------------------------------
// What is in etcd

#[test]
fn keys_in_etcd_follow_kube_layout_without_resource_version() {
    let (etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    create_namespace(&http, "layout");
    let namespaced = "/apis/example.com/v1/namespaces/layout/widgets";
    expect_status(
        http.send_json("POST", namespaced, &widget("w1", "red")),
        201,
    );
    let dials = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "dials.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    });
    expect_status(http.send_json("POST", CRDS, &dials), 201);
    wait_served(&http, "/apis/example.com/v1/dials");
    expect_status(
        http.send_json(
            "POST",
            "/apis/example.com/v1/dials",
            &json!({"apiVersion": "example.com/v1", "kind": "Dial", "metadata": {"name": "d1"}}),
        ),
        201,
    );

    let stored: BTreeMap<String, Vec<u8>> = etcd.keys("/registry/").into_iter().collect();
    for (key, kind, name) in [
        (
            "/registry/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com",
            "CustomResourceDefinition",
            "widgets.example.com",
        ),
        (
            "/registry/apiextensions.k8s.io/customresourcedefinitions/dials.example.com",
            "CustomResourceDefinition",
            "dials.example.com",
        ),
        ("/registry/namespaces/layout", "Namespace", "layout"),
        ("/registry/namespaces/default", "Namespace", "default"),
        ("/registry/example.com/widgets/layout/w1", "Widget", "w1"),
        ("/registry/example.com/dials/d1", "Dial", "d1"),
    ] {
        let Some(value) = stored.get(key) else {
            panic!(
                "{key} is not in etcd; keys: {:#?}",
                stored.keys().collect::<Vec<_>>()
            );
        };
        let object: Value = serde_json::from_slice(value)
            .unwrap_or_else(|e| panic!("{key} does not hold JSON: {e}"));
        assert_eq!(object["kind"], kind, "{key}: {object}");
        assert_eq!(object["metadata"]["name"], name, "{key}: {object}");
        assert!(
            object["metadata"].get("resourceVersion").is_none(),
            "{key} stores a resourceVersion: {object}"
        );
        assert!(object["metadata"]["uid"].is_string(), "{key}: {object}");
    }
    // Nothing is stored outside the prefix.
    let outside: Vec<String> = etcd
        .keys("/")
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| !key.starts_with("/registry/"))
        .collect();
    assert!(outside.is_empty(), "keys outside /registry: {outside:?}");
}

#[test]
fn etcd_prefix_flag_moves_every_key() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &["--etcd-prefix", "/tenant-a"]);
    install_widgets(&server.http());
    let keys: Vec<String> = etcd.keys("/").into_iter().map(|(key, _)| key).collect();
    assert!(
        keys.contains(
            &"/tenant-a/apiextensions.k8s.io/customresourcedefinitions/widgets.example.com"
                .to_owned()
        ),
        "{keys:?}"
    );
    assert!(
        keys.iter().all(|key| key.starts_with("/tenant-a/")),
        "{keys:?}"
    );
    // A server on another prefix of the same etcd sees none of it.
    let other = TestServer::start_on_etcd(&etcd.url(), &["--etcd-prefix", "/tenant-b"]);
    expect_status(
        other.http().get(&format!("{CRDS}/widgets.example.com")),
        404,
    );
}

// ---------------------------------------------------------------------------
// Compaction

/// A server on a fresh etcd (started with `args`) holding widget `w1`, created and then
/// updated twice: a watch from its creation needs the first update, so only a
/// compaction past that update makes the watch too old. Returns the creation's
/// resourceVersion and the latest object.
fn widget_with_history(args: &[&str]) -> (Etcd, TestServer, String, Value) {
    let (etcd, server) = widgets_on_etcd(args);
    let http = server.http();
    let created = expect_status(http.send_json("POST", WIDGETS, &widget("w1", "red")), 201);
    let old = resource_version(&created);
    let mut object = created;
    for color in ["green", "blue"] {
        object["spec"]["color"] = json!(color);
        object = expect_status(
            http.send_json("PUT", &format!("{WIDGETS}/w1"), &object),
            200,
        );
    }
    (etcd, server, old, object)
}

#[test]
fn watch_from_a_compacted_revision_gets_410_expired() {
    // The server's own compactor stays off: the test compacts through the gateway.
    let (etcd, server, old, object) = widget_with_history(&["--etcd-compaction-interval", "0"]);
    let http = server.http();
    let compacted = etcd.revision();
    etcd.compact(compacted);

    let mut watch = Watch::open(
        &http,
        &format!("{WIDGETS}?watch=true&timeoutSeconds=60&resourceVersion={old}"),
    );
    let event = watch.next_event();
    assert_eq!(
        event,
        json!({"type": "ERROR", "object": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!("too old resource version: {old} ({compacted})"),
            "reason": "Expired",
            "code": 410
        }})
    );
    assert!(watch.rest().is_empty(), "the watch ends after the error");

    // A list at the compacted revision is refused the same way.
    let list = http.get(&format!(
        "{WIDGETS}?resourceVersion={old}&resourceVersionMatch=Exact"
    ));
    assert_eq!(list.status, 410, "{}", list.text());
    assert_eq!(
        list.json().map(|s| s["reason"].clone()),
        Some(json!("Expired"))
    );
    // The current revision stays readable: the one compacted to, which may be past the
    // widget's own (the server writes other keys meanwhile).
    assert!(compacted >= resource_version(&object).parse::<i64>().unwrap_or(i64::MAX));
    let list = http.get(&format!(
        "{WIDGETS}?resourceVersion={compacted}&resourceVersionMatch=Exact"
    ));
    assert_eq!(list.status, 200, "{}", list.text());
}

#[test]
fn compaction_interval_flag_compacts_history() {
    let (_etcd, server, old, _) = widget_with_history(&["--etcd-compaction-interval", "1s"]);
    let http = server.http();
    // Each tick compacts to the revision of the tick before: within a few seconds a
    // list at a revision before the updates is too old. (A watch from it may still be
    // served from the watch cache's window, as kube's is.)
    let expired = poll(Duration::from_secs(10), || {
        let list = http.get(&format!(
            "{WIDGETS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ));
        (list.status == 410).then(|| list.json().expect("a Status"))
    });
    let Some(status) = expired else {
        panic!("history before {old} was not compacted within 10 s");
    };
    assert_eq!(status["code"], 410, "{status}");
    assert_eq!(status["reason"], "Expired", "{status}");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!("too old resource version: {old} (")),
        "{message}"
    );
}

// ---------------------------------------------------------------------------
// TLS

#[test]
fn tls_flags_reach_etcd_with_a_client_certificate() {
    let etcd = Etcd::start_tls();
    let files = etcd.tls().expect("TLS files");
    let path = |p: &std::path::Path| p.display().to_string();
    let (ca, cert, key) = (
        path(&files.ca),
        path(&files.client_cert),
        path(&files.client_key),
    );
    let server = TestServer::start_on_etcd(
        &etcd.url(),
        &[
            "--etcd-cafile",
            &ca,
            "--etcd-certfile",
            &cert,
            "--etcd-keyfile",
            &key,
        ],
    );
    let http = server.http();
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    install_widgets(&http);
    expect_status(http.send_json("POST", WIDGETS, &widget("w1", "red")), 201);

    // Without a client certificate etcd refuses the connection: 503, not a hang.
    let anonymous = TestServer::start_on_etcd(&etcd.url(), &["--etcd-cafile", &ca]);
    let (response, took) = timed(|| anonymous.http().get("/api/v1/namespaces/default"));
    assert_eq!(anonymous.http().get("/readyz").status, 500);
    assert_eq!(response.status, 503, "{}", response.text());
    assert!(took <= ETCD_REQUEST_TIMEOUT + Duration::from_secs(2));
}

// ---------------------------------------------------------------------------
// Fixture

/// A widget named `name` in `default`.
fn widget(name: &str, color: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"color": color}
    })
}

fn red_widget(name: &str) -> Value {
    widget(name, "red")
}

/// Creates `testdata/crds/widgets.yaml` and waits until widgets are served.
/// A server on a fresh etcd (started with `args`), serving widgets.
fn widgets_on_etcd(args: &[&str]) -> (Etcd, TestServer) {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), args);
    install_widgets(&server.http());
    (etcd, server)
}

fn install_widgets(http: &Http) {
    let crd = common::testdata_json("crds/widgets.yaml");
    expect_status(http.send_json("POST", CRDS, &crd), 201);
    wait_served(http, WIDGETS);
}

/// Polls a list path until it answers 200; returns the list.
fn wait_served(http: &Http, path: &str) -> Value {
    let response = http.wait_for_status(path, 200, SERVED_TIMEOUT);
    expect_status(response, 200)
}

/// Creates the namespace `name` (201).
fn create_namespace(http: &Http, name: &str) {
    let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    expect_status(http.send_json("POST", "/api/v1/namespaces", &body), 201);
}

/// The body of `response` as JSON, failing unless it has status `want`.
fn expect_status(response: HttpResponse, want: u16) -> Value {
    assert_eq!(
        response.status,
        want,
        "want {want}, got {}: {}",
        response.status,
        response.text()
    );
    response.json().unwrap_or(Value::Null)
}

/// DELETE `path`; panics on transport failure.
fn delete(http: &Http, path: &str) -> HttpResponse {
    http.request("DELETE", path, &[], &common::json_accept(), None)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn json_content() -> Vec<(String, String)> {
    let mut headers = common::json_accept();
    headers.push(("Content-Type".to_owned(), "application/json".to_owned()));
    headers
}

fn resource_version(object: &Value) -> String {
    object["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
        .to_owned()
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap_or("")
}

/// Runs `request` and measures how long it took.
fn timed(request: impl FnOnce() -> HttpResponse) -> (HttpResponse, Duration) {
    let started = Instant::now();
    let response = request();
    (response, started.elapsed())
}

/// A watch request read line by line on a background thread: one event a line.
struct Watch {
    /// `Some(line)` per line, `None` once the server ends the stream.
    lines: Receiver<Option<String>>,
    path: String,
}

impl Watch {
    /// Opens `path` (with `watch=true`) and waits for the response headers (200).
    fn open(http: &Http, path: &str) -> Watch {
        let url = format!("{}{path}", http.base());
        let (lines_tx, lines) = mpsc::channel();
        let (status_tx, status) = mpsc::channel();
        thread::spawn(move || {
            let agent = ureq::Agent::config_builder()
                .http_status_as_error(false)
                .proxy(None)
                .build()
                .new_agent();
            let response = match agent.get(&url).header("Accept", "application/json").call() {
                Ok(response) => response,
                Err(e) => {
                    let _ = status_tx.send(Err(e.to_string()));
                    return;
                }
            };
            let _ = status_tx.send(Ok(response.status().as_u16()));
            for line in BufReader::new(response.into_body().into_reader()).lines() {
                let Ok(line) = line else { break };
                if lines_tx.send(Some(line)).is_err() {
                    return;
                }
            }
            let _ = lines_tx.send(None);
        });
        match status.recv_timeout(EVENT_TIMEOUT) {
            Ok(Ok(200)) => {}
            other => panic!("watch {path}: {other:?}"),
        }
        Watch {
            lines,
            path: path.to_owned(),
        }
    }

    /// The next event; fails when none comes within [`EVENT_TIMEOUT`].
    fn next_event(&mut self) -> Value {
        match self.lines.recv_timeout(EVENT_TIMEOUT) {
            Ok(Some(line)) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("watch {}: bad event {line:?}: {e}", self.path)),
            Ok(None) => panic!("watch {} ended", self.path),
            Err(_) => panic!("watch {}: no event within {EVENT_TIMEOUT:?}", self.path),
        }
    }

    /// Every event until the stream ends; fails when it does not end within
    /// [`EVENT_TIMEOUT`].
    fn rest(&mut self) -> Vec<Value> {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        let mut events = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Some(line)) => events
                    .push(serde_json::from_str(&line).unwrap_or_else(|e| {
                        panic!("watch {}: bad event {line:?}: {e}", self.path)
                    })),
                Ok(None) => return events,
                Err(_) => panic!(
                    "watch {} did not end within {EVENT_TIMEOUT:?}; events: {events:?}",
                    self.path
                ),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Start-up with hostile data in etcd

#[test]
fn start_up_survives_deep_crds_and_objects_and_skips_an_undecodable_one() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let first = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = first.http();
    // A CRD whose schema nests 64 levels (past serde_json's default limit of 128
    // JSON levels), and an object of it nested 5,000 levels in a free-form field.
    let mut schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    for _ in 0..64 {
        schema = json!({"type": "object", "properties": {"n": schema}});
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "deeps", "singular": "deep", "kind": "Deep"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": schema}}}}]}
    });
    expect_status(http.send_json("POST", CRDS, &crd), 201);
    let deeps = "/apis/example.com/v1/namespaces/default/deeps";
    let served = poll(SERVED_TIMEOUT, || {
        (http.get(deeps).status == 200).then_some(())
    });
    assert!(served.is_some(), "deeps were not served");
    let body = format!(
        r#"{{"apiVersion":"example.com/v1","kind":"Deep","metadata":{{"name":"d"}},"spec":{{"free":{}{}}}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    let headers = vec![("Content-Type".to_string(), "application/json".to_string())];
    let created = http
        .request("POST", deeps, &[], &headers, Some(body.into_bytes()))
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    assert!(first.terminate().is_some());

    // Bytes no decoder reads, under a CRD key (a hand edit, a foreign writer).
    let broken = "/registry/apiextensions.k8s.io/customresourcedefinitions/broken.example.com";
    etcd.gateway(
        "/v3/kv/put",
        &json!({"key": common::base64_text(broken.as_bytes()), "value": common::base64_text(b"{not json")}),
    )
    .unwrap();

    // The server starts anyway, serves what it can and says what it skipped.
    let second = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = second.http();
    let served = poll(SERVED_TIMEOUT, || {
        (http.get(deeps).status == 200).then_some(())
    });
    assert!(served.is_some(), "deeps were not served after the restart");
    let got = http.get(&format!("{deeps}/d"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert!(got.text().contains("\"name\":\"d\""));
    let ready = http
        .request("GET", "/readyz?verbose", &[], &[], None)
        .unwrap();
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert!(
        ready.text().contains(&format!(
            "[+]undecodable-object ok: skipped at start-up: {broken}"
        )),
        "{}",
        ready.text()
    );
}

/// Issue 24's bookmark bug, through the server: etcd 3.4.23 answers progress requests
/// ahead of events still queued (etcd-io/etcd#15220). A BOOKMARK must never carry a
/// resourceVersion past an event the watch has not sent yet: an informer resuming from
/// it would skip that event. Every acknowledged create arrives, after no bookmark past it.
#[test]
fn bookmarks_never_run_ahead_of_events_on_etcd() {
    let (_etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    let list = expect_status(http.get(WIDGETS), 200);
    let from = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    // Each watch is its own chance for etcd to answer a progress request early.
    let watches: Vec<Watch> = (0..8)
        .map(|_| {
            Watch::open(
                &http,
                &format!(
                    "{WIDGETS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=10&resourceVersion={from}"
                ),
            )
        })
        .collect();
    fn red(name: &str) -> Value {
        widget(name, "red")
    }
    let writers = Writers::start(&http, WIDGETS, 8, red);
    thread::sleep(Duration::from_secs(7));
    let outcomes = writers.finish();
    let created: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.status == 201)
        .map(|o| o.name.as_str())
        .collect();
    assert!(created.len() > 100, "only {} creates", created.len());

    for mut watch in watches {
        let (mut bookmark, mut bookmarks, mut ahead, mut seen) = (0u64, 0, Vec::new(), Vec::new());
        for event in watch.rest() {
            let rv: u64 = event["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|rv| rv.parse().ok())
                .unwrap_or_else(|| panic!("event without a resourceVersion: {event}"));
            match event["type"].as_str() {
                Some("BOOKMARK") => {
                    bookmarks += 1;
                    bookmark = bookmark.max(rv);
                }
                Some("ADDED") => {
                    if rv <= bookmark {
                        ahead.push((bookmark, rv));
                    }
                    seen.push(
                        event["object"]["metadata"]["name"]
                            .as_str()
                            .unwrap()
                            .to_owned(),
                    );
                }
                other => panic!("unexpected event type {other:?}: {event}"),
            }
        }
        assert!(bookmarks > 0, "no bookmark in 10 s");
        assert!(
            ahead.is_empty(),
            "{} events after a bookmark past them, e.g. (bookmark, event) {:?}",
            ahead.len(),
            &ahead[..ahead.len().min(5)]
        );
        let seen: std::collections::HashSet<&str> = seen.iter().map(String::as_str).collect();
        let missed: Vec<&&str> = created.iter().filter(|n| !seen.contains(*n)).collect();
        assert!(
            missed.is_empty(),
            "{} acknowledged creates never watched: {:?}",
            missed.len(),
            &missed[..missed.len().min(5)]
        );
    }
}

/// Issue 24: a hundred client watches of one resource, in several namespaces, cost etcd
/// one watch (the watch cache's), not one each; each still sees its own namespace only.
#[test]
fn client_watches_of_one_resource_share_one_etcd_watch() {
    let (etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    for ns in ["blue", "green"] {
        create_namespace(&http, ns);
    }
    // The server's own watches first (CI once read 13 before and 15 during: one of
    // them opened meanwhile).
    let before = etcd.settled_watchers();
    let collection = |ns: &str| format!("/apis/example.com/v1/namespaces/{ns}/widgets");
    let list = expect_status(http.get(&collection("blue")), 200);
    let from = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watches: Vec<(&str, Watch)> = (0..100)
        .map(|i| {
            let ns = ["blue", "green"][i % 2];
            let path = format!(
                "{}?watch=true&timeoutSeconds=60&resourceVersion={from}",
                collection(ns)
            );
            (ns, Watch::open(&http, &path))
        })
        .collect();
    let during = etcd.watchers();
    eprintln!("etcd watchers: {before} before, {during} with 100 client watches");
    assert!(
        during <= before + 1,
        "100 client watches of one resource cost etcd {} watches",
        during - before
    );
    for ns in ["blue", "green"] {
        let mut body = widget(&format!("in-{ns}"), "red");
        body["metadata"]["namespace"] = json!(ns);
        expect_status(http.send_json("POST", &collection(ns), &body), 201);
    }
    for (ns, mut watch) in watches {
        let event = watch.next_event();
        assert_eq!(event["type"], "ADDED", "{event}");
        assert_eq!(
            event["object"]["metadata"]["name"],
            format!("in-{ns}"),
            "{event}"
        );
    }
}

/// kube's cacher answers lists at `resourceVersion=0` from memory: with a resource
/// watched, such lists (whole collection, one namespace, a page) and a watch from
/// `resourceVersion=0` are served while etcd answers nothing, and equal what etcd
/// gave before it froze.
#[test]
fn lists_at_resource_version_0_are_served_from_the_watch_cache_while_etcd_is_frozen() {
    let (etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    create_namespace(&http, "blue");
    let blue = "/apis/example.com/v1/namespaces/blue/widgets";
    for name in ["a", "b", "c", "d"] {
        expect_status(http.send_json("POST", WIDGETS, &red_widget(name)), 201);
    }
    for name in ["e", "f"] {
        expect_status(http.send_json("POST", blue, &red_widget(name)), 201);
    }
    let all = "/apis/example.com/v1/widgets";
    let from = resource_version(&expect_status(http.get(all), 200));
    let mut watch = Watch::open(&http, &format!("{all}?watch=true&resourceVersion={from}"));
    // Changes after the watch opened: the cache keeps its objects current.
    let patched = expect_status(
        http.merge_patch(
            &format!("{WIDGETS}/b"),
            &json!({"spec": {"color": "green"}}),
        ),
        200,
    );
    expect_status(delete(&http, &format!("{WIDGETS}/c")), 200);
    let mut last = String::new();
    for _ in 0..2 {
        last = resource_version(&watch.next_event()["object"]);
    }
    let consistent = expect_status(http.get(all), 200);
    let summary = |list: &Value| -> Vec<(String, String, String)> {
        list["items"]
            .as_array()
            .unwrap_or_else(|| panic!("no items: {list}"))
            .iter()
            .map(|o| {
                (
                    o["metadata"]["namespace"].as_str().unwrap_or("").to_owned(),
                    name_of(o).to_owned(),
                    resource_version(o),
                )
            })
            .collect()
    };
    let want = summary(&consistent);
    assert_eq!(want.len(), 5, "{consistent}");
    assert!(want.contains(&(
        "default".to_owned(),
        "b".to_owned(),
        resource_version(&patched)
    )));

    etcd.signal("STOP");
    let (listed, took) = timed(|| http.get(&format!("{all}?resourceVersion=0")));
    let listed = expect_status(listed, 200);
    assert_eq!(summary(&listed), want);
    assert!(
        resource_version(&listed).parse::<i64>().unwrap() >= last.parse::<i64>().unwrap(),
        "list at {} is older than the last change {last}",
        resource_version(&listed)
    );
    assert!(
        took < ETCD_REQUEST_TIMEOUT,
        "the list waited for etcd: {took:?}"
    );
    let in_blue = expect_status(http.get(&format!("{blue}?resourceVersion=0")), 200);
    assert_eq!(summary(&in_blue), want[..2].to_vec());
    let page = expect_status(http.get(&format!("{all}?resourceVersion=0&limit=3")), 200);
    assert_eq!(summary(&page), want[..3].to_vec());
    assert_eq!(page["metadata"]["remainingItemCount"], json!(2), "{page}");
    assert!(page["metadata"]["continue"].is_string(), "{page}");
    let mut from_zero = Watch::open(&http, &format!("{WIDGETS}?watch=true&resourceVersion=0"));
    let added: Vec<String> = (0..3)
        .map(|_| {
            let event = from_zero.next_event();
            assert_eq!(event["type"], "ADDED", "{event}");
            name_of(&event["object"]).to_owned()
        })
        .collect();
    assert_eq!(added, ["a", "b", "d"]);
    // A consistent read needs etcd.
    let consistent = http.get(all);
    assert_ne!(consistent.status, 200, "{}", consistent.text());

    etcd.signal("CONT");
    let ready = http.wait_for_status("/readyz", 200, Duration::from_secs(30));
    assert_eq!(ready.status, 200, "{}", ready.text());
    // The page's continue token reads the rest from etcd at the page's revision.
    let token = page["metadata"]["continue"].as_str().unwrap();
    let rest = expect_status(http.get(&format!("{all}?limit=3&continue={token}")), 200);
    assert_eq!(summary(&rest), want[3..].to_vec());
}

/// Snapshots need the embedded store: on etcd the endpoints and flags say so.
#[test]
fn snapshots_on_etcd_are_refused_with_a_clear_error() {
    let (etcd, server) = widgets_on_etcd(&[]);
    let http = server.http();
    for path in [
        "/admin/snapshots?name=s",
        "/admin/snapshots/s/restore",
        "/admin/snapshots/s/fork",
    ] {
        let r = http
            .request("POST", path, &[], &common::json_accept(), None)
            .unwrap_or_else(|e| panic!("{e}"));
        let status = expect_status(r, 400);
        assert_eq!(
            status["message"],
            "snapshots need the embedded store; this server stores its objects in etcd",
            "{path}"
        );
    }
    let out = std::process::Command::new(common::server_binary())
        .args([
            "--port",
            "0",
            "--etcd-servers",
            &etcd.url(),
            "--snapshot-in",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("snapshots need the embedded store"),
        "{stderr}"
    );
}
