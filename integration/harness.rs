//! The test harness (issue 9) used exactly as a controller's tests use it: in-process
//! servers, fixtures, reset, isolated namespaces, admission hooks, the example
//! controller (`examples/widget_controller`) and fault injection seen through kube-rs.
//!
//! With `TEST_BACKEND=etcd` every server stores in its own etcd.

mod common;

#[path = "../examples/widget_controller/reconcile.rs"]
mod widget_controller;

use crd_apiserver::admission::{AdmissionResponse, Matcher};
use crd_apiserver::fault::FaultRule;
use crd_apiserver::harness::{self, TestServer, TestServerBuilder, TestServerPool};
use crd_apiserver::rest::Operation;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use serde_json::{json, Value};
use std::future::Future;
use std::time::{Duration, Instant};
use widget_controller::{widget_resource, Widget, WidgetSpec};

/// Upper bound for any single step; the machine is shared and loaded.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// kube's conflict text for widget `x` (`apimachinery/pkg/api/errors.NewConflict` with
/// the registry's `OptimisticLockErrorMsg`).
const CONFLICT_X: &str = "Operation cannot be fulfilled on widgets.example.com \"x\": the object \
                          has been modified; please apply your changes to the latest version \
                          and try again";

/// Awaits `fut` with [`STEP_TIMEOUT`], failing the test with `what` on timeout.
async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    match tokio::time::timeout(STEP_TIMEOUT, fut).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {STEP_TIMEOUT:?}"),
    }
}

/// Polls `check` until it returns `Some`, failing with `what` after [`STEP_TIMEOUT`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not within {STEP_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A harness server and, under `TEST_BACKEND=etcd`, the etcd it stores in (dropped after it).
struct Harnessed {
    server: TestServer,
    _etcd: Option<common::Etcd>,
}

impl std::ops::Deref for Harnessed {
    type Target = TestServer;
    fn deref(&self) -> &TestServer {
        &self.server
    }
}

/// A fresh etcd when `TEST_BACKEND=etcd`.
async fn test_etcd() -> Option<common::Etcd> {
    match std::env::var("TEST_BACKEND").as_deref() {
        Ok("etcd") => Some(
            tokio::task::spawn_blocking(|| {
                let etcd = common::Etcd::start();
                etcd.wait_ready();
                etcd
            })
            .await
            .unwrap_or_else(|e| panic!("starting etcd: {e}")),
        ),
        _ => None,
    }
}

/// Starts a server from `builder`, on its own etcd when `TEST_BACKEND=etcd`.
async fn start_with(builder: TestServerBuilder) -> Harnessed {
    let etcd = test_etcd().await;
    let builder = match &etcd {
        Some(e) => builder.etcd([e.url()]),
        None => builder,
    };
    let server = within("harness start", builder.start())
        .await
        .unwrap_or_else(|e| panic!("harness start: {e}"));
    Harnessed {
        server,
        _etcd: etcd,
    }
}

async fn start() -> Harnessed {
    start_with(TestServer::builder()).await
}

/// A server with the example's Widget CRD loaded.
async fn start_with_widgets(builder: TestServerBuilder) -> Harnessed {
    let server = start_with(builder).await;
    within("load CRD", server.load_yaml(widget_controller::CRD))
        .await
        .unwrap_or_else(|e| panic!("loading the Widget CRD: {e}"));
    server
}

fn widgets(server: &TestServer, namespace: &str) -> Api<Widget> {
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    Api::namespaced_with(client, namespace, &widget_resource())
}

fn new_widget(name: &str, replicas: i64) -> Widget {
    Widget::new(
        name,
        &widget_resource(),
        WidgetSpec {
            color: "blue".into(),
            replicas,
        },
    )
}

/// The kube `Status` of a failed call.
fn api_error<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Runs the example controller until the returned sender is dropped or fires.
fn spawn_controller(server: &TestServer) -> tokio::sync::oneshot::Sender<()> {
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(widget_controller::run(client, async move {
        let _ = stopped.await;
    }));
    stop
}

/// Waits until widget `name` reports `replicas` in its status for its current generation.
async fn wait_reconciled(api: &Api<Widget>, name: &str, replicas: i64) {
    eventually(
        &format!("widget {name} reconciled to {replicas}"),
        || async {
            let w = api.get(name).await.ok()?;
            let s = w.status?;
            (s.replicas == replicas
                && s.phase == "Ready"
                && Some(s.observed_generation) == w.metadata.generation)
                .then_some(())
        },
    )
    .await
}

/// A CRD, a namespace and objects, with the objects first in the text: the harness
/// must apply the CRD and namespace first.
const FIXTURE: &str = r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: team-a}
spec: {color: red}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2}
spec: {color: green, replicas: 2}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
"#;

fn fixture_with_crd() -> String {
    format!("{FIXTURE}---\n{}", widget_controller::CRD)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_side_by_side_are_isolated() {
    let (a, b) = tokio::join!(start(), start());
    assert_ne!(a.url(), b.url());
    within("load", a.load_yaml(widget_controller::CRD))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let on_a = widgets(&a, "default");
    let on_b = widgets(&b, "default");
    within(
        "create on a",
        on_a.create(&PostParams::default(), &new_widget("x", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create on a: {e}"));
    let err = api_error(within("list on b", on_b.list(&ListParams::default())).await);
    assert_eq!(err.code, 404, "b has no widgets CRD: {err:?}");
    assert_eq!(a.kubeconfig_path().parent(), Some(a.dir()));
    let kubeconfig = std::fs::read_to_string(a.kubeconfig_path())
        .unwrap_or_else(|e| panic!("reading the kubeconfig: {e}"));
    assert_eq!(kubeconfig, a.kubeconfig());
    assert!(kubeconfig.contains(&format!("server: {}", a.url())));
}

/// A CRD with a default (`spec.size: 3`) and a CEL rule (`size <= 10`), for the pool.
const POOL_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: pooltests.pool.example.com}
spec:
  group: pool.example.com
  scope: Namespaced
  names: {plural: pooltests, singular: pooltest, kind: PoolTest}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.size <= 10", message: "size must be at most 10"}
            properties:
              size: {type: integer, default: 3}
              owner: {type: string}
"#;

fn pool_tests(server: &TestServer) -> Api<DynamicObject> {
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    let resource = kube::api::ApiResource {
        group: "pool.example.com".into(),
        version: "v1".into(),
        api_version: "pool.example.com/v1".into(),
        kind: "PoolTest".into(),
        plural: "pooltests".into(),
    };
    Api::namespaced_with(client, "default", &resource)
}

fn pool_test(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "pool.example.com/v1", "kind": "PoolTest",
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap_or_else(|e| panic!("a PoolTest: {e}"))
}

/// Many servers from one CRD directory in one process: each its own store, port and
/// kubeconfig, the CRD's default and CEL rule working on each through HTTP, and the
/// directory parsed, the CRDs validated and compiled once (the caches hit).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_servers_from_one_crd_directory_are_isolated_and_share_compiled_crds() {
    const SERVERS: usize = 8;
    let dir =
        std::env::temp_dir().join(format!("crd-apiserver-pool-{:08x}", rand::random::<u32>()));
    let write = |name: &str, text: &str| {
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(dir.join(name), text))
            .unwrap_or_else(|e| panic!("writing {name}: {e}"));
    };
    write("pooltests.yaml", POOL_CRD);
    write("widgets.yaml", widget_controller::CRD);
    let crds = 2;
    // Under TEST_BACKEND=etcd every server of the pool stores in one etcd, each under a
    // prefix of its own.
    let etcd = test_etcd().await;
    let mut builder = TestServer::builder().load_dir(&dir);
    if let Some(etcd) = &etcd {
        builder = builder.etcd([etcd.url()]);
    }
    let before = harness::cache_stats();
    let pool = TestServerPool::new(builder.clone()).ahead(2);
    let mut servers = Vec::new();
    for i in 0..SERVERS {
        // Most from the pool, some straight from the builder: both share the caches.
        let server = if i % 4 == 3 {
            let direct = match &etcd {
                Some(_) => builder
                    .clone()
                    .etcd_prefix(&format!("/registry-direct-{i}")),
                None => builder.clone(),
            };
            within("builder start", direct.start()).await
        } else {
            within("pool get", pool.get()).await
        };
        servers.push(server.unwrap_or_else(|e| panic!("server {i}: {e}")));
    }
    let after = harness::cache_stats();
    let reused = (SERVERS as u64 - 1) * crds;
    assert!(
        after.compiled_crds.hits >= before.compiled_crds.hits + reused,
        "compiled CRDs reused: {before:?} -> {after:?}"
    );
    assert!(
        after.validated_crds.hits >= before.validated_crds.hits + reused,
        "validated CRD specs reused: {before:?} -> {after:?}"
    );
    assert!(
        after.manifests.hits >= before.manifests.hits + reused,
        "parsed manifests reused: {before:?} -> {after:?}"
    );
    // Shared means the same compiled schemas, not copies.
    let versions = |s: &TestServer| match s.api().catalog.get("pooltests.pool.example.com") {
        Some(crd) => crd.versions.clone(),
        None => panic!("{} has no pooltests CRD", s.url()),
    };
    for s in &servers[1..] {
        assert!(std::sync::Arc::ptr_eq(&versions(&servers[0]), &versions(s)));
    }

    // Each its own port and kubeconfig.
    let urls: std::collections::BTreeSet<String> = servers.iter().map(|s| s.url()).collect();
    assert_eq!(urls.len(), SERVERS, "{urls:?}");
    for s in &servers {
        let kubeconfig = std::fs::read_to_string(s.kubeconfig_path())
            .unwrap_or_else(|e| panic!("reading the kubeconfig: {e}"));
        assert!(
            kubeconfig.contains(&format!("server: {}", s.url())),
            "{kubeconfig}"
        );
    }

    // A write to one is seen by no other.
    let first = pool_tests(&servers[0]);
    within(
        "create on the first",
        first.create(
            &PostParams::default(),
            &pool_test("only-here", json!({"owner": "first"})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("create on the first: {e}"));
    for s in &servers[1..] {
        let api = pool_tests(s);
        let err = api_error(within("get on another", api.get("only-here")).await);
        assert_eq!(err.code, 404, "{}: {err:?}", s.url());
        let list = within("list on another", api.list(&ListParams::default()))
            .await
            .unwrap_or_else(|e| panic!("list on {}: {e}", s.url()));
        assert!(list.items.is_empty(), "{}: {:?}", s.url(), list.items);
    }

    // The CRD's schema works on each: the default, and the CEL rule.
    for (i, s) in servers.iter().enumerate() {
        let api = pool_tests(s);
        let name = format!("defaulted-{i}");
        let created = within(
            "create",
            api.create(&PostParams::default(), &pool_test(&name, json!({}))),
        )
        .await
        .unwrap_or_else(|e| panic!("create on {}: {e}", s.url()));
        assert_eq!(created.data["spec"]["size"], json!(3), "{}", s.url());
        let err = api_error(
            within(
                "create too big",
                api.create(
                    &PostParams::default(),
                    &pool_test("too-big", json!({"size": 11})),
                ),
            )
            .await,
        );
        assert_eq!(err.code, 422, "{}: {err:?}", s.url());
        assert!(
            err.message.contains("size must be at most 10"),
            "{}",
            err.message
        );
    }
    // Each holds exactly what was written to it.
    for (i, s) in servers.iter().enumerate() {
        let names: Vec<String> = within("list", pool_tests(s).list(&ListParams::default()))
            .await
            .unwrap_or_else(|e| panic!("list on {}: {e}", s.url()))
            .items
            .into_iter()
            .map(|o| o.metadata.name.unwrap_or_default())
            .collect();
        let mut expected = vec![format!("defaulted-{i}")];
        if i == 0 {
            expected.push("only-here".into());
        }
        assert_eq!(names, expected, "{}", s.url());
    }
    drop(servers);
    drop(pool);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_multi_document_yaml_crd_namespace_and_objects() {
    let server = start().await;
    let written = within("load", server.load_yaml(&fixture_with_crd()))
        .await
        .unwrap_or_else(|e| panic!("loading the fixture: {e}"));
    let kinds: Vec<&str> = written
        .iter()
        .map(|o| o["kind"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        ["CustomResourceDefinition", "Namespace", "Widget", "Widget"]
    );
    // Stored as the pipeline writes them: defaults applied, namespace defaulted.
    assert_eq!(written[2]["spec"]["replicas"], json!(1));
    assert_eq!(written[3]["metadata"]["namespace"], json!("default"));
    let crd = &written[0];
    let established = crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "CRD not Established when load returned: {crd}");
    let w1 = within("get w1", widgets(&server, "team-a").get("w1"))
        .await
        .unwrap_or_else(|e| panic!("get w1: {e}"));
    assert_eq!(w1.spec.color, "red");

    // load(value) and load_file(path) go the same way.
    let w3 = within(
        "load w3",
        server.load(json!({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w3"}, "spec": {"color": "blue"}})),
    )
    .await
    .unwrap_or_else(|e| panic!("load w3: {e}"));
    assert_eq!(w3["metadata"]["name"], json!("w3"));
    let path = server.dir().join("w4.yaml");
    std::fs::write(
        &path,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w4}\nspec: {color: blue}\n",
    )
    .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    within("load_file", server.load_file(&path))
        .await
        .unwrap_or_else(|e| panic!("load_file: {e}"));
    let names: Vec<String> = within(
        "list",
        widgets(&server, "default").list(&ListParams::default()),
    )
    .await
    .unwrap_or_else(|e| panic!("list: {e}"))
    .items
    .into_iter()
    .map(|w| w.metadata.name.unwrap_or_default())
    .collect();
    assert_eq!(names, ["w2", "w3", "w4"]);

    // An invalid object fails the load with kube's message and where it came from.
    let err = within(
        "load invalid",
        server.load_yaml("apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: bad}\nspec: {replicas: -1}\n"),
    )
    .await
    .map(|_| ());
    let text = match err {
        Err(e) => e.to_string(),
        Ok(()) => panic!("an invalid widget must fail the load"),
    };
    assert!(
        text.starts_with("loading document 1: Widget.example.com \"bad\" is invalid: "),
        "{text}"
    );
    assert!(text.contains("spec.color: Required value"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_cluster_rolls_out_deployments_for_a_kube_rs_client() {
    use k8s_openapi::api::apps::v1::Deployment;
    let refused = TestServer::builder().controllers(&["deployment", "blue-controller"]);
    assert_eq!(
        refused.err().map(|e| e.to_string()).as_deref(),
        Some("\"blue-controller\" is not in the list of known controllers")
    );
    let builder = TestServer::builder()
        .controllers(&["*"])
        .expect("kube's names")
        .simulate_nodes(2);
    let server = start_with(builder).await;
    let client = server.client().expect("client");
    let deployments: Api<Deployment> = Api::namespaced(client, "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "api"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "api"}},
            "template": {"metadata": {"labels": {"app": "api"}},
                         "spec": {"containers": [{"name": "api", "image": "example/api:1"}]}},
        },
    }))
    .expect("a Deployment");
    within("create", deployments.create(&PostParams::default(), &d))
        .await
        .expect("created");
    let available = |d: Option<&Deployment>| {
        d.and_then(|d| d.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            })
    };
    let done = within(
        "Available",
        kube::runtime::wait::await_condition(deployments.clone(), "api", available),
    )
    .await
    .expect("watch")
    .expect("the Deployment");
    assert_eq!(done.status.and_then(|s| s.available_replicas), Some(2));
    // The clock the cluster's timers read moves when told to.
    let before = server.clock().now();
    server
        .clock()
        .advance(std::time::Duration::from_secs(86_400));
    assert!(server.clock().now() - before >= chrono::Duration::days(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_config_turns_beta_versions_on() {
    let refused = TestServer::builder().runtime_config(&["networking.k8s.io/v2=true"]);
    assert_eq!(
        refused.err().map(|e| e.to_string()).as_deref(),
        Some("group version networking.k8s.io/v2 that has not been registered")
    );
    let builder = TestServer::builder()
        .runtime_config(&["storage.k8s.io/v1beta1=true"])
        .expect("kube accepts it");
    let server = start_with(builder).await;
    let client = server.client().expect("client");
    let api_of = |version: &str| {
        let gvk =
            kube::core::GroupVersionKind::gvk("storage.k8s.io", version, "VolumeAttributesClass");
        let client = client.clone();
        async move {
            let (resource, _) = kube::discovery::pinned_kind(&client, &gvk)
                .await
                .unwrap_or_else(|e| panic!("{gvk:?} is not discovered: {e}"));
            (Api::<DynamicObject>::all_with(client, &resource), resource)
        }
    };
    let (beta, resource) = within("discovery", api_of("v1beta1")).await;
    let mut class = DynamicObject::new("gold", &resource);
    class.data = json!({"driverName": "csi.example.com", "parameters": {"iops": "100"}});
    let created = within("create", beta.create(&PostParams::default(), &class))
        .await
        .expect("created through v1beta1");
    assert_eq!(
        created.types.map(|t| t.api_version).as_deref(),
        Some("storage.k8s.io/v1beta1")
    );
    let (v1, _) = within("discovery", api_of("v1")).await;
    let stored = within("get", v1.get("gold"))
        .await
        .expect("read through v1");
    assert_eq!(
        stored.types.map(|t| t.api_version).as_deref(),
        Some("storage.k8s.io/v1")
    );
    assert_eq!(stored.data["driverName"], "csi.example.com");
    assert_eq!(stored.data["parameters"]["iops"], "100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_keeps_crds_and_drops_objects() {
    let server = start().await;
    within("load", server.load_yaml(&fixture_with_crd()))
        .await
        .unwrap_or_else(|e| panic!("loading the fixture: {e}"));
    let ns = within("namespace", server.namespace())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    within(
        "create in ns",
        widgets(&server, &ns).create(&PostParams::default(), &new_widget("x", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));

    within("reset", server.reset())
        .await
        .unwrap_or_else(|e| panic!("reset: {e}"));
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    let all: Api<Widget> = Api::all_with(client.clone(), &widget_resource());
    let left = within("list widgets", all.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("the CRD must survive reset: {e}"));
    assert!(left.items.is_empty(), "{:?}", left.items);
    let namespaces: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "Namespace".into(),
            plural: "namespaces".into(),
        },
    );
    let mut names: Vec<String> = within("list namespaces", namespaces.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("list namespaces: {e}"))
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    names.sort();
    assert_eq!(names, ["default", "kube-public", "kube-system"]);
    // The CRD still serves: new objects can be created at once.
    within(
        "create after reset",
        widgets(&server, "default").create(&PostParams::default(), &new_widget("again", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create after reset: {e}"));

    within("reset_all", server.reset_all())
        .await
        .unwrap_or_else(|e| panic!("reset_all: {e}"));
    let err = api_error(within("list after reset_all", all.list(&ListParams::default())).await);
    assert_eq!(err.code, 404, "{err:?}");
    // And the CRD can be loaded again.
    within("reload", server.load_yaml(widget_controller::CRD))
        .await
        .unwrap_or_else(|e| panic!("reloading the CRD: {e}"));
    let left = within("list after reload", all.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("list after reload: {e}"));
    assert!(left.items.is_empty(), "{:?}", left.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn isolated_namespaces_are_unique_and_separate() {
    let server = start_with_widgets(TestServer::builder()).await;
    let a = within("ns a", server.isolated_namespace("orders"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let b = within("ns b", server.isolated_namespace("orders"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(a, b);
    for ns in [&a, &b] {
        assert!(
            ns.starts_with("orders-") && ns.len() == "orders-".len() + 8,
            "{ns}"
        );
    }
    within(
        "create in a",
        widgets(&server, &a).create(&PostParams::default(), &new_widget("same", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create in {a}: {e}"));
    within(
        "create in b",
        widgets(&server, &b).create(&PostParams::default(), &new_widget("same", 2)),
    )
    .await
    .unwrap_or_else(|e| panic!("the same name in {b}: {e}"));
    let in_a = within("list a", widgets(&server, &a).list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(in_a.items.len(), 1);
    assert_eq!(in_a.items[0].spec.replicas, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_controller_reconciles_widgets() {
    let server = start_with_widgets(TestServer::builder()).await;
    let ns = within("ns", server.namespace())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let api = widgets(&server, &ns);
    let _controller = spawn_controller(&server);
    within(
        "create",
        api.create(&PostParams::default(), &new_widget("w", 3)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    wait_reconciled(&api, "w", 3).await;
    within(
        "scale",
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        ),
    )
    .await
    .unwrap_or_else(|e| panic!("patch: {e}"));
    wait_reconciled(&api, "w", 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_process_admission_hooks_through_the_harness() {
    let server = start_with_widgets(TestServer::builder()).await;
    server.admission().register_mutating(
        "label.example.com",
        Matcher::new(&["example.com"], &["widgets"], &[Operation::Create]),
        |req| async move {
            let mut obj = req.object;
            obj["metadata"]["labels"] = json!({"admitted": "true"});
            AdmissionResponse::mutate(obj)
        },
    );
    server.admission().register_validating(
        "no-red.example.com",
        Matcher::new(&["example.com"], &["widgets"], &[Operation::Create]),
        |req| async move {
            if req.object["spec"]["color"] == "red" {
                AdmissionResponse::deny("red widgets are not allowed")
            } else {
                AdmissionResponse::allow()
            }
        },
    );
    let api = widgets(&server, "default");
    let created = within(
        "create",
        api.create(&PostParams::default(), &new_widget("ok", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    assert_eq!(
        created
            .metadata
            .labels
            .and_then(|l| l.get("admitted").cloned()),
        Some("true".to_string())
    );
    let mut red = new_widget("red", 1);
    red.spec.color = "red".into();
    let err = api_error(within("create red", api.create(&PostParams::default(), &red)).await);
    assert_eq!(err.code, 400);
    assert_eq!(
        err.message,
        "admission webhook \"no-red.example.com\" denied the request: red widgets are not allowed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forced_conflict_is_kubes_409_for_the_object() {
    let server = start_with_widgets(TestServer::builder()).await;
    let api = widgets(&server, "default");
    let x = within(
        "create",
        api.create(&PostParams::default(), &new_widget("x", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    let id = server.faults().add(
        FaultRule::conflict()
            .verb("update")
            .resource("widgets")
            .times(1),
    );
    let err = api_error(within("replace", api.replace("x", &PostParams::default(), &x)).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(err.message, CONFLICT_X);
    let details = err.details.unwrap_or_else(|| panic!("409 without details"));
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("x", "example.com", "widgets")
    );
    assert_eq!(server.faults().fired(id), 1);
    // `times(1)`: the retry goes through, as a controller's retry would.
    within(
        "replace again",
        api.replace("x", &PostParams::default(), &x),
    )
    .await
    .unwrap_or_else(|e| panic!("the retry must succeed: {e}"));
    // Other verbs and resources were never affected.
    within("get", api.get("x"))
        .await
        .unwrap_or_else(|e| panic!("get: {e}"));
}

/// A kube-rs client without kube-rs's default retries of 429/503/504.
fn client_without_retries(server: &TestServer) -> kube::Client {
    let mut config = server
        .kube_config()
        .unwrap_or_else(|e| panic!("kube config: {e}"));
    config.default_retry = false;
    kube::Client::try_from(config).unwrap_or_else(|e| panic!("kube client: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_every_third_get_and_seeded_rate_are_deterministic() {
    let server = start_with_widgets(TestServer::builder()).await;
    let api = widgets(&server, "default");
    within(
        "create",
        api.create(&PostParams::default(), &new_widget("x", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    let every_third = server.faults().add(
        FaultRule::error(503)
            .verb("get")
            .resource("widgets")
            .every(3),
    );
    let raw: Api<Widget> = Api::namespaced_with(
        client_without_retries(&server),
        "default",
        &widget_resource(),
    );
    let mut codes = Vec::new();
    for _ in 0..6 {
        codes.push(match within("get", raw.get("x")).await {
            Ok(_) => 200,
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.reason, "ServiceUnavailable");
                assert_eq!(
                    s.message,
                    "the server is currently unable to handle the request"
                );
                s.code
            }
            Err(e) => panic!("get: {e}"),
        });
    }
    assert_eq!(codes, [200, 200, 503, 200, 200, 503]);
    // kube-rs's default client retries a 503: the next request of the schedule passes.
    for _ in 0..3 {
        within("get with retries", api.get("x"))
            .await
            .unwrap_or_else(|e| panic!("kube-rs retries 503: {e}"));
    }
    assert_eq!(server.faults().fired(every_third), 3);
    assert_eq!(server.faults().matched(every_third), 10);

    // A seeded rate draws the same schedule each time it is installed.
    let schedule = |seed: u64| {
        let server = &server;
        let raw = &raw;
        async move {
            server.faults().clear();
            server.faults().add(
                FaultRule::error(500)
                    .verb("get")
                    .resource("widgets")
                    .rate(0.5)
                    .seed(seed),
            );
            let mut failed = Vec::new();
            for _ in 0..16 {
                failed.push(within("get", raw.get("x")).await.is_err());
            }
            failed
        }
    };
    let first = schedule(7).await;
    assert_eq!(first, schedule(7).await);
    assert!(first.contains(&true) && first.contains(&false), "{first:?}");
    server.faults().clear();
    within("get", api.get("x"))
        .await
        .unwrap_or_else(|e| panic!("no faults after clear: {e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_carries_retry_after() {
    let server = start_with_widgets(TestServer::builder()).await;
    let throttle = server.faults().add(
        FaultRule::error(429)
            .verb("list")
            .resource("widgets.example.com")
            .retry_after(1)
            .times(2),
    );
    let request = || {
        http::Request::get("/apis/example.com/v1/namespaces/default/widgets")
            .body(kube::client::Body::empty())
            .unwrap_or_else(|e| panic!("request: {e}"))
    };
    let resp = within("list", client_without_retries(&server).send(request()))
        .await
        .unwrap_or_else(|e| panic!("send: {e}"));
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let body = within("body", resp.into_body().collect_bytes())
        .await
        .unwrap_or_else(|e| panic!("body: {e}"));
    let status: Value =
        serde_json::from_slice(&body).unwrap_or_else(|e| panic!("429 body is not JSON: {e}"));
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Too many requests, please try again later.",
               "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1}, "code": 429})
    );
    // kube-rs's default client waits Retry-After and tries again.
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    let started = Instant::now();
    let resp = within("list with retries", client.send(request()))
        .await
        .unwrap_or_else(|e| panic!("send: {e}"));
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.faults().fired(throttle), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_only_matching_requests() {
    let server = start_with_widgets(TestServer::builder()).await;
    let api = widgets(&server, "default");
    within(
        "create",
        api.create(&PostParams::default(), &new_widget("x", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    let delay = Duration::from_millis(400);
    let id = server
        .faults()
        .add(FaultRule::latency(delay).verb("get").resource("widgets"));
    let started = Instant::now();
    within("get", api.get("x"))
        .await
        .unwrap_or_else(|e| panic!("a delayed get still succeeds: {e}"));
    let took = started.elapsed();
    assert!(
        took >= delay,
        "get took {took:?}, less than the {delay:?} injected"
    );
    assert_eq!(server.faults().fired(id), 1);
    within("list", api.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert_eq!(
        server.faults().matched(id),
        1,
        "list must not match a get rule"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_converges_through_cut_watches_and_conflicts() {
    // Every widget watch ends after one event, and every other status write conflicts.
    let server = start_with_widgets(
        TestServer::builder().fault(
            FaultRule::conflict()
                .verb("patch")
                .resource("widgets/status")
                .every(2),
        ),
    )
    .await;
    let cut = server
        .faults()
        .add(FaultRule::watch_close_after_events(1).resource("widgets"));
    let ns = within("ns", server.namespace())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let api = widgets(&server, &ns);
    let _controller = spawn_controller(&server);
    for i in 0..5 {
        let name = format!("w{i}");
        within(
            "create",
            api.create(&PostParams::default(), &new_widget(&name, i)),
        )
        .await
        .unwrap_or_else(|e| panic!("create {name}: {e}"));
    }
    for i in 0..5 {
        wait_reconciled(&api, &format!("w{i}"), i).await;
    }
    assert!(
        server.faults().fired(cut) >= 2,
        "the watch was cut {} times",
        server.faults().fired(cut)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_reconnects_after_timed_cut() {
    let server = start_with_widgets(TestServer::builder()).await;
    let cut = server.faults().add(
        FaultRule::watch_close_after(Duration::from_millis(200))
            .verb("watch")
            .resource("widgets"),
    );
    let api = widgets(&server, "default");
    // The watcher runs on its own, as in a controller, forwarding what it sees.
    let (seen, mut events) = tokio::sync::mpsc::unbounded_channel::<String>();
    let stream = watcher::watcher(api.clone(), watcher::Config::default()).applied_objects();
    let watching = tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(item) = stream.next().await {
            if let Ok(w) = item {
                let _ = seen.send(w.metadata.name.unwrap_or_default());
            }
        }
    });
    within(
        "create a",
        api.create(&PostParams::default(), &new_widget("a", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    assert_eq!(within("event a", events.recv()).await.as_deref(), Some("a"));
    // Wait until the first watch was cut and a new one opened.
    eventually("a second watch", || async {
        (server.faults().fired(cut) >= 2).then_some(())
    })
    .await;
    within(
        "create b",
        api.create(&PostParams::default(), &new_widget("b", 1)),
    )
    .await
    .unwrap_or_else(|e| panic!("create: {e}"));
    within("event b", async {
        while let Some(name) = events.recv().await {
            if name == "b" {
                return;
            }
        }
        panic!("the watcher ended");
    })
    .await;
    watching.abort();
}

#[test]
fn fault_flag_of_the_binary() {
    let server = common::TestServer::start_with(&[
        "--fault",
        "verb=update,resource=widgets,error=409",
        "--fault",
        "verb=get,resource=widgets,name=slow,latency=300ms",
    ]);
    let http = server.http();
    let crd: Value =
        serde_norway::from_str(widget_controller::CRD).unwrap_or_else(|e| panic!("crd.yaml: {e}"));
    let r = http.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let r = http.wait_for_status(path, 200, Duration::from_secs(20));
    assert_eq!(r.status, 200, "{}", r.text());
    let x = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "x"}, "spec": {"color": "blue"}});
    let r = http.send_json("POST", path, &x);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = http.send_json("PUT", &format!("{path}/x"), &x);
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(
        r.json(),
        Some(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": CONFLICT_X, "reason": "Conflict",
                    "details": {"name": "x", "group": "example.com", "kind": "widgets"},
                    "code": 409})
        )
    );
    let started = Instant::now();
    let r = http.get(&format!("{path}/slow"));
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(started.elapsed() >= Duration::from_millis(300));
    let started = Instant::now();
    let r = http.get(&format!("{path}/x"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(started.elapsed() < Duration::from_millis(300));
}

#[test]
fn fault_flag_rejects_a_bad_spec() {
    let out = std::process::Command::new(common::server_binary())
        .args(["--port", "0", "--fault", "verb=update,error=700"])
        .output()
        .unwrap_or_else(|e| panic!("running the binary: {e}"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid value 'verb=update,error=700' for '--fault <SPEC>': error=\"700\": expected an HTTP code 400-599"),
        "{stderr}"
    );
}

#[test]
fn blocking_server_for_tests_without_tokio() {
    let builder = match std::env::var("TEST_BACKEND").as_deref() {
        Ok("etcd") => None,
        _ => Some(TestServer::builder()),
    };
    // The etcd variant is covered by the async tests; this one is about the runtime.
    let Some(builder) = builder else { return };
    let server = builder
        .start_blocking()
        .unwrap_or_else(|e| panic!("start_blocking: {e}"));
    server
        .block_on(server.load_yaml(&fixture_with_crd()))
        .unwrap_or_else(|e| panic!("load: {e}"));
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    let api: Api<Widget> = Api::namespaced_with(client, "team-a", &widget_resource());
    let w1 = server
        .block_on(api.get("w1"))
        .unwrap_or_else(|e| panic!("get: {e}"));
    assert_eq!(w1.spec.color, "red");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_to_ready_time() {
    let mut times = Vec::new();
    for _ in 0..15 {
        let started = Instant::now();
        let server = TestServer::start()
            .await
            .unwrap_or_else(|e| panic!("start: {e}"));
        times.push(started.elapsed());
        server.shutdown().await;
    }
    times.sort();
    let median = times[times.len() / 2];
    eprintln!(
        "harness start -> ready (embedded store): median {median:?}, min {:?}, max {:?}",
        times[0],
        times[times.len() - 1]
    );
    assert!(median < Duration::from_secs(2), "median start {median:?}");
}

/// A dynamic API of a built-in kind.
fn dynamic(client: &kube::Client, group: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    let api_version = if group.is_empty() {
        "v1".to_string()
    } else {
        format!("{group}/v1")
    };
    Api::all_with(
        client.clone(),
        &kube::api::ApiResource {
            group: group.into(),
            version: "v1".into(),
            api_version,
            kind: kind.into(),
            plural: plural.into(),
        },
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_puts_back_what_start_up_creates() {
    let server = start_with(TestServer::builder().config(|c| {
        c.auth.authorization_modes = vec![crd_apiserver::auth::authz::Mode::Rbac];
    }))
    .await;
    let client = server
        .client()
        .unwrap_or_else(|e| panic!("kube client: {e}"));
    within("reset", server.reset())
        .await
        .unwrap_or_else(|e| panic!("reset: {e}"));
    let names = |list: kube::core::ObjectList<DynamicObject>| -> Vec<String> {
        list.items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect()
    };
    let priority = dynamic(
        &client,
        "scheduling.k8s.io",
        "PriorityClass",
        "priorityclasses",
    );
    let classes = within("priority classes", priority.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        names(classes),
        ["system-cluster-critical", "system-node-critical"]
    );
    let services = dynamic(&client, "", "Service", "services");
    let kubernetes = within("kubernetes service", services.list(&ListParams::default()))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let kubernetes = &kubernetes.items[0];
    assert_eq!(kubernetes.metadata.name.as_deref(), Some("kubernetes"));
    assert_eq!(kubernetes.data["spec"]["clusterIP"], "10.0.0.1");
    let roles = dynamic(
        &client,
        "rbac.authorization.k8s.io",
        "ClusterRole",
        "clusterroles",
    );
    let role = within("cluster-admin", roles.get("cluster-admin"))
        .await
        .unwrap_or_else(|e| panic!("cluster-admin after reset: {e}"));
    assert_eq!(role.data["rules"][0]["verbs"], json!(["*"]));
    let api_services: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::api::ApiResource {
            group: "apiregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiregistration.k8s.io/v1".into(),
            kind: "APIService".into(),
            plural: "apiservices".into(),
        },
    );
    let apps = within("v1.apps", api_services.get("v1.apps"))
        .await
        .unwrap_or_else(|e| panic!("v1.apps after reset: {e}"));
    assert_eq!(apps.data["spec"]["groupPriorityMinimum"], 17800);
    // A Service created after the reset gets an address from the allocator again.
    let namespaced: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &kube::api::ApiResource {
            group: String::new(),
            version: "v1".into(),
            api_version: "v1".into(),
            kind: "Service".into(),
            plural: "services".into(),
        },
    );
    let svc: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}]},
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    let created = within(
        "create service",
        namespaced.create(&PostParams::default(), &svc),
    )
    .await
    .unwrap_or_else(|e| panic!("create after reset: {e}"));
    let ip = created.data["spec"]["clusterIP"]
        .as_str()
        .unwrap_or_default();
    assert!(ip.starts_with("10.0.0.") && ip != "10.0.0.1", "{ip}");
}
