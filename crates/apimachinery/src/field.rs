//! Field paths and field-level errors, with kube's exact wording.
//!
//! Mirrors `k8s.io/apimachinery/pkg/util/validation/field`: every validator in the
//! crate reports `field::Error`s; `status::Status::invalid` aggregates them into the
//! 422 `Invalid` body clients see.

use serde_json::Value;
use std::fmt;

/// The parts joined, in one allocation (paths are made for every field a walk visits).
pub fn concat(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        out.push_str(p);
    }
    out
}

/// A path to a field, rendered as kube renders it: `spec.items[0].name`, `spec.map[key]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Path(String);

impl Path {
    /// The root path (renders as the empty string).
    pub fn root() -> Self {
        Path(String::new())
    }

    /// A path starting at the named field.
    pub fn new(name: &str) -> Self {
        Path(name.to_string())
    }

    /// `self.name`
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(concat(&[&self.0, ".", name]))
        }
    }

    /// `self[i]`
    pub fn index(&self, i: usize) -> Self {
        Path(concat(&[&self.0, "[", &i.to_string(), "]"]))
    }

    /// `self[key]`
    pub fn key(&self, key: &str) -> Self {
        Path(concat(&[&self.0, "[", key, "]"]))
    }

    /// The rendered path.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True for the root path.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A path built on the stack while a walk descends, rendered only when something is
/// reported at it: walks over every field of an object (pruning, defaulting) name the
/// path of the rare field they drop or fill without formatting one for every field.
#[derive(Clone, Copy, Debug)]
pub enum Trail<'a> {
    /// The root (renders as the empty string).
    Root,
    /// A rendered path the walk starts at.
    At(&'a Path),
    /// `parent.name`
    Child(&'a Trail<'a>, &'a str),
    /// `parent[i]`
    Index(&'a Trail<'a>, usize),
    /// `parent[key]`
    Key(&'a Trail<'a>, &'a str),
}

impl<'a> Trail<'a> {
    /// `self.name`
    pub fn child(&'a self, name: &'a str) -> Trail<'a> {
        Trail::Child(self, name)
    }

    /// `self[i]`
    pub fn index(&'a self, i: usize) -> Trail<'a> {
        Trail::Index(self, i)
    }

    /// `self[key]`
    pub fn key(&'a self, key: &'a str) -> Trail<'a> {
        Trail::Key(self, key)
    }

    /// True for the root path.
    pub fn is_root(&self) -> bool {
        match self {
            Trail::Root => true,
            Trail::At(p) => p.is_root(),
            _ => false,
        }
    }

    /// The path rendered as [`Path`] renders it.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            Trail::Root => {}
            Trail::At(p) => out.push_str(p.as_str()),
            Trail::Child(parent, name) => {
                parent.render_into(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            Trail::Index(parent, i) => {
                parent.render_into(out);
                let _ = write!(out, "[{i}]");
            }
            Trail::Key(parent, key) => {
                parent.render_into(out);
                out.push('[');
                out.push_str(key);
                out.push(']');
            }
        }
    }
}

/// The kind of a field error; its `reason()` is the `details.causes[].reason` string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorType {
    /// `FieldValueNotFound`
    NotFound,
    /// `FieldValueRequired`
    Required,
    /// `FieldValueDuplicate`
    Duplicate,
    /// `FieldValueInvalid`
    Invalid,
    /// `FieldValueNotSupported`
    NotSupported,
    /// `FieldValueForbidden`
    Forbidden,
    /// `FieldValueTooLong`
    TooLong,
    /// `FieldValueTooMany`
    TooMany,
    /// `FieldValueTooFew`
    TooFew,
    /// `FieldValueTooShort`
    TooShort,
    /// `InternalError`
    Internal,
    /// `FieldValueTypeInvalid`
    TypeInvalid,
}

impl ErrorType {
    /// The machine-readable reason kube puts in `details.causes[].reason`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::TooFew => "FieldValueTooFew",
            ErrorType::TooShort => "FieldValueTooShort",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable prefix of the message.
    pub fn label(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::TooFew => "Too few",
            ErrorType::TooShort => "Too short",
            ErrorType::Internal => "Internal error",
            ErrorType::TypeInvalid => "Invalid value",
        }
    }
}

/// The offending value as kube prints it.
#[derive(Clone, Debug, PartialEq)]
pub enum BadValue {
    /// No value is printed (`Required`, `Forbidden`, omitted values).
    Omit,
    /// A JSON value: strings quoted, numbers and booleans bare, `null` for null,
    /// objects and arrays as compact JSON.
    Json(Value),
    /// Printed verbatim (kube's `fmt.Stringer` values, e.g. a type name).
    Raw(String),
}

/// One field-level error.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    /// What kind of error this is.
    pub kind: ErrorType,
    /// The field it is about.
    pub field: Path,
    /// The offending value.
    pub bad_value: BadValue,
    /// Extra detail appended after the value.
    pub detail: String,
}

/// A list of field errors, in the order they were found.
pub type ErrorList = Vec<Error>;

impl Error {
    fn make(kind: ErrorType, field: &Path, bad_value: BadValue, detail: impl Into<String>) -> Self {
        Error {
            kind,
            field: field.clone(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `Required value[: detail]`
    pub fn required(field: &Path, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Required, field, BadValue::Omit, detail)
    }

    /// `Forbidden[: detail]`
    pub fn forbidden(field: &Path, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Forbidden, field, BadValue::Omit, detail)
    }

    /// `Invalid value: <value>[: detail]`
    pub fn invalid(field: &Path, value: Value, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Invalid, field, BadValue::Json(value), detail)
    }

    /// `Invalid value: <detail>` with the value omitted (as kube's CEL errors without a value).
    pub fn invalid_omit(field: &Path, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Invalid, field, BadValue::Omit, detail)
    }

    /// `Invalid value: "<type name>": detail` as kube's type errors print.
    pub fn type_invalid(field: &Path, value: Value, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::TypeInvalid, field, BadValue::Json(value), detail)
    }

    /// `Duplicate value: <value>`
    pub fn duplicate(field: &Path, value: Value) -> Self {
        Self::make(ErrorType::Duplicate, field, BadValue::Json(value), "")
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`
    pub fn not_supported<S: AsRef<str>>(field: &Path, value: Value, valid: &[S]) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::make(
            ErrorType::NotSupported,
            field,
            BadValue::Json(value),
            detail,
        )
    }

    /// `Not found: <value>`
    pub fn not_found(field: &Path, value: Value) -> Self {
        Self::make(ErrorType::NotFound, field, BadValue::Json(value), "")
    }

    /// `Too long: may not be more than N bytes` (value omitted, as kube).
    pub fn too_long(field: &Path, max_length: i64) -> Self {
        Self::too_long_in(field, max_length, "byte")
    }

    /// `Too long: may not be more than N characters` (value omitted, as kube).
    pub fn too_long_characters(field: &Path, max_length: i64) -> Self {
        Self::too_long_in(field, max_length, "character")
    }

    /// `Too long: may not be more than N <unit>s`.
    fn too_long_in(field: &Path, max_length: i64, unit: &str) -> Self {
        Self::make(
            ErrorType::TooLong,
            field,
            BadValue::Omit,
            limit_detail(
                "may not be more than",
                max_length,
                unit,
                "value is too long",
            ),
        )
    }

    /// `Too short: must be at least N characters`.
    pub fn too_short(field: &Path, min_length: i64) -> Self {
        Self::make(
            ErrorType::TooShort,
            field,
            BadValue::Omit,
            limit_detail(
                "must be at least",
                min_length,
                "character",
                "value is too short",
            ),
        )
    }

    /// `Too long: <detail>` with a caller-chosen detail.
    pub fn too_long_detail(field: &Path, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::TooLong, field, BadValue::Omit, detail)
    }

    /// `Too many: <actual>: must have at most N items`
    pub fn too_many(field: &Path, actual: i64, max: i64) -> Self {
        let detail = if max == 1 {
            "must have at most 1 item".to_string()
        } else if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        let bad = if actual >= 0 {
            BadValue::Json(Value::from(actual))
        } else {
            BadValue::Omit
        };
        Self::make(ErrorType::TooMany, field, bad, detail)
    }

    /// `Internal error: <detail>`
    pub fn internal(field: &Path, detail: impl Into<String>) -> Self {
        Self::make(ErrorType::Internal, field, BadValue::Omit, detail)
    }

    /// Replace the error kind (kept for CEL `reason`).
    pub fn with_kind(mut self, kind: ErrorType) -> Self {
        self.kind = kind;
        self
    }

    /// The message without the field name (kube's `ErrorBody`), used in `details.causes`.
    pub fn body(&self) -> String {
        let mut s = String::from(self.kind.label());
        let print_value = !matches!(
            self.kind,
            ErrorType::Required
                | ErrorType::Forbidden
                | ErrorType::TooLong
                | ErrorType::TooShort
                | ErrorType::Internal
        );
        if print_value {
            match &self.bad_value {
                BadValue::Omit => {}
                BadValue::Json(v) => {
                    s.push_str(": ");
                    s.push_str(&format_value(v));
                }
                BadValue::Raw(r) => {
                    s.push_str(": ");
                    s.push_str(r);
                }
            }
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for Error {}

fn limit_detail(prefix: &str, n: i64, unit: &str, unbounded: &str) -> String {
    match n {
        n if n < 0 => unbounded.to_string(),
        1 => format!("{prefix} 1 {unit}"),
        n => format!("{prefix} {n} {unit}s"),
    }
}

/// Print a JSON value the way kube's field errors print a Go value: strings quoted,
/// numbers as Go's `%v`, everything else as Go's JSON.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::String(s) => go_quote(s),
        Value::Number(n) => crate::goformat::go_number_v(n),
        other => crate::goformat::go_json(other),
    }
}

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Render a list of errors as kube's aggregate: one message bare, several in `[a, b]`.
pub fn aggregate_message(errs: &[Error]) -> String {
    let mut seen = std::collections::HashSet::new();
    let msgs: Vec<String> = errs
        .iter()
        .map(|e| e.to_string())
        .filter(|m| seen.insert(m.clone()))
        .collect();
    if msgs.len() == 1 {
        msgs[0].clone()
    } else {
        format!("[{}]", msgs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn path_rendering() {
        let p = Path::new("spec").child("items").index(1).child("name");
        assert_eq!(p.as_str(), "spec.items[1].name");
        assert_eq!(Path::new("spec").child("m").key("k").as_str(), "spec.m[k]");
        assert_eq!(Path::root().child("a").as_str(), "a");
    }

    #[test]
    fn trails_render_as_paths_do() {
        let base = Path::new("metadata");
        let at = Trail::At(&base);
        let (refs, first) = (at.child("managedFields"), Trail::Root);
        let entry = refs.index(0);
        assert_eq!(entry.child("x").render(), "metadata.managedFields[0].x");
        let spec = first.child("spec");
        let map = spec.child("m");
        assert_eq!(
            map.key("k").render(),
            Path::new("spec").child("m").key("k").as_str()
        );
        let item = first.index(2);
        assert_eq!(
            item.child("a").render(),
            Path::root().index(2).child("a").as_str()
        );
        assert!(first.is_root() && Trail::At(&Path::root()).is_root() && !spec.is_root());
    }

    #[test]
    fn messages_match_kube() {
        let f = Path::new("spec").child("replicas");
        let e = Error::invalid(
            &f,
            json!(9),
            "spec.replicas in body should be less than or equal to 3",
        );
        assert_eq!(
            e.to_string(),
            "spec.replicas: Invalid value: 9: spec.replicas in body should be less than or equal to 3"
        );
        assert_eq!(
            Error::required(&Path::new("spec").child("name"), "").to_string(),
            "spec.name: Required value"
        );
        let e = Error::not_supported(
            &Path::new("spec").child("size"),
            json!("XL"),
            &["S", "M", "L"],
        );
        assert_eq!(
            e.body(),
            "Unsupported value: \"XL\": supported values: \"S\", \"M\", \"L\""
        );
        assert_eq!(
            Error::too_many(&f, 2, 1).body(),
            "Too many: 2: must have at most 1 item"
        );
        assert_eq!(
            Error::too_many(&f, 3, 2).body(),
            "Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            Error::duplicate(&f, json!({"name": "x"})).body(),
            "Duplicate value: {\"name\":\"x\"}"
        );
        assert_eq!(
            Error::invalid_omit(&f, "Keys may not be removed").body(),
            "Invalid value: Keys may not be removed"
        );
    }

    #[test]
    fn aggregate_dedups_and_brackets() {
        let a = Error::required(&Path::new("a"), "");
        let b = Error::required(&Path::new("b"), "");
        assert_eq!(
            aggregate_message(std::slice::from_ref(&a)),
            "a: Required value"
        );
        assert_eq!(
            aggregate_message(&[a.clone(), b, a]),
            "[a: Required value, b: Required value]"
        );
    }

    #[test]
    fn values_print_as_go_prints_them() {
        assert_eq!(format_value(&json!(1.5)), "1.5");
        assert_eq!(format_value(&json!(1e6)), "1e+06");
        assert_eq!(format_value(&json!(9)), "9");
        assert_eq!(format_value(&json!("a\"b")), "\"a\\\"b\"");
        assert_eq!(
            format_value(&json!({"b": 1, "a": "<"})),
            "{\"a\":\"\\u003c\",\"b\":1}"
        );
        assert_eq!(format_value(&Value::Null), "null");
    }
}
