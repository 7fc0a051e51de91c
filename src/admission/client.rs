//! The HTTPS client of webhooks (admission and CRD conversion): POST a JSON review to a
//! `clientConfig` (`url`, `caBundle`) and read the JSON answer, with Go's error texts.

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// POST `body` to `client_config.url` (HTTPS, `caBundle` as the trust root) within
/// `timeout`, with kube's `?timeout=` query. Errors read as Go's `url.Error` does in
/// kube's messages: `Post "<url>": <cause>`.
pub async fn post_json(
    client_config: &Value,
    timeout: Duration,
    body: &Value,
) -> Result<Value, String> {
    let Some(url) = client_config.get("url").and_then(Value::as_str) else {
        return Err("services are not reachable from this server, use clientConfig.url".into());
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let full_url = format!("{url}{sep}timeout={}s", timeout.as_secs());
    let fail = |e: String| format!("Post {full_url:?}: {e}");
    let ca = match client_config.get("caBundle").and_then(Value::as_str) {
        Some(b) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| fail(format!("decoding caBundle: {e}")))?,
        ),
        None => None,
    };
    let client = https_client(ca.as_deref()).map_err(fail)?;
    let body = serde_json::to_vec(body).map_err(|e| fail(e.to_string()))?;
    let request = http::Request::post(&full_url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| fail(e.to_string()))?;
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|e| transport_error(&e))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "the server responded with the status code {} but did not return more information",
                status.as_u16()
            ));
        }
        serde_json::from_slice::<Value>(&bytes).map_err(|e| e.to_string())
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(fail(e)),
        Err(_) => Err(fail("context deadline exceeded".into())),
    }
}

/// A transport error in Go's words where they are well known.
fn transport_error(e: &hyper_util::client::legacy::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return "connect: connection refused".into();
            }
            return io.to_string();
        }
        source = s.source();
    }
    e.to_string()
}

type HttpsClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// An HTTPS-only client trusting `ca_pem` (kube uses the system roots without a bundle;
/// this server has none of its own, so such webhooks must be reachable by a bundle).
fn https_client(ca_pem: Option<&[u8]>) -> Result<HttpsClient, String> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_pem {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("reading caBundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("reading caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}
