//! CEL validation rules (`x-kubernetes-validations`, issue 5) end to end over HTTP.
//!
//! Every example of the seed blog post "Enforce CRD Immutability with CEL Transition
//! Rules" (seed 002), one test per section, each step sent as `kubectl apply` sends
//! it to a custom resource (a JSON merge patch) and each rejection compared with the
//! whole `Status` body: byte for byte with the recorded golden
//! (`testdata/conformance/golden/cel-transition-blog.golden.json`) where it covers
//! the step, else built from kube's rules (`NewInvalid`: one cause per field error,
//! the message `<Kind>.<group> "<name>" is invalid: <errors>`). Current kube prints
//! the offending value of scalars and omits it for objects and arrays, where the blog
//! (v1.28) still printed the type name.
//!
//! Beyond the blog: a kubebuilder-style set of rules (`has`, `size`, `matches`,
//! `startsWith`, `all`/`exists`, map keys, `messageExpression`, `reason`, `fieldPath`),
//! CRDs rejected for rules that don't compile or cost too much, and rules added to a
//! CRD later: unchanged old values are ratcheted to warnings; OpenAPI constraints
//! added later ratchet too (KEP-4008: kube drops the errors of unchanged values).

mod common;

use std::time::{Duration, Instant};

use common::{Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The group of the recorded blog case, so its golden bodies apply unchanged.
const BLOG_GROUP: &str = "celblog.example.com";

/// The group of the tests beyond the blog.
const GROUP: &str = "cel.example.com";

fn crd(group: &str, plural: &str, kind: &str, schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

/// The CRD of the recorded blog case with this plural.
fn blog_crd(plural: &str) -> Value {
    let case = common::testdata_json("conformance/cases/cel-transition-blog.yaml");
    case["crds"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["spec"]["names"]["plural"] == plural)
        .cloned()
        .unwrap_or_else(|| panic!("the recorded blog case has no CRD {plural}"))
}

/// The recorded response body of a blog case step.
fn golden(step: &str) -> Value {
    let golden = common::testdata_json("conformance/golden/cel-transition-blog.golden.json");
    let body = &golden[step]["body"];
    assert!(!body.is_null(), "no golden recording for step {step}");
    body.clone()
}

fn collection(group: &str, plural: &str) -> String {
    format!("/apis/{group}/v1/namespaces/default/{plural}")
}

fn install(http: &Http, crd: &Value) {
    let created = http.send_json("POST", CRDS, crd);
    assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let served = http.wait_for_status(&collection(group, plural), 200, Duration::from_secs(20));
    assert_eq!(served.status, 200, "CRD not served: {}", served.text());
}

/// What `kubectl apply` sends to change a custom resource.
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

/// kube's 422 for `causes` (reason, field, error body each), as `NewInvalid` builds
/// it: one error is printed alone, several as a bracketed list.
fn invalid(group: &str, kind: &str, name: &str, causes: &[(&str, &str, &str)]) -> Value {
    let errors: Vec<String> = causes
        .iter()
        .map(|(_, field, body)| format!("{field}: {body}"))
        .collect();
    let listed = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("{kind}.{group} \"{name}\" is invalid: {listed}"),
        "reason": "Invalid",
        "details": {
            "name": name,
            "group": group,
            "kind": kind,
            "causes": causes.iter().map(|(reason, field, body)| {
                json!({"reason": reason, "message": body, "field": field})
            }).collect::<Vec<_>>()
        },
        "code": 422
    })
}

fn assert_status(r: &HttpResponse, want: &Value) {
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(&json_of(r), want);
}

fn assert_ok(r: &HttpResponse, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    json_of(r)
}

/// kube's `Warning` header for a ratcheted error (code 299, no agent, quoted text).
fn warning_header(text: &str) -> String {
    format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

// ---------------------------------------------------------------------------------------
// The blog, section by section.

#[test]
fn blog_basics_of_validation_rules_maximum_greater_than_minimum() {
    let server = TestServer::start();
    let http = server.http();
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"maximumSize": {"type": "integer"}, "minimumSize": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.maximumSize > self.minimumSize\n", "message": "Maximum size must be greater than minimum size."}]
    }}});
    install(&http, &crd(BLOG_GROUP, "sizes", "Size", schema));
    let sizes = collection(BLOG_GROUP, "sizes");
    let object = |name: &str, max: i64, min: i64| {
        json!({"apiVersion": "celblog.example.com/v1", "kind": "Size", "metadata": {"name": name},
               "spec": {"maximumSize": max, "minimumSize": min}})
    };
    assert_ok(&http.send_json("POST", &sizes, &object("ok", 5, 1)), 201);
    assert_status(
        &http.send_json("POST", &sizes, &object("bad", 1, 5)),
        &invalid(
            BLOG_GROUP,
            "Size",
            "bad",
            &[(
                "FieldValueInvalid",
                "spec",
                "Invalid value: Maximum size must be greater than minimum size.",
            )],
        ),
    );
}

#[test]
fn blog_immutability_after_first_modification() {
    let server = TestServer::start();
    let http = server.http();
    install(&http, &blog_crd("immutablesincefirstwrites"));
    let list = collection(BLOG_GROUP, "immutablesincefirstwrites");
    let item = format!("{list}/test1");

    // Creating an initial empty object is permitted since value is optional.
    let created = http.send_json(
        "POST",
        &list,
        &json!({"apiVersion": "celblog.example.com/v1", "kind": "ImmutableSinceFirstWrite", "metadata": {"name": "test1"}}),
    );
    let created = assert_ok(&created, 201);
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(created.get("value").is_none(), "{created}");

    // The initial modification of value succeeds.
    let first = assert_ok(
        &merge_patch(&http, &item, &json!({"value": "Hello, world!"})),
        200,
    );
    assert_eq!(first["value"], "Hello, world!");
    assert_eq!(first["metadata"]["generation"], 2);

    // Changing value is blocked by the field-level rule.
    assert_status(
        &merge_patch(&http, &item, &json!({"value": "Hello, new world!"})),
        &golden("change-rejected"),
    );
    // Removing value altogether is blocked by the type-scoped rule.
    assert_status(
        &merge_patch(&http, &item, &json!({"value": null})),
        &golden("removal-rejected"),
    );

    // Applying the same value again (here with a label) passes.
    let same = assert_ok(
        &merge_patch(
            &http,
            &item,
            &json!({"value": "Hello, world!", "metadata": {"labels": {"touched": "yes"}}}),
        ),
        200,
    );
    assert_eq!(same["value"], "Hello, world!");
    assert_eq!(same["metadata"]["labels"], json!({"touched": "yes"}));
    assert_eq!(same["metadata"]["generation"], 2);
}

#[test]
fn blog_immutability_upon_object_creation() {
    let server = TestServer::start();
    let http = server.http();
    let schema = json!({
        "type": "object",
        "properties": {
            "value": {"maxLength": 512, "type": "string",
                "x-kubernetes-validations": [{"message": "Value is immutable", "rule": "self == oldSelf"}]}
        },
        "required": ["value"]
    });
    install(
        &http,
        &crd(
            BLOG_GROUP,
            "immutablesincecreations",
            "ImmutableSinceCreation",
            schema,
        ),
    );
    let list = collection(BLOG_GROUP, "immutablesincecreations");
    let item = format!("{list}/test1");
    let object = |fields: Value| {
        let mut o = json!({"apiVersion": "celblog.example.com/v1", "kind": "ImmutableSinceCreation", "metadata": {"name": "test1"}});
        if let (Some(o), Some(f)) = (o.as_object_mut(), fields.as_object()) {
            o.extend(f.clone());
        }
        o
    };
    // The missing required value is a blocking schema error: the rules don't run, and
    // kube says so with a nil path and a nil value (printed `null`, no longer "null").
    let required_then_blocked = invalid(
        BLOG_GROUP,
        "ImmutableSinceCreation",
        "test1",
        &[
            ("FieldValueRequired", "value", "Required value"),
            (
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ),
        ],
    );

    // Applying an object without the required field fails.
    assert_status(
        &http.send_json("POST", &list, &object(json!({}))),
        &required_then_blocked,
    );
    // With the field the object is created.
    let created = assert_ok(
        &http.send_json("POST", &list, &object(json!({"value": "Hello, world!"}))),
        201,
    );
    assert_eq!(created["value"], "Hello, world!");
    // Changing the value is blocked by the rule, with its message.
    assert_status(
        &merge_patch(&http, &item, &json!({"value": "Hello, new world!"})),
        &invalid(
            BLOG_GROUP,
            "ImmutableSinceCreation",
            "test1",
            &[(
                "FieldValueInvalid",
                "value",
                "Invalid value: \"Hello, new world!\": Value is immutable",
            )],
        ),
    );
    // Removing it fails as on creation.
    assert_status(
        &merge_patch(&http, &item, &json!({"value": null})),
        &required_then_blocked,
    );
}

#[test]
fn blog_append_only_list_of_containers() {
    let server = TestServer::start();
    let http = server.http();
    // The blog's items are `v1.EphemeralContainer`s; two of their fields suffice here.
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
        &crd(BLOG_GROUP, "appendonlylists", "AppendOnlyList", schema),
    );
    let list = collection(BLOG_GROUP, "appendonlylists");
    let item = format!("{list}/testlist");
    let container1 = json!({"name": "container1", "image": "nginx/nginx"});
    let container2 = json!({"name": "container2", "image": "mongodb/mongodb"});

    // Creating an initial list with one element succeeds.
    let created = http.send_json(
        "POST",
        &list,
        &json!({"apiVersion": "celblog.example.com/v1", "kind": "AppendOnlyList", "metadata": {"name": "testlist"},
                "value": [container1]}),
    );
    assert_eq!(assert_ok(&created, 201)["value"], json!([container1]));
    // Adding an element succeeds.
    let added = merge_patch(&http, &item, &json!({"value": [container1, container2]}));
    assert_eq!(
        assert_ok(&added, 200)["value"],
        json!([container1, container2])
    );
    // Removing an element is blocked by the field-scoped rule (an array: no value).
    assert_status(
        &merge_patch(&http, &item, &json!({"value": [container1]})),
        &invalid(
            BLOG_GROUP,
            "AppendOnlyList",
            "testlist",
            &[(
                "FieldValueInvalid",
                "value",
                "Invalid value: Values may only be added",
            )],
        ),
    );
    // Removing the field is blocked by the type-scoped rule.
    assert_status(
        &merge_patch(&http, &item, &json!({"value": null})),
        &invalid(
            BLOG_GROUP,
            "AppendOnlyList",
            "testlist",
            &[(
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: Value is required once set",
            )],
        ),
    );
}

#[test]
fn blog_map_with_append_only_keys_immutable_values() {
    let server = TestServer::start();
    let http = server.http();
    install(&http, &blog_crd("mapappendonlykeys"));
    let list = collection(BLOG_GROUP, "mapappendonlykeys");
    let item = format!("{list}/testmap");

    // Creating an object with one key is permitted.
    let created = http.send_json(
        "POST",
        &list,
        &json!({"apiVersion": "celblog.example.com/v1", "kind": "MapAppendOnlyKeys", "metadata": {"name": "testmap"},
                "values": {"key1": "value1"}}),
    );
    assert_eq!(
        assert_ok(&created, 201)["values"],
        json!({"key1": "value1"})
    );
    // Adding a key is permitted.
    let added = merge_patch(&http, &item, &json!({"values": {"key2": "value2"}}));
    assert_eq!(
        assert_ok(&added, 200)["values"],
        json!({"key1": "value1", "key2": "value2"})
    );
    // Removing a key, or changing a value, is blocked by the field-scoped rule.
    assert_status(
        &merge_patch(&http, &item, &json!({"values": {"key2": null}})),
        &golden("map-remove-key"),
    );
    assert_status(
        &merge_patch(&http, &item, &json!({"values": {"key1": "changed"}})),
        &golden("map-change-value"),
    );
    // Removing the whole field is blocked by the type-scoped rule.
    assert_status(
        &merge_patch(&http, &item, &json!({"values": null})),
        &invalid(
            BLOG_GROUP,
            "MapAppendOnlyKeys",
            "testmap",
            &[(
                "FieldValueInvalid",
                "<nil>",
                "Invalid value: Value is required once set",
            )],
        ),
    );
}

// ---------------------------------------------------------------------------------------
// Beyond the blog.

/// A kubebuilder-style CRD: the rules `+kubebuilder:validation:XValidation` markers
/// typically generate, on fields and on the type (with `fieldPath` and `reason`).
/// The messageExpressions use `format()`: concatenating `string(int)` can't be
/// afforded (see the next test).
fn website_schema() -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "maxLength": 63, "x-kubernetes-validations": [
                {"rule": "self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')", "message": "name must be a lowercase RFC 1123 label"}]},
            "image": {"type": "string", "maxLength": 255, "x-kubernetes-validations": [
                {"rule": "self.startsWith('registry.example.com/')"}]},
            "hostname": {"type": "string", "maxLength": 253, "x-kubernetes-validations": [
                {"rule": "size(self) <= 63",
                 "messageExpression": "'hostname has %d characters, at most 63 are allowed'.format([size(self)])"}]},
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"},
            "ports": {"type": "array", "maxItems": 10, "items": {"type": "integer"}, "x-kubernetes-validations": [
                {"rule": "self.all(p, p > 0 && p < 65536)", "message": "ports must be between 1 and 65535"},
                {"rule": "self.exists(p, p == 443)", "message": "port 443 must be exposed", "reason": "FieldValueRequired"}]},
            "aliases": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 63}, "x-kubernetes-validations": [
                {"rule": "self.all(a, self.exists_one(b, b == a))", "reason": "FieldValueDuplicate"}]},
            "labels": {"type": "object", "maxProperties": 10,
                "additionalProperties": {"type": "string", "maxLength": 63},
                "x-kubernetes-validations": [
                    {"rule": "self.all(k, !k.startsWith('kubernetes.io/'))", "message": "label keys must not use the kubernetes.io/ prefix"}]},
            "memory": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
                {"rule": "isQuantity(self) && quantity(self).isGreaterThan(quantity('64Mi'))", "message": "memory must be a quantity above 64Mi"}]}
        },
        "x-kubernetes-validations": [
            {"rule": "has(self.image)", "message": "image is required", "reason": "FieldValueRequired", "fieldPath": ".image"},
            {"rule": "!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",
             "messageExpression": "'minReplicas (%d) must not exceed maxReplicas (%d)'.format([self.minReplicas, self.maxReplicas])",
             "reason": "FieldValueForbidden", "fieldPath": ".minReplicas"},
            {"rule": "!has(self.labels) || !('tier' in self.labels) || self.labels['tier'] in ['frontend', 'backend']",
             "message": "tier must be frontend or backend", "fieldPath": ".labels['tier']"}
        ]
    }}})
}

#[test]
fn kubebuilder_style_rules_report_kube_causes() {
    let server = TestServer::start();
    let http = server.http();
    install(&http, &crd(GROUP, "websites", "Website", website_schema()));
    let websites = collection(GROUP, "websites");
    let valid = json!({
        "name": "web", "image": "registry.example.com/web:1", "hostname": "web.example.com",
        "minReplicas": 1, "maxReplicas": 3, "ports": [80, 443], "aliases": ["www", "home"],
        "labels": {"tier": "frontend", "team": "a"}, "memory": "128Mi"
    });
    let website = |name: &str, changes: Value| {
        let mut spec = valid.clone();
        if let (Some(s), Some(c)) = (spec.as_object_mut(), changes.as_object()) {
            for (k, v) in c {
                if v.is_null() {
                    s.remove(k);
                } else {
                    s.insert(k.clone(), v.clone());
                }
            }
        }
        json!({"apiVersion": "cel.example.com/v1", "kind": "Website", "metadata": {"name": name}, "spec": spec})
    };
    let rejects = |changes: Value, causes: &[(&str, &str, &str)]| {
        let r = http.send_json("POST", &websites, &website("bad", changes));
        assert_status(&r, &invalid(GROUP, "Website", "bad", causes));
    };

    assert_ok(
        &http.send_json("POST", &websites, &website("good", json!({}))),
        201,
    );

    // matches() on a string: the value is printed.
    rejects(
        json!({"name": "Web_1"}),
        &[(
            "FieldValueInvalid",
            "spec.name",
            "Invalid value: \"Web_1\": name must be a lowercase RFC 1123 label",
        )],
    );
    // startsWith() without a message: kube's "failed rule" default.
    rejects(
        json!({"image": "docker.io/web"}),
        &[(
            "FieldValueInvalid",
            "spec.image",
            "Invalid value: \"docker.io/web\": failed rule: self.startsWith('registry.example.com/')",
        )],
    );
    // size() with a messageExpression.
    let long = "a".repeat(70);
    rejects(
        json!({"hostname": long}),
        &[(
            "FieldValueInvalid",
            "spec.hostname",
            &format!(
                "Invalid value: \"{long}\": hostname has 70 characters, at most 63 are allowed"
            ),
        )],
    );
    // Type-scoped rules, in the order written: has() with reason Required and a
    // fieldPath, then a messageExpression with reason Forbidden (neither prints a value).
    rejects(
        json!({"image": null, "minReplicas": 5, "maxReplicas": 2}),
        &[
            (
                "FieldValueRequired",
                "spec.image",
                "Required value: image is required",
            ),
            (
                "FieldValueForbidden",
                "spec.minReplicas",
                "Forbidden: minReplicas (5) must not exceed maxReplicas (2)",
            ),
        ],
    );
    // A map key lookup; a fieldPath into a map names the key, and the value of the
    // rule's own node (an object) is not printed.
    rejects(
        json!({"labels": {"tier": "database"}}),
        &[(
            "FieldValueInvalid",
            "spec.labels[tier]",
            "Invalid value: tier must be frontend or backend",
        )],
    );
    // all() over a map's keys.
    rejects(
        json!({"labels": {"kubernetes.io/role": "x"}}),
        &[(
            "FieldValueInvalid",
            "spec.labels",
            "Invalid value: label keys must not use the kubernetes.io/ prefix",
        )],
    );
    // all() and exists() over a list: both rules of the node fail, in order.
    rejects(
        json!({"ports": [0]}),
        &[
            (
                "FieldValueInvalid",
                "spec.ports",
                "Invalid value: ports must be between 1 and 65535",
            ),
            (
                "FieldValueRequired",
                "spec.ports",
                "Required value: port 443 must be exposed",
            ),
        ],
    );
    // reason Duplicate on a list: kube's Duplicate error, the list not printed.
    rejects(
        json!({"aliases": ["www", "www"]}),
        &[("FieldValueDuplicate", "spec.aliases", "Duplicate value")],
    );
    // quantity(): too small, and not a quantity at all.
    for memory in ["32Mi", "lots"] {
        rejects(
            json!({"memory": memory}),
            &[(
                "FieldValueInvalid",
                "spec.memory",
                &format!("Invalid value: \"{memory}\": memory must be a quantity above 64Mi"),
            )],
        );
    }
}

/// kubernetes/kubernetes#124234: `string()` of an int has no size estimate, so a
/// messageExpression concatenating it is estimated unbounded and the CRD rejected,
/// with the errors the issue reports.
#[test]
fn message_expression_concatenating_string_of_int_exceeds_the_cost_budget() {
    let server = TestServer::start();
    let http = server.http();
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "config": {
            "type": "object",
            "x-kubernetes-validations": [{"messageExpression": "'invalid attempts: ' + string(self.attempts)", "rule": "self.attempts >= 0"}],
            "properties": {"attempts": {"type": "integer", "maximum": 2147483647, "minimum": -2147483648}}
        }
    }}}});
    let r = http.send_json("POST", CRDS, &crd(GROUP, "retries", "Retry", schema));
    let budget = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    let expression =
        "spec.validation.openAPIV3Schema.properties[spec].properties[config].x-kubernetes-validations[0].messageExpression";
    assert_status(
        &r,
        &invalid(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "retries.cel.example.com",
            &[
                ("FieldValueForbidden", expression, &format!("Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {budget}")),
                ("FieldValueForbidden", expression, "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
                ("FieldValueForbidden", "spec.validation.openAPIV3Schema", &format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {budget}")),
            ],
        ),
    );
}

#[test]
fn crds_with_rules_that_do_not_compile_are_rejected() {
    let server = TestServer::start();
    let http = server.http();
    let bad = crd(
        GROUP,
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
    let r = http.send_json("POST", CRDS, &crd(GROUP, "bars", "Bar", schema(false)));
    assert_eq!(r.status, 422, "{}", r.text());
    let msg = json_of(&r)["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"),
        "{msg}"
    );
    install(&http, &crd(GROUP, "bars", "Bar", schema(true)));
}

#[test]
fn rules_added_later_ratchet_unchanged_values() {
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
    install(&http, &crd(GROUP, "items", "Item", schema(false)));
    let items = collection(GROUP, "items");
    let item = |name: &str| {
        json!({"apiVersion": "cel.example.com/v1", "kind": "Item", "metadata": {"name": name},
               "spec": {"name": "legacy", "size": 1}})
    };
    assert_ok(&http.send_json("POST", &items, &item("old")), 201);

    // Add the rule to the CRD.
    let crd_path = format!("{CRDS}/items.cel.example.com");
    let mut current = json_of(&http.get(&crd_path));
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema(true);
    let updated = http.send_json("PUT", &crd_path, &current);
    assert_eq!(updated.status, 200, "{}", updated.text());

    // New objects must follow the rule (the catalog may take a moment to see the CRD).
    let deadline = Instant::now() + Duration::from_secs(10);
    let rejected = loop {
        let r = http.send_json("POST", &items, &item("new"));
        if r.status != 201 {
            break r;
        }
        assert!(Instant::now() < deadline, "the rule never applied");
        let _ = http.request(
            "DELETE",
            &format!("{items}/new"),
            &[],
            &common::json_accept(),
            None,
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let legacy_error = "Invalid value: \"legacy\": must start with ok";
    assert_status(
        &rejected,
        &invalid(
            GROUP,
            "Item",
            "new",
            &[("FieldValueInvalid", "spec.name", legacy_error)],
        ),
    );

    // The old object may change other fields: its unchanged name is only a warning.
    let old = format!("{items}/old");
    let patched = merge_patch(&http, &old, &json!({"spec": {"size": 2}}));
    assert_eq!(assert_ok(&patched, 200)["spec"]["size"], 2);
    assert_eq!(
        patched.header("warning"),
        Some(warning_header(&format!("spec.name: {legacy_error}")))
    );
    // Changing the name to another bad value is an error.
    assert_status(
        &merge_patch(&http, &old, &json!({"spec": {"name": "other"}})),
        &invalid(
            GROUP,
            "Item",
            "old",
            &[(
                "FieldValueInvalid",
                "spec.name",
                "Invalid value: \"other\": must start with ok",
            )],
        ),
    );
    // Fixing it passes without a warning.
    let fixed = merge_patch(&http, &old, &json!({"spec": {"name": "ok-now"}}));
    assert_eq!(assert_ok(&fixed, 200)["spec"]["name"], "ok-now");
    assert_eq!(fixed.header("warning"), None);
}

#[test]
fn schema_constraints_added_later_ratchet_unchanged_values() {
    let server = TestServer::start();
    let http = server.http();
    let schema = |max_length: Option<u64>| {
        let mut name = json!({"type": "string"});
        if let Some(max) = max_length {
            name["maxLength"] = json!(max);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": name, "size": {"type": "integer"}}}}})
    };
    install(&http, &crd(GROUP, "gadgets", "Gadget", schema(None)));
    let gadgets = collection(GROUP, "gadgets");
    let gadget = |name: &str| {
        json!({"apiVersion": "cel.example.com/v1", "kind": "Gadget", "metadata": {"name": name},
               "spec": {"name": "a-long-legacy-name", "size": 1}})
    };
    assert_ok(&http.send_json("POST", &gadgets, &gadget("old")), 201);

    // Tighten the schema: names of at most 5 bytes.
    let crd_path = format!("{CRDS}/gadgets.cel.example.com");
    let mut current = json_of(&http.get(&crd_path));
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema(Some(5));
    let updated = http.send_json("PUT", &crd_path, &current);
    assert_eq!(updated.status, 200, "{}", updated.text());

    // New objects must follow it (the catalog may take a moment to see the CRD).
    let deadline = Instant::now() + Duration::from_secs(10);
    let rejected = loop {
        let r = http.send_json("POST", &gadgets, &gadget("new"));
        if r.status != 201 {
            break r;
        }
        assert!(Instant::now() < deadline, "the constraint never applied");
        let _ = http.request(
            "DELETE",
            &format!("{gadgets}/new"),
            &[],
            &common::json_accept(),
            None,
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(rejected.status, 422, "{}", rejected.text());
    let too_long = json_of(&rejected)["details"]["causes"][0].clone();
    assert_eq!(too_long["reason"], "FieldValueTooLong", "{too_long}");
    assert_eq!(too_long["field"], "spec.name", "{too_long}");

    // The old object may change other fields: its unchanged name passes, silently
    // (kube drops ratcheted schema errors; only CEL rules warn).
    let old = format!("{gadgets}/old");
    let patched = merge_patch(&http, &old, &json!({"spec": {"size": 2}}));
    assert_eq!(assert_ok(&patched, 200)["spec"]["size"], 2);
    assert_eq!(patched.header("warning"), None);
    // Changing the name to another long value is the create's error.
    let renamed = merge_patch(&http, &old, &json!({"spec": {"name": "another-long-name"}}));
    assert_eq!(renamed.status, 422, "{}", renamed.text());
    assert_eq!(
        json_of(&renamed)["details"]["causes"][0]["message"],
        too_long["message"]
            .as_str()
            .unwrap()
            .replace("a-long-legacy-name", "another-long-name")
    );
    // A valid name passes.
    let fixed = merge_patch(&http, &old, &json!({"spec": {"name": "ok"}}));
    assert_eq!(assert_ok(&fixed, 200)["spec"]["name"], "ok");
}
