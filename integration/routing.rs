//! Paths nothing serves, answered as kube-apiserver's handler chain answers them
//! (`k8s.io/apiserver/pkg/server/handler.go`, `apiextensions-apiserver`'s crdHandler,
//! `k8s.io/apiserver/pkg/util/notfoundhandler`, kube-aggregator's OpenAPI v3 proxier):
//!
//! - below a built-in group's (or `/api`'s) go-restful web service, go-restful's own
//!   404/405, a `Status` with empty `details`;
//! - in CRD groups, unknown groups and other paths, the NotFound handler's plain text
//!   `404 page not found`;
//! - an unknown subresource of a custom resource, the crdHandler's `NotFound` naming
//!   the object; an unknown OpenAPI v3 document, an empty 404.

mod common;

use common::{HttpResponse, TestServer};
use std::time::Duration;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// go-restful's 404 through kube's `serviceErrorHandler`.
const ROUTE_NOT_FOUND: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server could not find the requested resource\",\"reason\":\"NotFound\",\"details\":{},\"code\":404}\n";
/// go-restful's 405 through kube's `serviceErrorHandler`.
const ROUTE_METHOD_NOT_ALLOWED: &str = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the server does not allow this method on the requested resource\",\"reason\":\"MethodNotAllowed\",\"details\":{},\"code\":405}\n";

fn server() -> TestServer {
    let server = TestServer::start();
    let http = server.http();
    let created = http.send_json("POST", CRDS, &common::testdata_json("crds/widgets.yaml"));
    assert_eq!(created.status, 201, "{}", created.text());
    let listed = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
    assert_eq!(listed.status, 200, "{}", listed.text());
    let w1 = http.send_json(
        "POST",
        WIDGETS,
        &common::testdata_json("objects/widget-w1.yaml"),
    );
    assert_eq!(w1.status, 201, "{}", w1.text());
    server
}

fn send(server: &TestServer, method: &str, path: &str) -> HttpResponse {
    let body = (method != "GET").then(|| b"{}".to_vec());
    let headers = [
        ("Accept".to_string(), "application/json".to_string()),
        ("Content-Type".to_string(), "application/json".to_string()),
    ];
    server
        .http()
        .request(method, path, &[], &headers, body)
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

#[test]
fn go_restful_answers_below_built_in_groups() {
    let server = server();
    for (method, path) in [
        ("GET", "/api/v1/nothings"),
        ("GET", "/api/v1/namespaces/default/nothings"),
        ("GET", "/api/v2/pods"),
        ("GET", "/api/v2"),
        ("GET", "/apis/rbac.authorization.k8s.io/v9"),
        ("GET", "/apis/rbac.authorization.k8s.io/v9/roles"),
        (
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/nothings",
        ),
        ("GET", "/apis/apiextensions.k8s.io/v1/nothings"),
        // A cluster-scoped kind under a namespace, a namespaced one by name without.
        ("GET", "/api/v1/namespaces/default/namespaces/default"),
        (
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/clusterroles",
        ),
        ("GET", "/api/v1/configmaps/x"),
        ("PUT", "/api/v1/configmaps/x"),
        // No such subresource.
        ("GET", "/api/v1/namespaces/default/configmaps/x/status"),
    ] {
        let r = send(&server, method, path);
        assert_eq!(r.status, 404, "{method} {path}: {}", r.text());
        assert_eq!(r.text(), ROUTE_NOT_FOUND, "{method} {path}");
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("application/json"),
            "{method} {path}"
        );
    }
    // The all-namespaces path of a namespaced kind serves list and watch only.
    let config_map =
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}});
    let created =
        server
            .http()
            .send_json("POST", "/api/v1/namespaces/default/configmaps", &config_map);
    assert_eq!(created.status, 201, "{}", created.text());
    for method in ["POST", "DELETE"] {
        let r = send(&server, method, "/api/v1/configmaps");
        assert_eq!(r.status, 405, "{method}: {}", r.text());
        assert_eq!(r.text(), ROUTE_METHOD_NOT_ALLOWED, "{method}");
    }
    let kept = send(&server, "GET", "/api/v1/namespaces/default/configmaps/kept");
    assert_eq!(kept.status, 200, "{}", kept.text());
}

#[test]
fn the_not_found_handler_answers_elsewhere() {
    let server = server();
    for (method, path) in [
        ("GET", "/apis/example.com/v1/namespaces/default/nothings"),
        ("GET", "/apis/example.com/v9/namespaces/default/widgets"),
        ("GET", "/apis/example.com/v9"),
        ("GET", "/apis/nothing.example.org"),
        ("GET", "/apis/nothing.example.org/v1"),
        ("GET", "/apis/nothing.example.org/v1/foos"),
        ("GET", "/nothing"),
        ("GET", "/openapi/v1"),
        // A namespaced CRD's kind without a namespace serves list and watch only.
        ("GET", "/apis/example.com/v1/widgets/w1"),
        ("POST", "/apis/example.com/v1/widgets"),
        ("DELETE", "/apis/example.com/v1/widgets"),
    ] {
        let r = send(&server, method, path);
        assert_eq!(r.status, 404, "{method} {path}: {}", r.text());
        assert_eq!(r.text(), "404 page not found\n", "{method} {path}");
        assert_eq!(
            r.header("content-type").as_deref(),
            Some("text/plain; charset=utf-8"),
            "{method} {path}"
        );
        assert_eq!(
            r.header("x-content-type-options").as_deref(),
            Some("nosniff")
        );
    }
    let all = send(&server, "GET", "/apis/example.com/v1/widgets");
    assert_eq!(all.status, 200, "{}", all.text());
    assert_eq!(
        send(&server, "GET", &format!("{WIDGETS}/w1")).status,
        200,
        "DELETE of the all-namespaces path must not have deleted anything"
    );
}

#[test]
fn custom_resource_subresources_and_openapi_documents() {
    let server = server();
    // The crdHandler names the object for a subresource the CRD does not have.
    let r = send(&server, "GET", &format!("{WIDGETS}/w1/nothing"));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"widgets.example.com \\\"w1\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"w1\",\"group\":\"example.com\",\"kind\":\"widgets\"},\"code\":404}\n"
    );
    // A verb a subresource does not serve.
    let r = send(&server, "DELETE", &format!("{WIDGETS}/w1/status"));
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(
        r.text(),
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"delete is not supported on resources of kind \\\"widgets.example.com\\\"\",\"reason\":\"MethodNotAllowed\",\"details\":{\"group\":\"example.com\",\"kind\":\"widgets\"},\"code\":405}\n"
    );
    // kube-aggregator's OpenAPI v3 proxier: an empty 404 for a group-version nobody serves.
    let r = send(&server, "GET", "/openapi/v3/apis/nothing.example.org/v1");
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.body.is_empty(), "{}", r.text());
}
