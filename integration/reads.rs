//! Reads answered from the served-bytes cache (`rest::served_cache`): a JSON GET or
//! list of a custom resource serves the bytes made at the last read of the same stored
//! revision under the same CRD revision. What a client must never notice: the bytes
//! equal what decoding, pruning, defaulting and encoding anew give (compared with the
//! YAML and Table forms, which never use the cache), writes and CRD schema changes
//! show at once, lists page as before.

mod common;

use common::{json_accept, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn crd(default_color: Option<&str>) -> Value {
    let mut color = json!({"type": "string"});
    if let Some(d) = default_color {
        color["default"] = json!(d);
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.reads.example.com"},
        "spec": {"group": "reads.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "color": color}}}}}}]}})
}

const GADGETS: &str = "/apis/reads.example.com/v1/namespaces/default/gadgets";

/// A server serving gadgets (`crd(default_color)`).
fn with_gadgets(default_color: Option<&str>) -> TestServer {
    let server = TestServer::start();
    let http = server.http();
    let r = http.send_json("POST", CRDS, &crd(default_color));
    assert_eq!(r.status, 201, "{}", r.text());
    let ready = common::poll(std::time::Duration::from_secs(10), || {
        (http.get(GADGETS).status == 200).then_some(())
    });
    assert!(ready.is_some(), "gadgets not served within 10 s");
    server
}

/// `json` and `yaml` (read after it) are the same list: the same items and metadata,
/// but for the list's resourceVersion, which is the store's and may move between the
/// two reads with any write elsewhere (a CRD's status, a lease).
fn assert_same_list(json: &Value, yaml: &Value) {
    let rv = |l: &Value| -> u64 {
        l["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("list resourceVersion in {l}"))
    };
    assert!(rv(json) <= rv(yaml), "{json} then {yaml}");
    let without_rv = |l: &Value| {
        let mut l = l.clone();
        l["metadata"]
            .as_object_mut()
            .map(|m| m.remove("resourceVersion"));
        l
    };
    assert_eq!(without_rv(json), without_rv(yaml));
}

#[test]
fn cached_reads_equal_fresh_ones_and_follow_writes_and_schema_changes() {
    let server = with_gadgets(None);
    let http = server.http();
    for i in 0..7 {
        let g = json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i}")}, "spec": {"size": i, "unknown": "pruned"}});
        let r = http.send_json("POST", GADGETS, &g);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let get = |path: &str| http.get(path);
    let yaml = |path: &str| -> Value {
        let mut h = json_accept();
        h.retain(|(k, _)| k != "Accept");
        h.push(("Accept".into(), "application/yaml".into()));
        let r = http.request("GET", path, &[], &h, None).expect("GET");
        serde_norway::from_slice(&r.body).expect("YAML")
    };
    // The first read makes the bytes, the second serves them: the same, and what the
    // uncached YAML form holds.
    let first = get(&format!("{GADGETS}/g1"));
    let second = get(&format!("{GADGETS}/g1"));
    assert_eq!(first.status, 200);
    assert_eq!(first.body, second.body);
    assert_eq!(
        first.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(first.json().expect("JSON"), yaml(&format!("{GADGETS}/g1")));
    assert_eq!(first.json().expect("JSON")["spec"], json!({"size": 1}));
    // A list of cached items is the list the uncached form gives.
    let list = get(GADGETS).json().expect("list");
    assert_same_list(&list, &yaml(GADGETS));
    assert_eq!(list["kind"], "GadgetList");
    assert_eq!(list["metadata"]["continue"], "");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(7));
    assert_eq!(list["items"][1], first.json().expect("JSON"));
    // Pages: limit, continue and remainingItemCount as before.
    let page = http
        .get(&format!("{GADGETS}?limit=3"))
        .json()
        .expect("page");
    assert_eq!(page["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(page["metadata"]["remainingItemCount"], 4);
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    let rest = http
        .get(&format!(
            "{GADGETS}?limit=10&continue={}",
            common::encode_query_part(&token)
        ))
        .json()
        .expect("page 2");
    let names: Vec<&str> = page["items"]
        .as_array()
        .into_iter()
        .chain(rest["items"].as_array())
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["g0", "g1", "g2", "g3", "g4", "g5", "g6"]);
    assert!(rest["metadata"].get("remainingItemCount").is_none());
    // A write shows at once.
    let r = http.merge_patch(&format!("{GADGETS}/g1"), &json!({"spec": {"size": 100}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        get(&format!("{GADGETS}/g1")).json().expect("JSON")["spec"]["size"],
        100
    );
    assert_eq!(
        get(GADGETS).json().expect("list")["items"][1]["spec"]["size"],
        100
    );
    // A schema change (a default) shows at once on objects read before it.
    let mut current = http
        .get(&format!("{CRDS}/gadgets.reads.example.com"))
        .json()
        .expect("CRD");
    current["spec"] = crd(Some("blue"))["spec"].clone();
    let r = http.send_json(
        "PUT",
        &format!("{CRDS}/gadgets.reads.example.com"),
        &current,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let defaulted = common::poll(std::time::Duration::from_secs(10), || {
        let g = get(&format!("{GADGETS}/g2")).json()?;
        (g["spec"]["color"] == "blue").then_some(g)
    });
    let g2 = defaulted.expect("the new default on a read after the CRD change");
    assert_eq!(g2, yaml(&format!("{GADGETS}/g2")));
    assert!(get(GADGETS).json().expect("list")["items"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|o| o["spec"]["color"] == "blue"));
    // A deleted object is gone.
    let r = http
        .request(
            "DELETE",
            &format!("{GADGETS}/g3"),
            &[],
            &json_accept(),
            None,
        )
        .expect("DELETE");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(get(&format!("{GADGETS}/g3")).status, 404);
}

#[test]
fn unsupported_field_labels_are_400_before_anything_is_listed() {
    let server = TestServer::start_with(&[
        "--load",
        &common::testdata_dir().join("crds").display().to_string(),
    ]);
    let http = server.http();
    // Nothing to look at: kube still refuses the label when it decodes the request.
    let cases = [
        (
            "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=spec.bogus%3D1",
            "field label not supported: spec.bogus",
        ),
        (
            "/api/v1/namespaces/default/configmaps?fieldSelector=bogus%3D1",
            "\"bogus\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
        (
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&fieldSelector=bogus%3D1",
            "\"bogus\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
    ];
    for (path, message) in cases {
        let r = http.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert_eq!(r.json().expect("status")["message"], message, "{path}");
    }
    // A cluster-scoped custom resource has no `metadata.namespace` label (kube's CR
    // label conversion).
    let dials = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "dials.reads.example.com"},
        "spec": {"group": "reads.example.com", "scope": "Cluster",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(http.send_json("POST", CRDS, &dials).status, 201);
    let served = common::poll(std::time::Duration::from_secs(10), || {
        (http.get("/apis/reads.example.com/v1/dials").status == 200).then_some(())
    });
    assert!(served.is_some());
    let r = http.get("/apis/reads.example.com/v1/dials?fieldSelector=metadata.namespace%3Dx");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().expect("status")["message"],
        "field label not supported: metadata.namespace"
    );
    assert_eq!(
        http.get("/apis/reads.example.com/v1/dials?fieldSelector=metadata.name%3Dx")
            .status,
        200
    );
    // Supported labels list as ever.
    for path in [
        "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=spec.color%3Dred",
        "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dx",
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1",
    ] {
        assert_eq!(http.get(path).status, 200, "{path}");
    }
}

/// The lines of a watch body.
fn watch_lines(body: &[u8]) -> Vec<&[u8]> {
    body.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect()
}

/// `(type, name, spec.color)` of a watch line, checked to be kube's framing:
/// `{"type":..,"object":<object>}`, the object as serde_json encodes it.
fn watch_event(line: &[u8]) -> (String, String, Value) {
    let text = std::str::from_utf8(line).expect("UTF-8");
    assert!(text.starts_with("{\"type\":\""), "{text}");
    let at = text.find(",\"object\":").expect("object") + ",\"object\":".len();
    let object = &text[at..text.len() - 1];
    let parsed: Value = serde_json::from_str(object).expect("object JSON");
    assert_eq!(serde_json::to_string(&parsed).unwrap(), object);
    let event: Value = serde_json::from_str(text).expect("event JSON");
    (
        event["type"].as_str().unwrap().to_string(),
        parsed["metadata"]["name"].as_str().unwrap().to_string(),
        parsed["spec"]["color"].clone(),
    )
}

/// Watch events of custom resources are made once and shared by every watcher: what
/// a client must never notice. Watchers of one collection get the same bytes, in
/// kube's framing, with the object decorated as a read decorates it (a default of the
/// schema applied); a watcher with a label selector still sees objects come into and
/// out of its selection as ADDED and DELETED; and the last event's object is what a
/// GET (uncached YAML too) answers.
#[test]
fn watchers_share_each_event_and_selectors_still_see_transitions() {
    let server = with_gadgets(Some("red"));
    let http = server.http();
    let list = http.get(GADGETS).json().expect("list");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let watch = |selector: Option<&'static str>| {
        let (http, rv) = (server.http(), rv.clone());
        std::thread::spawn(move || {
            let mut query = vec![("resourceVersion", rv.as_str())];
            query.extend(selector.map(|s| ("labelSelector", s)));
            let r = http.watch_for(GADGETS, 4, &query);
            assert_eq!(r.status, 200, "{}", r.text());
            r.body
        })
    };
    let plain: Vec<_> = (0..3).map(|_| watch(None)).collect();
    let hot = watch(Some("tier=hot"));
    let gadget = |name: &str, tier: &str| {
        json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "labels": {"tier": tier}}, "spec": {"size": 1}})
    };
    for (name, tier) in [("g1", "cold"), ("g2", "hot"), ("g3", "cold")] {
        let r = http.send_json("POST", GADGETS, &gadget(name, tier));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let g1 = format!("{GADGETS}/g1");
    for patch in [
        json!({"metadata": {"labels": {"tier": "hot"}}}),
        json!({"spec": {"size": 2}}),
        json!({"metadata": {"labels": {"tier": "cold"}}}),
    ] {
        let r = http.merge_patch(&g1, &patch);
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let r = http.merge_patch(&format!("{GADGETS}/g3"), &json!({"spec": {"size": 3}}));
    assert_eq!(r.status, 200, "{}", r.text());
    for name in ["g2", "g1"] {
        let r = http.request("DELETE", &format!("{GADGETS}/{name}"), &[], &[], None);
        assert_eq!(r.expect("DELETE").status, 200);
    }
    let plain: Vec<Vec<u8>> = plain.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(plain.iter().all(|b| *b == plain[0]), "watchers differ");
    let events: Vec<_> = watch_lines(&plain[0])
        .into_iter()
        .map(watch_event)
        .collect();
    let seen: Vec<(&str, &str)> = events
        .iter()
        .map(|(t, n, _)| (t.as_str(), n.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("ADDED", "g1"),
            ("ADDED", "g2"),
            ("ADDED", "g3"),
            ("MODIFIED", "g1"),
            ("MODIFIED", "g1"),
            ("MODIFIED", "g1"),
            ("MODIFIED", "g3"),
            ("DELETED", "g2"),
            ("DELETED", "g1"),
        ]
    );
    assert!(
        events.iter().all(|(_, _, color)| color == "red"),
        "{events:?}"
    );
    let hot = hot.join().unwrap();
    let seen: Vec<(String, String)> = watch_lines(&hot)
        .into_iter()
        .map(watch_event)
        .map(|(t, n, _)| (t, n))
        .collect();
    let expected = [
        ("ADDED", "g2"),
        ("ADDED", "g1"),
        ("MODIFIED", "g1"),
        ("DELETED", "g1"),
        ("DELETED", "g2"),
    ];
    assert_eq!(
        seen,
        expected.map(|(t, n)| (t.to_string(), n.to_string())),
        "{}",
        String::from_utf8_lossy(&hot)
    );
    // g3's last event holds what a GET of g3 answers, cached JSON and fresh YAML alike.
    let last_g3 = watch_lines(&plain[0])
        .into_iter()
        .rfind(|l| watch_event(l).1 == "g3")
        .unwrap();
    let text = std::str::from_utf8(last_g3).unwrap();
    let object = &text[text.find(",\"object\":").unwrap() + 10..text.len() - 1];
    let get = http.get(&format!("{GADGETS}/g3"));
    assert_eq!(get.status, 200);
    assert_eq!(get.text().trim_end(), object);
    let mut h = json_accept();
    h.retain(|(k, _)| k != "Accept");
    h.push(("Accept".into(), "application/yaml".into()));
    let yaml = http
        .request("GET", &format!("{GADGETS}/g3"), &[], &h, None)
        .expect("GET");
    let yaml: Value = serde_norway::from_slice(&yaml.body).expect("YAML");
    assert_eq!(yaml, serde_json::from_str::<Value>(object).unwrap());
}

/// A watcher whose client stops reading (issue 24): the server holds no more than a
/// bounded queue for it, closes the watch after `handlers::watch::SLOW_WATCHER`
/// without an error, and the client resumes from the last event it got, missing
/// nothing and getting no 410.
#[test]
fn a_watch_whose_client_stops_reading_is_closed_and_resumes_without_loss() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let server = with_gadgets(None);
    let http = server.http();
    let list = http.get(GADGETS).json().expect("list");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .new_agent();
    let url = format!(
        "{}{GADGETS}?watch=true&timeoutSeconds=120&resourceVersion={rv}",
        http.base()
    );
    let stalled = agent.get(&url).call().expect("watch");
    assert_eq!(stalled.status().as_u16(), 200);

    // Far more than the connection's buffers hold: the watch's queue fills.
    let big = "x".repeat(100_000);
    let count = 300;
    for i in 0..count {
        let body = json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i:03}")}, "spec": {"color": big}});
        let r = http.send_json("POST", GADGETS, &body);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    std::thread::sleep(Duration::from_secs(8));

    // Reading now: what was queued, then the end of the stream (no ERROR).
    let started = Instant::now();
    let mut names = Vec::new();
    let mut last_rv = rv.clone();
    for line in BufReader::new(stalled.into_body().into_reader()).lines() {
        let line = line.expect("watch line");
        let event: Value = serde_json::from_str(&line).expect("event JSON");
        assert_eq!(event["type"], "ADDED", "{}", &line[..line.len().min(300)]);
        names.push(
            event["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        last_rv = event["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the stalled watch was not closed"
    );
    assert!(
        names.len() < count,
        "the stalled watch was not closed early: it sent all {count} events"
    );
    let expected: Vec<String> = (0..count).map(|i| format!("g{i:03}")).collect();
    assert_eq!(
        names[..],
        expected[..names.len()],
        "events out of order or missing"
    );

    // Resuming from the last event it got: the rest, in order, no 410.
    let resumed = http.watch_for(GADGETS, 3, &[("resourceVersion", last_rv.as_str())]);
    assert_eq!(resumed.status, 200, "{}", resumed.text());
    let rest: Vec<String> = watch_lines(&resumed.body)
        .into_iter()
        .map(|line| {
            let event: Value = serde_json::from_slice(line).expect("event JSON");
            assert_eq!(event["type"], "ADDED", "{event}");
            event["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(rest[..], expected[names.len()..]);
}

/// Built-in kinds are read through the same served-bytes cache and shared watch
/// events (their conversion to the served version is a pure function of the stored
/// object): a JSON GET or list equals the uncached YAML form, one stored Event read in
/// turn as core/v1 and as events.k8s.io/v1 keeps each version's own form, and watchers
/// of ConfigMaps get the same bytes.
#[test]
fn built_in_kinds_read_through_the_cache_keep_each_versions_form() {
    let server = TestServer::start();
    let http = server.http();
    let yaml = |path: &str| -> Value {
        let h = vec![("Accept".to_string(), "application/yaml".to_string())];
        let r = http.request("GET", path, &[], &h, None).expect("GET");
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        serde_norway::from_slice(&r.body).expect("YAML")
    };
    const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
    let list = http.get(CONFIGMAPS).json().expect("list");
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watch = || {
        let (http, rv) = (server.http(), rv.clone());
        std::thread::spawn(move || {
            let r = http.watch_for(CONFIGMAPS, 3, &[("resourceVersion", rv.as_str())]);
            assert_eq!(r.status, 200, "{}", r.text());
            r.body
        })
    };
    let watchers: Vec<_> = (0..3).map(|_| watch()).collect();
    for i in 0..3 {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm{i}")}, "data": {"k": format!("v{i}")}});
        let r = http.send_json("POST", CONFIGMAPS, &cm);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    for _ in 0..2 {
        let got = http.get(&format!("{CONFIGMAPS}/cm1"));
        assert_eq!(got.status, 200);
        assert_eq!(
            got.json().expect("JSON"),
            yaml(&format!("{CONFIGMAPS}/cm1"))
        );
    }
    assert_same_list(
        &http.get(CONFIGMAPS).json().expect("list"),
        &yaml(CONFIGMAPS),
    );
    let bodies: Vec<Vec<u8>> = watchers.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(bodies.iter().all(|b| *b == bodies[0]), "watchers differ");
    let names: Vec<String> = watch_lines(&bodies[0])
        .into_iter()
        .map(|line| {
            let event: Value = serde_json::from_slice(line).expect("event");
            assert_eq!(event["type"], "ADDED", "{event}");
            assert_eq!(event["object"]["kind"], "ConfigMap", "{event}");
            event["object"]["metadata"]["name"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(names, ["cm0", "cm1", "cm2"]);

    // One stored Event, two served versions, read in turn.
    let core = "/api/v1/namespaces/default/events";
    let event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e1"}, "reason": "Tested", "message": "hello",
        "involvedObject": {"kind": "ConfigMap", "name": "cm1", "namespace": "default"},
        "type": "Normal"});
    let r = http.send_json("POST", core, &event);
    assert_eq!(r.status, 201, "{}", r.text());
    let v1 = "/apis/events.k8s.io/v1/namespaces/default/events";
    for _ in 0..2 {
        for (path, api_version) in [(core, "v1"), (v1, "events.k8s.io/v1")] {
            let got = http.get(&format!("{path}/e1"));
            assert_eq!(got.status, 200, "{}", got.text());
            let got = got.json().expect("JSON");
            assert_eq!(got["apiVersion"], api_version, "{got}");
            assert_eq!(got, yaml(&format!("{path}/e1")));
        }
    }
}

/// kube's list `resourceVersion` semantics: `Exact`, and (legacy) a revision with a
/// `limit` but no match, read at that revision; a revision without `limit`, or with
/// `NotOlderThan`, at least as new (here the newest); `0` any.
#[test]
fn list_resource_versions_read_exactly_or_at_least_as_kube_does() {
    let server = with_gadgets(None);
    let http = server.http();
    for name in ["g0", "g1"] {
        let g = json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"size": 1}});
        let r = http.send_json("POST", GADGETS, &g);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let list = |query: &str| -> Value {
        let r = http.get(&format!("{GADGETS}?{query}"));
        assert_eq!(r.status, 200, "{query}: {}", r.text());
        r.json().unwrap()
    };
    let rv_of = |v: &Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let g0_in = |l: &Value| rv_of(&l["items"][0]);
    let before = list("");
    let old = g0_in(&before);
    let r = http.merge_patch(&format!("{GADGETS}/g0"), &json!({"spec": {"size": 2}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let new = rv_of(&r.json().unwrap());
    let at = rv_of(&before);
    for query in [
        format!("resourceVersion={at}&resourceVersionMatch=Exact"),
        format!("resourceVersion={at}&limit=10"),
    ] {
        let l = list(&query);
        assert_eq!((g0_in(&l), rv_of(&l)), (old.clone(), at.clone()), "{query}");
    }
    for query in [
        format!("resourceVersion={at}"),
        format!("resourceVersion={at}&resourceVersionMatch=NotOlderThan&limit=10"),
        "resourceVersion=0".to_owned(),
        "resourceVersion=0&limit=10".to_owned(),
    ] {
        let l = list(&query);
        assert_eq!(g0_in(&l), new, "{query}");
        assert!(rv_of(&l).parse::<i64>().unwrap() >= new.parse::<i64>().unwrap());
    }
}

/// A list pinned to one name reads that object's keys only: names that merely start
/// with it (`g1`, `g10`), other namespaces and cluster-wide lists still answer as a
/// full scan would.
#[test]
fn lists_by_name_answer_exactly_that_object() {
    let server = with_gadgets(None);
    let http = server.http();
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "other"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    for (ns, name) in [
        ("default", "g"),
        ("default", "g1"),
        ("default", "g10"),
        ("other", "g"),
    ] {
        let g = json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": ns}, "spec": {"size": 1}});
        let path = format!("/apis/reads.example.com/v1/namespaces/{ns}/gadgets");
        let r = http.send_json("POST", &path, &g);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let names = |path: &str| -> Vec<(String, String)> {
        items_of(&http, path)
            .iter()
            .map(|o| {
                (
                    o["metadata"]["namespace"].as_str().unwrap().to_owned(),
                    o["metadata"]["name"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let pair = |ns: &str, n: &str| (ns.to_owned(), n.to_owned());
    assert_eq!(
        names(&format!("{GADGETS}?fieldSelector=metadata.name%3Dg")),
        [pair("default", "g")]
    );
    assert_eq!(
        names(&format!("{GADGETS}?fieldSelector=metadata.name%3Dg1")),
        [pair("default", "g1")]
    );
    assert_eq!(
        names("/apis/reads.example.com/v1/gadgets?fieldSelector=metadata.name%3Dg"),
        [pair("default", "g"), pair("other", "g")]
    );
    assert!(names(&format!("{GADGETS}?fieldSelector=metadata.name%3Dg2")).is_empty());
    assert_eq!(
        names(&format!("{GADGETS}?fieldSelector=metadata.name!%3Dg")),
        [pair("default", "g1"), pair("default", "g10")]
    );
    // CRDs (cluster-scoped) by name, as `kubectl wait` asks.
    let crds = names_of(
        &http,
        &format!("{CRDS}?fieldSelector=metadata.name%3Dgadgets.reads.example.com"),
    );
    assert_eq!(crds, ["gadgets.reads.example.com"]);
    assert!(names_of(
        &http,
        &format!("{CRDS}?fieldSelector=metadata.name%3Dgadgets")
    )
    .is_empty());
}

fn names_of(http: &common::Http, path: &str) -> Vec<String> {
    items_of(http, path)
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The `items` of the list at `path` (200).
fn items_of(http: &common::Http, path: &str) -> Vec<Value> {
    let r = http.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json().unwrap()["items"].as_array().unwrap().clone()
}
