//! `x-kubernetes-list-type` invariants: `set` items and `map` keys are unique.
//!
//! Mirrors apiextensions-apiserver's `listtype.ValidateListSetsAndMaps`, which kube runs
//! next to OpenAPI validation on every write of a custom resource. Only the structural
//! part of the schema is followed (`properties`, `additionalProperties`, `items`).
//! Missing key fields are not reported here: they are unspecified keys, compared with
//! each other; the schema's `required` (enforced by `schema::validate`) is what makes a
//! key field mandatory.

use super::structural::Structural;
use crate::field::{Error, ErrorList, Path, Trail};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Duplicate set items and duplicate map keys anywhere in `value` (at `path`).
pub fn validate_list_types(schema: &Structural, value: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    validate_value(schema, value, &Trail::At(path), &mut errs);
    errs
}

/// The walk names a path only at a list with a list type.
fn validate_value(schema: &Structural, value: &Value, trail: &Trail, errs: &mut ErrorList) {
    match value {
        Value::Array(items) => validate_array(schema, items, trail, errs),
        Value::Object(obj) => validate_object(schema, obj, trail, errs),
        _ => {}
    }
}

fn validate_object(
    schema: &Structural,
    obj: &Map<String, Value>,
    trail: &Trail,
    errs: &mut ErrorList,
) {
    if let Some(additional) = schema
        .additional_properties
        .as_ref()
        .and_then(|a| a.schema())
    {
        for (k, v) in obj {
            validate_value(additional, v, &trail.key(k), errs);
        }
    }
    for (k, v) in obj {
        if let Some(sub) = schema.properties.get(k) {
            validate_value(sub, v, &trail.child(k), errs);
        }
    }
}

fn validate_array(schema: &Structural, items: &[Value], trail: &Trail, errs: &mut ErrorList) {
    match schema.x_list_type.as_deref() {
        Some("set") => {
            let path = Path::new(&trail.render());
            for i in non_unique_indices(items.iter().map(ItemKey::of)) {
                errs.push(Error::duplicate(&path.index(i), items[i].clone()));
            }
        }
        Some("map") => errs.extend(validate_list_map(
            schema,
            items,
            &Path::new(&trail.render()),
        )),
        _ => {}
    }
    if let Some(item_schema) = schema.items.as_deref() {
        for (i, item) in items.iter().enumerate() {
            validate_value(item_schema, item, &trail.index(i), errs);
        }
    }
}

/// An item as kube compares set members: scalars by Go value (an int64 never equals a
/// float64), objects and arrays by their JSON text.
#[derive(PartialEq, Eq, Hash)]
enum ItemKey {
    Unspecified,
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    Compound(String),
}

impl ItemKey {
    fn of(v: &Value) -> ItemKey {
        match v {
            Value::Null => ItemKey::Null,
            Value::Bool(b) => ItemKey::Bool(*b),
            Value::String(s) => ItemKey::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => ItemKey::Int(i),
                // -0 and 0 are one Go map key.
                None => ItemKey::Float((n.as_f64().unwrap_or(0.0) + 0.0).to_bits()),
            },
            Value::Array(_) | Value::Object(_) => ItemKey::Compound(crate::goformat::go_json(v)),
        }
    }
}

/// Indices of the second occurrence of every repeated key (later repeats are not listed).
fn non_unique_indices(keys: impl Iterator<Item = ItemKey>) -> Vec<usize> {
    let mut seen: HashMap<ItemKey, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, key) in keys.enumerate() {
        let times = seen.entry(key).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(schema: &Structural, items: &[Value], path: &Path) -> ErrorList {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            return vec![Error::invalid(
                &path.index(i),
                x.clone(),
                "must be an object for an array of list-type map",
            )];
        }
    }
    if items.len() <= 1 {
        return ErrorList::new();
    }
    let key_fields = &schema.x_list_map_keys;
    if key_fields.len() == 1 {
        let field = &key_fields[0];
        let keys: Vec<Option<&Value>> = items
            .iter()
            .map(|x| x.as_object().and_then(|m| m.get(field)))
            .collect();
        let dupes = non_unique_indices(
            keys.iter()
                .map(|k| k.map_or(ItemKey::Unspecified, ItemKey::of)),
        );
        return dupes
            .into_iter()
            .map(|i| {
                let mut key = Map::new();
                if let Some(v) = keys[i] {
                    key.insert(field.clone(), v.clone());
                }
                Error::duplicate(&path.index(i), Value::Object(key))
            })
            .collect();
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for f in key_fields {
                    if let Some(v) = m.get(f) {
                        key.insert(f.clone(), v.clone());
                    }
                }
            }
            Value::Object(key)
        })
        .collect();
    non_unique_indices(keys.iter().map(ItemKey::of))
        .into_iter()
        .map(|i| Error::duplicate(&path.index(i), keys[i].clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        let props = crate::schema::props::JSONSchemaProps::from_value(&json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "byName": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}
                },
                "byTwo": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
                    "items": {"type": "object"}
                },
                "nested": {"type": "object", "additionalProperties": {
                    "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}
                }}
            }}}
        }))
        .expect("schema parses");
        Structural::from_props(&props)
    }

    fn rendered(errs: &ErrorList) -> Vec<String> {
        let mut v: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        v.sort();
        v
    }

    #[test]
    fn validation_golden_set_and_map_duplicates() {
        let obj = json!({"spec": {"set": ["a", "a"], "byName": [{"name": "x"}, {"name": "x"}]}});
        let errs = validate_list_types(&schema(), &obj, &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "spec.byName[1]: Duplicate value: {\"name\":\"x\"}",
                "spec.set[1]: Duplicate value: \"a\""
            ]
        );
        assert!(errs
            .iter()
            .all(|e| e.kind.reason() == "FieldValueDuplicate"));
    }

    #[test]
    fn only_the_second_occurrence_is_reported() {
        let obj = json!({"spec": {"set": ["a", "b", "a", "a", "b"]}});
        assert_eq!(
            rendered(&validate_list_types(&schema(), &obj, &Path::root())),
            vec![
                "spec.set[2]: Duplicate value: \"a\"",
                "spec.set[4]: Duplicate value: \"b\""
            ]
        );
    }

    #[test]
    fn unspecified_keys_collide_and_non_objects_are_rejected() {
        let obj = json!({"spec": {"byName": [{"v": 1}, {"v": 2}], "byTwo": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]}});
        assert_eq!(
            rendered(&validate_list_types(&schema(), &obj, &Path::root())),
            vec![
                "spec.byName[1]: Duplicate value: {}",
                "spec.byTwo[1]: Duplicate value: {\"a\":1,\"b\":2}"
            ]
        );
        let obj = json!({"spec": {"byName": [{"name": "x"}, "oops"]}});
        assert_eq!(
            rendered(&validate_list_types(&schema(), &obj, &Path::root())),
            vec!["spec.byName[1]: Invalid value: \"oops\": must be an object for an array of list-type map"]
        );
    }

    #[test]
    fn maps_use_key_paths_and_ints_differ_from_floats() {
        let obj = json!({"spec": {"nested": {"k": [1, 1.0, 2, 2]}}});
        assert_eq!(
            rendered(&validate_list_types(&schema(), &obj, &Path::root())),
            vec!["spec.nested[k][3]: Duplicate value: 2"]
        );
    }
}
