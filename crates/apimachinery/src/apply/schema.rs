//! What merging needs from the schema: the structural schema seen as kube's
//! structured-merge-diff types (as kube-openapi's `schemaconv` converts a CRD's
//! OpenAPI): scalars, lists (`atomic`, `set`, `map` with keys) and maps (granular or
//! atomic, declared fields plus an element type for other keys).
//!
//! - A list without `x-kubernetes-list-type` is atomic; a map without
//!   `x-kubernetes-map-type` is granular.
//! - `metadata` of the root and of `x-kubernetes-embedded-resource` nodes is kube's
//!   `ObjectMeta` (labels/annotations granular maps, finalizers a set, ownerReferences a
//!   list-map keyed by `uid`, managedFields atomic); `apiVersion` and `kind` are scalars.
//! - Keys an object does not declare are "deduced" when the object preserves unknown
//!   fields (itself or an ancestor), or declares no properties, or has
//!   `additionalProperties: true`: deduced maps are granular, deduced lists atomic.
//!   Otherwise such keys are undeclared (an error in an applied configuration).

use crate::schema::structural::{AdditionalProperties, Structural};
use serde_json::Value;

/// The kind of a scalar, for kube's type errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// `integer` / `number`.
    Numeric,
    /// `string` (without a special format).
    String,
    /// `boolean`.
    Boolean,
    /// Any scalar.
    Untyped,
}

/// The built-in types of `ObjectMeta` and its parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaType {
    /// `ObjectMeta`.
    ObjectMeta,
    /// `labels` / `annotations`: a granular map of strings.
    StringMap,
    /// `finalizers`: a set of strings.
    StringSet,
    /// `ownerReferences`: a list-map keyed by `uid`.
    OwnerReferences,
    /// One `OwnerReference`.
    OwnerReference,
    /// `managedFields`: an atomic list.
    AtomicList,
}

/// A type of the merge schema; cheap to copy (it borrows the structural schema).
#[derive(Clone, Copy, Debug)]
pub enum TypeRef<'s> {
    /// A node of the CRD schema. `preserve`: an ancestor keeps unknown fields;
    /// `embedded`: the node is the root or an embedded resource.
    Node {
        /// The structural node.
        node: &'s Structural,
        /// An ancestor has `x-kubernetes-preserve-unknown-fields: true`.
        preserve: bool,
        /// The node is the object root or an `x-kubernetes-embedded-resource`.
        embedded: bool,
    },
    /// A part of `ObjectMeta`.
    Meta(MetaType),
    /// A scalar.
    Scalar(ScalarKind),
    /// kube's `__untyped_deduced_`: scalar, atomic list or granular map of deduced values.
    Deduced,
    /// kube's `__untyped_atomic_`: scalar, atomic list or atomic map.
    UntypedAtomic,
    /// No type: a key the schema does not allow.
    Undeclared,
}

/// How a list merges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListKind<'s> {
    /// Replaced as a whole.
    Atomic,
    /// Items are scalars, identified by value.
    Set,
    /// Items are objects, identified by these key fields.
    Map(&'s [String]),
    /// `ObjectMeta.ownerReferences`, keyed by `uid`.
    MapByUid,
}

impl ListKind<'_> {
    /// The key field names of a list-map.
    pub fn keys(&self) -> Vec<&str> {
        match self {
            ListKind::Map(keys) => keys.iter().map(String::as_str).collect(),
            ListKind::MapByUid => vec!["uid"],
            _ => Vec::new(),
        }
    }

    /// Whether items are identified (set or list-map) rather than the list being atomic.
    pub fn is_associative(&self) -> bool {
        !matches!(self, ListKind::Atomic)
    }
}

/// A list type: how it merges and the type of its items.
#[derive(Clone, Copy, Debug)]
pub struct ListType<'s> {
    /// Merge behaviour.
    pub kind: ListKind<'s>,
    /// Item type.
    pub elem: TypeRef<'s>,
}

/// A map type: granular or atomic, with its declared fields and other keys' type.
#[derive(Clone, Copy, Debug)]
pub struct MapType<'s> {
    /// `x-kubernetes-map-type: atomic`.
    pub atomic: bool,
    owner: TypeRef<'s>,
}

/// The shapes a type allows (an untyped node allows all three).
#[derive(Clone, Copy, Debug)]
pub struct Atom<'s> {
    /// A scalar is allowed.
    pub scalar: Option<ScalarKind>,
    /// A list is allowed.
    pub list: Option<ListType<'s>>,
    /// A map is allowed.
    pub map: Option<MapType<'s>>,
}

/// The one shape used to walk a value.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'s> {
    /// A scalar leaf.
    Scalar(ScalarKind),
    /// A list.
    List(ListType<'s>),
    /// A map.
    Map(MapType<'s>),
    /// The type allows nothing (undeclared).
    Invalid,
}

impl<'s> Atom<'s> {
    /// Which shapes are present, for kube's "same atom" check after deduction.
    pub fn signature(&self) -> (bool, bool, bool) {
        (
            self.scalar.is_some(),
            self.list.is_some(),
            self.map.is_some(),
        )
    }

    /// kube's `deduceAtom`: narrow to the value's shape when the type allows it.
    pub fn deduce(self, v: Option<&Value>) -> Atom<'s> {
        let only = |scalar, list, map| Atom { scalar, list, map };
        match v {
            Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) if self.scalar.is_some() => {
                only(self.scalar, None, None)
            }
            Some(Value::Array(_)) if self.list.is_some() => only(None, self.list, None),
            Some(Value::Object(_)) if self.map.is_some() => only(None, None, self.map),
            _ => self,
        }
    }

    /// kube's `handleAtom`: a map wins over a scalar, a scalar over a list.
    pub fn shape(&self) -> Shape<'s> {
        if let Some(m) = self.map {
            Shape::Map(m)
        } else if let Some(s) = self.scalar {
            Shape::Scalar(s)
        } else if let Some(l) = self.list {
            Shape::List(l)
        } else {
            Shape::Invalid
        }
    }
}

const OBJECT_META_SCALARS: &[&str] = &[
    "creationTimestamp",
    "deletionGracePeriodSeconds",
    "deletionTimestamp",
    "generateName",
    "generation",
    "name",
    "namespace",
    "resourceVersion",
    "selfLink",
    "uid",
];

const OWNER_REFERENCE_FIELDS: &[&str] = &[
    "apiVersion",
    "blockOwnerDeletion",
    "controller",
    "kind",
    "name",
    "uid",
];

impl<'s> TypeRef<'s> {
    /// The type of a whole custom resource with this schema.
    pub fn root(schema: &'s Structural) -> Self {
        TypeRef::Node {
            node: schema,
            preserve: false,
            embedded: true,
        }
    }

    fn child(node: &'s Structural, preserve: bool) -> Self {
        TypeRef::Node {
            node,
            preserve,
            embedded: node.x_embedded_resource,
        }
    }

    /// The shapes this type allows.
    pub fn atom(self) -> Atom<'s> {
        let map = |atomic| {
            Some(MapType {
                atomic,
                owner: self,
            })
        };
        let list = |kind, elem| Some(ListType { kind, elem });
        let none = Atom {
            scalar: None,
            list: None,
            map: None,
        };
        match self {
            TypeRef::Node { node, preserve, .. } => {
                let preserve = preserve || node.x_preserve_unknown_fields;
                let list_type = || {
                    let kind = match node.x_list_type.as_deref() {
                        Some("set") => ListKind::Set,
                        Some("map") => ListKind::Map(&node.x_list_map_keys),
                        _ => ListKind::Atomic,
                    };
                    let elem = match &node.items {
                        Some(items) => TypeRef::child(items, preserve),
                        None => TypeRef::UntypedAtomic,
                    };
                    list(kind, elem)
                };
                let map_type = || map(node.x_map_type.as_deref() == Some("atomic"));
                match node.type_.as_str() {
                    "object" => Atom {
                        map: map_type(),
                        ..none
                    },
                    "array" => Atom {
                        list: list_type(),
                        ..none
                    },
                    "integer" | "number" => Atom {
                        scalar: Some(ScalarKind::Numeric),
                        ..none
                    },
                    "boolean" => Atom {
                        scalar: Some(ScalarKind::Boolean),
                        ..none
                    },
                    "string" => Atom {
                        scalar: Some(match node.value_validation.format.as_deref() {
                            None | Some("") | Some("byte") => ScalarKind::String,
                            Some(_) => ScalarKind::Untyped,
                        }),
                        ..none
                    },
                    "" => Atom {
                        scalar: Some(ScalarKind::Untyped),
                        list: list_type(),
                        map: map_type(),
                    },
                    _ => Atom {
                        scalar: Some(ScalarKind::Untyped),
                        ..none
                    },
                }
            }
            TypeRef::Meta(m) => match m {
                MetaType::ObjectMeta | MetaType::StringMap | MetaType::OwnerReference => Atom {
                    map: map(false),
                    ..none
                },
                MetaType::StringSet => Atom {
                    list: list(ListKind::Set, TypeRef::Scalar(ScalarKind::String)),
                    ..none
                },
                MetaType::OwnerReferences => Atom {
                    list: list(ListKind::MapByUid, TypeRef::Meta(MetaType::OwnerReference)),
                    ..none
                },
                MetaType::AtomicList => Atom {
                    list: list(ListKind::Atomic, TypeRef::UntypedAtomic),
                    ..none
                },
            },
            TypeRef::Scalar(k) => Atom {
                scalar: Some(k),
                ..none
            },
            TypeRef::Deduced => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: list(ListKind::Atomic, TypeRef::UntypedAtomic),
                map: map(false),
            },
            TypeRef::UntypedAtomic => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: list(ListKind::Atomic, TypeRef::UntypedAtomic),
                map: map(true),
            },
            TypeRef::Undeclared => none,
        }
    }

    /// The shape used for a value of this type (`None` for an absent value).
    pub fn shape_for(self, v: Option<&Value>) -> Shape<'s> {
        self.atom().deduce(v).shape()
    }
}

impl<'s> MapType<'s> {
    /// The type of a declared field.
    pub fn field(&self, name: &str) -> Option<TypeRef<'s>> {
        match self.owner {
            TypeRef::Node {
                node,
                preserve,
                embedded,
            } => {
                let preserve = preserve || node.x_preserve_unknown_fields;
                if embedded {
                    match name {
                        "apiVersion" | "kind" => return Some(TypeRef::Scalar(ScalarKind::String)),
                        "metadata" => return Some(TypeRef::Meta(MetaType::ObjectMeta)),
                        _ => {}
                    }
                }
                node.properties
                    .get(name)
                    .map(|p| TypeRef::child(p, preserve))
            }
            TypeRef::Meta(MetaType::ObjectMeta) => match name {
                "labels" | "annotations" => Some(TypeRef::Meta(MetaType::StringMap)),
                "finalizers" => Some(TypeRef::Meta(MetaType::StringSet)),
                "ownerReferences" => Some(TypeRef::Meta(MetaType::OwnerReferences)),
                "managedFields" => Some(TypeRef::Meta(MetaType::AtomicList)),
                n if OBJECT_META_SCALARS.contains(&n) => Some(TypeRef::Scalar(
                    if n == "generation" || n == "deletionGracePeriodSeconds" {
                        ScalarKind::Numeric
                    } else {
                        ScalarKind::String
                    },
                )),
                _ => None,
            },
            TypeRef::Meta(MetaType::OwnerReference) => OWNER_REFERENCE_FIELDS
                .contains(&name)
                .then_some(TypeRef::Scalar(
                    if name == "blockOwnerDeletion" || name == "controller" {
                        ScalarKind::Boolean
                    } else {
                        ScalarKind::String
                    },
                )),
            _ => None,
        }
    }

    /// The type of keys that are not declared fields, if such keys are allowed.
    pub fn elem(&self) -> Option<TypeRef<'s>> {
        match self.owner {
            TypeRef::Node {
                node,
                preserve,
                embedded,
            } => {
                let preserve = preserve || node.x_preserve_unknown_fields;
                match &node.additional_properties {
                    Some(AdditionalProperties::Schema(s)) => Some(TypeRef::child(s, preserve)),
                    Some(AdditionalProperties::Bool(true)) => Some(TypeRef::Deduced),
                    Some(AdditionalProperties::Bool(false)) => None,
                    None => (preserve || (node.properties.is_empty() && !embedded))
                        .then_some(TypeRef::Deduced),
                }
            }
            TypeRef::Meta(MetaType::StringMap) => Some(TypeRef::Scalar(ScalarKind::String)),
            TypeRef::Deduced => Some(TypeRef::Deduced),
            TypeRef::UntypedAtomic => Some(TypeRef::UntypedAtomic),
            _ => None,
        }
    }

    /// The type of the value under `key`: the declared field, else the element type,
    /// else [`TypeRef::Undeclared`].
    pub fn value_type(&self, key: &str) -> TypeRef<'s> {
        self.field(key)
            .or_else(|| self.elem())
            .unwrap_or(TypeRef::Undeclared)
    }

    /// The default of a declared field (list-map keys may be defaulted).
    pub fn field_default(&self, name: &str) -> Option<Value> {
        match self.field(name)? {
            TypeRef::Node { node, .. } => node.default.clone(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::props::JSONSchemaProps;
    use serde_json::json;

    fn structural(v: Value) -> Structural {
        let props: JSONSchemaProps = serde_json::from_value(v).unwrap();
        Structural::from_props(&props)
    }

    #[test]
    fn root_metadata_is_object_meta_and_lists_default_to_atomic() {
        let s = structural(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}},
            "spec": {"type": "object", "properties": {
                "args": {"type": "array", "items": {"type": "string"}},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}}));
        let root = TypeRef::root(&s).atom().map.unwrap();
        assert!(matches!(
            root.field("metadata"),
            Some(TypeRef::Meta(MetaType::ObjectMeta))
        ));
        assert!(root.elem().is_none());
        let spec = root.value_type("spec").atom().map.unwrap();
        let args = spec.value_type("args").atom().list.unwrap();
        assert_eq!(args.kind, ListKind::Atomic);
        let tags = spec.value_type("tags").atom().list.unwrap();
        assert_eq!(tags.kind, ListKind::Set);
    }

    #[test]
    fn preserve_unknown_fields_deduces_undeclared_keys() {
        let s = structural(json!({"type": "object", "properties": {
            "json": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {"bar": {"type": "object", "properties": {"inner": {"type": "integer"}}}}},
            "closed": {"type": "object", "properties": {"a": {"type": "string"}}},
            "open": {"type": "object"}}}));
        let root = TypeRef::root(&s).atom().map.unwrap();
        let json_map = root.value_type("json").atom().map.unwrap();
        assert!(matches!(json_map.elem(), Some(TypeRef::Deduced)));
        // Preserve is inherited: bar's own undeclared keys are deduced too.
        let bar = json_map.value_type("bar").atom().map.unwrap();
        assert!(matches!(bar.elem(), Some(TypeRef::Deduced)));
        let closed = root.value_type("closed").atom().map.unwrap();
        assert!(closed.elem().is_none());
        assert!(matches!(closed.value_type("x"), TypeRef::Undeclared));
        let open = root.value_type("open").atom().map.unwrap();
        assert!(matches!(open.elem(), Some(TypeRef::Deduced)));
        // Deduced maps are granular, deduced lists atomic.
        let d = TypeRef::Deduced.atom();
        assert!(!d.map.unwrap().atomic);
        assert_eq!(d.list.unwrap().kind, ListKind::Atomic);
    }

    #[test]
    fn untyped_node_deduces_shape_from_value() {
        let s = structural(json!({"x-kubernetes-preserve-unknown-fields": true}));
        let t = TypeRef::Node {
            node: &s,
            preserve: false,
            embedded: false,
        };
        assert!(matches!(t.shape_for(Some(&json!({"a": 1}))), Shape::Map(_)));
        assert!(matches!(t.shape_for(Some(&json!(1))), Shape::Scalar(_)));
        assert!(matches!(t.shape_for(Some(&json!([1]))), Shape::List(_)));
        // An absent or null value takes the map shape first, as kube's handleAtom.
        assert!(matches!(t.shape_for(None), Shape::Map(_)));
    }
}
