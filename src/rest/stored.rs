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
    serde_json::to_vec(&StorageForm(obj)).unwrap_or_default()
}

/// An object serialized as stored, without copying it: `metadata` loses
/// `resourceVersion` and `selfLink`, everything else is written as serde_json writes it.
struct StorageForm<'a>(&'a Value);

/// `metadata` without the fields storage does not keep.
struct StoredMeta<'a>(&'a serde_json::Map<String, Value>);

impl serde::Serialize for StorageForm<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let Value::Object(m) = self.0 else {
            return self.0.serialize(s);
        };
        let mut out = s.serialize_map(Some(m.len()))?;
        for (k, v) in m {
            match v {
                Value::Object(meta) if k == "metadata" => {
                    out.serialize_entry(k, &StoredMeta(meta))?
                }
                _ => out.serialize_entry(k, v)?,
            }
        }
        out.end()
    }
}

impl serde::Serialize for StoredMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut out = s.serialize_map(None)?;
        for (k, v) in self.0 {
            if k != "resourceVersion" && k != "selfLink" {
                out.serialize_entry(k, v)?;
            }
        }
        out.end()
    }
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
}
