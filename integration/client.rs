//! Drives crd-apiserver with a real client library, kube-rs: kubeconfig loading, typed
//! CRD API, discovery (legacy and aggregated), the dynamic API and the watcher; typed
//! built-ins (Deployments, Pods, Services) with kube-rs and the Python `kubernetes` client.

mod common;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use common::TestServer;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{self, verbs, Discovery, Scope};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, Config};
use serde_json::{json, Value};
use tokio::sync::mpsc;

/// Upper bound for any single client call or awaited condition.
const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Awaits `fut` with [`STEP_TIMEOUT`], failing the test with `what` on timeout.
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP_TIMEOUT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {STEP_TIMEOUT:?}"),
    }
}

/// A kube-rs client built from the kubeconfig the server wrote.
async fn client_for(server: &TestServer) -> Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig())
        .unwrap_or_else(|e| panic!("reading {}: {e}", server.kubeconfig().display()));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("kubeconfig not usable by kube-rs: {e}"));
    assert_eq!(
        config.cluster_url.to_string().trim_end_matches('/'),
        server.url(),
        "kubeconfig points elsewhere"
    );
    Client::try_from(config).unwrap_or_else(|e| panic!("building kube client: {e}"))
}

/// Creates the widgets CRD through the typed API and waits until it is Established.
async fn install_widgets(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition =
        serde_json::from_value(common::testdata_json("crds/widgets.yaml"))
            .unwrap_or_else(|e| panic!("testdata/crds/widgets.yaml is not a CRD: {e}"));
    let created = within("create CRD", crds.create(&PostParams::default(), &crd))
        .await
        .unwrap_or_else(|e| panic!("creating the CRD: {e}"));
    assert_eq!(
        created.metadata.name.as_deref(),
        Some("widgets.example.com")
    );
    assert!(created.metadata.uid.is_some(), "CRD has no uid");
    let established = within(
        "CRD Established",
        await_condition(
            crds.clone(),
            "widgets.example.com",
            conditions::is_crd_established(),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("waiting for Established: {e}"));
    let accepted = established
        .and_then(|crd| crd.status)
        .and_then(|status| status.accepted_names)
        .unwrap_or_else(|| panic!("Established CRD has no status.acceptedNames"));
    assert_eq!(accepted.kind, "Widget");
    assert_eq!(accepted.plural, "widgets");
    assert_eq!(
        accepted.short_names,
        Some(vec!["wd".to_string(), "wdg".to_string()])
    );
}

/// The names of the subresources discovery reports for a resource, sorted.
fn subresource_names(caps: &discovery::ApiCapabilities) -> Vec<String> {
    let mut names: Vec<String> = caps
        .subresources
        .iter()
        .map(|(ar, _)| ar.plural.clone())
        .collect();
    names.sort();
    names
}

/// Checks what discovery says about widgets.
fn assert_widget_discovery(how: &str, ar: &ApiResource, caps: &discovery::ApiCapabilities) {
    assert_eq!(ar.group, "example.com", "{how}");
    assert_eq!(ar.version, "v1", "{how}");
    assert_eq!(ar.api_version, "example.com/v1", "{how}");
    assert_eq!(ar.kind, "Widget", "{how}");
    assert_eq!(ar.plural, "widgets", "{how}");
    assert_eq!(caps.scope, Scope::Namespaced, "{how}");
    for verb in [
        verbs::CREATE,
        verbs::GET,
        verbs::LIST,
        verbs::WATCH,
        verbs::DELETE,
        verbs::DELETE_COLLECTION,
        verbs::PATCH,
        verbs::UPDATE,
    ] {
        assert!(
            caps.supports_operation(verb),
            "{how}: widgets should support {verb}: {:?}",
            caps.operations
        );
    }
    assert_eq!(subresource_names(caps), ["scale", "status"], "{how}");
}

/// The `Api` error of a failed call (its kube `Status`).
fn api_error(result: kube::Result<impl std::fmt::Debug>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_crd_discovery_and_dynamic_objects() {
    let server = TestServer::start();
    let client = client_for(&server).await;
    install_widgets(&client).await;

    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, caps) = within("pinned_kind", discovery::pinned_kind(&client, &gvk))
        .await
        .unwrap_or_else(|e| panic!("pinned_kind: {e}"));
    assert_widget_discovery("pinned_kind", &ar, &caps);

    let legacy = within(
        "Discovery::run",
        Discovery::new(client.clone())
            .filter(&["example.com"])
            .run(),
    )
    .await
    .unwrap_or_else(|e| panic!("discovery: {e}"));
    let (ar_legacy, caps_legacy) = legacy
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("legacy discovery does not know {gvk:?}"));
    assert_widget_discovery("legacy discovery", &ar_legacy, &caps_legacy);

    let aggregated = within(
        "Discovery::run_aggregated",
        Discovery::new(client.clone())
            .filter(&["example.com"])
            .run_aggregated(),
    )
    .await
    .unwrap_or_else(|e| panic!("aggregated discovery: {e}"));
    let (ar_aggr, caps_aggr) = aggregated
        .resolve_gvk(&gvk)
        .unwrap_or_else(|| panic!("aggregated discovery does not know {gvk:?}"));
    assert_widget_discovery("aggregated discovery", &ar_aggr, &caps_aggr);

    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);

    // Create: defaults are applied, status is dropped (status subresource).
    let mut w1 = DynamicObject::new("w1", &ar).data(json!({
        "spec": {"color": "red"},
        "status": {"replicas": 7}
    }));
    w1.metadata.labels = Some(BTreeMap::from([("tier".to_string(), "gold".to_string())]));
    let created = within("create w1", widgets.create(&PostParams::default(), &w1))
        .await
        .unwrap_or_else(|e| panic!("creating w1: {e}"));
    assert_eq!(created.metadata.name.as_deref(), Some("w1"));
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created
        .metadata
        .uid
        .as_deref()
        .is_some_and(|u| !u.is_empty()));
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1 = created
        .metadata
        .resource_version
        .clone()
        .unwrap_or_else(|| panic!("created w1 has no resourceVersion"));
    assert_eq!(
        created.data["spec"],
        json!({"color": "red", "replicas": 1, "finish": "matte"})
    );
    assert_eq!(
        created.data.get("status"),
        None,
        "status must be ignored on create"
    );
    let types = created
        .types
        .as_ref()
        .unwrap_or_else(|| panic!("created w1 lacks apiVersion/kind"));
    assert_eq!(
        (&types.api_version[..], &types.kind[..]),
        ("example.com/v1", "Widget")
    );

    let fetched = within("get w1", widgets.get("w1"))
        .await
        .unwrap_or_else(|e| panic!("getting w1: {e}"));
    assert_eq!(fetched.metadata.resource_version.as_deref(), Some(&rv1[..]));
    assert_eq!(fetched.data["spec"]["color"], "red");

    let missing = api_error(within("get missing", widgets.get("nope")).await);
    assert_eq!(missing.code, 404);
    assert_eq!(missing.reason, "NotFound");
    assert_eq!(missing.message, "widgets.example.com \"nope\" not found");

    let duplicate = api_error(
        within(
            "create duplicate",
            widgets.create(&PostParams::default(), &w1),
        )
        .await,
    );
    assert_eq!(duplicate.code, 409);
    assert_eq!(duplicate.reason, "AlreadyExists");

    // Selectors: labels, metadata fields and the CRD's selectable field.
    let w2 = DynamicObject::new("w2", &ar).data(json!({"spec": {"color": "blue", "replicas": 2}}));
    within("create w2", widgets.create(&PostParams::default(), &w2))
        .await
        .unwrap_or_else(|e| panic!("creating w2: {e}"));
    for (what, params, expected) in [
        (
            "labels",
            ListParams::default().labels("tier=gold"),
            vec!["w1"],
        ),
        (
            "labels !",
            ListParams::default().labels("!tier"),
            vec!["w2"],
        ),
        (
            "name field",
            ListParams::default().fields("metadata.name=w2"),
            vec!["w2"],
        ),
        (
            "selectable field",
            ListParams::default().fields("spec.color=red"),
            vec!["w1"],
        ),
        ("all", ListParams::default(), vec!["w1", "w2"]),
    ] {
        let list = within(what, widgets.list(&params))
            .await
            .unwrap_or_else(|e| panic!("list by {what}: {e}"));
        let names: Vec<String> = list
            .items
            .iter()
            .filter_map(|o| o.metadata.name.clone())
            .collect();
        assert_eq!(names, expected, "list by {what}");
    }

    // Pagination with limit/continue.
    let page1 = within("list page 1", widgets.list(&ListParams::default().limit(1)))
        .await
        .unwrap_or_else(|e| panic!("list page 1: {e}"));
    assert_eq!(page1.items.len(), 1);
    assert_eq!(page1.items[0].metadata.name.as_deref(), Some("w1"));
    let token = page1
        .metadata
        .continue_
        .clone()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| panic!("page 1 has no continue token"));
    assert_eq!(page1.metadata.remaining_item_count, Some(1));
    let page2 = within(
        "list page 2",
        widgets.list(&ListParams::default().limit(1).continue_token(&token)),
    )
    .await
    .unwrap_or_else(|e| panic!("list page 2: {e}"));
    assert_eq!(page2.items.len(), 1);
    assert_eq!(page2.items[0].metadata.name.as_deref(), Some("w2"));
    assert!(page2.metadata.continue_.as_deref().unwrap_or("").is_empty());

    // Merge patch of spec bumps generation; status subresource ignores spec.
    let patched = within(
        "merge patch",
        widgets.patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "blue"}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("merge patch: {e}"));
    assert_eq!(patched.data["spec"]["color"], "blue");
    assert_eq!(patched.metadata.generation, Some(2));
    assert_ne!(patched.metadata.resource_version.as_deref(), Some(&rv1[..]));

    let with_status = within(
        "patch status",
        widgets.patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "ignored"}, "status": {"replicas": 1, "selector": "app=w1"}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("patch status: {e}"));
    assert_eq!(
        with_status.data["status"],
        json!({"replicas": 1, "selector": "app=w1"})
    );
    assert_eq!(with_status.data["spec"]["color"], "blue");
    assert_eq!(with_status.metadata.generation, Some(2));

    // Scale subresource.
    let scale = within("get scale", widgets.get_scale("w1"))
        .await
        .unwrap_or_else(|e| panic!("get scale: {e}"));
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(1));
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app=w1")
    );
    within(
        "patch scale",
        widgets.patch_scale(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 4}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("patch scale: {e}"));
    let scaled = within("get after scale", widgets.get("w1"))
        .await
        .unwrap_or_else(|e| panic!("get after scale: {e}"));
    assert_eq!(scaled.data["spec"]["replicas"], 4);

    // Update with a stale resourceVersion conflicts.
    let mut stale = fetched.clone();
    stale.data["spec"]["color"] = Value::from("green");
    let conflict = api_error(
        within(
            "stale replace",
            widgets.replace("w1", &PostParams::default(), &stale),
        )
        .await,
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.reason, "Conflict");
    assert_eq!(
        conflict.message,
        "Operation cannot be fulfilled on widgets.example.com \"w1\": the object has been \
         modified; please apply your changes to the latest version and try again"
    );

    // deletecollection with a label selector returns the deleted objects.
    for name in ["w3", "w4"] {
        let mut obj = DynamicObject::new(name, &ar).data(json!({"spec": {"color": "grey"}}));
        obj.metadata.labels = Some(BTreeMap::from([("batch".to_string(), "x".to_string())]));
        within("create batch", widgets.create(&PostParams::default(), &obj))
            .await
            .unwrap_or_else(|e| panic!("creating {name}: {e}"));
    }
    let removed = within(
        "delete_collection",
        widgets.delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("batch=x"),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("delete_collection: {e}"));
    let removed = removed
        .left()
        .unwrap_or_else(|| panic!("deletecollection should return the deleted objects"));
    let mut removed_names: Vec<String> = removed
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    removed_names.sort();
    assert_eq!(removed_names, ["w3", "w4"]);
    let left = within(
        "list after deletecollection",
        widgets.list(&ListParams::default()),
    )
    .await
    .unwrap_or_else(|e| panic!("list: {e}"));
    let left: Vec<String> = left
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(left, ["w1", "w2"]);

    // Deleting a custom resource without finalizers answers with a success Status
    // naming it (kube's CR storage does not return the deleted object).
    let w2_uid = within("get w2", widgets.get("w2"))
        .await
        .unwrap_or_else(|e| panic!("getting w2: {e}"))
        .metadata
        .uid;
    let deleted = within("delete w2", widgets.delete("w2", &DeleteParams::default()))
        .await
        .unwrap_or_else(|e| panic!("delete w2: {e}"));
    let status = deleted
        .right()
        .unwrap_or_else(|| panic!("deleting w2 should answer with a Status"));
    assert!(status.is_success(), "{status:?}");
    let details = status
        .details
        .unwrap_or_else(|| panic!("delete Status has no details"));
    assert_eq!(details.name, "w2");
    assert_eq!(details.group, "example.com");
    assert_eq!(details.kind, "widgets");
    assert_eq!(Some(details.uid), w2_uid);
    assert_eq!(
        api_error(within("get deleted", widgets.get("w2")).await).code,
        404
    );
}

/// What the watcher task forwards: an event, or the watcher's error text.
type WatchItem = Result<watcher::Event<DynamicObject>, String>;

/// The next watcher event, failing the test on error, end of stream or timeout.
async fn next_event(rx: &mut mpsc::UnboundedReceiver<WatchItem>) -> watcher::Event<DynamicObject> {
    match tokio::time::timeout(STEP_TIMEOUT, rx.recv()).await {
        Ok(Some(Ok(event))) => event,
        Ok(Some(Err(e))) => panic!("watcher error: {e}"),
        Ok(None) => panic!("watcher stream ended"),
        Err(_) => panic!("no watch event within {STEP_TIMEOUT:?}"),
    }
}

/// A client, the widgets CRD installed, and the dynamic API of widgets in `default`.
async fn widgets_in_default(server: &TestServer) -> (Client, ApiResource, Api<DynamicObject>) {
    let client = client_for(server).await;
    install_widgets(&client).await;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, _) = within("pinned_kind", discovery::pinned_kind(&client, &gvk))
        .await
        .unwrap_or_else(|e| panic!("pinned_kind: {e}"));
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    (client, ar, widgets)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_watcher_sees_create_update_delete() {
    let server = TestServer::start();
    let (_client, ar, widgets) = widgets_in_default(&server).await;
    within(
        "create w1",
        widgets.create(
            &PostParams::default(),
            &DynamicObject::new("w1", &ar).data(json!({"spec": {"color": "red"}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("creating w1: {e}"));

    let (tx, mut rx) = mpsc::unbounded_channel::<WatchItem>();
    let watched = widgets.clone();
    let task = tokio::spawn(async move {
        let mut stream = watcher(watched, watcher::Config::default()).boxed();
        while let Some(event) = stream.next().await {
            if tx.send(event.map_err(|e| e.to_string())).is_err() {
                break;
            }
        }
    });
    // Initial list: Init, the existing object, InitDone.
    assert!(matches!(next_event(&mut rx).await, watcher::Event::Init));
    match next_event(&mut rx).await {
        watcher::Event::InitApply(o) => assert_eq!(o.metadata.name.as_deref(), Some("w1")),
        other => panic!("expected InitApply(w1), got {other:?}"),
    }
    assert!(matches!(
        next_event(&mut rx).await,
        watcher::Event::InitDone
    ));

    within(
        "create w2",
        widgets.create(
            &PostParams::default(),
            &DynamicObject::new("w2", &ar).data(json!({"spec": {"color": "blue"}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("creating w2: {e}"));
    match next_event(&mut rx).await {
        watcher::Event::Apply(o) => {
            assert_eq!(o.metadata.name.as_deref(), Some("w2"));
            assert_eq!(o.data["spec"]["color"], "blue");
        }
        other => panic!("expected Apply(w2) after create, got {other:?}"),
    }

    within(
        "patch w2",
        widgets.patch(
            "w2",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"color": "green"}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("patching w2: {e}"));
    match next_event(&mut rx).await {
        watcher::Event::Apply(o) => {
            assert_eq!(o.metadata.name.as_deref(), Some("w2"));
            assert_eq!(o.data["spec"]["color"], "green");
            assert_eq!(o.metadata.generation, Some(2));
        }
        other => panic!("expected Apply(w2) after patch, got {other:?}"),
    }

    within("delete w2", widgets.delete("w2", &DeleteParams::default()))
        .await
        .unwrap_or_else(|e| panic!("deleting w2: {e}"));
    match next_event(&mut rx).await {
        watcher::Event::Delete(o) => assert_eq!(o.metadata.name.as_deref(), Some("w2")),
        other => panic!("expected Delete(w2), got {other:?}"),
    }

    // Nothing else happened, so nothing else may arrive.
    match tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        Err(_) => {}
        Ok(event) => panic!("unexpected extra watch event: {event:?}"),
    }
    task.abort();
}

#[test]
fn raw_watch_replays_from_resource_version_and_honours_timeout() {
    let server = TestServer::start();
    let http = server.http();
    let crd = common::testdata_json("crds/widgets.yaml");
    let created = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(created.status, 201, "creating the CRD: {}", created.text());
    let list_path = "/apis/example.com/v1/namespaces/default/widgets";
    let listed = http.wait_for_status(list_path, 200, STEP_TIMEOUT);
    assert_eq!(listed.status, 200, "CRD never served: {}", listed.text());
    let rv0 = listed
        .json()
        .and_then(|l| l["metadata"]["resourceVersion"].as_str().map(String::from))
        .unwrap_or_else(|| panic!("list has no metadata.resourceVersion: {}", listed.text()));

    let w2 = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w2"}, "spec": {"color": "blue"}});
    let r = http.send_json("POST", list_path, &w2);
    assert_eq!(r.status, 201, "{}", r.text());
    let mut headers = common::json_accept();
    headers.push((
        "Content-Type".to_string(),
        "application/merge-patch+json".to_string(),
    ));
    let r = http
        .request(
            "PATCH",
            &format!("{list_path}/w2"),
            &[],
            &headers,
            Some(br#"{"spec":{"color":"green"}}"#.to_vec()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.text());

    let query: Vec<(String, String)> = [
        ("watch", "true"),
        ("resourceVersion", rv0.as_str()),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", "1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let started = std::time::Instant::now();
    let watched = http
        .request("GET", list_path, &query, &common::json_accept(), None)
        .unwrap_or_else(|e| panic!("watch: {e}"));
    let took = started.elapsed();
    assert_eq!(watched.status, 200, "{}", watched.text());
    assert!(
        took < Duration::from_secs(5),
        "timeoutSeconds=1 should end the watch promptly, took {took:?}"
    );
    let events: Vec<Value> = watched
        .text()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("watch line {l:?}: {e}")))
        .collect();
    let changes: Vec<(String, String, String)> = events
        .iter()
        .filter(|e| e["type"] != "BOOKMARK")
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                e["object"]["spec"]["color"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("ADDED".to_string(), "w2".to_string(), "blue".to_string()),
            (
                "MODIFIED".to_string(),
                "w2".to_string(),
                "green".to_string()
            ),
        ],
        "events replayed after resourceVersion {rv0}: {events:#?}"
    );
    for bookmark in events.iter().filter(|e| e["type"] == "BOOKMARK") {
        assert_eq!(bookmark["object"]["kind"], "Widget", "{bookmark}");
        assert!(
            bookmark["object"]["metadata"]["resourceVersion"]
                .as_str()
                .is_some_and(|rv| !rv.is_empty()),
            "bookmark without resourceVersion: {bookmark}"
        );
    }
}

/// The events of a kube-rs watcher stream until `InitDone`, as names per event kind.
async fn initial_events<K, S>(stream: &mut S) -> Vec<String>
where
    K: kube::Resource,
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    let mut seen = Vec::new();
    loop {
        let event = within("watcher event", stream.next())
            .await
            .expect("stream ended")
            .unwrap_or_else(|e| panic!("watcher error: {e}"));
        match event {
            watcher::Event::Init => seen.push("Init".to_string()),
            watcher::Event::InitApply(o) => seen.push(format!(
                "InitApply {}",
                o.meta().name.clone().unwrap_or_default()
            )),
            watcher::Event::InitDone => {
                seen.push("InitDone".to_string());
                return seen;
            }
            other => seen.push(format!("{:?}", std::mem::discriminant(&other))),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_streaming_lists_and_metadata_watchers_see_what_a_list_sees() {
    let server = TestServer::start();
    let (client, ar, widgets) = widgets_in_default(&server).await;
    for name in ["w1", "w2"] {
        within(
            "create",
            widgets.create(
                &PostParams::default(),
                &DynamicObject::new(name, &ar).data(json!({"spec": {"color": "red"}})),
            ),
        )
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e}"));
    }
    let want = vec!["Init", "InitApply w1", "InitApply w2", "InitDone"];
    // Full objects: a list then a watch, and a streaming list (sendInitialEvents).
    for (how, config) in [
        ("list then watch", watcher::Config::default()),
        (
            "streaming list",
            watcher::Config::default().streaming_lists(),
        ),
    ] {
        let mut stream = watcher(widgets.clone(), config).boxed();
        assert_eq!(initial_events(&mut stream).await, want, "{how}");
    }
    // Metadata only (PartialObjectMetadata events and bookmarks), both ways, for
    // custom resources and a built-in kind.
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    within(
        "create configmap",
        configmaps.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c1"}})).unwrap(),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("creating c1: {e}"));
    for (how, config) in [
        ("list then watch", watcher::Config::default()),
        (
            "streaming list",
            watcher::Config::default().streaming_lists(),
        ),
    ] {
        let widget_meta: Api<kube::core::PartialObjectMeta<DynamicObject>> =
            Api::namespaced_with(client.clone(), "default", &ar);
        let mut stream = watcher(widget_meta, config.clone()).boxed();
        assert_eq!(initial_events(&mut stream).await, want, "metadata, {how}");
        let configmap_meta: Api<
            kube::core::PartialObjectMeta<k8s_openapi::api::core::v1::ConfigMap>,
        > = Api::namespaced(client.clone(), "default");
        let mut stream = watcher(configmap_meta, config).boxed();
        assert_eq!(
            initial_events(&mut stream).await,
            vec!["Init", "InitApply c1", "InitDone"],
            "configmap metadata, {how}"
        );
    }
}

#[test]
fn metadata_and_table_watch_streams_carry_their_own_bookmarks() {
    let server = TestServer::start();
    let http = server.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    let r = http.send_json(
        "POST",
        cms,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let streaming = [
        ("watch", "true"),
        ("sendInitialEvents", "true"),
        ("resourceVersionMatch", "NotOlderThan"),
        ("allowWatchBookmarks", "true"),
        ("timeoutSeconds", "1"),
    ]
    .map(|(k, v)| (k.to_string(), v.to_string()));
    let events = |accept: &str| -> Vec<Value> {
        let r = http
            .request(
                "GET",
                cms,
                &streaming,
                &[("Accept".into(), accept.into())],
                None,
            )
            .unwrap();
        assert_eq!(r.status, 200, "{accept}: {}", r.text());
        r.text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // Metadata-only: the bookmark is a PartialObjectMetadata too, with the annotation.
    let meta = events("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1");
    let kinds: Vec<(&str, &str)> = meta
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap(),
                e["object"]["kind"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds[..2],
        [
            ("ADDED", "PartialObjectMetadata"),
            ("BOOKMARK", "PartialObjectMetadata")
        ]
    );
    assert_eq!(
        meta[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // Tables: the bookmark is a Table whose row object carries the annotation.
    let tables = events("application/json;as=Table;g=meta.k8s.io;v=v1");
    assert_eq!(tables[1]["type"], "BOOKMARK");
    assert_eq!(tables[1]["object"]["kind"], "Table");
    assert_eq!(
        tables[1]["object"]["rows"][0]["object"]["metadata"]["annotations"]
            ["k8s.io/initial-events-end"],
        "true"
    );
    // Full objects: a ConfigMap bookmark, typed (creationTimestamp null).
    let full = events("application/json");
    assert_eq!(full[1]["object"]["kind"], "ConfigMap");
    assert_eq!(
        full[1]["object"]["metadata"]["creationTimestamp"],
        Value::Null
    );
    // The list form of metadata does not fit watch events, nor the object form a list.
    let r = http
        .request(
            "GET",
            cms,
            &streaming,
            &[(
                "Accept".into(),
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1".into(),
            )],
            None,
        )
        .unwrap();
    assert_eq!(r.status, 406);
    assert_eq!(
        r.json().unwrap()["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let r = http
        .request(
            "GET",
            cms,
            &[],
            &[(
                "Accept".into(),
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1".into(),
            )],
            None,
        )
        .unwrap();
    assert_eq!(r.status, 406);
    assert_eq!(
        r.json().unwrap()["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
}

#[test]
fn watching_from_before_the_kept_history_is_kubes_410_expired() {
    // A short window makes the 410 deterministic (the embedded store's own history).
    let server = TestServer::start_embedded(&["--watch-history", "5"]);
    let http = server.http();
    let cms = "/api/v1/namespaces/default/configmaps";
    let mut last = String::new();
    for i in 0..10 {
        let r = http.send_json(
            "POST",
            cms,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        last = r.json().unwrap()["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
    }
    let watch = |rv: &str| http.watch_for(cms, 1, &[("resourceVersion", rv)]);
    let r = watch("2");
    assert_eq!(r.status, 200);
    let event: Value = serde_json::from_str(r.text().lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    let message = event["object"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("too old resource version: 2 ("),
        "{message}"
    );
    // Within the window the watch replays what followed.
    let newest: i64 = last.parse().unwrap();
    let r = watch(&(newest - 2).to_string());
    let names: Vec<String> = r
        .text()
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["object"]["metadata"]["name"].to_string()
        })
        .collect();
    assert_eq!(names, ["\"c8\"", "\"c9\""]);
}

/// The events of a typed watcher until the one `pick` maps to `Some`.
async fn watch_until<K, S, T>(
    stream: &mut S,
    mut pick: impl FnMut(&watcher::Event<K>) -> Option<T>,
) -> T
where
    K: kube::Resource,
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    loop {
        let event = within("watcher event", stream.next())
            .await
            .expect("stream ended")
            .unwrap_or_else(|e| panic!("watcher error: {e}"));
        if let Some(found) = pick(&event) {
            return found;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_rs_typed_deployments_pods_and_services_get_kubes_defaults() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Pod, Service, ServiceAccount};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    let server = TestServer::start();
    let client = client_for(&server).await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");

    let mut watch = watcher(
        deployments.clone(),
        watcher::Config::default().fields("metadata.name=web"),
    )
    .boxed();
    watch_until(&mut watch, |e| {
        matches!(e, watcher::Event::InitDone).then_some(())
    })
    .await;

    let web: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}
        }
    }))
    .expect("deployment");
    let d = within(
        "create deployment",
        deployments.create(&PostParams::default(), &web),
    )
    .await
    .unwrap_or_else(|e| panic!("creating web: {e}"));
    let spec = d.spec.as_ref().expect("spec");
    assert_eq!(spec.replicas, Some(1));
    assert_eq!(spec.revision_history_limit, Some(10));
    assert_eq!(spec.progress_deadline_seconds, Some(600));
    let strategy = spec.strategy.as_ref().expect("strategy");
    assert_eq!(strategy.type_.as_deref(), Some("RollingUpdate"));
    let rolling = strategy.rolling_update.as_ref().expect("rollingUpdate");
    assert_eq!(rolling.max_surge, Some(IntOrString::String("25%".into())));
    assert_eq!(
        rolling.max_unavailable,
        Some(IntOrString::String("25%".into()))
    );
    let pod_spec = spec.template.spec.as_ref().expect("template spec");
    assert_eq!(pod_spec.restart_policy.as_deref(), Some("Always"));
    assert_eq!(pod_spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert_eq!(pod_spec.termination_grace_period_seconds, Some(30));
    assert_eq!(
        pod_spec.containers[0].image_pull_policy.as_deref(),
        Some("IfNotPresent")
    );
    assert_eq!(d.metadata.generation, Some(1));
    let seen = watch_until(&mut watch, |e| match e {
        watcher::Event::Apply(d) => Some(d.metadata.generation),
        _ => None,
    })
    .await;
    assert_eq!(seen, Some(1), "the watcher sees the create");

    // Strategic merge: containers merge by name, the image changes, the name stays.
    let patched = within(
        "strategic patch",
        deployments.patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "nginx", "image": "nginx:1.28"}]}}}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("strategic patch: {e}"));
    let containers = &patched
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers;
    assert_eq!(containers.len(), 1);
    assert_eq!(containers[0].image.as_deref(), Some("nginx:1.28"));
    assert_eq!(patched.metadata.generation, Some(2));
    let image = watch_until(&mut watch, |e| match e {
        watcher::Event::Apply(d) if d.metadata.generation == Some(2) => d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|s| s.containers[0].image.clone()),
        _ => None,
    })
    .await;
    assert_eq!(image, "nginx:1.28", "the watcher sees the patch");

    // Merge patch and JSON patch.
    let merged = within(
        "merge patch",
        deployments.patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("merge patch: {e}"));
    assert_eq!(
        merged.metadata.labels,
        Some(BTreeMap::from([("tier".to_string(), "front".to_string())]))
    );
    let json_patched = within(
        "json patch",
        deployments.patch(
            "web",
            &PatchParams::default(),
            &Patch::<()>::Json(
                serde_json::from_value(json!([
                    {"op": "test", "path": "/spec/replicas", "value": 1},
                    {"op": "replace", "path": "/spec/replicas", "value": 3}
                ]))
                .expect("json patch"),
            ),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("json patch: {e}"));
    assert_eq!(json_patched.spec.unwrap().replicas, Some(3));

    // Server-side apply of a new Deployment: defaults, and the manager's Apply entry.
    let applied = within(
        "apply",
        deployments.patch(
            "api",
            &PatchParams::apply("typed-test"),
            &Patch::Apply(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "api"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                         "template": {"metadata": {"labels": {"app": "api"}},
                                      "spec": {"containers": [{"name": "api", "image": "api:1"}]}}}
            })),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("server-side apply: {e}"));
    assert_eq!(
        applied.spec.as_ref().unwrap().revision_history_limit,
        Some(10)
    );
    let entry = applied
        .metadata
        .managed_fields
        .as_ref()
        .expect("managedFields")
        .iter()
        .find(|m| m.manager.as_deref() == Some("typed-test"))
        .expect("the apply's entry");
    assert_eq!(entry.operation.as_deref(), Some("Apply"));

    // A Pod: Pending, BestEffort, kube's container defaults. The ServiceAccount
    // admission plugin needs the namespace's `default` ServiceAccount first.
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    let account: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).expect("account");
    within(
        "create service account",
        accounts.create(&PostParams::default(), &account),
    )
    .await
    .unwrap_or_else(|e| panic!("creating the default ServiceAccount: {e}"));
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p1"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))
    .expect("pod");
    let p = within("create pod", pods.create(&PostParams::default(), &pod))
        .await
        .unwrap_or_else(|e| panic!("creating p1: {e}"));
    let status = p.status.as_ref().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    assert_eq!(status.qos_class.as_deref(), Some("BestEffort"));
    let c = &p.spec.as_ref().unwrap().containers[0];
    assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
    assert_eq!(
        c.termination_message_path.as_deref(),
        Some("/dev/termination-log")
    );
    let labelled = within(
        "pod patch",
        pods.patch(
            "p1",
            &PatchParams::default(),
            &Patch::Strategic(json!({"metadata": {"labels": {"app": "x"}}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("pod patch: {e}"));
    assert_eq!(
        labelled.metadata.labels,
        Some(BTreeMap::from([("app".to_string(), "x".to_string())]))
    );

    // A Service: a cluster IP from 10.0.0.0/24, kube's defaults.
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    }))
    .expect("service");
    let s = within(
        "create service",
        services.create(&PostParams::default(), &svc),
    )
    .await
    .unwrap_or_else(|e| panic!("creating the service: {e}"));
    let spec = s.spec.as_ref().expect("spec");
    let ip = spec.cluster_ip.as_deref().expect("clusterIP");
    assert!(
        ip.strip_prefix("10.0.0.")
            .is_some_and(|last| last.parse::<u8>().is_ok()),
        "{ip}"
    );
    assert_eq!(spec.cluster_ips.as_deref(), Some(&[ip.to_string()][..]));
    assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
    assert_eq!(spec.session_affinity.as_deref(), Some("None"));
    assert_eq!(spec.ip_families.as_deref(), Some(&["IPv4".to_string()][..]));
    let port = &spec.ports.as_ref().expect("ports")[0];
    assert_eq!(port.protocol.as_deref(), Some("TCP"));
    assert_eq!(port.target_port, Some(IntOrString::Int(80)));
    let mut svc_watch = watcher(services.clone(), watcher::Config::default()).boxed();
    let names = initial_events(&mut svc_watch).await;
    assert!(names.contains(&"InitApply web".to_string()), "{names:?}");
    assert!(
        names.contains(&"InitApply kubernetes".to_string()),
        "{names:?}"
    );
}

/// The Python `kubernetes` client's typed APIs (AppsV1Api, CoreV1Api) against the server:
/// `integration/python/typed_clients.py` asserts and prints `ok`.
#[test]
fn python_client_typed_deployments_pods_and_services() {
    let server = TestServer::start();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("integration/python/typed_clients.py");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg(server.kubeconfig())
        .env("HOME", server.dir())
        .output()
        .unwrap_or_else(|e| panic!("running python3 (the Python suite needs it): {e}"));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout) == "ok\n",
        "{} (the Python `kubernetes` client is required: pip install kubernetes)\n\
         --- server stderr (tail) ---\n{}",
        common::describe_output(&out),
        server.stderr_tail(20)
    );
}
