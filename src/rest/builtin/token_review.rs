//! `authentication.k8s.io/v1` TokenReviews and SelfSubjectReviews
//! (`pkg/registry/authentication/{tokenreview,selfsubjectreview}`): create-only kinds
//! that are never stored. A TokenReview asks whether a bearer token authenticates
//! (here: service account tokens; `--token-auth-file` tokens are not reviewed); a
//! SelfSubjectReview answers who the requester is (`kubectl auth whoami`).

use crate::auth::service_account::TokenAuthenticator;
use crate::auth::UserInfo;
use crate::status::{GroupResource, Status};
use serde_json::{json, Value};

/// The API group of the reviews.
pub const GROUP: &str = "authentication.k8s.io";

/// Which review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    /// `TokenReview`: who does this token authenticate as?
    Token,
    /// `SelfSubjectReview`: who am I?
    SelfSubject,
}

impl Review {
    /// Every review kind.
    pub const ALL: [Review; 2] = [Review::Token, Review::SelfSubject];

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
            Review::Token => "tokenreviews",
            Review::SelfSubject => "selfsubjectreviews",
        }
    }

    /// `Kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Review::Token => "TokenReview",
            Review::SelfSubject => "SelfSubjectReview",
        }
    }
}

/// Answer a SelfSubjectReview from `requester`.
pub fn self_subject(requester: &UserInfo, now: chrono::DateTime<chrono::Utc>) -> Value {
    json!({
        "kind": Review::SelfSubject.kind(),
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": {"creationTimestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)},
        "status": {"userInfo": requester.to_json()},
    })
}

/// Answer a TokenReview of `obj` with the bearer-token authenticators of the server:
/// `--token-auth-file`'s tokens, then service account tokens (`tokens`); `namespace` is
/// the request's (kube refuses one).
pub async fn token(
    obj: &Value,
    namespace: &str,
    tokens: &TokenAuthenticator,
    static_tokens: Option<&crate::auth::token::TokenFile>,
) -> Result<Value, Status> {
    if !namespace.is_empty() {
        return Err(Status::bad_request(format!(
            "namespace is not allowed on this type: {namespace}"
        )));
    }
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let token = spec.get("token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(Status::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences = tokens.tokens.audiences_or_default(&spec);
    let mut status = json!({"authenticated": false});
    // Static tokens know no audience: kube answers them with the audiences asked for.
    let from_file = static_tokens.and_then(|f| f.user(token)).cloned();
    let answer = match from_file {
        Some(user) => Ok(Some((user, audiences.clone()))),
        None => tokens.authenticate_for(token, &audiences).await,
    };
    match answer {
        Ok(Some((user, matched))) => {
            let mut user = user;
            // The review sees the user as the request chain does.
            user.groups.push(crate::auth::AUTHENTICATED_GROUP.into());
            status = json!({"authenticated": true, "user": user.to_json(), "audiences": matched});
        }
        Ok(None) => status["error"] = json!("invalid bearer token"),
        Err(e) => status["error"] = json!(e.to_string()),
    }
    let mut out_spec = json!({"token": token});
    if let Some(a) = spec
        .get("audiences")
        .filter(|a| a.as_array().is_some_and(|a| !a.is_empty()))
    {
        out_spec["audiences"] = a.clone();
    }
    Ok(json!({
        "kind": Review::Token.kind(),
        "apiVersion": format!("{GROUP}/v1"),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        "spec": out_spec,
        "status": status,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_subject_review_reports_the_requester() {
        let user = crate::auth::service_account::user_info("ns1", "builder", "u1");
        let review = self_subject(&user, chrono::Utc::now());
        assert_eq!(
            review["status"]["userInfo"],
            json!({"username": "system:serviceaccount:ns1:builder", "uid": "u1",
                "groups": ["system:serviceaccounts", "system:serviceaccounts:ns1"]})
        );
    }

    #[test]
    fn reviews_are_served_at_their_resources() {
        assert_eq!(
            Review::of(&GroupResource::new(GROUP, "tokenreviews")),
            Some(Review::Token)
        );
        assert_eq!(
            Review::of(&GroupResource::new("authorization.k8s.io", "tokenreviews")),
            None
        );
    }
}
