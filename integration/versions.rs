//! Multi-version CRDs end to end (issue 8 part B): a CRD with a deprecated `v1beta1`, a
//! storage `v1` and a deprecated `v1alpha1` with its own warning text. Objects are
//! stored in the storage version and served in the addressed one (conversion strategy
//! `None`): `apiVersion` rewritten, pruned by the addressed version's schema, defaulted
//! by the storage version's (kube's storage codec). Requests to a deprecated version
//! carry kube's `Warning`; `status.storedVersions` grows as the storage version moves;
//! printer columns and OpenAPI are per version.

mod common;

use std::time::Duration;

use common::{HttpResponse, TestServer};
use serde_json::{json, Value};

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
