//! The watch cache (kube's `cacher`, for watches): one backend watch per prefix, shared
//! by every watcher of that prefix, over a window of recent changes.
//!
//! [`WatchCache`] wraps a backend and passes every call through except `watch`. The
//! first watch of a prefix opens the backend's watch (a *feed*); later watches of the
//! same prefix read the feed's window from their own position, so a thousand clients
//! watching one resource cost etcd one watch. Each watcher holds only a position in
//! the shared window (its buffer is bounded by the window, not by how far behind it
//! is); one whose position falls out of the window is ended, without an error, so
//! its client resumes from its last revision (served from the backend's history).
//!
//! The feed outlives the backend's failures: when the backend's watch fails (etcd lost
//! its leader, a member died or hung, the connection broke) the feed opens it again
//! from its last revision, with back-off, and its watchers see nothing but a pause.
//! Only a failure the feed cannot bridge ends them: its revision was compacted
//! meanwhile (`Compacted`, kube's 410 Expired, so clients list again).
//!
//! Progress reported to watchers is the feed's own: a revision the backend reported
//! in order with the events (see `etcd`'s `learn_progress_order`), so a watcher never
//! hears of progress past an event it has not been sent.
//!
//! Lists (kube's cacher serves them too): over a backend that is not itself in memory
//! (etcd), each feed also keeps the current objects under its prefix (those over
//! [`LIST_VALUE_BYTES`] by key only: a list covering one reads the backend), read once at
//! the revision it opened at and kept current by its changes. A list that any
//! revision from some point on satisfies (`resourceVersion=0`, `NotOlderThan`) is
//! answered from the feed of its prefix (or of a prefix above it, as a namespace's
//! list from its resource's feed) when that feed has reached the point; everything
//! else (consistent reads, `Exact`, continue tokens, a prefix nobody watches) reads
//! the backend. The embedded store is its own cache: its lists read it directly.
//!
//! Invariant: a watcher sees every change under its prefix after its start revision,
//! in revision order, exactly once, or its stream ends (the contract in `contract.rs`,
//! run against both backends through this cache in `integration/etcd.rs` and the unit
//! tests below); through HTTP and etcd's faults by `check_watches` in the 3-member
//! cluster tests of `integration/etcd_server.rs`. A list served by a feed equals the
//! backend's list at the revision it reports (`lists_from_a_feed_equal_the_backend_s`
//! below; through HTTP with etcd stopped in `integration/etcd_server.rs`).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    Event, EventKind, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// Most changes a feed's window keeps (kube's watch cache holds up to 100,000 per
/// resource; changes are shared bytes, so a full window of small objects is a few MB).
pub const WINDOW_EVENTS: usize = 10_000;

/// Most bytes of values a feed's window keeps (each change's value and previous
/// value): past it the oldest changes go at once, however recent, so a few large
/// objects (CRDs with large schemas, big ConfigMaps) rewritten cannot pin their old
/// revisions in memory. A watcher behind them resumes from the backend's history.
pub const WINDOW_BYTES: usize = 16 << 20;

/// The largest value a feed keeps to serve lists: a list of a prefix holding a larger
/// one reads the backend. Lists from the cache are for the many small objects
/// informers list; a few large ones (CRDs with large schemas) kept here too would
/// double what they cost in memory.
pub const LIST_VALUE_BYTES: usize = 64 << 10;

/// How long a change stays in the window at least (kube's `eventFreshDuration`).
pub const WINDOW_AGE: Duration = Duration::from_secs(75);

/// How long a feed without watchers stays open, so a client that re-watches at once
/// (a watch's timeout ended, a connection dropped) finds its position.
const LINGER: Duration = Duration::from_secs(30);

/// Back-off between attempts to open the backend's watch again.
const RETRY_MIN: Duration = Duration::from_millis(50);
const RETRY_MAX: Duration = Duration::from_secs(2);

/// A backend whose watches are shared per prefix through a window of recent changes.
pub struct WatchCache {
    inner: Arc<dyn Storage>,
    feeds: Arc<Mutex<HashMap<String, Weak<Feed>>>>,
    /// One turn per prefix whose feed is being opened: the watches that arrive
    /// meanwhile wait for it and share it, instead of each listing the prefix.
    /// An opening that failed leaves its error for those that waited on it.
    opening: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<StorageError>>>>>,
    window_events: usize,
    window_bytes: usize,
    /// Whether feeds keep their prefix's objects and serve lists.
    lists: bool,
}

impl WatchCache {
    /// Wraps `inner`; lists are served from feeds unless `inner` is held in memory.
    pub fn new(inner: Arc<dyn Storage>) -> WatchCache {
        WatchCache {
            lists: !inner.in_memory(),
            inner,
            feeds: Arc::default(),
            opening: Mutex::default(),
            window_events: WINDOW_EVENTS,
            window_bytes: WINDOW_BYTES,
        }
    }

    /// Whether feeds keep their prefix's objects and serve lists (for tests over the
    /// embedded store).
    pub fn with_lists(mut self, lists: bool) -> WatchCache {
        self.lists = lists;
        self
    }

    /// Keeps at most `events` changes per prefix (at least 1); for tests of watchers
    /// falling out of the window.
    pub fn with_window(mut self, events: usize) -> WatchCache {
        self.window_events = events.max(1);
        self
    }

    /// Keeps at most `bytes` of values per prefix (the newest change always); for
    /// tests of large objects.
    pub fn with_window_bytes(mut self, bytes: usize) -> WatchCache {
        self.window_bytes = bytes;
        self
    }

    /// How many backend watches are open (one per watched prefix).
    pub fn feeds(&self) -> usize {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.values().filter(|f| f.strong_count() > 0).count()
    }

    /// Ends every feed now, with `Compacted` at `compacted` (kube's 410 Expired): for a
    /// backend put back to a snapshot behind the feeds' backs. Their watchers get that
    /// error next, before any change they still hold; the next watch opens a new feed.
    pub fn end_all(&self, compacted: Revision) {
        let feeds: Vec<Arc<Feed>> = {
            let mut map = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
            map.drain().filter_map(|(_, feed)| feed.upgrade()).collect()
        };
        for feed in feeds {
            let requested = feed.lock().head;
            feed.end(StorageError::Compacted {
                requested,
                compacted,
            });
        }
    }

    /// The prefix's feed, opened from `after` when there is none; with the revision it
    /// opened at when this call opened it.
    async fn feed(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(Arc<Feed>, Option<Revision>), StorageError> {
        if let Some(feed) = self.existing(prefix) {
            return Ok((feed, None));
        }
        // One opening at a time per prefix: a thousand watches arriving together on a
        // prefix of 20,000 objects listed it a thousand times (on etcd, gigabytes).
        let turn = {
            let mut opening = self.opening.lock().unwrap_or_else(|e| e.into_inner());
            opening.entry(prefix.to_owned()).or_default().clone()
        };
        let opened = async {
            let mut failed = turn.lock().await;
            if let Some(feed) = self.existing(prefix) {
                return Ok((feed, None));
            }
            // The attempt they waited on failed (etcd down or frozen): theirs fail with
            // it rather than each trying, one after another, for as long.
            if let Some(e) = failed.as_ref() {
                return Err(e.clone());
            }
            let opened = self.open(prefix, after).await;
            if let Err(e) = &opened {
                *failed = Some(e.clone());
            }
            opened
        }
        .await;
        let mut opening = self.opening.lock().unwrap_or_else(|e| e.into_inner());
        // The map's and ours: nobody waits on this turn any more.
        if Arc::strong_count(&turn) == 2 {
            opening.remove(prefix);
        }
        opened
    }

    /// Open the feed of `prefix` (see [`WatchCache::feed`]).
    async fn open(
        &self,
        prefix: &str,
        after: Revision,
    ) -> Result<(Arc<Feed>, Option<Revision>), StorageError> {
        // "From now" is the current revision, so the window knows where it starts.
        let start = if after == 0 {
            self.inner.current_revision().await?
        } else {
            after
        };
        // The objects at the start revision, then the changes after it.
        let objects = if self.lists {
            let all = ListOptions {
                revision: start,
                ..ListOptions::default()
            };
            let listed = self.inner.list(prefix, &all).await?;
            let mut objects = Objects::default();
            for kv in listed.items {
                objects.put(kv);
            }
            Some(objects)
        } else {
            None
        };
        let source = self.inner.watch(prefix, start).await?;
        let mut feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        // Another watch may have opened one meanwhile: use it, drop ours.
        if let Some(feed) = feeds.get(prefix).and_then(Weak::upgrade) {
            return Ok((feed, None));
        }
        let (changed, _) = watch::channel(start);
        let feed = Arc::new(Feed {
            window: Mutex::new(Window {
                events: VecDeque::new(),
                bytes: 0,
                floor: start,
                head: start,
                reports: 0,
                ended: None,
                objects,
            }),
            changed,
            limit: self.window_events,
            byte_limit: self.window_bytes,
            halted: Default::default(),
        });
        feeds.insert(prefix.to_owned(), Arc::downgrade(&feed));
        drop(feeds);
        tokio::spawn(follow(
            self.inner.clone(),
            self.feeds.clone(),
            prefix.to_owned(),
            feed.clone(),
            source,
        ));
        Ok((feed, Some(start)))
    }

    fn existing(&self, prefix: &str) -> Option<Arc<Feed>> {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        feeds.get(prefix).and_then(Weak::upgrade)
    }

    /// The feed of `prefix` or of the nearest prefix above it (cut at a `/`).
    fn covering(&self, prefix: &str) -> Option<Arc<Feed>> {
        let feeds = self.feeds.lock().unwrap_or_else(|e| e.into_inner());
        let above = prefix
            .char_indices()
            .rev()
            .filter(|&(i, c)| c == '/' && i + 1 < prefix.len())
            .map(|(i, _)| &prefix[..=i]);
        std::iter::once(prefix)
            .chain(above)
            .find_map(|p| feeds.get(p).and_then(Weak::upgrade))
    }

    /// A list answered from a feed's objects, when a feed covers `prefix` and has
    /// reached `min` (and has not ended).
    fn cached_list(&self, prefix: &str, opts: &ListOptions, min: Revision) -> Option<ListResult> {
        if !self.lists {
            return None;
        }
        let feed = self.covering(prefix)?;
        let window = feed.lock();
        if window.ended.is_some() || window.head < min {
            return None;
        }
        let objects = window.objects.as_ref()?;
        if objects.any_large_under(prefix) {
            return None;
        }
        let objects = &objects.kept;
        let from = match &opts.start_after {
            Some(key) if key.as_str() >= prefix => Bound::Excluded(key.clone()),
            _ => Bound::Included(prefix.to_owned()),
        };
        let mut matching = objects
            .range((from, Bound::Unbounded))
            .take_while(|(key, _)| key.starts_with(prefix))
            .map(|(_, kv)| kv);
        let items: Vec<KeyValue> = if opts.limit > 0 {
            matching
                .by_ref()
                .take(opts.limit as usize)
                .cloned()
                .collect()
        } else {
            matching.by_ref().cloned().collect()
        };
        Some(ListResult {
            items,
            revision: window.head,
            remaining: matching.count() as i64,
        })
    }
}

/// One prefix's shared watch.
struct Feed {
    window: Mutex<Window>,
    /// Set when the feed ends: its readers drop what they took from the window and
    /// not handed out yet (see [`WatchCache::end_all`]).
    halted: std::sync::atomic::AtomicBool,
    /// The window's head revision, told to watchers waiting for more.
    changed: watch::Sender<Revision>,
    limit: usize,
    /// Most bytes of values the window keeps.
    byte_limit: usize,
}

struct Window {
    /// Recent changes in revision order, with when they arrived.
    events: VecDeque<(Arc<Event>, Instant)>,
    /// Bytes of values in `events` ([`event_bytes`]).
    bytes: usize,
    /// Every change after this revision is in `events` or yet to come.
    floor: Revision,
    /// Every change up to this revision has arrived (the feed's progress).
    head: Revision,
    /// How many progress reports the backend has sent: each is passed on to the
    /// watchers that are idle, also at an unchanged revision.
    reports: u64,
    /// Why the feed ended, when it did: its watchers end with this error.
    ended: Option<StorageError>,
    /// The objects under the prefix at `head`, when the feed serves lists.
    objects: Option<Objects>,
}

/// The objects under a feed's prefix: kept when at most [`LIST_VALUE_BYTES`], else
/// only their keys (lists covering them read the backend).
#[derive(Default)]
struct Objects {
    kept: BTreeMap<String, KeyValue>,
    large: BTreeSet<String>,
}

impl Objects {
    fn put(&mut self, kv: KeyValue) {
        if kv.value.len() > LIST_VALUE_BYTES {
            self.kept.remove(&kv.key);
            self.large.insert(kv.key);
        } else {
            self.large.remove(&kv.key);
            self.kept.insert(kv.key.clone(), kv);
        }
    }

    fn remove(&mut self, key: &str) {
        self.kept.remove(key);
        self.large.remove(key);
    }

    /// Whether a key under `prefix` holds a value too large to keep.
    fn any_large_under(&self, prefix: &str) -> bool {
        self.large
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .next()
            .is_some_and(|key| key.starts_with(prefix))
    }
}

/// The bytes of values a change holds: its value and its previous value.
fn event_bytes(event: &Event) -> usize {
    event.kv.value.len() + event.prev.as_ref().map_or(0, |p| p.value.len())
}

impl Feed {
    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes in one backend item.
    fn push(&self, item: WatchItem) {
        let mut window = self.lock();
        match item {
            WatchItem::Event(event) => {
                let revision = event.kv.mod_revision;
                // One transaction's changes share a revision; older ones are repeats
                // of a watch opened again.
                if revision < window.head {
                    return;
                }
                window.head = revision;
                if let Some(objects) = window.objects.as_mut() {
                    match event.kind {
                        EventKind::Delete => objects.remove(&event.kv.key),
                        _ => objects.put(event.kv.clone()),
                    }
                }
                let now = Instant::now();
                window.bytes += event_bytes(&event);
                window.events.push_back((Arc::new(event), now));
                // Beyond the count bound, the oldest go once they are old enough;
                // beyond twice it, or beyond the byte bound, at once.
                while window.events.len() > 1 {
                    let (oldest, arrived) = &window.events[0];
                    let over_bytes = window.bytes > self.byte_limit;
                    let over_count = window.events.len() > self.limit
                        && (window.events.len() > 2 * self.limit || now - *arrived >= WINDOW_AGE);
                    if !over_bytes && !over_count {
                        break;
                    }
                    let (floor, bytes) = (oldest.kv.mod_revision, event_bytes(oldest));
                    window.floor = floor;
                    window.bytes -= bytes;
                    window.events.pop_front();
                }
            }
            WatchItem::Progress(revision) => {
                window.head = window.head.max(revision);
                window.reports += 1;
            }
        }
        let head = window.head;
        drop(window);
        self.changed.send_replace(head);
    }

    fn end(&self, error: StorageError) {
        self.lock().ended = Some(error);
        self.halted
            .store(true, std::sync::atomic::Ordering::Release);
        self.changed.send_modify(|_| {});
    }
}

/// Reads the backend's watch into the feed, opening it again after failures, until the
/// feed has had no watchers for [`LINGER`] or fails for good.
async fn follow(
    inner: Arc<dyn Storage>,
    feeds: Arc<Mutex<HashMap<String, Weak<Feed>>>>,
    prefix: String,
    feed: Arc<Feed>,
    source: WatchStream,
) {
    let mut source = Some(source);
    let mut retry = RETRY_MIN;
    let mut unwatched_since: Option<Instant> = None;
    let mut check = tokio::time::interval(Duration::from_secs(1));
    check.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // Only this task and the map's weak reference: nobody watches.
        if Arc::strong_count(&feed) == 1 {
            let since = *unwatched_since.get_or_insert_with(Instant::now);
            // A watcher may find the feed meanwhile: only an unwatched one goes.
            if since.elapsed() >= LINGER && remove(&feeds, &prefix, &feed, true) {
                return;
            }
        } else {
            unwatched_since = None;
        }
        let Some(stream) = source.as_mut() else {
            let from = feed.lock().head;
            match inner.watch(&prefix, from).await {
                Ok(stream) => {
                    source = Some(stream);
                    retry = RETRY_MIN;
                }
                Err(error @ StorageError::Compacted { .. })
                | Err(error @ StorageError::FutureRevision { .. }) => {
                    tracing::warn!(prefix, %error, "watch cache: cannot resume, ending its watchers");
                    feed.end(error);
                    remove(&feeds, &prefix, &feed, false);
                    return;
                }
                Err(error) => {
                    tracing::debug!(prefix, %error, "watch cache: backend watch not open yet");
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RETRY_MAX);
                }
            }
            continue;
        };
        let item = tokio::select! {
            item = stream.next() => item,
            _ = check.tick() => continue,
        };
        match item {
            Some(Ok(item)) => feed.push(item),
            Some(Err(error @ StorageError::Compacted { .. })) => {
                tracing::warn!(prefix, %error, "watch cache: fell behind a compaction, ending its watchers");
                feed.end(error);
                remove(&feeds, &prefix, &feed, false);
                return;
            }
            Some(Err(error)) => {
                tracing::info!(prefix, %error, "watch cache: backend watch failed, opening it again");
                source = None;
            }
            // The backend ended the watch (it fell behind, or the connection closed):
            // open it again from the head.
            None => source = None,
        }
    }
}

/// Takes `feed` out of the map (when it is still the prefix's), only if nobody watches
/// it when `unwatched_only`; whether it was taken out. Checked under the map's lock, so
/// no watcher finds it meanwhile.
fn remove(
    feeds: &Mutex<HashMap<String, Weak<Feed>>>,
    prefix: &str,
    feed: &Arc<Feed>,
    unwatched_only: bool,
) -> bool {
    let mut map = feeds.lock().unwrap_or_else(|e| e.into_inner());
    if unwatched_only && Arc::strong_count(feed) > 1 {
        return false;
    }
    if map
        .get(prefix)
        .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(feed)))
    {
        map.remove(prefix);
    }
    true
}

/// One watcher's position in a feed.
struct Reader {
    feed: Arc<Feed>,
    changed: watch::Receiver<Revision>,
    /// Every change up to this revision was handed out.
    position: Revision,
    /// Taken from the window, not handed out yet.
    ready: VecDeque<Arc<Event>>,
    /// The feed's progress reports passed on (or skipped: events said more).
    reports: u64,
    done: bool,
}

/// How many changes a reader takes from the window at once.
const BATCH: usize = 256;

impl Reader {
    async fn next(&mut self) -> Option<Result<WatchItem, StorageError>> {
        loop {
            if self.feed.halted.load(std::sync::atomic::Ordering::Acquire) {
                self.ready.clear();
            }
            if let Some(event) = self.ready.pop_front() {
                self.position = event.kv.mod_revision;
                return Some(Ok(WatchItem::Event(Event::clone(&event))));
            }
            if self.done {
                return None;
            }
            self.changed.borrow_and_update();
            {
                let window = self.feed.lock();
                if let Some(error) = &window.ended {
                    self.done = true;
                    return Some(Err(error.clone()));
                }
                if self.position < window.floor {
                    // Fell out of the window: end, so the client resumes from its last
                    // revision (the backend's history serves it).
                    self.done = true;
                    return None;
                }
                let first = window
                    .events
                    .partition_point(|(e, _)| e.kv.mod_revision <= self.position);
                if first < window.events.len() {
                    let last = (first + BATCH).min(window.events.len());
                    self.ready
                        .extend(window.events.range(first..last).map(|(e, _)| e.clone()));
                    continue;
                }
                if window.head > self.position || window.reports > self.reports {
                    self.position = window.head;
                    self.reports = window.reports;
                    return Some(Ok(WatchItem::Progress(window.head)));
                }
            }
            if self.changed.changed().await.is_err() {
                return None;
            }
        }
    }
}

#[async_trait]
impl Storage for WatchCache {
    // The backend's own future, not one more boxed around it: every GET passes here.
    fn get<'a, 'b, 'f>(
        &'a self,
        key: &'b str,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Option<KeyValue>, StorageError>> + Send + 'f>,
    >
    where
        'a: 'f,
        'b: 'f,
        Self: 'f,
    {
        self.inner.get(key)
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        if let (0, Some(min)) = (opts.revision, opts.min_revision) {
            if let Some(listed) = self.cached_list(prefix, opts, min) {
                return Ok(listed);
            }
        }
        self.inner.list(prefix, opts).await
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError> {
        self.inner.create(key, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        self.inner.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        self.inner.delete(key, expected).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let after = after.max(0);
        let (feed, opened_at) = self.feed(prefix, after).await?;
        let (floor, head) = {
            let window = feed.lock();
            (window.floor, window.head)
        };
        // Before the window: the backend's own history (or its 410).
        if after != 0 && after < floor {
            return self.inner.watch(prefix, after).await;
        }
        // From now, or from a revision the feed has not reached yet: the store says
        // where now is (and refuses a revision in its future).
        let position = if let Some(start) = opened_at {
            start
        } else if after == 0 || after > head {
            let current = self.inner.current_revision().await?;
            if after > current {
                return Err(StorageError::FutureRevision {
                    requested: after,
                    current,
                });
            }
            if after == 0 {
                current
            } else {
                after
            }
        } else {
            after
        };
        let reports = feed.lock().reports;
        let reader = Reader {
            changed: feed.changed.subscribe(),
            feed,
            position,
            ready: VecDeque::new(),
            reports,
            done: false,
        };
        Ok(futures::stream::unfold(reader, |mut reader| async move {
            let item = reader.next().await?;
            Some((item, reader))
        })
        .boxed())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        self.inner.current_revision().await
    }

    async fn ready(&self) -> Result<(), StorageError> {
        self.inner.ready().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::contract;
    use crate::storage::memory::MemoryStorage;

    fn cached() -> WatchCache {
        WatchCache::new(Arc::new(
            MemoryStorage::new().with_progress_interval(Duration::from_millis(50)),
        ))
    }

    #[tokio::test]
    async fn the_storage_contract_holds_through_the_cache() {
        contract::run_all(&cached()).await.unwrap();
    }

    #[tokio::test]
    async fn watchers_of_one_prefix_share_one_backend_watch() {
        let cache = cached();
        let mut watches = Vec::new();
        for _ in 0..5 {
            watches.push(cache.watch("/p/", 0).await.unwrap());
        }
        let _other = cache.watch("/q/", 0).await.unwrap();
        assert_eq!(cache.feeds(), 2);
        let created = cache.create("/p/a", b"1".to_vec()).await.unwrap();
        for watch in &mut watches {
            assert_eq!(contract::next_event(watch).await.unwrap().kv, created);
        }
    }

    /// A backend counting its lists and watches; its lists fail when `down`.
    struct Counting {
        inner: MemoryStorage,
        lists: std::sync::atomic::AtomicUsize,
        watches: std::sync::atomic::AtomicUsize,
        down: std::sync::atomic::AtomicBool,
    }

    impl Counting {
        fn new() -> Arc<Counting> {
            Arc::new(Counting {
                inner: MemoryStorage::new(),
                lists: Default::default(),
                watches: Default::default(),
                down: Default::default(),
            })
        }
    }

    fn count(c: &std::sync::atomic::AtomicUsize) -> usize {
        c.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[async_trait]
    impl Storage for Counting {
        async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
            self.inner.get(key).await
        }
        async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
            self.lists.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            // Slow enough for every watch below to arrive while the first lists.
            tokio::time::sleep(Duration::from_millis(50)).await;
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(StorageError::Unavailable("down".into()));
            }
            self.inner.list(prefix, opts).await
        }
        async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError> {
            self.inner.create(key, value).await
        }
        async fn update(
            &self,
            key: &str,
            value: Vec<u8>,
            expected: Revision,
        ) -> Result<KeyValue, StorageError> {
            self.inner.update(key, value, expected).await
        }
        async fn delete(
            &self,
            key: &str,
            expected: Option<Revision>,
        ) -> Result<KeyValue, StorageError> {
            self.inner.delete(key, expected).await
        }
        async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
            self.watches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.watch(prefix, after).await
        }
        async fn current_revision(&self) -> Result<Revision, StorageError> {
            self.inner.current_revision().await
        }
        async fn ready(&self) -> Result<(), StorageError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn watches_arriving_together_open_one_feed_and_list_once() {
        let backend = Counting::new();
        let written = backend.create("/p/a", b"1".to_vec()).await.unwrap();
        let cache = Arc::new(WatchCache::new(backend.clone()).with_lists(true));
        let opens = (0..50).map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.watch("/p/", written.mod_revision).await })
        });
        let mut watches = Vec::new();
        for opened in futures::future::join_all(opens).await {
            watches.push(opened.unwrap().unwrap());
        }
        assert_eq!(count(&backend.lists), 1, "the prefix is listed once");
        assert_eq!(count(&backend.watches), 1, "one backend watch");
        assert_eq!(cache.feeds(), 1);
        assert!(
            cache.opening.lock().unwrap().is_empty(),
            "no turn left behind"
        );
        let created = cache.create("/p/b", b"2".to_vec()).await.unwrap();
        for watch in &mut watches {
            assert_eq!(contract::next_event(watch).await.unwrap().kv, created);
        }
    }

    #[tokio::test]
    async fn watches_waiting_on_a_failed_opening_share_its_error_and_the_next_tries_again() {
        let backend = Counting::new();
        backend
            .down
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let cache = Arc::new(WatchCache::new(backend.clone()).with_lists(true));
        let opens = (0..20).map(|_| {
            let cache = cache.clone();
            tokio::spawn(async move { cache.watch("/p/", 0).await.err() })
        });
        for failed in futures::future::join_all(opens).await {
            assert_eq!(
                failed.unwrap(),
                Some(StorageError::Unavailable("down".into()))
            );
        }
        assert_eq!(count(&backend.lists), 1, "one attempt for all of them");
        assert!(cache.opening.lock().unwrap().is_empty());
        backend
            .down
            .store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(cache.watch("/p/", 0).await.is_ok());
        assert_eq!(count(&backend.lists), 2);
        assert_eq!(cache.feeds(), 1);
    }

    #[tokio::test]
    async fn a_watcher_from_inside_the_window_gets_every_change_after_its_revision() {
        let cache = cached();
        let _first = cache.watch("/p/", 0).await.unwrap();
        let a = cache.create("/p/a", b"1".to_vec()).await.unwrap();
        let b = cache.create("/p/b", b"2".to_vec()).await.unwrap();
        // Let the feed take both in.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let mut late = cache.watch("/p/", a.mod_revision).await.unwrap();
        assert_eq!(contract::next_event(&mut late).await.unwrap().kv, b);
        assert_eq!(cache.feeds(), 1);
    }

    #[tokio::test]
    async fn a_watcher_that_falls_out_of_the_window_ends_and_resumes_without_loss() {
        let cache = WatchCache::new(Arc::new(MemoryStorage::new())).with_window(4);
        let slow = cache.watch("/p/", 0).await.unwrap();
        let mut written = Vec::new();
        for i in 0..20 {
            written.push(cache.create(&format!("/p/{i}"), vec![b'v']).await.unwrap());
        }
        // Twice the window's bound evicts at once: the slow watcher's position is gone.
        tokio::time::sleep(Duration::from_millis(20)).await;
        ends_and_resumes_without_loss(&cache, slow, &written).await;
    }

    /// `slow` (a watch of `/p/` from before `written`) was ended before it saw all of
    /// `written`; resuming from the last change it saw loses nothing (the backend's
    /// history).
    async fn ends_and_resumes_without_loss(
        cache: &WatchCache,
        mut slow: WatchStream,
        written: &[KeyValue],
    ) {
        let mut seen = Vec::new();
        while let Some(item) = slow.next().await {
            if let WatchItem::Event(e) = item.unwrap() {
                seen.push(e.kv);
            }
        }
        assert!(seen.len() < written.len(), "the slow watcher was not ended");
        let from = seen
            .last()
            .map_or(written[0].mod_revision - 1, |kv| kv.mod_revision);
        let mut resumed = cache.watch("/p/", from).await.unwrap();
        for kv in &written[seen.len()..] {
            assert_eq!(&contract::next_event(&mut resumed).await.unwrap().kv, kv);
        }
    }

    #[tokio::test]
    async fn large_values_are_kept_within_the_byte_bound_and_a_watcher_behind_resumes() {
        let cache = WatchCache::new(Arc::new(MemoryStorage::new())).with_window_bytes(10_000);
        let slow = cache.watch("/p/", 0).await.unwrap();
        let mut written = Vec::new();
        // Ten 3 KB values, then their rewrites (value and previous value: 6 KB each).
        for i in 0..10 {
            written.push(
                cache
                    .create(&format!("/p/{i}"), vec![b'a'; 3000])
                    .await
                    .unwrap(),
            );
        }
        for i in 0..10 {
            let rev = written[i].mod_revision;
            let key = format!("/p/{i}");
            written.push(cache.update(&key, vec![b'b'; 3000], rev).await.unwrap());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        let feed = cache.existing("/p/").expect("the feed");
        let (kept, bytes) = {
            let window = feed.lock();
            (window.events.len(), window.bytes)
        };
        assert!(bytes <= 10_000, "{bytes} bytes kept");
        assert!((1..=3).contains(&kept), "{kept} changes kept");
        // The watcher whose position went is ended.
        ends_and_resumes_without_loss(&cache, slow, &written).await;
    }

    #[tokio::test]
    async fn a_prefix_holding_a_large_value_is_listed_from_the_backend() {
        let cache = WatchCache::new(Arc::new(MemoryStorage::new())).with_lists(true);
        cache.create("/p/a", b"0".to_vec()).await.unwrap();
        cache
            .create("/p/b", vec![b'x'; LIST_VALUE_BYTES + 1])
            .await
            .unwrap();
        cache.create("/q/a", b"0".to_vec()).await.unwrap();
        let _p = cache.watch("/p/", 0).await.unwrap();
        let _q = cache.watch("/q/", 0).await.unwrap();
        let any = ListOptions::default();
        assert!(cache.cached_list("/p/", &any, 0).is_none());
        assert!(cache.cached_list("/p/a", &any, 0).is_some());
        assert_eq!(
            cache.cached_list("/q/", &any, 0).map(|l| l.items.len()),
            Some(1)
        );
        // Through the trait, the same list either way.
        let listed = cache.list("/p/", &any).await.unwrap();
        assert_eq!(listed.items.len(), 2);
        // Once the large value goes, the feed serves the prefix again.
        cache.delete("/p/b", None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(
            cache.cached_list("/p/", &any, 0).map(|l| l.items.len()),
            Some(1)
        );
    }

    #[tokio::test]
    async fn lists_from_a_feed_equal_the_backend_s() {
        let cache = WatchCache::new(Arc::new(MemoryStorage::new())).with_lists(true);
        for key in ["/p/a/1", "/p/a/2", "/p/b/1", "/q/1"] {
            cache.create(key, b"0".to_vec()).await.unwrap();
        }
        let _watch = cache.watch("/p/", 0).await.unwrap();
        // Changes after the feed opened: a modify, a delete, a create.
        let first = cache.get("/p/a/1").await.unwrap().unwrap();
        cache
            .update("/p/a/1", b"1".to_vec(), first.mod_revision)
            .await
            .unwrap();
        cache.delete("/p/a/2", None).await.unwrap();
        let last = cache.create("/p/b/2", b"2".to_vec()).await.unwrap();
        cache.create("/q/2", b"2".to_vec()).await.unwrap();
        let any = |start_after: Option<&str>, limit| ListOptions {
            start_after: start_after.map(str::to_owned),
            limit,
            min_revision: Some(last.mod_revision),
            ..ListOptions::default()
        };
        // Until the feed has taken the last change in, the backend answers.
        let listed = loop {
            if let Some(listed) = cache.cached_list("/p/", &any(None, 0), last.mod_revision) {
                break listed;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let at = |start_after: Option<&str>, limit| ListOptions {
            revision: listed.revision,
            ..any(start_after, limit)
        };
        let backend = cache.inner.list("/p/", &at(None, 0)).await.unwrap();
        assert_eq!(listed, backend);
        assert_eq!(listed.items.len(), 3);
        // A namespace's list from its resource's feed; pages.
        for (prefix, start_after, limit) in [
            ("/p/b/", None, 0),
            ("/p/", None, 2),
            ("/p/", Some("/p/a/1"), 1),
            ("/p/a/", Some("/p/"), 5),
        ] {
            let cached = cache
                .cached_list(prefix, &any(start_after, limit), 0)
                .unwrap();
            let backend = cache
                .inner
                .list(prefix, &at(start_after, limit))
                .await
                .unwrap();
            assert_eq!(
                cached, backend,
                "{prefix} after {start_after:?}, limit {limit}"
            );
        }
        // Nobody watches `/q/`; a feed behind the minimum is not asked.
        assert!(cache.cached_list("/q/", &any(None, 0), 0).is_none());
        assert!(cache
            .cached_list("/p/", &any(None, 0), last.mod_revision + 5)
            .is_none());
        // Through `list`: the same answers.
        let through = cache.list("/p/", &any(None, 0)).await.unwrap();
        assert_eq!(through.items, backend.items);
    }
}
