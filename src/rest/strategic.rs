//! Strategic merge patch of built-in kinds, as kube's `strategicpatch` applies one
//! (`application/strategic-merge-patch+json`, what `kubectl patch`, `kubectl set` and
//! client-side `kubectl apply` send). The patch metadata is the kind's OpenAPI
//! definition's: a list whose `x-kubernetes-patch-strategy` is `merge` merges item by
//! item (maps by their `x-kubernetes-patch-merge-key`, scalars as a set), a map whose
//! strategy is `replace` is replaced; everything else merges as a JSON merge patch
//! does. The directives: `$patch` (`replace` or `delete` a map or a list item; `merge`
//! is refused in a list), `$retainKeys` (keep only the listed keys of a map),
//! `$setElementOrder/<list>` (the order of a merged list) and
//! `$deleteFromPrimitiveList/<list>` (remove scalars from a merged list).
//!
//! Kinds without a definition (a Scale) have no patch metadata: their lists are
//! replaced. kube's quirks are kept: only `$patch` is stripped from values the patch
//! adds, and a list a `$patch: replace` item replaces is not merged further.

use crate::goformat::{go_number_v, go_v_with};
use crate::status::Status;
use serde_json::{Map, Value};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const GO_LIST: &str = "[]interface {}";
const GO_MAP: &str = "map[string]interface {}";

/// A strategic merge patch kube refuses, with kube's text.
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
    /// An item of a merged list without the list's merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey {
        /// The item, as Go's `%v` prints it.
        map: String,
        /// The merge key.
        key: String,
    },
    /// A value of another JSON type where kube expects a list or a map.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// The Go type expected.
        expected: &'static str,
        /// The Go type received.
        actual: String,
    },
    /// A list item that is not a map where maps are matched by key.
    #[error("value for key {0} is not a map")]
    NotAMap(usize),
    /// A merged list of lists.
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// A merged list whose items are not all of one type.
    #[error("list element types are not identical: {0}")]
    MixedList(String),
    /// `$setElementOrder` of a list neither side has items of.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// A merged list of maps without a merge key.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyDeclared(String),
    /// `$deleteFromPrimitiveList` not followed by `/<list>`.
    #[error("invalid patch format of primitive list")]
    PrimitiveListFormat,
    /// `$retainKeys` not a list, or a patched key missing from it.
    #[error("invalid patch format of retainKeys")]
    RetainKeysFormat,
    /// `$setElementOrder` not followed by `/<list>`.
    #[error("invalid patch format of setElementOrder list")]
    SetElementOrderFormat,
    /// A patch list in another order than its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch {
        /// The patch list.
        patch: String,
        /// The order list.
        order: String,
    },
    /// A patch strategy kube does not know (not in kube's definitions).
    #[error("unexpected patch strategy: {0}")]
    Strategy(String),
}

impl PatchError {
    /// The Status kube answers with: a 422 for lists of lists, else a 400 (kube's
    /// answer to errors it does not classify is a 500; they are the client's mistake).
    pub fn to_status(&self) -> Status {
        match self {
            PatchError::ListOfLists => Status::unprocessable(
                "the server rejected our request due to an error in our request",
            ),
            other => Status::bad_request(other.to_string()),
        }
    }
}

type Result<T> = std::result::Result<T, PatchError>;

/// Apply `patch` to `doc` as kube's strategic merge patch, by the patch metadata of
/// `doc`'s kind (read from its `apiVersion` and `kind`).
pub fn apply(doc: &mut Value, patch: &Value) -> Result<()> {
    let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
    let definition = crate::registry::builtin::resources()
        .iter()
        .find(|r| r.kind == kind && r.group_version() == api_version)
        .map(|r| r.definition.as_str());
    apply_by_definition(doc, patch, definition)
}

/// [`apply`] with the OpenAPI definition the patch metadata is read from.
pub fn apply_by_definition(doc: &mut Value, patch: &Value, definition: Option<&str>) -> Result<()> {
    let defs = crate::registry::openapi::builtin_definitions();
    let schema = Schema {
        node: definition.and_then(|d| defs.get(d)),
        name: definition.unwrap_or(""),
        defs,
    };
    let Some(p) = patch.as_object() else {
        *doc = patch.clone();
        return Ok(());
    };
    let original = doc.as_object().cloned().unwrap_or_default();
    *doc = Value::Object(merge_map(original, p.clone(), schema)?);
    Ok(())
}

/// Where the merge is in the kind's definitions (kube's `LookupPatchMeta`).
#[derive(Clone, Copy)]
struct Schema<'a> {
    node: Option<&'a Value>,
    /// The definition's name, for kube's errors.
    name: &'a str,
    defs: &'a Map<String, Value>,
}

/// The patch metadata of a field.
#[derive(Default)]
struct PatchMeta {
    /// `merge`, `replace` or empty (`retainKeys` set apart).
    strategy: String,
    merge_key: String,
}

impl<'a> Schema<'a> {
    fn resolve(&self, node: &'a Value) -> Schema<'a> {
        match node.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                let name = r.rsplit('/').next().unwrap_or("");
                Schema {
                    node: self.defs.get(name),
                    name,
                    ..*self
                }
            }
            None => Schema {
                node: Some(node),
                ..*self
            },
        }
    }

    fn none(&self) -> Schema<'a> {
        Schema {
            node: None,
            ..*self
        }
    }

    fn property(&self, key: &str) -> Option<&'a Value> {
        let node = self.node?;
        match node.get("properties") {
            Some(p) => p.get(key),
            None => node.get("additionalProperties").filter(|a| a.is_object()),
        }
    }

    /// The schema and patch metadata of map field `key`.
    fn for_map(&self, key: &str) -> Result<(Schema<'a>, PatchMeta)> {
        let prop = self.property(key);
        let sub = prop.map_or_else(|| self.none(), |p| self.resolve(p));
        Ok((sub, patch_meta(prop)?))
    }

    /// The schema of the items and the patch metadata of list field `key`.
    fn for_list(&self, key: &str) -> Result<(Schema<'a>, PatchMeta)> {
        let prop = self.property(key);
        let sub = prop
            .and_then(|p| p.get("items"))
            .map_or_else(|| self.none(), |i| self.resolve(i));
        Ok((sub, patch_meta(prop)?))
    }
}

/// A field's strategies, `retainKeys` set apart as kube does.
fn patch_meta(prop: Option<&Value>) -> Result<PatchMeta> {
    let ext = |k: &str| {
        prop.and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let strategies: Vec<&str> = match ext("x-kubernetes-patch-strategy") {
        "" => Vec::new(),
        s => s.split(',').collect(),
    };
    let strategy = match strategies.as_slice() {
        [] | ["retainKeys"] => "",
        [one] => one,
        ["retainKeys", other] | [other, "retainKeys"] => other,
        _ => return Err(PatchError::Strategy(format!("[{}]", strategies.join(" ")))),
    };
    Ok(PatchMeta {
        strategy: strategy.to_string(),
        merge_key: ext("x-kubernetes-patch-merge-key").to_string(),
    })
}

/// Go's `%v` of a value as kube's maps hold it.
fn go_v(v: &Value) -> String {
    go_v_with(v, &go_number_v)
}

/// Go's `%s` of a directive's value.
fn go_s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("%!s(int64={})", go_v(v)),
        Value::Number(_) => format!("%!s(float64={})", go_v(v)),
        Value::Bool(b) => format!("%!s(bool={b})"),
        Value::Null => "%!s(<nil>)".to_string(),
        other => go_v(other),
    }
}

/// The Go type a decoded JSON value has in kube's maps.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "%!s(<nil>)",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => GO_LIST,
        Value::Object(_) => GO_MAP,
    }
}

fn as_list(v: &Value) -> Result<&Vec<Value>> {
    v.as_array().ok_or_else(|| PatchError::BadArgType {
        expected: GO_LIST,
        actual: go_type(v).to_string(),
    })
}

fn as_map(v: &Value) -> Result<&Map<String, Value>> {
    v.as_object().ok_or_else(|| PatchError::BadArgType {
        expected: GO_MAP,
        actual: go_type(v).to_string(),
    })
}

/// `$prefix/<key>` → `<key>`.
fn extract_key<'k>(s: &'k str, prefix: &str, err: PatchError) -> Result<&'k str> {
    match s.split_once('/') {
        Some((p, key)) if p == prefix => Ok(key),
        _ => Err(err),
    }
}

/// Merge `patch` into `original` (kube's `mergeMap`, nulls of the patch deleting).
fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    schema: Schema,
) -> Result<Map<String, Value>> {
    if let Some(d) = patch.get(DIRECTIVE) {
        return match d.as_str() {
            Some("replace") => {
                patch.remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::UnknownDirective {
                directive: go_s(d),
                map: go_v(&Value::Object(patch.clone())),
            }),
        };
    }
    retain_keys(&mut original, &mut patch)?;
    set_element_order(&mut original, &mut patch, schema)?;
    for (k, patch_v) in patch {
        let (key, delete_list) = if k.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            let key = extract_key(
                &k,
                DELETE_FROM_PRIMITIVE_LIST,
                PatchError::PrimitiveListFormat,
            )?;
            (key.to_string(), true)
        } else {
            (k, false)
        };
        if patch_v.is_null() {
            original.remove(&key);
            continue;
        }
        let Some(orig) = original.remove(&key) else {
            if !delete_list {
                insert_stripped(&mut original, key, discard_nulls(patch_v));
            }
            continue;
        };
        if go_type(&orig) != go_type(&patch_v) {
            if delete_list {
                original.insert(key, orig);
            } else {
                insert_stripped(&mut original, key, discard_nulls(patch_v));
            }
            continue;
        }
        let merged = match (orig, patch_v) {
            (Value::Object(o), Value::Object(p)) => {
                let (sub, meta) = schema.for_map(&key)?;
                if meta.strategy == "replace" {
                    Value::Object(p)
                } else {
                    Value::Object(merge_map(o, p, sub)?)
                }
            }
            (Value::Array(o), Value::Array(p)) => {
                let (sub, meta) = schema.for_list(&key)?;
                if meta.strategy == "merge" || delete_list {
                    Value::Array(merge_list(o, p, sub, &meta.merge_key, delete_list)?)
                } else {
                    Value::Array(p)
                }
            }
            (_, p) => {
                insert_stripped(&mut original, key, p);
                continue;
            }
        };
        original.insert(key, merged);
    }
    Ok(original)
}

/// Set `key` to `v` without its `$patch`-marked maps (a marked `v` sets nothing).
fn insert_stripped(m: &mut Map<String, Value>, key: String, v: Value) {
    if let Some(v) = remove_directives(v) {
        m.insert(key, v);
    }
}

/// kube's `removeDirectives`: maps carrying `$patch` are dropped.
fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(m) => {
            if m.contains_key(DIRECTIVE) {
                return None;
            }
            Some(Value::Object(
                m.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(a) => Some(Value::Array(
            a.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// kube's `discardNullValuesFromPatch`: nulls in maps of an added value mean nothing.
fn discard_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, discard_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(discard_nulls).collect()),
        other => other,
    }
}

/// `$retainKeys`: the original keeps only the listed keys; every key the patch sets
/// must be listed.
fn retain_keys(original: &mut Map<String, Value>, patch: &mut Map<String, Value>) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let Value::Array(keys) = retain else {
        return Err(PatchError::RetainKeysFormat);
    };
    let listed = |k: &str| keys.iter().any(|r| r.as_str() == Some(k));
    let unlisted = patch.iter().any(|(k, v)| {
        !v.is_null()
            && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            && !k.starts_with(SET_ELEMENT_ORDER)
            && !listed(k)
    });
    if unlisted {
        return Err(PatchError::RetainKeysFormat);
    }
    original.retain(|k, _| listed(k));
    Ok(())
}

/// `$setElementOrder/<list>`: merge the list now and order it as the directive says.
fn set_element_order(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    schema: Schema,
) -> Result<()> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for k in keys {
        let Some(order) = patch.remove(&k) else {
            continue;
        };
        let order = as_list(&order)?;
        let list_key = extract_key(&k, SET_ELEMENT_ORDER, PatchError::SetElementOrderFormat)?;
        let orig = original.get(list_key).map(as_list).transpose()?.cloned();
        let patch_list = patch.get(list_key).map(as_list).transpose()?.cloned();
        let (sub, meta) = schema.for_list(list_key)?;
        let key = meta.merge_key.as_str();
        check_order(patch_list.as_deref().unwrap_or(&[]), order, key)?;
        let merged = match (&orig, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                Some(Value::Array(v)) => v,
                _ => continue,
            },
            (Some(o), Some(p)) => {
                if meta.strategy == "merge" {
                    merge_list(o.clone(), p.clone(), sub, key, false)?
                } else {
                    p.clone()
                }
            }
            (None, None) => continue,
        };
        let (in_order, server_only) = partition(merged, order, key)?;
        let orig = orig.unwrap_or_default();
        let kind = element_type(&[&orig, patch_list.as_deref().unwrap_or(&[])])?;
        let both = normalize_order(in_order, server_only, order, &orig, key, kind)?;
        original.insert(list_key.to_string(), Value::Array(both));
        patch.remove(list_key);
    }
    Ok(())
}

/// kube's check that a patch list follows its `$setElementOrder` list.
fn check_order(patch_list: &[Value], order: &[Value], key: &str) -> Result<()> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let items = if key.is_empty() {
        patch_list.to_vec()
    } else {
        split_deletes(patch_list.to_vec())?.0
    };
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if items[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        if same_key(&items[pi], &order[oi], key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() && oi >= order.len() {
        return Err(PatchError::OrderMismatch {
            patch: go_v(&Value::Array(patch_list.to_vec())),
            order: go_v(&Value::Array(order.to_vec())),
        });
    }
    Ok(())
}

/// kube's `mergeKeyValueEqual`.
fn same_key(a: &Value, b: &Value, key: &str) -> Result<bool> {
    if key.is_empty() {
        return Ok(a == b);
    }
    let (a, b) = (as_map(a)?, as_map(b)?);
    let ka = a.get(key).ok_or_else(|| no_merge_key(a, key))?;
    let kb = b.get(key).ok_or_else(|| no_merge_key(b, key))?;
    Ok(ka == kb)
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::NoMergeKey {
        map: go_v(&Value::Object(m.clone())),
        key: key.to_string(),
    }
}

/// The Go type every item of the lists shares (kube's `sliceElementType`).
fn element_type(lists: &[&[Value]]) -> Result<&'static str> {
    let mut prev: Option<&'static str> = None;
    for item in lists.iter().flat_map(|l| l.iter()) {
        let t = go_type(item);
        match prev {
            None if t == GO_LIST => return Err(PatchError::ListOfLists),
            None => prev = Some(t),
            Some(p) if p != t => {
                let parts: Vec<String> = lists
                    .iter()
                    .map(|l| go_v(&Value::Array(l.to_vec())))
                    .collect();
                return Err(PatchError::MixedList(format!("[{}]", parts.join(" "))));
            }
            Some(_) => {}
        }
    }
    prev.ok_or(PatchError::NoElements)
}

/// Merge a list whose strategy is `merge` (or delete from it: `delete_list`).
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    schema: Schema,
    key: &str,
    delete_list: bool,
) -> Result<Vec<Value>> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let kind = element_type(&[&original, &patch])?;
    if kind != GO_MAP {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        let merged = dedupe_scalars(both);
        let (in_patch, server_only) = partition(merged, &patch, "")?;
        return normalize_order(in_patch, server_only, &patch, &original, "", kind);
    }
    if key.is_empty() {
        return Err(PatchError::NoMergeKeyDeclared(schema.name.to_string()));
    }
    let (original, patch) = special_items(original, patch, key)?;
    let mut merged = original.clone();
    for item in &patch {
        let Some(p) = item.as_object() else { continue };
        let id = p.get(key).ok_or_else(|| no_merge_key(p, key))?;
        match find_by_key(&merged, key, id)? {
            Some(i) => {
                let o = match std::mem::take(&mut merged[i]) {
                    Value::Object(o) => o,
                    _ => Map::new(),
                };
                merged[i] = Value::Object(merge_map(o, p.clone(), schema)?);
            }
            None => merged.push(item.clone()),
        }
    }
    let (in_patch, server_only) = partition(merged, &patch, key)?;
    normalize_order(in_patch, server_only, &patch, &original, key, kind)
}

/// The `$patch` items of a merged list: `delete` removes the original's items with
/// that key, `replace` makes the other items the whole list.
fn special_items(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::new();
    let mut replace = false;
    for item in patch {
        let Some(d) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match d.as_str() {
            Some("delete") => {
                let m = as_map(&item)?;
                let id = m.get(key).ok_or_else(|| no_merge_key(m, key))?;
                while let Some(i) = find_by_key(&original, key, id)? {
                    original.remove(i);
                }
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(PatchError::MergeListItem),
            _ => {
                return Err(PatchError::UnknownDirective {
                    directive: go_s(d),
                    map: go_v(&item),
                })
            }
        }
    }
    Ok(if replace {
        (plain, Vec::new())
    } else {
        (original, plain)
    })
}

/// The index of the map in `list` whose `key` is `id` (kube's
/// `findMapInSliceBasedOnKeyValue`: an item that is not a map is an error).
fn find_by_key(list: &[Value], key: &str, id: &Value) -> Result<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let m = v.as_object().ok_or(PatchError::NotAMap(i))?;
        if m.get(key) == Some(id) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Go's `deduplicateScalars` (a duplicate is replaced by the last item).
fn dedupe_scalars(mut s: Vec<Value>) -> Vec<Value> {
    if s.is_empty() {
        return s;
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if s[i] == s[j] {
                s[j] = s[length].clone();
                s.truncate(length);
                length -= 1;
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    s
}

/// Split `merged` into the items `by` names (by merge key, or by value for scalars)
/// and the others.
fn partition(merged: Vec<Value>, by: &[Value], key: &str) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut named = Vec::new();
    let mut others = Vec::new();
    for v in merged {
        let found = if key.is_empty() {
            by.contains(&v)
        } else {
            let m = as_map(&v)?;
            let id = m.get(key).ok_or_else(|| no_merge_key(m, key))?;
            find_by_key(by, key, id)?.is_some()
        };
        if found {
            named.push(v);
        } else {
            others.push(v);
        }
    }
    Ok((named, others))
}

/// kube's `normalizeElementOrder`: the patch's items in the patch's order, the
/// server's in the server's, interleaved where the server's order places them.
fn normalize_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: &str,
    kind: &str,
) -> Result<Vec<Value>> {
    let patch_items = sort_by_order(patch_items, patch_order, key, kind)?;
    let server_only = sort_by_order(server_only, server_order, key, kind)?;
    let (left, right) = (server_only, patch_items);
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let take_left = if i >= left.len() {
            false
        } else if j >= right.len() {
            true
        } else {
            match (
                index_in(server_order, &left[i], key, kind),
                index_in(server_order, &right[j], key, kind),
            ) {
                (Some(l), Some(r)) => l < r,
                _ => false,
            }
        };
        if take_left {
            out.push(left[i].clone());
            i += 1;
        } else {
            out.push(right[j].clone());
            j += 1;
        }
    }
    Ok(out)
}

/// Where `v` is in `order` (by merge key for maps, by value otherwise).
fn index_in(order: &[Value], v: &Value, key: &str, kind: &str) -> Option<usize> {
    if kind == GO_MAP {
        let id = v.as_object().and_then(|m| m.get(key));
        order
            .iter()
            .position(|o| o.as_object().and_then(|m| m.get(key)) == id)
    } else {
        order.iter().position(|o| o == v)
    }
}

/// kube's `normalizeSliceOrder`: items sorted by their place in `order` (Go's stable
/// insertion sort, whose comparison holds when either is missing from `order`), the
/// `$patch: delete` items last.
fn sort_by_order(items: Vec<Value>, order: &[Value], key: &str, kind: &str) -> Result<Vec<Value>> {
    let (mut items, deletes) = if kind == GO_MAP {
        for v in items.iter().chain(order) {
            let m = as_map(v)?;
            if !m.contains_key(key) {
                return Err(no_merge_key(m, key));
            }
        }
        split_deletes(items)?
    } else {
        (items, Vec::new())
    };
    let less =
        |a: &Value, b: &Value| match (index_in(order, a, key, kind), index_in(order, b, key, kind))
        {
            (Some(x), Some(y)) => x < y,
            _ => true,
        };
    for i in 1..items.len() {
        let mut j = i;
        while j > 0 && less(&items[j], &items[j - 1]) {
            items.swap(j, j - 1);
            j -= 1;
        }
    }
    items.extend(deletes);
    Ok(items)
}

/// The items of a list without and with `$patch: delete`.
fn split_deletes(items: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::new();
    let mut deletes = Vec::new();
    for v in items {
        let m = as_map(&v)?;
        if m.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
            deletes.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, deletes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d",
        "finalizers": ["a", "b"]},
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
            "template": {"spec": {"containers": [
                {"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox", "args": ["x"]}
            ]}}}})
    }

    #[test]
    fn containers_merge_by_name_and_new_ones_are_appended() {
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "side", "image": "busybox:2", "args": ["sleep"]},
            {"name": "new", "image": "redis"}
        ]}}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            json!([
                {"name": "app", "image": "nginx", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "busybox:2", "args": ["sleep"]},
                {"name": "new", "image": "redis"}
            ])
        );
    }

    #[test]
    fn set_element_order_orders_and_delete_removes_items() {
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
            "containers": [{"name": "app", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                            "env": [{"name": "B", "value": "2"}]}]
        }}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        let c = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(c[0]["name"], "side");
        assert_eq!(
            c[1]["env"],
            json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}])
        );
        let delete = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "side", "$patch": "delete"}]}}}});
        assert_eq!(apply(&mut d, &delete), Ok(()));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"]
                .as_array()
                .map(Vec::len),
            Some(1)
        );
    }

    #[test]
    fn retain_keys_and_primitive_list_deletion() {
        let mut d = deployment();
        let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"],
                                        "finalizers": ["c"]},
            "spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        // Items new to the server's list come before those it knows (kube's order).
        assert_eq!(d["metadata"]["finalizers"], json!(["c", "b"]));
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}});
        assert_eq!(apply(&mut d, &bad), Err(PatchError::RetainKeysFormat));
    }

    #[test]
    fn replace_directives_and_lists_without_merge_strategy() {
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"$patch": "replace"}, {"name": "only", "image": "x"}]}}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"],
            json!([{"name": "only", "image": "x"}])
        );
        // `args` has no strategy: the patch's list replaces it.
        let mut d = deployment();
        let patch = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "side", "args": ["y"]}]}}}});
        assert_eq!(apply(&mut d, &patch), Ok(()));
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][1]["args"],
            json!(["y"])
        );
        let missing_key = json!({"spec": {"template": {"spec": {"containers": [{"image": "z"}]}}}});
        assert_eq!(
            apply(&mut d, &missing_key).map_err(|e| e.to_string()),
            Err("map: map[image:z] does not contain declared merge key: name".to_string())
        );
    }

    #[test]
    fn kubectl_apply_patch_merges_webhooks_by_name() {
        let mut doc = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "webhooks": [
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
        let mut doc = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "data": {"a": "1", "b": "2"}, "x": [1, 2]});
        let patch = json!({"metadata": {"labels": {"a": "b"}}, "data": {"b": null}, "x": [3]});
        assert_eq!(apply(&mut doc, &patch), Ok(()));
        assert_eq!(
            doc,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a": "b"}},
                   "data": {"a": "1"}, "x": [3]})
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
        let mut doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}});
        assert_eq!(
            apply(&mut doc, &json!({"data": {"$patch": "bogus", "n": 1.5}}))
                .unwrap_err()
                .to_string(),
            "unknown patch type: bogus in map: map[$patch:bogus n:1.5]"
        );
        let mut d = deployment();
        assert_eq!(
            apply(
                &mut d,
                &json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}})
            ),
            Err(PatchError::MergeListItem)
        );
        assert_eq!(doc["data"], json!({"a": "1"}));
    }
}
