//! What kube-apiserver says about its own control plane, against the binary: the local
//! `apiregistration.k8s.io/v1` APIServices of its built-in group-versions and of its
//! CRDs' served versions (kube's autoregistration: priorities, labels, the Available
//! condition, appearing and going with CRD versions, user APIServices left alone), and
//! the deprecated `componentstatuses` (probes of the scheduler, the controller manager
//! and the storage). Through HTTP and the real kubectl; expectations are kube v1.36's.

mod common;

use common::{describe_output, json_accept, poll, Etcd, TestServer};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const COMPONENTS: &str = "/api/v1/componentstatuses";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const SETTLE: Duration = Duration::from_secs(10);
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

/// Runs kubectl, asserts it succeeded, returns (stdout, stderr).
fn kubectl(server: &TestServer, args: &[&str]) -> (String, String) {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed\n{}\n--- server stderr (tail) ---\n{}",
        describe_output(&out),
        server.stderr_tail(20)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// GET `path` as a Table: its column names and the Table.
fn table(server: &TestServer, path: &str) -> (Vec<String>, Value) {
    let resp = server
        .http()
        .request("GET", path, &[], &[("Accept".into(), TABLE.into())], None)
        .expect("table");
    assert_eq!(resp.status, 200, "{}", resp.text());
    let table = resp.json().expect("json");
    let columns = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().expect("name").to_string())
        .collect();
    (columns, table)
}

/// Every APIService by name.
fn api_services(server: &TestServer) -> BTreeMap<String, Value> {
    let resp = server.http().get(APISERVICES);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let list = resp.json().expect("json");
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|s| {
            (
                s["metadata"]["name"].as_str().expect("name").to_string(),
                s.clone(),
            )
        })
        .collect()
}

/// Waits until APIService `name` exists (`Some`) or is gone (`None`), as `want` says.
fn wait_api_service(server: &TestServer, name: &str, want: bool) -> Option<Value> {
    let path = format!("{APISERVICES}/{name}");
    let status = if want { 200 } else { 404 };
    let resp = server.http().wait_for_status(&path, status, SETTLE);
    assert_eq!(resp.status, status, "GET {path}: {}", resp.text());
    resp.json().filter(|_| want)
}

/// kube's condition of a local APIService (its time aside).
fn assert_local_and_available(service: &Value) {
    let conditions = service["status"]["conditions"]
        .as_array()
        .expect("conditions");
    assert_eq!(conditions.len(), 1, "{service}");
    let mut available = conditions[0].clone();
    assert!(available["lastTransitionTime"].is_string(), "{service}");
    available["lastTransitionTime"] = json!("<time>");
    assert_eq!(
        available,
        json!({"type": "Available", "status": "True", "lastTransitionTime": "<time>",
            "reason": "Local", "message": "Local APIServices are always available"})
    );
    assert!(service["spec"].get("service").is_none(), "{service}");
}

/// A CRD of group `example.com` serving `versions` (`(name, served)`; the first stored).
fn gadgets_crd(versions: &[(&str, bool)]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, (name, served))| {
            json!({"name": name, "served": served, "storage": i == 0,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}})
        })
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                "listKind": "GadgetList"},
            "versions": versions},
    })
}

/// Replaces the versions of the gadgets CRD.
fn set_gadget_versions(server: &TestServer, versions: &[(&str, bool)]) {
    let http = server.http();
    let path = format!("{CRDS}/gadgets.example.com");
    let mut crd = http.get(&path).json().expect("CRD");
    crd["spec"]["versions"] = gadgets_crd(versions)["spec"]["versions"].clone();
    let resp = http.send_json("PUT", &path, &crd);
    assert_eq!(resp.status, 200, "{}", resp.text());
}

#[test]
fn every_built_in_group_version_has_a_local_apiservice_with_kubes_priorities() {
    let server = TestServer::start();
    let services = api_services(&server);
    // One per group-version of `/api` and `/apis`, but kube-aggregator's own group.
    let mut expected = vec!["v1.".to_string()];
    let groups = server.http().get("/apis").json().expect("/apis");
    for group in groups["groups"].as_array().expect("groups") {
        let name = group["name"].as_str().expect("name");
        for v in group["versions"].as_array().expect("versions") {
            if name != "apiregistration.k8s.io" {
                expected.push(format!(
                    "{}.{name}",
                    v["version"].as_str().expect("version")
                ));
            }
        }
    }
    expected.sort();
    assert_eq!(services.keys().cloned().collect::<Vec<_>>(), expected);
    assert_eq!(services.len(), 21);
    for (name, service) in &services {
        assert_eq!(
            service["metadata"]["labels"],
            json!({AUTOMANAGED: "onstart"}),
            "{name}"
        );
        assert_local_and_available(service);
        assert!(service["metadata"]["uid"].is_string(), "{name}");
        assert!(service["metadata"]["resourceVersion"].is_string(), "{name}");
        assert_eq!(
            service["metadata"]["managedFields"][0]["manager"], "kube-apiserver",
            "{name}"
        );
    }
    let spec = |name: &str| services[name]["spec"].clone();
    assert_eq!(
        spec("v1."),
        json!({"group": "", "version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
    );
    assert_eq!(
        spec("v1.apps"),
        json!({"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
            "versionPriority": 15})
    );
    assert_eq!(spec("v2.autoscaling")["versionPriority"], 30);
    assert_eq!(spec("v1.autoscaling")["versionPriority"], 15);
    assert_eq!(
        spec("v1.apiextensions.k8s.io")["groupPriorityMinimum"],
        16700
    );
    assert_eq!(
        spec("v1.flowcontrol.apiserver.k8s.io"),
        json!({"group": "flowcontrol.apiserver.k8s.io", "version": "v1",
            "groupPriorityMinimum": 16100, "versionPriority": 21})
    );
    // Selectable by name only (kube-aggregator registers no field labels).
    let resp = server.http().get(&format!(
        "{APISERVICES}?fieldSelector=metadata.name%3Dv1.apps"
    ));
    assert_eq!(
        resp.json().expect("json")["items"].as_array().map(Vec::len),
        Some(1)
    );
    let resp = server
        .http()
        .get(&format!("{APISERVICES}?fieldSelector=spec.group%3Dapps"));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "\"spec.group\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    // One object: the same; and kube's table of them.
    let resp = server.http().get(&format!("{APISERVICES}/v1."));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json().expect("json"), services["v1."]);
    let (columns, table) = table(&server, APISERVICES);
    assert_eq!(columns, ["Name", "Service", "Available", "Age"]);
    let first = table["rows"][0]["cells"].as_array().expect("cells");
    assert_eq!(first[..3], [json!("v1."), json!("Local"), json!("True")]);

    let (out, _) = kubectl(&server, &["get", "apiservices"]);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(header, ["NAME", "SERVICE", "AVAILABLE", "AGE"]);
    let apps = out
        .lines()
        .find(|l| l.starts_with("v1.apps "))
        .expect("v1.apps row");
    let cells: Vec<&str> = apps.split_whitespace().collect();
    assert_eq!(cells[..3], ["v1.apps", "Local", "True"], "{out}");
    assert_eq!(out.lines().count(), 22, "{out}");
}

#[test]
fn crd_versions_bring_and_take_their_apiservices() {
    let server = TestServer::start();
    let http = server.http();
    let start = http.get(APISERVICES).json().expect("list");
    let from = start["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    let resp = http.send_json(
        "POST",
        CRDS,
        &gadgets_crd(&[("v1", true), ("v1beta1", true), ("v1alpha1", false)]),
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let v1 = wait_api_service(&server, "v1.example.com", true).expect("v1");
    wait_api_service(&server, "v1beta1.example.com", true);
    assert_eq!(v1["metadata"]["labels"], json!({AUTOMANAGED: "true"}));
    assert_eq!(
        v1["spec"],
        json!({"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
            "versionPriority": 100})
    );
    assert_local_and_available(&v1);
    // An unserved version has none.
    assert_eq!(
        http.get(&format!("{APISERVICES}/v1alpha1.example.com"))
            .status,
        404
    );
    // A watcher from before sees them come.
    let events = http.watch_for(APISERVICES, 1, &[("resourceVersion", &from)]);
    let mut added: Vec<String> = events
        .text()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "ADDED")
        .map(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    added.sort();
    assert_eq!(added, ["v1.example.com", "v1beta1.example.com"]);

    // A version no longer served loses its APIService; a new one gets one.
    set_gadget_versions(&server, &[("v1", true), ("v1beta1", false), ("v2", true)]);
    wait_api_service(&server, "v1beta1.example.com", false);
    wait_api_service(&server, "v2.example.com", true);

    // Deleted or edited by a user, a CRD's APIService comes back as kube keeps it.
    let path = format!("{APISERVICES}/v1.example.com");
    assert_eq!(http.send_json("DELETE", &path, &json!({})).status, 200);
    let back = poll(SETTLE, || {
        let r = http.get(&path);
        let s = r.json()?;
        (r.status == 200 && s["metadata"]["uid"] != v1["metadata"]["uid"]).then_some(s)
    })
    .expect("v1.example.com recreated");
    assert_eq!(back["spec"]["groupPriorityMinimum"], 1000);
    let resp = http.merge_patch(&path, &json!({"spec": {"groupPriorityMinimum": 5}}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["spec"]["groupPriorityMinimum"],
        5
    );
    poll(SETTLE, || {
        (http.get(&path).json()?["spec"]["groupPriorityMinimum"] == 1000).then_some(())
    })
    .expect("spec restored");

    let (out, _) = kubectl(&server, &["get", "apiservice", "v1.example.com"]);
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .expect("row")
        .split_whitespace()
        .collect();
    assert_eq!(row[..3], ["v1.example.com", "Local", "True"], "{out}");

    // The CRD gone, its APIServices go; the built-in ones stay.
    let resp = http.send_json("DELETE", &format!("{CRDS}/gadgets.example.com"), &json!({}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    wait_api_service(&server, "v1.example.com", false);
    wait_api_service(&server, "v2.example.com", false);
    assert_eq!(api_services(&server).len(), 21);
    // Discovery is the CRDs' and the built-ins', as before.
    let groups = http.get("/apis").json().expect("/apis");
    assert!(!groups.to_string().contains("example.com"), "{groups}");
}

#[test]
fn built_in_apiservices_are_synced_once_then_left_to_the_user() {
    let server = TestServer::start();
    let http = server.http();
    let path = format!("{APISERVICES}/v1.batch");
    let resp = http.merge_patch(&path, &json!({"spec": {"versionPriority": 7}}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let resp = http.send_json("DELETE", &format!("{APISERVICES}/v1.apps"), &json!({}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    // Another write makes the controller look again: still as the user left them.
    let resp = http.send_json("POST", CRDS, &gadgets_crd(&[("v1", true)]));
    assert_eq!(resp.status, 201, "{}", resp.text());
    wait_api_service(&server, "v1.example.com", true);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(http.get(&format!("{APISERVICES}/v1.apps")).status, 404);
    assert_eq!(
        http.get(&path).json().expect("json")["spec"]["versionPriority"],
        7
    );
    // Local APIServices stay Available, whoever says otherwise (kube's local
    // availability controller).
    let resp = http.merge_patch(
        &format!("{path}/status"),
        &json!({"status": {"conditions": [{"type": "Available", "status": "False",
            "reason": "Broken", "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["status"]["conditions"][0]["reason"],
        "Broken"
    );
    let fixed = poll(SETTLE, || {
        let s = http.get(&path).json()?;
        (s["status"]["conditions"][0]["reason"] == "Local").then_some(s)
    })
    .expect("Available again");
    assert_local_and_available(&fixed);
    assert_ne!(
        fixed["status"]["conditions"][0]["lastTransitionTime"],
        "2020-01-01T00:00:00Z"
    );
}

#[test]
fn a_restart_restores_and_corrects_the_built_in_apiservices() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    let before = api_services(&server);
    let resp = http.merge_patch(
        &format!("{APISERVICES}/v1.batch"),
        &json!({"spec": {"versionPriority": 7}, "metadata": {"labels": {"mine": "yes"}}}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        http.send_json("DELETE", &format!("{APISERVICES}/v1.apps"), &json!({}))
            .status,
        200
    );
    // An onstart APIService no built-in group-version wants (as after an upgrade).
    let stale = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.batch", "labels": {AUTOMANAGED: "onstart"}},
        "spec": {"group": "batch", "version": "v1beta1", "groupPriorityMinimum": 17400,
            "versionPriority": 9}});
    assert_eq!(http.send_json("POST", APISERVICES, &stale).status, 201);
    drop(server);

    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let after = api_services(&server);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    // Restored; corrected (the spec only: kube leaves the rest of the object); kept.
    assert_ne!(
        after["v1.apps"]["metadata"]["uid"],
        before["v1.apps"]["metadata"]["uid"]
    );
    assert_eq!(after["v1.batch"]["spec"], before["v1.batch"]["spec"]);
    assert_eq!(after["v1.batch"]["metadata"]["labels"]["mine"], "yes");
    assert_eq!(
        after["v1.policy"]["metadata"]["uid"],
        before["v1.policy"]["metadata"]["uid"]
    );
}

#[test]
fn user_apiservices_are_validated_and_left_alone() {
    let server = TestServer::start();
    let http = server.http();
    // An aggregated server's: no condition until something checks it; port 443.
    let metrics = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
            "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "True"}]}});
    let resp = http.send_json("POST", APISERVICES, &metrics);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json().expect("json");
    assert_eq!(created["spec"]["service"]["port"], 443);
    assert_eq!(created["status"], json!({}));
    assert!(created["metadata"].get("labels").is_none(), "{created}");
    // A local one for a group-version a CRD serves later stays the user's.
    let mine = json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.example.com"},
        "spec": {"group": "example.com", "version": "v1", "groupPriorityMinimum": 10,
            "versionPriority": 10}});
    let resp = http.send_json("POST", APISERVICES, &mine);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let mine = resp.json().expect("json");
    assert_local_and_available(&mine);
    let resp = http.send_json("POST", CRDS, &gadgets_crd(&[("v1", true)]));
    assert_eq!(resp.status, 201, "{}", resp.text());
    let resp = http.send_json("DELETE", &format!("{CRDS}/gadgets.example.com"), &json!({}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    http.wait_for_status(&format!("{CRDS}/gadgets.example.com"), 404, SETTLE);
    std::thread::sleep(Duration::from_millis(500));
    let now = http.get(&format!("{APISERVICES}/v1.example.com"));
    assert_eq!(now.status, 200, "{}", now.text());
    assert_eq!(
        now.json().expect("json")["metadata"]["uid"],
        mine["metadata"]["uid"]
    );

    // kube-aggregator's validation.
    let mut bad = metrics.clone();
    bad["metadata"]["name"] = json!("v1.metrics.k8s.io");
    bad["spec"]["caBundle"] = json!("aGVsbG8=");
    bad["spec"]["versionPriority"] = json!(0);
    let resp = http.send_json("POST", APISERVICES, &bad);
    assert_eq!(resp.status, 422, "{}", resp.text());
    let status = resp.json().expect("json");
    assert_eq!(
        status["message"],
        "APIService.apiregistration.k8s.io \"v1.metrics.k8s.io\" is invalid: [metadata.name: Invalid value: \"v1.metrics.k8s.io\": must be `spec.version+\".\"+spec.group`: \"v1beta1.metrics.k8s.io\", spec.versionPriority: Invalid value: 0: must be positive and less than 1000, spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present]"
    );

    // kube's remote availability controller finds no Service behind it.
    let path = format!("{APISERVICES}/v1beta1.metrics.k8s.io");
    let condition = poll(SETTLE, || {
        let s = http.get(&path).json()?;
        let c = s.pointer("/status/conditions/0")?.clone();
        (c["status"] == "False").then_some(c)
    })
    .expect("the remote APIService's Available condition");
    assert_eq!(condition["reason"], "ServiceNotFound");
    assert_eq!(
        condition["message"],
        "service/metrics-server in \"kube-system\" is not present"
    );
    let (out, _) = kubectl(&server, &["get", "apiservice", "v1beta1.metrics.k8s.io"]);
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .expect("row")
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..3],
        [
            "v1beta1.metrics.k8s.io",
            "kube-system/metrics-server",
            "False"
        ],
        "{out}"
    );
}

/// Whether something accepts connections on 127.0.0.1:`port` (then the probe of the
/// component there is not kube's "connection refused").
fn listening(port: u16) -> bool {
    std::net::TcpStream::connect_timeout(
        &std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

const DEPRECATED: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

#[test]
fn component_statuses_probe_the_scheduler_the_controller_manager_and_storage() {
    let server = TestServer::start();
    let http = server.http();
    let resp = http.get(COMPONENTS);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.header("warning").as_deref(), Some(DEPRECATED));
    let list = resp.json().expect("json");
    assert_eq!(list["kind"], "ComponentStatusList");
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["metadata"], json!({}));
    let items: BTreeMap<&str, &Value> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().expect("name"), i))
        .collect();
    assert_eq!(
        items.keys().copied().collect::<Vec<_>>(),
        ["controller-manager", "etcd-0", "scheduler"]
    );
    assert_eq!(
        *items["etcd-0"],
        json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "etcd-0"},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
    );
    for (name, port) in [("scheduler", 10259), ("controller-manager", 10257)] {
        if listening(port) {
            continue;
        }
        assert_eq!(
            items[name]["conditions"],
            json!([{"type": "Healthy", "status": "False",
                "message": format!("Get \"https://127.0.0.1:{port}/healthz\": dial tcp 127.0.0.1:{port}: connect: connection refused")}])
        );
    }

    // One of them; an unknown name as kube names it.
    let resp = http.get(&format!("{COMPONENTS}/etcd-0"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json().expect("json"), *items["etcd-0"]);
    assert_eq!(resp.header("warning").as_deref(), Some(DEPRECATED));
    let resp = http.get(&format!("{COMPONENTS}/etcd-1"));
    assert_eq!(resp.status, 404, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json"),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "componentstatus \"etcd-1\" not found", "reason": "NotFound",
            "details": {"name": "etcd-1", "kind": "componentstatus"}, "code": 404})
    );

    // Selectors apply to what the probes answer.
    let names = |query: &str| -> Vec<String> {
        let resp = http.get(&format!("{COMPONENTS}?{query}"));
        assert_eq!(resp.status, 200, "{query}: {}", resp.text());
        resp.json().expect("json")["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        names("fieldSelector=metadata.name%3Dscheduler"),
        ["scheduler"]
    );
    assert!(names("labelSelector=a%3Db").is_empty());
    let resp = http.get(&format!("{COMPONENTS}?fieldSelector=spec.x%3Dy"));
    assert_eq!(resp.status, 400, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );

    // get and list only.
    let resp = http.get(&format!("{COMPONENTS}?watch=true"));
    assert_eq!(resp.status, 405, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["message"],
        "watch is not supported on resources of kind \"componentstatuses\""
    );
    assert_eq!(http.get("/api/v1/watch/componentstatuses").status, 404);
    let resp = http.send_json("POST", COMPONENTS, &json!({"metadata": {"name": "x"}}));
    assert_eq!(resp.status, 405, "{}", resp.text());
    let resp = http.send_json("DELETE", &format!("{COMPONENTS}/etcd-0"), &json!({}));
    assert_eq!(resp.status, 405, "{}", resp.text());

    // kube's printer, and `kubectl get cs` with kube's warning.
    let (columns, _) = table(&server, COMPONENTS);
    assert_eq!(columns, ["Name", "Status", "Message", "Error"]);
    // Their metadata: a name, no creation time (kube v1.36 omits a zero one).
    let resp = http
        .request(
            "GET",
            &format!("{COMPONENTS}?fieldSelector=metadata.name%3Detcd-0"),
            &[],
            &[(
                "Accept".into(),
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io".into(),
            )],
            None,
        )
        .expect("metadata");
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["items"],
        json!([{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"name": "etcd-0"}}])
    );
    let (out, err) = kubectl(&server, &["get", "cs"]);
    assert!(
        err.contains("Warning: v1 ComponentStatus is deprecated in v1.19+"),
        "{err}"
    );
    let header: Vec<&str> = out
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "MESSAGE", "ERROR"]);
    let etcd: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("etcd-0"))
        .expect("etcd-0 row")
        .split_whitespace()
        .collect();
    assert_eq!(etcd, ["etcd-0", "Healthy", "ok"], "{out}");
    if !listening(10259) {
        let scheduler = out
            .lines()
            .find(|l| l.starts_with("scheduler"))
            .expect("scheduler row");
        assert!(
            scheduler.contains("Unhealthy   Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"),
            "{out}"
        );
    }
}

#[test]
fn component_status_of_a_stopped_etcd_is_kubes_failed_probe() {
    let mut etcd = Etcd::start();
    etcd.wait_ready();
    let server = TestServer::start_on_etcd(&etcd.url(), &[]);
    let http = server.http();
    let healthy = http.get(&format!("{COMPONENTS}/etcd-0"));
    assert_eq!(healthy.status, 200, "{}", healthy.text());
    assert_eq!(
        healthy.json().expect("json")["conditions"][0]["status"],
        "True"
    );
    etcd.stop();
    let resp = http.get(&format!("{COMPONENTS}/etcd-0"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        resp.json().expect("json")["conditions"],
        json!([{"type": "Healthy", "status": "False",
            "error": "error getting data from etcd: context deadline exceeded"}])
    );
    let (out, _) = kubectl(&server, &["get", "cs", "etcd-0"]);
    let row = out.lines().nth(1).expect("row");
    assert!(
        row.starts_with("etcd-0")
            && row.contains("Unhealthy")
            && row.ends_with("error getting data from etcd: context deadline exceeded"),
        "{out}"
    );
}

#[test]
fn namespace_lifecycle_refuses_content_in_missing_and_terminating_namespaces() {
    let server = TestServer::start();
    let http = server.http();
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let r = http.send_json("POST", "/api/v1/namespaces/nowhere/configmaps", &cm("a"));
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json().expect("status")["message"],
        "namespaces \"nowhere\" not found"
    );
    // A finalizer of its own keeps the namespace terminating once deleted.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "leaving", "finalizers": ["example.com/hold"]}});
    assert_eq!(
        http.send_json("POST", "/api/v1/namespaces", &ns).status,
        201
    );
    let r = http.send_json(
        "POST",
        "/api/v1/namespaces/leaving/configmaps",
        &cm("before"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http
        .request(
            "DELETE",
            "/api/v1/namespaces/leaving",
            &[],
            &json_accept(),
            None,
        )
        .expect("DELETE");
    assert_eq!(r.status, 200, "{}", r.text());
    let refused = poll(Duration::from_secs(10), || {
        let r = http.send_json(
            "POST",
            "/api/v1/namespaces/leaving/configmaps",
            &cm("after"),
        );
        (r.status == 403).then(|| r.json().expect("status"))
    })
    .expect("a terminating namespace refuses new content");
    assert_eq!(
        refused["message"],
        "configmaps \"after\" is forbidden: unable to create new content in namespace leaving because it is being terminated"
    );
    assert_eq!(
        refused["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace leaving is being terminated",
                "field": "metadata.namespace"}])
    );
}

/// NamespaceLifecycle reads namespaces from a cache (kube's informer) that this
/// server's own writes update at once, another replica's writes through the etcd watch,
/// and a miss looks up live: no write sees a namespace this server already deleted,
/// and none is refused in a namespace another replica just made.
#[test]
fn namespace_lifecycle_cache_follows_own_writes_at_once_and_other_replicas_soon() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    let a = TestServer::start_on_etcd(&etcd.url(), &[]);
    let b = TestServer::start_on_etcd(&etcd.url(), &[]);
    let (ha, hb) = (a.http(), b.http());
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let ns =
        |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    for round in 0..10 {
        let name = format!("churn-{round}");
        let path = format!("/api/v1/namespaces/{name}/configmaps");
        assert_eq!(
            ha.send_json("POST", "/api/v1/namespaces", &ns(&name))
                .status,
            201
        );
        // Made on A, written on B at once: B's cache misses and looks it up.
        let r = hb.send_json("POST", &path, &cm("from-b"));
        assert_eq!(r.status, 201, "round {round}: {}", r.text());
        let r = ha
            .request(
                "DELETE",
                &format!("/api/v1/namespaces/{name}"),
                &[],
                &json_accept(),
                None,
            )
            .expect("DELETE");
        assert_eq!(r.status, 200, "{}", r.text());
        // Deleted through A: A refuses content at once (terminating or gone).
        let r = ha.send_json("POST", &path, &cm("after"));
        assert!(
            r.status == 403 || r.status == 404,
            "round {round}: {} {}",
            r.status,
            r.text()
        );
        // B learns it from the watch.
        let refused = poll(Duration::from_secs(10), || {
            let r = hb.send_json("POST", &path, &cm("late"));
            (r.status == 403 || r.status == 404).then_some(r.status)
        });
        assert!(
            refused.is_some(),
            "round {round}: B still writes into {name}"
        );
    }
    // A namespace in the cache costs no read of etcd per write.
    let namespace_reads = |h: &common::Http| -> u64 {
        let text = h.get("/metrics").text();
        text.lines()
            .find(|l| {
                l.starts_with("etcd_requests_total{")
                    && l.contains("operation=\"get\"")
                    && l.contains("resource=\"namespaces\"")
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
            .unwrap_or(0)
    };
    assert_eq!(
        ha.send_json("POST", "/api/v1/namespaces", &ns("steady"))
            .status,
        201
    );
    let before = namespace_reads(&ha);
    for i in 0..20 {
        let r = ha.send_json(
            "POST",
            "/api/v1/namespaces/steady/configmaps",
            &cm(&format!("c{i}")),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // (The namespace controller, finishing the rounds above, may read a few.)
    let reads = namespace_reads(&ha) - before;
    assert!(reads < 5, "{reads} namespace reads of etcd for 20 writes");
    // Once gone, a namespace of the same name made again on B is usable on A at once.
    poll(Duration::from_secs(10), || {
        (ha.get("/api/v1/namespaces/churn-9").status == 404).then_some(())
    })
    .expect("the namespace is finalized");
    assert_eq!(
        hb.send_json("POST", "/api/v1/namespaces", &ns("churn-9"))
            .status,
        201
    );
    let r = ha.send_json(
        "POST",
        "/api/v1/namespaces/churn-9/configmaps",
        &cm("again"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}
