//! The live set of CRDs, compiled: read once when a CRD is written (or seen through
//! the storage watch), never per request, and shared with every other catalog of the
//! process holding the same CRD (`crd_cache`). Per version the structural schema,
//! validators, CEL programs and immutability plan are compiled on the version's first
//! request and kept within the process's budget (`apimachinery::crd::on_demand`).

pub use apimachinery::crd::compiled::{CompiledCrd, CompiledVersion};
pub use apimachinery::crd::on_demand;
use apimachinery::crd::{CrdError, CrdInfo};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

/// Why a CRD cannot be served: it does not compile (the pure layer's error). Only
/// logged: the CRD was accepted by validation, or is a stored one skipped at start.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CompileError(#[from] pub CrdError);

/// All CRDs currently served.
pub struct Catalog {
    /// By name (`<plural>.<group>`), hashed with foldhash: every request to a custom
    /// resource looks its CRD up.
    crds: RwLock<HashMap<String, Arc<CompiledCrd>, foldhash::fast::RandomState>>,
    generation: AtomicU64,
    /// The generation, for whoever follows changes ([`Catalog::changes`]).
    changed: tokio::sync::watch::Sender<u64>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            crds: RwLock::default(),
            generation: AtomicU64::new(0),
            changed: tokio::sync::watch::Sender::new(0),
        }
    }
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notified whenever the set of CRDs or one of them changes (the receiver's
    /// `changed()` resolves; changes made meanwhile are not lost).
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn bump(&self) {
        let generation = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.changed.send_replace(generation);
    }

    /// Add or replace a CRD seen at `revision`; older revisions than the one held are ignored
    /// (the synchronous path and the storage watch may both deliver the same write).
    pub fn upsert(&self, object: Value, revision: i64) -> Result<(), CompileError> {
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if self.holds(&name, revision) {
            return Ok(());
        }
        let compiled = Arc::new(super::crd_cache::compile(object, revision)?);
        let mut crds = self.crds.write().unwrap_or_else(|e| e.into_inner());
        if crds.get(&name).is_some_and(|c| c.revision >= revision) {
            return Ok(());
        }
        crds.insert(name, compiled);
        self.bump();
        Ok(())
    }

    /// Whether the CRD `name` is held at `revision` or a later one (an upsert of it at
    /// `revision` would change nothing).
    pub fn holds(&self, name: &str, revision: i64) -> bool {
        let crds = self.crds.read().unwrap_or_else(|e| e.into_inner());
        crds.get(name).is_some_and(|c| c.revision >= revision)
    }

    /// Drop a CRD deleted at `revision`.
    pub fn remove(&self, name: &str, revision: i64) {
        let mut crds = self.crds.write().unwrap_or_else(|e| e.into_inner());
        if crds.get(name).is_some_and(|c| c.revision < revision) {
            crds.remove(name);
            self.bump();
        }
    }

    /// The CRD serving `group`/`resource` (plural), if any: the one named
    /// `<resource>.<group>`, as kube's crdHandler finds it (a CRD's name is its plural
    /// and group, validation sees to it).
    pub fn lookup(&self, group: &str, resource: &str) -> Option<Arc<CompiledCrd>> {
        // Every custom-resource request looks up its CRD (routing, metrics, warnings):
        // the name is made in a buffer of the thread's, not allocated per lookup.
        thread_local! {
            static NAME: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        NAME.with(|name| {
            let mut name = name.borrow_mut();
            name.clear();
            name.push_str(resource);
            name.push('.');
            name.push_str(group);
            let crds = self.crds.read().unwrap_or_else(|e| e.into_inner());
            crds.get(name.as_str())
                .filter(|c| c.info.group == group && c.info.plural == resource)
                .cloned()
        })
    }

    /// The CRD with this kind in this group, if any.
    pub fn lookup_kind(&self, group: &str, kind: &str) -> Option<Arc<CompiledCrd>> {
        let crds = self.crds.read().unwrap_or_else(|e| e.into_inner());
        crds.values()
            .find(|c| c.info.group == group && c.info.kind == kind)
            .cloned()
    }

    /// A CRD by its name.
    pub fn get(&self, name: &str) -> Option<Arc<CompiledCrd>> {
        self.crds
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    /// The CRDs of `group`, in no particular order.
    pub fn in_group(&self, group: &str) -> Vec<Arc<CompiledCrd>> {
        let crds = self.crds.read().unwrap_or_else(|e| e.into_inner());
        crds.values()
            .filter(|c| c.info.group == group)
            .cloned()
            .collect()
    }

    /// Every CRD, sorted by name.
    pub fn all(&self) -> Vec<Arc<CompiledCrd>> {
        let crds = self.crds.read().unwrap_or_else(|e| e.into_inner());
        let mut all: Vec<_> = crds.values().cloned().collect();
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Every CRD's typed view, sorted by name (for discovery and OpenAPI documents).
    pub fn infos(&self) -> Vec<Arc<CrdInfo>> {
        self.all().iter().map(|c| c.info.clone()).collect()
    }

    /// Changes whenever the set of CRDs changes (cache key for discovery and OpenAPI).
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}
