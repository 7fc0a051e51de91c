//! ValidatingAdmissionPolicies: the policies and bindings in storage, compiled once per
//! version into a cache, matched against each write and evaluated with CEL
//! (`cel::admission`), as kube's `admission/plugin/policy/validating` does.
//!
//! - [`Policies`]: the cache. Writes through this server update it synchronously
//!   ([`Policies::written`], called from `ApiServer::after_write`); a storage watch
//!   ([`Policies::serve`]) feeds it writes made by other servers on the same etcd.
//! - [`Policies::validate`]: per write, after validating webhooks (kube's plugin order).
//!   For each policy matching the request (`matchConstraints`), each binding of it
//!   matching too (`matchResources`): params (`paramKind` + `paramRef`), then
//!   `matchConditions`, `validations` (with `messageExpression`, `reason`),
//!   `auditAnnotations`; failures act per `validationActions` (Deny → the request is
//!   rejected with kube's Status, Warn → a `Warning` header, Audit → an audit
//!   annotation and a log line) and errors per `failurePolicy`.
//!
//! `matchPolicy: Equivalent` (the default): a policy whose rules name another served
//! version of the custom resource matches, and its expressions see the objects
//! converted to that version (`admission::equivalent`), `request.kind`/`resource` of it
//! and `requestKind`/`requestResource` of the request. `authorizer` is declared in
//! validations, variables, matchConditions and auditAnnotations (not in
//! messageExpression, as kube). `status.typeChecking` is computed when a policy is
//! written (`typecheck.rs`).

use super::{AdmissionError, Attributes};
use crate::cel::admission::{
    self as cel_admission, Activation, AdmissionEnv, AuthzContext, Program, ReturnType, Variables,
    MAX_MESSAGE_EXPRESSION_SIZE, RUNTIME_COST_BUDGET,
};
use crate::cel::CompileError;
use crate::object;
use crate::object::{list_field, str_field};
use crate::selector::labels::from_label_selector_json;
use crate::status::{Cause, GroupResource, Status};
use crate::storage::{EventKind, ListOptions, Storage, WatchItem};
use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

/// The CEL admission kinds policies never apply to (kube's `admissionResources`).
const ADMISSION_RESOURCES: [&str; 4] = [
    "validatingadmissionpolicies",
    "validatingadmissionpolicybindings",
    "mutatingadmissionpolicies",
    "mutatingadmissionpolicybindings",
];

/// Where params (`paramKind` objects) are read from: the REST store, so custom
/// resources work.
pub trait ParamReader: Send + Sync {
    /// Whether `apiVersion`/`kind` names a served kind, and if it is namespaced.
    fn scope(&self, api_version: &str, kind: &str) -> Option<bool>;

    /// One object (`Ok(None)` when absent).
    fn get<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, AdmissionError>>;

    /// Every object of the kind in `namespace` (all when empty).
    fn list<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, AdmissionError>>;
}

/// Where the cache reads from.
pub struct PolicyStorage {
    /// The backend.
    pub storage: Arc<dyn Storage>,
    /// Key root of `validatingadmissionpolicies`.
    pub policies_root: String,
    /// Key root of `validatingadmissionpolicybindings`.
    pub bindings_root: String,
    /// Key root of `namespaces` (for `namespaceSelector` and `namespaceObject`).
    pub namespaces_root: String,
    /// Params.
    pub params: Arc<dyn ParamReader>,
}

/// A policy compiled once per stored version.
pub struct CompiledPolicy {
    /// The policy as stored.
    pub object: Value,
    failure_policy_ignore: bool,
    variables: Variables,
    match_conditions: Vec<(String, Result<Program, CompileError>)>,
    validations: Vec<CompiledValidation>,
    audit_annotations: Vec<(String, String, Result<Program, CompileError>)>,
}

struct CompiledValidation {
    expression: String,
    program: Result<Program, CompileError>,
    message: String,
    message_expression: Option<Result<Program, CompileError>>,
    reason: Option<String>,
}

impl CompiledPolicy {
    /// Compile every expression of a policy (errors are kept and reported at admission).
    pub fn compile(object: Value) -> CompiledPolicy {
        let spec = object.get("spec").cloned().unwrap_or(Value::Null);
        let has_params = spec.get("paramKind").is_some_and(|p| !p.is_null());
        let vars: Vec<(String, String)> = list_field(&spec, "variables")
            .iter()
            .map(|v| {
                (
                    str_field(v, "name").to_string(),
                    str_field(v, "expression").to_string(),
                )
            })
            .collect();
        let mut env = if vars.is_empty() {
            AdmissionEnv::new(has_params)
        } else {
            AdmissionEnv::with_variables(has_params)
        }
        .authorizer(true);
        let variables = Variables::compile(&mut env, &vars);
        // kube compiles match conditions without `variables`, messageExpression without
        // the authorizer.
        let plain = AdmissionEnv::new(has_params).authorizer(true);
        let message_env = env.clone().authorizer(false);
        let match_conditions = list_field(&spec, "matchConditions")
            .iter()
            .map(|m| {
                let expr = str_field(m, "expression");
                (
                    str_field(m, "name").to_string(),
                    cel_admission::compile(expr, &plain, ReturnType::Bool),
                )
            })
            .collect();
        let validations = list_field(&spec, "validations")
            .iter()
            .map(|v| {
                let expression = str_field(v, "expression").to_string();
                let me = str_field(v, "messageExpression");
                CompiledValidation {
                    program: cel_admission::compile(&expression, &env, ReturnType::Bool),
                    expression,
                    message: str_field(v, "message").to_string(),
                    message_expression: (!me.trim().is_empty())
                        .then(|| cel_admission::compile(me, &message_env, ReturnType::String)),
                    reason: v.get("reason").and_then(Value::as_str).map(str::to_string),
                }
            })
            .collect();
        let audit_annotations = list_field(&spec, "auditAnnotations")
            .iter()
            .map(|a| {
                let expr = str_field(a, "valueExpression").trim().to_string();
                let program = cel_admission::compile(&expr, &env, ReturnType::StringOrNull);
                (str_field(a, "key").to_string(), expr, program)
            })
            .collect();
        CompiledPolicy {
            failure_policy_ignore: str_field(&spec, "failurePolicy") == "Ignore",
            object,
            variables,
            match_conditions,
            validations,
            audit_annotations,
        }
    }

    fn name(&self) -> &str {
        object::name(&self.object)
    }

    fn spec(&self) -> &Value {
        self.object.get("spec").unwrap_or(&Value::Null)
    }
}

#[derive(Default)]
struct Cache {
    /// Name → (revision, policy; `None` once deleted).
    policies: BTreeMap<String, (i64, Option<Arc<CompiledPolicy>>)>,
    /// Name → (revision, binding; `None` once deleted).
    bindings: BTreeMap<String, (i64, Option<Arc<Value>>)>,
    source: Option<Arc<PolicyStorage>>,
}

/// The ValidatingAdmissionPolicies and bindings of one server (cheap to clone).
#[derive(Clone, Default)]
pub struct Policies {
    cache: Arc<RwLock<Cache>>,
}

/// Which of the two kinds an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyObject {
    /// `ValidatingAdmissionPolicy`.
    Policy,
    /// `ValidatingAdmissionPolicyBinding`.
    Binding,
}

impl Policies {
    /// Read policies from `source`: load them and follow the storage watch, in the
    /// background (storage may be down at start-up).
    pub fn serve(&self, source: PolicyStorage) {
        let source = Arc::new(source);
        if let Ok(mut c) = self.cache.write() {
            c.source = Some(source.clone());
        }
        tokio::spawn(follow(Arc::downgrade(&self.cache), source));
    }

    /// Load everything stored; the revision to watch from.
    async fn load(&self, source: &PolicyStorage) -> Result<i64, AdmissionError> {
        let mut revision = 0;
        for (which, root) in [
            (PolicyObject::Policy, &source.policies_root),
            (PolicyObject::Binding, &source.bindings_root),
        ] {
            let res = source
                .storage
                .list(&format!("{root}/"), &ListOptions::default())
                .await?;
            revision = revision.max(res.revision);
            for kv in &res.items {
                if let Ok(v) = crate::codec::decode_stored_json::<Value>(&kv.value) {
                    self.apply(which, name_of_key(&kv.key), kv.mod_revision, Some(v));
                }
            }
        }
        Ok(revision)
    }

    /// Keep the cache in step with a write through this server (synchronously, so the
    /// next request sees it). `obj` carries its `resourceVersion`.
    pub fn written(&self, which: PolicyObject, obj: &Value, deleted: bool) {
        let rev = object::resource_version(obj).ok().flatten().unwrap_or(0);
        let name = object::name(obj).to_string();
        self.apply(which, &name, rev, (!deleted).then(|| obj.clone()));
    }

    fn apply(&self, which: PolicyObject, name: &str, rev: i64, obj: Option<Value>) {
        let Ok(mut c) = self.cache.write() else {
            return;
        };
        match which {
            PolicyObject::Policy => {
                if c.policies.get(name).is_some_and(|(r, _)| *r > rev) {
                    return;
                }
                let compiled = obj.map(|o| Arc::new(CompiledPolicy::compile(o)));
                c.policies.insert(name.to_string(), (rev, compiled));
            }
            PolicyObject::Binding => {
                if c.bindings.get(name).is_some_and(|(r, _)| *r > rev) {
                    return;
                }
                c.bindings
                    .insert(name.to_string(), (rev, obj.map(Arc::new)));
            }
        }
    }

    /// The compiled policy `name`, if cached.
    pub fn policy(&self, name: &str) -> Option<Arc<CompiledPolicy>> {
        let c = self.cache.read().ok()?;
        c.policies.get(name).and_then(|(_, p)| p.clone())
    }

    /// Run every matching policy on a write; the first denial rejects it.
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
        cx: &super::MatchContext<'_>,
    ) -> Result<(), Status> {
        let (authz, versions, services) = (cx.authz, cx.versions, cx.services);
        let (pairs, source) = {
            let Ok(c) = self.cache.read() else {
                return Ok(());
            };
            let Some(source) = c.source.clone() else {
                return Ok(());
            };
            let mut pairs: Vec<(Arc<CompiledPolicy>, Vec<Arc<Value>>)> = Vec::new();
            for (_, p) in c.policies.values() {
                let Some(p) = p else { continue };
                let bindings: Vec<Arc<Value>> = c
                    .bindings
                    .values()
                    .filter_map(|(_, b)| b.clone())
                    .filter(|b| str_field(spec_of(b), "policyName") == p.name())
                    .collect();
                if !bindings.is_empty() {
                    pairs.push((p.clone(), bindings));
                }
            }
            (pairs, source)
        };
        // kube excludes the admission policy kinds themselves (no circular dependency).
        let gr = &attrs.descriptor.gr;
        if pairs.is_empty()
            || (gr.group == ADMISSION_GROUP && ADMISSION_RESOURCES.contains(&gr.resource.as_str()))
        {
            return Ok(());
        }
        let input = Input::new(attrs, obj, old);
        let namespace = match input.namespace_name() {
            Some(ns) => read_namespace(&source, ns).await,
            None => None,
        };
        let equivalents = versions.equivalents(attrs);
        let mut denials: Vec<Denial> = Vec::new();
        for (policy, bindings) in &pairs {
            let constraints = policy
                .spec()
                .get("matchConstraints")
                .unwrap_or(&Value::Null);
            let Some(version) =
                input.matched_version(constraints, namespace.as_ref(), &equivalents)
            else {
                continue;
            };
            // Matched in another version: expressions see the objects converted to it
            // (kube's versioned attributes).
            let converted;
            let view;
            let versioned;
            let evaluated: &Input<'_> = match &version {
                None => &input,
                Some(v) => {
                    let d = super::equivalent::Versions::descriptor(attrs, v);
                    let o = versions.convert(attrs, obj, v, services).await?;
                    let old_v = match old {
                        Some(x) => Some(versions.convert(attrs, x, v, services).await?),
                        None => None,
                    };
                    converted = (d, o, old_v);
                    view = attrs.as_version(&converted.0);
                    versioned = Input::new(&view, &converted.1, converted.2.as_ref());
                    &versioned
                }
            };
            // kube's policy-level configuration error: a paramKind no server kind has.
            if let Some(pk) = policy.spec().get("paramKind").filter(|p| !p.is_null()) {
                let (api_version, kind) = (str_field(pk, "apiVersion"), str_field(pk, "kind"));
                if source.params.scope(api_version, kind).is_none() {
                    if !policy.failure_policy_ignore {
                        let gv = if api_version.contains('/') {
                            api_version.to_string()
                        } else {
                            format!("/{api_version}")
                        };
                        denials.push(Denial {
                            policy: policy.name().to_string(),
                            binding: None,
                            message: format!("failed to configure policy: failed to find resource referenced by paramKind: '{gv}, Kind={kind}'"),
                            reason: None,
                        });
                    }
                    continue;
                }
            }
            let mut audit = AuditCollector::default();
            for binding in bindings {
                let bname = object::name(binding);
                if let Some(mr) = spec_of(binding)
                    .get("matchResources")
                    .filter(|m| !m.is_null())
                {
                    if !input.matches(mr, namespace.as_ref(), &equivalents) {
                        continue;
                    }
                }
                let params = match collect_params(&source, policy, binding, &input).await {
                    Ok(p) => p,
                    Err(e) => {
                        if !policy.failure_policy_ignore {
                            denials.push(Denial {
                                policy: policy.name().to_string(),
                                binding: Some(bname.to_string()),
                                message: format!("failed to configure binding: {e}"),
                                reason: None,
                            });
                        }
                        continue;
                    }
                };
                let actions: Vec<String> = list_field(spec_of(binding), "validationActions")
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect();
                for param in &params {
                    let result = evaluate(
                        policy,
                        evaluated,
                        param.as_ref(),
                        namespace.as_ref(),
                        authz.map(super::LazyAuthz::get),
                    );
                    for (i, d) in result.decisions.iter().enumerate() {
                        if !d.deny {
                            continue;
                        }
                        for action in &actions {
                            match action.as_str() {
                                "Deny" => denials.push(Denial {
                                    policy: policy.name().to_string(),
                                    binding: Some(bname.to_string()),
                                    message: d.message.clone(),
                                    reason: d.reason.clone(),
                                }),
                                "Warn" => warnings.push(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{bname}': {}",
                                    policy.name(),
                                    d.message
                                )),
                                "Audit" => {
                                    let value = json!([{
                                        "message": d.message,
                                        "policy": policy.name(),
                                        "binding": bname,
                                        "expressionIndex": i,
                                        "validationActions": actions,
                                    }]);
                                    let _ = attrs.audit.add(
                                        "validation.policy.admission.k8s.io/validation_failure",
                                        &value.to_string(),
                                    );
                                    tracing::info!(
                                        policy = policy.name(),
                                        binding = bname,
                                        message = %d.message,
                                        "ValidatingAdmissionPolicy audit: validation failed"
                                    );
                                }
                                _ => {}
                            }
                        }
                    }
                    for a in result.audit_annotations {
                        match a {
                            Ok((key, value)) => audit.add(key, value),
                            Err(message) => denials.push(Denial {
                                policy: policy.name().to_string(),
                                binding: Some(bname.to_string()),
                                message,
                                reason: None,
                            }),
                        }
                    }
                }
            }
            audit.publish(policy.name(), attrs);
        }
        match denials.into_iter().next() {
            Some(d) => Err(d.status(&input)),
            None => Ok(()),
        }
    }
}

/// Follow policy and binding writes in storage (made here or by another server).
async fn follow(cache: std::sync::Weak<RwLock<Cache>>, source: Arc<PolicyStorage>) {
    let mut rev = loop {
        let Some(c) = cache.upgrade() else { return };
        match (Policies { cache: c }).load(&source).await {
            Ok(r) => break r,
            Err(_) => tokio::time::sleep(std::time::Duration::from_secs(1)).await,
        }
    };
    let policies_prefix = format!("{}/", source.policies_root);
    let bindings_prefix = format!("{}/", source.bindings_root);
    // One watch on the common prefix of both roots (`/registry/validatingadmissionpolic`).
    let common = common_prefix(&policies_prefix, &bindings_prefix);
    loop {
        if cache.strong_count() == 0 {
            return;
        }
        let mut stream = match source.storage.watch(&common, rev).await {
            Ok(s) => s,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                if let Some(c) = cache.upgrade() {
                    if let Ok(r) = (Policies { cache: c }).load(&source).await {
                        rev = r;
                    }
                }
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            let Some(c) = cache.upgrade() else { return };
            let policies = Policies { cache: c };
            match item {
                Ok(WatchItem::Event(ev)) => {
                    rev = rev.max(ev.kv.mod_revision);
                    let which = if ev.kv.key.starts_with(&policies_prefix) {
                        PolicyObject::Policy
                    } else if ev.kv.key.starts_with(&bindings_prefix) {
                        PolicyObject::Binding
                    } else {
                        continue;
                    };
                    let name = name_of_key(&ev.kv.key);
                    match ev.kind {
                        EventKind::Delete => policies.apply(which, name, ev.kv.mod_revision, None),
                        _ => {
                            if let Ok(v) = crate::codec::decode_stored_json::<Value>(&ev.kv.value) {
                                policies.apply(which, name, ev.kv.mod_revision, Some(v));
                            }
                        }
                    }
                }
                Ok(WatchItem::Progress(r)) => rev = rev.max(r),
                Err(_) => {
                    if let Ok(r) = policies.load(&source).await {
                        rev = r;
                    }
                    break;
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn common_prefix(a: &str, b: &str) -> String {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut n = n;
    while !a.is_char_boundary(n) {
        n -= 1;
    }
    a[..n].to_string()
}

fn name_of_key(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or("")
}

/// One write as policies see it.
struct Input<'a> {
    attrs: &'a Attributes<'a>,
    obj: Option<&'a Value>,
    old: Option<&'a Value>,
    request: Value,
}

impl<'a> Input<'a> {
    fn new(attrs: &'a Attributes<'a>, obj: &'a Value, old: Option<&'a Value>) -> Self {
        let obj = (!obj.is_null()).then_some(obj);
        Input {
            request: admission_request(attrs, obj.unwrap_or(&Value::Null), old),
            attrs,
            obj,
            old,
        }
    }

    fn name(&self) -> &str {
        self.attrs.name(self.obj.unwrap_or(&Value::Null), self.old)
    }

    fn namespace(&self) -> &str {
        self.attrs
            .namespace(self.obj.unwrap_or(&Value::Null), self.old)
    }

    /// The namespace whose object is `namespaceObject` (none for cluster-scoped kinds
    /// and for Namespaces themselves).
    fn namespace_name(&self) -> Option<&str> {
        let d = self.attrs.descriptor;
        if d.gr.group.is_empty() && d.gr.resource == "namespaces" {
            return None;
        }
        Some(self.namespace()).filter(|ns| d.namespaced && !ns.is_empty())
    }

    /// kube's `matching.Matcher.Matches` for a policy's `matchConstraints` or a
    /// binding's `matchResources`.
    fn matches(&self, mr: &Value, namespace: Option<&Value>, equivalents: &[String]) -> bool {
        self.matched_version(mr, namespace, equivalents).is_some()
    }

    /// Which version matched: `Some(None)` the request's own, `Some(Some(v))` the
    /// equivalent version `v` (`matchPolicy: Equivalent`, the default), `None` none.
    fn matched_version(
        &self,
        mr: &Value,
        namespace: Option<&Value>,
        equivalents: &[String],
    ) -> Option<Option<String>> {
        if !self.namespace_selector_matches(mr, namespace) || !self.object_selector_matches(mr) {
            return None;
        }
        let own = self.attrs.descriptor.version.as_str();
        let others: &[String] = if str_field(mr, "matchPolicy") != "Exact" {
            equivalents
        } else {
            &[]
        };
        let excludes = list_field(mr, "excludeResourceRules");
        if self.rules_match(excludes, own) || others.iter().any(|v| self.rules_match(excludes, v)) {
            return None;
        }
        let rules = list_field(mr, "resourceRules");
        if rules.is_empty() || self.rules_match(rules, own) {
            return Some(None);
        }
        others
            .iter()
            .find(|v| self.rules_match(rules, v))
            .map(|v| Some(v.clone()))
    }

    fn namespace_selector_matches(&self, mr: &Value, namespace: Option<&Value>) -> bool {
        let Some(selector) = super::selector_field(mr, "namespaceSelector") else {
            return false;
        };
        if selector.is_empty() {
            return true;
        }
        let d = self.attrs.descriptor;
        if d.gr.group.is_empty() && d.gr.resource == "namespaces" {
            let subject = self.obj.or(self.old).unwrap_or(&Value::Null);
            return selector.matches(&object::labels(subject));
        }
        if !d.namespaced {
            return true;
        }
        let labels = namespace.map(object::labels).unwrap_or_default();
        selector.matches(&labels)
    }

    fn object_selector_matches(&self, mr: &Value) -> bool {
        let Some(selector) = super::selector_field(mr, "objectSelector") else {
            return false;
        };
        selector.is_empty()
            || self
                .obj
                .is_some_and(|o| selector.matches(&object::labels(o)))
            || self
                .old
                .is_some_and(|o| selector.matches(&object::labels(o)))
    }

    fn rules_match(&self, rules: &[Value], version: &str) -> bool {
        let d = self.attrs.descriptor;
        let op = self.attrs.operation_name();
        let name = self.name();
        rules.iter().any(|rule| {
            let list = |k: &str| -> Vec<&str> {
                list_field(rule, k)
                    .iter()
                    .filter_map(Value::as_str)
                    .collect()
            };
            let has = |k: &str, v: &str| list(k).iter().any(|x| *x == "*" || *x == v);
            let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
                "Cluster" => !d.namespaced,
                "Namespaced" => d.namespaced,
                _ => true,
            };
            let version_ok = has("apiVersions", version);
            let names = list("resourceNames");
            has("operations", op)
                && has("apiGroups", &d.gr.group)
                && version_ok
                && scope_ok
                && list("resources").iter().any(|r| {
                    super::resource_matches(r, &d.gr.resource, &self.attrs.opts.subresource)
                })
                && (names.is_empty() || names.contains(&name))
        })
    }
}

/// kube's AdmissionRequest as the CEL variable `request` sees it.
pub fn admission_request(attrs: &Attributes<'_>, obj: &Value, old: Option<&Value>) -> Value {
    attrs.request("", obj, old)
}

/// kube's `CreateNamespaceObject`: the namespace with the metadata fields kube keeps.
fn namespace_object(ns: &Value) -> Value {
    let mut meta = Map::new();
    if let Some(m) = ns.get("metadata").and_then(Value::as_object) {
        for k in [
            "name",
            "generateName",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "labels",
            "annotations",
            "finalizers",
        ] {
            if let Some(v) = m.get(k) {
                meta.insert(k.to_string(), v.clone());
            }
        }
    }
    let mut out = Map::new();
    out.insert("metadata".into(), Value::Object(meta));
    for k in ["spec", "status"] {
        if let Some(v) = ns.get(k) {
            out.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(out)
}

async fn read_namespace(source: &PolicyStorage, name: &str) -> Option<Value> {
    let key = format!("{}/{name}", source.namespaces_root);
    match source.storage.get(&key).await {
        Ok(Some(kv)) => {
            let mut v: Value = crate::codec::decode_stored_json(&kv.value).ok()?;
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("resourceVersion".into(), json!(kv.mod_revision.to_string()));
            }
            Some(namespace_object(&v))
        }
        _ => None,
    }
}

/// kube's `CollectParams`: `[None]` without params, the objects found otherwise.
async fn collect_params(
    source: &PolicyStorage,
    policy: &CompiledPolicy,
    binding: &Value,
    input: &Input<'_>,
) -> Result<Vec<Option<Value>>, AdmissionError> {
    let Some(pk) = policy.spec().get("paramKind").filter(|p| !p.is_null()) else {
        return Ok(vec![None]);
    };
    let Some(pr) = spec_of(binding).get("paramRef").filter(|p| !p.is_null()) else {
        return Ok(vec![None]);
    };
    let (api_version, kind) = (str_field(pk, "apiVersion"), str_field(pk, "kind"));
    let Some(namespaced) = source.params.scope(api_version, kind) else {
        return Err(AdmissionError::ParamKindUnknown {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
    };
    let ref_ns = str_field(pr, "namespace");
    let ns = if namespaced {
        if !ref_ns.is_empty() {
            ref_ns.to_string()
        } else if input.namespace().is_empty() {
            return Err(AdmissionError::NamespacedParamRef);
        } else {
            input.namespace().to_string()
        }
    } else if !ref_ns.is_empty() {
        return Err(AdmissionError::ParamRefNamespace);
    } else {
        String::new()
    };
    let name = str_field(pr, "name");
    let sel = pr.get("selector").filter(|s| !s.is_null());
    let params: Vec<Value> = if !name.is_empty() {
        if sel.is_some() {
            return Err(AdmissionError::ParamRefNameAndSelector);
        }
        source
            .params
            .get(api_version, kind, &ns, name)
            .await?
            .into_iter()
            .collect()
    } else if let Some(sel) = sel {
        let selector = from_label_selector_json(sel).map_err(AdmissionError::ParamRefSelector)?;
        source
            .params
            .list(api_version, kind, &ns)
            .await?
            .into_iter()
            .filter(|p| selector.matches(&object::labels(p)))
            .collect()
    } else {
        return Err(AdmissionError::ParamRefNoNameOrSelector);
    };
    if params.is_empty() && str_field(pr, "parameterNotFoundAction") == "Deny" {
        return Err(AdmissionError::NoParams);
    }
    Ok(params.into_iter().map(Some).collect())
}

/// One validation's outcome.
struct Decision {
    deny: bool,
    message: String,
    reason: Option<String>,
}

struct Evaluated {
    decisions: Vec<Decision>,
    /// Published `(key, value)` or an error that denies (failurePolicy Fail).
    audit_annotations: Vec<Result<(String, String), String>>,
}

/// kube's `validator.Validate` for one (policy, binding, param).
fn evaluate(
    policy: &CompiledPolicy,
    input: &Input<'_>,
    param: Option<&Value>,
    namespace: Option<&Value>,
    authz: Option<&AuthzContext>,
) -> Evaluated {
    let fail = !policy.failure_policy_ignore;
    let error = |message: String| Evaluated {
        decisions: vec![Decision {
            deny: fail,
            message,
            reason: None,
        }],
        audit_annotations: Vec::new(),
    };
    let act = Activation::new(&input.request)
        .object(input.obj)
        .old_object(input.old)
        .params(param)
        .namespace_object(namespace)
        .authorizer(authz)
        .variables(&policy.variables);
    // matchConditions (kube's matcher): any false skips the policy; otherwise errors
    // follow failurePolicy, aggregated.
    let mut budget = RUNTIME_COST_BUDGET;
    let mut match_errors = Vec::new();
    for (_, program) in &policy.match_conditions {
        match program {
            Err(e) => match_errors.push(format!("compilation error: {e}")),
            Ok(p) => {
                let r = p.eval_bool(&act);
                match r.result {
                    Ok(true) => {}
                    Ok(false) => {
                        return Evaluated {
                            decisions: Vec::new(),
                            audit_annotations: Vec::new(),
                        }
                    }
                    Err(e) => match_errors
                        .push(format!("expression '{}' resulted in error: {e}", p.source)),
                }
            }
        }
    }
    match match_errors.len() {
        0 => {}
        1 => return error(match_errors.remove(0)),
        _ => return error(format!("[{}]", match_errors.join(", "))),
    }
    let mut decisions = Vec::new();
    let budget_message =
        "validation failed due to running out of cost budget, no further validation rules will be run";
    for v in &policy.validations {
        let d = match &v.program {
            Err(e) => Decision {
                deny: fail,
                message: format!("compilation error: {e}"),
                reason: None,
            },
            Ok(p) => {
                let r = p.eval_bool(&act);
                budget -= r.cost as i64;
                if budget < 0 {
                    return error(budget_message.to_string());
                }
                match r.result {
                    Err(e) => Decision {
                        deny: fail,
                        message: format!("expression '{}' resulted in error: {e}", p.source),
                        reason: None,
                    },
                    Ok(true) => Decision {
                        deny: false,
                        message: String::new(),
                        reason: None,
                    },
                    Ok(false) => {
                        let mut message = String::new();
                        if let Some(Ok(me)) = &v.message_expression {
                            let (r, cost) = me.eval_json(&act);
                            budget -= cost as i64;
                            if budget < 0 {
                                return error(format!(
                                    "failed messageExpression: {budget_message}"
                                ));
                            }
                            if let Ok(Value::String(s)) = r {
                                let s = s.trim();
                                if s.len() <= MAX_MESSAGE_EXPRESSION_SIZE && !s.contains('\n') {
                                    message = s.to_string();
                                }
                            }
                        }
                        if message.is_empty() {
                            message = v.message.trim().to_string();
                        }
                        if message.is_empty() {
                            message = format!("failed expression: {}", v.expression.trim());
                        }
                        Decision {
                            deny: true,
                            message,
                            reason: Some(v.reason.clone().unwrap_or_else(|| "Invalid".into())),
                        }
                    }
                }
            }
        };
        decisions.push(d);
    }
    let mut audit_annotations = Vec::new();
    let mut abudget = RUNTIME_COST_BUDGET;
    for (key, expr, program) in &policy.audit_annotations {
        let r = match program {
            Err(e) => Err(format!("compilation error: {e}")),
            Ok(p) => {
                let (r, cost) = p.eval_json(&act);
                abudget -= cost as i64;
                if abudget < 0 {
                    return error(budget_message.to_string());
                }
                match r {
                    Ok(Value::String(s)) => {
                        let s = s.trim();
                        if s.is_empty() {
                            continue;
                        }
                        Ok((key.clone(), s.to_string()))
                    }
                    Ok(Value::Null) => continue,
                    Ok(other) => Err(format!(
                        "valueExpression '{expr}' resulted in unsupported return type: {}. Return type must be either string or null.",
                        json_cel_type(&other)
                    )),
                    Err(e) => Err(format!("expression '{expr}' resulted in error: {e}")),
                }
            }
        };
        match r {
            Ok(kv) => audit_annotations.push(Ok(kv)),
            Err(e) if fail => audit_annotations.push(Err(e)),
            Err(_) => {}
        }
    }
    Evaluated {
        decisions,
        audit_annotations,
    }
}

fn json_cel_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int",
        Value::Number(_) => "double",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
        Value::String(_) => "string",
        Value::Null => "null_type",
    }
}

/// Audit annotations of one policy: values per key, published as
/// `<policy>/<key>` (several values joined with `, `).
#[derive(Default)]
struct AuditCollector(BTreeMap<String, Vec<String>>);

impl AuditCollector {
    fn add(&mut self, key: String, mut value: String) {
        if value.len() > 10 * 1024 {
            let mut end = 10 * 1024;
            while !value.is_char_boundary(end) {
                end -= 1;
            }
            value.truncate(end);
        }
        let values = self.0.entry(key).or_default();
        if !values.contains(&value) {
            values.push(value);
        }
    }

    fn publish(self, policy: &str, attrs: &Attributes<'_>) {
        for (key, values) in self.0 {
            let value = values.join(", ");
            let full = format!("{policy}/{key}");
            tracing::info!(annotation = %full, value = %value, "ValidatingAdmissionPolicy audit annotation");
            let _ = attrs.audit.add(&full, &value);
        }
    }
}

struct Denial {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: Option<String>,
}

impl Denial {
    /// kube's rejection: `admission.NewForbidden` with the reason (and code) of the
    /// failed validation, and the message as a cause.
    fn status(&self, input: &Input<'_>) -> Status {
        let message = match &self.binding {
            Some(b) => format!(
                "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
                self.policy, self.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{}' denied request: {}",
                self.policy, self.message
            ),
        };
        let d = input.attrs.descriptor;
        let gr = GroupResource::new(&d.gr.group, &d.gr.resource);
        let mut name = input.name().to_string();
        if name.is_empty() {
            let subject = input.obj.unwrap_or(&Value::Null);
            name = object::name(subject).to_string();
            if name.is_empty() {
                name = subject
                    .pointer("/metadata/generateName")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
            }
            if name.is_empty() {
                name = "Unknown".into();
            }
        }
        let reason = self.reason.clone().unwrap_or_else(|| "Invalid".into());
        let code = match reason.as_str() {
            "Forbidden" => 403,
            "Unauthorized" => 401,
            "RequestEntityTooLarge" => 413,
            _ => 422,
        };
        let mut s = Status::forbidden(&gr, &name, &message);
        s.code = code;
        s.reason = reason;
        let details = s.details.get_or_insert_with(Default::default);
        details.causes.push(Cause {
            reason: String::new(),
            message,
            field: String::new(),
        });
        s
    }
}

fn spec_of(v: &Value) -> &Value {
    v.get("spec").unwrap_or(&Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::{Operation, WriteOptions};

    use crate::admission::widgets_descriptor as widgets;

    fn policy(spec: Value) -> CompiledPolicy {
        CompiledPolicy::compile(json!({"metadata": {"name": "p"}, "spec": spec}))
    }

    fn rule(resources: &[&str], names: &[&str]) -> Value {
        json!({"apiGroups": ["example.com"], "apiVersions": ["v2"], "operations": ["CREATE"],
            "resources": resources, "resourceNames": names})
    }

    #[test]
    fn resource_rules_match_names_exclusions_and_equivalent_versions() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj = json!({"metadata": {"name": "w1", "namespace": "default"}});
        let input = Input::new(&attrs, &obj, None);
        let v2 = ["v2".to_string()];
        let mr = json!({"resourceRules": [rule(&["widgets"], &[])]});
        // The request is for v1; the rule names v2, an equivalent version.
        assert!(!input.matches(&mr, None, &[]), "no other version served");
        assert_eq!(
            input.matched_version(&mr, None, &v2),
            Some(Some("v2".to_string()))
        );
        let exact = json!({"matchPolicy": "Exact", "resourceRules": [rule(&["widgets"], &[])]});
        assert!(!input.matches(&exact, None, &v2));
        let own = json!({"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"],
            "operations": ["*"], "resources": ["*"]}]});
        assert_eq!(input.matched_version(&own, None, &v2), Some(None));
        let named = json!({"resourceRules": [rule(&["widgets"], &["w2"])]});
        assert!(!input.matches(&named, None, &v2));
        let excluded = json!({"resourceRules": [rule(&["*"], &[])],
            "excludeResourceRules": [rule(&["widgets"], &["w1"])]});
        assert!(!input.matches(&excluded, None, &v2));
        let status_only = json!({"resourceRules": [rule(&["widgets/status"], &[])]});
        assert!(!input.matches(&status_only, None, &v2));
        let ns_sel = json!({"namespaceSelector": {"matchLabels": {"env": "prod"}},
            "resourceRules": [rule(&["widgets"], &[])]});
        assert!(!input.matches(&ns_sel, None, &v2));
        let prod = json!({"metadata": {"name": "default", "labels": {"env": "prod"}}});
        assert!(input.matches(&ns_sel, Some(&prod), &v2));
    }

    #[test]
    fn failed_validation_messages_fall_back_as_kube() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj =
            json!({"metadata": {"name": "w1", "namespace": "default"}, "spec": {"replicas": 9}});
        let input = Input::new(&attrs, &obj, None);
        let p = policy(json!({"validations": [
            {"expression": "object.spec.replicas <= 5"},
            {"expression": "object.spec.replicas <= 5", "message": " too many "},
            {"expression": "object.spec.replicas <= 5", "message": "m",
             "messageExpression": "'got ' + string(object.spec.replicas)", "reason": "Forbidden"},
            {"expression": "object.spec.replicas <= 5", "message": "fallback",
             "messageExpression": "object.spec.nope"},
            {"expression": "object.spec.nope == 1"},
            {"expression": "object.spec.nope"},
            {"expression": "true"},
        ]}));
        let out = evaluate(&p, &input, None, None, None);
        let got: Vec<(bool, &str, Option<&str>)> = out
            .decisions
            .iter()
            .map(|d| (d.deny, d.message.as_str(), d.reason.as_deref()))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    true,
                    "failed expression: object.spec.replicas <= 5",
                    Some("Invalid")
                ),
                (true, "too many", Some("Invalid")),
                (true, "got 9", Some("Forbidden")),
                (true, "fallback", Some("Invalid")),
                (
                    true,
                    "expression 'object.spec.nope == 1' resulted in error: no such key: nope",
                    None
                ),
                (
                    true,
                    "compilation error: must evaluate to bool but got dyn",
                    None
                ),
                (false, "", None),
            ]
        );
    }

    #[test]
    fn match_conditions_skip_or_fail_the_policy() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj = json!({"metadata": {"name": "w1", "namespace": "default"}, "spec": {}});
        let input = Input::new(&attrs, &obj, None);
        let skip = policy(json!({
            "matchConditions": [{"name": "a", "expression": "object.spec.x == 1"},
                                {"name": "b", "expression": "false"}],
            "validations": [{"expression": "false"}]}));
        assert!(evaluate(&skip, &input, None, None, None)
            .decisions
            .is_empty());
        let fail = policy(json!({
            "matchConditions": [{"name": "a", "expression": "object.spec.x == 1"}],
            "validations": [{"expression": "false"}]}));
        let out = evaluate(&fail, &input, None, None, None);
        assert_eq!(out.decisions.len(), 1);
        assert!(out.decisions[0].deny);
        assert_eq!(
            out.decisions[0].message,
            "expression 'object.spec.x == 1' resulted in error: no such key: x"
        );
    }

    #[test]
    fn audit_annotations_publish_strings_and_skip_null() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj =
            json!({"metadata": {"name": "w1", "namespace": "default"}, "spec": {"replicas": 2}});
        let input = Input::new(&attrs, &obj, None);
        let p = policy(json!({"auditAnnotations": [
            {"key": "replicas", "valueExpression": "'r=' + string(object.spec.replicas)"},
            {"key": "none", "valueExpression": "null"},
        ]}));
        let out = evaluate(&p, &input, None, None, None);
        assert_eq!(
            out.audit_annotations,
            vec![Ok(("replicas".to_string(), "r=2".to_string()))]
        );
    }

    #[test]
    fn denial_status_uses_the_validation_reason_and_code() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj = json!({"metadata": {"generateName": "w-", "namespace": "default"}});
        let input = Input::new(&attrs, &obj, None);
        let denial = Denial {
            policy: "p".into(),
            binding: Some("b".into()),
            message: "no".into(),
            reason: Some("RequestEntityTooLarge".into()),
        };
        let s = denial.status(&input);
        assert_eq!(s.code, 413);
        assert_eq!(s.reason, "RequestEntityTooLarge");
        assert_eq!(
            s.message,
            "widgets.example.com \"w-\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"
        );
    }

    #[test]
    fn cache_keeps_the_newest_revision_and_tombstones() {
        let p = Policies::default();
        let v = |rv: &str, n: i64| {
            json!({"metadata": {"name": "p", "resourceVersion": rv},
                "spec": {"validations": vec![json!({"expression": "true"}); n as usize]}})
        };
        p.written(PolicyObject::Policy, &v("5", 2), false);
        // A stale watch event (older revision) does not undo the write.
        p.apply(PolicyObject::Policy, "p", 4, Some(v("4", 1)));
        assert_eq!(p.policy("p").map(|c| c.validations.len()), Some(2));
        p.written(PolicyObject::Policy, &v("6", 2), true);
        p.apply(PolicyObject::Policy, "p", 5, Some(v("5", 2)));
        assert!(p.policy("p").is_none(), "a deletion is not resurrected");
    }

    #[test]
    fn common_prefix_of_the_two_roots() {
        assert_eq!(
            common_prefix(
                "/registry/validatingadmissionpolicies/",
                "/registry/validatingadmissionpolicybindings/"
            ),
            "/registry/validatingadmissionpolic"
        );
    }
}
