//! What every request passes before its handler: kube's head and host checks, the
//! request timeout, authentication, impersonation and authorization, negotiation,
//! the body limit, then dispatch with the injected faults applied; a panic anywhere
//! becomes kube's 500.

use crate::apiserver::ApiServer;
use crate::auth::authz::{self, AlwaysAllow, Authorizer, Decision};
use crate::auth::{Authenticator, Connection, UserInfo};
use crate::handlers::Resolution;
use crate::http::negotiate::{self, Output};
use crate::http::request_info;
use crate::http::response::{self, Body};
use crate::http::{
    is_long_running, request_timeout, timed_out, too_large, ApiRequest, Head,
    DEFAULT_REQUEST_TIMEOUT, MAX_BODY_BYTES, MAX_HEADER_BYTES,
};
use crate::status::Status;
use bytes::Bytes;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What every request passes before dispatch: who sent it, whether they may, and how
/// long it may take.
pub struct Gate {
    /// Authenticators (`--token-auth-file`, `--client-ca-file`, ...).
    pub authenticator: Authenticator,
    /// The authorizer (`--authorization-mode`).
    pub authorizer: Arc<dyn Authorizer>,
    /// Time limit of non-long-running requests (`--request-timeout`).
    pub request_timeout: Duration,
    /// Plain HTTP answers only requests naming a loopback host: it is unauthenticated,
    /// and a web page could otherwise reach it by DNS rebinding (off with
    /// `--insecure-allow-remote-http`).
    pub plain_http_loopback_hosts_only: bool,
    /// `--max-requests-inflight` / `--max-mutating-requests-inflight`.
    pub in_flight: InFlight,
}

/// kube's max-in-flight filter: at most so many read-only and mutating requests at
/// once (`None`: no limit); one more gets kube's 429 `Too many requests, please try
/// again later.` with `Retry-After: 1`. Long-running requests (watches, exec, logs,
/// proxies) and `system:masters` pass uncounted, as in kube.
#[derive(Clone, Debug, Default)]
pub struct InFlight {
    /// Read-only requests (`get`, `list`, `watch`).
    pub read_only: Option<Arc<tokio::sync::Semaphore>>,
    /// Every other verb.
    pub mutating: Option<Arc<tokio::sync::Semaphore>>,
}

impl InFlight {
    /// Limits of `read_only` and `mutating` requests (0: no limit, as kube's flags).
    pub fn new(read_only: usize, mutating: usize) -> InFlight {
        let limit = |n: usize| (n > 0).then(|| Arc::new(tokio::sync::Semaphore::new(n)));
        InFlight {
            read_only: limit(read_only),
            mutating: limit(mutating),
        }
    }

    /// A place for this request, `Ok(None)` when it is not counted, or kube's 429.
    fn enter(
        &self,
        info: &request_info::RequestInfo,
        user: &UserInfo,
    ) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Box<Response<Body>>> {
        if is_long_running(info)
            || user
                .groups
                .iter()
                .any(|g| g == apimachinery::user::MASTERS_GROUP)
        {
            return Ok(None);
        }
        let read_only = matches!(&*info.verb, "get" | "list" | "watch");
        let limit = if read_only {
            &self.read_only
        } else {
            &self.mutating
        };
        let Some(limit) = limit else {
            return Ok(None);
        };
        match limit.clone().try_acquire_owned() {
            Ok(permit) => Ok(Some(permit)),
            Err(_) => {
                let mut resp = response::status(
                    &Status::too_many_requests("Too many requests, please try again later.", 1),
                    Output::Json,
                );
                resp.headers_mut()
                    .insert(http::header::RETRY_AFTER, http::HeaderValue::from(1u32));
                Err(Box::new(resp))
            }
        }
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            authenticator: Authenticator {
                anonymous: true,
                ..Default::default()
            },
            authorizer: Arc::new(AlwaysAllow),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            plain_http_loopback_hosts_only: true,
            in_flight: InFlight::default(),
        }
    }
}

/// Serve one HTTP request from a plain-HTTP connection with the default gate.
pub async fn serve(
    api: Arc<ApiServer>,
    faults: &crate::fault::Faults,
    req: Request<Incoming>,
) -> Response<Body> {
    let gate = Arc::new(Gate::default());
    let head = Head::of(req.method(), req.uri());
    serve_gated(
        api,
        faults,
        gate,
        Arc::new(Connection::default()),
        req,
        head,
        None,
    )
    .await
}

/// Serve one HTTP request: the request timeout (non-long-running requests),
/// authentication, authorization, then the handler with the server's injected faults
/// applied. A panic anywhere becomes kube's 500.
pub async fn serve_gated(
    api: Arc<ApiServer>,
    faults: &crate::fault::Faults,
    gate: Arc<Gate>,
    conn: Arc<Connection>,
    req: Request<Incoming>,
    head: Head,
    resolution: Option<Resolution>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    if head_size(&parts) > MAX_HEADER_BYTES {
        return header_too_large();
    }
    if !conn.tls && gate.plain_http_loopback_hosts_only {
        if let Some(host) = foreign_host(&parts) {
            return response::status(
                &Status::forbidden_message(format!(
                    "forbidden: plain HTTP is served to loopback hosts only, not {}: it is unauthenticated (use localhost or 127.0.0.1, or HTTPS)",
                    crate::field::go_quote(&host)
                )),
                Output::Json,
            );
        }
    }
    let Head { query, info } = head;
    let timeout = if is_long_running(&info) {
        None
    } else {
        match request_timeout(
            query.get("timeout").map(String::as_str),
            gate.request_timeout,
        ) {
            Ok(t) => Some(t),
            Err(s) => return response::status(&s, Output::Json),
        }
    };
    let method = parts.method.clone();
    let uri = parts.uri.clone();
    let faults = faults.clone();
    // A read cut at its deadline leaves nothing behind: it runs in this task. A write
    // runs on as kube's handler goroutine does (never stopped between its storage
    // write and what follows it).
    let detach = !matches!(&*info.verb, "get" | "list") || !info.is_resource_request;
    // Boxed: the request's whole future is built once on the heap and moved no more
    // (awaited in place it is several KiB, copied at each level that takes it).
    let work = Box::pin(async move {
        let user = match admit(&gate, &conn, &parts.headers, &info, &info.path).await {
            Ok(u) => u,
            Err(resp) => return resp,
        };
        let _place = match gate.in_flight.enter(&info, &user) {
            Ok(place) => place,
            Err(resp) => return *resp,
        };
        if let Some((backend, discovery)) = claimed(&api, &info) {
            let body = match read_body(body, parts.headers.get(http::header::CONTENT_LENGTH)).await
            {
                Ok(b) => b,
                Err(s) => return response::status(&s, Output::Json),
            };
            let forward = crate::aggregator::proxy::Forward {
                parts: &parts,
                body,
                user: &user,
                discovery,
            };
            return api.aggregator.forward(&backend, forward).await;
        }
        let request = Parsed {
            parts,
            info,
            query,
            user,
            resolution,
        };
        handle(api, &faults, request, body).await
    });
    if detach {
        run_with_deadline(work, timeout, &method, &uri).await
    } else {
        run_inline_with_deadline(work, timeout, &method, &uri).await
    }
}

/// [`run_with_deadline`] for reads: in the caller's task (no task spawned, no wake-up
/// across threads), dropped at the deadline.
async fn run_inline_with_deadline<F>(
    work: F,
    timeout: Option<Duration>,
    method: &Method,
    uri: &http::Uri,
) -> Response<Body>
where
    F: std::future::Future<Output = Response<Body>>,
{
    match timeout {
        Some(t) => match tokio::time::timeout(t, work).await {
            Ok(resp) => resp,
            Err(_) => {
                tracing::info!(%method, %uri, timeout = ?t, "request timed out");
                response::status(&timed_out(), Output::Json)
            }
        },
        None => work.await,
    }
}

/// The backend of a request below `/apis/<group>/<version>` whose APIService is
/// remote, and whether it is that group-version's discovery.
fn claimed(
    api: &ApiServer,
    info: &request_info::RequestInfo,
) -> Option<(Arc<crate::aggregator::Backend>, bool)> {
    // `/apis/<group>/<version>...` parses to its group and version.
    if info.api_prefix != "apis" || info.version().is_empty() {
        return None;
    }
    let backend = api.aggregator.claims(info.group(), info.version())?;
    Some((backend, info.segment(3).is_none()))
}

/// Authenticate and authorize a request: its user, or kube's 401/403 response.
/// Every request passes here once, before any handler (`/metrics` included).
pub async fn admit(
    gate: &Gate,
    conn: &Connection,
    headers: &http::HeaderMap,
    info: &request_info::RequestInfo,
    path: &str,
) -> Result<Arc<UserInfo>, Response<Body>> {
    let mut user = gate
        .authenticator
        .authenticate(headers, conn)
        .await
        .map_err(|s| response::status(&s, Output::Json))?;
    // kube's filter order: authentication, impersonation, then authorization (as the
    // impersonated user).
    if crate::auth::impersonation::requested(headers) {
        let requester = Arc::unwrap_or_clone(user);
        user =
            crate::auth::impersonation::impersonate(gate.authorizer.as_ref(), requester, headers)
                .await
                .map(Arc::new)
                .map_err(|s| response::status(&s, Output::Json))?;
    }
    if gate.authorizer.allows_everything_of(&user) {
        return Ok(user);
    }
    let attrs = crate::auth::authz::request_attributes(&user, info, path);
    let (decision, reason) = gate.authorizer.authorize(&attrs).await;
    if decision != Decision::Allow {
        tracing::debug!(user = %user.username, verb = %info.verb, %path, %reason, "forbidden");
        return Err(response::status(
            &authz::forbidden(&attrs, &reason),
            Output::Json,
        ));
    }
    Ok(user)
}

/// The length of `uri` as it prints (`scheme://authority`, path, `?query`), without
/// printing it.
fn uri_len(uri: &http::Uri) -> usize {
    let scheme = uri.scheme_str().map_or(0, |s| s.len() + "://".len());
    let authority = uri.authority().map_or(0, |a| a.as_str().len());
    let query = uri.query().map_or(0, |q| q.len() + 1);
    scheme + authority + uri.path().len() + query
}

/// The size of a request's HTTP/1 request line and header lines.
fn head_size(parts: &http::request::Parts) -> usize {
    let line = parts.method.as_str().len() + uri_len(&parts.uri) + " HTTP/1.1\r\n".len();
    let headers: usize = parts
        .headers
        .iter()
        .map(|(k, v)| k.as_str().len() + 2 + v.len() + 2)
        .sum();
    line + headers + 2
}

/// Go's answer to an oversized head (plain text; the connection is closed).
fn header_too_large() -> Response<Body> {
    let mut resp = response::text(
        http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "431 Request Header Fields Too Large",
    );
    resp.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    resp
}

/// An authorized request before negotiation and its body.
struct Parsed {
    parts: http::request::Parts,
    info: Arc<request_info::RequestInfo>,
    query: HashMap<String, String>,
    user: Arc<UserInfo>,
    /// What a resource request resolved to, when the caller resolved it already.
    resolution: Option<Resolution>,
}

/// Negotiate, read the body and dispatch an authorized request.
async fn handle(
    api: Arc<ApiServer>,
    faults: &crate::fault::Faults,
    parsed: Parsed,
    body: Incoming,
) -> Response<Body> {
    let Parsed {
        parts,
        info,
        query,
        user,
        resolution,
    } = parsed;
    let accept = parts
        .headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok());
    let aggregated_ok = matches!(info.path.trim_matches('/'), "api" | "apis");
    let table_ok = info.is_resource_request
        && crate::registry::builtin::serves_tables(
            info.group(),
            info.version(),
            info.resource(),
            info.subresource(),
        );
    // `/openapi/...` negotiates as kube-openapi does (protobuf, a bare 406) in its handler.
    let openapi = !info.is_resource_request && info.segment(0) == Some("openapi");
    let output = match negotiate::choose_output(accept, aggregated_ok, table_ok) {
        Some(o) => o,
        None if openapi => Output::Json,
        None => {
            return response::status(
                &Status::not_acceptable(negotiate::NOT_ACCEPTABLE),
                Output::Json,
            );
        }
    };
    let body = match read_body(body, parts.headers.get(http::header::CONTENT_LENGTH)).await {
        Ok(b) => b,
        Err(s) => return response::status(&s, output),
    };
    let request = ApiRequest {
        method: parts.method,
        info,
        query,
        headers: parts.headers,
        body,
        output,
        user,
    };
    let started = std::time::Instant::now();
    let resp = crate::fault::around_dispatch(faults, &api, &request, resolution).await;
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        status = resp.status().as_u16(),
        "request"
    );
    resp
}

/// The whole body, or kube's 413 past [`MAX_BODY_BYTES`] (at once when the declared
/// length says so).
async fn read_body(
    body: Incoming,
    content_length: Option<&http::HeaderValue>,
) -> Result<Bytes, Status> {
    let declared = content_length
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(b) => Ok(b.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(Status::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}

/// The host a request names (`Host`, or HTTP/2's `:authority`) when it is not a
/// loopback name or address; `None` for loopback hosts and requests naming none.
fn foreign_host(parts: &http::request::Parts) -> Option<String> {
    let authority = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string)
        .or_else(|| parts.uri.authority().map(|a| a.as_str().to_string()))?;
    let host = match authority.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(h, _)| h),
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let loopback = host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!loopback).then_some(authority)
}

/// Run `work` on its own task within `timeout`: past it, kube's 504 (the work goes on,
/// as kube's handler goroutine does); a panic in it, kube's plain-text 500, logged.
pub async fn run_with_deadline<F>(
    work: F,
    timeout: Option<Duration>,
    method: &Method,
    uri: &http::Uri,
) -> Response<Body>
where
    F: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let task = tokio::spawn(work);
    let joined = match timeout {
        Some(t) => match tokio::time::timeout(t, task).await {
            Ok(joined) => joined,
            Err(_) => {
                tracing::info!(%method, %uri, timeout = ?t, "request timed out");
                return response::status(&timed_out(), Output::Json);
            }
        },
        None => task.await,
    };
    match joined {
        Ok(resp) => resp,
        Err(e) => {
            tracing::error!(%method, %uri, error = %e, "apiserver panic'd");
            panic_response()
        }
    }
}

/// kube's answer to a request whose handler panicked (plain text, not a Status).
pub fn panic_response() -> Response<Body> {
    response::text(
        http::StatusCode::INTERNAL_SERVER_ERROR,
        "This request caused apiserver to panic. Look in the logs for details.\n",
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn uri_len_is_the_printed_length() {
        for uri in [
            "/",
            "/apis/g/v1/namespaces/a/w/x?watch=true&timeout=5s",
            "http://localhost:8080/api?x",
            "https://a.b:6443/",
            "*",
        ] {
            let u: http::Uri = uri.parse().unwrap();
            assert_eq!(super::uri_len(&u), u.to_string().len(), "{uri}");
        }
    }

    use super::*;

    async fn body_text(resp: Response<Body>) -> String {
        let bytes = resp.into_body().collect().await.map(|b| b.to_bytes());
        String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned()
    }

    #[tokio::test]
    async fn slow_request_past_its_deadline_is_kubes_504() {
        let slow = async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            response::text(http::StatusCode::OK, "late")
        };
        let resp = run_with_deadline(
            slow,
            Some(Duration::from_millis(50)),
            &Method::GET,
            &"/x".parse().unwrap(),
        )
        .await;
        assert_eq!(resp.status(), 504);
        let body: serde_json::Value = serde_json::from_str(&body_text(resp).await).unwrap();
        assert_eq!(
            body,
            serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Timeout: request did not complete within the allotted timeout",
                "reason":"Timeout","details":{},"code":504})
        );
    }

    #[tokio::test]
    async fn panicking_handler_is_kubes_500_not_a_dropped_connection() {
        let boom = async {
            let v: Vec<u8> = Vec::new();
            let i = v.len() + 3;
            response::text(http::StatusCode::OK, format!("{}", v[i]))
        };
        let resp = run_with_deadline(boom, None, &Method::GET, &"/x".parse().unwrap()).await;
        assert_eq!(resp.status(), 500);
        assert_eq!(
            body_text(resp).await,
            "This request caused apiserver to panic. Look in the logs for details.\n"
        );
    }
}
