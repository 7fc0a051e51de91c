//! OpenAPI schema ratcheting of custom resources (KEP-4008, kube's
//! `CRDValidationRatcheting`, on by default since v1.30) over HTTP, on every write
//! that updates: merge patch, JSON patch, PUT, server-side apply, and the same on
//! `/status`.
//!
//! The cases are kube v1.36's own e2e test (`test/e2e/apimachinery/
//! crd_validation_ratcheting.go`): an object is stored, the CRD's schema is tightened
//! under it (`enum: ["notfoo"]` on every `field`), and then
//! - a write that leaves those values as they were passes: kube drops a schema error
//!   whose value did not change, correlating old and new by property name, map key
//!   (`additionalProperties`) and `x-kubernetes-list-type: map` key;
//! - a write that changes one gets the create's 422 for that value only;
//! - lists that are not list-type maps (atomic lists, sets) correlate only as a whole:
//!   once changed, every item is validated again;
//! - a `/status` write validates only `status`, by its own schema (kube's status
//!   strategy), so an error elsewhere in the stored object never blocks it.

mod common;

use std::time::{Duration, Instant};

use common::{Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP: &str = "ratchet.example.com";
const KIND: &str = "Ratchet";
const COLLECTION: &str = "/apis/ratchet.example.com/v1/namespaces/default/ratchets";
const CRD_PATH: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ratchets.ratchet.example.com";
const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// A string property, with `enum` when given.
fn string(allowed: Option<&[&str]>) -> Value {
    match allowed {
        Some(values) => json!({"type": "string", "enum": values}),
        None => json!({"type": "string"}),
    }
}

/// The correlatable fields of kube's e2e test: a property, a struct's property, a
/// list-type map item's property and a map value's property, each a `field` with
/// `allowed` values.
fn correlatable(allowed: Option<&[&str]>) -> Value {
    let field = string(allowed);
    json!({
        "field": field,
        "struct": {"type": "object", "properties": {"field": field}},
        "list": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "required": ["key"],
                      "properties": {"key": {"type": "string"}, "field": field}}
        },
        "map": {"type": "object",
                "additionalProperties": {"type": "object", "properties": {"field": field}}},
    })
}

/// The CRD's schema: the correlatable fields at the root and in `status`, an atomic
/// list and a set, all with `allowed` values when tightened.
fn schema(allowed: Option<&[&str]>, items_allowed: Option<&[&str]>) -> Value {
    let mut props = correlatable(allowed);
    let mut status = correlatable(allowed);
    status["count"] = json!({"type": "integer"});
    props["status"] = json!({"type": "object", "properties": status});
    props["atomicArray"] = json!({"type": "array", "items": string(items_allowed)});
    props["setArray"] = json!({"type": "array", "x-kubernetes-list-type": "set",
                               "items": string(items_allowed)});
    props["spec"] = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    json!({"type": "object", "properties": props})
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "ratchets.ratchet.example.com"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "ratchets", "singular": "ratchet", "kind": KIND,
                      "listKind": "RatchetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": schema(None, None)}}]
        }
    })
}

/// The values of kube's e2e instance: `foo` everywhere.
fn instance_values() -> Value {
    json!({
        "field": "foo",
        "struct": {"field": "foo"},
        "list": [{"key": "first", "field": "foo"}],
        "map": {"foo": {"field": "foo"}},
    })
}

fn object(name: &str) -> Value {
    let mut obj = instance_values();
    obj["apiVersion"] = json!("ratchet.example.com/v1");
    obj["kind"] = json!(KIND);
    obj["metadata"] = json!({"name": name});
    obj["atomicArray"] = json!(["foo", "bar", "baz"]);
    obj["setArray"] = json!(["foo", "bar", "baz"]);
    obj
}

fn json_of(r: &HttpResponse) -> Value {
    r.json().unwrap_or_else(|| panic!("not JSON: {}", r.text()))
}

fn ok(r: &HttpResponse, what: &str) -> Value {
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    json_of(r)
}

/// A PATCH of `path` with `content_type` and `query`.
fn patch_with(
    http: &Http,
    path: &str,
    content_type: &str,
    body: &Value,
    query: &[(&str, &str)],
) -> HttpResponse {
    let headers = vec![
        ("Accept".to_string(), "application/json".to_string()),
        ("Content-Type".to_string(), content_type.to_string()),
    ];
    let query: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let bytes = serde_json::to_vec(body).unwrap_or_else(|e| panic!("encoding: {e}"));
    http.request("PATCH", path, &query, &headers, Some(bytes))
        .unwrap_or_else(|e| panic!("PATCH {path}: {e}"))
}

/// A PATCH of `path` with `content_type` (the manager is the user agent's).
fn patch(http: &Http, path: &str, content_type: &str, body: &Value) -> HttpResponse {
    patch_with(http, path, content_type, body, &[])
}

/// A server-side apply of `config` to `path` by kube's e2e manager.
fn apply(http: &Http, path: &str, config: &Value) -> HttpResponse {
    patch_with(http, path, APPLY, config, &[("fieldManager", "manager")])
}

/// The same, forced: values the other writes set change without a conflict.
fn force_apply(http: &Http, path: &str, config: &Value) -> HttpResponse {
    patch_with(
        http,
        path,
        APPLY,
        config,
        &[("fieldManager", "manager"), ("force", "true")],
    )
}

/// GET `path`, change it with `edit`, PUT it back.
fn put(http: &Http, path: &str, edit: impl FnOnce(&mut Value)) -> HttpResponse {
    let mut current = ok(&http.get(path), "GET before PUT");
    edit(&mut current);
    http.send_json("PUT", path, &current)
}

/// kube's 422 for `name` with one `Unsupported value` cause per `(field, value)`.
fn not_supported(name: &str, causes: &[(&str, &str)], allowed: &str) -> Value {
    let message =
        |value: &str| format!("Unsupported value: \"{value}\": supported values: {allowed}");
    let listed: Vec<String> = causes
        .iter()
        .map(|(field, value)| format!("{field}: {}", message(value)))
        .collect();
    let listed = match listed.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("{KIND}.{GROUP} \"{name}\" is invalid: {listed}"),
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": GROUP,
            "kind": KIND,
            "causes": causes.iter().map(|(field, value)| json!({
                "reason": "FieldValueNotSupported",
                "message": message(value),
                "field": field,
            })).collect::<Vec<_>>(),
        },
        "code": 422
    })
}

fn assert_invalid(r: &HttpResponse, want: &Value, what: &str) {
    assert_eq!(r.status, 422, "{what}: {}", r.text());
    assert_eq!(&json_of(r), want, "{what}");
}

/// The `field`s of `details.causes`, sorted.
fn cause_fields(r: &HttpResponse) -> Vec<String> {
    let mut fields: Vec<String> = json_of(r)["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["field"].as_str().unwrap_or_default().to_string())
        .collect();
    fields.sort();
    fields
}

/// A server with the CRD served and `old` stored (its status set through `/status`).
fn stored(http: &Http) -> String {
    let created = http.send_json("POST", CRDS, &crd());
    assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
    let served = http.wait_for_status(COLLECTION, 200, Duration::from_secs(20));
    assert_eq!(served.status, 200, "CRD not served: {}", served.text());
    let created = http.send_json("POST", COLLECTION, &object("old"));
    assert_eq!(created.status, 201, "{}", created.text());
    let path = format!("{COLLECTION}/old");
    let mut status = instance_values();
    status["count"] = json!(0);
    let with_status = put(http, &format!("{path}/status"), |o| o["status"] = status);
    ok(&with_status, "setting the status");
    path
}

/// Replaces the CRD's schema and waits until creates follow it (the catalog follows
/// CRD writes asynchronously): `probe` is created until it gets a 422.
fn tighten(http: &Http, new_schema: Value, probe: Value) -> HttpResponse {
    let mut current = ok(&http.get(CRD_PATH), "GET the CRD");
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = new_schema;
    ok(
        &http.send_json("PUT", CRD_PATH, &current),
        "updating the CRD",
    );
    let name = probe["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = http.send_json("POST", COLLECTION, &probe);
        if r.status != 201 {
            return r;
        }
        assert!(Instant::now() < deadline, "the new schema never applied");
        let deleted = http.request(
            "DELETE",
            &format!("{COLLECTION}/{name}"),
            &[],
            &common::json_accept(),
            None,
        );
        assert!(deleted.is_ok_and(|d| d.status == 200), "deleting the probe");
        std::thread::sleep(Duration::from_millis(100));
    }
}

const NOTFOO: &[&str] = &["notfoo"];
const NOT_ITEMS: &[&str] = &["notfoo", "notbar", "notbaz"];

#[test]
fn unchanged_correlatable_fields_ratchet_on_every_kind_of_update() {
    let server = TestServer::start();
    let http = server.http();
    let path = stored(&http);

    // Tightened: the stored object is now invalid, and so is the same object created.
    let mut probe = object("probe");
    probe["atomicArray"] = json!([]);
    probe["setArray"] = json!([]);
    let refused = tighten(&http, schema(Some(NOTFOO), Some(NOT_ITEMS)), probe);
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(
        cause_fields(&refused),
        ["field", "list[0].field", "map.foo.field", "struct.field"],
        "{}",
        refused.text()
    );

    // Label-only writes of every kind: the unchanged invalid values ratchet.
    let merged = patch(
        &http,
        &path,
        MERGE_PATCH,
        &json!({"metadata": {"labels": {"a": "1"}}}),
    );
    ok(&merged, "label by merge patch");
    let patched = patch(
        &http,
        &path,
        JSON_PATCH,
        &json!([{"op": "add", "path": "/metadata/labels/b", "value": "2"}]),
    );
    ok(&patched, "label by JSON patch");
    let replaced = put(&http, &path, |o| o["metadata"]["labels"]["c"] = json!("3"));
    ok(&replaced, "label by PUT");
    // kube's e2e: the same instance applied again with a label.
    let mut config = object("old");
    config["metadata"]["labels"] = json!({"foo": "bar"});
    let applied = ok(&apply(&http, &path, &config), "label by server-side apply");
    assert_eq!(
        applied["metadata"]["labels"],
        json!({"a": "1", "b": "2", "c": "3", "foo": "bar"})
    );
    assert_eq!(applied["field"], "foo");
    // So may another field change, beside the invalid ones.
    let sized = patch(&http, &path, MERGE_PATCH, &json!({"spec": {"size": 2}}));
    assert_eq!(ok(&sized, "spec by merge patch")["spec"]["size"], 2);

    // Changing an invalid value to another invalid one is the create's error, for that
    // value alone, whatever the verb.
    let allowed = "\"notfoo\"";
    let changed = patch(&http, &path, MERGE_PATCH, &json!({"field": "bar"}));
    assert_invalid(
        &changed,
        &not_supported("old", &[("field", "bar")], allowed),
        "field",
    );
    let changed = patch(
        &http,
        &path,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/list/0/field", "value": "bar"}]),
    );
    assert_invalid(
        &changed,
        &not_supported("old", &[("list[0].field", "bar")], allowed),
        "list item by JSON patch",
    );
    let changed = put(&http, &path, |o| o["struct"]["field"] = json!("bar"));
    assert_invalid(
        &changed,
        &not_supported("old", &[("struct.field", "bar")], allowed),
        "struct by PUT",
    );
    let mut config = object("old");
    config["map"]["foo"]["field"] = json!("bar");
    let changed = force_apply(&http, &path, &config);
    assert_invalid(
        &changed,
        &not_supported("old", &[("map.foo.field", "bar")], allowed),
        "map value by apply",
    );
    // A valid value passes.
    let fixed = patch(&http, &path, MERGE_PATCH, &json!({"field": "notfoo"}));
    assert_eq!(ok(&fixed, "a valid value")["field"], "notfoo");

    // List-type map items correlate by key: a new item is validated, moved ones are not.
    let grown = patch(
        &http,
        &path,
        JSON_PATCH,
        &json!([{"op": "add", "path": "/list/0", "value": {"key": "second", "field": "bar"}}]),
    );
    assert_invalid(
        &grown,
        &not_supported("old", &[("list[0].field", "bar")], allowed),
        "a new list-map item",
    );
    let grown = patch(
        &http,
        &path,
        JSON_PATCH,
        &json!([{"op": "add", "path": "/list/0", "value": {"key": "second", "field": "notfoo"}}]),
    );
    ok(&grown, "a valid new item before an unchanged invalid one");
    // So do map values, by key.
    let added = patch(
        &http,
        &path,
        MERGE_PATCH,
        &json!({"map": {"bar": {"field": "bar"}}}),
    );
    assert_invalid(
        &added,
        &not_supported("old", &[("map.bar.field", "bar")], allowed),
        "a new map value",
    );
}

#[test]
fn lists_that_are_not_list_maps_ratchet_only_as_a_whole() {
    let server = TestServer::start();
    let http = server.http();
    let path = stored(&http);
    let mut probe = object("probe");
    for key in ["field", "struct", "list", "map"] {
        probe.as_object_mut().map(|o| o.remove(key));
    }
    let refused = tighten(&http, schema(Some(NOTFOO), Some(NOT_ITEMS)), probe);
    assert_eq!(refused.status, 422, "{}", refused.text());

    // Unchanged, the lists ratchet.
    let merged = patch(
        &http,
        &path,
        MERGE_PATCH,
        &json!({"metadata": {"labels": {"a": "1"}}}),
    );
    ok(&merged, "label by merge patch");
    // kube's e2e: a valid item appended to each; both lists changed, so every old item
    // is validated again.
    let mut config = object("old");
    config["metadata"]["labels"] = json!({"foo": "bar"});
    config["atomicArray"] = json!(["foo", "bar", "baz", "notfoo"]);
    config["setArray"] = json!(["foo", "bar", "baz", "notfoo"]);
    let changed = force_apply(&http, &path, &config);
    assert_eq!(changed.status, 422, "{}", changed.text());
    assert_eq!(
        cause_fields(&changed),
        [
            "atomicArray[0]",
            "atomicArray[1]",
            "atomicArray[2]",
            "setArray[0]",
            "setArray[1]",
            "setArray[2]"
        ]
    );
    let body = json_of(&changed);
    let first = &body["details"]["causes"][0];
    assert_eq!(
        first["message"],
        "Unsupported value: \"foo\": supported values: \"notfoo\", \"notbar\", \"notbaz\"",
        "{body}"
    );
    // Through a merge patch as well.
    let changed = patch(
        &http,
        &path,
        MERGE_PATCH,
        &json!({"atomicArray": ["foo", "bar", "baz", "notbaz"]}),
    );
    assert_eq!(
        cause_fields(&changed),
        ["atomicArray[0]", "atomicArray[1]", "atomicArray[2]"],
        "{}",
        changed.text()
    );
}

#[test]
fn status_writes_ratchet_and_validate_only_the_status() {
    let server = TestServer::start();
    let http = server.http();
    let path = stored(&http);
    let status_path = format!("{path}/status");
    let mut probe = object("probe");
    probe["atomicArray"] = json!([]);
    probe["setArray"] = json!([]);
    let refused = tighten(&http, schema(Some(NOTFOO), Some(NOT_ITEMS)), probe);
    assert_eq!(refused.status, 422, "{}", refused.text());

    // Writes of the status that leave its invalid values alone pass, by every verb.
    let merged = patch(
        &http,
        &status_path,
        MERGE_PATCH,
        &json!({"status": {"count": 1}}),
    );
    assert_eq!(ok(&merged, "status by merge patch")["status"]["count"], 1);
    let patched = patch(
        &http,
        &status_path,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/status/count", "value": 2}]),
    );
    ok(&patched, "status by JSON patch");
    let replaced = put(&http, &status_path, |o| o["status"]["count"] = json!(3));
    ok(&replaced, "status by PUT");
    let mut status = instance_values();
    status["count"] = json!(4);
    let config = json!({"apiVersion": "ratchet.example.com/v1", "kind": KIND,
                        "metadata": {"name": "old"}, "status": status});
    let applied = ok(
        &force_apply(&http, &status_path, &config),
        "status by server-side apply",
    );
    assert_eq!(applied["status"]["count"], 4);

    // Changing one is refused, at its path under `status`.
    let allowed = "\"notfoo\"";
    let changed = patch(
        &http,
        &status_path,
        MERGE_PATCH,
        &json!({"status": {"field": "bar"}}),
    );
    assert_invalid(
        &changed,
        &not_supported("old", &[("status.field", "bar")], allowed),
        "status.field by merge patch",
    );
    let changed = patch(
        &http,
        &status_path,
        JSON_PATCH,
        &json!([{"op": "replace", "path": "/status/list/0/field", "value": "bar"}]),
    );
    assert_invalid(
        &changed,
        &not_supported("old", &[("status.list[0].field", "bar")], allowed),
        "status list item by JSON patch",
    );
    let mut config = config.clone();
    config["status"]["map"]["foo"]["field"] = json!("bar");
    let changed = force_apply(&http, &status_path, &config);
    assert_invalid(
        &changed,
        &not_supported("old", &[("status.map.foo.field", "bar")], allowed),
        "status map value by apply",
    );

    // The root now requires `spec`, which the stored object lacks: the main resource's
    // updates are refused (the root changed, so its error does not ratchet), the
    // status's are not (kube's status strategy validates `status` alone).
    let mut required = schema(Some(NOTFOO), Some(NOT_ITEMS));
    required["required"] = json!(["spec"]);
    let mut probe = object("probe2");
    probe["atomicArray"] = json!([]);
    probe["setArray"] = json!([]);
    for key in ["field", "struct", "list", "map"] {
        probe.as_object_mut().map(|o| o.remove(key));
    }
    let refused = tighten(&http, required, probe);
    assert_eq!(cause_fields(&refused), ["spec"], "{}", refused.text());
    let labelled = patch(
        &http,
        &path,
        MERGE_PATCH,
        &json!({"metadata": {"labels": {"a": "1"}}}),
    );
    assert_eq!(labelled.status, 422, "{}", labelled.text());
    assert_eq!(
        json_of(&labelled)["message"],
        format!("{KIND}.{GROUP} \"old\" is invalid: spec: Required value")
    );
    let counted = patch(
        &http,
        &status_path,
        MERGE_PATCH,
        &json!({"status": {"count": 5}}),
    );
    assert_eq!(
        ok(&counted, "status with the root invalid")["status"]["count"],
        5
    );
}
