//! The store's side of a watch (kube's `cacher`/`etcd3.watcher` as the REST layer sees
//! them): storage changes under a kind's prefix become `ADDED`/`MODIFIED`/`DELETED` of
//! decoded, converted objects, filtered by the watch's selectors. Encoding the events
//! for a client (Table, metadata-only, bookmarks' form) is the handler's.
//!
//! Every watcher of a resource reads the same storage changes. For kinds with a served
//! form ([`ResourceKind::served_form`]: decorating is a pure function of the stored
//! revision and the kind's form) the object of one change is decoded, decorated and
//! encoded once, by whichever watcher gets to it first, and shared by all of them
//! ([`SharedObjects`], kube's `cachingObject`): a plain JSON watcher then sends the
//! event's line made once, `{"type":..,"object":<served JSON>}`, as shared bytes.

use super::served_cache::{FormId, ServedCache};
use super::store::{decode_stored, ListOptions, Store};
use super::{object, ResourceKind};
use crate::status::Status;
use crate::storage::{
    storage_status, EventKind, KeyValue, Revision, StorageError, WatchItem, WatchStream,
};
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

/// An object as the watchers of one change see it.
#[derive(Debug)]
pub struct WatchObject {
    value: Value,
    /// The object's `resourceVersion` (its storage revision).
    revision: Revision,
    /// Its served JSON (`serde_json` bytes and a newline, as a GET serves it), when it
    /// is shared by the watchers of a kind with a served form.
    json: Option<Bytes>,
    /// The event lines made of `json`, one per type (`ADDED`, `MODIFIED`, `DELETED`).
    lines: [OnceLock<Bytes>; 3],
}

impl WatchObject {
    fn new(value: Value, revision: Revision, json: Option<Bytes>) -> WatchObject {
        WatchObject {
            value,
            revision,
            json,
            lines: Default::default(),
        }
    }

    /// The decoded, decorated object.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The object's `resourceVersion`.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The JSON event line of type `ty` (`ADDED`, `MODIFIED` or `DELETED`) around the
    /// shared served JSON: the same bytes for every watcher that sends it. `None` when
    /// the object is not shared (the handler then encodes it itself).
    pub fn json_line(&self, ty: &str) -> Option<Bytes> {
        let json = self.json.as_ref()?;
        let slot = match ty {
            "ADDED" => &self.lines[0],
            "MODIFIED" => &self.lines[1],
            "DELETED" => &self.lines[2],
            _ => return None,
        };
        let object = json.strip_suffix(b"\n").unwrap_or(json);
        Some(slot.get_or_init(|| event_line(ty, object)).clone())
    }
}

/// A watch event as kube writes it in JSON: `{"type":..,"object":..}` and a newline,
/// `object` the object's JSON bytes.
pub fn event_line(ty: &str, object: &[u8]) -> Bytes {
    let mut line = Vec::with_capacity(object.len() + ty.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(ty.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

/// The objects of recent changes, each made once for all watchers (kinds with a
/// served form only). Keyed by storage key and [`FormId`]; bounded in entries and in
/// stored bytes, oldest first out. A watcher further behind than the window makes the
/// object again (the same bytes).
pub struct SharedObjects {
    recent: Mutex<Recent>,
}

type Slot = Arc<tokio::sync::OnceCell<Option<Arc<WatchObject>>>>;

#[derive(Default)]
struct Recent {
    /// By id, the keys changed at that revision (usually one) and their objects.
    slots: HashMap<FormId, Vec<(String, Slot)>>,
    /// Insertion order, with each entry's stored size.
    order: VecDeque<(FormId, String, usize)>,
    /// Stored bytes of the entries held.
    bytes: usize,
}

/// Changes [`SharedObjects`] holds at most.
const SHARED_ENTRIES: usize = 4096;
/// Stored bytes [`SharedObjects`] holds at most (each entry also holds the object
/// decoded and its served JSON: a few times this).
const SHARED_BYTES: usize = 8 << 20;

impl Default for SharedObjects {
    fn default() -> Self {
        SharedObjects {
            recent: Mutex::new(Recent::default()),
        }
    }
}

impl SharedObjects {
    /// The slot of `kv` at `form`, made empty if new.
    fn slot(&self, kv: &KeyValue, id: FormId) -> Slot {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, slot)) = recent
            .slots
            .get(&id)
            .and_then(|keys| keys.iter().find(|(k, _)| *k == kv.key))
        {
            return slot.clone();
        }
        let slot = Slot::default();
        recent
            .slots
            .entry(id)
            .or_default()
            .push((kv.key.clone(), slot.clone()));
        recent.order.push_back((id, kv.key.clone(), kv.value.len()));
        recent.bytes += kv.value.len();
        while recent.order.len() > SHARED_ENTRIES || recent.bytes > SHARED_BYTES {
            let Some((old, key, size)) = recent.order.pop_front() else {
                break;
            };
            recent.bytes -= size;
            if let Some(keys) = recent.slots.get_mut(&old) {
                keys.retain(|(k, _)| *k != key);
                if keys.is_empty() {
                    recent.slots.remove(&old);
                }
            }
        }
        slot
    }

    /// The shared object of `kv` for a kind at `form`: decoded, decorated and encoded
    /// by the first watcher to ask, then handed to the others. `None`: the stored value
    /// does not decode (the change is skipped, as for every watcher). The served JSON
    /// also goes to `served`, where GETs find it.
    async fn object(
        &self,
        kind: &dyn ResourceKind,
        form: (i64, usize),
        kv: &KeyValue,
        served: &ServedCache,
    ) -> Result<Option<Arc<WatchObject>>, Status> {
        let id = FormId {
            form,
            revision: kv.mod_revision,
        };
        let slot = self.slot(kv, id);
        let made = slot
            .get_or_try_init(|| async {
                let Ok(mut value) = decode_stored(kv) else {
                    return Ok::<_, Status>(None);
                };
                kind.on_read(&mut value).await.map_err(conversion_error)?;
                let mut json = serde_json::to_vec(&value).unwrap_or_default();
                json.push(b'\n');
                let json = Bytes::from(json);
                served.put(&kv.key, id, json.clone());
                Ok(Some(Arc::new(WatchObject::new(
                    value,
                    kv.mod_revision,
                    Some(json),
                ))))
            })
            .await?;
        Ok(made.clone())
    }
}

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

/// A failed conversion of a watched object as kube's watch reports it: an error that
/// is no API status becomes an `InternalError` (the watch then ends).
fn conversion_error(s: Status) -> Status {
    if s.reason.is_empty() {
        Status::internal(s.message)
    } else {
        s
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
        let prefix = kind.descriptor().list_prefix(namespace);
        let filter = Arc::new(Filter {
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
