//! Go's text forms of values (`%v`, `%e`, `encoding/json`), so messages read
//! byte for byte as kube prints them.

use serde_json::Value;

/// Go's `%v` of a decoded JSON value: `map[k:v ...]` (keys sorted), `[a b]`, `<nil>`,
/// strings bare; `number` prints numbers, as the decoder that made the value typed them
/// (`encoding/json` into `interface{}`: all float64; kube's unstructured: int64 or float64).
pub fn go_v_with(v: &Value, number: &dyn Fn(&serde_json::Number) -> String) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number(n),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter()
                .map(|v| go_v_with(v, number))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Value::Object(m) => {
            let mut parts: Vec<(&String, &Value)> = m.iter().collect();
            parts.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = parts
                .into_iter()
                .map(|(k, v)| format!("{k}:{}", go_v_with(v, number)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// Go's `%v` of a value `encoding/json` decoded into `interface{}` (numbers float64).
pub fn go_v_float64(v: &Value) -> String {
    go_v_with(v, &|n| go_float_v(n.as_f64().unwrap_or(0.0)))
}

/// Go's `%v` of a JSON number as kube's values hold it: integers exactly (int64, or
/// uint64 past int64's range), anything else as a float64 ([`go_float_v`]).
pub fn go_number_v(n: &serde_json::Number) -> String {
    match (n.as_i64(), n.as_u64()) {
        (Some(i), _) => i.to_string(),
        (None, Some(u)) => u.to_string(),
        _ => go_float_v(n.as_f64().unwrap_or(0.0)),
    }
}

/// Go's `%v` for a float64: shortest digits, exponent form when exp < -4 or exp >= 6.
pub fn go_float_v(f: f64) -> String {
    go_float_shortest(f, -4, 6)
}

/// Go's `encoding/json` float64 text: `%f` style, exponent form below 1e-6 or from 1e21.
pub fn go_json_float(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = go_float_exp(f);
        // encoding/json trims the exponent's leading zero: 1e-07 -> 1e-7.
        if let Some(pos) = s.find("e-0") {
            return format!("{}e-{}", &s[..pos], &s[pos + 3..]);
        }
        return s;
    }
    format!("{f}")
}

/// Shortest representation, switching to `%e` when the decimal exponent is outside
/// `[lo, hi)`.
pub fn go_float_shortest(f: f64, lo: i32, hi: i32) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e = format!("{f:e}");
    let exp: i32 = e
        .split_once('e')
        .and_then(|(_, x)| x.parse().ok())
        .unwrap_or(0);
    if exp < lo || exp >= hi {
        go_float_exp(f)
    } else {
        format!("{f}")
    }
}

/// Go's `%e` with shortest digits: `1.5e+06`, `1e-05`.
pub fn go_float_exp(f: f64) -> String {
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: shortest digits, never an exponent.
pub fn go_float_f(f: f64) -> String {
    format!("{f}")
}

/// JSON text of a value as Go's `encoding/json` writes it (sorted keys, Go floats).
pub fn go_json(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(u)) => u.to_string(),
            _ => go_json_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => go_json_string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(go_json).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", go_json_string(k), go_json(&m[k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
    }
}

/// A JSON string as Go escapes it (HTML-safe: `<`, `>`, `&` and U+2028/2029 escaped).
pub fn go_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_go_json_string(&mut out, s);
    out
}

/// [`go_json_string`] written at the end of `out`.
pub fn push_go_json_string(out: &mut String, s: &str) {
    out.push('"');
    // Most strings need no escape (0xE2 starts U+2028 and U+2029, escaped by Go).
    let plain = s
        .bytes()
        .all(|b| b >= 0x20 && !matches!(b, b'"' | b'\\' | b'<' | b'>' | b'&' | 0xE2));
    if plain {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32))
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The JSON kind as Go's `encoding/json` names it in type errors (`array`, `object`,
/// `string`, `number`, `bool`, `null`).
pub fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's `%T` of a JSON value kube decoded into `interface{}` (unstructured JSON): `<nil>`,
/// `bool`, `string`, `[]interface {}`, `map[string]interface {}`, and numbers as kube's
/// decoder types them: `int64` when an integer fits, `float64` otherwise.
pub fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped_as_go_escapes_them() {
        for (s, want) in [
            ("plain name-1.x/y", r#""plain name-1.x/y""#),
            ("", r#""""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("<a>&", r#""\u003ca\u003e\u0026""#),
            ("tab\tnl\ncr\r\u{1}", r#""tab\tnl\ncr\r\u0001""#),
            ("\u{2028}\u{2029}", r#""\u2028\u2029""#),
            ("€ é 😀", "\"€ é 😀\""),
        ] {
            assert_eq!(go_json_string(s), want, "{s:?}");
            let mut out = String::from("x");
            push_go_json_string(&mut out, s);
            assert_eq!(out, format!("x{want}"));
        }
    }
}
