//! An HTTPS webhook server for the end-to-end tests (admission and conversion
//! webhooks): its own CA (handed out as a `caBundle`), a certificate for `127.0.0.1`,
//! one reply function for every request, and a record of the requests received.
//! It runs on its own runtime, so it serves a server in another process as well as
//! one in this test's process.

use base64::Engine;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the server answers one request: the JSON body for `(path, request body)`, or
/// `None` to hang for a minute (past any webhook timeout).
pub type Reply = Arc<dyn Fn(&str, &Value) -> Option<Value> + Send + Sync>;

/// A running HTTPS webhook server.
pub struct HttpsWebhookServer {
    runtime: Option<tokio::runtime::Runtime>,
    base: String,
    ca_bundle: String,
    requests: Arc<Mutex<Vec<Received>>>,
}

/// One request received: path, JSON body, `User-Agent`.
type Received = (String, Value, String);

impl HttpsWebhookServer {
    /// Start on a free port of 127.0.0.1, answering every request with `reply`.
    pub fn start(reply: Reply) -> HttpsWebhookServer {
        HttpsWebhookServer::start_for(&["127.0.0.1"], reply)
    }

    /// Start on a free port of 127.0.0.1 with a certificate for `names` (e.g. a
    /// Service's `name.namespace.svc`), answering every request with `reply`.
    pub fn start_for(names: &[&str], reply: Reply) -> HttpsWebhookServer {
        use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut ca_params =
            CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .unwrap_or_else(|e| panic!("{e}"));
        let ca = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let cert = CertificateParams::new(names)
            .and_then(|p| p.signed_by(&key, &ca))
            .unwrap_or_else(|e| panic!("{e}"));
        HttpsWebhookServer::start_with(&cert.pem(), &key.serialize_pem(), &ca_cert.pem(), reply)
    }

    /// Start on a free port of 127.0.0.1 serving the PEM certificate `cert_pem` with
    /// `key_pem`, handing out `ca_pem` as the `caBundle`.
    pub fn start_with(
        cert_pem: &str,
        key_pem: &str,
        ca_pem: &str,
        reply: Reply,
    ) -> HttpsWebhookServer {
        use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("webhook runtime: {e}"));
        let certs: Vec<CertificateDer> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("{e}"));
        let key =
            PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .unwrap_or_else(|e| panic!("{e}"));
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let requests: Arc<Mutex<Vec<Received>>> = Arc::default();
        let record = requests.clone();
        runtime.spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, reply, record) = (acceptor.clone(), reply.clone(), record.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let (reply, record) = (reply.clone(), record.clone());
                            async move {
                                Ok::<_, std::convert::Infallible>(
                                    answer(req, &reply, &record).await,
                                )
                            }
                        },
                    );
                    let io = hyper_util::rt::TokioIo::new(tls);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
        HttpsWebhookServer {
            runtime: Some(runtime),
            base: format!("https://{addr}"),
            ca_bundle: base64::engine::general_purpose::STANDARD.encode(ca_pem),
            requests,
        }
    }

    /// `https://127.0.0.1:<port>`.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The `caBundle` (base64 PEM) of this server's CA.
    pub fn ca_bundle(&self) -> &str {
        &self.ca_bundle
    }

    /// A webhook `clientConfig` for `path` on this server.
    pub fn client_config(&self, path: &str) -> Value {
        json!({"url": format!("{}{path}", self.base), "caBundle": self.ca_bundle})
    }

    /// The requests received so far: (path, JSON body).
    pub fn requests(&self) -> Vec<(String, Value)> {
        self.requests
            .lock()
            .map(|r| r.iter().map(|(p, b, _)| (p.clone(), b.clone())).collect())
            .unwrap_or_default()
    }

    /// The `User-Agent` of each request received so far.
    pub fn user_agents(&self) -> Vec<String> {
        self.requests
            .lock()
            .map(|r| r.iter().map(|(_, _, ua)| ua.clone()).collect())
            .unwrap_or_default()
    }

    /// Forget the requests received so far.
    pub fn clear(&self) {
        if let Ok(mut r) = self.requests.lock() {
            r.clear();
        }
    }

    /// Stop serving: connections are refused from now on.
    pub fn stop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

impl Drop for HttpsWebhookServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Record one request and answer it.
async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    reply: &Reply,
    record: &Mutex<Vec<Received>>,
) -> hyper::Response<Full<bytes::Bytes>> {
    let path = req.uri().path().to_string();
    let user_agent = req
        .headers()
        .get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    if let Ok(mut r) = record.lock() {
        r.push((path.clone(), request.clone(), user_agent));
    }
    match reply(&path, &request) {
        Some(out) => {
            let mut response = hyper::Response::new(Full::new(bytes::Bytes::from(out.to_string())));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            response
        }
        None => {
            tokio::time::sleep(Duration::from_secs(60)).await;
            hyper::Response::new(Full::new(bytes::Bytes::new()))
        }
    }
}

/// A self-signed certificate for `127.0.0.1` made as `openssl req -x509` makes it
/// (so with `basicConstraints CA:TRUE`), with `extensions` (`-addext` values):
/// `(certificate PEM, key PEM)`.
pub fn openssl_self_signed(extensions: &[&str]) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("openssl-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let mut command = std::process::Command::new("openssl");
    command.args([
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
    ]);
    command
        .args(["-subj", "/CN=127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert);
    for extension in extensions {
        command.args(["-addext", extension]);
    }
    let out = command.output().unwrap_or_else(|e| panic!("openssl: {e}"));
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{e}"));
    let pair = (read(&cert), read(&key));
    let _ = std::fs::remove_dir_all(&dir);
    pair
}
