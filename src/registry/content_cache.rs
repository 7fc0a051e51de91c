//! A bounded, process-wide-able cache of values keyed by the SHA-256 of their content:
//! what `crd_cache` keeps compiled and validated CRDs in and the server keeps decoded `--load`
//! manifests in. Least recently used entries go first once the cache holds more than
//! its entries or its weight (bytes of content hashed) allow; concurrent makers of one
//! key wait for the first instead of repeating its work; a failed make leaves no entry.
//! Values are handed out by `Clone` (an `Arc`, or data cloned for a mutating user).

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A content key: SHA-256 of the content.
pub type Key = [u8; 32];

/// Counters of a cache since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Values handed out without making them: the key was cached.
    pub hits: u64,
    /// Values made: the key was not cached (or making it failed).
    pub misses: u64,
    /// Entries dropped to stay within the bounds.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Weight of the entries held now (bytes of content hashed).
    pub weight: usize,
}

/// Builds a [`Key`] from parts; every part is length-prefixed (or self-delimiting
/// JSON, last), so different contents never feed the hash the same bytes.
pub struct KeyBuilder {
    hasher: Sha256,
    weight: usize,
}

impl KeyBuilder {
    /// A key of the kind `domain` (keys of different domains never meet).
    pub fn new(domain: &str) -> KeyBuilder {
        let mut hasher = Sha256::new();
        hasher.update((domain.len() as u64).to_le_bytes());
        hasher.update(domain.as_bytes());
        KeyBuilder { hasher, weight: 0 }
    }

    /// Add a part.
    pub fn bytes(&mut self, part: &[u8]) -> &mut Self {
        self.hasher.update((part.len() as u64).to_le_bytes());
        self.hasher.update(part);
        self.weight += part.len();
        self
    }

    /// Add a JSON value as its serialization (without building the string); a value
    /// is self-delimiting, so give it as the last part.
    pub fn json(&mut self, value: &Value) -> &mut Self {
        // Writing into a hasher cannot fail, and a `Value` always serializes.
        let _ = serde_json::to_writer(&mut *self, value);
        self
    }

    /// The key, and the bytes it was made of (the entry's weight).
    pub fn finish(self) -> (Key, usize) {
        (self.hasher.finalize().into(), self.weight)
    }
}

impl std::io::Write for KeyBuilder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.hasher.update(buf);
        self.weight += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One key's value, made once; waited on by concurrent makers of that key.
struct Slot<V>(Mutex<Option<V>>);

struct Entry<V> {
    slot: Arc<Slot<V>>,
    weight: usize,
    last_used: u64,
}

struct Entries<V> {
    map: HashMap<Key, Entry<V>>,
    weight: usize,
    clock: u64,
}

/// A bounded LRU of values by content key.
pub struct ContentCache<V> {
    entries: Mutex<Entries<V>>,
    max_entries: usize,
    max_weight: usize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl<V: Clone> ContentCache<V> {
    /// A cache of at most `max_entries` entries (at least one) and `max_weight` bytes
    /// of content (an entry heavier than that alone is kept until the next comes).
    pub fn new(max_entries: usize, max_weight: usize) -> Self {
        ContentCache {
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                weight: 0,
                clock: 0,
            }),
            max_entries: max_entries.max(1),
            max_weight,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Entries<V>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The value of `key`, made by `make` (and kept) when not cached. `weight` is the
    /// size of the content the key was made of ([`KeyBuilder::finish`]).
    pub fn get_or_insert_with<E>(
        &self,
        key: Key,
        weight: usize,
        make: impl FnOnce() -> Result<V, E>,
    ) -> Result<V, E> {
        let slot = {
            let mut entries = self.lock();
            entries.clock += 1;
            let now = entries.clock;
            match entries.map.get_mut(&key) {
                Some(e) => {
                    e.last_used = now;
                    e.slot.clone()
                }
                None => {
                    let slot = Arc::new(Slot(Mutex::new(None)));
                    let entry = Entry {
                        slot: slot.clone(),
                        weight,
                        last_used: now,
                    };
                    entries.map.insert(key, entry);
                    entries.weight += weight;
                    self.evict(&mut entries, &key);
                    slot
                }
            }
        };
        let mut value = slot.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = value.as_ref() {
            self.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(v.clone());
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        match make() {
            Ok(v) => {
                *value = Some(v.clone());
                Ok(v)
            }
            Err(e) => {
                drop(value);
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

    /// Drop least recently used entries (never `keep`, the one just added) until
    /// within both bounds.
    fn evict(&self, entries: &mut Entries<V>, keep: &Key) {
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

    /// The counters, and what is held now.
    pub fn stats(&self) -> CacheStats {
        let entries = self.lock();
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            entries: entries.map.len(),
            weight: entries.weight,
        }
    }

    /// Drop every entry (the counters stay).
    pub fn clear(&self) {
        let mut entries = self.lock();
        entries.map.clear();
        entries.weight = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::convert::Infallible;

    fn key(s: &str) -> (Key, usize) {
        let mut k = KeyBuilder::new("test");
        k.bytes(s.as_bytes());
        k.finish()
    }

    fn get(cache: &ContentCache<String>, s: &str) -> String {
        let (k, w) = key(s);
        cache
            .get_or_insert_with(k, w, || Ok::<_, Infallible>(s.to_uppercase()))
            .unwrap_or_else(|never| match never {})
    }

    #[test]
    fn keys_differ_with_any_byte_and_with_how_parts_are_split() {
        assert_ne!(key("blue").0, key("blub").0);
        let mut ab_c = KeyBuilder::new("test");
        ab_c.bytes(b"ab").bytes(b"c");
        let mut a_bc = KeyBuilder::new("test");
        a_bc.bytes(b"a").bytes(b"bc");
        assert_ne!(ab_c.finish().0, a_bc.finish().0);
        let mut other_domain = KeyBuilder::new("other");
        other_domain.bytes(b"blue");
        assert_ne!(other_domain.finish().0, key("blue").0);
        let json_key = |v: Value| {
            let mut k = KeyBuilder::new("test");
            k.json(&v);
            k.finish()
        };
        assert_eq!(json_key(json!({"a": 1})), json_key(json!({"a": 1})));
        assert_ne!(json_key(json!({"a": 1})).0, json_key(json!({"a": 1.0})).0);
    }

    #[test]
    fn a_value_is_made_once_then_handed_out() {
        let cache = ContentCache::new(4, 1 << 20);
        assert_eq!(get(&cache, "a"), "A");
        assert_eq!(get(&cache, "a"), "A");
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries, s.weight), (1, 1, 1, 1));
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let cache = ContentCache::new(2, 1 << 20);
        for s in ["a", "b", "a", "c"] {
            get(&cache, s);
        }
        // `b` was the least recently used when `c` came.
        let s = cache.stats();
        assert_eq!((s.entries, s.evictions, s.hits, s.misses), (2, 1, 1, 3));
        get(&cache, "a");
        assert_eq!(cache.stats().hits, 2);
        get(&cache, "b");
        assert_eq!(cache.stats().misses, 4);
    }

    #[test]
    fn the_weight_bound_holds() {
        let cache = ContentCache::new(100, 10);
        for i in 0..20 {
            get(&cache, &format!("item-{i}"));
            assert!(cache.stats().weight <= 10, "{:?}", cache.stats());
        }
        assert_eq!(cache.stats().entries, 1);
        // One entry heavier than the bound is held until the next one comes.
        get(&cache, "a value heavier than ten bytes");
        assert_eq!(cache.stats().entries, 1);
    }

    #[test]
    fn a_failed_make_leaves_no_entry_and_is_tried_again() {
        let cache: ContentCache<String> = ContentCache::new(4, 1 << 20);
        let (k, w) = key("bad");
        for _ in 0..2 {
            assert_eq!(cache.get_or_insert_with(k, w, || Err("no")), Err("no"));
        }
        let s = cache.stats();
        assert_eq!((s.entries, s.weight, s.misses), (0, 0, 2));
    }

    #[test]
    fn concurrent_makers_of_one_key_make_it_once() {
        let cache = Arc::new(ContentCache::new(4, 1 << 20));
        let made = Arc::new(AtomicU64::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, made) = (cache.clone(), made.clone());
                std::thread::spawn(move || {
                    let (k, w) = key("slow");
                    cache.get_or_insert_with(k, w, || {
                        made.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        Ok::<_, Infallible>(7u32)
                    })
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().ok().and_then(Result::ok), Some(7));
        }
        assert_eq!(made.load(Ordering::SeqCst), 1);
        assert_eq!(cache.stats().hits, 7);
    }
}
