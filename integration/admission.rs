//! Admission (issue 8): in-process mutating and validating hooks registered by a Rust
//! harness, run at kube's admission points of the write pipeline.
//!
//! Expected texts come from kube's source: a denial is worded by
//! `apiserver/pkg/admission/plugin/webhook/errors.ToStatusErr`.

mod common;

use common::webhook::HttpsWebhookServer;
use common::Http;
use crd_apiserver::admission::{AdmissionRequest, AdmissionResponse, Matcher};
use crd_apiserver::rest::Operation;
use crd_apiserver::server::{Config, Server};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const API_VERSION: &str = "admission.example.com/v1";
const WIDGETS: &str = "/apis/admission.example.com/v1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// An in-process server and a runtime to run it (and the hooks) on.
struct InProcess {
    /// Keeps the server's tasks running.
    _runtime: tokio::runtime::Runtime,
    server: Server,
    http: Http,
    /// `TEST_BACKEND=etcd`: the server's own etcd (stopped after the server).
    _etcd: Option<common::Etcd>,
}

/// A multi-threaded runtime for in-process servers and test webhooks.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
}

/// `TEST_BACKEND=etcd`: a fresh etcd for an in-process server (as `TestServer` does).
fn test_etcd() -> Option<common::Etcd> {
    match std::env::var("TEST_BACKEND").as_deref() {
        Ok("etcd") => {
            let etcd = common::Etcd::start();
            etcd.wait_ready();
            Some(etcd)
        }
        _ => None,
    }
}

impl InProcess {
    /// Start a server on a free port with the test CRD served, on the embedded store
    /// or, with `TEST_BACKEND=etcd`, on its own etcd.
    fn start() -> InProcess {
        let etcd = test_etcd();
        let runtime = runtime();
        let config = Config {
            port: 0,
            etcd_servers: etcd.iter().map(common::Etcd::url).collect(),
            ..Config::default()
        };
        let server = runtime
            .block_on(Server::start(config))
            .unwrap_or_else(|e| panic!("start: {e}"));
        let http = Http::new(&server.url(), "admission-test");
        let r = http.send_json("POST", CRDS, &widget_crd());
        assert_eq!(r.status, 201, "{}", r.text());
        let r = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
        assert_eq!(r.status, 200, "{}", r.text());
        InProcess {
            _runtime: runtime,
            server,
            http,
            _etcd: etcd,
        }
    }

    fn admission(&self) -> &crd_apiserver::admission::Admission {
        &self.server.api().admission
    }
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.admission.example.com"},
        "spec": {
            "group": "admission.example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "string"},
                        "fromHook": {"type": "string"},
                        "forbidden": {"type": "boolean"},
                        "replicas": {"type": "integer", "maximum": 3},
                        "nested": {"type": "object", "properties": {
                            "inner": {"type": "string", "default": "x"}
                        }}
                    }},
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                }}}
            }]
        }
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// Requests seen by a hook.
type Seen = Arc<Mutex<Vec<AdmissionRequest>>>;

fn seen_requests(seen: &Seen) -> Vec<AdmissionRequest> {
    seen.lock().map(|s| s.clone()).unwrap_or_default()
}

#[test]
fn mutating_hook_output_is_pruned_and_defaulted_again() {
    let t = InProcess::start();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    t.admission().register_mutating(
        "mutate.example.com",
        Matcher::new(
            &["admission.example.com"],
            &["widgets"],
            &[Operation::Create],
        ),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                let mut obj = req.object.clone();
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                obj["spec"]["fromHook"] = json!("yes");
                obj["spec"]["unknownFromHook"] = json!(1);
                obj["spec"]["nested"] = json!({});
                AdmissionResponse::mutate(obj).with_warning("mutated by the hook")
            }
        },
    );
    let r = t.http.send_json(
        "POST",
        WIDGETS,
        &widget("mutated", json!({"size": "S", "unknownFromClient": true})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json().unwrap_or_default();
    assert_eq!(
        body["spec"],
        json!({"size": "S", "fromHook": "yes", "nested": {"inner": "x"}})
    );
    let warnings = r.header("warning").unwrap_or_default();
    assert!(warnings.contains("mutated by the hook"), "{warnings}");
    assert!(warnings.contains("spec.unknownFromClient"), "{warnings}");
    assert!(!warnings.contains("unknownFromHook"), "{warnings}");

    // The hook saw the defaulted, pruned object of a CREATE, as kube sends it.
    let reqs = seen_requests(&seen);
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(req.operation, Operation::Create);
    assert_eq!(
        (
            req.group.as_str(),
            req.version.as_str(),
            req.resource.as_str()
        ),
        ("admission.example.com", "v1", "widgets")
    );
    assert_eq!(
        (req.kind.as_str(), req.subresource.as_str()),
        ("Widget", "")
    );
    assert_eq!(
        (req.name.as_str(), req.namespace.as_str()),
        ("mutated", "default")
    );
    assert_eq!(req.object["spec"], json!({"size": "S"}));
    assert!(req.old_object.is_none());
    assert!(!req.dry_run);

    // Update is not in the matcher's operations: the hook does not run.
    let mut obj = t
        .http
        .get(&format!("{WIDGETS}/mutated"))
        .json()
        .unwrap_or_default();
    obj["spec"]["size"] = json!("M");
    let r = t.http.send_json("PUT", &format!("{WIDGETS}/mutated"), &obj);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(seen_requests(&seen).len(), 1);
}

#[test]
fn validating_hook_denial_is_worded_as_kube() {
    let t = InProcess::start();
    t.admission().register_validating(
        "deny.example.com",
        Matcher::new(&["*"], &["*"], &[Operation::Create, Operation::Update]),
        |req: AdmissionRequest| async move {
            if req.object["spec"]["forbidden"] == json!(true) {
                AdmissionResponse::deny("spec.forbidden is set")
            } else {
                AdmissionResponse::allow().with_warning("checked")
            }
        },
    );
    let r = t.http.send_json(
        "POST",
        WIDGETS,
        &widget("denied", json!({"forbidden": true})),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "admission webhook \"deny.example.com\" denied the request: spec.forbidden is set",
            "code": 400
        })
    );
    assert_eq!(t.http.get(&format!("{WIDGETS}/denied")).status, 404);

    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("allowed", json!({"size": "S"})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.header("warning").unwrap_or_default().contains("checked"));

    // An update that the hook denies leaves the stored object alone.
    let mut obj = r.json().unwrap_or_default();
    obj["spec"]["forbidden"] = json!(true);
    let r = t.http.send_json("PUT", &format!("{WIDGETS}/allowed"), &obj);
    assert_eq!(r.status, 400, "{}", r.text());
    let stored = t
        .http
        .get(&format!("{WIDGETS}/allowed"))
        .json()
        .unwrap_or_default();
    assert_eq!(stored["spec"], json!({"size": "S"}));
}

#[test]
fn validating_hook_runs_after_schema_validation() {
    let t = InProcess::start();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    t.admission().register_validating(
        "record.example.com",
        Matcher::new(
            &["admission.example.com"],
            &["widgets"],
            &[Operation::Create],
        ),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                AdmissionResponse::allow()
            }
        },
    );
    // Schema validation rejects first: the validating hook never sees the object.
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("invalid", json!({"replicas": 9})));
    assert_eq!(r.status, 422, "{}", r.text());
    assert!(seen_requests(&seen).is_empty());
    // A valid object reaches it prepared for storage (uid, creationTimestamp set).
    let r = t.http.send_json(
        "POST",
        &format!("{WIDGETS}?dryRun=All"),
        &widget("valid", json!({})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let reqs = seen_requests(&seen);
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].dry_run);
    assert!(reqs[0].object["metadata"]["uid"].is_string());
    assert_eq!(reqs[0].object["spec"], json!({}));
}

#[test]
fn subresource_rules_match_only_their_subresource() {
    let t = InProcess::start();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    t.admission().register_validating(
        "status.example.com",
        Matcher::new(
            &["admission.example.com"],
            &["widgets/status"],
            &[Operation::Update],
        ),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                AdmissionResponse::deny_with_code(403, "status is read-only")
            }
        },
    );
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("sub", json!({"size": "S"})));
    assert_eq!(r.status, 201, "{}", r.text());
    let mut obj = r.json().unwrap_or_default();
    obj["spec"]["size"] = json!("L");
    let r = t.http.send_json("PUT", &format!("{WIDGETS}/sub"), &obj);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(seen_requests(&seen).is_empty());

    let mut obj = r.json().unwrap_or_default();
    obj["status"] = json!({"phase": "Ready"});
    let r = t
        .http
        .send_json("PUT", &format!("{WIDGETS}/sub/status"), &obj);
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        json!("admission webhook \"status.example.com\" denied the request: status is read-only")
    );
    let reqs = seen_requests(&seen);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].subresource, "status");
    assert_eq!(reqs[0].operation, Operation::Update);
    assert_eq!(
        reqs[0]
            .old_object
            .as_ref()
            .map(|o| o["spec"]["size"].clone()),
        Some(json!("L"))
    );
}

// ---- webhooks over HTTPS ----

use base64::Engine;

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// How the test webhook answers one AdmissionReview: `Some(response)` (the `response`
/// object; its `uid` is filled in), or `None` to hang past any timeout.
type Reply = Arc<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

/// The test webhook server (`common::webhook`), answering AdmissionReviews.
struct WebhookServer {
    server: HttpsWebhookServer,
    base: String,
}

impl WebhookServer {
    /// The reviews received so far, with their paths.
    fn reviews(&self) -> Vec<(String, Value)> {
        self.server.requests()
    }

    /// `clientConfig` for `path` on this server.
    fn client_config(&self, path: &str) -> Value {
        self.server.client_config(path)
    }
}

fn start_webhook(_t: &InProcess, reply: Reply) -> WebhookServer {
    start_webhook_for(&["127.0.0.1"], reply)
}

/// A webhook server whose certificate names `names`; `reply`'s response is sent back
/// in an AdmissionReview with the request's uid.
fn start_webhook_for(names: &[&str], reply: Reply) -> WebhookServer {
    WebhookServer::new(HttpsWebhookServer::start_for(names, review_reply(reply)))
}

/// `reply`'s response sent back in an AdmissionReview with the request's uid.
fn review_reply(reply: Reply) -> common::webhook::Reply {
    Arc::new(move |path, review| {
        let mut response = reply(path, review)?;
        response["uid"] = review["request"]["uid"].clone();
        Some(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        )
    })
}

impl WebhookServer {
    fn new(server: HttpsWebhookServer) -> WebhookServer {
        WebhookServer {
            base: server.base().to_string(),
            server,
        }
    }
}

/// A webhook entry for widgets CREATE calling `path` on `server`.
fn widget_webhook(name: &str, server: &WebhookServer, path: &str) -> Value {
    json!({
        "name": name,
        "clientConfig": server.client_config(path),
        "rules": [{"operations": ["CREATE"], "apiGroups": ["admission.example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"]
    })
}

fn configuration(kind: &str, name: &str, webhooks: Vec<Value>) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks
    })
}

fn patch_response(ops: Value) -> Value {
    json!({
        "allowed": true, "patchType": "JSONPatch",
        "patch": base64::engine::general_purpose::STANDARD.encode(ops.to_string()),
    })
}

#[test]
fn webhook_patch_is_pruned_and_defaulted_again() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, _| {
            let mut r = patch_response(json!([
                {"op": "add", "path": "/spec/fromHook", "value": "webhook"},
                {"op": "add", "path": "/spec/unknownFromWebhook", "value": 1},
                {"op": "add", "path": "/spec/nested", "value": {}}
            ]));
            r["warnings"] = json!(["from the webhook"]);
            Some(r)
        }),
    );
    let config = configuration(
        "MutatingWebhookConfiguration",
        "mutate",
        vec![widget_webhook("mutate.example.com", &server, "/mutate")],
    );
    let r = t.http.send_json("POST", MUTATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    // kube's defaults for a v1 webhook.
    let hook = &r.json().unwrap_or_default()["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["reinvocationPolicy"], "Never");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["rules"][0]["scope"], "*");

    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("patched", json!({"size": "S"})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["spec"],
        json!({"size": "S", "fromHook": "webhook", "nested": {"inner": "x"}})
    );
    assert!(r
        .header("warning")
        .unwrap_or_default()
        .contains("from the webhook"));

    let reviews = server.reviews();
    assert_eq!(reviews.len(), 1);
    assert_eq!(reviews[0].0, "/mutate");
    let review = &reviews[0].1;
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let req = &review["request"];
    assert!(req["uid"].is_string());
    assert_eq!(
        req["kind"],
        json!({"group": "admission.example.com", "version": "v1", "kind": "Widget"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "admission.example.com", "version": "v1", "resource": "widgets"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["requestResource"], req["resource"]);
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(
        (req["name"].as_str(), req["namespace"].as_str()),
        (Some("patched"), Some("default"))
    );
    assert_eq!(req["object"]["spec"], json!({"size": "S"}));
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["dryRun"], false);
    // A credential-less request on the loopback plain-HTTP port is kube's old insecure
    // port user.
    assert_eq!(
        req["userInfo"],
        json!({"username": "system:unsecured", "groups": ["system:masters", "system:authenticated"]})
    );
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert_eq!(req["options"]["apiVersion"], "meta.k8s.io/v1");

    // The configuration is a resource like any other.
    let r = t.http.get(&format!("{MUTATING}/mutate"));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = t.http.get(MUTATING);
    assert_eq!(
        r.json().unwrap_or_default()["items"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let r = t
        .http
        .request("DELETE", &format!("{MUTATING}/mutate"), &[], &[], None);
    assert_eq!(r.map(|r| r.status).unwrap_or_default(), 200);
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("unpatched", json!({"size": "S"})));
    assert_eq!(r.json().unwrap_or_default()["spec"], json!({"size": "S"}));
}

#[test]
fn webhook_denial_is_worded_as_kube() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, _| {
            Some(
                json!({"allowed": false, "status": {"code": 403, "message": "widgets are closed today"}}),
            )
        }),
    );
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deny",
        vec![widget_webhook("deny.example.com", &server, "/validate")],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("denied", json!({"size": "S"})));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default(),
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "admission webhook \"deny.example.com\" denied the request: widgets are closed today",
            "code": 403
        })
    );
}

#[test]
fn webhook_failure_policy_on_connection_refused_and_timeout() {
    let t = InProcess::start();
    let hanging = start_webhook(&t, Arc::new(|_, _| None));
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap_or_else(|e| panic!("{e}"));
    let refused_url = format!("https://{closed}/refused");
    let mut refused = widget_webhook("refused.example.com", &hanging, "/");
    refused["clientConfig"]["url"] = json!(refused_url);
    let mut slow = widget_webhook("slow.example.com", &hanging, "/slow");
    slow["timeoutSeconds"] = json!(1);

    for (hook, expected) in [
        (
            refused.clone(),
            format!("Internal error occurred: failed calling webhook \"refused.example.com\": failed to call webhook: Post \"{refused_url}?timeout=10s\": "),
        ),
        (
            slow.clone(),
            format!("Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{}/slow?timeout=1s\": context deadline exceeded", hanging.base),
        ),
    ] {
        let config = configuration("ValidatingWebhookConfiguration", "failing", vec![hook.clone()]);
        let r = t.http.send_json("POST", VALIDATING, &config);
        assert_eq!(r.status, 201, "{}", r.text());
        let r = t.http.send_json("POST", WIDGETS, &widget("failing", json!({})));
        assert_eq!(r.status, 500, "{}", r.text());
        let body = r.json().unwrap_or_default();
        assert_eq!(body["reason"], "InternalError");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(&expected), "{message}");

        // failurePolicy: Ignore lets the write through.
        let mut ignored = hook;
        ignored["failurePolicy"] = json!("Ignore");
        let mut current = t.http.get(&format!("{VALIDATING}/failing")).json().unwrap_or_default();
        current["webhooks"] = json!([ignored]);
        let r = t.http.send_json("PUT", &format!("{VALIDATING}/failing"), &current);
        assert_eq!(r.status, 200, "{}", r.text());
        let r = t.http.send_json("POST", WIDGETS, &widget("failing", json!({})));
        assert_eq!(r.status, 201, "{}", r.text());
        let _ = t.http.request("DELETE", &format!("{WIDGETS}/failing"), &[], &[], None);
        let _ = t.http.request("DELETE", &format!("{VALIDATING}/failing"), &[], &[], None);
    }
}

#[test]
fn webhook_namespace_and_object_selectors() {
    let t = InProcess::start();
    let server = start_webhook(&t, Arc::new(|_, _| Some(json!({"allowed": true}))));
    let mut by_namespace = widget_webhook("ns.example.com", &server, "/ns");
    by_namespace["namespaceSelector"] = json!({"matchLabels": {"admission": "on"}});
    let mut by_object = widget_webhook("obj.example.com", &server, "/obj");
    by_object["objectSelector"] =
        json!({"matchExpressions": [{"key": "watched", "operator": "Exists"}]});
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "selectors",
        vec![by_namespace, by_object],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());

    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("plain", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(server.reviews().is_empty());

    let mut labelled = widget("labelled", json!({}));
    labelled["metadata"]["labels"] = json!({"watched": "yes"});
    let r = t.http.send_json("POST", WIDGETS, &labelled);
    assert_eq!(r.status, 201, "{}", r.text());
    let paths: Vec<String> = server.reviews().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, vec!["/obj".to_string()]);

    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "audited", "labels": {"admission": "on"}}});
    let r = t.http.send_json("POST", "/api/v1/namespaces", &ns);
    assert_eq!(r.status, 201, "{}", r.text());
    let mut in_audited = widget("in-audited", json!({}));
    in_audited["metadata"]["namespace"] = json!("audited");
    let r = t.http.send_json(
        "POST",
        "/apis/admission.example.com/v1/namespaces/audited/widgets",
        &in_audited,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let paths: Vec<String> = server.reviews().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, vec!["/obj".to_string(), "/ns".to_string()]);
}

#[test]
fn kubectl_applies_and_lists_webhook_configurations() {
    let server = common::TestServer::start();
    let manifest = |timeout: u32| {
        format!(
            "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: demo\nwebhooks:\n- name: demo.example.com\n  clientConfig:\n    url: https://127.0.0.1:1/validate\n  rules:\n  - operations: [\"CREATE\"]\n    apiGroups: [\"nothing.example.com\"]\n    apiVersions: [\"v1\"]\n    resources: [\"things\"]\n  sideEffects: None\n  timeoutSeconds: {timeout}\n  admissionReviewVersions: [\"v1\"]\n"
        )
    };
    let path = server.write_file("webhook.yaml", &manifest(5));
    let file = path.to_string_lossy().to_string();
    let out = server.kubectl(&["apply", "-f", &file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "validatingwebhookconfiguration.admissionregistration.k8s.io/demo created"
    );
    // A second apply sends kubectl's strategic merge patch: webhooks merge by name.
    server.write_file("webhook.yaml", &manifest(7));
    let out = server.kubectl(&["apply", "-f", &file]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = server.kubectl(&[
        "get",
        "validatingwebhookconfigurations",
        "demo",
        "-o",
        "jsonpath={.webhooks[0].timeoutSeconds} {.webhooks[0].failurePolicy}",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "7 Fail");
    let out = server.kubectl(&["get", "mutatingwebhookconfigurations"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn webhook_reinvocation_if_needed_runs_once_more_after_a_later_change() {
    let t = InProcess::start();
    // "first" labels the object with the number of its calls; "second" sets spec.size.
    let server = start_webhook(
        &t,
        Arc::new(|path, review| {
            let obj = &review["request"]["object"];
            match path {
                "/first" => {
                    let calls = if obj["metadata"]["labels"]["first"].is_string() {
                        "2"
                    } else {
                        "1"
                    };
                    let has_labels = obj["metadata"]["labels"].is_object();
                    let op = if has_labels {
                        json!([{"op": "add", "path": "/metadata/labels/first", "value": calls}])
                    } else {
                        json!([{"op": "add", "path": "/metadata/labels", "value": {"first": calls}}])
                    };
                    Some(patch_response(op))
                }
                _ if obj["spec"]["size"] == json!("set") => Some(json!({"allowed": true})),
                _ => Some(patch_response(
                    json!([{"op": "add", "path": "/spec/size", "value": "set"}]),
                )),
            }
        }),
    );
    let mut first = widget_webhook("first.example.com", &server, "/first");
    first["reinvocationPolicy"] = json!("IfNeeded");
    let second = widget_webhook("second.example.com", &server, "/second");
    let config = configuration("MutatingWebhookConfiguration", "chain", vec![first, second]);
    let r = t.http.send_json("POST", MUTATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("chained", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json().unwrap_or_default();
    assert_eq!(body["spec"]["size"], "set");
    assert_eq!(body["metadata"]["labels"]["first"], "2");
    let paths: Vec<String> = server.reviews().into_iter().map(|(p, _)| p).collect();
    assert_eq!(paths, vec!["/first", "/second", "/first"]);
}

impl WebhookServer {
    /// `host:port` of this server.
    fn address(&self) -> &str {
        self.base.trim_start_matches("https://")
    }
}

fn delete(http: &Http, path: &str) -> common::HttpResponse {
    http.request("DELETE", path, &[], &[], None)
        .unwrap_or_else(|e| panic!("DELETE {path}: {e}"))
}

/// A webhook entry for widgets on `operations`, calling `path` on `server`.
fn widget_webhook_on(name: &str, server: &WebhookServer, path: &str, operations: &[&str]) -> Value {
    let mut hook = widget_webhook(name, server, path);
    hook["rules"][0]["operations"] = json!(operations);
    hook
}

#[test]
fn validating_webhook_denies_a_delete_and_the_object_stays() {
    let t = InProcess::start();
    // Deny deletes of objects labelled `protected`; allow everything else.
    let server = start_webhook(
        &t,
        Arc::new(|_, review| {
            let old = &review["request"]["oldObject"];
            if old["metadata"]["labels"]["protected"] == json!("yes") {
                Some(
                    json!({"allowed": false, "status": {"code": 403, "message": "this widget is protected"}}),
                )
            } else {
                Some(json!({"allowed": true, "warnings": ["delete checked"]}))
            }
        }),
    );
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deletes",
        vec![widget_webhook_on(
            "deletes.example.com",
            &server,
            "/delete",
            &["DELETE"],
        )],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    for (name, protected) in [("keep", true), ("go", false)] {
        let mut w = widget(name, json!({"size": "S"}));
        if protected {
            w["metadata"]["labels"] = json!({"protected": "yes"});
        }
        let r = t.http.send_json("POST", WIDGETS, &w);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // Creates do not match a DELETE rule.
    assert!(server.reviews().is_empty());

    let r = delete(&t.http, &format!("{WIDGETS}/keep"));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        "admission webhook \"deletes.example.com\" denied the request: this widget is protected"
    );
    assert_eq!(t.http.get(&format!("{WIDGETS}/keep")).status, 200);

    let r = delete(
        &t.http,
        &format!("{WIDGETS}/go?propagationPolicy=Background"),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r
        .header("warning")
        .unwrap_or_default()
        .contains("delete checked"));
    assert_eq!(t.http.get(&format!("{WIDGETS}/go")).status, 404);

    // What kube sends for a delete: no object, the stored one as oldObject, DeleteOptions.
    let reviews = server.reviews();
    let req = &reviews[reviews.len() - 1].1["request"];
    assert_eq!(req["operation"], "DELETE");
    assert_eq!(req["object"], Value::Null);
    assert_eq!(req["oldObject"]["metadata"]["name"], "go");
    assert_eq!(req["oldObject"]["spec"], json!({"size": "S"}));
    assert_eq!(
        (req["name"].as_str(), req["namespace"].as_str()),
        (Some("go"), Some("default"))
    );
    assert_eq!(
        req["options"],
        json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"})
    );
    assert_eq!(req["dryRun"], false);
}

#[test]
fn deletecollection_stops_at_the_first_denied_item() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, review| {
            let old = &review["request"]["oldObject"];
            if old["metadata"]["labels"]["protected"] == json!("yes") {
                Some(json!({"allowed": false, "status": {"message": "protected"}}))
            } else {
                Some(json!({"allowed": true}))
            }
        }),
    );
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deletes",
        vec![widget_webhook_on(
            "deletes.example.com",
            &server,
            "/delete",
            &["*"],
        )],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    for name in ["c1", "c2", "c3"] {
        let mut w = widget(name, json!({}));
        if name == "c2" {
            w["metadata"]["labels"] = json!({"protected": "yes"});
        }
        let r = t.http.send_json("POST", WIDGETS, &w);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // kube deletes the items in list order with one worker, stopping at an error.
    let r = delete(&t.http, WIDGETS);
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        "admission webhook \"deletes.example.com\" denied the request: protected"
    );
    assert_eq!(t.http.get(&format!("{WIDGETS}/c1")).status, 404);
    assert_eq!(t.http.get(&format!("{WIDGETS}/c2")).status, 200);
    assert_eq!(t.http.get(&format!("{WIDGETS}/c3")).status, 200);
    // A deletecollection's admission request names the namespace, not the object.
    let deletes: Vec<Value> = server
        .reviews()
        .into_iter()
        .map(|(_, r)| r["request"].clone())
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 2, "{deletes:?}");
    assert!(deletes[0].get("name").is_none(), "{}", deletes[0]);
    assert_eq!(deletes[0]["namespace"], "default");
    assert_eq!(deletes[0]["oldObject"]["metadata"]["name"], "c1");
}

#[test]
fn in_process_hooks_see_deletes_and_mutating_webhooks_cannot_change_them() {
    let t = InProcess::start();
    let seen: Seen = Arc::default();
    let record = seen.clone();
    t.admission().register_validating(
        "deletes.example.com",
        Matcher::new(
            &["admission.example.com"],
            &["widgets"],
            &[Operation::Delete],
        ),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                let keep = req.old_object.as_ref().map(|o| o["spec"]["size"].clone());
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                if keep == Some(json!("keep")) {
                    AdmissionResponse::deny_with_code(409, "kept")
                } else {
                    AdmissionResponse::allow().with_audit_annotation("deleted", "yes")
                }
            }
        },
    );
    for (name, size) in [("kept", "keep"), ("dropped", "S")] {
        let r = t
            .http
            .send_json("POST", WIDGETS, &widget(name, json!({"size": size})));
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let r = delete(&t.http, &format!("{WIDGETS}/kept?dryRun=All"));
    assert_eq!(r.status, 409, "{}", r.text());
    let r = delete(&t.http, &format!("{WIDGETS}/dropped"));
    assert_eq!(r.status, 200, "{}", r.text());
    let reqs = seen_requests(&seen);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].operation, Operation::Delete);
    assert!(reqs[0].dry_run);
    assert_eq!(reqs[0].object, Value::Null);
    assert_eq!(reqs[0].name, "kept");
    assert_eq!(reqs[0].options["kind"], "DeleteOptions");
    assert_eq!(reqs[0].options["dryRun"], json!(["All"]));
    assert_eq!(t.http.get(&format!("{WIDGETS}/kept")).status, 200);

    // A mutating webhook that patches a delete fails it (kube's internal error).
    let server = start_webhook(
        &t,
        Arc::new(|_, _| {
            Some(patch_response(
                json!([{"op": "add", "path": "/metadata/labels", "value": {}}]),
            ))
        }),
    );
    let config = configuration(
        "MutatingWebhookConfiguration",
        "patch-deletes",
        vec![widget_webhook_on(
            "patch.example.com",
            &server,
            "/patch",
            &["DELETE"],
        )],
    );
    let r = t.http.send_json("POST", MUTATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("patched", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = delete(&t.http, &format!("{WIDGETS}/patched"));
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        "Internal error occurred: admission webhook \"patch.example.com\" attempted to modify the object, which is not supported for this operation"
    );
    assert_eq!(t.http.get(&format!("{WIDGETS}/patched")).status, 200);
}

#[test]
fn webhook_configuration_applies_to_the_very_next_request() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, _| Some(json!({"allowed": false, "status": {"message": "closed"}}))),
    );
    for round in 0..3 {
        let config = configuration(
            "ValidatingWebhookConfiguration",
            "gate",
            vec![widget_webhook("gate.example.com", &server, "/gate")],
        );
        let r = t.http.send_json("POST", VALIDATING, &config);
        assert_eq!(r.status, 201, "{}", r.text());
        let name = format!("w{round}");
        let r = t.http.send_json("POST", WIDGETS, &widget(&name, json!({})));
        assert_eq!(r.status, 400, "round {round}: {}", r.text());
        let r = delete(&t.http, &format!("{VALIDATING}/gate"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = t.http.send_json("POST", WIDGETS, &widget(&name, json!({})));
        assert_eq!(r.status, 201, "round {round}: {}", r.text());
    }
}

#[test]
fn webhook_configuration_written_by_another_server_reaches_this_one() {
    // Two servers on one storage: the second learns of the first's writes by its watch.
    let etcd = test_etcd();
    let rt = runtime();
    let start = |storage: Option<Arc<dyn crd_apiserver::storage::Storage>>| {
        let config = Config {
            port: 0,
            etcd_servers: etcd.iter().map(common::Etcd::url).collect(),
            ..Config::default()
        };
        rt.block_on(async {
            match storage {
                Some(s) => Server::start_with_storage(config, s).await,
                None => Server::start(config).await,
            }
        })
        .unwrap_or_else(|e| panic!("start: {e}"))
    };
    let shared: Option<Arc<dyn crd_apiserver::storage::Storage>> = match etcd {
        Some(_) => None,
        None => Some(Arc::new(
            crd_apiserver::storage::memory::MemoryStorage::new(),
        )),
    };
    let a = start(shared.clone());
    let b = start(shared);
    let (http_a, http_b) = (
        Http::new(&a.url(), "admission-test"),
        Http::new(&b.url(), "admission-test"),
    );
    let r = http_a.send_json("POST", CRDS, &widget_crd());
    assert_eq!(r.status, 201, "{}", r.text());
    for http in [&http_a, &http_b] {
        let r = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let server = start_webhook_for(
        &["127.0.0.1"],
        Arc::new(|_, _| Some(json!({"allowed": false, "status": {"message": "closed"}}))),
    );
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "gate",
        vec![widget_webhook("gate.example.com", &server, "/gate")],
    );
    let r = http_a.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let denied_on_b = poll(Duration::from_secs(20), || {
        let name = format!("w-{}", uuid_like());
        let r = http_b.send_json("POST", WIDGETS, &widget(&name, json!({})));
        (r.status == 400).then_some(())
    });
    assert!(
        denied_on_b.is_some(),
        "server b never saw the configuration"
    );
    let r = delete(&http_a, &format!("{VALIDATING}/gate"));
    assert_eq!(r.status, 200, "{}", r.text());
    let allowed_on_b = poll(Duration::from_secs(20), || {
        let name = format!("w-{}", uuid_like());
        let r = http_b.send_json("POST", WIDGETS, &widget(&name, json!({})));
        (r.status == 201).then_some(())
    });
    assert!(allowed_on_b.is_some(), "server b never saw the delete");
    drop((a, b));
}

/// Call `f` until it returns `Some` or `timeout` passes.
fn poll<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A name suffix unique within the test run.
fn uuid_like() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::SeqCst).to_string()
}

#[test]
fn webhook_audit_annotations_are_logged_and_invalid_keys_dropped() {
    let server = start_webhook_for(
        &["127.0.0.1"],
        Arc::new(|_, _| {
            Some(
                json!({"allowed": true, "auditAnnotations": {"decision": "allowed by test", "bad key!": "dropped"}}),
            )
        }),
    );
    let api = common::TestServer::start();
    let http = api.http();
    let r = http.send_json("POST", CRDS, &widget_crd());
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
    assert_eq!(r.status, 200, "{}", r.text());
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "audit",
        vec![widget_webhook("audit.example.com", &server, "/audit")],
    );
    let r = http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("POST", WIDGETS, &widget("audited", json!({})));
    assert_eq!(r.status, 201, "{}", r.text());
    let logged = poll(Duration::from_secs(10), || {
        let stderr = api.stderr();
        (stderr.contains("audit annotation") && stderr.contains("bad key!")).then_some(stderr)
    })
    .unwrap_or_else(|| api.stderr());
    let line = |needle: &str| {
        logged
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_default()
            .to_string()
    };
    let accepted = line("audit.example.com/decision");
    assert!(
        accepted.contains("audit annotation") && accepted.contains("allowed by test"),
        "{logged}"
    );
    let dropped = line("audit.example.com/bad key!");
    assert!(
        dropped.contains("Failed to set admission audit annotation audit.example.com/bad key! to dropped for validating webhook audit.example.com: annotation key has invalid format"),
        "{logged}"
    );
}

#[test]
fn service_webhooks_are_reached_through_webhook_service_mappings() {
    let server = start_webhook_for(
        &["gate.webhooks.svc"],
        Arc::new(|_, _| Some(json!({"allowed": false, "status": {"message": "via the service"}}))),
    );
    let mapping = format!("webhooks/gate:8443={}", server.address());
    let api = common::TestServer::start_with(&["--webhook-service", &mapping]);
    let http = api.http();
    let r = http.send_json("POST", CRDS, &widget_crd());
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
    assert_eq!(r.status, 200, "{}", r.text());

    let service_hook = |name: &str, service: Value, policy: &str| {
        let mut hook = widget_webhook(name, &server, "/");
        hook["clientConfig"] = json!({"service": service, "caBundle": server.server.ca_bundle()});
        hook["failurePolicy"] = json!(policy);
        hook
    };
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "service",
        vec![service_hook(
            "service.example.com",
            json!({"namespace": "webhooks", "name": "gate", "port": 8443, "path": "/validate"}),
            "Fail",
        )],
    );
    let r = http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("POST", WIDGETS, &widget("via-service", json!({})));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        "admission webhook \"service.example.com\" denied the request: via the service"
    );
    assert_eq!(
        server.reviews().first().map(|(p, _)| p.clone()).as_deref(),
        Some("/validate")
    );
    let r = delete(&http, &format!("{VALIDATING}/service"));
    assert_eq!(r.status, 200, "{}", r.text());

    // A Service nothing maps: no endpoints, then failurePolicy decides.
    for policy in ["Fail", "Ignore"] {
        let config = configuration(
            "ValidatingWebhookConfiguration",
            "unmapped",
            vec![service_hook(
                "unmapped.example.com",
                json!({"namespace": "webhooks", "name": "missing", "path": "/check"}),
                policy,
            )],
        );
        let r = http.send_json("POST", VALIDATING, &config);
        assert_eq!(r.status, 201, "{}", r.text());
        let name = format!("unmapped-{}", policy.to_lowercase());
        let r = http.send_json("POST", WIDGETS, &widget(&name, json!({})));
        if policy == "Fail" {
            assert_eq!(r.status, 500, "{}", r.text());
            assert_eq!(
                r.json().unwrap_or_default()["message"],
                "Internal error occurred: failed calling webhook \"unmapped.example.com\": failed to call webhook: Post \"https://missing.webhooks.svc:443/check?timeout=10s\": no endpoints available for service \"missing\""
            );
        } else {
            assert_eq!(r.status, 201, "{}", r.text());
        }
        let r = delete(&http, &format!("{VALIDATING}/unmapped"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

#[test]
fn webhook_match_conditions_decide_whether_the_webhook_is_called() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, _| Some(json!({"allowed": false, "status": {"message": "called"}}))),
    );
    let called = "admission webhook \"conditions.example.com\" denied the request: called";
    let cases = [
        // (conditions, failurePolicy, widget size, status, message)
        (json!([{"name": "is-large", "expression": "object.spec.size == 'L'"}]), "Fail", "L", 400, called.to_string()),
        (json!([{"name": "is-large", "expression": "object.spec.size == 'L'"}]), "Fail", "S", 201, String::new()),
        (
            json!([{"name": "request", "expression": "request.operation == 'CREATE' && request.namespace == 'default' && oldObject == null"}]),
            "Fail", "S", 400, called.to_string(),
        ),
        (
            json!([{"name": "broken", "expression": "object.spec.missing == 'x'"}, {"name": "true", "expression": "true"}]),
            "Fail", "S", 403,
            "widgets.admission.example.com \"mc-3\" is forbidden: expression 'object.spec.missing == 'x'' resulted in error: no such key: missing".to_string(),
        ),
        // An error beside a false condition: the webhook is skipped whatever the policy.
        (
            json!([{"name": "broken", "expression": "object.spec.missing == 'x'"}, {"name": "false", "expression": "false"}]),
            "Fail", "S", 201, String::new(),
        ),
        (json!([{"name": "broken", "expression": "object.spec.missing == 'x'"}]), "Ignore", "S", 201, String::new()),
    ];
    for (i, (conditions, policy, size, status, message)) in cases.into_iter().enumerate() {
        let mut hook = widget_webhook("conditions.example.com", &server, "/conditions");
        hook["matchConditions"] = conditions;
        hook["failurePolicy"] = json!(policy);
        let config = configuration("ValidatingWebhookConfiguration", "conditions", vec![hook]);
        let r = t.http.send_json("POST", VALIDATING, &config);
        assert_eq!(r.status, 201, "{}", r.text());
        let before = server.reviews().len();
        let name = format!("mc-{i}");
        let r = t
            .http
            .send_json("POST", WIDGETS, &widget(&name, json!({"size": size})));
        assert_eq!(r.status, status, "case {i}: {}", r.text());
        if !message.is_empty() {
            assert_eq!(
                r.json().unwrap_or_default()["message"],
                json!(message),
                "case {i}"
            );
        }
        let calls = server.reviews().len() - before;
        assert_eq!(calls, usize::from(message == called), "case {i}");
        let r = delete(&t.http, &format!("{VALIDATING}/conditions"));
        assert_eq!(r.status, 200, "{}", r.text());
    }
}

#[test]
fn webhook_match_conditions_are_validated_as_kube() {
    let t = InProcess::start();
    let server = start_webhook(&t, Arc::new(|_, _| Some(json!({"allowed": true}))));
    let mut hook = widget_webhook("conditions.example.com", &server, "/conditions");
    hook["matchConditions"] = json!([
        {"name": "", "expression": "1"},
        {"name": "uses-nothing-known", "expression": "objekt.spec == null"},
        {"name": "uses-nothing-known", "expression": "true"}
    ]);
    let config = configuration("ValidatingWebhookConfiguration", "bad", vec![hook]);
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 422, "{}", r.text());
    let body = r.json().unwrap_or_default();
    assert_eq!(body["reason"], "Invalid");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("ValidatingWebhookConfiguration.admissionregistration.k8s.io \"bad\" is invalid: [webhooks[0].matchConditions[0].expression: Invalid value: \"1\": must evaluate to bool but got int, webhooks[0].matchConditions[0].name: Required value, webhooks[0].matchConditions[1].expression: Invalid value: \"objekt.spec == null\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'objekt'"),
        "{message}"
    );
    assert!(
        message.ends_with(
            ", webhooks[0].matchConditions[2].name: Duplicate value: \"uses-nothing-known\"]"
        ),
        "{message}"
    );
    let causes: Vec<&str> = body["details"]["causes"]
        .as_array()
        .map(|c| c.iter().filter_map(|c| c["field"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        causes,
        vec![
            "webhooks[0].matchConditions[0].expression",
            "webhooks[0].matchConditions[0].name",
            "webhooks[0].matchConditions[1].expression",
            "webhooks[0].matchConditions[2].name"
        ]
    );
}

#[test]
fn webhook_denying_delete_keeps_an_object_in_a_deleted_namespace_until_it_allows() {
    let t = InProcess::start();
    let deny = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let denying = deny.clone();
    let server = start_webhook(
        &t,
        Arc::new(move |_, review| {
            let old = &review["request"]["oldObject"];
            let protected = old["metadata"]["labels"]["protected"] == json!("yes");
            if protected && denying.load(std::sync::atomic::Ordering::SeqCst) {
                Some(
                    json!({"allowed": false, "status": {"code": 403, "message": "this widget is protected"}}),
                )
            } else {
                Some(json!({"allowed": true}))
            }
        }),
    );
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deletes",
        vec![widget_webhook_on(
            "deletes.example.com",
            &server,
            "/delete",
            &["DELETE"],
        )],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}});
    let r = t.http.send_json("POST", "/api/v1/namespaces", &ns);
    assert_eq!(r.status, 201, "{}", r.text());
    let widgets = "/apis/admission.example.com/v1/namespaces/doomed/widgets";
    for (name, protected) in [("keep", true), ("go", false)] {
        let mut w = widget(name, json!({"size": "S"}));
        if protected {
            w["metadata"]["labels"] = json!({"protected": "yes"});
        }
        let r = t.http.send_json("POST", widgets, &w);
        assert_eq!(r.status, 201, "{}", r.text());
    }

    let r = delete(&t.http, "/api/v1/namespaces/doomed");
    assert_eq!(r.status, 200, "{}", r.text());
    // The namespace controller deletes what it may and records why the rest stays.
    let failure = poll(Duration::from_secs(30), || {
        let ns = t.http.get("/api/v1/namespaces/doomed").json()?;
        let conditions = ns["status"]["conditions"].as_array()?.clone();
        let c = conditions
            .iter()
            .find(|c| c["type"] == "NamespaceDeletionContentFailure")?
            .clone();
        (c["status"] == "True").then_some((ns, conditions, c))
    });
    let (ns, conditions, c) = failure.expect("NamespaceDeletionContentFailure never set");
    assert_eq!(ns["status"]["phase"], "Terminating");
    assert_eq!(c["reason"], "ContentDeletionFailed");
    assert_eq!(
        c["message"],
        "Failed to delete all resource types, 1 remaining: admission webhook \"deletes.example.com\" denied the request: this widget is protected"
    );
    let types: Vec<&str> = conditions
        .iter()
        .filter_map(|c| c["type"].as_str())
        .collect();
    assert_eq!(
        types,
        [
            "NamespaceDeletionDiscoveryFailure",
            "NamespaceDeletionGroupVersionParsingFailure",
            "NamespaceDeletionContentFailure",
            "NamespaceContentRemaining",
            "NamespaceFinalizersRemaining"
        ]
    );
    assert_eq!(conditions[0]["reason"], "ResourcesDiscovered");
    assert_eq!(conditions[0]["status"], "False");
    assert_eq!(t.http.get(&format!("{widgets}/keep")).status, 200);
    assert_eq!(t.http.get(&format!("{widgets}/go")).status, 404);
    // Each delete was admitted as the namespace controller, as a deletecollection item.
    let reviews = server.reviews();
    let req = &reviews.last().expect("a review").1["request"];
    assert_eq!(
        req["userInfo"]["username"],
        "system:serviceaccount:kube-system:namespace-controller"
    );
    assert_eq!(req["operation"], "DELETE");
    assert_eq!(req["namespace"], "doomed");
    assert_eq!(req["options"]["propagationPolicy"], "Background");

    // Once the webhook allows, a later pass deletes the rest and the namespace goes.
    deny.store(false, std::sync::atomic::Ordering::SeqCst);
    let gone = poll(Duration::from_secs(30), || {
        (t.http.get("/api/v1/namespaces/doomed").status == 404).then_some(())
    });
    assert!(gone.is_some(), "the namespace was never deleted");
    assert_eq!(t.http.get(&format!("{widgets}/keep")).status, 404);
}

/// A CRD served in v1 (storage) and v2, converted with strategy `None`.
fn two_version_crd() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "size": {"type": "string"}, "fromHook": {"type": "string"}
        }}
    }}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.admission.example.com"},
        "spec": {
            "group": "admission.example.com",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}
            ]
        }
    })
}

#[test]
fn equivalent_match_webhook_for_v1_sees_a_v2_request_converted() {
    let t = InProcess::start();
    let r = t.http.send_json("POST", CRDS, &two_version_crd());
    assert_eq!(r.status, 201, "{}", r.text());
    let gadgets_v2 = "/apis/admission.example.com/v2/namespaces/default/gadgets";
    let r = t
        .http
        .wait_for_status(gadgets_v2, 200, Duration::from_secs(20));
    assert_eq!(r.status, 200, "{}", r.text());
    let server = start_webhook(
        &t,
        Arc::new(|path, _| match path {
            "/mutate" => Some(patch_response(
                json!([{"op": "add", "path": "/spec/fromHook", "value": "v1-webhook"}]),
            )),
            _ => Some(json!({"allowed": true})),
        }),
    );
    let rule = |versions: &[&str]| {
        json!([{"operations": ["CREATE"], "apiGroups": ["admission.example.com"],
            "apiVersions": versions, "resources": ["gadgets"]}])
    };
    let hook = |name: &str, path: &str, policy: &str| {
        json!({"name": name, "clientConfig": server.client_config(path),
            "rules": rule(&["v1"]), "matchPolicy": policy,
            "sideEffects": "None", "admissionReviewVersions": ["v1"]})
    };
    let mutating = configuration(
        "MutatingWebhookConfiguration",
        "gadgets-v1",
        vec![hook("mutate.example.com", "/mutate", "Equivalent")],
    );
    let r = t.http.send_json("POST", MUTATING, &mutating);
    assert_eq!(r.status, 201, "{}", r.text());
    let validating = configuration(
        "ValidatingWebhookConfiguration",
        "gadgets-v1",
        vec![
            hook("equivalent.example.com", "/equivalent", "Equivalent"),
            hook("exact.example.com", "/exact", "Exact"),
        ],
    );
    let r = t.http.send_json("POST", VALIDATING, &validating);
    assert_eq!(r.status, 201, "{}", r.text());

    let gadget = json!({"apiVersion": "admission.example.com/v2", "kind": "Gadget",
        "metadata": {"name": "g1"}, "spec": {"size": "S"}});
    let r = t.http.send_json("POST", gadgets_v2, &gadget);
    assert_eq!(r.status, 201, "{}", r.text());
    // The v1 webhook's patch, made on the v1 object, is in the v2 answer.
    let created = r.json().expect("json");
    assert_eq!(created["apiVersion"], "admission.example.com/v2");
    assert_eq!(
        created["spec"],
        json!({"size": "S", "fromHook": "v1-webhook"})
    );

    let reviews = server.reviews();
    let paths: Vec<&str> = reviews.iter().map(|(p, _)| p.as_str()).collect();
    assert!(
        !paths.contains(&"/exact"),
        "an Exact v1 rule matched v2: {paths:?}"
    );
    for path in ["/mutate", "/equivalent"] {
        let (_, review) = reviews
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{path} not called: {paths:?}"));
        let req = &review["request"];
        assert_eq!(
            req["kind"],
            json!({"group": "admission.example.com", "version": "v1", "kind": "Gadget"})
        );
        assert_eq!(
            req["resource"],
            json!({"group": "admission.example.com", "version": "v1", "resource": "gadgets"})
        );
        assert_eq!(
            req["requestKind"],
            json!({"group": "admission.example.com", "version": "v2", "kind": "Gadget"})
        );
        assert_eq!(
            req["requestResource"],
            json!({"group": "admission.example.com", "version": "v2", "resource": "gadgets"})
        );
        assert_eq!(req["object"]["apiVersion"], "admission.example.com/v1");
    }
    // The validating webhook saw the mutated object, in v1.
    let (_, review) = reviews
        .iter()
        .find(|(p, _)| p == "/equivalent")
        .expect("validated");
    assert_eq!(
        review["request"]["object"]["spec"]["fromHook"],
        "v1-webhook"
    );
}

/// A webhook serving an `openssl req -x509` certificate (`extensions` added), the
/// certificate itself as its `caBundle`.
fn start_openssl_webhook(extensions: &[&str], reply: Reply) -> WebhookServer {
    let (cert, key) = common::webhook::openssl_self_signed(extensions);
    let ca_bundle = cert.clone();
    WebhookServer::new(HttpsWebhookServer::start_with(
        &cert,
        &key,
        &ca_bundle,
        review_reply(reply),
    ))
}

#[test]
fn webhook_with_a_self_signed_ca_certificate_is_called_and_bad_ones_fail_in_gos_words() {
    let t = InProcess::start();
    let deny: Reply = Arc::new(|_, _| {
        Some(json!({"allowed": false, "status": {"code": 403, "message": "closed"}}))
    });
    // What `openssl req -x509 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1`
    // makes: its own CA, and a leaf.
    let good = start_openssl_webhook(&["subjectAltName=IP:127.0.0.1"], deny.clone());
    let (cert_pem, _) = common::webhook::openssl_self_signed(&["subjectAltName=IP:127.0.0.1"]);
    let (_, pem) =
        x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    let cert = pem.parse_x509().unwrap_or_else(|e| panic!("{e}"));
    assert!(cert.is_ca(), "openssl made no CA certificate");
    let wrong_ip = start_openssl_webhook(&["subjectAltName=IP:10.0.0.1"], deny.clone());
    let dns_only = start_openssl_webhook(&["subjectAltName=DNS:example.com"], deny.clone());
    let other_ca = start_openssl_webhook(&["subjectAltName=IP:127.0.0.1"], deny.clone());

    let hook = |server: &WebhookServer, ca: &WebhookServer| {
        let mut hook = widget_webhook("gate.example.com", server, "/validate");
        hook["clientConfig"]["caBundle"] = json!(ca.server.ca_bundle());
        configuration("ValidatingWebhookConfiguration", "gate", vec![hook])
    };
    let call = |config: Value| {
        let r = t.http.send_json("POST", VALIDATING, &config);
        assert_eq!(r.status, 201, "{}", r.text());
        let r = t.http.send_json("POST", WIDGETS, &widget("w", json!({})));
        let _ = t
            .http
            .request("DELETE", &format!("{VALIDATING}/gate"), &[], &[], None);
        r
    };

    let r = call(hook(&good, &good));
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["message"],
        "admission webhook \"gate.example.com\" denied the request: closed"
    );
    assert_eq!(good.reviews().len(), 1);

    let failure = |server: &WebhookServer, text: &str| {
        format!(
            "Internal error occurred: failed calling webhook \"gate.example.com\": failed to call webhook: Post \"{}/validate?timeout=10s\": tls: failed to verify certificate: x509: {text}",
            server.base
        )
    };
    for (server, ca, text) in [
        (&wrong_ip, &wrong_ip, "certificate is valid for 10.0.0.1, not 127.0.0.1".to_string()),
        (
            &dns_only,
            &dns_only,
            "cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs"
                .to_string(),
        ),
        // Same subject, another key: Go names the candidate that failed.
        (
            &good,
            &other_ca,
            "certificate signed by unknown authority (possibly because of \"crypto/rsa: verification error\" while trying to verify candidate authority certificate \"127.0.0.1\")".to_string(),
        ),
    ] {
        let r = call(hook(server, ca));
        assert_eq!(r.status, 500, "{}", r.text());
        assert_eq!(
            r.json().unwrap_or_default()["message"],
            json!(failure(server, &text))
        );
    }
    assert_eq!(
        good.reviews().len(),
        1,
        "no request past a failed handshake"
    );
}

#[test]
fn a_denial_keeps_the_warnings_of_earlier_webhooks_and_calls_say_who_calls() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|path, _| match path {
            "/mutate" => Some(json!({"allowed": true, "warnings": ["from the mutating webhook"]})),
            "/allow" => Some(json!({"allowed": true, "warnings": ["from the allowing webhook"]})),
            _ => Some(json!({
                "allowed": false, "warnings": ["from the denying webhook"],
                "status": {"code": 403, "message": "no"}
            })),
        }),
    );
    let config = configuration(
        "MutatingWebhookConfiguration",
        "warn",
        vec![widget_webhook("mutate.example.com", &server, "/mutate")],
    );
    let r = t.http.send_json("POST", MUTATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let config = configuration(
        "ValidatingWebhookConfiguration",
        "deny",
        vec![
            widget_webhook("allow.example.com", &server, "/allow"),
            widget_webhook("deny.example.com", &server, "/deny"),
        ],
    );
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());

    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("w", json!({"size": "S"})));
    assert_eq!(r.status, 403, "{}", r.text());
    let warnings = r.header("warning").unwrap_or_default();
    for text in [
        "from the mutating webhook",
        "from the allowing webhook",
        "from the denying webhook",
    ] {
        assert!(
            warnings.contains(&format!("299 - \"{text}\"")),
            "{text}: {warnings}"
        );
    }

    // A later schema failure keeps the mutating webhook's warning too.
    let _ = t
        .http
        .request("DELETE", &format!("{VALIDATING}/deny"), &[], &[], None);
    let r = t
        .http
        .send_json("POST", WIDGETS, &widget("w", json!({"replicas": 4})));
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.header("warning").as_deref(),
        Some("299 - \"from the mutating webhook\"")
    );

    let agents = server.server.user_agents();
    assert_eq!(agents.len(), 4, "{agents:?}");
    assert!(
        agents.iter().all(|a| a == "kube-apiserver-admission"),
        "{agents:?}"
    );
}

/// A merge patch of `path`.
fn merge_patch(http: &Http, path: &str, patch: &Value) -> common::HttpResponse {
    http.request(
        "PATCH",
        path,
        &[],
        &[("Content-Type".into(), "application/merge-patch+json".into())],
        Some(patch.to_string().into_bytes()),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn explicit_nulls_in_webhook_configurations_are_defaulted_and_the_webhook_runs() {
    let t = InProcess::start();
    let server = start_webhook(
        &t,
        Arc::new(|_, _| {
            Some(json!({"allowed": false, "status": {"code": 403, "message": "closed"}}))
        }),
    );
    let nulls = |mut hook: Value| {
        for field in [
            "objectSelector",
            "namespaceSelector",
            "failurePolicy",
            "matchPolicy",
            "timeoutSeconds",
            "reinvocationPolicy",
        ] {
            hook[field] = Value::Null;
        }
        hook["rules"][0]["scope"] = Value::Null;
        hook
    };
    let defaulted = |hook: &Value, mutating: bool| {
        assert_eq!(hook["objectSelector"], json!({}), "{hook}");
        assert_eq!(hook["namespaceSelector"], json!({}), "{hook}");
        assert_eq!(hook["failurePolicy"], "Fail", "{hook}");
        assert_eq!(hook["matchPolicy"], "Equivalent", "{hook}");
        assert_eq!(hook["timeoutSeconds"], 10, "{hook}");
        assert_eq!(hook["rules"][0]["scope"], "*", "{hook}");
        let reinvocation = if mutating {
            json!("Never")
        } else {
            Value::Null
        };
        assert_eq!(
            hook.get("reinvocationPolicy").cloned().unwrap_or_default(),
            reinvocation
        );
    };

    // POST
    let hook = nulls(widget_webhook("gate.example.com", &server, "/validate"));
    let config = configuration("ValidatingWebhookConfiguration", "gate", vec![hook.clone()]);
    let r = t.http.send_json("POST", VALIDATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    defaulted(&r.json().unwrap_or_default()["webhooks"][0], false);
    let r = t.http.send_json("POST", WIDGETS, &widget("w", json!({})));
    assert_eq!(r.status, 403, "the webhook runs: {}", r.text());

    // A merge patch replacing the list (what an operator framework sends).
    let path = format!("{VALIDATING}/gate");
    let r = merge_patch(&t.http, &path, &json!({"webhooks": [hook]}));
    assert_eq!(r.status, 200, "{}", r.text());
    defaulted(&r.json().unwrap_or_default()["webhooks"][0], false);
    let r = t.http.send_json("POST", WIDGETS, &widget("w", json!({})));
    assert_eq!(r.status, 403, "the webhook still runs: {}", r.text());

    // An empty list is not written (Go's `omitempty`).
    let r = merge_patch(&t.http, &path, &json!({"webhooks": []}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap_or_default().get("webhooks"), None);
    assert_eq!(
        t.http.get(&path).json().unwrap_or_default().get("webhooks"),
        None
    );

    // PUT of a mutating configuration.
    let config = configuration("MutatingWebhookConfiguration", "mutate", vec![]);
    let r = t.http.send_json("POST", MUTATING, &config);
    assert_eq!(r.status, 201, "{}", r.text());
    let mut current = r.json().unwrap_or_default();
    assert_eq!(current.get("webhooks"), None, "{current}");
    current["webhooks"] = json!([nulls(widget_webhook("m.example.com", &server, "/mutate"))]);
    let r = t
        .http
        .send_json("PUT", &format!("{MUTATING}/mutate"), &current);
    assert_eq!(r.status, 200, "{}", r.text());
    defaulted(&r.json().unwrap_or_default()["webhooks"][0], true);
}

/// kube admits a `/scale` write as the autoscaling/v1 Scale it is, not as the parent:
/// hooks see `kind: autoscaling/v1 Scale` of resource `apps/v1 deployments` with
/// subresource `scale`, Scales as `object` and `oldObject`, and the replicas a mutating
/// hook sets in the Scale are the parent's.
#[test]
fn scale_writes_are_admitted_as_scales() {
    let t = InProcess::start();
    let mutated: Seen = Arc::default();
    let validated: Seen = Arc::default();
    let record = mutated.clone();
    t.admission().register_mutating(
        "cap.example.com",
        Matcher::new(&["apps"], &["deployments/scale"], &[Operation::Update]),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                let mut obj = req.object.clone();
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                if obj["spec"]["replicas"].as_i64().unwrap_or(0) > 4 {
                    obj["spec"]["replicas"] = json!(4);
                }
                AdmissionResponse::mutate(obj)
            }
        },
    );
    let record = validated.clone();
    t.admission().register_validating(
        "check.example.com",
        Matcher::new(&["apps"], &["deployments/scale"], &[Operation::Update]),
        move |req: AdmissionRequest| {
            let record = record.clone();
            async move {
                if let Ok(mut s) = record.lock() {
                    s.push(req);
                }
                AdmissionResponse::allow()
            }
        },
    );
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let r = t.http.send_json(
        "POST",
        deployments,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        seen_requests(&mutated).is_empty(),
        "the parent's writes are not the scale's"
    );

    let r = t.http.merge_patch(
        &format!("{deployments}/web/scale"),
        &json!({"spec": {"replicas": 5}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let scale = r.json().unwrap_or_default();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 4);
    let parent = t
        .http
        .get(&format!("{deployments}/web"))
        .json()
        .unwrap_or_default();
    assert_eq!(parent["spec"]["replicas"], 4);

    let reqs = seen_requests(&mutated);
    assert_eq!(reqs.len(), 1);
    let req = &reqs[0];
    assert_eq!(
        (
            req.kind_group.as_str(),
            req.kind_version.as_str(),
            req.kind.as_str()
        ),
        ("autoscaling", "v1", "Scale")
    );
    assert_eq!(
        (
            req.group.as_str(),
            req.version.as_str(),
            req.resource.as_str(),
            req.subresource.as_str()
        ),
        ("apps", "v1", "deployments", "scale")
    );
    assert_eq!(
        (req.name.as_str(), req.namespace.as_str()),
        ("web", "default")
    );
    assert_eq!(req.object["apiVersion"], "autoscaling/v1");
    assert_eq!(req.object["kind"], "Scale");
    assert_eq!(req.object["spec"], json!({"replicas": 5}));
    assert_eq!(req.object["status"]["selector"], "app=web");
    let old = req.old_object.clone().unwrap_or_default();
    assert_eq!(old["kind"], "Scale");
    assert_eq!(old["spec"], json!({"replicas": 2}));
    // Validation sees the Scale after mutation.
    let reqs = seen_requests(&validated);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].kind, "Scale");
    assert_eq!(reqs[0].object["spec"], json!({"replicas": 4}));
}
