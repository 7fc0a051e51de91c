//! The bytes of a stored object and back: storage keeps an object without its
//! `resourceVersion` (the revision is etcd's) and hands it back with it.

use super::object;
use crate::status::Status;
use crate::storage::KeyValue;
use serde_json::Value;

/// Parse stored bytes into an object carrying its `resourceVersion`.
pub fn decode_stored(kv: &KeyValue) -> Result<Value, Status> {
    let mut obj: Value = crate::codec::decode_stored_json(&kv.value)
        .map_err(|e| Status::internal(format!("decoding stored object {}: {e}", kv.key)))?;
    object::set_resource_version(&mut obj, kv.mod_revision);
    Ok(obj)
}

/// Bytes to store: the object without `resourceVersion` (it lives in the revision).
pub fn encode_for_storage(obj: &Value) -> Vec<u8> {
    encode_stored(obj).0
}

/// Where an object's `resourceVersion` goes in its stored bytes to make the object's
/// JSON back (what `serde_json` writes for it): a write stores the bytes and replies
/// with them, encoding the object once.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    /// `None` when the stored bytes lack more than the `resourceVersion` (a
    /// `selfLink`) or the object has no `metadata` map.
    slot: Option<Slot>,
    /// The length of the stored bytes.
    len: usize,
}

/// The place of `"resourceVersion":"N"` in stored bytes: an offset, and the comma
/// it needs (metadata keys are sorted, so it sits where serde_json would write it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    at: usize,
    comma: Comma,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comma {
    /// Keys precede it: `,"resourceVersion":"N"` (the comma of a key after it is
    /// already written after the place).
    Before,
    /// Only keys after it: `"resourceVersion":"N",`.
    After,
    /// It is the only key.
    None,
}

impl Place {
    /// The object's JSON at `revision` (`serde_json` bytes and a newline, what a JSON
    /// reply holds), made from `stored`, the bytes encoded (as the backend holds
    /// them); `None` when the place is not known or `stored` is not those bytes.
    pub fn served(&self, stored: &[u8], revision: i64) -> Option<bytes::Bytes> {
        let slot = self.slot?;
        if stored.len() != self.len {
            return None;
        }
        let rv = revision.to_string();
        let mut out = Vec::with_capacity(stored.len() + rv.len() + 24);
        out.extend_from_slice(&stored[..slot.at]);
        if slot.comma == Comma::Before {
            out.push(b',');
        }
        out.extend_from_slice(b"\"resourceVersion\":\"");
        out.extend_from_slice(rv.as_bytes());
        out.push(b'"');
        if slot.comma == Comma::After {
            out.push(b',');
        }
        out.extend_from_slice(&stored[slot.at..]);
        out.push(b'\n');
        Some(out.into())
    }
}

/// Encode `obj` as stored: as serde_json writes it, except that `metadata` loses
/// `resourceVersion` and `selfLink`; note where the former goes.
pub fn encode_stored(obj: &Value) -> (Vec<u8>, Place) {
    let Value::Object(m) = obj else {
        let bytes = serde_json::to_vec(obj).unwrap_or_default();
        let len = bytes.len();
        return (bytes, Place { slot: None, len });
    };
    let mut out = Vec::with_capacity(512);
    let mut slot = None;
    out.push(b'{');
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&mut out, k);
        out.push(b':');
        match v {
            Value::Object(meta) if k == "metadata" => slot = write_meta(&mut out, meta),
            _ => write_json(&mut out, v),
        }
    }
    out.push(b'}');
    let len = out.len();
    (out, Place { slot, len })
}

/// Write `metadata` without `resourceVersion` and `selfLink`, and say where the former
/// goes (`None` when a `selfLink` was left out: the bytes lack more than it).
fn write_meta(out: &mut Vec<u8>, meta: &serde_json::Map<String, Value>) -> Option<Slot> {
    out.push(b'{');
    let mut written = 0;
    // The offset of the place and how many keys precede it.
    let mut place = None;
    let mut self_link = false;
    for (k, v) in meta {
        if place.is_none() && k.as_str() >= "resourceVersion" {
            place = Some((out.len(), written));
        }
        if k == "resourceVersion" || k == "selfLink" {
            self_link |= k == "selfLink";
            continue;
        }
        if written > 0 {
            out.push(b',');
        }
        written += 1;
        write_json(out, k);
        out.push(b':');
        write_json(out, v);
    }
    let (at, before) = place.unwrap_or((out.len(), written));
    out.push(b'}');
    let comma = if before > 0 {
        Comma::Before
    } else if written > 0 {
        Comma::After
    } else {
        Comma::None
    };
    (!self_link).then_some(Slot { at, comma })
}

/// Write a JSON value as serde_json does.
fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    // Writing into a Vec fails only for values serde_json cannot represent, which a
    // `Value` never holds.
    let _ = serde_json::to_writer(&mut *out, v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_bytes_leave_out_the_resource_version_and_self_link_only() {
        let obj = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "resourceVersion": "7", "selfLink": "/x", "uid": "u"},
            "data": {"metadata": {"resourceVersion": "kept"}}});
        let stored: Value = serde_json::from_slice(&encode_for_storage(&obj)).unwrap();
        assert_eq!(
            stored,
            serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "uid": "u"},
                "data": {"metadata": {"resourceVersion": "kept"}}})
        );
        assert_eq!(encode_for_storage(&serde_json::json!("x")), b"\"x\"");
    }

    /// What a JSON reply of `obj` at revision `rv` holds, as serde_json makes it.
    fn reply_of(obj: &Value, rv: i64) -> Vec<u8> {
        let mut obj = obj.clone();
        obj["metadata"]["resourceVersion"] = Value::String(rv.to_string());
        let mut bytes = serde_json::to_vec(&obj).unwrap();
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn the_reply_is_the_stored_bytes_with_the_resource_version_put_in_its_place() {
        let metas = [
            serde_json::json!({}),
            serde_json::json!({"name": "a"}),
            serde_json::json!({"uid": "u"}),
            serde_json::json!({"name": "a", "uid": "u"}),
            serde_json::json!({"name": "a", "resourceVersion": "3"}),
            serde_json::json!({"resourceVersion": "3"}),
            serde_json::json!({"resourceVersion": "3", "uid": "u", "zz": 1}),
            serde_json::json!({"annotations": {"a": "\"q\u{e9}\n"}, "labels": {"resourceVersion": "x"},
                "name": "a", "namespace": "n", "resourceVersion": "3", "uid": "u"}),
            serde_json::json!({"managedFields": [{"manager": "m"}], "name": "a",
                "resourceVersio": 1, "resourceVersionx": 2}),
        ];
        for meta in metas {
            let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "data": {"k": "v", "n": 1.5e300}});
            let (bytes, place) = encode_stored(&obj);
            let mut without = obj.clone();
            without["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("resourceVersion");
            assert_eq!(bytes, serde_json::to_vec(&without).unwrap(), "{meta}");
            for rv in [1, 42, 1234567890123] {
                let reply = place.served(&bytes, rv).expect("a place");
                assert_eq!(
                    String::from_utf8_lossy(&reply),
                    String::from_utf8_lossy(&reply_of(&obj, rv)),
                    "{meta}"
                );
            }
        }
    }

    #[test]
    fn no_reply_is_made_when_the_stored_bytes_lack_more_than_the_resource_version() {
        for obj in [
            serde_json::json!({"metadata": {"name": "a", "selfLink": "/x"}}),
            serde_json::json!({"kind": "X"}),
            serde_json::json!({"metadata": "m"}),
            serde_json::json!(["x"]),
        ] {
            let (bytes, place) = encode_stored(&obj);
            assert_eq!(place.served(&bytes, 2), None, "{obj}");
        }
        // Other bytes than the ones encoded.
        let (_, place) = encode_stored(&serde_json::json!({"metadata": {"name": "a"}}));
        assert_eq!(place.served(b"{}", 2), None);
    }
}
