//! Webhook server certificates verified as Go's `crypto/x509` verifies them for kube's
//! webhook clients (`Certificate.Verify` with the `caBundle` as roots, the URL's host
//! or the Service's name as `DNSName`, server-auth usage): a leaf that is itself one of
//! the roots is trusted as it is (a self-signed `CA:TRUE` certificate included), names
//! are matched against SANs only (IP SANs for IP hosts), and failures read as Go's
//! errors. Signatures are checked by rustls' ring algorithms.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, OtherError, SignatureScheme};
use std::net::IpAddr;
use std::sync::Arc;
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::x509::X509Version;

/// The most signatures one verification checks (Go's `maxChainSignatureChecks`).
const MAX_SIGNATURE_CHECKS: usize = 100;

/// A failed verification in Go's `crypto/tls` words (what kube prints after
/// `Post "<url>": `).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// A presented certificate does not parse.
    #[error("tls: failed to parse certificate from server: x509: malformed certificate")]
    Malformed,
    /// The server presented no certificate.
    #[error("tls: server's certificate chain is empty")]
    EmptyChain,
    /// The chain does not verify.
    #[error("tls: failed to verify certificate: {0}")]
    Certificate(#[source] X509Error),
}

/// Why a certificate does not verify, in Go's `crypto/x509` words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum X509Error {
    /// No chain allows server authentication (Go's `IncompatibleUsage`).
    #[error("x509: certificate specifies an incompatible key usage")]
    IncompatibleUsage,
    /// Used before its `notBefore` (Unix seconds).
    #[error("x509: certificate has expired or is not yet valid: current time {} is before {}", rfc3339(*.now), rfc3339(*.not_before))]
    NotYetValid {
        /// The time of the check.
        now: i64,
        /// The certificate's `notBefore`.
        not_before: i64,
    },
    /// Used after its `notAfter` (Unix seconds).
    #[error("x509: certificate has expired or is not yet valid: current time {} is after {}", rfc3339(*.now), rfc3339(*.not_after))]
    Expired {
        /// The time of the check.
        now: i64,
        /// The certificate's `notAfter`.
        not_after: i64,
    },
    /// Go's `maxChainSignatureChecks` was reached.
    #[error("x509: signature check attempts limit reached while verifying certificate chain")]
    TooManySignatureChecks,
    /// No chain reaches a root (Go's `UnknownAuthorityError`).
    #[error("x509: certificate signed by unknown authority{}", unknown_authority_hint(.hint.as_deref()))]
    UnknownAuthority {
        /// Why the first candidate authority failed, and its name.
        hint: Option<Box<(X509Error, String)>>,
    },
    /// An intermediate that is no CA (Go's `NotAuthorizedToSign`).
    #[error("x509: certificate is not authorized to sign other certificates")]
    NotAuthorizedToSign,
    /// A path length constraint is exceeded (Go's `TooManyIntermediates`).
    #[error("x509: too many intermediates for path length constraint")]
    TooManyIntermediates,
    /// Go's `ConstraintViolationError`.
    #[error("x509: invalid signature: parent certificate cannot sign this kind of certificate")]
    ConstraintViolation,
    /// The signature's algorithm needs another key type than the parent's.
    #[error("x509: signature algorithm specifies an {wanted} public key, but have public key of type {have}")]
    KeyMismatch {
        /// The key type the signature needs.
        wanted: &'static str,
        /// Go's `%T` of the parent's key.
        have: &'static str,
    },
    /// Go cannot check such a signature.
    #[error("x509: cannot verify signature: algorithm unimplemented")]
    Unimplemented,
    /// The signature does not verify (Go's text for the key type).
    #[error("{0}")]
    Signature(&'static str),
    /// Only the Common Name would match (Go's `HostnameError` without SANs).
    #[error("x509: certificate relies on legacy Common Name field, use SANs instead")]
    LegacyCommonName,
    /// An IP host and a certificate without IP SANs.
    #[error("x509: cannot validate certificate for {0} because it doesn't contain any IP SANs")]
    NoIpSans(String),
    /// A certificate without names.
    #[error("x509: certificate is not valid for any names, but wanted to match {0}")]
    NoNames(String),
    /// A certificate for other names.
    #[error("x509: certificate is valid for {valid}, not {host}")]
    WrongName {
        /// The names it is valid for, joined with `, `.
        valid: String,
        /// The host asked for.
        host: String,
    },
}

/// The ` (possibly because of ...)` of Go's `UnknownAuthorityError`.
fn unknown_authority_hint(hint: Option<&(X509Error, String)>) -> String {
    hint.map(|(error, name)| {
        format!(
            " (possibly because of {:?} while trying to verify candidate authority certificate {name:?})",
            error.to_string()
        )
    })
    .unwrap_or_default()
}

/// A rustls verifier of webhook servers with Go's rules, trusting `roots` only.
#[derive(Debug)]
pub struct GoVerifier {
    roots: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl GoVerifier {
    /// A verifier trusting `roots` (the certificates of a `caBundle`).
    pub fn new(roots: Vec<CertificateDer<'static>>) -> GoVerifier {
        GoVerifier {
            roots,
            algorithms: rustls::crypto::ring::default_provider().signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for GoVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let host = match server_name {
            ServerName::DnsName(name) => name.as_ref().to_string(),
            ServerName::IpAddress(ip) => IpAddr::from(*ip).to_string(),
            other => other.to_str().into_owned(),
        };
        let mut chain = vec![end_entity.clone()];
        chain.extend(intermediates.iter().cloned());
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        verify(&self.roots, &chain, &host, now, &self.algorithms)
            .map(|()| ServerCertVerified::assertion())
            .map_err(|e| {
                rustls::Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(e))))
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Go's `InsecureSkipVerify` (kept in `tls`, below every client that uses it).
pub use crate::tls::SkipVerify;

/// One parsed certificate and its DER.
struct Cert<'a> {
    der: &'a [u8],
    x509: X509Certificate<'a>,
}

/// Where a candidate parent comes from (Go's `rootCertificate`/`intermediateCertificate`).
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Root,
    Intermediate,
}

/// Verify `chain` (the server's certificates, leaf first) for `host` at `now` (Unix
/// seconds) against `roots`, as Go's TLS client does; the error is Go's text, with
/// its `tls: ...` prefix.
pub fn verify(
    roots: &[CertificateDer<'_>],
    chain: &[CertificateDer<'_>],
    host: &str,
    now: i64,
    algorithms: &WebPkiSupportedAlgorithms,
) -> Result<(), VerifyError> {
    let mut presented = Vec::with_capacity(chain.len());
    for der in chain {
        match x509_parser::parse_x509_certificate(der) {
            Ok((_, x509)) => presented.push(Cert { der, x509 }),
            Err(_) => return Err(VerifyError::Malformed),
        }
    }
    let Some((leaf, intermediates)) = presented.split_first() else {
        return Err(VerifyError::EmptyChain);
    };
    // Go's AppendCertsFromPEM skips what does not parse.
    let roots: Vec<Cert> = roots
        .iter()
        .filter_map(|der| {
            x509_parser::parse_x509_certificate(der)
                .ok()
                .map(|(_, x509)| Cert { der, x509 })
        })
        .collect();
    let pools = Pools {
        roots: &roots,
        intermediates,
        now,
        algorithms,
    };
    verify_leaf(leaf, &pools, host).map_err(VerifyError::Certificate)
}

/// The certificates and settings of one verification.
struct Pools<'p, 'a> {
    roots: &'p [Cert<'a>],
    intermediates: &'p [Cert<'a>],
    now: i64,
    algorithms: &'p WebPkiSupportedAlgorithms,
}

/// Go's `Certificate.Verify` in its order: validity, host name, chains, key usage.
fn verify_leaf(leaf: &Cert, pools: &Pools, host: &str) -> Result<(), X509Error> {
    check_validity_period(leaf, pools.now)?;
    verify_hostname(&leaf.x509, host)?;
    let chains = if pools.roots.iter().any(|r| r.der == leaf.der) {
        vec![vec![leaf]]
    } else {
        let mut checks = 0;
        build_chains(leaf, &[leaf], pools, &mut checks)?
    };
    if chains.iter().any(|chain| allows_server_auth(chain)) {
        Ok(())
    } else {
        Err(X509Error::IncompatibleUsage)
    }
}

/// Go's expiry check of `isValid`.
fn check_validity_period(cert: &Cert, now: i64) -> Result<(), X509Error> {
    let validity = cert.x509.validity();
    let (not_before, not_after) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    if now < not_before {
        Err(X509Error::NotYetValid { now, not_before })
    } else if now > not_after {
        Err(X509Error::Expired { now, not_after })
    } else {
        Ok(())
    }
}

/// Go's `time.RFC3339` form of a UTC time.
fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Go's `buildChains`: every chain from `cert` (the last of `current`) to a root,
/// through the presented intermediates; Go's error when there is none.
fn build_chains<'p, 'a>(
    cert: &'p Cert<'a>,
    current: &[&'p Cert<'a>],
    pools: &Pools<'p, 'a>,
    checks: &mut usize,
) -> Result<Vec<Vec<&'p Cert<'a>>>, X509Error> {
    let mut chains = Vec::new();
    let mut hint: Option<(X509Error, &Cert)> = None;
    let mut error = None;
    let candidates = (potential_parents(cert, pools.roots).map(|c| (c, Role::Root)))
        .chain(potential_parents(cert, pools.intermediates).map(|c| (c, Role::Intermediate)));
    for (candidate, role) in candidates {
        if current.iter().any(|c| same_key_and_subject(c, candidate)) {
            continue;
        }
        *checks += 1;
        if *checks > MAX_SIGNATURE_CHECKS {
            error = Some(X509Error::TooManySignatureChecks);
            continue;
        }
        let checked = check_signature_from(cert, candidate, pools.algorithms)
            .and_then(|()| check_parent(candidate, role, current, pools.now));
        if let Err(e) = checked {
            hint.get_or_insert((e, candidate));
            continue;
        }
        let mut chain = current.to_vec();
        chain.push(candidate);
        match role {
            Role::Root => chains.push(chain),
            // As Go, the last intermediate's failure is the one reported.
            Role::Intermediate => match build_chains(candidate, &chain, pools, checks) {
                Ok(found) => {
                    chains.extend(found);
                    error = None;
                }
                Err(e) => error = Some(e),
            },
        }
    }
    if !chains.is_empty() {
        return Ok(chains);
    }
    Err(error.unwrap_or_else(|| unknown_authority(hint)))
}

/// Go's `findPotentialParents`: the certificates of `pool` named as `cert`'s issuer,
/// those whose key identifier matches first, then those where one side has none.
fn potential_parents<'p, 'a>(
    cert: &Cert,
    pool: &'p [Cert<'a>],
) -> impl Iterator<Item = &'p Cert<'a>> {
    let authority = authority_key_id(&cert.x509);
    let mut found: Vec<(u8, &Cert)> = pool
        .iter()
        .filter(|c| c.x509.subject().as_raw() == cert.x509.issuer().as_raw())
        .map(|c| {
            let subject = subject_key_id(&c.x509);
            let rank = if subject == authority {
                0
            } else if subject.is_empty() != authority.is_empty() {
                1
            } else {
                2
            };
            (rank, c)
        })
        .collect();
    found.sort_by_key(|(rank, _)| *rank);
    found.into_iter().map(|(_, c)| c)
}

/// A certificate's subject key identifier (empty without one).
fn subject_key_id<'a>(cert: &X509Certificate<'a>) -> &'a [u8] {
    cert.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => Some(id.0),
            _ => None,
        })
        .unwrap_or_default()
}

/// The key identifier of a certificate's authority key identifier (empty without one).
fn authority_key_id<'a>(cert: &X509Certificate<'a>) -> &'a [u8] {
    cert.extensions()
        .iter()
        .find_map(|e| match e.parsed_extension() {
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                aki.key_identifier.as_ref().map(|k| k.0)
            }
            _ => None,
        })
        .unwrap_or_default()
}

/// Go's `alreadyInChain` (subject and public key).
fn same_key_and_subject(a: &Cert, b: &Cert) -> bool {
    a.x509.subject().as_raw() == b.x509.subject().as_raw()
        && a.x509.public_key().raw == b.x509.public_key().raw
}

/// Go's `UnknownAuthorityError`, with the first candidate's failure as its hint.
fn unknown_authority(hint: Option<(X509Error, &Cert)>) -> X509Error {
    let hint = hint.map(|(error, candidate)| {
        let subject = candidate.x509.subject();
        let text = |a: &x509_parser::x509::AttributeTypeAndValue| a.as_str().ok().map(String::from);
        let name = subject
            .iter_common_name()
            .filter_map(text)
            .last()
            .filter(|n| !n.is_empty())
            .or_else(|| subject.iter_organization().filter_map(text).next())
            .unwrap_or_else(|| format!("serial:{}", candidate.x509.serial));
        Box::new((error, name))
    });
    X509Error::UnknownAuthority { hint }
}

/// Go's `isValid` for a parent: validity, CA-ness of intermediates, path length.
fn check_parent(cert: &Cert, role: Role, current: &[&Cert], now: i64) -> Result<(), X509Error> {
    check_validity_period(cert, now)?;
    let constraints = basic_constraints(cert);
    if role == Role::Intermediate && !constraints.is_some_and(|(ca, _)| ca) {
        return Err(X509Error::NotAuthorizedToSign);
    }
    if let Some((_, Some(max))) = constraints {
        if current.len().saturating_sub(1) > max as usize {
            return Err(X509Error::TooManyIntermediates);
        }
    }
    Ok(())
}

/// `(cA, pathLenConstraint)` when the certificate has basic constraints.
fn basic_constraints(cert: &Cert) -> Option<(bool, Option<u32>)> {
    cert.x509
        .basic_constraints()
        .ok()
        .flatten()
        .map(|bc| (bc.value.ca, bc.value.path_len_constraint))
}

/// Go's `CheckSignatureFrom`: `parent` may sign certificates and signed `child`.
fn check_signature_from(
    child: &Cert,
    parent: &Cert,
    algorithms: &WebPkiSupportedAlgorithms,
) -> Result<(), X509Error> {
    let constraints = basic_constraints(parent);
    let v3 = parent.x509.version() == X509Version::V3;
    if (v3 && constraints.is_none()) || constraints.is_some_and(|(ca, _)| !ca) {
        return Err(X509Error::ConstraintViolation);
    }
    if let Ok(Some(usage)) = parent.x509.key_usage() {
        if !usage.value.key_cert_sign() {
            return Err(X509Error::ConstraintViolation);
        }
    }
    let family = KeyFamily::of_signature(&child.x509);
    let key_family = KeyFamily::of_key(&parent.x509);
    if let (Some(wanted), Some(have)) = (family, key_family) {
        if wanted != have {
            return Err(X509Error::KeyMismatch {
                wanted: wanted.name(),
                have: have.go_type(),
            });
        }
    }
    let (tbs, signature_algorithm, signature) =
        signed_parts(child.der).ok_or(X509Error::Unimplemented)?;
    let (key_algorithm, key) =
        key_parts(parent.x509.public_key().raw).ok_or(X509Error::Unimplemented)?;
    let mut matching = algorithms
        .all
        .iter()
        .filter(|a| {
            a.signature_alg_id().as_ref() == signature_algorithm
                && a.public_key_alg_id().as_ref() == key_algorithm
        })
        .peekable();
    if matching.peek().is_none() {
        return Err(X509Error::Unimplemented);
    }
    if matching.any(|a| a.verify_signature(key, tbs, signature).is_ok()) {
        return Ok(());
    }
    Err(family.map_or(X509Error::Unimplemented, |f| {
        X509Error::Signature(f.verification_failure())
    }))
}

/// The key types Go's `checkSignature` tells apart.
#[derive(Clone, Copy, PartialEq)]
enum KeyFamily {
    Rsa,
    Ecdsa,
    Ed25519,
}

impl KeyFamily {
    /// The key type a certificate's signature algorithm needs.
    fn of_signature(cert: &X509Certificate) -> Option<KeyFamily> {
        KeyFamily::of_oid(&cert.signature_algorithm.algorithm.to_id_string())
    }

    /// The type of a certificate's public key.
    fn of_key(cert: &X509Certificate) -> Option<KeyFamily> {
        KeyFamily::of_oid(&cert.public_key().algorithm.algorithm.to_id_string())
    }

    /// RSA (PKCS #1 and PSS), ECDSA and Ed25519 signature or key OIDs.
    fn of_oid(oid: &str) -> Option<KeyFamily> {
        if oid.starts_with("1.2.840.113549.1.1.") {
            Some(KeyFamily::Rsa)
        } else if oid.starts_with("1.2.840.10045.") {
            Some(KeyFamily::Ecdsa)
        } else if oid == "1.3.101.112" {
            Some(KeyFamily::Ed25519)
        } else {
            None
        }
    }

    fn name(self) -> &'static str {
        match self {
            KeyFamily::Rsa => "RSA",
            KeyFamily::Ecdsa => "ECDSA",
            KeyFamily::Ed25519 => "Ed25519",
        }
    }

    /// Go's `%T` of such a public key.
    fn go_type(self) -> &'static str {
        match self {
            KeyFamily::Rsa => "*rsa.PublicKey",
            KeyFamily::Ecdsa => "*ecdsa.PublicKey",
            KeyFamily::Ed25519 => "ed25519.PublicKey",
        }
    }

    /// Go's error for a signature that does not verify.
    fn verification_failure(self) -> &'static str {
        match self {
            KeyFamily::Rsa => "crypto/rsa: verification error",
            KeyFamily::Ecdsa => "x509: ECDSA verification failure",
            KeyFamily::Ed25519 => "x509: Ed25519 verification failure",
        }
    }
}

/// One DER element: `(whole element, contents, rest)`.
fn der_element(input: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (_tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    let header = input.len() - rest.len();
    Some((&input[..header + len], &rest[..len], &rest[len..]))
}

/// The contents of a BIT STRING without unused bits.
fn bit_string(contents: &[u8]) -> Option<&[u8]> {
    match contents.split_first() {
        Some((0, bits)) => Some(bits),
        _ => None,
    }
}

/// A certificate's signed `tbsCertificate`, its signature algorithm (the
/// AlgorithmIdentifier's contents) and the signature.
fn signed_parts(der: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let (_, certificate, _) = der_element(der)?;
    let (tbs, _, rest) = der_element(certificate)?;
    let (_, algorithm, rest) = der_element(rest)?;
    let (_, signature, _) = der_element(rest)?;
    Some((tbs, algorithm, bit_string(signature)?))
}

/// A SubjectPublicKeyInfo's algorithm (contents) and key bits.
fn key_parts(spki: &[u8]) -> Option<(&[u8], &[u8])> {
    let (_, info, _) = der_element(spki)?;
    let (_, algorithm, rest) = der_element(info)?;
    let (_, key, _) = der_element(rest)?;
    Some((algorithm, bit_string(key)?))
}

/// Go's `checkChainForKeyUsage` for server auth: every certificate with extended key
/// usages allows any usage or server auth.
fn allows_server_auth(chain: &[&Cert]) -> bool {
    chain
        .iter()
        .all(|cert| match cert.x509.extended_key_usage() {
            Ok(Some(eku)) => {
                let eku = eku.value;
                eku.any || eku.server_auth
            }
            _ => true,
        })
}

/// A certificate's DNS and IP SANs, and whether it has a SAN extension at all.
fn sans<'a>(cert: &'a X509Certificate) -> (Vec<&'a str>, Vec<IpAddr>, bool) {
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        let present = cert
            .extensions()
            .iter()
            .any(|e| e.oid == x509_parser::oid_registry::OID_X509_EXT_SUBJECT_ALT_NAME);
        return (Vec::new(), Vec::new(), present);
    };
    let mut dns = Vec::new();
    let mut ips = Vec::new();
    for name in &san.value.general_names {
        match name {
            GeneralName::DNSName(d) => dns.push(*d),
            GeneralName::IPAddress(bytes) => {
                if let Ok(v4) = <[u8; 4]>::try_from(*bytes) {
                    ips.push(IpAddr::from(v4));
                } else if let Ok(v6) = <[u8; 16]>::try_from(*bytes) {
                    ips.push(std::net::Ipv6Addr::from(v6).to_canonical());
                }
            }
            _ => {}
        }
    }
    (dns, ips, true)
}

/// Go's `VerifyHostname`: IPs against IP SANs, names against DNS SANs, no Common Name.
fn verify_hostname(cert: &X509Certificate, host: &str) -> Result<(), X509Error> {
    let (dns, ips, _) = sans(cert);
    let candidate_ip = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .filter(|_| host.len() >= 3)
        .unwrap_or(host);
    if let Ok(ip) = candidate_ip.parse::<IpAddr>() {
        if ips.contains(&ip.to_canonical()) {
            return Ok(());
        }
        return Err(hostname_error(cert, candidate_ip));
    }
    let name = host.to_ascii_lowercase();
    let valid_name = valid_hostname(&name, false);
    let matched = dns.iter().any(|pattern| {
        if valid_name && valid_hostname(pattern, true) {
            match_hostnames(pattern, &name)
        } else {
            match_exactly(pattern, &name)
        }
    });
    if matched {
        Ok(())
    } else {
        Err(hostname_error(cert, host))
    }
}

/// Go's `HostnameError` text.
fn hostname_error(cert: &X509Certificate, host: &str) -> X509Error {
    let (dns, ips, has_san) = sans(cert);
    let common_name = cert
        .subject()
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()
        .unwrap_or("");
    if !has_san && match_hostnames(common_name, host) {
        return X509Error::LegacyCommonName;
    }
    let valid = if host.parse::<IpAddr>().is_ok() {
        if ips.is_empty() {
            return X509Error::NoIpSans(host.to_string());
        }
        ips.iter()
            .map(IpAddr::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        dns.join(", ")
    };
    if valid.is_empty() {
        return X509Error::NoNames(host.to_string());
    }
    X509Error::WrongName {
        valid,
        host: host.to_string(),
    }
}

/// Go's `validHostname`: letters, digits, `-` (not first), `_`; a pattern may start
/// with a whole `*` label.
fn valid_hostname(host: &str, pattern: bool) -> bool {
    let host = if pattern {
        host
    } else {
        host.strip_suffix('.').unwrap_or(host)
    };
    if host.is_empty() || host == "*" {
        return false;
    }
    host.split('.').enumerate().all(|(i, part)| {
        !part.is_empty()
            && ((pattern && i == 0 && part == "*")
                || part
                    .chars()
                    .enumerate()
                    .all(|(j, c)| c.is_ascii_alphanumeric() || c == '_' || (c == '-' && j != 0)))
    })
}

/// Go's `matchHostnames`: label by label, a leading `*` matching one label.
fn match_hostnames(pattern: &str, host: &str) -> bool {
    let pattern = pattern.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    if pattern.is_empty() || host.is_empty() {
        return false;
    }
    let (pattern_parts, host_parts): (Vec<&str>, Vec<&str>) =
        (pattern.split('.').collect(), host.split('.').collect());
    pattern_parts.len() == host_parts.len()
        && pattern_parts
            .iter()
            .zip(&host_parts)
            .enumerate()
            .all(|(i, (p, h))| (i == 0 && *p == "*") || p == h)
}

/// Go's `matchExactly`: case-insensitive equality of non-empty names.
fn match_exactly(a: &str, b: &str) -> bool {
    !(a.is_empty() || a == "." || b.is_empty() || b == ".") && a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
        KeyPair, SanType,
    };

    const NOW: i64 = 1_900_000_000;

    fn algorithms() -> WebPkiSupportedAlgorithms {
        rustls::crypto::ring::default_provider().signature_verification_algorithms
    }

    fn params(cn: &str, sans: &[&str], ca: bool) -> CertificateParams {
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        p.distinguished_name.push(DnType::CommonName, cn);
        p.subject_alt_names = sans
            .iter()
            .map(|s| match s.parse::<IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => {
                    SanType::DnsName(s.to_string().try_into().unwrap_or_else(|e| panic!("{e}")))
                }
            })
            .collect();
        if ca {
            p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        }
        p
    }

    fn self_signed(p: CertificateParams) -> (CertificateDer<'static>, Issuer<'static, KeyPair>) {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let cert = p.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        (cert.der().clone(), Issuer::new(p, key))
    }

    fn signed(p: CertificateParams, ca: &Issuer<'_, KeyPair>) -> CertificateDer<'static> {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        p.signed_by(&key, ca)
            .unwrap_or_else(|e| panic!("{e}"))
            .der()
            .clone()
    }

    /// A verification's Go text.
    fn check(roots: &[CertificateDer], chain: &[CertificateDer], host: &str) -> Result<(), String> {
        verify(roots, chain, host, NOW, &algorithms()).map_err(|e| e.to_string())
    }

    #[test]
    fn a_self_signed_ca_leaf_in_the_bundle_is_trusted_as_is() {
        let (leaf, _) = self_signed(params("127.0.0.1", &["127.0.0.1"], true));
        assert_eq!(
            check(
                std::slice::from_ref(&leaf),
                std::slice::from_ref(&leaf),
                "127.0.0.1"
            ),
            Ok(())
        );
        let (other, _) = self_signed(params("other", &[], true));
        assert_eq!(
            check(&[other], &[leaf], "127.0.0.1"),
            Err(
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                    .into()
            )
        );
    }

    #[test]
    fn a_ca_leaf_signed_by_the_bundle_is_trusted_and_a_same_named_ca_is_a_hint() {
        let (ca, issuer) = self_signed(params("webhook-ca", &[], true));
        let leaf = signed(params("leaf", &["gate.webhooks.svc"], true), &issuer);
        assert_eq!(
            check(&[ca], std::slice::from_ref(&leaf), "gate.webhooks.svc"),
            Ok(())
        );
        // Another CA with the same subject: Go names the failed candidate.
        let (impostor, _) = self_signed(params("webhook-ca", &[], true));
        assert_eq!(
            check(&[impostor], &[leaf], "gate.webhooks.svc"),
            Err("tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"x509: ECDSA verification failure\" while trying to verify candidate authority certificate \"webhook-ca\")".into())
        );
    }

    #[test]
    fn intermediates_presented_by_the_server_complete_the_chain() {
        let (root, root_issuer) = self_signed(params("root", &[], true));
        let p = params("intermediate", &[], true);
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let intermediate = p
            .clone()
            .signed_by(&key, &root_issuer)
            .unwrap_or_else(|e| panic!("{e}"))
            .der()
            .clone();
        let leaf = signed(
            params("leaf", &["example.com"], false),
            &Issuer::new(p, key),
        );
        assert_eq!(
            check(
                std::slice::from_ref(&root),
                &[leaf.clone(), intermediate],
                "example.com"
            ),
            Ok(())
        );
        assert_eq!(
            check(&[root], &[leaf], "example.com"),
            Err(
                "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                    .into()
            )
        );
    }

    #[test]
    fn names_are_matched_against_sans_with_gos_texts() {
        let (ip_leaf, _) = self_signed(params("127.0.0.1", &["10.0.0.1", "::1"], false));
        let roots = [ip_leaf.clone()];
        let prefix = "tls: failed to verify certificate: x509: ";
        let fails = |leaf: &CertificateDer, host: &str, text: &str| {
            let certs = std::slice::from_ref(leaf);
            assert_eq!(
                check(certs, certs, host),
                Err(format!("{prefix}{text}")),
                "{host}"
            );
        };
        assert_eq!(
            check(&roots, std::slice::from_ref(&ip_leaf), "10.0.0.1"),
            Ok(())
        );
        assert_eq!(
            check(&roots, std::slice::from_ref(&ip_leaf), "[::1]"),
            Ok(())
        );
        fails(
            &ip_leaf,
            "127.0.0.1",
            "certificate is valid for 10.0.0.1, ::1, not 127.0.0.1",
        );
        fails(
            &ip_leaf,
            "example.com",
            "certificate is not valid for any names, but wanted to match example.com",
        );

        let (dns_leaf, _) = self_signed(params(
            "cn.example.org",
            &["*.example.com", "gate.webhooks.svc"],
            false,
        ));
        let roots = [dns_leaf.clone()];
        assert_eq!(
            check(&roots, std::slice::from_ref(&dns_leaf), "A.Example.com"),
            Ok(())
        );
        assert_eq!(
            check(
                &roots,
                std::slice::from_ref(&dns_leaf),
                "gate.webhooks.svc."
            ),
            Ok(())
        );
        fails(
            &dns_leaf,
            "a.b.example.com",
            "certificate is valid for *.example.com, gate.webhooks.svc, not a.b.example.com",
        );
        fails(
            &dns_leaf,
            "127.0.0.1",
            "cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs",
        );
        // The Common Name is never a name to match.
        fails(
            &dns_leaf,
            "cn.example.org",
            "certificate is valid for *.example.com, gate.webhooks.svc, not cn.example.org",
        );

        let (cn_only, _) = self_signed(params("127.0.0.1", &[], true));
        fails(
            &cn_only,
            "127.0.0.1",
            "certificate relies on legacy Common Name field, use SANs instead",
        );
    }

    #[test]
    fn host_is_checked_before_the_authority_and_expiry_first() {
        let (leaf, _) = self_signed(params("x", &["example.com"], false));
        let (other, _) = self_signed(params("other", &[], true));
        assert_eq!(
            check(std::slice::from_ref(&other), std::slice::from_ref(&leaf), "example.org"),
            Err("tls: failed to verify certificate: x509: certificate is valid for example.com, not example.org".into())
        );
        let mut p = params("x", &["example.com"], false);
        p.not_after = rcgen::date_time_ymd(2020, 1, 2);
        let (expired, _) = self_signed(p);
        assert_eq!(
            check(&[other], &[expired], "example.org"),
            Err(format!("tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time {} is after 2020-01-02T00:00:00Z", rfc3339(NOW)))
        );
    }

    #[test]
    fn a_leaf_only_for_client_auth_is_refused() {
        let mut p = params("x", &["example.com"], false);
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let (leaf, _) = self_signed(p);
        assert_eq!(
            check(std::slice::from_ref(&leaf), std::slice::from_ref(&leaf), "example.com"),
            Err("tls: failed to verify certificate: x509: certificate specifies an incompatible key usage".into())
        );
    }

    #[test]
    fn a_parent_that_is_no_ca_cannot_sign() {
        let (root, issuer) = self_signed(params("not-a-ca", &[], false));
        let leaf = signed(params("leaf", &["example.com"], false), &issuer);
        assert_eq!(
            check(&[root], &[leaf], "example.com"),
            Err("tls: failed to verify certificate: x509: certificate signed by unknown authority (possibly because of \"x509: invalid signature: parent certificate cannot sign this kind of certificate\" while trying to verify candidate authority certificate \"not-a-ca\")".into())
        );
    }
}
