//! The `serviceaccounts/token` subresource (`authentication.k8s.io/v1` TokenRequest,
//! `pkg/registry/core/serviceaccount/storage/token.go`): a create that is never
//! stored and answers with a signed token for the ServiceAccount (`kubectl create
//! token`). Tokens may be bound to a Secret; Pods and Nodes are not served here, so
//! tokens bound to them are refused as kube refuses missing objects.

use crate::auth::service_account::ServiceAccountTokens;
use crate::field::{Error, Path};
use crate::rest::store::Store;
use crate::rest::typed::str_at;
use crate::rest::ResourceKind;
use crate::status::{GroupResource, Status};
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{json, Value};
use std::sync::Arc;

/// The API group of TokenRequests.
pub const GROUP: &str = "authentication.k8s.io";
/// kube's `MinTokenAgeSec`: the shortest token lifetime a request may ask for.
pub const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;
/// The longest token lifetime a request may ask for (2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// kube's default `spec.expirationSeconds` (one hour).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;

const KIND: &str = "TokenRequest";

/// kube's v1 defaults of a TokenRequest (`expirationSeconds`), and its decoding check
/// of that field's type.
pub fn default(request: &mut Value) -> Result<(), Status> {
    if !request.get("spec").is_some_and(Value::is_object) {
        request["spec"] = json!({});
    }
    let spec = &mut request["spec"];
    match spec.get("expirationSeconds") {
        None | Some(Value::Null) => spec["expirationSeconds"] = json!(DEFAULT_EXPIRATION_SECONDS),
        Some(v) if v.as_i64().is_some() => {}
        Some(v) => {
            return Err(Status::bad_request(format!(
                "TokenRequest in version \"v1\" cannot be handled as a TokenRequest: json: cannot unmarshal {} into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64",
                crate::goformat::go_json_kind(v)
            )))
        }
    }
    Ok(())
}

/// kube's `ValidateTokenRequest`.
pub fn validate(request: &Value) -> Vec<Error> {
    let path = Path::new("spec").child("expirationSeconds");
    let secs = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut errs = Vec::new();
    if secs < MIN_EXPIRATION_SECONDS {
        errs.push(Error::invalid(
            &path,
            json!(secs),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if secs > MAX_EXPIRATION_SECONDS {
        errs.push(Error::invalid(
            &path,
            json!(secs),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    errs
}

/// What a TokenRequest reads: ServiceAccounts and the Secrets tokens bind to.
pub struct Objects<'a> {
    /// The store.
    pub store: &'a Store,
    /// The `serviceaccounts` kind.
    pub service_accounts: Arc<dyn ResourceKind>,
    /// The `secrets` kind.
    pub secrets: Arc<dyn ResourceKind>,
}

impl Objects<'_> {
    /// A ServiceAccount or Secret (kube's `NotFound` when absent).
    async fn get(&self, resource: &str, namespace: &str, name: &str) -> Result<Value, Status> {
        let kind = match resource {
            "serviceaccounts" => &self.service_accounts,
            _ => &self.secrets,
        };
        self.store.get(kind.as_ref(), namespace, name).await
    }
}

/// Answer a TokenRequest for ServiceAccount `namespace/name`, issued at `now`: the
/// request with its defaults, metadata and `status` (`token`, `expirationTimestamp`).
pub async fn create(
    api: &Objects<'_>,
    tokens: &ServiceAccountTokens,
    namespace: &str,
    name: &str,
    mut request: Value,
    now: DateTime<Utc>,
) -> Result<Value, Status> {
    default(&mut request)?;
    let mismatch = |field: &str, value: &str, detail: &str| {
        let err = Error::invalid(&Path::new("metadata").child(field), json!(value), detail);
        Status::invalid(KIND, GROUP, name, &[err])
    };
    let req_name = str_at(&request, "/metadata/name").to_string();
    if !req_name.is_empty() && req_name != name {
        return Err(mismatch(
            "name",
            &req_name,
            "must match the service account name if specified",
        ));
    }
    let req_ns = str_at(&request, "/metadata/namespace").to_string();
    if !req_ns.is_empty() && req_ns != namespace {
        return Err(mismatch(
            "namespace",
            &req_ns,
            "must match the service account namespace if specified",
        ));
    }
    let sa = api.get("serviceaccounts", namespace, name).await?;
    let sa_uid = str_at(&sa, "/metadata/uid").to_string();
    let req_uid = str_at(&request, "/metadata/uid").to_string();
    if !req_uid.is_empty() && req_uid != sa_uid {
        return Err(Status::conflict(
            &GroupResource::new(GROUP, KIND),
            name,
            &format!("the UID in the token request ({req_uid}) does not match the UID of the service account ({sa_uid})"),
        ));
    }
    let audiences = tokens.audiences_or_default(&request["spec"]);
    request["spec"]["audiences"] = json!(audiences);
    let meta = request
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})));
    if let Some(meta) = meta.filter(|m| m.is_object()) {
        meta["name"] = json!(name);
        meta["namespace"] = json!(namespace);
        meta["uid"] = json!(sa_uid);
        meta["creationTimestamp"] = json!(timestamp(now));
    }
    if let Some(status) = request.get_mut("status") {
        *status = json!({});
    }
    let errs = validate(&request);
    if !errs.is_empty() {
        return Err(Status::invalid(KIND, GROUP, "", &errs));
    }
    let secret = bound_secret(api, &request, namespace).await?;
    let secs = request
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
    let claims = tokens.claims(
        (namespace, name, &sa_uid),
        secret.as_ref().map(|(n, u)| (n.as_str(), u.as_str())),
        &audiences,
        now.timestamp(),
        secs,
    );
    let token = tokens.sign(&claims).map_err(Status::from)?;
    if request.pointer("/spec/boundObjectRef").is_none() {
        request["spec"]["boundObjectRef"] = Value::Null;
    }
    request["apiVersion"] = json!(format!("{GROUP}/v1"));
    request["kind"] = json!(KIND);
    request["status"] = json!({
        "token": token,
        "expirationTimestamp": timestamp(now + chrono::Duration::seconds(secs)),
    });
    Ok(request)
}

/// The Secret a token is bound to (name, uid), after kube's checks of
/// `spec.boundObjectRef`.
async fn bound_secret(
    api: &Objects<'_>,
    request: &Value,
    namespace: &str,
) -> Result<Option<(String, String)>, Status> {
    let Some(r) = request
        .pointer("/spec/boundObjectRef")
        .filter(|r| r.is_object())
    else {
        return Ok(None);
    };
    let (api_version, kind, name) = (
        str_at(r, "/apiVersion"),
        str_at(r, "/kind"),
        str_at(r, "/name"),
    );
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let uid = match (group, kind) {
        ("", "Secret") => {
            str_at(&api.get("secrets", namespace, name).await?, "/metadata/uid").to_string()
        }
        // Neither is served here, so the object cannot exist.
        ("", "Pod") => return Err(Status::not_found(&GroupResource::new("", "pods"), name)),
        ("", "Node") => return Err(Status::not_found(&GroupResource::new("", "nodes"), name)),
        _ => {
            return Err(Status::bad_request(format!(
                "cannot bind token to object of type {group}/{version}, Kind={kind}"
            )))
        }
    };
    let want = str_at(r, "/uid");
    if !want.is_empty() && want != uid {
        return Err(Status::conflict(
            &GroupResource::new("", kind),
            name,
            &format!("the UID in the bound object reference ({want}) does not match the UID in record. The object might have been deleted and then recreated"),
        ));
    }
    Ok(Some((name.to_string(), uid)))
}

/// A `metav1.Time` (RFC 3339, seconds, UTC).
fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &[Error]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn expiration_defaults_to_an_hour() {
        let mut r = json!({"spec": {"audiences": ["a"]}});
        default(&mut r).unwrap();
        assert_eq!(r["spec"]["expirationSeconds"], 3600);
        assert!(validate(&r).is_empty());
    }

    #[test]
    fn expiration_under_ten_minutes_is_kubes_invalid_value() {
        let r = json!({"spec": {"expirationSeconds": 599}});
        assert_eq!(
            messages(&validate(&r)),
            ["spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"]
        );
        assert!(validate(&json!({"spec": {"expirationSeconds": 600}})).is_empty());
        assert_eq!(
            messages(&validate(&json!({"spec": {"expirationSeconds": (1i64 << 32) + 1}}))),
            ["spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"]
        );
    }

    #[test]
    fn expiration_of_the_wrong_type_cannot_be_decoded() {
        let mut r = json!({"spec": {"expirationSeconds": "1h"}});
        let s = default(&mut r).unwrap_err();
        assert_eq!(s.code, 400);
        assert!(s.message.ends_with("cannot unmarshal string into Go struct field TokenRequestSpec.spec.expirationSeconds of type int64"), "{}", s.message);
    }
}
