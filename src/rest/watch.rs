//! The store's side of a watch (kube's `cacher`/`etcd3.watcher` as the REST layer sees
//! them): storage changes under a kind's prefix become `ADDED`/`MODIFIED`/`DELETED` of
//! decoded, converted objects, filtered by the watch's selectors. Encoding the events
//! for a client (Table, metadata-only, bookmarks' form) is the handler's.
//!
//! Every watcher of a resource reads the same storage changes. For kinds with a served
//! form ([`ResourceKind::served_form`]: decorating is a pure function of the stored
//! revision and the kind's form) the object of one change is decoded, decorated and
//! encoded once, by whichever watcher gets to it first, and shared by all of them
//! (`watch_objects::SharedObjects`, kube's `cachingObject`): a plain JSON watcher then sends the
//! event's line made once, `{"type":..,"object":<served JSON>}`, as shared bytes.

use super::served_cache::ServedCache;
use super::store::{decode_stored, ListOptions, Store};
use super::watch_objects::{conversion_error, SharedObjects, WatchObject};
use super::{object, ResourceKind};
use crate::status::Status;
use crate::storage::{
    storage_status, EventKind, KeyValue, Revision, StorageError, WatchItem, WatchStream,
};
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use std::sync::Arc;

/// One change a watcher sees.
#[derive(Debug)]
pub enum WatchEvent {
    /// The object appeared (or came to match the selectors).
    Added(Arc<WatchObject>),
    /// The object changed and matches before and after.
    Modified(Arc<WatchObject>),
    /// The object went away (or stopped matching).
    Deleted(Arc<WatchObject>),
    /// Nothing changed under the prefix up to this revision.
    Progress(Revision),
    /// The watch failed; it ends after this.
    Error(Status),
}

impl WatchEvent {
    /// The event's `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Progress(_) => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}

struct Filter {
    kind: Arc<dyn ResourceKind>,
    /// The keys watched: the kind's, or one namespace's of them.
    keys: String,
    opts: ListOptions,
    shared: Arc<SharedObjects>,
    served: Arc<ServedCache>,
}

impl Filter {
    /// Whether label or field selectors narrow the watch.
    fn filtering(&self) -> bool {
        self.opts.labels.as_ref().is_some_and(|l| !l.is_empty())
            || self.opts.fields.as_ref().is_some_and(|f| !f.is_empty())
    }

    /// Whether an object passes the selectors (a field the kind cannot select on
    /// counts as absent: the selector was checked when the watch started).
    fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.opts.labels {
            if !l.matches(&object::labels(obj)) {
                return false;
            }
        }
        match &self.opts.fields {
            Some(f) => {
                f.matches(|field| self.kind.strategy().field_value(obj, field).ok().flatten())
            }
            None => true,
        }
    }

    /// Decode and convert a stored value for the watcher: once for all watchers when
    /// the kind has a served form, else for this one.
    async fn read(&self, kv: &KeyValue) -> Result<Option<Arc<WatchObject>>, Status> {
        if let Some(form) = self.kind.served_form() {
            return self
                .shared
                .object(self.kind.as_ref(), form, kv, &self.served)
                .await;
        }
        let Ok(mut obj) = decode_stored(kv) else {
            return Ok(None);
        };
        self.kind
            .on_read(&mut obj)
            .await
            .map_err(conversion_error)?;
        Ok(Some(Arc::new(WatchObject::new(obj, kv.mod_revision, None))))
    }

    /// The watcher's view of one storage item.
    async fn event(&self, item: Result<WatchItem, StorageError>) -> WatchEvent {
        let ev = match item {
            Ok(WatchItem::Event(ev)) if !ev.kv.key.starts_with(&self.keys) => {
                return WatchEvent::Progress(ev.kv.mod_revision)
            }
            Ok(WatchItem::Event(ev)) => ev,
            Ok(WatchItem::Progress(rev)) => return WatchEvent::Progress(rev),
            Err(e) => {
                let gr = &self.kind.descriptor().gr;
                return WatchEvent::Error(storage_status(e, gr, ""));
            }
        };
        let cur = match self.read(&ev.kv).await {
            Ok(Some(cur)) => cur,
            Ok(None) => return WatchEvent::Progress(ev.kv.mod_revision),
            Err(s) => return WatchEvent::Error(s),
        };
        // As kube, the previous object is decoded (and converted) only when selectors
        // must judge it: for deletes the last value is `cur`.
        let prev_match = match &ev.prev {
            None => false,
            Some(_) if !self.filtering() => true,
            Some(p) if matches!(ev.kind, EventKind::Modify) => match self.read(p).await {
                Ok(Some(prev)) => self.matches(prev.value()),
                Ok(None) => false,
                Err(s) => return WatchEvent::Error(s),
            },
            Some(_) => false,
        };
        let cur_match = self.matches(cur.value());
        let hidden = WatchEvent::Progress(ev.kv.mod_revision);
        match ev.kind {
            EventKind::Delete if prev_match || cur_match => WatchEvent::Deleted(cur),
            EventKind::Create if cur_match => WatchEvent::Added(cur),
            EventKind::Delete | EventKind::Create => hidden,
            EventKind::Modify => match (prev_match, cur_match) {
                (true, true) => WatchEvent::Modified(cur),
                (false, true) => WatchEvent::Added(cur),
                (true, false) => WatchEvent::Deleted(cur),
                (false, false) => hidden,
            },
        }
    }
}

impl Store {
    /// Watch a kind's objects in `namespace` (all when empty) changed after `after`.
    ///
    /// Changes the selectors hide come out as `Progress` at their revision (the
    /// watcher's position moves on; it sends nothing for them unless a bookmark is
    /// due). The stream ends after its first `Error`; a watch that cannot start is a
    /// stream of that one error, so the caller sends it after any initial events.
    pub async fn watch(
        &self,
        kind: Arc<dyn ResourceKind>,
        namespace: &str,
        opts: ListOptions,
        after: Revision,
    ) -> BoxStream<'static, WatchEvent> {
        // The whole kind is watched, whatever the namespace (as kube's watch cache
        // holds a resource): watches of one resource share one storage watch.
        let prefix = kind.descriptor().list_prefix("");
        let filter = Arc::new(Filter {
            keys: kind.descriptor().list_prefix(namespace),
            kind,
            opts,
            shared: self.watched.clone(),
            served: self.served.clone(),
        });
        let source: WatchStream = match self.storage.watch(&prefix, after).await {
            Ok(s) => s,
            Err(e) => {
                let gr = &filter.kind.descriptor().gr;
                let err = WatchEvent::Error(storage_status(e, gr, ""));
                return stream::iter([err]).boxed();
            }
        };
        // `done`: an error was sent, nothing follows it.
        stream::unfold(
            (source, filter, false),
            |(mut source, filter, done)| async move {
                if done {
                    return None;
                }
                let ev = filter.event(source.next().await?).await;
                let end = matches!(ev, WatchEvent::Error(_));
                Some((ev, (source, filter, end)))
            },
        )
        .boxed()
    }
}
