//! Multi-version CRDs end to end (issue 8 part B): a CRD with a deprecated `v1beta1`, a
//! storage `v1` and a deprecated `v1alpha1` with its own warning text. Objects are
//! stored in the storage version and served in the addressed one (conversion strategy
//! `None`): `apiVersion` rewritten, pruned by the addressed version's schema, defaulted
//! by the storage version's (kube's storage codec). Requests to a deprecated version
//! carry kube's `Warning`; `status.storedVersions` grows as the storage version moves;
//! printer columns and OpenAPI are per version.
//!
//! Strategy `Webhook` (issue 8): a CRD with a storage `v1` (`spec.size`) and a served
//! `v2` (`spec.replicas`) whose conversion webhook, a real HTTPS server started by the
//! test with its own CA, renames the field. Expected texts are kube's
//! (`apiextensions-apiserver/pkg/apiserver/conversion/webhook_converter.go`; a failed
//! conversion is no API status, so kube answers 500 with no reason).

mod common;

use std::time::Duration;

use common::webhook::{HttpsWebhookServer, Reply};
use common::{HttpResponse, TestServer};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com";
const V1: &str = "/apis/example.com/v1/namespaces/default/widgets";
const V1BETA1: &str = "/apis/example.com/v1beta1/namespaces/default/widgets";
const V1ALPHA1: &str = "/apis/example.com/v1alpha1/namespaces/default/widgets";

/// kube's default text for the deprecated v1beta1 (it names the newer served v1).
const BETA_WARNING: &str =
    "299 - \"example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget\"";
const ALPHA_WARNING: &str = "299 - \"v1alpha1 widgets go away in 2027\"";

fn schema(spec_properties: Value) -> Value {
    json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec_properties}
    }}})
}

/// v1alpha1 and v1beta1 know `spec.size` and `spec.legacy`; v1 knows `spec.size` and
/// `spec.color` (default `blue`). v1 is the storage version.
fn widget_crd() -> Value {
    let old_fields = json!({"size": {"type": "integer"}, "legacy": {"type": "string"}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
                 "deprecationWarning": "v1alpha1 widgets go away in 2027",
                 "schema": schema(old_fields.clone())},
                {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
                 "schema": schema(old_fields),
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                 ]},
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"size": {"type": "integer"},
                                          "color": {"type": "string", "default": "blue"}})),
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                     {"name": "Color", "type": "string", "jsonPath": ".spec.color"}
                 ]}
            ]
        }
    })
}

fn widget(api_version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": "Widget",
           "metadata": {"name": name}, "spec": spec})
}

/// A server serving the widget CRD through all three versions.
fn server() -> TestServer {
    let server = TestServer::start();
    let http = server.http();
    let created = http.send_json("POST", CRDS, &widget_crd());
    assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
    for path in [V1, V1BETA1, V1ALPHA1] {
        let served = http.wait_for_status(path, 200, Duration::from_secs(20));
        assert_eq!(served.status, 200, "{path} not served: {}", served.text());
    }
    server
}

fn body(r: &HttpResponse) -> Value {
    r.json()
        .unwrap_or_else(|| panic!("not JSON ({}): {}", r.status, r.text()))
}

fn get_ok(server: &TestServer, path: &str) -> Value {
    let r = server.http().get(path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    body(&r)
}

#[test]
fn created_through_v1beta1_is_read_through_v1_with_v1_defaults() {
    let server = server();
    let http = server.http();
    let created = http.send_json(
        "POST",
        V1BETA1,
        &widget(
            "example.com/v1beta1",
            "w1",
            json!({"size": 3, "legacy": "x"}),
        ),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.header("warning").as_deref(), Some(BETA_WARNING));
    // Stored as v1 (which has no `legacy`), served back as v1beta1 (which has no `color`).
    let obj = body(&created);
    assert_eq!(obj["apiVersion"], "example.com/v1beta1");
    assert_eq!(obj["spec"], json!({"size": 3}));

    let r = http.get(&format!("{V1}/w1"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.header("warning"), None, "v1 is not deprecated");
    let v1 = body(&r);
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"], json!({"size": 3, "color": "blue"}));
    assert_eq!(
        v1["metadata"]["resourceVersion"],
        obj["metadata"]["resourceVersion"]
    );

    let beta = get_ok(&server, &format!("{V1BETA1}/w1"));
    assert_eq!(beta["apiVersion"], "example.com/v1beta1");
    assert_eq!(beta["spec"], json!({"size": 3}));
}

#[test]
fn updated_through_v1beta1_keeps_v1_fields_defaulted() {
    let server = server();
    let http = server.http();
    let created = http.send_json(
        "POST",
        V1,
        &widget("example.com/v1", "w1", json!({"size": 1, "color": "red"})),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    // A v1beta1 client cannot see `color`: its PUT writes an object without it, and
    // the v1 default fills it back in on the next read (conversion `None` is lossy).
    let mut beta = get_ok(&server, &format!("{V1BETA1}/w1"));
    assert_eq!(beta["spec"], json!({"size": 1}));
    beta["spec"]["size"] = json!(2);
    let put = http.send_json("PUT", &format!("{V1BETA1}/w1"), &beta);
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(put.header("warning").as_deref(), Some(BETA_WARNING));
    assert_eq!(body(&put)["apiVersion"], "example.com/v1beta1");
    let v1 = get_ok(&server, &format!("{V1}/w1"));
    assert_eq!(v1["spec"], json!({"size": 2, "color": "blue"}));
}

#[test]
fn list_and_watch_show_the_requested_api_version() {
    let server = server();
    let http = server.http();
    for (path, api_version, name) in [
        (V1, "example.com/v1", "a"),
        (V1BETA1, "example.com/v1beta1", "b"),
    ] {
        let r = http.send_json("POST", path, &widget(api_version, name, json!({"size": 1})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    for (path, api_version) in [
        (V1, "example.com/v1"),
        (V1BETA1, "example.com/v1beta1"),
        (V1ALPHA1, "example.com/v1alpha1"),
    ] {
        let list = get_ok(&server, path);
        assert_eq!(list["apiVersion"], api_version, "list via {path}");
        assert_eq!(list["kind"], "WidgetList");
        let items = list["items"].as_array().cloned().unwrap_or_default();
        assert_eq!(items.len(), 2, "list via {path}: {list}");
        for item in &items {
            assert_eq!(item["apiVersion"], api_version, "item via {path}");
        }

        let query = [
            ("watch".to_string(), "true".to_string()),
            ("timeoutSeconds".to_string(), "1".to_string()),
        ];
        let watched = http
            .request("GET", path, &query, &common::json_accept(), None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(watched.status, 200, "watch via {path}: {}", watched.text());
        let events: Vec<Value> = watched
            .text()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("event {l}: {e}")))
            .collect();
        assert_eq!(events.len(), 2, "watch via {path}: {events:?}");
        for e in &events {
            assert_eq!(e["type"], "ADDED");
            assert_eq!(e["object"]["apiVersion"], api_version, "event via {path}");
        }
    }
}

#[test]
fn deprecated_versions_warn_on_every_request() {
    let server = server();
    let http = server.http();
    // Reads, writes and errors alike; the custom text replaces kube's default.
    let missing = http.get(&format!("{V1BETA1}/missing"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("warning").as_deref(), Some(BETA_WARNING));
    let list = http.get(V1ALPHA1);
    assert_eq!(list.status, 200);
    assert_eq!(list.header("warning").as_deref(), Some(ALPHA_WARNING));
    let created = http.send_json(
        "POST",
        V1ALPHA1,
        &widget("example.com/v1alpha1", "w1", json!({"size": 1})),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.header("warning").as_deref(), Some(ALPHA_WARNING));
    let deleted = http
        .request(
            "DELETE",
            &format!("{V1ALPHA1}/w1"),
            &[],
            &common::json_accept(),
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_eq!(deleted.header("warning").as_deref(), Some(ALPHA_WARNING));
    assert_eq!(http.get(V1).header("warning"), None);
}

#[test]
fn stored_versions_grow_when_the_storage_version_changes() {
    let server = server();
    let http = server.http();
    let crd = get_ok(&server, CRD);
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));

    // Move storage to v1beta1.
    let mut updated = crd;
    if let Some(versions) = updated["spec"]["versions"].as_array_mut() {
        for v in versions {
            let storage = v["name"] == "v1beta1";
            v["storage"] = json!(storage);
        }
    }
    let put = http.send_json("PUT", CRD, &updated);
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(
        body(&put)["status"]["storedVersions"],
        json!(["v1", "v1beta1"])
    );

    // Now a v1 write is stored as v1beta1: `color` does not survive, and v1's default
    // is not applied on read (kube defaults by the version the object is stored in).
    let mut attempt = 0;
    let written = common::poll(Duration::from_secs(20), || {
        attempt += 1;
        let name = format!("w{attempt}");
        let r = http.send_json(
            "POST",
            V1,
            &widget("example.com/v1", &name, json!({"size": 5, "color": "red"})),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let o = body(&r);
        (o["spec"] == json!({"size": 5})).then_some(o)
    });
    let written = written.unwrap_or_else(|| panic!("v1 writes still keep color"));
    assert_eq!(written["apiVersion"], "example.com/v1");
    let beta = get_ok(
        &server,
        &format!(
            "{V1BETA1}/{}",
            written["metadata"]["name"].as_str().unwrap_or_default()
        ),
    );
    assert_eq!(beta["spec"], json!({"size": 5}));
}

#[test]
fn kubectl_get_prints_each_versions_columns() {
    let server = server();
    let http = server.http();
    let r = http.send_json(
        "POST",
        V1,
        &widget("example.com/v1", "w1", json!({"size": 4, "color": "green"})),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    let out = server.kubectl(&["get", "widgets.v1beta1.example.com"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let header: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    // A version that lists printer columns gets no implicit AGE column (kube).
    assert_eq!(header, ["NAME", "SIZE"], "{stdout}");
    assert!(
        stderr.contains(
            "Warning: example.com/v1beta1 Widget is deprecated; use example.com/v1 Widget"
        ),
        "{stderr}"
    );

    let out = server.kubectl(&["get", "widgets.v1.example.com"]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}");
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SIZE", "COLOR"], "{stdout}");
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(row, ["w1", "4", "green"], "{stdout}");
    assert!(out.stderr.is_empty(), "no warning for v1");
}

#[test]
fn openapi_v3_is_per_version() {
    let server = server();
    let beta = get_ok(&server, "/openapi/v3/apis/example.com/v1beta1");
    let spec = &beta["components"]["schemas"]["com.example.v1beta1.Widget"]["properties"]["spec"]
        ["properties"];
    assert!(spec.get("legacy").is_some(), "{spec}");
    assert!(spec.get("color").is_none(), "{spec}");

    let v1 = get_ok(&server, "/openapi/v3/apis/example.com/v1");
    let spec =
        &v1["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["properties"];
    assert_eq!(spec["color"]["default"], "blue", "{spec}");
    assert!(spec.get("legacy").is_none(), "{spec}");
}

#[test]
fn unserved_versions_are_not_found_and_leave_discovery() {
    let server = server();
    let http = server.http();
    let group = get_ok(&server, "/apis/example.com");
    assert_eq!(
        group["versions"],
        json!([
            {"groupVersion": "example.com/v1", "version": "v1"},
            {"groupVersion": "example.com/v1beta1", "version": "v1beta1"},
            {"groupVersion": "example.com/v1alpha1", "version": "v1alpha1"}
        ])
    );
    assert_eq!(group["preferredVersion"]["version"], "v1");

    let mut crd = get_ok(&server, CRD);
    crd["spec"]["versions"][0]["served"] = json!(false);
    let put = http.send_json("PUT", CRD, &crd);
    assert_eq!(put.status, 200, "{}", put.text());
    let gone = http.wait_for_status(V1ALPHA1, 404, Duration::from_secs(20));
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert_eq!(
        gone.header("warning"),
        None,
        "no warning for a version not served"
    );
    let group = get_ok(&server, "/apis/example.com");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v["version"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(versions, ["v1", "v1beta1"]);
    let r = http.get("/apis/example.com/v1alpha1");
    assert_eq!(r.status, 404, "{}", r.text());
}

// ---------------------------------------------------------------------------------
// Strategy `Webhook`.

const CONV_CRDS: &str = "/apis/conv.example.com";
const CONV_V1: &str = "/apis/conv.example.com/v1/namespaces/default/widgets";
const CONV_V2: &str = "/apis/conv.example.com/v2/namespaces/default/widgets";

/// What the test's conversion webhook does besides renaming the field.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Only the rename (and `apiVersion`).
    Convert,
    /// Also renames the object (kube refuses the answer).
    Rename,
    /// Also adds a label (kept) and changes `generation` (restored by kube).
    Label,
}

/// A conversion webhook renaming `spec.size` (v1) ↔ `spec.replicas` (v2).
fn converter(mode: Arc<Mutex<Mode>>) -> Reply {
    Arc::new(move |_path, review| {
        let request = &review["request"];
        let desired = request["desiredAPIVersion"].as_str().unwrap_or_default();
        let mode = mode.lock().map(|m| *m).unwrap_or(Mode::Convert);
        let (from, to) = if desired.ends_with("/v2") {
            ("size", "replicas")
        } else {
            ("replicas", "size")
        };
        let converted: Vec<Value> = request["objects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|o| {
                let mut o = o.clone();
                if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
                    if let Some(v) = spec.remove(from) {
                        spec.insert(to.into(), v);
                    }
                }
                o["apiVersion"] = json!(desired);
                match mode {
                    Mode::Convert => {}
                    Mode::Rename => o["metadata"]["name"] = json!("renamed"),
                    Mode::Label => {
                        o["metadata"]["labels"]["converted-by"] = json!("webhook");
                        o["metadata"]["generation"] = json!(42);
                    }
                }
                o
            })
            .collect();
        Some(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": converted,
                         "result": {"status": "Success"}}
        }))
    })
}

fn conversion_crd(webhook: &HttpsWebhookServer) -> Value {
    let int = json!({"type": "integer"});
    let string = json!({"type": "string"});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conv.example.com"},
        "spec": {
            "group": "conv.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": webhook.client_config("/convert"),
                "conversionReviewVersions": ["v1"]
            }},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"size": int, "color": string})),
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size"}
                 ]},
                {"name": "v2", "served": true, "storage": false,
                 "schema": schema(json!({"replicas": int, "color": string})),
                 "additionalPrinterColumns": [
                     {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}
                 ]}
            ]
        }
    })
}

/// A server serving the webhook-converted CRD, its webhook, and the webhook's mode.
struct Converting {
    server: TestServer,
    webhook: HttpsWebhookServer,
    mode: Arc<Mutex<Mode>>,
}

impl Converting {
    fn start() -> Converting {
        Converting::start_on(HttpsWebhookServer::start)
    }

    /// As `start`, the webhook started by `serve` with the converter as its reply.
    fn start_on(serve: impl FnOnce(Reply) -> HttpsWebhookServer) -> Converting {
        let mode = Arc::new(Mutex::new(Mode::Convert));
        let webhook = serve(converter(mode.clone()));
        let server = TestServer::start();
        let http = server.http();
        let created = http.send_json("POST", CRDS, &conversion_crd(&webhook));
        assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
        for path in [CONV_V1, CONV_V2] {
            let served = http.wait_for_status(path, 200, Duration::from_secs(20));
            assert_eq!(served.status, 200, "{path} not served: {}", served.text());
        }
        webhook.clear();
        Converting {
            server,
            webhook,
            mode,
        }
    }

    fn set_mode(&self, mode: Mode) {
        if let Ok(mut m) = self.mode.lock() {
            *m = mode;
        }
    }

    /// The `ConversionReview` requests the webhook received, then forget them.
    fn take_reviews(&self) -> Vec<Value> {
        let reviews = self
            .webhook
            .requests()
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        self.webhook.clear();
        reviews
    }

    fn create(&self, path: &str, api_version: &str, name: &str, spec: Value) -> Value {
        let r = self
            .server
            .http()
            .send_json("POST", path, &widget(api_version, name, spec));
        assert_eq!(r.status, 201, "creating {name} via {path}: {}", r.text());
        body(&r)
    }
}

/// The names and desired versions of the objects of one review.
fn review_summary(review: &Value) -> (String, Vec<String>) {
    let desired = review["request"]["desiredAPIVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let names = review["request"]["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    (desired, names)
}

#[test]
fn webhook_converts_between_versions_on_create_get_and_update() {
    let t = Converting::start();
    let http = t.server.http();

    // Created via the storage version: no conversion at all.
    let created = t.create(CONV_V1, "conv.example.com/v1", "w1", json!({"size": 3}));
    assert_eq!(created["spec"], json!({"size": 3}));
    assert_eq!(t.take_reviews(), Vec::<Value>::new());

    // Read via v2: one review with the stored object, in kube's ConversionReview v1.
    let v2 = get_ok(&t.server, &format!("{CONV_V2}/w1"));
    assert_eq!(v2["apiVersion"], "conv.example.com/v2");
    assert_eq!(v2["spec"], json!({"replicas": 3}));
    assert_eq!(v2["metadata"]["uid"], created["metadata"]["uid"]);
    let reviews = t.take_reviews();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let review = &reviews[0];
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(review["kind"], "ConversionReview");
    assert!(
        !review["request"]["uid"]
            .as_str()
            .unwrap_or_default()
            .is_empty(),
        "{review}"
    );
    assert_eq!(
        review["request"]["desiredAPIVersion"],
        "conv.example.com/v2"
    );
    let sent = &review["request"]["objects"][0];
    assert_eq!(sent["apiVersion"], "conv.example.com/v1");
    assert_eq!(sent["spec"], json!({"size": 3}));

    // Created via v2: converted to v1 for storage, and back for the response.
    let created = t.create(CONV_V2, "conv.example.com/v2", "w2", json!({"replicas": 5}));
    assert_eq!(created["apiVersion"], "conv.example.com/v2");
    assert_eq!(created["spec"], json!({"replicas": 5}));
    let summaries: Vec<_> = t.take_reviews().iter().map(review_summary).collect();
    assert_eq!(
        summaries,
        [
            ("conv.example.com/v1".to_string(), vec!["w2".to_string()]),
            ("conv.example.com/v2".to_string(), vec!["w2".to_string()])
        ]
    );
    let v1 = get_ok(&t.server, &format!("{CONV_V1}/w2"));
    assert_eq!(v1["spec"], json!({"size": 5}), "stored as v1");
    assert_eq!(t.take_reviews(), Vec::<Value>::new());

    // A dry run converts as a write does (kube encodes and decodes the object) and
    // stores nothing.
    let dry = http
        .request(
            "POST",
            CONV_V2,
            &[("dryRun".to_string(), "All".to_string())],
            &common::json_accept(),
            Some(
                widget("conv.example.com/v2", "w3", json!({"replicas": 1}))
                    .to_string()
                    .into_bytes(),
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(dry.status, 201, "{}", dry.text());
    assert_eq!(body(&dry)["spec"], json!({"replicas": 1}));
    assert_eq!(t.take_reviews().len(), 2);
    assert_eq!(http.get(&format!("{CONV_V1}/w3")).status, 404);

    // Updated via v2: the stored v1 object is converted to v2, the update runs in v2
    // and is converted back to v1 for storage.
    let mut v2 = get_ok(&t.server, &format!("{CONV_V2}/w1"));
    v2["spec"]["replicas"] = json!(7);
    v2["spec"]["color"] = json!("red");
    let put = http.send_json("PUT", &format!("{CONV_V2}/w1"), &v2);
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(body(&put)["spec"], json!({"replicas": 7, "color": "red"}));
    let v1 = get_ok(&t.server, &format!("{CONV_V1}/w1"));
    assert_eq!(v1["spec"], json!({"size": 7, "color": "red"}));
    assert_ne!(
        v1["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[test]
fn list_and_watch_via_v2_are_converted() {
    let t = Converting::start();
    let http = t.server.http();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        t.create(CONV_V1, "conv.example.com/v1", name, json!({"size": i}));
    }
    t.take_reviews();

    // One review for the whole list, with every object not yet in v2.
    let list = get_ok(&t.server, CONV_V2);
    assert_eq!(list["apiVersion"], "conv.example.com/v2");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let replicas: Vec<&Value> = items.iter().map(|i| &i["spec"]["replicas"]).collect();
    assert_eq!(replicas, [&json!(0), &json!(1), &json!(2)], "{list}");
    let summaries: Vec<_> = t.take_reviews().iter().map(review_summary).collect();
    assert_eq!(
        summaries,
        [(
            "conv.example.com/v2".to_string(),
            vec!["a".to_string(), "b".to_string(), "c".to_string()]
        )]
    );

    // A change made after the list's resourceVersion reaches a v2 watch converted.
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut b = get_ok(&t.server, &format!("{CONV_V1}/b"));
    b["spec"]["size"] = json!(10);
    let put = http.send_json("PUT", &format!("{CONV_V1}/b"), &b);
    assert_eq!(put.status, 200, "{}", put.text());
    let query = [
        ("watch".to_string(), "true".to_string()),
        ("resourceVersion".to_string(), rv),
        ("timeoutSeconds".to_string(), "1".to_string()),
    ];
    let watched = http
        .request("GET", CONV_V2, &query, &common::json_accept(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watched.status, 200, "{}", watched.text());
    let events: Vec<Value> = watched
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("event {l}: {e}")))
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "MODIFIED");
    assert_eq!(events[0]["object"]["apiVersion"], "conv.example.com/v2");
    assert_eq!(events[0]["object"]["spec"], json!({"replicas": 10}));
}

#[test]
fn webhook_with_a_self_signed_ca_certificate_converts() {
    // `openssl req -x509` makes a certificate that is its own CA (`CA:TRUE`).
    let t = Converting::start_on(|reply| {
        let (cert, key) = common::webhook::openssl_self_signed(&["subjectAltName=IP:127.0.0.1"]);
        HttpsWebhookServer::start_with(&cert, &key, &cert, reply)
    });
    t.create(CONV_V1, "conv.example.com/v1", "w1", json!({"size": 3}));
    let read = get_ok(&t.server, &format!("{CONV_V2}/w1"));
    assert_eq!(read["apiVersion"], "conv.example.com/v2");
    assert_eq!(read["spec"], json!({"replicas": 3}));
    assert!(!t.take_reviews().is_empty());
}

#[test]
fn conversion_webhook_calls_carry_kubes_user_agent() {
    let t = Converting::start();
    t.create(CONV_V2, "conv.example.com/v2", "w1", json!({"replicas": 1}));
    let agents = t.webhook.user_agents();
    assert!(!agents.is_empty());
    assert!(
        agents.iter().all(|a| a == "kube-apiserver-admission"),
        "{agents:?}"
    );
}

#[test]
fn webhook_down_fails_conversions_as_kube() {
    let mut t = Converting::start();
    let http = t.server.http();
    let created = t.create(CONV_V1, "conv.example.com/v1", "w1", json!({"size": 1}));
    let url = format!("{}/convert", t.webhook.base());
    t.webhook.stop();

    // kube: the error is no API status, so a 500 with no reason.
    let r = http.get(&format!("{CONV_V2}/w1"));
    assert_eq!(r.status, 500, "{}", r.text());
    let status = body(&r);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 500);
    assert_eq!(status.get("reason"), None, "{status}");
    let message = status["message"].as_str().unwrap_or_default();
    let prefix =
        format!("conversion webhook for conv.example.com/v1, Kind=Widget failed: Post \"{url}");
    assert!(message.starts_with(&prefix), "{message}");
    assert!(
        message.ends_with("connect: connection refused"),
        "{message}"
    );

    // A list fails the same way; the storage version needs no webhook.
    let r = http.get(CONV_V2);
    assert_eq!(r.status, 500, "{}", r.text());
    assert!(body(&r)["message"]
        .as_str()
        .unwrap_or_default()
        .starts_with(&prefix));
    assert_eq!(
        get_ok(&t.server, &format!("{CONV_V1}/w1"))["spec"],
        json!({"size": 1})
    );

    // A write via v2 fails converting the new object to the storage version.
    let r = http.send_json(
        "POST",
        CONV_V2,
        &widget("conv.example.com/v2", "w2", json!({"replicas": 2})),
    );
    assert_eq!(r.status, 500, "{}", r.text());
    let message = body(&r)["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message
            .starts_with("conversion webhook for conv.example.com/v2, Kind=Widget failed: Post "),
        "{message}"
    );
    assert_eq!(
        http.get(&format!("{CONV_V1}/w2")).status,
        404,
        "nothing stored"
    );

    // A v2 watch meets a change it cannot convert: kube's watch sends an ERROR event
    // (the error wrapped as an InternalError) and ends.
    let mut v1 = get_ok(&t.server, &format!("{CONV_V1}/w1"));
    v1["spec"]["size"] = json!(2);
    let put = http.send_json("PUT", &format!("{CONV_V1}/w1"), &v1);
    assert_eq!(
        put.status,
        200,
        "the storage version needs no webhook: {}",
        put.text()
    );
    let query = [
        ("watch".to_string(), "true".to_string()),
        (
            "resourceVersion".to_string(),
            created["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
        ("timeoutSeconds".to_string(), "5".to_string()),
    ];
    let watched = http
        .request("GET", CONV_V2, &query, &common::json_accept(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(watched.status, 200, "{}", watched.text());
    let events: Vec<Value> = watched
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("event {l}: {e}")))
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "ERROR");
    let status = &events[0]["object"];
    assert_eq!(status["reason"], "InternalError");
    assert_eq!(status["code"], 500);
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("Internal error occurred: {prefix}")),
        "{message}"
    );
}

#[test]
fn webhook_may_change_labels_but_not_the_name() {
    let t = Converting::start();
    let http = t.server.http();
    let created = t.create(CONV_V1, "conv.example.com/v1", "w1", json!({"size": 1}));

    t.set_mode(Mode::Rename);
    let r = http.get(&format!("{CONV_V2}/w1"));
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        body(&r)["message"],
        "conversion webhook for conv.example.com/v1, Kind=Widget returned invalid object: must have the same name: w1 != renamed"
    );

    // Labels and annotations are the webhook's to change; the rest of metadata is
    // restored from the stored object.
    t.set_mode(Mode::Label);
    let v2 = get_ok(&t.server, &format!("{CONV_V2}/w1"));
    assert_eq!(v2["metadata"]["labels"], json!({"converted-by": "webhook"}));
    assert_eq!(
        v2["metadata"]["generation"],
        created["metadata"]["generation"]
    );
    assert_eq!(v2["spec"], json!({"replicas": 1}));
}

#[test]
fn kubectl_get_through_both_versions_of_a_webhook_converted_crd() {
    let t = Converting::start();
    t.create(CONV_V1, "conv.example.com/v1", "w1", json!({"size": 4}));
    for (resource, header, row) in [
        ("widgets.v1.conv.example.com", ["NAME", "SIZE"], ["w1", "4"]),
        (
            "widgets.v2.conv.example.com",
            ["NAME", "REPLICAS"],
            ["w1", "4"],
        ),
    ] {
        let out = t.server.kubectl(&["get", resource]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{}", common::describe_output(&out));
        let rows: Vec<Vec<&str>> = stdout
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows, [header.to_vec(), row.to_vec()], "{stdout}");
    }
    let out = t
        .server
        .kubectl(&["get", "widgets.v2.conv.example.com", "w1", "-o", "json"]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
    let obj: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(obj["apiVersion"], "conv.example.com/v2");
    assert_eq!(obj["spec"], json!({"replicas": 4}));
    let discovery = get_ok(&t.server, CONV_CRDS);
    assert_eq!(discovery["preferredVersion"]["version"], "v2");
}
