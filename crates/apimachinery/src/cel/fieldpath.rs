//! A rule's `fieldPath` (kube's `ValidFieldPath`): `.foo.bar`, `.foo['key']` walked
//! through the structural schema and rendered as a field path (`foo.bar`, `foo[key]`).

use crate::field::Path;
use crate::schema::structural::Structural;

/// Why a `fieldPath` names no field (kube's texts).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FieldPathError {
    /// The path ends after `.` or inside `[...]`.
    #[error("unexpected end of JSON path")]
    UnexpectedEnd,
    /// `[` followed by something else than a single-quoted string.
    #[error("expected single quoted string but got {0}")]
    ExpectedQuoted(String),
    /// A quoted name with an escape Go's `strconv` does not know (the character after `\`, if any).
    #[error("invalid string literal: invalid escape char \\{0}")]
    InvalidEscape(String),
    /// A quoted name not followed by `]`.
    #[error("expected ] but got {0}")]
    ExpectedClose(String),
    /// Something else than `.` or `[` where a step starts.
    #[error("expected [ or . but got: {0}")]
    ExpectedStep(String),
    /// A step the schema has no field for.
    #[error("does not refer to a valid field")]
    NotAField,
}

/// The field path `json_path` names below `schema`, or why it names nothing.
pub fn valid_field_path(json_path: &str, schema: &Structural) -> Result<String, FieldPathError> {
    let tokens = tokenize(json_path);
    let mut path: Option<Path> = None;
    let mut s = schema;
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        let name = match tok.as_str() {
            "[" => {
                let Some(t) = it.next() else {
                    return Err(FieldPathError::UnexpectedEnd);
                };
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(FieldPathError::ExpectedQuoted(t));
                }
                let unescaped = unescape_single_quote(&t[1..t.len() - 1])?;
                match it.next() {
                    Some(close) if close == "]" => {}
                    Some(other) => return Err(FieldPathError::ExpectedClose(other)),
                    None => return Err(FieldPathError::UnexpectedEnd),
                }
                unescaped
            }
            "." => match it.next() {
                Some(t) => t,
                None => return Err(FieldPathError::UnexpectedEnd),
            },
            other => return Err(FieldPathError::ExpectedStep(other.to_string())),
        };
        if !s.properties.is_empty() {
            let Some(p) = s.properties.get(&name) else {
                return Err(FieldPathError::NotAField);
            };
            path = Some(match path {
                None => Path::new(&name),
                Some(p) => p.child(&name),
            });
            s = p;
        } else if let Some(ap) = &s.additional_properties {
            path = Some(match path {
                None => Path::root().key(&name),
                Some(p) => p.key(&name),
            });
            match ap.schema() {
                Some(next) => s = next,
                None => return Err(FieldPathError::NotAField),
            }
        } else {
            return Err(FieldPathError::NotAField);
        }
    }
    Ok(path.map(|p| p.to_string()).unwrap_or_default())
}

/// Split a JSON path as kube's `ValidFieldPath` scanner does: `.`, `[` and `]` are
/// tokens, a single-quoted string (to its first unescaped `'`) is one token, and
/// everything else between delimiters is one token (a `'` inside a name included).
pub(crate) fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let mut j = i + 1;
            while j < chars.len() && !(chars[j] == '\'' && chars[j - 1] != '\\') {
                j += 1;
            }
            let end = (j + 1).min(chars.len());
            out.push(chars[i..end].iter().collect());
            i = end;
        } else if matches!(c, '.' | '[' | ']') {
            out.push(c.to_string());
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !matches!(chars[j], '.' | '[' | ']') {
                j += 1;
            }
            out.push(chars[i..j].iter().collect());
            i = j;
        }
    }
    out
}

fn unescape_single_quote(s: &str) -> Result<String, FieldPathError> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(o) => return Err(FieldPathError::InvalidEscape(o.to_string())),
            None => return Err(FieldPathError::InvalidEscape(String::new())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Structural {
        let p = crate::schema::props::JSONSchemaProps::from_value(&json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {"a.b": {"type": "string"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}}
            }
        }))
        .expect("schema");
        Structural::from_props(&p)
    }

    #[test]
    fn paths_normalise_like_kube() {
        let s = schema();
        assert_eq!(valid_field_path(".spec", &s).as_deref(), Ok("spec"));
        assert_eq!(
            valid_field_path(".spec['a.b']", &s).as_deref(),
            Ok("spec.a.b")
        );
        assert_eq!(
            valid_field_path(".spec.m.k1", &s).as_deref(),
            Ok("spec.m[k1]")
        );
        assert!(valid_field_path(".spec.nope", &s).is_err());
        assert!(valid_field_path("spec", &s).is_err());
    }

    #[test]
    fn tokens_keep_quoted_names_and_quotes_inside_names() {
        assert_eq!(
            tokenize(".spec['a.b'].c"),
            vec![".", "spec", "[", "'a.b'", "]", ".", "c"]
        );
        // Kube's scanner only starts a quoted string at the start of a token.
        assert_eq!(tokenize(".a'b.c"), vec![".", "a'b", ".", "c"]);
    }
}
