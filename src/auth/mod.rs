//! Who sent a request and whether they may do it, as kube's authentication and
//! authorization filters: `authenticate` runs kube's authenticators in kube's order
//! (front-proxy request headers, client certificates, bearer tokens, then anonymous),
//! `authz` decides with an [`authz::Authorizer`].

pub mod authz;
pub mod delegated;
mod error;
pub mod impersonation;
pub mod keys;
mod policy_rule;
pub mod rbac;
pub mod service_account;
pub mod token;
pub mod x509;

use crate::status::Status;
use http::HeaderMap;
use rustls::pki_types::CertificateDer;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use error::{AuthConfigError, AuthError};

pub use apimachinery::user::{
    UserInfo, ADMIN_USER, ANONYMOUS_USER, AUTHENTICATED_GROUP, MASTERS_GROUP,
    UNAUTHENTICATED_GROUP, UNSECURED_USER,
};

/// The authentication and authorization flags (kube's names and defaults; the
/// request-header defaults are those of kube's aggregated API servers).
#[derive(Clone, Debug)]
pub struct AuthConfig {
    /// `--token-auth-file`: CSV of `token,user,uid,"group1,group2"`.
    pub token_auth_file: Option<PathBuf>,
    /// `--client-ca-file`: CA bundle for client certificates (CN = user, O = groups).
    pub client_ca_file: Option<PathBuf>,
    /// `--requestheader-client-ca-file`: CA of front-proxy client certificates.
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// `--requestheader-allowed-names`: allowed front-proxy common names (empty: any).
    pub requestheader_allowed_names: Vec<String>,
    /// `--requestheader-username-headers`.
    pub requestheader_username_headers: Vec<String>,
    /// `--requestheader-group-headers`.
    pub requestheader_group_headers: Vec<String>,
    /// `--requestheader-uid-headers` (kube's `RemoteRequestHeaderUID`; none by default).
    pub requestheader_uid_headers: Vec<String>,
    /// `--requestheader-extra-headers-prefix`.
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// `--anonymous-auth`.
    pub anonymous_auth: bool,
    /// `--authorization-mode`, in order.
    pub authorization_modes: Vec<authz::Mode>,
    /// Whether `--authorization-mode` was given (its default, `AlwaysAllow`, is refused
    /// beside front-proxy authentication: [`AuthConfig::check_safe`]).
    pub authorization_mode_given: bool,
    /// `--authentication-kubeconfig`: the core apiserver reviews unknown bearer tokens
    /// and tells which client CAs to trust ([`delegated`]).
    pub authentication_kubeconfig: Option<PathBuf>,
    /// `--authentication-token-webhook-cache-ttl` (10 s).
    pub authentication_token_cache_ttl: Duration,
    /// `--authentication-skip-lookup`: do not read the core's
    /// `extension-apiserver-authentication` ConfigMap.
    pub authentication_skip_lookup: bool,
    /// `--authorization-kubeconfig`: the core apiserver authorizes every request.
    pub authorization_kubeconfig: Option<PathBuf>,
    /// `--authorization-webhook-cache-authorized-ttl` (10 s).
    pub authorization_allowed_ttl: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl` (10 s).
    pub authorization_denied_ttl: Duration,
    /// `--authorization-always-allow-paths` (`/healthz`, `/readyz`, `/livez`): allowed
    /// without asking the core.
    pub authorization_always_allow_paths: Vec<String>,
    /// `--service-account-issuer`, repeatable: the first is the `iss` of the tokens
    /// this server signs, each is accepted (empty: our default issuer).
    pub service_account_issuers: Vec<String>,
    /// `--api-audiences` (empty: the issuer).
    pub api_audiences: Vec<String>,
    /// `--service-account-signing-key-file` (none: a key generated at start).
    pub service_account_signing_key_file: Option<PathBuf>,
    /// `--service-account-key-file`, repeatable: the keys tokens are verified with
    /// (none: the signing key's public half).
    pub service_account_key_files: Vec<PathBuf>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            token_auth_file: None,
            client_ca_file: None,
            requestheader_client_ca_file: None,
            requestheader_allowed_names: Vec::new(),
            requestheader_username_headers: vec!["X-Remote-User".into()],
            requestheader_group_headers: vec!["X-Remote-Group".into()],
            requestheader_uid_headers: Vec::new(),
            requestheader_extra_headers_prefix: vec!["X-Remote-Extra-".into()],
            anonymous_auth: true,
            authorization_modes: vec![authz::Mode::AlwaysAllow],
            authorization_mode_given: false,
            authentication_kubeconfig: None,
            authentication_token_cache_ttl: Duration::from_secs(10),
            authentication_skip_lookup: false,
            authorization_kubeconfig: None,
            authorization_allowed_ttl: Duration::from_secs(10),
            authorization_denied_ttl: Duration::from_secs(10),
            authorization_always_allow_paths: ["/healthz", "/readyz", "/livez"]
                .map(String::from)
                .to_vec(),
            service_account_issuers: Vec::new(),
            api_audiences: Vec::new(),
            service_account_signing_key_file: None,
            service_account_key_files: Vec::new(),
        }
    }
}

impl AuthConfig {
    /// The service account token issuer of the `--service-account-*` flags.
    pub fn service_account_tokens(
        &self,
    ) -> Result<service_account::ServiceAccountTokens, AuthConfigError> {
        let key = match &self.service_account_signing_key_file {
            // kube's prefix, naming the flag by its old name.
            Some(path) => keys::SigningKey::from_file(path)
                .map_err(|e| e.in_flag("failed to parse service-account-issuer-key-file"))?,
            None => keys::SigningKey::generate()?,
        };
        let mut verifying = Vec::new();
        for path in &self.service_account_key_files {
            verifying.extend(keys::public_keys_from_file(path)?);
        }
        service_account::ServiceAccountTokens::new(
            &self.service_account_issuers,
            &self.api_audiences,
            key,
            verifying,
        )
    }

    /// Refuse front-proxy authentication beside the default `AlwaysAllow`: any client
    /// (anonymous too) could then do anything. Delegated authorization, or a mode given
    /// explicitly, is required.
    pub fn check_safe(&self) -> Result<(), AuthConfigError> {
        if self.requestheader_client_ca_file.is_some()
            && !self.authorization_mode_given
            && self.authorization_kubeconfig.is_none()
        {
            return Err(AuthConfigError::InsecureDefault);
        }
        Ok(())
    }

    /// The authorizer of `--authorization-kubeconfig` (k8s.io/apiserver's delegated
    /// authorization: `system:masters`, the always-allowed paths, then the core's
    /// SubjectAccessReview), or `None` without the flag.
    pub fn delegated_authorizer(&self) -> Result<Option<authz::Delegated>, AuthConfigError> {
        let Some(path) = &self.authorization_kubeconfig else {
            return Ok(None);
        };
        let client = crate::remote::Client::new(&crate::remote::Kubeconfig::load(path)?)?;
        let each: Vec<Arc<dyn authz::Authorizer>> = vec![
            Arc::new(delegated::AlwaysAllowGroups(vec![MASTERS_GROUP.into()])),
            Arc::new(delegated::AlwaysAllowPaths::new(
                &self.authorization_always_allow_paths,
            )?),
            Arc::new(delegated::SubjectAccessReviews::new(
                client,
                self.authorization_allowed_ttl,
                self.authorization_denied_ttl,
            )),
        ];
        Ok(Some(authz::Delegated(Arc::new(authz::Union(each)))))
    }

    /// Read the files the flags name and build the authenticators; with
    /// `--authentication-kubeconfig`, the CAs the flags leave unset come from the core's
    /// `extension-apiserver-authentication` ConfigMap (as k8s.io/apiserver reads it at
    /// start) and unknown bearer tokens go to the core's TokenReview.
    pub async fn authenticator(&self) -> Result<Authenticator, AuthConfigError> {
        let (core, trust) = match &self.authentication_kubeconfig {
            Some(path) => {
                let client = crate::remote::Client::new(&crate::remote::Kubeconfig::load(path)?)?;
                let wants_lookup = !self.authentication_skip_lookup
                    && (self.client_ca_file.is_none()
                        || self.requestheader_client_ca_file.is_none());
                let trust = if wants_lookup {
                    delegated::TrustedClients::fetch(&client).await?
                } else {
                    None
                };
                (Some(client), trust.unwrap_or_default())
            }
            None => (None, delegated::TrustedClients::default()),
        };
        let or_flag = |flag: &[String], looked_up: &[String]| {
            if self.requestheader_client_ca_file.is_none() && !looked_up.is_empty() {
                looked_up.to_vec()
            } else {
                flag.to_vec()
            }
        };
        let request_header_ca = match (
            &self.requestheader_client_ca_file,
            &trust.requestheader_ca_pem,
        ) {
            (Some(path), _) => Some(
                x509::CaVerifier::from_pem_file(path)
                    .map_err(|e| e.in_flag("--requestheader-client-ca-file"))?,
            ),
            (None, Some(pem)) => Some(
                x509::CaVerifier::from_pem(pem.as_bytes())
                    .map_err(|e| e.in_flag("requestheader-client-ca-file of the core"))?,
            ),
            (None, None) => None,
        };
        let request_header = request_header_ca.map(|ca| RequestHeader {
            ca,
            allowed_names: or_flag(&self.requestheader_allowed_names, &trust.allowed_names),
            username_headers: or_flag(
                &self.requestheader_username_headers,
                &trust.username_headers,
            ),
            group_headers: or_flag(&self.requestheader_group_headers, &trust.group_headers),
            uid_headers: or_flag(&self.requestheader_uid_headers, &trust.uid_headers),
            extra_headers_prefixes: or_flag(
                &self.requestheader_extra_headers_prefix,
                &trust.extra_headers_prefix,
            ),
        });
        let client_ca = match (&self.client_ca_file, &trust.client_ca_pem) {
            (Some(path), _) => Some(
                x509::CaVerifier::from_pem_file(path).map_err(|e| e.in_flag("--client-ca-file"))?,
            ),
            (None, Some(pem)) => Some(
                x509::CaVerifier::from_pem(pem.as_bytes())
                    .map_err(|e| e.in_flag("client-ca-file of the core"))?,
            ),
            (None, None) => None,
        };
        let tokens = match &self.token_auth_file {
            Some(path) => Some(Arc::new(token::TokenFile::load(path)?)),
            None => None,
        };
        Ok(Authenticator {
            request_header,
            client_ca,
            tokens,
            anonymous: self.anonymous_auth,
            admin_token: None,
            service_accounts: None,
            token_reviews: core
                .map(|c| delegated::TokenReviews::new(c, self.authentication_token_cache_ttl)),
        })
    }

    /// The `extension-apiserver-authentication` data this server publishes as a core
    /// (kube-apiserver writes its client CA and front-proxy settings there for the
    /// aggregated servers behind it); `None` when neither CA flag is set.
    pub fn published_trust(&self) -> Result<Option<delegated::TrustedClients>, AuthConfigError> {
        let read = |path: &PathBuf, flag: &'static str| {
            std::fs::read_to_string(path)
                .map_err(|e| AuthConfigError::Read(e).in_file(path).in_flag(flag))
        };
        let client_ca_pem = match &self.client_ca_file {
            Some(p) => Some(read(p, "--client-ca-file")?),
            None => None,
        };
        let requestheader_ca_pem = match &self.requestheader_client_ca_file {
            Some(p) => Some(read(p, "--requestheader-client-ca-file")?),
            None => None,
        };
        if client_ca_pem.is_none() && requestheader_ca_pem.is_none() {
            return Ok(None);
        }
        Ok(Some(delegated::TrustedClients {
            client_ca_pem,
            requestheader_ca_pem,
            allowed_names: self.requestheader_allowed_names.clone(),
            username_headers: self.requestheader_username_headers.clone(),
            uid_headers: self.requestheader_uid_headers.clone(),
            group_headers: self.requestheader_group_headers.clone(),
            extra_headers_prefix: self.requestheader_extra_headers_prefix.clone(),
        }))
    }
}

/// What a request's connection tells about its client.
#[derive(Clone, Debug, Default)]
pub struct Connection {
    /// The connection is TLS (HTTPS).
    pub tls: bool,
    /// The certificates the client presented (leaf first; empty when none).
    pub peer_certificates: Vec<CertificateDer<'static>>,
}

/// Front-proxy authentication (kube's `--requestheader-*` flags): a client certificate
/// signed by `ca`, with a common name in `allowed_names` (any when empty), vouches for
/// the user named in its headers.
pub struct RequestHeader {
    /// CA of the front proxy's client certificate.
    pub ca: x509::CaVerifier,
    /// Allowed common names of the front proxy's certificate (empty: any).
    pub allowed_names: Vec<String>,
    /// Headers naming the user; the first non-empty one wins.
    pub username_headers: Vec<String>,
    /// Headers listing groups (every value of each).
    pub group_headers: Vec<String>,
    /// Headers naming the user's uid (kube's `X-Remote-Uid`); the first non-empty wins.
    pub uid_headers: Vec<String>,
    /// Prefixes of headers carrying extra attributes.
    pub extra_headers_prefixes: Vec<String>,
}

/// The authenticators of a server, in kube's order.
#[derive(Default)]
pub struct Authenticator {
    /// `--requestheader-client-ca-file` and friends.
    pub request_header: Option<RequestHeader>,
    /// `--client-ca-file`.
    pub client_ca: Option<x509::CaVerifier>,
    /// `--token-auth-file` (shared with TokenReview).
    pub tokens: Option<Arc<token::TokenFile>>,
    /// `--anonymous-auth`.
    pub anonymous: bool,
    /// The bearer token of [`ADMIN_USER`] (group `system:masters`), minted at start-up
    /// for the server's own kubeconfig, as kube's loopback token.
    pub admin_token: Option<String>,
    /// Service account tokens (TokenRequest), set once storage is up.
    pub service_accounts: Option<service_account::TokenAuthenticator>,
    /// `--authentication-kubeconfig`: bearer tokens nothing here knows go to the core.
    pub token_reviews: Option<delegated::TokenReviews>,
}

impl Authenticator {
    /// The CAs whose names the TLS server hints to clients asking for a certificate.
    pub fn client_ca_subjects(&self) -> Vec<rustls::DistinguishedName> {
        let mut out = Vec::new();
        if let Some(rh) = &self.request_header {
            out.extend(rh.ca.subjects().iter().cloned());
        }
        if let Some(ca) = &self.client_ca {
            out.extend(ca.subjects().iter().cloned());
        }
        out
    }

    /// Authenticate a request: the first authenticator that recognises the request
    /// decides; credentials that fail everywhere are a 401 even with anonymous access
    /// on (kube's union with fail-on-error before anonymous).
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        conn: &Connection,
    ) -> Result<Arc<UserInfo>, Status> {
        let mut errors: Vec<AuthError> = Vec::new();
        let mut found = None;
        if let Some(rh) = &self.request_header {
            match rh.authenticate(headers, conn) {
                Ok(user) => found = user,
                Err(e) => errors.push(e),
            }
        }
        if found.is_none() {
            if let Some(ca) = &self.client_ca {
                match x509::authenticate(ca, conn) {
                    Ok(user) => found = user,
                    Err(e) => errors.push(e),
                }
            }
        }
        if found.is_none() && self.is_admin(headers) {
            return Ok(admin_user());
        }
        if found.is_none() && (self.tokens.is_some() || self.admin_token.is_some()) {
            let empty = token::TokenFile::default();
            match self
                .tokens
                .as_deref()
                .unwrap_or(&empty)
                .authenticate(headers)
            {
                Ok(user) => found = user,
                Err(e) => errors.push(e),
            }
        }
        if found.is_none() {
            if let (Some(sa), Some(bearer)) = (&self.service_accounts, token::bearer_token(headers))
            {
                match sa.authenticate(bearer).await {
                    Ok(Some(user)) => {
                        found = Some(user);
                        errors.clear();
                    }
                    Ok(None) => errors.push(AuthError::InvalidBearerToken),
                    Err(e) => errors.push(e),
                }
            }
        }
        if found.is_none() {
            if let (Some(reviews), Some(bearer)) =
                (&self.token_reviews, token::bearer_token(headers))
            {
                match reviews.authenticate(bearer).await {
                    Ok(Some(user)) => {
                        found = Some(user);
                        errors.clear();
                    }
                    Ok(None) => errors.push(AuthError::InvalidBearerToken),
                    Err(e) => errors.push(e),
                }
            }
        }
        match found {
            Some(user) => Ok(Arc::new(user.with_authenticated_group())),
            None if !errors.is_empty() => {
                let reasons: Vec<String> = errors.iter().map(AuthError::to_string).collect();
                tracing::debug!(errors = %reasons.join("; "), "unable to authenticate the request");
                Err(errors.swap_remove(0).into())
            }
            // Plain HTTP listens on loopback only: whoever reaches it is local.
            None if !conn.tls => Ok(Arc::new(UserInfo::unsecured())),
            None if self.anonymous => Ok(Arc::new(UserInfo::anonymous())),
            None => Err(Status::unauthorized()),
        }
    }
}

impl Authenticator {
    /// Whether the request bears the admin token.
    fn is_admin(&self, headers: &HeaderMap) -> bool {
        let (Some(want), Some(got)) = (self.admin_token.as_deref(), token::bearer_token(headers))
        else {
            return false;
        };
        // Compare in constant time: the token is a superuser credential.
        let same = want.len() == got.len()
            && want
                .bytes()
                .zip(got.bytes())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
        same
    }
}

/// The user of the admin token, with the authenticated group already (what
/// authentication adds to every user found): made once, shared by its requests.
fn admin_user() -> Arc<UserInfo> {
    static ADMIN: std::sync::LazyLock<Arc<UserInfo>> = std::sync::LazyLock::new(|| {
        Arc::new(UserInfo {
            username: ADMIN_USER.into(),
            groups: vec![MASTERS_GROUP.into(), AUTHENTICATED_GROUP.into()],
            ..Default::default()
        })
    });
    ADMIN.clone()
}

impl RequestHeader {
    /// `Ok(None)` when the request carries no front-proxy certificate or no user header.
    fn authenticate(
        &self,
        headers: &HeaderMap,
        conn: &Connection,
    ) -> Result<Option<UserInfo>, AuthError> {
        let Some(leaf) = conn.peer_certificates.first() else {
            return Ok(None);
        };
        self.ca.verify(&conn.peer_certificates)?;
        if !self.allowed_names.is_empty() {
            let (cn, _) = x509::subject(leaf)?;
            if !self.allowed_names.contains(&cn) {
                return Err(AuthError::ProxyNotAllowed(cn));
            }
        }
        let header_values = |name: &str| -> Vec<String> {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect()
        };
        let Some(username) = self
            .username_headers
            .iter()
            .filter_map(|h| header_values(h).into_iter().next())
            .find(|v| !v.is_empty())
        else {
            return Ok(None);
        };
        let groups = self
            .group_headers
            .iter()
            .flat_map(|h| header_values(h))
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            let lower = name.as_str();
            for prefix in &self.extra_headers_prefixes {
                let prefix = prefix.to_ascii_lowercase();
                if let Some(key) = lower.strip_prefix(prefix.as_str()) {
                    if let Ok(v) = value.to_str() {
                        // kube unescapes keys so they may carry characters headers cannot.
                        let key = crate::http::percent_decode_path(key).to_ascii_lowercase();
                        extra.entry(key).or_default().push(v.to_string());
                    }
                }
            }
        }
        let uid = self
            .uid_headers
            .iter()
            .filter_map(|h| header_values(h).into_iter().next())
            .find(|v| !v.is_empty())
            .unwrap_or_default();
        Ok(Some(UserInfo {
            username,
            uid,
            groups,
            extra,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authenticated_group_is_added_once() {
        let u = UserInfo {
            username: "alice".into(),
            groups: vec!["dev".into()],
            ..Default::default()
        }
        .with_authenticated_group();
        assert_eq!(u.groups, ["dev", AUTHENTICATED_GROUP]);
        assert_eq!(u.clone().with_authenticated_group(), u);
        let anon = UserInfo::anonymous().with_authenticated_group();
        assert_eq!(anon.groups, [UNAUTHENTICATED_GROUP]);
    }

    #[tokio::test]
    async fn no_credentials_is_anonymous_on_tls_and_unsecured_on_plain_http() {
        let tls = Connection {
            tls: true,
            ..Default::default()
        };
        let mut authn = Authenticator {
            anonymous: true,
            ..Default::default()
        };
        let headers = HeaderMap::new();
        assert_eq!(
            authn.authenticate(&headers, &tls).await.map_err(|s| s.code),
            Ok(Arc::new(UserInfo::anonymous()))
        );
        assert_eq!(
            authn
                .authenticate(&headers, &Connection::default())
                .await
                .map_err(|s| s.code),
            Ok(Arc::new(UserInfo::unsecured()))
        );
        authn.anonymous = false;
        assert_eq!(
            authn.authenticate(&headers, &tls).await.map_err(|s| s.code),
            Err(401)
        );
    }

    #[tokio::test]
    async fn the_admin_token_is_one_shared_user_with_both_groups_and_others_are_not() {
        let tls = Connection {
            tls: true,
            ..Default::default()
        };
        let authn = Authenticator {
            admin_token: Some("s3cret".into()),
            ..Default::default()
        };
        let bearer = |token: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                http::header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
            headers
        };
        let first = authn.authenticate(&bearer("s3cret"), &tls).await.unwrap();
        let second = authn.authenticate(&bearer("s3cret"), &tls).await.unwrap();
        assert_eq!(first.username, ADMIN_USER);
        assert_eq!(first.groups, [MASTERS_GROUP, AUTHENTICATED_GROUP]);
        assert!(Arc::ptr_eq(&first, &second), "made once, not per request");
        for wrong in ["s3cre", "s3cret!", "S3CRET"] {
            assert_eq!(
                authn
                    .authenticate(&bearer(wrong), &tls)
                    .await
                    .map_err(|s| s.code),
                Err(401),
                "{wrong}"
            );
        }
    }
}
