//! Delegated authentication and authorization, as k8s.io/apiserver's aggregated API
//! servers do: bearer tokens this server does not know go to the core apiserver as a
//! `TokenReview` (`--authentication-kubeconfig`), and every request's attributes as a
//! `SubjectAccessReview` (`--authorization-kubeconfig`), each answer cached for a
//! while (kube's TTLs: 10 s). The core also tells, in the ConfigMap
//! `kube-system/extension-apiserver-authentication` its own start-up writes, which CA
//! signs client certificates and which front proxy may vouch for users
//! ([`TrustedClients`]).

use super::authz::{Attributes, Authorizer, Decision};
use super::{AuthError, UserInfo};
use crate::remote::{Client, RemoteError};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Namespace and name of the ConfigMap with the core's client trust.
pub const TRUST_CONFIG_MAP: (&str, &str) = ("kube-system", "extension-apiserver-authentication");

/// How many answers a cache keeps; past it, it starts afresh (bounded memory whatever
/// clients send).
const MAX_CACHED: usize = 10_000;

/// A bounded cache of answers with an expiry each.
struct Answers<T> {
    entries: Mutex<HashMap<String, (Instant, T)>>,
}

impl<T: Clone> Answers<T> {
    fn new() -> Self {
        Answers {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &str) -> Option<T> {
        let entries = self.entries.lock().ok()?;
        let (until, v) = entries.get(key)?;
        (Instant::now() < *until).then(|| v.clone())
    }

    fn put(&self, key: String, ttl: Duration, value: T) {
        if ttl.is_zero() {
            return;
        }
        if let Ok(mut entries) = self.entries.lock() {
            if entries.len() >= MAX_CACHED {
                let now = Instant::now();
                entries.retain(|_, (until, _)| *until > now);
                if entries.len() >= MAX_CACHED {
                    entries.clear();
                }
            }
            entries.insert(key, (Instant::now() + ttl, value));
        }
    }
}

/// The `SubjectAccessReview` authorizer (kube's webhook authorizer in delegated mode).
pub struct SubjectAccessReviews {
    client: Client,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: Answers<(Decision, String)>,
}

impl SubjectAccessReviews {
    /// Ask the core behind `client`; allowed answers are kept `allowed_ttl`, others
    /// `denied_ttl`.
    pub fn new(client: Client, allowed_ttl: Duration, denied_ttl: Duration) -> Self {
        SubjectAccessReviews {
            client,
            allowed_ttl,
            denied_ttl,
            cache: Answers::new(),
        }
    }
}

/// The review kube's webhook authorizer posts for `attrs`.
fn subject_access_review(attrs: &Attributes) -> Value {
    let u = &attrs.user;
    let mut spec = json!({"user": u.username, "groups": u.groups});
    if !u.uid.is_empty() {
        spec["uid"] = json!(u.uid);
    }
    if !u.extra.is_empty() {
        spec["extra"] = json!(u.extra);
    }
    if attrs.resource_request {
        let mut ra = serde_json::Map::new();
        for (k, v) in [
            ("namespace", &attrs.namespace),
            ("verb", &attrs.verb),
            ("group", &attrs.api_group),
            ("version", &attrs.api_version),
            ("resource", &attrs.resource),
            ("subresource", &attrs.subresource),
            ("name", &attrs.name),
        ] {
            if !v.is_empty() {
                ra.insert(k.into(), json!(v));
            }
        }
        spec["resourceAttributes"] = Value::Object(ra);
    } else {
        spec["nonResourceAttributes"] = json!({"path": attrs.path, "verb": attrs.verb});
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
}

#[async_trait::async_trait]
impl Authorizer for SubjectAccessReviews {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        let review = subject_access_review(attrs);
        let key = review["spec"].to_string();
        if let Some(answer) = self.cache.get(&key) {
            return answer;
        }
        let status = match self
            .client
            .post(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                &review,
            )
            .await
        {
            Ok(answer) => answer.get("status").cloned().unwrap_or(Value::Null),
            Err(e) => {
                // kube's webhook authorizer has no opinion when the core cannot answer;
                // nothing is cached.
                tracing::warn!(error = %e, "SubjectAccessReview against the core failed");
                return (Decision::NoOpinion, e.to_string());
            }
        };
        let flag = |k: &str| status.get(k).and_then(Value::as_bool).unwrap_or(false);
        let reason = status
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let decision = if flag("denied") {
            Decision::Deny
        } else if flag("allowed") {
            Decision::Allow
        } else {
            Decision::NoOpinion
        };
        let ttl = if decision == Decision::Allow {
            self.allowed_ttl
        } else {
            self.denied_ttl
        };
        self.cache.put(key, ttl, (decision, reason.clone()));
        (decision, reason)
    }
}

/// k8s.io/apiserver's always-allowed paths (`--authorization-always-allow-paths`): a
/// path, or a prefix ending in `*`; resource requests are never matched.
pub struct AlwaysAllowPaths {
    exact: Vec<String>,
    prefixes: Vec<String>,
}

/// An `--authorization-always-allow-paths` entry with a `*` before its end.
#[derive(Debug, thiserror::Error)]
#[error("only trailing * allowed in {0:?}")]
pub struct PathPatternError(pub String);

impl AlwaysAllowPaths {
    /// Parse the flag's paths.
    pub fn new(paths: &[String]) -> Result<Self, PathPatternError> {
        let (mut exact, mut prefixes) = (Vec::new(), Vec::new());
        for p in paths {
            let p = p.trim_start_matches('/');
            if p.is_empty() {
                exact.push(String::new());
                continue;
            }
            if p[..p.len() - 1].contains('*') {
                return Err(PathPatternError(p.to_string()));
            }
            match p.strip_suffix('*') {
                Some(prefix) => prefixes.push(prefix.to_string()),
                None => exact.push(p.to_string()),
            }
        }
        Ok(AlwaysAllowPaths { exact, prefixes })
    }
}

#[async_trait::async_trait]
impl Authorizer for AlwaysAllowPaths {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if attrs.resource_request {
            return (Decision::NoOpinion, String::new());
        }
        let path = attrs.path.trim_start_matches('/');
        if self.exact.iter().any(|p| p == path)
            || self.prefixes.iter().any(|p| path.starts_with(p.as_str()))
        {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, String::new())
        }
    }
}

/// Members of these groups are allowed everything (k8s.io/apiserver's
/// `AlwaysAllowGroups`, `system:masters` by default).
pub struct AlwaysAllowGroups(pub Vec<String>);

#[async_trait::async_trait]
impl Authorizer for AlwaysAllowGroups {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if self.allows_everything_of(&attrs.user) {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, String::new())
        }
    }

    fn allows_everything_of(&self, user: &UserInfo) -> bool {
        user.groups.iter().any(|g| self.0.contains(g))
    }
}

/// The `TokenReview` authenticator (bearer tokens nothing local recognised).
pub struct TokenReviews {
    client: Client,
    ttl: Duration,
    cache: Answers<Option<UserInfo>>,
}

impl TokenReviews {
    /// Ask the core behind `client`; answers are kept `ttl`
    /// (`--authentication-token-webhook-cache-ttl`).
    pub fn new(client: Client, ttl: Duration) -> Self {
        TokenReviews {
            client,
            ttl,
            cache: Answers::new(),
        }
    }

    /// The user the core says `token` belongs to (`Ok(None)`: the core does not know it).
    pub async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, AuthError> {
        use sha2::Digest;
        // Keyed by a digest: the cache never holds the credential itself.
        let key = format!("{:x}", sha2::Sha256::digest(token.as_bytes()));
        if let Some(answer) = self.cache.get(&key) {
            return Ok(answer);
        }
        let review = json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token},
        });
        let answer = self
            .client
            .post("/apis/authentication.k8s.io/v1/tokenreviews", &review)
            .await
            .map_err(|e| AuthError::Delegated(e.to_string()))?;
        let status = answer.get("status").cloned().unwrap_or(Value::Null);
        let user = if status.get("authenticated").and_then(Value::as_bool) == Some(true) {
            let u = status.get("user").cloned().unwrap_or(Value::Null);
            let text = |k: &str| u.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let strings = |v: Option<&Value>| -> Vec<String> {
                v.and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let extra: BTreeMap<String, Vec<String>> = u
                .get("extra")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), strings(Some(v))))
                        .collect()
                })
                .unwrap_or_default();
            Some(UserInfo {
                username: text("username"),
                uid: text("uid"),
                groups: strings(u.get("groups")),
                extra,
            })
        } else {
            None
        };
        // kube's delegated token cache keeps successes; failures are asked again.
        if user.is_some() {
            self.cache.put(key, self.ttl, user.clone());
        }
        Ok(user)
    }
}

/// What the core's `extension-apiserver-authentication` ConfigMap says about clients.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedClients {
    /// `client-ca-file`: the CA of client certificates.
    pub client_ca_pem: Option<String>,
    /// `requestheader-client-ca-file`: the CA of the front proxy's certificate.
    pub requestheader_ca_pem: Option<String>,
    /// `requestheader-allowed-names`.
    pub allowed_names: Vec<String>,
    /// `requestheader-username-headers`.
    pub username_headers: Vec<String>,
    /// `requestheader-uid-headers`.
    pub uid_headers: Vec<String>,
    /// `requestheader-group-headers`.
    pub group_headers: Vec<String>,
    /// `requestheader-extra-headers-prefix`.
    pub extra_headers_prefix: Vec<String>,
}

impl TrustedClients {
    /// Read from a ConfigMap's `data` (string lists are JSON arrays, as kube writes them).
    pub fn from_data(data: &Value) -> TrustedClients {
        let text = |k: &str| {
            data.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
        };
        let list = |k: &str| -> Vec<String> {
            text(k)
                .and_then(|s| serde_json::from_str::<Vec<String>>(&s).ok())
                .unwrap_or_default()
        };
        TrustedClients {
            client_ca_pem: text("client-ca-file"),
            requestheader_ca_pem: text("requestheader-client-ca-file"),
            allowed_names: list("requestheader-allowed-names"),
            username_headers: list("requestheader-username-headers"),
            uid_headers: list("requestheader-uid-headers"),
            group_headers: list("requestheader-group-headers"),
            extra_headers_prefix: list("requestheader-extra-headers-prefix"),
        }
    }

    /// The ConfigMap `data` kube-apiserver writes for its own flags.
    pub fn to_data(&self) -> BTreeMap<String, String> {
        let mut data = BTreeMap::new();
        let list = |v: &[String]| serde_json::to_string(v).unwrap_or_else(|_| "[]".into());
        if let Some(ca) = &self.client_ca_pem {
            data.insert("client-ca-file".into(), ca.clone());
        }
        if let Some(ca) = &self.requestheader_ca_pem {
            data.insert("requestheader-client-ca-file".into(), ca.clone());
            data.insert(
                "requestheader-allowed-names".into(),
                list(&self.allowed_names),
            );
            data.insert(
                "requestheader-username-headers".into(),
                list(&self.username_headers),
            );
            if !self.uid_headers.is_empty() {
                data.insert("requestheader-uid-headers".into(), list(&self.uid_headers));
            }
            data.insert(
                "requestheader-group-headers".into(),
                list(&self.group_headers),
            );
            data.insert(
                "requestheader-extra-headers-prefix".into(),
                list(&self.extra_headers_prefix),
            );
        }
        data
    }

    /// Fetch the ConfigMap from the core (`Ok(None)` when it has none).
    pub async fn fetch(client: &Client) -> Result<Option<TrustedClients>, RemoteError> {
        let (ns, name) = TRUST_CONFIG_MAP;
        match client
            .get(&format!("/api/v1/namespaces/{ns}/configmaps/{name}"))
            .await
        {
            Ok(cm) => Ok(Some(TrustedClients::from_data(
                cm.get("data").unwrap_or(&Value::Null),
            ))),
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn always_allowed_paths_as_k8s_apiserver() {
        let paths = AlwaysAllowPaths::new(&["/healthz".into(), "/debug/*".into()]).expect("paths");
        let on = |path: &str, resource: bool| Attributes {
            path: path.into(),
            resource_request: resource,
            ..Default::default()
        };
        assert_eq!(
            paths.authorize(&on("/healthz", false)).await.0,
            Decision::Allow
        );
        assert_eq!(
            paths.authorize(&on("/debug/x", false)).await.0,
            Decision::Allow
        );
        assert_eq!(
            paths.authorize(&on("/healthz", true)).await.0,
            Decision::NoOpinion
        );
        assert_eq!(
            paths.authorize(&on("/metrics", false)).await.0,
            Decision::NoOpinion
        );
        assert_eq!(
            AlwaysAllowPaths::new(&["/a*b".into()])
                .err()
                .map(|e| e.to_string()),
            Some("only trailing * allowed in \"a*b\"".to_string())
        );
    }

    #[test]
    fn trust_data_round_trips_as_kube_writes_it() {
        let t = TrustedClients {
            requestheader_ca_pem: Some("PEM".into()),
            allowed_names: vec!["front-proxy-client".into()],
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_headers_prefix: vec!["X-Remote-Extra-".into()],
            uid_headers: vec!["X-Remote-Uid".into()],
            ..Default::default()
        };
        let data = t.to_data();
        assert_eq!(
            data["requestheader-username-headers"],
            "[\"X-Remote-User\"]"
        );
        assert_eq!(TrustedClients::from_data(&json!(data)), t);
    }
}
