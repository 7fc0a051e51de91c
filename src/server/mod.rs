//! Running a server: bind, serve HTTP, load fixtures, write a kubeconfig, shut down.

pub mod gate;
pub mod manifests;

use crate::apiserver::{ApiOptions, ApiServer};
use crate::fault::{FaultRule, Faults};
use crate::http::response::{self, Body};
use crate::metrics::Metrics;
use crate::rest::{object, WriteOptions};
use crate::status::Status;
use crate::storage::etcd::{EtcdConfig, EtcdStorage, EtcdTls};
use crate::storage::{memory::MemoryStorage, Storage};
use futures::FutureExt;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Server configuration (the command line maps onto this one to one).
#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on.
    pub bind_address: IpAddr,
    /// Port (0 = pick a free one).
    pub port: u16,
    /// Write a kubeconfig for this server here.
    pub kubeconfig_out: Option<PathBuf>,
    /// Directories of manifests applied at start-up (CRDs first).
    pub load: Vec<PathBuf>,
    /// etcd endpoints; empty = the embedded store.
    pub etcd_servers: Vec<String>,
    /// Key prefix in storage.
    pub etcd_prefix: String,
    /// Log every write's pipeline trace.
    pub log_pipeline: bool,
    /// etcd TLS: CA bundle (kube's `--etcd-cafile`).
    pub etcd_cafile: Option<PathBuf>,
    /// etcd TLS: client certificate (`--etcd-certfile`).
    pub etcd_certfile: Option<PathBuf>,
    /// etcd TLS: client key (`--etcd-keyfile`).
    pub etcd_keyfile: Option<PathBuf>,
    /// How often old etcd revisions are compacted (`--etcd-compaction-interval`; 0 = never).
    pub etcd_compaction_interval: std::time::Duration,
    /// Faults injected from the start (`--fault`); more can be added while running.
    pub faults: Vec<FaultRule>,
    /// Where webhook Services are reached (`--webhook-service`).
    pub webhook_services: Vec<crate::webhook::client::ServiceMapping>,
    /// `--kubeconfig`: the core apiserver whose namespaces and admission configuration
    /// this server follows (an aggregated server's).
    pub core_kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP on `port` (off when only `--secure-port` is asked for).
    pub serve_http: bool,
    /// Serve plain HTTP on an address other than loopback
    /// (`--insecure-allow-remote-http`).
    pub insecure_allow_remote_http: bool,
    /// Serve HTTPS (`--secure-port` and the TLS flags).
    pub secure: Option<crate::tls::SecureServing>,
    /// Authentication and authorization.
    pub auth: crate::auth::AuthConfig,
    /// Time limit of non-long-running requests (`--request-timeout`).
    pub request_timeout: std::time::Duration,
    /// How long Events live after their last write (`--event-ttl`).
    pub event_ttl: std::time::Duration,
    /// Revisions the embedded store keeps for watches and reads at a resourceVersion
    /// (`--watch-history`); older ones are 410 Expired.
    pub watch_history: usize,
    /// Bytes of schema JSON whose compiled schemas the process keeps
    /// (`--compiled-schemas-budget`; see `apimachinery::crd::on_demand`). Process-wide:
    /// the last server started sets it.
    pub compiled_schemas_budget: usize,
    /// Where Services' cluster IPs come from (`--service-cluster-ip-range`).
    pub service_cluster_ip_range: String,
    /// Where Services' node ports come from (`--service-node-port-range`).
    pub service_node_port_range: String,
    /// kube's admission plugins on (`--enable-admission-plugins`,
    /// `--disable-admission-plugins`; default: kube's).
    pub admission_plugins: apimachinery::admission_plugins::Enabled,
    /// `--allow-privileged` (kube's default: false; envtest passes true).
    pub allow_privileged: bool,
    /// The opt-in cluster (`--controllers`, `--simulate-nodes`): none by default.
    pub cluster: crate::cluster::ClusterOptions,
    /// `--runtime-config`: the built-in group/versions and resources switched on or off.
    pub runtime_config: apimachinery::runtime_config::RuntimeConfig,
    /// `--advertise-address`: the address `/api` discovery and the `kubernetes`
    /// Service's endpoints name (none: the address served on).
    pub advertise_address: Option<IpAddr>,
    /// `--max-requests-inflight` (kube's default 400; 0: no limit).
    pub max_requests_inflight: usize,
    /// `--max-mutating-requests-inflight` (kube's default 200; 0: no limit).
    pub max_mutating_requests_inflight: usize,
    /// `--proxy-client-cert-file`: the client certificate presented to APIService backends.
    pub proxy_client_cert_file: Option<PathBuf>,
    /// `--proxy-client-key-file`: its key.
    pub proxy_client_key_file: Option<PathBuf>,
    /// `--enable-aggregator-routing`: reach APIService backends at an endpoint of their
    /// Service's EndpointSlices rather than its cluster IP.
    pub enable_aggregator_routing: bool,
    /// `--snapshot-in`: start from this snapshot file (embedded store only), kept as
    /// the snapshot `initial`.
    pub snapshot_in: Option<PathBuf>,
    /// `--snapshot-out`: once started (and `--load` applied), write a snapshot file.
    pub snapshot_out: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
            kubeconfig_out: None,
            load: Vec::new(),
            snapshot_in: None,
            snapshot_out: None,
            etcd_servers: Vec::new(),
            etcd_prefix: "/registry".into(),
            log_pipeline: false,
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            etcd_compaction_interval: std::time::Duration::from_secs(300),
            faults: Vec::new(),
            webhook_services: Vec::new(),
            core_kubeconfig: None,
            serve_http: true,
            insecure_allow_remote_http: false,
            secure: None,
            auth: crate::auth::AuthConfig::default(),
            request_timeout: crate::http::DEFAULT_REQUEST_TIMEOUT,
            event_ttl: crate::controllers::event_ttl::DEFAULT_TTL,
            watch_history: crate::storage::memory::DEFAULT_HISTORY,
            compiled_schemas_budget: apimachinery::crd::on_demand::DEFAULT_BUDGET,
            service_cluster_ip_range: crate::service_alloc::DEFAULT_SERVICE_CIDR.into(),
            service_node_port_range: crate::service_alloc::DEFAULT_NODE_PORT_RANGE.into(),
            admission_plugins: Default::default(),
            allow_privileged: false,
            runtime_config: Default::default(),
            cluster: Default::default(),
            advertise_address: None,
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            proxy_client_cert_file: None,
            proxy_client_key_file: None,
            enable_aggregator_routing: false,
        }
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Binding the port failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// Storage could not be set up.
    #[error("storage: {0}")]
    Storage(String),
    /// A `--load` manifest was invalid or rejected.
    #[error("loading {path}: {message}")]
    Load {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// What is served and where refuses to be served that way.
    #[error("{0}")]
    Security(String),
    /// Authentication or authorization flags are unusable.
    #[error(transparent)]
    Auth(#[from] crate::auth::AuthConfigError),
    /// The serving certificate flags are unusable.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The aggregator's flags are unusable.
    #[error(transparent)]
    Aggregator(#[from] crate::aggregator::AggregatorError),
    /// The runtime servers run on could not be built.
    #[error("runtime: {0}")]
    Runtime(String),
    /// A snapshot file could not be read or written, or needs the embedded store.
    #[error("snapshot {path}: {message}")]
    Snapshot {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The kubeconfig could not be written.
    #[error("writing kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    /// The plain-HTTP address when HTTPS is the primary one.
    http_addr: Option<SocketAddr>,
    /// `addr` serves HTTPS; the PEM of its CA when known (for the kubeconfig).
    tls: Option<Option<String>>,
    /// The admin bearer token the kubeconfig carries over HTTPS.
    admin_token: Option<String>,
    api: Arc<ApiServer>,
    metrics: Arc<Metrics>,
    faults: Faults,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// Stack of the threads requests run on. Objects may nest 10,000 levels (kube's
/// limit), and every stage walks them recursively (decode, prune, default, validate,
/// managedFields, serialization, drop): in debug builds a level costs up to ~3 KiB.
/// Only the pages a request touches are ever committed.
const SERVER_THREAD_STACK: usize = 128 * 1024 * 1024;

/// The runtime every server of this process runs on (requests, watches, controllers):
/// its threads have [`SERVER_THREAD_STACK`], whatever runtime started the server.
fn server_runtime() -> Result<&'static tokio::runtime::Runtime, StartError> {
    static RUNTIME: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> =
        std::sync::OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("crd-apiserver")
                .thread_stack_size(SERVER_THREAD_STACK)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| StartError::Runtime(e.clone()))
}

/// Spawn `task` on the runtime every server runs on, where it outlives the runtime of
/// the caller (a test's): how the harness starts servers in the background.
pub fn spawn_on_server_runtime(
    task: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    server_runtime()?.spawn(task);
    Ok(())
}

/// Run `task` on the [`server_runtime`], so that everything it spawns runs there too.
async fn on_server_runtime<T: Send + 'static>(
    task: impl std::future::Future<Output = Result<T, StartError>> + Send + 'static,
) -> Result<T, StartError> {
    server_runtime()?
        .spawn(task)
        .await
        .map_err(|e| StartError::Runtime(format!("server start-up failed: {e}")))?
}

impl Server {
    /// Start a server; returns once it accepts requests. The server runs on a runtime
    /// of this process's own (see [`server_runtime`]), whatever runtime calls this.
    pub async fn start(config: Config) -> Result<Server, StartError> {
        on_server_runtime(Self::start_here(config)).await
    }

    async fn start_here(config: Config) -> Result<Server, StartError> {
        if config.etcd_servers.is_empty() {
            return Self::start_embedded(config).await;
        }
        if let Some(path) = config.snapshot_in.as_ref().or(config.snapshot_out.as_ref()) {
            let message = crate::snapshots::SnapshotError::NotEmbedded.to_string();
            return Err(snapshot_error(path, message));
        }
        let mut etcd_config = EtcdConfig::new(config.etcd_servers.clone());
        if config.etcd_cafile.is_some()
            || config.etcd_certfile.is_some()
            || config.etcd_keyfile.is_some()
        {
            etcd_config.tls = Some(EtcdTls {
                ca_file: config.etcd_cafile.clone(),
                cert_file: config.etcd_certfile.clone(),
                key_file: config.etcd_keyfile.clone(),
            });
        }
        let etcd = EtcdStorage::connect(etcd_config)
            .await
            .map_err(|e| StartError::Storage(e.to_string()))?;
        if !config.etcd_compaction_interval.is_zero() {
            tokio::spawn(etcd.clone().run_compactor(config.etcd_compaction_interval));
        }
        Self::start_over(config, Arc::new(etcd), None).await
    }

    /// A server on the embedded store, from `--snapshot-in` when given (kept as the
    /// snapshot `initial`), writing `--snapshot-out` once started.
    async fn start_embedded(config: Config) -> Result<Server, StartError> {
        let (memory, initial) = match &config.snapshot_in {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| snapshot_error(path, e.to_string()))?;
                let (snapshot, written_at) = crate::storage::memory::Snapshot::decode(&bytes)
                    .map_err(|e| snapshot_error(path, e))?;
                // Above every revision the server that wrote it could have handed out
                // since (fewer than one write a microsecond), so resourceVersions never
                // go back across the restart.
                let since = (unix_micros() - written_at).max(0);
                let floor = snapshot.revision().saturating_add(since);
                (
                    MemoryStorage::from_snapshot(&snapshot, floor),
                    Some(snapshot),
                )
            }
            None => (MemoryStorage::new(), None),
        };
        let memory = memory.with_history(config.watch_history);
        let storage: Arc<dyn Storage> = Arc::new(memory.clone());
        let server = Self::start_over(config.clone(), storage, Some(memory.clone())).await?;
        if let (Some(snapshot), Some(snapshots)) = (initial, server.api.snapshots.get()) {
            let _ = snapshots.insert("initial", snapshot);
        }
        if let Some(path) = &config.snapshot_out {
            let bytes = memory.snapshot().encode(unix_micros());
            crate::tls::write_private(path, &bytes)
                .map_err(|e| snapshot_error(path, e.to_string()))?;
        }
        Ok(server)
    }

    /// Start a server over a given storage backend (on the server runtime, as
    /// [`Server::start`]).
    pub async fn start_with_storage(
        config: Config,
        storage: Arc<dyn Storage>,
    ) -> Result<Server, StartError> {
        on_server_runtime(Self::start_over(config, storage, None)).await
    }

    /// Starts a server over `storage`; `memory` is the same store when it is the
    /// embedded one (then the server can take snapshots of it and fork).
    fn start_over(
        config: Config,
        storage: Arc<dyn Storage>,
        memory: Option<MemoryStorage>,
    ) -> futures::future::BoxFuture<'static, Result<Server, StartError>> {
        Box::pin(Self::start_with_storage_here(config, storage, memory))
    }

    async fn start_with_storage_here(
        config: Config,
        storage: Arc<dyn Storage>,
        memory: Option<MemoryStorage>,
    ) -> Result<Server, StartError> {
        apimachinery::crd::on_demand::set_budget(config.compiled_schemas_budget);
        let listeners = Listeners::bind(&config).await?;
        let addr = listeners.primary_addr();
        let advertised =
            SocketAddr::new(config.advertise_address.unwrap_or(addr.ip()), addr.port());
        config.auth.check_safe()?;
        let mut authenticator = config.auth.authenticator().await?;
        let delegated_authorizer = config.auth.delegated_authorizer()?;
        let published_trust = config.auth.published_trust()?;
        if listeners.https.is_some() {
            // kubectl over HTTPS needs a credential: the kubeconfig carries this one.
            authenticator.admin_token = Some(uuid::Uuid::new_v4().simple().to_string());
        }
        let admin_token = authenticator.admin_token.clone();
        let sa_tokens = Arc::new(config.auth.service_account_tokens()?);
        let secure = match (&config.secure, &listeners.https) {
            (Some(serving), Some(_)) => {
                let cert = serving.serving_cert(config.bind_address)?;
                let tls_config =
                    crate::tls::server_config(&cert, authenticator.client_ca_subjects())?;
                Some((tokio_rustls::TlsAcceptor::from(tls_config), cert.ca_pem))
            }
            _ => None,
        };
        let options = ApiOptions {
            prefix: config.etcd_prefix.trim_end_matches('/').to_string(),
            log_pipeline: config.log_pipeline,
            advertise_address: advertised.to_string(),
            authorization_modes: config.auth.authorization_modes.clone(),
            service_account_tokens: Some(sa_tokens),
            service_cluster_ip_range: config.service_cluster_ip_range.clone(),
            service_node_port_range: config.service_node_port_range.clone(),
            kubernetes_endpoint: Some(advertised),
            admission_plugins: config.admission_plugins.clone(),
            allow_privileged: config.allow_privileged,
            served: crate::registry::builtin::Served::new(&config.runtime_config),
            delegated_authorizer,
            published_trust,
            token_file: authenticator.tokens.clone(),
            core: match &config.core_kubeconfig {
                Some(path) => Some(
                    crate::remote::Kubeconfig::load(path)
                        .and_then(|k| crate::remote::Client::new(&k))
                        .map_err(crate::auth::AuthConfigError::from)?,
                ),
                None => None,
            },
            aggregator: crate::aggregator::AggregatorOptions::load(
                config.proxy_client_cert_file.as_deref(),
                config.proxy_client_key_file.as_deref(),
                config.enable_aggregator_routing,
            )?,
        };
        // Every storage call is timed; object counts read the backend itself.
        let metrics = Arc::new(Metrics::new());
        let raw_storage = storage.clone();
        // Watches of one prefix share one backend watch (`storage::watch_cache`).
        let cache = Arc::new(crate::storage::watch_cache::WatchCache::new(storage));
        let snapshots = Arc::new(crate::snapshots::Snapshots::new(memory, cache.clone()));
        let storage: Arc<dyn Storage> = cache;
        let storage = metrics.instrument_storage(storage, &options.prefix);
        let api = ApiServer::start(storage, options)
            .await
            .map_err(|s| StartError::Storage(s.message))?;
        snapshots.set_forker(forker(&config));
        let _ = api.snapshots.set(snapshots);
        authenticator.service_accounts = api.token_authenticator();
        let gate = Arc::new(gate::Gate {
            authenticator,
            authorizer: api.authorizer.clone(),
            request_timeout: config.request_timeout,
            plain_http_loopback_hosts_only: !config.insecure_allow_remote_http,
            in_flight: gate::InFlight::new(
                config.max_requests_inflight,
                config.max_mutating_requests_inflight,
            ),
        });
        for m in &config.webhook_services {
            api.admission
                .resolve_service(&m.namespace, &m.name, m.port, &m.address);
        }
        for dir in &config.load {
            load_dir(&api, dir).await?;
        }
        let faults = Faults::new();
        for rule in &config.faults {
            faults.add(rule.clone());
        }
        let (stop, stop_rx) = watch::channel(false);
        crate::controllers::start(&api, config.event_ttl, stop_rx.clone());
        let root_ca = secure.as_ref().and_then(|(_, ca)| ca.clone());
        crate::cluster::start(&api, &config.cluster, root_ca, stop_rx.clone());
        let served = Served {
            metrics: metrics.clone(),
            storage: raw_storage,
            faults: faults.clone(),
            gate,
        };
        let http_addr = listeners.http_addr();
        let (acceptor, ca_pem) = match secure {
            Some((acceptor, ca)) => (Some(acceptor), Some(ca)),
            None => (None, None),
        };
        let task = tokio::spawn(listeners.serve(api.clone(), served, acceptor, stop_rx));
        let server = Server {
            addr,
            http_addr: if ca_pem.is_some() { http_addr } else { None },
            tls: ca_pem,
            admin_token,
            api,
            metrics,
            faults,
            stop,
            task,
        };
        if let Some(path) = &config.kubeconfig_out {
            // It may hold the admin token: owner-only, like a key.
            crate::tls::write_private(path, server.kubeconfig()).map_err(|source| {
                StartError::Kubeconfig {
                    path: path.display().to_string(),
                    source,
                }
            })?;
        }
        Ok(server)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://host:port` when serving HTTPS, else `http://host:port`.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// `http://host:port` of the plain-HTTP port served beside HTTPS, if any.
    pub fn http_url(&self) -> Option<String> {
        self.http_addr.map(|a| format!("http://{a}"))
    }

    /// The shared API state (for in-process harnesses).
    pub fn api(&self) -> &Arc<ApiServer> {
        &self.api
    }

    /// The injected faults (`--fault`): add or clear rules while the server runs.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }

    /// Begin the shutdown [`Server::shutdown`] awaits, without waiting (for `Drop`).
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// The server's metrics (what `/metrics` serves).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// A kubeconfig pointing at this server (namespace `default`); over HTTPS with the
    /// serving CA as `certificate-authority-data` when known and the admin token.
    pub fn kubeconfig(&self) -> String {
        let ca = match &self.tls {
            Some(Some(pem)) => {
                use base64::Engine;
                format!(
                    "\n    certificate-authority-data: {}",
                    base64::engine::general_purpose::STANDARD.encode(pem)
                )
            }
            _ => String::new(),
        };
        let user = match &self.admin_token {
            Some(token) => format!("\n    token: {token}"),
            None => " {}".to_string(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: crd-apiserver\n  cluster:\n    server: {}{ca}\ncontexts:\n- name: crd-apiserver\n  context:\n    cluster: crd-apiserver\n    user: crd-apiserver\n    namespace: default\ncurrent-context: crd-apiserver\nusers:\n- name: crd-apiserver\n  user:{user}\n",
            self.url()
        )
    }

    /// Stop accepting, let open requests finish (watches are cut), and return.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

/// What the request layer needs besides the API state: the metrics, and the unmetered
/// backend `/metrics` counts objects in.
#[derive(Clone)]
struct Served {
    metrics: Arc<Metrics>,
    storage: Arc<dyn Storage>,
    faults: Faults,
    /// Authentication, authorization and the request timeout.
    gate: Arc<gate::Gate>,
}

/// `/metrics`: the Prometheus text exposition.
async fn metrics_response(api: &ApiServer, served: &Served) -> http::Response<Body> {
    let text = served.metrics.render(api, served.storage.as_ref()).await;
    let mut resp = http::Response::new(response::full(text));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
    );
    resp
}

/// The bound ports: plain HTTP and/or HTTPS.
struct Listeners {
    http: Option<(TcpListener, SocketAddr)>,
    https: Option<(TcpListener, SocketAddr)>,
}

impl Listeners {
    /// Bind what the configuration asks for; plain HTTP only on loopback unless allowed.
    async fn bind(config: &Config) -> Result<Listeners, StartError> {
        let bind = |port: u16| async move {
            let want = SocketAddr::new(config.bind_address, port);
            let listener = TcpListener::bind(want)
                .await
                .map_err(|source| StartError::Bind { addr: want, source })?;
            let addr = listener
                .local_addr()
                .map_err(|source| StartError::Bind { addr: want, source })?;
            Ok::<_, StartError>((listener, addr))
        };
        if config.serve_http
            && !config.bind_address.is_loopback()
            && !config.insecure_allow_remote_http
        {
            return Err(StartError::Security(format!(
                "refusing to serve plain HTTP on {}: it is not a loopback address, and plain HTTP is unencrypted and lets requests without credentials act as a superuser; serve HTTPS with --secure-port (without --port), or pass --insecure-allow-remote-http",
                SocketAddr::new(config.bind_address, config.port)
            )));
        }
        if !config.serve_http && config.secure.is_none() {
            return Err(StartError::Security(
                "nothing to serve: give --port or --secure-port".into(),
            ));
        }
        let https = match &config.secure {
            Some(s) => Some(bind(s.port).await?),
            None => None,
        };
        let http = if config.serve_http {
            Some(bind(config.port).await?)
        } else {
            None
        };
        Ok(Listeners { http, https })
    }

    /// HTTPS when served, else plain HTTP.
    fn primary_addr(&self) -> SocketAddr {
        match (&self.https, &self.http) {
            (Some((_, a)), _) | (None, Some((_, a))) => *a,
            // `bind` refuses to serve nothing.
            (None, None) => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        }
    }

    fn http_addr(&self) -> Option<SocketAddr> {
        self.http.as_ref().map(|(_, a)| *a)
    }

    /// Accept on every port until `stop`.
    async fn serve(
        self,
        api: Arc<ApiServer>,
        served: Served,
        tls: Option<tokio_rustls::TlsAcceptor>,
        stop: watch::Receiver<bool>,
    ) {
        let http = self.http.map(|(listener, _)| {
            accept_loop(listener, None, api.clone(), served.clone(), stop.clone())
        });
        let https = self
            .https
            .map(|(listener, _)| accept_loop(listener, tls, api, served, stop));
        tokio::join!(
            async {
                if let Some(l) = http {
                    l.await
                }
            },
            async {
                if let Some(l) = https {
                    l.await
                }
            }
        );
    }
}

/// First wait after a failed accept (Go's `net/http`).
const ACCEPT_BACKOFF_MIN: std::time::Duration = std::time::Duration::from_millis(5);

/// Longest wait between accept attempts.
const ACCEPT_BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a client may take to finish its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn accept_loop(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    api: Arc<ApiServer>,
    served: Served,
    mut stop: watch::Receiver<bool>,
) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(crate::http::HEADER_READ_TIMEOUT)
        .max_buf_size(crate::http::MAX_READ_BUFFER_BYTES)
        .max_headers(crate::http::MAX_HEADERS);
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_header_list_size(crate::http::MAX_HEADER_BYTES as u32);
    // Go's back-off after a failed accept (out of file descriptors, say): 5 ms,
    // doubling to 1 s, so the loop never spins while the condition lasts.
    let mut backoff = ACCEPT_BACKOFF_MIN;
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => {
                backoff = ACCEPT_BACKOFF_MIN;
                stream
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in_ms = backoff.as_millis() as u64, "accept failed");
                tokio::select! {
                    _ = tokio::time::sleep(backoff) => {}
                    _ = stop.changed() => break,
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let api = api.clone();
        let served = served.clone();
        let watcher = graceful.watcher();
        let builder = builder.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                None => {
                    let conn = Arc::new(crate::auth::Connection::default());
                    serve_connection(stream, conn, api, served, builder, watcher).await
                }
                Some(acceptor) => {
                    let started = std::time::Instant::now();
                    let handshake =
                        tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    let Ok(Ok(stream)) = handshake else {
                        tracing::debug!("TLS handshake failed or timed out");
                        return;
                    };
                    let peer_certificates = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
                        .unwrap_or_default();
                    tracing::trace!(
                        elapsed_us = started.elapsed().as_micros() as u64,
                        "TLS handshake"
                    );
                    let conn = Arc::new(crate::auth::Connection {
                        tls: true,
                        peer_certificates,
                    });
                    serve_connection(stream, conn, api, served, builder, watcher).await
                }
            }
        });
    }
    drop(listener);
    // Long-running watches would hold shutdown forever: give requests a moment only.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), graceful.shutdown()).await;
}

/// A connection that must send its first byte within a deadline (then it reads and
/// writes as the connection it wraps): a client that connects and says nothing is
/// disconnected, as by kube's `ReadHeaderTimeout`.
struct FirstByteDeadline<I> {
    io: I,
    deadline: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<I> FirstByteDeadline<I> {
    fn new(io: I, within: std::time::Duration) -> Self {
        FirstByteDeadline {
            io,
            deadline: Some(Box::pin(tokio::time::sleep(within))),
        }
    }
}

impl<I: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for FirstByteDeadline<I> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.io).poll_read(cx, buf);
        if let Some(deadline) = this.deadline.as_mut() {
            match &polled {
                std::task::Poll::Ready(Ok(())) if buf.filled().len() > before => {
                    this.deadline = None;
                }
                std::task::Poll::Pending
                    if std::future::Future::poll(deadline.as_mut(), cx).is_ready() =>
                {
                    return std::task::Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "no request within the header timeout",
                    )));
                }
                _ => {}
            }
        }
        polled
    }
}

impl<I: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for FirstByteDeadline<I> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Serve HTTP/1.1 or HTTP/2 on one accepted (and, for HTTPS, handshaken) connection.
async fn serve_connection<I>(
    io: I,
    conn: Arc<crate::auth::Connection>,
    api: Arc<ApiServer>,
    served: Served,
    builder: auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = tower::ServiceBuilder::new().service_fn(move |req: http::Request<_>| {
        let api = api.clone();
        let served = served.clone();
        let conn = conn.clone();
        async move {
            if req.uri().path() == "/metrics"
                && matches!(*req.method(), http::Method::GET | http::Method::HEAD)
            {
                // Metrics are a non-resource path: authenticated and authorized as kube's.
                let info = crate::http::request_info::parse(req.method(), "/metrics", false);
                let admitted =
                    gate::admit(&served.gate, &conn, req.headers(), &info, "/metrics").await;
                return Ok(match admitted {
                    Ok(_) => metrics_response(&api, &served).await,
                    Err(denied) => denied,
                });
            }
            let head = crate::http::Head::of(req.method(), req.uri());
            // Resolved once, for the metrics' labels and the handler.
            let resolution = crate::handlers::resolve(&api, &head.info);
            let custom = matches!(resolution, Some(Ok(crate::apiserver::Resolved::Custom(_))));
            let meter = served.metrics.begin(
                &api,
                req.method(),
                req.uri(),
                req.headers(),
                head.info.clone(),
                custom,
            );
            let gate = served.gate.clone();
            let resp = AssertUnwindSafe(gate::serve_gated(
                api,
                &served.faults,
                gate,
                conn,
                req,
                head,
                resolution,
            ))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| gate::panic_response());
            Ok::<http::Response<Body>, std::convert::Infallible>(meter.finish(resp))
        }
    });
    // hyper's header timeout starts with the first request head; before it, the
    // HTTP/1-or-2 detection would wait for a silent client forever.
    let io = FirstByteDeadline::new(io, crate::http::HEADER_READ_TIMEOUT);
    let conn = builder
        .serve_connection_with_upgrades(TokioIo::new(io), TowerToHyperService::new(svc))
        .into_owned();
    let _ = watcher.watch(conn).await;
}

/// Apply every manifest in `dir` (YAML or JSON, sorted by file name): CRDs first,
/// then namespaces, then everything else. An invalid manifest stops the start.
pub async fn load_dir(api: &Arc<ApiServer>, dir: &Path) -> Result<(), StartError> {
    apply_manifests(api, read_manifests(dir)?).await?;
    Ok(())
}

/// The documents of a manifest file, or of every `*.yaml`/`*.yml`/`*.json` file in a
/// directory (sorted by file name), each with the file it came from.
pub fn read_manifests(path: &Path) -> Result<Vec<(String, Value)>, StartError> {
    let err = |path: &Path, message: String| StartError::Load {
        path: path.display().to_string(),
        message,
    };
    let files: Vec<PathBuf> = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| err(path, e.to_string()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("yaml") | Some("yml") | Some("json")
                )
            })
            .collect();
        files.sort();
        files
    } else {
        vec![path.to_path_buf()]
    };
    let mut docs = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).map_err(|e| err(f, e.to_string()))?;
        let is_yaml = f.extension().and_then(|e| e.to_str()) != Some("json");
        for d in manifests::decode(&bytes, is_yaml).map_err(|e| err(f, e.to_string()))? {
            docs.push((f.display().to_string(), d));
        }
    }
    Ok(docs)
}

/// Apply manifests (each with where it came from, for errors): CRDs first, each
/// Established before anything else is applied, then namespaces, then everything else.
/// Returns the objects as stored, in the order applied.
pub async fn apply_manifests(
    api: &Arc<ApiServer>,
    mut docs: Vec<(String, Value)>,
) -> Result<Vec<Value>, StartError> {
    let rank = |v: &Value| match v.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => 0,
        Some("Namespace") => 1,
        _ => 2,
    };
    docs.sort_by_key(|(_, v)| rank(v));
    let mut written = Vec::with_capacity(docs.len());
    for (origin, doc) in docs {
        let err = |message: String| StartError::Load {
            path: origin.clone(),
            message,
        };
        let is_crd = rank(&doc) == 0;
        let obj = apply_manifest(api, doc).await.map_err(|s| err(s.message))?;
        if is_crd {
            wait_established(api, object::name(&obj))
                .await
                .map_err(err)?;
        }
        written.push(obj);
    }
    Ok(written)
}

/// Wait (a few seconds at most) until the CRD `name` is Established and served.
async fn wait_established(api: &Arc<ApiServer>, name: &str) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        // The catalog holds the CRD as stored: no storage read when it is served already.
        if api
            .catalog
            .get(name)
            .is_some_and(|c| crate::registry::crd::is_established(&c.object))
        {
            return Ok(());
        }
        let crd = api
            .store
            .get(api.crds.as_ref(), "", name)
            .await
            .map_err(|s| s.message)?;
        if crate::registry::crd::is_established(&crd) && api.catalog.get(name).is_some() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            let conditions = crd
                .pointer("/status/conditions")
                .cloned()
                .unwrap_or_default();
            return Err(format!(
                "CustomResourceDefinition {name:?} is not Established: conditions {conditions}"
            ));
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Create an object, or replace it when it exists (start-up fixtures).
pub async fn apply_manifest(api: &Arc<ApiServer>, mut doc: Value) -> Result<Value, Status> {
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let kind_name = doc
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let resource = match (group.as_str(), kind_name.as_str()) {
        ("", "Namespace") => "namespaces".to_string(),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            "customresourcedefinitions".to_string()
        }
        _ => crate::registry::builtin::resources()
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind_name)
            .filter(|r| r.has_verb("create"))
            .map(|r| r.resource.to_string())
            .or_else(|| {
                api.catalog
                    .lookup_kind(&group, &kind_name)
                    .map(|c| c.info.plural.clone())
            })
            .ok_or_else(|| {
                Status::not_found_message(format!(
                    "no matches for kind \"{kind_name}\" in version \"{api_version}\""
                ))
            })?,
    };
    let resolved = api.resolve(&group, &version, &resource)?;
    let kind = resolved.kind();
    let d = kind.descriptor().clone();
    let ns = if d.namespaced {
        let ns = object::namespace(&doc);
        if ns.is_empty() {
            "default".to_string()
        } else {
            ns.to_string()
        }
    } else {
        String::new()
    };
    object::ensure_namespace(&mut doc, &ns, d.namespaced)?;
    if d.namespaced {
        api.check_namespace(&ns, &d.gr, object::name(&doc)).await?;
    }
    let opts = WriteOptions::default();
    let written = match api.store.create(kind, doc.clone(), &opts).await {
        Ok(w) => w,
        Err(s) if s.reason == "AlreadyExists" => {
            let name = object::name(&doc).to_string();
            api.store
                .update(kind, &ns, &name, &opts, false, |cur| {
                    let mut desired = doc.clone();
                    if let Some(rv) = object::meta(cur).get("resourceVersion").cloned() {
                        object::meta_mut(&mut desired).insert("resourceVersion".into(), rv);
                    }
                    Ok(desired)
                })
                .await?
        }
        Err(s) => return Err(s),
    };
    api.after_write(&d, &written.object, written.deleted);
    Ok(std::sync::Arc::unwrap_or_clone(written.object))
}

/// A snapshot file's failure.
fn snapshot_error(path: &Path, message: String) -> StartError {
    StartError::Snapshot {
        path: path.display().to_string(),
        message,
    }
}

/// Microseconds since the Unix epoch (snapshot files record when they were written).
fn unix_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// How this server starts forks: as itself (same flags, auth and certificates), on
/// free ports, over the forked store, loading nothing.
fn forker(config: &Config) -> crate::snapshots::Forker {
    let mut config = config.clone();
    config.port = 0;
    if let Some(secure) = config.secure.as_mut() {
        secure.port = 0;
    }
    config.kubeconfig_out = None;
    config.load.clear();
    config.snapshot_in = None;
    config.snapshot_out = None;
    Arc::new(move |store: MemoryStorage| {
        let config = config.clone();
        Box::pin(async move {
            let storage: Arc<dyn Storage> = Arc::new(store.clone());
            let server = Server::start_over(config, storage, Some(store))
                .await
                .map_err(|e| e.to_string())?;
            Ok(Box::new(server) as Box<dyn crate::snapshots::Forked>)
        })
    })
}

impl crate::snapshots::Forked for Server {
    fn url(&self) -> String {
        Server::url(self)
    }

    fn kubeconfig(&self) -> String {
        Server::kubeconfig(self)
    }

    fn stop(&self) {
        Server::stop(self)
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send> {
        self
    }
}
