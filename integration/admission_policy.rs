//! ValidatingAdmissionPolicies and their bindings against the real binary: kubectl
//! apply of a policy file, denials with kube's Status, Warn bindings as Warning headers,
//! matchConditions, namespaceSelector, params from a custom resource, and kube's
//! validation texts for invalid policies and bindings.

mod common;

use common::{describe_output, poll, testdata_dir, HttpResponse, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const SETTLE: Duration = Duration::from_secs(20);
const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

/// Runs kubectl, asserts it succeeded, returns stdout.
fn ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed\n{}\n--- server stderr (tail) ---\n{}",
        describe_output(&out),
        server.stderr_tail(20)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn apply_crd(server: &TestServer, file: &str, name: &str) {
    let path = testdata_dir().join(file);
    ok(server, &["apply", "-f", &path.to_string_lossy()]);
    let crd = format!("crd/{name}");
    ok(
        server,
        &["wait", "--for=condition=Established", "--timeout=20s", &crd],
    );
}

fn widget(ns: &str, name: &str, replicas: i64, color: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"color": color, "replicas": replicas},
    })
}

fn widgets_path(ns: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{ns}/widgets")
}

/// POSTs a widget, retrying while the freshly established CRD is not served yet.
fn post_widget(server: &TestServer, body: &Value) -> HttpResponse {
    let ns = body["metadata"]["namespace"].as_str().unwrap_or("default");
    let http = server.http();
    poll(SETTLE, || {
        let r = http.send_json("POST", &widgets_path(ns), body);
        (r.status != 404).then_some(r)
    })
    .expect("widgets are served")
}

#[test]
fn max_replicas_policy_applied_with_kubectl_denies_with_kubes_status() {
    let server = TestServer::start();
    let http = server.http();
    apply_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    let file = testdata_dir().join("admission_policy/max-replicas.yaml");
    let out = ok(&server, &["apply", "-f", &file.to_string_lossy()]);
    assert_eq!(
        out,
        "validatingadmissionpolicy.admissionregistration.k8s.io/max-replicas created\n\
         validatingadmissionpolicybinding.admissionregistration.k8s.io/max-replicas-binding created\n"
    );

    // Re-applying: `matchConstraints` is an atomic struct that kube defaults, so
    // kubectl's three-way patch always carries it for the policy.
    let out = ok(&server, &["apply", "-f", &file.to_string_lossy()]);
    assert_eq!(
        out,
        "validatingadmissionpolicy.admissionregistration.k8s.io/max-replicas configured\n\
         validatingadmissionpolicybinding.admissionregistration.k8s.io/max-replicas-binding unchanged\n"
    );
    // kube's printer columns.
    let words = |out: &str, line: usize| -> Vec<String> {
        out.lines()
            .nth(line)
            .unwrap_or("")
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let out = ok(&server, &["get", "validatingadmissionpolicies"]);
    assert_eq!(words(&out, 0), ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert_eq!(words(&out, 1)[..3], ["max-replicas", "1", "<unset>"]);
    let out = ok(&server, &["get", "validatingadmissionpolicybindings"]);
    assert_eq!(words(&out, 0), ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_eq!(
        words(&out, 1)[..3],
        ["max-replicas-binding", "max-replicas", "<unset>"]
    );

    // kube's defaults and status.
    let p = http
        .get(&format!("{POLICIES}/max-replicas"))
        .json()
        .expect("json");
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let mc = &p["spec"]["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    assert_eq!(p["metadata"]["generation"], 1);
    assert_eq!(p["status"]["observedGeneration"], 1);
    let st = http.get(&format!("{POLICIES}/max-replicas/status"));
    assert_eq!(st.status, 200, "{}", st.text());
    assert_eq!(st.json().expect("json")["status"]["observedGeneration"], 1);

    // A violating create: 422 Invalid, worded as kube's admission.NewForbidden.
    let r = post_widget(&server, &widget("default", "big", 7, "blue", json!({})));
    let message = "widgets.example.com \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5";
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("status"),
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": "Invalid",
            "details": {
                "name": "big",
                "group": "example.com",
                "kind": "widgets",
                "causes": [{"message": "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"}],
            },
            "code": 422,
        })
    );

    // Within the limit: created. Exempted by the matchCondition: created.
    let r = post_widget(&server, &widget("default", "small", 3, "blue", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = post_widget(
        &server,
        &widget("default", "exempt", 9, "blue", json!({"exempt": "yes"})),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    // Updates are checked too. kubectl renders kube's Invalid status by its details:
    // kind `widgets`, one cause with an empty field.
    let out = server.kubectl(&[
        "patch",
        "widget",
        "small",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":8}}"#,
    ]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "The widgets \"small\" is invalid: : ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5\n"
    );

    // Deleting the binding lifts the policy at once.
    let r = http.request(
        "DELETE",
        &format!("{BINDINGS}/max-replicas-binding"),
        &[],
        &[],
        None,
    );
    assert_eq!(r.map(|r| r.status).ok(), Some(200));
    let r = post_widget(&server, &widget("default", "big", 7, "blue", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn warn_binding_with_namespace_selector_adds_a_warning_header() {
    let server = TestServer::start();
    let http = server.http();
    apply_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-red"},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["example.com"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{
                "expression": "object.spec.color != 'red'",
                "messageExpression": "'color ' + object.spec.color + ' is not allowed in ' + namespaceObject.metadata.name",
            }],
        },
    });
    let r = http.send_json("POST", POLICIES, &policy);
    assert_eq!(r.status, 201, "{}", r.text());
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "no-red-prod"},
        "spec": {
            "policyName": "no-red",
            "validationActions": ["Warn", "Audit"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}},
        },
    });
    let r = http.send_json("POST", BINDINGS, &binding);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["spec"]["matchResources"]["matchPolicy"],
        "Equivalent"
    );

    // Outside the selected namespace: no warning.
    let r = post_widget(&server, &widget("default", "red1", 1, "red", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("warning"), None);
    // In it: created, with kube's Warning text.
    let r = post_widget(&server, &widget("prod", "red2", 1, "red", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.header("warning").as_deref(),
        Some("299 - \"Validation failed for ValidatingAdmissionPolicy 'no-red' with binding 'no-red-prod': color red is not allowed in prod\"")
    );
}

#[test]
fn params_from_a_custom_resource_limit_replicas() {
    let server = TestServer::start();
    let http = server.http();
    apply_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    apply_crd(
        &server,
        "admission_policy/replica-limits-crd.yaml",
        "replicalimits.policy.example.com",
    );
    let file = testdata_dir().join("admission_policy/param-policy.yaml");
    ok(&server, &["apply", "-f", &file.to_string_lossy()]);

    // parameterNotFoundAction: Deny, and no param yet.
    let r = post_widget(&server, &widget("default", "w1", 2, "blue", json!({})));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["message"],
        "widgets.example.com \"w1\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );

    let limit = json!({"apiVersion": "policy.example.com/v1", "kind": "ReplicaLimit",
        "metadata": {"name": "limit-3"}, "maxReplicas": 3});
    let r = poll(SETTLE, || {
        let r = http.send_json("POST", "/apis/policy.example.com/v1/replicalimits", &limit);
        (r.status != 404).then_some(r)
    })
    .expect("replicalimits served");
    assert_eq!(r.status, 201, "{}", r.text());

    let r = post_widget(&server, &widget("default", "w1", 2, "blue", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    // Over the param's limit: the validation's reason (Forbidden → 403) and its
    // messageExpression, which reads a variable and the param.
    let r = post_widget(&server, &widget("default", "w2", 4, "blue", json!({})));
    assert_eq!(r.status, 403, "{}", r.text());
    let body = r.json().expect("json");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["code"], 403);
    assert_eq!(
        body["message"],
        "widgets.example.com \"w2\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas 4 exceed the limit 3"
    );

    // A paramKind no served kind has: kube's policy configuration error (Fail).
    let ghost = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "ghost"},
        "spec": {
            "paramKind": {"apiVersion": "ghost.example.com/v1", "kind": "Ghost"},
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["example.com"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{"expression": "true"}],
        },
    });
    assert_eq!(http.send_json("POST", POLICIES, &ghost).status, 201);
    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "ghost"},
        "spec": {"policyName": "ghost", "validationActions": ["Deny"]},
    });
    assert_eq!(http.send_json("POST", BINDINGS, &binding).status, 201);
    let r = post_widget(&server, &widget("default", "w3", 1, "blue", json!({})));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["message"],
        "widgets.example.com \"w3\" is forbidden: ValidatingAdmissionPolicy 'ghost' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'ghost.example.com/v1, Kind=Ghost'"
    );
}

#[test]
fn invalid_policies_and_bindings_are_rejected_with_kubes_texts() {
    let server = TestServer::start();
    let http = server.http();
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bad"},
        "spec": {
            "matchConstraints": {},
            "validations": [
                {"expression": "request.nope == 1"},
                {"expression": "6"},
                {"expression": "true", "reason": "Teapot"},
            ],
        },
    });
    let r = http.send_json("POST", POLICIES, &policy);
    assert_eq!(r.status, 422, "{}", r.text());
    let body = r.json().expect("json");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"bad\" is invalid: [spec.matchConstraints.resourceRules: Required value, spec.validations[0].expression: Invalid value: \"request.nope == 1\": compilation failed: ERROR: <input>:1:8: undefined field 'nope'\n | request.nope == 1\n | .......^, spec.validations[1].expression: Invalid value: \"6\": must evaluate to bool but got int, spec.validations[2].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"]"
    );
    assert_eq!(
        body["details"]["causes"][1]["field"],
        "spec.validations[0].expression"
    );

    let binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "bad-binding"},
        "spec": {"validationActions": ["Deny", "Warn"]},
    });
    let r = http.send_json("POST", BINDINGS, &binding);
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["message"],
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"bad-binding\" is invalid: [spec.policyName: Required value, spec.validationActions: Invalid value: [\"Deny\",\"Warn\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)]"
    );

    // Discovery lists both kinds.
    let r = http.get("/apis/admissionregistration.k8s.io/v1");
    let names: Vec<String> = r.json().expect("json")["resources"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    for n in [
        "validatingadmissionpolicies",
        "validatingadmissionpolicies/status",
        "validatingadmissionpolicybindings",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} not in {names:?}");
    }
}

#[test]
fn policy_written_through_one_server_is_enforced_by_another_on_the_same_etcd() {
    let etcd = common::Etcd::start();
    etcd.wait_ready();
    let a = TestServer::start_on_etcd(&etcd.url(), &[]);
    let b = TestServer::start_on_etcd(&etcd.url(), &[]);
    apply_crd(&a, "crds/widgets.yaml", "widgets.example.com");
    let file = testdata_dir().join("admission_policy/max-replicas.yaml");
    ok(&a, &["apply", "-f", &file.to_string_lossy()]);
    // B learns of the policy and binding from its storage watch.
    let http_b = b.http();
    let dry_run = format!("{}?dryRun=All", widgets_path("default"));
    let big = widget("default", "big", 7, "blue", json!({}));
    let r = poll(SETTLE, || {
        let r = http_b.send_json("POST", &dry_run, &big);
        (r.status == 422).then_some(r)
    });
    let r = r.expect("B denies the violating widget");
    assert_eq!(
        r.json().expect("json")["message"],
        "widgets.example.com \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
    );
    // And of the binding's deletion.
    let del = a.http().request(
        "DELETE",
        &format!("{BINDINGS}/max-replicas-binding"),
        &[],
        &[],
        None,
    );
    assert_eq!(del.map(|r| r.status).ok(), Some(200));
    let r = poll(SETTLE, || {
        let r = http_b.send_json("POST", &dry_run, &big);
        (r.status == 201).then_some(r)
    });
    assert!(r.is_some(), "B still denies after the binding was deleted");
}

/// Token users of the RBAC test server: an admin and two plain users.
const RBAC_TOKENS: &str = "admin-token,admin,uid-admin,system:masters
alice-token,alice,uid-alice
bob-token,bob,uid-bob
";

/// A server with `--authorization-mode RBAC` and the users of [`RBAC_TOKENS`].
fn start_rbac_server() -> (TestServer, common::Http) {
    let dir = std::env::temp_dir().join(format!(
        "crd-apiserver-vap-rbac-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, RBAC_TOKENS).expect("token file");
    let server = TestServer::start_secure(&[
        "--token-auth-file",
        tokens.to_str().unwrap_or_default(),
        "--authorization-mode",
        "RBAC",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let text = std::fs::read_to_string(server.kubeconfig()).expect("kubeconfig");
    let config: Value = serde_norway::from_str(&text).expect("kubeconfig YAML");
    let data = config
        .pointer("/clusters/0/cluster/certificate-authority-data")
        .and_then(Value::as_str)
        .expect("certificate-authority-data");
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64 CA");
    let ca = String::from_utf8(pem).expect("PEM");
    let http = common::Http::new_tls(server.url(), "vap-rbac-test", &ca, None);
    (server, http)
}

/// `method path` with `body` as `user` (a token of [`RBAC_TOKENS`]).
fn send_as(
    http: &common::Http,
    user: &str,
    method: &str,
    path: &str,
    body: &Value,
) -> HttpResponse {
    let mut h = common::json_accept();
    h.push(("Authorization".into(), format!("Bearer {user}-token")));
    h.push(("Content-Type".into(), "application/json".into()));
    let bytes = serde_json::to_vec(body).expect("JSON");
    http.request(method, path, &[], &h, Some(bytes))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn authorizer_policy_admits_approvers_and_denies_others_under_rbac() {
    let (_server, http) = start_rbac_server();
    let created = |r: HttpResponse| assert_eq!(r.status, 201, "{}", r.text());
    let crd: Value =
        serde_norway::from_str(&common::testdata("crds/widgets.yaml")).expect("CRD YAML");
    created(send_as(
        &http,
        "admin",
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    ));
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let role = |name: &str, verbs: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": verbs}]})
    };
    let binding = |name: &str, users: &[&str]| {
        let subjects: Vec<Value> = users
            .iter()
            .map(|u| json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": u}))
            .collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects})
    };
    let roles = format!("{rbac}/clusterroles");
    let bindings = format!("{rbac}/clusterrolebindings");
    created(send_as(
        &http,
        "admin",
        "POST",
        &roles,
        &role("widget-maker", json!(["create", "get"])),
    ));
    created(send_as(
        &http,
        "admin",
        "POST",
        &roles,
        &role("widget-approver", json!(["approve"])),
    ));
    created(send_as(
        &http,
        "admin",
        "POST",
        &bindings,
        &binding("widget-maker", &["alice", "bob"]),
    ));
    created(send_as(
        &http,
        "admin",
        "POST",
        &bindings,
        &binding("widget-approver", &["alice"]),
    ));
    // The decision is a variable (a `dyn` holding a Decision), read lazily.
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "approvers-only"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                "apiVersions": ["*"], "resources": ["widgets"], "operations": ["CREATE"]}]},
            "variables": [{"name": "decision",
                "expression": "authorizer.requestResource.check('approve')"}],
            "validations": [{
                "expression": "variables.decision.allowed() && !variables.decision.errored()",
                "messageExpression": "'user ' + request.userInfo.username + ' may not approve widgets'"
            }, {
                "expression": "authorizer.group('').resource('secrets').namespace('default').check('get').allowed() == false",
                "message": "widget makers must not read secrets"
            }]
        }
    });
    created(send_as(&http, "admin", "POST", POLICIES, &policy));
    let vap_binding = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "approvers-only-binding"},
        "spec": {"policyName": "approvers-only", "validationActions": ["Deny"]}
    });
    created(send_as(&http, "admin", "POST", BINDINGS, &vap_binding));

    let path = widgets_path("default");
    // The CRD may take a moment to be served.
    let r = poll(SETTLE, || {
        let r = send_as(
            &http,
            "bob",
            "POST",
            &path,
            &widget("default", "w-bob", 1, "red", json!({})),
        );
        (r.status != 404).then_some(r)
    })
    .expect("widgets are served");
    // No `reason`: kube's default Invalid (422).
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["message"],
        "widgets.example.com \"w-bob\" is forbidden: ValidatingAdmissionPolicy 'approvers-only' with binding 'approvers-only-binding' denied request: user bob may not approve widgets"
    );
    let r = send_as(
        &http,
        "alice",
        "POST",
        &path,
        &widget("default", "w-alice", 1, "red", json!({})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // The admin (system:masters) may read secrets: the second validation denies.
    let r = send_as(
        &http,
        "admin",
        "POST",
        &path,
        &widget("default", "w-admin", 1, "red", json!({})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("json")["message"],
        "widgets.example.com \"w-admin\" is forbidden: ValidatingAdmissionPolicy 'approvers-only' with binding 'approvers-only-binding' denied request: widget makers must not read secrets"
    );
    // messageExpression has no `authorizer` (kube compiles it without one).
    let mut bad = policy.clone();
    bad["metadata"]["name"] = json!("bad-message");
    bad["spec"]["validations"][0]["messageExpression"] =
        json!("authorizer.path('/x').check('get').reason()");
    let r = send_as(&http, "admin", "POST", POLICIES, &bad);
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(
        r.text().contains("undeclared reference to 'authorizer'"),
        "{}",
        r.text()
    );
}

#[test]
fn type_checking_warns_about_fields_the_matched_crd_lacks() {
    let server = TestServer::start();
    let http = server.http();
    apply_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    let policy = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "typo"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                "apiVersions": ["v1"], "resources": ["widgets"], "operations": ["CREATE"]}]},
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "object.spec.nope == 1"}
            ]
        }
    });
    let r = http.send_json("POST", POLICIES, &policy);
    assert_eq!(r.status, 201, "{}", r.text());
    let p = http.get(&format!("{POLICIES}/typo")).json().expect("json");
    assert_eq!(p["status"]["observedGeneration"], 1);
    assert_eq!(
        p["status"]["typeChecking"],
        json!({"expressionWarnings": [{
            "fieldRef": "spec.validations[1].expression",
            "warning": "example.com/v1, Kind=Widget: compilation failed: ERROR: <input>:1:12: undefined field 'nope'\n | object.spec.nope == 1\n | ...........^\n"
        }]})
    );
}
