//! Running a server: bind, serve HTTP, load fixtures, write a kubeconfig, shut down.

use crate::apiserver::{ApiOptions, ApiServer};
use crate::codec;
use crate::http::response::{self, Body};
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8080,
            kubeconfig_out: None,
            load: Vec::new(),
            etcd_servers: Vec::new(),
            etcd_prefix: "/registry".into(),
            log_pipeline: false,
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            etcd_compaction_interval: std::time::Duration::from_secs(300),
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
    api: Arc<ApiServer>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    /// Start a server; returns once it accepts requests.
    pub async fn start(config: Config) -> Result<Server, StartError> {
        let storage: Arc<dyn Storage> = if config.etcd_servers.is_empty() {
            Arc::new(MemoryStorage::new())
        } else {
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
            Arc::new(etcd)
        };
        Self::start_with_storage(config, storage).await
    }

    /// Start a server over a given storage backend.
    pub async fn start_with_storage(
        config: Config,
        storage: Arc<dyn Storage>,
    ) -> Result<Server, StartError> {
        let bind = SocketAddr::new(config.bind_address, config.port);
        let listener = TcpListener::bind(bind)
            .await
            .map_err(|source| StartError::Bind { addr: bind, source })?;
        let addr = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr: bind, source })?;
        let options = ApiOptions {
            prefix: config.etcd_prefix.trim_end_matches('/').to_string(),
            log_pipeline: config.log_pipeline,
            advertise_address: addr.to_string(),
        };
        let api = ApiServer::start(storage, options)
            .await
            .map_err(|s| StartError::Storage(s.message))?;
        for dir in &config.load {
            load_dir(&api, dir).await?;
        }
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(accept_loop(listener, api.clone(), stop_rx));
        let server = Server {
            addr,
            api,
            stop,
            task,
        };
        if let Some(path) = &config.kubeconfig_out {
            std::fs::write(path, server.kubeconfig()).map_err(|source| StartError::Kubeconfig {
                path: path.display().to_string(),
                source,
            })?;
        }
        Ok(server)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://host:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The shared API state (for in-process harnesses).
    pub fn api(&self) -> &Arc<ApiServer> {
        &self.api
    }

    /// A kubeconfig pointing at this server (namespace `default`, no credentials).
    pub fn kubeconfig(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: crd-apiserver\n  cluster:\n    server: {}\ncontexts:\n- name: crd-apiserver\n  context:\n    cluster: crd-apiserver\n    user: crd-apiserver\n    namespace: default\ncurrent-context: crd-apiserver\nusers:\n- name: crd-apiserver\n  user: {{}}\n",
            self.url()
        )
    }

    /// Stop accepting, let open requests finish (watches are cut), and return.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn accept_loop(listener: TcpListener, api: Arc<ApiServer>, mut stop: watch::Receiver<bool>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.changed() => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        let _ = stream.set_nodelay(true);
        let api = api.clone();
        let svc = tower::ServiceBuilder::new().service_fn(move |req| {
            let api = api.clone();
            async move {
                let resp = AssertUnwindSafe(crate::http::serve(api, req))
                    .catch_unwind()
                    .await
                    .unwrap_or_else(|_| {
                        response::status(
                            &Status::internal("the server panicked handling this request"),
                            crate::http::negotiate::Output::Json,
                        )
                    });
                Ok::<http::Response<Body>, std::convert::Infallible>(resp)
            }
        });
        let conn = auto::Builder::new(TokioExecutor::new())
            .serve_connection_with_upgrades(TokioIo::new(stream), TowerToHyperService::new(svc))
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    // Long-running watches would hold shutdown forever: give requests a moment only.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), graceful.shutdown()).await;
}

/// Apply every manifest in `dir` (YAML or JSON, sorted by file name): CRDs first,
/// then namespaces, then everything else. An invalid manifest stops the start.
pub async fn load_dir(api: &Arc<ApiServer>, dir: &Path) -> Result<(), StartError> {
    let err = |path: &Path, message: String| StartError::Load {
        path: path.display().to_string(),
        message,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| err(dir, e.to_string()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yaml") | Some("yml") | Some("json")
            )
        })
        .collect();
    files.sort();
    let mut docs: Vec<(PathBuf, Value)> = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).map_err(|e| err(f, e.to_string()))?;
        let is_yaml = f.extension().and_then(|e| e.to_str()) != Some("json");
        for d in codec::decode_manifests(&bytes, is_yaml).map_err(|e| err(f, e))? {
            docs.push((f.clone(), d));
        }
    }
    let rank = |v: &Value| match v.get("kind").and_then(Value::as_str) {
        Some("CustomResourceDefinition") => 0,
        Some("Namespace") => 1,
        _ => 2,
    };
    docs.sort_by_key(|(_, v)| rank(v));
    for (path, doc) in docs {
        apply_manifest(api, doc)
            .await
            .map_err(|s| err(&path, s.message))?;
    }
    Ok(())
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
        _ => api
            .catalog
            .lookup_kind(&group, &kind_name)
            .map(|c| c.info.plural.clone())
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
    Ok(written.object)
}
