//! The storage contract as executable checks over any `&dyn Storage`: what every backend
//! must do, with etcd's semantics. Test support, mounted `#[doc(hidden)]`: run by the
//! memory backend's unit tests and by the etcd backend's integration tests.
//!
//! Each check uses its own key prefix, panics on a contract violation and returns
//! unexpected storage errors, so several checks (and several runs) can share one store,
//! even one that other clients write to: revisions are only compared, never predicted.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;

use super::{
    Event, EventKind, KeyValue, ListOptions, Revision, Storage, StorageError, WatchItem,
    WatchStream,
};

/// How long a check waits for a watch event before failing.
const EVENT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs every check that needs nothing but the trait, each under its own prefix.
pub async fn run_all(store: &dyn Storage) -> Result<(), StorageError> {
    let base = unique_prefix();
    store.ready().await?;
    create_and_get(store, &format!("{base}create/")).await?;
    update_compare_and_swap(store, &format!("{base}update/")).await?;
    delete_compare_and_swap(store, &format!("{base}delete/")).await?;
    list_prefix_and_order(store, &format!("{base}list/")).await?;
    list_pagination_at_fixed_revision(store, &format!("{base}page/")).await?;
    concurrent_compare_and_swap(store, &format!("{base}cas/")).await?;
    watch_replays_history(store, &format!("{base}replay/")).await?;
    watch_live_from_now(store, &format!("{base}live/")).await?;
    watch_reports_progress(store, &format!("{base}progress/")).await?;
    Ok(())
}

/// A prefix no earlier run used, so runs against a persistent backend do not collide.
pub fn unique_prefix() -> String {
    static RUN: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let run = RUN.fetch_add(1, Ordering::Relaxed);
    format!("/contract/{nanos}-{run}/")
}

/// Create returns the stored revisions, get reads it back, a second create fails.
pub async fn create_and_get(store: &dyn Storage, prefix: &str) -> Result<(), StorageError> {
    let key = format!("{prefix}a");
    let before = store.current_revision().await?;
    let kv = store.create(&key, b"v1".to_vec()).await?;
    assert_eq!(kv.key, key);
    assert_eq!(kv.value, &b"v1"[..]);
    assert!(
        kv.mod_revision > before,
        "a write must advance the revision"
    );
    assert_eq!(kv.create_revision, kv.mod_revision);
    assert_eq!(store.get(&key).await?, Some(kv.clone()));
    assert!(store.current_revision().await? >= kv.mod_revision);

    assert_eq!(
        store.create(&key, b"v2".to_vec()).await,
        Err(StorageError::AlreadyExists(key.clone()))
    );
    assert_eq!(
        store.get(&key).await?,
        Some(kv.clone()),
        "a failed create writes nothing"
    );

    assert_eq!(store.get(&format!("{prefix}missing")).await?, None);
    // A key equal to the prefix of another is a different key.
    assert_eq!(store.get(prefix).await?, None);

    let empty = store.create(&format!("{prefix}empty"), Vec::new()).await?;
    assert!(empty.mod_revision > kv.mod_revision);
    assert_eq!(
        store.get(&empty.key).await?.map(|e| e.value),
        Some(bytes::Bytes::new())
    );
    Ok(())
}

/// Update succeeds only on the current `mod_revision`; conflicts carry the current value.
pub async fn update_compare_and_swap(
    store: &dyn Storage,
    prefix: &str,
) -> Result<(), StorageError> {
    let key = format!("{prefix}a");
    let first = store.create(&key, b"v1".to_vec()).await?;
    let second = store
        .update(&key, b"v2".to_vec(), first.mod_revision)
        .await?;
    assert_eq!(second.key, key);
    assert_eq!(second.value, &b"v2"[..]);
    assert_eq!(second.create_revision, first.create_revision);
    assert!(second.mod_revision > first.mod_revision);
    assert_eq!(store.get(&key).await?, Some(second.clone()));

    let stale = store.update(&key, b"v3".to_vec(), first.mod_revision).await;
    assert_eq!(
        stale,
        Err(StorageError::Conflict {
            key: key.clone(),
            current: Some(Box::new(second.clone())),
        })
    );
    assert_eq!(
        store.get(&key).await?,
        Some(second.clone()),
        "a failed update writes nothing"
    );

    let missing = format!("{prefix}missing");
    assert_eq!(
        store
            .update(&missing, b"x".to_vec(), second.mod_revision)
            .await,
        Err(StorageError::NotFound(missing.clone()))
    );
    assert_eq!(store.get(&missing).await?, None, "update never creates");
    Ok(())
}

/// Delete honours the optional compare and returns the last value at the delete revision.
pub async fn delete_compare_and_swap(
    store: &dyn Storage,
    prefix: &str,
) -> Result<(), StorageError> {
    let key = format!("{prefix}a");
    let first = store.create(&key, b"v1".to_vec()).await?;
    let second = store
        .update(&key, b"v2".to_vec(), first.mod_revision)
        .await?;

    assert_eq!(
        store.delete(&key, Some(first.mod_revision)).await,
        Err(StorageError::Conflict {
            key: key.clone(),
            current: Some(Box::new(second.clone())),
        })
    );
    assert_eq!(
        store.get(&key).await?,
        Some(second.clone()),
        "a failed delete deletes nothing"
    );

    let deleted = store.delete(&key, Some(second.mod_revision)).await?;
    assert_eq!(deleted.key, key);
    assert_eq!(deleted.value, &b"v2"[..], "delete returns the last value");
    assert_eq!(deleted.create_revision, first.create_revision);
    assert!(
        deleted.mod_revision > second.mod_revision,
        "delete reports its own revision"
    );
    assert_eq!(store.get(&key).await?, None);
    assert!(store.current_revision().await? >= deleted.mod_revision);

    assert_eq!(
        store.delete(&key, None).await,
        Err(StorageError::NotFound(key.clone()))
    );
    assert_eq!(
        store
            .update(&key, b"v3".to_vec(), second.mod_revision)
            .await,
        Err(StorageError::NotFound(key.clone()))
    );

    // A re-created key starts a new life.
    let again = store.create(&key, b"v4".to_vec()).await?;
    assert!(again.create_revision > deleted.mod_revision);
    assert_eq!(again.create_revision, again.mod_revision);

    let unconditional = store.delete(&key, None).await?;
    assert_eq!(unconditional.value, &b"v4"[..]);
    assert_eq!(unconditional.create_revision, again.create_revision);
    assert_eq!(store.get(&key).await?, None);
    Ok(())
}

/// List returns exactly the keys under the prefix, in key order, live ones only.
pub async fn list_prefix_and_order(store: &dyn Storage, prefix: &str) -> Result<(), StorageError> {
    let parent = prefix.trim_end_matches('/');
    // Neighbours that share the prefix's characters but are not under it.
    store.create(parent, b"parent".to_vec()).await?;
    store
        .create(&format!("{parent}x/a"), b"sibling".to_vec())
        .await?;
    for name in ["c", "a", "b/nested", "b"] {
        store
            .create(&format!("{prefix}{name}"), name.as_bytes().to_vec())
            .await?;
    }
    let gone = store.create(&format!("{prefix}d"), b"d".to_vec()).await?;
    let last = store.delete(&gone.key, None).await?;

    let list = store.list(prefix, &ListOptions::default()).await?;
    assert_eq!(
        keys(&list.items),
        ["a", "b", "b/nested", "c"].map(|n| format!("{prefix}{n}"))
    );
    assert_eq!(
        list.items
            .iter()
            .map(|kv| kv.value.clone())
            .collect::<Vec<_>>(),
        [&b"a"[..], b"b", b"b/nested", b"c"]
    );
    assert_eq!(list.remaining, 0);
    assert!(
        list.revision >= last.mod_revision,
        "a current list sees every earlier write"
    );

    let empty = store
        .list(&format!("{prefix}none/"), &ListOptions::default())
        .await?;
    assert!(empty.items.is_empty());
    assert_eq!(empty.remaining, 0);
    assert!(empty.revision >= last.mod_revision);
    Ok(())
}

/// Pages read at the first page's revision see one snapshot while writes go on.
pub async fn list_pagination_at_fixed_revision(
    store: &dyn Storage,
    prefix: &str,
) -> Result<(), StorageError> {
    let mut originals = Vec::new();
    for i in 0..7 {
        let kv = store
            .create(&format!("{prefix}k{i}"), format!("v{i}").into_bytes())
            .await?;
        originals.push(kv);
    }
    let page = |start_after: Option<&KeyValue>, revision| ListOptions {
        start_after: start_after.map(|kv| kv.key.clone()),
        limit: 3,
        revision,
        min_revision: None,
    };

    let first = store.list(prefix, &page(None, 0)).await?;
    assert_eq!(first.items, originals[0..3]);
    assert_eq!(first.remaining, 4);
    let at = first.revision;
    assert!(at >= originals[6].mod_revision);

    // Writes between pages: modify, delete and insert inside and after the next page.
    let changed = store
        .update(
            &originals[4].key,
            b"changed".to_vec(),
            originals[4].mod_revision,
        )
        .await?;
    store.delete(&originals[5].key, None).await?;
    store
        .create(&format!("{prefix}k3a"), b"new".to_vec())
        .await?;
    let appended = store
        .create(&format!("{prefix}k7"), b"new".to_vec())
        .await?;

    let second = store.list(prefix, &page(first.items.last(), at)).await?;
    assert_eq!(
        second.items,
        originals[3..6],
        "a page at a revision is a snapshot"
    );
    assert_eq!(second.remaining, 1);
    assert_eq!(second.revision, at);

    let third = store.list(prefix, &page(second.items.last(), at)).await?;
    assert_eq!(third.items, originals[6..7]);
    assert_eq!(third.remaining, 0);
    assert_eq!(third.revision, at);

    let whole = store
        .list(
            prefix,
            &ListOptions {
                revision: at,
                ..ListOptions::default()
            },
        )
        .await?;
    assert_eq!(whole.items, originals);
    assert_eq!(whole.remaining, 0);

    let now = store.list(prefix, &ListOptions::default()).await?;
    assert_eq!(
        keys(&now.items),
        ["k0", "k1", "k2", "k3", "k3a", "k4", "k6", "k7"].map(|n| format!("{prefix}{n}"))
    );
    assert_eq!(now.items[5], changed);
    assert!(now.revision >= appended.mod_revision);

    let past_end = store
        .list(
            prefix,
            &ListOptions {
                start_after: Some(format!("{prefix}k9")),
                ..ListOptions::default()
            },
        )
        .await?;
    assert!(past_end.items.is_empty());
    assert_eq!(past_end.remaining, 0);

    let current = store.current_revision().await?;
    let future = current + 1_000_000;
    assert_eq!(
        store
            .list(
                prefix,
                &ListOptions {
                    revision: future,
                    ..ListOptions::default()
                }
            )
            .await,
        Err(StorageError::FutureRevision {
            requested: future,
            current
        })
    );
    Ok(())
}

/// Compare-and-swap retry loops running side by side lose no increment.
pub async fn concurrent_compare_and_swap(
    store: &dyn Storage,
    prefix: &str,
) -> Result<(), StorageError> {
    const WORKERS: usize = 8;
    const INCREMENTS: u64 = 10;
    let key = format!("{prefix}counter");
    store.create(&key, b"0".to_vec()).await?;
    let worker = || async {
        for _ in 0..INCREMENTS {
            increment(store, &key).await?;
        }
        Ok::<(), StorageError>(())
    };
    let results = futures::future::join_all((0..WORKERS).map(|_| worker())).await;
    for result in results {
        result?;
    }
    let total = store.get(&key).await?.map(|kv| kv.value);
    assert_eq!(
        total,
        Some(
            (WORKERS as u64 * INCREMENTS)
                .to_string()
                .into_bytes()
                .into()
        )
    );
    Ok(())
}

/// Adds one to the decimal counter at `key` with a compare-and-swap retry loop.
pub async fn increment(store: &dyn Storage, key: &str) -> Result<KeyValue, StorageError> {
    let mut current = store
        .get(key)
        .await?
        .ok_or_else(|| StorageError::NotFound(key.to_owned()))?;
    loop {
        let count: u64 = String::from_utf8_lossy(&current.value)
            .parse()
            .map_err(|_| StorageError::Internal(format!("{key} is not a counter")))?;
        let next = (count + 1).to_string().into_bytes();
        match store.update(key, next, current.mod_revision).await {
            Err(StorageError::Conflict {
                current: Some(latest),
                ..
            }) => current = *latest,
            other => return other,
        }
    }
}

/// A watch from a revision first replays every later change under the prefix, in
/// order and with previous values, then goes on live.
pub async fn watch_replays_history(store: &dyn Storage, prefix: &str) -> Result<(), StorageError> {
    let sibling = format!("{}x/a", prefix.trim_end_matches('/'));
    let (a, b) = (format!("{prefix}a"), format!("{prefix}b"));
    let start = store.current_revision().await?;
    let created = store.create(&a, b"v1".to_vec()).await?;
    let modified = store
        .update(&a, b"v2".to_vec(), created.mod_revision)
        .await?;
    store.create(&sibling, b"other".to_vec()).await?;
    let other = store.create(&b, b"b1".to_vec()).await?;
    let deleted = store.delete(&a, None).await?;

    let mut watch = store.watch(prefix, start).await?;
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Create, &created, None)
    );
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Modify, &modified, Some(&created))
    );
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Create, &other, None)
    );
    let delete = next_event(&mut watch).await?;
    assert_eq!(delete, event(EventKind::Delete, &deleted, Some(&modified)));
    assert_eq!(delete.kv.value, &b"v2"[..]);

    // After the history, live changes follow on the same stream.
    let live = store.update(&b, b"b2".to_vec(), other.mod_revision).await?;
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Modify, &live, Some(&other))
    );

    // Starting later skips what came before; the start revision itself is excluded.
    let mut later = store.watch(prefix, modified.mod_revision).await?;
    assert_eq!(
        next_event(&mut later).await?,
        event(EventKind::Create, &other, None)
    );
    assert_eq!(next_event(&mut later).await?.kv, deleted);
    assert_eq!(next_event(&mut later).await?.kv, live);
    Ok(())
}

/// A watch from 0 sends only changes made after it started, in revision order.
pub async fn watch_live_from_now(store: &dyn Storage, prefix: &str) -> Result<(), StorageError> {
    let sibling = format!("{}x/a", prefix.trim_end_matches('/'));
    store
        .create(&format!("{prefix}old"), b"old".to_vec())
        .await?;
    let mut watch = store.watch(prefix, 0).await?;

    let a = format!("{prefix}a");
    let created = store.create(&a, b"1".to_vec()).await?;
    let modified = store
        .update(&a, b"2".to_vec(), created.mod_revision)
        .await?;
    store.create(&sibling, b"other".to_vec()).await?;
    let other = store.create(&format!("{prefix}b"), b"b".to_vec()).await?;
    let deleted = store.delete(&a, Some(modified.mod_revision)).await?;

    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Create, &created, None)
    );
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Modify, &modified, Some(&created))
    );
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Create, &other, None)
    );
    assert_eq!(
        next_event(&mut watch).await?,
        event(EventKind::Delete, &deleted, Some(&modified))
    );
    Ok(())
}

/// An idle watch reports progress at a revision covering every change it has seen.
pub async fn watch_reports_progress(store: &dyn Storage, prefix: &str) -> Result<(), StorageError> {
    let mut watch = store.watch(prefix, 0).await?;
    let created = store.create(&format!("{prefix}a"), b"1".to_vec()).await?;
    assert_eq!(next_event(&mut watch).await?.kv, created);
    let progress = next_progress(&mut watch).await?;
    assert!(
        progress >= created.mod_revision,
        "progress {progress} before a sent event"
    );

    // Changes elsewhere move the progress revision without sending events.
    let sibling = format!("{}x/a", prefix.trim_end_matches('/'));
    let elsewhere = store.create(&sibling, b"other".to_vec()).await?;
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        let progress = next_progress(&mut watch).await?;
        if progress >= elsewhere.mod_revision {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "progress stuck at {progress}, below {}",
            elsewhere.mod_revision
        );
    }
    Ok(())
}

/// With a backend-specific way to compact, reads and watches of compacted revisions
/// fail with `Compacted`, while the compact revision itself stays readable.
pub async fn compaction<F, Fut>(
    store: &dyn Storage,
    prefix: &str,
    compact: F,
) -> Result<(), StorageError>
where
    F: FnOnce(Revision) -> Fut,
    Fut: Future<Output = Result<(), StorageError>>,
{
    let key = format!("{prefix}a");
    let first = store.create(&key, b"v1".to_vec()).await?;
    let second = store
        .update(&key, b"v2".to_vec(), first.mod_revision)
        .await?;
    let third = store
        .update(&key, b"v3".to_vec(), second.mod_revision)
        .await?;
    compact(second.mod_revision).await?;

    let old = ListOptions {
        revision: first.mod_revision,
        ..ListOptions::default()
    };
    match store.list(prefix, &old).await {
        Err(StorageError::Compacted {
            requested,
            compacted,
        }) => {
            assert_eq!(requested, first.mod_revision);
            assert!(compacted > requested, "compacted {compacted} is readable?");
        }
        other => panic!("list at a compacted revision gave {other:?}"),
    }

    let kept = ListOptions {
        revision: second.mod_revision,
        ..ListOptions::default()
    };
    let at_compaction = store.list(prefix, &kept).await?;
    assert_eq!(
        at_compaction.items,
        std::slice::from_ref(&second),
        "the compact revision stays readable"
    );

    // Watching after `first - 1` needs the change at `first`, which is gone; the error
    // may come from `watch` itself or as the stream's first item.
    let too_old = first.mod_revision - 1;
    let failure = match store.watch(prefix, too_old).await {
        Err(err) => err,
        Ok(mut stream) => match tokio::time::timeout(EVENT_TIMEOUT, stream.next()).await {
            Ok(Some(Err(err))) => err,
            other => panic!("watch of a compacted revision gave {other:?}"),
        },
    };
    match failure {
        StorageError::Compacted {
            requested,
            compacted,
        } => {
            assert_eq!(requested, too_old);
            assert!(compacted > first.mod_revision);
        }
        other => panic!("watch of a compacted revision failed with {other:?}"),
    }

    // The change at the compact revision can still be watched.
    let mut watch = store.watch(prefix, second.mod_revision - 1).await?;
    let at = next_event(&mut watch).await?;
    assert_eq!((at.kind, at.kv), (EventKind::Modify, second));
    assert_eq!(next_event(&mut watch).await?.kv, third);
    Ok(())
}

/// The next event of a watch, skipping progress items; panics after `EVENT_TIMEOUT`.
pub async fn next_event(watch: &mut WatchStream) -> Result<Event, StorageError> {
    loop {
        match next_item(watch).await? {
            WatchItem::Event(event) => return Ok(event),
            WatchItem::Progress(_) => continue,
        }
    }
}

/// The next progress revision of a watch; panics on an event or after `EVENT_TIMEOUT`.
pub async fn next_progress(watch: &mut WatchStream) -> Result<Revision, StorageError> {
    match next_item(watch).await? {
        WatchItem::Progress(revision) => Ok(revision),
        WatchItem::Event(event) => panic!("unexpected event {event:?}"),
    }
}

async fn next_item(watch: &mut WatchStream) -> Result<WatchItem, StorageError> {
    match tokio::time::timeout(EVENT_TIMEOUT, watch.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("watch ended"),
        Err(_) => panic!("no watch item within {EVENT_TIMEOUT:?}"),
    }
}

/// The event a watcher must see for a write that returned `kv`.
fn event(kind: EventKind, kv: &KeyValue, prev: Option<&KeyValue>) -> Event {
    Event {
        kind,
        kv: kv.clone(),
        prev: prev.cloned(),
    }
}

fn keys(items: &[KeyValue]) -> Vec<String> {
    items.iter().map(|kv| kv.key.clone()).collect()
}
