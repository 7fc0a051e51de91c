//! The HTTPS client of backends, as kube's `BuildTransportConfig` makes it: the
//! APIService's `caBundle` as the only roots (verified with Go's rules) or no
//! verification with `insecureSkipTLSVerify`, the server name `<service>.<namespace>.svc`
//! whatever address is dialed, and the front-proxy client certificate. Failures read as
//! Go's `net/http` words them.

use super::{Aggregator, AggregatorError, Backend, ProxyIdentity};
use crate::webhook::certificate::{GoVerifier, SkipVerify};
use crate::webhook::WebhookError;
use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use std::sync::Arc;

/// A client to backends (HTTP/1.1 over TLS; request bodies are whole).
pub type Client =
    hyper_util::client::legacy::Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Clients are shared by backends of the same trust: server name, bundle, insecure.
pub type ClientKey = (String, Option<Vec<u8>>, bool);

/// How many clients are kept; past it the pool starts afresh.
const MAX_CLIENTS: usize = 64;

/// The certificate chain and key of the front-proxy identity.
pub fn client_auth(
    identity: &ProxyIdentity,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), AggregatorError> {
    let bad = |e: rustls::pki_types::pem::Error| AggregatorError::ClientCertificate(e.to_string());
    let chain = CertificateDer::pem_slice_iter(&identity.cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(bad)?;
    if chain.is_empty() {
        return Err(AggregatorError::ClientCertificate(
            "no certificate in --proxy-client-cert-file".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&identity.key_pem).map_err(bad)?;
    Ok((chain, key))
}

impl Aggregator {
    /// The client for `backend`'s trust: a kept one, or a new one then kept.
    pub fn client(&self, backend: &Backend) -> Result<Client, AggregatorError> {
        let key = (
            backend.server_name(),
            backend.ca_bundle.clone(),
            backend.insecure,
        );
        let mut pool = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = pool.get(&key) {
            return Ok(c.clone());
        }
        let client = build(&key, self.options.identity.as_ref())?;
        if pool.len() >= MAX_CLIENTS {
            pool.clear();
        }
        pool.insert(key, client.clone());
        Ok(client)
    }
}

/// A new client for `key`, presenting `identity` when there is one.
fn build(key: &ClientKey, identity: Option<&ProxyIdentity>) -> Result<Client, AggregatorError> {
    let (server_name, ca, insecure) = key;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(AggregatorError::Protocol)?
        .dangerous();
    let builder = if *insecure {
        builder.with_custom_certificate_verifier(Arc::new(SkipVerify(provider)))
    } else {
        let roots = match ca {
            Some(pem) => CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(AggregatorError::CaBundle)?,
            None => Vec::new(),
        };
        builder.with_custom_certificate_verifier(Arc::new(GoVerifier::new(roots)))
    };
    let tls = match identity {
        Some(id) => {
            let (chain, key) = client_auth(id)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| AggregatorError::ClientCertificate(e.to_string()))?
        }
        None => builder.with_no_client_auth(),
    };
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .with_server_name_resolver(fixed_name(server_name.clone()))
        .enable_http1()
        .wrap_connector(http);
    Ok(
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build(connector),
    )
}

/// TLS speaks to `name` whatever address the URI dials (kube's `ServerName`).
fn fixed_name(
    name: String,
) -> impl Fn(
    &http::Uri,
) -> Result<rustls::pki_types::ServerName<'static>, rustls::pki_types::InvalidDnsNameError> {
    move |_| rustls::pki_types::ServerName::try_from(name.clone())
}

/// A failed exchange with the backend at `address` as Go's transport words it (what
/// kube prints after `Get "<url>": ` or `error trying to reach service: `).
pub fn go_error(e: hyper_util::client::legacy::Error, address: &str) -> String {
    match crate::webhook::client::transport_error(e) {
        WebhookError::ConnectionRefused => {
            format!("dial tcp {address}: connect: connection refused")
        }
        WebhookError::Io(io) => format!("dial tcp {address}: {io}"),
        other => other.to_string(),
    }
}

/// Set kube's front-proxy headers for `user` on `headers`, after removing any the
/// client sent (kube's `SetAuthProxyHeaders`).
pub fn set_user_headers(headers: &mut http::HeaderMap, user: &crate::auth::UserInfo) {
    let stale: Vec<http::HeaderName> = headers
        .keys()
        .filter(|k| {
            let k = k.as_str();
            k == "x-remote-user"
                || k == "x-remote-uid"
                || k == "x-remote-group"
                || k.starts_with("x-remote-extra-")
        })
        .cloned()
        .collect();
    for k in stale {
        headers.remove(k);
    }
    let mut add = |name: &str, value: &str| {
        if let (Ok(n), Ok(v)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            headers.append(n, v);
        }
    };
    add("X-Remote-User", &user.username);
    // kube v1.36 (RemoteRequestHeaderUID, on by default) sends a uid it has.
    if !user.uid.is_empty() {
        add("X-Remote-Uid", &user.uid);
    }
    for g in &user.groups {
        add("X-Remote-Group", g);
    }
    for (k, values) in &user.extra {
        let name = format!("X-Remote-Extra-{}", header_key_escape(k));
        for v in values {
            add(&name, v);
        }
    }
}

/// kube's `headerKeyEscape`: bytes outside RFC 7230's token characters are
/// percent-encoded (and `%` itself), so any extra key survives as a header name.
fn header_key_escape(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        let token = b.is_ascii_alphanumeric() || b"!#$&'*+-.^_`|~".contains(&b);
        if token {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_escaped_as_kube_escapes_them() {
        assert_eq!(header_key_escape("scopes"), "scopes");
        assert_eq!(
            header_key_escape("example.org/foo bar%"),
            "example.org%2Ffoo%20bar%25"
        );
    }

    #[test]
    fn forged_remote_headers_are_replaced_by_the_users() {
        let mut h = http::HeaderMap::new();
        h.insert("x-remote-user", http::HeaderValue::from_static("mallory"));
        h.insert(
            "x-remote-group",
            http::HeaderValue::from_static("system:masters"),
        );
        h.insert("x-remote-extra-x", http::HeaderValue::from_static("y"));
        let user = crate::auth::UserInfo {
            username: "alice".into(),
            uid: "u-1".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: [("a/b".to_string(), vec!["1".to_string()])].into(),
        };
        set_user_headers(&mut h, &user);
        let all = |k: &str| -> Vec<&str> {
            h.get_all(k)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect()
        };
        assert_eq!(all("x-remote-user"), ["alice"]);
        assert_eq!(all("x-remote-uid"), ["u-1"]);
        assert_eq!(all("x-remote-group"), ["dev", "system:authenticated"]);
        assert!(all("x-remote-extra-x").is_empty());
        assert_eq!(all("x-remote-extra-a%2Fb"), ["1"]);
    }
}
