//! Admission webhooks: the Mutating- and ValidatingWebhookConfigurations in storage,
//! matched against each write (rules, namespace and object selectors) and called over
//! HTTPS with an `admission.k8s.io/v1` AdmissionReview, answers handled as kube does.
//!
//! Configurations are read from a cache that a storage watch keeps current (kube's
//! informer) and that writes through this server update at once, so a configuration
//! applies to the very next request; until the first load succeeds, requests list
//! the configurations from storage directly.

use super::equivalent::Versions;
use super::{AdmissionError, Attributes, LazyAuthz};
use crate::object;
use crate::status::Status;
use crate::storage::{EventKind, ListOptions, Storage, StorageError, WatchItem};
use crate::webhook::client::ServiceResolver;
use base64::Engine;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

/// Where the webhook configurations (and namespaces, for `namespaceSelector`) are
/// stored, and the cache of the configurations.
pub struct WebhookSource {
    storage: Arc<dyn Storage>,
    mutating_root: String,
    validating_root: String,
    namespaces_root: String,
    /// The key prefix watched: the common parent of both roots.
    watch_prefix: String,
    cache: RwLock<Cache>,
    /// Compiled `matchConditions`.
    programs: super::match_conditions::ProgramCache,
}

/// The configurations as last seen, by storage key.
#[derive(Default)]
struct Cache {
    /// Loaded from storage at least once.
    synced: bool,
    /// Per key: the revision the entry reflects and the configuration (`None`: deleted,
    /// kept so that an older event arriving late cannot bring it back).
    entries: BTreeMap<String, (i64, Option<Arc<Value>>)>,
}

impl Cache {
    /// Take `value` for `key` unless the entry already reflects a later revision (a
    /// delete at the revision already seen wins: its own revision is not known here).
    fn apply(&mut self, key: &str, revision: i64, value: Option<Arc<Value>>) {
        if let Some((seen, _)) = self.entries.get(key) {
            if *seen > revision || (*seen == revision && value.is_some()) {
                return;
            }
        }
        self.entries.insert(key.to_string(), (revision, value));
    }
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
    /// A source over `storage` with the key roots of both configuration kinds and of
    /// namespaces.
    pub fn new(
        storage: Arc<dyn Storage>,
        mutating_root: &str,
        validating_root: &str,
        namespaces_root: &str,
    ) -> Self {
        let common: String = mutating_root
            .chars()
            .zip(validating_root.chars())
            .take_while(|(a, b)| a == b)
            .map(|(a, _)| a)
            .collect();
        let watch_prefix = match common.rfind('/') {
            Some(i) => common[..=i].to_string(),
            None => String::new(),
        };
        WebhookSource {
            storage,
            mutating_root: mutating_root.to_string(),
            validating_root: validating_root.to_string(),
            namespaces_root: namespaces_root.to_string(),
            watch_prefix,
            cache: RwLock::new(Cache::default()),
            programs: Default::default(),
        }
    }

    /// Keep the cache in step with storage from now on (a background task that ends
    /// when the source is dropped).
    pub(super) fn start_following(source: &Arc<WebhookSource>) {
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(follow(Arc::downgrade(source)));
        }
    }

    fn is_configuration_key(&self, key: &str) -> bool {
        [&self.mutating_root, &self.validating_root]
            .iter()
            .any(|root| {
                key.strip_prefix(root.as_str())
                    .is_some_and(|k| k.starts_with('/'))
            })
    }

    /// Load every configuration; returns the revision to watch from.
    async fn load(&self) -> Result<i64, StorageError> {
        let res = self
            .storage
            .list(&self.watch_prefix, &ListOptions::default())
            .await?;
        let mut entries = BTreeMap::new();
        for kv in res
            .items
            .iter()
            .filter(|kv| self.is_configuration_key(&kv.key))
        {
            let value = crate::codec::decode_stored_json::<Value>(&kv.value)
                .ok()
                .map(Arc::new);
            entries.insert(kv.key.clone(), (kv.mod_revision, value));
        }
        if let Ok(mut cache) = self.cache.write() {
            // Writes through this server newer than the list stay.
            for (key, (rev, value)) in std::mem::take(&mut cache.entries) {
                if rev > res.revision {
                    entries.insert(key, (rev, value));
                }
            }
            cache.entries = entries;
            cache.synced = true;
        }
        Ok(res.revision)
    }

    /// A configuration written through this server (`key_root` says which kind).
    pub(super) fn written(&self, key_root: &str, obj: &Value, deleted: bool) {
        if key_root != self.mutating_root && key_root != self.validating_root {
            return;
        }
        let key = format!("{key_root}/{}", object::name(obj));
        let revision = object::resource_version(obj).ok().flatten().unwrap_or(0);
        let value = (!deleted).then(|| Arc::new(obj.clone()));
        if let Ok(mut cache) = self.cache.write() {
            cache.apply(&key, revision, value);
        }
    }

    /// The configurations under `root` in name order: from the cache once loaded,
    /// else from storage.
    async fn configurations(&self, root: &str) -> Result<Vec<Arc<Value>>, Status> {
        let prefix = crate::field::concat(&[root, "/"]);
        if let Ok(cache) = self.cache.read() {
            if cache.synced {
                use std::ops::Bound;
                return Ok(cache
                    .entries
                    .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .filter_map(|(_, (_, v))| v.clone())
                    .collect());
            }
        }
        let res = self
            .storage
            .list(&prefix, &ListOptions::default())
            .await
            .map_err(|e| {
                let gr = crate::status::GroupResource::new("admissionregistration.k8s.io", "");
                crate::storage::storage_status(e, &gr, "")
            })?;
        Ok(res
            .items
            .iter()
            .filter_map(|kv| crate::codec::decode_stored_json::<Value>(&kv.value).ok())
            .map(Arc::new)
            .collect())
    }

    /// The webhooks of one phase that apply to this write (rules, selectors, then
    /// `matchConditions`), configurations in name order (kube's order), webhooks in the
    /// order written; a condition failing under `failurePolicy: Fail` rejects the write.
    pub(super) async fn matching(
        &self,
        mutating: bool,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
        cx: &super::MatchContext<'_>,
    ) -> Result<Vec<(Value, Option<String>)>, Status> {
        let (authz, versions, services) = (cx.authz, cx.versions, cx.services);
        let root = if mutating {
            &self.mutating_root
        } else {
            &self.validating_root
        };
        let configurations = self.configurations(root).await?;
        let mut out = Vec::new();
        let mut ns_labels: Option<Map<String, Value>> = None;
        let mut equivalents: Option<Vec<String>> = None;
        for config in &configurations {
            let hooks = config.get("webhooks").and_then(Value::as_array);
            for hook in hooks.into_iter().flatten() {
                // The request's version first; then, under `matchPolicy: Equivalent`
                // (the default), the resource's other versions.
                let version = if rules_match(hook, attrs, &attrs.descriptor.version) {
                    None
                } else if hook.get("matchPolicy").and_then(Value::as_str) != Some("Exact") {
                    let equivalents =
                        equivalents.get_or_insert_with(|| versions.equivalents(attrs));
                    match equivalents.iter().find(|v| rules_match(hook, attrs, v)) {
                        Some(v) => Some(v.clone()),
                        None => continue,
                    }
                } else {
                    continue;
                };
                if !object_selector_matches(hook, obj, old) {
                    continue;
                }
                if !self
                    .namespace_selector_matches(hook, attrs, obj, old, &mut ns_labels)
                    .await
                {
                    continue;
                }
                use super::match_conditions::{decide, Decision};
                let decision = match &version {
                    None => decide(
                        hook,
                        attrs,
                        obj,
                        old,
                        &self.programs,
                        authz.map(LazyAuthz::get),
                    ),
                    // Conditions see the object in the matched version.
                    Some(v) => {
                        let d = Versions::descriptor(attrs, v);
                        let view = attrs.as_version(&d);
                        let o = versions.convert(attrs, obj, v, services).await?;
                        let old_v = match old {
                            Some(x) => Some(versions.convert(attrs, x, v, services).await?),
                            None => None,
                        };
                        decide(
                            hook,
                            &view,
                            &o,
                            old_v.as_ref(),
                            &self.programs,
                            authz.map(LazyAuthz::get),
                        )
                    }
                };
                match decision {
                    Decision::Call => out.push((hook.clone(), version)),
                    Decision::Skip => {}
                    Decision::Reject(status) => return Err(status),
                }
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
        old: Option<&Value>,
        cache: &mut Option<Map<String, Value>>,
    ) -> bool {
        let Some(selector) = super::selector_field(hook, "namespaceSelector") else {
            return false;
        };
        if selector.is_empty() {
            return true;
        }
        let d = attrs.descriptor;
        let subject = if obj.is_null() {
            old.unwrap_or(obj)
        } else {
            obj
        };
        if d.gr.group.is_empty() && d.gr.resource == "namespaces" {
            return selector.matches(&object::labels(subject));
        }
        let ns = attrs.namespace(obj, old);
        if !d.namespaced || ns.is_empty() {
            return true;
        }
        if cache.is_none() {
            let key = format!("{}/{ns}", self.namespaces_root);
            let labels = match self.storage.get(&key).await {
                Ok(Some(kv)) => crate::codec::decode_stored_json::<Value>(&kv.value)
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

/// Follow configuration writes in storage (made here or by another server on the
/// same etcd); a reload after missed history, retries while storage is down.
async fn follow(source: Weak<WebhookSource>) {
    let mut revision: Option<i64> = None;
    loop {
        let Some(strong) = source.upgrade() else {
            return;
        };
        let from = match revision {
            Some(r) => r,
            None => match strong.load().await {
                Ok(r) => r,
                Err(_) => {
                    drop(strong);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            },
        };
        revision = Some(from);
        let watch = strong.storage.watch(&strong.watch_prefix, from).await;
        drop(strong);
        let mut stream = match watch {
            Ok(s) => s,
            Err(StorageError::Compacted { .. }) => {
                revision = None;
                continue;
            }
            Err(_) => {
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            let Some(strong) = source.upgrade() else {
                return;
            };
            match item {
                Ok(WatchItem::Event(ev)) => {
                    revision = Some(ev.kv.mod_revision);
                    if strong.is_configuration_key(&ev.kv.key) {
                        let value = match ev.kind {
                            EventKind::Delete => None,
                            _ => crate::codec::decode_stored_json::<Value>(&ev.kv.value)
                                .ok()
                                .map(Arc::new),
                        };
                        if let Ok(mut cache) = strong.cache.write() {
                            cache.apply(&ev.kv.key, ev.kv.mod_revision, value);
                        }
                    }
                }
                Ok(WatchItem::Progress(r)) => revision = Some(from.max(r)),
                Err(StorageError::Compacted { .. }) => {
                    revision = None;
                    break;
                }
                Err(_) => break,
            }
        }
        if source.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `rules`: operations, apiGroups, apiVersions, resources (with subresources), scope.
fn rules_match(hook: &Value, attrs: &Attributes<'_>, version: &str) -> bool {
    let d = attrs.descriptor;
    let op = attrs.operation_name();
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
            && has("apiVersions", version)
            && scope_ok
            && list("resources")
                .iter()
                .any(|r| super::resource_matches(r, &d.gr.resource, &attrs.opts.subresource))
    })
}

/// `objectSelector`: the new or the old object's labels must match (an absent object,
/// as on a delete, never does).
fn object_selector_matches(hook: &Value, obj: &Value, old: Option<&Value>) -> bool {
    let Some(selector) = super::selector_field(hook, "objectSelector") else {
        return false;
    };
    selector.is_empty()
        || (!obj.is_null() && selector.matches(&object::labels(obj)))
        || old.is_some_and(|o| selector.matches(&object::labels(o)))
}

/// The AdmissionReview kube sends (`admission.k8s.io/v1`).
fn review(attrs: &Attributes<'_>, uid: &str, obj: &Value, old: Option<&Value>) -> Value {
    let mut req = attrs.request(uid, obj, old);
    req["object"] = obj.clone();
    req["oldObject"] = old.cloned().unwrap_or(Value::Null);
    json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": req})
}

/// Call one webhook and interpret its answer (a failed call follows `failurePolicy`).
pub(super) async fn call(
    hook: &Value,
    attrs: &Attributes<'_>,
    obj: &Value,
    old: Option<&Value>,
    services: &ServiceResolver,
    mutating: bool,
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
    let failed = |answer: &mut Answer, reason: &dyn std::fmt::Display| {
        if ignore {
            tracing::warn!(webhook = %name, error = %reason, "Failed calling webhook, failing open");
        } else {
            answer.error = Some(Status::internal(format!(
                "failed calling webhook {name:?}: {reason}"
            )));
        }
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let body = review(attrs, &uid, obj, old);
    let response = match post(hook, &body, services).await {
        Ok(r) => r,
        Err(reason) => {
            failed(&mut answer, &reason);
            return answer;
        }
    };
    let verified = match verify(&uid, &response) {
        Ok(v) => v,
        Err(reason) => {
            failed(&mut answer, &reason);
            return answer;
        }
    };
    let phase = if mutating { "mutating" } else { "validating" };
    attrs.record_audit_annotations(&name, phase, &verified.audit_annotations);
    answer.warnings = verified.warnings;
    if let Some(mut status) = verified.denial {
        let message = status.message.clone();
        let reason = std::mem::take(&mut status.reason);
        let mut s = super::denial(
            &name,
            &super::AdmissionResponse::deny_with_code(status.code, message),
        );
        s.reason = reason;
        answer.error = Some(s);
        return answer;
    }
    if let Some(patch) = verified.patch {
        match apply_patch(&name, &patch, obj) {
            Ok(changed) => answer.object = changed,
            Err(PatchError::Invalid(reason)) => failed(&mut answer, &reason),
            Err(PatchError::Fatal(status)) => answer.error = Some(status),
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
    services: &ServiceResolver,
) -> Result<bool, Status> {
    let answer = call(hook, attrs, obj, old, services, true).await;
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

/// A webhook's answer that passed kube's checks (`VerifyAdmissionResponse`).
#[derive(Debug, Default)]
struct Verified {
    warnings: Vec<String>,
    audit_annotations: BTreeMap<String, String>,
    /// `allowed: false`: the code (0 when unset), message (else reason) and reason.
    denial: Option<Status>,
    /// `patchType` and the base64 `patch`.
    patch: Option<(String, String)>,
}

/// Check an AdmissionReview answer; an error is worded for a failed call.
fn verify(uid: &str, review: &Value) -> Result<Verified, AdmissionError> {
    let Some(resp) = review.get("response") else {
        return Err(AdmissionError::ResponseAbsent);
    };
    let got = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if got != uid {
        return Err(AdmissionError::ResponseUid {
            expected: uid.to_string(),
            got: got.to_string(),
        });
    }
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Verified {
        warnings: strings(resp.get("warnings")),
        ..Default::default()
    };
    if let Some(m) = resp.get("auditAnnotations").and_then(Value::as_object) {
        for (k, v) in m {
            out.audit_annotations
                .insert(k.clone(), v.as_str().unwrap_or_default().to_string());
        }
    }
    if resp.get("allowed").and_then(Value::as_bool) != Some(true) {
        let status = resp.get("status").cloned().unwrap_or(Value::Null);
        let message = status.get("message").and_then(Value::as_str).unwrap_or("");
        let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
        let code = status.get("code").and_then(Value::as_u64).unwrap_or(0);
        let shown = if message.is_empty() { reason } else { message };
        let mut s = Status::bad_request(shown);
        s.code = u16::try_from(code).unwrap_or(400);
        s.message = shown.to_string();
        s.reason = reason.to_string();
        out.denial = Some(s);
        return Ok(out);
    }
    if let Some(patch) = resp.get("patch").and_then(Value::as_str) {
        let patch_type = resp.get("patchType").and_then(Value::as_str).unwrap_or("");
        out.patch = Some((patch_type.to_string(), patch.to_string()));
    }
    Ok(out)
}

enum PatchError {
    /// The patch could not be used (a call failure for `failurePolicy`).
    Invalid(String),
    /// The request fails whatever the policy (kube's internal errors).
    Fatal(Status),
}

/// Apply a webhook's JSONPatch to `obj`; `None` when the patch is empty.
fn apply_patch(
    name: &str,
    (patch_type, patch): &(String, String),
    obj: &Value,
) -> Result<Option<Value>, PatchError> {
    if patch_type != "JSONPatch" {
        return Err(PatchError::Invalid(format!(
            "unsupported patch type {patch_type:?}"
        )));
    }
    let undecodable = |e: String| {
        PatchError::Invalid(format!(
            "received undecodable patch in webhook response: {e}"
        ))
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| undecodable(e.to_string()))?;
    let ops: json_patch::Patch =
        serde_json::from_slice(&bytes).map_err(|e| undecodable(e.to_string()))?;
    if ops.0.is_empty() {
        return Ok(None);
    }
    // A delete has no object to patch (kube's `attr.VersionedObject == nil`).
    if obj.is_null() {
        return Err(PatchError::Fatal(super::modify_unsupported(name)));
    }
    let mut patched = obj.clone();
    // A copy dropped on failure: no undo (json-patch's undo can panic).
    json_patch::patch_unsafe(&mut patched, &ops)
        .map_err(|e| PatchError::Invalid(format!("applying webhook patch: {e}")))?;
    Ok(Some(patched))
}

/// POST the review to the webhook's `clientConfig` within `timeoutSeconds`; errors are
/// prefixed as kube's admission webhooks word them.
async fn post(
    hook: &Value,
    review: &Value,
    services: &ServiceResolver,
) -> Result<Value, AdmissionError> {
    let cc = hook.get("clientConfig").cloned().unwrap_or(Value::Null);
    let timeout = hook
        .get("timeoutSeconds")
        .and_then(Value::as_u64)
        .unwrap_or(10);
    crate::webhook::client::post_json_with(&cc, Duration::from_secs(timeout), review, services)
        .await
        .map_err(AdmissionError::WebhookCall)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::{Operation, WriteOptions};

    use crate::admission::widgets_descriptor as widgets;

    #[test]
    fn rules_match_operation_group_version_resource_and_scope() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let hook = |rule: Value| json!({"rules": [rule]});
        let base = json!({"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]});
        assert!(rules_match(&hook(base.clone()), &attrs, "v1"));
        let mut r = base.clone();
        r["operations"] = json!(["UPDATE"]);
        assert!(!rules_match(&hook(r), &attrs, "v1"));
        let mut r = base.clone();
        r["scope"] = json!("Cluster");
        assert!(!rules_match(&hook(r), &attrs, "v1"));
        let mut r = base.clone();
        r["apiVersions"] = json!(["*"]);
        r["apiGroups"] = json!(["*"]);
        r["resources"] = json!(["*/*"]);
        assert!(rules_match(&hook(r), &attrs, "v1"));
    }

    #[test]
    fn a_subresource_with_a_kind_of_its_own_is_reviewed_as_that_kind() {
        let d = widgets();
        let opts = WriteOptions {
            subresource: "scale".into(),
            ..Default::default()
        };
        let mut attrs = Attributes::new(&d, Operation::Update, &opts);
        attrs.object_kind = Some(crate::admission::ObjectKind {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
        });
        let scale = json!({"kind": "Scale", "metadata": {"name": "w", "namespace": "ns"}});
        let req = &review(&attrs, "u-2", &scale, Some(&scale))["request"];
        let kind = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
        assert_eq!(req["kind"], kind);
        assert_eq!(req["requestKind"], kind);
        assert_eq!(
            req["resource"],
            json!({"group": "example.com", "version": "v1", "resource": "widgets"})
        );
        assert_eq!(req["subResource"], "scale");
    }

    #[test]
    fn review_request_has_kubes_fields() {
        let d = widgets();
        let opts = WriteOptions {
            dry_run: true,
            user: std::sync::Arc::new(crate::auth::UserInfo {
                username: "alice".into(),
                groups: vec!["dev".into(), "system:authenticated".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj = json!({"metadata": {"name": "w", "namespace": "ns"}});
        let r = review(&attrs, "u-1", &obj, None);
        assert_eq!(
            r["request"]["userInfo"],
            json!({"username": "alice", "groups": ["dev", "system:authenticated"]})
        );
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
    fn denial_keeps_code_message_and_reason() {
        let answer = json!({"response": {"uid": "u", "allowed": false, "status": {"code": 403, "message": "nope", "reason": "Forbidden"}}});
        let v = verify("u", &answer).unwrap_or_default();
        let s = v.denial.unwrap_or_else(|| Status::internal(""));
        assert_eq!(
            (s.code, s.message.as_str(), s.reason.as_str()),
            (403, "nope", "Forbidden")
        );
    }

    #[test]
    fn json_patch_is_applied_and_uid_checked() {
        let patch = base64::engine::general_purpose::STANDARD
            .encode(br#"[{"op":"add","path":"/spec/x","value":1}]"#);
        let answer = json!({"response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": patch, "warnings": ["w"], "auditAnnotations": {"k": "v"}}});
        let v = verify("u", &answer).unwrap_or_default();
        assert_eq!(v.warnings, vec!["w".to_string()]);
        assert_eq!(v.audit_annotations.get("k").map(String::as_str), Some("v"));
        let patch = v.patch.unwrap_or_default();
        let Ok(Some(obj)) = apply_patch("x", &patch, &json!({"spec": {}})) else {
            panic!("expected a patched object");
        };
        assert_eq!(obj, json!({"spec": {"x": 1}}));
        assert_eq!(
            verify("other", &answer)
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("received invalid webhook response: expected response.uid=\"other\", got \"u\"")
        );
    }

    #[test]
    fn a_patch_of_a_delete_is_an_internal_error() {
        let ops = |s: &str| {
            (
                "JSONPatch".to_string(),
                base64::engine::general_purpose::STANDARD.encode(s),
            )
        };
        assert!(matches!(
            apply_patch("x", &ops("[]"), &Value::Null),
            Ok(None)
        ));
        let Err(PatchError::Fatal(s)) = apply_patch(
            "x.example.com",
            &ops(r#"[{"op":"add","path":"/a","value":1}]"#),
            &Value::Null,
        ) else {
            panic!("expected an internal error");
        };
        assert_eq!(s.code, 500);
        assert_eq!(
            s.message,
            "Internal error occurred: admission webhook \"x.example.com\" attempted to modify the object, which is not supported for this operation"
        );
    }

    #[test]
    fn delete_review_has_old_object_and_delete_options() {
        let d = widgets();
        let opts = WriteOptions::default();
        let del = crate::write::DeleteOptions {
            uid: Some("u-9".into()),
            propagation_policy: Some("Foreground".into()),
            ..Default::default()
        };
        let attrs = Attributes::for_delete(&d, &opts, &del);
        let old = json!({"metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}}});
        let r = review(&attrs, "u-1", &Value::Null, Some(&old));
        let req = &r["request"];
        assert_eq!(req["operation"], "DELETE");
        assert_eq!(req["object"], Value::Null);
        assert_eq!(req["oldObject"], old);
        assert_eq!(
            (req["name"].as_str(), req["namespace"].as_str()),
            (Some("w"), Some("ns"))
        );
        assert_eq!(
            req["options"],
            json!({"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "preconditions": {"uid": "u-9"}, "propagationPolicy": "Foreground"})
        );
        // deletecollection: kube's attributes carry the collection's namespace, no name.
        let del = crate::write::DeleteOptions {
            collection: Some(String::new()),
            ..Default::default()
        };
        let attrs = Attributes::for_delete(&d, &opts, &del);
        let req = review(&attrs, "u-2", &Value::Null, Some(&old))["request"].clone();
        assert!(
            req.get("name").is_none() && req.get("namespace").is_none(),
            "{req}"
        );
        // An object selector sees the stored object's labels only.
        let hook = json!({"objectSelector": {"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}});
        assert!(!object_selector_matches(
            &hook,
            &Value::Null,
            Some(&json!({"metadata": {"labels": {"x": "1"}}}))
        ));
    }

    #[test]
    fn a_stored_null_object_selector_selects_everything() {
        let unlabelled = json!({"metadata": {"name": "w"}});
        for hook in [json!({"objectSelector": null}), json!({})] {
            assert!(object_selector_matches(&hook, &unlabelled, None), "{hook}");
        }
        let broken = json!({"objectSelector": "x"});
        assert!(!object_selector_matches(&broken, &unlabelled, None));
    }

    #[test]
    fn cache_ignores_older_revisions_and_keeps_deletes() {
        let mut c = Cache::default();
        c.apply("k", 5, Some(Arc::new(json!(1))));
        c.apply("k", 4, Some(Arc::new(json!(0))));
        assert_eq!(
            c.entries.get("k").and_then(|e| e.1.clone()).as_deref(),
            Some(&json!(1))
        );
        c.apply("k", 5, None);
        c.apply("k", 5, Some(Arc::new(json!(1))));
        assert!(c.entries.get("k").is_some_and(|e| e.1.is_none()));
        c.apply("k", 7, Some(Arc::new(json!(2))));
        assert!(c.entries.get("k").is_some_and(|e| e.1.is_some()));
    }
}
