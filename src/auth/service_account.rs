//! Service account tokens, as kube's TokenRequest issuer and its bound-token
//! authenticator: JWTs with kube's claims (`iss`, `sub`, `aud`, `exp`, `iat`, `nbf`,
//! `jti` and the private `kubernetes.io` claim) signed RS256, ES256 or ES384 by the
//! signing key (`keys`), and their authentication: of one of the issuers, signed by
//! one of the verification keys (the `kid` picks it, as kube's static key getter),
//! unexpired, for one of the API audiences, and the ServiceAccount (and a bound
//! Secret) still there with the uid the token names.
//!
//! The signing key is `--service-account-signing-key-file`'s, or one generated at
//! start; the verification keys are `--service-account-key-file`'s, or the signing
//! key's public half when none is given (kube requires the flag; we default it).

use super::keys::{PublicKey, SigningKey};
use super::{AuthConfigError, AuthError, UserInfo};
use crate::storage::Storage;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
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

/// The token issuer and verifier of a server: its signing key, verification keys,
/// issuers and audiences.
#[derive(Debug)]
pub struct ServiceAccountTokens {
    /// The first issues tokens; all are accepted.
    issuers: Vec<String>,
    api_audiences: Vec<String>,
    key: SigningKey,
    verifying: Vec<PublicKey>,
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
    /// Tokens of `issuer` signed with a key generated now. Empty `api_audiences`
    /// means the issuer (kube's default of `--api-audiences`).
    pub fn generate(issuer: &str, api_audiences: &[String]) -> Result<Self, AuthConfigError> {
        Self::new(
            &[issuer.to_string()],
            api_audiences,
            SigningKey::generate()?,
            Vec::new(),
        )
    }

    /// Tokens of `issuers` (the first issues; kube's checks: none empty, none twice),
    /// signed with `key` and verified with `verifying` (the key's own public half when
    /// empty). Empty `api_audiences` means the issuers.
    pub fn new(
        issuers: &[String],
        api_audiences: &[String],
        key: SigningKey,
        verifying: Vec<PublicKey>,
    ) -> Result<Self, AuthConfigError> {
        let mut seen = std::collections::HashSet::new();
        for issuer in issuers {
            if issuer.is_empty() {
                return Err(AuthConfigError::EmptyIssuer);
            }
            if !seen.insert(issuer.as_str()) {
                return Err(AuthConfigError::RepeatedIssuer(issuer.clone()));
            }
        }
        let issuers = if issuers.is_empty() {
            vec![DEFAULT_ISSUER.to_string()]
        } else {
            issuers.to_vec()
        };
        let api_audiences = if api_audiences.is_empty() {
            issuers.clone()
        } else {
            api_audiences.to_vec()
        };
        let verifying = if verifying.is_empty() {
            vec![key.public().clone()]
        } else {
            verifying
        };
        Ok(ServiceAccountTokens {
            issuers,
            api_audiences,
            key,
            verifying,
        })
    }

    /// The issuer of the tokens this server signs (the first `--service-account-issuer`).
    pub fn issuer(&self) -> &str {
        &self.issuers[0]
    }

    /// `--api-audiences` (the issuer when not given): what TokenRequests default to
    /// and what authenticated tokens must be for.
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }

    /// The `audiences` of a TokenRequest's or TokenReview's spec, or the API
    /// audiences when it names none (kube's default for both).
    pub fn audiences_or_default(&self, spec: &Value) -> Vec<String> {
        let asked: Vec<String> = crate::object::strings(spec.get("audiences"));
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
            "iss": self.issuers[0],
            "jti": uuid::Uuid::new_v4().to_string(),
            "kubernetes.io": kubernetes,
            "nbf": now,
            "sub": format!("{USERNAME_PREFIX}{namespace}:{name}"),
        })
    }

    /// A signed compact JWS of `claims`.
    pub fn sign(&self, claims: &Value) -> Result<String, AuthError> {
        let header = json!({"alg": self.key.alg(), "kid": self.key.public().kid()});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.key.sign(signing_input.as_bytes())?;
        Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(&sig)))
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
        let issuer = payload.get("iss").and_then(Value::as_str).unwrap_or("");
        if !self.issuers.iter().any(|i| i == issuer) {
            return Ok(None);
        }
        let alg = header.get("alg").and_then(Value::as_str).unwrap_or("");
        // The `kid` narrows the keys to those it names; none named, every key.
        let keys: Vec<&PublicKey> = match header.get("kid").and_then(Value::as_str) {
            Some(kid) if !kid.is_empty() => {
                self.verifying.iter().filter(|k| k.kid() == kid).collect()
            }
            _ => self.verifying.iter().collect(),
        };
        if keys.is_empty() {
            return Err(AuthError::NoKeys);
        }
        let sig = URL_SAFE_NO_PAD
            .decode(s)
            .map_err(|_| AuthError::InvalidSignature)?;
        let message = format!("{h}.{p}");
        if !keys
            .iter()
            .any(|k| k.verifies(alg, message.as_bytes(), &sig))
        {
            return Err(AuthError::SignatureVerification);
        }
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

    /// A compact JWS's decoded header.
    fn header_of(token: &str) -> Value {
        let part = token.split('.').next().unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
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
        let header = header_of(&token);
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

    fn key(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/keys")
            .join(name)
    }

    #[test]
    fn rsa_signed_tokens_verify_with_any_of_the_keys_and_any_issuer() {
        use crate::auth::keys::{public_keys_from_file, SigningKey};
        let issuers = ["https://new".to_string(), "https://old".to_string()];
        let signer = SigningKey::from_file(&key("rsa-sa-signer.key")).unwrap();
        let mut verifying = public_keys_from_file(&key("ec384-sec1.key")).unwrap();
        verifying.extend(public_keys_from_file(&key("rsa-sa-signer.pub")).unwrap());
        let t = ServiceAccountTokens::new(&issuers, &[], signer, verifying).unwrap();
        assert_eq!(t.issuer(), "https://new");
        assert_eq!(t.api_audiences(), issuers);
        let token = t
            .sign(&claims_of(&t, &["https://old"], 1_000, 3600))
            .unwrap();
        let header = header_of(&token);
        assert_eq!(header["alg"], "RS256");
        assert!(t.verify(&token, 1_000).unwrap().is_some());

        // Tokens of the second issuer are accepted too.
        let old = ServiceAccountTokens::new(
            &["https://old".to_string()],
            &[],
            SigningKey::from_file(&key("ec384-sec1.key")).unwrap(),
            Vec::new(),
        )
        .unwrap();
        let token = old
            .sign(&claims_of(&old, &["https://new"], 1_000, 3600))
            .unwrap();
        assert!(t.verify(&token, 1_000).unwrap().is_some());

        // A key that signs without being a verification key: its kid names none.
        let stranger =
            ServiceAccountTokens::new(&issuers, &[], SigningKey::generate().unwrap(), Vec::new())
                .unwrap();
        let token = stranger
            .sign(&claims_of(&stranger, &["https://new"], 1_000, 3600))
            .unwrap();
        assert_eq!(
            t.verify(&token, 1_000).unwrap_err().to_string(),
            "invalid signature, no keys found"
        );
    }

    #[test]
    fn issuers_are_checked_as_kube_does() {
        let new = |issuers: &[&str]| {
            let issuers: Vec<String> = issuers.iter().map(|i| i.to_string()).collect();
            ServiceAccountTokens::new(
                &issuers,
                &[],
                crate::auth::keys::SigningKey::generate().unwrap(),
                Vec::new(),
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        assert_eq!(
            new(&["a", ""]),
            Err("service-account-issuer should not be an empty string".into())
        );
        assert_eq!(
            new(&["a", "b", "a"]),
            Err("service-account-issuer \"a\" is already specified".into())
        );
        assert_eq!(new(&[]), Ok(()));
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
