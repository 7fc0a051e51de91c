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
//!
//! An entry may also hold the served object itself, decoded: an update reads the
//! stored object, and the object it wrote is the one the next update of it reads
//! (controllers write the same objects again and again), so updates keep what they
//! wrote, and the next one starts from a copy instead of decoding, pruning and
//! defaulting the stored bytes again. It counts [`OBJECT_SIZE`] times its stored size.

use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

/// What a served form depends on: the kind's form (`(CRD revision, version index)` for
/// a custom resource) and the object's storage revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FormId {
    /// The kind's form (see [`crate::rest::ResourceKind::served_form`]).
    pub form: (i64, usize),
    /// The object's `mod_revision`.
    pub revision: i64,
}

#[derive(Default)]
struct Entry {
    id: Option<FormId>,
    /// The served JSON, once a read made it.
    bytes: Option<Bytes>,
    /// The served object, once an update made or read it, and what it counts.
    object: Option<(Arc<Value>, usize)>,
}

impl Entry {
    /// What the entry counts against the budget.
    fn size(&self) -> usize {
        self.bytes.as_ref().map_or(0, Bytes::len) + self.object.as_ref().map_or(0, |(_, n)| *n)
    }
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

/// How many times its stored JSON a decoded object is counted as (strings, maps and
/// their nodes take about this much more than the text).
pub const OBJECT_SIZE: usize = 6;

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
        self.look(key, id, |e| e.bytes.clone())
    }

    /// The object served for `key` at `id`, if an update made or read it since.
    pub fn get_object(&self, key: &str, id: FormId) -> Option<Arc<Value>> {
        self.look(key, id, |e| e.object.as_ref().map(|(o, _)| o.clone()))
    }

    /// Keep `bytes` as what `key` serves at `id`.
    pub fn put(&self, key: &str, id: FormId, bytes: Bytes) {
        self.keep(key, id, |e| e.bytes = Some(bytes));
    }

    /// Keep `object` as what `key` serves at `id` (and `bytes`, its JSON, when known);
    /// `stored_len`: its stored size.
    pub fn put_object(
        &self,
        key: &str,
        id: FormId,
        object: Arc<Value>,
        stored_len: usize,
        bytes: Option<Bytes>,
    ) {
        let size = stored_len.saturating_mul(OBJECT_SIZE);
        self.keep(key, id, |e| {
            e.object = Some((object, size));
            if bytes.is_some() {
                e.bytes = bytes;
            }
        });
    }

    /// What `take` finds in the entry of `key` at `id` (an entry of the older
    /// generation moves to the younger).
    fn look<T>(&self, key: &str, id: FormId, take: impl Fn(&Entry) -> Option<T>) -> Option<T> {
        let mut g = self.shard(key).lock().ok()?;
        if let Some(e) = g.young.get(key) {
            return if e.id == Some(id) { take(e) } else { None };
        }
        let entry = g.old.remove(key)?;
        if entry.id != Some(id) {
            return None;
        }
        let found = take(&entry);
        g.young_bytes += entry.size();
        g.young.insert(key.to_string(), entry);
        found
    }

    /// `fill` the entry of `key` at `id` (an entry of another id is replaced); an
    /// entry grown past [`MAX_ENTRY`] is dropped.
    fn keep(&self, key: &str, id: FormId, fill: impl FnOnce(&mut Entry)) {
        let Ok(mut g) = self.shard(key).lock() else {
            return;
        };
        let mut entry = match (g.young.remove(key), g.old.remove(key)) {
            (Some(e), _) => {
                g.young_bytes = g.young_bytes.saturating_sub(e.size());
                e
            }
            (None, Some(e)) => e,
            (None, None) => Entry::default(),
        };
        if entry.id != Some(id) {
            entry = Entry {
                id: Some(id),
                ..Entry::default()
            };
        }
        fill(&mut entry);
        let size = entry.size();
        if size > self.shard_budget.min(MAX_ENTRY) {
            return;
        }
        if g.young_bytes + size > self.shard_budget {
            g.old = std::mem::take(&mut g.young);
            g.young_bytes = 0;
        }
        g.young_bytes += size;
        g.young.insert(key.to_string(), entry);
    }

    /// Bytes held (both generations).
    pub fn bytes(&self) -> usize {
        self.shards
            .iter()
            .filter_map(|s| s.lock().ok())
            .map(|g| g.young_bytes + g.old.values().map(Entry::size).sum::<usize>())
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
    fn an_object_and_its_bytes_share_an_entry_of_one_revision_and_form() {
        let c = ServedCache::new(1 << 20);
        let obj = Arc::new(serde_json::json!({"a": 1}));
        c.put_object("/k/a", id(5), obj.clone(), 10, None);
        assert_eq!(c.get_object("/k/a", id(5)), Some(obj.clone()));
        assert_eq!(c.get("/k/a", id(5)), None, "no bytes made yet");
        c.put("/k/a", id(5), Bytes::from_static(b"{\"a\":1}"));
        assert_eq!(
            c.get_object("/k/a", id(5)),
            Some(obj.clone()),
            "kept beside the bytes"
        );
        assert_eq!(c.bytes(), 10 * OBJECT_SIZE + 7);
        assert_eq!(c.get_object("/k/a", id(6)), None);
        let other_form = FormId {
            form: (2, 0),
            revision: 5,
        };
        assert_eq!(c.get_object("/k/a", other_form), None);
        // Another revision replaces both.
        c.put("/k/a", id(6), Bytes::from_static(b"six"));
        assert_eq!(c.get_object("/k/a", id(5)), None);
        assert_eq!(c.get("/k/a", id(5)), None);
        assert_eq!(c.bytes(), 3);
        // An update keeps both at once.
        let json = Bytes::from_static(b"{\"a\":2}");
        c.put_object("/k/a", id(7), obj.clone(), 10, Some(json.clone()));
        assert_eq!(c.get("/k/a", id(7)), Some(json));
        assert_eq!(c.get_object("/k/a", id(7)), Some(obj));
        assert_eq!(c.bytes(), 10 * OBJECT_SIZE + 7);
    }

    #[test]
    fn objects_count_against_the_budget() {
        let c = ServedCache::new(64 * 1024);
        let obj = Arc::new(serde_json::json!({}));
        for i in 0..10_000 {
            c.put_object(&format!("/k/{i}"), id(i), obj.clone(), 100, None);
        }
        assert!(
            c.bytes() <= 64 * 1024 + SHARDS * 100 * OBJECT_SIZE,
            "{}",
            c.bytes()
        );
        assert!(c.get_object("/k/9999", id(9999)).is_some());
        // Too large to keep.
        c.put_object("/k/big", id(1), obj, MAX_ENTRY, None);
        assert_eq!(c.get_object("/k/big", id(1)), None);
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
