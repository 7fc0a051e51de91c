//! The fields an object sets and how two objects differ, walked by the schema (kube's
//! structured-merge-diff `typed` package: `ToFieldSet`, `Compare`, validation of an
//! applied configuration).
//!
//! What becomes a path: scalars and atomic lists/maps are leaves; items of sets and
//! list-maps are members (so `k:{...}` entries carry `"."`); a declared field holding a
//! non-empty map is not a member itself (only its fields are), while an undeclared key
//! (an `additionalProperties` or deduced entry), a `null` and an empty map are.

use super::fieldpath::{values_equal, FieldSet, PathElement};
use super::schema::{ListKind, ListType, ScalarKind, Shape, TypeRef};
use super::FieldSetError;
use crate::goformat::{go_number_v, go_type_name};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// The path element identifying a list item: its keys (list-map) or value (set).
pub fn list_item_element(lt: &ListType, item: &Value) -> Result<PathElement, FieldSetError> {
    match lt.kind {
        ListKind::Atomic => Err(FieldSetError::NonAssociativeList),
        ListKind::Set => match item {
            Value::Object(_) => Err(FieldSetError::SetItemMap),
            Value::Array(_) => Err(FieldSetError::SetItemList),
            Value::Null => Err(FieldSetError::SetItemNull),
            v => Ok(PathElement::Value(v.clone())),
        },
        ListKind::Map(_) | ListKind::MapByUid => {
            let m = match item {
                Value::Null => return Err(FieldSetError::MapItemNull),
                Value::Object(m) => m,
                _ => return Err(FieldSetError::MapItemNotMap),
            };
            let keys = lt.kind.keys();
            let mut fields: Vec<(String, Value)> = Vec::new();
            for k in &keys {
                if let Some(v) = m.get(*k) {
                    fields.push((k.to_string(), v.clone()));
                } else {
                    let Some(elem) = lt.elem.atom().map else {
                        return Err(FieldSetError::KeyDefault(k.to_string()));
                    };
                    if let Some(d) = elem.field_default(k) {
                        fields.push((k.to_string(), d));
                    }
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                let quoted: Vec<String> = keys.iter().map(|k| crate::field::go_quote(k)).collect();
                return Err(FieldSetError::MissingKeys(quoted.join(" ")));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
    }
}

/// The set of every field the object sets (kube's `TypedValue.ToFieldSet`).
pub fn to_field_set(v: &Value, t: TypeRef) -> FieldSet {
    let mut w = SetWalker {
        path: Vec::new(),
        set: FieldSet::new(),
    };
    w.walk(t, v);
    w.set
}

struct SetWalker {
    path: Vec<PathElement>,
    set: FieldSet,
}

impl SetWalker {
    fn walk(&mut self, t: TypeRef, v: &Value) {
        match t.shape_for(Some(v)) {
            Shape::Scalar(_) => self.set.insert(&self.path),
            Shape::List(lt) => {
                if !lt.kind.is_associative() {
                    self.set.insert(&self.path);
                    return;
                }
                let Some(items) = v.as_array() else { return };
                let pes: Vec<Option<PathElement>> = items
                    .iter()
                    .map(|i| list_item_element(&lt, i).ok())
                    .collect();
                // Duplicated items are owned as a whole, never field by field.
                let mut seen = BTreeSet::new();
                let mut duplicates = BTreeSet::new();
                for pe in pes.iter().flatten() {
                    if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                        self.path.push(pe.clone());
                        self.set.insert(&self.path);
                        self.path.pop();
                    }
                }
                for (item, pe) in items.iter().zip(pes) {
                    let Some(pe) = pe else { continue };
                    if duplicates.contains(&pe) {
                        continue;
                    }
                    self.path.push(pe);
                    self.walk(lt.elem, item);
                    self.set.insert(&self.path);
                    self.path.pop();
                }
            }
            Shape::Map(mt) => {
                if mt.atomic {
                    self.set.insert(&self.path);
                    return;
                }
                let Some(m) = v.as_object() else { return };
                for (k, val) in m {
                    self.path.push(PathElement::Field(k.clone()));
                    self.walk(mt.value_type(k), val);
                    let empty = val.is_null() || val.as_object().is_some_and(|o| o.is_empty());
                    if empty || mt.field(k).is_none() {
                        self.set.insert(&self.path);
                    }
                    self.path.pop();
                }
            }
            Shape::Invalid => {}
        }
    }
}

/// The `FieldsV1` of what an update from nothing adds: every node of `v` (kube's
/// `Compare` of an absent value with `v`), written straight into `FieldsV1` form
/// instead of through a [`FieldSet`]. Equals `compare`'s `added` set for an absent
/// left side, as [`FieldSet::to_fields_v1`] writes it: a map, or an associative
/// list with items, is a member that also lists what is below it (`"."`), a
/// duplicated list item is owned as a whole.
pub fn added_fields_v1(v: &Value, t: TypeRef) -> Map<String, Value> {
    added_fields_v1_without(v, t, [None, None])
}

/// Sets an added set leaves out, each with whether it takes what lies below its
/// members too (kube's reset fields, recursively) or only the members themselves
/// (the stripped system fields).
pub type Without<'a> = [Option<(&'a FieldSet, bool)>; 2];

/// [`added_fields_v1`] with `without`'s sets subtracted as it is built, equal to
/// building it whole and then subtracting each set in turn ([`FieldSet::subtract`],
/// or [`FieldSet::recursive_subtract`] for a recursive one): a create's entry leaves
/// out its system and reset fields without writing them first.
pub fn added_fields_v1_without(v: &Value, t: TypeRef, without: Without) -> Map<String, Value> {
    let mut out = Map::new();
    match t.atom().deduce(Some(v)).shape() {
        Shape::Scalar(_) | Shape::Invalid => {}
        Shape::List(lt) => {
            let items = v.as_array().filter(|_| lt.kind.is_associative());
            let mut by_element: BTreeMap<PathElement, (usize, &Value)> = BTreeMap::new();
            for item in items.into_iter().flatten() {
                let Ok(pe) = list_item_element(&lt, item) else {
                    continue;
                };
                by_element
                    .entry(pe)
                    .and_modify(|(n, _)| *n += 1)
                    .or_insert((1, item));
            }
            for (pe, (n, item)) in by_element {
                let Some((unmark, below_without)) = level(&without, |e| *e == pe) else {
                    continue;
                };
                let below = match n {
                    1 => added_fields_v1_without(item, lt.elem, below_without),
                    _ => Map::new(),
                };
                insert_member(&mut out, pe.serialize(), below, unmark);
            }
        }
        Shape::Map(mt) if !mt.atomic => {
            for (k, val) in v.as_object().into_iter().flatten() {
                let field = |e: &PathElement| matches!(e, PathElement::Field(f) if f == k);
                let Some((unmark, below_without)) = level(&without, field) else {
                    continue;
                };
                let below = added_fields_v1_without(val, mt.value_type(k), below_without);
                insert_member(&mut out, PathElement::field_key(k), below, unmark);
            }
        }
        Shape::Map(_) => {}
    }
    out
}

/// What `without` does to the element `is` matches: `None` when a recursive set has
/// it as a member (it and everything below go); else whether a set takes its member
/// mark, and the sets that reach below it.
fn level<'a>(
    without: &Without<'a>,
    is: impl Fn(&PathElement) -> bool,
) -> Option<(bool, Without<'a>)> {
    let mut unmark = false;
    let mut below: Without = [None, None];
    for (slot, set) in below.iter_mut().zip(without) {
        let Some((set, recursive)) = set else {
            continue;
        };
        if set.members().any(&is) {
            if *recursive {
                return None;
            }
            unmark = true;
        }
        *slot = set
            .children()
            .find(|(pe, _)| is(pe))
            .map(|(_, c)| (c, *recursive));
    }
    Some((unmark, below))
}

/// Put an added element with what is below it: marked as a member (`"."` when it
/// has anything below), or, when its mark is taken, only what is below it (nothing
/// at all when there is nothing below).
fn insert_member(
    out: &mut Map<String, Value>,
    key: String,
    below: Map<String, Value>,
    unmark: bool,
) {
    if !unmark {
        out.insert(key, Value::Object(member_with(below)));
    } else if !below.is_empty() {
        out.insert(key, Value::Object(below));
    }
}

/// A member's `FieldsV1` value: `{}` for a leaf, or what is below it marked with `"."`.
fn member_with(mut below: Map<String, Value>) -> Map<String, Value> {
    if !below.is_empty() {
        below.insert(".".into(), Value::Object(Map::new()));
    }
    below
}

/// How `rhs` differs from `lhs` (kube's `Comparison`); a path is in at most one set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Fields `rhs` no longer has.
    pub removed: FieldSet,
    /// Fields both have, with different values.
    pub modified: FieldSet,
    /// Fields only `rhs` has.
    pub added: FieldSet,
}

impl Comparison {
    /// Drop the ignored fields (and everything below them) from all three sets.
    pub fn filter(mut self, ignored: &FieldSet) -> Comparison {
        self.removed.recursive_subtract(ignored);
        self.modified.recursive_subtract(ignored);
        self.added.recursive_subtract(ignored);
        self
    }
}

/// Compare two objects of type `t` (kube's `TypedValue.Compare`).
pub fn compare(lhs: &Value, rhs: &Value, t: TypeRef) -> Comparison {
    // The root's own marks name the empty path, which is no path.
    compare_node(t, Some(lhs), Some(rhs))
        .below
        .map(|b| *b)
        .unwrap_or_default()
}

/// One node of a comparison: how its descendants differ (relative to it) and whether
/// the node itself was added, removed or modified. Built bottom-up, so that each path
/// element is placed once, at its parent, instead of every path being walked down
/// from the root. An unchanged node (most of an update) holds no sets at all.
#[derive(Default)]
struct Node {
    /// `None` while nothing below differs.
    below: Option<Box<Comparison>>,
    added: bool,
    removed: bool,
    modified: bool,
}

impl Node {
    /// No mark and no difference below: attaching it would add nothing, so it needs
    /// no path element.
    fn is_unchanged(&self) -> bool {
        !self.added && !self.removed && !self.modified && self.below.is_none()
    }

    fn marked(added: bool, removed: bool, modified: bool) -> Node {
        Node {
            added,
            removed,
            modified,
            below: None,
        }
    }

    /// Place a changed child's marks and differences under `pe`.
    fn attach(&mut self, pe: PathElement, child: Node) {
        let Comparison {
            removed,
            modified,
            added,
        } = child.below.map(|b| *b).unwrap_or_default();
        let below = self.below.get_or_insert_with(Box::default);
        let slots = [
            (&mut below.removed, removed, child.removed),
            (&mut below.modified, modified, child.modified),
            (&mut below.added, added, child.added),
        ];
        // Sets built bottom-up hold no empty subtrees: emptiness is a look at one level.
        let bare = FieldSet::is_empty_level;
        let mut uses = slots
            .iter()
            .map(|(_, set, mark)| usize::from(!bare(set)) + usize::from(*mark))
            .sum::<usize>();
        // The element is copied for every use but the last, which takes it.
        let mut pe = Some(pe);
        let mut next = || {
            uses -= 1;
            if uses == 0 {
                pe.take()
            } else {
                pe.clone()
            }
        };
        for (into, set, mark) in slots {
            if !bare(&set) {
                if let Some(pe) = next() {
                    into.insert_child(pe, set);
                }
            }
            if mark {
                if let Some(pe) = next() {
                    into.insert_member(pe);
                }
            }
        }
    }

    /// [`Node::attach`] a field's node when it changed: an unchanged field costs no
    /// copy of its name.
    fn attach_field(&mut self, name: &str, child: Node) {
        if !child.is_unchanged() {
            self.attach(PathElement::Field(name.to_string()), child);
        }
    }
}

fn compare_node(t: TypeRef, lhs: Option<&Value>, rhs: Option<&Value>) -> Node {
    let atom = t.atom();
    let (al, ar) = (atom.deduce(lhs), atom.deduce(rhs));
    let mut node = Node::default();
    let in_leaf = if rhs.is_none() {
        handle(&mut node, al.shape(), lhs, rhs)
    } else if lhs.is_none() || al.signature() == ar.signature() {
        handle(&mut node, ar.shape(), lhs, rhs)
    } else {
        // Different shapes on each side: kube walks both, the right side decides.
        handle(&mut node, al.shape(), lhs, rhs);
        handle(&mut node, ar.shape(), lhs, rhs)
    };
    if !in_leaf {
        if lhs.is_none() {
            node.added = true;
        } else if rhs.is_none() {
            node.removed = true;
        }
    }
    node
}

fn leaf(node: &mut Node, lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
    match (lhs, rhs) {
        (None, _) => node.added = true,
        (_, None) => node.removed = true,
        (Some(l), Some(r)) => {
            if !values_equal(l, r) {
                node.modified = true;
            }
        }
    }
    true
}

/// Walk one shape; returns whether the node was a leaf.
fn handle(node: &mut Node, shape: Shape, lhs: Option<&Value>, rhs: Option<&Value>) -> bool {
    match shape {
        Shape::Scalar(_) => leaf(node, lhs, rhs),
        Shape::List(lt) => {
            let l = lhs.and_then(Value::as_array);
            let r = rhs.and_then(Value::as_array);
            // Empty and null on both sides stay leaves: that keeps [] apart from null.
            let empty = l.is_none_or(|x| x.is_empty()) && r.is_none_or(|x| x.is_empty());
            if !lt.kind.is_associative() || empty {
                return leaf(node, lhs, rhs);
            }
            visit_list(node, &lt, l.map(Vec::as_slice), r.map(Vec::as_slice));
            false
        }
        Shape::Map(mt) => {
            let l = lhs.and_then(Value::as_object);
            let r = rhs.and_then(Value::as_object);
            let empty = l.is_none_or(|x| x.is_empty()) && r.is_none_or(|x| x.is_empty());
            if mt.atomic || empty {
                return leaf(node, lhs, rhs);
            }
            for (k, lv, rv) in keys_of_both(l, r) {
                node.attach_field(k, compare_node(mt.value_type(k), lv, rv));
            }
            false
        }
        Shape::Invalid => false,
    }
}

/// Every key of either map once, with its value on each side: both maps walked
/// together in their (sorted) key order instead of one looked up per key of the other.
fn keys_of_both<'a>(
    l: Option<&'a Map<String, Value>>,
    r: Option<&'a Map<String, Value>>,
) -> impl Iterator<Item = (&'a String, Option<&'a Value>, Option<&'a Value>)> {
    let mut left = l.into_iter().flatten().peekable();
    let mut right = r.into_iter().flatten().peekable();
    std::iter::from_fn(move || {
        let order = match (left.peek(), right.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((lk, _)), Some((rk, _))) => lk.cmp(rk),
        };
        Some(match order {
            std::cmp::Ordering::Less => left.next().map(|(k, v)| (k, Some(v), None))?,
            std::cmp::Ordering::Greater => right.next().map(|(k, v)| (k, None, Some(v)))?,
            std::cmp::Ordering::Equal => {
                let (k, lv) = left.next()?;
                (k, Some(lv), right.next().map(|(_, v)| v))
            }
        })
    })
}

fn visit_list(node: &mut Node, lt: &ListType, l: Option<&[Value]>, r: Option<&[Value]>) {
    let mut order: Vec<PathElement> = Vec::new();
    let mut lvals: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    let mut rvals: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for item in l.unwrap_or_default() {
        let Ok(pe) = list_item_element(lt, item) else {
            continue;
        };
        let e = lvals.entry(pe.clone()).or_default();
        if e.is_empty() {
            order.push(pe);
        }
        e.push(item);
    }
    for item in r.unwrap_or_default() {
        let Ok(pe) = list_item_element(lt, item) else {
            continue;
        };
        let e = rvals.entry(pe.clone()).or_default();
        if e.is_empty() && !lvals.contains_key(&pe) {
            order.push(pe.clone());
        }
        e.push(item);
    }
    for pe in order {
        let ll = lvals.get(&pe).map(Vec::as_slice).unwrap_or_default();
        let rl = rvals.get(&pe).map(Vec::as_slice).unwrap_or_default();
        let child = match (ll.len(), rl.len()) {
            (0..=1, 0..=1) => compare_node(lt.elem, ll.first().copied(), rl.first().copied()),
            // Duplicates on both sides compare as one atomic value.
            (2.., 2..) => {
                let same = ll.len() == rl.len()
                    && ll.iter().zip(rl.iter()).all(|(a, b)| values_equal(a, b));
                Node::marked(false, false, !same)
            }
            (2.., _) => {
                let mut child = match rl.first() {
                    Some(first) => compare_node(lt.elem, None, Some(first)),
                    None => Node::default(),
                };
                child.removed = true;
                child
            }
            (_, _) => {
                let mut child = match ll.first() {
                    Some(first) => compare_node(lt.elem, Some(first), None),
                    None => Node::default(),
                };
                child.added = true;
                child
            }
        };
        if !child.is_unchanged() {
            node.attach(pe, child);
        }
    }
}

/// Also make every declared field that has children a member (kube's
/// `EnsureNamedFieldsAreMembers`), so removing by the set removes whole structs.
pub fn ensure_named_fields_are_members(set: &FieldSet, t: TypeRef) -> FieldSet {
    let atom = t.atom();
    let mut members: BTreeSet<PathElement> = set.members().cloned().collect();
    let mut children = BTreeMap::new();
    for (pe, child) in set.children() {
        let child_type = match (pe, atom.map, atom.list) {
            (PathElement::Field(name), Some(m), _) => {
                if m.field(name).is_some() {
                    members.insert(pe.clone());
                }
                m.value_type(name)
            }
            (PathElement::Key(_), _, Some(l)) => l.elem,
            _ => TypeRef::Undeclared,
        };
        children.insert(
            pe.clone(),
            ensure_named_fields_are_members(child, child_type),
        );
    }
    FieldSet::from_parts(members, children)
}

/// kube's validation of a typed value: `path: message` texts (empty when valid).
/// `allow_duplicates` is used for stored objects; an applied configuration has none.
pub fn validate(v: &Value, t: TypeRef, allow_duplicates: bool) -> Vec<String> {
    let mut errs = Vec::new();
    validate_into(v, t, allow_duplicates, &Trail::Root, &mut errs);
    errs
}

/// Where [`validate_into`] is: a chain to the root, rendered only for an error, so
/// that a deep value costs no path per level.
enum Trail<'a> {
    Root,
    Elem(&'a Trail<'a>, PathElement),
    Field(&'a Trail<'a>, &'a str),
}

impl fmt::Display for Trail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut at = self;
        loop {
            match at {
                Trail::Root => break,
                Trail::Elem(up, pe) => {
                    parts.push(pe.to_string());
                    at = up;
                }
                Trail::Field(up, name) => {
                    parts.push(format!(".{name}"));
                    at = up;
                }
            }
        }
        for p in parts.iter().rev() {
            f.write_str(p)?;
        }
        Ok(())
    }
}

fn push_err(errs: &mut Vec<String>, path: &Trail<'_>, msg: String) {
    if matches!(path, Trail::Root) {
        errs.push(msg);
    } else {
        errs.push(format!("{path}: {msg}"));
    }
}

fn validate_into(v: &Value, t: TypeRef, dups: bool, path: &Trail<'_>, errs: &mut Vec<String>) {
    // kube's untyped types take every value: any scalar, lists of untyped atoms (never
    // associative) and maps of untyped values. Nothing below them can fail, so their
    // values (a stored object's managedFields among them) are not walked.
    if matches!(t, TypeRef::Deduced | TypeRef::UntypedAtomic) {
        return;
    }
    match t.shape_for(Some(v)) {
        Shape::Scalar(kind) => {
            if let Some(msg) = scalar_error(kind, v) {
                push_err(errs, path, msg);
            }
        }
        Shape::List(lt) => {
            let items = match v {
                Value::Array(a) => a,
                Value::Null => return,
                other => {
                    push_err(
                        errs,
                        path,
                        format!("expected list, got {}", go_value_ptr(other)),
                    );
                    return;
                }
            };
            let mut seen = BTreeSet::new();
            for (i, item) in items.iter().enumerate() {
                let pe = if lt.kind.is_associative() {
                    match list_item_element(&lt, item) {
                        Ok(pe) => pe,
                        Err(e) => {
                            // kube gives up on the rest of the list.
                            push_err(errs, path, format!("element {i}: {e}"));
                            return;
                        }
                    }
                } else {
                    PathElement::Index(i as i64)
                };
                if lt.kind.is_associative() && !seen.insert(pe.clone()) && !dups {
                    push_err(errs, path, format!("duplicate entries for key {pe}"));
                }
                validate_into(item, lt.elem, dups, &Trail::Elem(path, pe), errs);
            }
        }
        Shape::Map(mt) => {
            let m = match v {
                Value::Object(m) => m,
                Value::Null => return,
                other => {
                    push_err(
                        errs,
                        path,
                        format!("expected map, got {}", go_value_ptr(other)),
                    );
                    return;
                }
            };
            for (k, val) in m {
                let child = Trail::Field(path, k);
                match mt.value_type(k) {
                    TypeRef::Undeclared => {
                        // kube stops at the first undeclared field of a map.
                        errs.push(format!("{child}: field not declared in schema"));
                        return;
                    }
                    ct => validate_into(val, ct, dups, &child, errs),
                }
            }
        }
        Shape::Invalid => push_err(errs, path, "schema error: invalid atom: inlined".into()),
    }
}

/// kube's texts for a value of the wrong kind for a scalar (null is always fine).
fn scalar_error(kind: ScalarKind, v: &Value) -> Option<String> {
    let is_scalar = matches!(v, Value::Number(_) | Value::String(_) | Value::Bool(_));
    match (kind, v) {
        (_, Value::Null) => None,
        (ScalarKind::Numeric, Value::Number(_)) => None,
        (ScalarKind::Numeric, other) => Some(format!(
            "expected numeric (int or float), got {}",
            go_type_name(other)
        )),
        (ScalarKind::String, Value::String(_)) => None,
        (ScalarKind::String, other) => Some(format!(
            "expected string, got &value.valueUnstructured{{Value:{}}}",
            go_sharp_v(other)
        )),
        (ScalarKind::Boolean, Value::Bool(_)) => None,
        (ScalarKind::Boolean, other) => {
            Some(format!("expected boolean, got {}", go_value_ptr(other)))
        }
        (ScalarKind::Untyped, other) if !is_scalar => {
            Some(format!("expected any scalar, got {}", go_value_ptr(other)))
        }
        _ => None,
    }
}

/// Go's `%v` of a kube `value.Value` (a pointer to a struct holding the value): `&{...}`.
fn go_value_ptr(v: &Value) -> String {
    format!("&{{{}}}", go_v(v))
}

/// Go's `%v` of a decoded JSON value.
fn go_v(v: &Value) -> String {
    crate::goformat::go_v_with(v, &go_number_v)
}

/// Go's `%#v` of a decoded JSON value inside an `interface{}`.
fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number_v(n),
        Value::String(s) => crate::field::go_quote(s),
        Value::Array(a) => format!(
            "[]interface {{}}{{{}}}",
            a.iter().map(go_sharp_v).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(m) => format!(
            "map[string]interface {{}}{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", crate::field::go_quote(k), go_sharp_v(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::props::JSONSchemaProps;
    use crate::schema::structural::Structural;
    use serde_json::json;

    fn structural(v: Value) -> Structural {
        let props: JSONSchemaProps = serde_json::from_value(v).unwrap();
        Structural::from_props(&props)
    }

    /// The recorded ssa case's CRD schema.
    fn app_schema() -> Structural {
        structural(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "image": {"type": "string"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}}}}}),
        )
    }

    #[test]
    fn ssa_apply_create_field_set_is_recorded_set() {
        let s = app_schema();
        let config = json!({"apiVersion": "ssa.example.com/v1", "kind": "App", "metadata": {"name": "a1"},
            "spec": {"replicas": 1, "image": "nginx", "ports": [{"name": "http", "port": 80}], "tags": ["a"], "args": ["x"], "env": {"A": "1"}}});
        let set = to_field_set(&config, TypeRef::root(&s));
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:apiVersion": {}, "f:kind": {}, "f:metadata": {"f:name": {}},
                "f:spec": {"f:args": {}, "f:env": {"f:A": {}}, "f:image": {},
                "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:replicas": {}, "f:tags": {"v:\"a\"": {}}}})
        );
    }

    #[test]
    fn crud_create_update_set_has_dot_for_added_maps() {
        // An Update owns what changed from the empty object: added maps carry ".".
        let s = structural(
            json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"size": {"type": "integer"}}}}}),
        );
        let cmp = compare(
            &json!({}),
            &json!({"metadata": {"labels": {"tier": "a"}}, "spec": {"size": 1}}),
            TypeRef::root(&s),
        );
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:metadata": {".": {}, "f:labels": {".": {}, "f:tier": {}}}, "f:spec": {".": {}, "f:size": {}}})
        );
        assert!(cmp.modified.is_empty() && cmp.removed.is_empty());
    }

    #[test]
    fn compare_list_map_set_and_atomic() {
        let s = app_schema();
        let t = TypeRef::root(&s);
        let old = json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
            "tags": ["x", "y"], "args": ["1", "2"]}});
        let new = json!({"spec": {"ports": [{"name": "b", "port": 3}, {"name": "c", "port": 4}],
            "tags": ["y", "z"], "args": ["1"]}});
        let cmp = compare(&old, &new, t);
        assert_eq!(
            cmp.modified.to_fields_v1(),
            json!({"f:spec": {"f:args": {}, "f:ports": {"k:{\"name\":\"b\"}": {"f:port": {}}}}})
        );
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:spec": {"f:ports": {"k:{\"name\":\"c\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:tags": {"v:\"z\"": {}}}})
        );
        assert_eq!(
            cmp.removed.to_fields_v1(),
            json!({"f:spec": {"f:ports": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:port": {}}},
                "f:tags": {"v:\"x\"": {}}}})
        );
    }

    #[test]
    fn atomic_map_and_preserve_unknown_subtrees() {
        let s = structural(json!({"type": "object", "properties": {
            "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "json": {"x-kubernetes-preserve-unknown-fields": true}}}));
        let t = TypeRef::root(&s);
        let v = json!({"sel": {"a": "1"}, "json": {"bar": {"inner": 43}, "list": [1, 2]}});
        assert_eq!(
            to_field_set(&v, t).to_fields_v1(),
            json!({"f:sel": {}, "f:json": {"f:bar": {".": {}, "f:inner": {}}, "f:list": {}}})
        );
        let cmp = compare(
            &v,
            &json!({"sel": {"a": "2"}, "json": {"bar": {"inner": 44}, "list": [1, 2]}}),
            t,
        );
        assert_eq!(
            cmp.modified.to_fields_v1(),
            json!({"f:json": {"f:bar": {"f:inner": {}}}, "f:sel": {}})
        );
    }

    #[test]
    fn pruning_kep_embedded_metadata_is_object_meta() {
        // From the recorded pruning-kep create: embedded metadata is owned field by field.
        let s = structural(
            json!({"type": "object", "properties": {"ex10": {"type": "object", "properties": {
            "object": {"type": "object", "nullable": true, "x-kubernetes-embedded-resource": true,
                       "x-kubernetes-preserve-unknown-fields": true}}}}}),
        );
        let v = json!({"ex10": {"object": {"apiVersion": "v1", "kind": "ConfigMap", "bar": 43, "abc": 44, "metadata": {"name": "example"}}}});
        let cmp = compare(&json!({}), &v, TypeRef::root(&s));
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:ex10": {".": {}, "f:object": {".": {}, "f:abc": {}, "f:apiVersion": {}, "f:bar": {},
                "f:kind": {}, "f:metadata": {".": {}, "f:name": {}}}}})
        );
    }

    #[test]
    fn ensure_named_fields_makes_structs_members() {
        let s = app_schema();
        let set = FieldSet::from_fields_v1(&json!({"f:spec": {"f:env": {"f:A": {}},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:port": {}}}}}))
        .unwrap();
        let e = ensure_named_fields_are_members(&set, TypeRef::root(&s));
        assert_eq!(
            e.to_fields_v1(),
            json!({"f:spec": {".": {}, "f:env": {".": {}, "f:A": {}},
                "f:ports": {".": {}, "k:{\"name\":\"http\"}": {".": {}, "f:port": {}}}}})
        );
    }

    mod added_without {
        use super::*;
        use proptest::prelude::*;

        /// A set of up to eight paths of up to three fields from a small pool, so
        /// that sets share prefixes and members sit above other paths.
        fn set() -> impl Strategy<Value = FieldSet> {
            let path = prop::collection::vec(prop::sample::select(vec!["a", "b", "c"]), 1..4);
            prop::collection::vec(path, 0..8).prop_map(|paths| {
                let mut s = FieldSet::new();
                for p in paths {
                    let p: Vec<PathElement> = p.into_iter().map(PathElement::field).collect();
                    s.insert(&p);
                }
                s
            })
        }

        /// Objects over the same field names, three levels deep: leaves, empty maps and
        /// maps with fields.
        fn object() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![Just(json!(1)), Just(json!("x")), Just(json!({}))];
            leaf.prop_recursive(3, 24, 3, |inner| {
                prop::collection::btree_map(
                    prop::sample::select(vec!["a".to_string(), "b".into(), "c".into()]),
                    inner,
                    0..4,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect()))
            })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(2000))]

            /// The added set with the sets left out as it is built equals the whole
            /// added set with the first subtracted recursively, then the second not.
            #[test]
            fn leaving_sets_out_while_building_equals_subtracting_them(
                v in object(),
                first in set(),
                second in set(),
            ) {
                let t = TypeRef::Deduced;
                let whole = Value::Object(added_fields_v1(&v, t));
                let mut expected = FieldSet::from_fields_v1(&whole).unwrap();
                expected.recursive_subtract(&first);
                expected.subtract(&second);
                let got = added_fields_v1_without(
                    &v,
                    t,
                    [Some((&first, true)), Some((&second, false))],
                );
                prop_assert_eq!(
                    FieldSet::from_fields_v1(&Value::Object(got.clone())).unwrap(),
                    expected.clone(),
                    "{} without {:?} then {:?}",
                    v,
                    first,
                    second
                );
                // The same form too: `{}` for a leaf, `"."` only beside paths below.
                prop_assert_eq!(Value::Object(got), expected.to_fields_v1());
            }
        }
    }

    /// What lets `validate_into` skip the values of kube's untyped types: every value
    /// converts under them, level by level (any scalar; a list that is not associative,
    /// of untyped items; a map of untyped values, no key undeclared).
    fn untyped_accepts(t: TypeRef, v: &Value) -> bool {
        let untyped = |t: TypeRef| matches!(t, TypeRef::Deduced | TypeRef::UntypedAtomic);
        match t.shape_for(Some(v)) {
            Shape::Scalar(kind) => scalar_error(kind, v).is_none(),
            Shape::List(lt) => {
                !lt.kind.is_associative()
                    && v.as_array().is_none_or(|items| {
                        items
                            .iter()
                            .all(|i| untyped(lt.elem) && untyped_accepts(lt.elem, i))
                    })
            }
            Shape::Map(mt) => v.as_object().is_none_or(|m| {
                m.iter().all(|(k, x)| {
                    let ct = mt.value_type(k);
                    untyped(ct) && untyped_accepts(ct, x)
                })
            }),
            Shape::Invalid => false,
        }
    }

    proptest::proptest! {
        #[test]
        fn untyped_types_accept_every_value(v in any_json()) {
            for t in [TypeRef::Deduced, TypeRef::UntypedAtomic] {
                proptest::prop_assert!(untyped_accepts(t, &v), "{v}");
            }
        }
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            "[a-z.:]{0,4}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z.:]{0,3}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    #[test]
    fn validate_reports_kube_texts() {
        let s = app_schema();
        let t = TypeRef::root(&s);
        assert_eq!(
            validate(&json!({"spec": {"bogus": 1}}), t, false),
            vec![".spec.bogus: field not declared in schema"]
        );
        assert_eq!(
            validate(&json!({"metadata": {"garbage": 1}}), t, false),
            vec![".metadata.garbage: field not declared in schema"]
        );
        assert_eq!(
            validate(
                &json!({"spec": {"ports": [{"name": "a"}, {"name": "a"}]}}),
                t,
                false
            ),
            vec![".spec.ports: duplicate entries for key [name=\"a\"]"]
        );
        assert!(validate(
            &json!({"spec": {"ports": [{"name": "a"}, {"name": "a"}]}}),
            t,
            true
        )
        .is_empty());
        assert_eq!(
            validate(&json!({"spec": {"ports": [{"port": 1}]}}), t, false),
            vec![".spec.ports: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"]
        );
        assert_eq!(
            validate(&json!({"spec": {"replicas": "x"}}), t, false),
            vec![".spec.replicas: expected numeric (int or float), got string"]
        );
        assert_eq!(
            validate(&json!({"spec": {"image": 1}}), t, false),
            vec![".spec.image: expected string, got &value.valueUnstructured{Value:1}"]
        );
    }

    #[test]
    fn keys_of_both_gives_every_key_once_with_each_sides_value() {
        let l = json!({"a": 1, "c": 2, "d": 3});
        let r = json!({"b": 4, "c": 5, "e": 6});
        let got: Vec<(String, Option<Value>, Option<Value>)> =
            keys_of_both(l.as_object(), r.as_object())
                .map(|(k, lv, rv)| (k.clone(), lv.cloned(), rv.cloned()))
                .collect();
        let n = |v: i64| Some(json!(v));
        assert_eq!(
            got,
            vec![
                ("a".into(), n(1), None),
                ("b".into(), None, n(4)),
                ("c".into(), n(2), n(5)),
                ("d".into(), n(3), None),
                ("e".into(), None, n(6)),
            ]
        );
        assert_eq!(keys_of_both(None, r.as_object()).count(), 3);
        assert_eq!(keys_of_both(l.as_object(), None).count(), 3);
    }

    #[test]
    fn list_map_key_default_fills_missing_key() {
        let s = structural(
            json!({"type": "object", "properties": {"ports": {"type": "array",
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {"type": "object", "properties": {"name": {"type": "string"},
                "protocol": {"type": "string", "default": "TCP"}}}}}}),
        );
        let set = to_field_set(&json!({"ports": [{"name": "a"}]}), TypeRef::root(&s));
        assert!(set.has(&[
            PathElement::field("ports"),
            PathElement::Key(vec![
                ("name".into(), json!("a")),
                ("protocol".into(), json!("TCP"))
            ])
        ]));
    }
}
