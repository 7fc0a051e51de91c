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
//!
//! Deletes are admitted too (kube's `deleteValidation`): operation `DELETE`, no
//! `object`, the stored object as `oldObject`, the `DeleteOptions` as `options`.
//! Audit annotations that hooks return are kept on the request's [`Attributes`] and
//! logged (this server has no audit log).

pub mod equivalent;
mod error;
pub mod followed;
pub mod match_conditions;
pub mod plugins;
pub mod policy;
pub mod typecheck;
pub mod webhook;

use crate::auth::authz::Authorizer;
use crate::cel::admission::AuthzContext;
use crate::pipeline::order::Mutated;
use crate::status::Status;
use crate::write::{DeleteOptions, Descriptor, Operation, WriteOptions};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};

pub use error::AdmissionError;

/// What a hook is told about one write (the fields of kube's `AdmissionRequest`).
#[derive(Clone, Debug)]
pub struct AdmissionRequest {
    /// A unique id of this admission call.
    pub uid: String,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: Operation,
    /// API group of the resource (empty for core).
    pub group: String,
    /// Version of the endpoint written.
    pub version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource written (`""`, `status`, `scale`).
    pub subresource: String,
    /// `Kind` of `object` (`Scale` on a `/scale` write).
    pub kind: String,
    /// API group of that kind (`autoscaling` for a Scale; else the resource's).
    pub kind_group: String,
    /// Version of that kind.
    pub kind_version: String,
    /// Object name (empty on a create with `generateName`: the name is generated
    /// later; empty for the objects of a deletecollection, as kube).
    pub name: String,
    /// Namespace (empty for cluster-scoped kinds).
    pub namespace: String,
    /// The object being written (`null` on a delete).
    pub object: Value,
    /// The stored object (updates and deletes).
    pub old_object: Option<Value>,
    /// `dryRun=All`: the hook must have no side effects.
    pub dry_run: bool,
    /// The request's options as kube sends them (`CreateOptions`, `UpdateOptions`,
    /// `PatchOptions` or `DeleteOptions`, with `kind` and `apiVersion`).
    pub options: Value,
    /// Who asks (the authenticated user of the request).
    pub user: std::sync::Arc<crate::auth::UserInfo>,
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
    /// Audit annotations; each key is recorded as `<hook name>/<key>` and must then
    /// be a qualified name (invalid ones are logged and dropped, as kube).
    pub audit_annotations: BTreeMap<String, String>,
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
            audit_annotations: BTreeMap::new(),
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

    /// Add an audit annotation (recorded as `<hook name>/<key>`).
    pub fn with_audit_annotation(
        mut self,
        key: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        self.audit_annotations.insert(key.into(), value.into());
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
    services: crate::webhook::client::ServiceResolver,
    /// The server's authorizer, for the CEL `authorizer` variable.
    authorizer: Arc<RwLock<Option<Arc<dyn Authorizer>>>>,
    /// Other versions of custom resources (`matchPolicy: Equivalent`).
    versions: equivalent::Versions,
    /// ValidatingAdmissionPolicies, run after the validating webhooks (kube's order).
    pub policies: policy::Policies,
    /// kube's built-in plugins (ServiceAccount, Priority, ...), run before the
    /// webhooks; which plugins are on, webhooks and policies included.
    builtin: Arc<RwLock<Option<Arc<plugins::Builtin>>>>,
}

/// What matching and CEL need besides the request: the `authorizer`, the resource's
/// other versions (`matchPolicy: Equivalent`) and the Service resolver conversion
/// webhooks are reached through.
pub struct MatchContext<'c> {
    /// `authorizer` of CEL expressions.
    pub authz: Option<&'c LazyAuthz<'c>>,
    /// Other served versions of custom resources.
    pub versions: &'c equivalent::Versions,
    /// Service → address map.
    pub services: &'c crate::webhook::client::ServiceResolver,
}

/// A request's `authorizer` for CEL expressions, made on first use: most writes
/// match no webhook or policy whose expressions ask for it.
pub struct LazyAuthz<'a> {
    admission: &'a Admission,
    attrs: &'a Attributes<'a>,
    obj: &'a Value,
    old: Option<&'a Value>,
    made: std::sync::OnceLock<AuthzContext>,
}

impl LazyAuthz<'_> {
    /// The authorizer, made now if no expression asked before.
    pub fn get(&self) -> &AuthzContext {
        self.made.get_or_init(|| {
            self.admission
                .make_authz_context(self.attrs, self.obj, self.old)
        })
    }
}

/// Which write is being admitted: the endpoint, the request's options, and the audit
/// annotations hooks add while it is admitted.
pub struct Attributes<'a> {
    /// The kind written.
    pub descriptor: &'a Descriptor,
    /// Create, update or delete.
    pub operation: Operation,
    /// The request's options (subresource, dryRun).
    pub opts: &'a WriteOptions,
    /// Deletes: the request's `DeleteOptions`.
    pub delete: Option<&'a DeleteOptions>,
    /// Audit annotations added by the hooks so far.
    pub audit: AuditAnnotations,
    /// For a hook matched through `matchPolicy: Equivalent`: the endpoint the request
    /// addressed (`requestKind`, `requestResource`), while `descriptor` is the matched
    /// version (`kind`, `resource`). `None`: the descriptor is the one addressed.
    pub requested: Option<&'a Descriptor>,
    /// The kind hooks see when it is not the resource's (a `/scale` write: kube admits
    /// the autoscaling/v1 Scale, not the parent).
    pub object_kind: Option<ObjectKind>,
}

/// A group, version and kind.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjectKind {
    /// API group (`""`: core).
    pub group: String,
    /// Version.
    pub version: String,
    /// `Kind`.
    pub kind: String,
}

/// What admission is shown of an object written through a subresource with a kind of
/// its own (kube's `/scale`: hooks see an autoscaling/v1 Scale of the parent, and
/// what a mutating hook changes in it is written back into the parent).
pub trait SubresourceView: Send + Sync {
    /// The kind of the view.
    fn kind(&self) -> ObjectKind;
    /// The view of `parent`.
    fn view(&self, parent: &Value) -> Result<Value, Status>;
    /// `parent` with what `view` holds.
    fn merge(&self, parent: &Value, view: &Value) -> Result<Value, Status>;
}

impl<'a> Attributes<'a> {
    /// A create or an update.
    pub fn new(descriptor: &'a Descriptor, operation: Operation, opts: &'a WriteOptions) -> Self {
        Attributes {
            descriptor,
            operation,
            opts,
            delete: None,
            audit: AuditAnnotations::default(),
            requested: None,
            object_kind: None,
        }
    }

    /// The same request as seen by a hook matched in another version of the resource:
    /// `descriptor` is that version's; audit annotations are shared.
    pub fn as_version<'b>(&'b self, descriptor: &'b Descriptor) -> Attributes<'b> {
        Attributes {
            descriptor,
            operation: self.operation,
            opts: self.opts,
            delete: self.delete,
            audit: self.audit.clone(),
            requested: Some(self.requested()),
            object_kind: self.object_kind.clone(),
        }
    }

    /// The group, version and kind of the objects hooks see.
    pub fn kind(&self) -> ObjectKind {
        self.object_kind.clone().unwrap_or_else(|| ObjectKind {
            group: self.descriptor.gr.group.clone(),
            version: self.descriptor.version.clone(),
            kind: self.descriptor.kind.clone(),
        })
    }

    /// The endpoint the request addressed.
    pub fn requested(&self) -> &'a Descriptor {
        self.requested.unwrap_or(self.descriptor)
    }

    /// A delete (one object, or one object of a deletecollection).
    pub fn for_delete(
        descriptor: &'a Descriptor,
        opts: &'a WriteOptions,
        delete: &'a DeleteOptions,
    ) -> Self {
        Attributes {
            delete: Some(delete),
            ..Attributes::new(descriptor, Operation::Delete, opts)
        }
    }

    /// The object the request is about: the new one, or the stored one on a delete.
    fn subject<'v>(&self, obj: &'v Value, old: Option<&'v Value>) -> &'v Value {
        match old {
            Some(old) if obj.is_null() => old,
            _ => obj,
        }
    }

    /// The request's object name (none for a deletecollection, as kube).
    pub fn name<'v>(&self, obj: &'v Value, old: Option<&'v Value>) -> &'v str {
        if self.delete.is_some_and(|d| d.collection.is_some()) {
            return "";
        }
        crate::object::name(self.subject(obj, old))
    }

    /// The request's namespace (a deletecollection's own, `""` across namespaces).
    pub fn namespace<'v>(&'v self, obj: &'v Value, old: Option<&'v Value>) -> &'v str {
        if let Some(ns) = self.delete.and_then(|d| d.collection.as_deref()) {
            return ns;
        }
        crate::object::namespace(self.subject(obj, old))
    }

    /// `CREATE`, `UPDATE` or `DELETE`.
    pub fn operation_name(&self) -> &'static str {
        match self.operation {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }

    /// The options object kube sends with the request (`options` of an AdmissionRequest).
    pub fn options(&self) -> Value {
        let kind = match (self.operation, self.opts.is_patch || self.opts.is_apply) {
            (Operation::Delete, _) => "DeleteOptions",
            (_, true) => "PatchOptions",
            (Operation::Create, false) => "CreateOptions",
            (Operation::Update, false) => "UpdateOptions",
        };
        let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
        if self.opts.dry_run {
            options["dryRun"] = json!(["All"]);
        }
        if let Some(d) = self.delete {
            let mut pre = serde_json::Map::new();
            if let Some(uid) = &d.uid {
                pre.insert("uid".into(), json!(uid));
            }
            if let Some(rv) = &d.resource_version {
                pre.insert("resourceVersion".into(), json!(rv));
            }
            if !pre.is_empty() {
                options["preconditions"] = Value::Object(pre);
            }
            if let Some(p) = &d.propagation_policy {
                options["propagationPolicy"] = json!(p);
            }
            if let Some(g) = d.grace_period_seconds {
                options["gracePeriodSeconds"] = json!(g);
            }
            if let Some(o) = d.orphan_dependents {
                options["orphanDependents"] = json!(o);
            }
        } else if !self.opts.field_manager.is_empty() {
            options["fieldManager"] = json!(self.opts.field_manager);
        }
        options
    }

    /// kube's AdmissionRequest (`admission.k8s.io/v1`) without `object`/`oldObject`:
    /// what CEL's `request` variable sees, and the body of a webhook's review. Empty
    /// optional fields are left out, as Go's JSON writes them.
    pub fn request(&self, uid: &str, obj: &Value, old: Option<&Value>) -> Value {
        let d = self.descriptor;
        let r = self.requested();
        let kind = |d: &Descriptor| match &self.object_kind {
            Some(k) => json!({"group": k.group, "version": k.version, "kind": k.kind}),
            None => json!({"group": d.gr.group, "version": d.version, "kind": d.kind}),
        };
        let mut req = json!({
            "uid": uid,
            "kind": kind(d),
            "resource": {"group": d.gr.group, "version": d.version, "resource": d.gr.resource},
            "requestKind": kind(r),
            "requestResource": {"group": r.gr.group, "version": r.version, "resource": r.gr.resource},
            "operation": self.operation_name(),
            "userInfo": self.opts.user.to_json(),
            "dryRun": self.opts.dry_run,
            "options": self.options(),
        });
        if !self.opts.subresource.is_empty() {
            req["subResource"] = json!(self.opts.subresource);
            req["requestSubResource"] = json!(self.opts.subresource);
        }
        let name = self.name(obj, old);
        if !name.is_empty() {
            req["name"] = json!(name);
        }
        let ns = self.namespace(obj, old);
        if !ns.is_empty() {
            req["namespace"] = json!(ns);
        }
        req
    }

    /// Record the audit annotations `hook` returned, as kube: under `<hook>/<key>`,
    /// invalid keys and changed values dropped with an error log.
    fn record_audit_annotations(
        &self,
        hook: &str,
        phase: &str,
        annotations: &BTreeMap<String, String>,
    ) {
        for (k, v) in annotations {
            let key = format!("{hook}/{k}");
            match self.audit.add(&key, v) {
                Ok(()) => tracing::info!(key = %key, value = %v, "audit annotation"),
                Err(e) => tracing::error!(
                    "Failed to set admission audit annotation {key} to {v} for {phase} webhook {hook}: {e}"
                ),
            }
        }
    }
}

/// The audit annotations of one request (kube keeps them on the admission attributes
/// and writes them to the audit event).
#[derive(Clone, Debug, Default)]
pub struct AuditAnnotations(Arc<Mutex<BTreeMap<String, String>>>);

impl AuditAnnotations {
    /// Add one annotation: the key must be `<prefix>/<name>` and a qualified name, and an
    /// existing key keeps its value (kube's `AddAnnotation` and its errors).
    pub fn add(&self, key: &str, value: &str) -> Result<(), AdmissionError> {
        if key.split('/').count() != 2 {
            return Err(AdmissionError::AnnotationKeyFormat);
        }
        let msgs = crate::schema::objectmeta::is_qualified_name(key);
        if !msgs.is_empty() {
            return Err(AdmissionError::AnnotationKeyName(msgs.join(",")));
        }
        let mut all = self
            .0
            .lock()
            .map_err(|_| AdmissionError::AnnotationsPoisoned)?;
        match all.get(key) {
            Some(old) if old != value => Err(AdmissionError::AnnotationOverwrite {
                key: key.to_string(),
                old: old.clone(),
                value: value.to_string(),
            }),
            _ => {
                all.insert(key.to_string(), value.to_string());
                Ok(())
            }
        }
    }

    /// Every annotation recorded, by key.
    pub fn all(&self) -> BTreeMap<String, String> {
        self.0.lock().map(|a| a.clone()).unwrap_or_default()
    }
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

    /// Call the webhooks configured in `source` on every write; its cache of
    /// configurations follows storage from now on.
    pub fn serve_webhooks(&self, source: webhook::WebhookSource) {
        let source = Arc::new(source);
        webhook::WebhookSource::start_following(&source);
        if let Ok(mut w) = self.webhooks.write() {
            *w = Some(source);
        }
    }

    /// Answer `authorizer` checks of admission CEL expressions with `authorizer` (the
    /// server's `--authorization-mode`; `AlwaysAllow` until set).
    pub fn set_authorizer(&self, authorizer: Arc<dyn Authorizer>) {
        if let Ok(mut a) = self.authorizer.write() {
            *a = Some(authorizer);
        }
    }

    /// Match hooks written for other versions of a custom resource (`matchPolicy:
    /// Equivalent`) with the CRDs of `catalog`.
    pub fn set_catalog(&self, catalog: Arc<crate::registry::catalog::Catalog>) {
        self.versions.set_catalog(catalog);
    }

    /// The `authorizer` of this request's CEL expressions, made when one first asks.
    fn authz_context<'a>(
        &'a self,
        attrs: &'a Attributes<'a>,
        obj: &'a Value,
        old: Option<&'a Value>,
    ) -> LazyAuthz<'a> {
        LazyAuthz {
            admission: self,
            attrs,
            obj,
            old,
            made: std::sync::OnceLock::new(),
        }
    }

    /// The `authorizer` of this request's CEL expressions: the request's user, and its
    /// resource for `authorizer.requestResource`.
    fn make_authz_context(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
    ) -> AuthzContext {
        let authorizer: Arc<dyn crate::auth::authz::Authorizer> = self
            .authorizer
            .read()
            .ok()
            .and_then(|a| a.clone())
            .unwrap_or_else(|| Arc::new(crate::auth::authz::AlwaysAllow));
        AuthzContext {
            authorizer: Arc::new(crate::auth::authz::SyncAccess(authorizer)),
            user: (*attrs.opts.user).clone(),
            group: attrs.descriptor.gr.group.clone(),
            resource: attrs.descriptor.gr.resource.clone(),
            subresource: attrs.opts.subresource.clone(),
            namespace: attrs.namespace(obj, old).to_string(),
            name: attrs.name(obj, old).to_string(),
        }
    }

    fn match_context<'c>(&'c self, authz: &'c LazyAuthz<'c>) -> MatchContext<'c> {
        MatchContext {
            authz: Some(authz),
            versions: &self.versions,
            services: &self.services,
        }
    }

    fn webhook_source(&self) -> Option<Arc<webhook::WebhookSource>> {
        self.webhooks.read().ok().and_then(|w| w.clone())
    }

    /// Run kube's built-in plugins, those of `plugins.enabled`.
    pub fn serve_builtin_plugins(&self, plugins: plugins::Builtin) {
        if let Ok(mut b) = self.builtin.write() {
            *b = Some(Arc::new(plugins));
        }
    }

    /// Whether kube's plugins follow the kind stored under `key_root` (what
    /// [`Admission::builtin_written`] would be told of, else nothing).
    pub fn builtin_follows(&self, key_root: &str) -> bool {
        self.builtin_plugins().is_some_and(|b| b.follows(key_root))
    }

    /// An object was written through this server: kube's plugins read it at once.
    pub fn builtin_written(&self, key: &str, obj: &Value, deleted: bool) {
        if let Some(b) = self.builtin_plugins() {
            let revision = crate::object::resource_version(obj)
                .ok()
                .flatten()
                .unwrap_or(0);
            b.written(key, revision, (!deleted).then_some(obj));
        }
    }

    /// The object at `key` was deleted at `revision` behind the store's back (a
    /// harness reset): the plugins' caches drop it now, not when the watch tells them.
    pub fn builtin_deleted(&self, key: &str, revision: i64) {
        if let Some(b) = self.builtin_plugins() {
            b.written(key, revision, None);
        }
    }

    /// The namespace at `key` from NamespaceLifecycle's cache (`None`: not cached).
    pub fn cached_namespace(&self, key: &str) -> Option<Arc<Value>> {
        self.builtin_plugins()?.cached_namespace(key)
    }

    fn builtin_plugins(&self) -> Option<Arc<plugins::Builtin>> {
        self.builtin.read().ok().and_then(|b| b.clone())
    }

    /// Whether kube's plugin `name` is on (all are until the server says which).
    pub fn plugin_enabled(&self, name: &str) -> bool {
        self.builtin_plugins().is_none_or(|b| b.enabled.has(name))
    }

    /// A webhook configuration was written through this server: its webhooks apply to
    /// the next request already (the storage watch would see it a moment later).
    pub fn webhook_configuration_written(&self, key_root: &str, obj: &Value, deleted: bool) {
        if let Some(source) = self.webhook_source() {
            source.written(key_root, obj, deleted);
        }
    }

    /// Route webhooks (and conversion webhooks) that name the Service `namespace/name`
    /// on `port` to `address` (`host:port`); TLS still verifies `name.namespace.svc`.
    pub fn resolve_service(&self, namespace: &str, name: &str, port: u16, address: &str) {
        self.services.insert(namespace, name, port, address);
    }

    /// The Service → address map webhook calls use.
    pub fn service_resolver(&self) -> &crate::webhook::client::ServiceResolver {
        &self.services
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
    /// On a delete `obj` is `null` and a hook that tries to change it fails the request.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        mut obj: Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<Mutated, Status> {
        let mut changed = false;
        if let Some(builtin) = self.builtin_plugins() {
            changed |= builtin.mutate(attrs, &mut obj, old).await?;
        }
        let webhooks = self
            .webhook_source()
            .filter(|_| self.plugin_enabled("MutatingAdmissionWebhook"));
        if let Some(source) = webhooks {
            let authz = self.authz_context(attrs, &obj, old);
            let hooks = source
                .matching(true, attrs, &obj, old, &self.match_context(&authz))
                .await?;
            // `reinvocationPolicy: IfNeeded`: webhooks that ran before a later one changed
            // the object run once more, in order (kube's single reinvocation round).
            let mut last_change = None;
            for (i, (hook, version)) in hooks.iter().enumerate() {
                if self
                    .run_mutating_webhook(hook, version.as_deref(), attrs, &mut obj, old, warnings)
                    .await?
                {
                    last_change = Some(i);
                }
            }
            changed |= last_change.is_some();
            let again = hooks.iter().enumerate().filter(|(i, (h, _))| {
                last_change.is_some_and(|c| *i < c)
                    && h.get("reinvocationPolicy").and_then(Value::as_str) == Some("IfNeeded")
            });
            for (_, (hook, version)) in again {
                changed |= self
                    .run_mutating_webhook(hook, version.as_deref(), attrs, &mut obj, old, warnings)
                    .await?;
            }
        }
        for hook in self.matching(true, attrs) {
            let res = (hook.call)(request(attrs, obj.clone(), old)).await;
            warnings.extend(res.warnings.iter().cloned());
            attrs.record_audit_annotations(&hook.name, "mutating", &res.audit_annotations);
            if !res.allowed {
                return Err(denial(&hook.name, &res));
            }
            if let Some(admitted) = res.object {
                if obj.is_null() {
                    return Err(modify_unsupported(&hook.name));
                }
                if !admitted.is_object() {
                    return Err(Status::internal(format!(
                        "admission webhook {:?} returned an object that is not a JSON object",
                        hook.name
                    )));
                }
                obj = admitted;
                changed = true;
            }
        }
        Ok(Mutated {
            object: obj,
            changed,
        })
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
        let builtin = self.builtin_plugins();
        if let Some(b) = &builtin {
            b.validate(attrs, obj, old).await?;
        }
        self.validate_hooks(attrs, obj, old, warnings).await?;
        // ResourceQuota comes last, as in kube's plugin order.
        if let Some(b) = &builtin {
            b.quota(attrs, obj, old).await?;
        }
        Ok(())
    }

    /// The validating webhooks, in-process hooks and policies.
    async fn validate_hooks(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        let hooks = self.matching(false, attrs);
        let authz = self.authz_context(attrs, obj, old);
        let source = self
            .webhook_source()
            .filter(|_| self.plugin_enabled("ValidatingAdmissionWebhook"));
        let webhooks = match source {
            Some(source) => {
                source
                    .matching(false, attrs, obj, old, &self.match_context(&authz))
                    .await?
            }
            None => Vec::new(),
        };
        // Webhooks matched in another version see the objects converted to it.
        let mut prepared = Vec::with_capacity(webhooks.len());
        for (hook, version) in &webhooks {
            let converted = match version {
                None => None,
                Some(v) => Some(self.converted(attrs, v, obj, old).await?),
            };
            prepared.push((hook, converted));
        }
        let policies_on = self.plugin_enabled("ValidatingAdmissionPolicy");
        if hooks.is_empty() && webhooks.is_empty() {
            if !policies_on {
                return Ok(());
            }
            return self
                .policies
                .validate(attrs, obj, old, warnings, &self.match_context(&authz))
                .await;
        }
        let remote = prepared.iter().map(|(h, converted)| async move {
            match converted {
                None => webhook::call(h, attrs, obj, old, &self.services, false).await,
                Some((d, o, old_v)) => {
                    let view = attrs.as_version(d);
                    webhook::call(h, &view, o, old_v.as_ref(), &self.services, false).await
                }
            }
        });
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
        for (hook, res) in hooks.iter().zip(&results) {
            attrs.record_audit_annotations(&hook.name, "validating", &res.audit_annotations);
            warnings.extend(res.warnings.iter().cloned());
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        match hooks.iter().zip(&results).find(|(_, r)| !r.allowed) {
            Some((hook, res)) => Err(denial(&hook.name, res)),
            None if !policies_on => Ok(()),
            None => {
                self.policies
                    .validate(attrs, obj, old, warnings, &self.match_context(&authz))
                    .await
            }
        }
    }

    /// `obj` and `old` converted to `version` of the requested resource, with that
    /// version's descriptor.
    async fn converted(
        &self,
        attrs: &Attributes<'_>,
        version: &str,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(Descriptor, Value, Option<Value>), Status> {
        let d = equivalent::Versions::descriptor(attrs, version);
        let o = self
            .versions
            .convert(attrs, obj, version, &self.services)
            .await?;
        let old_v = match old {
            Some(x) => Some(
                self.versions
                    .convert(attrs, x, version, &self.services)
                    .await?,
            ),
            None => None,
        };
        Ok((d, o, old_v))
    }

    /// One mutating webhook; matched in another `version`, it patches the object
    /// converted to that version, which is converted back.
    async fn run_mutating_webhook(
        &self,
        hook: &Value,
        version: Option<&str>,
        attrs: &Attributes<'_>,
        obj: &mut Value,
        old: Option<&Value>,
        warnings: &mut Vec<String>,
    ) -> Result<bool, Status> {
        let Some(version) = version else {
            return webhook::run_mutating(hook, attrs, obj, old, warnings, &self.services).await;
        };
        let (d, mut converted, old_v) = self.converted(attrs, version, obj, old).await?;
        let view = attrs.as_version(&d);
        let changed = webhook::run_mutating(
            hook,
            &view,
            &mut converted,
            old_v.as_ref(),
            warnings,
            &self.services,
        )
        .await?;
        if changed {
            let back = &attrs.requested().version;
            *obj = self
                .versions
                .convert(attrs, &converted, back, &self.services)
                .await?;
        }
        Ok(changed)
    }

    /// Admit a delete of `old`: mutating hooks (which cannot change anything), then
    /// validating hooks, as kube's `AdmissionToValidateObjectDeleteFunc`.
    pub async fn admit_delete(
        &self,
        attrs: &Attributes<'_>,
        old: &Value,
        warnings: &mut Vec<String>,
    ) -> Result<(), Status> {
        self.mutate(attrs, Value::Null, Some(old), warnings).await?;
        self.validate(attrs, &Value::Null, Some(old), warnings)
            .await
    }
}

fn request(attrs: &Attributes<'_>, obj: Value, old: Option<&Value>) -> AdmissionRequest {
    let d = attrs.descriptor;
    let kind = attrs.kind();
    AdmissionRequest {
        uid: uuid::Uuid::new_v4().to_string(),
        operation: attrs.operation,
        group: d.gr.group.clone(),
        version: d.version.clone(),
        resource: d.gr.resource.clone(),
        subresource: attrs.opts.subresource.clone(),
        kind: kind.kind,
        kind_group: kind.group,
        kind_version: kind.version,
        name: attrs.name(&obj, old).to_string(),
        namespace: attrs.namespace(&obj, old).to_string(),
        object: obj,
        old_object: old.cloned(),
        dry_run: attrs.opts.dry_run,
        options: attrs.options(),
        user: attrs.opts.user.clone(),
    }
}

/// kube's error when a mutating hook patches the object of a delete.
fn modify_unsupported(name: &str) -> Status {
    Status::internal(format!(
        "admission webhook {name:?} attempted to modify the object, which is not supported for this operation"
    ))
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

/// A namespaced `widgets.example.com` endpoint, for the admission unit tests.
#[cfg(test)]
pub(crate) fn widgets_descriptor() -> Descriptor {
    Descriptor {
        gr: crate::status::GroupResource::new("example.com", "widgets"),
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

/// A selector field of a webhook or policy: absent or `null` selects everything (what
/// kube's defaulting makes of it on decode, stored nulls included); `None` when it does
/// not parse (matches nothing, as kube's error).
pub(crate) fn selector_field(v: &Value, k: &str) -> Option<crate::selector::labels::LabelSelector> {
    match v.get(k) {
        None | Some(Value::Null) => Some(crate::selector::labels::LabelSelector::everything()),
        Some(s) => crate::selector::labels::from_label_selector_json(s).ok(),
    }
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

    #[test]
    fn audit_annotation_keys_are_checked_as_kube() {
        let a = AuditAnnotations::default();
        let add = |key: &str, value: &str| a.add(key, value).map_err(|e| e.to_string());
        assert_eq!(add("hook.example.com/decision", "allowed"), Ok(()));
        assert_eq!(add("hook.example.com/decision", "allowed"), Ok(()));
        assert_eq!(
            add("hook.example.com/decision", "denied"),
            Err("admission annotations are not allowd to be overwritten, key:\"hook.example.com/decision\", old value: {Metadata allowed}, new value: {Metadata denied}".into())
        );
        assert!(add("a/b/c", "x").is_err_and(
            |e| e.starts_with("annotation key has invalid format, the right format is")
        ));
        assert!(add("hook.example.com/bad key", "x").is_err_and(
            |e| e.starts_with("annotation key has invalid format name part must consist of")
        ));
        assert_eq!(a.all().len(), 1);
    }
}
