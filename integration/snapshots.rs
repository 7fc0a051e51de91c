//! Snapshots over HTTP (`/admin/snapshots`, `crate::snapshots`) and on the command line
//! (`--snapshot-out`, `--snapshot-in`): restore gives back exactly the snapshot
//! (objects, discovery, OpenAPI) with resourceVersions that only grow and watches
//! ended with 410; forks are isolated from their source and from each other; the
//! endpoints are authorized as kube's non-resource URLs. Embedded store only (the
//! etcd refusal is in `etcd_server.rs`).

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use common::{json_accept, poll, Http, HttpResponse, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

fn expect(response: HttpResponse, status: u16) -> Value {
    assert_eq!(response.status, status, "{}", response.text());
    response.json().unwrap_or(Value::Null)
}

fn post(http: &Http, path: &str) -> HttpResponse {
    http.request("POST", path, &[], &json_accept(), None)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn widget(name: &str, color: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"color": color}})
}

fn gadget_crd() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.snap.example.com"},
        "spec": {"group": "snap.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// A server serving widgets with a few objects: the state tests snapshot.
fn loaded() -> TestServer {
    let server = TestServer::start_embedded(&[]);
    let http = server.http();
    expect(
        http.send_json("POST", CRDS, &common::testdata_json("crds/widgets.yaml")),
        201,
    );
    let served = http.wait_for_status(WIDGETS, 200, Duration::from_secs(20));
    expect(served, 200);
    for (name, color) in [("a", "red"), ("b", "green"), ("c", "blue")] {
        expect(http.send_json("POST", WIDGETS, &widget(name, color)), 201);
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"k": "v"}});
    expect(
        http.send_json("POST", "/api/v1/namespaces/default/configmaps", &cm),
        201,
    );
    server
}

fn rv(object: &Value) -> i64 {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
}

/// What a client can see of the server, resourceVersions aside: the objects of the
/// lists, discovery and the OpenAPI v3 index.
fn state(http: &Http) -> BTreeMap<&'static str, Value> {
    let mut seen = BTreeMap::new();
    for path in [
        CRDS,
        "/apis/example.com/v1/widgets",
        "/api/v1/configmaps",
        "/api/v1/namespaces",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        "/apis",
        "/apis/example.com/v1",
        "/openapi/v3",
    ] {
        let mut body = expect(http.get(path), 200);
        if let Some(items) = body["items"].as_array_mut() {
            for item in items {
                item["metadata"]
                    .as_object_mut()
                    .map(|m| m.remove("resourceVersion"));
            }
            body["metadata"] = Value::Null;
        }
        seen.insert(path, body);
    }
    seen
}

#[test]
fn restore_gives_back_exactly_the_snapshot_going_forward() {
    let server = loaded();
    let http = server.http();
    let before = state(&http);
    let taken = expect(post(&http, "/admin/snapshots?name=base"), 201);
    assert_eq!(taken["name"], "base");
    let listed = expect(http.get("/admin/snapshots"), 200);
    assert_eq!(listed["snapshots"][0]["name"], "base", "{listed}");

    // A watch open across the restore.
    let list = expect(http.get(WIDGETS), 200);
    let from = rv(&list).to_string();
    let watch = {
        let http = server.http();
        let from = from.clone();
        std::thread::spawn(move || http.watch_for(WIDGETS, 20, &[("resourceVersion", &from)]))
    };

    // Writes, deletes and CRD changes after the snapshot.
    expect(http.send_json("POST", WIDGETS, &widget("d", "red")), 201);
    let b = expect(
        http.merge_patch(
            &format!("{WIDGETS}/b"),
            &json!({"spec": {"color": "black"}}),
        ),
        200,
    );
    expect(
        http.request("DELETE", &format!("{WIDGETS}/c"), &[], &json_accept(), None)
            .unwrap(),
        200,
    );
    expect(http.send_json("POST", CRDS, &gadget_crd()), 201);
    let gadgets = "/apis/snap.example.com/v1/namespaces/default/gadgets";
    expect(
        http.wait_for_status(gadgets, 200, Duration::from_secs(20)),
        200,
    );
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "later"}});
    expect(http.send_json("POST", "/api/v1/namespaces", &ns), 201);
    let widgets_crd = format!("{CRDS}/widgets.example.com");
    let crd = expect(http.get(&widgets_crd), 200);
    expect(
        http.merge_patch(
            &widgets_crd,
            &json!({"spec": {"names": {"shortNames": ["wd"]}}}),
        ),
        200,
    );
    let highest = expect(http.get("/api/v1/namespaces"), 200);
    let highest = rv(&highest);
    assert_ne!(state(&http), before);

    let restored = expect(post(&http, "/admin/snapshots/base/restore"), 200);
    assert!(restored["written"].as_u64().unwrap() >= 6, "{restored}");

    // At once: the snapshot's objects, discovery and OpenAPI, nothing else.
    assert_eq!(state(&http), before);
    expect(http.get(gadgets), 404);
    let crd_now = expect(http.get(&widgets_crd), 200);
    assert_eq!(crd_now["spec"], crd["spec"]);
    // resourceVersions go forward: what the restore wrote back is newer than all a
    // client saw; what it left alone keeps its own.
    let b_now = expect(http.get(&format!("{WIDGETS}/b")), 200);
    assert_eq!(b_now["spec"]["color"], "green");
    assert!(rv(&b_now) > highest && rv(&b_now) > rv(&b), "{b_now}");
    let c_now = expect(http.get(&format!("{WIDGETS}/c")), 200);
    assert!(rv(&c_now) > highest);
    let a_now = expect(http.get(&format!("{WIDGETS}/a")), 200);
    assert!(
        rv(&a_now) < rv(&list),
        "an unchanged object keeps its resourceVersion"
    );
    let list_now = expect(http.get(WIDGETS), 200);
    assert!(rv(&list_now) > highest);
    let created = expect(http.send_json("POST", WIDGETS, &widget("e", "red")), 201);
    assert!(rv(&created) > rv(&list_now));

    // The open watch ended with kube's 410; resuming from before the restore too.
    let body = watch.join().unwrap();
    let last = String::from_utf8_lossy(&body.body)
        .lines()
        .last()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .unwrap_or(Value::Null);
    assert_eq!(last["type"], "ERROR", "{}", body.text());
    assert_eq!(last["object"]["code"], 410, "{last}");
    let resumed = http.watch_for(WIDGETS, 2, &[("resourceVersion", &from)]);
    assert!(
        resumed.text().contains("\"code\":410"),
        "{}",
        resumed.text()
    );
    // A new watch from now sees new changes.
    let now = rv(&created).to_string();
    let watch = {
        let http = server.http();
        std::thread::spawn(move || http.watch_for(WIDGETS, 2, &[("resourceVersion", &now)]))
    };
    std::thread::sleep(Duration::from_millis(300));
    expect(http.send_json("POST", WIDGETS, &widget("f", "red")), 201);
    let events = watch.join().unwrap().text();
    assert!(events.contains("\"name\":\"f\""), "{events}");

    // Restoring again after more writes: the same state again.
    assert_ne!(state(&http), before);
    expect(post(&http, "/admin/snapshots/base/restore"), 200);
    assert_eq!(state(&http), before);
}

#[test]
fn forks_start_from_the_snapshot_and_are_isolated() {
    let server = loaded();
    let http = server.http();
    expect(post(&http, "/admin/snapshots?name=base"), 201);
    let forks: Vec<Http> = (0..2)
        .map(|_| {
            let fork = expect(post(&http, "/admin/snapshots/base/fork"), 201);
            let url = fork["url"].as_str().unwrap();
            assert_ne!(url, server.url());
            assert!(fork["kubeconfig"].as_str().unwrap().contains(url), "{fork}");
            Http::new(url, "snapshots-test")
        })
        .collect();
    let names = |http: &Http| -> Vec<String> {
        let list = expect(http.get(WIDGETS), 200);
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    for fork in &forks {
        assert_eq!(names(fork), ["a", "b", "c"]);
    }
    expect(
        forks[0].send_json("POST", WIDGETS, &widget("only-in-0", "red")),
        201,
    );
    expect(
        forks[1]
            .request("DELETE", &format!("{WIDGETS}/a"), &[], &json_accept(), None)
            .unwrap(),
        200,
    );
    expect(
        http.send_json("POST", WIDGETS, &widget("only-in-source", "red")),
        201,
    );
    assert_eq!(names(&forks[0]), ["a", "b", "c", "only-in-0"]);
    assert_eq!(names(&forks[1]), ["b", "c"]);
    assert_eq!(names(&http), ["a", "b", "c", "only-in-source"]);
    // A fork serves the snapshot's CRDs with their schema (defaults, validation).
    let bad = widget("bad", "red");
    let mut bad = bad;
    bad["spec"]["color"] = json!(7);
    expect(forks[0].send_json("POST", WIDGETS, &bad), 422);
    // Unknown names and bad ones.
    let missing = expect(post(&http, "/admin/snapshots/nope/restore"), 404);
    assert_eq!(missing["reason"], "NotFound");
    let invalid = expect(post(&http, "/admin/snapshots?name=Bad_Name"), 400);
    assert!(
        invalid["message"].as_str().unwrap().contains("Bad_Name"),
        "{invalid}"
    );
    expect(http.get("/admin/snapshots/base/restore"), 405);
}

#[test]
fn snapshot_files_start_servers_with_resource_versions_that_keep_growing() {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-snapfile-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("load")).unwrap();
    std::fs::write(
        dir.join("load/widgets.yaml"),
        common::testdata("crds/widgets.yaml"),
    )
    .unwrap();
    std::fs::write(
        dir.join("load/objects.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: fixture\n  namespace: default\nspec:\n  color: red\n",
    )
    .unwrap();
    let file = dir.join("fixtures.snap");
    let out = Command::new(common::server_binary())
        .args(["--port", "0", "--load"])
        .arg(dir.join("load"))
        .arg("--snapshot-out")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("snapshot written"));

    let first = TestServer::start_embedded(&["--snapshot-in", file.to_str().unwrap()]);
    let http = first.http();
    let fixture = expect(http.get(&format!("{WIDGETS}/fixture")), 200);
    assert_eq!(fixture["spec"]["color"], "red");
    let mut seen = 0;
    for i in 0..5 {
        seen = rv(&expect(
            http.send_json("POST", WIDGETS, &widget(&format!("w{i}"), "red")),
            201,
        ));
    }
    // The loaded state is the snapshot `initial`: restoring it drops the writes.
    let listed = expect(http.get("/admin/snapshots"), 200);
    assert_eq!(listed["snapshots"][0]["name"], "initial", "{listed}");
    expect(post(&http, "/admin/snapshots/initial/restore"), 200);
    assert_eq!(
        expect(http.get(WIDGETS), 200)["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    drop(first);

    // Another process from the same file: above every resourceVersion handed out.
    let second = TestServer::start_embedded(&["--snapshot-in", file.to_str().unwrap()]);
    let http = second.http();
    let created = expect(
        http.send_json("POST", WIDGETS, &widget("later", "red")),
        201,
    );
    assert!(rv(&created) > seen, "{} after {seen}", rv(&created));
    expect(http.get(&format!("{WIDGETS}/fixture")), 200);

    // A file that is not a snapshot: a clear error at start-up.
    std::fs::write(&file, "not a snapshot").unwrap();
    let out = Command::new(common::server_binary())
        .args(["--port", "0", "--snapshot-in"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not a crd-apiserver snapshot file"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn snapshot_endpoints_are_authorized_as_non_resource_urls() {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-snaprbac-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        "admin-token,admin,uid-admin,system:masters\nalice-token,alice,uid-alice\n",
    )
    .unwrap();
    let server = TestServer::start_embedded_secure(&[
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--authorization-mode",
        "RBAC",
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    let ca = common::kubeconfig_ca(&server).expect("certificate-authority-data");
    let http = Http::new_tls(server.url(), "snapshots-test", &ca, None);
    let as_user = |user: &str, method: &str, path: &str, body: Option<Value>| {
        let mut h = json_accept();
        if !user.is_empty() {
            h.push(("Authorization".into(), format!("Bearer {user}-token")));
        }
        h.push(("Content-Type".into(), "application/json".into()));
        http.request(
            method,
            path,
            &[],
            &h,
            body.map(|b| serde_json::to_vec(&b).unwrap()),
        )
        .unwrap()
    };
    let take = "/admin/snapshots?name=s";
    let anonymous = expect(as_user("", "POST", take, None), 403);
    assert!(
        anonymous["message"]
            .as_str()
            .unwrap()
            .contains("system:anonymous"),
        "{anonymous}"
    );
    let alice = expect(as_user("alice", "POST", take, None), 403);
    assert_eq!(
        alice["message"],
        "forbidden: User \"alice\" cannot post path \"/admin/snapshots\"",
    );
    expect(as_user("admin", "POST", take, None), 201);
    // Granted `/admin/*`, alice may.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "snapshots"},
        "rules": [{"nonResourceURLs": ["/admin/*"], "verbs": ["get", "post"]}]});
    expect(
        as_user(
            "admin",
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            Some(role),
        ),
        201,
    );
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "alice-snapshots"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "snapshots"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]});
    expect(
        as_user(
            "admin",
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            Some(binding),
        ),
        201,
    );
    let granted = poll(Duration::from_secs(5), || {
        let r = as_user("alice", "POST", "/admin/snapshots/s/restore", None);
        (r.status == 200).then_some(r)
    });
    assert!(granted.is_some(), "alice was never allowed");
    // The restore took the grant back (it was made after the snapshot).
    expect(as_user("alice", "POST", take, None), 403);
}

/// The Rust harness's `snapshot`, `restore` and `fork`, seen through kube-rs: a
/// suite's fixtures loaded once, every test starting from them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_harness_restores_fixtures_between_tests_and_forks() {
    use crd_apiserver::harness::TestServer as Harness;
    use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams};
    use kube::core::GroupVersionKind;

    let server = Harness::start().await.unwrap();
    server
        .load_yaml(&common::testdata("crds/widgets.yaml"))
        .await
        .unwrap();
    for i in 0..200 {
        let mut w = widget(&format!("w{i:03}"), "red");
        w["metadata"]["namespace"] = json!("default");
        server.load(w).await.unwrap();
    }
    server.snapshot("fixtures").unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets = |s: &Harness| -> Api<DynamicObject> {
        Api::namespaced_with(s.client().unwrap(), "default", &resource)
    };
    let names = |list: kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()
    };
    let fixture_names = names(widgets(&server).list(&ListParams::default()).await.unwrap());
    assert_eq!(fixture_names.len(), 200);
    for test in 0..3 {
        // A test's own writes...
        let api = widgets(&server);
        api.delete("w000", &DeleteParams::default()).await.unwrap();
        let extra: DynamicObject =
            serde_json::from_value(widget(&format!("extra-{test}"), "blue")).unwrap();
        api.create(&PostParams::default(), &extra).await.unwrap();
        // ...gone before the next one.
        let restored = server.restore("fixtures").unwrap();
        assert_eq!(restored.written, 2, "test {test}");
        assert_eq!(
            names(api.list(&ListParams::default()).await.unwrap()),
            fixture_names
        );
    }
    let fork = server.fork("fixtures").await.unwrap();
    assert_ne!(fork.url(), server.url());
    let in_fork = widgets(&fork);
    in_fork
        .delete("w001", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(
        in_fork
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        199
    );
    assert_eq!(
        widgets(&server)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        200
    );
}
