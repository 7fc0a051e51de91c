//! What a request asks to do (kube's `authorizer.Attributes`), an authorizer's
//! answer, and the synchronous access check CEL's `authorizer` library asks.

use crate::user::UserInfo;

/// What a request asks to do (kube's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// kube verb: get, list, watch, create, update, patch, delete, deletecollection
    /// for resources; the lowercased HTTP method for other paths.
    pub verb: String,
    /// True for `/api/...`, `/apis/...` resource requests.
    pub resource_request: bool,
    /// API group (empty for core).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`status`, `scale`).
    pub subresource: String,
    /// Namespace (empty for cluster-scoped requests).
    pub namespace: String,
    /// Object name (empty for collections).
    pub name: String,
    /// The URL path (non-resource requests).
    pub path: String,
}

/// An authorizer's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed: later authorizers are not asked.
    Allow,
    /// Denied: later authorizers are not asked.
    Deny,
    /// No opinion: ask the next authorizer; forbidden when none is left.
    NoOpinion,
}

/// Why an authorizer could not decide; the text is what CEL's `error()` of the
/// decision returns.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The authorizer did not answer at once (CEL evaluation cannot wait).
    #[error("the authorizer did not answer synchronously")]
    NotReady,
}

/// A decision asked for while an expression evaluates (CEL's `authorizer.check`):
/// the server answers it with its authorizer. `Err` when it could not decide at once.
pub trait AccessCheck: Send + Sync {
    /// The decision and its reason for `attrs`.
    fn check(&self, attrs: &Attributes) -> Result<(Decision, String), AccessError>;
}
