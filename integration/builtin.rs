//! The built-in kinds controllers touch (ConfigMaps, Secrets, ServiceAccounts, core/v1
//! and events.k8s.io/v1 Events, Leases) against the real binary: HTTP with kube's
//! responses, kubectl, and kube-rs (event recorder, leader-election style Lease writes).

mod common;

use common::{causes, describe_output, poll, testdata_dir, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::events::{Event as RecordedEvent, EventType, Recorder, Reporter};
use kube::{Client, Config};
use serde_json::{json, Value};
use std::time::Duration;

const SETTLE: Duration = Duration::from_secs(10);

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

fn install_widgets(server: &TestServer) {
    let file = testdata_dir().join("crds/widgets.yaml");
    ok(server, &["apply", "-f", &file.to_string_lossy()]);
    ok(
        server,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=20s",
            "crd/widgets.example.com",
        ],
    );
    let w1 = testdata_dir().join("objects/widget-w1.yaml");
    let out = poll(SETTLE, || {
        let out = server.kubectl(&["apply", "-f", &w1.to_string_lossy()]);
        out.status.success().then_some(out)
    });
    assert!(out.is_some(), "widget w1 could not be created");
}

#[test]
fn config_map_crud_with_kubes_warnings_and_validation() {
    let server = TestServer::start();
    let http = server.http();
    let base = "/api/v1/namespaces/default/configmaps";
    let resp = http.send_json(
        "POST",
        base,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"},
            "data": {"a": "1"}, "spec": {"x": 1}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    assert_eq!(
        resp.header("warning").as_deref(),
        Some("299 - \"unknown field \\\"spec\\\"\"")
    );
    let body = resp.json().expect("json");
    assert_eq!(body["data"], json!({"a": "1"}));
    assert!(body.get("spec").is_none());
    assert!(body["metadata"]["uid"].is_string());

    // Strict field validation: kube's decoder 400.
    let resp = http.send_json(
        "POST",
        &format!("{base}?fieldValidation=Strict"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c2"}, "bogus": 1}),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
    );

    // A value of the wrong type fails kube's typed decoding.
    let resp = http.send_json(
        "POST",
        base,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c4"}, "data": {"n": 1}}),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    );

    // Invalid data key: 422 naming the key.
    let resp = http.send_json(
        "POST",
        base,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c3"}, "data": {"a b": "x"}}),
    );
    assert_eq!(resp.status, 422, "{}", resp.text());
    let body = resp.json().expect("json");
    assert_eq!(body["reason"], "Invalid");
    assert_eq!(body["details"]["kind"], "ConfigMap");
    assert!(body["message"]
        .as_str()
        .unwrap_or("")
        .starts_with("ConfigMap \"c3\" is invalid: data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters"));

    // Immutable ConfigMaps keep their data.
    let resp = http.send_json(
        "POST",
        base,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"},
            "immutable": true, "data": {"a": "1"}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let resp = http.send_json(
        "PUT",
        &format!("{base}/frozen"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "frozen"},
            "immutable": true, "data": {"a": "2"}}),
    );
    assert_eq!(resp.status, 422, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );

    // Server-side apply merges by the kind's schema; client-side apply patches strategically.
    let file = server.write_file(
        "applied.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n",
    );
    ok(
        &server,
        &["apply", "--server-side", "-f", &file.to_string_lossy()],
    );
    let applied = http.get(&format!("{base}/applied")).json().expect("json");
    assert_eq!(applied["data"], json!({"a": "1"}));
    assert_eq!(
        applied["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    assert_eq!(
        applied["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:a": {}}})
    );
    let file = server.write_file(
        "patched.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: patched\ndata:\n  a: \"1\"\n",
    );
    ok(&server, &["apply", "-f", &file.to_string_lossy()]);
    ok(
        &server,
        &[
            "patch",
            "configmap",
            "patched",
            "-p",
            r#"{"data":{"b":"2"}}"#,
        ],
    );
    let patched = http.get(&format!("{base}/patched")).json().expect("json");
    assert_eq!(patched["data"], json!({"a": "1", "b": "2"}));

    // Table output: kube's configmap printer.
    let out = ok(&server, &["get", "configmaps"]);
    let header = out.lines().next().unwrap_or("");
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        vec!["NAME", "DATA", "AGE"]
    );
    assert!(out
        .lines()
        .any(|l| l.starts_with("c1 ") && l.split_whitespace().nth(1) == Some("1")));

    // ConfigMaps have no field labels of their own: kube's default conversion refuses.
    let resp = http.get(&format!("{base}?fieldSelector=data.a%3D1"));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "\"data.a\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
}

#[test]
fn kubectl_creates_config_maps_and_secrets() {
    let server = TestServer::start();
    ok(
        &server,
        &[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
        ],
    );
    let cm: Value = serde_json::from_str(&ok(
        &server,
        &["get", "configmap", "settings", "-o", "json"],
    ))
    .expect("json");
    assert_eq!(cm["data"], json!({"mode": "fast"}));

    ok(&server, &["create", "serviceaccount", "robot"]);
    let out = ok(&server, &["get", "serviceaccounts"]);
    assert_eq!(
        out.lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>(),
        vec!["NAME", "AGE"]
    );
    assert!(out.lines().any(|l| l.starts_with("robot ")), "{out}");
    ok(
        &server,
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=user=admin",
        ],
    );
    let secret: Value =
        serde_json::from_str(&ok(&server, &["get", "secret", "creds", "-o", "json"]))
            .expect("json");
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"], json!({"user": "YWRtaW4="}));
    let out = ok(&server, &["get", "secrets"]);
    let mut lines = out.lines();
    assert_eq!(
        lines
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>(),
        vec!["NAME", "TYPE", "DATA", "AGE"]
    );
    let row: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(&row[..3], &["creds", "Opaque", "1"]);

    // stringData is merged into data and never stored; the type cannot change.
    let http = server.http();
    let resp = http.send_json(
        "POST",
        "/api/v1/namespaces/default/secrets",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s2"},
            "data": {"a": "MQ=="}, "stringData": {"b": "two"}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let body = resp.json().expect("json");
    assert_eq!(body["data"], json!({"a": "MQ==", "b": "dHdv"}));
    assert!(body.get("stringData").is_none());
    let resp = http.send_json(
        "PUT",
        "/api/v1/namespaces/default/secrets/s2",
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s2"},
            "type": "kubernetes.io/basic-auth", "data": {"username": ""}}),
    );
    assert_eq!(resp.status, 422, "{}", resp.text());
    assert_eq!(
        causes(&resp.json().expect("json")),
        vec!["type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
    );
    let listed = http.get("/api/v1/namespaces/default/secrets?fieldSelector=type%3DOpaque");
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert_eq!(
        listed.json().expect("json")["items"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

#[test]
fn events_show_in_kubectl_and_convert_between_apis() {
    let server = TestServer::start();
    install_widgets(&server);
    let widget: Value =
        serde_json::from_str(&ok(&server, &["get", "widget", "w1", "-o", "json"])).expect("json");
    let uid = widget["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let http = server.http();
    // A legacy (client-go recorder) event.
    let resp = http.send_json(
        "POST",
        "/api/v1/namespaces/default/events",
        &json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "w1.1", "namespace": "default"},
            "involvedObject": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1",
                "namespace": "default", "uid": uid},
            "reason": "Synced", "message": "widget synced", "type": "Normal",
            "source": {"component": "widget-controller"}, "count": 1,
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z"}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    // Read back through events.k8s.io/v1.
    let resp = http.get("/apis/events.k8s.io/v1/namespaces/default/events/w1.1");
    assert_eq!(resp.status, 200, "{}", resp.text());
    let ev = resp.json().expect("json");
    assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
    assert_eq!(ev["regarding"]["name"], "w1");
    assert_eq!(ev["note"], "widget synced");
    assert_eq!(ev["deprecatedCount"], 1);
    assert_eq!(
        ev["deprecatedSource"],
        json!({"component": "widget-controller"})
    );

    // A new-API event, read back through core/v1.
    let resp = http.send_json(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "w1.2", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/widgets", "reportingInstance": "widgets-0",
            "action": "Scale", "reason": "Scaled", "type": "Warning", "note": "scaled up",
            "regarding": {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w1",
                "namespace": "default", "uid": uid}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let core = http
        .get("/api/v1/namespaces/default/events/w1.2")
        .json()
        .expect("json");
    assert_eq!(core["apiVersion"], "v1");
    assert_eq!(core["involvedObject"]["kind"], "Widget");
    assert_eq!(core["message"], "scaled up");
    assert_eq!(core["reportingComponent"], "example.com/widgets");
    assert_eq!(core["firstTimestamp"], Value::Null);
    assert_eq!(core["source"], json!({}));

    // events.k8s.io/v1 validation.
    let resp = http.send_json(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "bad", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingInstance": "x",
            "action": "A", "reason": "R", "type": "Normal",
            "regarding": {"kind": "Widget", "name": "w1", "namespace": "default"}}),
    );
    assert_eq!(resp.status, 422, "{}", resp.text());
    let body = resp.json().expect("json");
    assert_eq!(body["details"]["group"], "events.k8s.io");
    assert_eq!(causes(&body)[0], "reportingController: Required value");

    // kubectl get events: kube's event printer.
    let out = ok(&server, &["get", "events"]);
    assert_eq!(
        out.lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>(),
        vec!["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    assert!(out.contains("widget/w1"), "{out}");
    // kubectl describe lists events by involvedObject field selectors.
    let out = ok(&server, &["describe", "widget", "w1"]);
    assert!(out.contains("Events:"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("Synced") && l.contains("widget synced")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("Scaled") && l.contains("scaled up")),
        "{out}"
    );
}

#[test]
fn lease_renewals_conflict_on_stale_resource_versions() {
    let server = TestServer::start();
    let http = server.http();
    let base = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |holder: &str, rv: Option<&str>, renew: &str| {
        let mut meta = json!({"name": "leader"});
        if let Some(rv) = rv {
            meta["resourceVersion"] = json!(rv);
        }
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15,
                "acquireTime": "2024-01-01T00:00:00.000000Z", "renewTime": renew}})
    };
    let resp = http.send_json(
        "POST",
        base,
        &lease("a", None, "2024-01-01T00:00:00.000000Z"),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let rv1 = resp.json().expect("json")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // A second candidate's create loses.
    assert_eq!(
        http.send_json(
            "POST",
            base,
            &lease("b", None, "2024-01-01T00:00:00.000000Z")
        )
        .status,
        409
    );
    // The holder renews.
    let resp = http.send_json(
        "PUT",
        &format!("{base}/leader"),
        &lease("a", Some(&rv1), "2024-01-01T00:00:10.000000Z"),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    // A candidate acting on the old resourceVersion conflicts.
    let resp = http.send_json(
        "PUT",
        &format!("{base}/leader"),
        &lease("b", Some(&rv1), "2024-01-01T00:00:20.000000Z"),
    );
    assert_eq!(resp.status, 409, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "Operation cannot be fulfilled on leases.coordination.k8s.io \"leader\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let mut bad = lease("a", None, "2024-01-01T00:00:00.000000Z");
    bad["spec"]["leaseDurationSeconds"] = json!(0);
    bad["metadata"]["name"] = json!("bad");
    let resp = http.send_json("POST", base, &bad);
    assert_eq!(resp.status, 422, "{}", resp.text());
    assert_eq!(
        causes(&resp.json().expect("json")),
        vec!["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]
    );
    // Discovery and OpenAPI come from the same table: kubectl finds and explains them.
    let out = ok(
        &server,
        &["api-resources", "--api-group=coordination.k8s.io"],
    );
    assert!(
        out.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["leases", "coordination.k8s.io/v1", "true", "Lease"]),
        "{out}"
    );
    let out = ok(&server, &["explain", "lease.spec.holderIdentity"]);
    assert!(
        out.contains("holderIdentity contains the identity of the holder"),
        "{out}"
    );
    let out = ok(&server, &["get", "leases"]);
    assert_eq!(
        out.lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect::<Vec<_>>(),
        vec!["NAME", "HOLDER", "AGE"]
    );
}

async fn client_for(server: &TestServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig())
        .unwrap_or_else(|e| panic!("reading kubeconfig: {e}"));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig not usable by kube-rs: {e}"));
    Client::try_from(config).unwrap_or_else(|e| panic!("building kube client: {e}"))
}

#[tokio::test]
async fn kube_rs_recorder_and_typed_round_trips() {
    let server = TestServer::start();
    install_widgets(&server);
    let client = client_for(&server).await;

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("typed".into());
    cm.data = Some([("k".to_string(), "v".to_string())].into());
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create cm");
    assert_eq!(created.data, cm.data);
    let fetched = cms.get("typed").await.expect("get cm");
    assert_eq!(fetched.metadata.uid, created.metadata.uid);

    let leases: Api<Lease> = Api::namespaced(client.clone(), "default");
    let mut lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "ctrl-leader"},
        "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15}
    }))
    .expect("lease");
    let created = leases
        .create(&PostParams::default(), &lease)
        .await
        .expect("create lease");
    lease.metadata.resource_version = created.metadata.resource_version.clone();
    if let Some(spec) = lease.spec.as_mut() {
        spec.lease_transitions = Some(1);
    }
    let renewed = leases
        .replace("ctrl-leader", &PostParams::default(), &lease)
        .await
        .expect("renew lease");
    assert_eq!(renewed.spec.and_then(|s| s.lease_transitions), Some(1));
    // The same write again is stale.
    match leases
        .replace("ctrl-leader", &PostParams::default(), &lease)
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 409),
        other => panic!("expected a 409, got {other:?}"),
    }

    let widget: Value =
        serde_json::from_str(&ok(&server, &["get", "widget", "w1", "-o", "json"])).expect("json");
    let reference = ObjectReference {
        api_version: Some("example.com/v1".into()),
        kind: Some("Widget".into()),
        name: Some("w1".into()),
        namespace: Some("default".into()),
        uid: widget["metadata"]["uid"].as_str().map(str::to_string),
        ..Default::default()
    };
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "widget-controller".into(),
            instance: Some("widget-controller-0".into()),
        },
    );
    let ev = RecordedEvent {
        type_: EventType::Normal,
        reason: "Reconciled".into(),
        note: Some("all good".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder
        .publish(&ev, &reference)
        .await
        .expect("publish event");
    // The same event again becomes a series (a merge patch).
    recorder
        .publish(&ev, &reference)
        .await
        .expect("publish event again");
    let out = ok(
        &server,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=w1",
        ],
    );
    assert!(
        out.contains("Reconciled") && out.contains("widget/w1"),
        "{out}"
    );
    let listed = server
        .http()
        .get("/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=reason%3DReconciled");
    let items = listed.json().expect("json")["items"].clone();
    assert_eq!(items.as_array().map(Vec::len), Some(1), "{items}");
    assert_eq!(items[0]["series"]["count"], 2);
}

/// GET `path` with `Authorization: Bearer <token>`.
fn get_as(server: &TestServer, token: &str, path: &str) -> common::HttpResponse {
    let mut headers = common::json_accept();
    headers.push(("Authorization".into(), format!("Bearer {token}")));
    server
        .http()
        .request("GET", path, &[], &headers, None)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn create_token(server: &TestServer, args: &[&str]) -> String {
    let mut all = vec!["create", "token"];
    all.extend_from_slice(args);
    ok(server, &all).trim().to_string()
}

#[test]
fn kubectl_create_token_authenticates_as_the_service_account() {
    let server = TestServer::start_with(&["--authorization-mode", "RBAC"]);
    let cms = "/api/v1/namespaces/default/configmaps";
    ok(&server, &["create", "serviceaccount", "builder"]);
    let token = create_token(&server, &["builder"]);
    assert_eq!(token.split('.').count(), 3, "not a JWT: {token}");
    // Authenticated as the service account, which RBAC does not allow yet.
    let resp = get_as(&server, &token, cms);
    assert_eq!(resp.status, 403, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "configmaps is forbidden: User \"system:serviceaccount:default:builder\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/default";
    let resp = server.http().send_json(
        "POST",
        &format!("{rbac}/roles"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    // Bound through the namespace's service account group.
    let resp = server.http().send_json(
        "POST",
        &format!("{rbac}/rolebindings"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "cm-readers"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                "name": "system:serviceaccounts:default"}]}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let allowed = poll(SETTLE, || {
        (get_as(&server, &token, cms).status == 200).then_some(())
    });
    assert!(allowed.is_some(), "the role binding never applied");

    // The TokenRequest as kube answers it.
    let resp = server.http().send_json(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/builder/token",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 600}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let tr = resp.json().expect("json");
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["metadata"]["name"], "builder");
    assert_eq!(
        tr["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(tr["spec"]["expirationSeconds"], 600);
    assert!(tr["status"]["expirationTimestamp"].is_string(), "{tr}");

    // A token for another audience does not authenticate here.
    let vault = create_token(&server, &["builder", "--audience=vault"]);
    assert_eq!(get_as(&server, &vault, cms).status, 401);

    // Deleting and recreating the service account invalidates its tokens.
    ok(&server, &["delete", "serviceaccount", "builder"]);
    ok(&server, &["create", "serviceaccount", "builder"]);
    let resp = get_as(&server, &token, cms);
    assert_eq!(resp.status, 401, "{}", resp.text());
    assert_eq!(resp.json().expect("json")["message"], "Unauthorized");
    let fresh = create_token(&server, &["builder"]);
    assert_eq!(get_as(&server, &fresh, cms).status, 200);

    // A SelfSubjectReview (`kubectl auth whoami`) with the token.
    let mut headers = common::json_accept();
    headers.push(("Authorization".into(), format!("Bearer {fresh}")));
    headers.push(("Content-Type".into(), "application/json".into()));
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let resp = server
        .http()
        .request(
            "POST",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            &[],
            &headers,
            Some(body.to_string().into_bytes()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status, 201, "{}", resp.text());
    let whoami = resp.json().expect("json");
    let user = &whoami["status"]["userInfo"];
    assert_eq!(user["username"], "system:serviceaccount:default:builder");
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    // A TokenReview of the old and the fresh token.
    let review = |token: &str| {
        let resp = server.http().send_json(
            "POST",
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": token}}),
        );
        assert_eq!(resp.status, 201, "{}", resp.text());
        resp.json().expect("json")["status"].clone()
    };
    let fresh_review = review(&fresh);
    assert_eq!(fresh_review["authenticated"], true);
    assert_eq!(
        fresh_review["user"]["username"],
        "system:serviceaccount:default:builder"
    );
    assert_eq!(
        fresh_review["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let old_review = review(&token);
    assert_eq!(old_review["authenticated"], false);
    assert!(
        old_review["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("service account UID (")),
        "{old_review}"
    );
}

#[test]
fn create_token_rejects_bad_requests_and_binds_tokens_to_secrets() {
    let server = TestServer::start();
    ok(&server, &["create", "serviceaccount", "builder"]);
    let out = server.kubectl(&["create", "token", "builder", "--duration=5m"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{stderr}"
    );
    let out = server.kubectl(&["create", "token", "nosuch"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("serviceaccounts \"nosuch\" not found"),
        "{stderr}"
    );
    let resp = server.http().send_json(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/builder/token",
        &json!({"metadata": {"name": "other"}, "spec": {}}),
    );
    assert_eq!(resp.status, 422, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "TokenRequest.authentication.k8s.io \"builder\" is invalid: metadata.name: Invalid value: \"other\": must match the service account name if specified"
    );

    // Discovery names the subresource's kind as kube does.
    let api = server.http().get("/api/v1").json().expect("json");
    let token = api["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "serviceaccounts/token"))
        .cloned();
    assert_eq!(
        token,
        Some(
            json!({"name": "serviceaccounts/token", "singularName": "", "namespaced": true,
            "group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest",
            "verbs": ["create"]})
        )
    );
    // kubectl's SelfSubjectReview (protobuf) over plain HTTP without credentials.
    assert!(ok(&server, &["auth", "whoami"]).contains("system:unsecured"));
    // A token bound to a Secret lives as long as the Secret.
    ok(&server, &["create", "secret", "generic", "s1"]);
    let token = create_token(
        &server,
        &[
            "builder",
            "--bound-object-kind=Secret",
            "--bound-object-name=s1",
        ],
    );
    let cms = "/api/v1/namespaces/default/configmaps";
    assert_eq!(get_as(&server, &token, cms).status, 200);
    ok(&server, &["delete", "secret", "s1"]);
    assert_eq!(get_as(&server, &token, cms).status, 401);
    let out = server.kubectl(&[
        "create",
        "token",
        "builder",
        "--bound-object-kind=Secret",
        "--bound-object-name=s1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("secrets \"s1\" not found"), "{stderr}");
}

#[test]
fn events_expire_a_ttl_after_their_last_write() {
    let server = TestServer::start_with(&["--event-ttl", "3s"]);
    let http = server.http();
    let core = "/api/v1/namespaces/default/events";
    let event = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": "ConfigMap", "name": "c1", "namespace": "default"},
            "reason": "Synced", "message": "synced", "type": "Normal", "count": 1})
    };
    let resp = http.send_json(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        &json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "old", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "example.com/c", "reportingInstance": "c-0",
            "action": "Sync", "reason": "Synced", "type": "Normal", "note": "n",
            "regarding": {"kind": "ConfigMap", "name": "c1", "namespace": "default"}}),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let resp = http.send_json("POST", core, &event("kept"));
    assert_eq!(resp.status, 201, "{}", resp.text());
    // Rewrite "kept" every half second until "old" is gone from both APIs.
    let mut count = 1;
    let gone = poll(Duration::from_secs(30), || {
        count += 1;
        let patch = json!({"count": count});
        let r = http.request(
            "PATCH",
            &format!("{core}/kept"),
            &[],
            &[("Content-Type".into(), "application/merge-patch+json".into())],
            Some(patch.to_string().into_bytes()),
        );
        assert_eq!(
            r.map(|r| r.status).ok(),
            Some(200),
            "kept must live while rewritten"
        );
        std::thread::sleep(Duration::from_millis(500));
        (http.get(&format!("{core}/old")).status == 404).then_some(())
    });
    assert!(gone.is_some(), "the event was never expired");
    assert_eq!(
        http.get("/apis/events.k8s.io/v1/namespaces/default/events/old")
            .status,
        404
    );
    assert_eq!(http.get(&format!("{core}/kept")).status, 200);
    // Left alone, it expires too.
    let gone = poll(Duration::from_secs(30), || {
        (http.get(&format!("{core}/kept")).status == 404).then_some(())
    });
    assert!(gone.is_some(), "the rewritten event was never expired");
}

#[test]
fn a_daemonset_template_update_moves_its_template_generation() {
    // apps/v1 serves kube's internal spec.templateGeneration as an annotation: an
    // update of the template moves it, as `kubectl set image ds` expects.
    let server = TestServer::start();
    let http = server.http();
    let ds = json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}},
    });
    let path = "/apis/apps/v1/namespaces/default/daemonsets";
    let r = http.send_json("POST", path, &ds);
    assert_eq!(r.status, 201, "{}", r.text());
    let mut current = r.json().unwrap_or_default();
    let generation = |d: &Value| {
        d["metadata"]["annotations"]["deprecated.daemonset.template.generation"].clone()
    };
    assert_eq!(generation(&current), "1");
    current["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    let r = http.send_json("PUT", &format!("{path}/agent"), &current);
    assert_eq!(r.status, 200, "{}", r.text());
    let updated = r.json().unwrap_or_default();
    assert_eq!(generation(&updated), "2");
    assert_eq!(updated["metadata"]["generation"], 2);
}

#[test]
fn a_template_metadata_reads_back_as_kube_v1_36_writes_it() {
    // kube v1.36's ObjectMeta omits a zero creationTimestamp (omitzero) and empty
    // lists and maps (omitempty), in a pod template as anywhere: what kubectl's
    // `rollout undo` and older clients send comes back without them.
    let server = TestServer::start();
    let http = server.http();
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tmpl"},
        "spec": {
            "selector": {"matchLabels": {"app": "tmpl"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "tmpl"},
                             "annotations": {}, "finalizers": []},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    });
    let r = http.send_json("POST", "/apis/apps/v1/namespaces/default/deployments", &d);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().unwrap_or_default()["spec"]["template"]["metadata"],
        json!({"labels": {"app": "tmpl"}})
    );
}

#[test]
fn explicit_nulls_in_built_in_objects_are_go_zero_values() {
    let server = TestServer::start();
    let http = server.http();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "held"}, "spec": {"holderIdentity": null}
    });
    let r = http.send_json("POST", leases, &lease);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json().unwrap_or_default()["spec"], json!({}));

    let config_maps = "/api/v1/namespaces/default/configmaps";
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "nulls"}, "data": null, "binaryData": {}
    });
    let r = http.send_json("POST", config_maps, &cm);
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json().unwrap_or_default();
    assert_eq!(
        (body.get("data"), body.get("binaryData")),
        (None, None),
        "{body}"
    );

    // PUT and patches decode the same way.
    let mut current = body;
    current["data"] = json!({"a": "1"});
    let r = http.send_json("PUT", &format!("{config_maps}/nulls"), &current);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap_or_default()["data"], json!({"a": "1"}));
    let r = http
        .request(
            "PATCH",
            &format!("{config_maps}/nulls"),
            &[],
            &[("Content-Type".into(), "application/merge-patch+json".into())],
            Some(json!({"data": {"a": null}}).to_string().into_bytes()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap_or_default().get("data"), None);
    let r = http
        .request(
            "PATCH",
            &format!("{leases}/held"),
            &[],
            &[("Content-Type".into(), "application/json-patch+json".into())],
            Some(
                json!([{"op": "add", "path": "/spec/leaseDurationSeconds", "value": null}])
                    .to_string()
                    .into_bytes(),
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().unwrap_or_default()["spec"], json!({}));
}

#[test]
fn privileged_containers_need_allow_privileged_as_in_kube() {
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [
            {"name": "plain", "image": "busybox"},
            {"name": "root", "image": "busybox", "securityContext": {"privileged": true}},
        ]}})
    };
    // kube-apiserver's default: --allow-privileged=false. (No controller makes the
    // `default` ServiceAccount: its admission plugin is off, as envtest has it.)
    let no_sa = "--disable-admission-plugins=ServiceAccount";
    let server = TestServer::start_with(&[no_sa]);
    let http = server.http();
    let r = http.send_json("POST", "/api/v1/namespaces/default/pods", &pod("p"));
    assert_eq!(r.status, 422, "{}", r.text());
    let status = r.json().unwrap();
    assert_eq!(
        status["message"],
        "Pod \"p\" is invalid: spec.containers[1].securityContext.privileged: Forbidden: disallowed by cluster policy"
    );
    assert_eq!(
        status["details"]["causes"][0]["field"],
        "spec.containers[1].securityContext.privileged"
    );
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
                 "template": {"metadata": {"labels": {"app": "d"}}, "spec": pod("x")["spec"].clone()}}});
    let r = http.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment,
    );
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "Deployment.apps \"d\" is invalid: spec.template.spec.containers[1].securityContext.privileged: Forbidden: disallowed by cluster policy"
    );
    drop(server);

    let server = TestServer::start_with(&[no_sa, "--allow-privileged=true"]);
    let http = server.http();
    let r = http.send_json("POST", "/api/v1/namespaces/default/pods", &pod("p"));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        &deployment,
    );
    assert_eq!(r.status, 201, "{}", r.text());
}
