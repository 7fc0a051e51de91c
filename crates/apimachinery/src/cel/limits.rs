//! cel-go's parser limits, checked before an expression reaches the parser, and the
//! cost factors its estimator and runtime charge strings and patterns with.
//!
//! cel-go refuses expressions over 100,000 code points, parse trees nesting more than
//! 250 `expr` rules (parentheses, calls, list and map literals, index brackets,
//! ternary branches: `expression recursion limit exceeded: 250`), and ASTs whose path
//! through selections, indexes, member calls, relations, arithmetic and ternaries is
//! longer than 250 (`max recursion depth exceeded`). The `cel` crate's parser and our
//! checker, cost estimator and interpreter all recurse over the expression, so this
//! scan runs first: it reads tokens in one pass, recurses only per nesting level and
//! stops at the first level past the limit, so no input can exhaust the stack here.
//!
//! The scan is deliberately lenient about syntax: whatever it does not understand it
//! skips, leaving the message to the real parser.

/// cel-go's `common.StringTraversalCostFactor`.
pub const STRING_TRAVERSAL_COST_FACTOR: f64 = 0.1;
/// cel-go's `common.RegexStringLengthCostFactor`.
pub const REGEX_STRING_LENGTH_COST_FACTOR: f64 = 0.25;

/// cel-go's default `expressionSizeCodePointLimit`.
pub const MAX_CODE_POINTS: usize = 100_000;

/// cel-go's default `maxRecursionDepth`.
pub const MAX_RECURSION_DEPTH: u32 = 250;

/// Why an expression is refused before parsing: cel-go's message, reported at no
/// location (cel-go's `<input>:-1:0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitError(pub String);

/// Check `source` against cel-go's size and recursion limits.
pub fn check(source: &str) -> Result<(), LimitError> {
    let size = source.chars().count();
    if size > MAX_CODE_POINTS {
        return Err(LimitError(format!(
            "expression code point size exceeds limit: size: {size}, limit {MAX_CODE_POINTS}"
        )));
    }
    let tokens = tokenize(source);
    let mut scan = Scan {
        tokens: &tokens,
        pos: 0,
        nesting: 0,
    };
    let mut depth = 0;
    while scan.pos < tokens.len() {
        depth = depth.max(scan.expr()?);
        // Whatever the grammar scan could not place is skipped (the parser reports it).
        if scan.pos < tokens.len() {
            scan.pos += 1;
        }
    }
    if depth > MAX_RECURSION_DEPTH {
        return Err(LimitError("max recursion depth exceeded".into()));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Ident,
    Literal,
    /// `.` (and `.?`).
    Dot,
    /// `?` of a ternary.
    Question,
    Colon,
    Comma,
    Open(u8),
    Close(u8),
    /// `==`, `!=`, `<`, `<=`, `>`, `>=`, `in`.
    Relation,
    /// `+`, `-` (binary or unary: the scan tells them apart by position).
    Additive,
    /// `*`, `/`, `%`.
    Multiplicative,
    /// `!`.
    Not,
    /// `&&`, `||`.
    Logical,
    Other,
}

fn tokenize(s: &str) -> Vec<Tok> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                i = skip_string(b, i, false);
                out.push(Tok::Literal);
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += 1;
                }
                i += 1;
                out.push(Tok::Ident);
            }
            b'0'..=b'9' => {
                i += 1;
                while i < b.len() {
                    match b[i] {
                        b'0'..=b'9' | b'a'..=b'z' | b'A'..=b'Z' | b'_' => i += 1,
                        b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => i += 1,
                        b'+' | b'-' if matches!(b[i - 1], b'e' | b'E') && !is_hex(b, i) => i += 1,
                        _ => break,
                    }
                }
                out.push(Tok::Literal);
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                let word = &b[start..i];
                let prefix =
                    word.len() <= 2 && word.iter().all(|c| matches!(c, b'r' | b'R' | b'b' | b'B'));
                if prefix && matches!(b.get(i), Some(b'"' | b'\'')) {
                    let raw = word.iter().any(|c| matches!(c, b'r' | b'R'));
                    i = skip_string(b, i, raw);
                    out.push(Tok::Literal);
                } else if word == b"in" {
                    out.push(Tok::Relation);
                } else {
                    out.push(Tok::Ident);
                }
            }
            _ => {
                let two = b.get(i + 1).copied();
                let (tok, len) = match (c, two) {
                    (b'=', Some(b'='))
                    | (b'!', Some(b'='))
                    | (b'<', Some(b'='))
                    | (b'>', Some(b'=')) => (Tok::Relation, 2),
                    (b'&', Some(b'&')) | (b'|', Some(b'|')) => (Tok::Logical, 2),
                    (b'.', Some(b'?')) => (Tok::Dot, 2),
                    (b'<' | b'>', _) => (Tok::Relation, 1),
                    (b'.', _) => (Tok::Dot, 1),
                    (b'?', _) => (Tok::Question, 1),
                    (b':', _) => (Tok::Colon, 1),
                    (b',', _) => (Tok::Comma, 1),
                    (b'(' | b'[' | b'{', _) => (Tok::Open(c), 1),
                    (b')' | b']' | b'}', _) => (Tok::Close(c), 1),
                    (b'+' | b'-', _) => (Tok::Additive, 1),
                    (b'*' | b'/' | b'%', _) => (Tok::Multiplicative, 1),
                    (b'!', _) => (Tok::Not, 1),
                    _ => (Tok::Other, 1),
                };
                out.push(tok);
                i += len;
            }
        }
    }
    out
}

fn is_hex(b: &[u8], i: usize) -> bool {
    // `0x1e+2` is `0x1e + 2`, not an exponent.
    let mut j = i;
    while j > 0 && (b[j - 1].is_ascii_alphanumeric()) {
        j -= 1;
    }
    b.get(j..j + 2)
        .is_some_and(|p| p.eq_ignore_ascii_case(b"0x"))
}

/// The index after the string literal starting at `i` (a quote).
fn skip_string(b: &[u8], mut i: usize, raw: bool) -> usize {
    let q = b[i];
    let triple = b.get(i..i + 3) == Some(&[q, q, q][..]);
    i += if triple { 3 } else { 1 };
    while i < b.len() {
        if !raw && b[i] == b'\\' {
            i += 2;
            continue;
        }
        if triple {
            if b.get(i..i + 3) == Some(&[q, q, q][..]) {
                return i + 3;
            }
        } else if b[i] == q || b[i] == b'\n' {
            return i + 1;
        }
        i += 1;
    }
    b.len()
}

/// A scan of CEL's grammar that computes, per subexpression, the AST depth cel-go's
/// parser counts (`Scan::expr` returns it), and tracks how many `expr` rules are open.
struct Scan<'t> {
    tokens: &'t [Tok],
    pos: usize,
    nesting: u32,
}

type Depth = Result<u32, LimitError>;

impl Scan<'_> {
    fn peek(&self) -> Option<Tok> {
        self.tokens.get(self.pos).copied()
    }

    fn eat(&mut self, t: Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// `expr: conditionalOr ('?' conditionalOr ':' expr)?`: one more open `expr`.
    fn expr(&mut self) -> Depth {
        self.nesting += 1;
        if self.nesting > MAX_RECURSION_DEPTH {
            return Err(LimitError(format!(
                "expression recursion limit exceeded: {MAX_RECURSION_DEPTH}"
            )));
        }
        let cond = self.or()?;
        let out = if self.eat(Tok::Question) {
            let then = self.or()?;
            self.eat(Tok::Colon);
            let otherwise = self.expr()?;
            1 + cond.max(then).max(otherwise)
        } else {
            cond
        };
        self.nesting -= 1;
        Ok(out)
    }

    /// `&&` and `||` chains are balanced by cel-go and not counted.
    fn or(&mut self) -> Depth {
        let mut d = self.relation()?;
        while self.eat(Tok::Logical) {
            d = d.max(self.relation()?);
        }
        Ok(d)
    }

    /// Left-associative chains: every operator is one more level above its operands.
    fn relation(&mut self) -> Depth {
        let mut d = self.additive()?;
        while self.eat(Tok::Relation) {
            d = 1 + d.max(self.additive()?);
        }
        Ok(d)
    }

    fn additive(&mut self) -> Depth {
        let mut d = self.multiplicative()?;
        while self.eat(Tok::Additive) {
            d = 1 + d.max(self.multiplicative()?);
        }
        Ok(d)
    }

    fn multiplicative(&mut self) -> Depth {
        let mut d = self.unary()?;
        while self.eat(Tok::Multiplicative) {
            d = 1 + d.max(self.unary()?);
        }
        Ok(d)
    }

    /// `!`/`-` runs collapse in cel-go and are not counted.
    fn unary(&mut self) -> Depth {
        while matches!(self.peek(), Some(Tok::Not | Tok::Additive)) {
            self.pos += 1;
        }
        self.member()
    }

    /// Selections, member calls and indexes: one level each above their operand.
    fn member(&mut self) -> Depth {
        let mut d = self.primary()?;
        loop {
            match self.peek() {
                Some(Tok::Dot) => {
                    self.pos += 1;
                    self.eat(Tok::Ident);
                    if self.peek() == Some(Tok::Open(b'(')) {
                        let args = self.bracketed(b')')?;
                        d = 1 + d.max(args);
                    } else {
                        d += 1;
                    }
                }
                Some(Tok::Open(b'[')) => {
                    let index = self.bracketed(b']')?;
                    d = 1 + d.max(index);
                }
                // A message construction `T{field: value}` is not counted.
                Some(Tok::Open(b'{')) => {
                    d = d.max(self.bracketed(b'}')?);
                }
                _ => return Ok(d),
            }
        }
    }

    fn primary(&mut self) -> Depth {
        // A leading `.` (`.name`) qualifies the identifier after it.
        while self.eat(Tok::Dot) {}
        match self.peek() {
            Some(Tok::Ident) => {
                self.pos += 1;
                // A global call is not counted; its arguments are nested `expr`s.
                if self.peek() == Some(Tok::Open(b'(')) {
                    return self.bracketed(b')');
                }
                Ok(0)
            }
            Some(Tok::Literal) => {
                self.pos += 1;
                Ok(0)
            }
            Some(Tok::Open(b'(')) => self.bracketed(b')'),
            Some(Tok::Open(b'[')) => self.bracketed(b']'),
            Some(Tok::Open(b'{')) => self.bracketed(b'}'),
            _ => Ok(0),
        }
    }

    /// An opening bracket, comma- or colon-separated `expr`s (a `?` marks an optional
    /// entry), and the closing bracket: the deepest of them.
    fn bracketed(&mut self, close: u8) -> Depth {
        self.pos += 1;
        let mut d = 0;
        loop {
            match self.peek() {
                None => return Ok(d),
                Some(Tok::Close(c)) => {
                    self.pos += 1;
                    if c == close {
                        return Ok(d);
                    }
                }
                Some(Tok::Comma | Tok::Colon | Tok::Question) => self.pos += 1,
                Some(_) => {
                    let before = self.pos;
                    d = d.max(self.expr()?);
                    if self.pos == before {
                        self.pos += 1;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        check(s).unwrap_err().0
    }

    #[test]
    fn kube_max_valid_depth_of_relations_passes_and_one_more_fails() {
        // kube's TestCELMaxRecursionDepth: 249 `==` over selections pass, 250 fail.
        let ok = "self.val1 == ".repeat(249) + "self.val1";
        assert_eq!(check(&ok), Ok(()));
        let bad = "self.val1 == ".repeat(250) + "self.val1";
        assert_eq!(err(&bad), "max recursion depth exceeded");
    }

    #[test]
    fn long_selection_chains_and_sums_are_refused() {
        let has = format!("has(self{})", ".a".repeat(1500));
        assert_eq!(err(&has), "max recursion depth exceeded");
        let sum = vec!["1"; 2500].join("+") + " > 0";
        assert_eq!(err(&sum), "max recursion depth exceeded");
        assert_eq!(check(&format!("has(self{})", ".a".repeat(100))), Ok(()));
    }

    #[test]
    fn nesting_past_250_expr_rules_is_refused() {
        let ok = "(".repeat(249) + "true" + &")".repeat(249);
        assert_eq!(check(&ok), Ok(()));
        let bad = "(".repeat(250) + "true" + &")".repeat(250);
        assert_eq!(err(&bad), "expression recursion limit exceeded: 250");
        let lists = "[".repeat(300) + &"]".repeat(300);
        assert_eq!(err(&lists), "expression recursion limit exceeded: 250");
        let ternaries = "true ? 1 : ".repeat(300) + "2";
        assert_eq!(err(&ternaries), "expression recursion limit exceeded: 250");
        // Unclosed brackets are nesting too (the parser reports the syntax error).
        assert_eq!(
            err(&"f(".repeat(100_000 / 2)),
            "expression recursion limit exceeded: 250"
        );
    }

    #[test]
    fn long_flat_expressions_pass() {
        // `&&`/`||` chains and `!` runs are flat in cel-go.
        let ands = vec!["self.a.b == self.c.d"; 2000].join(" && ");
        assert_eq!(check(&ands), Ok(()));
        assert_eq!(check(&("!".repeat(50_000) + "true")), Ok(()));
        let list = format!("[{}]", vec!["1 + 2 * 3"; 5000].join(", "));
        assert_eq!(check(&list), Ok(()));
    }

    #[test]
    fn strings_and_comments_do_not_count() {
        let s = format!(
            "'{}' == \"{}\" // {}",
            "(".repeat(400),
            "[".repeat(400),
            "(".repeat(400)
        );
        assert_eq!(check(&s), Ok(()));
        let raw = format!("r'''{}''' == b\"\\\"{}\"", "(".repeat(400), ")".repeat(400));
        assert_eq!(check(&raw), Ok(()));
    }

    #[test]
    fn size_is_counted_in_code_points() {
        let s = format!("'{}' == ''", "é".repeat(MAX_CODE_POINTS));
        assert_eq!(
            err(&s),
            format!(
                "expression code point size exceeds limit: size: {}, limit 100000",
                MAX_CODE_POINTS + 8
            )
        );
    }
}
