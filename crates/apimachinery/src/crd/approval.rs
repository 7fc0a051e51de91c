//! The API approval policy of protected groups (`*.k8s.io`, `*.kubernetes.io`): the
//! `api-approved.kubernetes.io` annotation's state, checked on writes and reported as a
//! condition.

use super::{str_of, API_APPROVED_ANNOTATION};
use crate::field::{Error, ErrorList, Path};
use serde_json::{json, Value};

const APPROVAL_DOC: &str = "see https://github.com/kubernetes/enhancements/pull/1111";

/// Groups reserved for Kubernetes, whose CRDs need the API approval annotation.
pub fn is_protected_community_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Approval {
    Approved,
    Bypassed,
    Invalid,
    Missing,
}

pub(super) fn approval_state(crd: &Value) -> (Approval, String) {
    let annotation = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    if annotation.is_empty() {
        return (
            Approval::Missing,
            format!("protected groups must have approval annotation {API_APPROVED_ANNOTATION:?}, {APPROVAL_DOC}"),
        );
    }
    if annotation.starts_with("unapproved") {
        return (
            Approval::Bypassed,
            format!("not approved: {}", crate::field::go_quote(annotation)),
        );
    }
    if is_absolute_url_with_host(annotation) {
        return (Approval::Approved, format!("approved in {annotation}"));
    }
    (
        Approval::Invalid,
        format!(
            "protected groups must have approval annotation {API_APPROVED_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", {APPROVAL_DOC}"
        ),
    )
}

/// `scheme://host…` with a valid scheme and a non-empty host, as Go's
/// `url.ParseRequestURI` accepts it.
fn is_absolute_url_with_host(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    scheme_ok && !host.is_empty() && !s.contains(' ')
}

pub(super) fn validate_api_approval(crd: &Value, old: Option<&Value>, errs: &mut ErrorList) {
    if !is_protected_community_group(str_of(crd.pointer("/spec/group"))) {
        return;
    }
    let (state, reason) = approval_state(crd);
    if let Some(old) = old {
        // An unchanged state never fails, so controllers updating the spec keep working.
        if approval_state(old).0 == state {
            return;
        }
    }
    let fld = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVED_ANNOTATION);
    let value = crd
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("");
    match state {
        Approval::Approved | Approval::Bypassed => {}
        Approval::Missing => errs.push(Error::required(&fld, reason)),
        Approval::Invalid => errs.push(Error::invalid(&fld, json!(value), reason)),
    }
}
