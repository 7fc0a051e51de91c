//! CEL types for the checker, and the CEL declaration of a structural schema (kube's
//! `SchemaDeclType`): object types with their fields, lists and maps with the size
//! bounds the cost estimator uses (`maxItems`, `maxProperties`, `maxLength`, or how
//! many values of their minimum size fit in a 3 MiB request).

use super::value::escape;
use crate::schema::sorted_map::SortedMap;
use crate::schema::structural::Structural;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// kube's `MaxRequestSizeBytes` (3 MiB), the size cost estimates assume when nothing bounds a value.
pub const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;

/// A CEL type as the checker sees it.
#[derive(Clone, Debug)]
pub enum Type {
    /// `dyn`.
    Dyn,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// A schema object type.
    Object(Arc<ObjectType>),
    /// `type(T)`.
    TypeOf(Box<Type>),
    /// `optional_type(T)`.
    Optional(Box<Type>),
    /// A library type without parameters (`kubernetes.URL`, `net.IP`, ...).
    Opaque(&'static str),
    /// A type parameter of a declaration, or a free type variable of the checker.
    Param(String),
    /// The type of an expression that failed to check.
    Error,
}

/// An object type: its name and its fields (CEL-escaped names).
#[derive(Debug)]
pub struct ObjectType {
    /// The type name (`selfType0.spec`).
    pub name: String,
    /// Fields by escaped name.
    pub fields: SortedMap<Arc<Decl>>,
}

impl Type {
    /// `list(t)`.
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    /// `map(k, v)`.
    pub fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }

    /// `optional_type(t)`.
    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    /// A type parameter.
    pub fn param(name: &str) -> Type {
        Type::Param(name.to_string())
    }

    /// The kind name used to compare types of the same shape.
    fn kind(&self) -> u8 {
        match self {
            Type::Dyn => 0,
            Type::Null => 1,
            Type::Bool => 2,
            Type::Int => 3,
            Type::Uint => 4,
            Type::Double => 5,
            Type::String => 6,
            Type::Bytes => 7,
            Type::Duration => 8,
            Type::Timestamp => 9,
            Type::List(_) => 10,
            Type::Map(..) => 11,
            Type::Object(_) => 12,
            Type::TypeOf(_) => 13,
            Type::Optional(_) => 14,
            Type::Opaque(_) => 15,
            Type::Param(_) => 16,
            Type::Error => 17,
        }
    }

    /// Same kind (and same name for objects and opaque types).
    pub fn same_kind(&self, other: &Type) -> bool {
        self.kind() == other.kind()
            && match (self, other) {
                (Type::Object(a), Type::Object(b)) => a.name == b.name,
                (Type::Opaque(a), Type::Opaque(b)) => a == b,
                _ => true,
            }
    }

    /// cel-go's `IsExactType`.
    pub fn is_exact(&self, other: &Type) -> bool {
        if !self.same_kind(other) {
            return false;
        }
        match (self, other) {
            (Type::List(a), Type::List(b))
            | (Type::TypeOf(a), Type::TypeOf(b))
            | (Type::Optional(a), Type::Optional(b)) => a.is_exact(b),
            (Type::Map(a, b), Type::Map(c, d)) => a.is_exact(c) && b.is_exact(d),
            (Type::Param(a), Type::Param(b)) => a == b,
            _ => true,
        }
    }

    /// Type parameters (list element, map key and value, ...).
    pub fn params(&self) -> Vec<&Type> {
        match self {
            Type::List(a) | Type::TypeOf(a) | Type::Optional(a) => vec![a],
            Type::Map(a, b) => vec![a, b],
            _ => Vec::new(),
        }
    }

    /// `dyn`.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }

    /// `dyn` or the error type.
    pub fn is_dyn_or_error(&self) -> bool {
        matches!(self, Type::Dyn | Type::Error)
    }

    /// The runtime type name a `type(x)` of this static type is (`int`, `list`, ...).
    pub fn runtime_name(&self) -> Option<&'static str> {
        Some(match self {
            Type::Null => "null_type",
            Type::Bool => "bool",
            Type::Int => "int",
            Type::Uint => "uint",
            Type::Double => "double",
            Type::String => "string",
            Type::Bytes => "bytes",
            Type::Duration => "google.protobuf.Duration",
            Type::Timestamp => "google.protobuf.Timestamp",
            Type::List(_) => "list",
            Type::Map(..) | Type::Object(_) => "map",
            Type::TypeOf(_) => "type",
            Type::Optional(_) => "optional_type",
            Type::Opaque(n) => n,
            _ => return None,
        })
    }
}

impl fmt::Display for Type {
    /// cel-go's `FormatCELType`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("duration"),
            Type::Timestamp => f.write_str("timestamp"),
            Type::List(e) => write!(f, "list({e})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Object(o) => f.write_str(&o.name),
            Type::TypeOf(t) => write!(f, "type({t})"),
            Type::Optional(t) => write!(f, "optional_type({t})"),
            Type::Opaque(n) => f.write_str(n),
            Type::Param(p) => f.write_str(p),
            Type::Error => f.write_str("!error!"),
        }
    }
}

/// The CEL declaration of a schema node (kube's `DeclType`): its type and the bounds
/// cost estimation uses.
#[derive(Debug)]
pub struct Decl {
    /// The CEL type.
    pub ty: Type,
    /// List items or map values.
    pub elem: Option<Arc<Decl>>,
    /// Map keys.
    pub key: Option<Arc<Decl>>,
    /// The most elements (list items, map entries, string characters) a value can have.
    pub max_elements: i64,
    /// The fewest bytes a value can take in JSON.
    pub min_serialized_size: i64,
}

impl Decl {
    fn simple(ty: Type, min_size: i64) -> Decl {
        Decl {
            ty,
            elem: None,
            key: None,
            max_elements: 0,
            min_serialized_size: min_size,
        }
    }

    /// The declaration of an object field (by escaped name).
    pub fn field(&self, escaped: &str) -> Option<Arc<Decl>> {
        match &self.ty {
            Type::Object(o) => o.fields.get(escaped).cloned(),
            _ => None,
        }
    }
}

const MIN_STRING_SIZE: i64 = 2;
const MIN_BOOL_SIZE: i64 = 4;
const MIN_NUMBER_SIZE: i64 = 1;
const MAX_DURATION_SIZE_JSON: i64 = 32;
const MAX_DATETIME_SIZE_JSON: i64 = 32;
const MIN_DURATION_SIZE_JSON: i64 = 3;
const JSON_DATE_SIZE: i64 = 12;
const MIN_DATETIME_SIZE_JSON: i64 = 21;

/// The root type name of rules' `self` (kube makes a fresh one per CRD write; rules
/// can't spell it either way).
pub const SELF_TYPE_NAME: &str = "selfType0";

/// kube's `SchemaDeclType` (with `MaybeAssignTypeName` for object names): `None` when
/// the node is not visible to CEL (no type and not int-or-string, array without items).
pub fn schema_decl(s: &Structural, resource_root: bool) -> Option<Arc<Decl>> {
    decl(s, resource_root, SELF_TYPE_NAME)
}

fn decl(s: &Structural, resource_root: bool, name: &str) -> Option<Arc<Decl>> {
    if s.x_int_or_string {
        let max = match s.value_validation.max_length {
            Some(m) => m.max(0) * 4,
            None => MAX_REQUEST_SIZE_BYTES - 2,
        };
        return Some(Arc::new(Decl {
            max_elements: max,
            ..Decl::simple(Type::Dyn, 1)
        }));
    }
    let vv = &s.value_validation;
    match s.type_.as_str() {
        "array" => {
            let items = s.items.as_deref()?;
            let elem = decl(items, items.x_embedded_resource, &format!("{name}.@idx"))?;
            let max = match vv.max_items {
                Some(m) => m.max(0),
                None => (MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_serialized_size + 1),
            };
            Some(Arc::new(Decl {
                ty: Type::list(elem.ty.clone()),
                elem: Some(elem),
                key: None,
                max_elements: max,
                min_serialized_size: 2,
            }))
        }
        "object"
            if s.additional_properties
                .as_ref()
                .and_then(|a| a.schema())
                .is_some() =>
        {
            let ap = s.additional_properties.as_ref().and_then(|a| a.schema())?;
            let elem = decl(ap, ap.x_embedded_resource, &format!("{name}.@elem"))?;
            let max = match vv.max_properties {
                Some(m) => m.max(0),
                None => (MAX_REQUEST_SIZE_BYTES - 2) / (elem.min_serialized_size + 6),
            };
            // Map keys are strings; x-kubernetes-property-names may bound their length.
            let key_max = s
                .x_property_names
                .as_ref()
                .and_then(|p| p.value_validation.max_length)
                .map(|m| m.max(0) * 4)
                .unwrap_or(MAX_REQUEST_SIZE_BYTES - 2);
            let key = Arc::new(Decl {
                max_elements: key_max,
                ..Decl::simple(Type::String, MIN_STRING_SIZE)
            });
            Some(Arc::new(Decl {
                ty: Type::map(Type::String, elem.ty.clone()),
                elem: Some(elem),
                key: Some(key),
                max_elements: max,
                min_serialized_size: 2,
            }))
        }
        "object" => {
            let mut props: BTreeMap<String, (Structural, bool)> = s
                .properties
                .iter()
                .map(|(k, v)| (k.clone(), (v.clone(), false)))
                .collect();
            if resource_root || s.x_embedded_resource {
                with_type_and_object_meta(&mut props);
            }
            let required: std::collections::HashSet<&str> =
                vv.required.iter().map(String::as_str).collect();
            let mut fields = BTreeMap::new();
            let mut min_size = 2i64;
            for (k, (p, _)) in &props {
                let Some(escaped) = escape(k) else {
                    // Unescapable names are not fields, but count towards the size.
                    if let Some(fd) = decl(p, p.x_embedded_resource, &format!("{name}.{k}")) {
                        if required.contains(k.as_str()) && p.default.is_none() {
                            min_size += k.len() as i64 + fd.min_serialized_size + 4;
                        }
                    }
                    continue;
                };
                let Some(fd) = decl(p, p.x_embedded_resource, &format!("{name}.{escaped}")) else {
                    continue;
                };
                if required.contains(k.as_str()) && p.default.is_none() {
                    min_size += k.len() as i64 + fd.min_serialized_size + 4;
                }
                fields.insert(escaped, fd);
            }
            Some(Arc::new(Decl {
                ty: Type::Object(Arc::new(ObjectType {
                    name: name.to_string(),
                    fields: fields.into_iter().collect(),
                })),
                elem: None,
                key: None,
                max_elements: 0,
                min_serialized_size: min_size,
            }))
        }
        "string" => {
            let (ty, min, max) = match vv.format.as_deref() {
                Some("byte") => (
                    Type::Bytes,
                    MIN_STRING_SIZE,
                    vv.max_length
                        .map(|m| m.max(0))
                        .unwrap_or(MAX_REQUEST_SIZE_BYTES - 2),
                ),
                Some("duration") => (
                    Type::Duration,
                    MIN_DURATION_SIZE_JSON,
                    MAX_DURATION_SIZE_JSON,
                ),
                Some("date") => (Type::Timestamp, JSON_DATE_SIZE, JSON_DATE_SIZE),
                Some("date-time") => (
                    Type::Timestamp,
                    MIN_DATETIME_SIZE_JSON,
                    MAX_DATETIME_SIZE_JSON,
                ),
                _ => {
                    let max = match vv.max_length {
                        Some(m) => m.max(0) * 4,
                        None if !vv.enum_.is_empty() => vv
                            .enum_
                            .iter()
                            .filter_map(|e| e.as_str())
                            .map(|e| e.len() as i64)
                            .max()
                            .unwrap_or(0),
                        None => MAX_REQUEST_SIZE_BYTES - 2,
                    };
                    (Type::String, MIN_STRING_SIZE, max)
                }
            };
            Some(Arc::new(Decl {
                max_elements: max,
                ..Decl::simple(ty, min)
            }))
        }
        "boolean" => Some(Arc::new(Decl::simple(Type::Bool, MIN_BOOL_SIZE))),
        "number" => Some(Arc::new(Decl::simple(Type::Double, MIN_NUMBER_SIZE))),
        "integer" => Some(Arc::new(Decl::simple(Type::Int, MIN_NUMBER_SIZE))),
        _ => None,
    }
}

/// kube's `WithTypeAndObjectMeta` on the property list of a resource root.
fn with_type_and_object_meta(props: &mut BTreeMap<String, (Structural, bool)>) {
    let is = |p: Option<&(Structural, bool)>, t: &str| p.is_some_and(|(s, _)| s.type_ == t);
    let meta_ok = props.get("metadata").is_some_and(|(m, _)| {
        m.type_ == "object"
            && !m.properties.is_empty()
            && m.properties
                .get("name")
                .is_some_and(|n| n.type_ == "string")
            && m.properties
                .get("generateName")
                .is_some_and(|n| n.type_ == "string")
    });
    if is(props.get("kind"), "string") && is(props.get("apiVersion"), "string") && meta_ok {
        return;
    }
    let string = Structural {
        type_: "string".into(),
        ..Default::default()
    };
    props.insert("kind".into(), (string.clone(), true));
    props.insert("apiVersion".into(), (string.clone(), true));
    let mut meta = Structural {
        type_: "object".into(),
        ..Default::default()
    };
    meta.properties.insert("name".into(), string.clone());
    meta.properties.insert("generateName".into(), string);
    props.insert("metadata".into(), (meta, true));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decl_of(v: serde_json::Value) -> Arc<Decl> {
        let p = crate::schema::props::JSONSchemaProps::from_value(&v).expect("schema");
        schema_decl(&Structural::from_props(&p), false).expect("decl")
    }

    #[test]
    fn bounds_come_from_the_schema() {
        let d = decl_of(
            json!({"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 10}}),
        );
        assert_eq!(d.max_elements, 100);
        assert_eq!(d.elem.as_ref().unwrap().max_elements, 40);
        let d = decl_of(json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(d.max_elements, (MAX_REQUEST_SIZE_BYTES - 2) / 3);
        let d = decl_of(
            json!({"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 10}),
        );
        assert_eq!(d.max_elements, 10);
        assert_eq!(d.ty.to_string(), "map(string, string)");
    }

    #[test]
    fn object_fields_are_escaped_and_named() {
        let d = decl_of(
            json!({"type": "object", "properties": {"foo-bar": {"type": "integer"}, "spec": {"type": "object", "properties": {"a": {"type": "boolean"}}}}}),
        );
        assert!(d.field("foo__dash__bar").is_some());
        assert_eq!(d.field("spec").unwrap().ty.to_string(), "selfType0.spec");
    }
}
