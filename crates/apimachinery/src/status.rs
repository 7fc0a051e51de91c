//! The kube `Status` error: one type with constructors, turned into an HTTP response
//! in exactly one place (`http::response`).

use crate::field;
use serde_json::{json, Map, Value};

/// A qualified resource name used in messages: `widgets.crud.example.com` or `namespaces`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupResource {
    /// API group, empty for core.
    pub group: String,
    /// Plural resource name.
    pub resource: String,
}

impl GroupResource {
    /// Build from parts.
    pub fn new(group: &str, resource: &str) -> Self {
        GroupResource {
            group: group.to_string(),
            resource: resource.to_string(),
        }
    }
}

impl std::fmt::Display for GroupResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.resource)
        } else {
            write!(f, "{}.{}", self.resource, self.group)
        }
    }
}

/// One `details.causes[]` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    /// `reason`
    pub reason: String,
    /// `message`
    pub message: String,
    /// `field`
    pub field: String,
}

/// `details` of a Status.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details {
    /// `details.name`
    pub name: String,
    /// `details.group`
    pub group: String,
    /// `details.kind`
    pub kind: String,
    /// `details.uid`
    pub uid: String,
    /// `details.causes`
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`
    pub retry_after_seconds: Option<i64>,
}

/// A failed API call, as kube's `metav1.Status` with `status: Failure`.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// HTTP status code (also `code` in the body).
    pub code: u16,
    /// `reason`, e.g. `NotFound`; empty for none.
    pub reason: String,
    /// Human-readable `message`.
    pub message: String,
    /// Optional `details` (boxed: errors travel in `Result`s everywhere).
    pub details: Option<Box<Details>>,
    /// `metadata.continue`: the token kube offers with a 410 for an expired one.
    pub metadata_continue: Option<String>,
    /// `Warning` headers sent with the error: kube sends the warnings recorded before
    /// a request failed (e.g. by admission webhooks ahead of the one that denied).
    pub warnings: Vec<String>,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Status {}

impl Status {
    fn new(code: u16, reason: &str, message: impl Into<String>, details: Option<Details>) -> Self {
        Status {
            code,
            reason: reason.to_string(),
            message: message.into(),
            details: details.map(Box::new),
            metadata_continue: None,
            warnings: Vec::new(),
        }
    }

    /// The same error with `warnings` sent ahead of its own.
    pub fn with_warnings_before(mut self, warnings: &[String]) -> Self {
        let own = std::mem::take(&mut self.warnings);
        self.warnings = warnings.iter().cloned().chain(own).collect();
        self
    }

    fn named(gr: &GroupResource, name: &str) -> Details {
        Details {
            name: name.to_string(),
            group: gr.group.clone(),
            kind: gr.resource.clone(),
            ..Default::default()
        }
    }

    /// 404 `<resource> "<name>" not found`.
    pub fn not_found(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("{gr} \"{name}\" not found"),
            Some(Self::named(gr, name)),
        )
    }

    /// 404 with a free-form message and no details.
    pub fn not_found_message(message: impl Into<String>) -> Self {
        Self::new(404, "NotFound", message, None)
    }

    /// go-restful's 404 for a path below a built-in group's web service (or `/api`)
    /// that no route matches: kube's `serviceErrorHandler` answers with a generic
    /// NotFound whose `details` are empty (`{}`), not absent.
    pub fn route_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Some(Details::default()),
        )
    }

    /// go-restful's 405 for a route that does not take the method (empty `details`, as
    /// [`Status::route_not_found`]).
    pub fn route_method_not_allowed() -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
            Some(Details::default()),
        )
    }

    /// The end of kube's handler chain (`notfoundhandler`), reached by paths in CRD
    /// groups, unknown groups and unknown paths: Go's `http.NotFound`, plain text and no
    /// Status at all. Marked by its empty reason; `http::response::status` writes it.
    pub fn page_not_found() -> Self {
        Self::new(404, "", "404 page not found", None)
    }

    /// Whether this is [`Status::page_not_found`] (written as plain text).
    pub fn is_page_not_found(&self) -> bool {
        self.code == 404 && self.reason.is_empty()
    }

    /// 405 `<verb> is not supported on resources of kind "<resource>"` (kube's
    /// `NewMethodNotSupported`, as the crdHandler answers a verb a subresource lacks).
    pub fn method_not_supported(gr: &GroupResource, verb: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{gr}\""),
            Some(Details {
                group: gr.group.clone(),
                kind: gr.resource.clone(),
                ..Default::default()
            }),
        )
    }

    /// 409 `<resource> "<name>" already exists`.
    pub fn already_exists(gr: &GroupResource, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!("{gr} \"{name}\" already exists"),
            Some(Self::named(gr, name)),
        )
    }

    /// 409 `Operation cannot be fulfilled on <resource> "<name>": <detail>`.
    pub fn conflict(gr: &GroupResource, name: &str, detail: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!("Operation cannot be fulfilled on {gr} \"{name}\": {detail}"),
            Some(Self::named(gr, name)),
        )
    }

    /// The optimistic-concurrency conflict (stale `resourceVersion`).
    pub fn stale(gr: &GroupResource, name: &str) -> Self {
        Self::conflict(
            gr,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 with a custom message and causes (server-side apply conflicts).
    pub fn conflict_with_causes(message: impl Into<String>, causes: Vec<Cause>) -> Self {
        Self::new(
            409,
            "Conflict",
            message,
            Some(Details {
                causes,
                ..Default::default()
            }),
        )
    }

    /// 422 `<Kind>.<group> "<name>" is invalid: <aggregate>` with one cause per error.
    pub fn invalid(kind: &str, group: &str, name: &str, errs: &[field::Error]) -> Self {
        let qualified = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let message = if errs.is_empty() {
            format!("{qualified} \"{name}\" is invalid")
        } else {
            format!(
                "{qualified} \"{name}\" is invalid: {}",
                field::aggregate_message(errs)
            )
        };
        let causes = errs
            .iter()
            .map(|e| Cause {
                reason: e.kind.reason().to_string(),
                message: e.body(),
                field: e.field.to_string(),
            })
            .collect();
        Self::new(
            422,
            "Invalid",
            message,
            Some(Details {
                name: name.to_string(),
                group: group.to_string(),
                kind: kind.to_string(),
                causes,
                ..Default::default()
            }),
        )
    }

    /// 422 with a bare message and empty details (e.g. a failed JSON patch `test`).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(422, "Invalid", message, Some(Details::default()))
    }

    /// 400 `BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message, None)
    }

    /// 400 `BadRequest` with causes (immutability violations).
    pub fn bad_request_with_causes(message: impl Into<String>, details: Details) -> Self {
        Self::new(400, "BadRequest", message, Some(details))
    }

    /// 413 `RequestEntityTooLarge` (kube's `NewRequestEntityTooLargeError`).
    pub fn request_entity_too_large(detail: impl std::fmt::Display) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {detail}"),
            None,
        )
    }

    /// kube's `NewTooLargeResourceVersionError`: a 504 `Timeout` for a resourceVersion
    /// newer than the store's, with the current one and when to retry.
    pub fn too_large_resource_version(requested: i64, current: i64, retry_after: i64) -> Self {
        Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
            Some(Details {
                causes: vec![Cause {
                    reason: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                    field: String::new(),
                }],
                retry_after_seconds: (retry_after > 0).then_some(retry_after),
                ..Details::default()
            }),
        )
    }

    /// 405 `MethodNotAllowed`.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message, None)
    }

    /// 406 `NotAcceptable`.
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message, None)
    }

    /// 415 `UnsupportedMediaType`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message, None)
    }

    /// 410 `Expired` (watch or continue token too old).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message, None)
    }

    /// 410 `Gone`.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message, None)
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        let message = message.into();
        Self::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
            Some(Details {
                causes: vec![Cause {
                    reason: String::new(),
                    message,
                    field: String::new(),
                }],
                ..Default::default()
            }),
        )
    }

    /// 503 `ServiceUnavailable`.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message, None)
    }

    /// 504 `Timeout`.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message, None)
    }

    /// 403 `Forbidden`.
    pub fn forbidden(gr: &GroupResource, name: &str, detail: &str) -> Self {
        Self::new(
            403,
            "Forbidden",
            if name.is_empty() {
                format!("{gr} is forbidden: {detail}")
            } else {
                format!("{gr} \"{name}\" is forbidden: {detail}")
            },
            Some(Self::named(gr, name)),
        )
    }

    /// 429 `TooManyRequests` (kube's `NewTooManyRequests`): retry after that many
    /// seconds (0: no hint).
    pub fn too_many_requests(message: impl Into<String>, retry_after_seconds: i64) -> Self {
        let details = Details {
            retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
            ..Default::default()
        };
        Self::new(429, "TooManyRequests", message, Some(details))
    }

    /// A failure with no reason (kube's answer to an error that is not a Status).
    pub fn without_reason(code: u16, message: impl Into<String>) -> Self {
        Self::new(code, "", message, None)
    }

    /// 403 `Forbidden` with a bare message.
    pub fn forbidden_message(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message, None)
    }

    /// 401 `Unauthorized`.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized", None)
    }

    /// The JSON body: `{"kind":"Status","apiVersion":"v1",...,"status":"Failure"}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!("Status"));
        m.insert("apiVersion".into(), json!("v1"));
        m.insert("metadata".into(), json!({}));
        m.insert("status".into(), json!("Failure"));
        m.insert("message".into(), json!(self.message));
        if !self.reason.is_empty() {
            m.insert("reason".into(), json!(self.reason));
        }
        if let Some(d) = &self.details {
            m.insert("details".into(), details_json(d));
        }
        m.insert("code".into(), json!(self.code));
        Value::Object(m)
    }
}

/// The body bytes kube writes, fields in `metav1.Status`'s order (`kind`, `apiVersion`,
/// `metadata`, `status`, `message`, `reason`, `details`, `code`), so byte-comparing tools
/// see what kube-apiserver sends; `to_json` gives the same object as a `Value`.
impl serde::Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("kind", "Status")?;
        map.serialize_entry("apiVersion", "v1")?;
        let mut metadata = Map::new();
        if let Some(c) = &self.metadata_continue {
            metadata.insert("continue".into(), Value::String(c.clone()));
        }
        map.serialize_entry("metadata", &metadata)?;
        map.serialize_entry("status", "Failure")?;
        map.serialize_entry("message", &self.message)?;
        if !self.reason.is_empty() {
            map.serialize_entry("reason", &self.reason)?;
        }
        if let Some(details) = &self.details {
            map.serialize_entry("details", details.as_ref())?;
        }
        map.serialize_entry("code", &self.code)?;
        map.end()
    }
}

/// `metav1.StatusDetails` in kube's field order, empty fields left out.
impl serde::Serialize for Details {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in [
            ("name", &self.name),
            ("group", &self.group),
            ("kind", &self.kind),
            ("uid", &self.uid),
        ] {
            if !value.is_empty() {
                map.serialize_entry(key, value)?;
            }
        }
        if !self.causes.is_empty() {
            map.serialize_entry("causes", &self.causes)?;
        }
        if let Some(seconds) = self.retry_after_seconds {
            map.serialize_entry("retryAfterSeconds", &seconds)?;
        }
        map.end()
    }
}

/// `metav1.StatusCause` in kube's field order (`reason`, `message`, `field`).
impl serde::Serialize for Cause {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in [
            ("reason", &self.reason),
            ("message", &self.message),
            ("field", &self.field),
        ] {
            if !value.is_empty() {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

/// `details` as JSON, omitting empty fields as kube does.
pub fn details_json(d: &Details) -> Value {
    let mut dm = Map::new();
    if !d.name.is_empty() {
        dm.insert("name".into(), json!(d.name));
    }
    if !d.group.is_empty() {
        dm.insert("group".into(), json!(d.group));
    }
    if !d.kind.is_empty() {
        dm.insert("kind".into(), json!(d.kind));
    }
    if !d.uid.is_empty() {
        dm.insert("uid".into(), json!(d.uid));
    }
    if !d.causes.is_empty() {
        let causes: Vec<Value> = d
            .causes
            .iter()
            .map(|c| {
                let mut cm = Map::new();
                if !c.reason.is_empty() {
                    cm.insert("reason".into(), json!(c.reason));
                }
                if !c.message.is_empty() {
                    cm.insert("message".into(), json!(c.message));
                }
                if !c.field.is_empty() {
                    cm.insert("field".into(), json!(c.field));
                }
                Value::Object(cm)
            })
            .collect();
        dm.insert("causes".into(), Value::Array(causes));
    }
    if let Some(r) = d.retry_after_seconds {
        dm.insert("retryAfterSeconds".into(), json!(r));
    }
    Value::Object(dm)
}

/// The `Status` kube returns for a successful delete that removed the object at once
/// (namespaces and collections), `status: Success`.
pub fn success(details: Details) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details_json(&details),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bytes_follow_kube_field_order() {
        // The recorded 404 for a missing widget (testdata/conformance), in the field
        // order of metav1.Status, StatusDetails and StatusCause.
        let s = Status::not_found(&GroupResource::new("crud.example.com", "widgets"), "nope");
        assert_eq!(
            serde_json::to_string(&s).unwrap_or_default(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"widgets.crud.example.com \"nope\" not found","reason":"NotFound","details":{"name":"nope","group":"crud.example.com","kind":"widgets"},"code":404}"#
        );
        let mut invalid = Status::bad_request("x");
        invalid.details = Some(Box::new(Details {
            causes: vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "spec.name".into(),
            }],
            retry_after_seconds: Some(1),
            ..Details::default()
        }));
        let text = serde_json::to_string(&invalid).unwrap_or_default();
        assert!(text.contains(r#""details":{"causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.name"}],"retryAfterSeconds":1},"code":400}"#), "{text}");
        // The same object as `to_json`.
        assert_eq!(
            serde_json::from_str::<Value>(&text).ok(),
            Some(invalid.to_json())
        );
    }

    #[test]
    fn not_found_matches_recorded_kube_body() {
        let s = Status::not_found(&GroupResource::new("crud.example.com", "widgets"), "nope");
        assert_eq!(
            s.to_json(),
            json!({"apiVersion": "v1", "code": 404, "details": {"group": "crud.example.com", "kind": "widgets", "name": "nope"},
                   "kind": "Status", "message": "widgets.crud.example.com \"nope\" not found", "metadata": {}, "reason": "NotFound", "status": "Failure"})
        );
        let ns = Status::not_found(&GroupResource::new("", "namespaces"), "x");
        assert_eq!(ns.message, "namespaces \"x\" not found");
    }

    #[test]
    fn invalid_aggregates_causes() {
        let errs = vec![field::Error::required(
            &field::Path::new("spec").child("name"),
            "",
        )];
        let s = Status::invalid("Val", "validation.example.com", "v3", &errs);
        assert_eq!(s.code, 422);
        assert_eq!(
            s.message,
            "Val.validation.example.com \"v3\" is invalid: spec.name: Required value"
        );
        assert_eq!(
            s.to_json()["details"]["causes"],
            json!([{"field": "spec.name", "message": "Required value", "reason": "FieldValueRequired"}])
        );
    }
}
