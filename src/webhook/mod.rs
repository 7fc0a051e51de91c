//! Calling webhooks: the HTTPS client that admission webhooks and CRD conversion
//! webhooks share ([`client`]), and the Go-compatible verification of their serving
//! certificates ([`certificate`]). What is posted and how answers are read belongs to
//! the callers (`admission::webhook`, `conversion`), which word a [`WebhookError`] into
//! their `Status`.

pub mod certificate;
pub mod client;

use certificate::VerifyError;

/// Why a webhook could not be called, in Go's words (the texts kube's messages quote
/// after `failed to call webhook: ` or `conversion webhook for ... failed: `).
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The `clientConfig` names neither a URL nor a Service.
    #[error("webhook configuration must have either service or URL")]
    NoTarget,
    /// The POST failed (Go's `url.Error`).
    #[error("Post {url:?}: {source}")]
    Post {
        /// The URL posted to, with its `?timeout=`.
        url: String,
        /// Why.
        source: Box<WebhookError>,
    },
    /// A Service no `--webhook-service` maps.
    #[error("no endpoints available for service {0:?}")]
    NoEndpoints(String),
    /// A `--webhook-service` value that does not parse.
    #[error("invalid webhook service {0:?}: expected <namespace>/<name>[:<port>]=<host>:<port>")]
    ServiceMapping(String),
    /// `caBundle` is not base64.
    #[error("decoding caBundle: {0}")]
    CaBundleBase64(#[source] base64::DecodeError),
    /// `caBundle` is not PEM.
    #[error("reading caBundle: {0}")]
    CaBundlePem(#[source] rustls::pki_types::pem::Error),
    /// rustls refuses the protocol versions of its provider.
    #[error(transparent)]
    Protocol(rustls::Error),
    /// A mapped address's host does not resolve.
    #[error("dial tcp: lookup {address}: {source}")]
    Lookup {
        /// The `host:port`.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// A mapped address's host resolves to nothing.
    #[error("dial tcp: lookup {0}: no such host")]
    NoSuchHost(String),
    /// The request cannot be built.
    #[error(transparent)]
    Request(#[from] http::Error),
    /// The server's certificate does not verify.
    #[error(transparent)]
    Certificate(VerifyError),
    /// Nothing listens at the address.
    #[error("connect: connection refused")]
    ConnectionRefused,
    /// The connection failed.
    #[error(transparent)]
    Io(std::io::Error),
    /// The exchange failed otherwise.
    #[error(transparent)]
    Transport(Box<hyper_util::client::legacy::Error>),
    /// The answer's body could not be read.
    #[error(transparent)]
    Body(hyper::Error),
    /// The webhook answered with an error code.
    #[error("the server responded with the status code {0} but did not return more information")]
    Status(u16),
    /// The review cannot be encoded, or the answer is not JSON.
    #[error(transparent)]
    Json(serde_json::Error),
    /// No answer within the webhook's timeout.
    #[error("context deadline exceeded")]
    Timeout,
}
