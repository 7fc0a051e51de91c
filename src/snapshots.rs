//! Snapshots of a server on the embedded store: take one of a loaded server, put the
//! server back to it in place, or start a new server from it (a fork).
//!
//! A snapshot is the store's persistent map at one revision
//! ([`crate::storage::memory::Snapshot`]): taking one copies nothing, and everything a
//! server knows lives in the store (CRDs, RBAC, webhook and policy configuration,
//! namespaces), so the snapshot freezes all of it; compiled CRD schemas are shared
//! through the compile cache. A restore writes back, at new revisions, only the keys
//! that differ, so no resourceVersion a client has seen is reused or goes back; it
//! then ends every open watch with kube's 410 (informers list again) and hands each
//! change to what follows storage (the caller passes `ApiServer::written_behind`), so
//! the next request sees the snapshot's CRDs, roles and webhooks.
//!
//! Invariant: after a restore, the server serves exactly the snapshot's objects,
//! discovery and OpenAPI, and resourceVersions only grow (`integration/snapshots.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use futures::future::BoxFuture;

use crate::status::Status;
use crate::storage::memory::{MemoryStorage, Snapshot};
use crate::storage::watch_cache::WatchCache;
use crate::storage::{Event, Revision};

/// A server started from a snapshot, kept running by the server that forked it.
pub trait Forked: Send + Sync {
    /// Its URL.
    fn url(&self) -> String;
    /// A kubeconfig for it.
    fn kubeconfig(&self) -> String;
    /// Stops it.
    fn stop(&self);
    /// Itself, for a caller that knows its type (the harness takes its `Server`).
    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any + Send>;
}

/// Starts a server over a store (the server module's part of a fork).
pub type Forker =
    Arc<dyn Fn(MemoryStorage) -> BoxFuture<'static, Result<Box<dyn Forked>, String>> + Send + Sync>;

/// Why a snapshot operation cannot be done.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("snapshots need the embedded store; this server stores its objects in etcd")]
    NotEmbedded,
    #[error("snapshot {0:?} not found")]
    NotFound(String),
    #[error("invalid snapshot name {0:?}: {1}")]
    InvalidName(String, String),
    #[error("fork: {0}")]
    Fork(String),
}

impl From<SnapshotError> for Status {
    fn from(e: SnapshotError) -> Status {
        match e {
            SnapshotError::NotFound(_) => Status::not_found_message(e.to_string()),
            SnapshotError::Fork(_) => Status::internal(e.to_string()),
            _ => Status::bad_request(e.to_string()),
        }
    }
}

/// A server's named snapshots and the forks started from them.
pub struct Snapshots {
    memory: Option<MemoryStorage>,
    cache: Arc<WatchCache>,
    saved: Mutex<BTreeMap<String, Snapshot>>,
    forker: OnceLock<Forker>,
    forks: Mutex<Vec<Box<dyn Forked>>>,
}

/// What a restore did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Restored {
    /// How many keys it wrote (created, changed back or deleted).
    pub written: usize,
    /// The store revision after it.
    pub revision: Revision,
}

impl Snapshots {
    /// Snapshots of `memory` (`None` on etcd: every operation then fails with
    /// [`SnapshotError::NotEmbedded`]) under `cache`.
    pub fn new(memory: Option<MemoryStorage>, cache: Arc<WatchCache>) -> Snapshots {
        Snapshots {
            memory,
            cache,
            saved: Mutex::default(),
            forker: OnceLock::new(),
            forks: Mutex::default(),
        }
    }

    /// Sets how forks start (once).
    pub fn set_forker(&self, forker: Forker) {
        let _ = self.forker.set(forker);
    }

    fn memory(&self) -> Result<&MemoryStorage, SnapshotError> {
        self.memory.as_ref().ok_or(SnapshotError::NotEmbedded)
    }

    fn saved(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Snapshot>> {
        self.saved.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Freezes the current state under `name` (replacing one of that name); its
    /// revision.
    pub fn take(&self, name: &str) -> Result<Revision, SnapshotError> {
        check_name(name)?;
        let snapshot = self.memory()?.snapshot();
        let revision = snapshot.revision();
        self.saved().insert(name.to_owned(), snapshot);
        Ok(revision)
    }

    /// Keeps `snapshot` under `name` (one read from a file).
    pub fn insert(&self, name: &str, snapshot: Snapshot) -> Result<(), SnapshotError> {
        check_name(name)?;
        self.memory()?;
        self.saved().insert(name.to_owned(), snapshot);
        Ok(())
    }

    /// The snapshot `name`.
    pub fn get(&self, name: &str) -> Result<Snapshot, SnapshotError> {
        self.memory()?;
        self.saved()
            .get(name)
            .cloned()
            .ok_or_else(|| SnapshotError::NotFound(name.to_owned()))
    }

    /// The snapshots' names and revisions, by name.
    pub fn list(&self) -> Result<Vec<(String, Revision)>, SnapshotError> {
        self.memory()?;
        Ok(self
            .saved()
            .iter()
            .map(|(name, s)| (name.clone(), s.revision()))
            .collect())
    }

    /// Puts the server back to the snapshot `name` (see the module's documentation);
    /// `written_behind` takes each change the restore wrote.
    pub fn restore(
        &self,
        name: &str,
        written_behind: impl Fn(&Event),
    ) -> Result<Restored, SnapshotError> {
        let snapshot = self.get(name)?;
        let memory = self.memory()?;
        let changes = memory.restore(&snapshot);
        let revision = memory.compacted_revision();
        self.cache.end_all(revision);
        for change in &changes {
            written_behind(change);
        }
        Ok(Restored {
            written: changes.len(),
            revision,
        })
    }

    /// A new store holding the snapshot `name`, continuing above this server's
    /// revision.
    pub fn fork_store(&self, name: &str) -> Result<MemoryStorage, SnapshotError> {
        let snapshot = self.get(name)?;
        let current = self.memory()?.snapshot().revision();
        Ok(MemoryStorage::from_snapshot(&snapshot, current))
    }

    /// Starts a server from the snapshot `name`, owned by the caller.
    pub async fn start_fork(&self, name: &str) -> Result<Box<dyn Forked>, SnapshotError> {
        let store = self.fork_store(name)?;
        let forker = self
            .forker
            .get()
            .cloned()
            .ok_or_else(|| SnapshotError::Fork("this server cannot start forks".into()))?;
        forker(store).await.map_err(SnapshotError::Fork)
    }

    /// Starts a server from the snapshot `name`, kept running as long as this one;
    /// its URL and kubeconfig.
    pub async fn fork(&self, name: &str) -> Result<(String, String), SnapshotError> {
        let forked = self.start_fork(name).await?;
        let answer = (forked.url(), forked.kubeconfig());
        self.forks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(forked);
        Ok(answer)
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        for fork in self
            .forks
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            fork.stop();
        }
    }
}

/// Names are DNS labels (kube's `IsDNS1123Label`), so they fit in URLs and files.
fn check_name(name: &str) -> Result<(), SnapshotError> {
    let errs = crate::schema::objectmeta::validate_dns1123_label(name);
    if errs.is_empty() {
        return Ok(());
    }
    Err(SnapshotError::InvalidName(name.to_owned(), errs.join(", ")))
}
