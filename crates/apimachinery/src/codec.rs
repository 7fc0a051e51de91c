//! Request-body decoding with kube's semantics and error texts.
//!
//! * JSON is checked with a port of Go's `encoding/json` scanner so malformed bodies get
//!   Go's exact messages (`unexpected end of JSON input`, `invalid character 'x' looking
//!   for beginning of value`), and numbers decode as kube's unstructured JSON does
//!   (integers without `.` become int64, everything else float64).
//! * YAML follows `sigs.k8s.io/yaml` (goyaml v2, YAML 1.1 plain scalars: `yes`/`on` are
//!   booleans, `010` is octal) followed by a JSON round trip, so `1.0` becomes `1`.
//! * Strict-decoding helpers: duplicate JSON fields (`duplicate field "spec.a"`) and
//!   duplicate YAML keys (`line 3: key "a" already set in map`).
//! * kube's decode error wrappers (`the object provided is unrecognized ...`) and
//!   list continue tokens.

use crate::goformat::{go_float_v, go_json_string};
use base64::Engine;
use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;

/// A body that could not be decoded; the text is what kube's decoder reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Go `encoding/json` error text, e.g. `unexpected end of JSON input`.
    #[error("{0}")]
    Json(String),
    /// `sigs.k8s.io/yaml` `YAMLToJSON` error text, e.g. `yaml: line 2: ...`. kube's
    /// apply handler (`yaml.Unmarshal`) prefixes it with `error converting YAML to JSON: `.
    #[error("{0}")]
    Yaml(String),
    /// A content type this decoder does not handle.
    #[error("unsupported media type {0:?}")]
    UnsupportedMediaType(String),
    /// The body decoded, but is not a JSON object (kube's messages need the body to
    /// say what it is; see [`unrecognized_object_message`]).
    #[error("the body is not an object")]
    NotAnObject,
}

impl DecodeError {
    /// The error text.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// Stack guaranteed to the decoding (and the caller's walks) of an object nested
/// deeper than serde_json's default recursion limit, up to kube's 10,000 levels.
const DEEP_DECODE_STACK: usize = 64 * 1024 * 1024;

/// Parse stored JSON. serde_json's fast path stops at 128 levels, but the write path
/// accepts kube's 10,000: deeper objects are parsed again without that limit, on a
/// stack of their own if this thread's is small, so whatever was stored reads back.
pub fn decode_stored_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    match serde_json::from_slice(bytes) {
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            stacker::maybe_grow(DEEP_DECODE_STACK / 2, DEEP_DECODE_STACK, || {
                let mut de = serde_json::Deserializer::from_slice(bytes);
                de.disable_recursion_limit();
                let v = T::deserialize(&mut de)?;
                de.end()?;
                Ok(v)
            })
        }
        r => r,
    }
}

/// Decode a request body by its `Content-Type` (parameters such as `charset` ignored):
/// JSON for `application/json` and the JSON patch types, YAML for `application/yaml`
/// and `application/apply-patch+yaml`.
pub fn decode_body(bytes: &[u8], content_type: &str) -> Result<Value, DecodeError> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/json"
        | "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => decode_json(bytes),
        "application/yaml" | "application/apply-patch+yaml" => decode_yaml(bytes),
        _ => Err(DecodeError::UnsupportedMediaType(media)),
    }
}

// ---------------------------------------------------------------------------
// Go value formatting not covered by `crate::goformat`.

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`, used by sigs.k8s.io/yaml for float map keys.
fn go_format_g32(f: f64) -> String {
    // The value is rounded to float32 first, which may overflow to ±Inf.
    let g = f as f32;
    if g.is_nan() {
        return "NaN".to_string();
    }
    if g.is_infinite() {
        return if g > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if g == 0.0 {
        return if g.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e = format!("{g:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..6).contains(&exp) {
        // Display is the shortest float32 round-trip decimal without an exponent.
        format!("{g}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    }
}

/// Go's `strconv.Quote` of a single byte as `encoding/json` quotes offending characters.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let ch = char::from(c);
            let body = match ch {
                '\u{7}' => "\\a".to_string(),
                '\u{8}' => "\\b".to_string(),
                '\u{c}' => "\\f".to_string(),
                '\n' => "\\n".to_string(),
                '\r' => "\\r".to_string(),
                '\t' => "\\t".to_string(),
                '\u{b}' => "\\v".to_string(),
                '\\' => "\\\\".to_string(),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => format!("\\x{:02x}", c as u32),
                // Latin-1 controls, NBSP and the soft hyphen are not printable for Go.
                c if (0x80..=0xa0).contains(&(c as u32)) || c as u32 == 0xad => {
                    format!("\\u{:04x}", c as u32)
                }
                c => c.to_string(),
            };
            format!("'{body}'")
        }
    }
}

// ---------------------------------------------------------------------------
// JSON: Go's syntax scanner, kube number semantics, duplicate-field paths.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ScanState {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    Literal(&'static [u8], &'static str),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ParseState {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// Go's `encoding/json` limit, which kube's decoders keep: deeper documents get Go's
/// `exceeded max depth`. Requests run on threads whose stacks hold this many levels
/// through every stage (see `server::SERVER_THREAD_STACK`).
const MAX_NESTING_DEPTH: usize = 10000;

/// A port of the state machine of Go's `encoding/json` scanner, for its error texts.
struct Scanner {
    state: ScanState,
    stack: Vec<ParseState>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            state: ScanState::BeginValue,
            stack: Vec::new(),
            end_top: false,
        }
    }

    fn push(&mut self, c: u8, p: ParseState, next: ScanState) -> Result<(), String> {
        self.stack.push(p);
        if self.stack.len() > MAX_NESTING_DEPTH {
            return Err(invalid(c, "exceeded max depth"));
        }
        self.state = next;
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.state = ScanState::EndTop;
            self.end_top = true;
        } else {
            self.state = ScanState::EndValue;
        }
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        use ScanState::*;
        if is_space(c) {
            return Ok(());
        }
        self.state = match c {
            b'{' => return self.push(c, ParseState::ObjectKey, BeginStringOrEmpty),
            b'[' => return self.push(c, ParseState::ArrayValue, BeginValueOrEmpty),
            b'"' => InString,
            b'-' => Neg,
            b'0' => Zero,
            b'1'..=b'9' => One,
            b't' => Literal(b"rue", "true"),
            b'f' => Literal(b"alse", "false"),
            b'n' => Literal(b"ull", "null"),
            _ => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.state = ScanState::EndTop;
            self.end_top = true;
            return self.end_top_step(c);
        };
        if is_space(c) {
            self.state = ScanState::EndValue;
            return Ok(());
        }
        let n = self.stack.len() - 1;
        match (top, c) {
            (ParseState::ObjectKey, b':') => {
                self.stack[n] = ParseState::ObjectValue;
                self.state = ScanState::BeginValue;
            }
            (ParseState::ObjectKey, _) => return Err(invalid(c, "after object key")),
            (ParseState::ObjectValue, b',') => {
                self.stack[n] = ParseState::ObjectKey;
                self.state = ScanState::BeginString;
            }
            (ParseState::ObjectValue, b'}') => self.pop(),
            (ParseState::ObjectValue, _) => return Err(invalid(c, "after object key:value pair")),
            (ParseState::ArrayValue, b',') => self.state = ScanState::BeginValue,
            (ParseState::ArrayValue, b']') => self.pop(),
            (ParseState::ArrayValue, _) => return Err(invalid(c, "after array element")),
        }
        Ok(())
    }

    fn end_top_step(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            Ok(())
        } else {
            Err(invalid(c, "after top-level value"))
        }
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        use ScanState::*;
        match self.state {
            BeginValueOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            BeginValue => self.begin_value(c),
            BeginStringOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b'}' {
                    if let Some(top) = self.stack.last_mut() {
                        *top = ParseState::ObjectValue;
                    }
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            BeginString => self.begin_string(c),
            EndValue => self.end_value(c),
            EndTop => self.end_top_step(c),
            InString => {
                match c {
                    b'"' => self.state = EndValue,
                    b'\\' => self.state = InStringEsc,
                    c if c < 0x20 => return Err(invalid(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => InString,
                    b'u' => InStringEscU(0),
                    _ => return Err(invalid(c, "in string escape code")),
                };
                Ok(())
            }
            InStringEscU(k) => {
                if !c.is_ascii_hexdigit() {
                    return Err(invalid(c, "in \\u hexadecimal character escape"));
                }
                self.state = if k == 3 {
                    InString
                } else {
                    InStringEscU(k + 1)
                };
                Ok(())
            }
            Neg => {
                self.state = match c {
                    b'0' => Zero,
                    b'1'..=b'9' => One,
                    _ => return Err(invalid(c, "in numeric literal")),
                };
                Ok(())
            }
            One => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.zero(c)
                }
            }
            Zero => self.zero(c),
            Dot => {
                if c.is_ascii_digit() {
                    self.state = Dot0;
                    Ok(())
                } else {
                    Err(invalid(c, "after decimal point in numeric literal"))
                }
            }
            Dot0 => {
                if c.is_ascii_digit() {
                    Ok(())
                } else if c == b'e' || c == b'E' {
                    self.state = E;
                    Ok(())
                } else {
                    self.end_value(c)
                }
            }
            E => {
                if c == b'+' || c == b'-' {
                    self.state = ESign;
                    Ok(())
                } else {
                    self.e_sign(c)
                }
            }
            ESign => self.e_sign(c),
            E0 => {
                if c.is_ascii_digit() {
                    Ok(())
                } else {
                    self.end_value(c)
                }
            }
            Literal(rest, name) => {
                let Some((&want, tail)) = rest.split_first() else {
                    return self.end_value(c);
                };
                if c != want {
                    return Err(invalid(
                        c,
                        &format!("in literal {name} (expecting {})", quote_char(want)),
                    ));
                }
                self.state = if tail.is_empty() {
                    EndValue
                } else {
                    Literal(tail, name)
                };
                Ok(())
            }
        }
    }

    fn begin_string(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.state = ScanState::InString;
            return Ok(());
        }
        Err(invalid(c, "looking for beginning of object key string"))
    }

    fn zero(&mut self, c: u8) -> Result<(), String> {
        match c {
            b'.' => self.state = ScanState::Dot,
            b'e' | b'E' => self.state = ScanState::E,
            _ => return self.end_value(c),
        }
        Ok(())
    }

    fn e_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            self.state = ScanState::E0;
            Ok(())
        } else {
            Err(invalid(c, "in exponent of numeric literal"))
        }
    }

    fn eof(&mut self) -> Result<(), String> {
        if self.end_top {
            return Ok(());
        }
        // Go feeds a space at the end, so `tru` reports the space.
        self.step(b' ')?;
        if self.end_top {
            Ok(())
        } else {
            Err("unexpected end of JSON input".to_string())
        }
    }
}

/// Go's `encoding/json` syntax error for `bytes`, or `None` when it is valid JSON.
pub fn json_syntax_error(bytes: &[u8]) -> Option<String> {
    let mut s = Scanner::new();
    for &c in bytes {
        if let Err(e) = s.step(c) {
            return Some(e);
        }
    }
    s.eof().err()
}

/// Builds values from JSON already checked by the scanner; records duplicate keys
/// with the field paths kube's strict decoder prints.
struct JsonBuilder<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    stack: Vec<String>,
    duplicates: Vec<String>,
    error: Option<String>,
}

impl JsonBuilder<'_> {
    fn peek(&self) -> u8 {
        self.b.get(self.i).copied().unwrap_or(0)
    }

    fn skip_space(&mut self) {
        while is_space(self.peek()) {
            self.i += 1;
        }
    }

    fn field_error(&mut self, key: &str) {
        let path = if self.stack.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.stack.concat())
        };
        if self.duplicates.len() < 100 && !self.duplicates.contains(&path) {
            self.duplicates.push(path);
        }
    }

    fn value(&mut self) -> Value {
        self.skip_space();
        if matches!(self.peek(), b'{' | b'[') {
            if self.depth >= MAX_NESTING_DEPTH {
                let c = self.peek();
                self.error
                    .get_or_insert_with(|| invalid(c, "exceeded max depth"));
                return Value::Null;
            }
            self.depth += 1;
            // Safe on any thread: a small stack grows (in segments) as nesting deepens.
            let v = stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, || self.container());
            self.depth -= 1;
            return v;
        }
        self.scalar()
    }

    fn container(&mut self) -> Value {
        match self.peek() {
            b'{' => {
                self.i += 1;
                let mut m = Map::new();
                loop {
                    self.skip_space();
                    if self.peek() == b'}' {
                        self.i += 1;
                        return Value::Object(m);
                    }
                    if self.peek() == b',' {
                        self.i += 1;
                        self.skip_space();
                    }
                    let key = self.string();
                    self.skip_space();
                    self.i += 1; // ':'
                    if m.contains_key(&key) {
                        self.field_error(&key);
                    }
                    let depth = self.stack.len();
                    if depth > 0 {
                        self.stack.push(".".to_string());
                    }
                    self.stack.push(key.clone());
                    let v = self.value();
                    self.stack.truncate(depth);
                    m.insert(key, v);
                    if self.error.is_some() {
                        return Value::Object(m);
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut a = Vec::new();
                loop {
                    self.skip_space();
                    if self.peek() == b']' {
                        self.i += 1;
                        return Value::Array(a);
                    }
                    if self.peek() == b',' {
                        self.i += 1;
                    }
                    let depth = self.stack.len();
                    self.stack.push(format!("[{}]", a.len()));
                    let v = self.value();
                    self.stack.truncate(depth);
                    a.push(v);
                    if self.error.is_some() {
                        return Value::Array(a);
                    }
                }
            }
            _ => self.scalar(),
        }
    }

    fn scalar(&mut self) -> Value {
        match self.peek() {
            b'"' => Value::String(self.string()),
            b't' => {
                self.i += 4;
                Value::Bool(true)
            }
            b'f' => {
                self.i += 5;
                Value::Bool(false)
            }
            b'n' => {
                self.i += 4;
                Value::Null
            }
            _ => self.number(),
        }
    }

    fn number(&mut self) -> Value {
        let start = self.i;
        while matches!(self.peek(), b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
            self.i += 1;
        }
        let text = String::from_utf8_lossy(&self.b[start..self.i]).into_owned();
        if !text.contains('.') {
            if let Ok(i) = text.parse::<i64>() {
                return Value::from(i);
            }
        }
        match text.parse::<f64>() {
            Ok(f) if f.is_finite() => Number::from_f64(f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            _ => {
                if self.error.is_none() {
                    self.error = Some(format!(
                        "json: cannot unmarshal number {text} into Go value of type float64"
                    ));
                }
                Value::Null
            }
        }
    }

    /// A string literal, decoded as Go does (invalid UTF-8 and lone surrogates → U+FFFD).
    fn string(&mut self) -> String {
        self.i += 1; // opening quote
        let mut bytes: Vec<u8> = Vec::new();
        let mut out = String::new();
        let flush = |bytes: &mut Vec<u8>, out: &mut String| {
            let mut rest: &[u8] = bytes;
            while !rest.is_empty() {
                match std::str::from_utf8(rest) {
                    Ok(s) => {
                        out.push_str(s);
                        break;
                    }
                    Err(e) => {
                        let (ok, bad) = rest.split_at(e.valid_up_to());
                        out.push_str(std::str::from_utf8(ok).unwrap_or_default());
                        out.push('\u{fffd}');
                        rest = &bad[1..];
                    }
                }
            }
            bytes.clear();
        };
        loop {
            let c = self.peek();
            self.i += 1;
            match c {
                b'"' | 0 => break,
                b'\\' => {
                    flush(&mut bytes, &mut out);
                    let e = self.peek();
                    self.i += 1;
                    match e {
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4();
                            if (0xd800..0xdc00).contains(&hi)
                                && self.b.get(self.i) == Some(&b'\\')
                                && self.b.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4();
                                if (0xdc00..0xe000).contains(&lo) {
                                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                                    out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                    continue;
                                }
                                self.i = save;
                            }
                            out.push(char::from_u32(hi).unwrap_or('\u{fffd}'));
                        }
                        other => out.push(char::from(other)),
                    }
                }
                c => bytes.push(c),
            }
        }
        flush(&mut bytes, &mut out);
        out
    }

    fn hex4(&mut self) -> u32 {
        let s = self.b.get(self.i..self.i + 4).unwrap_or_default();
        self.i += 4;
        std::str::from_utf8(s)
            .ok()
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .unwrap_or(0xfffd)
    }
}

/// Decode JSON the way kube decodes an unstructured body, also returning the paths of
/// duplicate fields (first 100, each once, in document order).
pub fn decode_json_with_duplicates(bytes: &[u8]) -> Result<(Value, Vec<String>), DecodeError> {
    if let Some(e) = json_syntax_error(bytes) {
        return Err(DecodeError::Json(e));
    }
    let mut b = JsonBuilder {
        b: bytes,
        i: 0,
        depth: 0,
        stack: Vec::new(),
        duplicates: Vec::new(),
        error: None,
    };
    let v = b.value();
    match b.error {
        Some(e) => Err(DecodeError::Json(e)),
        None => Ok((v, b.duplicates)),
    }
}

/// Decode a JSON body as kube does (syntax errors in Go's words).
pub fn decode_json(bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_json_with_duplicates(bytes).map(|(v, _)| v)
}

/// Paths of duplicate fields in a JSON body as kube's strict decoder names them
/// (`spec.a`, `spec.items[0].name`); empty for invalid JSON.
pub fn find_duplicate_fields(json_bytes: &[u8]) -> Vec<String> {
    decode_json_with_duplicates(json_bytes)
        .map(|(_, d)| d)
        .unwrap_or_default()
}

/// kube's strict-decoding text for a duplicate field: `duplicate field "spec.a"`.
pub fn duplicate_field_message(path: &str) -> String {
    format!("duplicate field {}", crate::field::go_quote(path))
}

/// kube's strict-decoding text for an unknown field: `unknown field "spec.a"`.
pub fn unknown_field_message(path: &str) -> String {
    format!("unknown field {}", crate::field::go_quote(path))
}

/// kube's `strict decoding error: a, b` wrapper.
pub fn strict_decoding_error(errors: &[String]) -> String {
    format!("strict decoding error: {}", errors.join(", "))
}

/// kube's `summarizeData(body, 30)`: the body itself when it starts with `{`, hex
/// otherwise, cut at 30 bytes with ` ...`, and `<empty>` for no body.
pub fn summarize_body(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (part, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(part)),
        Some(_) => {
            let hex: String = part.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// kube's 400 text for a create/update body it could not turn into an object:
/// `the object provided is unrecognized (must be of type Val): <reason> (<summary>)`,
/// where the reason is what kube's decoder reports for that failure (JSON syntax errors
/// come through `couldn't get version/kind; json parse error: `, YAML errors as is).
pub fn unrecognized_object_message(target_kind: &str, err: &DecodeError, body: &[u8]) -> String {
    let reason = match err {
        DecodeError::Json(e) => format!("couldn't get version/kind; json parse error: {e}"),
        DecodeError::Yaml(e) => e.clone(),
        DecodeError::UnsupportedMediaType(m) => format!("unsupported media type {m:?}"),
        DecodeError::NotAnObject => {
            let v = decode_json(body).or_else(|_| decode_yaml(body));
            match v {
                Ok(Value::Object(_)) | Err(_) => missing_kind_message(body),
                Ok(Value::Null) => missing_kind_message(body),
                Ok(other) => format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND_TYPE}",
                    go_json_kind(&other)
                ),
            }
        }
    };
    format!(
        "the object provided is unrecognized (must be of type {target_kind}): {reason} ({})",
        summarize_body(body)
    )
}

/// kube's `Object 'Kind' is missing in '<body>'`.
pub fn missing_kind_message(body: &[u8]) -> String {
    format!(
        "Object 'Kind' is missing in '{}'",
        String::from_utf8_lossy(body)
    )
}

pub use crate::goformat::go_json_kind;

/// Go's `json.Unmarshal` error for decoding `body` into the Go type named `go_type`
/// (e.g. `map[string]interface {}`, `[]jsonpatch.Operation`): the syntax error, or
/// `json: cannot unmarshal array into Go value of type map[string]interface {}`;
/// `None` when the body fits.
pub fn go_json_error(body: &[u8], go_type: &str) -> Option<String> {
    if let Some(e) = json_syntax_error(body) {
        return Some(e);
    }
    let v = decode_json(body).ok()?;
    let wants = |ty: &str, v: &Value| -> bool {
        let any = ty == "interface {}";
        any || match v {
            Value::Null => true,
            Value::Array(_) => ty.starts_with("[]"),
            Value::Object(_) => {
                !ty.starts_with("[]")
                    && (ty.starts_with("map[") || ty.starts_with("struct") || ty.contains('.'))
            }
            Value::String(_) => ty == "string",
            Value::Number(_) => ["int", "uint", "float"].iter().any(|p| ty.starts_with(p)),
            Value::Bool(_) => ty == "bool",
        }
    };
    if !wants(go_type, &v) {
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            go_json_kind(&v)
        ));
    }
    // Elements of a slice of named (map or struct) types must be objects.
    if let (Some(elem), Value::Array(items)) = (go_type.strip_prefix("[]"), &v) {
        for item in items {
            if !wants(elem, item) {
                return Some(format!(
                    "json: cannot unmarshal {} into Go value of type {elem}",
                    go_json_kind(item)
                ));
            }
        }
    }
    None
}

/// kube's 400 text when a body with a kind failed to decode:
/// `Val in version "v1" cannot be handled as a Val: <err>`.
pub fn cannot_be_handled_message(
    kind: &str,
    version: &str,
    target_kind: &str,
    err: &str,
) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {target_kind}: {err}",
        crate::field::go_quote(version)
    )
}

/// The Go type kube's `Interpret` decodes into, as `encoding/json` names it in errors.
const FIND_KIND_TYPE: &str =
    "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// Read `apiVersion` and `kind` as kube's `SimpleMetaFactory.Interpret` does; the error
/// is kube's text (`couldn't get version/kind; json parse error: ...`).
pub fn interpret_type_meta(bytes: &[u8]) -> Result<(String, String), String> {
    let v = decode_json(bytes)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    interpret_type_meta_value(&v)
}

/// [`interpret_type_meta`] for an already decoded body (e.g. YAML converted to JSON).
pub fn interpret_type_meta_value(v: &Value) -> Result<(String, String), String> {
    let wrap = |e: String| format!("couldn't get version/kind; json parse error: {e}");
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => return Ok((String::new(), String::new())),
        other => {
            return Err(wrap(format!(
                "json: cannot unmarshal {} into Go value of type {FIND_KIND_TYPE}",
                go_json_kind(other)
            )))
        }
    };
    let (mut api_version, mut kind) = (String::new(), String::new());
    let mut first_error: Option<String> = None;
    // Go matches struct fields case-insensitively; the last occurrence wins.
    for (k, val) in obj {
        let target = if k.eq_ignore_ascii_case("apiVersion") {
            ("apiVersion", &mut api_version)
        } else if k.eq_ignore_ascii_case("kind") {
            ("kind", &mut kind)
        } else {
            continue;
        };
        match val {
            Value::String(s) => *target.1 = s.clone(),
            Value::Null => {}
            other => {
                first_error.get_or_insert_with(|| {
                    format!(
                        "json: cannot unmarshal {} into Go struct field .{} of type string",
                        go_json_kind(other),
                        target.0
                    )
                });
            }
        }
    }
    match first_error {
        Some(e) => Err(wrap(e)),
        None => Ok((api_version, kind)),
    }
}

// ---------------------------------------------------------------------------
// YAML (sigs.k8s.io/yaml over goyaml v2).

/// A YAML node with goyaml v2's Go types.
#[derive(Clone, Debug, PartialEq)]
enum Y {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Y>),
    Map(Vec<YEntry>),
}

#[derive(Clone, Debug, PartialEq)]
struct YEntry {
    key: Y,
    value: Y,
    /// A plain `<<` key: goyaml merges the value in.
    merge: bool,
    /// 1-based line of the value node, for duplicate-key messages.
    line: usize,
}

/// Go's `ParseInt(s, 0, 64)` / `ParseUint(s, 0, 64)` (prefixes 0x 0o 0b and leading-0 octal).
fn go_parse_int_base0(s: &str) -> Option<Y> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if magnitude <= i64::MAX as u64 + 1 {
            Some(Y::Int((magnitude as i128).wrapping_neg() as i64))
        } else {
            None
        }
    } else if magnitude <= i64::MAX as u64 {
        Some(Y::Int(magnitude as i64))
    } else if s.starts_with('+') {
        // ParseUint rejects a sign.
        None
    } else {
        Some(Y::Uint(magnitude))
    }
}

/// goyaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// goyaml v2's `resolve` for an untagged plain scalar (YAML 1.1 booleans, octal, `_`).
fn resolve_plain(s: &str) -> Y {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Y::Bool(true)
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Y::Bool(false)
        }
        "" | "~" | "null" | "Null" | "NULL" => return Y::Null,
        ".nan" | ".NaN" | ".NAN" => return Y::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Y::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Y::Float(f64::NEG_INFINITY),
        _ => {}
    }
    match s.as_bytes().first() {
        Some(b'.') => match s.parse::<f64>() {
            Ok(f) if f.is_finite() => Y::Float(f),
            _ => Y::Str(s.to_string()),
        },
        Some(b'0'..=b'9' | b'+' | b'-') => {
            let plain = s.replace('_', "");
            if let Some(y) = go_parse_int_base0(&plain) {
                return y;
            }
            if is_yaml_style_float(&plain) {
                if let Ok(f) = plain.parse::<f64>() {
                    if f.is_finite() {
                        return Y::Float(f);
                    }
                }
            }
            Y::Str(s.to_string())
        }
        _ => Y::Str(s.to_string()),
    }
}

/// A decoded node plus where its first scalar sits in the input.
struct Node {
    y: Y,
    offset: Option<usize>,
    merge_key: bool,
}

impl Node {
    fn new(y: Y) -> Self {
        Node {
            y,
            offset: None,
            merge_key: false,
        }
    }
}

/// Shared state of one YAML decode.
struct YamlCtx<'de> {
    input: &'de [u8],
    /// Offsets of every `\n`, for line numbers.
    newlines: Vec<usize>,
    last_offset: Cell<usize>,
    error: RefCell<Option<String>>,
}

impl YamlCtx<'_> {
    fn line_of(&self, offset: usize) -> usize {
        1 + self.newlines.partition_point(|&n| n < offset)
    }

    /// Where a borrowed scalar sits in the input, if it is a slice of it.
    fn offset_of(&self, s: &str) -> Option<usize> {
        let base = self.input.as_ptr() as usize;
        let p = s.as_ptr() as usize;
        (p >= base && p + s.len() <= base + self.input.len()).then(|| p - base)
    }

    /// Is the scalar at `offset..offset+len` written plain and without a tag?
    fn is_plain_untagged(&self, offset: usize, len: usize) -> bool {
        let before = offset
            .checked_sub(1)
            .and_then(|i| self.input.get(i))
            .copied();
        if let Some(q @ (b'"' | b'\'')) = before {
            if self.input.get(offset + len) == Some(&q) {
                return false;
            }
        }
        // Look back over node properties (`!tag`, `&anchor`) on the same line.
        let mut i = offset;
        for _ in 0..2 {
            while i > 0 && matches!(self.input[i - 1], b' ' | b'\t') {
                i -= 1;
            }
            let end = i;
            while i > 0 && !matches!(self.input[i - 1], b' ' | b'\t' | b'\n' | b'\r') {
                i -= 1;
            }
            match self.input.get(i..end) {
                Some([b'!', ..]) => return false,
                Some([b'&', ..]) => continue,
                _ => break,
            }
        }
        true
    }
}

struct NodeSeed<'c, 'de> {
    ctx: &'c YamlCtx<'de>,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_, 'de> {
    type Value = Node;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor { ctx: self.ctx })
    }
}

struct NodeVisitor<'c, 'de> {
    ctx: &'c YamlCtx<'de>,
}

impl<'de> Visitor<'de> for NodeVisitor<'_, 'de> {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
        Ok(Node::new(Y::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
        Ok(Node::new(Y::Int(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
        Ok(Node::new(if v <= i64::MAX as u64 {
            Y::Int(v as i64)
        } else {
            Y::Uint(v)
        }))
    }

    // Beyond 64 bits goyaml falls back to float64.
    fn visit_i128<E>(self, v: i128) -> Result<Node, E> {
        Ok(Node::new(Y::Float(v as f64)))
    }

    fn visit_u128<E>(self, v: u128) -> Result<Node, E> {
        Ok(Node::new(Y::Float(v as f64)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node, E> {
        Ok(Node::new(Y::Float(v)))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Node, E> {
        let Some(offset) = self.ctx.offset_of(v) else {
            return Ok(Node::new(Y::Str(v.to_string())));
        };
        self.ctx.last_offset.set(offset);
        let plain = self.ctx.is_plain_untagged(offset, v.len());
        let y = if plain {
            resolve_plain(v)
        } else {
            Y::Str(v.to_string())
        };
        Ok(Node {
            y,
            offset: Some(offset),
            merge_key: plain && v == "<<",
        })
    }

    // Owned strings are quoted with escapes, multi-line or block scalars: plain text.
    fn visit_str<E>(self, v: &str) -> Result<Node, E> {
        Ok(Node::new(Y::Str(v.to_string())))
    }

    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::new(Y::Null))
    }

    fn visit_none<E>(self) -> Result<Node, E> {
        Ok(Node::new(Y::Null))
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
        NodeSeed { ctx: self.ctx }.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        let mut offset = None;
        while let Some(n) = seq.next_element_seed(NodeSeed { ctx: self.ctx })? {
            offset = offset.or(n.offset);
            items.push(n.y);
        }
        Ok(Node {
            y: Y::Seq(items),
            offset,
            merge_key: false,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut entries = Vec::new();
        let mut offset = None;
        while let Some(k) = map.next_key_seed(NodeSeed { ctx: self.ctx })? {
            if matches!(k.y, Y::Seq(_) | Y::Map(_)) {
                let msg = format!("yaml: invalid map key: {}", go_sharp_v(&k.y));
                self.ctx.error.borrow_mut().get_or_insert(msg.clone());
                return Err(de::Error::custom(msg));
            }
            let v = map.next_value_seed(NodeSeed { ctx: self.ctx })?;
            offset = offset.or(k.offset);
            let at = v
                .offset
                .or(k.offset)
                .unwrap_or_else(|| self.ctx.last_offset.get());
            entries.push(YEntry {
                key: k.y,
                value: v.y,
                merge: k.merge_key,
                line: self.ctx.line_of(at),
            });
        }
        Ok(Node {
            y: Y::Map(entries),
            offset,
            merge_key: false,
        })
    }

    // Local tags (`!foo`) arrive as enums; goyaml ignores them on collections.
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Node, A::Error> {
        let (_tag, variant): (String, _) = data.variant()?;
        variant.newtype_variant_seed(NodeSeed { ctx: self.ctx })
    }
}

/// Go's `%#v` of a goyaml value, for goyaml's own error texts.
fn go_sharp_v(y: &Y) -> String {
    match y {
        Y::Null => "interface {}(nil)".to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Int(i) => i.to_string(),
        Y::Uint(u) => format!("0x{u:x}"),
        Y::Float(f) => go_float_v(*f),
        Y::Str(s) => crate::field::go_quote(s),
        Y::Seq(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Y::Map(entries) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|e| format!("{}:{}", go_sharp_v(&e.key), go_sharp_v(&e.value)))
                .collect();
            format!("map[interface {{}}]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// `%#v` of a map key in goyaml's duplicate-key message (nil prints `<nil>`).
fn go_key_sharp_v(y: &Y) -> String {
    match y {
        Y::Null => "<nil>".to_string(),
        other => go_sharp_v(other),
    }
}

/// Apply goyaml's mapping semantics (merge keys; a repeated key overwrites) and return
/// the resulting ordered entries.
fn resolve_mapping(entries: &[YEntry]) -> Result<Vec<(&Y, &Y)>, String> {
    const WANT_MAP: &str = "yaml: map merge requires map or sequence of maps as the value";
    let mut out: Vec<(&Y, &Y)> = Vec::new();
    // Keys are compared by type and value, as in goyaml's map[interface{}]interface{}.
    let mut index: HashMap<String, usize> = HashMap::new();
    fn put<'a>(
        out: &mut Vec<(&'a Y, &'a Y)>,
        index: &mut HashMap<String, usize>,
        k: &'a Y,
        v: &'a Y,
    ) {
        match index.entry(format!("{k:?}")) {
            std::collections::hash_map::Entry::Occupied(e) => out[*e.get()].1 = v,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push((k, v));
            }
        }
    }
    for e in entries {
        if !e.merge {
            put(&mut out, &mut index, &e.key, &e.value);
            continue;
        }
        let sources: Vec<&Vec<YEntry>> = match &e.value {
            Y::Map(m) => vec![m],
            // Earlier maps in the list take precedence, so they are applied last.
            Y::Seq(items) => items
                .iter()
                .rev()
                .map(|i| match i {
                    Y::Map(m) => Ok(m),
                    _ => Err(WANT_MAP.to_string()),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(WANT_MAP.to_string()),
        };
        for m in sources {
            for (k, v) in resolve_mapping(m)? {
                put(&mut out, &mut index, k, v);
            }
        }
    }
    Ok(out)
}

/// goyaml's strict-mode errors in decode order: a value's own errors come before the
/// report for its key; the first occurrence of a key is kept.
fn strict_value_errors(y: &Y, errs: &mut Vec<String>) {
    match y {
        Y::Seq(items) => items.iter().for_each(|i| strict_value_errors(i, errs)),
        Y::Map(entries) => strict_map_errors(entries, &mut HashSet::new(), errs),
        _ => {}
    }
}

fn strict_map_errors(entries: &[YEntry], seen: &mut HashSet<String>, errs: &mut Vec<String>) {
    for e in entries {
        if e.merge {
            match &e.value {
                Y::Map(m) => strict_map_errors(m, seen, errs),
                Y::Seq(items) => {
                    for i in items.iter().rev() {
                        if let Y::Map(m) = i {
                            strict_map_errors(m, seen, errs);
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        strict_value_errors(&e.value, errs);
        if !seen.insert(format!("{:?}", e.key)) {
            errs.push(format!(
                "line {}: key {} already set in map",
                e.line,
                go_key_sharp_v(&e.key)
            ));
        }
    }
}

/// sigs.k8s.io/yaml's map-key conversion to a JSON object key.
fn json_key(k: &Y, v: &Y) -> Result<String, String> {
    Ok(match k {
        Y::Str(s) => s.clone(),
        Y::Int(i) => i.to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Float(f) => match go_format_g32(*f).as_str() {
            "+Inf" => ".inf".to_string(),
            "-Inf" => "-.inf".to_string(),
            "NaN" => ".nan".to_string(),
            s => s.to_string(),
        },
        Y::Null => {
            return Err(format!(
                "unsupported map key of type: %!s(<nil>), key: <nil>, value: {}",
                go_sharp_v(v)
            ))
        }
        other => {
            let t = if matches!(other, Y::Uint(_)) {
                "uint64"
            } else {
                "interface {}"
            };
            return Err(format!(
                "unsupported map key of type: {t}, key: {}, value: {}",
                go_sharp_v(other),
                go_sharp_v(v)
            ));
        }
    })
}

/// A goyaml value after `json.Marshal` and kube's JSON decode (integral floats → int64).
fn y_to_json(y: &Y) -> Result<Value, String> {
    Ok(match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(*b),
        Y::Int(i) => Value::from(*i),
        Y::Uint(u) => Number::from_f64(*u as f64).map_or(Value::Null, Value::Number),
        Y::Float(f) => {
            if !f.is_finite() {
                return Err(format!("json: unsupported value: {}", go_float_v(*f)));
            }
            // Go writes integral floats below 1e21 without a point; kube reads them back as
            // int64 when they fit.
            if f.fract() == 0.0 && (i64::MIN as f64..-(i64::MIN as f64)).contains(f) {
                Value::from(*f as i64)
            } else {
                Number::from_f64(*f).map_or(Value::Null, Value::Number)
            }
        }
        Y::Str(s) => Value::String(s.clone()),
        Y::Seq(items) => Value::Array(items.iter().map(y_to_json).collect::<Result<_, _>>()?),
        Y::Map(entries) => {
            let mut m = Map::new();
            for (k, v) in resolve_mapping(entries)? {
                m.insert(json_key(k, v)?, y_to_json(v)?);
            }
            Value::Object(m)
        }
    })
}

/// goyaml's error text for a parse failure reported by serde_norway/libyaml.
fn goyaml_parse_error(err: &serde_norway::Error, input: &[u8]) -> String {
    let debug = format!("{err:?}");
    let field = |name: &str| -> Option<String> {
        let start = debug.find(&format!("{name}: "))? + name.len() + 2;
        let rest = &debug[start..];
        if let Some(q) = rest.strip_prefix('"') {
            let end = q.find('"')?;
            Some(q[..end].to_string())
        } else {
            let end = rest.find([',', ' ', '}']).unwrap_or(rest.len());
            Some(rest[..end].to_string())
        }
    };
    let mark_line = |name: &str| -> u64 {
        debug
            .find(&format!("{name}: Mark {{ line: "))
            .and_then(|i| {
                let rest = &debug[i + name.len() + 15..];
                let end = rest.find(|c: char| !c.is_ascii_digit())?;
                rest[..end].parse::<u64>().ok()
            })
            .map_or(0, |l| l.saturating_sub(1))
    };
    let Some(problem) = field("problem") else {
        let text = err.to_string();
        if text.starts_with("unknown anchor") {
            let name = err
                .location()
                .and_then(|l| input.get(l.index()..))
                .map(|rest| {
                    rest.iter()
                        .skip(1)
                        .take_while(|b| !b" \t\r\n,]}".contains(b))
                        .map(|&b| b as char)
                        .collect::<String>()
                })
                .unwrap_or_default();
            return format!("yaml: unknown anchor '{name}' referenced");
        }
        if text.starts_with("repetition limit exceeded") {
            return "yaml: document contains excessive aliasing".to_string();
        }
        if text.starts_with("recursion limit exceeded") {
            let line = err.location().map_or(0, |l| l.line().saturating_sub(1));
            return yaml_depth_error(line);
        }
        return format!("yaml: {}", text.split(" at line ").next().unwrap_or(&text));
    };
    let kind = field("kind").unwrap_or_default();
    // goyaml: a scanner error counts lines from 1, a parser error from 0, and without a
    // problem line it falls back to the (0-based) context line.
    let problem_line = mark_line("problem_mark");
    let line = if problem_line != 0 {
        problem_line + u64::from(kind == "SCANNER")
    } else {
        mark_line("context_mark")
    };
    // libyaml 0.2.5 has a tab-specific text where goyaml keeps the generic one.
    let problem = match problem.as_str() {
        "found a tab character that violates indentation" => {
            "found character that cannot start any token".to_string()
        }
        _ => problem,
    };
    if line != 0 && kind != "READER" {
        format!("yaml: line {line}: {problem}")
    } else {
        format!("yaml: {problem}")
    }
}

/// How deep YAML collections may nest: serde_norway's recursion limit (goyaml's is
/// 10,000). Flow collections deeper than this are refused before libyaml runs: its
/// scanner checks every open flow level on every token, so depth × size is its cost.
pub const MAX_YAML_DEPTH: usize = 128;

/// goyaml's error for a document nested too deep (its wording, our limit); `line` is
/// 0-based, and goyaml leaves out the first line's number.
fn yaml_depth_error(line: usize) -> String {
    if line == 0 {
        format!("yaml: exceeded max depth of {MAX_YAML_DEPTH}")
    } else {
        format!(
            "yaml: line {}: exceeded max depth of {MAX_YAML_DEPTH}",
            line + 1
        )
    }
}

/// The 0-based line where flow collections (`[`, `{`) first nest deeper than
/// [`MAX_YAML_DEPTH`], found in one linear pass. Brackets inside quoted scalars,
/// comments and block scalars do not count, nor (outside flow collections) brackets
/// within a plain scalar, which only start a collection where a node starts.
fn yaml_flow_too_deep(b: &[u8]) -> Option<usize> {
    let (mut i, mut line, mut flow) = (0usize, 0usize, 0usize);
    // Where a node may start: line start, after `- `/`? `/`: `, in flow after `[{,:?`.
    let mut node_start = true;
    let mut line_indent = 0usize;
    let mut at_line_start = true;
    while i < b.len() {
        let c = b[i];
        if at_line_start {
            let start = i;
            while i < b.len() && b[i] == b' ' {
                i += 1;
            }
            line_indent = i - start;
            at_line_start = false;
            node_start = true;
            if line_indent == 0
                && (b[i..].starts_with(b"---") || b[i..].starts_with(b"..."))
                && b.get(i + 3).is_none_or(|c| c.is_ascii_whitespace())
            {
                flow = 0;
            }
            continue;
        }
        match c {
            b'\n' => {
                line += 1;
                i += 1;
                at_line_start = flow == 0;
            }
            b' ' | b'\t' | b'\r' => i += 1,
            b'#' if i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'\r') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' if node_start => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'\\' if c == b'"' => i += 1,
                        b'\'' if c == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 1,
                        q if q == c => break,
                        b'\n' => line += 1,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                node_start = false;
            }
            b'|' | b'>' if flow == 0 && node_start => {
                // A block scalar: the rest of this line, then every blank line or line
                // indented deeper than the one it starts on.
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                loop {
                    let next = i + 1;
                    let mut j = next;
                    while j < b.len() && b[j] == b' ' {
                        j += 1;
                    }
                    let blank = j >= b.len() || matches!(b[j], b'\n' | b'\r');
                    if next >= b.len() || !(blank || j - next > line_indent) {
                        break;
                    }
                    i = j;
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                    line += 1;
                    if i >= b.len() {
                        break;
                    }
                }
            }
            b'[' | b'{' if flow > 0 || node_start => {
                flow += 1;
                if flow > MAX_YAML_DEPTH {
                    return Some(line);
                }
                i += 1;
                node_start = true;
            }
            b']' | b'}' if flow > 0 => {
                flow -= 1;
                i += 1;
                node_start = false;
            }
            b',' if flow > 0 => {
                i += 1;
                node_start = true;
            }
            b'-' | b'?' | b':'
                if (flow > 0 && c != b'-')
                    || b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) =>
            {
                i += 1;
                node_start = true;
            }
            // Node properties (`&anchor`, `!tag`) leave the node still to start.
            b'&' | b'!' if node_start => {
                while i < b.len()
                    && !b[i].is_ascii_whitespace()
                    && !(flow > 0 && b",[]{}".contains(&b[i]))
                {
                    i += 1;
                }
            }
            _ => {
                i += 1;
                node_start = false;
            }
        }
    }
    None
}

/// Decode the first YAML document to goyaml values.
fn yaml_first_document(bytes: &[u8]) -> Result<Option<Y>, DecodeError> {
    if let Some(line) = yaml_flow_too_deep(bytes) {
        return Err(DecodeError::Yaml(yaml_depth_error(line)));
    }
    let mut docs = serde_norway::Deserializer::from_slice(bytes);
    match docs.next() {
        Some(doc) => yaml_document(doc, bytes).map(Some),
        None => Ok(None),
    }
}

fn yaml_document(doc: serde_norway::Deserializer<'_>, bytes: &[u8]) -> Result<Y, DecodeError> {
    let ctx = YamlCtx {
        input: bytes,
        newlines: bytes
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| i)
            .collect(),
        last_offset: Cell::new(0),
        error: RefCell::new(None),
    };
    let result = NodeSeed { ctx: &ctx }.deserialize(doc);
    if let Some(e) = ctx.error.borrow_mut().take() {
        return Err(DecodeError::Yaml(e));
    }
    result
        .map(|n| n.y)
        .map_err(|e| DecodeError::Yaml(goyaml_parse_error(&e, bytes)))
}

/// Decode a YAML body as kube's `yaml.YAMLToJSON` followed by its JSON decode: only the
/// first document counts, an empty body is `null`.
pub fn decode_yaml(bytes: &[u8]) -> Result<Value, DecodeError> {
    match yaml_first_document(bytes)? {
        None => Ok(Value::Null),
        Some(y) => y_to_json(&y).map_err(DecodeError::Yaml),
    }
}

/// The error goyaml's strict mode (`yaml.YAMLToJSONStrict`) reports for repeated map
/// keys, e.g. `yaml: unmarshal errors:\n  line 3: key "a" already set in map`; `None`
/// when there are none (or the YAML does not parse: the normal decode reports that).
pub fn yaml_duplicate_key_error(bytes: &[u8]) -> Option<String> {
    let y = yaml_first_document(bytes).ok()??;
    let mut errs = Vec::new();
    strict_value_errors(&y, &mut errs);
    (!errs.is_empty()).then(|| format!("yaml: unmarshal errors:\n  {}", errs.join("\n  ")))
}

/// Decode a manifest file: every YAML document (or every concatenated JSON value),
/// skipping empty documents and flattening `kind: List` items, in order.
pub fn decode_manifests(bytes: &[u8], is_yaml: bool) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    if is_yaml {
        if let Some(line) = yaml_flow_too_deep(bytes) {
            return Err(yaml_depth_error(line));
        }
        for (i, doc) in serde_norway::Deserializer::from_slice(bytes).enumerate() {
            let y = yaml_document(doc, bytes).map_err(|e| format!("document {}: {e}", i + 1))?;
            docs.push(y_to_json(&y).map_err(|e| format!("document {}: {e}", i + 1))?);
        }
    } else {
        let mut rest = bytes;
        loop {
            let start = rest.iter().position(|b| !is_space(*b));
            let Some(start) = start else { break };
            rest = &rest[start..];
            let mut stream =
                serde_json::Deserializer::from_slice(rest).into_iter::<de::IgnoredAny>();
            let end = match stream.next() {
                Some(Ok(_)) => stream.byte_offset(),
                _ => rest.len(),
            };
            docs.push(decode_json(&rest[..end]).map_err(|e| e.message())?);
            rest = &rest[end..];
        }
    }
    let mut out = Vec::new();
    flatten_lists(docs, &mut out);
    Ok(out)
}

fn flatten_lists(docs: Vec<Value>, out: &mut Vec<Value>) {
    for d in docs {
        match d {
            Value::Null => {}
            Value::Object(ref o)
                if o.get("kind").and_then(Value::as_str) == Some("List")
                    && o.get("items").is_some_and(Value::is_array) =>
            {
                if let Some(Value::Array(items)) = o.get("items") {
                    flatten_lists(items.clone(), out);
                }
            }
            other => out.push(other),
        }
    }
}

// ---------------------------------------------------------------------------
// List continue tokens (kube's storage.EncodeContinue / DecodeContinue).

/// kube's 400 text for a continue token it cannot decode: `invalid continue token: <err>`.
pub fn invalid_continue_token_message(err: &str) -> String {
    format!("invalid continue token: {err}")
}

/// kube's 400 text when `continue` comes with a `resourceVersion`.
pub const CONTINUE_WITH_RESOURCE_VERSION_MESSAGE: &str =
    "specifying resource version is not allowed when using continue";

/// kube's 410 `Expired` text when the continue token's revision was compacted.
pub const CONTINUE_EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

const CONTINUE_ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// kube's `EncodeContinue`: base64url (no padding) of `{"v":"meta.k8s.io/v1","rv":N,"start":K}`
/// where K is `key` without `key_prefix`.
pub fn encode_continue(
    key: &str,
    key_prefix: &str,
    resource_version: i64,
) -> Result<String, String> {
    let next = match key.strip_prefix(key_prefix) {
        Some(next) if next.len() != key.len() => next,
        _ => {
            return Err(
                "unable to encode next field: the key and key prefix do not match".to_string(),
            )
        }
    };
    let json = format!(
        "{{\"v\":\"meta.k8s.io/v1\",\"rv\":{resource_version},\"start\":{}}}",
        go_json_string(next)
    );
    Ok(CONTINUE_ENGINE.encode(json))
}

/// Go's `path.Clean`.
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

/// kube's `DecodeContinue`: the storage key to resume from and the token's
/// resourceVersion; the error is kube's (`continue key is not valid: ...`).
pub fn decode_continue(token: &str, key_prefix: &str) -> Result<(String, i64), String> {
    const INVALID: &str = "continue key is not valid";
    let data = CONTINUE_ENGINE.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            _ => token.len().saturating_sub(1),
        };
        format!("{INVALID}: illegal base64 data at input byte {at}")
    })?;
    let v = decode_json(&data).map_err(|e| format!("{INVALID}: {e}"))?;
    let Value::Object(obj) = v else {
        let kind = match v {
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            _ => "null",
        };
        if kind == "null" {
            return Err(format!(
                "{INVALID}: server does not recognize this encoded version "
            ));
        }
        return Err(format!(
            "{INVALID}: json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        ));
    };
    let get = |name: &str| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    let type_err = |v: &Value, field: &str, ty: &str| {
        let what = match v {
            Value::Number(n) => format!("number {n}"),
            Value::String(_) => "string".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Array(_) => "array".to_string(),
            _ => "object".to_string(),
        };
        let what = if ty == "string" && what.starts_with("number") {
            "number".to_string()
        } else {
            what
        };
        format!("{INVALID}: json: cannot unmarshal {what} into Go struct field continueToken.{field} of type {ty}")
    };
    let api_version = match get("v") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(type_err(other, "v", "string")),
    };
    let rv = match get("rv") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| type_err(&Value::Number(n.clone()), "rv", "int64"))?,
        Some(other) => return Err(type_err(other, "rv", "int64")),
    };
    let start = match get("start") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(type_err(other, "start", "string")),
    };
    if api_version != "meta.k8s.io/v1" {
        return Err(format!(
            "{INVALID}: server does not recognize this encoded version {api_version}"
        ));
    }
    if rv == 0 {
        return Err(format!(
            "{INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ));
    }
    if start.is_empty() {
        return Err(format!(
            "{INVALID}: encoded start key empty (version meta.k8s.io/v1)"
        ));
    }
    let key = if start.starts_with('/') {
        start.clone()
    } else {
        format!("/{start}")
    };
    if path_clean(&key) != key {
        return Err(format!("{INVALID}: {start}"));
    }
    Ok((format!("{key_prefix}{}", &key[1..]), rv))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn validation_golden_malformed_json() {
        // validation.golden.json `malformed-json`: the body is cut short.
        let body = br#"{"apiVersion": "validation.example.com/v1", "kind": "Val", "metadata": {"name": "v6""#;
        let err = decode_body(body, "application/json").unwrap_err();
        assert_eq!(
            unrecognized_object_message("Val", &err, body),
            "the object provided is unrecognized (must be of type Val): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\": \"validation.exa ...)"
        );
    }

    #[test]
    fn pruning_golden_strict_message_shape() {
        // pruning-kep.golden.json `strict-field-validation-rejects-unknown`.
        let errs = vec![
            unknown_field_message("ex2.json"),
            unknown_field_message("topLevelUnknown"),
        ];
        assert_eq!(
            cannot_be_handled_message("Prune", "v1", "Prune", &strict_decoding_error(&errs)),
            "Prune in version \"v1\" cannot be handled as a Prune: strict decoding error: unknown field \"ex2.json\", unknown field \"topLevelUnknown\""
        );
    }

    #[test]
    fn go_json_syntax_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"", "unexpected end of JSON input"),
            (b"   ", "unexpected end of JSON input"),
            (b"{", "unexpected end of JSON input"),
            (b"x", "invalid character 'x' looking for beginning of value"),
            (
                b"{x",
                "invalid character 'x' looking for beginning of object key string",
            ),
            (b"{\"a\" 1}", "invalid character '1' after object key"),
            (
                b"{\"a\":1 \"b\"}",
                "invalid character '\"' after object key:value pair",
            ),
            (b"[1 2]", "invalid character '2' after array element"),
            (b"{} x", "invalid character 'x' after top-level value"),
            (
                b"tru",
                "invalid character ' ' in literal true (expecting 'e')",
            ),
            (
                b"trUe",
                "invalid character 'U' in literal true (expecting 'u')",
            ),
            (
                b"nul",
                "invalid character ' ' in literal null (expecting 'l')",
            ),
            (
                b"1.",
                "invalid character ' ' after decimal point in numeric literal",
            ),
            (b"-", "invalid character ' ' in numeric literal"),
            (
                b"1e",
                "invalid character ' ' in exponent of numeric literal",
            ),
            (b"01", "invalid character '1' after top-level value"),
            (b"\"a\x01\"", "invalid character '\\x01' in string literal"),
            (b"\"\\x\"", "invalid character 'x' in string escape code"),
            (
                b"\"\\u12g4\"",
                "invalid character 'g' in \\u hexadecimal character escape",
            ),
            (
                b"{'a':1}",
                "invalid character '\\'' looking for beginning of object key string",
            ),
            (
                "é".as_bytes(),
                "invalid character 'Ã' looking for beginning of value",
            ),
            (
                b"[1,]",
                "invalid character ']' looking for beginning of value",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                json_syntax_error(input).as_deref(),
                Some(*want),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        assert_eq!(
            json_syntax_error(b" {\"a\": [1, -2.5e3, true, null, \"\\u00e9\"]} "),
            None
        );
        assert_eq!(json_syntax_error(b"123"), None);
    }

    #[test]
    fn json_numbers_follow_kube() {
        let v =
            decode_json(br#"{"i": 1, "f": 1.0, "e": 1e3, "big": 12345678901234567890, "neg": -5}"#)
                .unwrap();
        assert!(v["i"].is_i64());
        assert!(v["f"].is_f64());
        assert!(v["e"].is_f64());
        assert!(v["big"].is_f64());
        assert_eq!(v["neg"], json!(-5));
        assert_eq!(
            decode_json(b"{\"x\": 1e400}").unwrap_err().message(),
            "json: cannot unmarshal number 1e400 into Go value of type float64"
        );
    }

    #[test]
    fn json_nesting_is_bounded_at_gos_10000() {
        // Requests run on threads with stacks for this depth (server::SERVER_THREAD_STACK).
        let (deep, ok) = std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(|| {
                let deep = format!("{}{}", "[".repeat(10_001), "]".repeat(10_001));
                let ok = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
                let stored = decode_json(ok.as_bytes()).map(|v| serde_json::to_vec(&v).unwrap());
                let back = stored
                    .as_ref()
                    .map(|b| decode_stored_json::<Value>(b).is_ok())
                    .map_err(|e| e.message());
                (decode_json(deep.as_bytes()).map(|_| ()), back)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            deep.unwrap_err().message(),
            "invalid character '[' exceeded max depth"
        );
        assert_eq!(ok, Ok(true));
    }

    #[test]
    fn json_strings_decode_like_go() {
        let v = decode_json(b"[\"\\ud83d\\ude00\", \"\\ud800x\", \"a\xffb\"]").unwrap();
        assert_eq!(v, json!(["😀", "\u{fffd}x", "a\u{fffd}b"]));
    }

    #[test]
    fn duplicate_fields_paths() {
        let body = br#"{"spec": {"a": 1, "a": 2, "items": [{"n": 1, "n": 2}]}, "kind": "X", "kind": "Y", "spec2": {"a":1,"a":2,"a":3}}"#;
        assert_eq!(
            find_duplicate_fields(body),
            vec!["spec.a", "spec.items[0].n", "kind", "spec2.a"]
        );
        assert_eq!(
            duplicate_field_message("spec.a"),
            "duplicate field \"spec.a\""
        );
        // The last value wins, as in Go.
        assert_eq!(decode_json(body).unwrap()["kind"], "Y");
    }

    #[test]
    fn interpret_errors() {
        assert_eq!(
            interpret_type_meta(br#"{"apiVersion": 5}"#).unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string"
        );
        assert_eq!(
            interpret_type_meta(b"[]").unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
        );
        assert_eq!(
            interpret_type_meta(br#"{"KIND": "Val", "apiVersion": "a/v1"}"#).unwrap(),
            ("a/v1".to_string(), "Val".to_string())
        );
    }

    #[test]
    fn interpret_prefix_matches_unrecognized_reason() {
        let body = br#"{"a": "#;
        assert_eq!(
            interpret_type_meta(body).unwrap_err(),
            "couldn't get version/kind; json parse error: unexpected end of JSON input"
        );
    }

    #[test]
    fn not_an_object_messages() {
        assert_eq!(
            unrecognized_object_message("Val", &DecodeError::NotAnObject, b"[1]"),
            "the object provided is unrecognized (must be of type Val): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)"
        );
        assert_eq!(
            unrecognized_object_message("Val", &DecodeError::NotAnObject, b"null"),
            "the object provided is unrecognized (must be of type Val): Object 'Kind' is missing in 'null' (6e756c6c)"
        );
        let yaml = b"a: [1\n";
        let err = decode_body(yaml, "application/yaml").unwrap_err();
        assert_eq!(
            unrecognized_object_message("Val", &err, yaml),
            "the object provided is unrecognized (must be of type Val): yaml: line 1: did not find expected ',' or ']' (613a205b310a)"
        );
    }

    #[test]
    fn go_json_errors_for_patch_bodies() {
        assert_eq!(
            go_json_error(b"[1]", "map[string]interface {}").as_deref(),
            Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
        );
        assert_eq!(
            go_json_error(b"{", "[]jsonpatch.Operation").as_deref(),
            Some("unexpected end of JSON input")
        );
        assert_eq!(
            go_json_error(b"{}", "[]jsonpatch.Operation").as_deref(),
            Some("json: cannot unmarshal object into Go value of type []jsonpatch.Operation")
        );
        assert_eq!(
            go_json_error(b"[1]", "[]jsonpatch.Operation").as_deref(),
            Some("json: cannot unmarshal number into Go value of type jsonpatch.Operation")
        );
        assert_eq!(
            go_json_error(br#"[{"op": "add"}]"#, "[]jsonpatch.Operation"),
            None
        );
        assert_eq!(
            go_json_error(br#"{"a": 1}"#, "map[string]interface {}"),
            None
        );
    }

    #[test]
    fn summaries() {
        assert_eq!(summarize_body(b""), "<empty>");
        assert_eq!(summarize_body(b"{}"), "{}");
        assert_eq!(summarize_body(b"a: b"), "613a2062");
        assert_eq!(
            summarize_body(&[b'x'; 40]),
            format!("{} ...", "78".repeat(30))
        );
    }

    #[test]
    fn yaml_1_1_scalars_like_goyaml() {
        let v = decode_yaml(
            b"a: yes\nb: no\nc: on\nd: off\ne: y\nf: 010\ng: 0x1F\nh: 1e3\ni: 1_000\nj: 1.0\nk: 0.5\nl: '010'\nm: \"yes\"\nnn: ~\no: 2001-12-14\np: 0o17\nq: 12345678901234567890\nr: 0999\ns: !!str yes\nt: +5\nu: -0x10\nv: 0b101\nw: Yes please\n",
        )
        .unwrap();
        assert_eq!(
            v,
            json!({
                "a": true, "b": false, "c": true, "d": false, "e": true,
                "f": 8, "g": 31, "h": 1000, "i": 1000, "j": 1, "k": 0.5,
                "l": "010", "m": "yes", "nn": null, "o": "2001-12-14", "p": 15,
                "q": 12345678901234567890.0_f64, "r": 999, "s": "yes", "t": 5,
                "u": -16, "v": 5, "w": "Yes please"
            })
        );
        assert!(v["j"].is_i64());
        assert!(v["q"].is_f64());
    }

    #[test]
    fn yaml_map_keys_become_strings() {
        let v = decode_yaml(b"1: a\ntrue: b\n1.5: c\nyes: d\n010: e\n").unwrap();
        assert_eq!(v, json!({"1": "a", "true": "d", "1.5": "c", "8": "e"}));
        // Like kube (ghodss/yaml#77, helm#13153): plain `y`, `n`, `on` keys are booleans.
        assert_eq!(
            decode_yaml(b"1e300: a\n0.1: b\n1e10: c\n").unwrap(),
            json!({".inf": "a", "0.1": "b", "1e+10": "c"})
        );
        let v = decode_yaml(b"y: 1\nn: 2\n\"on\": 3\n").unwrap();
        assert_eq!(v, json!({"true": 1, "false": 2, "on": 3}));
        assert_eq!(
            decode_yaml(b"~: a\n").unwrap_err().message(),
            "unsupported map key of type: %!s(<nil>), key: <nil>, value: \"a\""
        );
        assert_eq!(
            decode_yaml(b"? [1, 2]\n: a\n").unwrap_err().message(),
            "yaml: invalid map key: []interface {}{1, 2}"
        );
    }

    #[test]
    fn yaml_nan_and_inf_fail_like_json_marshal() {
        assert_eq!(
            decode_yaml(b"a: .nan\n").unwrap_err().message(),
            "json: unsupported value: NaN"
        );
        assert_eq!(
            decode_yaml(b"a: -.inf\n").unwrap_err().message(),
            "json: unsupported value: -Inf"
        );
    }

    #[test]
    fn yaml_anchors_and_merge_keys() {
        let v = decode_yaml(
            b"base: &b {x: 1, z: 2}\nuse:\n  <<: *b\n  z: 3\nlist: [*b]\nquoted:\n  '<<': lit\n",
        )
        .unwrap();
        assert_eq!(v["use"], json!({"x": 1, "z": 3}));
        assert_eq!(v["list"], json!([{"x": 1, "z": 2}]));
        assert_eq!(v["quoted"], json!({"<<": "lit"}));
        assert_eq!(
            decode_yaml(b"a:\n  <<: 5\n").unwrap_err().message(),
            "yaml: map merge requires map or sequence of maps as the value"
        );
    }

    #[test]
    fn deep_flow_yaml_is_refused_at_once_with_goyaml_wording() {
        let started = std::time::Instant::now();
        for body in [
            "[".repeat(800_000),
            "{a: ".repeat(200_000),
            format!("kind: ConfigMap\ndata: {}", "[".repeat(40_000)),
        ] {
            let err = decode_yaml(body.as_bytes()).unwrap_err().message();
            assert!(err.ends_with("exceeded max depth of 128"), "{err}");
        }
        assert_eq!(
            decode_yaml(format!("a: 1\nb: {}", "[".repeat(200)).as_bytes())
                .unwrap_err()
                .message(),
            "yaml: line 2: exceeded max depth of 128"
        );
        // Linear: the three bodies above (about 1.7 MB) take milliseconds, not minutes.
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    #[test]
    fn yaml_nesting_within_the_limit_decodes() {
        let n = 120;
        let v = decode_yaml(format!("{}1{}", "[".repeat(n), "]".repeat(n)).as_bytes()).unwrap();
        let mut depth = 0;
        let mut at = &v;
        while let Some(inner) = at.as_array().and_then(|a| a.first()) {
            depth += 1;
            at = inner;
        }
        assert_eq!((depth, at), (n, &json!(1)));
        // Block nesting deeper than the limit gets the same error.
        let block: String = (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        let err = decode_yaml(block.as_bytes()).unwrap_err().message();
        assert!(err.ends_with("exceeded max depth of 128"), "{err}");
    }

    #[test]
    fn brackets_in_scalars_comments_and_block_scalars_are_not_nesting() {
        let open = "[".repeat(300);
        let doc = format!(
            "a: \"{open}\"\nb: '{open}'\nc: x{open}\n# {open}\nd: |\n  {open}\n  {open}\ne: >-\n    {open}\nf: [\"{open}\", '{open}']\n"
        );
        let v = decode_yaml(doc.as_bytes()).unwrap();
        assert_eq!(v["a"], json!(open));
        assert_eq!(v["c"], json!(format!("x{open}")));
        assert_eq!(v["d"], json!(format!("{open}\n{open}\n")));
        assert_eq!(v["f"][1], json!(open));
    }

    #[test]
    fn yaml_first_document_only_and_empty() {
        assert_eq!(decode_yaml(b"a: 1\n---\nb: 2\n").unwrap(), json!({"a": 1}));
        assert_eq!(decode_yaml(b"").unwrap(), Value::Null);
        assert_eq!(decode_yaml(b"# only a comment\n").unwrap(), Value::Null);
    }

    #[test]
    fn yaml_syntax_errors_like_goyaml() {
        // goyaml reports scanner errors with 1-based lines.
        assert_eq!(
            decode_yaml(b"a: 1\nb: c: d\n").unwrap_err().message(),
            "yaml: line 2: mapping values are not allowed in this context"
        );
        assert_eq!(
            decode_yaml(b"a: b: c\n").unwrap_err().message(),
            "yaml: mapping values are not allowed in this context"
        );
        assert_eq!(
            decode_yaml(b"a: 1\n\tb: 2\n").unwrap_err().message(),
            "yaml: line 2: found character that cannot start any token"
        );
    }

    #[test]
    fn yaml_strict_duplicate_keys() {
        assert_eq!(
            yaml_duplicate_key_error(b"a: 1\nb:\n  c: 1\n  c: 2\na: 3\n").as_deref(),
            Some("yaml: unmarshal errors:\n  line 4: key \"c\" already set in map\n  line 5: key \"a\" already set in map")
        );
        assert_eq!(yaml_duplicate_key_error(b"a: 1\nb: 2\n"), None);
        // Non-strict decoding keeps the last value.
        assert_eq!(decode_yaml(b"a: 1\na: 2\n").unwrap(), json!({"a": 2}));
        // JSON in a YAML body is YAML too.
        assert!(yaml_duplicate_key_error(br#"{"a": 1, "a": 2}"#).is_some());
    }

    #[test]
    fn decode_body_by_content_type() {
        assert_eq!(
            decode_body(b"{\"a\":1}", "application/json; charset=utf-8").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            decode_body(b"a: 1\n", "application/apply-patch+yaml").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            decode_body(b"{", "application/merge-patch+json").unwrap_err(),
            DecodeError::Json("unexpected end of JSON input".to_string())
        );
        assert!(matches!(
            decode_body(b"", "text/plain"),
            Err(DecodeError::UnsupportedMediaType(_))
        ));
    }

    #[test]
    fn manifests_split_and_flatten() {
        let docs = decode_manifests(
            b"---\napiVersion: v1\nkind: A\n---\n\n---\nkind: List\nitems:\n- kind: B\n- kind: C\n",
            true,
        )
        .unwrap();
        assert_eq!(
            docs,
            vec![
                json!({"apiVersion": "v1", "kind": "A"}),
                json!({"kind": "B"}),
                json!({"kind": "C"})
            ]
        );
        let docs = decode_manifests(b"{\"kind\":\"A\"}\n{\"kind\":\"B\"}", false).unwrap();
        assert_eq!(docs, vec![json!({"kind": "A"}), json!({"kind": "B"})]);
    }

    #[test]
    fn continue_tokens_round_trip_like_kube() {
        let token =
            encode_continue("/registry/widgets/default/w2", "/registry/widgets/", 42).unwrap();
        // kube's token for this state is the base64url of its JSON.
        assert_eq!(
            CONTINUE_ENGINE.decode(&token).unwrap(),
            br#"{"v":"meta.k8s.io/v1","rv":42,"start":"default/w2"}"#.to_vec()
        );
        assert_eq!(
            decode_continue(&token, "/registry/widgets/").unwrap(),
            ("/registry/widgets/default/w2".to_string(), 42)
        );
        let enc = |s: &str| CONTINUE_ENGINE.encode(s);
        assert_eq!(
            decode_continue(&enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#), "/p/").unwrap_err(),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_continue(&enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#), "/p/")
                .unwrap_err(),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_continue(
                &enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}"#),
                "/p/"
            )
            .unwrap_err(),
            "continue key is not valid: ../x"
        );
        assert_eq!(
            decode_continue(&enc(r#"{"v":"x/v2","rv":1,"start":"a"}"#), "/p/").unwrap_err(),
            "continue key is not valid: server does not recognize this encoded version x/v2"
        );
        assert_eq!(
            decode_continue(&enc("{"), "/p/").unwrap_err(),
            "continue key is not valid: unexpected end of JSON input"
        );
        assert_eq!(
            decode_continue("a$b", "/p/").unwrap_err(),
            "continue key is not valid: illegal base64 data at input byte 1"
        );
        assert_eq!(
            invalid_continue_token_message("continue key is not valid: x"),
            "invalid continue token: continue key is not valid: x"
        );
    }

    #[test]
    fn path_clean_matches_go() {
        assert_eq!(path_clean("/a/b/../c"), "/a/c");
        assert_eq!(path_clean("/../x"), "/x");
        assert_eq!(path_clean("/a//b/"), "/a/b");
        assert_eq!(path_clean("/a/./b"), "/a/b");
        assert_eq!(path_clean("/"), "/");
    }
}
