//! The served JSON of stored objects, kept per storage key: a GET (or a list) of an
//! object whose stored revision and served form have not changed since it was last
//! read is answered with the bytes made then, without decoding, pruning, defaulting,
//! converting and encoding it again (most of a read's work: `benches/wire.rs`).
//!
//! An entry is valid for one [`FormId`]: the kind's form (a custom resource's CRD
//! revision and served version) and the object's `mod_revision`. Any write to the
//! object, or to its CRD, changes the id, and the entry is made again at the next read.
//! The cache is bounded in bytes: two generations, the older dropped whole when the
//! younger fills half the budget (an entry read again moves to the younger); objects
//! over [`MAX_ENTRY`] are not kept.

use bytes::Bytes;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// What a served form depends on: the kind's form (`(CRD revision, version index)` for
/// a custom resource) and the object's storage revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FormId {
    /// The kind's form (see [`crate::rest::ResourceKind::served_form`]).
    pub form: (i64, usize),
    /// The object's `mod_revision`.
    pub revision: i64,
}

struct Entry {
    id: FormId,
    bytes: Bytes,
}

/// Keys are clients' names: hashed with a seed of the process's (foldhash's
/// `RandomState`, as hashbrown's default), fast for the short keys every read looks up.
type Map = HashMap<String, Entry, foldhash::fast::RandomState>;

#[derive(Default)]
struct Generations {
    young: Map,
    old: Map,
    young_bytes: usize,
}

/// Shards, so concurrent reads of different objects rarely wait on one lock.
const SHARDS: usize = 16;

/// The served-bytes cache of one server.
pub struct ServedCache {
    shards: Vec<Mutex<Generations>>,
    /// Picks a key's shard.
    hash: foldhash::fast::RandomState,
    /// Bytes one shard's younger generation may hold before it becomes the older.
    shard_budget: usize,
}

/// The largest served form kept: larger objects (CRDs with large schemas, big
/// ConfigMaps) are few and read rarely, and a few of them would take the room of
/// thousands of the small objects reads are mostly of.
pub const MAX_ENTRY: usize = 64 << 10;

/// The default budget of one server: 32 MiB of served JSON (at most twice that
/// briefly, while both generations are full).
pub const DEFAULT_BUDGET: usize = 32 << 20;

impl Default for ServedCache {
    fn default() -> Self {
        ServedCache::new(DEFAULT_BUDGET)
    }
}

impl ServedCache {
    /// A cache of about `budget` bytes.
    pub fn new(budget: usize) -> ServedCache {
        ServedCache {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            hash: foldhash::fast::RandomState::default(),
            shard_budget: (budget / SHARDS / 2).max(1),
        }
    }

    fn shard(&self, key: &str) -> &Mutex<Generations> {
        // The middle bits: the shard's maps use the low and top ones of their own hash.
        let h = self.hash.hash_one(key);
        &self.shards[((h >> 32) as usize) % SHARDS]
    }

    /// The bytes served for `key` at `id`, if made since.
    pub fn get(&self, key: &str, id: FormId) -> Option<Bytes> {
        let mut g = self.shard(key).lock().ok()?;
        if let Some(e) = g.young.get(key) {
            return (e.id == id).then(|| e.bytes.clone());
        }
        let entry = g.old.remove(key)?;
        if entry.id != id {
            return None;
        }
        let bytes = entry.bytes.clone();
        g.young_bytes += bytes.len();
        g.young.insert(key.to_string(), entry);
        Some(bytes)
    }

    /// Keep `bytes` as what `key` serves at `id`.
    pub fn put(&self, key: &str, id: FormId, bytes: Bytes) {
        let Ok(mut g) = self.shard(key).lock() else {
            return;
        };
        if bytes.len() > self.shard_budget.min(MAX_ENTRY) {
            return;
        }
        if g.young_bytes + bytes.len() > self.shard_budget {
            g.old = std::mem::take(&mut g.young);
            g.young_bytes = 0;
        }
        g.old.remove(key);
        g.young_bytes += bytes.len();
        if let Some(previous) = g.young.insert(key.to_string(), Entry { id, bytes }) {
            g.young_bytes = g.young_bytes.saturating_sub(previous.bytes.len());
        }
    }

    /// Bytes held (both generations).
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .filter_map(|s| s.lock().ok())
            .map(|g| g.young_bytes + g.old.values().map(|e| e.bytes.len()).sum::<usize>())
            .sum()
    }

    /// Forget everything (storage emptied under the server).
    pub fn clear(&self) {
        for s in &self.shards {
            if let Ok(mut g) = s.lock() {
                *g = Generations::default();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(rev: i64) -> FormId {
        FormId {
            form: (1, 0),
            revision: rev,
        }
    }

    #[test]
    fn an_entry_serves_only_its_revision_and_form() {
        let c = ServedCache::new(1 << 20);
        c.put("/k/a", id(5), Bytes::from_static(b"five"));
        assert_eq!(c.get("/k/a", id(5)).as_deref(), Some(&b"five"[..]));
        assert_eq!(c.get("/k/a", id(6)), None);
        let other_form = FormId {
            form: (2, 0),
            revision: 5,
        };
        assert_eq!(c.get("/k/a", other_form), None);
        c.put("/k/a", id(6), Bytes::from_static(b"six"));
        assert_eq!(c.get("/k/a", id(5)), None);
        assert_eq!(c.get("/k/a", id(6)).as_deref(), Some(&b"six"[..]));
    }

    #[test]
    fn the_budget_bounds_what_is_held() {
        let c = ServedCache::new(64 * 1024);
        for i in 0..10_000 {
            c.put(&format!("/k/{i}"), id(i), Bytes::from(vec![b'x'; 100]));
        }
        assert!(c.bytes() <= 64 * 1024 + SHARDS * 100, "{}", c.bytes());
        // Recent entries survive.
        assert!(c.get("/k/9999", id(9999)).is_some());
    }

    #[test]
    fn large_forms_are_not_kept() {
        let c = ServedCache::new(DEFAULT_BUDGET);
        c.put("/k/big", id(1), Bytes::from(vec![b'x'; MAX_ENTRY + 1]));
        assert_eq!(c.get("/k/big", id(1)), None);
        c.put("/k/edge", id(1), Bytes::from(vec![b'x'; MAX_ENTRY]));
        assert!(c.get("/k/edge", id(1)).is_some());
    }
}
