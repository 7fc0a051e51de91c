//! A kubeconfig's current context: the cluster's server and trust, the user's
//! credentials, read once at start (paths relative to the kubeconfig's directory, as
//! client-go resolves them).

use super::RemoteError;
use base64::Engine;
use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The parts of a kubeconfig a [`super::Client`] uses.
#[derive(Debug)]
pub struct Kubeconfig {
    /// The file it was read from (for messages).
    pub path: String,
    /// The cluster's `server` URL.
    pub server: String,
    /// PEM of `certificate-authority(-data)` (none: the server is not verified only
    /// when `insecure-skip-tls-verify` is set; otherwise nothing is trusted).
    pub ca_pem: Option<Vec<u8>>,
    /// `insecure-skip-tls-verify`.
    pub insecure: bool,
    /// `tls-server-name`.
    pub tls_server_name: Option<String>,
    /// The bearer token (`token`, or the contents of `tokenFile`).
    pub token: Option<String>,
    /// PEM of the client certificate and key.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl Kubeconfig {
    /// Read the kubeconfig at `path` and resolve its current context.
    pub fn load(path: &Path) -> Result<Kubeconfig, RemoteError> {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| RemoteError::Read {
            path: name.clone(),
            source,
        })?;
        let doc: Value = serde_norway::from_str(&text).map_err(|e| RemoteError::Invalid {
            path: name.clone(),
            message: e.to_string(),
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Self::from_value(&name, &dir, &doc)
    }

    fn from_value(name: &str, dir: &Path, doc: &Value) -> Result<Kubeconfig, RemoteError> {
        let invalid = |message: String| RemoteError::Invalid {
            path: name.to_string(),
            message,
        };
        let named = |list: &str, wanted: &str, inner: &str| -> Option<Value> {
            doc.get(list)?
                .as_array()?
                .iter()
                .find(|e| e.get("name").and_then(Value::as_str) == Some(wanted))
                .and_then(|e| e.get(inner))
                .cloned()
        };
        let contexts = doc.get("contexts").and_then(Value::as_array);
        let context_name = doc
            .get("current-context")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .or_else(|| {
                // One context and no current one: client-go refuses; we take it, a
                // delegation kubeconfig is usually written for one server.
                let only = contexts.filter(|c| c.len() == 1)?;
                only[0]
                    .get("name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .ok_or_else(|| invalid("no current-context".into()))?;
        let context = named("contexts", &context_name, "context")
            .ok_or_else(|| invalid(format!("context {context_name:?} not found")))?;
        let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        let cluster_name = field(&context, "cluster").unwrap_or_default();
        let cluster = named("clusters", &cluster_name, "cluster")
            .ok_or_else(|| invalid(format!("cluster {cluster_name:?} not found")))?;
        let user_name = field(&context, "user").unwrap_or_default();
        let user = named("users", &user_name, "user").unwrap_or(Value::Null);
        if user.get("exec").is_some_and(|e| !e.is_null())
            || user.get("auth-provider").is_some_and(|e| !e.is_null())
        {
            return Err(invalid(format!(
                "user {user_name:?}: exec plugins and auth providers are not supported; use a token or a client certificate"
            )));
        }
        let server = field(&cluster, "server")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid(format!("cluster {cluster_name:?} has no server")))?;
        let resolve = |p: String| -> PathBuf {
            let p = PathBuf::from(p);
            if p.is_absolute() {
                p
            } else {
                dir.join(p)
            }
        };
        let read = |file: PathBuf| -> Result<Vec<u8>, RemoteError> {
            std::fs::read(&file).map_err(|source| RemoteError::Read {
                path: file.display().to_string(),
                source,
            })
        };
        let data = |v: &Value, k: &str| -> Result<Option<Vec<u8>>, RemoteError> {
            match field(v, &format!("{k}-data")) {
                Some(b64) => base64::engine::general_purpose::STANDARD
                    .decode(b64.trim())
                    .map(Some)
                    .map_err(|e| invalid(format!("{k}-data: {e}"))),
                None => field(v, k).map(|p| read(resolve(p))).transpose(),
            }
        };
        let ca_pem = data(&cluster, "certificate-authority")?;
        let token = match field(&user, "token").filter(|t| !t.is_empty()) {
            Some(t) => Some(t),
            None => field(&user, "tokenFile")
                .map(|p| read(resolve(p)))
                .transpose()?
                .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
        };
        let client_cert = match (
            data(&user, "client-certificate")?,
            data(&user, "client-key")?,
        ) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => {
                return Err(invalid(format!(
                    "user {user_name:?}: client-certificate and client-key go together"
                )))
            }
        };
        Ok(Kubeconfig {
            path: name.to_string(),
            server,
            ca_pem,
            insecure: cluster
                .get("insecure-skip-tls-verify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            tls_server_name: field(&cluster, "tls-server-name"),
            token,
            client_cert,
        })
    }

    /// The TLS client configuration: the CA (or no verification when insecure), the
    /// client certificate when there is one.
    pub(super) fn tls_config(&self) -> Result<rustls::ClientConfig, RemoteError> {
        let pem_err = |what: &'static str| {
            let path = self.path.clone();
            move |source| RemoteError::Pem {
                path: path.clone(),
                what,
                source,
            }
        };
        let tls_err = |source| RemoteError::Tls {
            path: self.path.clone(),
            source,
        };
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(tls_err)?;
        let builder = if self.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(crate::tls::SkipVerify(provider)))
        } else {
            let mut roots = rustls::RootCertStore::empty();
            if let Some(pem) = &self.ca_pem {
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(pem_err("certificate-authority"))?;
                    roots.add(cert).map_err(tls_err)?;
                }
            }
            builder.with_root_certificates(roots)
        };
        match &self.client_cert {
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(cert)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(pem_err("client-certificate"))?;
                let key = PrivateKeyDer::from_pem_slice(key).map_err(pem_err("client-key"))?;
                builder.with_client_auth_cert(chain, key).map_err(tls_err)
            }
            None => Ok(builder.with_no_client_auth()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_current_context_names_the_cluster_and_user() {
        let doc = json!({
            "clusters": [{"name": "core", "cluster": {"server": "https://127.0.0.1:6443",
                "certificate-authority-data": "LS0t", "insecure-skip-tls-verify": false}}],
            "users": [{"name": "me", "user": {"token": "abc"}}],
            "contexts": [{"name": "c", "context": {"cluster": "core", "user": "me"}}],
            "current-context": "c",
        });
        let k = Kubeconfig::from_value("k", Path::new("/"), &doc).expect("kubeconfig");
        assert_eq!(k.server, "https://127.0.0.1:6443");
        assert_eq!(k.token.as_deref(), Some("abc"));
        assert_eq!(k.ca_pem.as_deref(), Some(&b"---"[..]));
        let mut bad = doc.clone();
        bad["current-context"] = json!("other");
        assert_eq!(
            Kubeconfig::from_value("k", Path::new("/"), &bad)
                .unwrap_err()
                .to_string(),
            "kubeconfig k: context \"other\" not found"
        );
        let mut exec = doc;
        exec["users"][0]["user"] = json!({"exec": {"command": "x"}});
        assert!(Kubeconfig::from_value("k", Path::new("/"), &exec).is_err());
    }
}
