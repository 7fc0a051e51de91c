//! HTTPS serving: the serving certificate (`--tls-cert-file`/`--tls-private-key-file`,
//! or a self-signed CA and serving certificate as kube generates, kept in `--cert-dir`),
//! and the rustls server configuration (ring, ALPN h2 and http/1.1, client
//! certificates requested but judged later by `auth::x509`).

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why HTTPS cannot be served: the serving certificate or key cannot be read, made or
/// used (start-up errors, never a request's).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Only one of the pair's flags is given.
    #[error("--tls-cert-file and --tls-private-key-file must be given together")]
    UnpairedFlags,
    /// A certificate or key file cannot be read as PEM.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// A certificate file holds no certificate.
    #[error("{path}: no certificate found")]
    NoCertificate {
        /// The file.
        path: String,
    },
    /// The self-signed pair cannot be generated.
    #[error("generating a self-signed certificate: {0}")]
    Generate(#[source] rcgen::Error),
    /// `--cert-dir` or a file in it cannot be written.
    #[error("{path}: {source}")]
    Write {
        /// The directory or file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The generated PEM does not read back.
    #[error(transparent)]
    Pem(#[from] rustls::pki_types::pem::Error),
    /// rustls refuses the protocol versions of its provider.
    #[error(transparent)]
    Protocol(rustls::Error),
    /// rustls refuses the certificate or key.
    #[error("invalid serving certificate or key: {0}")]
    Certificate(#[source] rustls::Error),
}

/// HTTPS serving flags.
#[derive(Clone, Debug, Default)]
pub struct SecureServing {
    /// `--secure-port` (0 = pick a free one).
    pub port: u16,
    /// `--tls-cert-file`: PEM chain, leaf first.
    pub cert_file: Option<PathBuf>,
    /// `--tls-private-key-file`: PEM key.
    pub key_file: Option<PathBuf>,
    /// `--cert-dir`: where a generated pair is kept (and reused from).
    pub cert_dir: Option<PathBuf>,
}

impl SecureServing {
    /// The given pair, or a self-signed one for `bind`.
    pub fn serving_cert(&self, bind: IpAddr) -> Result<ServingCert, TlsError> {
        match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => ServingCert::load(cert, key),
            (None, None) => ServingCert::self_signed(bind, self.cert_dir.as_deref()),
            _ => Err(TlsError::UnpairedFlags),
        }
    }
}

/// File names kube uses in `--cert-dir` for a generated pair.
pub const CERT_DIR_CERT: &str = "apiserver.crt";
/// The key beside [`CERT_DIR_CERT`].
pub const CERT_DIR_KEY: &str = "apiserver.key";

/// A serving certificate chain with its key, and the CA clients should trust when known.
pub struct ServingCert {
    /// Leaf first.
    pub chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key.
    pub key: PrivateKeyDer<'static>,
    /// PEM of what the kubeconfig trusts: the chain's last certificate (the CA of a
    /// leaf + CA file, the certificate itself when alone).
    pub ca_pem: Option<String>,
}

impl ServingCert {
    /// Load a PEM certificate chain and key (`--tls-cert-file`, `--tls-private-key-file`).
    pub fn load(cert_file: &Path, key_file: &Path) -> Result<ServingCert, TlsError> {
        let read = |path: &Path| {
            let path = path.display().to_string();
            move |source: rustls::pki_types::pem::Error| TlsError::Read { path, source }
        };
        let chain = CertificateDer::pem_file_iter(cert_file)
            .and_then(|it| it.collect::<Result<Vec<_>, _>>())
            .map_err(read(cert_file))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate {
                path: cert_file.display().to_string(),
            });
        }
        let key = PrivateKeyDer::from_pem_file(key_file).map_err(read(key_file))?;
        // kube writes generated pairs as leaf + CA: the last of a longer chain is the CA.
        // A lone certificate is trusted itself: self-signed it is its own root, and
        // Go's verifier (kubectl, client-go) accepts a leaf found among the roots, so the
        // kubeconfig verifies the server either way. Clients that only accept CA roots
        // (rustls) need the CA appended to the file.
        let ca_pem = Some(pem("CERTIFICATE", &chain[chain.len() - 1]));
        Ok(ServingCert { chain, key, ca_pem })
    }

    /// A new CA and a serving certificate it signs for `localhost`, `127.0.0.1`, `::1`
    /// and `bind` (unless unspecified), as kube's self-signed fallback; reused from
    /// `cert_dir` when a pair is there, written there when not.
    pub fn self_signed(bind: IpAddr, cert_dir: Option<&Path>) -> Result<ServingCert, TlsError> {
        if let Some(dir) = cert_dir {
            let (cert, key) = (dir.join(CERT_DIR_CERT), dir.join(CERT_DIR_KEY));
            if cert.exists() && key.exists() {
                return Self::load(&cert, &key);
            }
        }
        let (chain_pem, key_pem) = generate(bind).map_err(TlsError::Generate)?;
        if let Some(dir) = cert_dir {
            let write = |path: &Path| {
                let path = path.display().to_string();
                move |source: std::io::Error| TlsError::Write { path, source }
            };
            std::fs::create_dir_all(dir).map_err(write(dir))?;
            let cert = dir.join(CERT_DIR_CERT);
            let key = dir.join(CERT_DIR_KEY);
            std::fs::write(&cert, &chain_pem).map_err(write(&cert))?;
            write_private(&key, &key_pem).map_err(write(&key))?;
            tracing::info!(cert = %cert.display(), key = %key.display(), "generated self-signed cert");
        }
        let chain =
            CertificateDer::pem_slice_iter(chain_pem.as_bytes()).collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?;
        let ca_pem = chain.last().map(|c| pem("CERTIFICATE", c));
        Ok(ServingCert { chain, key, ca_pem })
    }
}

/// (leaf + CA PEM, key PEM) of a fresh CA and serving certificate, valid for a year.
fn generate(bind: IpAddr) -> Result<(String, String), rcgen::Error> {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, KeyUsagePurpose, SanType,
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let host = if bind.is_unspecified() {
        "localhost".to_string()
    } else {
        bind.to_string()
    };
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::default();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, format!("{host}-ca@{stamp}"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    set_validity(&mut ca_params);
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca = Issuer::new(ca_params, ca_key);

    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params
        .distinguished_name
        .push(DnType::CommonName, format!("{host}@{stamp}"));
    let mut ips: Vec<IpAddr> = vec![
        "127.0.0.1".parse().unwrap_or(bind),
        "::1".parse().unwrap_or(bind),
    ];
    if !bind.is_unspecified() && !ips.contains(&bind) {
        ips.push(bind);
    }
    params.subject_alt_names = vec![SanType::DnsName("localhost".try_into()?)];
    params
        .subject_alt_names
        .extend(ips.into_iter().map(SanType::IpAddress));
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    set_validity(&mut params);
    let cert = params.signed_by(&key, &ca)?;
    Ok((
        format!("{}{}", cert.pem(), ca_cert.pem()),
        key.serialize_pem(),
    ))
}

/// Valid from yesterday (clock skew) for a year, as kube's one-year pairs.
fn set_validity(params: &mut rcgen::CertificateParams) {
    use chrono::Datelike;
    let from = chrono::Utc::now() - chrono::Duration::days(1);
    let day = |d: chrono::DateTime<chrono::Utc>| {
        rcgen::date_time_ymd(d.year(), d.month() as u8, d.day() as u8)
    };
    params.not_before = day(from);
    params.not_after = day(from + chrono::Duration::days(366));
}

/// Write a file only its owner may read (keys, credentials).
#[cfg(unix)]
pub fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(contents.as_ref())
}

/// Write a file only its owner may read (keys, credentials).
#[cfg(not(unix))]
pub fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    std::fs::write(path, contents)
}

/// PEM text of one DER item.
pub fn pem(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The rustls server configuration: ring, ALPN `h2` then `http/1.1`, and, when
/// `client_ca_subjects` is not empty, client certificates requested (not required).
pub fn server_config(
    cert: &ServingCert,
    client_ca_subjects: Vec<DistinguishedName>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Protocol)?;
    let builder = if client_ca_subjects.is_empty() {
        builder.with_no_client_auth()
    } else {
        builder.with_client_cert_verifier(Arc::new(RequestClientCert {
            provider,
            subjects: client_ca_subjects,
        }))
    };
    let mut config = builder
        .with_single_cert(cert.chain.clone(), cert.key.clone_key())
        .map_err(TlsError::Certificate)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Go's `tls.RequestClientCert`: ask for a certificate, accept none or any; the
/// handshake still proves the client holds the key. `auth::x509` judges the chain.
#[derive(Debug)]
struct RequestClientCert {
    provider: Arc<CryptoProvider>,
    subjects: Vec<DistinguishedName>,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Go's `InsecureSkipVerify`: any certificate, handshake signatures still checked.
#[derive(Debug)]
pub struct SkipVerify(pub Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_pair_is_kept_in_the_cert_dir_and_reused() {
        let dir =
            std::env::temp_dir().join(format!("crd-apiserver-tls-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = ServingCert::self_signed("127.0.0.1".parse().unwrap(), Some(&dir)).unwrap();
        assert_eq!(first.chain.len(), 2);
        assert!(dir.join(CERT_DIR_CERT).exists() && dir.join(CERT_DIR_KEY).exists());
        let again = ServingCert::self_signed("127.0.0.1".parse().unwrap(), Some(&dir)).unwrap();
        assert_eq!(again.chain, first.chain);
        assert_eq!(again.ca_pem, first.ca_pem);
        assert!(server_config(&again, Vec::new()).is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
