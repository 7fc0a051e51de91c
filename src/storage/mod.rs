//! Storage: a key-value store with etcd's semantics (global revisions, compare-and-swap
//! on `mod_revision`, watch from a revision, compaction), behind one trait with two
//! backends: `memory` (embedded, the default) and `etcd` (see the etcd issue).
//!
//! Values are opaque bytes (the JSON object kube would store, without
//! `resourceVersion`); the layers above set `metadata.resourceVersion` from the
//! revision on the way out.

#[doc(hidden)] // test support: the storage contract every backend is checked against
pub mod contract;
pub mod etcd;
pub mod memory;
pub mod watch_cache;

use crate::status::{Details, GroupResource, Status};
use async_trait::async_trait;
use futures::stream::BoxStream;

/// A revision of the whole store (etcd's `revision`); strictly increasing, starting at 1.
pub type Revision = i64;

/// A stored key with its value and revisions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The full key, e.g. `/registry/crud.example.com/widgets/default/w1`.
    pub key: String,
    /// The stored bytes.
    pub value: bytes::Bytes,
    /// Revision of the key's creation.
    pub create_revision: Revision,
    /// Revision of the key's last modification (the object's `resourceVersion`).
    pub mod_revision: Revision,
}

/// The result of a ranged read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListResult {
    /// Items in key order.
    pub items: Vec<KeyValue>,
    /// The store revision the read was served at (the list `resourceVersion`).
    pub revision: Revision,
    /// How many more keys match after the last returned one (0 when complete).
    pub remaining: i64,
}

/// Options of a ranged read under a prefix.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Return keys strictly greater than this one (pagination); `None` from the start.
    pub start_after: Option<String>,
    /// At most this many items (0 = no limit).
    pub limit: i64,
    /// Read at this revision (0 = the current one). Older than the compacted
    /// revision fails with `StorageError::Compacted`.
    pub revision: Revision,
    /// With `revision` 0: an answer at any revision at least this one will do (kube's
    /// `resourceVersion=0` and `NotOlderThan`), so a cache may serve it. `None` asks
    /// for the current revision (a consistent read). Backends read the current
    /// revision either way, which satisfies both.
    pub min_revision: Option<Revision>,
}

/// What happened to a key, as seen by a watcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// The key was created.
    Create,
    /// The key was modified.
    Modify,
    /// The key was deleted; `kv.value` is the last value, `kv.mod_revision` the delete revision.
    Delete,
}

/// One watch event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Create, modify or delete.
    pub kind: EventKind,
    /// The key after the change (for deletes, the last value at the delete revision).
    pub kv: KeyValue,
    /// The value before the change, when there was one.
    pub prev: Option<KeyValue>,
}

/// An item of a watch stream: an event, or a progress notification carrying the
/// current store revision (used for BOOKMARKs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchItem {
    /// A change.
    Event(Event),
    /// No change under the prefix up to this revision.
    Progress(Revision),
}

/// A stream of watch items; ends when the backend drops the watcher (e.g. it fell too
/// far behind) or yields an error.
pub type WatchStream = BoxStream<'static, Result<WatchItem, StorageError>>;

/// Storage failures, mapped to kube `Status` codes by the handlers.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// Create of an existing key.
    #[error("key exists: {0}")]
    AlreadyExists(String),
    /// The key does not exist.
    #[error("key not found: {0}")]
    NotFound(String),
    /// A compare on `mod_revision` failed; carries the current value.
    #[error("revision conflict on {key}")]
    Conflict {
        /// The key.
        key: String,
        /// Its current value, when it still exists.
        current: Option<Box<KeyValue>>,
    },
    /// The requested revision has been compacted (kube's 410 Expired).
    #[error("required revision {requested} has been compacted (compacted revision {compacted})")]
    Compacted {
        /// The revision asked for.
        requested: Revision,
        /// The oldest revision still kept.
        compacted: Revision,
    },
    /// The requested revision is in the future.
    #[error("required revision {requested} is a future revision (current revision {current})")]
    FutureRevision {
        /// The revision asked for.
        requested: Revision,
        /// The store's current revision.
        current: Revision,
    },
    /// The write is larger than the backend takes (etcd's `--max-request-bytes`, 1.5 MiB
    /// by default; the embedded store keeps the same limit): 413.
    #[error("{0}")]
    TooLarge(String),
    /// The backend did not process the request: it could not be reached, or it refused
    /// the request before acting on it (503 with `Retry-After`: safe to send again).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The backend did not answer in time; a write may or may not have been applied (504).
    #[error("storage timeout: {0}")]
    Timeout(String),
    /// A write reached the backend and then failed without saying whether it was applied
    /// (the connection broke with it in flight, etcd's `request timed out`): 500, never
    /// a 503, so clients do not repeat a write that may have happened.
    #[error("storage outcome unknown: {0}")]
    OutcomeUnknown(String),
    /// Anything else (500).
    #[error("storage error: {0}")]
    Internal(String),
}

/// etcd's default `--max-request-bytes`: the largest write a default etcd takes, and
/// the largest the embedded store takes, so that an object that can be stored on one
/// backend can be stored on the other.
pub const MAX_REQUEST_BYTES: usize = 1536 * 1024;

/// etcd's error for a write over [`MAX_REQUEST_BYTES`].
pub const REQUEST_TOO_LARGE: &str = "etcdserver: request is too large";

/// The storage contract every backend implements with etcd's semantics.
#[async_trait]
pub trait Storage: Send + Sync + 'static {
    /// Read one key at the current revision.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError>;

    /// Read keys under `prefix` in key order.
    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError>;

    /// Create `key`; fails with `AlreadyExists` when present. Returns the new KeyValue.
    async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError>;

    /// Replace `key` if its `mod_revision` equals `expected`; `Conflict` otherwise,
    /// `NotFound` when it is gone. Returns the new KeyValue.
    async fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StorageError>;

    /// Delete `key`, if `expected` is given only when its `mod_revision` matches.
    /// Returns the deleted value with `mod_revision` set to the delete revision.
    async fn delete(&self, key: &str, expected: Option<Revision>)
        -> Result<KeyValue, StorageError>;

    /// Watch keys under `prefix` for changes after revision `after` (0 = from now).
    /// Fails with `Compacted` when `after` is older than the kept history.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError>;

    /// The current store revision.
    async fn current_revision(&self) -> Result<Revision, StorageError>;

    /// Whether the backend is reachable (for `/readyz`).
    async fn ready(&self) -> Result<(), StorageError>;

    /// Whether the backend holds its data in this process's memory (then a cache of
    /// its objects would only copy them).
    fn in_memory(&self) -> bool {
        false
    }
}

/// `Retry-After` seconds of a 503 for a request storage did not process: about one
/// etcd election.
pub const UNAVAILABLE_RETRY_AFTER_SECONDS: i64 = 1;

/// Turn a storage failure into the `Status` kube returns for it.
///
/// Failures follow one rule: only a request storage certainly did not process answers
/// 503 `ServiceUnavailable` with `Retry-After` (clients, client-go among them, send it
/// again); one whose outcome is unknown answers 504 `Timeout` (no answer in time) or
/// 500 `InternalError` (the connection broke with it in flight, etcd's own
/// `etcdserver: request timed out`), without `Retry-After`.
pub fn storage_status(err: StorageError, gr: &GroupResource, name: &str) -> Status {
    match err {
        StorageError::AlreadyExists(_) => Status::already_exists(gr, name),
        StorageError::NotFound(_) => Status::not_found(gr, name),
        StorageError::Conflict { .. } => Status::stale(gr, name),
        StorageError::Compacted {
            requested,
            compacted,
        } => Status::expired(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StorageError::FutureRevision { requested, current } => {
            Status::too_large_resource_version(requested, current, 0)
        }
        StorageError::TooLarge(m) => Status::request_entity_too_large(m),
        StorageError::Unavailable(m) => {
            let mut status = Status::service_unavailable(m);
            status.details = Some(Box::new(Details {
                retry_after_seconds: Some(UNAVAILABLE_RETRY_AFTER_SECONDS),
                ..Details::default()
            }));
            status
        }
        StorageError::Timeout(m) => Status::timeout(m),
        StorageError::OutcomeUnknown(m) => Status::internal(m),
        StorageError::Internal(m) => Status::internal(m),
    }
}
