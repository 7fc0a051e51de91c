//! Immutable fields end to end (KEP "Immutable fields", issue 4): updates of the main
//! resource (PUT, merge patch, JSON patch), of `/status` and of `/scale` are rejected
//! with the KEP's 400 `BadRequest` naming every immutable field they change; CRDs with
//! misplaced markers are rejected with 422; the markers are published unchanged in
//! `/openapi/v2` and `/openapi/v3`; CRD updates change the rules; kubectl users see the
//! message as kube prints a `BadRequest`.

mod common;

use std::time::Duration;

use common::{Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const VAULTS: &str = "/apis/immutable.example.com/v1/namespaces/default/vaults";
const V1: &str = "/apis/immutable.example.com/v1/namespaces/default/vaults/v1";

/// A CRD with every kind of marker, and the status and scale subresources.
fn vault_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "vaults.immutable.example.com"},
        "spec": {
            "group": "immutable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "vaults", "singular": "vault", "kind": "Vault", "listKind": "VaultList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
                },
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "x-kubernetes-immutable": true},
                        "whole": {"type": "object", "x-kubernetes-immutable": true,
                                  "properties": {"a": {"type": "string"}}},
                        "perField": {"type": "object", "properties": {
                            "x": {"type": "string", "x-kubernetes-immutable": true},
                            "free": {"type": "string"}
                        }},
                        "keysFixed": {"type": "object", "x-kubernetes-immutable-keys": true,
                                      "additionalProperties": {"type": "string"}},
                        "someSet": {"type": "array", "x-kubernetes-list-type": "set",
                                    "x-kubernetes-immutable": true, "items": {"type": "string"}},
                        "byName": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["name"],
                                   "x-kubernetes-immutable-keys": true,
                                   "items": {"type": "object", "required": ["name"], "properties": {
                                       "name": {"type": "string", "x-kubernetes-immutable": true},
                                       "x": {"type": "string"}
                                   }}}
                    }},
                    "status": {"type": "object", "properties": {
                        "installedAt": {"type": "string", "x-kubernetes-immutable": true},
                        "phase": {"type": "string"},
                        "replicas": {"type": "integer"}
                    }}
                }}}
            }]
        }
    })
}

fn vault() -> Value {
    json!({
        "apiVersion": "immutable.example.com/v1", "kind": "Vault",
        "metadata": {"name": "v1"},
        "spec": {
            "replicas": 2,
            "whole": {"a": "1"},
            "perField": {"x": "1", "free": "1"},
            "keysFixed": {"k1": "v1"},
            "someSet": ["a", "b"],
            "byName": [{"name": "n1", "x": "1"}]
        }
    })
}

/// A server with the vault CRD served and one vault (with status) created.
struct Fixture {
    server: TestServer,
    http: Http,
}

impl Fixture {
    fn new() -> Fixture {
        let server = TestServer::start();
        let http = server.http();
        let created = http.send_json("POST", CRDS, &vault_crd());
        assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
        let served = http.wait_for_status(VAULTS, 200, Duration::from_secs(20));
        assert_eq!(served.status, 200, "CRD not served: {}", served.text());
        let f = Fixture { server, http };
        let obj = f.http.send_json("POST", VAULTS, &vault());
        assert_eq!(obj.status, 201, "creating the vault: {}", obj.text());
        let status = f.send(
            "PATCH",
            &format!("{V1}/status"),
            "application/merge-patch+json",
            &json!({"status": {"installedAt": "t0", "phase": "Ready", "replicas": 2}}),
        );
        assert_eq!(status.status, 200, "setting status: {}", status.text());
        f
    }

    fn send(&self, method: &str, path: &str, content_type: &str, body: &Value) -> HttpResponse {
        let headers = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("Content-Type".to_string(), content_type.to_string()),
        ];
        let bytes = serde_json::to_vec(body).unwrap_or_else(|e| panic!("encoding body: {e}"));
        self.http
            .request(method, path, &[], &headers, Some(bytes))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn get(&self, path: &str) -> Value {
        let r = self.http.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json().unwrap_or_else(|| panic!("GET {path}: not JSON"))
    }

    /// The stored vault, for a PUT body (with its resourceVersion).
    fn current(&self) -> Value {
        self.get(V1)
    }
}

/// The KEP's rejection: 400 `BadRequest`, every violation in message and causes.
fn bad_request(violations: &[(&str, &str)]) -> Value {
    let rendered: Vec<String> = violations
        .iter()
        .map(|(field, value)| format!("{field}: Invalid value: {value}: field is immutable"))
        .collect();
    let aggregate = if rendered.len() == 1 {
        rendered[0].clone()
    } else {
        format!("[{}]", rendered.join(", "))
    };
    let causes: Vec<Value> = violations
        .iter()
        .map(|(field, value)| {
            json!({
                "reason": "FieldValueInvalid",
                "message": format!("Invalid value: {value}: field is immutable"),
                "field": field,
            })
        })
        .collect();
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("Vault.immutable.example.com \"v1\" is invalid: {aggregate}"),
        "reason": "BadRequest",
        "details": {"name": "v1", "group": "immutable.example.com", "kind": "Vault", "causes": causes},
        "code": 400
    })
}

fn assert_rejected(r: &HttpResponse, violations: &[(&str, &str)]) {
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json(), Some(bad_request(violations)), "{}", r.text());
}

#[test]
fn put_merge_patch_and_json_patch_are_rejected_with_every_violation() {
    let f = Fixture::new();
    let before = f.current();

    let mut put = before.clone();
    put["spec"]["whole"]["a"] = json!("2");
    assert_rejected(
        &f.send("PUT", V1, "application/json", &put),
        &[("spec.whole", r#"{"a":"2"}"#)],
    );

    // All violations, not just the first, in field order.
    let r = f.send(
        "PATCH",
        V1,
        "application/merge-patch+json",
        &json!({"spec": {
            "whole": null,
            "perField": {"x": "2"},
            "keysFixed": {"k2": "v2"},
            "someSet": ["a", "c"],
            "byName": [{"name": "n1"}, {"name": "n2"}]
        }}),
    );
    assert_rejected(
        &r,
        &[
            ("spec.byName[1]", r#"{"name":"n2"}"#),
            ("spec.keysFixed[k2]", r#""v2""#),
            ("spec.perField.x", r#""2""#),
            ("spec.someSet", r#"["a","c"]"#),
            ("spec.whole", "null"),
        ],
    );

    let r = f.send(
        "PATCH",
        V1,
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/spec/byName/0"}, {"op": "replace", "path": "/spec/replicas", "value": 3}]),
    );
    assert_rejected(
        &r,
        &[("spec.byName", r#"{"name":"n1"}"#), ("spec.replicas", "3")],
    );

    // Nothing was written.
    assert_eq!(f.current(), before);
}

#[test]
fn mutable_changes_set_reorders_and_no_op_updates_pass() {
    let f = Fixture::new();
    let r = f.send(
        "PATCH",
        V1,
        "application/merge-patch+json",
        &json!({"spec": {
            "perField": {"free": "2"},
            "keysFixed": {"k1": "changed"},
            "someSet": ["b", "a"],
            "byName": [{"name": "n1", "x": "2"}]
        }}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let spec = &r.json().expect("JSON")["spec"];
    assert_eq!(spec["someSet"], json!(["b", "a"]));
    assert_eq!(spec["keysFixed"], json!({"k1": "changed"}));
    // Setting a mutable parent that was unset, and removing it, drag its immutable
    // children along (the KEP's per-field example).
    let r = f.send(
        "PATCH",
        V1,
        "application/merge-patch+json",
        &json!({"spec": {"perField": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = f.send(
        "PATCH",
        V1,
        "application/merge-patch+json",
        &json!({"spec": {"perField": {"x": "new"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let current = f.current();
    let r = f.send("PUT", V1, "application/json", &current);
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn status_and_scale_updates_are_checked() {
    let f = Fixture::new();
    let status_path = format!("{V1}/status");

    let r = f.send(
        "PATCH",
        &status_path,
        "application/merge-patch+json",
        &json!({"status": {"installedAt": "t1", "phase": "Degraded"}}),
    );
    assert_rejected(&r, &[("status.installedAt", r#""t1""#)]);

    let mut put = f.current();
    put["status"]
        .as_object_mut()
        .expect("status")
        .remove("installedAt");
    // A status write ignores spec, so an immutable spec change in the body is no violation.
    put["spec"]["whole"]["a"] = json!("ignored");
    let r = f.send("PUT", &status_path, "application/json", &put);
    assert_rejected(&r, &[("status.installedAt", "null")]);

    let r = f.send(
        "PATCH",
        &status_path,
        "application/merge-patch+json",
        &json!({"status": {"phase": "Degraded"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());

    // spec.replicas is immutable, so scaling is refused.
    let scale_path = format!("{V1}/scale");
    let mut scale = f.get(&scale_path);
    assert_eq!(scale["spec"]["replicas"], json!(2));
    scale["spec"]["replicas"] = json!(5);
    let r = f.send("PUT", &scale_path, "application/json", &scale);
    assert_rejected(&r, &[("spec.replicas", "5")]);
    let r = f.send(
        "PATCH",
        &scale_path,
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 7}}),
    );
    assert_rejected(&r, &[("spec.replicas", "7")]);
    assert_eq!(f.get(&scale_path)["spec"]["replicas"], json!(2));
}

#[test]
fn crds_with_misplaced_markers_are_rejected_with_422() {
    let f = Fixture::new();
    let mut crd = vault_crd();
    crd["metadata"]["name"] = json!("safes.immutable.example.com");
    crd["spec"]["names"] =
        json!({"plural": "safes", "singular": "safe", "kind": "Safe", "listKind": "SafeList"});
    let schema = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    schema["properties"]["metadata"] = json!({"type": "object", "properties": {
        "name": {"type": "string", "x-kubernetes-immutable": true}
    }});
    schema["properties"]["spec"]["properties"]["perField"]["x-kubernetes-immutable-keys"] =
        json!(true);
    schema["properties"]["spec"]["properties"]["byName"]["items"]["properties"]["name"]
        .as_object_mut()
        .expect("name schema")
        .remove("x-kubernetes-immutable");
    let r = f.http.send_json("POST", CRDS, &crd);
    assert_eq!(r.status, 422, "{}", r.text());
    let root = "spec.validation.openAPIV3Schema";
    let errors = [
        (
            format!("{root}.properties[metadata].properties[name].x-kubernetes-immutable"),
            "FieldValueForbidden",
            "Forbidden: must not be used inside metadata".to_string(),
        ),
        (
            format!("{root}.properties[spec].properties[byName].items.properties[name].x-kubernetes-immutable"),
            "FieldValueRequired",
            "Required value: must be true for the x-kubernetes-list-map-keys of a list with x-kubernetes-immutable-keys".to_string(),
        ),
        (
            format!("{root}.properties[spec].properties[perField].x-kubernetes-immutable-keys"),
            "FieldValueForbidden",
            "Forbidden: must only be used on maps (additionalProperties) or if x-kubernetes-list-type is map".to_string(),
        ),
    ];
    let body = r.json().expect("JSON");
    let message = format!(
        "CustomResourceDefinition.apiextensions.k8s.io \"safes.immutable.example.com\" is invalid: [{}]",
        errors
            .iter()
            .map(|(field, _, msg)| format!("{field}: {msg}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(body["message"], json!(message));
    assert_eq!(body["reason"], json!("Invalid"));
    let mut causes = body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    causes.sort_by_key(|c| c["field"].as_str().unwrap_or_default().to_string());
    let expected: Vec<Value> = errors
        .iter()
        .map(|(field, reason, msg)| json!({"reason": reason, "message": msg, "field": field}))
        .collect();
    assert_eq!(causes, expected);
}

#[test]
fn openapi_publishes_the_markers_unchanged() {
    let f = Fixture::new();
    let name = "com.example.immutable.v1.Vault";
    let v3 = f.get("/openapi/v3/apis/immutable.example.com/v1");
    let v2 = f.get("/openapi/v2");
    for (doc, schema) in [
        ("v3", &v3["components"]["schemas"][name]),
        ("v2", &v2["definitions"][name]),
    ] {
        let spec = &schema["properties"]["spec"]["properties"];
        let status = &schema["properties"]["status"]["properties"];
        for (marked, ext) in [
            (&spec["replicas"], "x-kubernetes-immutable"),
            (&spec["whole"], "x-kubernetes-immutable"),
            (
                &spec["perField"]["properties"]["x"],
                "x-kubernetes-immutable",
            ),
            (&spec["keysFixed"], "x-kubernetes-immutable-keys"),
            (&spec["someSet"], "x-kubernetes-immutable"),
            (&spec["byName"], "x-kubernetes-immutable-keys"),
            (
                &spec["byName"]["items"]["properties"]["name"],
                "x-kubernetes-immutable",
            ),
            (&status["installedAt"], "x-kubernetes-immutable"),
        ] {
            assert_eq!(marked[ext], json!(true), "{doc}: {ext} missing in {marked}");
        }
        assert!(spec["perField"]["properties"]["free"]
            .get("x-kubernetes-immutable")
            .is_none());
    }
}

#[test]
fn crd_updates_change_the_rules() {
    let f = Fixture::new();
    let crd_path = format!("{CRDS}/vaults.immutable.example.com");
    let mut crd = f.get(&crd_path);
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    spec["perField"]["properties"]["free"]["x-kubernetes-immutable"] = json!(true);
    spec["whole"]
        .as_object_mut()
        .expect("whole schema")
        .remove("x-kubernetes-immutable");
    let r = f.http.send_json("PUT", &crd_path, &crd);
    assert_eq!(r.status, 200, "{}", r.text());
    let patch = |body: Value| f.send("PATCH", V1, "application/merge-patch+json", &body);
    // The catalog follows the CRD: wait until the new rules are served.
    let rejected = common::poll(Duration::from_secs(10), || {
        let r = patch(json!({"spec": {"perField": {"free": "2"}}}));
        (r.status == 400).then_some(r)
    })
    .expect("perField.free becomes immutable");
    assert_rejected(&rejected, &[("spec.perField.free", r#""2""#)]);
    let r = patch(json!({"spec": {"whole": {"a": "2"}}}));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn kubectl_shows_the_bad_request() {
    let f = Fixture::new();
    let out = f.server.kubectl(&[
        "patch",
        "vaults.immutable.example.com",
        "v1",
        "--type=merge",
        "-p",
        r#"{"spec":{"whole":{"a":"2"},"replicas":3}}"#,
    ]);
    assert!(!out.status.success(), "{}", common::describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        r#"Error from server (BadRequest): Vault.immutable.example.com "v1" is invalid: [spec.replicas: Invalid value: 3: field is immutable, spec.whole: Invalid value: {"a":"2"}: field is immutable]"#,
        "{}",
        common::describe_output(&out)
    );
    let out = f.server.kubectl(&["scale", "vault", "v1", "--replicas=4"]);
    assert!(!out.status.success(), "{}", common::describe_output(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("spec.replicas: Invalid value: 4: field is immutable"),
        "{}",
        common::describe_output(&out)
    );
}
