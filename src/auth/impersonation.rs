//! Impersonation (`kubectl --as`, `--as-group`, `--as-uid`, `Impersonate-Extra-*`), as
//! kube's `WithImpersonation` filter: after authentication, each requested identity is
//! authorized for the requester with the verb `impersonate` (`users`, `groups`,
//! `serviceaccounts` in their namespace, `uids` and `userextras/<key>` in
//! `authentication.k8s.io`), then the request runs as the impersonated user.

use super::authz::{forbidden, Attributes, Authorizer, Decision};
use super::{UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use crate::status::Status;
use http::HeaderMap;
use std::collections::BTreeMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";

/// One identity asked for (kube's `ObjectReference` of the request).
#[derive(Debug, PartialEq)]
enum Wanted {
    User(String),
    ServiceAccount { namespace: String, name: String },
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Wanted {
    /// Go's `%v` of the `ObjectReference` kube builds (`{Kind Namespace Name UID
    /// APIVersion ResourceVersion FieldPath}`), for its 400 message.
    fn go_v(&self) -> String {
        let (kind, ns, name, api_version, field_path) = match self {
            Wanted::User(n) => ("User", "", n.as_str(), "", ""),
            Wanted::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Wanted::Group(n) => ("Group", "", n.as_str(), "", ""),
            Wanted::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Wanted::Uid(u) => ("UID", "", u.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field_path}}}")
    }

    /// What the requester must be allowed to `impersonate`.
    fn attributes(&self, requester: &UserInfo) -> Attributes {
        let (group, resource, subresource, namespace, name) = match self {
            Wanted::User(n) => ("", "users", "", "", n.as_str()),
            Wanted::ServiceAccount { namespace, name } => {
                ("", "serviceaccounts", "", namespace.as_str(), name.as_str())
            }
            Wanted::Group(n) => ("", "groups", "", "", n.as_str()),
            Wanted::Extra { key, value } => (
                "authentication.k8s.io",
                "userextras",
                key.as_str(),
                "",
                value.as_str(),
            ),
            Wanted::Uid(u) => ("authentication.k8s.io", "uids", "", "", u.as_str()),
        };
        Attributes {
            user: requester.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            path: String::new(),
        }
    }
}

/// Whether a request asks to impersonate anyone.
pub fn requested(headers: &HeaderMap) -> bool {
    headers.keys().any(|k| {
        let k = k.as_str();
        k == USER || k == GROUP || k == UID || k.starts_with(EXTRA_PREFIX)
    })
}

/// The identities a request asks for, in kube's order; a 400 when groups, extras or
/// a uid come without a user.
fn wanted(headers: &HeaderMap) -> Result<Vec<Wanted>, Status> {
    let text = |v: &http::HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    let mut out = Vec::new();
    let user = headers.get(USER).map(text).filter(|u| !u.is_empty());
    if let Some(u) = &user {
        out.push(match split_service_account(u) {
            Some((namespace, name)) => Wanted::ServiceAccount { namespace, name },
            None => Wanted::User(u.clone()),
        });
    }
    let mut others = false;
    for g in headers.get_all(GROUP) {
        others = true;
        out.push(Wanted::Group(text(g)));
    }
    let mut extra_keys: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with(EXTRA_PREFIX))
        .collect();
    extra_keys.sort_unstable();
    extra_keys.dedup();
    for name in extra_keys {
        others = true;
        let key = percent_decode(&name[EXTRA_PREFIX.len()..].to_ascii_lowercase());
        for v in headers.get_all(name) {
            out.push(Wanted::Extra {
                key: key.clone(),
                value: text(v),
            });
        }
    }
    if let Some(uid) = headers.get(UID).map(text).filter(|u| !u.is_empty()) {
        others = true;
        out.push(Wanted::Uid(uid));
    }
    if others && user.is_none() {
        let list: Vec<String> = out.iter().map(Wanted::go_v).collect();
        return Err(Status::bad_request(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        )));
    }
    Ok(out)
}

/// kube's `serviceaccount.SplitUsername`: `system:serviceaccount:NS:NAME`.
fn split_service_account(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    if ns.is_empty() || name.is_empty() || name.contains(':') {
        return None;
    }
    Some((ns.to_string(), name.to_string()))
}

/// Go's `url.PathUnescape`, keeping the text as it is when it is malformed.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok());
            match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                Some(byte) => {
                    out.push(byte);
                    i += 3;
                    continue;
                }
                None => return s.to_string(),
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

/// Apply the request's impersonation headers to `requester`: the impersonated user
/// when every identity asked for is allowed, kube's 403 naming the first that is not.
pub async fn impersonate(
    authorizer: &dyn Authorizer,
    requester: UserInfo,
    headers: &HeaderMap,
) -> Result<UserInfo, Status> {
    let wanted = wanted(headers)?;
    if wanted.is_empty() {
        return Ok(requester);
    }
    let groups_given = headers.contains_key(GROUP);
    let mut user = UserInfo {
        username: String::new(),
        uid: String::new(),
        groups: Vec::new(),
        extra: BTreeMap::new(),
    };
    for w in &wanted {
        let attrs = w.attributes(&requester);
        let (decision, reason) = authorizer.authorize(&attrs).await;
        if decision != Decision::Allow {
            return Err(forbidden(&attrs, &reason));
        }
        match w {
            Wanted::User(n) => user.username = n.clone(),
            Wanted::ServiceAccount { namespace, name } => {
                user.username = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_given {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Wanted::Group(g) => user.groups.push(g.clone()),
            Wanted::Extra { key, value } => user
                .extra
                .entry(key.clone())
                .or_default()
                .push(value.clone()),
            Wanted::Uid(u) => user.uid = u.clone(),
        }
    }
    // kube: the impersonated user is authenticated unless said otherwise.
    if user.username != ANONYMOUS_USER {
        if !user
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP)
        {
            user.groups.push(AUTHENTICATED_GROUP.into());
        }
    } else if !user.groups.iter().any(|g| g == UNAUTHENTICATED_GROUP) {
        user.groups.push(UNAUTHENTICATED_GROUP.into());
    }
    tracing::debug!(requester = %requester.username, as_user = %user.username, "impersonating");
    Ok(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn groups_without_a_user_are_a_bad_request_in_kubes_words() {
        let err = wanted(&headers(&[
            ("Impersonate-Group", "a"),
            ("Impersonate-Uid", "u1"),
        ]))
        .unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "requested [{Group  a    } {UID  u1  authentication.k8s.io/v1  }] without impersonating a user"
        );
    }

    #[test]
    fn service_account_users_and_extras_are_recognised() {
        let w = wanted(&headers(&[
            ("Impersonate-User", "system:serviceaccount:ns1:sa"),
            ("Impersonate-Extra-Scopes%2Fa", "x"),
            ("Impersonate-Extra-Scopes%2Fa", "y"),
        ]))
        .unwrap();
        assert_eq!(
            w,
            vec![
                Wanted::ServiceAccount {
                    namespace: "ns1".into(),
                    name: "sa".into()
                },
                Wanted::Extra {
                    key: "scopes/a".into(),
                    value: "x".into()
                },
                Wanted::Extra {
                    key: "scopes/a".into(),
                    value: "y".into()
                },
            ]
        );
        let a = w[0].attributes(&UserInfo::anonymous());
        assert_eq!(
            (
                a.verb.as_str(),
                a.resource.as_str(),
                a.namespace.as_str(),
                a.name.as_str()
            ),
            ("impersonate", "serviceaccounts", "ns1", "sa")
        );
    }
}
