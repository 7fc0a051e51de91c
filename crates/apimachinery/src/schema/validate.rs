//! OpenAPI v3 value validation of custom resources, as kube-apiserver does it.
//!
//! kube validates a custom resource with kube-openapi's `SchemaValidator` over the
//! CRD schema and converts its result to field errors (`kubeOpenAPIResultToFieldErrors`).
//! This module reproduces that validator: the same checks in the same order, the same
//! message templates (`spec.replicas in body should be less than or equal to 3`), the
//! same de-duplication by message, the same "best failure" choice inside `anyOf` /
//! `oneOf` (by match count), the same error-type mapping, and ratcheting on update
//! (errors inside a subtree equal to the old object's are dropped).
//!
//! [`Validator::validate`] gives the full set kube's CR strategy reports next to object
//! metadata: schema errors, embedded-resource checks (`objectmeta`) and list-type
//! invariants (`listtype`). Map keys are checked against `x-kubernetes-property-names`
//! as part of the schema pass.
//!
//! Paths: `path` is where the validated value sits. Field errors are `path` + the
//! element path; the message text names the element path relative to the value
//! (kube's `"<name> in body ..."`), so validating a default at
//! `...properties[replicas].default` reads ` in body must be of type integer`. When
//! `path` is the root, errors that kube reports at its nil path render as `<nil>`.

use super::formats;
use super::listtype;
use super::objectmeta;
use super::props::{JSONSchemaProps, SchemaOrBool};
use super::structural::Structural;
use crate::field::{go_quote, Error, ErrorList, Path};
use crate::goformat::{go_float_f, go_float_v, go_json};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, LazyLock, Mutex};

/// Validate `value` (at `path`) against a CRD schema: kube's full create-time set.
///
/// Convenience over [`Validator`]; patterns come from a process-wide cache, so no
/// regular expression is compiled per request once a pattern has been seen.
pub fn validate(schema: &JSONSchemaProps, value: &Value, path: &Path) -> ErrorList {
    Validator::new(schema).validate(value, path)
}

/// A CRD schema prepared for validation: patterns compiled, formats resolved.
#[derive(Debug)]
pub struct Validator {
    root: Node,
    /// The structural schema the embedded-resource and list-type checks walk (kube
    /// runs both over the structural schema); shared with the compiled CRD version.
    structural: Arc<Structural>,
}

/// Which of kube's two schema conversions a validator follows.
#[derive(Clone, Copy, PartialEq)]
enum Flavor {
    /// `NewSchemaValidator`: int-or-string becomes `type: [integer, string]`, formats a
    /// CRD may not use are dropped.
    CustomResource,
    /// `Structural.ToKubeOpenAPI` (used for `default` values): types and formats as written.
    DefaultValue,
}

impl Validator {
    /// A validator for custom resources of a CRD version with this schema.
    pub fn new(schema: &JSONSchemaProps) -> Self {
        Self::with_structural(schema, Arc::new(Structural::from_props(schema)))
    }

    /// [`Validator::new`] given the schema's structural form (`Structural::from_props`
    /// of the same schema), which it keeps instead of a copy of its own.
    pub fn with_structural(schema: &JSONSchemaProps, structural: Arc<Structural>) -> Self {
        Validator {
            root: Node::build(schema, Flavor::CustomResource),
            structural,
        }
    }

    /// A validator for `default` values of this schema node, as kube checks them at CRD
    /// admission (no int-or-string type, formats not stripped).
    pub fn for_defaults(schema: &JSONSchemaProps) -> Self {
        Validator {
            root: Node::build(schema, Flavor::DefaultValue),
            structural: Arc::new(Structural::from_props(schema)),
        }
    }

    /// kube's create-time checks of a value: schema, embedded resources, list types.
    pub fn validate(&self, value: &Value, path: &Path) -> ErrorList {
        let mut errs = self.validate_schema(value, path);
        errs.extend(objectmeta::validate_embedded_resources(
            &self.structural,
            value,
            path,
        ));
        errs.extend(listtype::validate_list_types(&self.structural, value, path));
        errs
    }

    /// kube's update-time checks: like [`Validator::validate`], but schema errors inside
    /// subtrees equal to `old` are ratcheted away, and list-type errors are only
    /// reported when `old` had none.
    pub fn validate_update(&self, new: &Value, old: &Value, path: &Path) -> ErrorList {
        let mut errs = self.validate_schema_update(new, old, path);
        errs.extend(objectmeta::validate_embedded_resources(
            &self.structural,
            new,
            path,
        ));
        errs.extend(self.validate_list_types_update(new, old, path));
        errs
    }

    /// The list-type invariants (`x-kubernetes-list-type: map`/`set`) of an update:
    /// `new`'s errors, reported only when `old` had none (kube ratchets them as a whole).
    pub fn validate_list_types_update(&self, new: &Value, old: &Value, path: &Path) -> ErrorList {
        if listtype::validate_list_types(&self.structural, old, path).is_empty() {
            listtype::validate_list_types(&self.structural, new, path)
        } else {
            ErrorList::new()
        }
    }

    /// [`Validator::validate_schema_update`] of the value of the root's property
    /// `field` alone, with that property's schema as its root (kube's status
    /// validator for status subresource writes); nothing when the schema has no such
    /// property.
    pub fn validate_property_update(
        &self,
        field: &str,
        new: &Value,
        old: &Value,
        path: &Path,
    ) -> ErrorList {
        match self.root.properties.get(field) {
            Some(node) => schema_update(node, new, old, path),
            None => ErrorList::new(),
        }
    }

    /// Only the OpenAPI schema pass (kube's `ValidateCustomResource`), including map keys.
    pub fn validate_schema(&self, value: &Value, path: &Path) -> ErrorList {
        let res = run_node(&self.root, value, &mut String::new(), None, false);
        to_field_errors(res, path)
    }

    /// The OpenAPI schema pass with ratcheting against `old` (`ValidateCustomResourceUpdate`).
    pub fn validate_schema_update(&self, new: &Value, old: &Value, path: &Path) -> ErrorList {
        schema_update(&self.root, new, old, path)
    }
}

/// The schema pass of an update with `node` as the root, ratcheted against `old`.
fn schema_update(node: &Node, new: &Value, old: &Value, path: &Path) -> ErrorList {
    // Ratcheting only forgives errors: an object valid without it (the common case)
    // needs no second, correlated pass.
    let plain = run_node(node, new, &mut String::new(), None, false);
    if plain.is_valid() {
        return to_field_errors(plain, path);
    }
    let corr = Corr {
        new,
        old,
        schema: node,
    };
    to_field_errors(
        run_node(node, new, &mut String::new(), Some(corr), true),
        path,
    )
}

// ---------------------------------------------------------------------------------
// The prepared schema tree.

#[derive(Debug)]
enum Additional {
    Absent,
    Allows(bool),
    Schema(Box<Node>),
}

#[derive(Debug)]
struct Node {
    types: Vec<String>,
    nullable: bool,
    required: Vec<String>,
    properties: super::sorted_map::SortedMap<Node>,
    additional: Additional,
    items: Option<Box<Node>>,
    list_type: Option<String>,
    list_map_keys: Vec<String>,
    /// The value checks, allocated only for nodes that have some (most nodes of a
    /// large schema have none).
    checks: Checks,
}

/// The value checks of a [`Node`]: formats, bounds, patterns, enums and junctors.
#[derive(Debug, Default)]
struct ValueChecks {
    format: String,
    /// Type and format the number validator range-checks against (kube-openapi).
    number_type: &'static str,
    number_format: &'static str,
    maximum: Option<f64>,
    exclusive_maximum: bool,
    minimum: Option<f64>,
    exclusive_minimum: bool,
    multiple_of: Option<f64>,
    max_length: Option<i64>,
    min_length: Option<i64>,
    pattern: Option<(String, CompiledPattern)>,
    max_items: Option<i64>,
    min_items: Option<i64>,
    unique_items: bool,
    enum_values: Vec<Value>,
    max_properties: Option<i64>,
    min_properties: Option<i64>,
    all_of: Vec<Node>,
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    not: Option<Box<Node>>,
    property_names: Option<Box<Node>>,
}

impl ValueChecks {
    fn is_empty(&self) -> bool {
        self.format.is_empty()
            && self.number_type.is_empty()
            && self.maximum.is_none()
            && self.minimum.is_none()
            && self.multiple_of.is_none()
            && self.max_length.is_none()
            && self.min_length.is_none()
            && self.pattern.is_none()
            && self.max_items.is_none()
            && self.min_items.is_none()
            && !self.unique_items
            && self.enum_values.is_empty()
            && self.max_properties.is_none()
            && self.min_properties.is_none()
            && self.all_of.is_empty()
            && self.any_of.is_empty()
            && self.one_of.is_empty()
            && self.not.is_none()
            && self.property_names.is_none()
    }
}

/// [`ValueChecks`] when there are some; reads of a node without any see empty ones.
#[derive(Debug)]
struct Checks(Option<Box<ValueChecks>>);

impl Checks {
    fn of(checks: ValueChecks) -> Checks {
        Checks((!checks.is_empty()).then(|| Box::new(checks)))
    }
}

impl std::ops::Deref for Checks {
    type Target = ValueChecks;
    fn deref(&self) -> &ValueChecks {
        static NONE: LazyLock<ValueChecks> = LazyLock::new(ValueChecks::default);
        self.0.as_deref().unwrap_or(&NONE)
    }
}

impl Node {
    fn build(s: &JSONSchemaProps, flavor: Flavor) -> Node {
        let mut types: Vec<String> = s.type_.iter().filter(|t| !t.is_empty()).cloned().collect();
        if flavor == Flavor::CustomResource && s.x_int_or_string {
            types = vec!["integer".to_string(), "string".to_string()];
        }
        let raw_format = s.format.clone().unwrap_or_default();
        let format = match flavor {
            Flavor::CustomResource => {
                let single = if types.len() == 1 {
                    types[0].as_str()
                } else {
                    ""
                };
                formats::strip_unsupported_format(single, &raw_format).to_string()
            }
            Flavor::DefaultValue => raw_format,
        };
        let (number_type, number_format) = number_range_kind(&types, &format);
        let build_all = |v: &Option<Vec<JSONSchemaProps>>| -> Vec<Node> {
            v.iter().flatten().map(|x| Node::build(x, flavor)).collect()
        };
        Node {
            nullable: s.nullable,
            required: s.required.clone().unwrap_or_default(),
            properties: s
                .properties
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), Node::build(v, flavor)))
                .collect(),
            additional: match &s.additional_properties {
                None => Additional::Absent,
                Some(SchemaOrBool::Bool(b)) => Additional::Allows(*b),
                Some(SchemaOrBool::Schema(x)) => {
                    Additional::Schema(Box::new(Node::build(x, flavor)))
                }
            },
            items: s.items_schema().map(|x| Box::new(Node::build(x, flavor))),
            list_type: s.x_list_type.clone(),
            list_map_keys: s.x_list_map_keys.clone().unwrap_or_default(),
            checks: Checks::of(ValueChecks {
                number_type,
                number_format,
                maximum: s.maximum,
                exclusive_maximum: s.exclusive_maximum.unwrap_or(false),
                minimum: s.minimum,
                exclusive_minimum: s.exclusive_minimum.unwrap_or(false),
                multiple_of: s.multiple_of,
                max_length: s.max_length,
                min_length: s.min_length,
                pattern: s.pattern.as_ref().map(|p| (p.clone(), compile_pattern(p))),
                max_items: s.max_items,
                min_items: s.min_items,
                unique_items: s.unique_items.unwrap_or(false),
                enum_values: s.enum_.clone().unwrap_or_default(),
                max_properties: s.max_properties,
                min_properties: s.min_properties,
                all_of: build_all(&s.all_of),
                any_of: build_all(&s.any_of),
                one_of: build_all(&s.one_of),
                not: s.not.as_ref().map(|x| Box::new(Node::build(x, flavor))),
                property_names: s
                    .x_property_names
                    .as_ref()
                    .map(|x| Box::new(Node::build(x, flavor))),
                format,
            }),
            types,
        }
    }

    fn has_type(&self, t: &str) -> bool {
        self.types.iter().any(|x| x == t)
    }

    fn additional_schema(&self) -> Option<&Node> {
        match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        }
    }
}

/// The type/format pair kube-openapi's number validator enforces ranges for: only for a
/// single `integer` (`int32`/`int64`) or `number` (`float`/`double`) type.
fn number_range_kind(types: &[String], format: &str) -> (&'static str, &'static str) {
    if types.len() != 1 {
        return ("", "");
    }
    match types[0].as_str() {
        "integer" => (
            "integer",
            match format {
                "int32" => "int32",
                "int64" => "int64",
                _ => "",
            },
        ),
        "number" => (
            "number",
            match format {
                "float" => "float",
                "double" => "double",
                _ => "",
            },
        ),
        _ => ("", ""),
    }
}

// ---------------------------------------------------------------------------------
// Patterns: Go RE2 syntax compiled with the `regex` crate, cached process-wide.

type CompiledPattern = Result<Arc<Regex>, String>;

/// Upper bound of cached patterns; the cache is cleared when it would grow past it.
const PATTERN_CACHE_LIMIT: usize = 4096;

static PATTERNS: LazyLock<Mutex<HashMap<String, CompiledPattern>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// Compile a schema `pattern` (Go syntax), reusing earlier compilations.
fn compile_pattern(pattern: &str) -> CompiledPattern {
    if let Ok(cache) = PATTERNS.lock() {
        if let Some(hit) = cache.get(pattern) {
            return hit.clone();
        }
    }
    let compiled = regex::RegexBuilder::new(&translate_go_regex(pattern))
        .size_limit(32 << 20)
        .build()
        .map(Arc::new)
        .map_err(|e| go_regex_error(pattern, &e));
    if let Ok(mut cache) = PATTERNS.lock() {
        if cache.len() >= PATTERN_CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(pattern.to_string(), compiled.clone());
    }
    compiled
}

/// An error text in the shape of Go's `regexp.Compile` errors.
fn go_regex_error(pattern: &str, err: &regex::Error) -> String {
    let detail = err.to_string();
    let last = detail
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let last = last.strip_prefix("error: ").unwrap_or(last);
    format!("error parsing regexp: {last}: `{pattern}`")
}

/// Rewrite Go regexp syntax where the `regex` crate differs: Perl classes and word
/// boundaries are ASCII in Go, `\Q...\E` quotes, and `[`, `&`, `~` are literal inside
/// Go character classes.
fn translate_go_regex(p: &str) -> String {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut in_class = false;
    let mut class_start = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() {
            let n = chars[i + 1];
            i += 2;
            let (outside, inside): (&str, &str) = match n {
                'd' => ("[0-9]", "0-9"),
                'D' => ("[^0-9]", "[^0-9]"),
                'w' => ("[0-9A-Za-z_]", "0-9A-Za-z_"),
                'W' => ("[^0-9A-Za-z_]", "[^0-9A-Za-z_]"),
                's' => ("[\\t\\n\\f\\r ]", "\\t\\n\\f\\r "),
                'S' => ("[^\\t\\n\\f\\r ]", "[^\\t\\n\\f\\r ]"),
                'b' if !in_class => ("(?-u:\\b)", ""),
                'B' if !in_class => ("(?-u:\\B)", ""),
                'Q' => {
                    let mut lit = String::new();
                    while i < chars.len() && !(chars[i] == '\\' && chars.get(i + 1) == Some(&'E')) {
                        lit.push(chars[i]);
                        i += 1;
                    }
                    if i < chars.len() {
                        i += 2;
                    }
                    out.push_str(&regex::escape(&lit));
                    class_start = false;
                    continue;
                }
                _ => {
                    out.push('\\');
                    out.push(n);
                    class_start = false;
                    continue;
                }
            };
            out.push_str(if in_class { inside } else { outside });
            class_start = false;
            continue;
        }
        if in_class {
            if class_start && c == '^' {
                out.push(c);
                i += 1;
                continue;
            }
            if class_start && c == ']' {
                out.push_str("\\]");
                class_start = false;
                i += 1;
                continue;
            }
            class_start = false;
            if c == '[' && chars.get(i + 1) == Some(&':') {
                // POSIX class `[:alpha:]`: copy through `:]`.
                let mut j = i + 2;
                while j + 1 < chars.len() && !(chars[j] == ':' && chars[j + 1] == ']') {
                    j += 1;
                }
                let end = (j + 2).min(chars.len());
                out.extend(&chars[i..end]);
                i = end;
                continue;
            }
            match c {
                ']' => in_class = false,
                '[' | '&' | '~' => out.push('\\'),
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        if c == '[' {
            in_class = true;
            class_start = true;
        }
        out.push(c);
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------
// kube-openapi results.

#[derive(Clone, Copy, Debug, PartialEq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    TooShort,
    Pattern,
    Enum,
    MultipleOf,
    Max,
    Min,
    Unique,
    MaxItems,
    MinItems,
    TooFewProperties,
    TooManyProperties,
    UnallowedProperty,
    MultipleOfMustBePositive,
    /// Not an `errors.Validation` (composite messages, range checks): reported at the
    /// validated value's own path with an empty value.
    Plain,
}

#[derive(Debug)]
struct OErr {
    code: Code,
    name: String,
    /// A map-key error of the validated value itself: `[key]` joins the base path directly.
    key_of_root: bool,
    value: Option<Value>,
    valid: Option<i64>,
    enum_values: Vec<Value>,
    message: String,
}

impl OErr {
    fn new(code: Code, name: &str, value: Option<Value>, message: String) -> Self {
        OErr {
            code,
            name: name.to_string(),
            key_of_root: false,
            value,
            valid: None,
            enum_values: Vec::new(),
            message,
        }
    }

    fn plain(message: String) -> Self {
        OErr::new(Code::Plain, "", None, message)
    }

    fn with_valid(mut self, valid: i64) -> Self {
        self.valid = Some(valid);
        self
    }
}

/// kube-openapi's `Result`: errors unique by message, and a match count.
///
/// Every check of every node makes one, and nearly all stay empty: an empty result
/// holds no allocation, and a result with few errors finds duplicates by scanning.
#[derive(Default, Debug)]
struct OResult {
    errors: Vec<OErr>,
    /// The messages of `errors`, kept once there are more than [`OResult::SCANNED`]
    /// (boxed: a result is moved up through every level of the walk, and the box
    /// keeps it at five words).
    #[allow(clippy::box_collection)]
    seen: Option<Box<HashSet<String>>>,
    match_count: usize,
}

impl OResult {
    /// Up to this many errors, a new one is compared with each.
    const SCANNED: usize = 16;

    fn single(e: OErr) -> Self {
        let mut r = OResult::default();
        r.add(e);
        r
    }

    fn add(&mut self, e: OErr) {
        match &mut self.seen {
            Some(seen) => {
                if seen.insert(e.message.clone()) {
                    self.errors.push(e);
                }
            }
            None => {
                if self.errors.iter().any(|x| x.message == e.message) {
                    return;
                }
                self.errors.push(e);
                if self.errors.len() > Self::SCANNED {
                    let seen = self.errors.iter().map(|x| x.message.clone()).collect();
                    self.seen = Some(Box::new(seen));
                }
            }
        }
    }

    #[inline]
    fn merge(&mut self, other: OResult) {
        self.match_count += other.match_count;
        if other.errors.is_empty() {
            return;
        }
        if self.errors.is_empty() && self.seen.is_none() {
            // Nothing to dedupe against: take `other`'s errors (already unique) whole.
            self.errors = other.errors;
            self.seen = other.seen;
            return;
        }
        for e in other.errors {
            self.add(e);
        }
    }

    fn inc(&mut self) {
        self.match_count += 1;
    }

    fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

// ---------------------------------------------------------------------------------
// Ratcheting correlation (apiserver's `CorrelatedObject`).

#[derive(Clone, Copy)]
struct Corr<'a> {
    new: &'a Value,
    old: &'a Value,
    schema: &'a Node,
}

impl<'a> Corr<'a> {
    fn key(&self, field: &str) -> Option<Corr<'a>> {
        let (Value::Object(old), Value::Object(new)) = (self.old, self.new) else {
            return None;
        };
        let (old_v, new_v) = (old.get(field)?, new.get(field)?);
        let schema = match self.schema.properties.get(field) {
            Some(p) => p,
            None => self.schema.additional_schema()?,
        };
        Some(Corr {
            new: new_v,
            old: old_v,
            schema,
        })
    }

    fn index(&self, i: usize) -> Option<Corr<'a>> {
        let (Value::Array(old), Value::Array(new)) = (self.old, self.new) else {
            return None;
        };
        let element = new.get(i)?;
        if self.schema.list_type.as_deref() != Some("map") {
            return None;
        }
        let old_element = self.map_list_match(old, element)?;
        let schema = self.schema.items.as_deref()?;
        Some(Corr {
            new: element,
            old: old_element,
            schema,
        })
    }

    /// The first old item with the same list-map key as `element`.
    fn map_list_match(&self, old: &'a [Value], element: &Value) -> Option<&'a Value> {
        let s = self.schema;
        if s.types.first().map(String::as_str) != Some("array") || s.list_map_keys.is_empty() {
            return None;
        }
        let key = composite_key(&s.list_map_keys, element.as_object()?)?;
        old.iter().find(|o| {
            o.as_object()
                .and_then(|m| composite_key(&s.list_map_keys, m))
                .as_ref()
                == Some(&key)
        })
    }

    /// `CachedDeepEqual`: deep equality that follows the schema's correlation rules.
    fn deep_equal(&self) -> bool {
        match (self.new, self.old) {
            (Value::Null, Value::Null) => true,
            (Value::Null, _) | (_, Value::Null) => false,
            (Value::Array(new), Value::Array(old)) => {
                if new.len() != old.len() {
                    return false;
                }
                for i in 0..new.len() {
                    match self.index(i) {
                        Some(child) => {
                            if !child.deep_equal() {
                                return false;
                            }
                        }
                        None => {
                            return self.schema.list_type.as_deref() != Some("map") && new == old;
                        }
                    }
                }
                true
            }
            (Value::Object(new), Value::Object(old)) => {
                new.len() == old.len()
                    && new
                        .keys()
                        .all(|k| self.key(k).is_some_and(|child| child.deep_equal()))
            }
            (Value::Array(_), _)
            | (_, Value::Array(_))
            | (Value::Object(_), _)
            | (_, Value::Object(_)) => false,
            (a, b) => a == b,
        }
    }
}

/// A list-map key of scalars, comparable as kube's map list compares keys.
fn composite_key(keys: &[String], obj: &Map<String, Value>) -> Option<String> {
    let mut out = String::new();
    for k in keys {
        let v = obj.get(k)?;
        match v {
            Value::Bool(b) => out.push_str(&format!("\0b{b}")),
            Value::String(s) => out.push_str(&format!("\0s{}", go_quote(s))),
            Value::Number(n) => match num_of(n) {
                Num::I(i) => out.push_str(&format!("\0i{i}")),
                // As Go map keys, -0 and 0 are the same float64.
                Num::F(f) if keys.len() == 1 => {
                    out.push_str(&format!("\0f{}", (f + 0.0).to_bits()))
                }
                Num::F(f) => out.push_str(&format!("\0f{f:.6}")),
            },
            _ => return None,
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------
// Numbers as kube sees them after JSON decoding: int64 when integral, else float64.

#[derive(Clone, Copy, Debug)]
enum Num {
    I(i64),
    F(f64),
}

fn num_of(n: &serde_json::Number) -> Num {
    match n.as_i64() {
        Some(i) => Num::I(i),
        None => Num::F(n.as_f64().unwrap_or(0.0)),
    }
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    fn to_value(self) -> Value {
        match self {
            Num::I(i) => Value::from(i),
            Num::F(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        }
    }

    /// Go's `%v`.
    fn go_v(self) -> String {
        match self {
            Num::I(i) => i.to_string(),
            Num::F(f) => go_float_v(f),
        }
    }
}

/// Go's `int64(f)` on amd64: truncation, and `math.MinInt64` when out of range.
fn go_f64_to_i64(f: f64) -> i64 {
    if f.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
        i64::MIN
    } else {
        f.trunc() as i64
    }
}

/// swag's `IsFloat64AJSONInteger` (v0.23): integral within ±(2^53-1), with a relative epsilon.
fn is_float64_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if f.is_nan() || f.is_infinite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    // Go's uint64(f) for a negative f wraps through int64 on amd64.
    let as_u64 = |x: f64| -> f64 {
        if x >= 0.0 {
            x.trunc()
        } else {
            (x.trunc() as i64) as u64 as f64
        }
    };
    let g = as_u64(f);
    let diff = (f - g).abs();
    if f == g || f == go_f64_to_i64(f) as f64 || f == as_u64(f) {
        return true;
    }
    if f == 0.0 || g == 0.0 || diff < f64::from_bits(1) {
        return false;
    }
    diff / (f.abs() + g.abs()).min(f64::MAX) < 1e-9
}

/// Go's `%v` of a decoded JSON value (used only where kube puts it into a message).
fn go_v(v: &Value) -> String {
    crate::goformat::go_v_with(v, &|n| num_of(n).go_v())
}

// ---------------------------------------------------------------------------------
// The validator: kube-openapi's SchemaValidator, one function per value validator.

/// Run `f` with `path` extended by `parts`, then restore it. A validation builds the
/// element paths of its nodes in one buffer: they are read only when an error names
/// them, so no node allocates its own.
fn within<R>(path: &mut String, parts: &[&str], f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    for part in parts {
        path.push_str(part);
    }
    let r = f(path);
    path.truncate(len);
    r
}

/// Validate through a ratcheting node: errors are dropped when the correlated old value
/// is equal (the match count is kept, as kube merges them as warnings).
fn run_node(
    node: &Node,
    data: &Value,
    path: &mut String,
    corr: Option<Corr>,
    ratchet: bool,
) -> OResult {
    let res = validate_node(node, data, path, corr, ratchet);
    if ratchet && !res.is_valid() {
        if let Some(c) = corr {
            if c.deep_equal() {
                return OResult {
                    match_count: res.match_count,
                    ..OResult::default()
                };
            }
        }
    }
    res
}

/// `SchemaValidator.Validate`.
fn validate_node(
    node: &Node,
    data: &Value,
    path: &mut String,
    corr: Option<Corr>,
    ratchet: bool,
) -> OResult {
    let mut result = OResult::default();
    if data.is_null() {
        result.merge(validate_type(node, data, path));
        result.merge(validate_enum(node, data, path));
        return result;
    }
    if !node.types.is_empty() || !node.checks.format.is_empty() {
        result.merge(validate_type(node, data, path));
        result.inc();
    }
    result.merge(validate_composition(node, data, path, corr, ratchet));
    result.inc();
    if let Value::String(s) = data {
        result.merge(validate_string(node, s, path));
        result.inc();
        if formats::is_known_format(&node.checks.format) {
            if !formats::check_format(&node.checks.format, s) {
                result.add(invalid_type(path, &node.checks.format, s));
            }
            result.inc();
        }
    }
    if let Value::Number(n) = data {
        result.merge(validate_number(node, num_of(n), path));
        result.inc();
    }
    if let Value::Array(items) = data {
        result.merge(validate_array(node, items, path, corr, ratchet));
        result.inc();
    }
    result.merge(validate_enum(node, data, path));
    result.inc();
    if let Value::Object(obj) = data {
        result.merge(validate_object(node, obj, path, corr, ratchet));
        result.inc();
    }
    result.inc();
    result
}

/// `errors.InvalidType` with a string value: `<name> in body must be of type <t>: "<v>"`.
fn invalid_type(name: &str, type_name: &str, value: &str) -> OErr {
    OErr::new(
        Code::InvalidType,
        name,
        Some(Value::String(value.to_string())),
        format!(
            "{name} in body must be of type {type_name}: {}",
            go_quote(value)
        ),
    )
}

/// `typeValidator`.
fn validate_type(node: &Node, data: &Value, path: &str) -> OResult {
    let mut result = OResult::default();
    result.inc();
    if data.is_null() {
        if !node.types.is_empty() && !node.has_type("null") && !node.nullable {
            return OResult::single(invalid_type(path, &node.types.join(","), "null"));
        }
        return result;
    }
    let (sch_type, format) = match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(n) => match num_of(n) {
            Num::I(_) => ("integer", "int64"),
            Num::F(_) => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        _ => ("object", ""),
    };
    let is_float_int = match data {
        Value::Number(n) => match num_of(n) {
            Num::F(f) => is_float64_json_integer(f) && node.has_type("integer"),
            Num::I(_) => false,
        },
        _ => false,
    };
    let is_int_float = sch_type == "integer" && node.has_type("number");
    let string_or_slice = data.is_string() || data.is_array();
    let has_format = !node.checks.format.is_empty();
    let type_accepts = node.has_type(sch_type) || is_float_int || is_int_float;
    if has_format && !string_or_slice && !(type_accepts || format == node.checks.format) {
        return OResult::single(invalid_type(path, &node.checks.format, format));
    }
    let numeric = node.has_type("number") || node.has_type("integer");
    if has_format && string_or_slice && !numeric {
        return result;
    }
    if !type_accepts {
        return OResult::single(invalid_type(path, &node.types.join(","), sch_type));
    }
    result
}

/// `schemaPropsValidator`: allOf, anyOf, oneOf, not.
fn validate_composition(
    node: &Node,
    data: &Value,
    path: &mut String,
    corr: Option<Corr>,
    ratchet: bool,
) -> OResult {
    let mut main = OResult::default();
    if !node.checks.any_of.is_empty() {
        let mut best: Option<OResult> = None;
        let mut first_success: Option<OResult> = None;
        for sub in &node.checks.any_of {
            let res = validate_node(sub, data, path, corr, ratchet);
            if res.is_valid() {
                best = None;
                first_success = Some(res);
                break;
            }
            if best
                .as_ref()
                .is_none_or(|b| res.match_count > b.match_count)
            {
                best = Some(res);
            }
        }
        if first_success.is_none() {
            main.add(OErr::plain(format!(
                "{} must validate at least one schema (anyOf)",
                go_quote(path)
            )));
        }
        if let Some(b) = best {
            main.merge(b);
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !node.checks.one_of.is_empty() {
        let mut best: Option<OResult> = None;
        let mut first_success: Option<OResult> = None;
        let mut validated = 0;
        for sub in &node.checks.one_of {
            let res = validate_node(sub, data, path, corr, ratchet);
            if res.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(res);
                }
                continue;
            }
            if validated == 0
                && best
                    .as_ref()
                    .is_none_or(|b| res.match_count > b.match_count)
            {
                best = Some(res);
            }
        }
        if validated != 1 {
            let additional = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(OErr::plain(format!(
                "{} must validate one and only one schema (oneOf). {additional}",
                go_quote(path)
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !node.checks.all_of.is_empty() {
        let mut validated = 0;
        for sub in &node.checks.all_of {
            let res = validate_node(sub, data, path, corr, ratchet);
            if res.is_valid() {
                validated += 1;
            }
            main.merge(res);
        }
        if validated != node.checks.all_of.len() {
            let additional = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(OErr::plain(format!(
                "{} must validate all the schemas (allOf){additional}",
                go_quote(path)
            )));
        }
    }
    if let Some(not) = &node.checks.not {
        if validate_node(not, data, path, corr, ratchet).is_valid() {
            main.add(OErr::plain(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
    }
    main.inc();
    main
}

/// `stringValidator`: the first failing of maxLength, minLength, pattern.
fn validate_string(node: &Node, s: &str, path: &str) -> OResult {
    let value = || Some(Value::String(s.to_string()));
    let runes = s.chars().count() as i64;
    if let Some(max) = node.checks.max_length {
        if runes > max {
            return OResult::single(
                OErr::new(
                    Code::TooLong,
                    path,
                    value(),
                    format!("{path} in body should be at most {max} chars long"),
                )
                .with_valid(max),
            );
        }
    }
    if let Some(min) = node.checks.min_length {
        if runes < min {
            return OResult::single(
                OErr::new(
                    Code::TooShort,
                    path,
                    value(),
                    format!("{path} in body should be at least {min} chars long"),
                )
                .with_valid(min),
            );
        }
    }
    if let Some((pattern, compiled)) = &node.checks.pattern {
        match compiled {
            Ok(re) => {
                if !re.is_match(s) {
                    return OResult::single(OErr::new(
                        Code::Pattern,
                        path,
                        value(),
                        format!("{path} in body should match '{pattern}'"),
                    ));
                }
            }
            Err(e) => {
                return OResult::single(OErr::new(
                    Code::Pattern,
                    path,
                    value(),
                    format!("{path} in body should match '{pattern}, but pattern is invalid: {e}'"),
                ));
            }
        }
    }
    OResult::default()
}

/// `IsValueValidAgainstRange`: does `v` fit the schema's numeric type and format?
fn range_error(v: Num, type_name: &str, format: &str, prefix: &str, path: &str) -> Option<OErr> {
    let rep = match v {
        Num::I(i) => i.to_string(),
        Num::F(f) => go_float_f(f),
    };
    let fits = match type_name {
        "integer" => match format {
            "int32" => rep.parse::<i32>().is_ok(),
            _ => rep.parse::<i64>().is_ok(),
        },
        _ => match format {
            "float" => rep
                .parse::<f64>()
                .is_ok_and(|x| x.is_finite() && (x as f32).is_finite()),
            _ => true,
        },
    };
    if fits {
        return None;
    }
    Some(OErr::plain(if format.is_empty() {
        format!("{prefix} value must be of type {type_name} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {type_name} with format {format} in {path}")
    }))
}

/// `numberValidator`: numeric format range, multipleOf, minimum, maximum.
fn validate_number(node: &Node, v: Num, path: &str) -> OResult {
    let (t, f) = (node.checks.number_type, node.checks.number_format);
    let mut res = OResult::default();
    if let Some(e) = range_error(v, t, f, "Checked", path) {
        res.add(e);
    }
    let data = v.as_f64();

    let mut res_multiple = OResult::default();
    if let Some(factor) = node.checks.multiple_of {
        if let Some(e) = range_error(Num::F(factor), t, f, "MultipleOf", path) {
            res_multiple.add(e);
            if let Some(e) = multiple_of_float(path, data, factor) {
                res_multiple.add(e);
            }
        } else {
            let e = match v {
                Num::I(i) => multiple_of_int(path, i, go_f64_to_i64(factor)),
                Num::F(x) => multiple_of_float(path, x, factor),
            };
            if let Some(e) = e {
                res_multiple.add(e);
            }
        }
    }

    let res_minimum = node.checks.minimum.map_or_else(OResult::default, |min| {
        let bound = Bound {
            value: min,
            exclusive: node.checks.exclusive_minimum,
            lower: true,
        };
        bound_check(&bound, v, t, f, path)
    });
    let res_maximum = node.checks.maximum.map_or_else(OResult::default, |max| {
        let bound = Bound {
            value: max,
            exclusive: node.checks.exclusive_maximum,
            lower: false,
        };
        bound_check(&bound, v, t, f, path)
    });

    res.merge(res_multiple);
    res.merge(res_minimum);
    res.merge(res_maximum);
    res.inc();
    res
}

/// A `minimum` (lower) or `maximum` bound of a number schema.
struct Bound {
    value: f64,
    exclusive: bool,
    lower: bool,
}

impl Bound {
    /// Whether `data` lies outside the bound (`d`, `b` compare as the same type).
    fn violated<T: PartialOrd>(&self, d: T, b: T) -> bool {
        match (self.lower, self.exclusive) {
            (true, true) => d <= b,
            (true, false) => d < b,
            (false, true) => d >= b,
            (false, false) => d > b,
        }
    }
}

/// kube-openapi's `MinimumNativeType`/`MaximumNativeType`: the bound's own range error,
/// then the comparison (integers compared as integers when the bound fits the type).
fn bound_check(bound: &Bound, v: Num, t: &str, f: &str, path: &str) -> OResult {
    let mut res = OResult::default();
    let prefix = if bound.lower {
        "Minimum boundary"
    } else {
        "Maximum boundary"
    };
    let native = range_error(Num::F(bound.value), t, f, prefix, path);
    let failed = match (&native, v) {
        (None, Num::I(i)) => {
            let b = go_f64_to_i64(bound.value);
            bound.violated(i, b).then(|| (Num::I(b), v.to_value()))
        }
        _ => {
            let data = v.as_f64();
            let bad = if native.is_some() {
                Num::F(data).to_value()
            } else {
                v.to_value()
            };
            bound
                .violated(data, bound.value)
                .then_some((Num::F(bound.value), bad))
        }
    };
    if let Some(e) = native {
        res.add(e);
    }
    if let Some((b, bad)) = failed {
        let (code, cmp) = match (bound.lower, bound.exclusive) {
            (true, true) => (Code::Min, "greater than"),
            (true, false) => (Code::Min, "greater than or equal to"),
            (false, true) => (Code::Max, "less than"),
            (false, false) => (Code::Max, "less than or equal to"),
        };
        res.add(OErr::new(
            code,
            path,
            Some(bad),
            format!("{path} in body should be {cmp} {}", b.go_v()),
        ));
    }
    res
}

/// `MultipleOfInt`.
fn multiple_of_int(path: &str, data: i64, factor: i64) -> Option<OErr> {
    if factor <= 0 {
        return Some(OErr::new(
            Code::MultipleOfMustBePositive,
            path,
            Some(Value::from(factor)),
            format!("factor MultipleOf declared for {path} must be positive: {factor}"),
        ));
    }
    if data.wrapping_div(factor).wrapping_mul(factor) != data {
        return Some(OErr::new(
            Code::MultipleOf,
            path,
            Some(Value::from(data)),
            format!("{path} in body should be a multiple of {factor}"),
        ));
    }
    None
}

/// `MultipleOf` over float64.
fn multiple_of_float(path: &str, data: f64, factor: f64) -> Option<OErr> {
    if factor <= 0.0 {
        return Some(OErr::new(
            Code::MultipleOfMustBePositive,
            path,
            Some(Num::F(factor).to_value()),
            format!(
                "factor MultipleOf declared for {path} must be positive: {}",
                go_float_v(factor)
            ),
        ));
    }
    let mult = if factor < 1.0 {
        1.0 / factor * data
    } else {
        data / factor
    };
    if !is_float64_json_integer(mult) {
        return Some(OErr::new(
            Code::MultipleOf,
            path,
            Some(Num::F(data).to_value()),
            format!(
                "{path} in body should be a multiple of {}",
                go_float_v(factor)
            ),
        ));
    }
    None
}

/// `schemaSliceValidator`: items, minItems, maxItems, uniqueItems.
fn validate_array(
    node: &Node,
    items: &[Value],
    path: &mut String,
    corr: Option<Corr>,
    ratchet: bool,
) -> OResult {
    let mut result = OResult::default();
    if let Some(item_schema) = &node.items {
        for (i, item) in items.iter().enumerate() {
            let child = corr.and_then(|c| c.index(i));
            let len = path.len();
            let _ = write!(path, "[{i}]");
            result.merge(run_node(item_schema, item, path, child, ratchet));
            path.truncate(len);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = node.checks.min_items {
        if size < min {
            result.add(
                OErr::new(
                    Code::MinItems,
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at least {min} items"),
                )
                .with_valid(min),
            );
        }
    }
    if let Some(max) = node.checks.max_items {
        if size > max {
            result.add(
                OErr::new(
                    Code::MaxItems,
                    path,
                    Some(Value::from(size)),
                    format!("{path} in body should have at most {max} items"),
                )
                .with_valid(max),
            );
        }
    }
    if node.checks.unique_items {
        let duplicate = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| a == b));
        if duplicate {
            result.add(OErr::new(
                Code::Unique,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
    result.inc();
    result
}

/// Does `data` equal the enum entry `e` after Go's reflect conversion to `e`'s type?
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (e, data) {
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Number(en), Value::Number(dn)) => match (num_of(en), num_of(dn)) {
            (Num::I(a), Num::I(b)) => a == b,
            (Num::I(a), Num::F(b)) => go_f64_to_i64(b) == a,
            (Num::F(a), Num::I(b)) => (b as f64) == a,
            (Num::F(a), Num::F(b)) => a == b,
        },
        (Value::String(a), Value::String(b)) => a == b,
        // Go converts an int64 to a string as the rune with that code point.
        (Value::String(a), Value::Number(dn)) => match num_of(dn) {
            Num::I(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                a.chars().eq(std::iter::once(c))
            }
            Num::F(_) => false,
        },
        (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => e == data,
        _ => false,
    }
}

/// `basicCommonValidator`: enum.
fn validate_enum(node: &Node, data: &Value, path: &str) -> OResult {
    if node.checks.enum_values.is_empty()
        || node
            .checks
            .enum_values
            .iter()
            .any(|e| enum_matches(data, e))
    {
        return OResult::default();
    }
    let listed: Vec<String> = node.checks.enum_values.iter().map(go_v).collect();
    let mut e = OErr::new(
        Code::Enum,
        path,
        Some(data.clone()),
        format!("{path} in body should be one of [{}]", listed.join(" ")),
    );
    e.enum_values = node.checks.enum_values.clone();
    OResult::single(e)
}

/// `objectValidator` plus map-key validation against `x-kubernetes-property-names`.
fn validate_object(
    node: &Node,
    obj: &Map<String, Value>,
    path: &mut String,
    corr: Option<Corr>,
    ratchet: bool,
) -> OResult {
    let mut res = OResult::default();
    let num_keys = obj.len() as i64;
    if let Some(min) = node.checks.min_properties {
        if num_keys < min {
            res.add(
                OErr::new(
                    Code::TooFewProperties,
                    path,
                    Some(Value::from(num_keys)),
                    format!("{path} in body should have at least {min} properties"),
                )
                .with_valid(min),
            );
        }
    }
    if let Some(max) = node.checks.max_properties {
        if num_keys > max {
            res.add(
                OErr::new(
                    Code::TooManyProperties,
                    path,
                    Some(Value::from(num_keys)),
                    format!("{path} in body should have at most {max} properties"),
                )
                .with_valid(max),
            );
        }
    }
    let at_root = path.is_empty();
    // Ratcheting never correlates the root's apiVersion and kind.
    let child_corr = |key: &str| -> Option<Corr> {
        if at_root && (key == "kind" || key == "apiVersion") {
            return None;
        }
        corr.and_then(|c| c.key(key))
    };
    if let Additional::Allows(false) = node.additional {
        for key in obj.keys() {
            if !node.properties.contains_key(key) {
                res.add(OErr::new(
                    Code::UnallowedProperty,
                    path,
                    Some(Value::String(key.clone())),
                    format!("{path}.{key} in body is a forbidden property"),
                ));
            }
        }
    } else if let Additional::Schema(schema) = &node.additional {
        for (key, value) in obj {
            if !node.properties.contains_key(key) {
                res.merge(within(path, &[".", key], |path| {
                    run_node(schema, value, path, child_corr(key), ratchet)
                }));
            }
        }
    }
    for (name, schema) in &node.properties {
        if let Some(value) = obj.get(name) {
            let parts: &[&str] = if at_root { &[name] } else { &[".", name] };
            res.merge(within(path, parts, |path| {
                run_node(schema, value, path, child_corr(name), ratchet)
            }));
        }
    }
    for key in &node.required {
        if !obj.contains_key(key) {
            let name = format!("{path}.{key}");
            res.add(OErr::new(
                Code::Required,
                &name,
                None,
                format!("{name} in body is required"),
            ));
        }
    }
    if let Some(key_schema) = &node.checks.property_names {
        for key in obj.keys() {
            let key_value = Value::String(key.clone());
            let mut key_res = within(path, &["[", key, "]"], |path| {
                validate_node(key_schema, &key_value, path, None, false)
            });
            if at_root {
                for e in &mut key_res.errors {
                    e.key_of_root = true;
                }
            }
            res.merge(key_res);
        }
    }
    res
}

// ---------------------------------------------------------------------------------
// Conversion to field errors (`kubeOpenAPIResultToFieldErrors`).

fn to_field_errors(res: OResult, base: &Path) -> ErrorList {
    // kube passes a nil *field.Path for custom resources; it prints as "<nil>".
    let own_path = if base.is_root() {
        Path::new("<nil>")
    } else {
        base.clone()
    };
    let empty = || Value::String(String::new());
    res.errors
        .into_iter()
        .map(|e| {
            if e.code == Code::Plain {
                return Error::invalid(&own_path, empty(), e.message);
            }
            let p = if !e.name.is_empty() && e.name != "." {
                let name = e.name.strip_prefix('.').unwrap_or(&e.name);
                if base.is_root() {
                    Path::new(name)
                } else if e.key_of_root {
                    Path::new(&format!("{base}{name}"))
                } else {
                    base.child(name)
                }
            } else {
                own_path.clone()
            };
            let value = e.value.clone();
            match e.code {
                Code::Required => Error::required(&p, ""),
                Code::Enum => {
                    let valid: Vec<String> = e
                        .enum_values
                        .iter()
                        .map(|v| match v {
                            Value::String(s) => s.clone(),
                            other => go_json(other),
                        })
                        .collect();
                    Error::not_supported(&p, value.unwrap_or(Value::Null), &valid)
                }
                Code::TooLong => Error::too_long(&p, e.valid.unwrap_or(-1)),
                Code::MaxItems | Code::TooManyProperties => {
                    let actual = value.as_ref().and_then(Value::as_i64).unwrap_or(-1);
                    Error::too_many(&p, actual, e.valid.unwrap_or(-1))
                }
                Code::InvalidType => {
                    Error::type_invalid(&p, value.unwrap_or_else(empty), e.message)
                }
                _ => Error::invalid(&p, value.unwrap_or_else(empty), e.message),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goformat::go_json_float;
    use serde_json::json;

    fn schema(v: Value) -> JSONSchemaProps {
        JSONSchemaProps::from_value(&v).expect("test schema parses")
    }

    #[test]
    fn results_keep_each_message_once_in_first_seen_order() {
        let messages =
            |r: &OResult| -> Vec<String> { r.errors.iter().map(|e| e.message.clone()).collect() };
        // Past the scanned few, duplicates are found through the set.
        let mut many = OResult::default();
        for round in 0..2 {
            for i in 0..40 {
                many.add(OErr::plain(format!("m{}", (i * 7 + round) % 30)));
            }
        }
        let want: Vec<String> = (0..40)
            .map(|i| format!("m{}", (i * 7) % 30))
            .chain((0..40).map(|i| format!("m{}", (i * 7 + 1) % 30)))
            .fold(Vec::new(), |mut seen, m| {
                if !seen.contains(&m) {
                    seen.push(m);
                }
                seen
            });
        assert_eq!(messages(&many), want);
        assert_eq!(want.len(), 30);

        // Merging into an empty result takes the errors whole; into a full one, only new ones.
        let mut few = OResult::default();
        few.add(OErr::plain("m3".into()));
        few.add(OErr::plain("new".into()));
        few.add(OErr::plain("m3".into()));
        few.match_count = 2;
        let mut empty = OResult::default();
        empty.merge(OResult::default());
        assert!(empty.is_valid());
        empty.merge(many);
        let mut expected = want.clone();
        assert_eq!(messages(&empty), expected);
        empty.merge(few);
        expected.push("new".into());
        assert_eq!(messages(&empty), expected);
        assert_eq!(empty.match_count, 2);
        empty.add(OErr::plain("new".into()));
        assert_eq!(messages(&empty), expected);
    }

    /// Render errors as `field: body`, sorted like the conformance runner sorts causes.
    fn rendered(errs: &ErrorList) -> Vec<String> {
        let mut out: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        out.sort();
        out
    }

    fn causes(errs: &ErrorList) -> Vec<(String, String, String)> {
        let mut out: Vec<(String, String, String)> = errs
            .iter()
            .map(|e| (e.field.to_string(), e.body(), e.kind.reason().to_string()))
            .collect();
        out.sort();
        out
    }

    fn validation_case_schema() -> JSONSchemaProps {
        schema(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 3},
                        "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.0},
                        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "byName": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {"name": {"type": "string"}, "value": {"type": "integer"}}
                            }
                        },
                        "port": {"x-kubernetes-int-or-string": true},
                        "email": {"type": "string", "format": "email"},
                        "size": {"type": "string", "enum": ["S", "M", "L"]},
                        "props": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}
                    }
                }
            }
        }))
    }

    fn cr(spec: Value) -> Value {
        json!({"apiVersion": "validation.example.com/v1", "kind": "Val", "metadata": {"name": "v"}, "spec": spec})
    }

    #[test]
    fn validation_golden_valid() {
        let obj = cr(
            json!({"name": "abc", "replicas": 2, "port": "http", "set": ["a", "b"], "byName": [{"name": "x", "value": 1}]}),
        );
        assert!(validate(&validation_case_schema(), &obj, &Path::root()).is_empty());
    }

    #[test]
    fn validation_golden_many_errors() {
        let obj = cr(json!({
            "name": "A", "replicas": 9, "ratio": 1.0, "tags": ["a", "b", "c"], "set": ["a", "a"],
            "byName": [{"name": "x"}, {"name": "x"}], "port": 1.5, "size": "XL", "props": {"a": "x", "b": "y"}
        }));
        let errs = validate(&validation_case_schema(), &obj, &Path::root());
        let expected: Vec<(String, String, String)> = vec![
            ("spec.byName[1]", "Duplicate value: {\"name\":\"x\"}", "FieldValueDuplicate"),
            ("spec.name", "Invalid value: \"A\": spec.name in body should be at least 2 chars long", "FieldValueInvalid"),
            (
                "spec.port",
                "Invalid value: \"number\": spec.port in body must be of type integer,string: \"number\"",
                "FieldValueTypeInvalid",
            ),
            ("spec.props", "Too many: 2: must have at most 1 item", "FieldValueTooMany"),
            ("spec.ratio", "Invalid value: 1: spec.ratio in body should be less than 1", "FieldValueInvalid"),
            (
                "spec.replicas",
                "Invalid value: 9: spec.replicas in body should be less than or equal to 3",
                "FieldValueInvalid",
            ),
            ("spec.set[1]", "Duplicate value: \"a\"", "FieldValueDuplicate"),
            (
                "spec.size",
                "Unsupported value: \"XL\": supported values: \"S\", \"M\", \"L\"",
                "FieldValueNotSupported",
            ),
            ("spec.tags", "Too many: 3: must have at most 2 items", "FieldValueTooMany"),
        ]
        .into_iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
        assert_eq!(causes(&errs), expected);
    }

    #[test]
    fn validation_golden_missing_required() {
        let errs = validate(
            &validation_case_schema(),
            &cr(json!({"replicas": 1})),
            &Path::root(),
        );
        assert_eq!(rendered(&errs), vec!["spec.name: Required value"]);
        assert_eq!(errs[0].kind.reason(), "FieldValueRequired");
    }

    #[test]
    fn validation_golden_wrong_types() {
        let obj = cr(json!({"name": "abc", "replicas": "two", "tags": "x"}));
        let errs = validate(&validation_case_schema(), &obj, &Path::root());
        assert_eq!(
            causes(&errs),
            vec![
                (
                    "spec.replicas".to_string(),
                    "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"".to_string(),
                    "FieldValueTypeInvalid".to_string()
                ),
                (
                    "spec.tags".to_string(),
                    "Invalid value: \"string\": spec.tags in body must be of type array: \"string\"".to_string(),
                    "FieldValueTypeInvalid".to_string()
                ),
            ]
        );
    }

    fn defaulting_case_schema() -> JSONSchemaProps {
        schema(json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "default": {}, "properties": {
                "replicas": {"type": "integer", "default": 1},
                "mode": {"type": "string", "default": "fast", "enum": ["fast", "slow"]}
            }}}
        }))
    }

    #[test]
    fn defaulting_golden_invalid_enum_after_defaulting() {
        let obj = json!({"apiVersion": "defaulting.example.com/v1", "kind": "Def", "metadata": {"name": "d3"}, "spec": {"mode": "medium", "replicas": 1}});
        let errs = validate(&defaulting_case_schema(), &obj, &Path::root());
        assert_eq!(
            causes(&errs),
            vec![(
                "spec.mode".to_string(),
                "Unsupported value: \"medium\": supported values: \"fast\", \"slow\"".to_string(),
                "FieldValueNotSupported".to_string()
            )]
        );
    }

    #[test]
    fn defaulting_golden_crd_with_invalid_default_rejected() {
        let node = schema(json!({"type": "integer", "default": "one", "maximum": 3}));
        let at = Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema")
            .child("properties")
            .key("spec")
            .child("properties")
            .key("replicas")
            .child("default");
        let errs = Validator::for_defaults(&node).validate_schema(&json!("one"), &at);
        assert_eq!(
            rendered(&errs),
            vec!["spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: \"string\":  in body must be of type integer: \"string\""]
        );
        assert_eq!(errs[0].kind.reason(), "FieldValueTypeInvalid");
    }

    #[test]
    fn string_checks_stop_at_the_first_failure() {
        let s = schema(
            json!({"type": "object", "properties": {"n": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"}}}),
        );
        let errs = validate(&s, &json!({"n": "ABCDE"}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["n: Too long: may not be more than 3 bytes"]
        );
        let errs = validate(&s, &json!({"n": "AB"}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["n: Invalid value: \"AB\": n in body should match '^[a-z]+$'"]
        );
        // Lengths count characters, not bytes.
        assert!(validate(&s, &json!({"n": "äöü"}), &Path::root()).len() == 1);
        let one = schema(
            json!({"type": "object", "properties": {"n": {"type": "string", "maxLength": 1}}}),
        );
        assert_eq!(
            rendered(&validate(&one, &json!({"n": "ab"}), &Path::root())),
            vec!["n: Too long: may not be more than 1 byte"]
        );
    }

    #[test]
    fn formats_report_the_format_as_type() {
        let s = schema(json!({"type": "object", "properties": {
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "free": {"type": "string", "format": "no-such-format"}
        }}));
        let errs = validate(
            &s,
            &json!({"when": "abc", "id": "zzz", "free": "x"}),
            &Path::root(),
        );
        assert_eq!(
            rendered(&errs),
            vec![
                "id: Invalid value: \"zzz\": id in body must be of type uuid: \"zzz\"",
                "when: Invalid value: \"abc\": when in body must be of type date-time: \"abc\"",
            ]
        );
        assert!(validate(&s, &json!({"when": "2024-01-02T03:04:05Z"}), &Path::root()).is_empty());
    }

    #[test]
    fn null_values_and_nullable() {
        let s = schema(json!({"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "nullable": true},
            "c": {"type": "string", "nullable": true, "enum": ["x"]}
        }}));
        let errs = validate(&s, &json!({"a": null, "b": null, "c": null}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "a: Invalid value: \"null\": a in body must be of type string: \"null\"",
                "c: Unsupported value: null: supported values: \"x\"",
            ]
        );
    }

    #[test]
    fn numbers_integer_versus_number() {
        let s = schema(json!({"type": "object", "properties": {
            "i": {"type": "integer"}, "n": {"type": "number"}, "m": {"type": "integer", "multipleOf": 5}
        }}));
        // 2.0 is an integer to kube; an int is a number.
        assert!(validate(&s, &json!({"i": 2.0, "n": 3, "m": 10}), &Path::root()).is_empty());
        let errs = validate(&s, &json!({"m": 7}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["m: Invalid value: 7: m in body should be a multiple of 5"]
        );
        // A fractional value in an integer field also fails kube-openapi's range check.
        let errs = validate(&s, &json!({"i": 1.5}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "<nil>: Invalid value: \"\": Checked value must be of type integer (default format) in i",
                "i: Invalid value: \"number\": i in body must be of type integer: \"number\"",
            ]
        );
    }

    #[test]
    fn int32_format_range() {
        let s = schema(
            json!({"type": "object", "properties": {"i": {"type": "integer", "format": "int32", "minimum": 1}}}),
        );
        let errs = validate(&s, &json!({"i": 3_000_000_000_i64}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["<nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in i"]
        );
        let errs = validate(&s, &json!({"i": 0}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["i: Invalid value: 0: i in body should be greater than or equal to 1"]
        );
    }

    #[test]
    fn object_constraints() {
        let s = schema(json!({"type": "object", "properties": {
            "closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false},
            "few": {"type": "object", "minProperties": 2}
        }}));
        let errs = validate(
            &s,
            &json!({"closed": {"a": "x", "b": 1}, "few": {"x": 1}}),
            &Path::root(),
        );
        assert_eq!(
            rendered(&errs),
            vec![
                "closed: Invalid value: \"b\": closed.b in body is a forbidden property",
                "few: Invalid value: 1: few in body should have at least 2 properties",
            ]
        );
    }

    #[test]
    fn arrays_min_items_and_unique() {
        let s = schema(json!({"type": "object", "properties": {
            "l": {"type": "array", "minItems": 3, "uniqueItems": true, "items": {"type": "integer", "maximum": 5}}
        }}));
        let errs = validate(&s, &json!({"l": [1, 9]}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "l: Invalid value: 2: l in body should have at least 3 items",
                "l[1]: Invalid value: 9: l[1] in body should be less than or equal to 5",
            ]
        );
        let errs = validate(&s, &json!({"l": [1, 1, 2]}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["l: Invalid value: \"\": l in body shouldn't contain duplicates"]
        );
    }

    #[test]
    fn any_of_reports_the_best_failure() {
        let s = schema(json!({"type": "object", "properties": {"v": {
            "type": "string",
            "anyOf": [{"maxLength": 2}, {"pattern": "^a"}]
        }}}));
        assert!(validate(&s, &json!({"v": "abcdef"}), &Path::root()).is_empty());
        let errs = validate(&s, &json!({"v": "bcd"}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "<nil>: Invalid value: \"\": \"v\" must validate at least one schema (anyOf)",
                "v: Too long: may not be more than 2 bytes",
            ]
        );
    }

    #[test]
    fn one_of_all_of_not() {
        let s = schema(json!({"type": "object", "properties": {
            "o": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
            "a": {"type": "integer", "allOf": [{"minimum": 5}]},
            "n": {"type": "string", "not": {"enum": ["bad"]}}
        }}));
        let errs = validate(&s, &json!({"o": 5, "a": 1, "n": "bad"}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec![
                "<nil>: Invalid value: \"\": \"a\" must validate all the schemas (allOf). None validated",
                "<nil>: Invalid value: \"\": \"n\" must not validate the schema (not)",
                "<nil>: Invalid value: \"\": \"o\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
                "a: Invalid value: 1: a in body should be greater than or equal to 5",
            ]
        );
        // With a non-root base path, composite errors name that path.
        let errs = Validator::new(&s).validate_schema(&json!({"n": "bad"}), &Path::new("status"));
        assert_eq!(
            rendered(&errs),
            vec!["status: Invalid value: \"\": \"n\" must not validate the schema (not)"]
        );
    }

    #[test]
    fn additional_properties_and_base_paths() {
        let s = schema(json!({"type": "object", "additionalProperties": {"type": "integer"}}));
        let errs = Validator::new(&s).validate_schema(&json!({"a": "x"}), &Path::new("status"));
        assert_eq!(
            rendered(&errs),
            vec!["status.a: Invalid value: \"string\": .a in body must be of type integer: \"string\""]
        );
    }

    #[test]
    fn enum_non_string_values_are_json() {
        let s =
            schema(json!({"type": "object", "properties": {"e": {"enum": [1, 2.5, {"a": 1}]}}}));
        let errs = validate(&s, &json!({"e": 3}), &Path::root());
        assert_eq!(
            rendered(&errs),
            vec!["e: Unsupported value: 3: supported values: \"1\", \"2.5\", \"{\\\"a\\\":1}\""]
        );
        assert!(validate(&s, &json!({"e": 1.0}), &Path::root()).is_empty());
    }

    #[test]
    fn property_names_validate_map_keys() {
        let s = schema(json!({"type": "object", "properties": {"exampleMap": {
            "type": "object",
            "x-kubernetes-property-names": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
            "additionalProperties": {"type": "string", "maxLength": 5}
        }}}));
        assert!(validate(&s, &json!({"exampleMap": {"abc": "x"}}), &Path::root()).is_empty());
        let errs = validate(
            &s,
            &json!({"exampleMap": {"toolongkey": "x", "Up": "y"}}),
            &Path::root(),
        );
        assert_eq!(
            rendered(&errs),
            vec![
                "exampleMap[Up]: Invalid value: \"Up\": exampleMap[Up] in body should match '^[a-z]+$'",
                "exampleMap[toolongkey]: Too long: may not be more than 5 bytes",
            ]
        );
    }

    #[test]
    fn ratcheting_keeps_unchanged_invalid_fields() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "a": {"type": "integer", "maximum": 3},
                "b": {"type": "integer", "maximum": 3}
            }}}}),
        );
        let v = Validator::new(&s);
        let old = json!({"metadata": {"rv": "1"}, "spec": {"a": 9, "b": 1}});
        // a is unchanged (still invalid), b changes: accepted.
        let new = json!({"metadata": {"rv": "2"}, "spec": {"a": 9, "b": 2}});
        assert!(v.validate_update(&new, &old, &Path::root()).is_empty());
        // A changed invalid value is reported.
        let new = json!({"metadata": {"rv": "2"}, "spec": {"a": 8, "b": 2}});
        assert_eq!(
            rendered(&v.validate_update(&new, &old, &Path::root())),
            vec!["spec.a: Invalid value: 8: spec.a in body should be less than or equal to 3"]
        );
    }

    #[test]
    fn ratcheting_follows_list_map_keys_and_list_types() {
        let s = schema(json!({"type": "object", "properties": {"items": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer", "maximum": 3}}}
        }, "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}));
        let v = Validator::new(&s);
        // The invalid item is unchanged, only moved: correlated by key, so ratcheted.
        let old =
            json!({"items": [{"name": "a", "v": 9}, {"name": "b", "v": 1}], "tags": ["x", "x"]});
        let new =
            json!({"items": [{"name": "b", "v": 2}, {"name": "a", "v": 9}], "tags": ["x", "x"]});
        assert!(v.validate_update(&new, &old, &Path::root()).is_empty());
        // Without old duplicates, new duplicates are reported.
        let old = json!({"items": [], "tags": ["x"]});
        assert_eq!(
            rendered(&v.validate_update(&new, &old, &Path::root())),
            vec![
                "items[1].v: Invalid value: 9: items[1].v in body should be less than or equal to 3",
                "tags[1]: Duplicate value: \"x\"",
            ]
        );
    }

    #[test]
    fn enum_follows_go_conversions() {
        // Go converts the int64 97 to the string "a" before comparing.
        let s = schema(
            json!({"type": "object", "properties": {"e": {"x-kubernetes-int-or-string": true, "enum": ["a"]}}}),
        );
        assert!(validate(&s, &json!({"e": 97}), &Path::root()).is_empty());
        // A float64 is truncated to an int64 enum entry.
        let s =
            schema(json!({"type": "object", "properties": {"e": {"type": "number", "enum": [1]}}}));
        assert!(validate(&s, &json!({"e": 1.7}), &Path::root()).is_empty());
    }

    #[test]
    fn go_regex_translation() {
        assert_eq!(translate_go_regex(r"^\d+$"), "^[0-9]+$");
        assert_eq!(translate_go_regex(r"[\d.]"), "[0-9.]");
        assert_eq!(translate_go_regex(r"[[]"), r"[\[]");
        assert_eq!(translate_go_regex(r"[]a]"), r"[\]a]");
        assert_eq!(translate_go_regex(r"\Qa.b\E"), r"a\.b");
        assert!(compile_pattern(r"^\w+$").is_ok_and(|re| !re.is_match("é")));
    }

    #[test]
    fn go_number_formatting() {
        assert_eq!(go_float_v(1.0), "1");
        assert_eq!(go_float_v(1e6), "1e+06");
        assert_eq!(go_float_v(123456.0), "123456");
        assert_eq!(go_float_v(1234567.0), "1.234567e+06");
        assert_eq!(go_float_v(0.0001), "0.0001");
        assert_eq!(go_float_v(0.00001), "1e-05");
        assert_eq!(go_json_float(1e21), "1e+21");
        assert_eq!(go_json_float(1e-7), "1e-7");
        assert_eq!(go_json_float(1000000.0), "1000000");
        assert!(is_float64_json_integer(2.0));
        assert!(!is_float64_json_integer(1.5));
        assert!(!is_float64_json_integer(-1.5));
        assert!(!is_float64_json_integer(1e20));
    }
}
