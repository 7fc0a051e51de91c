//! The server as an aggregated API server delegating to a core apiserver — another
//! instance of this server, as k8s.io/apiserver's servers delegate to kube-apiserver:
//! `--authentication-kubeconfig` (TokenReview, and the client CAs of the core's
//! `kube-system/extension-apiserver-authentication`), `--authorization-kubeconfig`
//! (SubjectAccessReview, with kube's always-allowed paths) and `--kubeconfig`
//! (namespaces and admission policies followed from the core). The aggregated server
//! reaches the core as a ServiceAccount bound to kube's `system:auth-delegator` and
//! `extension-apiserver-authentication-reader` roles, as its installation manifests do.
//! Both directions: clients talking to the delegating server directly, and through
//! the core acting as its aggregator (APIService, front-proxy certificate). Also: the
//! safe default beside front-proxy authentication, and a kubeconfig that verifies a
//! `--tls-cert-file` server.

mod common;

use base64::Engine;
use common::webhook::HttpsWebhookServer;
use common::{json_accept, poll, Http, HttpResponse, TestCa, TestServer};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

/// The core's users: an admin, alice (granted widgets by the core's RBAC), bob (not).
const TOKENS: &str = "admin-token,admin,uid-admin,system:masters
alice-token,alice,uid-alice,devs
bob-token,bob,uid-bob
";

const WIDGETS_DEFAULT: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn widgets(ns: &str) -> String {
    format!("/apis/example.com/v1/namespaces/{ns}/widgets")
}

fn widget(name: &str, color: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
           "spec": {"color": color}})
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A request with optional bearer token.
fn send(
    http: &Http,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> HttpResponse {
    let mut h = json_accept();
    if let Some(t) = token {
        h.push(("Authorization".into(), format!("Bearer {t}")));
    }
    if body.is_some() {
        h.push(("Content-Type".into(), "application/json".into()));
    }
    http.request(
        method,
        path,
        &[],
        &h,
        body.map(|b| serde_json::to_vec(b).expect("JSON")),
    )
    .expect("request")
}

struct Pair {
    core: TestServer,
    core_http: Http,
    aggregated: TestServer,
    /// The aggregated server's serving CA.
    agg_ca: String,
    client_ca: TestCa,
    proxy_ca: TestCa,
    _dir: std::path::PathBuf,
}

impl Pair {
    fn admin(&self, method: &str, path: &str, body: Option<&Value>) -> HttpResponse {
        send(&self.core_http, Some("admin-token"), method, path, body)
    }

    /// A client of the aggregated server, with a client certificate when given.
    fn agg(&self, cert: Option<(&str, &str)>) -> Http {
        Http::new_tls(self.aggregated.url(), "delegation-test", &self.agg_ca, cert)
    }

    /// The core and a server delegating to it; with `aggregating`, the core also
    /// aggregates that server (front-proxy certificate, aggregator routing, the server
    /// serving `widget-api.default.svc`, registered by a Service, an EndpointSlice and
    /// the APIService `v1.example.com`, Available).
    fn start(aggregating: bool) -> Pair {
        let dir = temp_dir(if aggregating {
            "delegation-aggregated"
        } else {
            "delegation"
        });
        let client_ca = TestCa::new("client-ca");
        let proxy_ca = TestCa::new("front-proxy-ca");
        let write = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).expect("file");
            p.to_str().expect("path").to_string()
        };
        let tokens = write("tokens.csv", TOKENS);
        let client_ca_file = write("client-ca.crt", &client_ca.pem);
        let proxy_ca_file = write("front-proxy-ca.crt", &proxy_ca.pem);
        let (proxy_cert, proxy_key) = proxy_ca.client("front-proxy-client", &[]);
        let proxy_cert_file = write("front-proxy-client.crt", &proxy_cert);
        let proxy_key_file = write("front-proxy-client.key", &proxy_key);
        let serving_ca = TestCa::new("backend-ca");
        let (serving_cert, serving_key) = serving_ca.server(&["widget-api.default.svc"]);
        let serving_cert_file = write("backend.crt", &serving_cert);
        let serving_key_file = write("backend.key", &serving_key);
        let aggregator_flags = [
            "--proxy-client-cert-file",
            proxy_cert_file.as_str(),
            "--proxy-client-key-file",
            proxy_key_file.as_str(),
            "--enable-aggregator-routing",
        ];
        let serving_flags = [
            "--tls-cert-file",
            serving_cert_file.as_str(),
            "--tls-private-key-file",
            serving_key_file.as_str(),
        ];
        // The core: RBAC, users, and the client trust it publishes for aggregated servers.
        let mut core_flags = vec![
            "--token-auth-file",
            &tokens,
            "--authorization-mode",
            "RBAC",
            "--client-ca-file",
            &client_ca_file,
            "--requestheader-client-ca-file",
            &proxy_ca_file,
            "--requestheader-allowed-names",
            "front-proxy-client",
            "--requestheader-username-headers",
            "X-Remote-User",
            "--requestheader-group-headers",
            "X-Remote-Group",
            "--requestheader-uid-headers",
            "X-Remote-Uid",
            "--requestheader-extra-headers-prefix",
            "X-Remote-Extra-",
        ];
        if aggregating {
            core_flags.extend(aggregator_flags);
        }
        let core = TestServer::start_secure(&core_flags);
        let core_ca = common::kubeconfig_ca(&core).expect("core CA");
        let core_http = Http::new_tls(core.url(), "delegation-test", &core_ca, None);
        let admin = |method: &str, path: &str, body: &Value| {
            let r = send(&core_http, Some("admin-token"), method, path, Some(body));
            assert!(
                r.status == 201 || r.status == 200,
                "{method} {path}: {} {}",
                r.status,
                r.text()
            );
            r
        };
        // The aggregated server's identity on the core, bound as kube's docs say.
        admin(
            "POST",
            "/api/v1/namespaces",
            &json!({"metadata": {"name": "aggregated"}}),
        );
        admin(
            "POST",
            "/api/v1/namespaces/aggregated/serviceaccounts",
            &json!({"metadata": {"name": "crd-apiserver"}}),
        );
        let sa =
            json!([{"kind": "ServiceAccount", "name": "crd-apiserver", "namespace": "aggregated"}]);
        let rbac = "/apis/rbac.authorization.k8s.io/v1";
        admin(
            "POST",
            &format!("{rbac}/clusterrolebindings"),
            &json!({"metadata": {"name": "crd-apiserver:auth-delegator"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
                    "subjects": sa}),
        );
        admin(
            "POST",
            &format!("{rbac}/namespaces/kube-system/rolebindings"),
            &json!({"metadata": {"name": "crd-apiserver:auth-reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"},
                    "subjects": sa}),
        );
        admin(
            "POST",
            &format!("{rbac}/clusterroles"),
            &json!({"metadata": {"name": "crd-apiserver:follower"},
                    "rules": [
                        {"apiGroups": [""], "resources": ["namespaces", "configmaps"], "verbs": ["get", "list", "watch"]},
                        {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["*"], "verbs": ["get", "list", "watch"]}]}),
        );
        admin(
            "POST",
            &format!("{rbac}/clusterrolebindings"),
            &json!({"metadata": {"name": "crd-apiserver:follower"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "crd-apiserver:follower"},
                    "subjects": sa}),
        );
        // alice may work with widgets; bob may not.
        admin(
            "POST",
            &format!("{rbac}/clusterroles"),
            &json!({"metadata": {"name": "widget-editor"},
                    "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]}]}),
        );
        admin(
            "POST",
            &format!("{rbac}/clusterrolebindings"),
            &json!({"metadata": {"name": "alice-widgets"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-editor"},
                    "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]}),
        );
        let token = admin(
            "POST",
            "/api/v1/namespaces/aggregated/serviceaccounts/crd-apiserver/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .json()
        .and_then(|v| {
            v.pointer("/status/token")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .expect("token");
        let core_kubeconfig = write(
            "core.kubeconfig",
            &format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: core\n  cluster:\n    server: {}\n    certificate-authority-data: {}\nusers:\n- name: sa\n  user:\n    token: {token}\ncontexts:\n- name: core\n  context:\n    cluster: core\n    user: sa\ncurrent-context: core\n",
                core.url(),
                base64::engine::general_purpose::STANDARD.encode(&core_ca)
            ),
        );
        std::fs::create_dir_all(dir.join("load")).expect("load dir");
        write("load/widgets.yaml", &common::testdata("crds/widgets.yaml"));
        let load = dir.join("load").to_str().expect("path").to_string();
        let mut flags = vec![
            "--authentication-kubeconfig",
            &core_kubeconfig,
            "--authorization-kubeconfig",
            &core_kubeconfig,
            "--kubeconfig",
            &core_kubeconfig,
            "--load",
            &load,
        ];
        if aggregating {
            flags.extend(serving_flags);
        }
        let aggregated = TestServer::start_secure(&flags);
        let agg_ca = if aggregating {
            serving_ca.pem.clone()
        } else {
            common::kubeconfig_ca(&aggregated).expect("aggregated CA")
        };
        if aggregating {
            let port: u16 = aggregated
                .url()
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .expect("port");
            admin(
                "POST",
                "/api/v1/namespaces/default/services",
                &json!({"metadata": {"name": "widget-api"},
                        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}),
            );
            admin(
                "POST",
                "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
                &json!({"metadata": {"name": "widget-api-1", "labels": {"kubernetes.io/service-name": "widget-api"}},
                        "addressType": "IPv4",
                        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
            );
            admin(
                "POST",
                "/apis/apiregistration.k8s.io/v1/apiservices",
                &json!({"metadata": {"name": "v1.example.com"},
                        "spec": {"group": "example.com", "version": "v1",
                                 "service": {"namespace": "default", "name": "widget-api", "port": 443},
                                 "caBundle": base64::engine::general_purpose::STANDARD.encode(&serving_ca.pem),
                                 "groupPriorityMinimum": 1000, "versionPriority": 15}}),
            );
            let available = poll(Duration::from_secs(30), || {
                let r = send(
                    &core_http,
                    Some("admin-token"),
                    "GET",
                    "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com",
                    None,
                );
                let conditions = r.json()?["status"]["conditions"].clone();
                conditions
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
                    .then_some(())
            });
            assert!(
                available.is_some(),
                "the delegating backend never became Available"
            );
        }
        Pair {
            core,
            core_http,
            aggregated,
            agg_ca,
            client_ca,
            proxy_ca,
            _dir: dir,
        }
    }
}

/// The message of a 403.
fn forbidden_message(r: &HttpResponse) -> String {
    assert_eq!(r.status, 403, "{}", r.text());
    r.json()
        .and_then(|s| s["message"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[test]
fn delegated_to_another_instance_authentication_authorization_namespaces_and_admission_follow_the_core(
) {
    let pair = Pair::start(false);
    let agg = pair.agg(None);

    // The core published its client trust as kube-apiserver does.
    let cm = pair.admin(
        "GET",
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        None,
    );
    assert_eq!(cm.status, 200, "{}", cm.text());
    let data = cm.json().expect("configmap")["data"].clone();
    assert_eq!(data["client-ca-file"], json!(pair.client_ca.pem));
    assert_eq!(
        data["requestheader-allowed-names"],
        json!("[\"front-proxy-client\"]")
    );
    assert_eq!(
        data["requestheader-uid-headers"],
        json!("[\"X-Remote-Uid\"]")
    );

    // Authentication: a core user's bearer token, reviewed by the core (TokenReview);
    // authorization by the core's RBAC (SubjectAccessReview).
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("w1", "red")),
    );
    assert_eq!(
        r.status,
        201,
        "{}\n{}",
        r.text(),
        pair.aggregated.stderr_tail(20)
    );
    let r = send(&agg, Some("alice-token"), "GET", WIDGETS_DEFAULT, None);
    assert_eq!(r.status, 200, "{}", r.text());
    // Who the aggregated server thinks alice is: the core's user, uid and groups.
    let review = send(
        &agg,
        Some("alice-token"),
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    );
    assert_eq!(review.status, 201, "{}", review.text());
    let user = review.json().expect("review")["status"]["userInfo"].clone();
    assert_eq!(user["username"], "alice");
    assert_eq!(user["uid"], "uid-alice");
    assert_eq!(user["groups"], json!(["devs", "system:authenticated"]));
    // bob is known to the core but not allowed there: kube's 403 on the aggregated server.
    let r = send(&agg, Some("bob-token"), "GET", WIDGETS_DEFAULT, None);
    assert_eq!(
        forbidden_message(&r),
        "widgets.example.com is forbidden: User \"bob\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    // A token nobody knows: 401.
    let r = send(&agg, Some("nobody-token"), "GET", WIDGETS_DEFAULT, None);
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.json().expect("status")["reason"], "Unauthorized");
    // Anonymous: refused by the core's authorization; the always-allowed paths answer.
    let r = send(&agg, None, "GET", WIDGETS_DEFAULT, None);
    assert!(forbidden_message(&r)
        .contains("User \"system:anonymous\" cannot list resource \"widgets\""));
    let r = send(
        &agg,
        None,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        None,
    );
    assert_eq!(r.status, 403, "{}", r.text());
    for path in ["/healthz", "/readyz", "/livez"] {
        let r = send(&agg, None, "GET", path, None);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    let r = send(&agg, None, "GET", "/metrics", None);
    assert_eq!(r.status, 403, "{}", r.text());
    // Granting bob on the core takes effect once the denial's cache entry expires (10 s).
    let r = pair.admin(
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        Some(&json!({"metadata": {"name": "bob-widgets"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-editor"},
            "subjects": [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let allowed = poll(Duration::from_secs(20), || {
        (send(&agg, Some("bob-token"), "GET", WIDGETS_DEFAULT, None).status == 200).then_some(())
    });
    assert!(allowed.is_some(), "bob never allowed after the grant");

    // Client certificates signed by the core's client CA, read from the ConfigMap.
    let (cert, key) = pair.client_ca.client("alice", &["devs"]);
    let r = send(
        &pair.agg(Some((&cert, &key))),
        None,
        "GET",
        WIDGETS_DEFAULT,
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    // The front proxy the core names (CA, allowed names, headers from the ConfigMap).
    let (cert, key) = pair.proxy_ca.client("front-proxy-client", &[]);
    let proxy = pair.agg(Some((&cert, &key)));
    let mut h = json_accept();
    h.extend([
        ("X-Remote-User".to_string(), "carol".to_string()),
        ("X-Remote-Uid".to_string(), "uid-carol".to_string()),
        ("X-Remote-Group".to_string(), "devs".to_string()),
    ]);
    let r = proxy
        .request("GET", WIDGETS_DEFAULT, &[], &h, None)
        .expect("request");
    assert!(forbidden_message(&r).contains("User \"carol\" cannot list"));
    // A proxy certificate with a name the core does not allow vouches for nobody.
    let (cert, key) = pair.proxy_ca.client("someone-else", &[]);
    let r = pair
        .agg(Some((&cert, &key)))
        .request("GET", WIDGETS_DEFAULT, &[], &h, None)
        .expect("request");
    assert_eq!(r.status, 401, "{}", r.text());

    // Namespaces follow the core's: one created there is usable at once; one it does
    // not have is not found; one terminating there refuses new content.
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        &widgets("team-a"),
        Some(&widget("w", "red")),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json().expect("status")["message"],
        "namespaces \"team-a\" not found"
    );
    let r = pair.admin(
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"metadata": {"name": "team-a"}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        &widgets("team-a"),
        Some(&widget("w", "red")),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = pair.admin(
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"metadata": {"name": "team-b", "finalizers": ["example.com/hold"]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = pair.admin("DELETE", "/api/v1/namespaces/team-b", None);
    assert_eq!(r.status, 200, "{}", r.text());
    let refused = poll(Duration::from_secs(10), || {
        let r = send(
            &agg,
            Some("alice-token"),
            "POST",
            &widgets("team-b"),
            Some(&widget("w", "red")),
        );
        (r.status == 403).then(|| r.json().expect("status"))
    })
    .expect("a terminating namespace of the core refuses content");
    assert_eq!(
        refused["message"],
        "widgets.example.com \"w\" is forbidden: unable to create new content in namespace team-b because it is being terminated"
    );
    assert_eq!(
        refused["details"]["causes"][0]["reason"],
        "NamespaceTerminating"
    );

    // Admission from the core: a ValidatingAdmissionPolicy with a ConfigMap param,
    // created in the core, applies to writes on the aggregated server.
    let r = pair.admin(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&json!({"metadata": {"name": "banned"}, "data": {"color": "blue"}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let admission = "/apis/admissionregistration.k8s.io/v1";
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicies"),
        Some(&json!({"metadata": {"name": "no-banned-color"}, "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}]},
            "validations": [{"expression": "object.spec.color != params.data.color",
                             "messageExpression": "'color ' + params.data.color + ' is banned'"}]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicybindings"),
        Some(&json!({"metadata": {"name": "no-banned-color"}, "spec": {
            "policyName": "no-banned-color", "validationActions": ["Deny"],
            "paramRef": {"name": "banned", "namespace": "default", "parameterNotFoundAction": "Deny"}}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let denied = poll(Duration::from_secs(10), || {
        let r = send(
            &agg,
            Some("alice-token"),
            "POST",
            WIDGETS_DEFAULT,
            Some(&widget("blue", "blue")),
        );
        (r.status == 422).then(|| r.json().expect("status"))
    })
    .expect("the core's policy applies on the aggregated server");
    assert_eq!(
        denied["message"],
        "widgets.example.com \"blue\" is forbidden: ValidatingAdmissionPolicy 'no-banned-color' with binding 'no-banned-color' denied request: color blue is banned"
    );
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("green", "green")),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // Changing the param on the core changes the verdict; deleting the binding ends it.
    let mut h = json_accept();
    h.push(("Authorization".into(), "Bearer admin-token".into()));
    h.push(("Content-Type".into(), "application/merge-patch+json".into()));
    let r = pair
        .core_http
        .request(
            "PATCH",
            "/api/v1/namespaces/default/configmaps/banned",
            &[],
            &h,
            Some(br#"{"data": {"color": "green"}}"#.to_vec()),
        )
        .expect("patch");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("green2", "green")),
    );
    assert_eq!(r.status, 422, "{}", r.text());
    let r = pair.admin(
        "DELETE",
        &format!("{admission}/validatingadmissionpolicybindings/no-banned-color"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let lifted = poll(Duration::from_secs(10), || {
        (send(
            &agg,
            Some("alice-token"),
            "POST",
            WIDGETS_DEFAULT,
            Some(&widget("green3", "green")),
        )
        .status
            == 201)
            .then_some(())
    });
    assert!(
        lifted.is_some(),
        "the binding's deletion on the core never took effect"
    );
    // CEL's `authorizer` in the core's policy asks the core (SubjectAccessReview) from
    // the aggregated server: alice may not impersonate, the admin may.
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicies"),
        Some(&json!({"metadata": {"name": "guarded"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{"expression": "object.metadata.name != 'guarded' || authorizer.group('').resource('users').check('impersonate').allowed()",
                             "message": "only impersonators may create guarded widgets"}]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicybindings"),
        Some(&json!({"metadata": {"name": "guarded"}, "spec": {
            "policyName": "guarded", "validationActions": ["Deny"]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // Probed as dry runs: a create let through before the policy is followed must not
    // leave `guarded` behind for the admin's create below.
    let dry_run = format!("{WIDGETS_DEFAULT}?dryRun=All");
    let denied = poll(Duration::from_secs(10), || {
        let r = send(
            &agg,
            Some("alice-token"),
            "POST",
            &dry_run,
            Some(&widget("guarded", "red")),
        );
        (r.status == 422).then(|| r.json().expect("status"))
    })
    .expect("the core's policy with an authorizer check applies");
    assert_eq!(
        denied["message"],
        "widgets.example.com \"guarded\" is forbidden: ValidatingAdmissionPolicy 'guarded' with binding 'guarded' denied request: only impersonators may create guarded widgets"
    );
    let r = send(
        &agg,
        Some("admin-token"),
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("guarded", "red")),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    // A validating webhook configured on the core is called for writes on the
    // aggregated server, with the user the aggregated server authenticated.
    let hook = HttpsWebhookServer::start(Arc::new(|_, review: &Value| {
        let name = review
            .pointer("/request/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let user = review
            .pointer("/request/userInfo/username")
            .and_then(Value::as_str)
            .unwrap_or("");
        let allowed = !name.starts_with("hooked");
        Some(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
            "uid": review["request"]["uid"], "allowed": allowed,
            "status": {"code": 403, "message": format!("no hooked widgets for {user}")}}}),
        )
    }));
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingwebhookconfigurations"),
        Some(&json!({"metadata": {"name": "no-hooked"}, "webhooks": [{
            "name": "no-hooked.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": hook.client_config("/validate"),
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["*"], "operations": ["CREATE"],
                       "resources": ["widgets"]}]}]})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let denied = poll(Duration::from_secs(10), || {
        let r = send(
            &agg,
            Some("alice-token"),
            "POST",
            WIDGETS_DEFAULT,
            Some(&widget("hooked", "red")),
        );
        (r.status == 403).then(|| r.json().expect("status"))
    })
    .expect("the core's webhook is called by the aggregated server");
    assert_eq!(
        denied["message"],
        "admission webhook \"no-hooked.example.com\" denied the request: no hooked widgets for alice"
    );
    let r = pair.admin(
        "DELETE",
        &format!("{admission}/validatingwebhookconfigurations/no-hooked"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.text());

    // A policy created on the aggregated server itself (by its own admin) is stored
    // but does not apply while the core is followed: admission configuration is the
    // core's, as with k8s.io/apiserver.
    let own_admin = common::admin_token(&pair.aggregated);
    let r = send(
        &agg,
        Some(&own_admin),
        "POST",
        &format!("{admission}/validatingadmissionpolicies"),
        Some(&json!({"metadata": {"name": "local-no-red"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{"expression": "object.spec.color != 'red'"}]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = send(
        &agg,
        Some(&own_admin),
        "POST",
        &format!("{admission}/validatingadmissionpolicybindings"),
        Some(&json!({"metadata": {"name": "local-no-red"}, "spec": {
            "policyName": "local-no-red", "validationActions": ["Deny"]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    std::thread::sleep(Duration::from_millis(500));
    let r = send(
        &agg,
        Some("alice-token"),
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("red2", "red")),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    drop(pair.core);
}

#[test]
fn through_the_core_as_aggregator_a_delegating_backend_serves_the_cores_users_namespaces_and_policies(
) {
    let pair = Pair::start(true);
    let core = |token: &str, method: &str, path: &str, body: Option<&Value>| {
        send(&pair.core_http, Some(token), method, path, body)
    };
    // alice, allowed by the core's RBAC (asked twice: by the core, then by the backend
    // through SubjectAccessReview), creates and reads through the core.
    let r = core(
        "alice-token",
        "POST",
        WIDGETS_DEFAULT,
        Some(&widget("w1", "red")),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = core("alice-token", "GET", &format!("{WIDGETS_DEFAULT}/w1"), None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().expect("widget")["spec"]["color"], "red");
    let r = core("bob-token", "GET", WIDGETS_DEFAULT, None);
    assert_eq!(
        forbidden_message(&r),
        "widgets.example.com is forbidden: User \"bob\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    // Namespaces are the core's, checked by the backend.
    let r = core(
        "alice-token",
        "POST",
        &widgets("team-c"),
        Some(&widget("w", "red")),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json().expect("status")["message"],
        "namespaces \"team-c\" not found"
    );
    let r = pair.admin(
        "POST",
        "/api/v1/namespaces",
        Some(&json!({"metadata": {"name": "team-c"}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = core(
        "alice-token",
        "POST",
        &widgets("team-c"),
        Some(&widget("w", "red")),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // A policy created in the core runs on the backend, and sees the core's user as the
    // front proxy forwarded it (name, uid, groups).
    let admission = "/apis/admissionregistration.k8s.io/v1";
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicies"),
        Some(&json!({"metadata": {"name": "echo-user"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["*"],
                "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{"expression": "object.metadata.name != 'echo'",
                "messageExpression": "'user=' + request.userInfo.username + ' uid=' + request.userInfo.uid + ' groups=' + request.userInfo.groups.join(',')"}]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = pair.admin(
        "POST",
        &format!("{admission}/validatingadmissionpolicybindings"),
        Some(&json!({"metadata": {"name": "echo-user"}, "spec": {
            "policyName": "echo-user", "validationActions": ["Deny"]}})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let denied = poll(Duration::from_secs(10), || {
        let r = core(
            "alice-token",
            "POST",
            WIDGETS_DEFAULT,
            Some(&widget("echo", "red")),
        );
        (r.status == 422).then(|| r.json().expect("status"))
    })
    .expect("the core's policy runs on the backend");
    assert_eq!(
        denied["message"],
        "widgets.example.com \"echo\" is forbidden: ValidatingAdmissionPolicy 'echo-user' with binding 'echo-user' denied request: user=alice uid=uid-alice groups=devs,system:authenticated"
    );
    // kubectl against the core reaches the backend's widgets.
    let out = pair
        .core
        .kubectl(&["get", "widgets", "-n", "team-c", "-o", "name"]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "widget.example.com/w"
    );
}

#[test]
fn front_proxy_authentication_refuses_the_allow_all_default_unless_asked_for() {
    let dir = temp_dir("safe-default");
    let ca = TestCa::new("front-proxy-ca");
    let ca_file = dir.join("ca.crt");
    std::fs::write(&ca_file, &ca.pem).expect("CA");
    let out = std::process::Command::new(common::server_binary())
        .args(["--secure-port", "0", "--requestheader-client-ca-file"])
        .arg(&ca_file)
        .output()
        .expect("run server");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--requestheader-client-ca-file is set and --authorization-mode defaults to AlwaysAllow"),
        "{stderr}"
    );
    // Asked for explicitly, it starts, and anonymous clients get what they asked for.
    let server = TestServer::start_secure(&[
        "--requestheader-client-ca-file",
        ca_file.to_str().expect("path"),
        "--authorization-mode",
        "AlwaysAllow",
    ]);
    let http = Http::new_tls(
        server.url(),
        "t",
        &common::kubeconfig_ca(&server).expect("CA"),
        None,
    );
    assert_eq!(
        send(&http, None, "GET", "/api/v1/namespaces", None).status,
        200
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kubeconfig_out_verifies_a_tls_cert_file_server() {
    let dir = temp_dir("tls-cert-file");
    let files = common::TlsFiles::generate(&dir);
    let server = TestServer::start_with(&[
        "--secure-port",
        "0",
        "--tls-cert-file",
        files.server_cert.to_str().expect("path"),
        "--tls-private-key-file",
        files.server_key.to_str().expect("path"),
    ]);
    let out = server.kubectl(&["get", "namespaces", "-o", "name"]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/default"));
    let ca =
        common::kubeconfig_ca(&server).expect("the kubeconfig carries what verifies the server");
    assert!(ca.contains("BEGIN CERTIFICATE"));
    let _ = std::fs::remove_dir_all(&dir);
}
