//! Authorization, as kube's: an [`Authorizer`] judges a request's [`Attributes`];
//! `--authorization-mode` lists authorizers that are asked in order until one allows
//! or denies. The check runs once per request in `http::serve`, before dispatch.
//!
//! To add a mode (RBAC): implement [`Authorizer`], add a [`Mode`] variant and its
//! flag name in [`Mode::parse`], and build it in [`build`].

use super::policy_rule::PolicyRule;
use super::{AuthConfigError, UserInfo};
use crate::field::go_quote;
use crate::http::request_info::RequestInfo;
use crate::status::{Details, Status};
use std::sync::Arc;

pub use apimachinery::access::{Attributes, Decision};

/// The server's authorizer answering CEL's `authorizer` library, which asks while an
/// expression evaluates: kube's local authorizers answer without waiting, so the answer
/// is taken at the first poll; a delegated one (SubjectAccessReview) is waited for.
pub struct SyncAccess(pub Arc<dyn Authorizer>);

impl apimachinery::access::AccessCheck for SyncAccess {
    fn check(
        &self,
        attrs: &Attributes,
    ) -> Result<(Decision, String), apimachinery::access::AccessError> {
        let mut fut = self.0.authorize(attrs);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match fut.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(answer) => Ok(answer),
            // An authorizer that asks over the network (`--authorization-kubeconfig`):
            // wait for it where the runtime lets a worker block (the server's does).
            std::task::Poll::Pending => match tokio::runtime::Handle::try_current() {
                Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                    Ok(tokio::task::block_in_place(|| h.block_on(fut)))
                }
                _ => Err(apimachinery::access::AccessError::NotReady),
            },
        }
    }
}

/// An authorizer held in options that print themselves (`Debug` names only its type).
#[derive(Clone)]
pub struct Delegated(pub Arc<dyn Authorizer>);

impl std::fmt::Debug for Delegated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Delegated(SubjectAccessReview)")
    }
}

/// The attributes of a parsed request.
pub fn request_attributes(user: &UserInfo, info: &RequestInfo, path: &str) -> Attributes {
    Attributes {
        user: user.clone(),
        verb: info.verb.to_string(),
        resource_request: info.is_resource_request,
        api_group: info.group().to_string(),
        api_version: info.version().to_string(),
        resource: info.resource().to_string(),
        subresource: info.subresource().to_string(),
        namespace: info.namespace().to_string(),
        name: info.name().to_string(),
        path: path.to_string(),
    }
}

/// The rules a user holds in a namespace, as kube's `RuleResolver.RulesFor` answers
/// (a SelfSubjectRulesReview's status).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RulesInfo {
    /// Rules on resources (verbs, groups, resources, names).
    pub resource_rules: Vec<PolicyRule>,
    /// Rules on non-resource paths (verbs, URLs).
    pub non_resource_rules: Vec<PolicyRule>,
    /// Some authorizer could not list its rules.
    pub incomplete: bool,
    /// Errors met resolving the rules (each message once).
    pub errors: Vec<String>,
}

impl RulesInfo {
    /// kube's `evaluationError`: the errors as one aggregate (empty: none).
    pub fn evaluation_error(&self) -> String {
        if self.errors.is_empty() {
            return String::new();
        }
        aggregate(&self.errors)
    }
}

/// kube's error aggregate: one message bare, several as `[a, b]` (duplicates once).
pub(crate) fn aggregate(errors: &[String]) -> String {
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&str> = errors
        .iter()
        .filter(|e| seen.insert(e.as_str()))
        .map(String::as_str)
        .collect();
    if unique.len() == 1 {
        unique[0].to_string()
    } else {
        format!("[{}]", unique.join(", "))
    }
}

/// Judges requests (kube's `authorizer.Authorizer`).
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    /// The decision and its reason (appended to kube's 403 message when not empty).
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String);

    /// Whether every request of `user` is allowed, whatever it asks (`system:masters`
    /// by kube's privileged-group authorizer, anyone by `AlwaysAllow`): the gate then
    /// builds no attributes. `false` when it depends on the request.
    fn allows_everything_of(&self, user: &UserInfo) -> bool {
        let _ = user;
        false
    }

    /// The rules `user` holds in `namespace` (kube's `RuleResolver`); authorizers that
    /// are no rule resolvers in kube (`system:masters`) answer none.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        let _ = (user, namespace);
        RulesInfo::default()
    }
}

/// kube's rules of `AlwaysAllow`: everything.
fn all_rules() -> RulesInfo {
    let star = || vec!["*".to_string()];
    RulesInfo {
        resource_rules: vec![PolicyRule {
            verbs: star(),
            api_groups: star(),
            resources: star(),
            ..Default::default()
        }],
        non_resource_rules: vec![PolicyRule {
            verbs: star(),
            non_resource_urls: star(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// Allows everything (kube's `AlwaysAllow`, the default here).
pub struct AlwaysAllow;

#[async_trait::async_trait]
impl Authorizer for AlwaysAllow {
    async fn authorize(&self, _: &Attributes) -> (Decision, String) {
        (Decision::Allow, String::new())
    }

    fn allows_everything_of(&self, _: &UserInfo) -> bool {
        true
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
        all_rules()
    }
}

/// Allows nothing (kube's `AlwaysDeny`: no opinion, with kube's reason).
pub struct AlwaysDeny;

#[async_trait::async_trait]
impl Authorizer for AlwaysDeny {
    async fn authorize(&self, _: &Attributes) -> (Decision, String) {
        (Decision::NoOpinion, "Everything is forbidden.".into())
    }
}

/// Allows members of `system:masters` and has no opinion on anyone else: kube puts it
/// before the configured modes, whatever they are.
pub struct PrivilegedGroups;

#[async_trait::async_trait]
impl Authorizer for PrivilegedGroups {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        if self.allows_everything_of(&attrs.user) {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, String::new())
        }
    }

    fn allows_everything_of(&self, user: &UserInfo) -> bool {
        user.groups.iter().any(|g| g == super::MASTERS_GROUP)
    }
}

/// Authorizers asked in order (kube's union): the first `Allow` or `Deny` decides;
/// reasons of those without an opinion are joined with ", ".
pub struct Union(pub Vec<Arc<dyn Authorizer>>);

#[async_trait::async_trait]
impl Authorizer for Union {
    async fn authorize(&self, attrs: &Attributes) -> (Decision, String) {
        let mut reasons = Vec::new();
        for a in &self.0 {
            let (decision, reason) = a.authorize(attrs).await;
            match decision {
                Decision::Allow | Decision::Deny => return (decision, reason),
                Decision::NoOpinion => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
            }
        }
        (Decision::NoOpinion, reasons.join(", "))
    }

    /// The first authorizer asked decides for such users.
    fn allows_everything_of(&self, user: &UserInfo) -> bool {
        self.0.first().is_some_and(|a| a.allows_everything_of(user))
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesInfo {
        let mut all = RulesInfo::default();
        for a in &self.0 {
            let info = a.rules_for(user, namespace);
            all.resource_rules.extend(info.resource_rules);
            all.non_resource_rules.extend(info.non_resource_rules);
            all.incomplete |= info.incomplete;
            for e in info.errors {
                if !all.errors.contains(&e) {
                    all.errors.push(e);
                }
            }
        }
        all
    }
}

/// An `--authorization-mode` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `AlwaysAllow`.
    AlwaysAllow,
    /// `AlwaysDeny`.
    AlwaysDeny,
    /// `RBAC` (`auth::rbac`).
    Rbac,
}

impl Mode {
    /// Parse `--authorization-mode` (comma-separated), with kube's errors.
    pub fn parse(flag: &str) -> Result<Vec<Mode>, AuthConfigError> {
        let names: Vec<&str> = flag.split(',').filter(|m| !m.is_empty()).collect();
        if names.is_empty() {
            return Err(AuthConfigError::NoMode);
        }
        let mut modes = Vec::new();
        for name in &names {
            let mode = match *name {
                "AlwaysAllow" => Mode::AlwaysAllow,
                "AlwaysDeny" => Mode::AlwaysDeny,
                "RBAC" => Mode::Rbac,
                "ABAC" | "Webhook" | "Node" => {
                    return Err(AuthConfigError::UnsupportedMode(name.to_string()))
                }
                _ => return Err(AuthConfigError::InvalidMode(name.to_string())),
            };
            if modes.contains(&mode) {
                return Err(AuthConfigError::RepeatedMode(
                    names.iter().map(|n| n.to_string()).collect(),
                ));
            }
            modes.push(mode);
        }
        Ok(modes)
    }
}

/// The authorizer of `--authorization-mode`: one mode alone, several as a [`Union`];
/// `rbac` serves the `RBAC` mode.
pub fn build(modes: &[Mode], rbac: Arc<dyn Authorizer>) -> Arc<dyn Authorizer> {
    let mut each: Vec<Arc<dyn Authorizer>> = modes
        .iter()
        .map(|m| -> Arc<dyn Authorizer> {
            match m {
                Mode::AlwaysAllow => Arc::new(AlwaysAllow),
                Mode::AlwaysDeny => Arc::new(AlwaysDeny),
                Mode::Rbac => rbac.clone(),
            }
        })
        .collect();
    if each.len() == 1 && modes == [Mode::AlwaysAllow] {
        return each.remove(0);
    }
    each.insert(0, Arc::new(PrivilegedGroups));
    Arc::new(Union(each))
}

/// kube's 403 for a request its authorizers did not allow.
pub fn forbidden(attrs: &Attributes, reason: &str) -> Status {
    let user = go_quote(&attrs.user.username);
    let verb = &attrs.verb;
    let mut message = if !attrs.resource_request {
        format!("User {user} cannot {verb} path {}", go_quote(&attrs.path))
    } else {
        let mut resource = attrs.resource.clone();
        if !attrs.subresource.is_empty() {
            resource = format!("{resource}/{}", attrs.subresource);
        }
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {}", go_quote(&attrs.namespace))
        };
        format!(
            "User {user} cannot {verb} resource {} in API group {} {scope}",
            go_quote(&resource),
            go_quote(&attrs.api_group)
        )
    };
    // kube escapes HTML in the message.
    message = message
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let (group, resource) = if attrs.resource_request {
        (attrs.api_group.as_str(), attrs.resource.as_str())
    } else {
        ("", "")
    };
    let qualified = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    let full = if qualified.is_empty() {
        format!("forbidden: {message}")
    } else if attrs.name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!(
            "{qualified} {} is forbidden: {message}",
            go_quote(&attrs.name)
        )
    };
    Status {
        code: 403,
        reason: "Forbidden".into(),
        message: full,
        details: Some(Box::new(Details {
            name: attrs.name.clone(),
            group: group.to_string(),
            kind: resource.to_string(),
            ..Default::default()
        })),
        metadata_continue: None,
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(verb: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo {
                username: "alice".into(),
                ..Default::default()
            },
            verb: verb.into(),
            resource_request: true,
            api_group: "stable.example.com".into(),
            api_version: "v1".into(),
            resource: "crontabs".into(),
            namespace: ns.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    #[test]
    fn forbidden_messages_as_kube() {
        let s = forbidden(&attrs("get", "default", "my-cron"), "");
        assert_eq!(
            s.message,
            "crontabs.stable.example.com \"my-cron\" is forbidden: User \"alice\" cannot get resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"default\""
        );
        let s = forbidden(&attrs("list", "", ""), "Everything is forbidden.");
        assert_eq!(
            s.message,
            "crontabs.stable.example.com is forbidden: User \"alice\" cannot list resource \"crontabs\" in API group \"stable.example.com\" at the cluster scope: Everything is forbidden."
        );
        let mut a = attrs("get", "", "");
        a.resource_request = false;
        a.path = "/healthz".into();
        let s = forbidden(&a, "");
        assert_eq!(
            s.message,
            "forbidden: User \"alice\" cannot get path \"/healthz\""
        );
        assert_eq!(s.to_json()["details"], serde_json::json!({}));
    }

    #[test]
    fn mode_flag_errors_as_kube() {
        assert_eq!(
            Mode::parse("AlwaysAllow").ok(),
            Some(vec![Mode::AlwaysAllow])
        );
        let err = |flag: &str| Mode::parse(flag).unwrap_err().to_string();
        assert_eq!(
            err("Bogus"),
            "authorization-mode \"Bogus\" is not a valid mode"
        );
        assert_eq!(
            err("AlwaysDeny,AlwaysDeny"),
            "authorization-mode [\"AlwaysDeny\" \"AlwaysDeny\"] has mode specified more than once"
        );
        assert_eq!(err(""), "at least one authorization-mode must be passed");
        assert_eq!(
            err("AlwaysAllow,Node"),
            "authorization-mode \"Node\" is not supported by crd-apiserver"
        );
    }

    #[tokio::test]
    async fn union_stops_at_the_first_opinion() {
        let u = Union(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        assert_eq!(u.authorize(&attrs("get", "", "")).await.0, Decision::Allow);
        let u = Union(vec![Arc::new(AlwaysDeny)]);
        assert_eq!(
            u.authorize(&attrs("get", "", "")).await,
            (Decision::NoOpinion, "Everything is forbidden.".to_string())
        );
    }

    #[tokio::test]
    async fn system_masters_are_allowed_whatever_the_modes() {
        let deny = build(&[Mode::AlwaysDeny], Arc::new(AlwaysDeny));
        let mut root = attrs("delete", "default", "x");
        root.user.groups = vec![crate::auth::MASTERS_GROUP.into()];
        assert_eq!(deny.authorize(&root).await.0, Decision::Allow);
        assert_eq!(
            deny.authorize(&attrs("delete", "default", "x")).await,
            (Decision::NoOpinion, "Everything is forbidden.".to_string())
        );
    }

    // kube's union rule resolver: the rules of every mode in order; the privileged
    // group authorizer is no rule resolver.
    #[test]
    fn union_rules_are_those_of_each_mode() {
        let user = attrs("get", "", "").user;
        let deny_then_allow = build(&[Mode::AlwaysDeny, Mode::AlwaysAllow], Arc::new(AlwaysDeny));
        assert_eq!(deny_then_allow.rules_for(&user, "default"), all_rules());
        let deny = build(&[Mode::AlwaysDeny], Arc::new(AlwaysDeny));
        assert_eq!(deny.rules_for(&user, "default"), RulesInfo::default());
        let info = RulesInfo {
            errors: vec!["a".into(), "b".into()],
            ..Default::default()
        };
        assert_eq!(info.evaluation_error(), "[a, b]");
    }
}
