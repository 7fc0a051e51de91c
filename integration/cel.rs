//! CEL validation rules (`x-kubernetes-validations`, issue 5) end to end over HTTP: the
//! transition-rule blog's append-only list, CRDs rejected for rules that don't compile
//! or cost too much (and accepted once `maxItems`/`maxLength` bound them), and rules
//! added to a CRD later: old objects keep working, their errors ratcheted to warnings.

mod common;

use std::time::Duration;

use common::{Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn crd(plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.cel.example.com")},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

fn path(plural: &str) -> String {
    format!("/apis/cel.example.com/v1/namespaces/default/{plural}")
}

fn install(http: &Http, crd: &Value, plural: &str) {
    let created = http.send_json("POST", CRDS, crd);
    assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
    let served = http.wait_for_status(&path(plural), 200, Duration::from_secs(20));
    assert_eq!(served.status, 200, "CRD not served: {}", served.text());
}

fn merge_patch(http: &Http, path: &str, body: &Value) -> HttpResponse {
    let headers = vec![
        ("Accept".to_string(), "application/json".to_string()),
        (
            "Content-Type".to_string(),
            "application/merge-patch+json".to_string(),
        ),
    ];
    let bytes = serde_json::to_vec(body).unwrap_or_else(|e| panic!("encoding body: {e}"));
    http.request("PATCH", path, &[], &headers, Some(bytes))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn json_of(r: &HttpResponse) -> Value {
    r.json().unwrap_or_else(|| panic!("not JSON: {}", r.text()))
}

#[test]
fn blog_append_only_list_over_http() {
    let server = TestServer::start();
    let http = server.http();
    let schema = json!({
        "type": "object",
        "properties": {
            "value": {
                "type": "array", "maxItems": 100,
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "image": {"type": "string"}}},
                "x-kubernetes-validations": [{"message": "Values may only be added", "rule": "oldSelf.all(x, x in self)"}]
            }
        },
        "x-kubernetes-validations": [{"message": "Value is required once set", "rule": "!has(oldSelf.value) || has(self.value)"}]
    });
    install(
        &http,
        &crd("appendonlylists", "AppendOnlyList", schema),
        "appendonlylists",
    );
    let list = path("appendonlylists");
    let item = format!("{list}/testlist");
    let created = http.send_json(
        "POST",
        &list,
        &json!({"apiVersion": "cel.example.com/v1", "kind": "AppendOnlyList", "metadata": {"name": "testlist"},
                "value": [{"name": "container1", "image": "nginx/nginx"}]}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    let added = merge_patch(
        &http,
        &item,
        &json!({"value": [{"name": "container1", "image": "nginx/nginx"}, {"name": "container2", "image": "mongodb/mongodb"}]}),
    );
    assert_eq!(added.status, 200, "{}", added.text());

    let removed = merge_patch(
        &http,
        &item,
        &json!({"value": [{"name": "container1", "image": "nginx/nginx"}]}),
    );
    assert_eq!(removed.status, 422, "{}", removed.text());
    let body = json_of(&removed);
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(
        body["message"],
        "AppendOnlyList.cel.example.com \"testlist\" is invalid: value: Invalid value: Values may only be added"
    );
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "Invalid value: Values may only be added", "field": "value"}])
    );

    let dropped = merge_patch(&http, &item, &json!({"value": null}));
    assert_eq!(dropped.status, 422, "{}", dropped.text());
    assert_eq!(
        json_of(&dropped)["message"],
        "AppendOnlyList.cel.example.com \"testlist\" is invalid: <nil>: Invalid value: Value is required once set"
    );
}

#[test]
fn crds_with_rules_that_do_not_compile_are_rejected() {
    let server = TestServer::start();
    let http = server.http();
    let bad = crd(
        "foos",
        "Foo",
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.z == 100"}],
            "properties": {"x": {"type": "integer"}}}}}),
    );
    let r = http.send_json("POST", CRDS, &bad);
    assert_eq!(r.status, 422, "{}", r.text());
    let body = json_of(&r);
    assert_eq!(body["details"]["kind"], "CustomResourceDefinition");
    assert_eq!(
        body["details"]["causes"][0]["field"],
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    );
    let msg = body["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("compilation failed: ERROR: <input>:1:5: undefined field 'z'"),
        "{msg}"
    );
}

#[test]
fn expensive_rules_are_rejected_until_bounded() {
    let server = TestServer::start();
    let http = server.http();
    let schema = |bounded: bool| {
        let mut inner = json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]});
        let mut outer = json!({"type": "array", "items": Value::Null});
        if bounded {
            inner["maxItems"] = json!(10);
            inner["items"]["maxLength"] = json!(64);
            outer["maxItems"] = json!(10);
        }
        outer["items"] = inner;
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": outer}}}})
    };
    let r = http.send_json("POST", CRDS, &crd("bars", "Bar", schema(false)));
    assert_eq!(r.status, 422, "{}", r.text());
    let msg = json_of(&r)["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{msg}"
    );
    install(&http, &crd("bars", "Bar", schema(true)), "bars");
}

#[test]
fn rules_added_later_ratchet_old_objects() {
    let server = TestServer::start();
    let http = server.http();
    let schema = |with_rule: bool| {
        let mut name = json!({"type": "string", "maxLength": 20});
        if with_rule {
            name["x-kubernetes-validations"] =
                json!([{"rule": "self.startsWith('ok')", "message": "must start with ok"}]);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": name, "size": {"type": "integer"}}}}})
    };
    install(&http, &crd("items", "Item", schema(false)), "items");
    let items = path("items");
    let created = http.send_json(
        "POST",
        &items,
        &json!({"apiVersion": "cel.example.com/v1", "kind": "Item", "metadata": {"name": "old"}, "spec": {"name": "legacy", "size": 1}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());

    // Add the rule to the CRD.
    let crd_path = format!("{CRDS}/items.cel.example.com");
    let mut current = json_of(&http.get(&crd_path));
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema(true);
    let updated = http.send_json("PUT", &crd_path, &current);
    assert_eq!(updated.status, 200, "{}", updated.text());

    // New objects must follow the rule (the catalog may take a moment to see the CRD).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let r = http.send_json(
            "POST",
            &items,
            &json!({"apiVersion": "cel.example.com/v1", "kind": "Item", "metadata": {"name": "new"}, "spec": {"name": "legacy"}}),
        );
        if r.status == 422 {
            assert!(
                r.text()
                    .contains("spec.name: Invalid value: \\\"legacy\\\": must start with ok"),
                "{}",
                r.text()
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the rule never applied: {}",
            r.text()
        );
        if r.status == 201 {
            let _ = http.request(
                "DELETE",
                &format!("{items}/new"),
                &[],
                &common::json_accept(),
                None,
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }

    // The old object may change other fields: its unchanged name is only a warning.
    let patched = merge_patch(
        &http,
        &format!("{items}/old"),
        &json!({"spec": {"size": 2}}),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let warning = patched.header("warning").unwrap_or_default();
    assert!(
        warning.contains("spec.name: Invalid value: \\\"legacy\\\": must start with ok"),
        "{warning}"
    );
    // Changing the name to another bad value is an error.
    let renamed = merge_patch(
        &http,
        &format!("{items}/old"),
        &json!({"spec": {"name": "other"}}),
    );
    assert_eq!(renamed.status, 422, "{}", renamed.text());
}
