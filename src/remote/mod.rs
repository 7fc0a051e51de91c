//! The client of another apiserver, the "core" this server delegates to when it runs
//! as an aggregated API server (`--kubeconfig`, `--authentication-kubeconfig`,
//! `--authorization-kubeconfig`): a kubeconfig's cluster and user ([`Kubeconfig`]),
//! and JSON requests and watches over HTTPS ([`Client`]).
//!
//! Only what delegation needs: one context, the server URL, the CA (file or data, or
//! `insecure-skip-tls-verify`), a bearer token (inline or `tokenFile`) or a client
//! certificate (file or data). Exec plugins and auth providers are refused at start.

mod kubeconfig;

pub use kubeconfig::Kubeconfig;

use bytes::Bytes;
use futures::Stream;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Why talking to the core apiserver failed.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The kubeconfig cannot be read.
    #[error("reading kubeconfig {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The kubeconfig is not YAML of the expected shape.
    #[error("kubeconfig {path}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A certificate or key in the kubeconfig is not PEM.
    #[error("kubeconfig {path}: {what}: {source}")]
    Pem {
        /// The file.
        path: String,
        /// Which field.
        what: &'static str,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// rustls refuses the TLS configuration.
    #[error("kubeconfig {path}: {source}")]
    Tls {
        /// The file.
        path: String,
        /// Why.
        source: rustls::Error,
    },
    /// The request cannot be built (a bad URL).
    #[error(transparent)]
    Request(#[from] http::Error),
    /// The connection or the exchange failed.
    #[error("{method} {url:?}: {source}")]
    Transport {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// Why.
        source: hyper_util::client::legacy::Error,
    },
    /// The body could not be read.
    #[error("{method} {url:?}: reading the answer: {source}")]
    Body {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// Why.
        source: hyper::Error,
    },
    /// No answer in time.
    #[error("{method} {url:?}: no answer within {seconds}s")]
    Timeout {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// The time allowed.
        seconds: u64,
    },
    /// The answer is not JSON.
    #[error("{method} {url:?}: the answer is not JSON: {source}")]
    Json {
        /// The method.
        method: &'static str,
        /// The URL.
        url: String,
        /// Why.
        source: serde_json::Error,
    },
    /// The core answered with an error status (its `Status` message when it sent one).
    #[error("{message}")]
    Status {
        /// The HTTP status code.
        code: u16,
        /// The core's message (or the code's reason phrase).
        message: String,
        /// The answer, when it was JSON.
        body: Option<Value>,
    },
}

impl RemoteError {
    /// The HTTP status the core answered with, if it answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            RemoteError::Status { code, .. } => Some(*code),
            _ => None,
        }
    }
}

type HttpsClient =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client of the core apiserver (cheap to clone: clones share connections).
#[derive(Clone)]
pub struct Client {
    base: String,
    token: Option<Arc<str>>,
    http: HttpsClient,
    /// How long a request may take (not a watch).
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("base", &self.base).finish()
    }
}

/// The time a request to the core may take (k8s.io/apiserver's delegated clients use
/// 10 s).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Client {
    /// A client of the cluster and user `kubeconfig` names.
    pub fn new(kubeconfig: &Kubeconfig) -> Result<Client, RemoteError> {
        let tls = kubeconfig.tls_config()?;
        let mut connector = HttpConnector::new();
        connector.enforce_http(false);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(connector);
        let http =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(https);
        Ok(Client {
            base: kubeconfig.server.trim_end_matches('/').to_string(),
            token: kubeconfig.token.as_deref().map(Arc::from),
            http,
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// The core's URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn request(
        &self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<http::Request<Full<Bytes>>, RemoteError> {
        let mut b = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("Accept", "application/json")
            .header("User-Agent", "crd-apiserver");
        if let Some(token) = &self.token {
            b = b.header("Authorization", format!("Bearer {token}"));
        }
        if body.is_some() {
            b = b.header("Content-Type", "application/json");
        }
        Ok(b.body(Full::new(Bytes::from(body.unwrap_or_default())))?)
    }

    /// GET `path` as JSON.
    pub async fn get(&self, path: &str) -> Result<Value, RemoteError> {
        self.exchange(http::Method::GET, "GET", path, None).await
    }

    /// POST `body` to `path`, reading the JSON answer.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, RemoteError> {
        let body = serde_json::to_vec(body).unwrap_or_default();
        self.exchange(http::Method::POST, "POST", path, Some(body))
            .await
    }

    async fn exchange(
        &self,
        method: http::Method,
        name: &'static str,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Value, RemoteError> {
        let url = format!("{}{path}", self.base);
        let request = self.request(method, path, body)?;
        let exchange = async {
            let response =
                self.http
                    .request(request)
                    .await
                    .map_err(|source| RemoteError::Transport {
                        method: name,
                        url: url.clone(),
                        source,
                    })?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|source| RemoteError::Body {
                    method: name,
                    url: url.clone(),
                    source,
                })?
                .to_bytes();
            let json = serde_json::from_slice::<Value>(&bytes);
            if !status.is_success() {
                let body = json.ok();
                let message = body
                    .as_ref()
                    .and_then(|b| b.get("message"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("the server answered {status} to {name} {url}"));
                return Err(RemoteError::Status {
                    code: status.as_u16(),
                    message,
                    body,
                });
            }
            json.map_err(|source| RemoteError::Json {
                method: name,
                url: url.clone(),
                source,
            })
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(answer) => answer,
            Err(_) => Err(RemoteError::Timeout {
                method: name,
                url,
                seconds: self.timeout.as_secs(),
            }),
        }
    }

    /// Watch `path` (a collection) from `resource_version`: the events (`{"type",
    /// "object"}`) as they arrive; the stream ends when the core ends the watch or the
    /// connection breaks.
    pub async fn watch(
        &self,
        path: &str,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Value> + Send + 'static, RemoteError> {
        let sep = if path.contains('?') { '&' } else { '?' };
        let path = format!(
            "{path}{sep}watch=true&allowWatchBookmarks=true&resourceVersion={resource_version}"
        );
        let url = format!("{}{path}", self.base);
        let request = self.request(http::Method::GET, &path, None)?;
        let response = tokio::time::timeout(self.timeout, self.http.request(request))
            .await
            .map_err(|_| RemoteError::Timeout {
                method: "GET",
                url: url.clone(),
                seconds: self.timeout.as_secs(),
            })?
            .map_err(|source| RemoteError::Transport {
                method: "GET",
                url: url.clone(),
                source,
            })?;
        if !response.status().is_success() {
            let code = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b.to_bytes()).ok());
            let message = body
                .as_ref()
                .and_then(|b| b.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("watch refused")
                .to_string();
            return Err(RemoteError::Status {
                code,
                message,
                body,
            });
        }
        let body = response.into_body();
        Ok(futures::stream::unfold(
            (body, Vec::<u8>::new()),
            |(mut body, mut buf)| async move {
                loop {
                    if let Some(i) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=i).collect();
                        match serde_json::from_slice::<Value>(&line) {
                            Ok(event) => return Some((event, (body, buf))),
                            Err(_) => continue,
                        }
                    }
                    match body.frame().await {
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                buf.extend_from_slice(&data);
                                // A line longer than any object the core stores is not
                                // an event: drop it rather than grow without bound.
                                if buf.len() > MAX_EVENT_BYTES {
                                    return None;
                                }
                            }
                        }
                        _ => return None,
                    }
                }
            },
        ))
    }
}

/// The largest watch event read (kube's request limit is 3 MiB; etcd's value 1.5 MiB).
const MAX_EVENT_BYTES: usize = 8 << 20;
