//! Field paths and sets of fields, as kube's structured-merge-diff `fieldpath` package:
//! path elements (`f:` field, `k:` list-map key, `v:` set value, `i:` index), the set
//! trie of members and children, and the `FieldsV1` JSON encoding of `managedFields`.

use super::FieldSetError;
use crate::field::go_quote;
use crate::goformat::{go_json, go_json_string, go_number_v};
use crate::number::{compare_numbers, MixedNumbers};
use serde_json::{Map, Value};
use std::cmp::Ordering;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// One step of a path into an object.
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A map key or struct field (`f:name`).
    Field(String),
    /// The item of a list-map (`x-kubernetes-list-type: map`) with these key values,
    /// sorted by key name (`k:{"name":"http"}`).
    Key(Vec<(String, Value)>),
    /// The item of a set (`x-kubernetes-list-type: set`) with this value (`v:"a"`).
    Value(Value),
    /// A list index (`i:0`), only for lists that are neither atomic nor associative.
    Index(i64),
}

impl PathElement {
    /// A field element.
    pub fn field(name: &str) -> Self {
        PathElement::Field(name.to_string())
    }

    /// The field name, when this is a field element.
    pub fn as_field(&self) -> Option<&str> {
        match self {
            PathElement::Field(f) => Some(f),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of a field element (`f:spec`), without making the element.
    pub fn field_key(name: &str) -> String {
        let mut s = String::with_capacity(name.len() + 2);
        s.push_str("f:");
        s.push_str(name);
        s
    }

    /// The `FieldsV1` key of this element (`f:spec`, `k:{"name":"http"}`, `v:"a"`, `i:0`).
    pub fn serialize(&self) -> String {
        match self {
            PathElement::Field(f) => Self::field_key(f),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{}:{}", go_json_string(k), go_json(v)))
                    .collect();
                format!("k:{{{}}}", parts.join(","))
            }
            PathElement::Value(v) => format!("v:{}", go_json(v)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parse a `FieldsV1` key; `Ok(None)` for an unknown element type, which kube skips.
    pub fn deserialize(s: &str) -> Result<Option<PathElement>, FieldSetError> {
        let b = s.as_bytes();
        if b.len() < 2 {
            return Err(FieldSetError::KeyTooShort);
        }
        if b[1] != b':' {
            return Err(FieldSetError::MissingColon(s.to_string()));
        }
        let rest = &s[2..];
        match b[0] {
            b'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            b'v' => serde_json::from_str::<Value>(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(FieldSetError::ElementJson),
            b'k' => {
                let m: Map<String, Value> =
                    serde_json::from_str(rest).map_err(FieldSetError::ElementJson)?;
                // serde's map is already sorted by key, as kube sorts key fields.
                Ok(Some(PathElement::Key(m.into_iter().collect())))
            }
            b'i' => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(FieldSetError::ElementIndex),
            _ => Ok(None),
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_key_fields(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => compare_values(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// kube's human form, used in conflict messages: `.spec`, `[name="http"]`, `[="a"]`, `[0]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path: the elements from the object root to one field.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

/// kube's `value.ToString`: strings quoted, numbers and booleans bare.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number_v(n),
        Value::String(s) => go_quote(s),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .map(value_to_string)
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

/// kube's total order on values: numbers < strings < booleans < lists < maps < null;
/// integers and floats compare numerically.
pub fn compare_values(a: &Value, b: &Value) -> Ordering {
    fn rank(v: &Value) -> u8 {
        match v {
            Value::Number(_) => 0,
            Value::String(_) => 1,
            Value::Bool(_) => 2,
            Value::Array(_) => 3,
            Value::Object(_) => 4,
            Value::Null => 5,
        }
    }
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y, MixedNumbers::ByValue),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y.iter()) {
                let c = compare_values(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => compare_maps(x, y),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => rank(a).cmp(&rank(b)),
    }
}

/// kube's map order: walk both key-sorted maps together; the first difference decides.
fn compare_maps(x: &Map<String, Value>, y: &Map<String, Value>) -> Ordering {
    let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
    keys.sort();
    keys.dedup();
    for (i, k) in keys.into_iter().enumerate() {
        let c = if i == x.len() {
            Ordering::Less
        } else if i == y.len() {
            Ordering::Greater
        } else {
            match (x.get(k), y.get(k)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(l), Some(r)) => compare_values(l, r),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

fn compare_key_fields(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((ka, va), (kb, vb)) in a.iter().zip(b.iter()) {
        let c = ka.cmp(kb).then_with(|| compare_values(va, vb));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// kube's value equality: integers and floats compare numerically.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            compare_numbers(x, y, MixedNumbers::ByValue) == Ordering::Equal
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(l, r)| values_equal(l, r))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, l)| y.get(k).is_some_and(|r| values_equal(l, r)))
        }
        _ => a == b,
    }
}

/// A set of field paths, as a trie: `members` are paths ending here, `children` the
/// subtrees below (kube's `fieldpath.Set`). A path element may be both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> Self {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// Add a path (the empty path is ignored, as in kube).
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            // An element is copied only where the set gains a node.
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => self.children.entry(first.clone()).or_default().insert(rest),
            },
        }
    }

    /// Add `pe` as a member at this level.
    pub fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Put `set` under `pe`, joined with what is there already.
    pub fn insert_child(&mut self, pe: PathElement, set: FieldSet) {
        match self.children.entry(pe) {
            Entry::Occupied(mut mine) => mine.get_mut().absorb(set),
            Entry::Vacant(slot) => {
                slot.insert(set);
            }
        }
    }

    /// Whether the path is in the set (as a member at its last element).
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether the element is a member at this level.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// Whether no path is in the set.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// No member and no child at this level (a set with empty subtrees below is
    /// empty without being bare).
    pub fn is_empty_level(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// The members at this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The subtrees at this level.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    /// The subtree under `pe` (empty when there is none).
    pub fn with_prefix(&self, pe: &PathElement) -> FieldSet {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// Whether there is a non-empty subtree under `pe`.
    pub fn has_prefix(&self, pe: &PathElement) -> bool {
        self.children.get(pe).is_some_and(|c| !c.is_empty())
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// [`FieldSet::union`] in place, taking `other`'s elements instead of copying them.
    pub fn absorb(&mut self, other: FieldSet) {
        if self.members.is_empty() && self.children.is_empty() {
            *self = other;
            return;
        }
        self.members.extend(other.members);
        for (pe, c) in other.children {
            match self.children.entry(pe) {
                Entry::Occupied(mut mine) => mine.get_mut().absorb(c),
                Entry::Vacant(slot) => {
                    slot.insert(c);
                }
            }
        }
    }

    /// [`FieldSet::difference`] in place.
    pub fn subtract(&mut self, other: &FieldSet) {
        self.remove_below(other, false);
    }

    /// [`FieldSet::recursive_difference`] in place.
    pub fn recursive_subtract(&mut self, other: &FieldSet) {
        self.remove_below(other, true);
    }

    fn remove_below(&mut self, other: &FieldSet, recursive: bool) {
        if other.members.is_empty() && other.children.is_empty() {
            return;
        }
        if !other.members.is_empty() {
            self.members.retain(|m| !other.members.contains(m));
            if recursive {
                self.children.retain(|pe, _| !other.members.contains(pe));
            }
        }
        for (pe, o) in &other.children {
            if let Some(c) = self.children.get_mut(pe) {
                c.remove_below(o, recursive);
                if c.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet {
            members: self.members.intersection(&other.members).cloned().collect(),
            children: self
                .children
                .iter()
                .filter_map(|(pe, c)| {
                    let o = other.children.get(pe)?;
                    let i = c.intersection(o);
                    (!i.is_empty()).then(|| (pe.clone(), i))
                })
                .collect(),
        }
    }

    /// Paths in `self` but not in `other` (a member of `other` does not remove the
    /// subtree below it: that is [`FieldSet::recursive_difference`]).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.subtract(other);
        out
    }

    /// Paths in `self` that neither are in `other` nor lie below a member of `other`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.recursive_subtract(other);
        out
    }

    /// Every path, in kube's order (members of a level before the subtrees below it).
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Replace the members at this level (used when rebuilding a set level by level).
    pub(crate) fn from_parts(
        members: BTreeSet<PathElement>,
        children: BTreeMap<PathElement, FieldSet>,
    ) -> Self {
        FieldSet { members, children }
    }

    /// The `FieldsV1` JSON of the set (kube's `Set.ToJSON`): one key per element, `{}`
    /// for a leaf, and `"."` inside a subtree whose element is also a member.
    ///
    /// The keys come out in `serde_json`'s order (sorted strings); kube orders them by
    /// path element (fields, keys, values, indices), which only differs for numeric
    /// keys and mixed element types.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for m in &self.members {
            let inner = match self.children.get(m) {
                Some(c) => c.emit(true),
                None => Map::new(),
            };
            out.insert(m.serialize(), Value::Object(inner));
        }
        for (pe, c) in &self.children {
            if !self.members.contains(pe) {
                out.insert(pe.serialize(), Value::Object(c.emit(false)));
            }
        }
        out
    }

    /// Parse `FieldsV1` JSON (kube's `Set.FromJSON`); unknown element types are skipped.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldSetError> {
        Ok(read_fields_v1(v)?.0.unwrap_or_default())
    }
}

/// Returns the subtree (if any) and whether the level itself is a member.
fn read_fields_v1(v: &Value) -> Result<(Option<FieldSet>, bool), FieldSetError> {
    let obj = match v {
        Value::Object(m) => Some(m),
        Value::Null => None,
        other => {
            return Err(FieldSetError::FieldsV1NotAnObject(
                go_json(other).chars().next().unwrap_or(' '),
            ))
        }
    };
    let mut is_member = false;
    let mut children: Option<FieldSet> = None;
    for (key, val) in obj.into_iter().flatten() {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) =
            PathElement::deserialize(key).map_err(|e| FieldSetError::PathElement(Box::new(e)))?
        else {
            continue;
        };
        let (grandchildren, child_is_member) = read_fields_v1(val)?;
        if child_is_member {
            children
                .get_or_insert_with(FieldSet::new)
                .members
                .insert(pe.clone());
        }
        if let Some(g) = grandchildren {
            children
                .get_or_insert_with(FieldSet::new)
                .children
                .insert(pe, g);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(n: &str) -> PathElement {
        PathElement::field(n)
    }

    fn key(name: &str) -> PathElement {
        PathElement::Key(vec![("name".into(), json!(name))])
    }

    #[test]
    fn fields_v1_round_trip_of_recorded_apply_entry() {
        // alice's entry from the recorded ssa `apply-create` step.
        let recorded = json!({"f:spec": {"f:args": {}, "f:env": {"f:A": {}}, "f:image": {},
            "f:ports": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}}},
            "f:replicas": {}, "f:tags": {"v:\"a\"": {}}}});
        let set = FieldSet::from_fields_v1(&recorded).unwrap();
        assert!(set.has(&[f("spec"), f("args")]));
        assert!(set.has(&[f("spec"), f("env"), f("A")]));
        assert!(!set.has(&[f("spec"), f("env")]));
        assert!(set.has(&[f("spec"), f("ports"), key("http")]));
        assert!(set.has(&[f("spec"), f("ports"), key("http"), f("port")]));
        assert!(set.has(&[f("spec"), f("tags"), PathElement::Value(json!("a"))]));
        assert_eq!(set.to_fields_v1(), recorded);
    }

    #[test]
    fn fields_v1_dot_marks_member_with_children() {
        let mut s = FieldSet::new();
        s.insert(&[f("spec")]);
        s.insert(&[f("spec"), f("size")]);
        s.insert(&[f("metadata"), f("labels")]);
        s.insert(&[f("metadata"), f("labels"), f("tier")]);
        assert_eq!(
            s.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}}, "f:spec": {".": {}, "f:size": {}}})
        );
    }

    #[test]
    fn path_element_order_is_kube_order() {
        let mut v = [
            PathElement::Index(10),
            PathElement::Value(json!("b")),
            PathElement::Value(json!(10)),
            PathElement::Index(9),
            key("x"),
            f("z"),
            PathElement::Value(json!(9.5)),
        ];
        v.sort();
        assert_eq!(
            v.iter().map(|p| p.serialize()).collect::<Vec<_>>(),
            vec![
                "f:z",
                "k:{\"name\":\"x\"}",
                "v:9.5",
                "v:10",
                "v:\"b\"",
                "i:9",
                "i:10"
            ]
        );
    }

    #[test]
    fn path_display_matches_conflict_text() {
        let p = Path(vec![
            f("spec"),
            f("ports"),
            PathElement::Key(vec![
                ("name".into(), json!("http")),
                ("proto".into(), json!(6)),
            ]),
            f("port"),
        ]);
        assert_eq!(p.to_string(), ".spec.ports[name=\"http\",proto=6].port");
        let s = Path(vec![f("spec"), f("tags"), PathElement::Value(json!("a"))]);
        assert_eq!(s.to_string(), ".spec.tags[=\"a\"]");
        assert_eq!(
            Path(vec![f("a"), PathElement::Index(3)]).to_string(),
            ".a[3]"
        );
    }

    #[test]
    fn key_and_value_serialization_is_go_json() {
        assert_eq!(
            PathElement::Key(vec![("a".into(), json!("<x>")), ("b".into(), json!(1.0))])
                .serialize(),
            "k:{\"a\":\"\\u003cx\\u003e\",\"b\":1}"
        );
        assert_eq!(PathElement::Value(json!(true)).serialize(), "v:true");
    }

    #[test]
    fn deserialize_errors_and_unknown_types() {
        assert_eq!(PathElement::deserialize("x:1").unwrap(), None);
        assert_eq!(
            PathElement::deserialize("f").unwrap_err().to_string(),
            "key must be 2 characters long:"
        );
        assert_eq!(
            PathElement::deserialize("fx").unwrap_err().to_string(),
            "missing colon: fx"
        );
        assert!(PathElement::deserialize("i:z").is_err());
        assert!(FieldSet::from_fields_v1(&json!({"x:q": {}, "f:a": {}}))
            .unwrap()
            .has(&[f("a")]));
    }

    #[test]
    fn set_operations() {
        let a = FieldSet::from_paths([
            &[f("spec"), f("a")][..],
            &[f("spec"), f("b")][..],
            &[f("status")][..],
        ]);
        let b = FieldSet::from_paths([&[f("spec"), f("b")][..], &[f("spec")][..]]);
        assert_eq!(
            a.intersection(&b),
            FieldSet::from_paths([&[f("spec"), f("b")][..]])
        );
        assert_eq!(
            a.difference(&b),
            FieldSet::from_paths([&[f("spec"), f("a")][..], &[f("status")][..]])
        );
        // A member of the other set removes the whole subtree in a recursive difference.
        assert_eq!(
            a.recursive_difference(&b),
            FieldSet::from_paths([&[f("status")][..]])
        );
        assert!(a.union(&b).has(&[f("spec")]));
        assert_eq!(
            a.paths()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            vec![".status", ".spec.a", ".spec.b"]
        );
    }

    #[test]
    fn in_place_set_operations_equal_the_copying_ones() {
        let sets = [
            FieldSet::new(),
            FieldSet::from_paths([&[f("spec"), f("a")][..], &[f("status")][..]]),
            FieldSet::from_paths([&[f("spec")][..], &[f("spec"), f("b"), f("c")][..]]),
            FieldSet::from_paths([
                &[f("spec"), f("a")][..],
                &[f("spec"), f("b"), f("c")][..],
                &[f("spec"), f("b"), f("d")][..],
                &[f("metadata"), f("labels"), f("x")][..],
            ]),
            FieldSet::from_paths([&[f("spec"), f("b")][..], &[f("metadata")][..]]),
        ];
        for a in &sets {
            for b in &sets {
                let mut u = a.clone();
                u.absorb(b.clone());
                assert_eq!(u, a.union(b), "{a:?} | {b:?}");
                let mut d = a.clone();
                d.subtract(b);
                assert_eq!(d, a.difference(b), "{a:?} - {b:?}");
                let mut r = a.clone();
                r.recursive_subtract(b);
                assert_eq!(r, a.recursive_difference(b), "{a:?} -- {b:?}");
            }
        }
    }

    #[test]
    fn numbers_compare_across_int_and_float() {
        assert!(values_equal(&json!(1), &json!(1.0)));
        assert_eq!(compare_values(&json!(2), &json!(1.5)), Ordering::Greater);
        assert_eq!(compare_values(&json!("a"), &json!(1)), Ordering::Greater);
        assert_eq!(compare_values(&json!(null), &json!({})), Ordering::Greater);
    }
}
