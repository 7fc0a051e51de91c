//! What a write is asked to do beyond the object itself (kube's create, update and
//! patch options as the stages read them), and what admitting it produced.

use crate::status::{GroupResource, Status};
use crate::user::UserInfo;
use serde_json::Value;

/// `fieldValidation` query parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop unknown fields silently.
    Ignore,
    /// Drop unknown fields and warn (kube's default).
    #[default]
    Warn,
    /// Reject unknown and duplicate fields.
    Strict,
}

impl FieldValidation {
    /// Parse the query value; kube answers 400 for anything else.
    pub fn parse(s: Option<&str>) -> Result<Self, Status> {
        match s {
            None | Some("") => Ok(FieldValidation::Warn),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => Err(Status::bad_request(format!(
                "fieldValidation parameter unsupported: {other}. Must be one of: Ignore, Warn, Strict"
            ))),
        }
    }
}

/// Which write is being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// POST, or apply creating the object.
    Create,
    /// PUT, PATCH, apply on an existing object.
    Update,
    /// DELETE of one object (and of each object of a deletecollection).
    Delete,
}

/// What the request asks of a write beyond the object itself.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// `fieldValidation`.
    pub field_validation: FieldValidation,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// The subresource written (`""`, `status`, `scale`).
    pub subresource: String,
    /// Collect a pipeline trace (header `X-Pipeline-Trace: true` or `--log-pipeline`).
    pub trace: bool,
    /// Duplicate fields found while decoding the body (kube reports them like unknown fields).
    pub duplicate_fields: Vec<String>,
    /// The write is a patch (kube words strict-decoding failures of patches differently).
    pub is_patch: bool,
    /// The write is a server-side apply (managedFields come from the merge, not from
    /// recording an Update).
    pub is_apply: bool,
    /// The field manager: `?fieldManager=`, else kube's prefix of the user agent.
    pub field_manager: String,
    /// Who asks (AdmissionReview `userInfo`), shared with the request.
    pub user: std::sync::Arc<UserInfo>,
}

/// The outcome of admitting a write: the object to store, plus what the client is told.
#[derive(Clone, Debug, Default)]
pub struct Admitted {
    /// The object, ready to store.
    pub object: Value,
    /// `Warning` headers (text only; the HTTP layer adds `299 - "..."`).
    pub warnings: Vec<String>,
    /// Pipeline trace lines (`stage: what changed`).
    pub trace: Vec<String>,
}

/// Static facts about the kind a request addresses.
#[derive(Clone, Debug, PartialEq)]
pub struct Descriptor {
    /// Group and plural resource (for messages and details).
    pub gr: GroupResource,
    /// The version served on this endpoint.
    pub version: String,
    /// `Kind`.
    pub kind: String,
    /// `ListKind`.
    pub list_kind: String,
    /// Singular name.
    pub singular: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Storage key root: `{prefix}/{group}/{plural}` (core: `{prefix}/{plural}`).
    pub key_root: String,
    /// Whether the status subresource is on.
    pub status_subresource: bool,
    /// Whether `metadata.generation` is maintained.
    pub has_generation: bool,
}

impl Descriptor {
    /// `apiVersion` of objects on this endpoint.
    pub fn api_version(&self) -> String {
        if self.gr.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.gr.group, self.version)
        }
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: &str, name: &str) -> String {
        // Every request makes one: built by hand, not by `format!`.
        let mut key = String::with_capacity(self.key_root.len() + namespace.len() + name.len() + 2);
        key.push_str(&self.key_root);
        key.push('/');
        if self.namespaced {
            key.push_str(namespace);
            key.push('/');
        }
        key.push_str(name);
        key
    }

    /// The key prefix of a list (all namespaces when `namespace` is empty).
    pub fn list_prefix(&self, namespace: &str) -> String {
        if self.namespaced && !namespace.is_empty() {
            format!("{}/{}/", self.key_root, namespace)
        } else {
            format!("{}/", self.key_root)
        }
    }
}

/// `DeleteOptions` that matter here.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `propagationPolicy`.
    pub propagation_policy: Option<String>,
    /// `orphanDependents` (deprecated; kube still honours it).
    pub orphan_dependents: Option<bool>,
    /// `gracePeriodSeconds` (query or body).
    pub grace_period_seconds: Option<i64>,
    /// Part of a deletecollection in this namespace (`""`: all namespaces): kube's
    /// admission then sees the collection's namespace and no name.
    pub collection: Option<String>,
    /// Who asks (AdmissionReview `userInfo`), shared with the request.
    pub user: std::sync::Arc<UserInfo>,
}
