//! `rbac.authorization.k8s.io/v1` Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings (`pkg/registry/rbac/*`, `pkg/apis/rbac/validation`): typed kinds
//! served by [`TypedKind`], with kube's defaults, validation and printers. The
//! authorizer reading them is `auth::rbac`.
//!
//! [`RbacKind`] adds kube's escalation check (`pkg/registry/rbac/*/policybased`) in
//! `RBAC` mode: a user may write a Role or ClusterRole only with rules they hold, unless
//! they may `escalate` it; a binding only to a role whose rules they hold, unless they
//! may `bind` it; `system:masters` may do anything.
//!
//! Not done: `PUT` creating a missing object (`AllowCreateOnUpdate`).

use super::builtin::{age_cell, at};
use super::typed::{str_at, TypedKind, TypedStrategy};
use super::{Conversion, Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::auth::authz::{Attributes, Authorizer, Decision};
use crate::auth::rbac::{PolicyRule, RbacRules};
use crate::auth::UserInfo;
use crate::field::{BadValue, Error, ErrorList, ErrorType, Path};
use crate::goformat::go_json_string;
use crate::schema::objectmeta;
use crate::status::{GroupResource, Status};
use crate::table::{BuiltinColumn, BuiltinPrinter};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::Arc;

pub use crate::auth::rbac::GROUP;

/// The kind for an RBAC resource, if `descriptor` addresses one; `escalation` is the
/// check of `RBAC` mode (`None`: writes are not checked).
pub fn kind_for(
    descriptor: Descriptor,
    definition: &str,
    escalation: Option<Arc<EscalationCheck>>,
) -> Option<RbacKind> {
    if descriptor.gr.group != GROUP {
        return None;
    }
    let (strategy, object): (Box<dyn TypedStrategy>, RbacObject) =
        match descriptor.gr.resource.as_str() {
            "roles" => (Box::new(RoleStrategy { cluster: false }), RbacObject::Role),
            "clusterroles" => (Box::new(RoleStrategy { cluster: true }), RbacObject::Role),
            "rolebindings" => (
                Box::new(BindingStrategy { cluster: false }),
                RbacObject::Binding,
            ),
            "clusterrolebindings" => (
                Box::new(BindingStrategy { cluster: true }),
                RbacObject::Binding,
            ),
            _ => return None,
        };
    Some(RbacKind {
        typed: TypedKind::new(descriptor, definition, strategy),
        object,
        escalation,
    })
}

/// Whether an RBAC kind holds rules or grants them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RbacObject {
    /// Roles and ClusterRoles.
    Role,
    /// RoleBindings and ClusterRoleBindings.
    Binding,
}

/// An RBAC kind: the typed kind, plus kube's escalation check on writes.
pub struct RbacKind {
    typed: TypedKind,
    object: RbacObject,
    escalation: Option<Arc<EscalationCheck>>,
}

/// kube's escalation check (`escalation_check.go`, `ConfirmNoEscalation`): asks the
/// server's authorizer about `escalate`/`bind` and compares rules with those the user
/// holds in the RBAC cache.
pub struct EscalationCheck {
    authorizer: Arc<dyn Authorizer>,
    rules: Arc<RbacRules>,
}

impl EscalationCheck {
    /// The check over the server's authorizer and RBAC cache.
    pub fn new(authorizer: Arc<dyn Authorizer>, rules: Arc<RbacRules>) -> Arc<EscalationCheck> {
        Arc::new(EscalationCheck { authorizer, rules })
    }

    async fn allows(&self, attrs: Attributes) -> bool {
        self.authorizer.authorize(&attrs).await.0 == Decision::Allow
    }

    /// A Role or ClusterRole write: allowed with `escalate` on it (kube asks with the
    /// request's name: none on a create), else its rules must be held.
    async fn check_role(
        &self,
        gr: &GroupResource,
        obj: &Value,
        old: Option<&Value>,
        user: &UserInfo,
    ) -> Result<(), Status> {
        let namespace = super::object::namespace(obj);
        let name = super::object::name(obj);
        let escalate = Attributes {
            user: user.clone(),
            verb: "escalate".into(),
            resource_request: true,
            api_group: gr.group.clone(),
            api_version: "*".into(),
            resource: gr.resource.clone(),
            namespace: namespace.to_string(),
            name: if old.is_some() { name } else { "" }.to_string(),
            ..Default::default()
        };
        if self.allows(escalate).await {
            return Ok(());
        }
        if old.is_some_and(|old| only_gc_fields_change(obj, old)) {
            return Ok(());
        }
        let rules = PolicyRule::list_from(obj);
        self.rules
            .confirm_no_escalation(user, namespace, &rules)
            .map_err(|e| forbidden(gr, name, &e.to_string()))?;
        // An aggregation rule can gather anything (and keep rules from being
        // tightened): setting or changing one takes every permission.
        if gr.resource == "clusterroles"
            && (has_aggregation_rule(obj) || old.is_some_and(has_aggregation_rule))
        {
            let star = || vec!["*".to_string()];
            let full_authority = [
                PolicyRule {
                    verbs: star(),
                    api_groups: star(),
                    resources: star(),
                    ..Default::default()
                },
                PolicyRule {
                    verbs: star(),
                    non_resource_urls: star(),
                    ..Default::default()
                },
            ];
            self.rules
                .confirm_no_escalation(user, namespace, &full_authority)
                .map_err(|_| {
                    forbidden(
                        gr,
                        name,
                        "must have cluster-admin privileges to use the aggregationRule",
                    )
                })?;
        }
        Ok(())
    }

    /// A RoleBinding or ClusterRoleBinding write: allowed with `bind` on the role it
    /// references, else the role's rules must be held.
    async fn check_binding(
        &self,
        gr: &GroupResource,
        obj: &Value,
        old: Option<&Value>,
        user: &UserInfo,
    ) -> Result<(), Status> {
        if old.is_some_and(|old| only_gc_fields_change(obj, old)) {
            return Ok(());
        }
        let namespace = super::object::namespace(obj);
        let kind = str_at(obj, "/roleRef/kind");
        let role = str_at(obj, "/roleRef/name");
        let role_resource = match kind {
            "Role" => Some("roles"),
            "ClusterRole" => Some("clusterroles"),
            _ => None,
        };
        if let Some(resource) = role_resource {
            let bind = Attributes {
                user: user.clone(),
                verb: "bind".into(),
                resource_request: true,
                api_group: str_at(obj, "/roleRef/apiGroup").to_string(),
                api_version: "*".into(),
                resource: resource.into(),
                namespace: namespace.to_string(),
                name: role.to_string(),
                ..Default::default()
            };
            if self.allows(bind).await {
                return Ok(());
            }
        }
        let rules = self
            .rules
            .role_reference_rules(kind, role, namespace)
            .map_err(|msg| match role_resource {
                Some(resource) => Status::not_found(&GroupResource::new(GROUP, resource), role),
                None => Status::internal(msg.to_string()),
            })?;
        self.rules
            .confirm_no_escalation(user, namespace, &rules)
            .map_err(|e| forbidden(gr, super::object::name(obj), &e.to_string()))
    }
}

/// Whether a ClusterRole has an `aggregationRule` with selectors.
fn has_aggregation_rule(role: &Value) -> bool {
    role.pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
}

/// kube's `NewForbidden` (no name: none quoted).
fn forbidden(gr: &GroupResource, name: &str, msg: &str) -> Status {
    let mut status = Status::forbidden(gr, name, msg);
    if name.is_empty() {
        status.message = format!("{gr} is forbidden: {msg}");
    }
    status
}

/// kube's `IsOnlyMutatingGCFields`: the update changes nothing but owner references
/// and finalizers (and selfLink, managedFields), which garbage collection may always do.
fn only_gc_fields_change(new: &Value, old: &Value) -> bool {
    let mut copy = new.clone();
    let old_meta = old.get("metadata").and_then(Value::as_object);
    let meta = super::object::meta_mut(&mut copy);
    for field in ["ownerReferences", "finalizers", "selfLink", "managedFields"] {
        match old_meta.and_then(|m| m.get(field)) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    semantic_eq(&copy, old)
}

/// Go's semantic equality of decoded objects: a zero value equals an absent field.
fn semantic_eq(a: &Value, b: &Value) -> bool {
    use super::object::is_zero as zero;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().all(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => semantic_eq(p, q),
                (Some(v), None) | (None, Some(v)) => zero(v),
                (None, None) => true,
            })
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(p, q))
        }
        _ => a == b || (zero(a) && zero(b)),
    }
}

impl ResourceKind for RbacKind {
    fn descriptor(&self) -> &Descriptor {
        self.typed.descriptor()
    }

    fn strategy(&self) -> &dyn Strategy {
        &self.typed
    }

    fn write_check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        opts: &'a WriteOptions,
    ) -> Option<BoxFuture<'a, Result<(), Status>>> {
        let check = self.escalation.as_ref()?;
        let user = &opts.user;
        // Writes by the server itself (bootstrap, `--load`, the aggregation controller)
        // carry no user; `system:masters` may escalate (kube's `EscalationAllowed`).
        if user.username.is_empty() || user.groups.iter().any(|g| g == crate::auth::MASTERS_GROUP) {
            return None;
        }
        let gr = &self.descriptor().gr;
        Some(match self.object {
            RbacObject::Role => Box::pin(check.check_role(gr, obj, old, user)),
            RbacObject::Binding => Box::pin(check.check_binding(gr, obj, old, user)),
        })
    }

    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.typed.to_storage(obj)
    }

    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.typed.on_read(obj)
    }

    fn on_read_all<'a>(&'a self, objs: &'a mut [Value]) -> Conversion<'a> {
        self.typed.on_read_all(objs)
    }
}

/// The `roles` (`cluster: false`) or `clusterroles` strategy.
pub struct RoleStrategy {
    cluster: bool,
}

/// The `rolebindings` (`cluster: false`) or `clusterrolebindings` strategy.
pub struct BindingStrategy {
    cluster: bool,
}

/// The strings of a list field (`[]` when absent or null).
fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn invalid_raw(path: &Path, raw: String, detail: &str) -> Error {
    Error {
        kind: ErrorType::Invalid,
        field: path.clone(),
        bad_value: BadValue::Raw(raw),
        detail: detail.to_string(),
    }
}

/// kube's `ValidateRBACName` applied to `metadata` (names are path segments).
fn meta_errors(obj: &Value, namespaced: bool) -> ErrorList {
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    objectmeta::validate_object_meta_path_segment(&meta, namespaced, &Path::new("metadata"))
}

fn meta_update_errors(new: &Value, old: &Value) -> ErrorList {
    let meta = new.get("metadata").cloned().unwrap_or(Value::Null);
    let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
    objectmeta::validate_object_meta_update(&meta, &old_meta, &Path::new("metadata"))
}

/// kube's `ValidatePolicyRule`.
pub fn rule_errors(rule: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if strings(rule, "verbs").is_empty() {
        errs.push(Error::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let urls_path = path.child("nonResourceURLs");
        if namespaced {
            errs.push(Error::invalid(
                &urls_path,
                json!(urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let resourceful = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|f| !strings(rule, f).is_empty());
        if resourceful {
            errs.push(Error::invalid(
                &urls_path,
                json!(urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if strings(rule, "apiGroups").is_empty() {
        errs.push(Error::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if strings(rule, "resources").is_empty() {
        errs.push(Error::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

/// kube's `ValidateRoleBindingSubject`.
pub fn subject_errors(subject: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let name = str_at(subject, "/name");
    let api_group = str_at(subject, "/apiGroup");
    if name.is_empty() {
        errs.push(Error::required(&path.child("name"), ""));
    }
    match str_at(subject, "/kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in objectmeta::validate_name(name) {
                    errs.push(Error::invalid(&path.child("name"), json!(name), msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(Error::not_supported(
                    &path.child("apiGroup"),
                    json!(api_group),
                    &[""],
                ));
            }
            if !namespaced && str_at(subject, "/namespace").is_empty() {
                errs.push(Error::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(Error::not_supported(
                    &path.child("apiGroup"),
                    json!(api_group),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(Error::not_supported(
            &path.child("kind"),
            json!(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// kube's internal `rbac.RoleRef` as its field errors print it: Go's JSON of a struct
/// without JSON tags (the value of `cannot change roleRef`).
fn go_role_ref(obj: &Value) -> String {
    let s = |p: &str| go_json_string(str_at(obj, p));
    format!(
        "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
        s("/roleRef/apiGroup"),
        s("/roleRef/kind"),
        s("/roleRef/name")
    )
}

/// Fields kube's types serialize even when empty (no `omitempty`): `null` for slices,
/// `""` for strings.
fn set_missing(obj: &mut Value, field: &str, zero: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.entry(field).or_insert(zero);
    }
}

impl RoleStrategy {
    fn validate_role(&self, obj: &Value) -> ErrorList {
        let mut errs = meta_errors(obj, !self.cluster);
        let rules = obj.get("rules").and_then(Value::as_array);
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            errs.extend(rule_errors(
                rule,
                !self.cluster,
                &Path::new("rules").index(i),
            ));
        }
        if self.cluster && !at(obj, "/aggregationRule").is_null() {
            errs.extend(aggregation_rule_errors(at(obj, "/aggregationRule")));
        }
        errs
    }
}

/// kube's checks of a ClusterRole's `aggregationRule`.
fn aggregation_rule_errors(rule: &Value) -> ErrorList {
    let path = Path::new("aggregationRule").child("clusterRoleSelectors");
    let selectors = rule
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut errs = Vec::new();
    if selectors.is_empty() {
        errs.push(Error::required(
            &path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let p = path.index(i);
        errs.extend(apimachinery::builtin_validation::label_selector(
            selector, &p,
        ));
        if crate::selector::labels::from_label_selector_json(selector).is_err() {
            errs.push(Error::invalid(
                &p,
                selector.clone(),
                "invalid label selector.",
            ));
        }
    }
    errs
}

impl TypedStrategy for RoleStrategy {
    fn default(&self, obj: &mut Value) {
        set_missing(obj, "rules", Value::Null);
        if let Some(rules) = obj.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut() {
                set_missing(rule, "verbs", Value::Null);
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        self.validate_role(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate_role(new);
        errs.extend(meta_update_errors(new, old));
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> BuiltinPrinter {
        // kube has no printer for roles: its default convertor's Name and Created At.
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new(
                    "Created At",
                    "date",
                    0,
                    crate::table::AGE_COLUMN_DESCRIPTION,
                ),
            ],
            cells: |obj, _| {
                let created = at(obj, "/metadata/creationTimestamp")
                    .as_str()
                    .unwrap_or("0001-01-01T00:00:00Z");
                vec![json!(super::object::name(obj)), json!(created)]
            },
        }
    }
}

impl BindingStrategy {
    fn validate_binding(&self, obj: &Value) -> ErrorList {
        let mut errs = meta_errors(obj, !self.cluster);
        let role_ref = Path::new("roleRef");
        let api_group = str_at(obj, "/roleRef/apiGroup");
        if api_group != GROUP {
            errs.push(Error::not_supported(
                &role_ref.child("apiGroup"),
                json!(api_group),
                &[GROUP],
            ));
        }
        let kind = str_at(obj, "/roleRef/kind");
        let kinds: &[&str] = if self.cluster {
            &["ClusterRole"]
        } else {
            &["Role", "ClusterRole"]
        };
        if !kinds.contains(&kind) {
            errs.push(Error::not_supported(
                &role_ref.child("kind"),
                json!(kind),
                kinds,
            ));
        }
        let name = str_at(obj, "/roleRef/name");
        if name.is_empty() {
            errs.push(Error::required(&role_ref.child("name"), ""));
        } else {
            for msg in objectmeta::validate_path_segment_name(name, false) {
                errs.push(Error::invalid(&role_ref.child("name"), json!(name), msg));
            }
        }
        let subjects = obj.get("subjects").and_then(Value::as_array);
        for (i, s) in subjects.into_iter().flatten().enumerate() {
            errs.extend(subject_errors(
                s,
                !self.cluster,
                &Path::new("subjects").index(i),
            ));
        }
        errs
    }
}

impl TypedStrategy for BindingStrategy {
    fn default(&self, obj: &mut Value) {
        set_missing(obj, "roleRef", json!({}));
        if let Some(role_ref) = obj.get_mut("roleRef") {
            for f in ["apiGroup", "kind", "name"] {
                set_missing(role_ref, f, json!(""));
            }
            if str_at(role_ref, "/apiGroup").is_empty() {
                role_ref["apiGroup"] = json!(GROUP);
            }
        }
        if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
            for s in subjects.iter_mut() {
                set_missing(s, "kind", json!(""));
                set_missing(s, "name", json!(""));
                let kind = str_at(s, "/kind");
                if str_at(s, "/apiGroup").is_empty() && (kind == "User" || kind == "Group") {
                    s["apiGroup"] = json!(GROUP);
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        self.validate_binding(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate_binding(new);
        errs.extend(meta_update_errors(new, old));
        if at(new, "/roleRef") != at(old, "/roleRef") {
            errs.push(invalid_raw(
                &Path::new("roleRef"),
                go_role_ref(new),
                "cannot change roleRef",
            ));
        }
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> BuiltinPrinter {
        let (doc, noun) = if self.cluster {
            (
                "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
                "clusterRoleBinding",
            )
        } else {
            (
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
                "roleBinding",
            )
        };
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new("Role", "string", 0, doc),
                BuiltinColumn::age(),
                BuiltinColumn::new("Users", "string", 1, &format!("Users in the {noun}")),
                BuiltinColumn::new("Groups", "string", 1, &format!("Groups in the {noun}")),
                BuiltinColumn::new(
                    "ServiceAccounts",
                    "string",
                    1,
                    &format!("ServiceAccounts in the {noun}"),
                ),
            ],
            cells: |obj, now| {
                let role = format!(
                    "{}/{}",
                    str_at(obj, "/roleRef/kind"),
                    str_at(obj, "/roleRef/name")
                );
                let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
                let subjects = obj.get("subjects").and_then(Value::as_array);
                for s in subjects.into_iter().flatten() {
                    let name = str_at(s, "/name").to_string();
                    match str_at(s, "/kind") {
                        "ServiceAccount" => sas.push(format!("{}/{name}", str_at(s, "/namespace"))),
                        "User" => users.push(name),
                        "Group" => groups.push(name),
                        _ => {}
                    }
                }
                vec![
                    json!(super::object::name(obj)),
                    json!(role),
                    age_cell(obj, now),
                    json!(users.join(", ")),
                    json!(groups.join(", ")),
                    json!(sas.join(", ")),
                ]
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn binding(cluster: bool, role_ref: Value, subjects: Value) -> Value {
        let mut meta = json!({"name": "b", "resourceVersion": "1"});
        if !cluster {
            meta["namespace"] = json!("default");
        }
        let mut obj = json!({"metadata": meta, "roleRef": role_ref, "subjects": subjects});
        BindingStrategy { cluster }.default(&mut obj);
        obj
    }

    #[test]
    fn rules_need_verbs_groups_and_resources() {
        let role = RoleStrategy { cluster: false };
        let obj = json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [{}]});
        assert_eq!(
            messages(&role.validate(&obj)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ]
        );
    }

    #[test]
    fn non_resource_urls_only_in_cluster_roles_and_alone() {
        let rule =
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]});
        assert_eq!(
            messages(&rule_errors(&rule, true, &Path::new("rules").index(0))),
            [
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
            ]
        );
        let ok = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]});
        assert!(rule_errors(&ok, false, &Path::new("rules").index(0)).is_empty());
    }

    #[test]
    fn role_names_may_contain_colons_but_not_slashes() {
        let role = RoleStrategy { cluster: true };
        let ok = json!({"metadata": {"name": "system:controller:x"}, "rules": []});
        assert!(role.validate(&ok).is_empty());
        let bad = json!({"metadata": {"name": "a/b"}});
        assert_eq!(
            messages(&role.validate(&bad)),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
    }

    #[test]
    fn aggregation_rule_needs_a_selector() {
        let role = RoleStrategy { cluster: true };
        let obj = json!({"metadata": {"name": "agg"}, "aggregationRule": {}});
        assert_eq!(
            messages(&role.validate(&obj)),
            ["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
    }

    #[test]
    fn binding_defaults_api_groups_of_role_ref_and_user_subjects() {
        let b = binding(
            false,
            json!({"kind": "Role", "name": "r"}),
            json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]),
        );
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert!(b["subjects"][1].get("apiGroup").is_none());
        assert!(BindingStrategy { cluster: false }.validate(&b).is_empty());
    }

    #[test]
    fn cluster_role_bindings_reference_cluster_roles_and_namespaced_service_accounts() {
        let b = binding(
            true,
            json!({"kind": "Role", "name": "r"}),
            json!([{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}]),
        );
        assert_eq!(
            messages(&BindingStrategy { cluster: true }.validate(&b)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
    }

    #[test]
    fn missing_role_ref_is_kind_unsupported_and_name_required() {
        let b = binding(false, Value::Null, json!(null));
        let mut obj = b.clone();
        obj.as_object_mut().map(|m| m.remove("roleRef"));
        BindingStrategy { cluster: false }.default(&mut obj);
        assert_eq!(
            messages(&BindingStrategy { cluster: false }.validate(&obj)),
            [
                "roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
            ]
        );
    }

    #[test]
    fn role_ref_cannot_change() {
        let old = binding(
            false,
            json!({"kind": "ClusterRole", "name": "view"}),
            json!([]),
        );
        let new = binding(
            false,
            json!({"kind": "ClusterRole", "name": "edit"}),
            json!([]),
        );
        assert_eq!(
            messages(&BindingStrategy { cluster: false }.validate_update(&new, &old)),
            ["roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"]
        );
    }

    #[test]
    fn role_binding_cells_list_subjects_by_kind() {
        let b = binding(
            false,
            json!({"kind": "ClusterRole", "name": "view"}),
            json!([{"kind": "User", "name": "a"}, {"kind": "Group", "name": "g"},
                   {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "User", "name": "b"}]),
        );
        let printer = BindingStrategy { cluster: false }.printer();
        let cells = (printer.cells)(&b, chrono::Utc::now());
        assert_eq!(cells[1], "ClusterRole/view");
        assert_eq!(cells[3], "a, b");
        assert_eq!(cells[4], "g");
        assert_eq!(cells[5], "ns/sa");
    }

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    /// The RBAC cache with `objects` (`resource/ns/name` or `resource/name` keys).
    fn rbac_cache(objects: &[(&str, Value)]) -> Arc<RbacRules> {
        let rules = Arc::new(RbacRules::new("/registry"));
        for (i, (key, obj)) in objects.iter().enumerate() {
            let mut obj = obj.clone();
            obj["metadata"]["resourceVersion"] = json!((i + 1).to_string());
            rules.written(&format!("/registry/{key}"), &obj, false);
        }
        rules
    }

    fn rbac_kind(
        resource: &str,
        authorizer: Arc<dyn Authorizer>,
        rules: Arc<RbacRules>,
    ) -> RbacKind {
        let d = crate::registry::builtin::descriptor(GROUP, resource, "/registry");
        let definition = match resource {
            "roles" => "io.k8s.api.rbac.v1.Role",
            "clusterroles" => "io.k8s.api.rbac.v1.ClusterRole",
            _ => "io.k8s.api.rbac.v1.RoleBinding",
        };
        kind_for(d, definition, Some(EscalationCheck::new(authorizer, rules))).expect("kind")
    }

    async fn check(
        kind: &RbacKind,
        obj: &Value,
        old: Option<&Value>,
        user: UserInfo,
    ) -> Result<(), Status> {
        let opts = WriteOptions {
            user: user.into(),
            ..Default::default()
        };
        let outcome = match kind.write_check(obj, old, &opts) {
            Some(f) => f.await,
            None => Ok(()),
        };
        outcome
    }

    fn alice_reads_widgets_in_ns1() -> Vec<(&'static str, Value)> {
        vec![
            (
                "roles/ns1/reader",
                json!({"metadata": {"name": "reader", "namespace": "ns1"},
                       "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
            ),
            (
                "rolebindings/ns1/rb",
                json!({"metadata": {"name": "rb", "namespace": "ns1"},
                       "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "reader"},
                       "subjects": [{"kind": "User", "name": "alice"}]}),
            ),
        ]
    }

    fn widget_role(verbs: Value) -> Value {
        json!({"metadata": {"name": "w", "namespace": "ns1"},
               "rules": [{"verbs": verbs, "apiGroups": ["example.com"], "resources": ["widgets"]}]})
    }

    #[tokio::test]
    async fn role_with_rules_not_held_is_forbidden_with_kubes_message() {
        let rules = rbac_cache(&alice_reads_widgets_in_ns1());
        let rbac: Arc<dyn Authorizer> =
            Arc::new(crate::auth::rbac::RbacAuthorizer::new(rules.clone()));
        let roles = rbac_kind("roles", rbac, rules.clone());
        assert_eq!(
            check(&roles, &widget_role(json!(["get"])), None, alice()).await,
            Ok(())
        );
        let err = check(
            &roles,
            &widget_role(json!(["get", "delete"])),
            None,
            alice(),
        )
        .await
        .expect_err("escalation");
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            "roles.rbac.authorization.k8s.io \"w\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"example.com\"], Resources:[\"widgets\"], Verbs:[\"delete\"]}"
        );
        // Masters and the server's own writes are not checked.
        let mut root = alice();
        root.groups.push(crate::auth::MASTERS_GROUP.into());
        assert_eq!(
            check(&roles, &widget_role(json!(["*"])), None, root).await,
            Ok(())
        );
        assert_eq!(
            check(
                &roles,
                &widget_role(json!(["*"])),
                None,
                UserInfo::default()
            )
            .await,
            Ok(())
        );
        // An authorizer allowing `escalate` (AlwaysAllow) lifts the check.
        let allow = rbac_kind("roles", Arc::new(crate::auth::authz::AlwaysAllow), rules);
        assert_eq!(
            check(&allow, &widget_role(json!(["*"])), None, alice()).await,
            Ok(())
        );
    }

    #[tokio::test]
    async fn aggregation_rule_takes_cluster_admin_privileges() {
        let rules = rbac_cache(&alice_reads_widgets_in_ns1());
        let rbac: Arc<dyn Authorizer> =
            Arc::new(crate::auth::rbac::RbacAuthorizer::new(rules.clone()));
        let cluster_roles = rbac_kind("clusterroles", rbac, rules);
        let agg = json!({"metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}});
        let err = check(&cluster_roles, &agg, None, alice())
            .await
            .expect_err("aggregation rule");
        assert_eq!(
            (err.code, err.message.as_str()),
            (
                403,
                "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"
            )
        );
        let plain = json!({"metadata": {"name": "plain"}});
        assert_eq!(check(&cluster_roles, &plain, None, alice()).await, Ok(()));
    }

    #[tokio::test]
    async fn updates_changing_only_finalizers_are_not_checked() {
        let rules = rbac_cache(&alice_reads_widgets_in_ns1());
        let rbac: Arc<dyn Authorizer> =
            Arc::new(crate::auth::rbac::RbacAuthorizer::new(rules.clone()));
        let roles = rbac_kind("roles", rbac, rules);
        let old = widget_role(json!(["*"]));
        let mut new = old.clone();
        new["metadata"]["finalizers"] = json!(["example.com/keep"]);
        assert_eq!(check(&roles, &new, Some(&old), alice()).await, Ok(()));
        new["metadata"]["labels"] = json!({"a": "b"});
        assert_eq!(
            check(&roles, &new, Some(&old), alice())
                .await
                .map_err(|e| e.code),
            Err(403)
        );
    }

    #[tokio::test]
    async fn binding_needs_bind_or_the_roles_rules() {
        let mut objects = alice_reads_widgets_in_ns1();
        objects.push((
            "clusterroles/deleter",
            json!({"metadata": {"name": "deleter"},
                   "rules": [{"verbs": ["delete"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}),
        ));
        let rules = rbac_cache(&objects);
        let rbac: Arc<dyn Authorizer> =
            Arc::new(crate::auth::rbac::RbacAuthorizer::new(rules.clone()));
        let bindings = rbac_kind("rolebindings", rbac, rules.clone());
        let binding = |kind: &str, name: &str| {
            json!({"metadata": {"name": "b", "namespace": "ns1"},
                   "roleRef": {"apiGroup": GROUP, "kind": kind, "name": name},
                   "subjects": [{"kind": "User", "name": "bob"}]})
        };
        assert_eq!(
            check(&bindings, &binding("Role", "reader"), None, alice()).await,
            Ok(())
        );
        let err = check(&bindings, &binding("ClusterRole", "deleter"), None, alice())
            .await
            .expect_err("escalation");
        assert_eq!(
            err.message,
            "rolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"example.com\"], Resources:[\"widgets\"], Verbs:[\"delete\"]}"
        );
        let err = check(&bindings, &binding("Role", "nope"), None, alice())
            .await
            .expect_err("missing role");
        assert_eq!(
            (err.code, err.message.as_str()),
            (404, "roles.rbac.authorization.k8s.io \"nope\" not found")
        );
        // `bind` on the ClusterRole, granted in the binding's namespace.
        rules.written(
            "/registry/roles/ns1/binder",
            &json!({"metadata": {"name": "binder", "namespace": "ns1", "resourceVersion": "10"},
                    "rules": [{"verbs": ["bind"], "apiGroups": [GROUP], "resources": ["clusterroles"], "resourceNames": ["deleter"]}]}),
            false,
        );
        rules.written(
            "/registry/rolebindings/ns1/binder",
            &json!({"metadata": {"name": "binder", "namespace": "ns1", "resourceVersion": "11"},
                    "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "binder"},
                    "subjects": [{"kind": "User", "name": "alice"}]}),
            false,
        );
        assert_eq!(
            check(&bindings, &binding("ClusterRole", "deleter"), None, alice()).await,
            Ok(())
        );
    }
}
