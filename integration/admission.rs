//! Admission (issue 8): in-process mutating and validating hooks registered by a Rust
//! harness, run at kube's admission points of the write pipeline.
//!
//! Expected texts come from kube's source: a denial is worded by
//! `apiserver/pkg/admission/plugin/webhook/errors.ToStatusErr`.

mod common;

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
}

impl InProcess {
    /// Start a server on a free port with the test CRD served.
    fn start() -> InProcess {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("runtime: {e}"));
        let config = Config {
            port: 0,
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
use http_body_util::{BodyExt, Full};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";

/// How the test webhook answers one AdmissionReview: `Some(response)` (the `response`
/// object; its `uid` is filled in), or `None` to hang past any timeout.
type Reply = Arc<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

/// An HTTPS webhook server with its own CA.
struct WebhookServer {
    base: String,
    ca_bundle: String,
    reviews: Arc<Mutex<Vec<(String, Value)>>>,
}

impl WebhookServer {
    /// The reviews received so far, with their paths.
    fn reviews(&self) -> Vec<(String, Value)> {
        self.reviews.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// `clientConfig` for `path` on this server.
    fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.base), "caBundle": self.ca_bundle})
    }
}

fn start_webhook(t: &InProcess, reply: Reply) -> WebhookServer {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
    let ca_key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut ca_params =
        CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params
        .self_signed(&ca_key)
        .unwrap_or_else(|e| panic!("{e}"));
    let ca = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .and_then(|p| p.signed_by(&key, &ca))
        .unwrap_or_else(|e| panic!("{e}"));
    let certs = vec![CertificateDer::from(cert.der().to_vec())];
    let key = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
        .unwrap_or_else(|e| panic!("{e}"));
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
    .unwrap_or_else(|e| panic!("{e}"));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = t
        ._runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let reviews: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let record = reviews.clone();
    t._runtime.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, reply, record) = (acceptor.clone(), reply.clone(), record.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let (reply, record) = (reply.clone(), record.clone());
                    async move {
                        let path = req.uri().path().to_string();
                        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                        if let Ok(mut r) = record.lock() {
                            r.push((path.clone(), review.clone()));
                        }
                        let Some(mut response) = reply(&path, &review) else {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                            return Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(bytes::Bytes::new())));
                        };
                        response["uid"] = review["request"]["uid"].clone();
                        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                        Ok(hyper::Response::new(Full::new(bytes::Bytes::from(out.to_string()))))
                    }
                });
                let io = hyper_util::rt::TokioIo::new(tls);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    WebhookServer {
        base: format!("https://{addr}"),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_cert.pem()),
        reviews,
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
