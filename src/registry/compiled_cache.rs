//! The process-wide cache of compiled CRDs: every catalog in the process (every server
//! a test suite starts, and one server re-creating a CRD) compiles a CRD through it, so
//! a CRD seen before costs a content hash instead of a compilation.
//!
//! The key is the SHA-256 of exactly what compiling reads
//! ([`CompileInput`]: the name, whether the CRD is terminating, the spec as JSON), so a
//! CRD that differs by one byte is another entry. The value is a [`CompiledSpec`]:
//! `Arc`s of data with no interior mutability, which servers only read; what differs
//! per server (the object, its revision) stays in each catalog's [`CompiledCrd`].
//!
//! Bounded: at most [`MAX_ENTRIES`] entries and [`MAX_WEIGHT`] bytes of spec JSON; past
//! either, the least recently used entries go (servers holding them keep their `Arc`s).
//! Concurrent compilations of one key wait for the first instead of repeating it.

use apimachinery::crd::compiled::{CompileInput, CompiledCrd, CompiledSpec};
use apimachinery::crd::CrdError;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// Most entries the cache keeps.
pub const MAX_ENTRIES: usize = 512;

/// Most bytes of spec JSON the cached entries were compiled from (a proxy of their
/// memory: a compiled CRD takes a small multiple of its JSON).
pub const MAX_WEIGHT: usize = 32 << 20;

/// Counters of the cache since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Compilations avoided: the key was cached.
    pub hits: u64,
    /// Compilations run: the key was not cached (or its compilation failed).
    pub misses: u64,
    /// Entries dropped to stay within the bounds.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes of spec JSON of the entries held now.
    pub weight: usize,
}

/// A CRD compiled through the process-wide cache ([`CompiledCrd::compile`]'s result).
pub fn compile(object: Value, revision: i64) -> Result<CompiledCrd, CrdError> {
    let spec = CACHE.get_or_compile(&CompileInput::of(&object))?;
    Ok(CompiledCrd::with_spec(object, revision, &spec))
}

/// The process-wide cache's counters.
pub fn stats() -> CacheStats {
    CACHE.stats()
}

/// Empty the process-wide cache (for benchmarks of cold starts): the next compilation
/// of every CRD is a miss. Catalogs keep what they hold.
pub fn clear() {
    CACHE.clear()
}

static CACHE: LazyLock<CompiledCache> =
    LazyLock::new(|| CompiledCache::new(MAX_ENTRIES, MAX_WEIGHT));

/// The content key of a CRD: SHA-256 over a domain tag, the name (length-prefixed),
/// the terminating flag and the spec's JSON. Also returns the JSON's length.
fn key_of(input: &CompileInput<'_>) -> ([u8; 32], usize) {
    let mut w = HashingWriter {
        hasher: Sha256::new(),
        written: 0,
    };
    w.hasher.update(b"crd-apiserver compiled CRD\0");
    w.hasher.update((input.name.len() as u64).to_le_bytes());
    w.hasher.update(input.name.as_bytes());
    w.hasher.update([u8::from(input.terminating)]);
    match input.spec {
        None => w.hasher.update([0]),
        Some(spec) => {
            w.hasher.update([1]);
            // Writing into a hasher cannot fail, and a `Value` always serializes.
            let _ = serde_json::to_writer(&mut w, spec);
        }
    }
    (w.hasher.finalize().into(), w.written)
}

/// Feeds serialized JSON to the hasher without building the string.
struct HashingWriter {
    hasher: Sha256,
    written: usize,
}

impl std::io::Write for HashingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.written += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One key's compilation, filled once; waited on by concurrent compilers of that key.
#[derive(Default)]
struct Slot(Mutex<Option<Arc<CompiledSpec>>>);

struct Entry {
    slot: Arc<Slot>,
    weight: usize,
    last_used: u64,
}

#[derive(Default)]
struct Entries {
    map: HashMap<[u8; 32], Entry>,
    weight: usize,
    clock: u64,
}

/// A bounded LRU of compiled specs by content key.
struct CompiledCache {
    entries: Mutex<Entries>,
    max_entries: usize,
    max_weight: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl CompiledCache {
    fn new(max_entries: usize, max_weight: usize) -> Self {
        CompiledCache {
            entries: Mutex::default(),
            max_entries: max_entries.max(1),
            max_weight,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn get_or_compile(&self, input: &CompileInput<'_>) -> Result<Arc<CompiledSpec>, CrdError> {
        let (key, weight) = key_of(input);
        let slot = {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            let slot = match entries.map.get_mut(&key) {
                Some(e) => {
                    e.last_used = now;
                    e.slot.clone()
                }
                None => {
                    let slot = Arc::new(Slot::default());
                    entries.map.insert(
                        key,
                        Entry {
                            slot: slot.clone(),
                            weight,
                            last_used: now,
                        },
                    );
                    entries.weight += weight;
                    self.evict(&mut entries, &key);
                    slot
                }
            };
            slot
        };
        let mut compiled = slot.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(spec) = compiled.as_ref() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(spec.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        match CompiledSpec::compile(input) {
            Ok(spec) => {
                let spec = Arc::new(spec);
                *compiled = Some(spec.clone());
                Ok(spec)
            }
            Err(e) => {
                drop(compiled);
                // Keep no empty entry for a CRD that does not compile.
                let mut entries = self.lock();
                if entries
                    .map
                    .get(&key)
                    .is_some_and(|e| Arc::ptr_eq(&e.slot, &slot))
                {
                    if let Some(gone) = entries.map.remove(&key) {
                        entries.weight -= gone.weight;
                    }
                }
                Err(e)
            }
        }
    }

    /// Drop least recently used entries (never `keep`, the one just added) until within
    /// both bounds.
    fn evict(&self, entries: &mut Entries, keep: &[u8; 32]) {
        while entries.map.len() > self.max_entries || entries.weight > self.max_weight {
            let oldest = entries
                .map
                .iter()
                .filter(|(k, _)| *k != keep)
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| *k);
            let Some(oldest) = oldest else { break };
            if let Some(gone) = entries.map.remove(&oldest) {
                entries.weight -= gone.weight;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn stats(&self) -> CacheStats {
        let entries = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            entries: entries.map.len(),
            weight: entries.weight,
        }
    }

    fn clear(&self) {
        let mut entries = self.lock();
        entries.map.clear();
        entries.weight = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(name: &str, default_color: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{name}s.example.com"), "uid": "u1"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": format!("{name}s"), "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {
                            "type": "object",
                            "x-kubernetes-validations": [{"rule": "self.color != 'red'"}],
                            "properties": {"color": {"type": "string", "default": default_color}}
                        }}
                    }}
                }]
            }
        })
    }

    fn default_of(spec: &CompiledSpec) -> Value {
        let s = &spec.versions[0].schema.structural;
        let mut obj = json!({"spec": {}});
        apimachinery::schema::default::apply_defaults(&mut obj, s);
        obj["spec"]["color"].clone()
    }

    #[test]
    fn the_same_content_is_compiled_once_and_shared() {
        let cache = CompiledCache::new(8, 1 << 20);
        let a = crd("widget", "blue");
        let mut b = a.clone();
        // Not part of the key: other metadata, status.
        b["metadata"]["uid"] = json!("u2");
        b["status"] = json!({"storedVersions": ["v1"]});
        let first = cache.get_or_compile(&CompileInput::of(&a)).unwrap();
        let second = cache.get_or_compile(&CompileInput::of(&b)).unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert!(Arc::ptr_eq(&first.versions, &second.versions));
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    }

    #[test]
    fn one_byte_of_difference_is_another_entry() {
        let cache = CompiledCache::new(8, 1 << 20);
        let blue = cache
            .get_or_compile(&CompileInput::of(&crd("widget", "blue")))
            .unwrap();
        let blub = cache
            .get_or_compile(&CompileInput::of(&crd("widget", "blub")))
            .unwrap();
        assert!(!Arc::ptr_eq(&blue, &blub));
        assert_eq!(default_of(&blue), json!("blue"));
        assert_eq!(default_of(&blub), json!("blub"));
        // The name and the terminating flag are part of the key too.
        let other = cache
            .get_or_compile(&CompileInput::of(&crd("gadget", "blue")))
            .unwrap();
        assert_eq!(other.info.name, "gadgets.example.com");
        let mut deleting = crd("widget", "blue");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let terminating = cache.get_or_compile(&CompileInput::of(&deleting)).unwrap();
        assert!(terminating.info.terminating && !blue.info.terminating);
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (0, 4, 4));
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let cache = CompiledCache::new(2, 1 << 20);
        let (a, b, c) = (crd("a", "x"), crd("b", "x"), crd("c", "x"));
        for obj in [&a, &b, &a, &c] {
            cache.get_or_compile(&CompileInput::of(obj)).unwrap();
        }
        // `b` was the least recently used when `c` came.
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions, s.hits, s.misses), (2, 1, 1, 3));
        cache.get_or_compile(&CompileInput::of(&a)).unwrap();
        assert_eq!(cache.stats().hits, 2);
        cache.get_or_compile(&CompileInput::of(&b)).unwrap();
        assert_eq!(cache.stats().misses, 4);
    }

    #[test]
    fn the_weight_bound_holds() {
        let one = key_of(&CompileInput::of(&crd("a", "x"))).1;
        let cache = CompiledCache::new(100, one * 3);
        for i in 0..10 {
            cache
                .get_or_compile(&CompileInput::of(&crd(&format!("n{i}"), "x")))
                .unwrap();
            assert!(cache.stats().weight <= one * 3);
        }
        assert!(cache.stats().entries <= 3);
    }

    #[test]
    fn a_crd_that_does_not_compile_leaves_no_entry() {
        let cache = CompiledCache::new(8, 1 << 20);
        let mut bad = crd("widget", "blue");
        bad["spec"]["scope"] = json!("Galaxy");
        for _ in 0..2 {
            assert!(cache.get_or_compile(&CompileInput::of(&bad)).is_err());
        }
        let s = cache.stats();
        assert_eq!((s.entries, s.weight, s.misses), (0, 0, 2));
    }
}
