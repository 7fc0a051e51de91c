//! The HTTPS client of webhooks (admission and CRD conversion): POST a JSON review to a
//! `clientConfig` (`url` or `service`, `caBundle`) and read the JSON answer, with Go's
//! error texts.
//!
//! This server has no Services: a [`ServiceResolver`] maps `namespace/name:port` to an
//! address (`--webhook-service`, `Admission::resolve_service`). As kube, the request
//! goes to `https://<name>.<namespace>.svc:<port><path>` and the certificate is
//! verified for `<name>.<namespace>.svc`; only the TCP connection goes to the address.

use crate::webhook::certificate::{GoVerifier, VerifyError};
use crate::webhook::WebhookError;
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::{dns::Name, HttpConnector};
use serde_json::Value;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// A Service as webhooks name it: namespace, name, port.
type ServiceKey = (String, String, u16);

/// Where webhook Services are reached: `(namespace, name, port)` → `host:port`; it also
/// keeps the clients of the webhooks called through it, so that calls to one webhook
/// reuse its connections instead of paying a TLS handshake each (cheap to clone: clones
/// share both).
#[derive(Clone, Debug, Default)]
pub struct ServiceResolver {
    map: Arc<RwLock<HashMap<ServiceKey, String>>>,
    clients: ClientPool,
}

/// A client is reusable for the same trust root (`caBundle`) and fixed addresses.
type ClientKey = (Option<String>, Option<Vec<SocketAddr>>);

/// How many clients are kept; past it the pool starts afresh (configurations come and
/// go in tests, each with its own CA).
const MAX_CLIENTS: usize = 64;

/// The webhook clients, by [`ClientKey`].
#[derive(Clone, Default)]
struct ClientPool(Arc<Mutex<HashMap<ClientKey, HttpsClient>>>);

impl std::fmt::Debug for ClientPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map(|m| m.len()).unwrap_or(0);
        write!(f, "ClientPool({n} clients)")
    }
}

impl ServiceResolver {
    /// Route the Service `namespace/name` on `port` to `address` (`host:port`).
    pub fn insert(&self, namespace: &str, name: &str, port: u16, address: &str) {
        if let Ok(mut map) = self.map.write() {
            map.insert(
                (namespace.to_string(), name.to_string(), port),
                address.to_string(),
            );
        }
    }

    /// The address of a Service, or kube's error for a Service without endpoints.
    pub fn resolve(&self, namespace: &str, name: &str, port: u16) -> Result<String, WebhookError> {
        let key = (namespace.to_string(), name.to_string(), port);
        self.map
            .read()
            .ok()
            .and_then(|m| m.get(&key).cloned())
            .ok_or_else(|| WebhookError::NoEndpoints(name.to_string()))
    }

    /// The client for a trust root (`ca_bundle` as written, `ca_pem` decoded) and, for
    /// Services, the fixed addresses to dial: a kept one, or a new one then kept.
    fn client(
        &self,
        ca_bundle: Option<&str>,
        ca_pem: Option<&[u8]>,
        addrs: Option<Vec<SocketAddr>>,
    ) -> Result<HttpsClient, WebhookError> {
        let key = (ca_bundle.map(String::from), addrs);
        if let Some(client) = self
            .clients
            .0
            .lock()
            .ok()
            .and_then(|m| m.get(&key).cloned())
        {
            return Ok(client);
        }
        let client = https_client(tls_config(ca_pem)?, Resolver(key.1.clone()));
        if let Ok(mut pool) = self.clients.0.lock() {
            if pool.len() >= MAX_CLIENTS {
                pool.clear();
            }
            pool.insert(key, client.clone());
        }
        Ok(client)
    }
}

/// One `--webhook-service` value: the Service `namespace/name` on `port` is reached
/// at `address`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceMapping {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service port webhooks name (`service.port`, default 443).
    pub port: u16,
    /// Where to connect: `host:port`.
    pub address: String,
}

impl ServiceMapping {
    /// Parse `<namespace>/<name>[:<port>]=<host>:<port>` (the Service port defaults
    /// to 443, as a webhook's).
    pub fn parse(spec: &str) -> Result<ServiceMapping, WebhookError> {
        let bad = || WebhookError::ServiceMapping(spec.to_string());
        let (service, address) = spec.split_once('=').ok_or_else(bad)?;
        let (namespace, rest) = service.split_once('/').ok_or_else(bad)?;
        let (name, port) = match rest.split_once(':') {
            Some((name, port)) => (name, port.parse::<u16>().map_err(|_| bad())?),
            None => (rest, 443),
        };
        let (host, addr_port) = address.rsplit_once(':').ok_or_else(bad)?;
        if namespace.is_empty()
            || name.is_empty()
            || host.is_empty()
            || addr_port.parse::<u16>().is_err()
        {
            return Err(bad());
        }
        Ok(ServiceMapping {
            namespace: namespace.into(),
            name: name.into(),
            port,
            address: address.into(),
        })
    }
}

/// POST `body` to `client_config` within `timeout` with kube's `?timeout=` query;
/// Services cannot be reached (see [`post_json_with`]).
pub async fn post_json(
    client_config: &Value,
    timeout: Duration,
    body: &Value,
) -> Result<Value, WebhookError> {
    post_json_with(client_config, timeout, body, &ServiceResolver::default()).await
}

/// POST `body` to `client_config.url`, or to `client_config.service` through
/// `services` (HTTPS, `caBundle` as the trust root), within `timeout`, with kube's
/// `?timeout=` query. Errors read as Go's `url.Error` does in kube's messages:
/// `Post "<url>": <cause>`.
pub async fn post_json_with(
    client_config: &Value,
    timeout: Duration,
    body: &Value,
    services: &ServiceResolver,
) -> Result<Value, WebhookError> {
    let service = client_config.get("service").filter(|s| s.is_object());
    let (url, target) = match (client_config.get("url").and_then(Value::as_str), service) {
        (Some(url), _) => (url.to_string(), None),
        (None, Some(svc)) => {
            let field = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("");
            let (namespace, name, path) = (field("namespace"), field("name"), field("path"));
            let port = svc
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .filter(|p| *p != 0)
                .unwrap_or(443);
            let host = format!("{name}.{namespace}.svc");
            let url = format!("https://{host}:{port}{path}");
            (
                url,
                Some((host, port, services.resolve(namespace, name, port))),
            )
        }
        (None, None) => return Err(WebhookError::NoTarget),
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let full_url = format!("{url}{sep}timeout={}s", timeout.as_secs());
    let fail = |e: WebhookError| WebhookError::Post {
        url: full_url.clone(),
        source: Box::new(e),
    };
    let ca_bundle = client_config.get("caBundle").and_then(Value::as_str);
    let ca = match ca_bundle {
        Some(b) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| fail(WebhookError::CaBundleBase64(e)))?,
        ),
        None => None,
    };
    let body = serde_json::to_vec(body).map_err(|e| fail(WebhookError::Json(e)))?;
    let exchange = async {
        let (client, request_url, host_header) = match target {
            None => (
                services.client(ca_bundle, ca.as_deref(), None)?,
                full_url.clone(),
                None,
            ),
            Some((host, port, address)) => {
                // kube dials the Service's address but speaks TLS to `name.namespace.svc`;
                // without a port in the URI the connector keeps the address's own port.
                let addrs = resolve_address(&address?).await?;
                let path_and_query = full_url
                    .split_once(".svc:")
                    .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
                    .unwrap_or("/");
                let uri = format!("https://{host}{path_and_query}");
                let client = services.client(ca_bundle, ca.as_deref(), Some(addrs))?;
                (client, uri, Some(format!("{host}:{port}")))
            }
        };
        let mut request = http::Request::post(&request_url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, */*")
            // kube's webhook clients, admission and conversion alike (`setGlobalDefaults`).
            .header("User-Agent", "kube-apiserver-admission");
        if let Some(h) = host_header {
            request = request.header("Host", h);
        }
        let request = request.body(Full::new(Bytes::from(body)))?;
        let response = client.request(request).await.map_err(transport_error)?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(WebhookError::Body)?
            .to_bytes();
        if !status.is_success() {
            return Err(WebhookError::Status(status.as_u16()));
        }
        serde_json::from_slice::<Value>(&bytes).map_err(WebhookError::Json)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(fail(e)),
        Err(_) => Err(fail(WebhookError::Timeout)),
    }
}

/// The socket addresses of a mapped `host:port`.
async fn resolve_address(address: &str) -> Result<Vec<SocketAddr>, WebhookError> {
    if let Ok(addr) = address.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|source| WebhookError::Lookup {
            address: address.to_string(),
            source,
        })?
        .collect();
    if addrs.is_empty() {
        return Err(WebhookError::NoSuchHost(address.to_string()));
    }
    Ok(addrs)
}

/// A transport error in Go's words where they are well known (also the aggregator's).
pub fn transport_error(e: hyper_util::client::legacy::Error) -> WebhookError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(s) = source {
        if let Some(verify) = verify_error(s) {
            return WebhookError::Certificate(verify.clone());
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return WebhookError::ConnectionRefused;
            }
            // The I/O error is borrowed from `e`: keep its kind and its text.
            return WebhookError::Io(std::io::Error::new(io.kind(), io.to_string()));
        }
        source = s.source();
    }
    WebhookError::Transport(Box::new(e))
}

/// The certificate verification failure (Go's text) a rustls error carries, if any,
/// also inside I/O errors (which hide their inner error from `source`).
fn verify_error<'e>(e: &'e (dyn std::error::Error + 'static)) -> Option<&'e VerifyError> {
    if let Some(io) = e.downcast_ref::<std::io::Error>() {
        return verify_error(io.get_ref()?);
    }
    match e.downcast_ref::<rustls::Error>()? {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
            other.0.downcast_ref::<VerifyError>()
        }
        _ => None,
    }
}

type HttpsClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<HttpConnector<Resolver>>,
    Full<Bytes>,
>;

/// Name resolution of the webhook client: the system's, or fixed addresses (a
/// Service's mapped address, whatever name the URL carries).
#[derive(Clone)]
struct Resolver(Option<Vec<SocketAddr>>);

impl tower::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let fixed = self.0.clone();
        Box::pin(async move {
            match fixed {
                Some(addrs) => Ok(addrs.into_iter()),
                // Port 0: the connector puts the URL's port in.
                None => Ok(tokio::net::lookup_host((name.as_str(), 0))
                    .await?
                    .collect::<Vec<_>>()
                    .into_iter()),
            }
        })
    }
}

/// TLS trusting only `ca_pem`, verified with Go's rules (kube uses the system roots
/// without a bundle; this server has none of its own, so such webhooks must be
/// reachable by a bundle).
fn tls_config(ca_pem: Option<&[u8]>) -> Result<rustls::ClientConfig, WebhookError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = Vec::new();
    if let Some(pem) = ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            roots.push(cert.map_err(WebhookError::CaBundlePem)?);
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(WebhookError::Protocol)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(GoVerifier::new(roots)))
        .with_no_client_auth())
}

/// An HTTPS-only, HTTP/1.1 client resolving names with `resolver`.
fn https_client(tls: rustls::ClientConfig, resolver: Resolver) -> HttpsClient {
    let mut http = HttpConnector::new_with_resolver(resolver);
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .wrap_connector(http);
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(connector)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_kept_per_trust_root_and_addresses_and_shared_by_clones() {
        let resolver = ServiceResolver::default();
        let pool_size = |r: &ServiceResolver| r.clients.0.lock().map(|m| m.len()).unwrap_or(0);
        let addr: SocketAddr = "127.0.0.1:8443".parse().expect("address");
        assert!(resolver.client(None, None, None).is_ok());
        assert!(resolver.client(None, None, None).is_ok());
        assert_eq!(pool_size(&resolver), 1);
        assert!(resolver.client(None, None, Some(vec![addr])).is_ok());
        let clone = resolver.clone();
        assert!(clone.client(None, None, Some(vec![addr])).is_ok());
        assert_eq!(pool_size(&resolver), 2);
        // A bundle that is not PEM is refused, and nothing is kept for it.
        assert!(resolver
            .client(Some("eA=="), Some(b"-----BEGIN CERTIFICATE-----\nx"), None)
            .is_err());
        assert_eq!(pool_size(&resolver), 2);
    }

    #[test]
    fn service_mappings_parse_with_kubes_default_port() {
        let m = |ns: &str, name: &str, port: u16, address: &str| ServiceMapping {
            namespace: ns.into(),
            name: name.into(),
            port,
            address: address.into(),
        };
        assert_eq!(
            ServiceMapping::parse("webhooks/gate=127.0.0.1:8443").ok(),
            Some(m("webhooks", "gate", 443, "127.0.0.1:8443"))
        );
        assert_eq!(
            ServiceMapping::parse("ns/svc:8443=localhost:9000").ok(),
            Some(m("ns", "svc", 8443, "localhost:9000"))
        );
        assert_eq!(
            ServiceMapping::parse("ns/svc").map_err(|e| e.to_string()),
            Err("invalid webhook service \"ns/svc\": expected <namespace>/<name>[:<port>]=<host>:<port>".to_string())
        );
        for bad in [
            "ns/svc",
            "svc=127.0.0.1:1",
            "ns/svc:x=127.0.0.1:1",
            "ns/=h:1",
            "ns/svc=h",
        ] {
            assert!(ServiceMapping::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_unmapped_service_has_no_endpoints() {
        let r = ServiceResolver::default();
        r.insert("ns", "svc", 443, "127.0.0.1:1");
        assert_eq!(
            r.resolve("ns", "svc", 443).ok().as_deref(),
            Some("127.0.0.1:1")
        );
        assert_eq!(
            r.resolve("ns", "svc", 8443).map_err(|e| e.to_string()),
            Err("no endpoints available for service \"svc\"".to_string())
        );
    }
}
