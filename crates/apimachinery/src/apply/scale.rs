//! The managedFields of a `/scale` write (apimachinery's `ScaleHandler`): the parent's
//! entries that own the replicas field are seen as `autoscaling/v1` Scale entries
//! owning `spec.replicas`, the Scale update runs over them, and the result is mapped
//! back onto the parent. Only ownership of the replicas field moves: a manager whose
//! replicas a scale write changed loses them, the scale writer gains them.
//!
//! kube's quirks kept: an `Update` entry is identified by its apiVersion, so the
//! parent's entries (`apps/v1`) are never the Scale's (`autoscaling/v1`): the parent
//! loses the field even when a write left it as it was, and the entry the scale writer
//! gets is new each time, without a `time` (none is carried over from the Scale).

use super::fieldpath::{FieldSet, PathElement};
use super::managed::{self, Managed, ManagerId, UPDATE};
use super::merge::VersionedSet;
use serde_json::Value;
use std::collections::BTreeMap;

/// The Scale's `apiVersion`.
const SCALE_API_VERSION: &str = "autoscaling/v1";

/// One `/scale` write.
#[derive(Clone, Copy, Debug)]
pub struct ScaleWrite<'a> {
    /// The field manager of the request.
    pub manager: &'a str,
    /// The parent's replicas field (`["spec", "replicas"]`).
    pub replicas_path: &'a [&'a str],
    /// `group/version` of the parent the request addressed.
    pub api_version: &'a str,
    /// The Scale's `spec.replicas` before and after (0: absent, as the Scale omits it).
    pub replicas: (i64, i64),
}

/// Set the managedFields of `new_parent` (the stored parent with the new replicas) as
/// kube's scale handler does, from those of `old_parent`. Entries that do not decode
/// are left as they are (kube fails the write there; ours keeps the object usable).
pub fn record_scale_update(old_parent: &Value, new_parent: &mut Value, w: &ScaleWrite) {
    let entries = old_parent
        .pointer("/metadata/managedFields")
        .and_then(|v| managed::parse_entries(Some(v)));
    let Some(parent) = entries.and_then(|e| Managed::decode(&e).ok()) else {
        return;
    };
    let path: Vec<PathElement> = w
        .replicas_path
        .iter()
        .map(|f| PathElement::field(f))
        .collect();
    // The Scale's managers: the parent's owners of the replicas, under their Scale keys.
    let mut scale: BTreeMap<String, bool> = parent
        .fields
        .iter()
        .filter(|(_, vs)| vs.set.has(&path))
        .map(|(key, vs)| (scale_key(key, vs), vs.applied))
        .collect();
    // Untracked: an update of an object without managers records nothing.
    if scale.is_empty() {
        return;
    }
    let (old, new) = w.replicas;
    if old != new {
        // Every owner loses a field the write changed; the writer owns it unless removed.
        scale.clear();
        if new != 0 {
            let writer = ManagerId::new(w.manager, UPDATE, SCALE_API_VERSION, "scale").key();
            scale.insert(writer, false);
        }
    }
    let mut out = Managed::default();
    let replicas = FieldSet::from_paths([path.as_slice()]);
    for (key, vs) in &parent.fields {
        let time = parent.times.get(key).cloned().flatten();
        if !vs.set.has(&path) || scale.remove(key).is_some() {
            out.fields.insert(key.clone(), vs.clone());
            out.times.insert(key.clone(), time);
            continue;
        }
        let rest = vs.set.difference(&replicas);
        if !rest.is_empty() {
            out.fields.insert(
                key.clone(),
                VersionedSet {
                    set: rest,
                    api_version: vs.api_version.clone(),
                    applied: vs.applied,
                },
            );
            out.times.insert(key.clone(), time);
        }
    }
    for (key, applied) in scale {
        let time = parent.times.get(&key).cloned().flatten();
        out.fields.insert(
            key.clone(),
            VersionedSet {
                set: replicas.clone(),
                api_version: w.api_version.to_string(),
                applied,
            },
        );
        out.times.insert(key, time);
    }
    let Some(meta) = new_parent
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    match out.encode() {
        Some(list) => meta.insert("managedFields".into(), list),
        None => meta.remove("managedFields"),
    };
}

/// The managedFields of the Scale an apply to `/scale` merges into (kube's
/// `ScaleHandler.ToSubresource`): the parent's owners of the replicas, each owning the
/// Scale's `spec.replicas` under its Scale identity. `None`: nobody owns them (the
/// Scale is then untracked, as kube's).
pub fn scale_managed_fields(parent: &Value, replicas_path: &[&str]) -> Option<Value> {
    let entries = managed::parse_entries(parent.pointer("/metadata/managedFields"))?;
    let parent = Managed::decode(&entries).ok()?;
    let path = field_path(replicas_path);
    let replicas = FieldSet::from_paths([field_path(&["spec", "replicas"]).as_slice()]);
    let mut out = Managed::default();
    for (key, vs) in parent.fields.iter().filter(|(_, vs)| vs.set.has(&path)) {
        let scale_key = scale_key(key, vs);
        out.fields.insert(
            scale_key.clone(),
            VersionedSet {
                set: replicas.clone(),
                api_version: SCALE_API_VERSION.to_string(),
                applied: vs.applied,
            },
        );
        out.times
            .insert(scale_key, parent.times.get(key).cloned().flatten());
    }
    out.encode()
}

/// Set the managedFields of `new_parent` from those of `old_parent` and of `scale`, the
/// Scale an apply produced (kube's `ScaleHandler.ToParent`): a parent owner of the
/// replicas keeps them only if the Scale still lists it; every other Scale manager
/// owning `spec.replicas` owns the parent's replicas, at the parent's version and
/// without a time.
pub fn record_scale_apply(
    old_parent: &Value,
    new_parent: &mut Value,
    scale: &Value,
    w: &ScaleWrite,
) {
    let decode = |v: &Value| {
        managed::parse_entries(v.pointer("/metadata/managedFields"))
            .and_then(|e| Managed::decode(&e).ok())
            .unwrap_or_default()
    };
    let parent = decode(old_parent);
    let mut scale_fields = decode(scale).fields;
    let path = field_path(w.replicas_path);
    let replicas = FieldSet::from_paths([path.as_slice()]);
    let mut out = Managed::default();
    for (key, vs) in &parent.fields {
        let time = parent.times.get(key).cloned().flatten();
        if !vs.set.has(&path) || scale_fields.remove(key).is_some() {
            out.fields.insert(key.clone(), vs.clone());
            out.times.insert(key.clone(), time);
            continue;
        }
        let rest = vs.set.difference(&replicas);
        if !rest.is_empty() {
            out.fields.insert(
                key.clone(),
                VersionedSet {
                    set: rest,
                    api_version: vs.api_version.clone(),
                    applied: vs.applied,
                },
            );
            out.times.insert(key.clone(), time);
        }
    }
    let scale_replicas = field_path(&["spec", "replicas"]);
    for (key, vs) in scale_fields {
        if !vs.set.has(&scale_replicas) {
            continue;
        }
        let time = parent.times.get(&key).cloned().flatten();
        out.fields.insert(
            key.clone(),
            VersionedSet {
                set: replicas.clone(),
                api_version: w.api_version.to_string(),
                applied: vs.applied,
            },
        );
        out.times.insert(key, time);
    }
    let Some(meta) = new_parent
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    match out.encode() {
        Some(list) => meta.insert("managedFields".into(), list),
        None => meta.remove("managedFields"),
    };
}

fn field_path(fields: &[&str]) -> Vec<PathElement> {
    fields.iter().map(|f| PathElement::field(f)).collect()
}

/// The key a parent's entry has once written as a Scale entry.
fn scale_key(key: &str, vs: &VersionedSet) -> String {
    let mut id = ManagerId::parse(key).unwrap_or_default();
    id.api_version = SCALE_API_VERSION.to_string();
    if vs.applied {
        id.operation = managed::APPLY.to_string();
    }
    id.key()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(entries: Value) -> Value {
        json!({"metadata": {"name": "web", "managedFields": entries}, "spec": {"replicas": 3}})
    }

    fn write(manager: &str, replicas: (i64, i64)) -> ScaleWrite<'_> {
        ScaleWrite {
            manager,
            replicas_path: &["spec", "replicas"],
            api_version: "apps/v1",
            replicas,
        }
    }

    #[test]
    fn a_scale_write_takes_the_replicas_from_their_owner_without_a_time() {
        let old = deployment(json!([{"manager": "kubectl", "operation": "Update",
            "apiVersion": "apps/v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}]));
        let mut new = old.clone();
        record_scale_update(&old, &mut new, &write("hpa", (3, 5)));
        assert_eq!(
            new["metadata"]["managedFields"],
            json!([
                {"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
                 "subresource": "scale"},
                {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:paused": {}}}}
            ])
        );
    }

    #[test]
    fn an_unchanged_apply_owner_keeps_the_replicas() {
        let old = deployment(json!([{"manager": "ci", "operation": "Apply",
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}}}]));
        let mut new = old.clone();
        record_scale_update(&old, &mut new, &write("hpa", (3, 3)));
        assert_eq!(new, old);
    }

    #[test]
    fn an_apply_sees_the_owners_of_the_replicas_as_scale_entries() {
        let parent = deployment(json!([{"manager": "kubectl", "operation": "Update",
            "apiVersion": "apps/v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}},
            {"manager": "other", "operation": "Update", "apiVersion": "apps/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]));
        assert_eq!(
            scale_managed_fields(&parent, &["spec", "replicas"]),
            Some(json!([{"manager": "kubectl", "operation": "Update",
                "apiVersion": "autoscaling/v1", "time": "2024-01-01T00:00:00Z",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]))
        );
        assert_eq!(
            scale_managed_fields(&deployment(json!([])), &["spec", "replicas"]),
            None
        );
    }

    #[test]
    fn an_applied_scale_gives_the_replicas_to_its_manager_at_the_parents_version() {
        let old = deployment(json!([{"manager": "kubectl", "operation": "Update",
            "apiVersion": "apps/v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}, "f:paused": {}}}}]));
        // The Scale after a forced apply by `ci`: kubectl lost the replicas.
        let scale = json!({"metadata": {"managedFields": [{"manager": "ci", "operation": "Apply",
            "apiVersion": "autoscaling/v1", "time": "2024-02-02T00:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale"}]}});
        let mut new = old.clone();
        record_scale_apply(&old, &mut new, &scale, &write("ci", (3, 5)));
        assert_eq!(
            new["metadata"]["managedFields"],
            json!([
                {"manager": "ci", "operation": "Apply", "apiVersion": "apps/v1",
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
                 "subresource": "scale"},
                {"manager": "kubectl", "operation": "Update", "apiVersion": "apps/v1",
                 "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                 "fieldsV1": {"f:spec": {"f:paused": {}}}}
            ])
        );
    }

    #[test]
    fn untracked_objects_stay_untracked_and_removed_replicas_have_no_owner() {
        let old = deployment(json!([{"manager": "a", "operation": "Update",
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {}}}}]));
        let mut new = old.clone();
        record_scale_update(&old, &mut new, &write("hpa", (3, 5)));
        assert_eq!(new, old);
        let old = deployment(json!([{"manager": "a", "operation": "Update",
            "apiVersion": "apps/v1", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:spec": {"f:replicas": {}}}}]));
        let mut new = old.clone();
        record_scale_update(&old, &mut new, &write("hpa", (3, 0)));
        assert!(new["metadata"].get("managedFields").is_none(), "{new}");
    }
}
