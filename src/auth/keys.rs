//! Service account keys as kube-apiserver reads them (client-go's `keyutil`): the
//! signing key of `--service-account-signing-key-file` (PEM `PRIVATE KEY` PKCS#8,
//! `RSA PRIVATE KEY` PKCS#1 or `EC PRIVATE KEY` SEC1; RSA signs RS256, ECDSA P-256
//! ES256 and P-384 ES384) and the verification keys of `--service-account-key-file`
//! (every PEM block that is an RSA private key, a public key or certificate, or an EC
//! SEC1 private key — kube's list, which leaves out PKCS#8 EC private keys). A key's
//! `kid` is kube's: base64url of the SHA-256 of its PKIX (SubjectPublicKeyInfo) DER.

use super::{AuthConfigError, AuthError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use std::path::Path;

/// The content octets of the OIDs a key names.
const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

/// The elliptic curves ring signs with (kube also takes P-521, which ring lacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Curve {
    P256,
    P384,
}

impl Curve {
    const ALL: [Curve; 2] = [Curve::P256, Curve::P384];

    fn oid(self) -> &'static [u8] {
        match self {
            Curve::P256 => OID_P256,
            Curve::P384 => OID_P384,
        }
    }

    /// The JWS `alg` of tokens this curve signs.
    fn alg(self) -> &'static str {
        match self {
            Curve::P256 => "ES256",
            Curve::P384 => "ES384",
        }
    }

    fn signing(self) -> &'static signature::EcdsaSigningAlgorithm {
        match self {
            Curve::P256 => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
            Curve::P384 => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
        }
    }

    fn verification(self) -> &'static signature::EcdsaVerificationAlgorithm {
        match self {
            Curve::P256 => &signature::ECDSA_P256_SHA256_FIXED,
            Curve::P384 => &signature::ECDSA_P384_SHA384_FIXED,
        }
    }
}

/// A key that verifies service account tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicKey {
    kind: PublicKind,
    kid: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PublicKind {
    /// The uncompressed point.
    Ec { curve: Curve, point: Vec<u8> },
    /// The PKCS#1 `RSAPublicKey` DER.
    Rsa { pkcs1: Vec<u8> },
}

impl PublicKey {
    fn new(kind: PublicKind) -> PublicKey {
        let spki = match &kind {
            PublicKind::Ec { curve, point } => spki(
                &[der(0x06, OID_EC_PUBLIC_KEY), der(0x06, curve.oid())].concat(),
                point,
            ),
            PublicKind::Rsa { pkcs1 } => spki(
                &[der(0x06, OID_RSA_ENCRYPTION), der(0x05, &[])].concat(),
                pkcs1,
            ),
        };
        let kid = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(&spki));
        PublicKey { kind, kid }
    }

    /// A SubjectPublicKeyInfo's key, when it is RSA or ECDSA on a curve we verify.
    fn from_spki(info: &x509_parser::x509::SubjectPublicKeyInfo<'_>) -> Option<PublicKey> {
        let key = info.subject_public_key.data.to_vec();
        let kind = match info.algorithm.algorithm.as_bytes() {
            OID_RSA_ENCRYPTION => PublicKind::Rsa { pkcs1: key },
            OID_EC_PUBLIC_KEY => {
                let named = info.algorithm.parameters.as_ref()?.as_oid().ok()?;
                let curve = Curve::ALL
                    .into_iter()
                    .find(|c| c.oid() == named.as_bytes())?;
                PublicKind::Ec { curve, point: key }
            }
            _ => return None,
        };
        Some(PublicKey::new(kind))
    }

    /// kube's key ID.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Whether `sig` is this key's JWS signature of `message` with `alg` (go-jose
    /// fails every mismatch alike: an algorithm not of this key's type included).
    pub fn verifies(&self, alg: &str, message: &[u8], sig: &[u8]) -> bool {
        match &self.kind {
            PublicKind::Ec { curve, point } => {
                alg == curve.alg()
                    && signature::UnparsedPublicKey::new(curve.verification(), point)
                        .verify(message, sig)
                        .is_ok()
            }
            PublicKind::Rsa { pkcs1 } => {
                alg == "RS256"
                    && signature::UnparsedPublicKey::new(
                        &signature::RSA_PKCS1_2048_8192_SHA256,
                        pkcs1,
                    )
                    .verify(message, sig)
                    .is_ok()
            }
        }
    }
}

/// The key that signs service account tokens.
pub struct SigningKey {
    signer: Signer,
    public: PublicKey,
    rng: SystemRandom,
}

enum Signer {
    Ec(EcdsaKeyPair, Curve),
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("alg", &self.alg())
            .field("kid", &self.public.kid)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// An ECDSA P-256 key generated now (when no `--service-account-signing-key-file`).
    pub fn generate() -> Result<SigningKey, AuthConfigError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(Curve::P256.signing(), &rng)
            .map_err(|_| AuthConfigError::KeyGeneration)?;
        let key = EcdsaKeyPair::from_pkcs8(Curve::P256.signing(), pkcs8.as_ref(), &rng)
            .map_err(AuthConfigError::KeyType)?;
        Ok(SigningKey::ec(key, Curve::P256, rng))
    }

    fn ec(key: EcdsaKeyPair, curve: Curve, rng: SystemRandom) -> SigningKey {
        let point = key.public_key().as_ref().to_vec();
        SigningKey {
            signer: Signer::Ec(key, curve),
            public: PublicKey::new(PublicKind::Ec { curve, point }),
            rng,
        }
    }

    fn rsa(key: RsaKeyPair, rng: SystemRandom) -> SigningKey {
        let pkcs1 = key.public_key().as_ref().to_vec();
        SigningKey {
            signer: Signer::Rsa(key),
            public: PublicKey::new(PublicKind::Rsa { pkcs1 }),
            rng,
        }
    }

    /// The first private key in a PEM file, in kube's words when there is none:
    /// `error reading private key file PATH: data does not contain a valid RSA or
    /// ECDSA private key`.
    pub fn from_file(path: &Path) -> Result<SigningKey, AuthConfigError> {
        let data = std::fs::read(path).map_err(|e| AuthConfigError::Read(e).in_file(path))?;
        SigningKey::from_pem(&data).ok_or_else(|| AuthConfigError::PrivateKeyFile {
            path: path.display().to_string(),
        })
    }

    /// The first PEM block of `data` that is a private key ring can sign with.
    pub fn from_pem(data: &[u8]) -> Option<SigningKey> {
        pem_blocks(data).find_map(|(label, der)| {
            let rng = SystemRandom::new();
            match label.as_str() {
                "EC PRIVATE KEY" => sec1(&der, &rng).map(|(k, c)| SigningKey::ec(k, c, rng)),
                "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der)
                    .ok()
                    .map(|k| SigningKey::rsa(k, rng)),
                "PRIVATE KEY" => pkcs8(&der, &rng).map(|s| match s {
                    Signer::Ec(k, c) => SigningKey::ec(k, c, rng),
                    Signer::Rsa(k) => SigningKey::rsa(k, rng),
                }),
                _ => None,
            }
        })
    }

    /// The JWS `alg` of the tokens this key signs.
    pub fn alg(&self) -> &'static str {
        match &self.signer {
            Signer::Ec(_, curve) => curve.alg(),
            Signer::Rsa(_) => "RS256",
        }
    }

    /// Its public half.
    pub fn public(&self) -> &PublicKey {
        &self.public
    }

    /// The JWS signature of `message`.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>, AuthError> {
        match &self.signer {
            Signer::Ec(key, _) => key
                .sign(&self.rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| AuthError::Signing),
            Signer::Rsa(key) => {
                let mut sig = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &self.rng, message, &mut sig)
                    .map_err(|_| AuthError::Signing)?;
                Ok(sig)
            }
        }
    }
}

/// The verification keys of a `--service-account-key-file`, in kube's words when
/// there is none: `error reading public key file PATH: data does not contain any
/// valid RSA or ECDSA public keys`.
pub fn public_keys_from_file(path: &Path) -> Result<Vec<PublicKey>, AuthConfigError> {
    let data = std::fs::read(path).map_err(|e| AuthConfigError::Read(e).in_file(path))?;
    let keys = public_keys_from_pem(&data);
    if keys.is_empty() {
        return Err(AuthConfigError::PublicKeyFile {
            path: path.display().to_string(),
        });
    }
    Ok(keys)
}

/// Every PEM block that keyutil's `ParsePublicKeysPEM` takes, whatever its label: an
/// RSA private key (PKCS#1 or PKCS#8), an RSA public key or certificate, an EC SEC1
/// private key, an EC public key or certificate.
pub fn public_keys_from_pem(data: &[u8]) -> Vec<PublicKey> {
    use x509_parser::prelude::FromDer;
    let rng = SystemRandom::new();
    pem_blocks(data)
        .filter_map(|(_, der)| {
            let private_rsa = RsaKeyPair::from_der(&der)
                .ok()
                .or_else(|| RsaKeyPair::from_pkcs8(&der).ok());
            if let Some(key) = private_rsa {
                return Some(SigningKey::rsa(key, rng.clone()).public);
            }
            let public = x509_parser::x509::SubjectPublicKeyInfo::from_der(&der)
                .ok()
                .and_then(|(_, info)| PublicKey::from_spki(&info))
                .or_else(|| {
                    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
                    PublicKey::from_spki(cert.public_key())
                });
            public
                .or_else(|| sec1(&der, &rng).map(|(k, c)| SigningKey::ec(k, c, rng.clone()).public))
        })
        .collect()
}

/// The PEM blocks of `data` as (label, DER), stopping at the first malformed one as
/// Go's `pem.Decode` loop does.
fn pem_blocks(data: &[u8]) -> impl Iterator<Item = (String, Vec<u8>)> + '_ {
    x509_parser::pem::Pem::iter_from_buffer(data)
        .map_while(Result::ok)
        .map(|p| (p.label, p.contents))
}

/// A PKCS#8 key: ECDSA on a curve we sign with, or RSA.
fn pkcs8(der: &[u8], rng: &SystemRandom) -> Option<Signer> {
    Curve::ALL
        .into_iter()
        .find_map(|c| {
            EcdsaKeyPair::from_pkcs8(c.signing(), der, rng)
                .ok()
                .map(|k| Signer::Ec(k, c))
        })
        .or_else(|| RsaKeyPair::from_pkcs8(der).ok().map(Signer::Rsa))
}

/// A SEC1 `ECPrivateKey`, read by wrapping it in the PKCS#8 ring parses.
fn sec1(der_bytes: &[u8], rng: &SystemRandom) -> Option<(EcdsaKeyPair, Curve)> {
    Curve::ALL.into_iter().find_map(|curve| {
        let algorithm = der(
            0x30,
            &[der(0x06, OID_EC_PUBLIC_KEY), der(0x06, curve.oid())].concat(),
        );
        let wrapped = der(
            0x30,
            &[der(0x02, &[0]), algorithm, der(0x04, der_bytes)].concat(),
        );
        EcdsaKeyPair::from_pkcs8(curve.signing(), &wrapped, rng)
            .ok()
            .map(|k| (k, curve))
    })
}

/// A SubjectPublicKeyInfo of an AlgorithmIdentifier's contents and a key.
fn spki(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    let bits = [&[0u8][..], key].concat();
    der(0x30, &[der(0x30, algorithm), der(0x03, &bits)].concat())
}

/// One DER element: tag, definite length, contents.
fn der(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(contents);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DER prefix of a P-256 SubjectPublicKeyInfo before its 65-byte point, as
    /// Go's `x509.MarshalPKIXPublicKey` writes it.
    const P256_SPKI_PREFIX: [u8; 26] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
    ];

    #[test]
    fn p256_kid_hashes_gos_pkix_der() {
        let key = SigningKey::generate().unwrap();
        let PublicKind::Ec { point, .. } = &key.public().kind else {
            panic!("P-256");
        };
        let der = [&P256_SPKI_PREFIX[..], point].concat();
        let want = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(&der));
        assert_eq!(key.public().kid(), want);
        assert_eq!(key.alg(), "ES256");
    }

    fn testdata(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/keys")
            .join(name)
    }

    #[test]
    fn rsa_keys_in_pkcs8_and_pkcs1_sign_rs256_with_the_kid_of_their_pkix_der() {
        let pkcs8 = SigningKey::from_file(&testdata("rsa-sa-signer.key")).unwrap();
        let pkcs1 = SigningKey::from_file(&testdata("rsa-sa-signer-pkcs1.key")).unwrap();
        assert_eq!((pkcs8.alg(), pkcs1.alg()), ("RS256", "RS256"));
        // openssl's PKIX DER of the public half, hashed as kube derives a kid.
        let pem = std::fs::read(testdata("rsa-sa-signer.pub")).unwrap();
        let (_, der) = pem_blocks(&pem).next().unwrap();
        let want = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(&der));
        assert_eq!(pkcs8.public().kid(), want);
        assert_eq!(pkcs1.public(), pkcs8.public());
        let public = public_keys_from_file(&testdata("rsa-sa-signer.pub")).unwrap();
        assert_eq!(public, [pkcs8.public().clone()]);
        // A private key file verifies too (kube reads its public half).
        let from_private = public_keys_from_file(&testdata("rsa-sa-signer-pkcs1.key")).unwrap();
        assert_eq!(from_private, public);
        let sig = pkcs8.sign(b"a.b").unwrap();
        assert_eq!(sig.len(), 256);
        assert!(public[0].verifies("RS256", b"a.b", &sig));
        assert!(!public[0].verifies("RS256", b"a.c", &sig));
        assert!(!public[0].verifies("ES256", b"a.b", &sig));
    }

    #[test]
    fn sec1_p384_keys_sign_es384_and_pkcs8_ec_keys_verify_nothing() {
        let key = SigningKey::from_file(&testdata("ec384-sec1.key")).unwrap();
        assert_eq!(key.alg(), "ES384");
        let sig = key.sign(b"x.y").unwrap();
        assert_eq!(sig.len(), 96);
        let public = public_keys_from_file(&testdata("ec384-sec1.key")).unwrap();
        assert_eq!(public, [key.public().clone()]);
        assert!(public[0].verifies("ES384", b"x.y", &sig));
        assert!(!public[0].verifies("ES256", b"x.y", &sig));
        // keyutil's ParsePublicKeysPEM takes no PKCS#8 EC private key.
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(Curve::P256.signing(), &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
        );
        assert!(public_keys_from_pem(pem.as_bytes()).is_empty());
        assert_eq!(SigningKey::from_pem(pem.as_bytes()).unwrap().alg(), "ES256");
    }

    #[test]
    fn der_lengths_use_the_long_form_past_127() {
        assert_eq!(der(0x04, &[7; 3]), [0x04, 3, 7, 7, 7]);
        let long = der(0x04, &[0; 300]);
        assert_eq!(&long[..4], [0x04, 0x82, 0x01, 0x2c]);
        assert_eq!(long.len(), 304);
    }

    #[test]
    fn files_without_keys_fail_in_kubes_words() {
        let dir = std::env::temp_dir().join(format!("sa-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("empty.pem");
        std::fs::write(&path, "not a key\n").unwrap();
        assert_eq!(
            public_keys_from_file(&path).unwrap_err().to_string(),
            format!(
                "error reading public key file {}: data does not contain any valid RSA or ECDSA public keys",
                path.display()
            )
        );
        assert_eq!(
            SigningKey::from_file(&path).unwrap_err().to_string(),
            format!(
                "error reading private key file {}: data does not contain a valid RSA or ECDSA private key",
                path.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
