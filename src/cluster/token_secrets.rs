//! kube's serviceaccount-token controller for legacy token Secrets: a Secret of type
//! `kubernetes.io/service-account-token` naming a ServiceAccount in its
//! `kubernetes.io/service-account.name` annotation gets `data.token` (a token of that
//! account bound to the Secret, signed by the server's service-account key, without
//! expiry — valid while the Secret exists), `data.ca.crt` and `data.namespace`, and the
//! account's uid in `kubernetes.io/service-account.uid`.
//!
//! Simplified: the token is in the bound-token form this server verifies (its issuer,
//! `kubernetes.io` claims), not kube's legacy `kubernetes/serviceaccount` issuer.

use super::client::Client;
use super::informer::Informer;
use super::objects::{name, namespace, path_of, str_at, uid};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use crate::auth::service_account::ServiceAccountTokens;
use base64::Engine;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The Secret type of legacy service-account tokens.
pub const TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
const ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";
const ACCOUNT_UID: &str = "kubernetes.io/service-account.uid";

/// A legacy token does not expire: a hundred years.
const NO_EXPIRY_SECONDS: i64 = 100 * 365 * 24 * 3600;

struct TokenSecrets {
    client: Client,
    secrets: Arc<Informer>,
    accounts: Arc<Informer>,
    tokens: Arc<ServiceAccountTokens>,
    ca: String,
}

impl TokenSecrets {
    async fn fill(&self, secret: &Value, account: &Value) -> bool {
        let now = chrono::Utc::now().timestamp();
        let claims = self.tokens.claims(
            (namespace(account), name(account), uid(account)),
            Some((name(secret), uid(secret))),
            self.tokens.api_audiences(),
            now,
            NO_EXPIRY_SECONDS,
        );
        let Ok(token) = self.tokens.sign(&claims) else {
            return false;
        };
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        let mut updated = secret.clone();
        updated["data"]["token"] = json!(b64(&token));
        updated["data"]["ca.crt"] = json!(b64(&self.ca));
        updated["data"]["namespace"] = json!(b64(namespace(secret)));
        updated["metadata"]["annotations"][ACCOUNT_UID] = json!(uid(account));
        match self
            .client
            .update(&path_of("v1", "secrets", secret), &updated)
            .await
        {
            Ok(w) => {
                self.secrets.observe(&w);
                true
            }
            Err(e) => e.is_not_found(),
        }
    }
}

impl Reconcile for TokenSecrets {
    async fn reconcile(&mut self) -> Option<Duration> {
        let mut retry = false;
        for secret in self.secrets.list() {
            if str_at(&secret, "/type") != TOKEN_TYPE || secret.pointer("/data/token").is_some() {
                continue;
            }
            let account_name = secret
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(ACCOUNT_NAME))
                .and_then(Value::as_str)
                .unwrap_or("");
            let Some(account) = self
                .accounts
                .get(&format!("{}/{account_name}", namespace(&secret)))
            else {
                continue;
            };
            retry |= !self.fill(&secret, &account).await;
        }
        retry.then_some(Duration::from_millis(200))
    }
}

/// Start the serviceaccount-token controller (nothing to sign with: not started).
pub fn start(
    api: &Arc<ApiServer>,
    informers: &Informers,
    ca: Option<String>,
    stop: watch::Receiver<bool>,
) {
    let Some(tokens) = api.options.service_account_tokens.clone() else {
        return;
    };
    let secrets = informers.of("/api/v1/secrets");
    let accounts = informers.of("/api/v1/serviceaccounts");
    let controller = TokenSecrets {
        client: Client::service_account(api, "tokens-controller"),
        secrets: secrets.clone(),
        accounts: accounts.clone(),
        tokens,
        ca: ca.unwrap_or_default(),
    };
    super::spawn_controller(vec![secrets, accounts], &api.clock, stop, controller);
}
