//! Fault injection for resilience tests of controllers: latency, error replies (kube
//! `Status` bodies, forced 409 conflicts, 429 with `Retry-After`) and cut watch streams,
//! chosen per verb, resource, namespace and name, on a deterministic or random schedule.
//!
//! Rules come from `--fault SPEC` (repeatable) or from [`Faults::add`] on a running
//! server. [`around_dispatch`] is the one place the request path consults them: it wraps
//! `handlers::dispatch`, delaying or answering before it runs and cutting a watch's
//! body after it. Only resource requests (`/api/...`, `/apis/...` naming a resource)
//! are faulted: discovery, OpenAPI and health endpoints never are.
//!
//! The `--fault` grammar: comma-separated `key=value` pairs, lists joined by `|`:
//!
//! | key | value |
//! |---|---|
//! | `verb` | kube verbs (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`); default every verb |
//! | `resource` | `widgets`, `widgets.example.com`, `widgets/status`, `*`; default every resource |
//! | `namespace`, `name` | only requests addressing this namespace / object |
//! | `error` | HTTP code to answer with (409 = kube's optimistic-concurrency conflict for the object) |
//! | `retry-after` | seconds for a 429 (`Retry-After` header and `details.retryAfterSeconds`; default 1) |
//! | `message` | message of the error's `Status` (no commas) |
//! | `latency` | delay before the request is served: `250ms`, `2s`, `1m` |
//! | `watch-events` | end a watch's stream after this many events (bookmarks count) |
//! | `watch-after` | end a watch's stream after this long (`500ms`, `2s`) |
//! | `every` | fire on every Nth matching request (the Nth, 2Nth, ...) |
//! | `rate` | fire with this probability (0..1) |
//! | `seed` | seed of `rate`'s random draws, for a reproducible schedule |
//! | `times` | fire at most this many times |
//!
//! At least one of `error`, `latency`, `watch-events`, `watch-after` is required.
//! Example: `--fault 'verb=update|patch,resource=widgets,error=409,every=2'`.

use crate::apiserver::ApiServer;
use crate::http::request_info::RequestInfo;
use crate::http::response::{self, Body};
use crate::http::ApiRequest;
use crate::status::{Details, GroupResource, Status};
use futures::StreamExt;
use http::Response;
use http_body_util::{BodyExt, BodyStream, StreamBody};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

/// The message of injected errors that have no kube-specific text.
pub const DEFAULT_MESSAGE: &str = "fault injected by crd-apiserver";

/// When a matching request makes a rule fire.
#[derive(Clone, Debug, PartialEq)]
pub enum Schedule {
    /// Every matching request.
    Always,
    /// Every Nth matching request (the Nth, the 2Nth, ...).
    Every(u64),
    /// Each matching request with this probability; a seed makes the draws reproducible.
    Rate {
        /// Probability in 0..=1.
        rate: f64,
        /// Seed of the draws (`None` = a random one).
        seed: Option<u64>,
    },
}

/// One fault: which requests it applies to, what it does, and when it fires.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// kube verbs matched (empty = every verb).
    pub verbs: Vec<String>,
    /// Resources matched: `plural`, `plural.group`, `plural/subresource`, `*` (empty = all).
    pub resources: Vec<String>,
    /// Only requests addressing this namespace.
    pub namespace: Option<String>,
    /// Only requests addressing this object name.
    pub name: Option<String>,
    /// Delay before the request is served (or answered with `error`).
    pub latency: Option<Duration>,
    /// Answer with this HTTP code instead of serving the request.
    pub error: Option<u16>,
    /// `Retry-After` seconds of a 429.
    pub retry_after: u32,
    /// Message of the error's `Status` (a kube text by default).
    pub message: Option<String>,
    /// End a watch's stream after this many events.
    pub watch_events: Option<u64>,
    /// End a watch's stream after this long.
    pub watch_after: Option<Duration>,
    /// When the rule fires.
    pub schedule: Schedule,
    /// Fire at most this many times.
    pub times: Option<u64>,
}

impl FaultRule {
    fn empty() -> Self {
        FaultRule {
            verbs: Vec::new(),
            resources: Vec::new(),
            namespace: None,
            name: None,
            latency: None,
            error: None,
            retry_after: 1,
            message: None,
            watch_events: None,
            watch_after: None,
            schedule: Schedule::Always,
            times: None,
        }
    }

    /// Answer matching requests with `code` (409 = kube's conflict for the object).
    pub fn error(code: u16) -> Self {
        FaultRule {
            error: Some(code),
            ..Self::empty()
        }
    }

    /// The optimistic-concurrency conflict kube answers to a stale write (409).
    pub fn conflict() -> Self {
        Self::error(409)
    }

    /// Delay matching requests by `delay`.
    pub fn latency(delay: Duration) -> Self {
        FaultRule {
            latency: Some(delay),
            ..Self::empty()
        }
    }

    /// End matching watches after `events` events.
    pub fn watch_close_after_events(events: u64) -> Self {
        FaultRule {
            watch_events: Some(events),
            ..Self::empty()
        }
    }

    /// End matching watches after `duration`.
    pub fn watch_close_after(duration: Duration) -> Self {
        FaultRule {
            watch_after: Some(duration),
            ..Self::empty()
        }
    }

    /// Also match verb `verb` (the first call restricts the rule to it).
    pub fn verb(mut self, verb: &str) -> Self {
        self.verbs.push(verb.to_string());
        self
    }

    /// Also match `resource` (`widgets`, `widgets.example.com`, `widgets/status`).
    pub fn resource(mut self, resource: &str) -> Self {
        self.resources.push(resource.to_string());
        self
    }

    /// Only match requests in `namespace`.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_string());
        self
    }

    /// Only match requests addressing the object `name`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = Some(name.to_string());
        self
    }

    /// Also delay by `delay` when the rule fires.
    pub fn with_latency(mut self, delay: Duration) -> Self {
        self.latency = Some(delay);
        self
    }

    /// Fire on every `n`th matching request.
    pub fn every(mut self, n: u64) -> Self {
        self.schedule = Schedule::Every(n.max(1));
        self
    }

    /// Fire with probability `rate` (random unless [`FaultRule::seed`] is set).
    pub fn rate(mut self, rate: f64) -> Self {
        let seed = match self.schedule {
            Schedule::Rate { seed, .. } => seed,
            _ => None,
        };
        self.schedule = Schedule::Rate {
            rate: rate.clamp(0.0, 1.0),
            seed,
        };
        self
    }

    /// Seed the draws of [`FaultRule::rate`] (a reproducible schedule).
    pub fn seed(mut self, seed: u64) -> Self {
        let rate = match self.schedule {
            Schedule::Rate { rate, .. } => rate,
            _ => 1.0,
        };
        self.schedule = Schedule::Rate {
            rate,
            seed: Some(seed),
        };
        self
    }

    /// Fire at most `n` times.
    pub fn times(mut self, n: u64) -> Self {
        self.times = Some(n);
        self
    }

    /// `Retry-After` seconds of a 429.
    pub fn retry_after(mut self, seconds: u32) -> Self {
        self.retry_after = seconds;
        self
    }

    /// The message of the error's `Status`.
    pub fn message(mut self, message: &str) -> Self {
        self.message = Some(message.to_string());
        self
    }

    /// Parse the `--fault` grammar (see the module doc).
    pub fn parse(spec: &str) -> Result<FaultRule, FaultError> {
        let mut rule = FaultRule::empty();
        let mut rate: Option<f64> = None;
        let mut seed: Option<u64> = None;
        let mut every: Option<u64> = None;
        for pair in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| FaultError::NotKeyValue(pair.to_string()))?;
            let (key, value) = (key.trim(), value.trim());
            let list = || -> Vec<String> {
                value
                    .split('|')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect()
            };
            let number = |what: &'static str| -> Result<u64, FaultError> {
                value
                    .parse::<u64>()
                    .map_err(|_| FaultError::NotWholeNumber {
                        key: key.to_string(),
                        value: value.to_string(),
                        what,
                    })
            };
            match key {
                "verb" | "verbs" => rule.verbs.extend(list()),
                "resource" | "resources" => rule.resources.extend(list()),
                "namespace" => rule.namespace = Some(value.to_string()),
                "name" => rule.name = Some(value.to_string()),
                "error" => {
                    let code = value
                        .parse::<u16>()
                        .ok()
                        .filter(|c| (400..=599).contains(c))
                        .ok_or_else(|| FaultError::ErrorCode(value.to_string()))?;
                    rule.error = Some(code);
                }
                "retry-after" => {
                    rule.retry_after = u32::try_from(number("retry-after")?)
                        .map_err(|_| FaultError::RetryAfterTooLarge(value.to_string()))?
                }
                "message" => rule.message = Some(value.to_string()),
                "latency" => rule.latency = Some(parse_duration(value)?),
                "watch-events" => rule.watch_events = Some(number("watch-events")?),
                "watch-after" => rule.watch_after = Some(parse_duration(value)?),
                "every" => every = Some(number("every")?.max(1)),
                "rate" => {
                    let r = value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| (0.0..=1.0).contains(r))
                        .ok_or_else(|| FaultError::Rate(value.to_string()))?;
                    rate = Some(r);
                }
                "seed" => seed = Some(number("seed")?),
                "times" => rule.times = Some(number("times")?),
                other => return Err(FaultError::UnknownKey(other.to_string())),
            }
        }
        rule.schedule = match (every, rate, seed) {
            (Some(_), Some(_), _) => return Err(FaultError::EveryAndRate),
            (Some(n), None, _) => Schedule::Every(n),
            (None, Some(rate), seed) => Schedule::Rate { rate, seed },
            (None, None, Some(seed)) => Schedule::Rate {
                rate: 1.0,
                seed: Some(seed),
            },
            (None, None, None) => Schedule::Always,
        };
        if rule.error.is_none()
            && rule.latency.is_none()
            && rule.watch_events.is_none()
            && rule.watch_after.is_none()
        {
            return Err(FaultError::NoEffect);
        }
        Ok(rule)
    }

    /// Whether the rule applies to a request (before its schedule is consulted).
    pub fn matches(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.iter().any(|v| v == "*" || *v == info.verb) {
            return false;
        }
        if !self.resources.is_empty() && !self.resources.iter().any(|r| resource_matches(r, info)) {
            return false;
        }
        if self
            .namespace
            .as_ref()
            .is_some_and(|n| *n != info.namespace())
        {
            return false;
        }
        if self.name.as_ref().is_some_and(|n| *n != info.name()) {
            return false;
        }
        true
    }
}

impl FromStr for FaultRule {
    type Err = FaultError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FaultRule::parse(s)
    }
}

/// `widgets`, `widgets.example.com`, `widgets/status`, `widgets.example.com/*`, `*`.
fn resource_matches(rule: &str, info: &RequestInfo) -> bool {
    let (resource, sub) = match rule.split_once('/') {
        Some((r, s)) => (r, Some(s)),
        None => (rule, None),
    };
    let sub_ok = match sub {
        None => info.subresource().is_empty(),
        Some("*") => true,
        Some(s) => s == info.subresource(),
    };
    let res_ok = resource == "*"
        || resource == info.resource()
        || resource
            .split_once('.')
            .is_some_and(|(plural, group)| plural == info.resource() && group == info.group());
    sub_ok && res_ok
}

/// Why a `--fault` rule does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    /// A part without `=`.
    #[error("{0:?}: expected key=value")]
    NotKeyValue(String),
    /// A count that is not a whole number.
    #[error("{key}={value:?}: {what} must be a whole number")]
    NotWholeNumber {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// What the value counts (the key's name).
        what: &'static str,
    },
    /// `error` is no HTTP error code.
    #[error("error={0:?}: expected an HTTP code 400-599")]
    ErrorCode(String),
    /// `retry-after` does not fit in 32 bits.
    #[error("retry-after={0:?}: too large")]
    RetryAfterTooLarge(String),
    /// `rate` is no probability.
    #[error("rate={0:?}: expected a number in 0..1")]
    Rate(String),
    /// A key the grammar does not have.
    #[error("unknown key {0:?} (known: verb, resource, namespace, name, error, retry-after, message, latency, watch-events, watch-after, every, rate, seed, times)")]
    UnknownKey(String),
    /// Both `every` and `rate`.
    #[error("every and rate cannot be combined")]
    EveryAndRate,
    /// A rule that would do nothing.
    #[error("a fault needs one of error, latency, watch-events or watch-after")]
    NoEffect,
    /// A duration that does not parse.
    #[error("{0:?}: expected a duration such as 250ms, 2s or 1m")]
    Duration(String),
}

/// Durations as `250ms`, `2s`, `1m` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, FaultError> {
    let bad = || FaultError::Duration(text.to_string());
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: f64 = number.parse().map_err(|_| bad())?;
    let seconds = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| bad())
}

/// Identifies a rule added to [`Faults`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FaultId(u64);

struct ActiveRule {
    id: FaultId,
    rule: FaultRule,
    state: Mutex<RuleState>,
}

struct RuleState {
    matched: u64,
    fired: u64,
    rng: StdRng,
}

impl ActiveRule {
    /// Count a matching request and decide whether the rule fires on it.
    fn fires(&self) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        if self.rule.times.is_some_and(|t| state.fired >= t) {
            return false;
        }
        state.matched += 1;
        let fire = match &self.rule.schedule {
            Schedule::Always => true,
            Schedule::Every(n) => state.matched % n.max(&1) == 0,
            Schedule::Rate { rate, .. } => state.rng.random::<f64>() < *rate,
        };
        if fire {
            state.fired += 1;
        }
        fire
    }
}

/// The fault rules of one server (cheap to clone: clones share them).
#[derive(Clone, Default)]
pub struct Faults {
    rules: Arc<RwLock<Vec<Arc<ActiveRule>>>>,
    next_id: Arc<AtomicU64>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Faults")
            .field("rules", &self.rules().len())
            .finish()
    }
}

/// What the rules decided for one request.
#[derive(Debug, Default)]
pub struct Decision {
    /// Total delay before serving.
    pub latency: Duration,
    /// The error to answer with, from the first firing rule that has one.
    pub error: Option<FaultRule>,
    /// Cut a watch after this many events.
    pub watch_events: Option<u64>,
    /// Cut a watch after this long.
    pub watch_after: Option<Duration>,
}

impl Faults {
    /// No rules.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add a rule; rules are consulted in the order added.
    pub fn add(&self, rule: FaultRule) -> FaultId {
        let id = FaultId(self.next_id.fetch_add(1, Ordering::Relaxed));
        let rng = match rule.schedule {
            Schedule::Rate {
                seed: Some(seed), ..
            } => StdRng::seed_from_u64(seed),
            _ => StdRng::from_rng(&mut rand::rng()),
        };
        let active = Arc::new(ActiveRule {
            id,
            rule,
            state: Mutex::new(RuleState {
                matched: 0,
                fired: 0,
                rng,
            }),
        });
        if let Ok(mut rules) = self.rules.write() {
            rules.push(active);
        }
        id
    }

    /// Remove one rule; false when it was not there.
    pub fn remove(&self, id: FaultId) -> bool {
        let Ok(mut rules) = self.rules.write() else {
            return false;
        };
        let before = rules.len();
        rules.retain(|r| r.id != id);
        rules.len() != before
    }

    /// Remove every rule.
    pub fn clear(&self) {
        if let Ok(mut rules) = self.rules.write() {
            rules.clear();
        }
    }

    /// How many times a rule has fired so far (0 for an unknown id).
    pub fn fired(&self, id: FaultId) -> u64 {
        self.find(id)
            .and_then(|r| r.state.lock().ok().map(|s| s.fired))
            .unwrap_or(0)
    }

    /// How many requests a rule has matched so far (fired or not).
    pub fn matched(&self, id: FaultId) -> u64 {
        self.find(id)
            .and_then(|r| r.state.lock().ok().map(|s| s.matched))
            .unwrap_or(0)
    }

    fn find(&self, id: FaultId) -> Option<Arc<ActiveRule>> {
        self.rules().into_iter().find(|r| r.id == id)
    }

    fn rules(&self) -> Vec<Arc<ActiveRule>> {
        self.rules.read().map(|r| r.clone()).unwrap_or_default()
    }

    /// Consult every rule for one request: latencies add up, the first firing error
    /// wins, watch cuts take the tightest limit.
    pub fn decide(&self, info: &RequestInfo) -> Option<Decision> {
        let rules = self.rules();
        if rules.is_empty() {
            return None;
        }
        let mut decision = Decision::default();
        let mut any = false;
        for active in rules.iter().filter(|r| r.rule.matches(info)) {
            if decision.error.is_some() || !active.fires() {
                continue;
            }
            any = true;
            let rule = &active.rule;
            decision.latency += rule.latency.unwrap_or_default();
            if rule.error.is_some() {
                decision.error = Some(rule.clone());
            }
            if info.verb == "watch" {
                decision.watch_events = min_some(decision.watch_events, rule.watch_events);
                decision.watch_after = min_some(decision.watch_after, rule.watch_after);
            }
        }
        any.then_some(decision)
    }
}

fn min_some<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The kube `Status` an injected error answers with, and its `Retry-After`.
pub fn error_status(rule: &FaultRule, req: &ApiRequest) -> (Status, Option<u32>) {
    let code = rule.error.unwrap_or(500);
    let info = &req.info;
    let gr = GroupResource::new(info.group(), info.resource());
    let text = |default: &str| rule.message.clone().unwrap_or_else(|| default.to_string());
    let status = match code {
        409 => {
            let name = if info.name().is_empty() {
                body_name(&req.body)
            } else {
                info.name().to_string()
            };
            match &rule.message {
                Some(m) => Status::conflict(&gr, &name, m),
                None => Status::stale(&gr, &name),
            }
        }
        429 => Status {
            code: 429,
            reason: "TooManyRequests".into(),
            message: text("Too many requests, please try again later."),
            details: Some(Box::new(Details {
                retry_after_seconds: Some(i64::from(rule.retry_after)),
                ..Default::default()
            })),
            metadata_continue: None,
            warnings: Vec::new(),
        },
        500 => Status::internal(text(DEFAULT_MESSAGE)),
        503 => Status::service_unavailable(text(
            "the server is currently unable to handle the request",
        )),
        504 => Status::timeout(text(
            "Timeout: request did not complete within requested timeout - context deadline exceeded",
        )),
        404 if rule.message.is_none() && !info.name().is_empty() => Status::not_found(&gr, info.name()),
        _ => Status {
            code,
            reason: reason_for_code(code).into(),
            message: text(DEFAULT_MESSAGE),
            details: None,
            metadata_continue: None,
            warnings: Vec::new(),
        },
    };
    let retry_after = (code == 429).then_some(rule.retry_after);
    (status, retry_after)
}

/// kube's `StatusReason` for an HTTP code.
fn reason_for_code(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Gone",
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        c if c >= 500 => "InternalError",
        _ => "",
    }
}

/// `metadata.name` of a JSON body (creates name the object there, not in the path).
fn body_name(body: &[u8]) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.pointer("/metadata/name")?.as_str().map(String::from))
        .unwrap_or_default()
}

/// Serve a request through `handlers::dispatch` with the server's faults applied: the
/// one place faults touch the request path.
pub async fn around_dispatch(
    faults: &Faults,
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    resolution: Option<crate::handlers::Resolution>,
) -> Response<Body> {
    let Some(decision) = faults.decide(&req.info) else {
        return crate::handlers::dispatch_resolved(api, req, resolution).await;
    };
    tracing::debug!(verb = %req.info.verb, path = %req.info.path, ?decision, "fault fired");
    if !decision.latency.is_zero() {
        tokio::time::sleep(decision.latency).await;
    }
    if let Some(rule) = &decision.error {
        let (status, retry_after) = error_status(rule, req);
        let mut resp = response::status(&status, req.output);
        if let Some(seconds) = retry_after {
            resp.headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        return resp;
    }
    let resp = crate::handlers::dispatch_resolved(api, req, resolution).await;
    if decision.watch_events.is_none() && decision.watch_after.is_none() {
        return resp;
    }
    if !resp.status().is_success() {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    Response::from_parts(
        parts,
        cut_stream(body, decision.watch_events, decision.watch_after),
    )
}

/// End a streamed body after `events` frames (one watch event each) or `after`, as a
/// server closing the watch would: the client sees the stream end cleanly.
fn cut_stream(body: Body, events: Option<u64>, after: Option<Duration>) -> Body {
    let frames = BodyStream::new(body);
    let limit = events.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let deadline: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + Sync>> =
        match after {
            Some(d) => Box::pin(tokio::time::sleep(d)),
            None => Box::pin(futures::future::pending()),
        };
    let cut = frames.take(limit).take_until(deadline);
    BodyExt::boxed(StreamBody::new(cut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(
        verb: &str,
        group: &str,
        resource: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> RequestInfo {
        RequestInfo::of_parts(verb, [group, "v1", ns, resource, name, sub])
    }

    #[test]
    fn parse_update_conflict_at_half_rate() {
        let r = FaultRule::parse("verb=update,resource=widgets,error=409,rate=0.5").unwrap();
        assert_eq!(r.verbs, ["update"]);
        assert_eq!(r.resources, ["widgets"]);
        assert_eq!(r.error, Some(409));
        assert_eq!(
            r.schedule,
            Schedule::Rate {
                rate: 0.5,
                seed: None
            }
        );
    }

    #[test]
    fn parse_every_field() {
        let r = FaultRule::parse(
            "verb=get|list,resource=widgets.example.com|gadgets/status,namespace=ns1,name=w1,\
             error=429,retry-after=3,message=slow down,latency=250ms,every=3,times=2",
        )
        .unwrap();
        assert_eq!(r.verbs, ["get", "list"]);
        assert_eq!(r.resources, ["widgets.example.com", "gadgets/status"]);
        assert_eq!(r.namespace.as_deref(), Some("ns1"));
        assert_eq!(r.name.as_deref(), Some("w1"));
        assert_eq!(r.retry_after, 3);
        assert_eq!(r.message.as_deref(), Some("slow down"));
        assert_eq!(r.latency, Some(Duration::from_millis(250)));
        assert_eq!(r.schedule, Schedule::Every(3));
        assert_eq!(r.times, Some(2));
        let w = FaultRule::parse("verb=watch,watch-events=5,watch-after=2s,seed=7").unwrap();
        assert_eq!(w.watch_events, Some(5));
        assert_eq!(w.watch_after, Some(Duration::from_secs(2)));
        assert_eq!(
            w.schedule,
            Schedule::Rate {
                rate: 1.0,
                seed: Some(7)
            }
        );
    }

    #[test]
    fn parse_errors() {
        for (spec, want) in [
            ("verb=get", "a fault needs one of"),
            ("error=200", "expected an HTTP code"),
            ("error=500,rate=2", "expected a number in 0..1"),
            ("error=500,every=2,rate=0.5", "cannot be combined"),
            ("error=500,colour=red", "unknown key \"colour\""),
            ("latency=fast", "expected a duration"),
            ("error", "expected key=value"),
        ] {
            let err = FaultRule::parse(spec).unwrap_err().to_string();
            assert!(err.contains(want), "{spec}: {err}");
        }
    }

    #[test]
    fn resource_forms_match() {
        let i = info("update", "example.com", "widgets", "", "ns1", "w1");
        let s = info("update", "example.com", "widgets", "status", "ns1", "w1");
        let m = |spec: &str, i: &RequestInfo| FaultRule::parse(spec).unwrap().matches(i);
        assert!(m("error=500,resource=widgets", &i));
        assert!(m("error=500,resource=widgets.example.com", &i));
        assert!(!m("error=500,resource=widgets.other.com", &i));
        assert!(!m("error=500,resource=widgets", &s));
        assert!(m("error=500,resource=widgets/status", &s));
        assert!(m("error=500,resource=widgets/*", &s));
        assert!(m("error=500,resource=*", &i));
        assert!(!m("error=500,verb=patch", &i));
        assert!(!m("error=500,namespace=ns2", &i));
        assert!(m("error=500,name=w1", &i));
        let discovery = RequestInfo::default();
        assert!(!m("error=500", &discovery));
    }

    #[test]
    fn every_third_request_fires_twice_at_most() {
        let faults = Faults::new();
        let id = faults.add(FaultRule::error(503).every(3).times(2));
        let i = info("get", "example.com", "widgets", "", "default", "w1");
        let fired: Vec<bool> = (0..12).map(|_| faults.decide(&i).is_some()).collect();
        let expected = [
            false, false, true, false, false, true, false, false, false, false, false, false,
        ];
        assert_eq!(fired, expected);
        assert_eq!(faults.fired(id), 2);
        assert!(faults.remove(id));
        assert!(faults.decide(&i).is_none());
    }

    #[test]
    fn seeded_rate_repeats_its_schedule() {
        let i = info("get", "example.com", "widgets", "", "default", "w1");
        let run = || {
            let faults = Faults::new();
            faults.add(FaultRule::error(500).rate(0.5).seed(42));
            (0..64)
                .map(|_| faults.decide(&i).is_some())
                .collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(first, run());
        let fired = first.iter().filter(|f| **f).count();
        assert!((10..54).contains(&fired), "{fired} of 64 at rate 0.5");
    }

    #[test]
    fn conflict_names_the_object() {
        let req = ApiRequest {
            method: http::Method::PUT,
            info: std::sync::Arc::new(info("update", "example.com", "widgets", "", "default", "x")),
            query: Default::default(),
            headers: Default::default(),
            body: bytes::Bytes::new(),
            output: crate::http::negotiate::Output::Json,
            user: Default::default(),
        };
        let (s, retry) = error_status(&FaultRule::conflict(), &req);
        assert_eq!(s.code, 409);
        assert_eq!(s.reason, "Conflict");
        assert_eq!(
            s.message,
            "Operation cannot be fulfilled on widgets.example.com \"x\": the object has been \
             modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(retry, None);
        let (s, retry) = error_status(&FaultRule::error(429).retry_after(5), &req);
        assert_eq!((s.code, s.reason.as_str()), (429, "TooManyRequests"));
        assert_eq!(s.details.and_then(|d| d.retry_after_seconds), Some(5));
        assert_eq!(retry, Some(5));
    }
}
