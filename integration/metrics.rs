//! `/metrics` end to end: a real server, a known sequence of requests, then a scrape
//! whose counters, histograms and gauges must account for exactly those requests, with
//! kube-apiserver's metric names, labels and verb spellings.

mod common;

use common::{json_accept, poll, Http, TestServer};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TIMEOUT: Duration = Duration::from_secs(30);
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A scrape: every sample line as `name{labels}` → value; the raw text for messages.
struct Scrape {
    samples: HashMap<String, f64>,
    text: String,
}

impl Scrape {
    fn take(http: &Http) -> Scrape {
        let r = http
            .request("GET", "/metrics", &[], &[], None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let ct = r.header("content-type").unwrap_or_default();
        assert!(
            ct.starts_with("text/plain; version=0.0.4"),
            "content-type {ct}"
        );
        let text = r.text();
        Scrape {
            samples: parse_exposition(&text),
            text,
        }
    }

    fn value(&self, series: &str) -> Option<f64> {
        self.samples.get(series).copied()
    }

    fn expect(&self, series: &str, want: f64) {
        assert_eq!(
            self.value(series),
            Some(want),
            "{series} in\n{}",
            self.relevant(series)
        );
    }

    /// The lines of the family `series` belongs to, for failure messages.
    fn relevant(&self, series: &str) -> String {
        let name = series.split('{').next().unwrap_or(series);
        self.text
            .lines()
            .filter(|l| l.starts_with(name))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Parses the text format strictly enough to catch malformed output: comments are
/// `# HELP`/`# TYPE`, every sample is `name{k="v",...} value` with a float value, and
/// every sample's family was declared by a `# TYPE` line before it.
fn parse_exposition(text: &str) -> HashMap<String, f64> {
    let mut declared: Vec<String> = Vec::new();
    let mut out = HashMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (kind, name) = (words.next(), words.next());
            assert!(
                matches!(kind, Some("HELP" | "TYPE")),
                "bad comment line {line:?}"
            );
            if kind == Some("TYPE") {
                let t = words.next().unwrap_or("");
                assert!(
                    matches!(t, "counter" | "gauge" | "histogram"),
                    "bad type in {line:?}"
                );
                declared.push(name.unwrap_or("").to_owned());
            }
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("bad sample line {line:?}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v
                .parse()
                .unwrap_or_else(|_| panic!("bad value in {line:?}")),
        };
        let name = series.split('{').next().unwrap_or("");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad metric name in {line:?}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| declared.iter().any(|d| d == f))
            })
            .unwrap_or(name);
        assert!(
            declared.iter().any(|d| d == family),
            "{name} has no # TYPE line before it"
        );
        if let Some(labels) = series.strip_prefix(name) {
            if !labels.is_empty() {
                assert!(
                    labels.starts_with('{') && labels.ends_with('}'),
                    "bad labels in {line:?}"
                );
            }
        }
        assert!(
            out.insert(series.to_owned(), value).is_none(),
            "duplicate series {series}"
        );
    }
    out
}

/// `apiserver_request_total` for the widgets resource.
fn widget_requests(code: u16, dry_run: &str, scope: &str, verb: &str) -> String {
    format!(
        "apiserver_request_total{{code=\"{code}\",component=\"apiserver\",dry_run=\"{dry_run}\",\
         group=\"example.com\",resource=\"widgets\",scope=\"{scope}\",subresource=\"\",\
         system_client=\"\",verb=\"{verb}\",version=\"v1\"}}"
    )
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}
                    }}}
                }}
            }]
        }
    })
}

fn widget(name: &str) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": 1}
    })
}

fn send(http: &Http, method: &str, path: &str, content_type: &str, body: &Value) -> u16 {
    let mut headers = json_accept();
    headers.push(("Content-Type".into(), content_type.into()));
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    http.request(method, path, &[], &headers, Some(bytes))
        .unwrap_or_else(|e| panic!("{e}"))
        .status
}

fn prepare(server: &TestServer) -> Http {
    let http = server.http();
    let r = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &widget_crd(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.wait_for_status(WIDGETS, 200, TIMEOUT);
    assert_eq!(r.status, 200, "{}", r.text());
    http
}

#[test]
fn request_counts_by_kube_verb_code_and_scope() {
    let server = TestServer::start();
    let http = prepare(&server);
    // The probe above listed the collection at least once; count from here on.
    let before = Scrape::take(&http);
    let lists_before = before
        .value(&widget_requests(200, "", "namespace", "LIST"))
        .unwrap_or(0.0);

    for name in ["a", "b", "c"] {
        assert_eq!(http.send_json("POST", WIDGETS, &widget(name)).status, 201);
    }
    assert_eq!(http.get(&format!("{WIDGETS}/a")).status, 200);
    assert_eq!(http.get(&format!("{WIDGETS}/b")).status, 200);
    assert_eq!(http.get(&format!("{WIDGETS}/missing")).status, 404);
    // Resources nobody serves are not counted (a client could grow the series without
    // bound), nor a version the CRD does not serve.
    for path in [
        "/apis/example.com/v1/namespaces/default/gadgets/g",
        "/apis/example.com/v9/namespaces/default/widgets/a",
        "/apis/nosuch.example.com/v1/things",
    ] {
        assert_eq!(http.get(path).status, 404, "{path}");
    }
    assert_eq!(http.get(WIDGETS).status, 200);
    let current = http.get(&format!("{WIDGETS}/a")).json().unwrap_or_default();
    let mut updated = current.clone();
    updated["spec"]["size"] = json!(2);
    assert_eq!(
        http.send_json("PUT", &format!("{WIDGETS}/a"), &updated)
            .status,
        200
    );
    assert_eq!(
        send(
            &http,
            "PATCH",
            &format!("{WIDGETS}/b"),
            "application/merge-patch+json",
            &json!({"spec": {"size": 3}})
        ),
        200
    );
    let r = http
        .request(
            "PATCH",
            &format!("{WIDGETS}/c"),
            &[
                ("fieldManager".into(), "metrics-test".into()),
                ("force".into(), "true".into()),
            ],
            &[(
                "Content-Type".into(),
                "application/apply-patch+yaml".into(),
            )],
            Some(b"apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: c\nspec:\n  size: 4\n".to_vec()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http
        .request(
            "POST",
            WIDGETS,
            &[("dryRun".into(), "All".into())],
            &[("Content-Type".into(), "application/json".into())],
            Some(serde_json::to_vec(&widget("dry")).unwrap_or_default()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        http.request("DELETE", &format!("{WIDGETS}/c"), &[], &json_accept(), None)
            .unwrap_or_else(|e| panic!("{e}"))
            .status,
        200
    );

    let s = Scrape::take(&http);
    s.expect(&widget_requests(201, "", "resource", "POST"), 3.0);
    s.expect(&widget_requests(201, "All", "resource", "POST"), 1.0);
    s.expect(&widget_requests(200, "", "resource", "GET"), 3.0);
    s.expect(&widget_requests(404, "", "resource", "GET"), 1.0);
    s.expect(
        &widget_requests(200, "", "namespace", "LIST"),
        lists_before + 1.0,
    );
    s.expect(&widget_requests(200, "", "resource", "PUT"), 1.0);
    s.expect(&widget_requests(200, "", "resource", "PATCH"), 1.0);
    s.expect(&widget_requests(200, "", "resource", "APPLY"), 1.0);
    s.expect(&widget_requests(200, "", "resource", "DELETE"), 1.0);
    for unserved in [
        "resource=\"gadgets\"",
        "version=\"v9\"",
        "group=\"nosuch.example.com\"",
    ] {
        assert!(
            !s.text.contains(unserved),
            "a request nobody serves was counted: {unserved}"
        );
    }

    // Latency: one histogram series per verb and scope, 4 GETs (both codes) in it.
    let get_series = "component=\"apiserver\",dry_run=\"\",group=\"example.com\",\
                      resource=\"widgets\",scope=\"resource\",subresource=\"\",verb=\"GET\",\
                      version=\"v1\"";
    s.expect(
        &format!("apiserver_request_duration_seconds_count{{{get_series}}}"),
        4.0,
    );
    s.expect(
        &format!("apiserver_request_duration_seconds_bucket{{{get_series},le=\"+Inf\"}}"),
        4.0,
    );
    s.expect(
        &format!("apiserver_request_duration_seconds_bucket{{{get_series},le=\"60\"}}"),
        4.0,
    );
    // Response sizes are kept for reads only (kube: GET and LIST).
    let size_series = "component=\"apiserver\",group=\"example.com\",resource=\"widgets\",\
                       scope=\"resource\",subresource=\"\",verb=\"GET\",version=\"v1\"";
    s.expect(
        &format!("apiserver_response_sizes_count{{{size_series}}}"),
        4.0,
    );
    assert!(
        !s.text.contains("apiserver_response_sizes_count{component=\"apiserver\",group=\"example.com\",resource=\"widgets\",scope=\"resource\",subresource=\"\",verb=\"POST\""),
        "writes have no response sizes"
    );

    // Stored objects: a and b (c was deleted, the dry run stored nothing).
    s.expect(
        "apiserver_storage_objects{resource=\"widgets.example.com\"}",
        2.0,
    );
    s.expect(
        "apiserver_resource_objects{group=\"example.com\",resource=\"widgets\"}",
        2.0,
    );
    s.expect(
        "apiserver_storage_objects{resource=\"customresourcedefinitions.apiextensions.k8s.io\"}",
        1.0,
    );
    assert!(
        s.value("apiserver_storage_objects{resource=\"namespaces\"}")
            .is_some_and(|n| n >= 1.0),
        "{}",
        s.relevant("apiserver_storage_objects")
    );

    // Storage latency, kube's etcd metric names, by operation and group-resource.
    let creates = s
        .value("etcd_request_duration_seconds_count{group=\"example.com\",operation=\"create\",resource=\"widgets\"}")
        .unwrap_or(0.0);
    assert!(
        creates >= 3.0,
        "{}",
        s.relevant("etcd_request_duration_seconds_count")
    );

    // Unknown resources are not series (kube never routes them to an instrumented handler).
    assert_eq!(
        http.get("/apis/example.com/v1/namespaces/default/nothings")
            .status,
        404
    );
    let s = Scrape::take(&http);
    assert!(!s.text.contains("resource=\"nothings\""));

    // Histograms are cumulative and their +Inf bucket is their count.
    for (series, count) in &s.samples {
        let Some(rest) = series.strip_suffix('}') else {
            continue;
        };
        if let Some((name, labels)) = rest.split_once("_count{") {
            let inf = format!("{name}_bucket{{{labels},le=\"+Inf\"}}");
            if let Some(v) = s.value(&inf) {
                assert_eq!(v, *count, "{inf}");
            }
        }
    }
}

#[test]
fn watches_are_long_running_and_counted_when_they_end() {
    let server = TestServer::start();
    let http = prepare(&server);
    let watch_http = http.clone();
    let watcher = thread::spawn(move || {
        watch_http
            .request(
                "GET",
                WIDGETS,
                &[
                    ("watch".into(), "true".into()),
                    ("timeoutSeconds".into(), "3".into()),
                ],
                &json_accept(),
                None,
            )
            .map(|r| r.status)
    });
    let gauge = "apiserver_longrunning_requests{component=\"apiserver\",group=\"example.com\",\
                 resource=\"widgets\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",\
                 version=\"v1\"}";
    let open = poll(TIMEOUT, || {
        (Scrape::take(&http).value(gauge) == Some(1.0)).then_some(())
    });
    assert!(open.is_some(), "the open watch never showed in {gauge}");
    // While it is open it is not counted as finished.
    let s = Scrape::take(&http);
    assert_eq!(
        s.value(&widget_requests(200, "", "namespace", "WATCH")),
        None
    );

    let status = watcher.join().ok().and_then(Result::ok);
    assert_eq!(status, Some(200));
    let closed = poll(TIMEOUT, || {
        let s = Scrape::take(&http);
        (s.value(gauge) == Some(0.0)
            && s.value(&widget_requests(200, "", "namespace", "WATCH")) == Some(1.0))
        .then_some(s)
    });
    let s = closed.unwrap_or_else(|| panic!("the watch was not counted once it ended"));
    // Its whole duration (about 3 s) is its latency.
    let series = "component=\"apiserver\",dry_run=\"\",group=\"example.com\",\
                  resource=\"widgets\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\",\
                  version=\"v1\"";
    s.expect(
        &format!("apiserver_request_duration_seconds_bucket{{{series},le=\"1\"}}"),
        0.0,
    );
    s.expect(
        &format!("apiserver_request_duration_seconds_bucket{{{series},le=\"60\"}}"),
        1.0,
    );
}

#[test]
fn health_checks_and_process_metrics() {
    let server = TestServer::start();
    let http = server.http();
    assert_eq!(http.get("/readyz").status, 200);
    let s = Scrape::take(&http);
    // kube instruments health checks with an empty component and the path as subresource.
    let readyz = "apiserver_request_total{code=\"200\",component=\"\",dry_run=\"\",group=\"\",\
                  resource=\"\",scope=\"\",subresource=\"/readyz\",system_client=\"\",\
                  verb=\"GET\",version=\"\"}";
    assert!(
        s.value(readyz).is_some_and(|n| n >= 1.0),
        "{}",
        s.relevant(readyz)
    );
    let rss = s.value("process_resident_memory_bytes").unwrap_or(0.0);
    assert!(rss > 1e6, "process_resident_memory_bytes {rss}");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let start = s.value("process_start_time_seconds").unwrap_or(0.0);
    assert!(
        start <= now + 1.0 && start > now - 600.0,
        "process_start_time_seconds {start}, now {now}"
    );
    // Both request kinds of kube's in-flight gauge are always there.
    assert!(s
        .value("apiserver_current_inflight_requests{request_kind=\"readOnly\"}")
        .is_some());
    assert!(s
        .value("apiserver_current_inflight_requests{request_kind=\"mutating\"}")
        .is_some());
}
