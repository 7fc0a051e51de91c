//! `authorization.k8s.io/v1` SelfSubjectAccessReviews, SubjectAccessReviews,
//! LocalSubjectAccessReviews and SelfSubjectRulesReviews (`pkg/registry/authorization/*`):
//! create-only kinds that are never stored. An access review asks the server's
//! authorizer about the attributes in the spec and answers with the review and its
//! `status` (`allowed`, `denied`, `reason`); `kubectl auth can-i` is a
//! SelfSubjectAccessReview. A rules review lists the rules the requesting user holds in
//! `spec.namespace` (`kubectl auth can-i --list`), as the authorizers resolve them.
//!
//! Not done: the checks of `fieldSelector`/`labelSelector` attributes (RBAC ignores
//! selectors anyway).

use crate::auth::authz::{Attributes, Authorizer, Decision};
use crate::auth::UserInfo;
use crate::field::{Error, ErrorList, Path};
use crate::rest::object::str_field;
use crate::status::{GroupResource, Status};
use serde_json::{json, Map, Value};

/// The API group of access reviews.
pub const GROUP: &str = "authorization.k8s.io";

/// Which review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// `SelfSubjectAccessReview`: may the requesting user ...?
    SelfSubject,
    /// `SubjectAccessReview`: may the user in the spec ...?
    Subject,
    /// `LocalSubjectAccessReview`: a SubjectAccessReview within one namespace.
    LocalSubject,
    /// `SelfSubjectRulesReview`: what may the requesting user do in a namespace?
    SelfSubjectRules,
}

impl Review {
    /// Every review kind.
    pub const ALL: [Review; 4] = [
        Review::SelfSubject,
        Review::Subject,
        Review::LocalSubject,
        Review::SelfSubjectRules,
    ];

    /// The review served at `gr`, if any.
    pub fn of(gr: &GroupResource) -> Option<Review> {
        if gr.group != GROUP {
            return None;
        }
        Review::ALL
            .into_iter()
            .find(|r| r.resource() == gr.resource)
    }

    /// Plural resource name.
    pub fn resource(self) -> &'static str {
        match self {
            Review::SelfSubject => "selfsubjectaccessreviews",
            Review::Subject => "subjectaccessreviews",
            Review::LocalSubject => "localsubjectaccessreviews",
            Review::SelfSubjectRules => "selfsubjectrulesreviews",
        }
    }

    /// `Kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Review::SelfSubject => "SelfSubjectAccessReview",
            Review::Subject => "SubjectAccessReview",
            Review::LocalSubject => "LocalSubjectAccessReview",
            Review::SelfSubjectRules => "SelfSubjectRulesReview",
        }
    }
}

/// A present, non-null object field.
fn object_of<'a>(v: &'a Value, field: &str) -> Option<&'a Value> {
    v.get(field).filter(|x| x.is_object())
}

/// Copy the non-empty string fields `names` of `from` (kube's `omitempty` encoding).
fn strings_of(from: &Value, names: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for n in names {
        let s = str_field(from, n);
        if !s.is_empty() {
            out.insert((*n).to_string(), json!(s));
        }
    }
    out
}

/// The spec as kube encodes it back (known fields only, empty ones omitted).
fn normalized_spec(review: Review, spec: &Value) -> Value {
    let mut out = Map::new();
    if let Some(ra) = object_of(spec, "resourceAttributes") {
        let mut m = strings_of(
            ra,
            &[
                "namespace",
                "verb",
                "group",
                "version",
                "resource",
                "subresource",
                "name",
            ],
        );
        for sel in ["fieldSelector", "labelSelector"] {
            if let Some(s) = object_of(ra, sel) {
                m.insert(sel.to_string(), s.clone());
            }
        }
        out.insert("resourceAttributes".into(), Value::Object(m));
    }
    if let Some(nra) = object_of(spec, "nonResourceAttributes") {
        out.insert(
            "nonResourceAttributes".into(),
            Value::Object(strings_of(nra, &["path", "verb"])),
        );
    }
    if review != Review::SelfSubject {
        out.extend(strings_of(spec, &["user"]));
        if let Some(g) = spec
            .get("groups")
            .and_then(Value::as_array)
            .filter(|g| !g.is_empty())
        {
            out.insert("groups".into(), Value::Array(g.clone()));
        }
        if let Some(e) = spec
            .get("extra")
            .and_then(Value::as_object)
            .filter(|e| !e.is_empty())
        {
            out.insert("extra".into(), Value::Object(e.clone()));
        }
        out.extend(strings_of(spec, &["uid"]));
    }
    Value::Object(out)
}

/// kube's `Validate*AccessReview` (selector attributes not checked).
fn validate(review: Review, obj: &Value, spec: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let ra = object_of(spec, "resourceAttributes");
    let nra = object_of(spec, "nonResourceAttributes");
    match (ra, nra) {
        (Some(_), Some(n)) => errs.push(Error::invalid(
            &path.child("nonResourceAttributes"),
            n.clone(),
            "cannot be specified in combination with resourceAttributes",
        )),
        (None, None) => errs.push(Error::invalid(
            &path.child("resourceAttributes"),
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        )),
        _ => {}
    }
    if review != Review::SelfSubject {
        let user = str_field(spec, "user");
        let no_groups = spec
            .get("groups")
            .and_then(Value::as_array)
            .is_none_or(|g| g.is_empty());
        if user.is_empty() && no_groups {
            errs.push(Error::invalid(
                &path.child("user"),
                json!(user),
                "at least one of user or group must be specified",
            ));
        }
    }
    let mut meta = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    meta.remove("managedFields");
    // kube compares with the zero ObjectMeta: zero values count as empty.
    meta.retain(|_, v| !super::object::is_zero(v));
    let namespace = meta
        .remove("namespace")
        .and_then(|n| n.as_str().map(str::to_string))
        .unwrap_or_default();
    if review == Review::LocalSubject {
        if !meta.is_empty() {
            errs.push(Error::invalid(
                &Path::new("metadata"),
                Value::Object(meta),
                "must be empty except for namespace",
            ));
        }
        if let Some(ra) = ra {
            let ns = str_field(ra, "namespace");
            if ns != namespace {
                errs.push(Error::invalid(
                    &Path::new("spec.resourceAttributes.namespace"),
                    json!(ns),
                    "must match metadata.namespace",
                ));
            }
        }
        if let Some(n) = nra {
            errs.push(Error::invalid(
                &Path::new("spec.nonResourceAttributes"),
                n.clone(),
                "disallowed on this kind of request",
            ));
        }
    } else if !meta.is_empty() || !namespace.is_empty() {
        if !namespace.is_empty() {
            meta.insert("namespace".into(), json!(namespace));
        }
        errs.push(Error::invalid(
            &Path::new("metadata"),
            Value::Object(meta),
            "must be empty",
        ));
    }
    errs
}

/// The user a SubjectAccessReview asks about.
fn spec_user(spec: &Value) -> UserInfo {
    let strings = |v: &Value| -> Vec<String> { crate::object::strings(Some(v)) };
    UserInfo {
        username: str_field(spec, "user").to_string(),
        uid: str_field(spec, "uid").to_string(),
        groups: spec.get("groups").map(strings).unwrap_or_default(),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    }
}

/// The authorizer attributes a spec describes (kube's `ResourceAttributesFrom` and
/// `NonResourceAttributesFrom`: an empty version means all versions).
fn attributes(user: UserInfo, spec: &Value) -> Attributes {
    if let Some(ra) = object_of(spec, "resourceAttributes") {
        let version = match str_field(ra, "version") {
            "" => "*",
            v => v,
        };
        return Attributes {
            user,
            verb: str_field(ra, "verb").to_string(),
            resource_request: true,
            api_group: str_field(ra, "group").to_string(),
            api_version: version.to_string(),
            resource: str_field(ra, "resource").to_string(),
            subresource: str_field(ra, "subresource").to_string(),
            namespace: str_field(ra, "namespace").to_string(),
            name: str_field(ra, "name").to_string(),
            path: String::new(),
        };
    }
    let nra = spec
        .get("nonResourceAttributes")
        .cloned()
        .unwrap_or(Value::Null);
    Attributes {
        user,
        verb: str_field(&nra, "verb").to_string(),
        path: str_field(&nra, "path").to_string(),
        ..Default::default()
    }
}

/// Answer a review created by `requester`: the review with kube's `status`, or kube's
/// 422 for an invalid one. `namespace` is the request's (LocalSubjectAccessReviews).
pub async fn review(
    which: Review,
    obj: &Value,
    requester: &UserInfo,
    namespace: &str,
    authorizer: &dyn Authorizer,
) -> Result<Value, Status> {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if which == Review::SelfSubjectRules {
        return rules_review(&spec, requester, authorizer);
    }
    let errs = validate(which, obj, &spec);
    if !errs.is_empty() {
        // kube's decoder clears the internal object's kind: the message names none.
        return Err(Status::invalid("", GROUP, "", &errs));
    }
    let user = match which {
        Review::SelfSubject | Review::SelfSubjectRules => requester.clone(),
        Review::Subject | Review::LocalSubject => spec_user(&spec),
    };
    let (decision, reason) = authorizer.authorize(&attributes(user, &spec)).await;
    let mut status = json!({"allowed": decision == Decision::Allow});
    if decision == Decision::Deny {
        status["denied"] = json!(true);
    }
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    let metadata = if which == Review::LocalSubject {
        json!({"namespace": namespace})
    } else {
        json!({})
    };
    Ok(json!({
        "kind": which.kind(),
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": metadata,
        "spec": normalized_spec(which, &spec),
        "status": status,
    }))
}

/// kube's SelfSubjectRulesReview answer: no metadata, an empty spec and the rules of
/// `requester` in `spec.namespace` (a 400 without one).
fn rules_review(
    spec: &Value,
    requester: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Result<Value, Status> {
    let namespace = str_field(spec, "namespace");
    if namespace.is_empty() {
        return Err(Status::bad_request("no namespace on request"));
    }
    let info = authorizer.rules_for(requester, namespace);
    let resource_rules: Vec<Value> = info
        .resource_rules
        .iter()
        .map(|r| {
            let mut v = r.to_json();
            if let Some(m) = v.as_object_mut() {
                m.remove("nonResourceURLs");
            }
            v
        })
        .collect();
    let non_resource_rules: Vec<Value> = info
        .non_resource_rules
        .iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("verbs".into(), json!(r.verbs));
            if !r.non_resource_urls.is_empty() {
                m.insert("nonResourceURLs".into(), json!(r.non_resource_urls));
            }
            Value::Object(m)
        })
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": info.incomplete,
    });
    let error = info.evaluation_error();
    if !error.is_empty() {
        status["evaluationError"] = json!(error);
    }
    Ok(json!({
        "kind": Review::SelfSubjectRules.kind(),
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": {},
        "spec": {},
        "status": status,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::authz::{AlwaysAllow, AlwaysDeny};

    fn alice() -> UserInfo {
        UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn self_review_answers_allowed_with_the_spec_echoed() {
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "widgets", "group": "example.com", "bogus": 1}}});
        let out = review(Review::SelfSubject, &body, &alice(), "", &AlwaysAllow)
            .await
            .expect("review");
        assert_eq!(
            out,
            json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {},
                "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "group": "example.com", "resource": "widgets"}},
                "status": {"allowed": true}})
        );
    }

    #[tokio::test]
    async fn no_opinion_is_not_allowed_and_not_denied_with_the_reason() {
        let body = json!({"spec": {"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "bob"}});
        let out = review(Review::Subject, &body, &alice(), "", &AlwaysDeny)
            .await
            .expect("review");
        assert_eq!(
            out["status"],
            json!({"allowed": false, "reason": "Everything is forbidden."})
        );
        assert_eq!(out["spec"]["user"], "bob");
    }

    #[tokio::test]
    async fn subject_review_needs_a_user_or_group_and_one_kind_of_attributes() {
        let body = json!({"spec": {}});
        let err = review(Review::Subject, &body, &alice(), "", &AlwaysAllow)
            .await
            .expect_err("invalid");
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            ".authorization.k8s.io \"\" is invalid: [spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: \"\": at least one of user or group must be specified]"
        );
    }

    #[tokio::test]
    async fn local_review_namespace_must_match() {
        let body = json!({"metadata": {"namespace": "a"},
            "spec": {"resourceAttributes": {"namespace": "b", "verb": "get", "resource": "pods"}, "user": "u"}});
        let err = review(Review::LocalSubject, &body, &alice(), "a", &AlwaysAllow)
            .await
            .expect_err("invalid");
        assert_eq!(
            err.message,
            ".authorization.k8s.io \"\" is invalid: spec.resourceAttributes.namespace: Invalid value: \"b\": must match metadata.namespace"
        );
    }

    #[test]
    fn empty_version_asks_about_all_versions() {
        let spec = json!({"resourceAttributes": {"verb": "get", "resource": "pods"}});
        let a = attributes(alice(), &spec);
        assert_eq!(a.api_version, "*");
        assert!(a.resource_request);
    }

    #[tokio::test]
    async fn rules_review_lists_the_authorizers_rules_without_metadata_or_spec() {
        let body = json!({"metadata": {"name": "x"}, "spec": {"namespace": "default"}});
        let out = review(Review::SelfSubjectRules, &body, &alice(), "", &AlwaysAllow)
            .await
            .expect("review");
        assert_eq!(
            out,
            json!({"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
                "metadata": {}, "spec": {},
                "status": {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                           "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                           "incomplete": false}})
        );
        let out = review(Review::SelfSubjectRules, &body, &alice(), "", &AlwaysDeny)
            .await
            .expect("review");
        assert_eq!(
            out["status"],
            json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false})
        );
    }

    #[tokio::test]
    async fn rules_review_without_a_namespace_is_a_bad_request() {
        let err = review(
            Review::SelfSubjectRules,
            &json!({"spec": {}}),
            &alice(),
            "",
            &AlwaysAllow,
        )
        .await
        .expect_err("no namespace");
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "no namespace on request")
        );
    }
}
