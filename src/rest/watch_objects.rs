//! The objects of watch events, made once per change for all watchers of a kind
//! with a served form and shared as bytes (kube's `cachingObject`); see `watch.rs`.

use super::served_cache::{FormId, ServedCache};
use super::stored::decode_stored;
use super::ResourceKind;
use crate::status::Status;
use crate::storage::{KeyValue, Revision};
use bytes::Bytes;
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
    /// The events in the other shared encoding (protobuf frames), one per type.
    frames: [OnceLock<Bytes>; 3],
}

impl WatchObject {
    pub(super) fn new(value: Value, revision: Revision, json: Option<Bytes>) -> WatchObject {
        WatchObject {
            value,
            revision,
            json,
            lines: Default::default(),
            frames: Default::default(),
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
        let slot = &self.lines[event_slot(ty)?];
        let object = json.strip_suffix(b"\n").unwrap_or(json);
        Some(slot.get_or_init(|| event_line(ty, object)).clone())
    }

    /// The event of type `ty` in another encoding (the handler's protobuf frame),
    /// made by `encode` from the object once and then the same bytes for every
    /// watcher that sends it. `None` when the object is not shared.
    pub fn shared_frame(
        &self,
        ty: &str,
        encode: impl FnOnce(&str, &Value) -> Bytes,
    ) -> Option<Bytes> {
        self.json.as_ref()?;
        let slot = &self.frames[event_slot(ty)?];
        Some(slot.get_or_init(|| encode(ty, &self.value)).clone())
    }
}

/// The slot of an event type in a [`WatchObject`]'s per-type encodings.
fn event_slot(ty: &str) -> Option<usize> {
    match ty {
        "ADDED" => Some(0),
        "MODIFIED" => Some(1),
        "DELETED" => Some(2),
        _ => None,
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
    pub(super) async fn object(
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

/// A failed conversion of a watched object as kube's watch reports it: an error that
/// is no API status becomes an `InternalError` (the watch then ends).
pub(super) fn conversion_error(s: Status) -> Status {
    if s.reason.is_empty() {
        Status::internal(s.message)
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_shared_object_is_encoded_once_per_event_type_and_encoding() {
        let shared = WatchObject::new(json!({"a": 1}), 7, Some(Bytes::from_static(b"{\"a\":1}\n")));
        let made = AtomicUsize::new(0);
        let encode = |ty: &str, v: &Value| {
            made.fetch_add(1, Ordering::Relaxed);
            Bytes::from(format!("{ty}:{v}"))
        };
        let frames: Vec<Bytes> = (0..3)
            .map(|_| shared.shared_frame("MODIFIED", encode).unwrap())
            .collect();
        assert_eq!(made.load(Ordering::Relaxed), 1);
        assert!(frames.iter().all(|f| f.as_ptr() == frames[0].as_ptr()));
        assert_eq!(&frames[0][..], b"MODIFIED:{\"a\":1}");
        assert_eq!(
            &shared.shared_frame("DELETED", encode).unwrap()[..],
            b"DELETED:{\"a\":1}"
        );
        assert_eq!(made.load(Ordering::Relaxed), 2);
        assert_eq!(
            &shared.json_line("ADDED").unwrap()[..],
            b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n"
        );
        // An object made for one watcher alone is not kept.
        let own = WatchObject::new(json!({"a": 1}), 7, None);
        assert!(own.shared_frame("ADDED", encode).is_none());
        assert!(own.json_line("ADDED").is_none());
    }
}
