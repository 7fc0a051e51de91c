//! Go regular expressions (`pattern`) on the `regex` crate: the syntax Go reads
//! differently is rewritten, the errors Go raises and `regex` does not are raised, and
//! errors are worded as Go's.

/// A pattern Go's `regexp` does not compile: Go's `syntax.Error`, printed
/// `error parsing regexp: <code>: `<expr>``.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("error parsing regexp: {code}: `{expr}`")]
pub struct RegexpError {
    /// What is wrong (Go's `ErrorCode`, or the `regex` crate's description).
    pub code: String,
    /// The part of the pattern at fault.
    pub expr: String,
}

impl RegexpError {
    fn new(code: impl Into<String>, expr: impl Into<String>) -> Self {
        RegexpError {
            code: code.into(),
            expr: expr.into(),
        }
    }
}

/// Compile a `pattern` with Go `regexp` (RE2) semantics where they differ from the
/// `regex` crate; the error is Go's message (`error parsing regexp: ...`).
///
/// Covers the common differences: Go treats a `{` that does not start a valid repeat as
/// a literal, rejects repeat counts above 1000 and nested repetition operators (`a**`,
/// `a++`). Uncommon syntax errors keep the `regex` crate's description.
pub fn compile_go_regexp(pattern: &str) -> Result<regex::Regex, RegexpError> {
    let translated = translate_go_regexp(pattern)?;
    regex::RegexBuilder::new(&translated)
        .size_limit(1 << 26)
        .build()
        .map_err(|e| go_regexp_error(pattern, &e.to_string()))
}

/// Rewrite Go-only literal `{` into `\{` and detect the errors Go raises but `regex` does not.
fn translate_go_regexp(p: &str) -> Result<String, RegexpError> {
    let chars: Vec<char> = p.chars().collect();
    let mut out = String::with_capacity(p.len() + 8);
    let mut i = 0;
    let mut in_class = false;
    // The start of the previous token if it was a repetition operator, and whether a
    // lazy `?` may still follow it (Go's nested-repetition error).
    let mut after_repeat: Option<(usize, bool)> = None;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            out.push(c);
            if let Some(&n) = chars.get(i + 1) {
                out.push(n);
            }
            i += 2;
            after_repeat = None;
            continue;
        }
        if in_class {
            match c {
                ']' => in_class = false,
                // Go has no nested classes or set operations: these are literals there.
                '[' if chars.get(i + 1) != Some(&':') => out.push('\\'),
                '&' | '~' => out.push('\\'),
                _ => {}
            }
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '[' => {
                in_class = true;
                out.push(c);
                // A `]` right after `[` or `[^` is a literal member.
                if chars.get(i + 1) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i + 1) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
                i += 1;
                after_repeat = None;
            }
            '*' | '+' | '?' => {
                if let Some((start, lazy_ok)) = after_repeat {
                    if c == '?' && lazy_ok {
                        out.push(c);
                        i += 1;
                        after_repeat = Some((start, false));
                        continue;
                    }
                    let op: String = chars[start..=i].iter().collect();
                    return Err(RegexpError::new("invalid nested repetition operator", op));
                }
                out.push(c);
                after_repeat = Some((i, true));
                i += 1;
            }
            '{' => match parse_go_repeat(&chars[i..]) {
                Some((len, min, max)) => {
                    let text: String = chars[i..i + len].iter().collect();
                    if min > 1000 || max.is_some_and(|m| m > 1000 || m < min) {
                        return Err(RegexpError::new("invalid repeat count", text));
                    }
                    if let Some((start, _)) = after_repeat {
                        let op: String = chars[start..i + len].iter().collect();
                        return Err(RegexpError::new("invalid nested repetition operator", op));
                    }
                    out.push_str(&text);
                    after_repeat = Some((i, true));
                    i += len;
                }
                None => {
                    out.push_str("\\{");
                    i += 1;
                    after_repeat = None;
                }
            },
            _ => {
                out.push(c);
                i += 1;
                after_repeat = None;
            }
        }
    }
    Ok(out)
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `s`: (length, min, max).
fn parse_go_repeat(s: &[char]) -> Option<(usize, u64, Option<u64>)> {
    let mut i = 1;
    let digits = |i: &mut usize| -> Option<u64> {
        let start = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        if *i == start {
            return None;
        }
        let text: String = s[start..*i].iter().collect();
        Some(text.parse().unwrap_or(u64::MAX))
    };
    let min = digits(&mut i)?;
    let max = if s.get(i) == Some(&',') {
        i += 1;
        if s.get(i) == Some(&'}') {
            None
        } else {
            Some(digits(&mut i)?)
        }
    } else {
        Some(min)
    };
    (s.get(i) == Some(&'}')).then_some((i + 1, min, max))
}

/// Map a `regex` crate syntax error onto Go's wording for the common cases.
fn go_regexp_error(pattern: &str, rust_message: &str) -> RegexpError {
    let reason = rust_message
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(rust_message)
        .trim();
    let (code, expr) = if reason.starts_with("unclosed character class") {
        let start = pattern.rfind('[').unwrap_or(0);
        ("missing closing ]", pattern[start..].to_string())
    } else if reason.starts_with("unclosed group") {
        ("missing closing )", pattern.to_string())
    } else if reason.starts_with("unopened group") {
        ("unexpected )", pattern.to_string())
    } else if reason.starts_with("repetition operator missing expression") {
        let op = pattern
            .chars()
            .find(|c| matches!(c, '*' | '+' | '?'))
            .map(String::from)
            .unwrap_or_default();
        ("missing argument to repetition operator", op)
    } else if reason.starts_with("incomplete escape sequence") {
        ("trailing backslash at end of expression", String::new())
    } else if reason.starts_with("look-around") {
        let start = pattern.find("(?").unwrap_or(0);
        (
            "invalid or unsupported Perl syntax",
            pattern[start..].chars().take(3).collect(),
        )
    } else if reason.starts_with("unrecognized escape sequence")
        || reason.starts_with("backreferences are not supported")
    {
        let start = pattern.find('\\').unwrap_or(0);
        (
            "invalid escape sequence",
            pattern[start..].chars().take(2).collect(),
        )
    } else if reason.starts_with("invalid character class range") {
        ("invalid character class range", pattern.to_string())
    } else {
        return RegexpError::new(reason, pattern);
    };
    RegexpError::new(code, expr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_regexp_differences() {
        assert!(compile_go_regexp("a{,5}").is_ok_and(|r| r.is_match("a{,5}")));
        assert!(compile_go_regexp("^[a-z]{2,3}$")
            .is_ok_and(|r| r.is_match("ab") && !r.is_match("abcd")));
        assert!(compile_go_regexp("a*?b+?").is_ok());
        assert_eq!(
            compile_go_regexp("a**")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("error parsing regexp: invalid nested repetition operator: `**`")
        );
        assert_eq!(
            compile_go_regexp("a{1001}")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("error parsing regexp: invalid repeat count: `{1001}`")
        );
        assert_eq!(
            compile_go_regexp("(ab")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("error parsing regexp: missing closing ): `(ab`")
        );
        assert_eq!(
            compile_go_regexp("ab)")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("error parsing regexp: unexpected ): `ab)`")
        );
        assert_eq!(
            compile_go_regexp("\\q")
                .err()
                .map(|e| e.to_string())
                .as_deref(),
            Some("error parsing regexp: invalid escape sequence: `\\q`")
        );
    }
}
