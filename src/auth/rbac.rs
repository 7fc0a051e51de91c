//! RBAC authorization, as kube's `plugin/pkg/auth/authorizer/rbac`: a request is allowed
//! when a rule of a role bound to its user allows it. ClusterRoleBindings apply
//! everywhere, RoleBindings (to a Role of their namespace or to a ClusterRole) in their
//! namespace only; `system:masters` may do anything (kube's privileged-group authorizer).
//!
//! - [`RbacRules`]: the roles and bindings, cached in memory: loaded at start-up, kept in
//!   step by a storage watch (writes by other servers on the same etcd) and updated
//!   synchronously by writes through this server (`ApiServer::after_write`), so a
//!   binding created by a test applies to its next request.
//! - [`RbacAuthorizer`]: the `--authorization-mode=RBAC` authorizer over that cache, and
//!   its rules per user (SelfSubjectRulesReviews).
//! - [`uncovered`], [`escalation_message`], [`RbacRules::confirm_no_escalation`]: kube's
//!   escalation check (`Covers`, `CompactRules`, `CompactString`), which
//!   `rest::rbac::RbacKind` runs on writes of roles and bindings.
//! - [`bootstrap_policy`]: kube's bootstrap ClusterRoles and bindings that tests bind to
//!   (`cluster-admin`, `admin`, `edit`, `view`, discovery), created at start-up.
//! - [`aggregated_rules`], [`RbacRules::aggregation_updates`]: what kube's ClusterRole
//!   aggregation controller (`controllers::rbac_aggregation`) writes, shared with the
//!   bootstrap policy.

use super::authz::{aggregate, Attributes, Authorizer, Decision};
use super::policy_rule::go_quoted_list;
pub use super::policy_rule::PolicyRule;
use super::{UserInfo, MASTERS_GROUP};
use crate::object::{self, str_field};
use crate::storage::{EventKind, ListOptions, Storage, WatchItem};
use futures::StreamExt;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, Weak};

/// The API group of RBAC objects.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// kube's prefix of service account user names.
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// kube's `BreakdownRule`: one rule per (group, resource, verb[, name]) and per
/// (non-resource URL, verb), each covered or not by a single owner rule.
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    verbs: one(verb),
                    api_groups: one(group),
                    resources: one(resource),
                    ..Default::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| set.contains(w))
}

fn has_star_or_all(set: &[String], wanted: &[String]) -> bool {
    set.iter().any(|s| s == "*") || has_all(set, wanted)
}

/// kube's `ruleCovers`: whether `owner` allows everything the broken-down `sub` does.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let resources = has_star_or_all(&owner.resources, &sub.resources)
        || sub.resources.iter().all(|path| {
            owner.resources.contains(path)
                || path.split_once('/').is_some_and(|(_, subresource)| {
                    owner.resources.contains(&format!("*/{subresource}"))
                })
        });
    let urls = sub.non_resource_urls.iter().all(|path| {
        owner
            .non_resource_urls
            .iter()
            .any(|o| o == path || (o.ends_with('*') && path.starts_with(o.trim_end_matches('*'))))
    });
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    has_star_or_all(&owner.verbs, &sub.verbs)
        && has_star_or_all(&owner.api_groups, &sub.api_groups)
        && resources
        && names
        && urls
}

/// kube's `Covers`: the broken-down parts of `servant` that no rule of `owner` covers
/// (empty: `owner` holds everything `servant` grants).
pub fn uncovered(owner: &[PolicyRule], servant: &[PolicyRule]) -> Vec<PolicyRule> {
    servant
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect()
}

/// kube's `CompactRules`: rules of one group, one resource and at most one name that
/// differ only by verb become one rule with all their verbs.
fn compact_rules(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        if !is_simple {
            out.push(rule);
            continue;
        }
        let same = simple.iter_mut().find(|s| {
            s.api_groups == rule.api_groups
                && s.resources == rule.resources
                && s.resource_names == rule.resource_names
        });
        match same {
            Some(s) => s.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    out.extend(simple);
    out
}

/// Why RBAC refuses or cannot check a write of roles and bindings; the texts are kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RbacError {
    /// The write grants rules the user does not hold (kube's `ConfirmNoEscalation`
    /// text, see [`escalation_message`]).
    #[error("{0}")]
    Escalation(String),
    /// The rules cache cannot be read.
    #[error("RBAC cache unavailable")]
    Unavailable,
    /// The role a binding references cannot be resolved (the registry's text, e.g.
    /// `roles.rbac.authorization.k8s.io "x" not found`).
    #[error("{0}")]
    RoleReference(String),
}

/// kube's `ConfirmNoEscalation` message for the rules `user` lacks (`missing` as
/// [`uncovered`] returns them), with the errors met resolving the user's own rules.
pub fn escalation_message(user: &UserInfo, missing: Vec<PolicyRule>, errors: &[String]) -> String {
    let descriptions: std::collections::BTreeSet<String> = compact_rules(missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let lines: Vec<String> = descriptions.into_iter().collect();
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        crate::field::go_quote(&user.username),
        go_quoted_list(&user.groups),
        lines.join("\n")
    );
    if !errors.is_empty() {
        msg.push_str(&format!("; resolution errors: [{}]", aggregate(errors)));
    }
    msg
}

/// Who a binding grants its role to (kube's `Subject`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace of a ServiceAccount (empty: the binding's).
    pub namespace: String,
}

impl Subject {
    fn from_json(v: &Value) -> Subject {
        Subject {
            kind: str_field(v, "kind").to_string(),
            name: str_field(v, "name").to_string(),
            namespace: str_field(v, "namespace").to_string(),
        }
    }

    /// Whether the subject is `user` (kube's `appliesToUser`); `namespace` is the
    /// binding's, the default of ServiceAccount subjects.
    pub fn applies_to(&self, user: &UserInfo, namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.username == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty() && user.username == service_account_user(ns, &self.name)
            }
            _ => false,
        }
    }

    /// kube's `describeSubject`: `User "alice"`, `ServiceAccount "name/namespace"`.
    fn describe(&self, binding_namespace: &str) -> String {
        if self.kind == "ServiceAccount" {
            let ns = if self.namespace.is_empty() {
                binding_namespace
            } else {
                &self.namespace
            };
            return format!(
                "{} {}",
                self.kind,
                crate::field::go_quote(&format!("{}/{ns}", self.name))
            );
        }
        format!("{} {}", self.kind, crate::field::go_quote(&self.name))
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{name}")
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Binding {
    /// Name.
    pub name: String,
    /// Namespace (empty for ClusterRoleBindings).
    pub namespace: String,
    /// `roleRef.kind`: `Role` or `ClusterRole`.
    pub role_kind: String,
    /// `roleRef.name`.
    pub role_name: String,
    /// Subjects.
    pub subjects: Vec<Subject>,
}

impl Binding {
    /// A binding object.
    pub fn from_json(v: &Value) -> Binding {
        let role_ref = v.get("roleRef").cloned().unwrap_or(Value::Null);
        Binding {
            name: object::name(v).to_string(),
            namespace: object::namespace(v).to_string(),
            role_kind: str_field(&role_ref, "kind").to_string(),
            role_name: str_field(&role_ref, "name").to_string(),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Subject::from_json).collect())
                .unwrap_or_default(),
        }
    }

    /// kube's source describer: `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`,
    /// `RoleBinding "b/ns" of Role "r" to Group "g"`.
    fn describe(&self, subject: &Subject) -> String {
        let q = crate::field::go_quote;
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {} of {} {} to {}",
                q(&self.name),
                self.role_kind,
                q(&self.role_name),
                subject.describe("")
            )
        } else {
            format!(
                "RoleBinding {} of {} {} to {}",
                q(&format!("{}/{}", self.name, self.namespace)),
                self.role_kind,
                q(&self.role_name),
                subject.describe(&self.namespace)
            )
        }
    }
}

/// A cached object at the storage revision it was last seen at (`None`: deleted), so
/// an older watch event never undoes a newer synchronous update.
struct Slot<T> {
    revision: i64,
    value: Option<Arc<T>>,
}

#[derive(Default)]
struct State {
    /// `namespace/name` → rules.
    roles: HashMap<String, Slot<Vec<PolicyRule>>>,
    /// name → rules.
    cluster_roles: HashMap<String, Slot<Vec<PolicyRule>>>,
    /// name → the ClusterRole itself (labels and `aggregationRule`, for aggregation).
    cluster_role_objects: BTreeMap<String, Slot<Value>>,
    /// `namespace/name` → binding (ordered, to range over one namespace).
    role_bindings: BTreeMap<String, Slot<Binding>>,
    /// name → binding.
    cluster_role_bindings: BTreeMap<String, Slot<Binding>>,
}

/// Which of the four RBAC resources a storage key belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Roles,
    ClusterRoles,
    RoleBindings,
    ClusterRoleBindings,
}

/// The roles and bindings in storage, cached for authorization.
pub struct RbacRules {
    /// Key roots (`/registry/roles`, ...), in [`Which`] order.
    roots: [(Which, String); 4],
    state: RwLock<State>,
    /// Signalled whenever a ClusterRole changes (wakes the aggregation controller).
    cluster_roles_changed: tokio::sync::Notify,
    /// Storage was loaded once: aggregation never works from a half-loaded cache.
    loaded: std::sync::atomic::AtomicBool,
}

/// What visiting the rules of a user meets: a rule with the binding that grants it, or
/// an error resolving a binding's role.
enum Visit<'a> {
    Rule(&'a Binding, &'a Subject, &'a PolicyRule),
    Error(String),
}

impl RbacRules {
    /// An empty cache of the objects stored under `prefix` (`/registry`).
    pub fn new(prefix: &str) -> RbacRules {
        let root = |r: &str| format!("{prefix}/{r}");
        RbacRules {
            roots: [
                (Which::Roles, root("roles")),
                (Which::ClusterRoles, root("clusterroles")),
                (Which::RoleBindings, root("rolebindings")),
                (Which::ClusterRoleBindings, root("clusterrolebindings")),
            ],
            state: RwLock::new(State::default()),
            cluster_roles_changed: tokio::sync::Notify::new(),
            loaded: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Which resource `key` belongs to, and its `namespace/name` or `name`.
    fn classify<'k>(&self, key: &'k str) -> Option<(Which, &'k str)> {
        self.roots.iter().find_map(|(which, root)| {
            key.strip_prefix(root.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .map(|rest| (*which, rest))
        })
    }

    /// Record the object at `key` (`None`: deleted) as of `revision`.
    fn apply(&self, key: &str, revision: i64, obj: Option<&Value>) {
        let Some((which, id)) = self.classify(key) else {
            return;
        };
        let Ok(mut state) = self.state.write() else {
            return;
        };
        fn put<T>(map: &mut impl SlotMap<T>, id: &str, revision: i64, value: Option<T>) {
            map.put(id, revision, value);
        }
        match which {
            Which::Roles => put(
                &mut state.roles,
                id,
                revision,
                obj.map(PolicyRule::list_from),
            ),
            Which::ClusterRoles => {
                put(
                    &mut state.cluster_roles,
                    id,
                    revision,
                    obj.map(PolicyRule::list_from),
                );
                put(&mut state.cluster_role_objects, id, revision, obj.cloned());
                self.cluster_roles_changed.notify_one();
            }
            Which::RoleBindings => put(
                &mut state.role_bindings,
                id,
                revision,
                obj.map(Binding::from_json),
            ),
            Which::ClusterRoleBindings => put(
                &mut state.cluster_role_bindings,
                id,
                revision,
                obj.map(Binding::from_json),
            ),
        }
    }

    /// Keep the cache in step with a write through this server. `obj` carries its
    /// `resourceVersion`; `key` is its storage key.
    pub fn written(&self, key: &str, obj: &Value, deleted: bool) {
        let rev = object::resource_version(obj).ok().flatten().unwrap_or(0);
        self.apply(key, rev, (!deleted).then_some(obj));
    }

    /// Load every stored role and binding; the revision to watch from.
    pub async fn load(&self, storage: &dyn Storage) -> Result<i64, crate::storage::StorageError> {
        let mut revision = 0;
        for (_, root) in &self.roots {
            let res = storage
                .list(&format!("{root}/"), &ListOptions::default())
                .await?;
            revision = revision.max(res.revision);
            for kv in &res.items {
                if let Ok(v) = crate::codec::decode_stored_json::<Value>(&kv.value) {
                    self.apply(&kv.key, kv.mod_revision, Some(&v));
                }
            }
        }
        self.loaded.store(true, std::sync::atomic::Ordering::SeqCst);
        self.cluster_roles_changed.notify_one();
        Ok(revision)
    }

    /// Follow RBAC writes in storage after `revision` (one watch for roles and
    /// rolebindings, one for the cluster kinds: their roots share a prefix).
    pub fn follow(self: &Arc<Self>, storage: Arc<dyn Storage>, revision: i64) {
        let prefixes = [
            common_prefix(&self.roots[0].1, &self.roots[2].1),
            common_prefix(&self.roots[1].1, &self.roots[3].1),
        ];
        for prefix in prefixes {
            tokio::spawn(follow(
                Arc::downgrade(self),
                storage.clone(),
                prefix,
                revision,
            ));
        }
    }

    /// Visit the rules that apply to `user` in `namespace` (all namespaces' cluster-wide
    /// rules when empty), as kube's `VisitRulesFor`: ClusterRoleBindings first, then the
    /// namespace's RoleBindings; `f` returns false to stop.
    /// `names` words the errors of roles not found as the authorizer's listers
    /// (`role.rbac...`) or as the registry (`roles.rbac...`, the escalation check).
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        names: ErrorNames,
        f: &mut dyn FnMut(Visit<'_>) -> bool,
    ) {
        let Ok(state) = self.state.read() else {
            return;
        };
        for slot in state.cluster_role_bindings.values() {
            let Some(binding) = &slot.value else { continue };
            if !visit_binding(&state, binding, user, "", names, f) {
                return;
            }
        }
        if namespace.is_empty() {
            return;
        }
        let from = format!("{namespace}/");
        for (key, slot) in state.role_bindings.range(from.clone()..) {
            if !key.starts_with(&from) {
                break;
            }
            let Some(binding) = &slot.value else { continue };
            if !visit_binding(&state, binding, user, namespace, names, f) {
                return;
            }
        }
    }

    /// kube's RBAC decision: allowed with the granting binding as the reason, or no
    /// opinion with the role resolution errors met (`RBAC: ...`) as the reason.
    pub fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        let mut allowed_by = None;
        let mut errors: Vec<String> = Vec::new();
        self.visit(
            &attrs.user,
            &attrs.namespace,
            ErrorNames::Lister,
            &mut |v| match v {
                Visit::Rule(binding, subject, rule) => {
                    if rule.allows(attrs) {
                        allowed_by = Some(binding.describe(subject));
                        return false;
                    }
                    true
                }
                Visit::Error(e) => {
                    errors.push(e);
                    true
                }
            },
        );
        if let Some(source) = allowed_by {
            return (Decision::Allow, format!("RBAC: allowed by {source}"));
        }
        if errors.is_empty() {
            return (Decision::NoOpinion, String::new());
        }
        (Decision::NoOpinion, format!("RBAC: {}", aggregate(&errors)))
    }

    /// kube's `ConfirmNoEscalation`: `Err` with kube's message unless the rules `user`
    /// holds in `namespace` cover `rules`.
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        rules: &[PolicyRule],
    ) -> Result<(), RbacError> {
        let (owner, errors) = self.collect_rules(user, namespace, ErrorNames::Registry);
        let missing = uncovered(&owner, rules);
        if missing.is_empty() {
            return Ok(());
        }
        Err(RbacError::Escalation(escalation_message(
            user, missing, &errors,
        )))
    }

    /// The rules of the role a binding in `namespace` references (`kind` is `Role` or
    /// `ClusterRole`); `Err` is the registry's not-found message.
    pub fn role_reference_rules(
        &self,
        kind: &str,
        name: &str,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, RbacError> {
        let state = self.state.read().map_err(|_| RbacError::Unavailable)?;
        role_rules(&state, kind, name, namespace, ErrorNames::Registry)
            .map(|r| r.to_vec())
            .map_err(RbacError::RoleReference)
    }

    /// Every rule that applies to `user` in `namespace`, and the errors resolving them
    /// (worded as the authorizer's, the errors of a SelfSubjectRulesReview).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        self.collect_rules(user, namespace, ErrorNames::Lister)
    }

    fn collect_rules(
        &self,
        user: &UserInfo,
        namespace: &str,
        names: ErrorNames,
    ) -> (Vec<PolicyRule>, Vec<String>) {
        let (mut rules, mut errors) = (Vec::new(), Vec::new());
        self.visit(user, namespace, names, &mut |v| {
            match v {
                Visit::Rule(_, _, rule) => rules.push(rule.clone()),
                Visit::Error(e) => errors.push(e),
            }
            true
        });
        (rules, errors)
    }
}

/// Visit the rules one binding grants `user` (none when no subject applies).
fn visit_binding(
    state: &State,
    binding: &Binding,
    user: &UserInfo,
    namespace: &str,
    names: ErrorNames,
    f: &mut dyn FnMut(Visit<'_>) -> bool,
) -> bool {
    let Some(subject) = binding
        .subjects
        .iter()
        .find(|s| s.applies_to(user, namespace))
    else {
        return true;
    };
    let rules = role_rules(
        state,
        &binding.role_kind,
        &binding.role_name,
        namespace,
        names,
    );
    match rules {
        Ok(rules) => rules
            .iter()
            .all(|rule| f(Visit::Rule(binding, subject, rule))),
        Err(e) => f(Visit::Error(e)),
    }
}

/// How errors name a role that is not found: kube's authorizer reads listers
/// (`role.rbac.authorization.k8s.io "r" not found`), its RBAC registry reads storage
/// (`roles.rbac.authorization.k8s.io "r" not found`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorNames {
    Lister,
    Registry,
}

/// The rules of the role a binding in `namespace` references (kube's
/// `GetRoleReferenceRules`), or the error resolving it.
fn role_rules(
    state: &State,
    kind: &str,
    name: &str,
    namespace: &str,
    names: ErrorNames,
) -> Result<Arc<Vec<PolicyRule>>, String> {
    let q = crate::field::go_quote;
    let plural = if names == ErrorNames::Registry {
        "s"
    } else {
        ""
    };
    match kind {
        "Role" => state
            .roles
            .get(&format!("{namespace}/{name}"))
            .and_then(|s| s.value.clone())
            .ok_or_else(|| format!("role{plural}.{GROUP} {} not found", q(name))),
        "ClusterRole" => state
            .cluster_roles
            .get(name)
            .and_then(|s| s.value.clone())
            .ok_or_else(|| format!("clusterrole{plural}.{GROUP} {} not found", q(name))),
        other => Err(format!("unsupported role reference kind: {}", q(other))),
    }
}

/// The maps of the cache, keyed by `namespace/name` or `name`.
trait SlotMap<T> {
    fn put(&mut self, id: &str, revision: i64, value: Option<T>);
}

fn newer<T>(slot: Option<&Slot<T>>, revision: i64) -> bool {
    slot.is_none_or(|s| s.revision <= revision)
}

impl<T> SlotMap<T> for HashMap<String, Slot<T>> {
    fn put(&mut self, id: &str, revision: i64, value: Option<T>) {
        if newer(self.get(id), revision) {
            let value = value.map(Arc::new);
            self.insert(id.to_string(), Slot { revision, value });
        }
    }
}

impl<T> SlotMap<T> for BTreeMap<String, Slot<T>> {
    fn put(&mut self, id: &str, revision: i64, value: Option<T>) {
        if newer(self.get(id), revision) {
            let value = value.map(Arc::new);
            self.insert(id.to_string(), Slot { revision, value });
        }
    }
}

fn common_prefix(a: &str, b: &str) -> String {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    a[..n].to_string()
}

/// Follow one watch prefix; on a lost or compacted watch, reload and watch again.
async fn follow(cache: Weak<RbacRules>, storage: Arc<dyn Storage>, prefix: String, mut rev: i64) {
    loop {
        if cache.strong_count() == 0 {
            return;
        }
        let mut stream = match storage.watch(&prefix, rev).await {
            Ok(s) => s,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                if let Some(c) = cache.upgrade() {
                    if let Ok(r) = c.load(storage.as_ref()).await {
                        rev = r;
                    }
                }
                continue;
            }
        };
        while let Some(item) = stream.next().await {
            let Some(c) = cache.upgrade() else { return };
            match item {
                Ok(WatchItem::Event(ev)) => {
                    rev = rev.max(ev.kv.mod_revision);
                    match ev.kind {
                        EventKind::Delete => c.apply(&ev.kv.key, ev.kv.mod_revision, None),
                        _ => {
                            if let Ok(v) = crate::codec::decode_stored_json::<Value>(&ev.kv.value) {
                                c.apply(&ev.kv.key, ev.kv.mod_revision, Some(&v));
                            }
                        }
                    }
                }
                Ok(WatchItem::Progress(r)) => rev = rev.max(r),
                Err(_) => {
                    if let Ok(r) = c.load(storage.as_ref()).await {
                        rev = r;
                    }
                    break;
                }
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The `RBAC` authorization mode.
pub struct RbacAuthorizer {
    rules: Arc<RbacRules>,
}

impl RbacAuthorizer {
    /// The authorizer over `rules`.
    pub fn new(rules: Arc<RbacRules>) -> RbacAuthorizer {
        RbacAuthorizer { rules }
    }
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        // kube asks its privileged-group authorizer first: masters need no binding.
        if self.allows_everything_of(&attrs.user) {
            return (Decision::Allow, String::new());
        }
        self.rules.authorize(attrs)
    }

    fn allows_everything_of(&self, user: &UserInfo) -> bool {
        user.groups.iter().any(|g| g == MASTERS_GROUP)
    }

    /// kube's `RBACAuthorizer.RulesFor`: each rule with resources is a resource rule,
    /// each with non-resource URLs a non-resource rule.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> super::authz::RulesInfo {
        let (rules, errors) = self.rules.rules_for(user, namespace);
        let mut info = super::authz::RulesInfo::default();
        for rule in rules {
            if !rule.resources.is_empty() {
                info.resource_rules.push(PolicyRule {
                    non_resource_urls: Vec::new(),
                    ..rule.clone()
                });
            }
            if !rule.non_resource_urls.is_empty() {
                info.non_resource_rules.push(PolicyRule {
                    verbs: rule.verbs,
                    non_resource_urls: rule.non_resource_urls,
                    ..Default::default()
                });
            }
        }
        for e in errors {
            if !info.errors.contains(&e) {
                info.errors.push(e);
            }
        }
        info
    }
}

/// kube's bootstrap ClusterRoles and ClusterRoleBindings tests commonly bind to, with
/// the aggregated roles (`admin`, `edit`, `view`) holding their aggregated rules, as
/// kube's aggregation controller leaves them.
pub fn bootstrap_policy() -> Vec<Value> {
    let doc = include_str!("../../testdata/rbac/bootstrap-policy.yaml");
    let items = match crate::codec::decode_body(doc.as_bytes(), "application/yaml") {
        Ok(list) => list.get("items").and_then(Value::as_array).cloned(),
        Err(_) => None,
    };
    let mut items = items.unwrap_or_default();
    aggregate_cluster_roles(&mut items);
    items
}

/// kube's ClusterRole aggregation (`clusterroleaggregation` controller) over `objects`,
/// repeated until nothing changes (aggregated roles may aggregate each other): each
/// role with an `aggregationRule` gets the rules of the other ClusterRoles its
/// selectors match ([`aggregated_rules`]).
pub fn aggregate_cluster_roles(objects: &mut [Value]) {
    let is_role = |o: &Value| o.get("kind").and_then(Value::as_str) == Some("ClusterRole");
    for _ in 0..objects.len() {
        let mut changed = false;
        for i in 0..objects.len() {
            if !is_role(&objects[i]) {
                continue;
            }
            let roles: Vec<&Value> = objects.iter().filter(|o| is_role(o)).collect();
            let Some(rules) = aggregated_rules(&objects[i], &roles) else {
                continue;
            };
            if PolicyRule::list_from(&objects[i]) != PolicyRule::list_from(&rules) {
                objects[i]["rules"] = rules["rules"].clone();
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
}

/// The rules kube's aggregation controller gives `role` (`{"rules": [...]}`), or `None`
/// when it has no `aggregationRule`: per selector in order, the rules of the other
/// ClusterRoles it matches in name order, each rule once.
pub fn aggregated_rules(role: &Value, cluster_roles: &[&Value]) -> Option<Value> {
    let selectors = role
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)?;
    let me = object::name(role);
    let mut sources: Vec<&Value> = cluster_roles.to_vec();
    sources.sort_by_key(|o| object::name(o));
    let (mut rules, mut seen) = (Vec::new(), Vec::new());
    for selector in selectors {
        // An invalid selector stops kube's sync of this role: keep what it has.
        let selector = crate::selector::labels::from_label_selector_json(selector).ok()?;
        for source in sources.iter().filter(|o| object::name(o) != me) {
            if !selector.matches_object(source) {
                continue;
            }
            let list = source.get("rules").and_then(Value::as_array);
            for rule in list.into_iter().flatten() {
                let parsed = PolicyRule::from_json(rule);
                if !seen.contains(&parsed) {
                    seen.push(parsed);
                    rules.push(rule.clone());
                }
            }
        }
    }
    Some(serde_json::json!({ "rules": rules }))
}

/// The field manager of the aggregation controller's writes.
pub const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";

impl RbacRules {
    /// Wait until a ClusterRole changes (a change before the wait counts).
    pub async fn cluster_roles_changed(&self) {
        self.cluster_roles_changed.notified().await
    }

    /// Ask for another aggregation pass (after a failed write).
    pub fn retry_aggregation(&self) {
        self.cluster_roles_changed.notify_one();
    }

    /// The aggregated ClusterRoles whose rules differ from what aggregation gives them
    /// now: `(name, rules)`.
    pub fn aggregation_updates(&self) -> Vec<(String, Value)> {
        if !self.loaded.load(std::sync::atomic::Ordering::SeqCst) {
            return Vec::new();
        }
        let Ok(state) = self.state.read() else {
            return Vec::new();
        };
        let roles: Vec<&Value> = state
            .cluster_role_objects
            .values()
            .filter_map(|s| s.value.as_deref())
            .collect();
        roles
            .iter()
            .filter_map(|role| {
                let rules = aggregated_rules(role, &roles)?;
                (PolicyRule::list_from(role) != PolicyRule::list_from(&rules))
                    .then(|| (object::name(role).to_string(), rules["rules"].clone()))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(v: Value) -> PolicyRule {
        PolicyRule::from_json(&v)
    }

    fn resource(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            namespace: "ns1".into(),
            ..Default::default()
        }
    }

    fn path(verb: &str, p: &str) -> Attributes {
        Attributes {
            verb: verb.into(),
            path: p.into(),
            ..Default::default()
        }
    }

    // Cases of kube's rbac_test.go `TestRuleMatches`.
    #[test]
    fn star_verb_and_group_match_everything() {
        let r = rule(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
        assert!(r.allows(&resource("get", "", "pods", "", "")));
        assert!(r.allows(&resource("delete", "example.com", "widgets", "status", "w")));
        assert!(!r.allows(&path("get", "/healthz")));
    }

    #[test]
    fn resource_with_subresource_needs_the_combined_name() {
        let r = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}));
        assert!(r.allows(&resource("get", "", "pods", "", "")));
        assert!(!r.allows(&resource("get", "", "pods", "status", "")));
        let r = rule(json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods/status"]}));
        assert!(r.allows(&resource("get", "", "pods", "status", "")));
        assert!(!r.allows(&resource("get", "", "pods", "", "")));
    }

    #[test]
    fn star_slash_subresource_matches_that_subresource_of_any_resource() {
        let r = rule(json!({"verbs": ["get"], "apiGroups": ["*"], "resources": ["*/scale"]}));
        assert!(r.allows(&resource("get", "apps", "deployments", "scale", "")));
        assert!(!r.allows(&resource("get", "apps", "deployments", "status", "")));
        assert!(!r.allows(&resource("get", "apps", "deployments", "", "")));
    }

    #[test]
    fn resource_names_restrict_named_requests() {
        let r = rule(
            json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm1"]}),
        );
        assert!(r.allows(&resource("get", "", "configmaps", "", "cm1")));
        assert!(!r.allows(&resource("get", "", "configmaps", "", "cm2")));
        // A list has no name: resourceNames rules never allow it.
        assert!(!r.allows(&resource("list", "", "configmaps", "", "")));
    }

    #[test]
    fn non_resource_urls_match_exactly_or_by_trailing_star() {
        let r = rule(json!({"verbs": ["get"], "nonResourceURLs": ["/apis/*", "/healthz"]}));
        assert!(r.allows(&path("get", "/healthz")));
        assert!(r.allows(&path("get", "/apis/example.com/v1")));
        assert!(r.allows(&path("get", "/apis/")));
        assert!(!r.allows(&path("get", "/apis")));
        assert!(!r.allows(&path("get", "/healthz/etcd")));
        assert!(!r.allows(&path("post", "/healthz")));
        let all = rule(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
        assert!(all.allows(&path("delete", "/anything")));
        assert!(!all.allows(&resource("get", "", "pods", "", "")));
    }

    #[test]
    fn group_mismatch_denies() {
        let r = rule(json!({"verbs": ["get"], "apiGroups": ["apps"], "resources": ["*"]}));
        assert!(!r.allows(&resource("get", "", "pods", "", "")));
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn cache(objects: &[(&str, Value)]) -> RbacRules {
        let rules = RbacRules::new("/registry");
        rules
            .loaded
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for (i, (key, obj)) in objects.iter().enumerate() {
            rules.apply(&format!("/registry/{key}"), i as i64 + 1, Some(obj));
        }
        rules
    }

    fn role_binding(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": ns},
               "roleRef": {"apiGroup": GROUP, "kind": kind, "name": role}, "subjects": subjects})
    }

    fn widgets(verb: &str, ns: &str, u: UserInfo) -> Attributes {
        Attributes {
            user: u,
            verb: verb.into(),
            resource_request: true,
            api_group: "example.com".into(),
            api_version: "v1".into(),
            resource: "widgets".into(),
            namespace: ns.into(),
            ..Default::default()
        }
    }

    #[test]
    fn role_binding_grants_in_its_namespace_only() {
        let c = cache(&[
            (
                "roles/ns1/reader",
                json!({"rules": [{"verbs": ["list"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
            ),
            (
                "rolebindings/ns1/rb",
                role_binding(
                    "ns1",
                    "rb",
                    "Role",
                    "reader",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
            ),
        ]);
        let alice = user("alice", &["system:authenticated"]);
        assert_eq!(
            c.authorize(&widgets("list", "ns1", alice.clone())),
            (
                Decision::Allow,
                "RBAC: allowed by RoleBinding \"rb/ns1\" of Role \"reader\" to User \"alice\""
                    .into()
            )
        );
        assert_eq!(
            c.authorize(&widgets("list", "ns2", alice.clone())).0,
            Decision::NoOpinion
        );
        assert_eq!(
            c.authorize(&widgets("list", "", alice.clone())).0,
            Decision::NoOpinion
        );
        assert_eq!(
            c.authorize(&widgets("create", "ns1", alice)).0,
            Decision::NoOpinion
        );
        let bob = user("bob", &[]);
        assert_eq!(
            c.authorize(&widgets("list", "ns1", bob)).0,
            Decision::NoOpinion
        );
    }

    #[test]
    fn cluster_role_binding_to_a_group_grants_everywhere() {
        let c = cache(&[
            (
                "clusterroles/viewer",
                json!({"rules": [{"verbs": ["get", "list"], "apiGroups": ["*"], "resources": ["*"]}]}),
            ),
            (
                "clusterrolebindings/devs",
                json!({"metadata": {"name": "devs"}, "roleRef": {"kind": "ClusterRole", "name": "viewer"},
                       "subjects": [{"kind": "Group", "name": "devs"}]}),
            ),
        ]);
        let (d, reason) = c.authorize(&widgets("list", "any", user("carol", &["devs"])));
        assert_eq!(d, Decision::Allow);
        assert_eq!(
            reason,
            "RBAC: allowed by ClusterRoleBinding \"devs\" of ClusterRole \"viewer\" to Group \"devs\""
        );
        assert_eq!(
            c.authorize(&widgets("list", "", user("carol", &["devs"])))
                .0,
            Decision::Allow
        );
    }

    #[test]
    fn service_account_subjects_default_to_the_binding_namespace() {
        let c = cache(&[
            (
                "clusterroles/cr",
                json!({"rules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]}),
            ),
            (
                "rolebindings/ns1/sa",
                role_binding(
                    "ns1",
                    "sa",
                    "ClusterRole",
                    "cr",
                    json!([{"kind": "ServiceAccount", "name": "ctrl"}]),
                ),
            ),
        ]);
        let sa = user(
            "system:serviceaccount:ns1:ctrl",
            &["system:serviceaccounts"],
        );
        let (d, reason) = c.authorize(&widgets("create", "ns1", sa.clone()));
        assert_eq!(d, Decision::Allow);
        assert_eq!(
            reason,
            "RBAC: allowed by RoleBinding \"sa/ns1\" of ClusterRole \"cr\" to ServiceAccount \"ctrl/ns1\""
        );
        let other = user("system:serviceaccount:ns2:ctrl", &[]);
        assert_eq!(
            c.authorize(&widgets("create", "ns1", other)).0,
            Decision::NoOpinion
        );
    }

    #[test]
    fn missing_roles_are_reasons_of_the_denial() {
        let c = cache(&[(
            "rolebindings/ns1/rb",
            role_binding(
                "ns1",
                "rb",
                "Role",
                "gone",
                json!([{"kind": "User", "name": "alice"}]),
            ),
        )]);
        assert_eq!(
            c.authorize(&widgets("list", "ns1", user("alice", &[]))),
            (
                Decision::NoOpinion,
                "RBAC: role.rbac.authorization.k8s.io \"gone\" not found".into()
            )
        );
    }

    #[test]
    fn older_watch_events_do_not_undo_newer_writes() {
        let c = RbacRules::new("/registry");
        let key = "/registry/clusterroles/r";
        let v = json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]});
        c.apply(key, 10, None);
        c.apply(key, 9, Some(&v));
        let state = c.state.read().expect("lock");
        assert!(state.cluster_roles["r"].value.is_none());
    }

    #[tokio::test]
    async fn masters_are_always_allowed() {
        let a = RbacAuthorizer::new(Arc::new(RbacRules::new("/registry")));
        let attrs = widgets("delete", "x", user("root", &[MASTERS_GROUP]));
        assert_eq!(a.authorize(&attrs).await.0, Decision::Allow);
        let attrs = widgets("delete", "x", user("root", &[]));
        assert_eq!(a.authorize(&attrs).await.0, Decision::NoOpinion);
    }

    #[test]
    fn bootstrap_view_aggregates_the_view_rules_and_edit_includes_them() {
        let items = bootstrap_policy();
        let find = |name: &str| {
            items
                .iter()
                .find(|o| o["kind"] == "ClusterRole" && object::name(o) == name)
                .cloned()
                .expect("role")
        };
        let view = find("view");
        let aggregate_to_view = find("system:aggregate-to-view");
        assert_eq!(view["rules"], aggregate_to_view["rules"]);
        let edit = PolicyRule::list_from(&find("edit"));
        for r in PolicyRule::list_from(&view) {
            assert!(edit.contains(&r));
        }
        let admin = PolicyRule::list_from(&find("admin"));
        assert!(admin
            .iter()
            .any(|r| r.resources.contains(&"rolebindings".to_string())));
        assert!(items.iter().any(|o| o["kind"] == "ClusterRoleBinding"
            && object::name(o) == "cluster-admin"
            && o["subjects"][0]["name"] == MASTERS_GROUP));
    }

    fn rules(v: Value) -> Vec<PolicyRule> {
        v.as_array()
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    // kube's policy_comparator_test.go `TestCoversMultipleRulesMissingSingleVerbResourceCombination`.
    #[test]
    fn covers_reports_the_single_missing_verb_resource_combination() {
        let owner = rules(json!([
            {"apiGroups": ["v1"], "verbs": ["delete", "update"], "resources": ["builds", "deployments"]},
            {"apiGroups": ["v1"], "verbs": ["delete"], "resources": ["pods"]}]));
        let servant = rules(json!([
            {"apiGroups": ["v1"], "verbs": ["delete", "update"], "resources": ["builds", "deployments", "pods"]}]));
        assert_eq!(
            uncovered(&owner, &servant),
            rules(json!([{"apiGroups": ["v1"], "verbs": ["update"], "resources": ["pods"]}]))
        );
    }

    // `TestCoversSubresourceWildcard`, `TestCoversAPIGroupStarCoveringMultiple`,
    // `TestCoversEnumerationNotCoveringAPIGroupStar`, `TestCoversVerbStarCoveringMultiple`.
    #[test]
    fn covers_wildcards_only_from_the_owner_side() {
        let owner =
            rules(json!([{"apiGroups": ["v1"], "verbs": ["get"], "resources": ["*/scale"]}]));
        let servant =
            rules(json!([{"apiGroups": ["v1"], "verbs": ["get"], "resources": ["foo/scale"]}]));
        assert!(uncovered(&owner, &servant).is_empty());
        let owner = rules(json!([{"apiGroups": ["*"], "verbs": ["get"], "resources": ["roles"]}]));
        let servant = rules(
            json!([{"apiGroups": ["group1", "group2"], "verbs": ["get"], "resources": ["roles"]}]),
        );
        assert!(uncovered(&owner, &servant).is_empty());
        let owner = rules(
            json!([{"apiGroups": ["dummy-group"], "verbs": ["get"], "resources": ["roles"]}]),
        );
        let servant =
            rules(json!([{"apiGroups": ["*"], "verbs": ["get"], "resources": ["roles"]}]));
        assert_eq!(uncovered(&owner, &servant), servant);
        let owner = rules(json!([{"apiGroups": ["v1"], "verbs": ["*"], "resources": ["roles"]}]));
        let servant = rules(
            json!([{"apiGroups": ["v1"], "verbs": ["watch", "list"], "resources": ["roles"]}]),
        );
        assert!(uncovered(&owner, &servant).is_empty());
    }

    // `TestCoversResourceNameEmpty`-style cases and the non-resource URL ones
    // (`TestCoversNonResourceURLsStarAfterPrefixDoesntCover`).
    #[test]
    fn covers_resource_names_and_non_resource_urls() {
        let named = rules(
            json!([{"apiGroups": ["v1"], "verbs": ["get"], "resources": ["pods"], "resourceNames": ["foo", "bar"]}]),
        );
        let any = rules(json!([{"apiGroups": ["v1"], "verbs": ["get"], "resources": ["pods"]}]));
        assert!(uncovered(&any, &named).is_empty());
        assert_eq!(uncovered(&named, &any), any);
        let owner = rules(json!([{"nonResourceURLs": ["/apis/*"], "verbs": ["*"]}]));
        let servant = rules(json!([{"nonResourceURLs": ["/apis", "/apis/v1"], "verbs": ["get"]}]));
        assert_eq!(
            uncovered(&owner, &servant),
            rules(json!([{"nonResourceURLs": ["/apis"], "verbs": ["get"]}]))
        );
    }

    // The message of kube's `ConfirmNoEscalation`: missing rules compacted by resource
    // (`CompactRules`), printed by `CompactString`, sorted, one per line.
    #[test]
    fn escalation_message_lists_compacted_missing_rules_sorted() {
        let servant = rules(json!([
            {"apiGroups": [""], "verbs": ["get", "list"], "resources": ["secrets", "pods"]},
            {"apiGroups": [""], "verbs": ["get"], "resources": ["configmaps"], "resourceNames": ["a", "b"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]));
        let alice = user("alice", &["system:authenticated", "devs"]);
        let missing = uncovered(&[], &servant);
        assert_eq!(
            escalation_message(&alice, missing, &[]),
            "user \"alice\" (groups=[\"system:authenticated\" \"devs\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"a\"], Verbs:[\"get\"]}\n\
             {APIGroups:[\"\"], Resources:[\"configmaps\"], ResourceNames:[\"b\"], Verbs:[\"get\"]}\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}\n\
             {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
        );
        let missing = uncovered(
            &[],
            &rules(json!([{"apiGroups": [""], "verbs": ["get"], "resources": ["pods"]}])),
        );
        assert_eq!(
            escalation_message(&user("bob", &[]), missing, &["clusterroles.rbac.authorization.k8s.io \"x\" not found".into()]),
            "user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}; resolution errors: [clusterroles.rbac.authorization.k8s.io \"x\" not found]"
        );
    }

    #[test]
    fn confirm_no_escalation_uses_the_rules_held_in_the_namespace() {
        let c = cache(&[
            (
                "roles/ns1/reader",
                json!({"rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}),
            ),
            (
                "rolebindings/ns1/rb",
                role_binding(
                    "ns1",
                    "rb",
                    "Role",
                    "reader",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
            ),
            (
                "rolebindings/ns1/gone",
                role_binding(
                    "ns1",
                    "gone",
                    "ClusterRole",
                    "gone",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
            ),
        ]);
        let alice = user("alice", &[]);
        let get = rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]));
        assert_eq!(c.confirm_no_escalation(&alice, "ns1", &get), Ok(()));
        let err = c
            .confirm_no_escalation(&alice, "ns2", &get)
            .expect_err("not held in ns2")
            .to_string();
        assert!(
            err.ends_with("{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}"),
            "{err}"
        );
        let delete =
            rules(json!([{"verbs": ["delete"], "apiGroups": [""], "resources": ["pods"]}]));
        let err = c
            .confirm_no_escalation(&alice, "ns1", &delete)
            .expect_err("not held")
            .to_string();
        assert!(
            err.ends_with(
                "; resolution errors: [clusterroles.rbac.authorization.k8s.io \"gone\" not found]"
            ),
            "{err}"
        );
        assert_eq!(
            c.role_reference_rules("Role", "missing", "ns1"),
            Err(RbacError::RoleReference(
                "roles.rbac.authorization.k8s.io \"missing\" not found".into()
            ))
        );
    }

    fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
        json!({"kind": "ClusterRole", "metadata": {"name": name, "labels": labels}, "rules": rules})
    }

    // kube's aggregation controller: per selector in order, matching roles by name,
    // each rule once, never the role itself.
    #[test]
    fn aggregation_takes_rules_per_selector_by_name_once() {
        let agg = json!({"kind": "ClusterRole", "metadata": {"name": "agg", "labels": {"a": "x"}},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"b": "x"}}, {"matchLabels": {"a": "x"}}]}});
        let get = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]});
        let list = json!({"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]});
        let z = cluster_role("z", json!({"b": "x"}), json!([list]));
        let a = cluster_role("a", json!({"a": "x"}), json!([get, list]));
        let m = cluster_role("m", json!({"b": "x"}), json!([get]));
        let roles = [&agg, &z, &a, &m];
        assert_eq!(
            aggregated_rules(&agg, &roles),
            Some(json!({"rules": [get, list]}))
        );
        assert_eq!(aggregated_rules(&a, &roles), None);
    }

    #[test]
    fn aggregation_updates_follow_labelled_roles_in_the_cache() {
        let agg = json!({"metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "true"}}]}});
        let c = cache(&[("clusterroles/agg", agg)]);
        assert!(c.aggregation_updates().is_empty());
        let rule =
            json!({"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]});
        c.apply(
            "/registry/clusterroles/w",
            10,
            Some(&cluster_role("w", json!({"agg": "true"}), json!([rule]))),
        );
        assert_eq!(
            c.aggregation_updates(),
            [("agg".to_string(), json!([rule]))]
        );
        c.apply("/registry/clusterroles/w", 11, None);
        assert!(c.aggregation_updates().is_empty());
    }

    #[test]
    fn rbac_rules_for_splits_resource_and_non_resource_rules() {
        let c = Arc::new(cache(&[
            (
                "clusterroles/cr",
                json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                                 {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}),
            ),
            (
                "clusterrolebindings/b",
                json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "cr"},
                       "subjects": [{"kind": "User", "name": "alice"}]}),
            ),
        ]));
        let info = RbacAuthorizer::new(c).rules_for(&user("alice", &[]), "ns1");
        assert_eq!(
            info.resource_rules,
            rules(json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]))
        );
        assert_eq!(
            info.non_resource_rules,
            rules(json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]))
        );
        assert!(!info.incomplete);
        assert!(info.errors.is_empty());
    }
}
