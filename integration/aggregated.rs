//! The server as an aggregated API server behind a real kube-apiserver, with this test
//! playing kube-aggregator's part exactly: its front-proxy client certificate (signed
//! by the `--requestheader-client-ca-file` CA, CN in `--requestheader-allowed-names`),
//! the `X-Remote-User`/`X-Remote-Group`/`X-Remote-Extra-*` headers it sets, the
//! availability probe and discovery it makes as `system:kube-aggregator`, the OpenAPI
//! documents it downloads, and user requests it proxies, authorized here by RBAC for
//! the forwarded user.

mod common;

use common::{json_accept, kubeconfig_ca, poll, Http, HttpResponse, TestCa, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// The front proxy (kube-aggregator) as a client: its certificate and who it says the
/// request is from.
struct Aggregator {
    http: Http,
}

impl Aggregator {
    fn headers(user: &str, groups: &[&str], extra: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut h = json_accept();
        h.push(("X-Remote-User".into(), user.into()));
        // kube v1.36 sends the uid too (RemoteRequestHeaderUID).
        h.push(("X-Remote-Uid".into(), format!("uid-{user}")));
        for g in groups {
            h.push(("X-Remote-Group".into(), (*g).into()));
        }
        for (k, v) in extra {
            h.push((format!("X-Remote-Extra-{k}"), (*v).into()));
        }
        h
    }

    fn get(&self, user: &str, groups: &[&str], path: &str) -> HttpResponse {
        self.get_accepting(user, groups, path, "application/json")
    }

    fn get_accepting(&self, user: &str, groups: &[&str], path: &str, accept: &str) -> HttpResponse {
        let mut h = Aggregator::headers(user, groups, &[]);
        h.retain(|(k, _)| k != "Accept");
        h.push(("Accept".into(), accept.into()));
        self.http.request("GET", path, &[], &h, None).unwrap()
    }

    fn send(
        &self,
        user: &str,
        groups: &[&str],
        extra: &[(&str, &str)],
        method: &str,
        path: &str,
        body: &Value,
    ) -> HttpResponse {
        let mut h = Aggregator::headers(user, groups, extra);
        h.push(("Content-Type".into(), "application/json".into()));
        self.http
            .request(
                method,
                path,
                &[],
                &h,
                Some(serde_json::to_vec(body).unwrap()),
            )
            .unwrap()
    }
}

fn widget(name: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
           "spec": {"color": "red"}})
}

#[test]
fn behind_kube_aggregator_discovery_openapi_and_proxied_requests_work_for_the_forwarded_user() {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-aggregated-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("load")).unwrap();
    let front_proxy_ca = TestCa::new("front-proxy-ca");
    let ca_file = dir.join("front-proxy-ca.crt");
    std::fs::write(&ca_file, &front_proxy_ca.pem).unwrap();
    std::fs::write(
        dir.join("load/widgets.yaml"),
        common::testdata("crds/widgets.yaml"),
    )
    .unwrap();
    // The front-proxy flags of the README's "Aggregated API server" (own RBAC).
    let server = TestServer::start_secure(&[
        "--requestheader-client-ca-file",
        ca_file.to_str().unwrap(),
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
    // The APIService's caBundle is the server's serving CA.
    let serving_ca = kubeconfig_ca(&server).expect("serving CA");
    let (cert, key) = front_proxy_ca.client("front-proxy-client", &[]);
    let aggregator = Aggregator {
        http: Http::new_tls(
            server.url(),
            "kube-aggregator/v1.36.2",
            &serving_ca,
            Some((&cert, &key)),
        ),
    };
    const AGG: &str = "system:kube-aggregator";

    // Availability: the aggregator GETs /apis/<group>/<version> as itself.
    let r = aggregator.get(AGG, &["system:masters"], "/apis/example.com/v1");
    assert_eq!(r.status, 200, "{}", r.text());
    let resources = r.json().unwrap();
    assert_eq!(resources["kind"], "APIResourceList");
    assert_eq!(resources["groupVersion"], "example.com/v1");
    assert!(resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "widgets"));
    // Aggregated discovery of the delegate.
    let r = aggregator.get_accepting(
        AGG,
        &["system:masters"],
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap()["kind"], "APIGroupDiscoveryList");
    assert!(r.text().contains("\"example.com\""));
    // OpenAPI, downloaded as the aggregator without groups (kube's discovery RBAC).
    let r = aggregator.get(AGG, &[], "/openapi/v2");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json().unwrap()["paths"]
        .as_object()
        .unwrap()
        .contains_key("/apis/example.com/v1/namespaces/{namespace}/widgets"));
    let r = aggregator.get(AGG, &[], "/openapi/v3");
    assert_eq!(r.status, 200, "{}", r.text());
    let paths = r.json().unwrap();
    let group_doc = paths["paths"]["apis/example.com/v1"]["serverRelativeURL"]
        .as_str()
        .expect("the group's OpenAPI v3 document")
        .to_string();
    let r = aggregator.get(AGG, &[], &group_doc);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json().unwrap()["components"]["schemas"]
        .as_object()
        .unwrap()
        .contains_key("com.example.v1.Widget"));
    for path in ["/healthz", "/readyz", "/livez", "/version"] {
        assert_eq!(aggregator.get(AGG, &[], path).status, 200, "{path}");
    }

    // A user's request, proxied: authorized here for that user.
    let r = aggregator.send(
        "alice",
        &["devs", "system:authenticated"],
        &[],
        "POST",
        WIDGETS,
        &widget("w1"),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "widgets.example.com is forbidden: User \"alice\" cannot create resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    // An admin (system:masters through the proxy) lets the group `devs` edit widgets
    // (kube's `edit` role covers custom resources only through aggregation).
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "widget-editor", "namespace": "default"},
        "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]}]});
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "devs-edit-widgets", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-editor"},
        "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]});
    for (path, body) in [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            &role,
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            &binding,
        ),
    ] {
        let r = aggregator.send("admin", &["system:masters"], &[], "POST", path, body);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let created = poll(Duration::from_secs(10), || {
        let r = aggregator.send(
            "alice",
            &["devs", "system:authenticated"],
            &[],
            "POST",
            WIDGETS,
            &widget("w1"),
        );
        (r.status == 201).then_some(r)
    });
    let created = created
        .expect("alice could create once her group was bound")
        .json()
        .unwrap();
    assert_eq!(
        created["metadata"]["managedFields"][0]["manager"], "kube-aggregator",
        "the field manager is the proxied client's user agent"
    );
    let r = aggregator.get("alice", &["devs"], &format!("{WIDGETS}/w1"));
    assert_eq!(r.status, 200, "{}", r.text());
    let q = vec![
        ("watch".to_string(), "true".to_string()),
        ("timeoutSeconds".to_string(), "1".to_string()),
    ];
    let watch = aggregator
        .http
        .request(
            "GET",
            WIDGETS,
            &q,
            &Aggregator::headers("alice", &["devs"], &[]),
            None,
        )
        .unwrap();
    assert_eq!(watch.status, 200);
    assert!(
        watch.text().contains("\"type\":\"ADDED\""),
        "{}",
        watch.text()
    );
    // The user, groups and extras forwarded are the request's identity.
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let r = aggregator.send(
        "alice",
        &["devs", "system:authenticated"],
        &[("Scopes", "read"), ("Scopes", "write")],
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &review,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["status"]["userInfo"],
        json!({"username": "alice", "uid": "uid-alice",
               "groups": ["devs", "system:authenticated"],
               "extra": {"scopes": ["read", "write"]}})
    );
    // Identity headers from a client without the front proxy's certificate count for
    // nothing: that client is anonymous.
    let direct = Http::new_tls(server.url(), "curl/8", &serving_ca, None);
    let r = direct
        .request(
            "GET",
            &format!("{WIDGETS}/w1"),
            &[],
            &Aggregator::headers("alice", &["devs"], &[]),
            None,
        )
        .unwrap();
    assert_eq!(r.status, 403);
    assert!(r.text().contains("system:anonymous"), "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}
