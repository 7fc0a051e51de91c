//! A hostile client against the real binary: inputs that once crashed, froze or
//! exhausted the server, or left data unreadable (issue 13), replayed on the embedded
//! store and (with `TEST_BACKEND=etcd`, as CI runs every suite) on a real etcd.
//!
//! Every test checks, besides the answer kube gives, that the server is still there:
//! `/healthz` answers throughout (a probe thread measures every answer), the process
//! has not exited, and its resident memory stays bounded.

mod common;

use common::{causes, poll, HttpResponse, TestServer};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const DEEPS: &str = "/apis/example.com/v1/namespaces/default/deeps";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// The longest a `/healthz` probe may wait while hostile requests run. The server
/// answers in well under a millisecond; a frozen one does not answer at all. The
/// bound leaves room for a loaded CI machine running a debug build.
const HEALTH_BOUND: Duration = Duration::from_millis(1000);

/// Resident memory the server may reach while handling these inputs (it starts
/// at ~30 MiB; the amplifications these tests send once reached gigabytes).
const RSS_BOUND_MIB: f64 = 400.0;

/// Polls `/healthz` every 20 ms on fresh connections until stopped.
struct HealthProbe {
    stop: Arc<AtomicBool>,
    worst: Arc<Mutex<(Duration, Vec<String>)>>,
    thread: Option<thread::JoinHandle<()>>,
}

impl HealthProbe {
    fn start(server: &TestServer) -> HealthProbe {
        let stop = Arc::new(AtomicBool::new(false));
        let worst = Arc::new(Mutex::new((Duration::ZERO, Vec::new())));
        let http = server.http();
        let (s, w) = (stop.clone(), worst.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let started = Instant::now();
                let r = http.request("GET", "/healthz", &[], &[], None);
                let took = started.elapsed();
                let mut worst = w.lock().unwrap();
                worst.0 = worst.0.max(took);
                match r {
                    Ok(r) if r.status == 200 => {}
                    Ok(r) => worst.1.push(format!("{} {}", r.status, r.text())),
                    Err(e) => worst.1.push(e),
                }
                drop(worst);
                thread::sleep(Duration::from_millis(20));
            }
        });
        HealthProbe {
            stop,
            worst,
            thread: Some(thread),
        }
    }

    /// Stop probing; assert every probe was answered with 200 within [`HEALTH_BOUND`].
    fn assert_healthy(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        let (worst, failures) = self.worst.lock().unwrap().clone();
        assert!(failures.is_empty(), "/healthz failed: {failures:?}");
        assert!(
            worst < HEALTH_BOUND,
            "/healthz took {worst:?} at worst (bound {HEALTH_BOUND:?})"
        );
    }
}

/// The server is alive, answers, and stayed within its memory bound.
fn assert_alive(server: &TestServer) {
    assert!(
        server.exited().is_none(),
        "the server exited: {:?}\n{}",
        server.exited(),
        server.stderr_tail(30)
    );
    let health = server.http().get("/healthz");
    assert_eq!(health.status, 200, "{}", health.text());
    let rss = server.rss_mib();
    assert!(
        rss < RSS_BOUND_MIB,
        "server RSS {rss:.0} MiB over {RSS_BOUND_MIB} MiB"
    );
}

fn expect(r: HttpResponse, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    r.json().unwrap_or(Value::Null)
}

fn send(server: &TestServer, method: &str, path: &str, ct: &str, body: Vec<u8>) -> HttpResponse {
    let headers = vec![
        ("Accept".to_string(), "application/json".to_string()),
        ("Content-Type".to_string(), ct.to_string()),
    ];
    server
        .http()
        .request(method, path, &[], &headers, Some(body))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A namespaced CRD `deeps.example.com` whose `spec` keeps anything, with `rules`.
fn deep_crd(rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "deeps", "singular": "deep", "kind": "Deep", "listKind": "DeepList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                             "x-kubernetes-validations": rules}
                }}}
            }]
        }
    })
}

fn install_deeps(server: &TestServer) {
    expect(
        server.http().send_json("POST", CRDS, &deep_crd(json!([]))),
        201,
    );
    let ready = poll(Duration::from_secs(20), || {
        (server.http().get(DEEPS).status == 200).then_some(())
    });
    assert!(ready.is_some(), "deeps were not served");
}

/// `{"spec": {"a": [[[...]]]}}` with `depth` nested arrays inside `spec.a`.
fn deep_object(name: &str, depth: usize) -> Vec<u8> {
    format!(
        r#"{{"apiVersion":"example.com/v1","kind":"Deep","metadata":{{"name":"{name}"}},"spec":{{"a":{}{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    )
    .into_bytes()
}

/// Run `f` on a response body parsed without serde_json's 128-level limit, on a
/// thread whose stack holds kube's 10,000 levels (parsing and dropping recurse).
fn with_deep_json<R: Send + 'static>(
    r: &HttpResponse,
    f: impl FnOnce(&Value) -> R + Send + 'static,
) -> R {
    let body = r.body.clone();
    thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            let mut de = serde_json::Deserializer::from_slice(&body);
            de.disable_recursion_limit();
            let v: Value = serde::Deserialize::deserialize(&mut de).expect("JSON body");
            f(&v)
        })
        .unwrap()
        .join()
        .unwrap()
}

// ---------------------------------------------------------------------------------
// Must fix 1: CEL expressions that overflowed the stack.

#[test]
fn deep_cel_expressions_are_refused_with_cel_gos_limits_at_every_entry_point() {
    let server = TestServer::start();
    let probe = HealthProbe::start(&server);
    let http = server.http();
    let has = format!("has(self{})", ".a".repeat(1500));
    let sum = vec!["1"; 2500].join("+") + " > 0";
    let parens = "(".repeat(5000) + "true" + &")".repeat(5000);
    for (rule, message) in [
        (&has, "max recursion depth exceeded"),
        (&sum, "max recursion depth exceeded"),
        (&parens, "expression recursion limit exceeded: 250"),
    ] {
        let status = expect(
            http.send_json("POST", CRDS, &deep_crd(json!([{"rule": rule}]))),
            422,
        );
        let all = causes(&status).join("\n");
        assert!(
            all.contains(&format!(
                "compilation failed: ERROR: <input>:-1:0: {message}"
            )),
            "{all}"
        );
        // messageExpression goes through the same compiler.
        let status = expect(
            http.send_json(
                "POST",
                CRDS,
                &deep_crd(json!([{"rule": "true", "messageExpression": rule}])),
            ),
            422,
        );
        assert!(causes(&status).join("\n").contains(message), "{status}");
    }

    // ValidatingAdmissionPolicy: validations, variables, messageExpressions.
    let policies = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let policy = |spec: Value| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
               "metadata": {"name": "deep"},
               "spec": spec})
    };
    let constraints = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]});
    for spec in [
        json!({"matchConstraints": constraints, "validations": [{"expression": has}]}),
        json!({"matchConstraints": constraints, "variables": [{"name": "v", "expression": sum}], "validations": [{"expression": "true"}]}),
        json!({"matchConstraints": constraints, "validations": [{"expression": "true", "messageExpression": parens}]}),
    ] {
        let status = expect(http.send_json("POST", policies, &policy(spec)), 422);
        assert!(
            status["message"]
                .as_str()
                .unwrap_or("")
                .contains("recursion"),
            "{status}"
        );
    }

    // Webhook matchConditions.
    let webhooks = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
    let config = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "deep"},
        "webhooks": [{"name": "deep.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "https://127.0.0.1:1/"},
                      "matchConditions": [{"name": "deep", "expression": has}]}]
    });
    let status = expect(http.send_json("POST", webhooks, &config), 422);
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("max recursion depth exceeded"),
        "{status}"
    );

    // The deepest rules cel-go accepts still compile and run.
    let deepest = "(".repeat(240) + "self == self" + &")".repeat(240);
    expect(
        http.send_json("POST", CRDS, &deep_crd(json!([{"rule": deepest}]))),
        201,
    );
    probe.assert_healthy();
    assert_alive(&server);
}

// ---------------------------------------------------------------------------------
// Must fix 2: amplification through JSON patch copies; objects storage cannot hold.

#[test]
fn json_patch_copies_are_bounded_and_oversized_objects_get_413() {
    let server = TestServer::start();
    let probe = HealthProbe::start(&server);
    let http = server.http();
    expect(
        http.send_json(
            "POST",
            CONFIGMAPS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "amp"}}),
        ),
        201,
    );
    // 1.9 KB doubling a 100-byte value 18 times: 26 MB if unbounded.
    let mut ops =
        vec![json!({"op": "add", "path": "/metadata/finalizers", "value": ["q".repeat(100)]})];
    for _ in 0..18 {
        ops.push(
            json!({"op": "copy", "from": "/metadata/finalizers", "path": "/metadata/finalizers/-"}),
        );
    }
    let status = expect(
        send(
            &server,
            "PATCH",
            &format!("{CONFIGMAPS}/amp"),
            "application/json-patch+json",
            serde_json::to_vec(&ops).unwrap(),
        ),
        422,
    );
    assert_eq!(
        status["message"],
        "the server rejected our request due to an error in our request"
    );
    // More than kube's 10,000 operations: 413.
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/kind", "value": "ConfigMap"}))
        .collect();
    let status = expect(
        send(
            &server,
            "PATCH",
            &format!("{CONFIGMAPS}/amp"),
            "application/json-patch+json",
            serde_json::to_vec(&many).unwrap(),
        ),
        413,
    );
    assert_eq!(
        status["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    // An object over etcd's 1.5 MiB request limit: 413 on both backends, never a 500.
    install_deeps(&server);
    let big = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "big"},
                     "spec": {"blob": "x".repeat(1600 * 1024)}});
    let status = expect(http.send_json("POST", DEEPS, &big), 413);
    assert_eq!(
        status["message"],
        "Request entity too large: etcdserver: request is too large"
    );
    // Grown past it by merge patches: refused, the stored object unchanged.
    let small = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "grow"},
                       "spec": {"a": "x".repeat(1000 * 1024)}});
    expect(http.send_json("POST", DEEPS, &small), 201);
    let patch = json!({"spec": {"b": "y".repeat(1000 * 1024)}});
    expect(
        send(
            &server,
            "PATCH",
            &format!("{DEEPS}/grow"),
            "application/merge-patch+json",
            serde_json::to_vec(&patch).unwrap(),
        ),
        413,
    );
    let stored = expect(http.get(&format!("{DEEPS}/grow")), 200);
    assert!(stored["spec"].get("b").is_none());
    probe.assert_healthy();
    assert_alive(&server);
}

// ---------------------------------------------------------------------------------
// Must fix 3: objects nested deeper than serde_json's default limit.

#[test]
fn objects_nested_to_kubes_limit_stay_readable_listable_and_deletable() {
    let server = TestServer::start();
    install_deeps(&server);
    let probe = HealthProbe::start(&server);
    let http = server.http();
    for (name, depth) in [("d125", 125), ("d900", 900), ("d9990", 9990)] {
        expect(
            send(
                &server,
                "POST",
                DEEPS,
                "application/json",
                deep_object(name, depth),
            ),
            201,
        );
        let got = http.get(&format!("{DEEPS}/{name}"));
        assert_eq!(got.status, 200);
        let got_name = with_deep_json(&got, |v| v["metadata"]["name"].clone());
        assert_eq!(got_name, name);
    }
    // Go's limit: one level more is a 400 with Go's words, nothing stored.
    let status = expect(
        send(
            &server,
            "POST",
            DEEPS,
            "application/json",
            deep_object("d10001", 10_001),
        ),
        400,
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap_or("")
            .contains("exceeded max depth"),
        "{status}"
    );

    // Every read of the collection: list, table, metadata-only, watch.
    let list = http.get(DEEPS);
    assert_eq!(list.status, 200);
    assert_eq!(
        with_deep_json(&list, |v| v["items"].as_array().map(Vec::len)),
        Some(3)
    );
    for accept in [
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    ] {
        let r = http
            .request("GET", DEEPS, &[], &[("Accept".into(), accept.into())], None)
            .unwrap();
        assert_eq!(r.status, 200, "{accept}: {}", r.text());
    }
    let watch = http.watch_for(DEEPS, 1, &[]);
    assert_eq!(watch.status, 200);
    assert_eq!(
        watch.text().lines().filter(|l| l.contains("ADDED")).count(),
        3
    );

    // Update, patch and delete one; delete the collection.
    let updated = with_deep_json(&http.get(&format!("{DEEPS}/d9990")), |v| {
        let mut obj = v.clone();
        obj["spec"]["b"] = json!(1);
        serde_json::to_vec(&obj).unwrap()
    });
    expect(
        send(
            &server,
            "PUT",
            &format!("{DEEPS}/d9990"),
            "application/json",
            updated,
        ),
        200,
    );
    let deep_patch = format!(
        r#"{{"spec":{{"c":{}1{}}}}}"#,
        "[".repeat(5000),
        "]".repeat(5000)
    );
    expect(
        send(
            &server,
            "PATCH",
            &format!("{DEEPS}/d9990"),
            "application/merge-patch+json",
            deep_patch.into_bytes(),
        ),
        200,
    );
    expect(
        http.request("DELETE", &format!("{DEEPS}/d125"), &[], &[], None)
            .unwrap(),
        200,
    );
    expect(http.request("DELETE", DEEPS, &[], &[], None).unwrap(), 200);
    let list = expect(http.get(DEEPS), 200);
    assert_eq!(list["items"], json!([]));
    probe.assert_healthy();
    assert_alive(&server);
}

#[test]
fn a_crd_whose_schema_nests_deep_lists_and_serves() {
    let server = TestServer::start();
    let http = server.http();
    // 64 levels of properties: 130 JSON levels, past serde_json's default 128.
    let mut schema = json!({"type": "string"});
    for _ in 0..64 {
        schema = json!({"type": "object", "properties": {"n": schema}});
    }
    let mut crd = deep_crd(json!([]));
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = schema;
    expect(http.send_json("POST", CRDS, &crd), 201);
    let list = http.get(CRDS);
    assert_eq!(list.status, 200);
    assert_eq!(
        with_deep_json(&list, |v| v["items"].as_array().map(Vec::len)),
        Some(1)
    );
    let ready = poll(Duration::from_secs(20), || {
        (http.get(DEEPS).status == 200).then_some(())
    });
    assert!(ready.is_some());
    let mut spec = json!("leaf");
    for _ in 0..64 {
        spec = json!({"n": spec});
    }
    let obj = json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "x"}, "spec": spec});
    expect(http.send_json("POST", DEEPS, &obj), 201);
    assert_eq!(http.get(&format!("{DEEPS}/x")).status, 200);
    assert_alive(&server);
}

// ---------------------------------------------------------------------------------
// Must fix 4: deep flow-style YAML; health and SIGTERM under hostile load.

#[test]
fn deep_yaml_is_refused_at_once_while_health_and_sigterm_stay_responsive() {
    let server = TestServer::start();
    let probe = HealthProbe::start(&server);
    let bodies: Vec<Vec<u8>> = vec![
        "[".repeat(800_000).into_bytes(),
        "{a: ".repeat(200_000).into_bytes(),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata: {}",
            "[".repeat(40_000)
        )
        .into_bytes(),
    ];
    let started = Instant::now();
    let workers: Vec<_> = bodies
        .into_iter()
        .map(|body| {
            let http = server.http();
            thread::spawn(move || {
                let headers = vec![("Content-Type".to_string(), "application/yaml".to_string())];
                http.request("POST", CONFIGMAPS, &[], &headers, Some(body))
                    .unwrap()
            })
        })
        .collect();
    for w in workers {
        let r = w.join().unwrap();
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(
            r.text().contains("exceeded max depth of 128"),
            "{}",
            r.text()
        );
    }
    // Linear work: the three bodies (1.7 MB) are answered in seconds, not minutes.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    probe.assert_healthy();
    assert_alive(&server);

    // SIGTERM while hostile requests are in flight: the server still exits promptly.
    let http = server.http();
    let flood: Vec<_> = (0..2)
        .map(|_| {
            let http = http.clone();
            thread::spawn(move || {
                let headers = vec![("Content-Type".to_string(), "application/yaml".to_string())];
                for _ in 0..5 {
                    let body = "[".repeat(800_000).into_bytes();
                    if http
                        .request("POST", CONFIGMAPS, &[], &headers, Some(body))
                        .is_err()
                    {
                        return;
                    }
                }
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let status = server.terminate();
    assert!(status.is_some(), "the server did not exit on SIGTERM");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    for f in flood {
        let _ = f.join();
    }
}

// ---------------------------------------------------------------------------------
// Should fix: malformed metadata, query parameters, connections, limits.

#[test]
fn malformed_metadata_is_refused_with_gos_decode_errors() {
    let server = TestServer::start();
    install_deeps(&server);
    let http = server.http();
    let with_meta = |meta: Value| json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": meta, "spec": {}});
    for (meta, error) in [
        (json!({"name": "a", "labels": {"a": 5}}), "json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string"),
        (json!({"name": "a", "labels": ["a"]}), "json: cannot unmarshal array into Go struct field ObjectMeta.labels of type map[string]string"),
        (json!({"name": "a", "finalizers": "a"}), "json: cannot unmarshal string into Go struct field ObjectMeta.finalizers of type []string"),
        (json!({"name": "a", "ownerReferences": {"a": 1}}), "json: cannot unmarshal object into Go struct field ObjectMeta.ownerReferences of type []v1.OwnerReference"),
        (json!({"name": "a", "annotations": {"a": 1}}), "json: cannot unmarshal number into Go struct field ObjectMeta.annotations of type string"),
    ] {
        let status = expect(http.send_json("POST", DEEPS, &with_meta(meta.clone())), 400);
        assert_eq!(
            status["message"],
            format!("Deep in version \"v1\" cannot be handled as a Deep: {error}"),
            "{meta}"
        );
    }
    let status = expect(http.send_json("POST", DEEPS, &with_meta(json!("x"))), 400);
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("v1.ObjectMeta"),
        "{status}"
    );
    // Nothing malformed was stored; a patch cannot put it there either.
    expect(
        http.send_json("POST", DEEPS, &with_meta(json!({"name": "ok"}))),
        201,
    );
    let status = expect(
        send(
            &server,
            "PATCH",
            &format!("{DEEPS}/ok"),
            "application/merge-patch+json",
            br#"{"metadata":{"labels":{"a":5}}}"#.to_vec(),
        ),
        422,
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("Go struct field ObjectMeta.labels of type string"),
        "{status}"
    );
    let list = http
        .request(
            "GET",
            DEEPS,
            &[],
            &[(
                "Accept".into(),
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io".into(),
            )],
            None,
        )
        .unwrap();
    assert_eq!(
        list.json().unwrap()["items"].as_array().map(Vec::len),
        Some(1)
    );
    // Built-in kinds decode into their Go types the same way.
    let status = expect(
        http.send_json(
            "POST",
            CONFIGMAPS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "labels": {"a": 5}}}),
        ),
        400,
    );
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("of type string"),
        "{status}"
    );
    assert_alive(&server);
}

#[test]
fn malformed_query_parameters_get_kubes_answers() {
    let server = TestServer::start();
    let http = server.http();
    expect(
        http.send_json(
            "POST",
            CONFIGMAPS,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "q"}}),
        ),
        201,
    );
    let get = |query: &str| {
        let r = http.get(&format!("{CONFIGMAPS}{query}"));
        (r.status, r.json().unwrap_or(Value::Null))
    };
    let (code, s) = get("/q?resourceVersion=abc");
    assert_eq!(code, 400);
    assert_eq!(
        s["message"],
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
    assert_eq!(get("?resourceVersion=abc").0, 400);
    for (query, text) in [
        (
            "?timeoutSeconds=abc",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "?limit=abc",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
    ] {
        let (code, s) = get(query);
        assert_eq!(
            (code, s["message"].as_str().unwrap_or("")),
            (400, text),
            "{query}"
        );
    }
    let (code, s) = get("?resourceVersionMatch=Exact");
    assert_eq!(code, 422);
    assert_eq!(
        s["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    // A resourceVersion the store has not reached: 504 naming the current revision.
    let current = get("").1["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    for query in ["?resourceVersion=999999", "/q?resourceVersion=999999"] {
        let (code, s) = get(query);
        assert_eq!(code, 504, "{query}");
        assert_eq!(
            s["message"],
            format!("Timeout: Too large resource version: 999999, current: {current}")
        );
        assert_eq!(
            s["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        assert_eq!(s["details"]["retryAfterSeconds"], 1);
    }
    // kube reads any boolean but `0`/`false` as true: `watch=garbage` watches.
    let watch = http.watch_for(CONFIGMAPS, 1, &[("watch", "garbage")]);
    assert!(
        watch.text().contains("\"type\":\"ADDED\""),
        "{}",
        watch.text()
    );
    // A malformed gracePeriodSeconds deletes nothing.
    let r = http
        .request(
            "DELETE",
            &format!("{CONFIGMAPS}/q?gracePeriodSeconds=abc"),
            &[],
            &[],
            None,
        )
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(get("/q").0, 200);
    // An unknown strategic merge patch directive, in a map the object has (kube reads
    // directives as it merges: one in a map the object lacks is dropped unread).
    let status = expect(
        send(
            &server,
            "PATCH",
            &format!("{CONFIGMAPS}/q"),
            "application/strategic-merge-patch+json",
            br#"{"metadata":{"$patch":"bogus"}}"#.to_vec(),
        ),
        400,
    );
    assert_eq!(
        status["message"],
        "unknown patch type: bogus in map: map[$patch:bogus]"
    );
    assert_alive(&server);
}

#[test]
fn limits_match_kube_header_count_and_nesting() {
    let server = TestServer::start();
    let http = server.http();
    // Go counts header bytes, not lines: 2,000 small headers are fine.
    let headers: Vec<(String, String)> = (0..2000)
        .map(|i| (format!("X-H{i}"), "v".to_string()))
        .collect();
    let r = http
        .request("GET", "/healthz", &[], &headers, None)
        .unwrap();
    assert_eq!(r.status, 200);
    // Past the 2,048 lines the server makes room for (`http::MAX_HEADERS`): 431, and
    // the next request, on a new connection, is served.
    let many: Vec<(String, String)> = (0..3000)
        .map(|i| (format!("X-H{i}"), "v".to_string()))
        .collect();
    let r = http.request("GET", "/healthz", &[], &many, None);
    assert!(
        r.as_ref().map_or(true, |r| r.status == 431),
        "{:?}",
        r.map(|r| r.status)
    );
    let r = http.request("GET", "/healthz", &[], &[], None).unwrap();
    assert_eq!(r.status, 200);
    // Over 1 MiB of headers: 431.
    let big = vec![("X-Big".to_string(), "v".repeat(1100 * 1024))];
    let r = http.request("GET", "/healthz", &[], &big, None);
    assert!(
        r.as_ref().map_or(true, |r| r.status == 431),
        "{:?}",
        r.map(|r| r.status)
    );
    assert_alive(&server);
}

#[test]
fn connections_that_never_finish_their_headers_are_closed() {
    let server = TestServer::start();
    let addr = server.url().trim_start_matches("http://").to_string();
    // Half a request head; nothing at all; a finished request, then silence.
    let clients: Vec<(&str, &[u8])> = vec![
        (
            "partial head",
            b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ",
        ),
        ("silent", b""),
        (
            "idle keep-alive",
            b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n",
        ),
    ];
    let waits: Vec<_> = clients
        .into_iter()
        .map(|(what, sent)| {
            let addr = addr.clone();
            thread::spawn(move || {
                let mut c = TcpStream::connect(&addr).unwrap();
                c.write_all(sent).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(45))).unwrap();
                let started = Instant::now();
                let mut buf = Vec::new();
                let _ = c.read_to_end(&mut buf);
                (what, started.elapsed())
            })
        })
        .collect();
    // kube's ReadHeaderTimeout is 32 s: the server closes each connection then.
    for w in waits {
        let (what, waited) = w.join().unwrap();
        assert!(
            waited >= Duration::from_secs(30) && waited < Duration::from_secs(44),
            "{what}: closed after {waited:?}"
        );
    }
    assert_alive(&server);
}

#[test]
fn accept_backs_off_instead_of_spinning_when_out_of_file_descriptors() {
    let server = TestServer::start();
    // A low descriptor limit, then connections until accept fails with EMFILE.
    let status = std::process::Command::new("prlimit")
        .args(["--pid", &server.pid().to_string(), "--nofile=96:96"])
        .status()
        .expect("run prlimit (util-linux)");
    assert!(status.success());
    let addr = server.url().trim_start_matches("http://").to_string();
    let mut held = Vec::new();
    for _ in 0..200 {
        if let Ok(c) = TcpStream::connect(&addr) {
            held.push(c);
        }
    }
    thread::sleep(Duration::from_millis(300));
    let before = server.cpu_time();
    thread::sleep(Duration::from_secs(2));
    let used = server.cpu_time() - before;
    // A spinning accept loop burns a whole core (2 s); backing off uses almost none.
    assert!(
        used < Duration::from_millis(600),
        "server used {used:?} of CPU in 2 s"
    );
    drop(held);
    let health = poll(Duration::from_secs(10), || {
        server
            .http()
            .request("GET", "/healthz", &[], &[], None)
            .ok()
            .filter(|r| r.status == 200)
    });
    assert!(health.is_some(), "the server did not serve again");
}

#[test]
fn plain_http_answers_loopback_hosts_only_and_says_it_is_unauthenticated() {
    let server = TestServer::start();
    let http = server.http();
    for host in ["evil.example.com", "evil.example.com:80", "10.1.2.3"] {
        let r = http
            .request(
                "GET",
                "/api/v1/namespaces",
                &[],
                &[("Host".into(), host.into())],
                None,
            )
            .unwrap();
        assert_eq!(r.status, 403, "{host}: {}", r.text());
        assert!(r.text().contains("loopback hosts only"), "{}", r.text());
    }
    for host in ["localhost", "localhost:8080", "127.0.0.1:1", "[::1]:8080"] {
        let r = http
            .request(
                "GET",
                "/api/v1/namespaces",
                &[],
                &[("Host".into(), host.into())],
                None,
            )
            .unwrap();
        assert_eq!(r.status, 200, "{host}: {}", r.text());
    }
    let log = server.stderr();
    assert!(log.contains("is unauthenticated"), "{log}");
}
