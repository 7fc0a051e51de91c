//! Admission webhooks: the Mutating- and ValidatingWebhookConfigurations in storage,
//! matched against each write (rules, namespace and object selectors) and called over
//! HTTPS with an `admission.k8s.io/v1` AdmissionReview, answers handled as kube does.

use super::Attributes;
use crate::rest::{object, Operation};
use crate::selector::labels::from_label_selector_json;
use crate::status::Status;
use crate::storage::{ListOptions, Storage};
use base64::Engine;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// Where the webhook configurations (and namespaces, for `namespaceSelector`) are stored.
pub struct WebhookSource {
    /// The backend.
    pub storage: Arc<dyn Storage>,
    /// Key root of `mutatingwebhookconfigurations`.
    pub mutating_root: String,
    /// Key root of `validatingwebhookconfigurations`.
    pub validating_root: String,
    /// Key root of `namespaces`.
    pub namespaces_root: String,
}

/// The outcome of one webhook call.
pub(super) struct Answer {
    /// The changed object (mutating webhooks that sent a patch).
    pub object: Option<Value>,
    /// Denial or a failed call under `failurePolicy: Fail`.
    pub error: Option<Status>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

impl WebhookSource {
    /// The webhooks of one phase that apply to this write, configurations in name order
    /// (kube's order), webhooks in the order written.
    pub(super) async fn matching(
        &self,
        mutating: bool,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<Vec<Value>, Status> {
        let root = if mutating {
            &self.mutating_root
        } else {
            &self.validating_root
        };
        let res = self
            .storage
            .list(&format!("{root}/"), &ListOptions::default())
            .await
            .map_err(|e| {
                let gr = crate::status::GroupResource::new("admissionregistration.k8s.io", "");
                crate::rest::store::storage_status(e, &gr, "")
            })?;
        let mut out = Vec::new();
        let mut ns_labels: Option<Map<String, Value>> = None;
        for kv in &res.items {
            let Ok(config) = serde_json::from_slice::<Value>(&kv.value) else {
                continue;
            };
            let hooks = config.get("webhooks").and_then(Value::as_array);
            for hook in hooks.into_iter().flatten() {
                if !rules_match(hook, attrs) || !object_selector_matches(hook, obj, old) {
                    continue;
                }
                if !self
                    .namespace_selector_matches(hook, attrs, obj, &mut ns_labels)
                    .await
                {
                    continue;
                }
                out.push(hook.clone());
            }
        }
        Ok(out)
    }

    /// `namespaceSelector`: against the labels of the object's namespace (or of the
    /// Namespace itself); cluster-scoped objects always match.
    async fn namespace_selector_matches(
        &self,
        hook: &Value,
        attrs: &Attributes<'_>,
        obj: &Value,
        cache: &mut Option<Map<String, Value>>,
    ) -> bool {
        let sel = hook.get("namespaceSelector").cloned().unwrap_or(json!({}));
        let Ok(selector) = from_label_selector_json(&sel) else {
            return false;
        };
        if selector.is_empty() {
            return true;
        }
        let d = attrs.descriptor;
        if d.gr.group.is_empty() && d.gr.resource == "namespaces" {
            return selector.matches(&object::labels(obj));
        }
        let ns = object::namespace(obj);
        if !d.namespaced || ns.is_empty() {
            return true;
        }
        if cache.is_none() {
            let key = format!("{}/{ns}", self.namespaces_root);
            let labels = match self.storage.get(&key).await {
                Ok(Some(kv)) => serde_json::from_slice::<Value>(&kv.value)
                    .map(|v| object::labels(&v))
                    .unwrap_or_default(),
                _ => Map::new(),
            };
            *cache = Some(labels);
        }
        cache
            .as_ref()
            .is_some_and(|labels| selector.matches(labels))
    }
}

/// `rules`: operations, apiGroups, apiVersions, resources (with subresources), scope.
fn rules_match(hook: &Value, attrs: &Attributes<'_>) -> bool {
    let d = attrs.descriptor;
    let op = operation_name(attrs.operation);
    let rules = hook.get("rules").and_then(Value::as_array);
    rules.into_iter().flatten().any(|rule| {
        let list = |k: &str| -> Vec<&str> {
            rule.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let has = |k: &str, v: &str| list(k).iter().any(|x| *x == "*" || *x == v);
        let scope = rule.get("scope").and_then(Value::as_str).unwrap_or("*");
        let scope_ok = match scope {
            "Cluster" => !d.namespaced,
            "Namespaced" => d.namespaced,
            _ => true,
        };
        has("operations", op)
            && has("apiGroups", &d.gr.group)
            && has("apiVersions", &d.version)
            && scope_ok
            && list("resources")
                .iter()
                .any(|r| super::resource_matches(r, &d.gr.resource, &attrs.opts.subresource))
    })
}

/// `objectSelector`: the new or the old object's labels must match.
fn object_selector_matches(hook: &Value, obj: &Value, old: Option<&Value>) -> bool {
    let sel = hook.get("objectSelector").cloned().unwrap_or(json!({}));
    let Ok(selector) = from_label_selector_json(&sel) else {
        return false;
    };
    selector.is_empty()
        || selector.matches(&object::labels(obj))
        || old.is_some_and(|o| selector.matches(&object::labels(o)))
}

fn operation_name(op: Operation) -> &'static str {
    match op {
        Operation::Create => "CREATE",
        Operation::Update => "UPDATE",
    }
}

/// The AdmissionReview kube sends (`admission.k8s.io/v1`).
fn review(attrs: &Attributes<'_>, uid: &str, obj: &Value, old: Option<&Value>) -> Value {
    let d = attrs.descriptor;
    let kind = json!({"group": d.gr.group, "version": d.version, "kind": d.kind});
    let resource = json!({"group": d.gr.group, "version": d.version, "resource": d.gr.resource});
    let options_kind = match (attrs.operation, attrs.opts.is_patch || attrs.opts.is_apply) {
        (_, true) => "PatchOptions",
        (Operation::Create, false) => "CreateOptions",
        (Operation::Update, false) => "UpdateOptions",
    };
    let mut options = json!({"kind": options_kind, "apiVersion": "meta.k8s.io/v1"});
    if attrs.opts.dry_run {
        options["dryRun"] = json!(["All"]);
    }
    if !attrs.opts.field_manager.is_empty() {
        options["fieldManager"] = json!(attrs.opts.field_manager);
    }
    let mut req = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "operation": operation_name(attrs.operation),
        "userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]},
        "object": obj,
        "oldObject": old.cloned().unwrap_or(Value::Null),
        "dryRun": attrs.opts.dry_run,
        "options": options,
    });
    if !attrs.opts.subresource.is_empty() {
        req["subResource"] = json!(attrs.opts.subresource);
        req["requestSubResource"] = json!(attrs.opts.subresource);
    }
    let name = object::name(obj);
    if !name.is_empty() {
        req["name"] = json!(name);
    }
    let ns = object::namespace(obj);
    if !ns.is_empty() {
        req["namespace"] = json!(ns);
    }
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req})
}

/// Call one webhook and interpret its answer (a failed call follows `failurePolicy`).
pub(super) async fn call(
    hook: &Value,
    attrs: &Attributes<'_>,
    obj: &Value,
    old: Option<&Value>,
) -> Answer {
    let name = hook
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let ignore = hook.get("failurePolicy").and_then(Value::as_str) == Some("Ignore");
    let mut answer = Answer {
        object: None,
        error: None,
        warnings: Vec::new(),
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let body = review(attrs, &uid, obj, old);
    let response = match post(hook, &body).await {
        Ok(r) => r,
        Err(reason) => {
            if ignore {
                tracing::warn!(webhook = %name, error = %reason, "failed calling webhook, failing open");
            } else {
                answer.error = Some(Status::internal(format!(
                    "failed calling webhook {name:?}: {reason}"
                )));
            }
            return answer;
        }
    };
    match interpret(&name, &uid, &response, obj) {
        Ok((object, warnings)) => {
            answer.object = object;
            answer.warnings = warnings;
        }
        Err(Interpretation::Denied(status, warnings)) => {
            answer.warnings = warnings;
            answer.error = Some(status);
        }
        Err(Interpretation::Invalid(reason)) if ignore => {
            tracing::warn!(webhook = %name, error = %reason, "invalid webhook response, failing open");
        }
        Err(Interpretation::Invalid(reason)) => {
            answer.error = Some(Status::internal(format!(
                "failed calling webhook {name:?}: {reason}"
            )));
        }
    }
    answer
}

/// Call one mutating webhook on `obj`, applying its patch; whether it changed `obj`.
pub(super) async fn run_mutating(
    hook: &Value,
    attrs: &Attributes<'_>,
    obj: &mut Value,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<bool, Status> {
    let answer = call(hook, attrs, obj, old).await;
    warnings.extend(answer.warnings);
    if let Some(err) = answer.error {
        return Err(err);
    }
    match answer.object {
        Some(changed) if changed != *obj => {
            *obj = changed;
            Ok(true)
        }
        _ => Ok(false),
    }
}

enum Interpretation {
    /// The webhook said no (kube's wording, the webhook's code).
    Denied(Status, Vec<String>),
    /// The answer could not be used (a call failure for `failurePolicy`).
    Invalid(String),
}

/// Read an AdmissionReview answer: the patched object (if any) and the warnings.
fn interpret(
    name: &str,
    uid: &str,
    review: &Value,
    obj: &Value,
) -> Result<(Option<Value>, Vec<String>), Interpretation> {
    let invalid =
        |m: String| Interpretation::Invalid(format!("received invalid webhook response: {m}"));
    let Some(resp) = review.get("response") else {
        return Err(invalid("response was absent".into()));
    };
    let got = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(invalid(format!(
            "expected response.uid={uid:?}, got {got:?}"
        )));
    }
    let warnings: Vec<String> = resp
        .get("warnings")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
        let status = resp.get("status").cloned().unwrap_or(Value::Null);
        let message = status.get("message").and_then(Value::as_str).unwrap_or("");
        let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
        let code = status.get("code").and_then(Value::as_u64).unwrap_or(0);
        let shown = if message.is_empty() { reason } else { message };
        let mut s = super::denial(
            name,
            &super::AdmissionResponse::deny_with_code(u16::try_from(code).unwrap_or(400), shown),
        );
        s.reason = reason.to_string();
        return Err(Interpretation::Denied(s, warnings));
    }
    let Some(patch) = resp.get("patch").and_then(Value::as_str) else {
        return Ok((None, warnings));
    };
    match resp.get("patchType").and_then(Value::as_str) {
        Some("JSONPatch") => {}
        other => {
            return Err(invalid(format!(
                "unsupported patch type {:?}",
                other.unwrap_or("")
            )))
        }
    }
    let undecodable = |e: String| {
        Interpretation::Invalid(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| undecodable(e.to_string()))?;
    let ops: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| undecodable(e.to_string()))?;
    let mut patched = obj.clone();
    json_patch::patch(&mut patched, &ops)
        .map_err(|e| Interpretation::Invalid(format!("applying webhook patch: {e}")))?;
    Ok((Some(patched), warnings))
}

/// POST the review to the webhook's `clientConfig` within `timeoutSeconds`; errors are
/// prefixed as kube's admission webhooks word them.
async fn post(hook: &Value, review: &Value) -> Result<Value, String> {
    let cc = hook.get("clientConfig").cloned().unwrap_or(Value::Null);
    let timeout = hook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(10);
    super::client::post_json(&cc, Duration::from_secs(timeout), review)
        .await
        .map_err(|e| format!("failed to call webhook: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::{Descriptor, WriteOptions};
    use crate::status::GroupResource;

    fn widgets() -> Descriptor {
        Descriptor {
            gr: GroupResource::new("example.com", "widgets"),
            version: "v1".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            singular: "widget".into(),
            namespaced: true,
            key_root: "/registry/example.com/widgets".into(),
            status_subresource: true,
            has_generation: true,
        }
    }

    #[test]
    fn rules_match_operation_group_version_resource_and_scope() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes {
            descriptor: &d,
            operation: Operation::Create,
            opts: &opts,
        };
        let hook = |rule: Value| json!({"rules": [rule]});
        let base = json!({"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]});
        assert!(rules_match(&hook(base.clone()), &attrs));
        let mut r = base.clone();
        r["operations"] = json!(["UPDATE"]);
        assert!(!rules_match(&hook(r), &attrs));
        let mut r = base.clone();
        r["scope"] = json!("Cluster");
        assert!(!rules_match(&hook(r), &attrs));
        let mut r = base.clone();
        r["apiVersions"] = json!(["*"]);
        r["apiGroups"] = json!(["*"]);
        r["resources"] = json!(["*/*"]);
        assert!(rules_match(&hook(r), &attrs));
    }

    #[test]
    fn review_request_has_kubes_fields() {
        let d = widgets();
        let opts = WriteOptions {
            dry_run: true,
            ..Default::default()
        };
        let attrs = Attributes {
            descriptor: &d,
            operation: Operation::Create,
            opts: &opts,
        };
        let obj = json!({"metadata": {"name": "w", "namespace": "ns"}});
        let r = review(&attrs, "u-1", &obj, None);
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        let req = &r["request"];
        assert_eq!(req["uid"], "u-1");
        assert_eq!(req["operation"], "CREATE");
        assert_eq!(
            req["kind"],
            json!({"group": "example.com", "version": "v1", "kind": "Widget"})
        );
        assert_eq!(req["requestResource"]["resource"], "widgets");
        assert_eq!(
            (req["name"].as_str(), req["namespace"].as_str()),
            (Some("w"), Some("ns"))
        );
        assert_eq!(req["oldObject"], Value::Null);
        assert_eq!(req["dryRun"], true);
        assert_eq!(req["options"]["kind"], "CreateOptions");
        assert!(req.get("subResource").is_none());
    }

    #[test]
    fn denial_with_status_is_worded_as_kube() {
        let answer = json!({"response": {"uid": "u", "allowed": false, "status": {"code": 403, "message": "nope"}}});
        let Err(Interpretation::Denied(s, _)) =
            interpret("x.example.com", "u", &answer, &json!({}))
        else {
            panic!("expected a denial");
        };
        assert_eq!(s.code, 403);
        assert_eq!(
            s.message,
            "admission webhook \"x.example.com\" denied the request: nope"
        );
    }

    #[test]
    fn json_patch_is_applied_and_uid_checked() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/spec/x","value":1}]"#);
        let answer = json!({"response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": patch, "warnings": ["w"]}});
        let Ok((Some(obj), warnings)) = interpret("x", "u", &answer, &json!({"spec": {}})) else {
            panic!("expected a patched object");
        };
        assert_eq!(obj, json!({"spec": {"x": 1}}));
        assert_eq!(warnings, vec!["w".to_string()]);
        assert!(matches!(
            interpret("x", "other", &answer, &json!({})),
            Err(Interpretation::Invalid(_))
        ));
    }
}
