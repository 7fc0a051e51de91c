//! The cluster's client of the server's own API: requests built in-process and handed
//! to the same dispatch as HTTP requests after authentication (so defaulting,
//! admission, validation and watch encoding are the ones every client gets), made as
//! the controller's user, as kube-controller-manager's controllers call kube-apiserver.

use crate::apiserver::ApiServer;
use crate::http::negotiate::Output;
use crate::http::response::Body;
use crate::http::{parse_query, query_bool, request_info, ApiRequest};
use crate::user::UserInfo;
use bytes::Bytes;
use futures::Stream;
use http::{HeaderMap, HeaderValue, Method};
use http_body_util::BodyExt;
use serde_json::Value;
use std::sync::{Arc, Weak};

/// The `User-Agent` the cluster's requests carry (the default field manager).
pub const USER_AGENT: &str =
    "kube-controller-manager/v1.36.2 (linux/amd64) kubernetes/crd-apiserver";

/// A failed call: the `Status` the server answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `reason` (`NotFound`, `Conflict`, `AlreadyExists`, ...).
    pub reason: String,
    /// `message`.
    pub message: String,
}

impl ApiError {
    fn gone() -> ApiError {
        ApiError {
            code: 503,
            reason: "ServiceUnavailable".into(),
            message: "the server is stopping".into(),
        }
    }

    fn from_body(code: u16, body: &[u8]) -> ApiError {
        let status: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let text = |k: &str| {
            status
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        ApiError {
            code,
            reason: text("reason"),
            message: text("message"),
        }
    }

    /// Whether the object was not there.
    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// Whether the write lost a race (stale resourceVersion, precondition).
    pub fn is_conflict(&self) -> bool {
        self.code == 409
    }
}

/// A client of one server, as one user.
#[derive(Clone)]
pub struct Client {
    api: Weak<ApiServer>,
    user: UserInfo,
}

impl Client {
    /// A client of `api` acting as the service account `kube-system/<name>`, as
    /// kube-controller-manager's controllers act with `--use-service-account-credentials`.
    pub fn service_account(api: &Arc<ApiServer>, name: &str) -> Client {
        Client {
            api: Arc::downgrade(api),
            user: UserInfo {
                username: format!("system:serviceaccount:kube-system:{name}"),
                uid: String::new(),
                groups: vec![
                    "system:serviceaccounts".into(),
                    "system:serviceaccounts:kube-system".into(),
                    "system:authenticated".into(),
                ],
                extra: Default::default(),
            },
        }
    }

    /// Whether the server is still there.
    pub fn is_alive(&self) -> bool {
        self.api.strong_count() > 0
    }

    async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> Result<http::Response<Body>, ApiError> {
        let api = self.api.upgrade().ok_or_else(ApiError::gone)?;
        let (path, query) = match path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (path_and_query, None),
        };
        let query = parse_query(query);
        let watch = query_bool(query.get("watch").map(String::as_str));
        let mut headers = HeaderMap::new();
        headers.insert(
            http::header::USER_AGENT,
            HeaderValue::from_static(USER_AGENT),
        );
        headers.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json"),
        );
        if let Ok(v) = HeaderValue::from_str(content_type) {
            headers.insert(http::header::CONTENT_TYPE, v);
        }
        let body = match body {
            Some(v) => Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
            None => Bytes::new(),
        };
        let req = ApiRequest {
            info: std::sync::Arc::new(request_info::parse(&method, path, watch)),
            method,
            query,
            headers,
            body,
            output: Output::Json,
            user: std::sync::Arc::new(self.user.clone()),
        };
        Ok(crate::handlers::dispatch(&api, &req).await)
    }

    async fn call(
        &self,
        method: Method,
        path_and_query: &str,
        content_type: &str,
        body: Option<&Value>,
    ) -> Result<Value, ApiError> {
        let resp = self
            .send(method, path_and_query, content_type, body)
            .await?;
        let code = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        if code >= 300 {
            return Err(ApiError::from_body(code, &bytes));
        }
        serde_json::from_slice(&bytes).map_err(|e| ApiError {
            code: 500,
            reason: "InternalError".into(),
            message: format!("undecodable answer: {e}"),
        })
    }

    /// `GET`.
    pub async fn get(&self, path: &str) -> Result<Value, ApiError> {
        self.call(Method::GET, path, "", None).await
    }

    /// `POST` a new object to the collection `path`.
    pub async fn create(&self, path: &str, obj: &Value) -> Result<Value, ApiError> {
        self.call(Method::POST, path, "application/json", Some(obj))
            .await
    }

    /// `PUT` the object (with its `resourceVersion`: a conflict when stale).
    pub async fn update(&self, path: &str, obj: &Value) -> Result<Value, ApiError> {
        self.call(Method::PUT, path, "application/json", Some(obj))
            .await
    }

    /// A JSON merge patch.
    pub async fn merge_patch(&self, path: &str, patch: &Value) -> Result<Value, ApiError> {
        let ct = "application/merge-patch+json";
        self.call(Method::PATCH, path, ct, Some(patch)).await
    }

    /// `DELETE` with `DeleteOptions` (`propagationPolicy`, `preconditions`, ...).
    pub async fn delete(&self, path: &str, options: &Value) -> Result<Value, ApiError> {
        self.call(Method::DELETE, path, "application/json", Some(options))
            .await
    }

    /// Watch `path` from `resource_version`: the events as they come, ending when the
    /// server ends the watch.
    pub async fn watch(
        &self,
        path: &str,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Value>, ApiError> {
        let query = format!(
            "{path}?watch=true&allowWatchBookmarks=true&resourceVersion={resource_version}"
        );
        let resp = self.send(Method::GET, &query, "", None).await?;
        let code = resp.status().as_u16();
        if code >= 300 {
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(ApiError::from_body(code, &bytes));
        }
        let frames = resp.into_body();
        Ok(futures::stream::unfold(
            (frames, Vec::<u8>::new()),
            |(mut frames, mut pending)| async move {
                loop {
                    if let Some(at) = pending.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=at).collect();
                        match serde_json::from_slice::<Value>(&line) {
                            Ok(event) => return Some((event, (frames, pending))),
                            Err(_) => continue,
                        }
                    }
                    match frames.frame().await {
                        Some(Ok(frame)) => {
                            if let Ok(data) = frame.into_data() {
                                pending.extend_from_slice(&data);
                            }
                        }
                        _ => return None,
                    }
                }
            },
        ))
    }
}
