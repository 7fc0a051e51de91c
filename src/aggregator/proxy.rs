//! A request of a remote group-version forwarded as kube's proxy handler forwards it,
//! once the user is authenticated and authorized here: HTTPS to one of the Service's
//! addresses, the `Host` the address, the user as `X-Remote-*` headers (any the client
//! sent removed), no `Authorization` or `Impersonate-*` headers, hop-by-hop headers
//! dropped both ways and CORS headers of the answer dropped; the answer's status,
//! headers and body streamed back as they come (watches included). Discovery of the
//! group-version itself gets 5 s. kube's errors: `service unavailable` (503) when the
//! APIService is not available or its Service does not resolve, `error trying to reach
//! service: <Go's cause>` (503) when the exchange fails; plain text, as Go's
//! `http.Error` writes them.

use super::{availability, Aggregator, Backend};
use crate::auth::UserInfo;
use crate::http::response::Body;
use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use std::convert::Infallible;
use std::time::Duration;

/// kube's deadline of a proxied discovery request (`/apis/<group>/<version>`).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// Hop-by-hop headers (Go's `httputil.ReverseProxy` removes them both ways).
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// CORS headers of a backend's answer (kube's `removeCORSHeaders`).
const CORS: &[&str] = &[
    "access-control-allow-credentials",
    "access-control-allow-headers",
    "access-control-allow-methods",
    "access-control-allow-origin",
];

/// Go's `http.Error`: plain text, `nosniff`, the message and a newline.
pub fn go_http_error(code: StatusCode, message: &str) -> Response<Body> {
    let mut resp = Response::new(crate::http::response::full(format!("{message}\n")));
    *resp.status_mut() = code;
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    h.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    resp
}

/// Remove hop-by-hop headers, those `Connection` names included.
fn drop_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    for h in HOP_BY_HOP
        .iter()
        .copied()
        .chain(named.iter().map(String::as_str))
    {
        headers.remove(h);
    }
}

/// What a proxied request needs from the client's.
pub struct Forward<'a> {
    /// Method, URI and headers.
    pub parts: &'a http::request::Parts,
    /// The whole body.
    pub body: Bytes,
    /// The authenticated (and impersonated) user.
    pub user: &'a UserInfo,
    /// It is the group-version's discovery (`/apis/<group>/<version>`).
    pub discovery: bool,
}

impl Aggregator {
    /// Forward a request to `backend` (see the module docs).
    pub async fn forward(&self, backend: &Backend, request: Forward<'_>) -> Response<Body> {
        if !backend.available {
            return go_http_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
        let Ok(address) = availability::pick(&backend.targets) else {
            tracing::warn!(apiservice = %backend.name, "error resolving the backend's Service");
            return go_http_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        };
        let client = match self.client(backend) {
            Ok(c) => c,
            Err(e) => return go_http_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        };
        let parts = request.parts;
        let path_and_query = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let url = format!("https://{address}{path_and_query}");
        let mut headers = parts.headers.clone();
        drop_hop_by_hop(&mut headers);
        // The aggregator authenticated the client; the backend trusts the front proxy.
        headers.remove(header::AUTHORIZATION);
        headers.remove(header::HOST);
        headers.remove(header::CONTENT_LENGTH);
        let impersonation: Vec<HeaderName> = headers
            .keys()
            .filter(|k| k.as_str().starts_with("impersonate-"))
            .cloned()
            .collect();
        for k in impersonation {
            headers.remove(k);
        }
        super::transport::set_user_headers(&mut headers, request.user);
        let forwarded = [
            ("x-forwarded-uri", parts.uri.path().to_string()),
            ("x-forwarded-host", address.clone()),
            ("x-forwarded-proto", "https".to_string()),
        ];
        for (k, v) in forwarded {
            if let Ok(v) = HeaderValue::from_str(&v) {
                headers.insert(k, v);
            }
        }
        if let Ok(host) = HeaderValue::from_str(&address) {
            headers.insert(header::HOST, host);
        }
        let mut outgoing = match http::Request::builder()
            .method(parts.method.clone())
            .uri(&url)
            .body(Full::new(request.body))
        {
            Ok(r) => r,
            Err(e) => return go_http_error(StatusCode::BAD_REQUEST, &e.to_string()),
        };
        *outgoing.headers_mut() = headers;
        let sent = client.request(outgoing);
        let answered = if request.discovery {
            match tokio::time::timeout(DISCOVERY_TIMEOUT, sent).await {
                Ok(r) => r.map_err(|e| super::transport::go_error(e, &address)),
                Err(_) => Err("context deadline exceeded".to_string()),
            }
        } else {
            sent.await
                .map_err(|e| super::transport::go_error(e, &address))
        };
        let response = match answered {
            Ok(r) => r,
            Err(cause) => {
                return go_http_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    &format!("error trying to reach service: {cause}"),
                )
            }
        };
        let (mut head, incoming) = response.into_parts();
        drop_hop_by_hop(&mut head.headers);
        for h in CORS {
            head.headers.remove(*h);
        }
        Response::from_parts(head, stream(incoming))
    }
}

/// The backend's body as it comes: each frame passed on when it arrives, the end of
/// the stream when the backend ends it or fails; the backend's connection is dropped
/// when the client goes.
fn stream(incoming: hyper::body::Incoming) -> Body {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(async move {
        let mut body = incoming;
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                if tx.send(data).await.is_err() {
                    return;
                }
            }
        }
    });
    let frames = tokio_stream::wrappers::ReceiverStream::new(rx)
        .map(|data| Ok::<_, Infallible>(Frame::data(data)));
    BodyExt::boxed(StreamBody::new(frames))
}
