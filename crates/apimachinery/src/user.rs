//! Who a request is from (kube's `user.Info`) and kube's well-known users and groups.

use std::collections::BTreeMap;

/// kube's user of unauthenticated requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// kube's group of unauthenticated requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// kube's group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// kube's group whose members may do anything (RBAC's privileged group).
pub const MASTERS_GROUP: &str = "system:masters";
/// The user of plain-HTTP requests without credentials, as kube's former insecure port.
pub const UNSECURED_USER: &str = "system:unsecured";
/// The user of the token the server writes into its `--kubeconfig-out` over HTTPS.
pub const ADMIN_USER: &str = "system:admin";

/// The authenticated user of a request (kube's `user.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub username: String,
    /// Unique id (empty when the authenticator knows none).
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra attributes (front-proxy `X-Remote-Extra-*` headers), keys lowercased.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// kube's anonymous user.
    pub fn anonymous() -> Self {
        UserInfo {
            username: ANONYMOUS_USER.into(),
            groups: vec![UNAUTHENTICATED_GROUP.into()],
            ..Default::default()
        }
    }

    /// The user of credential-less requests on the loopback plain-HTTP port: a
    /// superuser, as kube's former insecure port.
    pub fn unsecured() -> Self {
        UserInfo {
            username: UNSECURED_USER.into(),
            groups: vec![MASTERS_GROUP.into(), AUTHENTICATED_GROUP.into()],
            ..Default::default()
        }
    }

    /// The `userInfo` of an AdmissionReview or SubjectAccessReview (kube's
    /// `authentication/v1.UserInfo`: empty fields left out).
    pub fn to_json(&self) -> serde_json::Value {
        let mut out = serde_json::Map::new();
        if !self.username.is_empty() {
            out.insert("username".into(), self.username.clone().into());
        }
        if !self.uid.is_empty() {
            out.insert("uid".into(), self.uid.clone().into());
        }
        if !self.groups.is_empty() {
            out.insert("groups".into(), serde_json::json!(self.groups));
        }
        if !self.extra.is_empty() {
            out.insert("extra".into(), serde_json::json!(self.extra));
        }
        serde_json::Value::Object(out)
    }

    /// Add `system:authenticated` unless the user is anonymous or already in it
    /// (kube's `AuthenticatedGroupAdder`).
    pub fn with_authenticated_group(mut self) -> Self {
        let marked = self
            .groups
            .iter()
            .any(|g| g == AUTHENTICATED_GROUP || g == UNAUTHENTICATED_GROUP);
        if self.username != ANONYMOUS_USER && !marked {
            self.groups.push(AUTHENTICATED_GROUP.into());
        }
        self
    }
}
