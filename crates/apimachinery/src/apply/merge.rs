//! Merging by the schema and the ownership bookkeeping of apply and update (kube's
//! structured-merge-diff `typed.Merge`, `RemoveItems` and `merge.Updater`).
//!
//! - [`merge`] lays a configuration over a live object: scalars and atomic lists/maps
//!   are replaced, granular maps merge key by key, sets and list-maps item by item
//!   (items keep the live order unless the configuration reorders shared ones).
//! - [`Updater::apply`] merges, takes ownership of the configuration's fields, removes
//!   what the manager applied last time and no longer applies (unless someone else
//!   owns it), and reports conflicts with other managers unless forced.
//! - [`Updater::update`] gives the fields an update changed to the updater, taking
//!   them away from everyone else.

use super::fieldpath::{values_equal, FieldSet, Path};
use super::fieldset::Comparison;
use super::fieldset::{compare, ensure_named_fields_are_members, list_item_element, to_field_set};
use super::schema::{ListType, Shape, TypeRef};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The fields one manager owns, at the API version it used.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedSet {
    /// Owned fields.
    pub set: FieldSet,
    /// `group/version` the manager wrote with.
    pub api_version: String,
    /// Owned through apply (`operation: Apply`).
    pub applied: bool,
}

/// Managers by identifier (kube's JSON manager identifier, see `managed.rs`).
pub type Managers = BTreeMap<String, VersionedSet>;

/// A field another manager owns and an apply would change.
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    /// The owner's identifier.
    pub manager: String,
    /// The field.
    pub path: Path,
}

static NULL: Value = Value::Null;

/// Lay `config` over `live` (kube's `TypedValue.Merge`: the right side wins).
pub fn merge(live: &Value, config: &Value, t: TypeRef) -> Value {
    merge_node(t, Some(live), Some(config)).unwrap_or(Value::Null)
}

fn keep_rhs(lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
    rhs.or(lhs).cloned()
}

fn merge_node(t: TypeRef, lhs: Option<&Value>, rhs: Option<&Value>) -> Option<Value> {
    let atom = t.atom();
    let shape = if rhs.is_none() {
        atom.deduce(lhs).shape()
    } else {
        atom.deduce(rhs).shape()
    };
    match shape {
        Shape::Scalar(_) | Shape::Invalid => keep_rhs(lhs, rhs),
        Shape::List(lt) => {
            let l = lhs.and_then(Value::as_array);
            let r = rhs.and_then(Value::as_array);
            let empty = l.is_none_or(|x| x.is_empty()) && r.is_none_or(|x| x.is_empty());
            if !lt.kind.is_associative() || empty {
                return keep_rhs(lhs, rhs);
            }
            if l.is_none() && r.is_none() {
                return None;
            }
            merge_list(&lt, l.map(Vec::as_slice), r.map(Vec::as_slice))
                .or_else(|| keep_rhs(lhs, rhs))
        }
        Shape::Map(mt) => {
            let l = lhs.and_then(Value::as_object);
            let r = rhs.and_then(Value::as_object);
            let empty = l.is_none_or(|x| x.is_empty()) && r.is_none_or(|x| x.is_empty());
            if mt.atomic || empty {
                return keep_rhs(lhs, rhs);
            }
            if l.is_none() && r.is_none() {
                return None;
            }
            let mut keys: BTreeSet<&String> = BTreeSet::new();
            keys.extend(l.iter().flat_map(|m| m.keys()));
            keys.extend(r.iter().flat_map(|m| m.keys()));
            let mut out = Map::new();
            for k in keys {
                let v = merge_node(
                    mt.value_type(k),
                    l.and_then(|m| m.get(k)),
                    r.and_then(|m| m.get(k)),
                );
                if let Some(v) = v {
                    out.insert(k.clone(), v);
                }
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
    }
}

/// Merge the items of an associative list. `None` when an item cannot be identified
/// (the caller then keeps the configuration's list as it is).
fn merge_list(lt: &ListType, l: Option<&[Value]>, r: Option<&[Value]>) -> Option<Value> {
    let (litems, ritems) = (l.unwrap_or_default(), r.unwrap_or_default());
    let mut rhs_pes = Vec::with_capacity(ritems.len());
    let mut observed_rhs = BTreeMap::new();
    for item in ritems {
        let pe = list_item_element(lt, item).ok()?;
        if observed_rhs.contains_key(&pe) {
            // An applied configuration has no duplicates (validated before merging).
            continue;
        }
        observed_rhs.insert(pe.clone(), item);
        rhs_pes.push(pe);
    }
    let mut lhs_pes = Vec::with_capacity(litems.len());
    let mut observed_lhs: BTreeMap<_, &Value> = BTreeMap::new();
    for item in litems {
        let pe = list_item_element(lt, item).ok()?;
        // Duplicated live items are not merged with the configuration: they become null.
        let seen = observed_lhs.contains_key(&pe);
        observed_lhs.insert(pe.clone(), if seen { &NULL } else { item });
        lhs_pes.push(pe);
    }
    let mut shared = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(*pe))
        .cloned();
    let mut next_shared = shared.next();
    let mut merged_rhs = BTreeSet::new();
    let mut out = Vec::new();
    let item = |l: Option<&Value>, r: Option<&Value>| merge_node(lt.elem, l, r);
    let (ll, rl) = (lhs_pes.len(), rhs_pes.len());
    let (mut li, mut ri) = (0, 0);
    while li < ll || ri < rl {
        if li < ll && ri < rl {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe.clone());
                out.extend(item(
                    observed_lhs.get(pe).copied(),
                    observed_rhs.get(pe).copied(),
                ));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            // A shared item, but not the next one the configuration wants: it is
            // emitted at the configuration's position.
            if observed_rhs.contains_key(pe) && next_shared.as_ref().is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < ll {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                out.extend(item(Some(&litems[li]), None));
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rl {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe.clone());
            out.extend(item(
                observed_lhs.get(pe).copied(),
                observed_rhs.get(pe).copied(),
            ));
            ri += 1;
            if next_shared.as_ref() == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    (!out.is_empty()).then_some(Value::Array(out))
}

/// Remove the fields of `set` from `v` (kube's `TypedValue.RemoveItems`): a member
/// removes the field or item with everything below it; a container emptied by the
/// removal stays as an empty container.
pub fn remove_items(v: &Value, set: &FieldSet, t: TypeRef) -> Value {
    remove_node(v, set, t).unwrap_or(Value::Null)
}

fn emptied(orig: &Value, out: Option<Value>) -> Value {
    match (out, orig) {
        (Some(v), _) if !v.is_null() => v,
        (_, Value::Object(_)) => Value::Object(Map::new()),
        (_, Value::Array(_)) => Value::Array(Vec::new()),
        (out, _) => out.unwrap_or(Value::Null),
    }
}

fn remove_node(v: &Value, set: &FieldSet, t: TypeRef) -> Option<Value> {
    match t.shape_for(Some(v)) {
        Shape::Scalar(_) | Shape::Invalid => Some(v.clone()),
        Shape::List(lt) => {
            let items = v.as_array()?;
            if items.is_empty() || !lt.kind.is_associative() {
                return None;
            }
            let mut out = Vec::new();
            let mut had_matches = false;
            for item in items {
                let Ok(pe) = list_item_element(&lt, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has_member(&pe) {
                    continue;
                }
                if set.has_prefix(&pe) {
                    had_matches = true;
                    let sub = set.with_prefix(&pe);
                    out.push(emptied(item, remove_node(item, &sub, lt.elem)));
                } else {
                    out.push(item.clone());
                }
            }
            (!out.is_empty() || had_matches).then_some(Value::Array(out))
        }
        Shape::Map(mt) => {
            let m = v.as_object()?;
            if m.is_empty() || mt.atomic {
                return None;
            }
            let mut out = Map::new();
            let mut had_matches = false;
            for (k, val) in m {
                let pe = super::fieldpath::PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                if set.has_prefix(&pe) {
                    had_matches = true;
                    let sub = set.with_prefix(&pe);
                    out.insert(
                        k.clone(),
                        emptied(val, remove_node(val, &sub, mt.value_type(k))),
                    );
                } else {
                    out.insert(k.clone(), val.clone());
                }
            }
            (!out.is_empty() || had_matches).then_some(Value::Object(out))
        }
    }
}

/// Ownership bookkeeping for one version of a custom resource.
pub struct Updater<'a> {
    /// The type of the whole object.
    pub root: TypeRef<'a>,
    /// Fields the strategy resets (`status` on the main resource when the status
    /// subresource is on; `metadata` and `spec` on `/status`): never owned, never
    /// conflicting.
    pub ignored: &'a FieldSet,
}

impl Updater<'_> {
    /// Take what changed between `live` and `new` away from every manager but
    /// `workflow` (kube's `Updater.update`); fails on conflicts unless `force`.
    fn update_managers(
        &self,
        live: &Value,
        new: &Value,
        managers: &mut Managers,
        workflow: &str,
        force: bool,
    ) -> Result<Comparison, Vec<Conflict>> {
        let cmp = compare(live, new, self.root).filter(self.ignored);
        // Only other managers can conflict (none on a create).
        let conflicts: Vec<(String, FieldSet)> = if managers.keys().any(|id| id != workflow) {
            let changed = cmp.modified.union(&cmp.added);
            managers
                .iter()
                .filter(|(id, _)| id.as_str() != workflow)
                .filter_map(|(id, vs)| {
                    let c = vs.set.intersection(&changed);
                    (!c.is_empty()).then(|| (id.clone(), c))
                })
                .collect()
        } else {
            Vec::new()
        };
        if !force && !conflicts.is_empty() {
            return Err(conflicts
                .into_iter()
                .flat_map(|(manager, set)| {
                    set.paths().into_iter().map(move |path| Conflict {
                        manager: manager.clone(),
                        path,
                    })
                })
                .collect());
        }
        for (id, c) in &conflicts {
            if let Some(vs) = managers.get_mut(id) {
                vs.set.subtract(c);
            }
        }
        if !cmp.removed.is_empty() {
            for (id, vs) in managers.iter_mut() {
                if id != workflow {
                    vs.set.subtract(&cmp.removed);
                }
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(cmp)
    }

    /// A non-apply write by `manager`: it now owns what it changed (kube's
    /// `Updater.Update`).
    pub fn update(
        &self,
        live: &Value,
        new: &Value,
        api_version: &str,
        mut managers: Managers,
        manager: &str,
    ) -> Managers {
        let cmp = match self.update_managers(live, new, &mut managers, manager, true) {
            Ok(cmp) => cmp,
            Err(_) => return managers, // unreachable: forced updates never conflict
        };
        let mut set = managers
            .remove(manager)
            .map(|vs| vs.set)
            .unwrap_or_default();
        set.subtract(&cmp.removed);
        set.absorb(cmp.modified);
        set.absorb(cmp.added);
        set.recursive_subtract(self.ignored);
        if !set.is_empty() {
            managers.insert(
                manager.to_string(),
                VersionedSet {
                    set,
                    api_version: api_version.to_string(),
                    applied: false,
                },
            );
        }
        managers
    }

    /// An apply of `config` by `manager` (kube's `Updater.Apply`). Returns the new
    /// object, or `None` when the object does not change.
    pub fn apply(
        &self,
        live: &Value,
        config: &Value,
        api_version: &str,
        mut managers: Managers,
        manager: &str,
        force: bool,
    ) -> Result<(Option<Value>, Managers), Vec<Conflict>> {
        let merged = merge(live, config, self.root);
        let last = managers.get(manager).cloned();
        let set = to_field_set(config, self.root).recursive_difference(self.ignored);
        managers.insert(
            manager.to_string(),
            VersionedSet {
                set,
                api_version: api_version.to_string(),
                applied: true,
            },
        );
        let merged = match &last {
            Some(last) if !last.set.is_empty() => self.prune(&merged, &managers, &last.set),
            _ => merged,
        };
        self.update_managers(live, &merged, &mut managers, manager, force)?;
        let new = (!values_equal(live, &merged)).then_some(merged);
        Ok((new, managers))
    }

    /// Remove what the manager applied last time and no longer applies, unless another
    /// manager (or the new configuration) owns it.
    fn prune(&self, merged: &Value, managers: &Managers, last: &FieldSet) -> Value {
        let named = |s: &FieldSet| ensure_named_fields_are_members(s, self.root);
        let last = named(last);
        let pruned = remove_items(merged, &last, self.root);
        // Add back what anybody owns.
        let owned = managers
            .values()
            .fold(FieldSet::new(), |acc, vs| acc.union(&vs.set));
        let merged_set = named(&to_field_set(merged, self.root));
        let pruned_set = named(&to_field_set(&pruned, self.root));
        let unowned = merged_set.difference(&pruned_set.union(&named(&owned)));
        let pruned = remove_items(merged, &unowned, self.root);
        // Add back what the manager never owned (removed above only as a side effect).
        let pruned_set = named(&to_field_set(&pruned, self.root));
        let dangling = merged_set.difference(&pruned_set).intersection(&last);
        remove_items(merged, &dangling, self.root)
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

    fn schema() -> Structural {
        structural(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "sel": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}}}}}}),
        )
    }

    #[test]
    fn merge_by_list_and_map_type() {
        let s = schema();
        let t = TypeRef::root(&s);
        let live = json!({"spec": {"replicas": 1, "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}],
            "tags": ["x", "y"], "args": ["1", "2"], "sel": {"a": "1", "b": "2"}, "env": {"A": "1"}}});
        let config = json!({"spec": {"ports": [{"name": "b", "port": 3}, {"name": "c", "port": 4}],
            "tags": ["z"], "args": ["3"], "sel": {"c": "3"}, "env": {"B": "2"}}});
        assert_eq!(
            merge(&live, &config, t),
            json!({"spec": {"replicas": 1,
                "ports": [{"name": "a", "port": 1}, {"name": "b", "port": 3}, {"name": "c", "port": 4}],
                "tags": ["x", "y", "z"], "args": ["3"], "sel": {"c": "3"}, "env": {"A": "1", "B": "2"}}})
        );
    }

    #[test]
    fn merge_reorders_shared_items_like_the_configuration() {
        let s = schema();
        let t = TypeRef::root(&s);
        let live = json!({"spec": {"tags": ["a", "b", "c", "d"]}});
        let config = json!({"spec": {"tags": ["c", "x", "a"]}});
        assert_eq!(
            merge(&live, &config, t),
            json!({"spec": {"tags": ["b", "c", "d", "x", "a"]}})
        );
    }

    #[test]
    fn remove_items_keeps_emptied_containers() {
        let s = schema();
        let t = TypeRef::root(&s);
        let v = json!({"spec": {"env": {"A": "1"}, "ports": [{"name": "a", "port": 1}], "tags": ["x"]}});
        let set = FieldSet::from_fields_v1(&json!({"f:spec": {"f:env": {"f:A": {}},
            "f:ports": {"k:{\"name\":\"a\"}": {"f:port": {}}}, "f:tags": {"v:\"x\"": {}}}}))
        .unwrap();
        assert_eq!(
            remove_items(&v, &set, t),
            json!({"spec": {"env": {}, "ports": [{"name": "a"}], "tags": []}})
        );
    }

    fn owner(set: Value, applied: bool) -> VersionedSet {
        VersionedSet {
            set: FieldSet::from_fields_v1(&set).unwrap(),
            api_version: "x.example.com/v1".into(),
            applied,
        }
    }

    #[test]
    fn two_managers_on_different_list_map_items() {
        let s = schema();
        let ignored = FieldSet::new();
        let u = Updater {
            root: TypeRef::root(&s),
            ignored: &ignored,
        };
        let live = json!({"spec": {"ports": [{"name": "a", "port": 1}]}});
        let mut managers = Managers::new();
        managers.insert(
            "alice".into(),
            owner(json!({"f:spec": {"f:ports": {"k:{\"name\":\"a\"}": {".": {}, "f:name": {}, "f:port": {}}}}}), true),
        );
        let (new, managers) = u
            .apply(
                &live,
                &json!({"spec": {"ports": [{"name": "b", "port": 2}]}}),
                "x.example.com/v1",
                managers,
                "bob",
                false,
            )
            .unwrap();
        assert_eq!(
            new.unwrap(),
            json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}})
        );
        assert_eq!(managers.len(), 2);
        // bob changing alice's item conflicts on that item's field only.
        let err = u
            .apply(
                &json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}}),
                &json!({"spec": {"ports": [{"name": "a", "port": 9}]}}),
                "x.example.com/v1",
                managers,
                "bob",
                false,
            )
            .unwrap_err();
        assert_eq!(err.len(), 1);
        assert_eq!(err[0].manager, "alice");
        assert_eq!(err[0].path.to_string(), ".spec.ports[name=\"a\"].port");
    }

    #[test]
    fn dropped_field_is_removed_unless_someone_else_owns_it() {
        let s = schema();
        let ignored = FieldSet::new();
        let u = Updater {
            root: TypeRef::root(&s),
            ignored: &ignored,
        };
        let live = json!({"spec": {"replicas": 1, "args": ["x"], "env": {"A": "1"}}});
        let mut managers = Managers::new();
        managers.insert(
            "alice".into(),
            owner(
                json!({"f:spec": {"f:replicas": {}, "f:args": {}, "f:env": {"f:A": {}}}}),
                true,
            ),
        );
        managers.insert(
            "carol".into(),
            owner(json!({"f:spec": {"f:args": {}}}), false),
        );
        let (new, managers) = u
            .apply(
                &live,
                &json!({"spec": {}}),
                "x.example.com/v1",
                managers,
                "alice",
                false,
            )
            .unwrap();
        // replicas and env go (only alice owned them); args stays (carol owns it too).
        assert_eq!(new.unwrap(), json!({"spec": {"args": ["x"]}}));
        assert!(managers.contains_key("carol"));
    }

    #[test]
    fn update_takes_changed_fields_from_others() {
        let s = schema();
        let ignored = FieldSet::new();
        let u = Updater {
            root: TypeRef::root(&s),
            ignored: &ignored,
        };
        let mut managers = Managers::new();
        managers.insert(
            "alice".into(),
            owner(json!({"f:spec": {"f:replicas": {}, "f:args": {}}}), true),
        );
        let managers = u.update(
            &json!({"spec": {"replicas": 1, "args": ["x"]}}),
            &json!({"spec": {"replicas": 2, "args": ["x"]}}),
            "x.example.com/v1",
            managers,
            "carol",
        );
        assert_eq!(
            managers["alice"].set.to_fields_v1(),
            json!({"f:spec": {"f:args": {}}})
        );
        assert_eq!(
            managers["carol"].set.to_fields_v1(),
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert!(!managers["carol"].applied);
    }
}
