//! The errors of the admission layer, in kube's words. None reaches a client as it is:
//! a failed webhook call becomes the webhook's `Status` in `webhook::call`, a policy
//! binding that cannot be configured a denial in `policy`, an audit annotation that
//! cannot be set a log line.

use crate::selector::SelectorError;
use crate::status::Status;
use crate::storage::StorageError;
use crate::webhook::WebhookError;

/// Why admission could not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    /// A webhook could not be called.
    #[error("failed to call webhook: {0}")]
    WebhookCall(#[source] WebhookError),
    /// A webhook's AdmissionReview has no `response`.
    #[error("received invalid webhook response: response was absent")]
    ResponseAbsent,
    /// A webhook answered another request.
    #[error("received invalid webhook response: expected response.uid={expected:?}, got {got:?}")]
    ResponseUid {
        /// The request's uid.
        expected: String,
        /// The answer's uid.
        got: String,
    },
    /// A policy's `paramKind` names no served kind (read through the store).
    #[error("failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'")]
    ParamKindNotFound {
        /// `paramKind.apiVersion`.
        api_version: String,
        /// `paramKind.kind`.
        kind: String,
    },
    /// A policy's `paramKind` names no served kind (found by the binding).
    #[error("paramKind kind `&ParamKind{{APIVersion:{api_version},Kind:{kind},}}` not known")]
    ParamKindUnknown {
        /// `paramKind.apiVersion`.
        api_version: String,
        /// `paramKind.kind`.
        kind: String,
    },
    /// The server is going away.
    #[error("server shutting down")]
    ShuttingDown,
    /// Reading params through the store failed (the `Status`'s message).
    #[error("{}", .0.message)]
    Params(Box<Status>),
    /// A namespaced `paramRef` without namespace for a cluster-scoped request.
    #[error(
        "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
    )]
    NamespacedParamRef,
    /// `paramRef.namespace` for a cluster-scoped `paramKind`.
    #[error("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")]
    ParamRefNamespace,
    /// Both `paramRef.name` and `paramRef.selector`.
    #[error("paramRef.name and paramRef.selector are mutually exclusive")]
    ParamRefNameAndSelector,
    /// Neither `paramRef.name` nor `paramRef.selector`.
    #[error("one of name or selector must be provided")]
    ParamRefNoNameOrSelector,
    /// `paramRef.selector` is no label selector.
    #[error(transparent)]
    ParamRefSelector(#[from] SelectorError),
    /// No params, and `parameterNotFoundAction: Deny`.
    #[error("no params found for policy binding with `Deny` parameterNotFoundAction")]
    NoParams,
    /// An audit annotation key without exactly one `/`.
    #[error("annotation key has invalid format, the right format is a DNS subdomain prefix and '/' and key name. (e.g. 'podsecuritypolicy.admission.k8s.io/admit-policy')")]
    AnnotationKeyFormat,
    /// An audit annotation key that is no qualified name (the name's errors, joined).
    #[error("annotation key has invalid format {0}. A qualified name like 'podsecuritypolicy.admission.k8s.io/admit-policy' is required.")]
    AnnotationKeyName(String),
    /// The annotations' lock is poisoned (std's text).
    #[error("poisoned lock: another task failed inside")]
    AnnotationsPoisoned,
    /// An audit annotation set twice with different values.
    #[error("admission annotations are not allowd to be overwritten, key:{key:?}, old value: {{Metadata {old}}}, new value: {{Metadata {value}}}")]
    AnnotationOverwrite {
        /// The key.
        key: String,
        /// The value it has.
        old: String,
        /// The value refused.
        value: String,
    },
    /// Reading policies or configurations from storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}
