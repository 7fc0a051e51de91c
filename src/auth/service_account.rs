//! Service account tokens, as kube's TokenRequest issuer and its bound-token
//! authenticator: ES256-signed JWTs with kube's claims (`iss`, `sub`, `aud`, `exp`,
//! `iat`, `nbf`, `jti` and the private `kubernetes.io` claim), and their
//! authentication: signed by this server, issued by its issuer, unexpired, for one of
//! its API audiences, and the ServiceAccount (and a bound Secret) still there with
//! the uid the token names.
//!
//! The key is generated at start unless `--service-account-signing-key-file` names a
//! PKCS#8 P-256 key (kube also takes RSA keys and `--service-account-key-file`
//! verification keys; we do not).

use super::{AuthConfigError, AuthError, UserInfo};
use crate::storage::Storage;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// kube's conventional issuer (`--service-account-issuer`) and our default.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The user name prefix of service accounts (`system:serviceaccount:NS:NAME`).
pub const USERNAME_PREFIX: &str = "system:serviceaccount:";
/// The group of every service account.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of a namespace's service account group.
pub const NAMESPACE_GROUP_PREFIX: &str = "system:serviceaccounts:";
/// kube's user extra carrying the token's `jti` (`JTI=<id>`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";
/// go-jose's clock skew allowance on `exp`, `nbf` and `iat` (`jwt.DefaultLeeway`).
const LEEWAY_SECS: i64 = 60;
/// The DER prefix of a P-256 SubjectPublicKeyInfo before the 65-byte point (kube
/// derives the `kid` from the PKIX DER of the public key).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The service account `user.Info` kube builds (`system:serviceaccount:NS:NAME`, the
/// two service account groups).
pub fn user_info(namespace: &str, name: &str, uid: &str) -> UserInfo {
    UserInfo {
        username: format!("{USERNAME_PREFIX}{namespace}:{name}"),
        uid: uid.to_string(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
            format!("{NAMESPACE_GROUP_PREFIX}{namespace}"),
        ],
        ..Default::default()
    }
}

/// The token issuer and verifier of a server: its signing key, issuer and audiences.
pub struct ServiceAccountTokens {
    issuer: String,
    api_audiences: Vec<String>,
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuer", &self.issuer)
            .field("api_audiences", &self.api_audiences)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// A token's claims once its signature, issuer, times and audience are checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Claims {
    /// `kubernetes.io.namespace`.
    pub namespace: String,
    /// `kubernetes.io.serviceaccount.name`.
    pub name: String,
    /// `kubernetes.io.serviceaccount.uid`.
    pub uid: String,
    /// `kubernetes.io.secret` (name, uid) of a Secret-bound token.
    pub secret: Option<(String, String)>,
    /// `jti`.
    pub id: String,
    /// The token's audiences among those asked for.
    pub audiences: Vec<String>,
}

impl ServiceAccountTokens {
    /// Tokens signed with a key generated now. Empty `api_audiences` means the issuer
    /// (kube's default of `--api-audiences`).
    pub fn generate(issuer: &str, api_audiences: &[String]) -> Result<Self, AuthConfigError> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| AuthConfigError::KeyGeneration)?;
        Self::from_pkcs8(issuer, api_audiences, pkcs8.as_ref(), rng)
    }

    /// Tokens signed with the PKCS#8 P-256 key in a PEM file
    /// (`--service-account-signing-key-file`).
    pub fn from_key_file(
        issuer: &str,
        api_audiences: &[String],
        path: &Path,
    ) -> Result<Self, AuthConfigError> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::PrivateKeyDer;
        let key = PrivateKeyDer::from_pem_file(path)
            .map_err(|e| AuthConfigError::KeyPem(e).in_file(path))?;
        let PrivateKeyDer::Pkcs8(der) = key else {
            return Err(AuthConfigError::KeyFormat.in_file(path));
        };
        Self::from_pkcs8(
            issuer,
            api_audiences,
            der.secret_pkcs8_der(),
            SystemRandom::new(),
        )
        .map_err(|e| e.in_file(path))
    }

    fn from_pkcs8(
        issuer: &str,
        api_audiences: &[String],
        pkcs8: &[u8],
        rng: SystemRandom,
    ) -> Result<Self, AuthConfigError> {
        let key =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng)
                .map_err(AuthConfigError::KeyType)?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let kid = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(&spki));
        let api_audiences = if api_audiences.is_empty() {
            vec![issuer.to_string()]
        } else {
            api_audiences.to_vec()
        };
        Ok(ServiceAccountTokens {
            issuer: issuer.to_string(),
            api_audiences,
            key,
            kid,
            rng,
        })
    }

    /// `--service-account-issuer`.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// `--api-audiences` (the issuer when not given): what TokenRequests default to
    /// and what authenticated tokens must be for.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The `audiences` of a TokenRequest's or TokenReview's spec, or the API
    /// audiences when it names none (kube's default for both).
    pub fn audiences_or_default(&self, spec: &Value) -> Vec<String> {
        let asked: Vec<String> = spec
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if asked.is_empty() {
            self.api_audiences.clone()
        } else {
            asked
        }
    }

    /// The claims kube's TokenRequest puts in a token for a ServiceAccount, issued at
    /// `now` (Unix seconds); `secret` binds the token to a Secret (name, uid).
    pub fn claims(
        &self,
        service_account: (&str, &str, &str),
        secret: Option<(&str, &str)>,
        audiences: &[String],
        now: i64,
        expiration_seconds: i64,
    ) -> Value {
        let (namespace, name, uid) = service_account;
        let mut kubernetes = json!({
            "namespace": namespace,
            "serviceaccount": {"name": name, "uid": uid},
        });
        if let Some((secret_name, secret_uid)) = secret {
            kubernetes["secret"] = json!({"name": secret_name, "uid": secret_uid});
        }
        json!({
            "aud": audiences,
            "exp": now.saturating_add(expiration_seconds),
            "iat": now,
            "iss": self.issuer,
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": kubernetes,
            "nbf": now,
            "sub": format!("{USERNAME_PREFIX}{namespace}:{name}"),
        })
    }

    /// A signed compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> Result<String, AuthError> {
        let header = json!({"alg": "ES256", "kid": self.kid});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| AuthError::Signing)?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(sig.as_ref())
        ))
    }

    /// Check a bearer token at `now` (Unix seconds): `Ok(None)` when it is not a JWT
    /// of this issuer (other authenticators may know it), `Err` with kube's reason when
    /// it is ours but not valid (bad signature, expired, wrong audience).
    pub fn verify(&self, token: &str, now: i64) -> Result<Option<Claims>, AuthError> {
        self.verify_for(token, now, &self.api_audiences)
    }

    /// [`Self::verify`] for a token that must be for one of `wanted` (a TokenReview's
    /// `spec.audiences`).
    pub fn verify_for(
        &self,
        token: &str,
        now: i64,
        wanted: &[String],
    ) -> Result<Option<Claims>, AuthError> {
        let mut parts = token.split('.');
        let (Some(h), Some(p), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Ok(None);
        };
        let decode_json = |part: &str| -> Option<Value> {
            let bytes = URL_SAFE_NO_PAD.decode(part).ok()?;
            serde_json::from_slice::<Value>(&bytes)
                .ok()
                .filter(Value::is_object)
        };
        let (Some(header), Some(payload)) = (decode_json(h), decode_json(p)) else {
            return Ok(None);
        };
        // kube's JWT authenticator only claims tokens of its issuers.
        if payload.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Ok(None);
        }
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(AuthError::NoKeys);
        }
        let sig = URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| AuthError::InvalidSignature)?;
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        );
        public
            .verify(format!("{h}.{p}").as_bytes(), &sig)
            .map_err(|_| AuthError::SignatureVerification)?;
        check_times(&payload, now)?;
        let audiences: Vec<&str> = match payload.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let matching: Vec<String> = wanted
            .iter()
            .filter(|w| audiences.contains(&w.as_str()))
            .cloned()
            .collect();
        if matching.is_empty() {
            return Err(AuthError::Audiences {
                token: audiences.into_iter().map(String::from).collect(),
                wanted: wanted.to_vec(),
            });
        }
        let k8s = payload.get("kubernetes.io").unwrap_or(&Value::Null);
        let text = |ptr: &str| {
            k8s.pointer(ptr)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let secret = k8s
            .get("secret")
            .map(|_| (text("/secret/name"), text("/secret/uid")));
        Ok(Some(Claims {
            namespace: text("/namespace"),
            name: text("/serviceaccount/name"),
            uid: text("/serviceaccount/uid"),
            secret,
            id: payload
                .get("jti")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            audiences: matching,
        }))
    }
}

/// go-jose's checks of `exp`, `nbf` and `iat` with its leeway, in kube's words.
fn check_times(payload: &Value, now: i64) -> Result<(), AuthError> {
    let claim = |name: &str| payload.get(name).and_then(Value::as_i64);
    if let Some(nbf) = claim("nbf") {
        if now.saturating_add(LEEWAY_SECS) < nbf {
            return Err(AuthError::NotYetValid);
        }
    }
    if let Some(exp) = claim("exp") {
        if now.saturating_sub(LEEWAY_SECS) > exp {
            return Err(AuthError::Expired);
        }
    }
    if let Some(iat) = claim("iat") {
        if now.saturating_add(LEEWAY_SECS) < iat {
            return Err(AuthError::IssuedInFuture);
        }
    }
    Ok(())
}

/// The bound-token authenticator: token checks, then the ServiceAccount (and a bound
/// Secret) read from storage, as kube's validator with `--service-account-lookup`.
pub struct TokenAuthenticator {
    /// The server's issuer and key.
    pub tokens: Arc<ServiceAccountTokens>,
    /// Where ServiceAccounts and Secrets are stored.
    pub storage: Arc<dyn Storage>,
    /// The storage key prefix (`--etcd-prefix`).
    pub prefix: String,
}

impl TokenAuthenticator {
    /// `Ok(None)` for a token this issuer did not sign; `Err` with kube's reason for
    /// one it did that is no longer valid.
    pub async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        let audiences = self.tokens.api_audiences().to_vec();
        Ok(self
            .authenticate_for(token, &audiences)
            .await?
            .map(|(user, _)| user))
    }

    /// [`Self::authenticate`] for a token that must be for one of `audiences`; also
    /// returns the token's audiences among them.
    pub async fn authenticate_for(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<(UserInfo, Vec<String>)>, AuthError> {
        let now = chrono::Utc::now().timestamp();
        let Some(claims) = self.tokens.verify_for(token, now, audiences)? else {
            return Ok(None);
        };
        let ns = &claims.namespace;
        let sa = self
            .read("serviceaccounts", ns, &claims.name)
            .await?
            .ok_or_else(|| AuthError::ServiceAccountNotFound(claims.name.clone()))?;
        let sa_uid = uid_of(&sa);
        if sa_uid != claims.uid {
            return Err(AuthError::ServiceAccountUid {
                stored: sa_uid,
                claimed: claims.uid,
            });
        }
        if deleted_before(&sa, now - LEEWAY_SECS) {
            return Err(AuthError::ServiceAccountDeleted {
                namespace: ns.clone(),
                name: claims.name,
            });
        }
        if let Some((secret_name, secret_uid)) = &claims.secret {
            let secret = self
                .read("secrets", ns, secret_name)
                .await
                .ok()
                .flatten()
                .ok_or(AuthError::Invalidated)?;
            let got = uid_of(&secret);
            if &got != secret_uid {
                return Err(AuthError::SecretUid {
                    stored: got,
                    claimed: secret_uid.clone(),
                });
            }
            if deleted_before(&secret, now - LEEWAY_SECS) {
                return Err(AuthError::Invalidated);
            }
        }
        let mut user = user_info(ns, &claims.name, &claims.uid);
        if !claims.id.is_empty() {
            user.extra
                .insert(CREDENTIAL_ID_KEY.into(), vec![format!("JTI={}", claims.id)]);
        }
        Ok(Some((user, claims.audiences)))
    }

    async fn read(&self, resource: &str, ns: &str, name: &str) -> Result<Option<Value>, AuthError> {
        let key = format!("{}/{resource}/{ns}/{name}", self.prefix);
        let kv = self.storage.get(&key).await?;
        Ok(kv.and_then(|kv| crate::codec::decode_stored_json(&kv.value).ok()))
    }
}

fn uid_of(obj: &Value) -> String {
    obj.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Whether `metadata.deletionTimestamp` is set and before `cutoff` (Unix seconds).
fn deleted_before(obj: &Value, cutoff: i64) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.timestamp() < cutoff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> ServiceAccountTokens {
        ServiceAccountTokens::generate(DEFAULT_ISSUER, &[]).unwrap()
    }

    fn claims_of(t: &ServiceAccountTokens, aud: &[&str], now: i64, exp: i64) -> Value {
        let aud: Vec<String> = aud.iter().map(|a| a.to_string()).collect();
        t.claims(("default", "builder", "uid-1"), None, &aud, now, exp)
    }

    #[test]
    fn claims_are_kubes_token_request_claims() {
        let t = tokens();
        let c = claims_of(&t, &[DEFAULT_ISSUER], 1_000, 3600);
        assert_eq!(c["iss"], DEFAULT_ISSUER);
        assert_eq!(c["sub"], "system:serviceaccount:default:builder");
        assert_eq!(c["aud"], json!([DEFAULT_ISSUER]));
        assert_eq!(
            (c["iat"].clone(), c["nbf"].clone(), c["exp"].clone()),
            (json!(1000), json!(1000), json!(4600))
        );
        assert_eq!(
            c["kubernetes.io"],
            json!({"namespace": "default", "serviceaccount": {"name": "builder", "uid": "uid-1"}})
        );
        assert!(c["jti"].as_str().is_some_and(|j| j.len() == 36));
    }

    #[test]
    fn signed_token_verifies_and_names_the_service_account() {
        let t = tokens();
        assert_eq!(t.api_audiences(), [DEFAULT_ISSUER]);
        let token = t
            .sign(&claims_of(&t, &[DEFAULT_ISSUER], 1_000, 3600))
            .unwrap();
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], "ES256");
        let claims = t.verify(&token, 2_000).unwrap().unwrap();
        assert_eq!(
            (
                claims.namespace.as_str(),
                claims.name.as_str(),
                claims.uid.as_str()
            ),
            ("default", "builder", "uid-1")
        );
    }

    #[test]
    fn expired_token_is_rejected_after_the_leeway() {
        let t = tokens();
        let token = t
            .sign(&claims_of(&t, &[DEFAULT_ISSUER], 1_000, 600))
            .unwrap();
        assert!(t.verify(&token, 1_600 + 60).unwrap().is_some());
        assert_eq!(
            t.verify(&token, 1_600 + 61).unwrap_err().to_string(),
            "service account token has expired"
        );
        assert_eq!(
            t.verify(&token, 1_000 - 61).unwrap_err().to_string(),
            "service account token is not valid yet"
        );
    }

    #[test]
    fn token_for_another_audience_is_rejected() {
        let t = tokens();
        let token = t.sign(&claims_of(&t, &["vault"], 1_000, 3600)).unwrap();
        assert_eq!(
            t.verify(&token, 1_000).unwrap_err().to_string(),
            format!("token audiences [\"vault\"] is invalid for the target audiences [\"{DEFAULT_ISSUER}\"]")
        );
        let api = ServiceAccountTokens::generate(DEFAULT_ISSUER, &["vault".into(), "api".into()])
            .unwrap();
        let token = api.sign(&claims_of(&api, &["api"], 1_000, 3600)).unwrap();
        assert!(api.verify(&token, 1_000).unwrap().is_some());
    }

    #[test]
    fn tokens_of_other_issuers_or_keys_are_not_ours() {
        let t = tokens();
        let other = tokens();
        let token = other
            .sign(&claims_of(&other, &[DEFAULT_ISSUER], 1_000, 3600))
            .unwrap();
        // Same issuer, another key: ours to judge, and the signature fails.
        assert!(t.verify(&token, 1_000).is_err());
        let elsewhere = ServiceAccountTokens::generate("https://other", &[]).unwrap();
        let token = elsewhere
            .sign(&claims_of(&elsewhere, &["https://other"], 1_000, 3600))
            .unwrap();
        assert_eq!(t.verify(&token, 1_000).ok(), Some(None));
        assert_eq!(t.verify("abc123", 1_000).ok(), Some(None));
        let mut tampered = t
            .sign(&claims_of(&t, &[DEFAULT_ISSUER], 1_000, 3600))
            .unwrap();
        tampered.push('A');
        assert!(t.verify(&tampered, 1_000).is_err());
    }

    #[test]
    fn service_account_user_info_is_kubes() {
        let u = user_info("ns1", "builder", "u1");
        assert_eq!(u.username, "system:serviceaccount:ns1:builder");
        assert_eq!(
            u.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns1"]
        );
    }
}
