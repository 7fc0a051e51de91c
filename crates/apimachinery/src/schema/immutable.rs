//! Immutable fields of custom resources (KEP "Immutable fields"): the
//! `x-kubernetes-immutable` and `x-kubernetes-immutable-keys` schema extensions.
//!
//! - [`validate_immutability_schema`]: the CRD-time rules for one `openAPIV3Schema`
//!   (only `true`; not at the root or inside `metadata`; `immutable-keys` only on maps
//!   and list-type `map` arrays, never together with `immutable`, and the list-map keys
//!   of such an array must be immutable themselves).
//! - [`ImmutabilityPlan`]: compiled once per CRD version from the structural schema
//!   (`None` when the schema uses neither extension, so such CRDs pay nothing), then
//!   [`ImmutabilityPlan::check`] compares the stored object with the new one on every
//!   update. Both have gone through prune and default, so equality is the KEP's
//!   `StorageRoundtrip` equality: strict deep equality, except that the order of
//!   `x-kubernetes-list-type: set` arrays does not count.
//!
//! What the markers freeze:
//! - `x-kubernetes-immutable` on a node: the value may not change, be removed, or be set
//!   when it was unset. On `items`/`additionalProperties` this applies to every entry
//!   present on both sides (matched by index, map key, or list-map key), so entries may
//!   still be added and removed.
//! - `x-kubernetes-immutable-keys`: the set of map keys (or list-map keys) is fixed, the
//!   values may change. An absent or `null` map has no keys.
//! - Rules apply below a parent only while the parent exists on both sides: removing or
//!   setting a mutable parent takes its immutable children with it (the KEP's example of
//!   immutable `x` and `y` inside a mutable `foo`).
//!
//! Violations are all reported, each as `<path>: Invalid value: <new value>: field is
//! immutable`, and [`rejection`] turns them into the KEP's 400 `BadRequest` `Status`.

use crate::field::{Error, ErrorList, Path};
use crate::number::{compare_numbers, MixedNumbers};
use crate::schema::props::{JSONSchemaProps, SchemaOrBool};
use crate::schema::structural::{AdditionalProperties, Structural};
use crate::status::Status;
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The extension freezing a whole subtree.
pub const IMMUTABLE: &str = "x-kubernetes-immutable";
/// The extension freezing the keys of a map or list-type `map` array.
pub const IMMUTABLE_KEYS: &str = "x-kubernetes-immutable-keys";
/// The detail of every violation (kube's text for immutable fields).
pub const FIELD_IS_IMMUTABLE: &str = "field is immutable";

// ---------------------------------------------------------------------------------------
// CRD-time validation
// ---------------------------------------------------------------------------------------

/// Where a schema node sits, for the placement rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Root,
    /// The root's `metadata` or anything below it.
    Metadata,
    Other,
}

/// The CRD-time rules for both extensions in one `openAPIV3Schema` at `fld` (e.g.
/// `spec.validation.openAPIV3Schema`). Schemas inside `allOf`/`anyOf`/`oneOf`/`not` are
/// left to the structural checks, which forbid the extensions there.
pub fn validate_immutability_schema(schema: &JSONSchemaProps, fld: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    validate_node(schema, fld, Place::Root, false, &mut errs);
    errs
}

/// `Some(true)` counts as set; any other value is reported (only `true` is valid).
fn marker(value: Option<&Value>, fld: &Path, errs: &mut ErrorList) -> bool {
    match value {
        None => false,
        Some(Value::Bool(true)) => true,
        Some(other) => {
            errs.push(Error::invalid(
                fld,
                other.clone(),
                "must be true or undefined",
            ));
            false
        }
    }
}

fn validate_node(
    s: &JSONSchemaProps,
    fld: &Path,
    place: Place,
    frozen_above: bool,
    errs: &mut ErrorList,
) {
    let immutable_path = fld.child(IMMUTABLE);
    let keys_path = fld.child(IMMUTABLE_KEYS);
    let immutable = marker(s.x_immutable.as_ref(), &immutable_path, errs);
    let keys = marker(s.x_immutable_keys.as_ref(), &keys_path, errs);
    let misplaced = match place {
        Place::Root => Some("must not be used at the root"),
        Place::Metadata => Some("must not be used inside metadata"),
        Place::Other => None,
    };
    if let Some(why) = misplaced {
        for (set, path) in [(immutable, &immutable_path), (keys, &keys_path)] {
            if set {
                errs.push(Error::forbidden(path, why));
            }
        }
    } else if keys {
        validate_keys_marker(s, fld, immutable, frozen_above, errs);
    }

    let frozen = frozen_above || immutable;
    let inner = if place == Place::Other {
        Place::Other
    } else {
        Place::Metadata
    };
    for (k, p) in s.properties.iter().flatten() {
        let child = match place {
            Place::Root if k == "metadata" => Place::Metadata,
            Place::Root => Place::Other,
            other => other,
        };
        validate_node(p, &fld.child("properties").key(k), child, frozen, errs);
    }
    if let Some(items) = s.items_schema() {
        validate_node(items, &fld.child("items"), inner, frozen, errs);
    }
    if let Some(values) = s.additional_properties_schema() {
        validate_node(
            values,
            &fld.child("additionalProperties"),
            inner,
            frozen,
            errs,
        );
    }
}

/// `x-kubernetes-immutable-keys: true` outside the root and metadata.
fn validate_keys_marker(
    s: &JSONSchemaProps,
    fld: &Path,
    immutable: bool,
    frozen_above: bool,
    errs: &mut ErrorList,
) {
    let keys_path = fld.child(IMMUTABLE_KEYS);
    if immutable {
        errs.push(Error::forbidden(
            &keys_path,
            format!("must not be used if {IMMUTABLE} is true"),
        ));
        return;
    }
    let is_array = s.type_.as_deref() == Some("array");
    let is_map = matches!(
        s.additional_properties,
        Some(SchemaOrBool::Schema(_)) | Some(SchemaOrBool::Bool(true))
    );
    let misuse = if is_array {
        match s.x_list_type.as_deref() {
            Some("map") => None,
            Some("set") => Some(format!(
                "must not be used if x-kubernetes-list-type is set: its items are its keys, use {IMMUTABLE}"
            )),
            _ => Some("must not be used if x-kubernetes-list-type is atomic".to_string()),
        }
    } else if is_map {
        (s.x_map_type.as_deref() == Some("atomic"))
            .then(|| "must not be used if x-kubernetes-map-type is atomic".to_string())
    } else {
        Some(
            "must only be used on maps (additionalProperties) or if x-kubernetes-list-type is map"
                .to_string(),
        )
    };
    if let Some(why) = misuse {
        errs.push(Error::forbidden(&keys_path, why));
        return;
    }
    if !is_array || frozen_above {
        return;
    }
    // The keys identify the entries: they must not change inside an entry either.
    let Some(items) = s.items_schema() else {
        return;
    };
    if items.x_immutable == Some(Value::Bool(true)) {
        return;
    }
    for key in s.x_list_map_keys.iter().flatten() {
        let key_schema = items.properties.as_ref().and_then(|p| p.get(key));
        if !key_schema.is_some_and(|k| k.x_immutable == Some(Value::Bool(true))) {
            errs.push(Error::required(
                &fld.child("items")
                    .child("properties")
                    .key(key)
                    .child(IMMUTABLE),
                format!(
                    "must be true for the x-kubernetes-list-map-keys of a list with {IMMUTABLE_KEYS}"
                ),
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------
// The compiled plan
// ---------------------------------------------------------------------------------------

/// The immutability rules of one CRD version, reduced to the paths that lead to a marker.
#[derive(Clone, Debug, PartialEq)]
pub struct ImmutabilityPlan {
    root: Node,
}

/// One schema node on a path to a marker.
#[derive(Clone, Debug, PartialEq)]
enum Node {
    /// `x-kubernetes-immutable`: the whole value, compared with `Equality`.
    Frozen(Option<Equality>),
    /// An object: rules for named fields and for map entries.
    Object {
        properties: Vec<(String, Node)>,
        fixed_keys: bool,
        values: Option<Box<Node>>,
    },
    /// An array: how entries are matched, whether its keys are fixed, rules for entries.
    Array {
        matching: Matching,
        fixed_keys: bool,
        items: Option<Box<Node>>,
    },
}

/// How entries of an old and a new array are paired.
#[derive(Clone, Debug, PartialEq)]
enum Matching {
    /// By position (`atomic` or no list type).
    Index,
    /// By the values of `x-kubernetes-list-map-keys`.
    Key(Vec<String>),
}

/// Below a frozen node: where `set` arrays sit, whose order does not count.
/// `None` in its place means plain deep equality.
#[derive(Clone, Debug, Default, PartialEq)]
struct Equality {
    set: bool,
    properties: BTreeMap<String, Equality>,
    entries: Option<Box<Equality>>,
}

impl ImmutabilityPlan {
    /// Compile the rules of a structural schema; `None` when no node is marked. The root
    /// and the root's `metadata` are skipped (CRD validation forbids markers there).
    pub fn compile(s: &Structural) -> Option<ImmutabilityPlan> {
        let properties: Vec<(String, Node)> = s
            .properties
            .iter()
            .filter(|(k, _)| k.as_str() != "metadata")
            .filter_map(|(k, v)| compile_node(v).map(|n| (k.clone(), n)))
            .collect();
        if properties.is_empty() {
            return None;
        }
        Some(ImmutabilityPlan {
            root: Node::Object {
                properties,
                fixed_keys: false,
                values: None,
            },
        })
    }

    /// Every immutability violation of updating `old` (as stored) to `new`.
    pub fn check(&self, old: &Value, new: &Value) -> ErrorList {
        let mut errs = ErrorList::new();
        check_node(&self.root, Some(old), Some(new), &Trail::Root, &mut errs);
        errs
    }
}

fn compile_node(s: &Structural) -> Option<Node> {
    if s.x_immutable {
        return Some(Node::Frozen(equality_of(s)));
    }
    if s.type_ == "array" {
        let (matching, keyed) = match s.x_list_type.as_deref() {
            Some("map") => (Matching::Key(s.x_list_map_keys.clone()), true),
            // Set items are their own keys: an item on both sides is equal by definition.
            Some("set") => return None,
            _ => (Matching::Index, false),
        };
        let items = s.items.as_deref().and_then(compile_node).map(Box::new);
        let fixed_keys = s.x_immutable_keys && keyed;
        if items.is_none() && !fixed_keys {
            return None;
        }
        return Some(Node::Array {
            matching,
            fixed_keys,
            items,
        });
    }
    let properties: Vec<(String, Node)> = s
        .properties
        .iter()
        .filter_map(|(k, v)| compile_node(v).map(|n| (k.clone(), n)))
        .collect();
    let values = s
        .additional_properties
        .as_ref()
        .and_then(AdditionalProperties::schema)
        .and_then(compile_node)
        .map(Box::new);
    let is_map = matches!(
        s.additional_properties,
        Some(AdditionalProperties::Schema(_)) | Some(AdditionalProperties::Bool(true))
    );
    let fixed_keys = s.x_immutable_keys && is_map;
    if properties.is_empty() && values.is_none() && !fixed_keys {
        return None;
    }
    Some(Node::Object {
        properties,
        fixed_keys,
        values,
    })
}

fn equality_of(s: &Structural) -> Option<Equality> {
    let set = s.x_list_type.as_deref() == Some("set");
    let properties: BTreeMap<String, Equality> = s
        .properties
        .iter()
        .filter_map(|(k, v)| equality_of(v).map(|e| (k.clone(), e)))
        .collect();
    let entries = s
        .items
        .as_deref()
        .or_else(|| {
            s.additional_properties
                .as_ref()
                .and_then(AdditionalProperties::schema)
        })
        .and_then(equality_of)
        .map(Box::new);
    if !set && properties.is_empty() && entries.is_none() {
        return None;
    }
    Some(Equality {
        set,
        properties,
        entries,
    })
}

/// A field path built only when a violation is reported: the check visits many nodes
/// and finds nothing on almost every update.
#[derive(Clone, Copy)]
enum Trail<'a> {
    Root,
    Field(&'a Trail<'a>, &'a str),
    Key(&'a Trail<'a>, &'a str),
    Index(&'a Trail<'a>, usize),
}

impl Trail<'_> {
    fn path(&self) -> Path {
        match self {
            Trail::Root => Path::root(),
            Trail::Field(parent, name) => parent.path().child(name),
            Trail::Key(parent, key) => parent.path().key(key),
            Trail::Index(parent, i) => parent.path().index(*i),
        }
    }
}

fn violation(trail: &Trail<'_>, new: Option<&Value>) -> Error {
    Error::invalid(
        &trail.path(),
        new.cloned().unwrap_or(Value::Null),
        FIELD_IS_IMMUTABLE,
    )
}

fn check_node(
    node: &Node,
    old: Option<&Value>,
    new: Option<&Value>,
    trail: &Trail<'_>,
    errs: &mut ErrorList,
) {
    match node {
        Node::Frozen(eq) => match (old, new) {
            (None, None) => {}
            (Some(o), Some(n)) if equal(o, n, eq.as_ref()) => {}
            _ => errs.push(violation(trail, new)),
        },
        Node::Object {
            properties,
            fixed_keys,
            values,
        } => {
            if *fixed_keys {
                check_map_keys(old, new, trail, errs);
            }
            let (Some(Value::Object(o)), Some(Value::Object(n))) = (old, new) else {
                return;
            };
            for (name, child) in properties {
                let t = Trail::Field(trail, name);
                check_node(child, o.get(name), n.get(name), &t, errs);
            }
            if let Some(values) = values {
                for (k, nv) in n {
                    if let Some(ov) = o.get(k) {
                        check_node(values, Some(ov), Some(nv), &Trail::Key(trail, k), errs);
                    }
                }
            }
        }
        Node::Array {
            matching: Matching::Index,
            items,
            ..
        } => {
            let (Some(Value::Array(o)), Some(Value::Array(n)), Some(items)) = (old, new, items)
            else {
                return;
            };
            for (i, (ov, nv)) in o.iter().zip(n).enumerate() {
                check_node(items, Some(ov), Some(nv), &Trail::Index(trail, i), errs);
            }
        }
        Node::Array {
            matching: Matching::Key(keys),
            fixed_keys,
            items,
        } => check_list_map(keys, *fixed_keys, items.as_deref(), old, new, trail, errs),
    }
}

/// The entries of a map as seen by `immutable-keys`: absent or `null` has none; a
/// non-object is left to schema validation (`None`).
fn map_of(v: Option<&Value>) -> Option<Option<&Map<String, Value>>> {
    match v {
        None | Some(Value::Null) => Some(None),
        Some(Value::Object(m)) => Some(Some(m)),
        Some(_) => None,
    }
}

fn check_map_keys(
    old: Option<&Value>,
    new: Option<&Value>,
    trail: &Trail<'_>,
    errs: &mut ErrorList,
) {
    let (Some(o), Some(n)) = (map_of(old), map_of(new)) else {
        return;
    };
    let has = |m: Option<&Map<String, Value>>, k: &str| m.is_some_and(|m| m.contains_key(k));
    let mut changed: Vec<(&String, Option<&Value>)> = Vec::new();
    for (k, v) in n.into_iter().flatten() {
        if !has(o, k) {
            changed.push((k, Some(v)));
        }
    }
    for k in o.into_iter().flat_map(Map::keys) {
        if !has(n, k) {
            changed.push((k, None));
        }
    }
    changed.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in changed {
        errs.push(violation(&Trail::Key(trail, k), v));
    }
}

/// The entries of a list-map as seen by `immutable-keys`: absent or `null` has none; a
/// non-array is left to schema validation (`None`).
fn list_of(v: Option<&Value>) -> Option<&[Value]> {
    match v {
        None | Some(Value::Null) => Some(&[]),
        Some(Value::Array(a)) => Some(a),
        Some(_) => None,
    }
}

/// The key of a list-map entry (one field in the common case, without allocating).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
enum EntryKey<'a> {
    One(Option<Ordered<'a>>),
    Many(Vec<Option<Ordered<'a>>>),
}

impl<'a> EntryKey<'a> {
    /// `None` for non-objects (schema validation rejects them).
    fn of(item: &'a Value, keys: &[String]) -> Option<EntryKey<'a>> {
        let m = item.as_object()?;
        Some(match keys {
            [one] => EntryKey::One(m.get(one).map(Ordered)),
            _ => EntryKey::Many(keys.iter().map(|k| m.get(k).map(Ordered)).collect()),
        })
    }

    /// The key fields as an object, to name a removed entry.
    fn to_object(&self, keys: &[String]) -> Value {
        let values: Vec<Option<Ordered<'_>>> = match self {
            EntryKey::One(v) => vec![*v],
            EntryKey::Many(vs) => vs.clone(),
        };
        Value::Object(
            keys.iter()
                .zip(values)
                .filter_map(|(name, v)| v.map(|v| (name.clone(), v.0.clone())))
                .collect(),
        )
    }
}

/// A list-type `map` array: entries paired by key; with `fixed_keys`, keys may neither
/// come nor go.
fn check_list_map(
    keys: &[String],
    fixed_keys: bool,
    items: Option<&Node>,
    old: Option<&Value>,
    new: Option<&Value>,
    trail: &Trail<'_>,
    errs: &mut ErrorList,
) {
    let (o, n) = if fixed_keys {
        match (list_of(old), list_of(new)) {
            (Some(o), Some(n)) => (o, n),
            _ => return,
        }
    } else {
        match (old, new, items) {
            (Some(Value::Array(o)), Some(Value::Array(n)), Some(_)) => (&o[..], &n[..]),
            _ => return,
        }
    };
    // Old entries by key, the first of duplicates (schema validation reports those),
    // with whether a new entry has the same key.
    let mut by_key: BTreeMap<EntryKey<'_>, (&Value, bool)> = BTreeMap::new();
    for ov in o {
        if let Some(k) = EntryKey::of(ov, keys) {
            by_key.entry(k).or_insert((ov, false));
        }
    }
    for (i, nv) in n.iter().enumerate() {
        let Some(k) = EntryKey::of(nv, keys) else {
            continue;
        };
        match by_key.get_mut(&k) {
            Some((ov, seen)) => {
                *seen = true;
                if let Some(items) = items {
                    check_node(items, Some(*ov), Some(nv), &Trail::Index(trail, i), errs);
                }
            }
            None if fixed_keys => errs.push(violation(&Trail::Index(trail, i), Some(nv))),
            None => {}
        }
    }
    if fixed_keys {
        // A removed entry has no place in the new list: name the list and the lost key.
        for (k, _) in by_key.iter().filter(|(_, (_, seen))| !seen) {
            errs.push(violation(trail, Some(&k.to_object(keys))));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Equality modulo the order of sets
// ---------------------------------------------------------------------------------------

/// Deep equality where arrays marked `set` in `eq` compare as multisets.
fn equal(a: &Value, b: &Value, eq: Option<&Equality>) -> bool {
    let Some(eq) = eq else {
        return a == b;
    };
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                return false;
            }
            if eq.set {
                let mut xs: Vec<Ordered<'_>> = x.iter().map(Ordered).collect();
                let mut ys: Vec<Ordered<'_>> = y.iter().map(Ordered).collect();
                xs.sort();
                ys.sort();
                return xs.iter().zip(&ys).all(|(p, q)| p.0 == q.0);
            }
            let inner = eq.entries.as_deref();
            x.iter().zip(y).all(|(p, q)| equal(p, q, inner))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, xv)| {
                    let inner = eq.properties.get(k).or(eq.entries.as_deref());
                    y.get(k).is_some_and(|yv| equal(xv, yv, inner))
                })
        }
        _ => a == b,
    }
}

/// A JSON value under a total order that agrees with `==` (for sorting sets and keying
/// list-map entries): null < booleans < numbers < strings < arrays < objects.
#[derive(Clone, Copy, Debug)]
struct Ordered<'a>(&'a Value);

impl PartialEq for Ordered<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ordered<'_> {}

impl PartialOrd for Ordered<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ordered<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(self.0, other.0)
    }
}

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y, MixedNumbers::IntegerFirst),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Sorted keys: the order of a map's iteration is not part of its value.
            let mut xs: Vec<(&String, &Value)> = x.iter().collect();
            let mut ys: Vec<(&String, &Value)> = y.iter().collect();
            xs.sort_by(|p, q| p.0.cmp(q.0));
            ys.sort_by(|p, q| p.0.cmp(q.0));
            for ((xk, xv), (yk, yv)) in xs.iter().zip(&ys) {
                let c = xk.cmp(yk).then_with(|| compare_values(xv, yv));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => rank(a).cmp(&rank(b)),
    }
}

// ---------------------------------------------------------------------------------------
// The rejection
// ---------------------------------------------------------------------------------------

/// The KEP's 400 `BadRequest` for immutability violations: the message and causes of a
/// 422 `Invalid` (`<Kind>.<group> "<name>" is invalid: ...`), one cause per violation.
pub fn rejection(kind: &str, group: &str, name: &str, errs: &[Error]) -> Status {
    let invalid = Status::invalid(kind, group, name, errs);
    Status::bad_request_with_causes(
        invalid.message,
        invalid.details.map(|d| *d).unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("test schema parses")
    }

    /// The plan of a root object whose `properties` are given.
    fn plan(properties: Value) -> ImmutabilityPlan {
        let s = props(json!({"type": "object", "properties": properties}));
        ImmutabilityPlan::compile(&Structural::from_props(&s)).expect("schema marks something")
    }

    fn violations(plan: &ImmutabilityPlan, old: Value, new: Value) -> Vec<String> {
        plan.check(&old, &new)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// CRD-time errors of a root schema with these `properties`.
    fn schema_errors(properties: Value) -> Vec<String> {
        let s = props(json!({"type": "object", "properties": properties}));
        validate_immutability_schema(&s, &Path::new("spec.validation.openAPIV3Schema"))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const ROOT: &str = "spec.validation.openAPIV3Schema";

    #[test]
    fn immutable_kep_example_1_items_are_immutable_not_the_array() {
        let p = plan(json!({"foo": {
            "type": "array",
            "items": {"x-kubernetes-immutable": true, "type": "string"}
        }}));
        let old = json!({"foo": ["a", "b"]});
        // Items may be added and deleted ...
        assert!(violations(&p, old.clone(), json!({"foo": ["a", "b", "c"]})).is_empty());
        assert!(violations(&p, old.clone(), json!({"foo": ["a"]})).is_empty());
        assert!(violations(&p, old.clone(), json!({})).is_empty());
        assert!(violations(&p, json!({}), old.clone()).is_empty());
        // ... but the value at an existing index is immutable.
        assert_eq!(
            violations(&p, old, json!({"foo": ["a", "x", "c"]})),
            vec!["foo[1]: Invalid value: \"x\": field is immutable"]
        );
    }

    #[test]
    fn immutable_kep_example_2_whole_object_cannot_be_removed_or_set() {
        let p = plan(json!({"foo": {"type": "object", "x-kubernetes-immutable": true}}));
        assert!(violations(&p, json!({"foo": {}}), json!({"foo": {}})).is_empty());
        assert!(violations(&p, json!({}), json!({})).is_empty());
        assert_eq!(
            violations(&p, json!({"foo": {}}), json!({})),
            vec!["foo: Invalid value: null: field is immutable"]
        );
        assert_eq!(
            violations(&p, json!({}), json!({"foo": {}})),
            vec!["foo: Invalid value: {}: field is immutable"]
        );
    }

    #[test]
    fn immutable_kep_example_3_immutable_fields_of_a_mutable_object() {
        let p = plan(json!({"foo": {"type": "object", "properties": {
            "x": {"type": "string", "x-kubernetes-immutable": true},
            "y": {"type": "string", "x-kubernetes-immutable": true}
        }}}));
        let old = json!({"foo": {"x": "a", "y": "b"}});
        // The object may be deleted, and set when it was unset.
        assert!(violations(&p, old.clone(), json!({})).is_empty());
        assert!(violations(&p, json!({}), old.clone()).is_empty());
        assert_eq!(
            violations(&p, old.clone(), json!({"foo": {"x": "c", "y": "b"}})),
            vec!["foo.x: Invalid value: \"c\": field is immutable"]
        );
        assert_eq!(
            violations(&p, old, json!({"foo": {"x": "a"}})),
            vec!["foo.y: Invalid value: null: field is immutable"]
        );
        assert_eq!(
            violations(
                &p,
                json!({"foo": {"x": "a"}}),
                json!({"foo": {"x": "a", "y": "b"}})
            ),
            vec!["foo.y: Invalid value: \"b\": field is immutable"]
        );
    }

    #[test]
    fn immutable_kep_example_4_nested_marker_is_implied() {
        let explicit = plan(json!({"foo": {
            "type": "object", "x-kubernetes-immutable": true,
            "properties": {"bar": {"type": "object", "x-kubernetes-immutable": true}}
        }}));
        let simplified = plan(json!({"foo": {
            "type": "object", "x-kubernetes-immutable": true,
            "properties": {"bar": {"type": "object"}}
        }}));
        assert_eq!(explicit, simplified);
        assert_eq!(
            violations(&simplified, json!({"foo": {"bar": {}}}), json!({"foo": {}})),
            vec!["foo: Invalid value: {}: field is immutable"]
        );
    }

    #[test]
    fn immutable_kep_example_5_forbidden_at_the_root_and_inside_metadata() {
        let root = props(json!({"type": "object", "x-kubernetes-immutable": true}));
        assert_eq!(
            validate_immutability_schema(&root, &Path::new(ROOT))
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec![format!(
                "{ROOT}.x-kubernetes-immutable: Forbidden: must not be used at the root"
            )]
        );
        assert_eq!(
            schema_errors(json!({"metadata": {
                "type": "object",
                "x-kubernetes-immutable": true,
                "properties": {"name": {"type": "string", "x-kubernetes-immutable": true}}
            }})),
            vec![
                format!("{ROOT}.properties[metadata].x-kubernetes-immutable: Forbidden: must not be used inside metadata"),
                format!("{ROOT}.properties[metadata].properties[name].x-kubernetes-immutable: Forbidden: must not be used inside metadata"),
            ]
        );
        // kind and apiVersion are immutable anyway; marking them is allowed.
        assert!(
            schema_errors(json!({"kind": {"type": "string", "x-kubernetes-immutable": true}}))
                .is_empty()
        );
    }

    #[test]
    fn immutable_kep_example_6_map_with_immutable_keys() {
        let some_map = json!({
            "type": "object",
            "x-kubernetes-immutable-keys": true,
            "additionalProperties": {"type": "string"}
        });
        assert!(schema_errors(json!({"someMap": some_map.clone()})).is_empty());
        let p = plan(json!({"someMap": some_map}));
        let old = json!({"someMap": {"a": "1", "b": "2"}});
        assert!(violations(&p, old.clone(), json!({"someMap": {"a": "9", "b": "8"}})).is_empty());
        assert_eq!(
            violations(&p, old.clone(), json!({"someMap": {"a": "1", "c": "3"}})),
            vec![
                "someMap[b]: Invalid value: null: field is immutable",
                "someMap[c]: Invalid value: \"3\": field is immutable",
            ]
        );
        assert_eq!(
            violations(&p, old, json!({})),
            vec![
                "someMap[a]: Invalid value: null: field is immutable",
                "someMap[b]: Invalid value: null: field is immutable",
            ]
        );
        // An absent map has no keys, like an empty one.
        assert!(violations(&p, json!({}), json!({"someMap": {}})).is_empty());
    }

    #[test]
    fn immutable_kep_example_6_immutable_keys_and_immutable_are_mutually_exclusive() {
        assert_eq!(
            schema_errors(json!({"someMap": {
                "type": "object",
                "x-kubernetes-immutable": true,
                "x-kubernetes-immutable-keys": true,
                "additionalProperties": {"type": "string"}
            }})),
            vec![format!("{ROOT}.properties[someMap].x-kubernetes-immutable-keys: Forbidden: must not be used if x-kubernetes-immutable is true")]
        );
    }

    fn list_map(keys_fixed: bool, name_immutable: bool, items_immutable: bool) -> Value {
        let mut name = json!({"type": "string"});
        if name_immutable {
            name["x-kubernetes-immutable"] = json!(true);
        }
        let mut items = json!({"type": "object", "properties": {
            "name": name, "x": {"type": "string"}, "y": {"type": "integer"}
        }});
        if items_immutable {
            items["x-kubernetes-immutable"] = json!(true);
        }
        let mut array = json!({
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": items
        });
        if keys_fixed {
            array["x-kubernetes-immutable-keys"] = json!(true);
        }
        array
    }

    #[test]
    fn immutable_kep_example_7_list_map_with_immutable_keys() {
        assert!(schema_errors(json!({"someArray": list_map(true, true, false)})).is_empty());
        let p = plan(json!({"someArray": list_map(true, true, false)}));
        let old = json!({"someArray": [{"name": "a", "x": "1"}, {"name": "b"}]});
        // Values change, entries are matched by key (order is free) ...
        assert!(violations(
            &p,
            old.clone(),
            json!({"someArray": [{"name": "b", "y": 2}, {"name": "a", "x": "2"}]})
        )
        .is_empty());
        // ... but the keys are fixed.
        assert_eq!(
            violations(
                &p,
                old.clone(),
                json!({"someArray": [{"name": "a", "x": "1"}, {"name": "c"}]})
            ),
            vec![
                "someArray[1]: Invalid value: {\"name\":\"c\"}: field is immutable",
                "someArray: Invalid value: {\"name\":\"b\"}: field is immutable",
            ]
        );
    }

    #[test]
    fn immutable_kep_example_7_list_map_keys_must_be_immutable() {
        assert_eq!(
            schema_errors(json!({"someArray": list_map(true, false, false)})),
            vec![format!("{ROOT}.properties[someArray].items.properties[name].x-kubernetes-immutable: Required value: must be true for the x-kubernetes-list-map-keys of a list with x-kubernetes-immutable-keys")]
        );
        // Immutable items cover their keys.
        assert!(schema_errors(json!({"someArray": list_map(true, false, true)})).is_empty());
    }

    #[test]
    fn immutable_kep_example_8_map_values_immutable_keys_may_come_and_go() {
        let p = plan(json!({"someMap": {
            "type": "object",
            "additionalProperties": {"type": "string", "x-kubernetes-immutable": true}
        }}));
        let old = json!({"someMap": {"a": "1", "b": "2"}});
        assert!(violations(&p, old.clone(), json!({"someMap": {"a": "1", "c": "3"}})).is_empty());
        assert_eq!(
            violations(&p, old, json!({"someMap": {"a": "9", "b": "8"}})),
            vec![
                "someMap[a]: Invalid value: \"9\": field is immutable",
                "someMap[b]: Invalid value: \"8\": field is immutable",
            ]
        );
    }

    #[test]
    fn immutable_kep_example_9_list_map_items_immutable_by_key() {
        assert!(schema_errors(json!({"someArray": list_map(false, false, true)})).is_empty());
        let p = plan(json!({"someArray": list_map(false, false, true)}));
        let old = json!({"someArray": [{"name": "a", "x": "1"}, {"name": "b"}]});
        // Reordered, one removed, one added: fine.
        assert!(violations(
            &p,
            old.clone(),
            json!({"someArray": [{"name": "c", "x": "5"}, {"name": "a", "x": "1"}]})
        )
        .is_empty());
        assert_eq!(
            violations(
                &p,
                old,
                json!({"someArray": [{"name": "b"}, {"name": "a", "x": "2"}]})
            ),
            vec!["someArray[1]: Invalid value: {\"name\":\"a\",\"x\":\"2\"}: field is immutable"]
        );
    }

    #[test]
    fn immutable_kep_example_10_immutable_set_ignores_order() {
        let p = plan(json!({"someSet": {
            "type": "array",
            "x-kubernetes-list-type": "set",
            "x-kubernetes-immutable": true,
            "items": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "integer"}}}
        }}));
        let old = json!({"someSet": [{"x": "abc"}, {"x": "def", "y": 1}]});
        assert!(violations(
            &p,
            old.clone(),
            json!({"someSet": [{"x": "def", "y": 1}, {"x": "abc"}]})
        )
        .is_empty());
        assert_eq!(
            violations(&p, old, json!({"someSet": [{"x": "def", "y": 2}, {"x": "abc"}]})),
            vec!["someSet: Invalid value: [{\"x\":\"def\",\"y\":2},{\"x\":\"abc\"}]: field is immutable"]
        );
    }

    #[test]
    fn sets_nested_in_an_immutable_object_ignore_order_other_lists_do_not() {
        let p = plan(
            json!({"foo": {"type": "object", "x-kubernetes-immutable": true, "properties": {
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "byLabel": {"type": "object", "additionalProperties": {
                    "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}
                }},
                "ordered": {"type": "array", "items": {"type": "string"}}
            }}}),
        );
        let old =
            json!({"foo": {"tags": ["a", "b"], "byLabel": {"k": [1, 2]}, "ordered": ["a", "b"]}});
        assert!(violations(
            &p,
            old.clone(),
            json!({"foo": {"ordered": ["a", "b"], "byLabel": {"k": [2, 1]}, "tags": ["b", "a"]}})
        )
        .is_empty());
        assert_eq!(
            violations(&p, old.clone(), json!({"foo": {"tags": ["a", "b"], "byLabel": {"k": [1, 2]}, "ordered": ["b", "a"]}})).len(),
            1
        );
        // A set is a multiset of exact values: 1 and 1.0 differ, as stored.
        assert_eq!(
            violations(&p, old, json!({"foo": {"tags": ["a", "b"], "byLabel": {"k": [1.0, 2]}, "ordered": ["a", "b"]}})).len(),
            1
        );
    }

    #[test]
    fn immutable_keys_forbidden_on_sets_atomic_lists_and_plain_objects() {
        let errs = schema_errors(json!({
            "s": {"type": "array", "x-kubernetes-list-type": "set", "x-kubernetes-immutable-keys": true, "items": {"type": "string"}},
            "a": {"type": "array", "x-kubernetes-list-type": "atomic", "x-kubernetes-immutable-keys": true, "items": {"type": "string"}},
            "l": {"type": "array", "x-kubernetes-immutable-keys": true, "items": {"type": "string"}},
            "o": {"type": "object", "x-kubernetes-immutable-keys": true, "properties": {"p": {"type": "string"}}},
            "m": {"type": "object", "x-kubernetes-map-type": "atomic", "x-kubernetes-immutable-keys": true, "additionalProperties": {"type": "string"}},
            "str": {"type": "string", "x-kubernetes-immutable-keys": true}
        }));
        let p =
            |f: &str| format!("{ROOT}.properties[{f}].x-kubernetes-immutable-keys: Forbidden: ");
        assert_eq!(
            errs,
            vec![
                format!("{}must not be used if x-kubernetes-list-type is atomic", p("a")),
                format!("{}must not be used if x-kubernetes-list-type is atomic", p("l")),
                format!("{}must not be used if x-kubernetes-map-type is atomic", p("m")),
                format!("{}must only be used on maps (additionalProperties) or if x-kubernetes-list-type is map", p("o")),
                format!("{}must not be used if x-kubernetes-list-type is set: its items are its keys, use x-kubernetes-immutable", p("s")),
                format!("{}must only be used on maps (additionalProperties) or if x-kubernetes-list-type is map", p("str")),
            ]
        );
    }

    #[test]
    fn only_true_is_a_valid_value() {
        assert_eq!(
            schema_errors(json!({
                "a": {"type": "string", "x-kubernetes-immutable": false},
                "b": {"type": "object", "x-kubernetes-immutable-keys": "yes", "additionalProperties": {"type": "string"}}
            })),
            vec![
                format!("{ROOT}.properties[a].x-kubernetes-immutable: Invalid value: false: must be true or undefined"),
                format!("{ROOT}.properties[b].x-kubernetes-immutable-keys: Invalid value: \"yes\": must be true or undefined"),
            ]
        );
        // `false` marks nothing.
        let s = props(
            json!({"type": "object", "properties": {"a": {"type": "string", "x-kubernetes-immutable": false}}}),
        );
        assert_eq!(ImmutabilityPlan::compile(&Structural::from_props(&s)), None);
    }

    #[test]
    fn schemas_without_markers_compile_to_no_plan() {
        let s = props(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}}}),
        );
        assert_eq!(ImmutabilityPlan::compile(&Structural::from_props(&s)), None);
    }

    #[test]
    fn all_violations_are_reported() {
        let p = plan(json!({"spec": {"type": "object", "properties": {
            "a": {"type": "string", "x-kubernetes-immutable": true},
            "b": {"type": "integer", "x-kubernetes-immutable": true},
            "m": {"type": "object", "x-kubernetes-immutable-keys": true, "additionalProperties": {"type": "string"}},
            "l": {"type": "array", "items": {"type": "string", "x-kubernetes-immutable": true}}
        }}}));
        let old = json!({"spec": {"a": "x", "b": 1, "m": {"k": "v"}, "l": ["p", "q"]}});
        let new = json!({"spec": {"a": "y", "m": {"k2": "v"}, "l": ["p", "r", "s"]}});
        assert_eq!(
            violations(&p, old, new),
            vec![
                "spec.a: Invalid value: \"y\": field is immutable",
                "spec.b: Invalid value: null: field is immutable",
                "spec.l[1]: Invalid value: \"r\": field is immutable",
                "spec.m[k]: Invalid value: null: field is immutable",
                "spec.m[k2]: Invalid value: \"v\": field is immutable",
            ]
        );
    }

    #[test]
    fn wrong_types_are_left_to_schema_validation() {
        let p = plan(json!({
            "m": {"type": "object", "x-kubernetes-immutable-keys": true, "additionalProperties": {"type": "string"}},
            "l": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "x-kubernetes-immutable-keys": true,
                  "items": {"type": "object", "properties": {"name": {"type": "string", "x-kubernetes-immutable": true}}}}
        }));
        let old = json!({"m": {"k": "v"}, "l": [{"name": "a"}]});
        assert!(violations(&p, old.clone(), json!({"m": "oops", "l": 7})).is_empty());
        assert!(violations(
            &p,
            old,
            json!({"m": {"k": "v"}, "l": [{"name": "a"}, "oops"]})
        )
        .is_empty());
    }

    #[test]
    fn rejection_is_a_400_bad_request_naming_every_field() {
        let errs = vec![
            Error::invalid(
                &Path::new("spec").child("whole"),
                json!({"a": "2"}),
                FIELD_IS_IMMUTABLE,
            ),
            Error::invalid(
                &Path::new("spec").child("x"),
                Value::Null,
                FIELD_IS_IMMUTABLE,
            ),
        ];
        let st = rejection("Lock", "immutable.example.com", "l1", &errs);
        assert_eq!(st.code, 400);
        assert_eq!(
            st.to_json(),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Lock.immutable.example.com \"l1\" is invalid: [spec.whole: Invalid value: {\"a\":\"2\"}: field is immutable, spec.x: Invalid value: null: field is immutable]",
                "reason": "BadRequest",
                "details": {"name": "l1", "group": "immutable.example.com", "kind": "Lock", "causes": [
                    {"reason": "FieldValueInvalid", "message": "Invalid value: {\"a\":\"2\"}: field is immutable", "field": "spec.whole"},
                    {"reason": "FieldValueInvalid", "message": "Invalid value: null: field is immutable", "field": "spec.x"}
                ]},
                "code": 400
            })
        );
    }

    // -----------------------------------------------------------------------------------
    // Whole CRDs: the CRD-time rules under kube's paths, and the pipeline.

    use crate::crd;
    use crate::crd::compiled::CompiledCrd;
    use crate::pipeline::{self, VersionSchema};
    use crate::write::WriteOptions;

    const KUDO_CRD: &str = include_str!("../../../../testdata/crds/kudo-instances.yaml");
    const KEP_CASE: &str =
        include_str!("../../../../testdata/conformance/cases/immutable-kep.yaml");

    fn yaml(text: &str) -> Value {
        serde_norway::from_str(text).expect("test YAML parses")
    }

    fn crd_errors(mut c: Value) -> Vec<String> {
        crd::default_crd(&mut c);
        crd::reset_status_for_create(&mut c);
        crd::validate_crd(&c)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// The CRDs and CRD-creating steps of the conformance case.
    fn kep_case_crds() -> (Value, Vec<Value>) {
        let case = yaml(KEP_CASE);
        let crd = case["crds"][0].clone();
        let rejected = case["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| {
                s["path"] == json!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
            })
            .map(|s| s["body"].clone())
            .collect();
        (crd, rejected)
    }

    #[test]
    fn crd_with_every_kind_of_marker_is_valid() {
        let (crd, _) = kep_case_crds();
        assert_eq!(crd_errors(crd), Vec::<String>::new());
        assert_eq!(crd_errors(yaml(KUDO_CRD)), Vec::<String>::new());
    }

    #[test]
    fn crd_errors_use_kube_schema_paths() {
        let (_, rejected) = kep_case_crds();
        let errs: Vec<Vec<String>> = rejected.into_iter().map(crd_errors).collect();
        assert_eq!(
            errs,
            vec![
                vec!["spec.validation.openAPIV3Schema.x-kubernetes-immutable: Forbidden: must not be used at the root".to_string()],
                vec!["spec.validation.openAPIV3Schema.properties[s].x-kubernetes-immutable-keys: Forbidden: must not be used if x-kubernetes-list-type is set: its items are its keys, use x-kubernetes-immutable".to_string()],
            ]
        );
        // Differing schemas per version are reported per version.
        let (mut crd, _) = kep_case_crds();
        let mut v2 = crd["spec"]["versions"][0].clone();
        v2["name"] = json!("v2");
        v2["storage"] = json!(false);
        v2["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["items"]["items"]
            ["x-kubernetes-immutable"] = json!(false);
        crd["spec"]["versions"]
            .as_array_mut()
            .expect("versions")
            .push(v2);
        assert_eq!(
            crd_errors(crd),
            vec!["spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-immutable: Invalid value: false: must be true or undefined"]
        );
    }

    #[test]
    fn markers_inside_junctors_are_not_structural() {
        let (mut crd, _) = kep_case_crds();
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["allOf"] =
            json!([{"properties": {"whole": {"x-kubernetes-immutable": true}}}]);
        assert_eq!(
            crd_errors(crd),
            vec!["spec.validation.openAPIV3Schema.properties[spec].allOf[0].properties[whole].x-kubernetes-immutable: Forbidden: must be undefined to be structural"]
        );
    }

    fn compiled(crd: &Value) -> CompiledCrd {
        CompiledCrd::compile(crd.clone(), 1).expect("CRD compiles")
    }

    fn kudo_schema(crd: &CompiledCrd) -> &'static VersionSchema {
        Box::leak(Box::new(crd.versions[0].schema()))
    }

    /// Install an instance: what `create` stores, as `read` returns it.
    fn install(s: &VersionSchema, parameters: Value) -> Value {
        let obj = json!({
            "apiVersion": "kudo.example.com/v1beta1", "kind": "Instance",
            "metadata": {"name": "cassandra", "namespace": "default"},
            "spec": {"operatorVersion": {"name": "cassandra-3.11"}, "parameters": parameters}
        });
        let mut stored = pipeline::create(obj, s, &WriteOptions::default())
            .expect("install succeeds")
            .object;
        // The store sets the revision on every read.
        stored["metadata"]["resourceVersion"] = json!("1");
        pipeline::read(&mut stored, s);
        stored
    }

    /// `kudo update -p`: a PUT of the instance with a new parameter file.
    fn update(s: &VersionSchema, old: &Value, parameters: Value) -> Result<Value, Status> {
        let mut new = old.clone();
        new["spec"]["parameters"] = parameters;
        pipeline::update(new, old, s, &WriteOptions::default()).map(|a| a.object)
    }

    fn causes(st: &Status) -> Vec<String> {
        st.details
            .as_ref()
            .map(|d| {
                d.causes
                    .iter()
                    .map(|c| format!("{}: {}", c.field, c.message))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn kudo_immutable_parameters_story() {
        let crd = compiled(&yaml(KUDO_CRD));
        let s = kudo_schema(&crd);
        let stored = install(s, json!({"STORAGE_CLASS": "fast"}));
        // KUDO copies the defaults into the instance at installation.
        assert_eq!(
            stored["spec"]["parameters"],
            json!({"STORAGE_CLASS": "fast", "NUM_TOKENS": "256", "DISK_SIZE": "5Gi", "PERSISTENT_STORAGE": "true", "NODE_COUNT": "3"})
        );
        // The same parameter file as at installation, with a mutable parameter changed.
        let updated = update(
            s,
            &stored,
            json!({"STORAGE_CLASS": "fast", "NODE_COUNT": "5"}),
        )
        .expect("mutable parameters change");
        assert_eq!(updated["spec"]["parameters"]["NODE_COUNT"], json!("5"));
        assert_eq!(updated["spec"]["parameters"]["NUM_TOKENS"], json!("256"));
        // Any immutable parameter that changes rejects the whole update, naming each.
        let err = update(
            s,
            &stored,
            json!({"STORAGE_CLASS": "slow", "NUM_TOKENS": "512", "NODE_COUNT": "5"}),
        )
        .expect_err("immutable parameters are rejected");
        assert_eq!((err.code, err.reason.as_str()), (400, "BadRequest"));
        assert_eq!(
            causes(&err),
            vec![
                "spec.parameters.NUM_TOKENS: Invalid value: \"512\": field is immutable",
                "spec.parameters.STORAGE_CLASS: Invalid value: \"slow\": field is immutable",
            ]
        );
        assert_eq!(
            err.message,
            "Instance.kudo.example.com \"cassandra\" is invalid: [spec.parameters.NUM_TOKENS: Invalid value: \"512\": field is immutable, spec.parameters.STORAGE_CLASS: Invalid value: \"slow\": field is immutable]"
        );
    }

    #[test]
    fn kudo_upgrade_changes_defaults_and_immutability() {
        let v1 = yaml(KUDO_CRD);
        let stored = install(
            kudo_schema(&compiled(&v1)),
            json!({"STORAGE_CLASS": "fast"}),
        );
        let params = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/parameters/properties";
        let mut v2 = v1.clone();
        let p = v2.pointer_mut(params).expect("parameters schema");
        // A newer OperatorVersion: other default, NODE_COUNT made immutable, DISK_SIZE mutable.
        p["NUM_TOKENS"]["default"] = json!("1024");
        p["NODE_COUNT"]["x-kubernetes-immutable"] = json!(true);
        p["DISK_SIZE"]
            .as_object_mut()
            .expect("DISK_SIZE")
            .remove("x-kubernetes-immutable");
        assert_eq!(crd_errors(v2.clone()), Vec::<String>::new());
        let crd2 = compiled(&v2);
        let s = kudo_schema(&crd2);
        // The persisted value stays; a client resending the stored object is fine.
        let same = stored["spec"]["parameters"].clone();
        let updated = update(s, &stored, same.clone()).expect("nothing changed");
        assert_eq!(updated["spec"]["parameters"]["NUM_TOKENS"], json!("256"));
        // A newly mutable parameter may change, a newly immutable one may not.
        let mut changed = same;
        changed["DISK_SIZE"] = json!("10Gi");
        assert!(update(s, &stored, changed.clone()).is_ok());
        changed["NODE_COUNT"] = json!("7");
        let err = update(s, &stored, changed).expect_err("NODE_COUNT is immutable now");
        assert_eq!(
            causes(&err),
            vec!["spec.parameters.NODE_COUNT: Invalid value: \"7\": field is immutable"]
        );
    }

    #[test]
    fn status_writes_are_checked_and_leave_spec_alone() {
        let mut crd = yaml(KUDO_CRD);
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] = json!({
            "type": "object", "properties": {"installedAt": {"type": "string", "x-kubernetes-immutable": true}}
        });
        let crd = compiled(&crd);
        let s = kudo_schema(&crd);
        let mut stored = install(s, json!({"STORAGE_CLASS": "fast"}));
        stored["status"] = json!({"installedAt": "t0"});
        let opts = WriteOptions {
            subresource: "status".into(),
            ..Default::default()
        };
        // A status write ignores spec changes, so the immutable spec is not in the way ...
        let mut new = stored.clone();
        new["spec"]["parameters"]["NUM_TOKENS"] = json!("1");
        assert!(pipeline::update(new.clone(), &stored, s, &opts).is_ok());
        // ... but immutable status fields are checked.
        new["status"]["installedAt"] = json!("t1");
        let err = pipeline::update(new, &stored, s, &opts).expect_err("status is immutable");
        assert_eq!(
            causes(&err),
            vec!["status.installedAt: Invalid value: \"t1\": field is immutable"]
        );
    }

    #[test]
    fn immutability_runs_before_schema_validation() {
        let crd = compiled(&yaml(KUDO_CRD));
        let s = kudo_schema(&crd);
        let stored = install(s, json!({"STORAGE_CLASS": "fast"}));
        // Both immutable and invalid: the KEP's 400 comes first.
        let err = update(s, &stored, json!({"STORAGE_CLASS": 5})).expect_err("rejected");
        assert_eq!(err.code, 400);
        assert!(s.immutability.is_some());
        // The same CRD without markers compiles to no plan at all.
        let plain = KUDO_CRD.replace("x-kubernetes-immutable: true", "description: x");
        assert!(kudo_schema(&compiled(&yaml(&plain))).immutability.is_none());
    }
}
