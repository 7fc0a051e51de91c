//! Strategic merge patch for the built-in kinds whose lists merge by a key
//! (webhook configurations: `webhooks` and their `matchConditions` by `name`), as
//! `kubectl apply` sends for kinds it knows. Other built-in kinds here have no keyed
//! lists and take the patch as a JSON merge patch.

use serde_json::{Map, Value};

/// The keyed lists of a kind: `(list field, merge key)`, the field matched at any depth
/// under a keyed element of the previous entry.
fn merge_keys(kind: &str) -> Option<&'static [(&'static str, &'static str)]> {
    match kind {
        "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration" => {
            Some(&[("webhooks", "name"), ("matchConditions", "name")])
        }
        "ServiceAccount" => Some(&[("secrets", "name")]),
        _ => None,
    }
}

/// A strategic merge patch kube refuses (a `$patch` directive it does not take).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// `$patch: merge` in a list item.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeListItem,
    /// A `$patch` directive other than `replace`, `delete` (and `merge` in a list);
    /// both are printed with Go's `%v`.
    #[error("unknown patch type: {directive} in map: {map}")]
    UnknownDirective {
        /// The directive.
        directive: String,
        /// The map it sits in.
        map: String,
    },
}

/// Apply `patch` to `doc` as kube's strategic merge patch for `doc`'s kind (lists of
/// kinds without keyed lists are replaced, as a JSON merge patch does); the error is
/// kube's text for a `$patch` directive it does not know.
pub fn apply(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    check_directives(patch, false)?;
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    merge(doc, patch, merge_keys(kind).unwrap_or(&[]));
    Ok(())
}

/// kube's checks of `$patch` directives: `replace` or `delete` in a map, also `merge`
/// (refused: kube cannot merge lists by directive) in a list item.
fn check_directives(patch: &Value, list_item: bool) -> Result<(), PatchError> {
    match patch {
        Value::Object(m) => {
            if let Some(d) = m.get("$patch") {
                match d.as_str() {
                    Some("replace" | "delete") => {}
                    Some("merge") if list_item => return Err(PatchError::MergeListItem),
                    _ => {
                        return Err(PatchError::UnknownDirective {
                            directive: d
                                .as_str()
                                .map_or_else(|| crate::goformat::go_v_float64(d), String::from),
                            map: crate::goformat::go_v_float64(patch),
                        });
                    }
                }
            }
            m.values().try_for_each(|v| check_directives(v, false))
        }
        Value::Array(a) => a.iter().try_for_each(|v| check_directives(v, true)),
        _ => Ok(()),
    }
}

fn merge(doc: &mut Value, patch: &Value, keys: &[(&str, &str)]) {
    let Some(p) = patch.as_object() else {
        *doc = patch.clone();
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *doc = Value::Object(without_directives(p));
            return;
        }
        // kube: the map is emptied.
        Some("delete") => {
            *doc = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    let Some(d) = doc.as_object_mut() else {
        return;
    };
    for (k, v) in p {
        if k.starts_with('$') {
            continue;
        }
        let key = keys.iter().find(|(f, _)| f == k).map(|(_, key)| *key);
        match (v, key) {
            (Value::Null, _) => {
                d.remove(k);
            }
            (Value::Array(items), Some(key)) => {
                let live = d
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                merge_list(live, items, key, keys);
            }
            // A map deleted where there was none: nothing to keep (kube drops the key).
            (Value::Object(o), _)
                if !d.contains_key(k)
                    && o.get("$patch").and_then(Value::as_str) == Some("delete") => {}
            (Value::Object(_), _) => {
                let live = d.entry(k.clone()).or_insert(Value::Null);
                merge(live, v, keys);
            }
            _ => {
                d.insert(k.clone(), strip(v));
            }
        }
    }
    // `$setElementOrder/<list>`: the order the client wants the keyed items in.
    for (k, order) in p {
        let Some(list) = k.strip_prefix("$setElementOrder/") else {
            continue;
        };
        let Some(key) = keys.iter().find(|(f, _)| *f == list).map(|(_, key)| *key) else {
            continue;
        };
        if let (Some(Value::Array(items)), Some(order)) = (d.get_mut(list), order.as_array()) {
            let rank = |item: &Value| {
                order
                    .iter()
                    .position(|o| o.get(key) == item.get(key))
                    .unwrap_or(usize::MAX)
            };
            items.sort_by_key(rank);
        }
    }
}

/// Merge a keyed list: items with a known key merge into the live item, `$patch:
/// delete` removes it, new keys are appended.
fn merge_list(live: &mut Value, items: &[Value], key: &str, keys: &[(&str, &str)]) {
    if !live.is_array() {
        *live = Value::Array(Vec::new());
    }
    let Some(list) = live.as_array_mut() else {
        return;
    };
    for item in items {
        let id = item.get(key);
        let pos = id.and_then(|id| list.iter().position(|l| l.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                list.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => merge(&mut list[i], item, keys),
            (None, false) => list.push(strip(item)),
        }
    }
}

fn without_directives(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), strip(v)))
        .collect()
}

/// A value with every `$directive` key removed.
fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(without_directives(m)),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kubectl_apply_patch_merges_webhooks_by_name() {
        let mut doc = json!({"kind": "ValidatingWebhookConfiguration", "webhooks": [
            {"name": "a.example.com", "timeoutSeconds": 5, "sideEffects": "None"},
            {"name": "b.example.com", "timeoutSeconds": 5}
        ]});
        let patch = json!({
            "$setElementOrder/webhooks": [{"name": "b.example.com"}, {"name": "a.example.com"}, {"name": "c.example.com"}],
            "webhooks": [
                {"name": "a.example.com", "timeoutSeconds": 7},
                {"name": "c.example.com", "timeoutSeconds": 1}
            ]
        });
        assert_eq!(apply(&mut doc, &patch), Ok(()));
        assert_eq!(
            doc["webhooks"],
            json!([
                {"name": "b.example.com", "timeoutSeconds": 5},
                {"name": "a.example.com", "timeoutSeconds": 7, "sideEffects": "None"},
                {"name": "c.example.com", "timeoutSeconds": 1}
            ])
        );
        let delete = json!({"webhooks": [{"name": "b.example.com", "$patch": "delete"}]});
        assert_eq!(apply(&mut doc, &delete), Ok(()));
        assert_eq!(doc["webhooks"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn kinds_without_keyed_lists_merge_as_a_merge_patch_with_directives() {
        let mut doc = json!({"kind": "ConfigMap", "data": {"a": "1", "b": "2"}, "x": [1, 2]});
        let patch = json!({"metadata": {"labels": {"a": "b"}}, "data": {"b": null}, "x": [3]});
        assert_eq!(apply(&mut doc, &patch), Ok(()));
        assert_eq!(
            doc,
            json!({"kind": "ConfigMap", "metadata": {"labels": {"a": "b"}}, "data": {"a": "1"}, "x": [3]})
        );
        let replace = json!({"data": {"$patch": "replace", "c": "3"}});
        assert_eq!(apply(&mut doc, &replace), Ok(()));
        assert_eq!(doc["data"], json!({"c": "3"}));
        assert_eq!(
            apply(&mut doc, &json!({"data": {"$patch": "delete"}})),
            Ok(())
        );
        assert_eq!(doc["data"], json!({}));
    }

    #[test]
    fn unknown_directives_are_refused_with_kubes_text() {
        let mut doc = json!({"kind": "ConfigMap", "data": {"a": "1"}});
        assert_eq!(
            apply(&mut doc, &json!({"data": {"$patch": "bogus", "n": 1.5}}))
                .unwrap_err()
                .to_string(),
            "unknown patch type: bogus in map: map[$patch:bogus n:1.5]"
        );
        assert_eq!(
            apply(&mut doc, &json!({"x": [{"$patch": "merge"}]})),
            Err(PatchError::MergeListItem)
        );
        assert_eq!(doc["data"], json!({"a": "1"}));
    }
}
