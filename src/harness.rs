//! The test harness: an in-process crd-apiserver for integration tests of controllers
//! and clients, ready in milliseconds on a free loopback port.
//!
//! ```no_run
//! # async fn demo() -> Result<(), crd_apiserver::harness::Error> {
//! use crd_apiserver::harness::TestServer;
//! let server = TestServer::start().await?;
//! server.load_file("testdata/crds/widgets.yaml").await?; // CRDs wait until Established
//! let ns = server.isolated_namespace("widgets").await?;  // a fresh namespace per test
//! # #[cfg(feature = "kube")]
//! let client = server.client()?;                         // a kube::Client (feature `kube`)
//! // ... run the controller, assert on objects ...
//! server.reset().await?;                                 // objects gone, CRDs kept
//! # Ok(()) }
//! ```
//!
//! Everything is built on [`Server`]: the same request path, pipeline and storage as the
//! binary. [`TestServer::faults`] injects failures ([`crate::fault`]) and
//! [`TestServer::admission`] registers in-process admission hooks. Dropping a server
//! stops it; [`TestServer::shutdown`] waits for it.
//!
//! Many servers in one process share what their CRDs cost: each CRD is validated and
//! compiled, each manifest file parsed, once per process ([`cache_stats`]), and a
//! [`TestServerPool`] hands out fresh servers started ahead of the tests.

use crate::admission::Admission;
use crate::apiserver::ApiServer;
use crate::fault::{FaultRule, Faults};
use crate::rest::namespace::SYSTEM_NAMESPACES;
use crate::rest::ResourceKind;
use crate::server::{self, Config, Server, StartError};
use crate::status::Status;
use crate::storage::{ListOptions, StorageError};
use serde_json::{json, Value};
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// What went wrong in a harness call.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server did not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The harness's temp dir or kubeconfig could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The server rejected a request of the harness (kube's `Status`).
    #[error("{0}")]
    Api(#[from] Status),
    /// Storage failed while resetting.
    #[error("storage: {0}")]
    Storage(#[from] StorageError),
    /// The runtime of a blocking server could not be built.
    #[error("tokio runtime: {0}")]
    Runtime(std::io::Error),
    /// The kube client could not be built.
    #[cfg(feature = "kube")]
    #[error("kube client: {0}")]
    Client(String),
}

/// Options of a [`TestServer`]; start one with [`TestServerBuilder::start`].
#[derive(Clone, Debug)]
pub struct TestServerBuilder {
    config: Config,
    logs: bool,
}

impl Default for TestServerBuilder {
    fn default() -> Self {
        TestServerBuilder {
            config: Config {
                port: 0,
                ..Config::default()
            },
            logs: false,
        }
    }
}

impl TestServerBuilder {
    /// Store in etcd at these client URLs instead of the embedded store.
    pub fn etcd<I, S>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.etcd_servers = urls.into_iter().map(Into::into).collect();
        self
    }

    /// kube's admission plugins to turn off (`--disable-admission-plugins`), as
    /// envtest turns off `ServiceAccount`. Unknown names are ignored.
    pub fn disable_admission_plugins(mut self, names: &[&str]) -> Self {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let known: Vec<String> = names
            .into_iter()
            .filter(|n| apimachinery::admission_plugins::ALL_ORDERED.contains(&n.as_str()))
            .collect();
        if let Ok(on) = apimachinery::admission_plugins::Enabled::from_flags(&[], &known) {
            self.config.admission_plugins = on;
        }
        self
    }

    /// kube-apiserver's `--runtime-config` (`"api/all=true"`,
    /// `"networking.k8s.io/v1beta1=true"`, `"batch/v1/cronjobs=false"`): the built-in
    /// group/versions and resources served beyond or instead of kube's defaults. What
    /// kube refuses is refused with kube's message.
    pub fn runtime_config(
        mut self,
        values: &[&str],
    ) -> Result<Self, apimachinery::runtime_config::RuntimeConfigError> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        self.config.runtime_config =
            apimachinery::runtime_config::RuntimeConfig::from_flags(&values)?;
        Ok(self)
    }

    /// The opt-in cluster's controllers, as `--controllers` names them (`"*"`,
    /// `"deployment"`, `"-job"`; kube-controller-manager's names or aliases): they act
    /// on the server's objects as on a cluster. A name kube does not know is refused.
    pub fn controllers(
        mut self,
        names: &[&str],
    ) -> Result<Self, apimachinery::controller_names::UnknownControllers> {
        let names: Vec<String> = names.iter().map(|v| v.to_string()).collect();
        self.config.cluster.controllers =
            apimachinery::controller_names::Controllers::from_flags(&names)?;
        Ok(self)
    }

    /// Keep `n` simulated Ready Nodes, with a scheduler and kubelets that run pods
    /// without containers (as `--simulate-nodes`).
    pub fn simulate_nodes(mut self, n: u32) -> Self {
        self.config.cluster.simulated_nodes = n;
        self
    }

    /// Key prefix in storage (kube's `--etcd-prefix`; default `/registry`).
    pub fn etcd_prefix(mut self, prefix: &str) -> Self {
        self.config.etcd_prefix = prefix.to_string();
        self
    }

    /// Log what each pipeline stage changed on every write (`--log-pipeline`); also
    /// turns on [`TestServerBuilder::logs`].
    pub fn log_pipeline(mut self, on: bool) -> Self {
        self.config.log_pipeline = on;
        self.logs |= on;
        self
    }

    /// Send the server's logs to the test output (`CRD_APISERVER_LOG` sets the level;
    /// default `info`). Installs a global subscriber unless one is already set.
    pub fn logs(mut self, on: bool) -> Self {
        self.logs = on;
        self
    }

    /// Inject a fault from the start (more with [`TestServer::faults`]).
    pub fn fault(mut self, rule: FaultRule) -> Self {
        self.config.faults.push(rule);
        self
    }

    /// Apply the manifests of a directory at start-up (as `--load`).
    pub fn load_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config.load.push(dir.into());
        self
    }

    /// Listen on this port (default 0: a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Change any other setting of the server's [`Config`].
    pub fn config(mut self, change: impl FnOnce(&mut Config)) -> Self {
        change(&mut self.config);
        self
    }

    /// Start the server on the current tokio runtime; returns once it serves.
    pub async fn start(self) -> Result<TestServer, Error> {
        TestServer::adopt(self.start_server().await?)
    }

    /// The server alone: no temp dir, no kubeconfig written yet.
    async fn start_server(self) -> Result<Server, Error> {
        if self.logs {
            init_logs();
        }
        let mut config = self.config;
        config.kubeconfig_out = None;
        Ok(Server::start(config).await?)
    }

    /// Start the server on a runtime of its own, for `#[test]`s without tokio.
    pub fn start_blocking(self) -> Result<BlockingTestServer, Error> {
        let runtime = blocking_runtime()?;
        let server = runtime.block_on(self.start())?;
        Ok(BlockingTestServer {
            server: Some(server),
            runtime: Some(runtime),
        })
    }
}

/// Fresh servers started alike, for suites where every test has a server of its own.
///
/// Each [`TestServerPool::get`] hands out a new server (its own store, port, temp dir
/// and kubeconfig), never one handed out before. What the servers share is what costs
/// and never changes: the builder's `load_dir` manifests are parsed, and their CRDs
/// validated and compiled, once per process ([`cache_stats`]); and the pool keeps
/// [`TestServerPool::ahead`] servers started in the background (default 1), so a test
/// usually gets one at once. One pool per suite, in a `static`:
///
/// ```no_run
/// use crd_apiserver::harness::{TestServer, TestServerPool};
/// use std::sync::LazyLock;
///
/// static SERVERS: LazyLock<TestServerPool> =
///     LazyLock::new(|| TestServerPool::new(TestServer::builder().load_dir("deploy/crds")));
///
/// #[tokio::test]
/// async fn widget_gets_a_status() {
///     let server = SERVERS.get().await.unwrap(); // CRDs Established, nothing else
///     // ...
/// }
/// ```
///
/// With [`TestServerBuilder::etcd`] each server gets a key prefix of its own
/// (`<prefix>/pool-<pool>-<n>`), so servers on one etcd are isolated too.
pub struct TestServerPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    builder: TestServerBuilder,
    ahead: AtomicUsize,
    /// Tells this pool's etcd prefixes from other pools' (other runs on the same etcd).
    id: u32,
    /// Servers started so far (numbers their etcd prefixes).
    started: AtomicU64,
    state: std::sync::Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Started, not handed out yet (stopped when the pool goes: a dropped `Server` stops).
    ready: Vec<Server>,
    /// Background starts under way.
    starting: usize,
}

impl TestServerPool {
    /// A pool of servers started from `builder`; nothing starts before the first `get`.
    pub fn new(builder: TestServerBuilder) -> TestServerPool {
        TestServerPool {
            inner: Arc::new(PoolInner {
                builder,
                ahead: AtomicUsize::new(1),
                id: rand::random(),
                started: AtomicU64::new(0),
                state: Default::default(),
            }),
        }
    }

    /// Keep `n` servers started ahead of the tests asking for them (0: start each on
    /// demand). Every one is a running server: memory and a port each.
    pub fn ahead(self, n: usize) -> TestServerPool {
        self.inner.ahead.store(n, Ordering::Relaxed);
        self
    }

    /// A fresh server, started ahead or now; returns once it serves with the builder's
    /// CRDs Established. Then starts the next ones in the background.
    pub async fn get(&self) -> Result<TestServer, Error> {
        let ready = self.inner.lock().ready.pop();
        let server = match ready {
            Some(server) => server,
            None => self.inner.next_builder().start_server().await?,
        };
        PoolInner::refill(&self.inner);
        TestServer::adopt(server)
    }

    /// [`TestServerPool::get`] for a `#[test]` without tokio: the server with a
    /// runtime of its own, as [`TestServerBuilder::start_blocking`].
    pub fn get_blocking(&self) -> Result<BlockingTestServer, Error> {
        let runtime = blocking_runtime()?;
        let server = runtime.block_on(self.get())?;
        Ok(BlockingTestServer {
            server: Some(server),
            runtime: Some(runtime),
        })
    }
}

impl PoolInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The builder of the next server: on etcd, with a key prefix of its own.
    fn next_builder(&self) -> TestServerBuilder {
        let n = self.started.fetch_add(1, Ordering::Relaxed);
        let builder = self.builder.clone();
        if builder.config.etcd_servers.is_empty() {
            return builder;
        }
        let prefix = format!(
            "{}/pool-{:08x}-{n}",
            builder.config.etcd_prefix.trim_end_matches('/'),
            self.id
        );
        builder.etcd_prefix(&prefix)
    }

    /// Start servers in the background until `ahead` are ready or starting.
    fn refill(pool: &Arc<PoolInner>) {
        loop {
            {
                let mut state = pool.lock();
                if state.ready.len() + state.starting >= pool.ahead.load(Ordering::Relaxed) {
                    return;
                }
                state.starting += 1;
            }
            let task_pool = pool.clone();
            let spawned = server::spawn_on_server_runtime(async move {
                let started = task_pool.next_builder().start_server().await;
                let mut state = task_pool.lock();
                state.starting -= 1;
                match started {
                    Ok(server) => state.ready.push(server),
                    // `get` starts one itself next time, and reports why it fails.
                    Err(e) => tracing::warn!(error = %e, "test server pool: a start failed"),
                }
            });
            if spawned.is_err() {
                pool.lock().starting -= 1;
                return;
            }
        }
    }
}

/// What the process-wide caches behind fast starts have done, since the process began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// CRDs compiled (misses) and compilations reused (hits).
    pub compiled_crds: crate::registry::content_cache::CacheStats,
    /// CRD specs validated (misses) and validations reused (hits).
    pub validated_crds: crate::registry::content_cache::CacheStats,
    /// Manifest files parsed (misses) and parses reused (hits).
    pub manifests: crate::registry::content_cache::CacheStats,
}

/// The counters of the process-wide caches of compiled and validated CRDs and parsed
/// manifests: a server loading a CRD this process has seen before is a hit.
pub fn cache_stats() -> CacheStats {
    let crds = crate::registry::crd_cache::stats();
    CacheStats {
        compiled_crds: crds.compiled,
        validated_crds: crds.validated,
        manifests: server::manifests::stats(),
    }
}

/// A 2-thread runtime for a server of a test without tokio.
fn blocking_runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// Send logs to the test output (captured per test by libtest), once per process.
pub fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CRD_APISERVER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(filter)
        .try_init();
}

/// A private temp dir per server, removed when the server is dropped.
fn temp_dir() -> Result<PathBuf, Error> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "crd-apiserver-harness-{}-{}-{:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.display().to_string(),
        source,
    })?;
    Ok(dir)
}

/// An in-process crd-apiserver for one test: stopped when dropped.
pub struct TestServer {
    server: Option<Server>,
    dir: PathBuf,
    kubeconfig_path: PathBuf,
    kubeconfig: String,
}

impl TestServer {
    /// A started server as a test's: its private temp dir, its kubeconfig written there.
    fn adopt(server: Server) -> Result<TestServer, Error> {
        let dir = match temp_dir() {
            Ok(dir) => dir,
            Err(e) => {
                server.stop();
                return Err(e);
            }
        };
        let kubeconfig_path = dir.join("kubeconfig");
        let kubeconfig = server.kubeconfig();
        // It may hold the admin token: owner-only, like a key.
        if let Err(source) = crate::tls::write_private(&kubeconfig_path, &kubeconfig) {
            server.stop();
            let _ = std::fs::remove_dir_all(&dir);
            return Err(Error::Io {
                path: kubeconfig_path.display().to_string(),
                source,
            });
        }
        Ok(TestServer {
            server: Some(server),
            dir,
            kubeconfig_path,
            kubeconfig,
        })
    }

    /// Start a server with the defaults: embedded store, a free port on 127.0.0.1.
    pub async fn start() -> Result<TestServer, Error> {
        Self::builder().start().await
    }

    /// Options for a server (etcd, faults, logs, fixtures).
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder::default()
    }

    /// [`TestServer::start`] on a runtime of its own, for `#[test]`s without tokio.
    pub fn start_blocking() -> Result<BlockingTestServer, Error> {
        Self::builder().start_blocking()
    }

    /// The running server.
    pub fn server(&self) -> &Server {
        // `server` is only `None` inside `shutdown` and `drop`, which consume it.
        match &self.server {
            Some(s) => s,
            None => unreachable!("TestServer used after shutdown"),
        }
    }

    /// The shared API state (storage, catalog, kinds) for checks below the HTTP layer.
    pub fn api(&self) -> &Arc<ApiServer> {
        self.server().api()
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.server().addr()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server().url()
    }

    /// The kubeconfig (YAML) pointing at this server, namespace `default`.
    pub fn kubeconfig(&self) -> &str {
        &self.kubeconfig
    }

    /// Path of the written kubeconfig (`kubectl --kubeconfig`, `KUBECONFIG=`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// This server's private temp dir (removed on drop), for files a test writes.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A kube-rs client for this server, default namespace `default`. Call it on a
    /// tokio runtime (the client's connection pool runs there). Like every kube-rs
    /// client it retries 429, 503 and 504 answers (honouring `Retry-After`); build one
    /// from [`TestServer::kube_config`] with `default_retry = false` to see them.
    #[cfg(feature = "kube")]
    pub fn client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.kube_config()?).map_err(|e| Error::Client(e.to_string()))
    }

    /// The kube-rs `Config` [`TestServer::client`] uses, to adjust before building one.
    #[cfg(feature = "kube")]
    pub fn kube_config(&self) -> Result<kube::Config, Error> {
        let uri: http::Uri = self
            .url()
            .parse()
            .map_err(|e: http::uri::InvalidUri| Error::Client(e.to_string()))?;
        Ok(kube::Config::new(uri))
    }

    /// The in-process admission hooks of this server.
    pub fn admission(&self) -> &Admission {
        &self.api().admission
    }

    /// The clock the opt-in cluster's timers read (CronJob schedules, Job deadlines
    /// and TTLs, `minReadySeconds`): `advance` it to fire what would take hours.
    pub fn clock(&self) -> &crate::apiserver::clock::Clock {
        &self.api().clock
    }

    /// The injected faults of this server: `add`, `remove`, `clear`, `fired`.
    pub fn faults(&self) -> &Faults {
        self.server().faults()
    }

    /// Apply every manifest of a YAML/JSON file (multi-document), or of every
    /// `*.yaml`/`*.yml`/`*.json` file of a directory. CRDs go first and are
    /// Established before the rest; existing objects are replaced.
    pub async fn load_file(&self, path: impl AsRef<Path>) -> Result<Vec<Value>, Error> {
        let docs = server::read_manifests(path.as_ref())?;
        Ok(server::apply_manifests(self.api(), docs).await?)
    }

    /// Apply the manifests of a YAML (or JSON) text, as [`TestServer::load_file`].
    pub async fn load_yaml(&self, yaml: &str) -> Result<Vec<Value>, Error> {
        let docs =
            server::manifests::decode(yaml.as_bytes(), true).map_err(|e| StartError::Load {
                path: "<yaml>".into(),
                message: e.to_string(),
            })?;
        self.load_documents(docs).await
    }

    /// Apply one object (a `List` is applied item by item); returns it as stored.
    pub async fn load(&self, object: Value) -> Result<Value, Error> {
        let docs =
            crate::codec::decode_manifests(object.to_string().as_bytes(), false).map_err(|e| {
                StartError::Load {
                    path: "<object>".into(),
                    message: e.to_string(),
                }
            })?;
        let mut written = self.load_documents(docs).await?;
        Ok(written.pop().unwrap_or(Value::Null))
    }

    async fn load_documents(&self, docs: Vec<Value>) -> Result<Vec<Value>, Error> {
        let docs = docs
            .into_iter()
            .enumerate()
            .map(|(i, d)| (format!("document {}", i + 1), d))
            .collect();
        Ok(server::apply_manifests(self.api(), docs).await?)
    }

    /// Create a namespace with a unique name (`test-xxxxxxxx`) and return its name.
    pub async fn namespace(&self) -> Result<String, Error> {
        self.isolated_namespace("test").await
    }

    /// Create a namespace named `{prefix}-xxxxxxxx` (random hex) and return its name.
    pub async fn isolated_namespace(&self, prefix: &str) -> Result<String, Error> {
        let name = format!("{prefix}-{:08x}", rand::random::<u32>());
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        server::apply_manifest(self.api(), ns).await?;
        Ok(name)
    }

    /// Delete every object except CRDs and the system namespaces (`default`,
    /// `kube-system`, `kube-public`): custom resources, other namespaces, webhook
    /// configurations, everything in the system namespaces. Immediate, finalizers
    /// notwithstanding; watchers see the deletions. Hooks and faults stay. What the
    /// server creates at start (the `kubernetes` Service and its ServiceCIDR, the
    /// system PriorityClasses, the local APIServices, RBAC's bootstrap roles) is
    /// created again.
    pub async fn reset(&self) -> Result<(), Error> {
        self.wipe(false).await
    }

    /// [`TestServer::reset`], and the CRDs too: the server is as freshly started.
    pub async fn reset_all(&self) -> Result<(), Error> {
        self.wipe(true).await
    }

    async fn wipe(&self, crds_too: bool) -> Result<(), Error> {
        let api = self.api();
        let storage = &api.store.storage;
        let root = format!("{}/", api.options.prefix);
        let crd_prefix = api.crds.descriptor().list_prefix("");
        let kept: Vec<String> = SYSTEM_NAMESPACES
            .iter()
            .map(|ns| api.namespaces.descriptor().key("", ns))
            .collect();
        let all = storage.list(&root, &ListOptions::default()).await?;
        let mut crds = Vec::new();
        for kv in all.items {
            if kv.key.starts_with(&crd_prefix) {
                crds.push(kv);
            } else if !kept.contains(&kv.key) {
                let deleted_at = delete_key(storage.as_ref(), &kv.key).await?;
                api.admission
                    .builtin_deleted(&kv.key, deleted_at.unwrap_or(kv.mod_revision));
            }
        }
        if crds_too {
            for kv in crds {
                // Out of the catalog at once (at the delete's revision), not when the
                // follower sees the delete: the next request must find it gone.
                let deleted_at = delete_key(storage.as_ref(), &kv.key).await?;
                let name = kv.key.rsplit('/').next().unwrap_or_default();
                api.catalog
                    .remove(name, deleted_at.unwrap_or(kv.mod_revision + 1));
            }
        }
        api.restore_bootstrap_objects().await?;
        Ok(())
    }

    fn snapshots(&self) -> Result<Arc<crate::snapshots::Snapshots>, Error> {
        self.api()
            .snapshots
            .get()
            .cloned()
            .ok_or_else(|| Error::Api(crate::snapshots::SnapshotError::NotEmbedded.into()))
    }

    /// Freeze the server's current state (objects, CRDs, RBAC, admission
    /// configuration) as the snapshot `name`; costs no copy. Embedded store only.
    pub fn snapshot(&self, name: &str) -> Result<crate::storage::Revision, Error> {
        Ok(self.snapshots()?.take(name).map_err(Status::from)?)
    }

    /// Put the server back to the snapshot `name` in place: the next request sees
    /// exactly its objects, CRDs and RBAC, at resourceVersions newer than any handed
    /// out; open watches end with 410. Costs what changed since the snapshot.
    pub fn restore(&self, name: &str) -> Result<crate::snapshots::Restored, Error> {
        let api = self.api();
        let restored = self
            .snapshots()?
            .restore(name, |change| api.written_behind(change));
        Ok(restored.map_err(Status::from)?)
    }

    /// A new server (own port, temp dir and kubeconfig) started from the snapshot
    /// `name`: writes to either are invisible to the other.
    pub async fn fork(&self, name: &str) -> Result<TestServer, Error> {
        let forked = self
            .snapshots()?
            .start_fork(name)
            .await
            .map_err(Status::from)?;
        match forked.into_any().downcast::<Server>() {
            Ok(server) => TestServer::adopt(*server),
            Err(_) => Err(Error::Api(Status::internal("a fork is not a Server"))),
        }
    }

    /// Stop the server and wait until it has (open requests finish, watches end).
    pub async fn shutdown(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

/// Delete a key; one already gone is fine. The revision of the delete, if it did.
async fn delete_key(
    storage: &dyn crate::storage::Storage,
    key: &str,
) -> Result<Option<i64>, Error> {
    match storage.delete(key, None).await {
        Ok(kv) => Ok(Some(kv.mod_revision)),
        Err(StorageError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.stop();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A [`TestServer`] with a tokio runtime of its own, for tests without `#[tokio::test]`:
/// run the async calls with [`BlockingTestServer::block_on`].
pub struct BlockingTestServer {
    server: Option<TestServer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BlockingTestServer {
    /// Run a future on the server's runtime: `s.block_on(s.load_yaml(CRD))`.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        match &self.runtime {
            Some(rt) => rt.block_on(future),
            None => unreachable!("runtime is only taken on drop"),
        }
    }

    /// A kube-rs client bound to the server's runtime.
    #[cfg(feature = "kube")]
    pub fn client(&self) -> Result<kube::Client, Error> {
        let _entered = self.runtime.as_ref().map(|rt| rt.enter());
        std::ops::Deref::deref(self).client()
    }
}

impl std::ops::Deref for BlockingTestServer {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        match &self.server {
            Some(s) => s,
            None => unreachable!("server is only taken on drop"),
        }
    }
}

impl Drop for BlockingTestServer {
    fn drop(&mut self) {
        if let (Some(server), Some(runtime)) = (self.server.take(), self.runtime.take()) {
            runtime.block_on(server.shutdown());
            runtime.shutdown_background();
        }
    }
}
