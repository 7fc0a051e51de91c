//! The embedded, in-process store: etcd's semantics (MVCC with one global revision,
//! compare-and-swap on `mod_revision`, watch from a revision, compaction) over a
//! persistent ordered map (`imbl::OrdMap`) of per-key version histories.
//!
//! The map shares its structure between clones, so [`MemoryStorage::snapshot`] copies
//! nothing, and [`MemoryStorage::restore`] finds what changed since a snapshot by
//! walking only the parts of the two maps that are no longer shared.
//!
//! Like etcd, an empty store is at revision 1 and the first write gets revision 2.
//! History is bounded: only the last `history` revisions stay readable (reads and
//! watches older than that fail with `StorageError::Compacted`), and superseded
//! versions are dropped as the window moves, so memory follows the live data.
//!
//! A watcher that falls more than the watch buffer behind has its stream ended
//! (without an error item), like kube's watch cache closing an unresponsive watcher:
//! the client re-watches from its last revision. Writers never wait for watchers.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use imbl::OrdMap;
use tokio::sync::broadcast;
use tokio::time::Instant;

use super::{
    Event, EventKind, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// How many revisions stay readable by default.
pub const DEFAULT_HISTORY: usize = 10_000;

/// etcd's limit on one write, kept here too (see [`super::MAX_REQUEST_BYTES`]).
fn check_size(key: &str, value: &[u8]) -> Result<(), StorageError> {
    if key.len() + value.len() > super::MAX_REQUEST_BYTES {
        return Err(StorageError::TooLarge(super::REQUEST_TOO_LARGE.into()));
    }
    Ok(())
}
/// How often an idle watch reports progress by default.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(1);
/// How many changes a watcher may lag behind by default before it is dropped.
pub const DEFAULT_WATCH_BUFFER: usize = 4096;

/// The embedded store; clones share the same data.
#[derive(Clone)]
pub struct MemoryStorage {
    shared: Arc<Mutex<State>>,
    progress_interval: Duration,
}

/// One version of a key; `value` is `None` for the tombstone written by a delete.
#[derive(Clone, Debug)]
struct Version {
    create_revision: Revision,
    mod_revision: Revision,
    value: Option<Bytes>,
}

/// A revision names one write, so two versions with the same revisions are the same.
impl PartialEq for Version {
    fn eq(&self, other: &Version) -> bool {
        self.mod_revision == other.mod_revision && self.create_revision == other.create_revision
    }
}

/// A key's versions in revision order. Most keys have one, kept inline (no allocation
/// of its own, and a clone of the map's node shares its bytes).
#[derive(Clone, Debug, PartialEq)]
enum Versions {
    One(Version),
    Many(VecDeque<Version>),
}

impl Versions {
    fn last(&self) -> Option<&Version> {
        match self {
            Versions::One(v) => Some(v),
            Versions::Many(vs) => vs.back(),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            Versions::One(_) => 1,
            Versions::Many(vs) => vs.len(),
        }
    }

    fn push(&mut self, version: Version) {
        match self {
            Versions::One(first) => {
                *self = Versions::Many(VecDeque::from([first.clone(), version]));
            }
            Versions::Many(vs) => vs.push_back(version),
        }
    }

    /// The version visible at `revision`, if any.
    fn at(&self, revision: Revision) -> Option<&Version> {
        match self {
            Versions::One(v) => (v.mod_revision <= revision).then_some(v),
            Versions::Many(vs) => {
                let index = vs.partition_point(|v| v.mod_revision <= revision);
                vs.get(index.checked_sub(1)?)
            }
        }
    }

    /// Whether [`Versions::compact`] at `revision` would change anything.
    fn compactable(&self, revision: Revision) -> bool {
        match self {
            Versions::One(v) => v.value.is_none() && v.mod_revision <= revision,
            Versions::Many(vs) => {
                vs.len() < 2
                    || vs[1].mod_revision <= revision
                    || (vs[0].value.is_none() && vs[0].mod_revision <= revision)
            }
        }
    }

    /// Keeps the newest version at or below `revision` (unless it is a tombstone) and
    /// all later ones; whether none is left.
    fn compact(&mut self, revision: Revision) -> bool {
        if let Versions::Many(vs) = self {
            while vs.len() >= 2 && vs[1].mod_revision <= revision {
                vs.pop_front();
            }
            if vs.len() == 1 {
                *self = Versions::One(vs[0].clone());
            }
        }
        match self {
            Versions::One(v) => v.value.is_none() && v.mod_revision <= revision,
            Versions::Many(vs) => {
                if vs[0].value.is_none() && vs[0].mod_revision <= revision {
                    vs.pop_front();
                }
                if vs.len() == 1 {
                    *self = Versions::One(vs[0].clone());
                }
                false
            }
        }
    }

    /// The live value with its revisions, when the last version is not a tombstone.
    fn live(&self) -> Option<Stored> {
        let version = self.last()?;
        Some(Stored {
            value: version.value.clone()?,
            create_revision: version.create_revision,
            mod_revision: version.mod_revision,
        })
    }
}

/// A stored value with its revisions, shared between history, log and watchers.
#[derive(Clone, Debug)]
struct Stored {
    value: Bytes,
    create_revision: Revision,
    mod_revision: Revision,
}

/// One write, as kept in the replay log and sent to live watchers.
#[derive(Debug)]
struct Change {
    kind: EventKind,
    key: Arc<str>,
    kv: Stored,
    prev: Option<Stored>,
}

impl Change {
    fn revision(&self) -> Revision {
        self.kv.mod_revision
    }

    fn to_event(&self) -> Event {
        Event {
            kind: self.kind.clone(),
            kv: key_value(&self.key, &self.kv),
            prev: self.prev.as_ref().map(|p| key_value(&self.key, p)),
        }
    }
}

fn key_value(key: &str, stored: &Stored) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: stored.value.clone(),
        create_revision: stored.create_revision,
        mod_revision: stored.mod_revision,
    }
}

struct State {
    /// The current store revision.
    revision: Revision,
    /// The oldest revision still readable (etcd's compact revision; 1 when nothing
    /// was compacted yet).
    compacted: Revision,
    /// How many revisions stay readable.
    history: usize,
    /// Per key, its versions in revision order; a key leaves the map once all of its
    /// versions are compacted away.
    keys: OrdMap<Arc<str>, Versions>,
    /// Every change with revision >= `compacted`, in revision order (one per revision).
    log: VecDeque<Arc<Change>>,
    /// Live changes for watchers; sent under the lock so receivers see revision order.
    events: broadcast::Sender<Arc<Change>>,
    /// How many changes a watcher may lag behind (the channel's capacity).
    watch_buffer: usize,
}

impl State {
    /// The latest version of `key` if it is live.
    fn live(&self, key: &str) -> Option<Stored> {
        self.keys.get(key)?.live()
    }

    /// Checks that `revision` is readable; 0 means the current one.
    fn read_revision(&self, revision: Revision) -> Result<Revision, StorageError> {
        match revision {
            0 => Ok(self.revision),
            r if r > self.revision => Err(StorageError::FutureRevision {
                requested: r,
                current: self.revision,
            }),
            r if r < self.compacted => Err(StorageError::Compacted {
                requested: r,
                compacted: self.compacted,
            }),
            r => Ok(r),
        }
    }

    /// Records one write at the next revision and tells the watchers.
    fn commit(&mut self, kind: EventKind, key: &str, value: Option<Bytes>) -> Arc<Change> {
        self.revision += 1;
        let revision = self.revision;
        // One lookup for the key's shared name and its live value (keys are long and
        // share prefixes: each lookup compares a few dozen of them).
        let (shared_key, prev, known) = match self.keys.get_key_value(key) {
            Some((k, versions)) => (Arc::clone(k), versions.live(), true),
            None => (Arc::from(key), None, false),
        };
        // `prev` is `None` for a create, so a re-created key starts a new life.
        let create_revision = prev.as_ref().map_or(revision, |p| p.create_revision);
        let version = Version {
            create_revision,
            mod_revision: revision,
            value: value.clone(),
        };
        match known.then(|| self.keys.get_mut(key)).flatten() {
            Some(versions) => {
                versions.push(version);
                // Versions a snapshot brought in have no log entry to compact them.
                if versions.compactable(self.compacted) {
                    let _ = versions.compact(self.compacted);
                }
            }
            None => {
                self.keys
                    .insert(Arc::clone(&shared_key), Versions::One(version));
            }
        }
        // A delete reports the last value at the delete revision.
        let value = match (value, &prev) {
            (Some(v), _) => v,
            (None, Some(p)) => p.value.clone(),
            (None, None) => Bytes::new(),
        };
        let change = Arc::new(Change {
            kind,
            key: shared_key,
            kv: Stored {
                value,
                create_revision,
                mod_revision: revision,
            },
            prev,
        });
        self.log.push_back(Arc::clone(&change));
        // No receivers is fine; lagging receivers notice on their own.
        let _ = self.events.send(Arc::clone(&change));
        let window_start = revision - self.history_len() + 1;
        if window_start > self.compacted {
            self.compact_to(window_start);
        }
        change
    }

    fn history_len(&self) -> Revision {
        Revision::try_from(self.history.max(1)).unwrap_or(Revision::MAX)
    }

    /// Makes `revision` the oldest readable one and drops what no read can reach.
    fn compact_to(&mut self, revision: Revision) {
        if revision <= self.compacted {
            return;
        }
        self.compacted = revision;
        // Every superseded version was superseded by a logged change, so walking the
        // dropped log entries visits every key that has something to drop.
        while let Some(change) = self.log.front() {
            if change.revision() >= revision {
                break;
            }
            let key = Arc::clone(&change.key);
            self.log.pop_front();
            self.compact_key(&key, revision);
        }
    }

    /// Keeps the newest version of `key` at or below `revision` and all later ones.
    fn compact_key(&mut self, key: &str, revision: Revision) {
        // Only a key with something to drop is taken out of sharing (`get_mut` copies
        // the map's path to it, unsharing it from snapshots).
        if !self.keys.get(key).is_some_and(|v| v.compactable(revision)) {
            return;
        }
        let Some(versions) = self.keys.get_mut(key) else {
            return;
        };
        // Back to one inline version once older ones leave the window (memory follows
        // the live data); gone once only a compacted tombstone is left.
        if versions.compact(revision) {
            self.keys.remove(key);
        }
    }
}

impl MemoryStorage {
    /// An empty store at revision 1 keeping `DEFAULT_HISTORY` revisions.
    pub fn new() -> Self {
        let (events, _) = broadcast::channel(DEFAULT_WATCH_BUFFER);
        MemoryStorage {
            shared: Arc::new(Mutex::new(State {
                revision: 1,
                compacted: 1,
                history: DEFAULT_HISTORY,
                keys: OrdMap::new(),
                log: VecDeque::new(),
                events,
                watch_buffer: DEFAULT_WATCH_BUFFER,
            })),
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
        }
    }

    /// Keeps only the last `revisions` revisions readable (at least 1).
    pub fn with_history(self, revisions: usize) -> Self {
        {
            let mut state = self.lock();
            state.history = revisions.max(1);
            let window_start = state.revision - state.history_len() + 1;
            state.compact_to(window_start);
        }
        self
    }

    /// Sets how often an idle watch yields `WatchItem::Progress` (at least 1 ms).
    pub fn with_progress_interval(mut self, interval: Duration) -> Self {
        self.progress_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Sets how many changes a watcher may lag behind before its stream is ended;
    /// call before watching (streams opened earlier end).
    pub fn with_watch_buffer(self, changes: usize) -> Self {
        let mut state = self.lock();
        state.watch_buffer = changes.max(1);
        state.events = broadcast::channel(state.watch_buffer).0;
        drop(state);
        self
    }

    /// Compacts history up to `revision` (etcd's compact): older revisions become
    /// unreadable. Compacting at or below the current compact revision does nothing.
    pub fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        let mut state = self.lock();
        if revision > state.revision {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current: state.revision,
            });
        }
        state.compact_to(revision);
        Ok(())
    }

    /// The oldest revision still readable.
    pub fn compacted_revision(&self) -> Revision {
        self.lock().compacted
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock, so a poisoned state is still whole.
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The store's objects frozen at one revision ([`MemoryStorage::snapshot`]): shares
/// its structure with the store, so taking one copies nothing.
#[derive(Clone)]
pub struct Snapshot {
    keys: OrdMap<Arc<str>, Versions>,
    revision: Revision,
}

/// What a snapshot file starts with (`--snapshot-out`, [`Snapshot::encode`]).
const SNAPSHOT_MAGIC: &[u8] = b"crd-apiserver snapshot 1\n";

impl Snapshot {
    /// The store revision it was taken at.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// Its live objects, in key order.
    pub fn objects(&self) -> impl Iterator<Item = KeyValue> + '_ {
        self.keys.iter().filter_map(|(key, versions)| {
            let live = versions.at(self.revision)?;
            Some(KeyValue {
                key: key.to_string(),
                value: live.value.clone()?,
                create_revision: live.create_revision,
                mod_revision: live.mod_revision,
            })
        })
    }

    /// The snapshot as a file: a header, its revision, when it is written (`now`, any
    /// clock the reader uses too), then each live object's key, value and revisions
    /// (lengths and numbers little-endian).
    pub fn encode(&self, now: i64) -> Vec<u8> {
        let mut out = SNAPSHOT_MAGIC.to_vec();
        out.extend_from_slice(&self.revision.to_le_bytes());
        out.extend_from_slice(&now.to_le_bytes());
        for kv in self.objects() {
            for part in [kv.key.as_bytes(), &kv.value[..]] {
                out.extend_from_slice(&(part.len() as u64).to_le_bytes());
                out.extend_from_slice(part);
            }
            out.extend_from_slice(&kv.create_revision.to_le_bytes());
            out.extend_from_slice(&kv.mod_revision.to_le_bytes());
        }
        out
    }

    /// Reads [`Snapshot::encode`]'s form back, with when it was written; what is wrong
    /// with it, when it is not.
    pub fn decode(bytes: &[u8]) -> Result<(Snapshot, i64), String> {
        let mut rest = bytes
            .strip_prefix(SNAPSHOT_MAGIC)
            .ok_or("not a crd-apiserver snapshot file")?;
        fn take<'a>(rest: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
            if rest.len() < n {
                return Err("snapshot file is truncated".into());
            }
            let (head, tail) = rest.split_at(n);
            *rest = tail;
            Ok(head)
        }
        fn number(rest: &mut &[u8]) -> Result<i64, String> {
            let bytes = take(rest, 8)?;
            Ok(i64::from_le_bytes(
                bytes.try_into().map_err(|_| "bad number")?,
            ))
        }
        let revision = number(&mut rest)?;
        let written_at = number(&mut rest)?;
        let mut keys = OrdMap::new();
        while !rest.is_empty() {
            let key_len = usize::try_from(number(&mut rest)?).map_err(|_| "bad key length")?;
            let key =
                std::str::from_utf8(take(&mut rest, key_len)?).map_err(|_| "a key is not UTF-8")?;
            let value_len = usize::try_from(number(&mut rest)?).map_err(|_| "bad value length")?;
            let value = Bytes::copy_from_slice(take(&mut rest, value_len)?);
            let create_revision = number(&mut rest)?;
            let mod_revision = number(&mut rest)?;
            if !(1..=revision).contains(&mod_revision) || create_revision > mod_revision {
                return Err(format!("object {key} has revisions past the snapshot's"));
            }
            let version = Version {
                create_revision,
                mod_revision,
                value: Some(value),
            };
            keys.insert(Arc::from(key), Versions::One(version));
        }
        Ok((Snapshot { keys, revision }, written_at))
    }
}

impl MemoryStorage {
    /// Freezes the current objects (no copy: the snapshot shares the store's map).
    pub fn snapshot(&self) -> Snapshot {
        let state = self.lock();
        Snapshot {
            keys: state.keys.clone(),
            revision: state.revision,
        }
    }

    /// A new store holding `snapshot`'s objects, at the snapshot's revision or
    /// `at_least`, whichever is later (a fork continues above what its source handed
    /// out). Nothing before that revision is readable.
    pub fn from_snapshot(snapshot: &Snapshot, at_least: Revision) -> MemoryStorage {
        let store = MemoryStorage::new();
        {
            let mut state = store.lock();
            state.keys = snapshot.keys.clone();
            state.revision = snapshot.revision.max(at_least);
            state.compacted = state.revision;
        }
        store
    }

    /// Puts the store back to `snapshot`, going forward: every key whose live version
    /// differs is written again (or deleted) at a new revision, so no resourceVersion
    /// goes back or is used twice. History up to the restore is then compacted away
    /// and open watches end with `Compacted` (kube's 410 on resume, so informers list
    /// again). Costs what changed since the snapshot, not the store's size. Returns
    /// the changes it wrote.
    pub fn restore(&self, snapshot: &Snapshot) -> Vec<Event> {
        let mut state = self.lock();
        let changed: Vec<(Arc<str>, bool, Option<Bytes>)> = state
            .keys
            .diff(&snapshot.keys)
            .filter_map(|item| {
                let (key, now, then) = match item {
                    imbl::ordmap::DiffItem::Add(key, then) => (key, None, then.live()),
                    imbl::ordmap::DiffItem::Update {
                        old: (key, now),
                        new: (_, then),
                    } => (key, now.live(), then.live()),
                    imbl::ordmap::DiffItem::Remove(key, now) => (key, now.live(), None),
                };
                // The same version, or the same bytes written again (as a restore
                // does): nothing to write.
                let same = match (&now, &then) {
                    (Some(a), Some(b)) => a.mod_revision == b.mod_revision || a.value == b.value,
                    (None, None) => true,
                    _ => false,
                };
                (!same).then(|| (Arc::clone(key), now.is_some(), then.map(|s| s.value)))
            })
            .collect();
        // Watchers of the old state end: they are told of nothing the restore writes.
        state.events = broadcast::channel(state.watch_buffer).0;
        let mut written = Vec::with_capacity(changed.len());
        for (key, live_now, value) in changed {
            let kind = match (live_now, &value) {
                (false, Some(_)) => EventKind::Create,
                (true, Some(_)) => EventKind::Modify,
                (true, None) => EventKind::Delete,
                (false, None) => continue,
            };
            written.push(state.commit(kind, &key, value).to_event());
        }
        let now = state.revision;
        // Even with nothing to write, history before the restore is gone.
        state.revision = now + 1;
        state.compact_to(now + 1);
        written
    }
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("MemoryStorage")
            .field("revision", &state.revision)
            .field("compacted", &state.compacted)
            .field("keys", &state.keys.len())
            .finish()
    }
}

/// The first key of a range under `prefix`, strictly after `start_after` when given.
fn range_start<'a>(prefix: &'a str, start_after: Option<&'a str>) -> Bound<&'a str> {
    match start_after {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    }
}

/// The version of a key visible at `revision`, if the key was live then.
fn visible_at(versions: &Versions, revision: Revision) -> Option<Stored> {
    let version = versions.at(revision)?;
    Some(Stored {
        value: version.value.clone()?,
        create_revision: version.create_revision,
        mod_revision: version.mod_revision,
    })
}

#[async_trait]
impl Storage for MemoryStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let stored = self.lock().live(key);
        Ok(stored.map(|s| key_value(key, &s)))
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        let state = self.lock();
        let revision = state.read_revision(opts.revision)?;
        let limit = usize::try_from(opts.limit)
            .ok()
            .filter(|&l| l > 0)
            .unwrap_or(usize::MAX);
        let start = range_start(prefix, opts.start_after.as_deref());
        let mut visible = state
            .keys
            .range::<_, str>((start, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .filter_map(|(key, versions)| Some((key, visible_at(versions, revision)?)));
        let items: Vec<KeyValue> = visible
            .by_ref()
            .take(limit)
            .map(|(key, stored)| key_value(key, &stored))
            .collect();
        let remaining = i64::try_from(visible.count()).unwrap_or(i64::MAX);
        Ok(ListResult {
            items,
            revision,
            remaining,
        })
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError> {
        check_size(key, &value)?;
        let mut state = self.lock();
        if state.live(key).is_some() {
            return Err(StorageError::AlreadyExists(key.to_owned()));
        }
        let change = state.commit(EventKind::Create, key, Some(Bytes::from(value)));
        drop(state);
        Ok(key_value(key, &change.kv))
    }

    async fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        check_size(key, &value)?;
        let mut state = self.lock();
        let current = state
            .live(key)
            .ok_or_else(|| StorageError::NotFound(key.to_owned()))?;
        if current.mod_revision != expected {
            return Err(StorageError::Conflict {
                key: key.to_owned(),
                current: Some(Box::new(key_value(key, &current))),
            });
        }
        let change = state.commit(EventKind::Modify, key, Some(Bytes::from(value)));
        drop(state);
        Ok(key_value(key, &change.kv))
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let mut state = self.lock();
        let current = state
            .live(key)
            .ok_or_else(|| StorageError::NotFound(key.to_owned()))?;
        if expected.is_some_and(|e| e != current.mod_revision) {
            return Err(StorageError::Conflict {
                key: key.to_owned(),
                current: Some(Box::new(key_value(key, &current))),
            });
        }
        let change = state.commit(EventKind::Delete, key, None);
        drop(state);
        Ok(key_value(key, &change.kv))
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let state = self.lock();
        if after > state.revision {
            return Err(StorageError::FutureRevision {
                requested: after,
                current: state.revision,
            });
        }
        // Watching after `after` needs the change at `after + 1` onwards.
        if after != 0 && after + 1 < state.compacted {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: state.compacted,
            });
        }
        // Subscribing and copying the history under one lock leaves no gap: every
        // change up to `state.revision` is in the copy, every later one in `live`.
        let live = state.events.subscribe();
        let replay: VecDeque<Arc<Change>> = if after == 0 {
            VecDeque::new()
        } else {
            let first = state.log.partition_point(|c| c.revision() <= after);
            state
                .log
                .range(first..)
                .filter(|c| c.key.starts_with(prefix))
                .cloned()
                .collect()
        };
        let watcher = Watcher {
            store: Arc::downgrade(&self.shared),
            prefix: prefix.to_owned(),
            replay,
            live,
            seen: state.revision,
            interval: self.progress_interval,
            last_sent: Instant::now(),
            timer: Box::pin(tokio::time::sleep(self.progress_interval)),
        };
        drop(state);
        let stream = futures::stream::unfold(watcher, |mut watcher| async move {
            let item = watcher.next_item().await?;
            Some((item, watcher))
        });
        Ok(stream.boxed())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        Ok(self.lock().revision)
    }

    async fn ready(&self) -> Result<(), StorageError> {
        Ok(())
    }

    fn in_memory(&self) -> bool {
        true
    }
}

/// The state of one watch stream.
struct Watcher {
    /// The store, to tell a restore (which closes the channel and compacts past
    /// `seen`) from the store going away.
    store: std::sync::Weak<Mutex<State>>,
    prefix: String,
    /// History to send before live changes.
    replay: VecDeque<Arc<Change>>,
    live: broadcast::Receiver<Arc<Change>>,
    /// Every change up to this revision was sent or did not match the prefix.
    seen: Revision,
    interval: Duration,
    /// When the last item was sent: progress is reported once nothing was for
    /// `interval`.
    last_sent: Instant,
    /// Fires at `last_sent + interval` or earlier (moved on when it fires early, so an
    /// item sent costs no timer update).
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Watcher {
    /// The next item, or `None` when the watch ends (store gone or watcher lagged).
    async fn next_item(&mut self) -> Option<Result<WatchItem, StorageError>> {
        if let Some(change) = self.replay.pop_front() {
            self.last_sent = Instant::now();
            return Some(Ok(WatchItem::Event(change.to_event())));
        }
        loop {
            tokio::select! {
                received = self.live.recv() => {
                    // Lagged: changes were lost for this watcher, so end it rather than
                    // send a gap; Closed: the store is gone, or was restored to a
                    // snapshot (history up to the restore compacted: kube's 410).
                    let change = match received {
                        Ok(change) => change,
                        Err(broadcast::error::RecvError::Closed) => {
                            let store = self.store.upgrade()?;
                            let compacted = store.lock().unwrap_or_else(PoisonError::into_inner).compacted;
                            return (compacted > self.seen + 1).then_some(Err(StorageError::Compacted {
                                requested: self.seen,
                                compacted,
                            }));
                        }
                        Err(broadcast::error::RecvError::Lagged(_)) => return None,
                    };
                    if change.revision() <= self.seen {
                        continue;
                    }
                    self.seen = change.revision();
                    if change.key.starts_with(&self.prefix) {
                        self.last_sent = Instant::now();
                        return Some(Ok(WatchItem::Event(change.to_event())));
                    }
                }
                () = self.timer.as_mut() => {
                    let due = self.last_sent + self.interval;
                    let now = Instant::now();
                    if due > now {
                        self.timer.as_mut().reset(due);
                        continue;
                    }
                    self.last_sent = now;
                    self.timer.as_mut().reset(now + self.interval);
                    return Some(Ok(WatchItem::Progress(self.seen)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::contract;

    fn fast() -> MemoryStorage {
        MemoryStorage::new().with_progress_interval(Duration::from_millis(50))
    }

    fn at(revision: Revision) -> ListOptions {
        ListOptions {
            revision,
            ..ListOptions::default()
        }
    }

    async fn values_at(store: &MemoryStorage, revision: Revision) -> Vec<(String, String)> {
        let list = store.list("/k/", &at(revision)).await.unwrap();
        assert_eq!(list.revision, revision);
        list.items
            .into_iter()
            .map(|kv| (kv.key, String::from_utf8(kv.value.to_vec()).unwrap()))
            .collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn contract_run_all() {
        contract::run_all(&fast()).await.unwrap();
    }

    #[tokio::test]
    async fn contract_compaction() {
        let store = fast();
        let compactor = store.clone();
        contract::compaction(&store, "/compaction/", |revision| async move {
            compactor.compact(revision)
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn revisions_follow_etcd() {
        let store = MemoryStorage::new();
        // etcd: an empty store is at revision 1, the first write gets revision 2.
        assert_eq!(store.current_revision().await.unwrap(), 1);
        let a = store.create("/k/a", b"1".to_vec()).await.unwrap();
        assert_eq!((a.create_revision, a.mod_revision), (2, 2));
        let a = store.update("/k/a", b"2".to_vec(), 2).await.unwrap();
        assert_eq!((a.create_revision, a.mod_revision), (2, 3));
        let deleted = store.delete("/k/a", None).await.unwrap();
        assert_eq!((deleted.create_revision, deleted.mod_revision), (2, 4));
        assert_eq!(store.current_revision().await.unwrap(), 4);
        // Failed writes do not consume a revision.
        assert!(store.update("/k/a", b"3".to_vec(), 3).await.is_err());
        assert!(store.delete("/k/a", None).await.is_err());
        store.create("/k/b", Vec::new()).await.unwrap();
        assert!(store.create("/k/b", Vec::new()).await.is_err());
        assert_eq!(store.current_revision().await.unwrap(), 5);
        let empty = store.list("/none/", &ListOptions::default()).await.unwrap();
        assert_eq!((empty.items.len(), empty.revision), (0, 5));
    }

    #[tokio::test]
    async fn snapshot_reads_after_overwrites_and_deletes() {
        let store = MemoryStorage::new();
        store.create("/k/a", b"a1".to_vec()).await.unwrap(); // 2
        store.create("/k/b", b"b1".to_vec()).await.unwrap(); // 3
        store.update("/k/a", b"a2".to_vec(), 2).await.unwrap(); // 4
        store.delete("/k/b", Some(3)).await.unwrap(); // 5
        store.create("/k/b", b"b2".to_vec()).await.unwrap(); // 6
        store.delete("/k/a", None).await.unwrap(); // 7
        store.create("/other", b"x".to_vec()).await.unwrap(); // 8

        assert_eq!(values_at(&store, 1).await, pairs(&[]));
        assert_eq!(values_at(&store, 2).await, pairs(&[("/k/a", "a1")]));
        assert_eq!(
            values_at(&store, 3).await,
            pairs(&[("/k/a", "a1"), ("/k/b", "b1")])
        );
        assert_eq!(
            values_at(&store, 4).await,
            pairs(&[("/k/a", "a2"), ("/k/b", "b1")])
        );
        assert_eq!(values_at(&store, 5).await, pairs(&[("/k/a", "a2")]));
        assert_eq!(
            values_at(&store, 6).await,
            pairs(&[("/k/a", "a2"), ("/k/b", "b2")])
        );
        assert_eq!(values_at(&store, 7).await, pairs(&[("/k/b", "b2")]));
        assert_eq!(values_at(&store, 8).await, pairs(&[("/k/b", "b2")]));

        // The re-created key's revisions at a past revision are the old life's.
        let old = store.list("/k/b", &at(3)).await.unwrap();
        assert_eq!(
            (old.items[0].create_revision, old.items[0].mod_revision),
            (3, 3)
        );
        let new = store.list("/k/b", &at(8)).await.unwrap();
        assert_eq!(
            (new.items[0].create_revision, new.items[0].mod_revision),
            (6, 6)
        );
        assert_eq!(
            store.list("/k/", &at(9)).await,
            Err(StorageError::FutureRevision {
                requested: 9,
                current: 8
            })
        );
    }

    #[tokio::test]
    async fn pagination_counts_remaining_at_the_revision() {
        let store = MemoryStorage::new();
        for name in ["a", "b", "c", "d"] {
            store
                .create(&format!("/k/{name}"), Vec::new())
                .await
                .unwrap(); // 2..=5
        }
        store.delete("/k/c", None).await.unwrap(); // 6
        let page = |start_after: &str, revision| ListOptions {
            start_after: Some(start_after.to_owned()),
            limit: 1,
            revision,
            min_revision: None,
        };
        let now = store.list("/k/", &page("/k/a", 0)).await.unwrap();
        assert_eq!(now.items[0].key, "/k/b");
        assert_eq!((now.remaining, now.revision), (1, 6));
        let before = store.list("/k/", &page("/k/a", 5)).await.unwrap();
        assert_eq!(before.items[0].key, "/k/b");
        assert_eq!((before.remaining, before.revision), (2, 5));
        // A start before the prefix starts at the prefix.
        let early = store.list("/k/", &page("/a", 0)).await.unwrap();
        assert_eq!((early.items[0].key.as_str(), early.remaining), ("/k/a", 2));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_compare_and_swap_loses_no_increment() {
        const TASKS: usize = 16;
        const INCREMENTS: usize = 50;
        let store = MemoryStorage::new();
        store.create("/counter", b"0".to_vec()).await.unwrap();
        let tasks: Vec<_> = (0..TASKS)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move {
                    for _ in 0..INCREMENTS {
                        contract::increment(&store, "/counter").await.unwrap();
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        let counter = store.get("/counter").await.unwrap().unwrap();
        assert_eq!(counter.value, (TASKS * INCREMENTS).to_string().into_bytes());
        // One revision for the create, one per successful increment, none for conflicts.
        let writes = Revision::try_from(TASKS * INCREMENTS).unwrap();
        assert_eq!(counter.mod_revision, 2 + writes);
        assert_eq!(store.current_revision().await.unwrap(), 2 + writes);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn watch_order_under_concurrent_writers() {
        const WRITERS: usize = 8;
        const WRITES: usize = 100;
        let store = fast();
        store.create("/k/seed", Vec::new()).await.unwrap(); // 2
                                                            // One watcher replays from the start while writes run, one is live only.
        let mut replaying = store.watch("/k/", 1).await.unwrap();
        let mut live = store.watch("/k/", 2).await.unwrap();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let store = store.clone();
                tokio::spawn(async move {
                    let key = format!("/k/{w}");
                    let mut kv = store.create(&key, b"0".to_vec()).await.unwrap();
                    for i in 1..WRITES {
                        let value = i.to_string().into_bytes();
                        kv = store.update(&key, value, kv.mod_revision).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                })
            })
            .collect();
        // A late watcher from the middle of the stream of writes.
        let middle = loop {
            let revision = store.current_revision().await.unwrap();
            if revision >= 2 + Revision::try_from(WRITERS * WRITES / 2).unwrap() {
                break revision;
            }
            tokio::task::yield_now().await;
        };
        let mut late = store.watch("/k/", middle).await.unwrap();
        for writer in writers {
            writer.await.unwrap();
        }
        let last = store.current_revision().await.unwrap();
        assert_eq!(last, 2 + Revision::try_from(WRITERS * WRITES).unwrap());

        for (watch, after) in [(&mut replaying, 1), (&mut live, 2), (&mut late, middle)] {
            let mut expected = after + 1;
            let mut next_value = [0usize; WRITERS];
            while expected <= last {
                let event = contract::next_event(watch).await.unwrap();
                // Every write is under the prefix, so revisions come one by one.
                assert_eq!(event.kv.mod_revision, expected);
                expected += 1;
                if event.kv.key == "/k/seed" {
                    continue;
                }
                let writer: usize = event.kv.key["/k/".len()..].parse().unwrap();
                let value: usize = String::from_utf8(event.kv.value.to_vec())
                    .unwrap()
                    .parse()
                    .unwrap();
                if after < 2 {
                    // Watchers from the start see every write of each key in order.
                    assert_eq!(value, next_value[writer]);
                }
                next_value[writer] = value + 1;
                assert_eq!(event.prev.is_none(), value == 0);
            }
        }
    }

    #[tokio::test]
    async fn history_window_compacts_old_revisions() {
        let store = MemoryStorage::new().with_history(5);
        for i in 0..10 {
            store.create(&format!("/k/{i}"), Vec::new()).await.unwrap(); // 2..=11
        }
        // The last 5 revisions, 7..=11, stay readable.
        assert_eq!(store.compacted_revision(), 7);
        assert_eq!(store.list("/k/", &at(7)).await.unwrap().items.len(), 6);
        assert_eq!(
            store.list("/k/", &at(6)).await,
            Err(StorageError::Compacted {
                requested: 6,
                compacted: 7
            })
        );
        // Watching after 6 needs revisions 7.. only.
        let mut watch = store.watch("/k/", 6).await.unwrap();
        assert_eq!(
            contract::next_event(&mut watch)
                .await
                .unwrap()
                .kv
                .mod_revision,
            7
        );
        assert_eq!(
            store.watch("/k/", 5).await.err(),
            Some(StorageError::Compacted {
                requested: 5,
                compacted: 7
            })
        );
        assert_eq!(
            store.watch("/k/", 12).await.err(),
            Some(StorageError::FutureRevision {
                requested: 12,
                current: 11
            })
        );
    }

    #[tokio::test]
    async fn history_stays_bounded_under_overwrites() {
        let store = MemoryStorage::new().with_history(5);
        let mut kv = store.create("/k/a", Vec::new()).await.unwrap();
        let doomed = store.create("/k/b", Vec::new()).await.unwrap();
        store.delete("/k/b", None).await.unwrap();
        for i in 0..1000 {
            kv = store
                .update("/k/a", vec![b'x'; i % 7], kv.mod_revision)
                .await
                .unwrap();
        }
        let state = store.lock();
        assert_eq!(state.log.len(), 5);
        assert_eq!(state.keys.get("/k/a").map(Versions::len), Some(5));
        // The deleted key's tombstone fell out of the window with everything before it.
        assert!(!state.keys.contains_key(doomed.key.as_str()));
        assert_eq!(state.keys.len(), 1);
    }

    #[tokio::test]
    async fn compact_keeps_the_latest_version_of_each_key() {
        let store = MemoryStorage::new();
        store.create("/k/a", b"a1".to_vec()).await.unwrap(); // 2
        store.create("/k/b", b"b1".to_vec()).await.unwrap(); // 3
        store.update("/k/a", b"a2".to_vec(), 2).await.unwrap(); // 4
        store.delete("/k/b", None).await.unwrap(); // 5
        store.update("/k/a", b"a3".to_vec(), 4).await.unwrap(); // 6
        assert_eq!(
            store.compact(7),
            Err(StorageError::FutureRevision {
                requested: 7,
                current: 6
            })
        );
        store.compact(4).unwrap();
        assert_eq!(store.compacted_revision(), 4);
        assert_eq!(
            values_at(&store, 4).await,
            pairs(&[("/k/a", "a2"), ("/k/b", "b1")])
        );
        assert_eq!(values_at(&store, 5).await, pairs(&[("/k/a", "a2")]));
        assert_eq!(
            store.list("/k/", &at(3)).await,
            Err(StorageError::Compacted {
                requested: 3,
                compacted: 4
            })
        );
        // Compacting backwards does nothing.
        store.compact(2).unwrap();
        assert_eq!(store.compacted_revision(), 4);
        store.compact(6).unwrap();
        assert_eq!(values_at(&store, 6).await, pairs(&[("/k/a", "a3")]));
        assert_eq!(
            store.lock().keys.len(),
            1,
            "the deleted key is gone for good"
        );
        // Raising the window later compacts at once.
        let store = store.with_history(1);
        assert_eq!(store.compacted_revision(), 6);
    }

    #[tokio::test]
    async fn progress_arrives_when_idle() {
        let store = fast();
        let started = Instant::now();
        let mut watch = store.watch("/k/", 0).await.unwrap();
        assert_eq!(contract::next_progress(&mut watch).await, Ok(1));
        assert_eq!(contract::next_progress(&mut watch).await, Ok(1));
        assert!(started.elapsed() >= Duration::from_millis(100));
        // A change elsewhere advances progress without an event.
        store.create("/other", Vec::new()).await.unwrap();
        assert_eq!(contract::next_progress(&mut watch).await, Ok(2));
        let created = store.create("/k/a", Vec::new()).await.unwrap();
        assert_eq!(contract::next_event(&mut watch).await.unwrap().kv, created);
        assert_eq!(contract::next_progress(&mut watch).await, Ok(3));
    }

    #[tokio::test]
    async fn progress_waits_for_the_replay() {
        let store = fast();
        for i in 0..3 {
            store.create(&format!("/k/{i}"), Vec::new()).await.unwrap(); // 2..=4
        }
        let mut watch = store.watch("/k/", 1).await.unwrap();
        tokio::time::sleep(Duration::from_millis(120)).await;
        for revision in 2..=4 {
            match watch.next().await {
                Some(Ok(WatchItem::Event(event))) => assert_eq!(event.kv.mod_revision, revision),
                other => panic!("expected the replayed event {revision}, got {other:?}"),
            }
        }
        assert_eq!(contract::next_progress(&mut watch).await, Ok(4));
    }

    #[tokio::test]
    async fn lagging_watcher_is_ended_not_buffered() {
        let store = fast().with_watch_buffer(4);
        let mut watch = store.watch("/k/", 0).await.unwrap();
        let first = store.create("/k/first", Vec::new()).await.unwrap();
        assert_eq!(contract::next_event(&mut watch).await.unwrap().kv, first);
        for i in 0..20 {
            store.create(&format!("/k/{i}"), Vec::new()).await.unwrap();
        }
        // The watcher missed changes: its stream ends rather than skip them.
        let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(5), watch.collect::<Vec<_>>())
            .await
            .unwrap();
        assert!(rest.is_empty(), "got {rest:?}");
        // Writers were never blocked, and a new watch can resume from the last event.
        let mut resumed = store.watch("/k/", first.mod_revision).await.unwrap();
        let next = contract::next_event(&mut resumed).await.unwrap();
        assert_eq!(next.kv.mod_revision, first.mod_revision + 1);
    }

    #[tokio::test]
    async fn watch_ends_when_the_store_is_dropped() {
        let store = fast();
        let watch = store.watch("/k/", 0).await.unwrap();
        drop(store);
        let items: Vec<_> = tokio::time::timeout(Duration::from_secs(5), watch.collect::<Vec<_>>())
            .await
            .unwrap();
        assert!(items.is_empty());
    }

    async fn live(store: &MemoryStorage) -> Vec<KeyValue> {
        store
            .list("/", &ListOptions::default())
            .await
            .unwrap()
            .items
    }

    #[tokio::test]
    async fn restore_goes_back_to_a_snapshot_at_new_revisions_and_ends_watches() {
        let store = fast();
        store.create("/k/kept", b"1".to_vec()).await.unwrap();
        let changed = store.create("/k/changed", b"1".to_vec()).await.unwrap();
        store.create("/k/deleted", b"1".to_vec()).await.unwrap();
        let snapshot = store.snapshot();
        let frozen: Vec<KeyValue> = snapshot.objects().collect();
        assert_eq!(frozen, live(&store).await);

        store
            .update("/k/changed", b"2".to_vec(), changed.mod_revision)
            .await
            .unwrap();
        store.delete("/k/deleted", None).await.unwrap();
        store.create("/k/added", b"1".to_vec()).await.unwrap();
        let mut watch = store.watch("/k/", 0).await.unwrap();
        let before = store.current_revision().await.unwrap();

        let mut written: Vec<String> = store
            .restore(&snapshot)
            .into_iter()
            .map(|e| e.kv.key)
            .collect();
        written.sort();
        assert_eq!(written, ["/k/added", "/k/changed", "/k/deleted"]);
        let now = live(&store).await;
        let values: Vec<(&str, &[u8])> = now
            .iter()
            .map(|kv| (kv.key.as_str(), &kv.value[..]))
            .collect();
        let want: Vec<(&str, &[u8])> = frozen
            .iter()
            .map(|kv| (kv.key.as_str(), &kv.value[..]))
            .collect();
        assert_eq!(values, want);
        for kv in &now {
            if kv.key == "/k/kept" {
                assert_eq!(kv, &frozen[2], "an unchanged key keeps its revision");
            } else {
                assert!(kv.mod_revision > before, "{kv:?} went back");
            }
        }
        // Watches of the old state end with kube's 410; so does resuming one.
        let ended = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .unwrap();
        assert!(
            matches!(ended, Some(Err(StorageError::Compacted { .. }))),
            "{ended:?}"
        );
        assert!(matches!(
            store.watch("/k/", before).await.err(),
            Some(StorageError::Compacted { .. })
        ));
        // Writes go on above every revision handed out.
        let next = store.create("/k/next", b"1".to_vec()).await.unwrap();
        assert!(next.mod_revision > store.snapshot().revision() - 1);
        assert!(next.mod_revision > before);
        // Restoring again gives the same objects back; nothing else changed.
        let again = store.restore(&snapshot);
        assert_eq!(again.len(), 1);
        assert_eq!(
            (again[0].kind.clone(), again[0].kv.key.as_str()),
            (EventKind::Delete, "/k/next")
        );
        assert!(store.restore(&snapshot).is_empty());
    }

    #[tokio::test]
    async fn a_store_from_a_snapshot_is_independent_of_its_source() {
        let source = MemoryStorage::new();
        source.create("/k/a", b"1".to_vec()).await.unwrap();
        let snapshot = source.snapshot();
        let fork =
            MemoryStorage::from_snapshot(&snapshot, source.current_revision().await.unwrap());
        assert_eq!(live(&fork).await, live(&source).await);
        let a = fork.get("/k/a").await.unwrap().unwrap();
        fork.update("/k/a", b"fork".to_vec(), a.mod_revision)
            .await
            .unwrap();
        source.create("/k/b", b"source".to_vec()).await.unwrap();
        assert_eq!(&fork.get("/k/a").await.unwrap().unwrap().value[..], b"fork");
        assert_eq!(&source.get("/k/a").await.unwrap().unwrap().value[..], b"1");
        assert!(fork.get("/k/b").await.unwrap().is_none());
        assert_eq!(snapshot.objects().count(), 1);
        // The fork starts above the revision it was given.
        let fork = MemoryStorage::from_snapshot(&snapshot, 100);
        assert_eq!(fork.current_revision().await.unwrap(), 100);
        assert_eq!(fork.create("/k/c", vec![]).await.unwrap().mod_revision, 101);
    }

    #[tokio::test]
    async fn a_snapshot_file_reads_back_and_bad_ones_are_refused() {
        let store = MemoryStorage::new().with_history(3);
        for i in 0..10 {
            store
                .create(&format!("/k/{i}"), vec![i; i as usize])
                .await
                .unwrap();
        }
        store.delete("/k/3", None).await.unwrap();
        let snapshot = store.snapshot();
        let bytes = snapshot.encode(42);
        let (read, written_at) = Snapshot::decode(&bytes).unwrap();
        assert_eq!(written_at, 42);
        assert_eq!(read.revision(), snapshot.revision());
        assert_eq!(
            read.objects().collect::<Vec<_>>(),
            snapshot.objects().collect::<Vec<_>>()
        );
        assert_eq!(read.objects().count(), 9);
        assert!(Snapshot::decode(b"something else").is_err());
        assert!(Snapshot::decode(&bytes[..bytes.len() - 3]).is_err());
        let mut huge = bytes[..SNAPSHOT_MAGIC.len() + 16].to_vec();
        huge.extend_from_slice(&u64::MAX.to_le_bytes());
        assert!(Snapshot::decode(&huge).is_err());
    }
}
