//! Client certificates: verified against a CA after the handshake (the TLS server
//! requests certificates without requiring or judging them, as kube's
//! `RequestClientCert`), the user read from the subject: CN = user name, O = groups.

use super::{AuthConfigError, AuthError, Connection, UserInfo};
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::{DistinguishedName, RootCertStore};
use std::path::Path;
use std::sync::Arc;

/// A CA bundle that client certificates are verified against (client-auth usage).
pub struct CaVerifier {
    verifier: Arc<dyn ClientCertVerifier>,
    subjects: Vec<DistinguishedName>,
}

impl CaVerifier {
    /// Read a PEM bundle of CA certificates.
    pub fn from_pem_file(path: &Path) -> Result<CaVerifier, AuthConfigError> {
        let pem = std::fs::read(path).map_err(|e| AuthConfigError::Read(e).in_file(path))?;
        Self::from_pem(&pem).map_err(|e| e.in_file(path))
    }

    /// Parse a PEM bundle of CA certificates.
    pub fn from_pem(pem: &[u8]) -> Result<CaVerifier, AuthConfigError> {
        use rustls::pki_types::pem::PemObject;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(AuthConfigError::Pem)?;
            roots.add(cert).map_err(AuthConfigError::CaCertificate)?;
        }
        if roots.is_empty() {
            return Err(AuthConfigError::NoCertificate);
        }
        let subjects = roots.subjects();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build()?;
        Ok(CaVerifier { verifier, subjects })
    }

    /// The CAs' subject names (hints to clients in the TLS handshake).
    pub fn subjects(&self) -> &[DistinguishedName] {
        &self.subjects
    }

    /// Verify a presented chain (leaf first) for client authentication, now.
    pub fn verify(&self, chain: &[CertificateDer<'static>]) -> Result<(), AuthError> {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return Err(AuthError::NoClientCertificate);
        };
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map(|_| ())
            .map_err(|source| AuthError::CertificateVerification {
                common_name: subject(leaf).map(|(cn, _)| cn).unwrap_or_default(),
                source,
            })
    }
}

/// The subject's common name and organizations of a certificate.
pub fn subject(cert: &CertificateDer<'_>) -> Result<(String, Vec<String>), AuthError> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(AuthError::InvalidCertificate)?;
    let name = parsed.subject();
    let cn = name
        .iter_common_name()
        .next()
        .and_then(|a| a.as_str().ok())
        .unwrap_or("")
        .to_string();
    let orgs = name
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok((cn, orgs))
}

/// kube's x509 authenticator: `Ok(None)` without a certificate or with an empty CN,
/// `Err` when the certificate does not verify against `ca`.
pub fn authenticate(ca: &CaVerifier, conn: &Connection) -> Result<Option<UserInfo>, AuthError> {
    let Some(leaf) = conn.peer_certificates.first() else {
        return Ok(None);
    };
    ca.verify(&conn.peer_certificates)?;
    let (cn, groups) = subject(leaf)?;
    if cn.is_empty() {
        return Ok(None);
    }
    Ok(Some(UserInfo {
        username: cn,
        groups,
        ..Default::default()
    }))
}
