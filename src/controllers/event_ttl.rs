//! Event expiry (kube's `--event-ttl`): kube stores every Event write with an etcd
//! lease of the TTL, so an Event disappears a TTL after its last write. Here one task
//! per server follows the `events` keys of storage (both Events APIs share them) with
//! a watch, notes when each was last written, and deletes those whose last write is a
//! TTL old, only if still at the revision seen (a rewrite keeps an Event alive; several
//! servers on one etcd may sweep at once). Time is the server's clock
//! (`apiserver::clock`): a test that advances it expires Events at once.

use crate::apiserver::ApiServer;
use crate::storage::{EventKind, ListOptions, Revision, StorageError, WatchItem};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// kube's default `--event-ttl` (one hour).
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// When each Event key was last written, and at which revision.
#[derive(Debug, Default)]
pub struct LastWrites {
    keys: HashMap<String, (Revision, Instant)>,
}

impl LastWrites {
    /// Record a write of `key` at `revision`, seen at `at`.
    pub fn written(&mut self, key: &str, revision: Revision, at: Instant) {
        self.keys.insert(key.to_string(), (revision, at));
    }

    /// Forget a deleted key.
    pub fn deleted(&mut self, key: &str) {
        self.keys.remove(key);
    }

    /// The keys (with the revision to delete them at) last written a `ttl` before `now`.
    pub fn expired(&self, ttl: Duration, now: Instant) -> Vec<(String, Revision)> {
        self.keys
            .iter()
            .filter(|(_, (_, at))| now.saturating_duration_since(*at) >= ttl)
            .map(|(k, (rev, _))| (k.clone(), *rev))
            .collect()
    }
}

/// Delete Events a `ttl` after their last write until `stop` turns true; a zero `ttl`
/// keeps Events forever (no lease, as kube with `--event-ttl=0`).
pub async fn expire_events(api: Arc<ApiServer>, ttl: Duration, mut stop: watch::Receiver<bool>) {
    if ttl.is_zero() {
        return;
    }
    // Sweep often enough that an Event outlives its TTL by a tenth at most.
    let tick = (ttl / 10).clamp(Duration::from_millis(100), Duration::from_secs(10));
    let prefix = format!("{}/events/", api.options.prefix);
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            result = follow(&api, &prefix, ttl, tick) => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "event expiry restarts");
                }
            }
        }
        if *stop.borrow() {
            return;
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// List the Events, then follow their writes and sweep, until the watch fails.
async fn follow(
    api: &ApiServer,
    prefix: &str,
    ttl: Duration,
    tick: Duration,
) -> Result<(), StorageError> {
    let storage = &api.store.storage;
    let listed = storage.list(prefix, &ListOptions::default()).await?;
    let mut writes = LastWrites::default();
    // When existing Events were written is unknown here: count from now.
    let listed_at = Instant::now() + api.clock.offset().to_std().unwrap_or_default();
    for kv in &listed.items {
        writes.written(&kv.key, kv.mod_revision, listed_at);
    }
    let mut events = storage.watch(prefix, listed.revision).await?;
    let mut sweep = tokio::time::interval(tick);
    let advanced = std::sync::Arc::new(tokio::sync::Notify::new());
    api.clock.subscribe(advanced.clone());
    let now = || Instant::now() + api.clock.offset().to_std().unwrap_or_default();
    loop {
        tokio::select! {
            _ = advanced.notified() => sweep.reset_immediately(),
            item = events.next() => match item {
                Some(Ok(WatchItem::Event(ev))) => match ev.kind {
                    EventKind::Delete => writes.deleted(&ev.kv.key),
                    EventKind::Create | EventKind::Modify => {
                        writes.written(&ev.kv.key, ev.kv.mod_revision, now());
                    }
                },
                Some(Ok(WatchItem::Progress(_))) => {}
                Some(Err(e)) => return Err(e),
                None => return Err(StorageError::Unavailable("event watch ended".into())),
            },
            _ = sweep.tick() => {
                for (key, revision) in writes.expired(ttl, now()) {
                    match storage.delete(&key, Some(revision)).await {
                        Ok(_) | Err(StorageError::NotFound(_)) => writes.deleted(&key),
                        // Rewritten since: the watch brings the new revision.
                        Err(StorageError::Conflict { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_expires_a_ttl_after_its_last_write() {
        let ttl = Duration::from_secs(3600);
        let start = Instant::now();
        let mut w = LastWrites::default();
        w.written("/registry/events/default/a", 5, start);
        w.written("/registry/events/default/b", 6, start);
        assert!(w.expired(ttl, start + Duration::from_secs(3599)).is_empty());
        // b is rewritten half-way: only a expires at the hour.
        w.written(
            "/registry/events/default/b",
            9,
            start + Duration::from_secs(1800),
        );
        assert_eq!(
            w.expired(ttl, start + ttl),
            vec![("/registry/events/default/a".to_string(), 5)]
        );
        w.deleted("/registry/events/default/a");
        assert_eq!(
            w.expired(ttl, start + Duration::from_secs(5400)),
            vec![("/registry/events/default/b".to_string(), 9)]
        );
    }
}
