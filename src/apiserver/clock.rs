//! The server's clock for what moves with time in the opt-in cluster (CronJob
//! schedules, Job deadlines and TTLs, `minReadySeconds`): real time plus an offset that
//! tests advance (`TestServer::clock`, `POST /debug/crd-apiserver/clock?advance=1h`),
//! so an hourly CronJob fires without waiting an hour. Timestamps the server writes on
//! objects stay real time.

use chrono::{DateTime, Utc};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

#[derive(Default)]
struct Inner {
    offset_ms: AtomicI64,
    subscribers: Mutex<Vec<Arc<Notify>>>,
}

/// Real time plus an offset; shared by clones.
#[derive(Clone, Default)]
pub struct Clock {
    inner: Arc<Inner>,
}

impl Clock {
    /// The clock's time.
    pub fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.offset()
    }

    /// How far it is ahead of real time.
    pub fn offset(&self) -> chrono::Duration {
        chrono::Duration::milliseconds(self.inner.offset_ms.load(Ordering::SeqCst))
    }

    /// Move it forward by `by` (negative durations are ignored) and wake whoever
    /// subscribed.
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        let _ = self
            .inner
            .offset_ms
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |o| {
                Some(o.saturating_add(ms))
            });
        if let Ok(subs) = self.inner.subscribers.lock() {
            for n in subs.iter() {
                n.notify_one();
            }
        }
    }

    /// Wake `notify` whenever the clock is advanced.
    pub fn subscribe(&self, notify: Arc<Notify>) {
        if let Ok(mut subs) = self.inner.subscribers.lock() {
            subs.push(notify);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advancing_moves_now_and_wakes_subscribers() {
        let clock = Clock::default();
        let woken = Arc::new(Notify::new());
        clock.subscribe(woken.clone());
        let before = clock.now();
        clock.advance(std::time::Duration::from_secs(3600));
        assert!(clock.now() - before >= chrono::Duration::seconds(3600));
        assert_eq!(clock.offset(), chrono::Duration::seconds(3600));
        // The permit is stored: a waiter returns at once.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        rt.block_on(async { woken.notified().await });
    }
}
