//! The server as kube-aggregator: two servers, the core (TLS, token users, the
//! front-proxy client certificate, `--enable-aggregator-routing`) and a backend behind
//! it (TLS for `widget-api.default.svc`, trusting the front proxy's CA, RBAC, its own
//! Widget CRD), registered in the core by a Service, an EndpointSlice naming the
//! backend's loopback port and the APIService `v1.example.com`. Everything is driven
//! over HTTP and kubectl against the core: availability and its loss with kube's
//! reasons, proxied reads, writes and watches as the core's user (as the backend's RBAC
//! and an admission policy echoing the user see it), forged `X-Remote-*` headers,
//! merged discovery and OpenAPI, kube's 503s.

mod common;

use common::{kubeconfig_ca, poll, Http, HttpResponse, TestCa, TestServer};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";
const APISERVICE: &str = "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com";
const SETTLE: Duration = Duration::from_secs(30);
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// A client of one server sending `headers` with every request.
struct Client {
    http: Http,
    headers: Vec<(String, String)>,
}

impl Client {
    fn request(
        &self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&Value>,
    ) -> HttpResponse {
        let mut h = self.headers.clone();
        h.push(("Accept".into(), "application/json".into()));
        for (k, v) in extra {
            h.retain(|(have, _)| !have.eq_ignore_ascii_case(k));
            h.push((k.to_string(), v.to_string()));
        }
        let body = body.map(|b| {
            if !h.iter().any(|(k, _)| k == "Content-Type") {
                h.push(("Content-Type".into(), "application/json".into()));
            }
            serde_json::to_vec(b).unwrap()
        });
        self.http
            .request(method, path, &[], &h, body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn get(&self, path: &str) -> HttpResponse {
        self.request("GET", path, &[], None)
    }

    fn post(&self, path: &str, body: &Value) -> HttpResponse {
        self.request("POST", path, &[], Some(body))
    }
}

fn created(r: HttpResponse) -> Value {
    assert!(
        r.status == 201 || r.status == 200,
        "{} {}",
        r.status,
        r.text()
    );
    r.json().unwrap()
}

fn widget(name: &str, color: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": {"color": color}})
}

/// The APIService's `Available` condition once `wanted` accepts it.
fn available_when(admin: &Client, wanted: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    poll(SETTLE, || {
        let r = admin.get(APISERVICE);
        last = r.json()?;
        let c = last["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Available")?
            .clone();
        wanted(&c).then_some(c)
    })
    .unwrap_or_else(|| panic!("APIService never as wanted: {last}"))
}

/// A user of the core's `--token-auth-file`.
fn as_user(core: &TestServer, ca: &str, token: &str) -> Client {
    Client {
        http: Http::new_tls(core.url(), "aggregator-test", ca, None),
        headers: vec![("Authorization".into(), format!("Bearer {token}"))],
    }
}

#[test]
fn the_core_aggregates_a_backend_for_its_users() {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-aggregator-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("load")).unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    // The front proxy's identity, and the backend's serving certificate for its Service.
    let proxy_ca = TestCa::new("front-proxy-ca");
    let (proxy_cert, proxy_key) = proxy_ca.client("front-proxy-client", &[]);
    let serving_ca = TestCa::new("backend-ca");
    let (serving_cert, serving_key) = serving_ca.server(&["widget-api.default.svc"]);
    let proxy_ca_file = write("front-proxy-ca.crt", &proxy_ca.pem);
    let proxy_cert_file = write("front-proxy-client.crt", &proxy_cert);
    let proxy_key_file = write("front-proxy-client.key", &proxy_key);
    let serving_cert_file = write("backend.crt", &serving_cert);
    let serving_key_file = write("backend.key", &serving_key);
    std::fs::write(
        dir.join("load/widgets.yaml"),
        common::testdata("crds/widgets.yaml"),
    )
    .unwrap();
    let tokens = write(
        "tokens.csv",
        "alice-token,alice,uid-alice,\"dev,qa\"\nbob-token,bob,uid-bob,dev\n",
    );

    let backend = TestServer::start_secure(&[
        "--tls-cert-file",
        &serving_cert_file,
        "--tls-private-key-file",
        &serving_key_file,
        "--requestheader-client-ca-file",
        &proxy_ca_file,
        "--requestheader-allowed-names",
        "front-proxy-client",
        "--requestheader-username-headers",
        "X-Remote-User",
        "--requestheader-group-headers",
        "X-Remote-Group",
        "--requestheader-extra-headers-prefix",
        "X-Remote-Extra-",
        "--requestheader-uid-headers",
        "X-Remote-Uid",
        "--authorization-mode",
        "RBAC",
        "--load",
        dir.join("load").to_str().unwrap(),
    ]);
    let backend_port = backend.url().rsplit(':').next().unwrap().to_string();
    let core = TestServer::start_secure(&[
        "--token-auth-file",
        &tokens,
        "--proxy-client-cert-file",
        &proxy_cert_file,
        "--proxy-client-key-file",
        &proxy_key_file,
        "--enable-aggregator-routing",
    ]);
    let core_ca = kubeconfig_ca(&core).expect("core serving CA");
    let admin_token = common::admin_token(&core);
    let admin = as_user(&core, &core_ca, &admin_token);
    let alice = as_user(&core, &core_ca, "alice-token");
    let bob = as_user(&core, &core_ca, "bob-token");
    // The backend's own administrator, through the front proxy's certificate.
    let backend_admin = Client {
        http: Http::new_tls(
            backend.url(),
            "aggregator-test",
            &serving_ca.pem,
            Some((&proxy_cert, &proxy_key)),
        ),
        headers: vec![
            ("X-Remote-User".into(), "backend-admin".into()),
            ("X-Remote-Group".into(), "system:masters".into()),
        ],
    };

    // On the backend: alice may do anything with widgets, bob nothing; a policy denies
    // Widgets named `echo`, its message saying who asked.
    created(backend_admin.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "widget-admin"},
                "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]}]}),
    ));
    created(backend_admin.post(
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "alice-widgets"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widget-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]}),
    ));
    created(backend_admin.post(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "echo-user"},
                "spec": {
                    "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"],
                        "apiVersions": ["*"], "resources": ["widgets"], "operations": ["CREATE"]}]},
                    "validations": [{"expression": "object.metadata.name != 'echo'",
                        "messageExpression": "'user=' + request.userInfo.username + ' uid=' + request.userInfo.uid + ' groups=' + request.userInfo.groups.join(',')"}]}}),
    ));
    created(backend_admin.post(
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        &json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "echo-user"},
                "spec": {"policyName": "echo-user", "validationActions": ["Deny"]}}),
    ));

    // On the core: the Service, its EndpointSlice at the backend's loopback port, the
    // APIService with the backend's CA.
    created(admin.post(
        "/api/v1/namespaces/default/services",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "widget-api"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": backend_port.parse::<u16>().unwrap()}]}}),
    ));
    created(admin.post(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        &json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": "widget-api-1", "labels": {"kubernetes.io/service-name": "widget-api"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": backend_port.parse::<u16>().unwrap(), "protocol": "TCP"}]}),
    ));
    use base64::Engine;
    created(admin.post(
        "/apis/apiregistration.k8s.io/v1/apiservices",
        &json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": "v1.example.com"},
                "spec": {"group": "example.com", "version": "v1",
                         "service": {"namespace": "default", "name": "widget-api", "port": 443},
                         "caBundle": base64::engine::general_purpose::STANDARD.encode(&serving_ca.pem),
                         "groupPriorityMinimum": 1000, "versionPriority": 15}}),
    ));
    let c = available_when(&admin, |c| c["status"] == "True");
    assert_eq!(
        (c["reason"].as_str(), c["message"].as_str()),
        (Some("Passed"), Some("all checks passed"))
    );

    // Discovery: legacy, per group, the proxied group-version, aggregated.
    let groups = admin.get("/apis").json().unwrap();
    let example = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "example.com")
        .unwrap_or_else(|| panic!("no example.com in /apis: {groups}"));
    assert_eq!(
        example["preferredVersion"]["groupVersion"],
        "example.com/v1"
    );
    let group = admin.get("/apis/example.com");
    assert_eq!(group.status, 200, "{}", group.text());
    assert_eq!(
        group.json().unwrap()["versions"][0]["groupVersion"],
        "example.com/v1"
    );
    let resources = admin.get("/apis/example.com/v1");
    assert_eq!(resources.status, 200, "{}", resources.text());
    assert!(resources.json().unwrap()["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "widgets"));
    let agg = poll(SETTLE, || {
        let doc = admin
            .request("GET", "/apis", &[("Accept", AGGREGATED)], None)
            .json()?;
        doc["items"]
            .as_array()?
            .iter()
            .find(|g| g["metadata"]["name"] == "example.com")
            .cloned()
    })
    .expect("example.com in aggregated discovery");
    assert_eq!(agg["versions"][0]["version"], "v1");
    assert!(
        agg["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resource"] == "widgets"),
        "{agg}"
    );

    // Writes and reads through the core, as alice.
    let w = created(alice.post(WIDGETS, &widget("w1", "red")));
    assert_eq!(w["metadata"]["name"], "w1");
    let got = alice.get(&format!("{WIDGETS}/w1"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json().unwrap()["spec"]["color"], "red");
    let patched = alice.request(
        "PATCH",
        &format!("{WIDGETS}/w1"),
        &[("Content-Type", "application/merge-patch+json")],
        Some(&json!({"spec": {"color": "blue"}})),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(patched.json().unwrap()["spec"]["color"], "blue");
    let list = alice.get(&format!("{WIDGETS}?limit=1"));
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(list.json().unwrap()["items"][0]["metadata"]["name"], "w1");

    // A watch streams through the proxy: an object created meanwhile arrives.
    let watcher = {
        let http = Http::new_tls(core.url(), "aggregator-test", &core_ca, None);
        std::thread::spawn(move || {
            let h = vec![(
                "Authorization".to_string(),
                "Bearer alice-token".to_string(),
            )];
            let q = vec![
                ("watch".to_string(), "true".to_string()),
                ("timeoutSeconds".to_string(), "4".to_string()),
            ];
            http.request("GET", WIDGETS, &q, &h, None).unwrap()
        })
    };
    std::thread::sleep(Duration::from_millis(1500));
    created(alice.post(WIDGETS, &widget("w2", "green")));
    let watched = watcher.join().unwrap();
    assert_eq!(watched.status, 200);
    let events: Vec<Value> = watched
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "w2"),
        "{}",
        watched.text()
    );

    // The backend sees the core's user: its uid and groups (the policy's echo) ...
    let echo = alice.post(WIDGETS, &widget("echo", "red"));
    assert_eq!(echo.status, 422, "{}", echo.text());
    let message = echo.json().unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.ends_with("user=alice uid=uid-alice groups=dev,qa,system:authenticated"),
        "{message}"
    );
    // ... and its RBAC judges bob, whatever headers he sends to the core.
    for forged in [
        vec![],
        vec![
            ("X-Remote-User", "alice"),
            ("X-Remote-Group", "system:masters"),
            ("X-Remote-Uid", "uid-alice"),
        ],
    ] {
        let r = bob.request("GET", WIDGETS, &forged, None);
        assert_eq!(r.status, 403, "{}", r.text());
        assert_eq!(
            r.json().unwrap()["message"],
            "widgets.example.com is forbidden: User \"bob\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
        );
    }

    // kubectl against the core.
    let out = core.kubectl(&["get", "widgets", "-n", "default"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("w1") && text.contains("w2"),
        "{}",
        common::describe_output(&out)
    );
    let out = core.kubectl(&["api-resources", "--api-group=example.com"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("widgets"),
        "{}",
        common::describe_output(&out)
    );
    // OpenAPI v3 of the group-version comes from the backend.
    let index = admin.get("/openapi/v3").json().unwrap();
    assert!(
        index["paths"]["apis/example.com/v1"]["serverRelativeURL"].is_string(),
        "{index}"
    );
    let out = core.kubectl(&["explain", "widget.spec.color"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("FIELD: color"),
        "{}",
        common::describe_output(&out)
    );

    let deleted = alice.request("DELETE", &format!("{WIDGETS}/w2"), &[], None);
    assert_eq!(deleted.status, 200, "{}", deleted.text());

    // Latency of a GET through the core and straight to the backend.
    let time = |f: &dyn Fn() -> HttpResponse| {
        let start = Instant::now();
        for _ in 0..200 {
            assert_eq!(f().status, 200);
        }
        start.elapsed() / 200
    };
    let via_core = time(&|| alice.get(&format!("{WIDGETS}/w1")));
    let direct = time(&|| backend_admin.get(&format!("{WIDGETS}/w1")));
    eprintln!("GET of one Widget, mean of 200: through the aggregator {via_core:?}, straight to the backend {direct:?}");

    // The backend goes away: requests fail with kube's 503s, and once a pass looks
    // (here: the Service changes) the APIService says why.
    drop(backend);
    let r = alice.get(WIDGETS);
    assert_eq!(r.status, 503, "{}", r.text());
    let refused = format!("dial tcp 127.0.0.1:{backend_port}: connect: connection refused");
    assert!(
        r.text() == format!("error trying to reach service: {refused}\n")
            || r.text() == "service unavailable\n",
        "{}",
        r.text()
    );
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("text/plain; charset=utf-8")
    );
    let touched = admin.request(
        "PATCH",
        "/api/v1/namespaces/default/services/widget-api",
        &[("Content-Type", "application/merge-patch+json")],
        Some(&json!({"metadata": {"labels": {"touched": "yes"}}})),
    );
    assert_eq!(touched.status, 200, "{}", touched.text());
    let c = available_when(&admin, |c| c["status"] == "False");
    let url = format!("https://127.0.0.1:{backend_port}/apis/example.com/v1");
    assert_eq!(c["reason"], "FailedDiscoveryCheck");
    assert_eq!(
        c["message"],
        format!("failing or missing response from {url}: Get \"{url}\": {refused}")
    );
    let r = alice.get(WIDGETS);
    assert_eq!(
        (r.status, r.text()),
        (503, "service unavailable\n".to_string())
    );
    // Without its Service, kube's ServiceNotFound.
    let gone = admin.request(
        "DELETE",
        "/api/v1/namespaces/default/services/widget-api",
        &[],
        None,
    );
    assert_eq!(gone.status, 200, "{}", gone.text());
    let c = available_when(&admin, |c| c["reason"] == "ServiceNotFound");
    assert_eq!(
        c["message"],
        "service/widget-api in \"default\" is not present"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
