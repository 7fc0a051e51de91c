//! YAML as `sigs.k8s.io/yaml` decodes it (goyaml v2, YAML 1.1 plain scalars, then a
//! JSON round trip), with goyaml's error texts, strict duplicate-key errors and the
//! flow-depth check that runs in one linear pass before libyaml.

use super::{CodecError, DecodeError};
use crate::goformat::go_float_v;
use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::fmt;

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

/// [`decode_yaml`] and [`yaml_duplicate_key_error`] of the same bytes from one parse
/// (an apply body is both decoded and checked for repeated keys).
pub fn decode_yaml_with_duplicate_keys(
    bytes: &[u8],
) -> Result<(Value, Option<String>), DecodeError> {
    let Some(y) = yaml_first_document(bytes)? else {
        return Ok((Value::Null, None));
    };
    let value = y_to_json(&y).map_err(DecodeError::Yaml)?;
    Ok((value, duplicate_keys(&y)))
}

/// goyaml's strict-mode text for the repeated map keys of a parsed document, if any.
fn duplicate_keys(y: &Y) -> Option<String> {
    let mut errs = Vec::new();
    strict_value_errors(y, &mut errs);
    (!errs.is_empty()).then(|| format!("yaml: unmarshal errors:\n  {}", errs.join("\n  ")))
}

/// The error goyaml's strict mode (`yaml.YAMLToJSONStrict`) reports for repeated map
/// keys, e.g. `yaml: unmarshal errors:\n  line 3: key "a" already set in map`; `None`
/// when there are none (or the YAML does not parse: the normal decode reports that).
pub fn yaml_duplicate_key_error(bytes: &[u8]) -> Option<String> {
    duplicate_keys(&yaml_first_document(bytes).ok()??)
}

/// Every document of a YAML stream as JSON, for manifest files; an error names its
/// document (`document 2: ...`).
pub(super) fn yaml_documents(bytes: &[u8]) -> Result<Vec<Value>, CodecError> {
    if let Some(line) = yaml_flow_too_deep(bytes) {
        return Err(CodecError::Manifest(DecodeError::Yaml(yaml_depth_error(
            line,
        ))));
    }
    let mut docs = Vec::new();
    for (i, doc) in serde_norway::Deserializer::from_slice(bytes).enumerate() {
        let in_document = |error| CodecError::ManifestDocument {
            document: i + 1,
            error,
        };
        let y = yaml_document(doc, bytes).map_err(in_document)?;
        docs.push(
            y_to_json(&y)
                .map_err(DecodeError::Yaml)
                .map_err(in_document)?,
        );
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
}
