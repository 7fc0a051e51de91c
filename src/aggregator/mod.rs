//! kube-aggregator's part of kube-apiserver: group-versions whose APIService names a
//! `spec.service` are served by that backend, not here.
//!
//! - [`Aggregator`]: what the server knows of its backends — a snapshot of the remote
//!   APIServices (their Service, trust, availability, where their Service resolves and
//!   the discovery documents fetched from them), replaced by each availability pass.
//! - [`availability`]: kube's remote availability controller — one pass checks each
//!   remote APIService (Service, port, EndpointSlices, a GET of `/apis/<group>/<version>`
//!   as `system:kube-aggregator`), writes its `Available` condition through `/status`,
//!   and fetches what discovery and OpenAPI merge from the backend.
//! - [`endpoints`]: where a Service is reached: a `--webhook-service` mapping, an
//!   endpoint of its EndpointSlices (`--enable-aggregator-routing`), or its cluster IP.
//! - [`transport`]: the HTTPS client: the APIService's `caBundle` (or
//!   `insecureSkipTLSVerify`) for `<service>.<namespace>.svc`, the front-proxy client
//!   certificate (`--proxy-client-cert-file`), Go's error texts.
//! - [`proxy`]: a request of a remote group-version, forwarded as kube's proxy handler
//!   forwards it (the user as `X-Remote-*` headers, the response streamed back).
//! - [`discovery`]: `/apis`, `/apis/<group>` and aggregated discovery with the backends'
//!   group-versions merged in.
//!
//! **Invariant:** a group-version whose APIService is local is never proxied, and a
//! remote one is never served locally (a CRD of the same group-version included).

pub mod availability;
pub mod discovery;
pub mod endpoints;
pub mod proxy;
pub mod transport;

use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

/// The aggregator's settings, read from its flags at start.
#[derive(Clone, Debug, Default)]
pub struct AggregatorOptions {
    /// The front-proxy identity (`--proxy-client-cert-file`, `--proxy-client-key-file`)
    /// presented to backends.
    pub identity: Option<ProxyIdentity>,
    /// `--enable-aggregator-routing`: dial an endpoint of the Service's EndpointSlices
    /// instead of its cluster IP.
    pub enable_aggregator_routing: bool,
}

/// Why the aggregator could not do something, in Go's words where kube quotes them.
#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    /// A proxy client certificate or key file cannot be read.
    #[error("reading {path}: {source}")]
    ReadFile {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The proxy client certificate or key is not usable PEM.
    #[error("proxy client certificate: {0}")]
    ClientCertificate(String),
    /// Only one of the two proxy client files is given.
    #[error("--proxy-client-cert-file and --proxy-client-key-file must be given together")]
    HalfClientCertificate,
    /// `caBundle` is not PEM.
    #[error("unable to load root certificates: {0}")]
    CaBundle(#[source] rustls::pki_types::pem::Error),
    /// rustls refuses its provider's protocol versions.
    #[error(transparent)]
    Protocol(rustls::Error),
    /// The backend's Service resolves to no address (kube's resolver message).
    #[error("{0}")]
    Unresolved(String),
    /// A GET of the backend failed (Go's `url.Error`).
    #[error("Get {url:?}: {cause}")]
    Get {
        /// The URL.
        url: String,
        /// Go's text of the cause.
        cause: String,
    },
}

/// The front-proxy identity: PEM certificate chain and key.
#[derive(Clone, Debug)]
pub struct ProxyIdentity {
    /// PEM certificate chain.
    pub cert_pem: Vec<u8>,
    /// PEM private key.
    pub key_pem: Vec<u8>,
}

impl AggregatorOptions {
    /// The settings of the flags: the proxy client certificate and key read (and
    /// checked, so a bad pair stops the start, not the first proxied request).
    pub fn load(
        cert_file: Option<&Path>,
        key_file: Option<&Path>,
        enable_aggregator_routing: bool,
    ) -> Result<AggregatorOptions, AggregatorError> {
        let read = |p: &Path| {
            std::fs::read(p).map_err(|source| AggregatorError::ReadFile {
                path: p.display().to_string(),
                source,
            })
        };
        let identity = match (cert_file, key_file) {
            (None, None) => None,
            (Some(cert), Some(key)) => {
                let identity = ProxyIdentity {
                    cert_pem: read(cert)?,
                    key_pem: read(key)?,
                };
                transport::client_auth(&identity)?;
                Some(identity)
            }
            _ => return Err(AggregatorError::HalfClientCertificate),
        };
        Ok(AggregatorOptions {
            identity,
            enable_aggregator_routing,
        })
    }
}

/// A remote APIService as the last pass saw it.
#[derive(Clone, Debug)]
pub struct Backend {
    /// The APIService's name (`<version>.<group>`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.version`.
    pub version: String,
    /// `spec.groupPriorityMinimum`.
    pub group_priority_minimum: i64,
    /// `spec.versionPriority`.
    pub version_priority: i64,
    /// `spec.service.namespace`.
    pub namespace: String,
    /// `spec.service.name`.
    pub service: String,
    /// `spec.service.port` (default 443).
    pub port: u16,
    /// `spec.caBundle`, decoded.
    pub ca_bundle: Option<Vec<u8>>,
    /// `spec.insecureSkipTLSVerify`.
    pub insecure: bool,
    /// Its `Available` condition is `True`.
    pub available: bool,
    /// Where its Service resolved at the last pass (`host:port`s to pick from), or
    /// kube's resolver error.
    pub targets: Result<Vec<String>, String>,
    /// Its version's entry of aggregated discovery, fetched from the backend.
    pub discovery: Option<Value>,
    /// The backend's `/openapi/v3` entry of this group-version (`serverRelativeURL`).
    pub openapi_url: Option<String>,
}

impl Backend {
    /// The TLS server name kube verifies: `<service>.<namespace>.svc`.
    pub fn server_name(&self) -> String {
        format!("{}.{}.svc", self.service, self.namespace)
    }

    /// Read a remote APIService; `None` for a local one.
    pub fn from_api_service(obj: &Value) -> Option<Backend> {
        use base64::Engine;
        let spec = obj.get("spec")?;
        let service = spec.get("service").filter(|s| s.is_object())?;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        Some(Backend {
            name: crate::rest::object::name(obj).to_string(),
            group: text(spec, "group"),
            version: text(spec, "version"),
            group_priority_minimum: spec["groupPriorityMinimum"].as_i64().unwrap_or(0),
            version_priority: spec["versionPriority"].as_i64().unwrap_or(0),
            namespace: text(service, "namespace"),
            service: text(service, "name"),
            port: service
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
            ca_bundle: spec
                .get("caBundle")
                .and_then(Value::as_str)
                .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok()),
            insecure: spec["insecureSkipTLSVerify"].as_bool().unwrap_or(false),
            available,
            targets: Err(String::new()),
            discovery: None,
            openapi_url: None,
        })
    }
}

/// The aggregator's state in a running server.
pub struct Aggregator {
    /// The settings.
    pub options: AggregatorOptions,
    /// The remote APIServices, by name.
    backends: RwLock<Arc<HashMap<String, Arc<Backend>>>>,
    /// Clients by trust (server name, bundle, insecure): connections are reused.
    clients: Mutex<HashMap<transport::ClientKey, transport::Client>>,
}

impl std::fmt::Debug for Aggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.backends().len();
        write!(f, "Aggregator({n} backends)")
    }
}

impl Aggregator {
    /// The aggregator of `options`, with no backends yet.
    pub fn new(options: AggregatorOptions) -> Aggregator {
        Aggregator {
            options,
            backends: Default::default(),
            clients: Default::default(),
        }
    }

    /// The remote APIServices of the last pass, by name.
    pub fn backends(&self) -> Arc<HashMap<String, Arc<Backend>>> {
        self.backends
            .read()
            .map(|b| b.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }

    /// The backend serving `group/version`, if its APIService is remote.
    pub fn claims(&self, group: &str, version: &str) -> Option<Arc<Backend>> {
        if group.is_empty() {
            return None;
        }
        let backends = self.backends();
        // Most servers have no remote APIService: nothing to name.
        if backends.is_empty() {
            return None;
        }
        backends
            .get(&apimachinery::apiservice::name(group, version))
            .cloned()
    }

    /// Replace the snapshot.
    fn replace(&self, backends: HashMap<String, Arc<Backend>>) {
        let mut slot = self.backends.write().unwrap_or_else(|e| e.into_inner());
        *slot = Arc::new(backends);
    }
}
