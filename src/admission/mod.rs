//! Admission: hooks that may change (mutating) or reject (validating) a write.
//!
//! `rest::store` runs them at the two admission points of the pipeline
//! (`pipeline/mod.rs`): mutating hooks one after another on the defaulted object, whose
//! result is pruned and defaulted again; validating hooks all at once (as kube runs
//! validating webhooks in parallel) on the object about to be stored.
//!
//! Webhooks come from the Mutating- and ValidatingWebhookConfigurations in storage
//! (`webhook.rs`) and run before the in-process hooks of the same phase.
//! Hooks are registered in-process by a Rust harness (`Admission::register_mutating`,
//! `Admission::register_validating`) and matched by group, resource and operation.
//! A denial reaches the client as kube words a webhook's:
//! `admission webhook "<name>" denied the request: <message>`.

pub mod client;
pub mod webhook;

use crate::rest::{Descriptor, Operation, WriteOptions};
use crate::status::Status;
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, RwLock};

/// What a hook is told about one write (the fields of kube's `AdmissionRequest`).
#[derive(Clone, Debug)]
pub struct AdmissionRequest {
    /// A unique id of this admission call.
    pub uid: String,
    /// `CREATE` or `UPDATE`.
    pub operation: Operation,
    /// API group of the resource (empty for core).
    pub group: String,
    /// Version of the endpoint written.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource written (`""`, `status`, `scale`).
    pub subresource: String,
    /// `Kind`.
    pub kind: String,
    /// Object name (empty on a create with `generateName`: the name is generated later).
    pub name: String,
    /// Namespace (empty for cluster-scoped kinds).
    pub namespace: String,
    /// The object being written.
    pub object: Value,
    /// The stored object (updates).
    pub old_object: Option<Value>,
    /// `dryRun=All`: the hook must have no side effects.
    pub dry_run: bool,
}

/// What a hook answers.
#[derive(Clone, Debug, PartialEq)]
pub struct AdmissionResponse {
    /// Whether the write may go on.
    pub allowed: bool,
    /// HTTP code of a denial (kube raises anything below 400 to 400).
    pub code: u16,
    /// Why the write was denied.
    pub message: String,
    /// Mutating hooks: the changed object (`None` = unchanged).
    pub object: Option<Value>,
    /// Warnings passed to the client as `Warning` headers.
    pub warnings: Vec<String>,
}

impl AdmissionResponse {
    /// Let the write go on unchanged.
    pub fn allow() -> Self {
        AdmissionResponse {
            allowed: true,
            code: 200,
            message: String::new(),
            object: None,
            warnings: Vec::new(),
        }
    }

    /// Deny the write with a message (HTTP 400, as kube when a webhook sets no code).
    pub fn deny(message: impl Into<String>) -> Self {
        AdmissionResponse {
            allowed: false,
            code: 400,
            message: message.into(),
            ..Self::allow()
        }
    }

    /// Deny the write with a message and an HTTP code.
    pub fn deny_with_code(code: u16, message: impl Into<String>) -> Self {
        AdmissionResponse {
            code,
            ..Self::deny(message)
        }
    }

    /// Let the write go on with `object` in place of the one received.
    pub fn mutate(object: Value) -> Self {
        AdmissionResponse {
            object: Some(object),
            ..Self::allow()
        }
    }

    /// Add a warning for the client.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

/// Which writes a hook sees, as the `rules` of a webhook configuration: `"*"` matches
/// every group, resource or operation; a resource `"widgets/status"` names a
/// subresource, `"widgets/*"` every subresource, `"*/status"` that subresource of all.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matcher {
    /// API groups (`""` is core).
    pub groups: Vec<String>,
    /// Resources, with optional `/subresource`.
    pub resources: Vec<String>,
    /// Operations.
    pub operations: Vec<Operation>,
}

impl Matcher {
    /// Match `resources` of `groups` on `operations`.
    pub fn new(groups: &[&str], resources: &[&str], operations: &[Operation]) -> Self {
        Matcher {
            groups: groups.iter().map(|g| g.to_string()).collect(),
            resources: resources.iter().map(|r| r.to_string()).collect(),
            operations: operations.to_vec(),
        }
    }

    /// Whether a write of `resource`/`subresource` in `group` by `operation` matches.
    pub fn matches(
        &self,
        group: &str,
        resource: &str,
        subresource: &str,
        operation: Operation,
    ) -> bool {
        self.operations.contains(&operation)
            && self.groups.iter().any(|g| g == "*" || g == group)
            && self
                .resources
                .iter()
                .any(|r| resource_matches(r, resource, subresource))
    }
}

/// kube's rule matching of one `resources` entry (`admission/plugin/webhook/predicates/rules`).
fn resource_matches(rule: &str, resource: &str, subresource: &str) -> bool {
    let (rule_res, rule_sub) = rule.split_once('/').unwrap_or((rule, ""));
    if rule_res == "*" && rule_sub == "*" {
        return true;
    }
    let res_ok = rule_res == "*" || rule_res == resource;
    let sub_ok = if rule.contains('/') {
        rule_sub == "*" || rule_sub == subresource
    } else {
        subresource.is_empty()
    };
    res_ok && sub_ok
}

type HookFn = Arc<dyn Fn(AdmissionRequest) -> BoxFuture<'static, AdmissionResponse> + Send + Sync>;

#[derive(Clone)]
struct Hook {
    name: String,
    matcher: Matcher,
    call: HookFn,
}

#[derive(Default)]
struct Hooks {
    mutating: Vec<Hook>,
    validating: Vec<Hook>,
}

/// The registry of admission hooks of one server (cheap to clone: clones share it).
#[derive(Clone, Default)]
pub struct Admission {
    hooks: Arc<RwLock<Hooks>>,
    webhooks: Arc<RwLock<Option<Arc<webhook::WebhookSource>>>>,
}

/// Which write is being admitted: the endpoint and the request's options.
pub struct Attributes<'a> {
    /// The kind written.
    pub descriptor: &'a Descriptor,
    /// Create or update.
    pub operation: Operation,
    /// The request's options (subresource, dryRun).
    pub opts: &'a WriteOptions,
}

impl Admission {
    /// Register a mutating hook named `name` (the name shown in denials); hooks run in
    /// the order registered, each seeing the previous one's output.
    pub fn register_mutating<F, Fut>(&self, name: &str, matcher: Matcher, hook: F)
    where
        F: Fn(AdmissionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResponse> + Send + 'static,
    {
        let hook = Self::hook(name, matcher, hook);
        if let Ok(mut hooks) = self.hooks.write() {
            hooks.mutating.push(hook);
        }
    }

    /// Register a validating hook named `name`; all matching ones run in parallel.
    pub fn register_validating<F, Fut>(&self, name: &str, matcher: Matcher, hook: F)
    where
        F: Fn(AdmissionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResponse> + Send + 'static,
    {
        let hook = Self::hook(name, matcher, hook);
        if let Ok(mut hooks) = self.hooks.write() {
            hooks.validating.push(hook);
        }
    }

    /// Call the webhooks configured in `source` on every write.
    pub fn serve_webhooks(&self, source: webhook::WebhookSource) {
        if let Ok(mut w) = self.webhooks.write() {
            *w = Some(Arc::new(source));
        }
    }

    fn webhook_source(&self) -> Option<Arc<webhook::WebhookSource>> {
        self.webhooks.read().ok().and_then(|w| w.clone())
    }

    /// Remove every hook.
    pub fn clear(&self) {
        if let Ok(mut hooks) = self.hooks.write() {
            *hooks = Hooks::default();
        }
    }

    fn hook<F, Fut>(name: &str, matcher: Matcher, hook: F) -> Hook
    where
        F: Fn(AdmissionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResponse> + Send + 'static,
    {
        Hook {
            name: name.to_string(),
            matcher,
            call: Arc::new(move |req| Box::pin(hook(req))),
        }
    }

    /// The hooks of one phase matching a write (copied out: no lock held across awaits).
    fn matching(&self, mutating: bool, attrs: &Attributes<'_>) -> Vec<Hook> {
        let Ok(hooks) = self.hooks.read() else {
            return Vec::new();
        };
        let list = if mutating {
            &hooks.mutating
        } else {
            &hooks.validating
        };
        let gr = &attrs.descriptor.gr;
        list.iter()
            .filter(|h| {
                h.matcher.matches(
                    &gr.group,
                    &gr.resource,
                    &attrs.opts.subresource,
                    attrs.operation,
                )
            })
            .cloned()
            .collect()
    }

    /// Run the matching mutating hooks in turn on `obj`; their warnings join `warnings`.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut obj: Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Value, Status> {
        if let Some(source) = self.webhook_source() {
            let hooks = source.matching(true, attrs, &obj, old).await?;
            // `reinvocationPolicy: IfNeeded`: webhooks that ran before a later one changed
            // the object run once more, in order (kube's single reinvocation round).
            let mut last_change = None;
            for (i, hook) in hooks.iter().enumerate() {
                if self::webhook::run_mutating(hook, attrs, &mut obj, old, warnings).await? {
                    last_change = Some(i);
                }
            }
            let again = hooks.iter().enumerate().filter(|(i, h)| {
                last_change.is_some_and(|c| *i < c)
                    && h.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded")
            });
            for (_, hook) in again {
                self::webhook::run_mutating(hook, attrs, &mut obj, old, warnings).await?;
            }
        }
        for hook in self.matching(true, attrs) {
            let res = (hook.call)(request(attrs, obj.clone(), old)).await;
            warnings.extend(res.warnings.iter().cloned());
            if !res.allowed {
                return Err(denial(&hook.name, &res));
            }
            if let Some(changed) = res.object {
                if !changed.is_object() {
                    return Err(Status::internal(format!(
                        "admission webhook {:?} returned an object that is not a JSON object",
                        hook.name
                    )));
                }
                obj = changed;
            }
        }
        Ok(obj)
    }

    /// Run the matching validating hooks in parallel; the first denial (in registration
    /// order) rejects the write.
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        let hooks = self.matching(false, attrs);
        let webhooks = match self.webhook_source() {
            Some(source) => source.matching(false, attrs, obj, old).await?,
            None => Vec::new(),
        };
        if hooks.is_empty() && webhooks.is_empty() {
            return Ok(());
        }
        let remote = webhooks.iter().map(|h| webhook::call(h, attrs, obj, old));
        let answers = futures::future::join_all(remote);
        let calls = hooks
            .iter()
            .map(|h| (h.call)(request(attrs, obj.clone(), old)));
        let (answers, results) = futures::join!(answers, futures::future::join_all(calls));
        let mut first_error = None;
        for answer in answers {
            warnings.extend(answer.warnings);
            if first_error.is_none() {
                first_error = answer.error;
            }
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        for res in &results {
            warnings.extend(res.warnings.iter().cloned());
        }
        match hooks.iter().zip(&results).find(|(_, r)| !r.allowed) {
            Some((hook, res)) => Err(denial(&hook.name, res)),
            None => Ok(()),
        }
    }
}

fn request(attrs: &Attributes<'_>, obj: Value, old: Option<&Value>) -> AdmissionRequest {
    let d = attrs.descriptor;
    AdmissionRequest {
        uid: uuid::Uuid::new_v4().to_string(),
        operation: attrs.operation,
        group: d.gr.group.clone(),
        version: d.version.clone(),
        resource: d.gr.resource.clone(),
        subresource: attrs.opts.subresource.clone(),
        kind: d.kind.clone(),
        name: crate::rest::object::name(&obj).to_string(),
        namespace: crate::rest::object::namespace(&obj).to_string(),
        object: obj,
        old_object: old.cloned(),
        dry_run: attrs.opts.dry_run,
    }
}

/// kube's rejection of a denying webhook (`webhook/errors.ToStatusErr`).
fn denial(name: &str, res: &AdmissionResponse) -> Status {
    let denied_by = format!("admission webhook \"{name}\" denied the request");
    let message = if res.message.is_empty() {
        format!("{denied_by} without explanation")
    } else {
        format!("{denied_by}: {}", res.message)
    };
    let mut status = Status::bad_request(message);
    status.code = res.code.max(400);
    status.reason = String::new();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_resources_match_as_kube_rules() {
        assert!(resource_matches("widgets", "widgets", ""));
        assert!(!resource_matches("widgets", "widgets", "status"));
        assert!(resource_matches("widgets/status", "widgets", "status"));
        assert!(resource_matches("widgets/*", "widgets", "scale"));
        assert!(resource_matches("*", "gadgets", ""));
        assert!(!resource_matches("*", "gadgets", "status"));
        assert!(resource_matches("*/status", "gadgets", "status"));
        assert!(resource_matches("*/*", "gadgets", "scale"));
    }

    #[test]
    fn denial_is_worded_as_a_webhook_rejection() {
        let s = denial("x.example.com", &AdmissionResponse::deny("no way"));
        assert_eq!(s.code, 400);
        assert_eq!(
            s.message,
            "admission webhook \"x.example.com\" denied the request: no way"
        );
        let s = denial("x.example.com", &AdmissionResponse::deny_with_code(200, ""));
        assert_eq!(s.code, 400);
        assert_eq!(
            s.message,
            "admission webhook \"x.example.com\" denied the request without explanation"
        );
        let s = denial("x", &AdmissionResponse::deny_with_code(403, "forbidden"));
        assert_eq!(s.code, 403);
    }
}
