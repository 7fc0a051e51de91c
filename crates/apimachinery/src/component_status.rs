//! kube's ComponentStatuses (`pkg/registry/core/componentstatus`) without IO: the
//! components kube-apiserver probes (`controller-manager` and `scheduler` on their
//! default secure ports on 127.0.0.1, the storage as `etcd-0`), how a probe's outcome
//! reads as a `Healthy` condition, and the objects and list kube answers. Nothing is
//! stored: every GET probes again. The server does the probes.

use serde_json::{json, Value};

/// kube-controller-manager's default secure port (`ports.KubeControllerManagerPort`).
pub const CONTROLLER_MANAGER_PORT: u16 = 10257;

/// kube-scheduler's default secure port (`DefaultKubeSchedulerPort`).
pub const SCHEDULER_PORT: u16 = 10259;

/// The most bytes of a probed body kube keeps (`maxRespBodyLength`, 10 KiB).
pub const MAX_BODY: usize = 10 * 1024;

/// What a component is probed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `GET https://127.0.0.1:<port>/healthz`, certificates not verified.
    Https(u16),
    /// A read from storage.
    Storage,
}

impl Probe {
    /// The URL an HTTPS probe GETs (kube's `FormatURL`).
    pub fn url(self) -> Option<String> {
        match self {
            Probe::Https(port) => Some(format!("https://127.0.0.1:{port}/healthz")),
            Probe::Storage => None,
        }
    }
}

/// The components, in the order this server lists them (kube's order is that of its
/// parallel probes finishing).
pub const COMPONENTS: &[(&str, Probe)] = &[
    ("controller-manager", Probe::Https(CONTROLLER_MANAGER_PORT)),
    ("scheduler", Probe::Https(SCHEDULER_PORT)),
    ("etcd-0", Probe::Storage),
];

/// The probe of the component `name`, if kube has one by that name.
pub fn probe_of(name: &str) -> Option<Probe> {
    COMPONENTS.iter().find(|(n, _)| *n == name).map(|(_, p)| *p)
}

/// A probe's result (kube's `probe.Result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Result {
    /// Healthy: condition `True`.
    Success,
    /// Answered, but not healthy (redirected): condition `Unknown`.
    Warning,
    /// Unhealthy or unreachable: condition `False`.
    Failure,
}

/// A probe's outcome: result, message and error, as kube's `DoServerCheck` returns them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The result.
    pub result: Result,
    /// The condition's `message`.
    pub message: String,
    /// The condition's `error`.
    pub error: String,
}

/// The outcome of an HTTPS probe that got an answer (kube's `DoHTTPProbe`): 2xx is
/// healthy with the body as message, 3xx a warning, anything else a failure.
pub fn http_answer(code: u16, body: &[u8]) -> Outcome {
    let body = String::from_utf8_lossy(&body[..body.len().min(MAX_BODY)]).into_owned();
    let (result, message) = match code {
        200..=299 => (Result::Success, body),
        300..=399 => (
            Result::Warning,
            format!("Probe terminated redirects, Response body: {body}"),
        ),
        _ => (
            Result::Failure,
            format!("HTTP probe failed with statuscode: {code}"),
        ),
    };
    Outcome {
        result,
        message,
        error: String::new(),
    }
}

/// The outcome of an HTTPS probe that got no answer: Go's `url.Error` text, `Get
/// "<url>": <cause>`, is the message (kube turns transport errors into failures).
pub fn http_unreachable(url: &str, cause: &str) -> Outcome {
    Outcome {
        result: Result::Failure,
        message: format!("Get {}: {cause}", crate::field::go_quote(url)),
        error: String::new(),
    }
}

/// The outcome of the storage probe: `ok`, or the failure kube's etcd prober reports.
pub fn storage(failure: Option<&str>) -> Outcome {
    match failure {
        None => Outcome {
            result: Result::Success,
            message: "ok".into(),
            error: String::new(),
        },
        Some(cause) => Outcome {
            result: Result::Failure,
            message: String::new(),
            error: format!("error getting data from etcd: {cause}"),
        },
    }
}

/// The `v1` ComponentStatus of component `name` after a probe.
pub fn object(name: &str, outcome: &Outcome) -> Value {
    let status = match outcome.result {
        Result::Success => "True",
        Result::Failure => "False",
        Result::Warning => "Unknown",
    };
    let mut condition = json!({"type": "Healthy", "status": status});
    // Go's `omitempty`.
    for (key, text) in [("message", &outcome.message), ("error", &outcome.error)] {
        if !text.is_empty() {
            condition[key] = json!(text);
        }
    }
    json!({
        "kind": "ComponentStatus",
        "apiVersion": "v1",
        "metadata": {"name": name},
        "conditions": [condition],
    })
}

/// kube's `ComponentStatusList` (no `resourceVersion`: nothing is stored).
pub fn list(items: Vec<Value>) -> Value {
    json!({
        "kind": "ComponentStatusList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubes_components_and_their_probes() {
        let names: Vec<&str> = COMPONENTS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["controller-manager", "scheduler", "etcd-0"]);
        assert_eq!(
            probe_of("scheduler").and_then(Probe::url).as_deref(),
            Some("https://127.0.0.1:10259/healthz")
        );
        assert_eq!(
            probe_of("controller-manager")
                .and_then(Probe::url)
                .as_deref(),
            Some("https://127.0.0.1:10257/healthz")
        );
        assert_eq!(probe_of("etcd-0"), Some(Probe::Storage));
        assert_eq!(probe_of("etcd-1"), None);
    }

    #[test]
    fn nothing_listening_reads_as_kube_writes_it() {
        let url = "https://127.0.0.1:10259/healthz";
        let o = http_unreachable(url, "dial tcp 127.0.0.1:10259: connect: connection refused");
        assert_eq!(
            object("scheduler", &o),
            json!({"kind": "ComponentStatus", "apiVersion": "v1",
                "metadata": {"name": "scheduler"},
                "conditions": [{"type": "Healthy", "status": "False",
                    "message": "Get \"https://127.0.0.1:10259/healthz\": dial tcp 127.0.0.1:10259: connect: connection refused"}]})
        );
    }

    #[test]
    fn answers_are_healthy_redirected_or_failed_by_code() {
        assert_eq!(
            object("x", &http_answer(200, b"ok"))["conditions"],
            json!([{"type": "Healthy", "status": "True", "message": "ok"}])
        );
        assert_eq!(
            object("x", &http_answer(302, b"moved"))["conditions"],
            json!([{"type": "Healthy", "status": "Unknown",
                "message": "Probe terminated redirects, Response body: moved"}])
        );
        assert_eq!(
            object("x", &http_answer(500, b"boom"))["conditions"],
            json!([{"type": "Healthy", "status": "False",
                "message": "HTTP probe failed with statuscode: 500"}])
        );
        let long = vec![b'a'; MAX_BODY + 10];
        assert_eq!(http_answer(200, &long).message.len(), MAX_BODY);
    }

    #[test]
    fn storage_is_ok_or_an_etcd_error() {
        assert_eq!(
            object("etcd-0", &storage(None))["conditions"],
            json!([{"type": "Healthy", "status": "True", "message": "ok"}])
        );
        assert_eq!(
            object("etcd-0", &storage(Some("context deadline exceeded")))["conditions"],
            json!([{"type": "Healthy", "status": "False",
                "error": "error getting data from etcd: context deadline exceeded"}])
        );
        assert_eq!(
            list(vec![]),
            json!({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": []})
        );
    }
}
