//! Server-side apply and managedFields end to end (issue 6), over HTTP and through the
//! real kubectl.
//!
//! Over HTTP: create-on-apply, `fieldManager`, `force` and body validation (YAML
//! errors, repeated keys by `fieldValidation`), two managers sharing, conflicting and
//! forcing, fields removed when their last applier drops them, list-map items and set
//! values owned by different managers, atomic lists and maps, Update entries of
//! non-apply writes, untracked objects (`before-first-apply`), and apply through the
//! whole update pipeline (defaults, immutability as in the `immutable-kep` case's apply
//! step, schema and CEL validation, `dryRun=All`, `/status`).
//!
//! Expected bodies come from kube: the recorded `ssa` conformance case where it covers
//! a step, else kube's rules read from its source (structured-merge-diff's field sets
//! and conflict order, apimachinery's field manager and `Status` builders). managedFields
//! entries are compared without their `time`, which is checked for kube's format, and
//! their order is checked against kube's sort (operation, time in seconds, manager).
//!
//! Through kubectl (1.32): `apply --server-side` (conflicts, `--force-conflicts`,
//! server dry-run), client-side `apply` (the last-applied annotation and the migration
//! to server-side apply), `diff` with and without `--server-side`, and `edit` with an
//! `EDITOR` script.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{describe_output, Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const GROUP: &str = "apply.example.com";
const API_VERSION: &str = "apply.example.com/v1";
const APPS: &str = "/apis/apply.example.com/v1/namespaces/default/apps";

/// The content type of a server-side apply.
const APPLY: &str = "application/apply-patch+yaml";

/// A CRD with every merge type: a list-map, a set, an atomic list, a granular and an
/// atomic map, a preserve-unknown-fields subtree; plus a default, a minimum, an
/// immutable field, a CEL rule and the status subresource.
fn app_crd() -> Value {
    let spec_properties = json!({
        "replicas": {"type": "integer", "minimum": 0},
        "maxReplicas": {"type": "integer"},
        "image": {"type": "string"},
        "mode": {"type": "string", "default": "fast"},
        "region": {"type": "string", "x-kubernetes-immutable": true},
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string"},
                "port": {"type": "integer"},
                "protocol": {"type": "string"}
            }}
        },
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "args": {"type": "array", "items": {"type": "string"}},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                     "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    });
    let schema = json!({"type": "object", "properties": {
        "spec": {
            "type": "object",
            "x-kubernetes-validations": [{
                "rule": "!has(self.maxReplicas) || !has(self.replicas) || self.replicas <= self.maxReplicas",
                "message": "replicas must not exceed maxReplicas"
            }],
            "properties": spec_properties
        },
        "status": {"type": "object", "properties": {
            "phase": {"type": "string"},
            "ready": {"type": "integer"}
        }}
    }});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "apps.apply.example.com"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "apps", "singular": "app", "kind": "App", "listKind": "AppList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    })
}

fn app_path(name: &str) -> String {
    format!("{APPS}/{name}")
}

/// An applied configuration of app `name` with this `spec`.
fn app(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": name}, "spec": spec})
}

/// A server with the app CRD served.
struct Fixture {
    server: TestServer,
    http: Http,
}

impl Fixture {
    fn new() -> Fixture {
        let server = TestServer::start();
        let http = server.http();
        let created = http.send_json("POST", CRDS, &app_crd());
        assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
        let served = http.wait_for_status(APPS, 200, Duration::from_secs(20));
        assert_eq!(served.status, 200, "CRD not served: {}", served.text());
        Fixture { server, http }
    }

    /// A request with a raw body, as `user_agent`.
    fn send_as(
        &self,
        user_agent: &str,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        content_type: &str,
        body: Vec<u8>,
    ) -> HttpResponse {
        let headers = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("Content-Type".to_string(), content_type.to_string()),
        ];
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.server
            .http_as(user_agent)
            .request(method, path, &query, &headers, Some(body))
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }

    /// A server-side apply of `config` (JSON is YAML) to `path` with `query`.
    fn apply_with(&self, path: &str, query: &[(&str, &str)], config: &Value) -> HttpResponse {
        let body = serde_json::to_vec(config).unwrap_or_else(|e| panic!("encoding: {e}"));
        self.send_as("apply-tests/1.0", "PATCH", path, query, APPLY, body)
    }

    /// A server-side apply of app `name` by `manager`.
    fn apply(&self, manager: &str, name: &str, spec: Value) -> HttpResponse {
        self.apply_with(
            &app_path(name),
            &[("fieldManager", manager)],
            &app(name, spec),
        )
    }

    /// A forced server-side apply of app `name` by `manager`.
    fn force_apply(&self, manager: &str, name: &str, spec: Value) -> HttpResponse {
        self.apply_with(
            &app_path(name),
            &[("fieldManager", manager), ("force", "true")],
            &app(name, spec),
        )
    }

    /// A JSON body sent as `user_agent` (no `fieldManager`: the manager comes from it).
    fn send_json_as(
        &self,
        user_agent: &str,
        method: &str,
        path: &str,
        content_type: &str,
        body: &Value,
    ) -> HttpResponse {
        let bytes = serde_json::to_vec(body).unwrap_or_else(|e| panic!("encoding: {e}"));
        self.send_as(user_agent, method, path, &[], content_type, bytes)
    }

    fn get(&self, path: &str) -> Value {
        let r = self.http.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        json_of(&r)
    }
}

fn json_of(r: &HttpResponse) -> Value {
    r.json().unwrap_or_else(|| panic!("not JSON: {}", r.text()))
}

/// The object a write answered, asserting its status code.
fn ok(r: &HttpResponse, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    json_of(r)
}

/// A managedFields entry (without `time`) of the app version.
fn entry(manager: &str, operation: &str, fields: Value) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": operation
    })
}

/// A managedFields entry of the `/status` subresource.
fn status_entry(manager: &str, operation: &str, fields: Value) -> Value {
    let mut e = entry(manager, operation, fields);
    e["subresource"] = json!("status");
    e
}

fn is_rfc3339_utc_seconds(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Asserts `obj`'s managedFields: kube's order (Apply before Update, then by time in
/// seconds, then manager), a well-formed `time` on every entry that changed the object,
/// and the entries themselves (compared without `time`, in manager order).
fn assert_managed(obj: &Value, expected: &[Value]) {
    let actual = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let sort_key = |e: &Value| {
        let time = e["time"].as_str().unwrap_or("").to_string();
        (
            e["operation"].as_str().unwrap_or("").to_string(),
            time,
            e["manager"].as_str().unwrap_or("").to_string(),
        )
    };
    let keys: Vec<_> = actual.iter().map(sort_key).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "managedFields out of kube's order: {obj:#}");
    let mut stripped = Vec::new();
    for e in &actual {
        let mut e = e.clone();
        if let Some(m) = e.as_object_mut() {
            if let Some(t) = m.remove("time") {
                let t = t.as_str().unwrap_or("");
                assert!(is_rfc3339_utc_seconds(t), "bad time {t:?} in {obj:#}");
            }
        }
        stripped.push(e);
    }
    let by_manager = |v: &mut Vec<Value>| {
        v.sort_by_key(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
                e["subresource"].as_str().unwrap_or("").to_string(),
            )
        })
    };
    let mut expected = expected.to_vec();
    by_manager(&mut stripped);
    by_manager(&mut expected);
    assert_eq!(
        Value::Array(stripped),
        Value::Array(expected),
        "managedFields of {obj:#}"
    );
}

/// kube's 409 for apply conflicts (`NewApplyConflict`): one cause per field, in
/// structured-merge-diff's order; the message groups the fields by manager.
fn conflict(conflicts: &[(&str, &str)]) -> Value {
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(manager, field)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {manager}"), "field": field})
        })
        .collect();
    let message = match conflicts {
        [(manager, field)] => {
            format!("Apply failed with 1 conflict: conflict with {manager}: {field}")
        }
        _ => {
            let mut managers: Vec<&str> = conflicts.iter().map(|(m, _)| *m).collect();
            managers.sort();
            managers.dedup();
            let mut lines = Vec::new();
            for m in managers {
                lines.push(format!("conflicts with {m}:"));
                for (_, field) in conflicts.iter().filter(|(cm, _)| *cm == m) {
                    lines.push(format!("- {field}"));
                }
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        }
    };
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Conflict", "details": {"causes": causes}, "code": 409
    })
}

/// The message and causes kube's `NewInvalid` builds from field errors given as
/// (reason, field, error body): one error printed alone, several as a bracketed list.
fn field_errors(causes: &[(&str, &str, &str)]) -> (String, Vec<Value>) {
    let rendered: Vec<String> = causes
        .iter()
        .map(|(_, field, body)| format!("{field}: {body}"))
        .collect();
    let aggregate = match rendered.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", rendered.join(", ")),
    };
    let causes = causes
        .iter()
        .map(|(reason, field, body)| json!({"reason": reason, "message": body, "field": field}))
        .collect();
    (aggregate, causes)
}

/// kube's `NewInvalid` for an app (`code` 422 `Invalid`, or 400 `BadRequest` for the
/// immutability KEP).
fn invalid(name: &str, code: u16, causes: &[(&str, &str, &str)]) -> Value {
    let (aggregate, causes) = field_errors(causes);
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("App.{GROUP} \"{name}\" is invalid: {aggregate}"),
        "reason": if code == 400 { "BadRequest" } else { "Invalid" },
        "details": {"name": name, "group": GROUP, "kind": "App", "causes": causes},
        "code": code
    })
}

/// kube's 422 for invalid `PatchOptions`.
fn invalid_patch_options(causes: &[(&str, &str, &str)]) -> Value {
    let (aggregate, causes) = field_errors(causes);
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("PatchOptions.meta.k8s.io \"\" is invalid: {aggregate}"),
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": causes},
        "code": 422
    })
}

/// kube's 400 with a bare message.
fn bad_request(message: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "BadRequest", "code": 400
    })
}

fn not_found(name: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("apps.{GROUP} \"{name}\" not found"),
        "reason": "NotFound",
        "details": {"name": name, "group": GROUP, "kind": "apps"},
        "code": 404
    })
}

// ---------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------

#[test]
fn create_on_apply_owns_applied_fields_and_runs_defaulting() {
    let f = Fixture::new();
    // A real YAML body, with a comment and YAML-only syntax.
    let yaml = "# applied by alice\napiVersion: apply.example.com/v1\nkind: App\nmetadata:\n  name: a1\nspec:\n  replicas: 1\n  image: nginx\n  ports:\n  - name: http\n    port: 80\n  tags: [a]\n  env:\n    A: \"1\"\n";
    let r = f.send_as(
        "apply-tests/1.0",
        "PATCH",
        &app_path("a1"),
        &[("fieldManager", "alice")],
        APPLY,
        yaml.as_bytes().to_vec(),
    );
    let created = ok(&r, 201);
    // The default fills `mode`; alice owns only what she applied.
    assert_eq!(
        created["spec"],
        json!({"replicas": 1, "image": "nginx", "mode": "fast", "ports": [{"name": "http", "port": 80}],
               "tags": ["a"], "env": {"A": "1"}})
    );
    assert_eq!(created["metadata"]["generation"], 1);
    assert_eq!(created["metadata"]["namespace"], "default");
    let alice = entry(
        "alice",
        "Apply",
        json!({"f:spec": {"f:env": {"f:A": {}}, "f:image": {},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:replicas": {}, "f:tags": {"v:\"a\"": {}}}}),
    );
    assert_managed(&created, std::slice::from_ref(&alice));
    assert_eq!(f.get(&app_path("a1")), created);

    // Applying the same configuration again changes nothing: same resourceVersion,
    // same entry time.
    std::thread::sleep(Duration::from_millis(1100));
    let again = ok(
        &f.send_as(
            "apply-tests/1.0",
            "PATCH",
            &app_path("a1"),
            &[("fieldManager", "alice")],
            APPLY,
            yaml.as_bytes().to_vec(),
        ),
        200,
    );
    assert_eq!(again, created);

    // Creating, kube takes the name from the configuration only (its patcher does not
    // fill in the URL's); a uid names an object that should exist.
    let r = f.apply_with(
        &app_path("a2"),
        &[("fieldManager", "alice")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "spec": {"image": "x"}}),
    );
    assert_eq!(
        json_of(&r),
        bad_request("the name of the object () does not match the name on the URL (a2)")
    );
    let mut with_uid = app("a2", json!({"image": "x"}));
    with_uid["metadata"]["uid"] = json!("1234");
    let r = f.apply_with(&app_path("a2"), &[("fieldManager", "alice")], &with_uid);
    assert_eq!(
        json_of(&r),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Operation cannot be fulfilled on apps.apply.example.com \"a2\": uid mismatch: the provided object specified uid 1234, and no existing object was found",
               "reason": "Conflict", "details": {"name": "a2", "group": GROUP, "kind": "apps"}, "code": 409})
    );
    let mut elsewhere = app("a2", json!({"image": "x"}));
    elsewhere["metadata"]["namespace"] = json!("other");
    let r = f.apply_with(&app_path("a2"), &[("fieldManager", "alice")], &elsewhere);
    assert_eq!(
        json_of(&r),
        bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    );
    assert_eq!(json_of(&f.http.get(&app_path("a2"))), not_found("a2"));
    ok(&f.apply("alice", "a2", json!({"image": "x"})), 201);
    // Updating, the live object has the name: the configuration may leave it out, but
    // must not name another object.
    let r = f.apply_with(
        &app_path("a2"),
        &[("fieldManager", "alice")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "spec": {"image": "y"}}),
    );
    assert_eq!(ok(&r, 200)["spec"]["image"], "y");
    let r = f.apply_with(
        &app_path("a2"),
        &[("fieldManager", "alice")],
        &app("other", json!({"image": "z"})),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        json_of(&r),
        bad_request("the name of the object (other) does not match the name on the URL (a2)")
    );
    assert_eq!(f.get(&app_path("a2"))["spec"]["image"], "y");
}

#[test]
fn field_manager_force_and_type_are_validated_like_kube() {
    let f = Fixture::new();
    // The recorded 422 of the ssa case.
    let golden = common::testdata_json("conformance/golden/ssa.golden.json");
    let r = f.apply_with(&app_path("a1"), &[], &app("a1", json!({"replicas": 1})));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json_of(&r), golden["apply-missing-field-manager"]["body"]);

    let long = "m".repeat(129);
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", &long)],
        &app("a1", json!({"replicas": 1})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid_patch_options(&[(
            "FieldValueTooLong",
            "fieldManager",
            "Too long: may not be more than 128 bytes"
        )])
    );

    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "bad\u{7}name")],
        &app("a1", json!({"replicas": 1})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid_patch_options(&[(
            "FieldValueInvalid",
            "fieldManager",
            "Invalid value: \"bad\\aname\": invalid character U+0007 (at position 3)"
        )])
    );

    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "alice"), ("dryRun", "Bogus")],
        &app("a1", json!({"replicas": 1})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid_patch_options(&[(
            "FieldValueNotSupported",
            "dryRun",
            "Unsupported value: [\"Bogus\"]: supported values: \"All\""
        )])
    );

    // Nothing was created by the rejected requests.
    assert_eq!(json_of(&f.http.get(&app_path("a1"))), not_found("a1"));
    ok(&f.apply("alice", "a1", json!({"replicas": 1})), 201);

    // `force` belongs to apply patches only.
    let r = f.send_as(
        "apply-tests/1.0",
        "PATCH",
        &app_path("a1"),
        &[("force", "false")],
        "application/merge-patch+json",
        br#"{"spec":{"replicas":2}}"#.to_vec(),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid_patch_options(&[(
            "FieldValueForbidden",
            "force",
            "Forbidden: may not be specified for non-apply patch"
        )])
    );

    // Another version or kind than the endpoint's.
    let mut other = app("a1", json!({"replicas": 2}));
    other["apiVersion"] = json!("apply.example.com/v2");
    let r = f.apply_with(&app_path("a1"), &[("fieldManager", "alice")], &other);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        json_of(&r),
        bad_request("invalid object type: apply.example.com/v2, Kind=App")
    );
    // A field the schema does not declare cannot be typed (kube's bare 500).
    let r = f.apply("alice", "a1", json!({"replicas": 2, "bogus": 1}));
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        json_of(&r),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "failed to create typed patch object (/a1; apply.example.com/v1, Kind=App): .spec.bogus: field not declared in schema",
               "code": 500})
    );
    // managedFields may not be applied.
    let mut with_managed = app("a1", json!({"replicas": 2}));
    with_managed["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Apply"}]);
    let r = f.apply_with(&app_path("a1"), &[("fieldManager", "alice")], &with_managed);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        json_of(&r),
        bad_request("metadata.managedFields must be nil")
    );
    assert_eq!(f.get(&app_path("a1"))["spec"]["replicas"], 1);
}

#[test]
fn apply_bodies_are_decoded_as_kube_decodes_yaml() {
    let f = Fixture::new();
    let send = |name: &str, query: &[(&str, &str)], body: &str| {
        let mut q = vec![("fieldManager", "alice")];
        q.extend_from_slice(query);
        f.send_as(
            "apply-tests/1.0",
            "PATCH",
            &app_path(name),
            &q,
            APPLY,
            body.as_bytes().to_vec(),
        )
    };
    // sigs.k8s.io/yaml's errors, wrapped by the apply handler.
    let r = send("a1", &[], "spec: [1\n");
    assert_eq!(r.status, 400, "{}", r.text());
    let message = json_of(&r)["message"].as_str().unwrap_or("").to_string();
    assert!(
        message.starts_with("error decoding YAML: error converting YAML to JSON: yaml: line "),
        "{message}"
    );
    let r = send("a1", &[], "- 1\n- 2\n");
    assert_eq!(
        json_of(&r),
        bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    );
    // An empty configuration has no type.
    let r = send("a1", &[], "");
    assert_eq!(json_of(&r), bad_request("invalid object type: /, Kind="));
    // YAML 1.1: an unquoted y is a boolean, which a string list cannot hold. kube
    // names the configuration as given (here without a name).
    let r = send(
        "a1",
        &[],
        "apiVersion: apply.example.com/v1\nkind: App\nspec:\n  args: [y]\n",
    );
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        json_of(&r)["message"],
        "failed to create typed patch object (/; apply.example.com/v1, Kind=App): .spec.args[0]: expected string, got &value.valueUnstructured{Value:true}"
    );

    // Repeated keys: the last wins; kube warns by default, rejects when strict and
    // says nothing when told to ignore them.
    let repeated = "apiVersion: apply.example.com/v1\nkind: App\nmetadata:\n  name: d1\nspec:\n  replicas: 1\n  replicas: 2\n";
    let r = send("d1", &[("fieldValidation", "Strict")], repeated);
    assert_eq!(
        json_of(&r),
        bad_request(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 7: key \"replicas\" already set in map"
        )
    );
    assert_eq!(json_of(&f.http.get(&app_path("d1"))), not_found("d1"));
    let r = send("d1", &[], repeated);
    assert_eq!(ok(&r, 201)["spec"]["replicas"], 2);
    // Go's HTTP/1.1 server turns the newline of this warning into a space.
    let warning = r.header("warning").unwrap_or_default();
    assert!(
        warning.starts_with("299 - \"error converting YAML to JSON: yaml: unmarshal errors:")
            && warning.ends_with("line 7: key \\\"replicas\\\" already set in map\""),
        "{warning}"
    );
    let r = send("d1", &[("fieldValidation", "Ignore")], repeated);
    assert_eq!(ok(&r, 200)["spec"]["replicas"], 2);
    assert_eq!(r.header("warning"), None);
}

#[test]
fn two_managers_share_conflict_and_force_takes_ownership() {
    let f = Fixture::new();
    ok(
        &f.apply(
            "alice",
            "a1",
            json!({"replicas": 1, "image": "nginx", "args": ["x"], "env": {"A": "1"},
                   "selector": {"app": "a"}, "extra": {"foo": {"bar": 1}}}),
        ),
        201,
    );
    // Same value, disjoint map key: no conflict, image is shared.
    let shared = ok(
        &f.apply("bob", "a1", json!({"image": "nginx", "env": {"B": "2"}})),
        200,
    );
    assert_eq!(shared["spec"]["env"], json!({"A": "1", "B": "2"}));
    assert_managed(
        &shared,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:args": {}, "f:env": {"f:A": {}}, "f:extra": {"f:foo": {".": {}, "f:bar": {}}},
                       "f:image": {}, "f:replicas": {}, "f:selector": {}}}),
            ),
            entry(
                "bob",
                "Apply",
                json!({"f:spec": {"f:env": {"f:B": {}}, "f:image": {}}}),
            ),
        ],
    );

    // A shared field may not change without force.
    let r = f.apply("bob", "a1", json!({"image": "httpd", "env": {"B": "2"}}));
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(json_of(&r), conflict(&[("\"alice\"", ".spec.image")]));

    // Several conflicts: leaves of a level before deeper paths, each level sorted;
    // an atomic list and an atomic map conflict as a whole, a preserved subtree by field.
    let takeover = json!({"image": "nginx", "env": {"B": "2"}, "replicas": 3, "args": ["z"],
                          "selector": {"app": "b"}, "extra": {"foo": {"bar": 2}}});
    let r = f.apply("bob", "a1", takeover.clone());
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        json_of(&r),
        conflict(&[
            ("\"alice\"", ".spec.args"),
            ("\"alice\"", ".spec.replicas"),
            ("\"alice\"", ".spec.selector"),
            ("\"alice\"", ".spec.extra.foo.bar"),
        ])
    );
    assert_eq!(f.get(&app_path("a1")), shared, "a conflict must not write");

    // force=true takes the conflicting fields from alice (kube reads any value but
    // "false" and "0" as true).
    let forced = ok(
        &f.apply_with(
            &app_path("a1"),
            &[("fieldManager", "bob"), ("force", "True")],
            &app("a1", takeover),
        ),
        200,
    );
    assert_eq!(
        forced["spec"],
        json!({"replicas": 3, "image": "nginx", "mode": "fast", "args": ["z"], "env": {"A": "1", "B": "2"},
               "selector": {"app": "b"}, "extra": {"foo": {"bar": 2}}})
    );
    assert_eq!(forced["metadata"]["generation"], 3);
    assert_managed(
        &forced,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:env": {"f:A": {}}, "f:extra": {"f:foo": {}}, "f:image": {}}}),
            ),
            entry(
                "bob",
                "Apply",
                json!({"f:spec": {"f:args": {}, "f:env": {"f:B": {}}, "f:extra": {"f:foo": {".": {}, "f:bar": {}}},
                       "f:image": {}, "f:replicas": {}, "f:selector": {}}}),
            ),
        ],
    );

    // Now alice is the one who conflicts.
    let r = f.apply(
        "alice",
        "a1",
        json!({"image": "nginx", "env": {"A": "1"}, "replicas": 1}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(json_of(&r), conflict(&[("\"bob\"", ".spec.replicas")]));
    // force=false is no force.
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "alice"), ("force", "false")],
        &app(
            "a1",
            json!({"image": "nginx", "env": {"A": "1"}, "replicas": 1}),
        ),
    );
    assert_eq!(r.status, 409, "{}", r.text());
}

#[test]
fn fields_a_manager_stops_applying_are_removed_unless_another_owns_them() {
    let f = Fixture::new();
    ok(
        &f.apply(
            "alice",
            "a1",
            json!({"replicas": 1, "image": "nginx", "args": ["x"], "env": {"A": "1", "S": "s"}}),
        ),
        201,
    );
    ok(
        &f.apply(
            "bob",
            "a1",
            json!({"image": "nginx", "env": {"S": "s"}, "maxReplicas": 5}),
        ),
        200,
    );

    // alice drops replicas, args, env.A (hers alone: removed) and image, env.S (bob
    // still owns them: kept).
    let dropped = ok(&f.apply("alice", "a1", json!({"tags": ["t"]})), 200);
    assert_eq!(
        dropped["spec"],
        json!({"image": "nginx", "env": {"S": "s"}, "maxReplicas": 5, "mode": "fast", "tags": ["t"]})
    );
    assert_managed(
        &dropped,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:tags": {"v:\"t\"": {}}}}),
            ),
            entry(
                "bob",
                "Apply",
                json!({"f:spec": {"f:env": {"f:S": {}}, "f:image": {}, "f:maxReplicas": {}}}),
            ),
        ],
    );

    // Ownership moved to bob alone: he may now change image without conflict, and
    // dropping it removes it.
    let changed = ok(
        &f.apply(
            "bob",
            "a1",
            json!({"image": "httpd", "env": {"S": "s"}, "maxReplicas": 5}),
        ),
        200,
    );
    assert_eq!(changed["spec"]["image"], "httpd");
    let removed = ok(&f.apply("bob", "a1", json!({"maxReplicas": 5})), 200);
    assert_eq!(
        removed["spec"],
        json!({"maxReplicas": 5, "mode": "fast", "tags": ["t"]})
    );
    assert_managed(
        &removed,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:tags": {"v:\"t\"": {}}}}),
            ),
            entry("bob", "Apply", json!({"f:spec": {"f:maxReplicas": {}}})),
        ],
    );

    // An empty spec is a value alice then owns ...
    let empty = ok(&f.apply("alice", "a1", json!({})), 200);
    assert_managed(
        &empty,
        &[
            entry("alice", "Apply", json!({"f:spec": {}})),
            entry("bob", "Apply", json!({"f:spec": {"f:maxReplicas": {}}})),
        ],
    );
    // ... while a manager left owning nothing disappears from managedFields.
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "alice")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "a1"}}),
    );
    let gone = ok(&r, 200);
    assert_eq!(gone["spec"], json!({"maxReplicas": 5, "mode": "fast"}));
    assert_managed(
        &gone,
        &[entry(
            "bob",
            "Apply",
            json!({"f:spec": {"f:maxReplicas": {}}}),
        )],
    );
}

#[test]
fn list_map_items_and_set_values_owned_by_different_managers() {
    let f = Fixture::new();
    ok(
        &f.apply(
            "alice",
            "a1",
            json!({"ports": [{"name": "http", "port": 80}], "tags": ["a", "shared"]}),
        ),
        201,
    );
    // bob adds a field to alice's item, an item of his own, and set values.
    let both = ok(
        &f.apply(
            "bob",
            "a1",
            json!({"ports": [{"name": "http", "protocol": "TCP"}, {"name": "https", "port": 443}],
                   "tags": ["b", "shared"]}),
        ),
        200,
    );
    assert_eq!(
        both["spec"]["ports"],
        json!([{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443}])
    );
    // structured-merge-diff's order: live items the config lacks stay in place, the
    // config's items follow in its order.
    assert_eq!(both["spec"]["tags"], json!(["a", "b", "shared"]));
    assert_managed(
        &both,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {
                    "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                    "f:tags": {"v:\"a\"": {}, "v:\"shared\"": {}}}}),
            ),
            entry(
                "bob",
                "Apply",
                json!({"f:spec": {
                    "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:protocol": {}},
                                "k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}},
                    "f:tags": {"v:\"b\"": {}, "v:\"shared\"": {}}}}),
            ),
        ],
    );

    // Each may change the fields of an item only they own ...
    ok(
        &f.apply(
            "bob",
            "a1",
            json!({"ports": [{"name": "http", "protocol": "UDP"}, {"name": "https", "port": 8443}],
                   "tags": ["b", "shared"]}),
        ),
        200,
    );
    // ... but not the other's field of a shared item.
    let r = f.apply(
        "bob",
        "a1",
        json!({"ports": [{"name": "http", "port": 81, "protocol": "UDP"}, {"name": "https", "port": 8443}],
               "tags": ["b", "shared"]}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        json_of(&r),
        conflict(&[("\"alice\"", ".spec.ports[name=\"http\"].port")])
    );

    // alice drops the shared item and the shared value: her field `port` goes, the
    // item itself and `shared` stay for bob.
    let dropped = ok(&f.apply("alice", "a1", json!({"tags": ["a"]})), 200);
    assert_eq!(
        dropped["spec"]["ports"],
        json!([{"name": "http", "protocol": "UDP"}, {"name": "https", "port": 8443}])
    );
    assert_eq!(dropped["spec"]["tags"], json!(["a", "b", "shared"]));
    // bob drops his own item and value: removed.
    let dropped = ok(
        &f.apply(
            "bob",
            "a1",
            json!({"ports": [{"name": "http", "protocol": "UDP"}], "tags": ["b"]}),
        ),
        200,
    );
    assert_eq!(
        dropped["spec"]["ports"],
        json!([{"name": "http", "protocol": "UDP"}])
    );
    assert_eq!(dropped["spec"]["tags"], json!(["a", "b"]));
    assert_managed(
        &dropped,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:tags": {"v:\"a\"": {}}}}),
            ),
            entry(
                "bob",
                "Apply",
                json!({"f:spec": {
                    "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:protocol": {}}},
                    "f:tags": {"v:\"b\"": {}}}}),
            ),
        ],
    );
}

#[test]
fn non_apply_writes_record_update_entries_named_after_the_user_agent() {
    let f = Fixture::new();
    // POST: the manager is the user agent up to its first '/'; defaults are the
    // creator's too.
    let created = ok(
        &f.send_json_as(
            "creator-tool/1.2.3 (linux/amd64) kubernetes/abcdef",
            "POST",
            APPS,
            "application/json",
            &app("a1", json!({"replicas": 1, "image": "nginx"})),
        ),
        201,
    );
    assert_managed(
        &created,
        &[entry(
            "creator-tool",
            "Update",
            json!({"f:spec": {".": {}, "f:image": {}, "f:mode": {}, "f:replicas": {}}}),
        )],
    );

    // PUT with an explicit fieldManager.
    let mut put = created.clone();
    put["spec"]["image"] = json!("httpd");
    put["metadata"]["labels"] = json!({"team": "x"});
    let r = f.send_as(
        "ignored-agent/1",
        "PUT",
        &app_path("a1"),
        &[("fieldManager", "putter")],
        "application/json",
        serde_json::to_vec(&put).unwrap_or_default(),
    );
    let updated = ok(&r, 200);
    assert_managed(
        &updated,
        &[
            entry(
                "creator-tool",
                "Update",
                json!({"f:spec": {".": {}, "f:mode": {}, "f:replicas": {}}}),
            ),
            entry(
                "putter",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}, "f:spec": {"f:image": {}}}),
            ),
        ],
    );

    // Merge and JSON patches; a second write by the same manager joins its entry.
    ok(
        &f.send_json_as(
            "patcher/0.1",
            "PATCH",
            &app_path("a1"),
            "application/merge-patch+json",
            &json!({"spec": {"env": {"A": "1"}}}),
        ),
        200,
    );
    let patched = ok(
        &f.send_json_as(
            "patcher/0.1",
            "PATCH",
            &app_path("a1"),
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/spec/replicas", "value": 2}]),
        ),
        200,
    );
    assert_managed(
        &patched,
        &[
            entry(
                "creator-tool",
                "Update",
                json!({"f:spec": {".": {}, "f:mode": {}}}),
            ),
            entry(
                "patcher",
                "Update",
                json!({"f:spec": {"f:env": {".": {}, "f:A": {}}, "f:replicas": {}}}),
            ),
            entry(
                "putter",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}, "f:spec": {"f:image": {}}}),
            ),
        ],
    );

    // An applier conflicts with updaters too, named with their version; the value it
    // applies unchanged (env.A) is shared, not a conflict. Go's map order puts the
    // causes of several managers in any order: compare them sorted.
    let takeover = json!({"image": "caddy", "replicas": 3, "env": {"A": "1"}});
    let r = f.apply("alice", "a1", takeover.clone());
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        sorted_causes(json_of(&r)),
        sorted_causes(conflict(&[
            ("\"patcher\" using apply.example.com/v1", ".spec.replicas"),
            ("\"putter\" using apply.example.com/v1", ".spec.image"),
        ]))
    );
    let forced = ok(&f.force_apply("alice", "a1", takeover), 200);
    assert_managed(
        &forced,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:env": {"f:A": {}}, "f:image": {}, "f:replicas": {}}}),
            ),
            entry(
                "creator-tool",
                "Update",
                json!({"f:spec": {".": {}, "f:mode": {}}}),
            ),
            entry(
                "patcher",
                "Update",
                json!({"f:spec": {"f:env": {".": {}, "f:A": {}}}}),
            ),
            entry(
                "putter",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}}}),
            ),
        ],
    );
}

/// A `Status` with its `causes` sorted.
fn sorted_causes(mut status: Value) -> Value {
    if let Some(causes) = status["details"]["causes"].as_array_mut() {
        causes.sort_by_key(|c| c.to_string());
    }
    status
}

#[test]
fn untracked_objects_start_tracking_at_the_first_apply() {
    let f = Fixture::new();
    ok(
        &f.send_json_as(
            "creator/1",
            "POST",
            APPS,
            "application/json",
            &json!({"apiVersion": API_VERSION, "kind": "App",
                    "metadata": {"name": "u1", "labels": {"team": "blue"}},
                    "spec": {"replicas": 1, "image": "a"}}),
        ),
        201,
    );
    // An empty entry resets managedFields; later updates keep the object untracked.
    let reset = ok(
        &f.send_json_as(
            "resetter/1",
            "PATCH",
            &app_path("u1"),
            "application/merge-patch+json",
            &json!({"metadata": {"managedFields": [{}]}}),
        ),
        200,
    );
    assert!(
        reset["metadata"].get("managedFields").is_none(),
        "{reset:#}"
    );
    let updated = ok(
        &f.send_json_as(
            "editor/1",
            "PATCH",
            &app_path("u1"),
            "application/merge-patch+json",
            &json!({"spec": {"image": "b"}}),
        ),
        200,
    );
    assert!(
        updated["metadata"].get("managedFields").is_none(),
        "{updated:#}"
    );

    // The first apply gives every existing field to before-first-apply, which the
    // applier then conflicts with like any updater.
    let r = f.apply("alice", "u1", json!({"replicas": 3, "image": "b"}));
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        json_of(&r),
        conflict(&[(
            "\"before-first-apply\" using apply.example.com/v1",
            ".spec.replicas"
        )])
    );
    let forced = ok(
        &f.force_apply("alice", "u1", json!({"replicas": 3, "image": "b"})),
        200,
    );
    assert_managed(
        &forced,
        &[
            entry(
                "alice",
                "Apply",
                json!({"f:spec": {"f:image": {}, "f:replicas": {}}}),
            ),
            entry(
                "before-first-apply",
                "Update",
                json!({"f:metadata": {"f:labels": {".": {}, "f:team": {}}},
                       "f:spec": {".": {}, "f:image": {}, "f:mode": {}}}),
            ),
        ],
    );
}

#[test]
fn immutable_field_changed_by_apply_is_kube_400() {
    let f = Fixture::new();
    ok(
        &f.apply("alice", "a1", json!({"region": "eu", "image": "nginx"})),
        201,
    );
    let before = f.get(&app_path("a1"));
    // Changing it, even forced (as the KEP's conformance step).
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "alice"), ("force", "true")],
        &app("a1", json!({"region": "us", "image": "nginx"})),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid(
            "a1",
            400,
            &[(
                "FieldValueInvalid",
                "spec.region",
                "Invalid value: \"us\": field is immutable"
            )]
        )
    );
    // Dropping it when nobody else owns it removes it: also a change.
    let r = f.apply("alice", "a1", json!({"image": "nginx"}));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid(
            "a1",
            400,
            &[(
                "FieldValueInvalid",
                "spec.region",
                "Invalid value: null: field is immutable"
            )]
        )
    );
    assert_eq!(f.get(&app_path("a1")), before);
    // Another manager applying the same value, and changes elsewhere, are fine.
    ok(&f.apply("bob", "a1", json!({"region": "eu"})), 200);
    let r = ok(
        &f.apply("alice", "a1", json!({"region": "eu", "image": "httpd"})),
        200,
    );
    assert_eq!(r["spec"]["image"], "httpd");
}

#[test]
fn schema_and_cel_failures_on_apply_are_kube_422() {
    let f = Fixture::new();
    // Create on apply runs the rules too.
    let r = f.apply("alice", "a1", json!({"replicas": 5, "maxReplicas": 3}));
    assert_eq!(r.status, 422, "{}", r.text());
    let cel = invalid(
        "a1",
        422,
        &[(
            "FieldValueInvalid",
            "spec",
            "Invalid value: replicas must not exceed maxReplicas",
        )],
    );
    assert_eq!(json_of(&r), cel);
    assert_eq!(json_of(&f.http.get(&app_path("a1"))), not_found("a1"));

    ok(
        &f.apply("alice", "a1", json!({"replicas": 2, "maxReplicas": 3})),
        201,
    );
    let before = f.get(&app_path("a1"));
    // A second manager's apply is validated against the merged object.
    let r = f.apply("bob", "a1", json!({"maxReplicas": 3}));
    assert_eq!(ok(&r, 200)["spec"]["maxReplicas"], 3);
    let r = f.force_apply("bob", "a1", json!({"maxReplicas": 1}));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(json_of(&r), cel);
    let r = f.apply("alice", "a1", json!({"replicas": -1, "maxReplicas": 3}));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        json_of(&r),
        invalid(
            "a1",
            422,
            &[(
                "FieldValueInvalid",
                "spec.replicas",
                "Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
            )]
        )
    );
    let now = f.get(&app_path("a1"));
    assert_eq!(now["spec"], before["spec"]);
    assert_eq!(
        now["metadata"]["generation"],
        before["metadata"]["generation"]
    );
}

#[test]
fn dry_run_apply_persists_nothing() {
    let f = Fixture::new();
    let dry = [("fieldManager", "alice"), ("dryRun", "All")];
    let r = f.apply_with(&app_path("a1"), &dry, &app("a1", json!({"image": "nginx"})));
    let would_be = ok(&r, 201);
    assert_eq!(would_be["spec"], json!({"image": "nginx", "mode": "fast"}));
    assert_managed(
        &would_be,
        &[entry("alice", "Apply", json!({"f:spec": {"f:image": {}}}))],
    );
    assert_eq!(json_of(&f.http.get(&app_path("a1"))), not_found("a1"));

    let created = ok(&f.apply("alice", "a1", json!({"image": "nginx"})), 201);
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "bob"), ("dryRun", "All")],
        &app("a1", json!({"replicas": 4})),
    );
    let would_be = ok(&r, 200);
    assert_eq!(would_be["spec"]["replicas"], 4);
    assert_eq!(would_be["metadata"]["generation"], 2);
    assert_eq!(f.get(&app_path("a1")), created);
    // Conflicts and validation are reported as for a real apply.
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "bob"), ("dryRun", "All")],
        &app("a1", json!({"image": "httpd"})),
    );
    assert_eq!(json_of(&r), conflict(&[("\"alice\"", ".spec.image")]));
    let r = f.apply_with(
        &app_path("a1"),
        &[("fieldManager", "alice"), ("dryRun", "All")],
        &app("a1", json!({"image": "nginx", "replicas": -1})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(f.get(&app_path("a1")), created);
}

#[test]
fn status_apply_owns_only_status() {
    let f = Fixture::new();
    // The main resource ignores status.
    let created = ok(
        &f.apply_with(
            &app_path("a1"),
            &[("fieldManager", "alice")],
            &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "a1"},
                    "spec": {"image": "nginx"}, "status": {"phase": "Fake"}}),
        ),
        201,
    );
    assert!(created.get("status").is_none(), "{created:#}");
    assert_managed(
        &created,
        &[entry("alice", "Apply", json!({"f:spec": {"f:image": {}}}))],
    );

    // /status ignores everything but status.
    let status_path = format!("{}/status", app_path("a1"));
    let r = f.apply_with(
        &status_path,
        &[("fieldManager", "ctrl")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "a1", "labels": {"x": "y"}},
                "spec": {"image": "httpd"}, "status": {"phase": "Running", "ready": 1}}),
    );
    let with_status = ok(&r, 200);
    assert_eq!(with_status["spec"], created["spec"]);
    assert!(with_status["metadata"].get("labels").is_none());
    assert_eq!(
        with_status["status"],
        json!({"phase": "Running", "ready": 1})
    );
    assert_eq!(with_status["metadata"]["generation"], 1);
    assert_managed(
        &with_status,
        &[
            entry("alice", "Apply", json!({"f:spec": {"f:image": {}}})),
            status_entry(
                "ctrl",
                "Apply",
                json!({"f:status": {"f:phase": {}, "f:ready": {}}}),
            ),
        ],
    );

    // Status appliers conflict with each other, named with their subresource.
    let r = f.apply_with(
        &status_path,
        &[("fieldManager", "other")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "a1"},
                "status": {"phase": "Failed"}}),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        json_of(&r),
        conflict(&[("\"ctrl\" with subresource \"status\"", ".status.phase")])
    );
    // Dropping a status field removes it.
    let r = f.apply_with(
        &status_path,
        &[("fieldManager", "ctrl")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "a1"},
                "status": {"phase": "Running"}}),
    );
    assert_eq!(ok(&r, 200)["status"], json!({"phase": "Running"}));

    // A main-resource apply keeps status as it is.
    let r = ok(&f.apply("alice", "a1", json!({"image": "httpd"})), 200);
    assert_eq!(r["status"], json!({"phase": "Running"}));
    assert_eq!(r["spec"]["image"], "httpd");

    // /status never creates.
    let r = f.apply_with(
        &format!("{}/status", app_path("nope")),
        &[("fieldManager", "ctrl")],
        &json!({"apiVersion": API_VERSION, "kind": "App", "metadata": {"name": "nope"},
                "status": {"phase": "Running"}}),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(json_of(&r), not_found("nope"));
}

// ---------------------------------------------------------------------------------
// kubectl
// ---------------------------------------------------------------------------------

/// Runs kubectl, asserts success, returns stdout.
fn kubectl_ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed\n{}\n--- server stderr (tail) ---\n{}",
        describe_output(&out),
        server.stderr_tail(20)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server with the widgets CRD of the kubectl tests installed.
fn widget_server() -> TestServer {
    let server = TestServer::start();
    let crd = common::testdata_dir().join("crds/widgets.yaml");
    kubectl_ok(&server, &["create", "-f", &crd.to_string_lossy()]);
    kubectl_ok(
        &server,
        &[
            "wait",
            "--for",
            "condition=Established",
            "--timeout=20s",
            "crd/widgets.example.com",
        ],
    );
    server
}

/// A widget manifest with these spec fields (YAML lines under `spec:`).
fn widget_yaml(name: &str, spec_lines: &[&str]) -> String {
    let mut s = format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  labels:\n    tier: gold\nspec:\n"
    );
    for l in spec_lines {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn write(server: &TestServer, file: &str, text: &str) -> String {
    server.write_file(file, text).to_string_lossy().into_owned()
}

/// The widget as JSON, managedFields included.
fn widget(server: &TestServer, name: &str) -> Value {
    let out = kubectl_ok(
        server,
        &["get", "widget", name, "-o", "json", "--show-managed-fields"],
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl get -o json ({e}): {out}"))
}

/// A managedFields entry of the widgets' version (without `time`).
fn widget_entry(manager: &str, operation: &str, fields: Value) -> Value {
    let mut e = entry(manager, operation, fields);
    e["apiVersion"] = json!("example.com/v1");
    e
}

/// kubectl's advice after an apply conflict (`kubectl apply --server-side`).
const CONFLICT_ADVICE: &str =
    "Please review the fields above--they currently have other managers. Here
are the ways you can resolve this warning:
* If you intend to manage all of these fields, please re-run the apply
  command with the `--force-conflicts` flag.
* If you do not intend to manage all of the fields, please edit your
  manifest to remove references to the fields that should keep their
  current managers.
* You may co-own fields by updating your manifest to match the existing
  value; in this case, you'll become the manager if the other manager(s)
  stop managing the field (remove it from their configuration).
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts
";

#[test]
fn kubectl_apply_server_side_conflicts_force_and_dry_run() {
    let server = widget_server();
    let w1 = write(
        &server,
        "w1.yaml",
        &widget_yaml("w1", &["color: red", "replicas: 2"]),
    );
    assert_eq!(
        kubectl_ok(&server, &["apply", "--server-side", "-f", &w1]),
        "widget.example.com/w1 serverside-applied\n"
    );
    let obj = widget(&server, "w1");
    assert_eq!(
        obj["spec"],
        json!({"color": "red", "replicas": 2, "finish": "matte"})
    );
    assert_managed(
        &obj,
        &[widget_entry(
            "kubectl",
            "Apply",
            json!({"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:color": {}, "f:replicas": {}}}),
        )],
    );
    // Unchanged: kubectl says the same, the server writes nothing.
    assert_eq!(
        kubectl_ok(&server, &["apply", "--server-side", "-f", &w1]),
        "widget.example.com/w1 serverside-applied\n"
    );
    assert_eq!(widget(&server, "w1"), obj);

    // Server dry run.
    let blue = write(
        &server,
        "w1-blue.yaml",
        &widget_yaml("w1", &["color: blue", "replicas: 2"]),
    );
    assert_eq!(
        kubectl_ok(
            &server,
            &["apply", "--server-side", "--dry-run=server", "-f", &blue]
        ),
        "widget.example.com/w1 serverside-applied (server dry run)\n"
    );
    assert_eq!(widget(&server, "w1"), obj);

    // Another manager conflicts ...
    let out = server.kubectl(&[
        "apply",
        "--server-side",
        "--field-manager",
        "painter",
        "-f",
        &blue,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "error: Apply failed with 1 conflict: conflict with \"kubectl\": .spec.color\n{CONFLICT_ADVICE}"
        )
    );
    // ... until forced.
    assert_eq!(
        kubectl_ok(
            &server,
            &[
                "apply",
                "--server-side",
                "--field-manager",
                "painter",
                "--force-conflicts",
                "-f",
                &blue
            ]
        ),
        "widget.example.com/w1 serverside-applied\n"
    );
    let obj = widget(&server, "w1");
    assert_eq!(obj["spec"]["color"], "blue");
    assert_managed(
        &obj,
        &[
            widget_entry(
                "kubectl",
                "Apply",
                json!({"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:replicas": {}}}),
            ),
            widget_entry(
                "painter",
                "Apply",
                json!({"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:color": {}, "f:replicas": {}}}),
            ),
        ],
    );

    // Status through the status subresource.
    let status = write(
        &server,
        "w1-status.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nstatus:\n  replicas: 2\n",
    );
    assert_eq!(
        kubectl_ok(
            &server,
            &[
                "apply",
                "--server-side",
                "--subresource=status",
                "-f",
                &status
            ]
        ),
        "widget.example.com/w1 serverside-applied\n"
    );
    let with_status = widget(&server, "w1");
    assert_eq!(with_status["status"], json!({"replicas": 2}));
    assert_eq!(with_status["spec"], obj["spec"]);
    let mut kubectl_status =
        widget_entry("kubectl", "Apply", json!({"f:status": {"f:replicas": {}}}));
    kubectl_status["subresource"] = json!("status");
    let mut entries = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for e in &mut entries {
        if let Some(m) = e.as_object_mut() {
            m.remove("time");
        }
    }
    entries.push(kubectl_status);
    assert_managed(&with_status, &entries);

    // kubectl drops replicas from its manifest: painter still owns it, so it stays.
    let no_replicas = write(
        &server,
        "w1-noreplicas.yaml",
        &widget_yaml("w1", &["color: blue"]),
    );
    kubectl_ok(&server, &["apply", "--server-side", "-f", &no_replicas]);
    assert_eq!(widget(&server, "w1")["spec"]["replicas"], 2);
}

#[test]
fn kubectl_client_side_apply_and_migration_to_server_side() {
    let server = widget_server();
    let v1 = write(
        &server,
        "w2.yaml",
        &widget_yaml("w2", &["color: blue", "replicas: 2", "finish: gloss"]),
    );
    assert_eq!(
        kubectl_ok(&server, &["apply", "-f", &v1]),
        "widget.example.com/w2 created\n"
    );
    assert_eq!(
        kubectl_ok(&server, &["apply", "-f", &v1]),
        "widget.example.com/w2 unchanged\n"
    );
    let obj = widget(&server, "w2");
    let annotation = |obj: &Value| -> Value {
        let text = obj["metadata"]["annotations"]
            ["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap_or_else(|| panic!("no last-applied annotation: {obj:#}"))
            .to_string();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("annotation ({e}): {text}"))
    };
    assert_eq!(
        annotation(&obj),
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"annotations": {}, "labels": {"tier": "gold"}, "name": "w2", "namespace": "default"},
               "spec": {"color": "blue", "finish": "gloss", "replicas": 2}})
    );
    assert_managed(
        &obj,
        &[widget_entry(
            "kubectl-client-side-apply",
            "Update",
            json!({"f:metadata": {
                    "f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                    "f:labels": {".": {}, "f:tier": {}}},
                   "f:spec": {".": {}, "f:color": {}, "f:finish": {}, "f:replicas": {}}}),
        )],
    );

    // Client-side apply removes what the manifest no longer has (finish falls back to
    // its default).
    let v2 = write(
        &server,
        "w2-v2.yaml",
        &widget_yaml("w2", &["color: green", "replicas: 2"]),
    );
    assert_eq!(
        kubectl_ok(&server, &["apply", "-f", &v2]),
        "widget.example.com/w2 configured\n"
    );
    let obj = widget(&server, "w2");
    assert_eq!(
        obj["spec"],
        json!({"color": "green", "replicas": 2, "finish": "matte"})
    );
    assert_eq!(
        annotation(&obj)["spec"],
        json!({"color": "green", "replicas": 2})
    );

    // Switching to server-side apply: kubectl takes over the fields its annotation
    // lists (no conflict with its client-side self) and migrates the entries.
    let v3 = write(
        &server,
        "w2-v3.yaml",
        &widget_yaml("w2", &["color: yellow"]),
    );
    assert_eq!(
        kubectl_ok(&server, &["apply", "--server-side", "-f", &v3]),
        "widget.example.com/w2 serverside-applied\n"
    );
    let obj = widget(&server, "w2");
    // replicas was only the client-side apply's: dropped with the migration.
    assert_eq!(
        obj["spec"],
        json!({"color": "yellow", "replicas": 1, "finish": "matte"})
    );
    let managers: Vec<(String, String)> = obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["manager"].as_str().unwrap_or("").to_string(),
                e["operation"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(
        !managers
            .iter()
            .any(|(m, _)| m == "kubectl-client-side-apply"),
        "{obj:#}"
    );
    assert!(
        managers.contains(&("kubectl".to_string(), "Apply".to_string())),
        "{obj:#}"
    );
    // The server keeps the annotation in step for the `kubectl` manager.
    assert_eq!(annotation(&obj)["spec"], json!({"color": "yellow"}));
}

#[test]
fn kubectl_diff_with_and_without_server_side() {
    let server = widget_server();
    let red = write(&server, "w1.yaml", &widget_yaml("w1", &["color: red"]));
    let blue = write(
        &server,
        "w1-blue.yaml",
        &widget_yaml("w1", &["color: blue"]),
    );
    for server_side in [false, true] {
        let mode: &[&str] = if server_side { &["--server-side"] } else { &[] };
        let diff = |file: &str| {
            let mut args = vec!["diff"];
            args.extend_from_slice(mode);
            args.extend_from_slice(&["-f", file]);
            server.kubectl(&args)
        };
        // Not there yet: the whole object is new (a dry-run create or apply).
        let out = diff(&red);
        assert_eq!(out.status.code(), Some(1), "{}", describe_output(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("example.com.v1.Widget.default.w1"), "{text}");
        assert!(text.contains("+  color: red\n"), "{text}");
        assert!(text.contains("+kind: Widget\n"), "{text}");
        let absent = server.kubectl(&["get", "widget", "w1"]);
        assert_eq!(absent.status.code(), Some(1), "kubectl diff created w1");

        let mut apply = vec!["apply"];
        apply.extend_from_slice(mode);
        apply.extend_from_slice(&["-f", &red]);
        kubectl_ok(&server, &apply);
        let before = widget(&server, "w1");

        // The same manifest: no diff, exit 0.
        let out = diff(&red);
        assert_eq!(out.status.code(), Some(0), "{}", describe_output(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "");

        // A change: a unified diff, exit 1, nothing written.
        let out = diff(&blue);
        assert_eq!(out.status.code(), Some(1), "{}", describe_output(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("diff -u -N "), "{text}");
        assert!(text.contains("-  color: red\n+  color: blue\n"), "{text}");
        assert!(
            text.contains("-  generation: 1\n+  generation: 2\n"),
            "{text}"
        );
        assert!(!text.contains("managedFields"), "{text}");
        assert_eq!(widget(&server, "w1"), before);

        kubectl_ok(&server, &["delete", "widget", "w1"]);
    }
}

/// An `EDITOR` for kubectl edit: a script that edits the file in place with sed.
fn editor_script(dir: &Path, name: &str, sed: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\nsed -i '{sed}' \"$1\"\n"))
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .unwrap_or_else(|e| panic!("chmod: {e}"));
    assert!(status.success());
    path.to_string_lossy().into_owned()
}

fn kubectl_edit(server: &TestServer, editor: &str, args: &[&str]) -> std::process::Output {
    let mut all = vec!["edit"];
    all.extend_from_slice(args);
    server
        .kubectl_command(&all)
        .env("EDITOR", editor)
        .env("KUBE_EDITOR", editor)
        .output()
        .unwrap_or_else(|e| panic!("kubectl edit: {e}"))
}

#[test]
fn kubectl_edit_with_an_editor_script() {
    let server = widget_server();
    let w1 = common::testdata_dir().join("objects/widget-w1.yaml");
    kubectl_ok(
        &server,
        &["apply", "--server-side", "-f", &w1.to_string_lossy()],
    );

    let purple = editor_script(server.dir(), "purple.sh", "s/color: red/color: purple/");
    let out = kubectl_edit(&server, &purple, &["widget", "w1"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "widget.example.com/w1 edited\n"
    );
    let obj = widget(&server, "w1");
    assert_eq!(obj["spec"]["color"], "purple");
    assert_eq!(obj["metadata"]["generation"], 2);
    // kubectl edit sends a merge patch as manager kubectl-edit, which takes the field.
    assert_managed(
        &obj,
        &[
            widget_entry(
                "kubectl",
                "Apply",
                json!({"f:metadata": {"f:labels": {"f:tier": {}}}}),
            ),
            widget_entry("kubectl-edit", "Update", json!({"f:spec": {"f:color": {}}})),
        ],
    );

    // Nothing to change: kubectl cancels and the object stays as it is.
    let out = kubectl_edit(&server, &purple, &["widget", "w1"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Edit cancelled, no changes made.\n"
    );
    assert_eq!(widget(&server, "w1"), obj);

    // Editing status through /status.
    let status = editor_script(
        server.dir(),
        "status.sh",
        "s/^spec:/status:\\n  replicas: 3\\nspec:/",
    );
    let out = kubectl_edit(
        &server,
        &status,
        &["widget", "w1", "--subresource", "status"],
    );
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "widget.example.com/w1 edited\n"
    );
    let obj = widget(&server, "w1");
    assert_eq!(obj["status"], json!({"replicas": 3}));
    assert!(
        obj["metadata"]["managedFields"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["manager"] == "kubectl-edit" && e["subresource"] == "status"),
        "{obj:#}"
    );
}
