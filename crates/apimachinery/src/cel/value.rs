//! CEL values over JSON, typed by the structural schema (kube's `UnstructuredToVal`).
//!
//! Objects, maps and lists read from the custom resource stay borrowed JSON and are
//! converted lazily, element by element, as an expression touches them: a rule on a
//! large list costs what it reads, not a copy of the list. Integers are `int` (never
//! `uint`), `number` is `double`, strings with `format: duration | date | date-time |
//! byte` become durations, timestamps and bytes, and `x-kubernetes-int-or-string` is
//! `int` or `string` at run time.

use crate::goformat::go_type_name;
use crate::schema::sorted_map::SortedMap;
use crate::schema::structural::Structural;
use chrono::{DateTime, Utc};
use serde_json::{Map as JsonMap, Value};
use std::borrow::Cow;
use std::cmp::Ordering;
use std::rc::Rc;

/// How a schema node turns JSON into CEL values (the runtime half of kube's decl types).
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// What the node holds.
    pub kind: ShapeKind,
    /// `nullable: true`: JSON `null` is CEL `null`, not an error.
    pub nullable: bool,
}

/// The kinds of schema nodes, as kube's value adapter tells them apart.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeKind {
    /// `x-kubernetes-int-or-string`.
    IntOrString,
    /// An object with `properties` (or an embedded resource): fields by their CEL name.
    Object(SortedMap<Shape>),
    /// An object with an `additionalProperties` schema: a CEL map.
    Map(Box<Shape>),
    /// An object with neither: a map whose keys are all hidden.
    Opaque,
    /// An array; `None` items is kube's "invalid array type".
    List(Option<Box<Shape>>, ListKind),
    /// A string with its `format`.
    String(StringFormat),
    /// `number`.
    Number,
    /// `integer`.
    Integer,
    /// `boolean`.
    Boolean,
    /// No type, `x-kubernetes-preserve-unknown-fields`: the JSON as is.
    Preserved,
    /// Anything else (the type name, for the error).
    Invalid(String),
    /// Untyped JSON as cel-go's native adapter sees it (`dyn`: the admission
    /// environment's `object`, `oldObject`, `params`): objects are maps, whole numbers
    /// `int`, other numbers `double`.
    Dyn,
}

/// The shape of untyped JSON (`dyn`), at every depth.
pub static DYN: Shape = Shape {
    kind: ShapeKind::Dyn,
    nullable: true,
};

/// The list kind of untyped JSON arrays.
static DYN_LIST: ListKind = ListKind::Atomic;

/// `x-kubernetes-list-type` as it changes equality and concatenation.
#[derive(Clone, Debug, PartialEq)]
pub enum ListKind {
    /// `atomic` or unset: ordered.
    Atomic,
    /// `set`: unordered, no duplicates.
    Set,
    /// `map`: items identified by these key fields.
    Map(Vec<String>),
}

/// String formats that kube exposes as other CEL types.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StringFormat {
    /// A plain string.
    Plain,
    /// `duration`.
    Duration,
    /// `date`.
    Date,
    /// `date-time`.
    DateTime,
    /// `byte` (base64).
    Byte,
}

impl Shape {
    /// The shape of a structural schema node; `resource_root` adds kube's implicit
    /// `apiVersion`, `kind` and `metadata.{name,generateName}` (the root of a custom
    /// resource and every embedded resource).
    pub fn of(s: &Structural, resource_root: bool) -> Shape {
        let kind = if s.x_int_or_string {
            ShapeKind::IntOrString
        } else {
            match s.type_.as_str() {
                "object" => {
                    if resource_root || s.x_embedded_resource || !s.properties.is_empty() {
                        let mut props: SortedMap<Shape> = s
                            .properties
                            .iter()
                            .map(|(k, v)| (k.clone(), Shape::of(v, v.x_embedded_resource)))
                            .collect();
                        if resource_root || s.x_embedded_resource {
                            with_type_and_object_meta(&mut props);
                        }
                        ShapeKind::Object(props)
                    } else if let Some(ap) =
                        s.additional_properties.as_ref().and_then(|a| a.schema())
                    {
                        ShapeKind::Map(Box::new(Shape::of(ap, ap.x_embedded_resource)))
                    } else {
                        ShapeKind::Opaque
                    }
                }
                "array" => ShapeKind::List(
                    s.items
                        .as_deref()
                        .map(|i| Box::new(Shape::of(i, i.x_embedded_resource))),
                    match s.x_list_type.as_deref() {
                        Some("set") => ListKind::Set,
                        Some("map") => ListKind::Map(s.x_list_map_keys.clone()),
                        _ => ListKind::Atomic,
                    },
                ),
                "string" => ShapeKind::String(match s.value_validation.format.as_deref() {
                    Some("duration") => StringFormat::Duration,
                    Some("date") => StringFormat::Date,
                    Some("date-time") => StringFormat::DateTime,
                    Some("byte") => StringFormat::Byte,
                    _ => StringFormat::Plain,
                }),
                "number" => ShapeKind::Number,
                "integer" => ShapeKind::Integer,
                "boolean" => ShapeKind::Boolean,
                _ if s.x_preserve_unknown_fields => ShapeKind::Preserved,
                other => ShapeKind::Invalid(other.to_string()),
            }
        };
        Shape {
            kind,
            nullable: s.nullable,
        }
    }

    fn plain(kind: ShapeKind) -> Shape {
        Shape {
            kind,
            nullable: false,
        }
    }
}

/// kube's `WithTypeAndObjectMeta`: unless the schema already declares them as strings,
/// `kind`, `apiVersion` and `metadata` (with only `name` and `generateName`) replace
/// whatever the schema says.
fn with_type_and_object_meta(props: &mut SortedMap<Shape>) {
    let string = || Shape::plain(ShapeKind::String(StringFormat::Plain));
    let is_string = |s: Option<&Shape>| {
        s.is_some_and(|s| matches!(s.kind, ShapeKind::String(StringFormat::Plain)))
    };
    let meta_ok = match props.get("metadata").map(|m| &m.kind) {
        Some(ShapeKind::Object(m)) => is_string(m.get("name")) && is_string(m.get("generateName")),
        _ => false,
    };
    if is_string(props.get("kind")) && is_string(props.get("apiVersion")) && meta_ok {
        return;
    }
    props.insert("kind".into(), string());
    props.insert("apiVersion".into(), string());
    let meta: SortedMap<Shape> = [
        ("name".to_string(), string()),
        ("generateName".to_string(), string()),
    ]
    .into_iter()
    .collect();
    props.insert("metadata".into(), Shape::plain(ShapeKind::Object(meta)));
}

/// A runtime error, with cel-go's message.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalError {
    /// The message as cel-go prints it (`no such key: foo`).
    pub message: String,
    /// The per-call cost limit was hit: evaluation stops for good.
    pub cost_exceeded: bool,
}

impl EvalError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        EvalError {
            message: message.into(),
            cost_exceeded: false,
        }
    }

    /// cel-go's error when no overload takes the arguments.
    pub fn no_such_overload() -> Self {
        EvalError::new("no such overload")
    }
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for EvalError {}

/// The result of evaluating an expression.
pub type EvalResult<'a> = Result<Val<'a>, EvalError>;

/// A CEL value. `'a` is the lifetime of the JSON being validated.
#[derive(Clone, Debug)]
pub enum Val<'a> {
    /// `null`.
    Null,
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `uint`.
    Uint(u64),
    /// `double`.
    Double(f64),
    /// `string`.
    Str(Rc<str>),
    /// `bytes`.
    Bytes(Rc<[u8]>),
    /// `google.protobuf.Duration`, in nanoseconds (Go's `time.Duration`).
    Duration(i64),
    /// `google.protobuf.Timestamp`.
    Timestamp(DateTime<Utc>),
    /// `list(T)`.
    List(List<'a>),
    /// `map(K, V)` and schema objects.
    Map(Map<'a>),
    /// A type value (`type(x)`, `int`, `string`).
    Type(&'static str),
    /// `optional_type(T)`.
    Optional(Option<Rc<Val<'a>>>),
    /// A value kept by `x-kubernetes-preserve-unknown-fields` with no type.
    Preserved(&'a Value),
    /// A value of a library type: kube's quantity, URL, IP, CIDR, semver and format,
    /// its authz library's authorizer, checks and decisions.
    Ext(Rc<dyn Extension>),
}

/// A value of a type that a library adds to CEL: kube's URL, quantity, IP, CIDR, semver
/// and named format ([`super::kubelib`]), its authz library's values
/// ([`super::admission`]). The interpreter knows them only through this trait; each
/// library implements it for its values and downcasts its own (`as_any`).
pub trait Extension: std::fmt::Debug {
    /// The CEL type name.
    fn type_name(&self) -> &'static str;
    /// `==` with another library value (false across types).
    fn equals(&self, other: &dyn Extension) -> bool;
    /// `string(x)`, for the types that declare it.
    fn to_string_val(&self) -> Option<String> {
        None
    }
    /// The member function `name` of this value with `args` after the target: `None`
    /// when its library has no such overload.
    fn call<'a>(&self, name: &str, args: &[Val<'a>]) -> Option<EvalResult<'a>>;
    /// The value, for its own library to downcast.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A CEL list: borrowed JSON typed by its shape, or built by the expression.
#[derive(Clone, Debug)]
pub enum List<'a> {
    /// JSON items and the list's element shape.
    Json(&'a [Value], &'a Shape, &'a ListKind),
    /// Values made during evaluation, with the list type they keep (for `==` and `+`).
    Owned(Rc<Vec<Val<'a>>>, ListKind),
}

/// A CEL map: a borrowed JSON object typed by its shape, or built by the expression.
#[derive(Clone, Debug)]
pub enum Map<'a> {
    /// JSON object and its shape (`Object`, `Map` or `Opaque`).
    Json(&'a JsonMap<String, Value>, &'a Shape),
    /// Entries made during evaluation, keys unique.
    Owned(Rc<Vec<(Val<'a>, Val<'a>)>>),
}

impl<'a> Val<'a> {
    /// A string value.
    pub fn str(s: &str) -> Val<'a> {
        Val::Str(Rc::from(s))
    }

    /// A list built during evaluation.
    pub fn list(items: Vec<Val<'a>>) -> Val<'a> {
        Val::List(List::Owned(Rc::new(items), ListKind::Atomic))
    }

    /// The CEL type name at run time (what `type(x)` returns).
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null_type",
            Val::Bool(_) => "bool",
            Val::Int(_) => "int",
            Val::Uint(_) => "uint",
            Val::Double(_) => "double",
            Val::Str(_) => "string",
            Val::Bytes(_) => "bytes",
            Val::Duration(_) => "google.protobuf.Duration",
            Val::Timestamp(_) => "google.protobuf.Timestamp",
            Val::List(_) => "list",
            Val::Map(_) => "map",
            Val::Type(_) => "type",
            Val::Optional(_) => "optional_type",
            Val::Preserved(_) => "unknown",
            Val::Ext(e) => e.type_name(),
        }
    }

    /// Size for cost accounting (cel-go's `actualSize`): length of strings, bytes,
    /// lists and maps, 1 for everything else.
    pub fn cost_size(&self) -> u64 {
        match self {
            Val::Str(s) => s.chars().count() as u64,
            Val::Bytes(b) => b.len() as u64,
            Val::List(l) => l.len() as u64,
            Val::Map(m) => m.len() as u64,
            Val::Optional(Some(v)) => v.cost_size(),
            _ => 1,
        }
    }
}

/// Convert a JSON value to CEL by its schema shape (kube's `UnstructuredToVal`).
pub fn to_val<'a>(v: &'a Value, shape: &'a Shape) -> EvalResult<'a> {
    if v.is_null() {
        return if shape.nullable {
            Ok(Val::Null)
        } else {
            Err(EvalError::new(
                "invalid data, got null for schema with nullable=false",
            ))
        };
    }
    match &shape.kind {
        ShapeKind::IntOrString => match v {
            Value::String(s) => Ok(Val::str(s)),
            Value::Number(n) if n.as_i64().is_some() => Ok(Val::Int(n.as_i64().unwrap_or(0))),
            _ => Err(EvalError::new(
                "invalid data, expected XIntOrString value to be either a string or integer",
            )),
        },
        ShapeKind::Object(_) | ShapeKind::Map(_) | ShapeKind::Opaque => match v {
            Value::Object(m) => Ok(Val::Map(Map::Json(m, shape))),
            _ => Err(EvalError::new(
                "invalid data, expected a map for the provided schema with type=object",
            )),
        },
        ShapeKind::List(items, kind) => match (v, items) {
            (Value::Array(a), Some(items)) => Ok(Val::List(List::Json(a, items, kind))),
            (Value::Array(_), None) => Err(EvalError::new(
                "invalid array type, expected Items with a non-empty Schema",
            )),
            _ => Err(EvalError::new(
                "invalid data, expected an array for the provided schema with type=array",
            )),
        },
        ShapeKind::String(format) => {
            let Value::String(s) = v else {
                return Err(EvalError::new(format!(
                    "invalid data, expected string, got {}",
                    go_type_name(v)
                )));
            };
            match format {
                StringFormat::Plain => Ok(Val::str(s)),
                StringFormat::Duration => crate::duration::parse_schema_duration(s)
                    .map(Val::Duration)
                    .ok_or_else(|| EvalError::new(format!("Invalid duration {s}"))),
                StringFormat::Date => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                    .ok()
                    .and_then(|d| d.and_hms_opt(0, 0, 0))
                    .map(|d| Val::Timestamp(d.and_utc()))
                    .ok_or_else(|| EvalError::new(format!("Invalid date formatted string {s}"))),
                StringFormat::DateTime => DateTime::parse_from_rfc3339(s)
                    .map(|d| Val::Timestamp(d.with_timezone(&Utc)))
                    .map_err(|_| EvalError::new(format!("Invalid date-time formatted string {s}"))),
                StringFormat::Byte => {
                    use base64::Engine;
                    base64::engine::general_purpose::STANDARD
                        .decode(s)
                        .map(|b| Val::Bytes(Rc::from(b)))
                        .map_err(|_| EvalError::new(format!("Invalid byte formatted string {s}")))
                }
            }
        }
        ShapeKind::Number => match v {
            Value::Number(n) => Ok(Val::Double(n.as_f64().unwrap_or(0.0))),
            _ => Err(EvalError::new(format!(
                "invalid data, expected float, got {}",
                go_type_name(v)
            ))),
        },
        ShapeKind::Integer => match v.as_i64() {
            Some(i) => Ok(Val::Int(i)),
            None => Err(EvalError::new(format!(
                "invalid data, expected int, got {}",
                go_type_name(v)
            ))),
        },
        ShapeKind::Boolean => match v {
            Value::Bool(b) => Ok(Val::Bool(*b)),
            _ => Err(EvalError::new(format!(
                "invalid data, expected bool, got {}",
                go_type_name(v)
            ))),
        },
        ShapeKind::Preserved => Ok(Val::Preserved(v)),
        ShapeKind::Dyn => Ok(match v {
            Value::Bool(b) => Val::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Val::Int(i),
                None => Val::Double(n.as_f64().unwrap_or(0.0)),
            },
            Value::String(s) => Val::str(s),
            Value::Array(a) => Val::List(List::Json(a, &DYN, &DYN_LIST)),
            Value::Object(m) => Val::Map(Map::Json(m, &DYN)),
            Value::Null => Val::Null,
        }),
        ShapeKind::Invalid(t) => Err(EvalError::new(format!(
            "invalid type, expected object, array, number, integer, boolean or string, or no type with x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields is true, got {t}"
        ))),
    }
}

impl<'a> List<'a> {
    /// Number of items.
    pub fn len(&self) -> usize {
        match self {
            List::Json(a, _, _) => a.len(),
            List::Owned(v, _) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The list type (`x-kubernetes-list-type`) the list carries.
    pub fn kind(&self) -> &ListKind {
        match self {
            List::Json(_, _, k) => k,
            List::Owned(_, k) => k,
        }
    }

    /// Item `i` (unchecked bounds are the caller's).
    pub fn get(&self, i: usize) -> EvalResult<'a> {
        match self {
            List::Json(a, shape, _) => match a.get(i) {
                Some(v) => to_val(v, shape),
                None => Err(EvalError::new(format!("index out of bounds: {i}"))),
            },
            List::Owned(v, _) => v
                .get(i)
                .cloned()
                .ok_or_else(|| EvalError::new(format!("index out of bounds: {i}"))),
        }
    }

    /// All items, converted.
    pub fn items(&self) -> Result<Vec<Val<'a>>, EvalError> {
        (0..self.len()).map(|i| self.get(i)).collect()
    }
}

impl<'a> Map<'a> {
    /// Number of entries (hidden JSON keys included, as kube counts them).
    pub fn len(&self) -> usize {
        match self {
            Map::Json(m, _) => m.len(),
            Map::Owned(v) => v.len(),
        }
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value under `key`: `Ok(None)` when absent (or hidden, or a null object field).
    pub fn get(&self, key: &Val<'a>) -> Result<Option<Val<'a>>, EvalError> {
        match self {
            Map::Json(m, shape) => {
                let Val::Str(k) = key else {
                    return Err(EvalError::no_such_overload());
                };
                json_field(m, shape, k)
            }
            Map::Owned(entries) => {
                for (k, v) in entries.iter() {
                    if key_equals(k, key) {
                        return Ok(Some(v.clone()));
                    }
                }
                Ok(None)
            }
        }
    }

    /// The visible keys, in order (object field names escaped for CEL).
    pub fn keys(&self) -> Vec<Val<'a>> {
        match self {
            Map::Json(m, shape) => match &shape.kind {
                ShapeKind::Object(props) => m
                    .keys()
                    .filter(|k| props.contains_key(k.as_str()))
                    .map(|k| Val::str(&escape(k).unwrap_or_else(|| k.clone())))
                    .collect(),
                ShapeKind::Map(_) | ShapeKind::Dyn => m.keys().map(|k| Val::str(k)).collect(),
                _ => Vec::new(),
            },
            Map::Owned(entries) => entries.iter().map(|(k, _)| k.clone()).collect(),
        }
    }
}

/// Field `k` (a CEL name, escaped for objects) of a JSON object of this shape.
fn json_field<'a>(
    m: &'a JsonMap<String, Value>,
    shape: &'a Shape,
    k: &str,
) -> Result<Option<Val<'a>>, EvalError> {
    match &shape.kind {
        ShapeKind::Object(props) => {
            let Some(name) = unescape(k) else {
                return Ok(None);
            };
            match (m.get(&*name), props.get(&name)) {
                (Some(Value::Null), _) | (None, _) | (_, None) => Ok(None),
                (Some(v), Some(s)) => to_val(v, s).map(Some),
            }
        }
        ShapeKind::Map(elem) => match m.get(k) {
            Some(v) => to_val(v, elem).map(Some),
            None => Ok(None),
        },
        ShapeKind::Dyn => match m.get(k) {
            Some(v) => to_val(v, &DYN).map(Some),
            None => Ok(None),
        },
        _ => Ok(None),
    }
}

fn key_equals(a: &Val<'_>, b: &Val<'_>) -> bool {
    match (a, b) {
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
            Val::Int(_) | Val::Uint(_) | Val::Double(_),
        ) => numeric_cmp(a, b) == Some(Ordering::Equal),
        _ => false,
    }
}

/// CEL names reserved by kube's escaping (and not CEL identifiers).
pub const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// cel-go's `%v` of a value in error messages.
pub fn display(v: &Val<'_>) -> String {
    match v {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Double(d) => crate::goformat::go_float_v(*d),
        Val::Str(s) => s.to_string(),
        Val::Bytes(b) => String::from_utf8_lossy(b).into_owned(),
        Val::Duration(d) => duration_string(*d),
        Val::Timestamp(t) => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        Val::Type(t) => t.to_string(),
        other => other.type_name().to_string(),
    }
}

/// A duration as protobuf JSON prints it (`3600s`, `1.5s`).
pub fn duration_string(nanos: i64) -> String {
    let secs = nanos as f64 / 1e9;
    format!("{}s", crate::goformat::go_float_f(secs))
}

/// A list of strings made during evaluation.
pub fn strings_val<'a>(items: &[String]) -> Val<'a> {
    Val::list(items.iter().map(|s| Val::str(s)).collect())
}

/// kube's property-name escaping for CEL (`foo-bar` → `foo__dash__bar`); `None` when the
/// name can't be written in CEL (such fields are not visible to rules).
pub fn escape(ident: &str) -> Option<String> {
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let chars: Vec<char> = ident.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' && chars.get(i + 1) == Some(&'_') {
            out.push_str("__underscores__");
            i += 2;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
        i += 1;
    }
    Some(out)
}

/// The inverse of [`escape`].
pub fn unescape(escaped: &str) -> Option<Cow<'_, str>> {
    // Nearly every name a rule selects has no underscore at all: found by one byte scan.
    if !escaped.contains('_') || !escaped.contains("__") {
        return Some(Cow::Borrowed(escaped));
    }
    let mut out = String::with_capacity(escaped.len());
    let mut rest = escaped;
    while let Some(start) = rest.find("__") {
        // A token `__x__` with no underscore inside.
        let after = &rest[start + 2..];
        let Some(end) = after.find("__") else {
            out.push_str(rest);
            return Some(Cow::Owned(out));
        };
        let contents = &after[..end];
        if contents.is_empty() || contents.contains('_') {
            out.push_str(&rest[..start + 1]);
            rest = &rest[start + 1..];
            continue;
        }
        out.push_str(&rest[..start]);
        match contents {
            "underscores" => out.push_str("__"),
            "dot" => out.push('.'),
            "dash" => out.push('-'),
            "slash" => out.push('/'),
            c if RESERVED.contains(&c) => {
                if contents.len() + 4 != escaped.len() {
                    return None;
                }
                out.push_str(c);
            }
            _ => return None,
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Some(Cow::Owned(out))
}

/// Numeric comparison across `int`, `uint` and `double` (cel-go's cross-type rules).
pub fn numeric_cmp(a: &Val<'_>, b: &Val<'_>) -> Option<Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Uint(x), Val::Uint(y)) => Some(x.cmp(y)),
        (Val::Double(x), Val::Double(y)) => x.partial_cmp(y),
        (Val::Int(x), Val::Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (Val::Uint(x), Val::Int(y)) => Some(if *y < 0 {
            Ordering::Greater
        } else {
            x.cmp(&(*y as u64))
        }),
        (Val::Int(x), Val::Double(y)) => int_double_cmp(*x as i128, *y),
        (Val::Uint(x), Val::Double(y)) => int_double_cmp(*x as i128, *y),
        (Val::Double(x), Val::Int(y)) => int_double_cmp(*y as i128, *x).map(Ordering::reverse),
        (Val::Double(x), Val::Uint(y)) => int_double_cmp(*y as i128, *x).map(Ordering::reverse),
        _ => None,
    }
}

fn int_double_cmp(i: i128, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d >= 1.8446744073709552e19 {
        return Some(Ordering::Less);
    }
    if d < -9.223_372_036_854_776e18 {
        return Some(Ordering::Greater);
    }
    let t = d.trunc();
    match i.cmp(&(t as i128)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(d - t)),
        o => Some(o),
    }
}

fn is_numeric(v: &Val<'_>) -> bool {
    matches!(v, Val::Int(_) | Val::Uint(_) | Val::Double(_))
}

/// CEL equality (`==`), with kube's list-type and hidden-field semantics.
pub fn equals<'a>(a: &Val<'a>, b: &Val<'a>) -> Result<bool, EvalError> {
    Ok(match (a, b) {
        (Val::Null, Val::Null) => true,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        (x, y) if is_numeric(x) && is_numeric(y) => numeric_cmp(x, y) == Some(Ordering::Equal),
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bytes(x), Val::Bytes(y)) => x == y,
        (Val::Duration(x), Val::Duration(y)) => x == y,
        (Val::Timestamp(x), Val::Timestamp(y)) => x == y,
        (Val::Type(x), Val::Type(y)) => x == y,
        (Val::Optional(x), Val::Optional(y)) => match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        },
        (Val::List(x), Val::List(y)) => list_equals(x, y)?,
        (Val::Map(x), Val::Map(y)) => map_equals(x, y)?,
        (Val::Preserved(x), other) => Some(*x) == to_json(other).as_ref(),
        (other, Val::Preserved(y)) => to_json(other).as_ref() == Some(*y),
        (Val::Ext(x), Val::Ext(y)) => x.equals(&**y),
        _ => false,
    })
}

fn list_equals<'a>(x: &List<'a>, y: &List<'a>) -> Result<bool, EvalError> {
    if x.len() != y.len() {
        return Ok(false);
    }
    match x.kind() {
        ListKind::Set => {
            let xs = x.items()?;
            for b in y.items()? {
                let mut found = false;
                for a in &xs {
                    if equals(a, &b)? {
                        found = true;
                        break;
                    }
                }
                if !found {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        ListKind::Map(keys) => {
            let xs = x.items()?;
            let keyed: Vec<Vec<Option<Val<'a>>>> = xs
                .iter()
                .map(|v| map_list_key(v, keys))
                .collect::<Result<_, _>>()?;
            for b in y.items()? {
                let kb = map_list_key(&b, keys)?;
                let mut matched = None;
                for (i, ka) in keyed.iter().enumerate() {
                    if keys_equal(ka, &kb)? {
                        matched = Some(i);
                        break;
                    }
                }
                match matched {
                    Some(i) => {
                        if !equals(&xs[i], &b)? {
                            return Ok(false);
                        }
                    }
                    None => return Ok(false),
                }
            }
            Ok(true)
        }
        ListKind::Atomic => {
            for i in 0..x.len() {
                if !equals(&x.get(i)?, &y.get(i)?)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
    }
}

/// The key fields of a list-map item (absent fields are `None`).
pub fn map_list_key<'a>(v: &Val<'a>, keys: &[String]) -> Result<Vec<Option<Val<'a>>>, EvalError> {
    let Val::Map(m) = v else {
        return Err(EvalError::new(
            "unexpected data format for element of array with x-kubernetes-list-type=map",
        ));
    };
    keys.iter()
        .map(|k| m.get(&Val::str(&escape(k).unwrap_or_else(|| k.clone()))))
        .collect()
}

fn keys_equal<'a>(a: &[Option<Val<'a>>], b: &[Option<Val<'a>>]) -> Result<bool, EvalError> {
    for (x, y) in a.iter().zip(b) {
        let same = match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => equals(x, y)?,
            _ => false,
        };
        if !same {
            return Ok(false);
        }
    }
    Ok(true)
}

fn map_equals<'a>(x: &Map<'a>, y: &Map<'a>) -> Result<bool, EvalError> {
    if x.len() != y.len() {
        return Ok(false);
    }
    if let Map::Json(xm, xs) = x {
        // kube compares hidden (undeclared) keys as raw JSON, and only against JSON.
        for (k, raw) in xm.iter() {
            let declared = match &xs.kind {
                ShapeKind::Object(props) => props.contains_key(k),
                ShapeKind::Map(_) | ShapeKind::Dyn => true,
                _ => false,
            };
            if declared {
                let key = Val::str(&match xs.kind {
                    ShapeKind::Object(_) => escape(k).unwrap_or_else(|| k.clone()),
                    _ => k.clone(),
                });
                let a = x.get(&key)?;
                let b = y.get(&key)?;
                match (a, b) {
                    (None, None) => {}
                    (Some(a), Some(b)) => {
                        if !equals(&a, &b)? {
                            return Ok(false);
                        }
                    }
                    _ => return Ok(false),
                }
            } else {
                let Map::Json(ym, _) = y else {
                    return Err(EvalError::no_such_overload());
                };
                if let Some(o) = ym.get(k) {
                    if o != raw {
                        return Ok(false);
                    }
                }
            }
        }
        return Ok(true);
    }
    for k in x.keys() {
        let a = x.get(&k)?;
        let b = y.get(&k)?;
        match (a, b) {
            (Some(a), Some(b)) => {
                if !equals(&a, &b)? {
                    return Ok(false);
                }
            }
            (None, None) => {}
            _ => return Ok(false),
        }
    }
    Ok(true)
}

/// CEL ordering (`<`, `<=`, ...): `Ok(None)` for unordered values (NaN).
pub fn compare(a: &Val<'_>, b: &Val<'_>) -> Result<Option<Ordering>, EvalError> {
    Ok(match (a, b) {
        (x, y) if is_numeric(x) && is_numeric(y) => numeric_cmp(x, y),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(y)),
        (Val::Str(x), Val::Str(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        (Val::Bytes(x), Val::Bytes(y)) => Some(x.cmp(y)),
        (Val::Duration(x), Val::Duration(y)) => Some(x.cmp(y)),
        (Val::Timestamp(x), Val::Timestamp(y)) => Some(x.cmp(y)),
        _ => return Err(EvalError::no_such_overload()),
    })
}

/// The JSON form of a value, when it has one (for comparisons with preserved JSON).
pub fn to_json(v: &Val<'_>) -> Option<Value> {
    Some(match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Int(i) => Value::from(*i),
        Val::Uint(u) => Value::from(*u),
        Val::Double(d) => serde_json::Number::from_f64(*d).map(Value::Number)?,
        Val::Str(s) => Value::String(s.to_string()),
        Val::Preserved(p) => (*p).clone(),
        Val::List(List::Json(a, _, _)) => Value::Array(a.to_vec()),
        Val::List(l) => Value::Array(
            l.items()
                .ok()?
                .iter()
                .map(to_json)
                .collect::<Option<Vec<_>>>()?,
        ),
        Val::Map(Map::Json(m, _)) => Value::Object((*m).clone()),
        Val::Map(Map::Owned(entries)) => {
            let mut out = JsonMap::new();
            for (k, v) in entries.iter() {
                let Val::Str(k) = k else { return None };
                out.insert(k.to_string(), to_json(v)?);
            }
            Value::Object(out)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape(schema: Value) -> Shape {
        let props = crate::schema::props::JSONSchemaProps::from_value(&schema).expect("schema");
        Shape::of(&Structural::from_props(&props), false)
    }

    #[test]
    fn integers_are_int_and_numbers_double() {
        let s = shape(json!({"type": "integer"}));
        let v = json!(5);
        assert!(matches!(to_val(&v, &s), Ok(Val::Int(5))));
        let s = shape(json!({"type": "number"}));
        assert!(matches!(to_val(&v, &s), Ok(Val::Double(d)) if d == 5.0));
    }

    #[test]
    fn int_or_string_is_either() {
        let s = shape(json!({"x-kubernetes-int-or-string": true}));
        let (a, b) = (json!(3), json!("3%"));
        assert!(matches!(to_val(&a, &s), Ok(Val::Int(3))));
        assert!(matches!(to_val(&b, &s), Ok(Val::Str(ref x)) if &**x == "3%"));
    }

    #[test]
    fn null_needs_nullable() {
        let s = shape(json!({"type": "string"}));
        assert_eq!(
            to_val(&Value::Null, &s).map(|_| ()).unwrap_err().message,
            "invalid data, got null for schema with nullable=false"
        );
    }

    #[test]
    fn escaping_round_trips() {
        for (raw, esc) in [
            ("foo-bar", "foo__dash__bar"),
            ("a.b/c", "a__dot__b__slash__c"),
            ("a__b", "a__underscores__b"),
            ("namespace", "__namespace__"),
            ("plain_name", "plain_name"),
        ] {
            assert_eq!(escape(raw).as_deref(), Some(esc));
            assert_eq!(unescape(esc).as_deref(), Some(raw));
        }
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }

    #[test]
    fn set_lists_compare_unordered_and_map_lists_by_key() {
        let set = shape(
            json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}),
        );
        let (a, b) = (json!(["x", "y"]), json!(["y", "x"]));
        let (va, vb) = (to_val(&a, &set).unwrap(), to_val(&b, &set).unwrap());
        assert!(equals(&va, &vb).unwrap());
        let map = shape(json!({"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"],
            "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer"}}}}));
        let (a, b) = (
            json!([{"k": "a", "v": 1}, {"k": "b", "v": 2}]),
            json!([{"k": "b", "v": 2}, {"k": "a", "v": 1}]),
        );
        assert!(equals(&to_val(&a, &map).unwrap(), &to_val(&b, &map).unwrap()).unwrap());
        let c = json!([{"k": "b", "v": 3}, {"k": "a", "v": 1}]);
        assert!(!equals(&to_val(&a, &map).unwrap(), &to_val(&c, &map).unwrap()).unwrap());
    }

    #[test]
    fn numbers_compare_across_types() {
        assert_eq!(
            numeric_cmp(&Val::Int(1), &Val::Double(1.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            numeric_cmp(&Val::Int(-1), &Val::Uint(0)),
            Some(Ordering::Less)
        );
        assert_eq!(
            numeric_cmp(&Val::Double(1.5), &Val::Int(1)),
            Some(Ordering::Greater)
        );
    }
}
