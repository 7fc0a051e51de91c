//! The errors of the auth layer: [`AuthError`], why a request's credential does not
//! authenticate (or a token cannot be issued), and [`AuthConfigError`], why the
//! authentication and authorization flags are unusable at start-up. The texts are
//! kube's; a request meets them as a `Status` only through `From<AuthError>`.

use crate::field::go_quote;
use crate::status::Status;
use crate::storage::StorageError;

/// Why a credential does not authenticate, in kube's words (a TokenReview's
/// `status.error`), or why a token cannot be signed.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A client certificate was expected and none was presented.
    #[error("no client certificate")]
    NoClientCertificate,
    /// The presented chain does not verify against the CA.
    #[error("verifying certificate CN={common_name} failed: {source}")]
    CertificateVerification {
        /// The leaf's common name (empty when unreadable).
        common_name: String,
        /// rustls' verdict.
        source: rustls::Error,
    },
    /// The certificate does not parse.
    #[error("invalid certificate: {0}")]
    InvalidCertificate(#[source] x509_parser::nom::Err<x509_parser::error::X509Error>),
    /// A front proxy's common name is not among `--requestheader-allowed-names`.
    #[error("x509: subject with cn={0} is not in the allowed list")]
    ProxyNotAllowed(String),
    /// A bearer token no authenticator knows.
    #[error("invalid bearer token")]
    InvalidBearerToken,
    /// A service account token whose `kid` names none of the keys.
    #[error("invalid signature, no keys found")]
    NoKeys,
    /// A service account token whose signature is not base64url.
    #[error("invalid signature")]
    InvalidSignature,
    /// A service account token whose signature no key verifies (go-jose's words).
    #[error("go-jose/go-jose: error in cryptographic primitive")]
    SignatureVerification,
    /// `nbf` is in the future.
    #[error("service account token is not valid yet")]
    NotYetValid,
    /// `exp` is past.
    #[error("service account token has expired")]
    Expired,
    /// `iat` is in the future.
    #[error("service account token is issued in the future")]
    IssuedInFuture,
    /// The token is for none of the wanted audiences.
    #[error("token audiences {token:?} is invalid for the target audiences {wanted:?}")]
    Audiences {
        /// The token's `aud`.
        token: Vec<String>,
        /// The audiences asked for.
        wanted: Vec<String>,
    },
    /// The token's ServiceAccount is not stored.
    #[error("serviceaccounts \"{0}\" not found")]
    ServiceAccountNotFound(String),
    /// The stored ServiceAccount is another one than the token's.
    #[error("service account UID ({stored}) does not match claim ({claimed})")]
    ServiceAccountUid {
        /// The stored uid.
        stored: String,
        /// The token's uid.
        claimed: String,
    },
    /// The token's ServiceAccount is being deleted.
    #[error("service account {namespace}/{name} has been deleted")]
    ServiceAccountDeleted {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// The Secret the token is bound to is gone or being deleted.
    #[error("service account token has been invalidated")]
    Invalidated,
    /// The Secret the token is bound to is another one than the token's.
    #[error("secret UID ({stored}) does not match service account secret ref claim ({claimed})")]
    SecretUid {
        /// The stored uid.
        stored: String,
        /// The token's uid.
        claimed: String,
    },
    /// Reading the ServiceAccount failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Signing a token failed.
    #[error("failed to generate token: signing failed")]
    Signing,
    /// The core apiserver could not review a token (`--authentication-kubeconfig`).
    #[error("token review against the core apiserver failed: {0}")]
    Delegated(String),
}

impl From<AuthError> for Status {
    /// kube's answer: a credential that does not authenticate is a 401 whatever the
    /// reason (the reason is logged, never shown); a token that cannot be signed is a 500.
    fn from(e: AuthError) -> Status {
        match e {
            AuthError::Signing => Status::internal(e.to_string()),
            _ => Status::unauthorized(),
        }
    }
}

/// Why the authentication and authorization flags are unusable, in kube's words.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// A flag's file is unusable.
    #[error("{flag}: {source}")]
    Flag {
        /// The flag (`--client-ca-file`).
        flag: &'static str,
        /// What is wrong with its file.
        source: Box<AuthConfigError>,
    },
    /// A file is unusable.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// What is wrong with it.
        source: Box<AuthConfigError>,
    },
    /// A file cannot be read.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// A CA bundle is not PEM.
    #[error("invalid PEM: {0}")]
    Pem(#[source] rustls::pki_types::pem::Error),
    /// A CA bundle holds a certificate that is no CA's.
    #[error("invalid CA certificate: {0}")]
    CaCertificate(#[source] rustls::Error),
    /// A CA bundle holds no certificate.
    #[error("no certificate found")]
    NoCertificate,
    /// The client certificate verifier cannot be built.
    #[error(transparent)]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    /// A token file line in Go's `encoding/csv` error (`record on line 2: ...`).
    #[error("{} on line {line}: extraneous or missing \" in quoted-field", if *.at_end { "record" } else { "parse error" })]
    Quote {
        /// The line.
        line: usize,
        /// The quoted field is not closed before the end of the text.
        at_end: bool,
    },
    /// A token file record has too few columns.
    #[error("token file '{name}' must have at least 3 columns (token, user name, user uid), found {found}")]
    TokenColumns {
        /// The file.
        name: String,
        /// Its columns.
        found: usize,
    },
    /// A signing key cannot be generated.
    #[error("cannot generate a service account signing key")]
    KeyGeneration,
    /// A signing key file is not PEM.
    #[error(transparent)]
    KeyPem(rustls::pki_types::pem::Error),
    /// A generated signing key ring does not take back.
    #[error("not an ECDSA P-256 key: {0}")]
    KeyType(ring::error::KeyRejected),
    /// `--service-account-signing-key-file` holds no private key ring signs with.
    #[error("error reading private key file {path}: data does not contain a valid RSA or ECDSA private key")]
    PrivateKeyFile {
        /// The file.
        path: String,
    },
    /// A `--service-account-key-file` holds no public key.
    #[error("error reading public key file {path}: data does not contain any valid RSA or ECDSA public keys")]
    PublicKeyFile {
        /// The file.
        path: String,
    },
    /// An empty `--service-account-issuer`.
    #[error("service-account-issuer should not be an empty string")]
    EmptyIssuer,
    /// A `--service-account-issuer` given twice.
    #[error("service-account-issuer {} is already specified", go_quote(.0))]
    RepeatedIssuer(String),
    /// No `--authorization-mode`.
    #[error("at least one authorization-mode must be passed")]
    NoMode,
    /// A kube authorization mode this server does not have.
    #[error("authorization-mode {} is not supported by crd-apiserver", go_quote(.0))]
    UnsupportedMode(String),
    /// An authorization mode kube does not have.
    #[error("authorization-mode {} is not a valid mode", go_quote(.0))]
    InvalidMode(String),
    /// A mode given twice.
    #[error("authorization-mode [{}] has mode specified more than once", .0.iter().map(|m| go_quote(m)).collect::<Vec<_>>().join(" "))]
    RepeatedMode(Vec<String>),
    /// A delegation kubeconfig cannot be used, or the core cannot be read at start.
    #[error(transparent)]
    Remote(#[from] crate::remote::RemoteError),
    /// A bad `--authorization-always-allow-paths` entry.
    #[error(transparent)]
    AlwaysAllowPath(#[from] super::delegated::PathPatternError),
    /// Front-proxy authentication with every request allowed, not asked for.
    #[error("--requestheader-client-ca-file is set and --authorization-mode defaults to AlwaysAllow, which would let any client (anonymous included) do anything: pass --authorization-kubeconfig to delegate authorization to the core apiserver, or --authorization-mode=RBAC, or --authorization-mode=AlwaysAllow to allow every request knowingly")]
    InsecureDefault,
}

impl AuthConfigError {
    /// This error as one of the file at `path`.
    pub fn in_file(self, path: &std::path::Path) -> AuthConfigError {
        AuthConfigError::File {
            path: path.display().to_string(),
            source: Box::new(self),
        }
    }

    /// This error as one of the file of `flag`.
    pub fn in_flag(self, flag: &'static str) -> AuthConfigError {
        AuthConfigError::Flag {
            flag,
            source: Box::new(self),
        }
    }
}
