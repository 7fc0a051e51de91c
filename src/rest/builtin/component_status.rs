//! `componentstatuses` (core/v1, deprecated in v1.19+, still served): answered by
//! probing, never stored, as kube's `pkg/registry/core/componentstatus`. Each GET probes
//! again: `controller-manager` and `scheduler` by an HTTPS GET of `/healthz` on their
//! default ports on 127.0.0.1 (certificates not verified, kube's 20 s limit), `etcd-0`
//! by a read from storage (the embedded store or etcd). The objects and the conditions
//! are `apimachinery::component_status`'s.

use crate::rest::answered::AnsweredKind;
use crate::rest::store::Store;
use crate::rest::{Descriptor, ResourceKind, Strategy};
use crate::storage::StorageError;
use crate::webhook::certificate::SkipVerify;
use apimachinery::component_status::{self as cs, Outcome, Probe};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use serde_json::Value;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// kube's limit on each probe (`probeTimeOut`).
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// kube's probe `User-Agent` (`kube-probe/<major>.<minor>`).
const USER_AGENT: &str = "kube-probe/1.36";

/// The `componentstatuses` resource: get and list, answered by probes.
pub struct ComponentStatusKind {
    answered: AnsweredKind,
}

impl ComponentStatusKind {
    /// The kind, its descriptor from `registry::builtin` (storage key `prefix`).
    pub fn new(prefix: &str) -> Self {
        let printer =
            apimachinery::printers::for_kind("", "ComponentStatus").unwrap_or_else(|| {
                unreachable!("kube's ComponentStatus printer is in apimachinery::printers")
            });
        ComponentStatusKind {
            answered: AnsweredKind::new("", "componentstatuses", prefix).with_printer(printer),
        }
    }

    /// The ComponentStatus of `name` after probing it; `None` for a name kube does not
    /// know.
    pub async fn get(&self, store: &Store, name: &str) -> Option<Value> {
        let probe = cs::probe_of(name)?;
        Some(cs::object(name, &run(store, probe).await))
    }

    /// Every ComponentStatus, probed at once.
    pub async fn list(&self, store: &Store) -> Vec<Value> {
        let probes = cs::COMPONENTS
            .iter()
            .map(|(name, probe)| async move { cs::object(name, &run(store, *probe).await) });
        futures::future::join_all(probes).await
    }
}

/// Probe a component.
async fn run(store: &Store, probe: Probe) -> Outcome {
    match (probe, probe.url()) {
        (Probe::Https(port), Some(url)) => https(&url, port).await,
        _ => match tokio::time::timeout(PROBE_TIMEOUT, store.storage_health()).await {
            Ok(Ok(())) => cs::storage(None),
            Ok(Err(e)) => cs::storage(Some(&storage_failure(&e))),
            Err(_) => cs::storage(Some("context deadline exceeded")),
        },
    }
}

/// What kube's etcd prober says of a failed read: its client retries an unreachable
/// etcd until the probe's deadline (`context deadline exceeded`); errors etcd itself
/// returned are quoted.
fn storage_failure(e: &StorageError) -> String {
    match e {
        StorageError::Unavailable(_)
        | StorageError::Timeout(_)
        | StorageError::OutcomeUnknown(_) => "context deadline exceeded".to_string(),
        other => other.to_string(),
    }
}

/// kube's HTTP prober: `GET url` with `User-Agent: kube-probe/1.36` and `Accept: */*`.
async fn https(url: &str, port: u16) -> Outcome {
    match tokio::time::timeout(PROBE_TIMEOUT, get(url)).await {
        Ok(Ok((code, body))) => cs::http_answer(code, &body),
        Ok(Err(e)) => cs::http_unreachable(url, &go_transport_error(&e, port)),
        Err(_) => cs::http_unreachable(
            url,
            "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
        ),
    }
}

type ProbeClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Empty<Bytes>,
>;

/// One client for every probe: TLS without certificate verification, as kube's
/// `InsecureSkipVerify`, no connection kept (kube's `DisableKeepAlives`).
static CLIENT: LazyLock<Option<ProbeClient>> = LazyLock::new(|| {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .ok()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
        .with_no_client_auth();
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .wrap_connector(http);
    Some(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector),
    )
});

/// Why a probe got no answer (its cause chain, read by [`go_transport_error`]).
type ProbeError = Box<dyn std::error::Error + Send + Sync>;

/// `GET url`: the status code and at most [`cs::MAX_BODY`] bytes of the body.
async fn get(url: &str) -> Result<(u16, Vec<u8>), ProbeError> {
    let client = CLIENT.as_ref().ok_or("no TLS client")?;
    let request = http::Request::get(url)
        .header("User-Agent", USER_AGENT)
        .header("Accept", "*/*")
        .body(Empty::new())?;
    let response = client.request(request).await?;
    let code = response.status().as_u16();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    while bytes.len() < cs::MAX_BODY {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => return Err(e.into()),
            None => break,
        }
    }
    Ok((code, bytes))
}

/// A transport error as Go's `net/http` words it after `Get "<url>": `.
fn go_transport_error(e: &ProbeError, port: u16) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e.as_ref());
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return format!("dial tcp 127.0.0.1:{port}: connect: connection refused");
            }
            if let Some(tls) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return go_tls_error(tls);
            }
        }
        if let Some(tls) = s.downcast_ref::<rustls::Error>() {
            return go_tls_error(tls);
        }
        source = s.source();
    }
    e.to_string()
}

/// A TLS failure in Go's words where they are well known.
fn go_tls_error(e: &rustls::Error) -> String {
    match e {
        // A plain HTTP server answered the handshake.
        rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType) => {
            "http: server gave HTTP response to HTTPS client".to_string()
        }
        other => format!("remote error: tls: {other}"),
    }
}

impl ResourceKind for ComponentStatusKind {
    fn descriptor(&self) -> &Descriptor {
        self.answered.descriptor()
    }

    fn strategy(&self) -> &dyn Strategy {
        self.answered.strategy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Serve one HTTPS answer on a free loopback port; its port.
    async fn serve_once(status: &'static str, body: &'static str) -> u16 {
        let loopback = std::net::IpAddr::from([127, 0, 0, 1]);
        let cert = crate::tls::ServingCert::self_signed(loopback, None).expect("certificate");
        let tls = crate::tls::server_config(&cert, Vec::new()).expect("TLS configuration");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let Ok(mut stream) = acceptor.accept(tcp).await else {
                return;
            };
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let answer = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
        port
    }

    #[tokio::test]
    async fn a_healthy_component_answers_its_body_over_tls_whatever_its_certificate() {
        let port = serve_once("200 OK", "ok").await;
        let url = format!("https://127.0.0.1:{port}/healthz");
        assert_eq!(https(&url, port).await, cs::http_answer(200, b"ok"));
        let port = serve_once("500 Internal Server Error", "no").await;
        let url = format!("https://127.0.0.1:{port}/healthz");
        assert_eq!(
            https(&url, port).await.message,
            "HTTP probe failed with statuscode: 500"
        );
    }

    #[tokio::test]
    async fn nothing_listening_is_gos_connection_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("address").port();
        drop(listener);
        let url = format!("https://127.0.0.1:{port}/healthz");
        assert_eq!(
            https(&url, port).await.message,
            format!("Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused")
        );
    }
}
