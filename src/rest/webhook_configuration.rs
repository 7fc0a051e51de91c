//! `admissionregistration.k8s.io/v1` Mutating- and ValidatingWebhookConfigurations:
//! built-in kinds kept as written (no typed schema), with kube's defaults and the
//! checks `admission::webhook` relies on.

use super::typed::go_round_trip;
use super::{object, Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::field::{Error, ErrorList, Path};
use crate::pipeline::decode::type_meta_errors;
use crate::pipeline::trace::Trace;
use crate::schema::objectmeta;
use crate::status::Status;
use serde_json::{json, Value};

/// The API group of webhook configurations.
pub const GROUP: &str = "admissionregistration.k8s.io";

/// Which of the two configuration kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookPhase {
    /// `MutatingWebhookConfiguration`.
    Mutating,
    /// `ValidatingWebhookConfiguration`.
    Validating,
}

impl WebhookPhase {
    /// `Kind`.
    pub fn kind(self) -> &'static str {
        match self {
            WebhookPhase::Mutating => "MutatingWebhookConfiguration",
            WebhookPhase::Validating => "ValidatingWebhookConfiguration",
        }
    }

    /// The kind's OpenAPI definition.
    pub fn definition(self) -> String {
        format!("io.k8s.api.admissionregistration.v1.{}", self.kind())
    }

    /// Plural resource name.
    pub fn resource(self) -> &'static str {
        match self {
            WebhookPhase::Mutating => "mutatingwebhookconfigurations",
            WebhookPhase::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// One of the two webhook configuration resources.
pub struct WebhookConfigurationKind {
    phase: WebhookPhase,
    descriptor: Descriptor,
}

impl WebhookConfigurationKind {
    /// The kind of `phase`, storing under `prefix`.
    pub fn new(phase: WebhookPhase, prefix: &str) -> Self {
        WebhookConfigurationKind {
            phase,
            descriptor: crate::registry::builtin::descriptor(GROUP, phase.resource(), prefix),
        }
    }

    /// kube's defaults (`admissionregistration/v1/defaults.go`).
    fn default_webhooks(&self, obj: &mut Value) {
        let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
            return;
        };
        for hook in hooks.iter_mut().filter_map(Value::as_object_mut) {
            hook.entry("failurePolicy").or_insert(json!("Fail"));
            hook.entry("matchPolicy").or_insert(json!("Equivalent"));
            hook.entry("namespaceSelector").or_insert(json!({}));
            hook.entry("objectSelector").or_insert(json!({}));
            hook.entry("timeoutSeconds").or_insert(json!(10));
            if self.phase == WebhookPhase::Mutating {
                hook.entry("reinvocationPolicy").or_insert(json!("Never"));
            }
            if let Some(rules) = hook.get_mut("rules").and_then(Value::as_array_mut) {
                for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                    rule.entry("scope").or_insert(json!("*"));
                }
            }
            if let Some(svc) = hook
                .get_mut("clientConfig")
                .and_then(|c| c.get_mut("service"))
                .and_then(Value::as_object_mut)
            {
                svc.entry("port").or_insert(json!(443));
            }
        }
    }

    /// The subset of kube's webhook validation this server enforces.
    fn validate_configuration(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        let meta_path = Path::new("metadata");
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        let mut errs = type_meta_errors(obj, &format!("{GROUP}/v1"), self.phase.kind(), true);
        errs.extend(objectmeta::validate_object_meta(&meta, false, &meta_path));
        if let Some(old) = old {
            let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
            errs.extend(objectmeta::validate_object_meta_update(
                &meta, &old_meta, &meta_path,
            ));
        }
        let hooks = obj
            .get("webhooks")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut names = std::collections::HashSet::new();
        // kube skips the matchConditions checks on updates that leave them alone, so
        // that stored conditions stay writable if the CEL environment changes.
        let old_hooks = old
            .and_then(|o| o.get("webhooks"))
            .and_then(Value::as_array);
        let conditions_unchanged = old_hooks.is_some_and(|old_hooks| {
            old_hooks.len() == hooks.len()
                && old_hooks
                    .iter()
                    .zip(&hooks)
                    .all(|(o, n)| o.get("matchConditions") == n.get("matchConditions"))
        });
        for (i, hook) in hooks.iter().enumerate() {
            let path = Path::new("webhooks").index(i);
            let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                errs.push(Error::required(&path.child("name"), ""));
            } else if !names.insert(name.to_string()) {
                errs.push(Error::duplicate(&path.child("name"), json!(name)));
            }
            errs.extend(self.validate_hook(hook, &path));
            if !conditions_unchanged {
                errs.extend(crate::admission::match_conditions::validate(
                    hook.get("matchConditions"),
                    &path.child("matchConditions"),
                ));
            }
        }
        errs
    }

    fn validate_hook(&self, hook: &Value, path: &Path) -> ErrorList {
        let mut errs = Vec::new();
        let str_of = |k: &str| hook.get(k).and_then(Value::as_str);
        if let Some(p) = str_of("failurePolicy").filter(|p| !["Fail", "Ignore"].contains(p)) {
            errs.push(Error::not_supported(
                &path.child("failurePolicy"),
                json!(p),
                &["Fail", "Ignore"],
            ));
        }
        if let Some(p) = str_of("matchPolicy").filter(|p| !["Equivalent", "Exact"].contains(p)) {
            errs.push(Error::not_supported(
                &path.child("matchPolicy"),
                json!(p),
                &["Equivalent", "Exact"],
            ));
        }
        match str_of("sideEffects") {
            None => errs.push(Error::required(
                &path.child("sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(s) if !["None", "NoneOnDryRun"].contains(&s) => errs.push(Error::not_supported(
                &path.child("sideEffects"),
                json!(s),
                &["None", "NoneOnDryRun"],
            )),
            Some(_) => {}
        }
        if let Some(t) = hook.get("timeoutSeconds").and_then(Value::as_i64) {
            if !(1..=30).contains(&t) {
                errs.push(Error::invalid(
                    &path.child("timeoutSeconds"),
                    json!(t),
                    "the timeout value must be between 1 and 30 seconds",
                ));
            }
        }
        if self.phase == WebhookPhase::Mutating {
            if let Some(p) =
                str_of("reinvocationPolicy").filter(|p| !["Never", "IfNeeded"].contains(p))
            {
                errs.push(Error::not_supported(
                    &path.child("reinvocationPolicy"),
                    json!(p),
                    &["IfNeeded", "Never"],
                ));
            }
        }
        let versions: Vec<&str> = hook
            .get("admissionReviewVersions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if !versions.iter().any(|v| *v == "v1" || *v == "v1beta1") {
            errs.push(Error::required(
                &path.child("admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        }
        let cc = hook.get("clientConfig");
        let has = |k: &str| cc.and_then(|c| c.get(k)).is_some_and(|v| !v.is_null());
        if has("url") == has("service") {
            errs.push(Error::required(
                &path.child("clientConfig"),
                "exactly one of url or service is required",
            ));
        }
        errs
    }
}

impl ResourceKind for WebhookConfigurationKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }
}

impl Strategy for WebhookConfigurationKind {
    fn decode(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        _opts: &WriteOptions,
        _t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        go_round_trip(obj, &self.phase.definition());
        if old.is_none() {
            if let Some(m) = obj.as_object_mut() {
                m.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
                m.insert("kind".into(), json!(self.phase.kind()));
            }
        }
        Ok(Vec::new())
    }

    fn decode_admitted(&self, obj: &mut Value, _t: &mut Trace) {
        go_round_trip(obj, &self.phase.definition());
    }

    fn default(&self, obj: &mut Value, _t: &mut Trace) {
        self.default_webhooks(obj);
    }

    fn has_generation(&self) -> bool {
        true
    }

    fn validate(&self, obj: &Value, _warnings: &mut Vec<String>, _t: &mut Trace) -> ErrorList {
        self.validate_configuration(obj, None)
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        _opts: &WriteOptions,
        _warnings: &mut Vec<String>,
        _t: &mut Trace,
    ) -> Result<ErrorList, Status> {
        Ok(self.validate_configuration(new, Some(old)))
    }

    fn invalid(&self, obj: &Value, errs: &[Error]) -> Status {
        Status::invalid(self.phase.kind(), GROUP, object::name(obj), errs)
    }
}
