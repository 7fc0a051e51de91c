//! The embedded, in-process store: etcd's semantics (MVCC with one global revision,
//! compare-and-swap on `mod_revision`, watch from a revision, compaction) over a
//! `BTreeMap` of per-key version histories.
//!
//! Like etcd, an empty store is at revision 1 and the first write gets revision 2.
//! History is bounded: only the last `history` revisions stay readable (reads and
//! watches older than that fail with `StorageError::Compacted`), and superseded
//! versions are dropped as the window moves, so memory follows the live data.
//!
//! A watcher that falls more than the watch buffer behind has its stream ended
//! (without an error item), like kube's watch cache closing an unresponsive watcher:
//! the client re-watches from its last revision. Writers never wait for watchers.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
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
    keys: BTreeMap<Arc<str>, VecDeque<Version>>,
    /// Every change with revision >= `compacted`, in revision order (one per revision).
    log: VecDeque<Arc<Change>>,
    /// Live changes for watchers; sent under the lock so receivers see revision order.
    events: broadcast::Sender<Arc<Change>>,
}

impl State {
    /// The latest version of `key` if it is live.
    fn live(&self, key: &str) -> Option<Stored> {
        let version = self.keys.get(key)?.back()?;
        Some(Stored {
            value: version.value.clone()?,
            create_revision: version.create_revision,
            mod_revision: version.mod_revision,
        })
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
        let prev = self.live(key);
        // `prev` is `None` for a create, so a re-created key starts a new life.
        let create_revision = prev.as_ref().map_or(revision, |p| p.create_revision);
        let version = Version {
            create_revision,
            mod_revision: revision,
            value: value.clone(),
        };
        let shared_key = match self.keys.get_key_value(key) {
            Some((k, _)) => Arc::clone(k),
            None => Arc::from(key),
        };
        // Most keys have one live version: room for one, not VecDeque's default four.
        self.keys
            .entry(Arc::clone(&shared_key))
            .or_insert_with(|| VecDeque::with_capacity(1))
            .push_back(version);
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
        let Some(versions) = self.keys.get_mut(key) else {
            return;
        };
        while versions.len() >= 2 && versions[1].mod_revision <= revision {
            versions.pop_front();
        }
        if versions
            .front()
            .is_some_and(|v| v.value.is_none() && v.mod_revision <= revision)
        {
            versions.pop_front();
        }
        if versions.is_empty() {
            self.keys.remove(key);
        } else if versions.len() == 1 && versions.capacity() > 1 {
            // Back to one version once older ones leave the window (memory follows
            // the live data).
            versions.shrink_to_fit();
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
                keys: BTreeMap::new(),
                log: VecDeque::new(),
                events,
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
        self.lock().events = broadcast::channel(changes.max(1)).0;
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
fn visible_at(versions: &VecDeque<Version>, revision: Revision) -> Option<Stored> {
    let index = versions.partition_point(|v| v.mod_revision <= revision);
    let version = versions.get(index.checked_sub(1)?)?;
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
            .range::<str, _>((start, Bound::Unbounded))
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
            Some((Ok(item), watcher))
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
    async fn next_item(&mut self) -> Option<WatchItem> {
        if let Some(change) = self.replay.pop_front() {
            self.last_sent = Instant::now();
            return Some(WatchItem::Event(change.to_event()));
        }
        loop {
            tokio::select! {
                received = self.live.recv() => {
                    // Lagged: changes were lost for this watcher, so end it rather than
                    // send a gap; Closed: the store is gone.
                    let change = received.ok()?;
                    if change.revision() <= self.seen {
                        continue;
                    }
                    self.seen = change.revision();
                    if change.key.starts_with(&self.prefix) {
                        self.last_sent = Instant::now();
                        return Some(WatchItem::Event(change.to_event()));
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
                    return Some(WatchItem::Progress(self.seen));
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
        assert_eq!(state.keys.get("/k/a").map(VecDeque::len), Some(5));
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
}
