//! JSON as kube decodes it: a port of Go's `encoding/json` scanner for Go's syntax
//! error texts, kube's unstructured number semantics (integers without `.` are int64,
//! the rest float64), duplicate-field paths for strict decoding, and stored JSON read
//! back without serde_json's recursion limit.

use super::DecodeError;
use serde_json::{Map, Number, Value};
use std::fmt::Write as _;

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

pub(super) fn is_space(c: u8) -> bool {
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

/// Builds values from JSON, checking its syntax as it goes (`bad`: something Go's
/// scanner rejects, whose words [`json_syntax_error`] then finds); records duplicate
/// keys with the field paths kube's strict decoder prints.
struct JsonBuilder<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    /// The path of the value being built, as kube prints it (`spec.items[0].name`):
    /// one buffer grown and cut back as the walk enters and leaves values.
    path: String,
    duplicates: Vec<String>,
    /// A valid document that Go cannot hold (a number out of range, too deep).
    error: Option<String>,
    /// Invalid JSON: building stopped.
    bad: bool,
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

    /// Whether building must stop (bad syntax, or an error found).
    fn stopped(&self) -> bool {
        self.bad || self.error.is_some()
    }

    /// Invalid JSON: stop, with `partial` as what was built.
    fn reject<T>(&mut self, partial: T) -> T {
        self.bad = true;
        partial
    }

    fn field_error(&mut self, key: &str) {
        let path = if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
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
        if self.peek() == b'[' {
            return Value::Array(self.array());
        }
        self.i += 1; // '{'
        let mut m = Map::new();
        self.skip_space();
        if self.peek() == b'}' {
            self.i += 1;
            return Value::Object(m);
        }
        loop {
            self.skip_space();
            if self.peek() != b'"' {
                return self.reject(Value::Object(m));
            }
            let key = self.string();
            self.skip_space();
            if self.bad || self.peek() != b':' {
                return self.reject(Value::Object(m));
            }
            self.i += 1;
            if m.contains_key(&key) {
                self.field_error(&key);
            }
            let mark = self.path.len();
            if mark > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            let v = self.value();
            self.path.truncate(mark);
            m.insert(key, v);
            if self.stopped() {
                return Value::Object(m);
            }
            self.skip_space();
            match self.peek() {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Value::Object(m);
                }
                _ => return self.reject(Value::Object(m)),
            }
        }
    }

    fn array(&mut self) -> Vec<Value> {
        self.i += 1; // '['
        let mut a = Vec::new();
        self.skip_space();
        if self.peek() == b']' {
            self.i += 1;
            return a;
        }
        loop {
            let mark = self.path.len();
            let _ = write!(self.path, "[{}]", a.len());
            let v = self.value();
            self.path.truncate(mark);
            a.push(v);
            if self.stopped() {
                return a;
            }
            self.skip_space();
            match self.peek() {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return a;
                }
                _ => return self.reject(a),
            }
        }
    }

    /// Whether the input goes on with `word`, consumed if so.
    fn literal(&mut self, word: &[u8]) -> bool {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            true
        } else {
            false
        }
    }

    fn scalar(&mut self) -> Value {
        match self.peek() {
            b'"' => Value::String(self.string()),
            b't' if self.literal(b"true") => Value::Bool(true),
            b'f' if self.literal(b"false") => Value::Bool(false),
            b'n' if self.literal(b"null") => Value::Null,
            b'-' | b'0'..=b'9' => self.number(),
            _ => self.reject(Value::Null),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.peek().is_ascii_digit() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Value {
        // JSON's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        let start = self.i;
        if self.peek() == b'-' {
            self.i += 1;
        }
        match self.peek() {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return self.reject(Value::Null),
        }
        let mut integer = true;
        if self.peek() == b'.' {
            integer = false;
            self.i += 1;
            if self.digits() == 0 {
                return self.reject(Value::Null);
            }
        }
        if matches!(self.peek(), b'e' | b'E') {
            self.i += 1;
            if matches!(self.peek(), b'+' | b'-') {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.reject(Value::Null);
            }
        }
        // Only ASCII digits, signs, dots and exponents.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or_default();
        if integer {
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
                     // Most strings have no escape and are valid UTF-8: one copy.
        let rest = self.b.get(self.i..).unwrap_or_default();
        if let Some(n) = rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        {
            if rest[n] == b'"' {
                if let Ok(s) = std::str::from_utf8(&rest[..n]) {
                    self.i += n + 1;
                    return s.to_owned();
                }
            }
        }
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
            if self.i >= self.b.len() {
                // Unterminated.
                return self.reject(out);
            }
            let c = self.peek();
            self.i += 1;
            match c {
                b'"' => break,
                0..=0x1f => return self.reject(out),
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
                        b'"' | b'\\' | b'/' => out.push(char::from(e)),
                        b'u' => {
                            let Some(hi) = self.hex4() else {
                                return self.reject(out);
                            };
                            if (0xd800..0xdc00).contains(&hi)
                                && self.b.get(self.i) == Some(&b'\\')
                                && self.b.get(self.i + 1) == Some(&b'u')
                            {
                                let save = self.i;
                                self.i += 2;
                                let lo = self.hex4();
                                if let Some(lo @ 0xdc00..0xe000) = lo {
                                    let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                                    out.push(char::from_u32(c).unwrap_or('\u{fffd}'));
                                    continue;
                                }
                                // Not a low surrogate: read again as an escape of its own.
                                self.i = save;
                            }
                            out.push(char::from_u32(hi).unwrap_or('\u{fffd}'));
                        }
                        _ => return self.reject(out),
                    }
                }
                c => bytes.push(c),
            }
        }
        flush(&mut bytes, &mut out);
        out
    }

    /// Four hex digits of a `\u` escape; `None` when they are not.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + 4)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + char::from(d).to_digit(16)?;
        }
        self.i += 4;
        Some(n)
    }
}

/// Decode JSON the way kube decodes an unstructured body, also returning the paths of
/// duplicate fields (first 100, each once, in document order).
pub fn decode_json_with_duplicates(bytes: &[u8]) -> Result<(Value, Vec<String>), DecodeError> {
    let mut b = JsonBuilder {
        b: bytes,
        i: 0,
        depth: 0,
        path: String::new(),
        duplicates: Vec::new(),
        error: None,
        bad: false,
    };
    let v = b.value();
    if !b.stopped() {
        b.skip_space();
        if b.i < bytes.len() {
            b.bad = true;
        }
    }
    if !b.stopped() {
        return Ok((v, b.duplicates));
    }
    // Go checks the whole document's syntax before decoding any of it: a syntax error
    // anywhere comes first, in the scanner's words.
    if let Some(e) = json_syntax_error(bytes) {
        return Err(DecodeError::Json(e));
    }
    match b.error {
        Some(e) => Err(DecodeError::Json(e)),
        // The builder and the scanner disagree (a bug): refuse rather than guess.
        None => Err(DecodeError::Json(format!("invalid JSON at offset {}", b.i))),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::duplicate_field_message;
    use serde_json::json;

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

    /// Pieces JSON-like inputs are made of: valid and broken tokens alike.
    const PIECES: &[&str] = &[
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        " ",
        "\n",
        "\"",
        "\"a\"",
        "\"k\":",
        "\\",
        "\\u",
        "\\ud83d",
        "\\ude00",
        "00e9",
        "\\n",
        "\\x",
        "0",
        "1",
        "-",
        ".",
        "e",
        "E",
        "+",
        "12.5e-3",
        "true",
        "tru",
        "false",
        "null",
        "nul",
        "x",
        "\u{1}",
        "é",
        "\u{7f}",
        "1e400",
        "9223372036854775808",
    ];

    proptest::proptest! {
        /// The builder accepts exactly what Go's scanner accepts, and fails with the
        /// scanner's words; what it accepts re-encodes to the same value.
        #[test]
        fn the_decoder_accepts_what_gos_scanner_accepts(
            picks in proptest::collection::vec(0..PIECES.len(), 0..24),
            raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..4),
        ) {
            let mut input: Vec<u8> = picks.iter().flat_map(|&i| PIECES[i].bytes()).collect();
            input.extend(raw);
            let syntax = json_syntax_error(&input);
            match (decode_json(&input), syntax) {
                (Ok(v), None) => {
                    let again = decode_json(&serde_json::to_vec(&v).unwrap()).unwrap();
                    proptest::prop_assert_eq!(again, v);
                }
                (Err(e), Some(want)) => proptest::prop_assert_eq!(e.message(), want),
                (Err(e), None) => proptest::prop_assert!(
                    e.message().starts_with("json: cannot unmarshal number"),
                    "{} refused: {}", String::from_utf8_lossy(&input), e.message()
                ),
                (Ok(v), Some(want)) => proptest::prop_assert!(
                    false, "{} accepted as {v}; Go: {want}", String::from_utf8_lossy(&input)
                ),
            }
        }
    }

    #[test]
    fn the_decoder_refuses_what_gos_scanner_refuses() {
        for input in [
            &b"{\"a\":1,}"[..],
            b"[1,]",
            b"{\"a\"}",
            b"{\"a\":}",
            b"{,\"a\":1}",
            b"[,1]",
            b"{\"a\":1 \"b\":2}",
            b"[1 2]",
            b"01",
            b"-",
            b"1.",
            b".5",
            b"1e",
            b"1e+",
            b"+1",
            b"tru",
            b"truex",
            b"nulL",
            b"\"\\u12\"",
            b"\"\\u+123\"",
            b"\"\\x\"",
            b"\"a\x01\"",
            b"\"abc",
            b"\"\\",
            b"[",
            b"{",
            b"",
            b" ",
            b"{\"a\":1}}",
            b"\"\\ud83d\\u12\"",
            b"{'a':1}",
            b"[1]x",
            b"{\"a\":[1,{\"b\":}]}",
        ] {
            let want = json_syntax_error(input)
                .unwrap_or_else(|| panic!("{} is valid", String::from_utf8_lossy(input)));
            let got = decode_json(input).map_err(|e| e.message());
            assert_eq!(got, Err(want), "{}", String::from_utf8_lossy(input));
        }
        // A syntax error after an unrepresentable number is reported first, as Go does.
        assert_eq!(
            decode_json(b"[1e400, x]").unwrap_err().message(),
            "invalid character 'x' looking for beginning of value"
        );
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
        // Plain strings, escapes after plain text, a quote escaped, keys alike.
        let v =
            decode_json(br#"{"pl\u0061in": "text", "q": "a\"b\\", "n\n": "\u00e9\t"}"#).unwrap();
        assert_eq!(v, json!({"plain": "text", "q": "a\"b\\", "n\n": "é\t"}));
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
        // Inside a top-level list, and after the walk left deeper values.
        assert_eq!(
            find_duplicate_fields(br#"[{"a": {"x": [1, {"y": 1}]}}, {"b": {"c": 1, "c": 2}}]"#),
            vec!["[1].b.c"]
        );
        // The last value wins, as in Go.
        assert_eq!(decode_json(body).unwrap()["kind"], "Y");
    }
}
