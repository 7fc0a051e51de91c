//! Label selectors: kube's `labels.Parse` grammar, `NewRequirement` validation and
//! matching, plus `metav1.LabelSelector` objects (`matchLabels` / `matchExpressions`).
//!
//! Error texts are kube's: a `?labelSelector=` that does not parse yields the message
//! the apiserver returns in its 400 `BadRequest`, e.g.
//! `unable to parse requirement: <nil>: Invalid value: "a b": name part must consist of ...`.

use super::SelectorError;
use crate::field::go_quote;
// Key and value checks are kube's `IsQualifiedName` / `IsValidLabelValue`, shared with
// metadata validation.
use crate::schema::objectmeta::{is_label_value, is_qualified_name};
use serde_json::{Map, Value};
use std::fmt;

/// The relation a requirement checks (kube's `selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operator {
    /// `key in (a,b)`
    In,
    /// `key notin (a,b)`
    NotIn,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`
    NotEquals,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>5`
    GreaterThan,
    /// `key<5`
    LessThan,
}

impl Operator {
    /// kube's string for the operator (`selection.Operator` values).
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::Exists => "exists",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => "gt",
            Operator::LessThan => "lt",
        }
    }
}

/// The binary operators in the order kube lists them in "expected: ..." errors.
const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

/// One `key op values` clause of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    key: String,
    operator: Operator,
    /// Sorted and de-duplicated for set operators, as kube's parser produces them.
    values: Vec<String>,
}

impl Requirement {
    /// Build a requirement with kube's `NewRequirement` validation; the error is kube's
    /// aggregated message (paths `key`, `values[i]`, `values[i][key]`).
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        let mut errs = Vec::new();
        if let Some(e) = key_error(key, "key") {
            errs.push(e);
        }
        match operator {
            Operator::In | Operator::NotIn if values.is_empty() => errs.push(format!(
                "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
                go_string_slice(&values)
            )),
            Operator::Equals | Operator::DoubleEquals | Operator::NotEquals
                if values.len() != 1 =>
            {
                errs.push(format!(
                    "values: Invalid value: {}: exact-match compatibility requires one single value",
                    go_string_slice(&values)
                ))
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
                "values: Invalid value: {}: values set must be empty for exists and does not exist",
                go_string_slice(&values)
            )),
            Operator::GreaterThan | Operator::LessThan => {
                if values.len() != 1 {
                    errs.push(format!(
                        "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                        go_string_slice(&values)
                    ));
                }
                for (i, v) in values.iter().enumerate() {
                    if v.parse::<i64>().is_err() {
                        errs.push(format!(
                            "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                            go_quote(v)
                        ));
                    }
                }
            }
            _ => {}
        }
        for (i, v) in values.iter().enumerate() {
            let msgs = is_label_value(v);
            if !msgs.is_empty() {
                errs.push(format!(
                    "values[{i}][{key}]: Invalid value: {}: {}",
                    go_quote(v),
                    msgs.join("; ")
                ));
            }
        }
        if errs.is_empty() {
            Ok(Requirement {
                key: key.to_string(),
                operator,
                values,
            })
        } else {
            Err(SelectorError::Requirement(aggregate(errs)))
        }
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (sorted for set operators).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Does this requirement accept a label set in which `key` has `value` (or is absent)?
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => {
                value.is_none_or(|v| !self.values.iter().any(|x| x == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let Some(label) = value.and_then(|v| v.parse::<i64>().ok()) else {
                    return false;
                };
                let [bound] = self.values.as_slice() else {
                    return false;
                };
                let Ok(bound) = bound.parse::<i64>() else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > bound
                } else {
                    label < bound
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        let mut values = self.values.clone();
        values.sort();
        if set {
            write!(f, "({})", values.join(","))
        } else {
            f.write_str(&values.join(","))
        }
    }
}

/// A parsed label selector: the AND of its requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    /// kube's `labels.Nothing()`: what a null `metav1.LabelSelector` means.
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches everything (empty `?labelSelector=`).
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// The selector that matches nothing (a null `metav1.LabelSelector`).
    pub fn nothing() -> Self {
        LabelSelector {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Build from requirements, sorted by key as kube does.
    pub fn from_requirements(mut requirements: Vec<Requirement>) -> Self {
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        LabelSelector {
            requirements,
            nothing: false,
        }
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// True when the selector does not restrict anything (kube's `Empty()`).
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// True for the match-nothing selector.
    pub fn matches_nothing(&self) -> bool {
        self.nothing
    }

    /// Match against `metadata.labels` as a JSON map (non-string values count as absent).
    pub fn matches(&self, labels: &Map<String, Value>) -> bool {
        self.matches_with(|k| labels.get(k).and_then(Value::as_str))
    }

    /// Match against an object's `metadata.labels`.
    pub fn matches_object(&self, obj: &Value) -> bool {
        let empty = Map::new();
        let labels = obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        self.matches(labels)
    }

    /// Match with a label lookup function.
    pub fn matches_with<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        !self.nothing
            && self
                .requirements
                .iter()
                .all(|r| r.matches_value(lookup(&r.key)))
    }

    /// kube's `RequiresExactMatch`: the single value the selector demands for `label`.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// Parse a `?labelSelector=` string with kube's grammar; the error is kube's message.
pub fn parse(selector: &str) -> Result<LabelSelector, SelectorError> {
    let items = lex_all(selector.as_bytes());
    let mut parser = Parser { items, pos: 0 };
    let requirements = parser.parse()?;
    Ok(LabelSelector::from_requirements(requirements))
}

/// Convert a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`) as kube's
/// `LabelSelectorAsSelector` does; `null` selects nothing, `{}` selects everything.
pub fn from_label_selector_json(v: &Value) -> Result<LabelSelector, SelectorError> {
    let obj = match v {
        Value::Null => return Ok(LabelSelector::nothing()),
        Value::Object(o) => o,
        other => return Err(SelectorError::NotAnObject(json_kind(other))),
    };
    let empty = Map::new();
    let match_labels = match obj.get("matchLabels") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(other) => return Err(SelectorError::MatchLabelsNotAnObject(json_kind(other))),
    };
    let no_exprs = Vec::new();
    let match_expressions = match obj.get("matchExpressions") {
        None | Some(Value::Null) => &no_exprs,
        Some(Value::Array(a)) => a,
        Some(other) => return Err(SelectorError::MatchExpressionsNotAnArray(json_kind(other))),
    };
    if match_labels.is_empty() && match_expressions.is_empty() {
        return Ok(LabelSelector::everything());
    }
    let mut requirements = Vec::new();
    for (k, v) in match_labels {
        let value = v
            .as_str()
            .ok_or_else(|| SelectorError::MatchLabelNotAString(k.clone()))?;
        requirements.push(Requirement::new(
            k,
            Operator::Equals,
            vec![value.to_string()],
        )?);
    }
    for expr in match_expressions {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
        let op_name = expr.get("operator").and_then(Value::as_str).unwrap_or("");
        let op = match op_name {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => return Err(SelectorError::Operator(other.to_string())),
        };
        let values = match expr.get("values") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or(SelectorError::ValuesNotStrings)?,
            Some(_) => return Err(SelectorError::ValuesNotAnArray),
        };
        requirements.push(Requirement::new(key, op, values)?);
    }
    Ok(LabelSelector::from_requirements(requirements))
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A key error as a rendered field error at `path` (`<nil>` for the parser's nil path).
fn key_error(key: &str, path: &str) -> Option<String> {
    let msgs = is_qualified_name(key);
    (!msgs.is_empty()).then(|| {
        format!(
            "{path}: Invalid value: {}: {}",
            go_quote(key),
            msgs.join("; ")
        )
    })
}

/// Go's `%#v` of a `[]string`.
fn go_string_slice(values: &[String]) -> String {
    let inner: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// kube's aggregate error text: duplicates dropped, one bare, several in `[a, b]`.
fn aggregate(errs: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    }
}

// ---------------------------------------------------------------------------
// Lexer and parser (the grammar of kube's labels.Parse).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn keyword(s: &[u8]) -> Option<Token> {
    Some(match s {
        b")" => Token::ClosedPar,
        b"," => Token::Comma,
        b"!" => Token::DoesNotExist,
        b"==" => Token::DoubleEquals,
        b"=" => Token::Equals,
        b">" => Token::GreaterThan,
        b"in" => Token::In,
        b"<" => Token::LessThan,
        b"!=" => Token::NotEquals,
        b"notin" => Token::NotIn,
        b"(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Tokenise the whole input; kube treats a NUL byte as the end of the string.
fn lex_all(s: &[u8]) -> Vec<(Token, String)> {
    let mut pos = 0;
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut out = Vec::new();
    loop {
        while is_whitespace(at(pos)) {
            pos += 1;
        }
        let c = at(pos);
        let item = if c == 0 {
            (Token::EndOfString, String::new())
        } else if is_special(c) {
            // Longest run of special symbols that still forms a known token.
            let start = pos;
            let mut last: Option<(Token, usize)> = None;
            while is_special(at(pos)) {
                pos += 1;
                match keyword(&s[start..pos]) {
                    Some(t) => last = Some((t, pos)),
                    None if last.is_some() => {
                        pos -= 1;
                        break;
                    }
                    None => {}
                }
            }
            match last {
                Some((t, end)) => {
                    pos = end;
                    (t, String::from_utf8_lossy(&s[start..end]).into_owned())
                }
                None => (
                    Token::Error,
                    format!(
                        "error expected: keyword found '{}'",
                        String::from_utf8_lossy(&s[start..pos])
                    ),
                ),
            }
        } else {
            let start = pos;
            while at(pos) != 0 && !is_special(at(pos)) && !is_whitespace(at(pos)) {
                pos += 1;
            }
            let lit = &s[start..pos];
            let tok = keyword(lit).unwrap_or(Token::Identifier);
            (tok, String::from_utf8_lossy(lit).into_owned())
        };
        let end = item.0 == Token::EndOfString;
        out.push(item);
        if end {
            return out;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

impl Parser {
    fn item(&self, i: usize, ctx: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(i)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        // In a values context `in` and `notin` are ordinary identifiers.
        let tok = match (ctx, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            _ => tok,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.pos, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.item(self.pos, ctx);
        if self.pos < self.items.len() {
            self.pos += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(SelectorError::LabelRequirement)?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(SelectorError::LabelSyntax(format!(
                                    "found '{l2}', expected: identifier after ','"
                                )));
                            }
                        }
                        _ => {
                            return Err(SelectorError::LabelSyntax(format!(
                                "found '{l}', expected: ',' or 'end of string'"
                            )))
                        }
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(SelectorError::LabelSyntax(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    )))
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = inferred {
            return Requirement::new(&key, op, Vec::new()).map_err(|e| e.to_string());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        Requirement::new(&key, op, values).map_err(|e| e.to_string())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(e) = key_error(&lit, "<nil>") {
            return Err(e);
        }
        let (next, _) = self.lookahead(Context::Values);
        if matches!(next, Token::EndOfString | Token::Comma) && op.is_none() {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    // `(,` `,,` and `,)` all stand for the empty value.
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if tok2 == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if matches!(tok, Token::EndOfString | Token::Comma) {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    const NAME_PART_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn crud_semantics_list_label_selector_in_and_exists() {
        // conformance case crud-semantics/list-label-selector: `tier in (gold),extra`
        let sel = parse("tier in (gold),extra").unwrap();
        assert!(sel.matches(&labels(json!({"tier": "gold", "extra": "1"}))));
        assert!(!sel.matches(&labels(json!({"tier": "gold"}))));
        assert!(!sel.matches(&labels(json!({"tier": "silver", "extra": "1"}))));
        assert_eq!(sel.to_string(), "extra,tier in (gold)");
    }

    #[test]
    fn kube_syntax_examples_parse() {
        // Examples from kube's selector_test.go TestSelectorParse.
        for s in [
            "",
            "x=a,y=b,z=c",
            "x!=a,y=b",
            "x=,z= ",
            "x= ,z= ",
            "!x",
            "x>1",
            "x>1,z<5",
            "x in (a,b,c)",
            "x notin (a)",
            "x in (,a)",
            "x in (a,)",
            "x in ()",
            "x in (foo,,baz),y,z notin ()",
            "x in (in),y",
            "  x  ",
        ] {
            assert!(parse(s).is_ok(), "{s:?} should parse");
        }
        for s in [
            "x=a||y=b",
            "x==a==b",
            "!x=a",
            "x<a",
            "x in (a",
            "x notin a",
            "x in(a,b",
            ",x",
            "x,",
        ] {
            assert!(parse(s).is_err(), "{s:?} should not parse");
        }
    }

    #[test]
    fn key_errors_use_nil_path() {
        // kube: `unable to parse requirement: <nil>: Invalid value: "app:monolith": name part ...`
        assert_eq!(
            parse("app:monolith").unwrap_err().to_string(),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"app:monolith\": {NAME_PART_REGEX}"
            )
        );
        assert_eq!(
            parse("*bar").unwrap_err().to_string(),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"*bar\": {NAME_PART_REGEX}"
            )
        );
    }

    #[test]
    fn prefix_errors_match_kube() {
        // Recorded from a real cluster: kubectl get pods -l app.kubernetes_io/name=x
        assert_eq!(
            parse("app.kubernetes_io/name=vault-secrets-operator").unwrap_err().to_string(),
            "unable to parse requirement: <nil>: Invalid value: \"app.kubernetes_io/name\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
    }

    #[test]
    fn multi_slash_key_is_one_message() {
        let err = parse("a/b/c").unwrap_err().to_string();
        assert_eq!(
            err,
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        );
    }

    #[test]
    fn empty_name_part_reports_both_messages() {
        assert_eq!(
            parse("example.com/").unwrap_err().to_string(),
            format!("unable to parse requirement: <nil>: Invalid value: \"example.com/\": name part must be non-empty; {NAME_PART_REGEX}")
        );
        assert_eq!(
            parse("/a").unwrap_err().to_string(),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
        );
    }

    #[test]
    fn value_errors_use_values_key_path() {
        let long = "z".repeat(64);
        // kube test: `values[0][good-key]: Invalid value: "zzz…": must be no more than 63 …`
        assert_eq!(
            parse(&format!("good-key={long}")).unwrap_err().to_string(),
            format!("unable to parse requirement: values[0][good-key]: Invalid value: \"{long}\": must be no more than 63 bytes")
        );
        assert_eq!(
            parse("tier=-gold").unwrap_err().to_string(),
            "unable to parse requirement: values[0][tier]: Invalid value: \"-gold\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
    }

    #[test]
    fn gt_requires_integer() {
        assert_eq!(
            parse("x>abc").unwrap_err().to_string(),
            "unable to parse requirement: values[0]: Invalid value: \"abc\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
        let sel = parse("x>5").unwrap();
        assert!(sel.matches(&labels(json!({"x": "6"}))));
        assert!(!sel.matches(&labels(json!({"x": "5"}))));
        assert!(!sel.matches(&labels(json!({"x": "abc"}))));
        assert!(!sel.matches(&labels(json!({}))));
        assert!(parse("x<5").unwrap().matches(&labels(json!({"x": "-3"}))));
    }

    #[test]
    fn grammar_error_texts() {
        assert_eq!(
            parse("a b").unwrap_err().to_string(),
            "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert_eq!(
            parse("x,").unwrap_err().to_string(),
            "found '', expected: identifier after ','"
        );
        assert_eq!(
            parse(",x").unwrap_err().to_string(),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            parse("x=a=b").unwrap_err().to_string(),
            "found '=', expected: ',' or 'end of string'"
        );
        assert_eq!(
            parse("x in a").unwrap_err().to_string(),
            "unable to parse requirement: found 'a' expected: '('"
        );
        assert_eq!(
            parse("x in (a").unwrap_err().to_string(),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            parse("x in (=)").unwrap_err().to_string(),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            parse("x=(a)").unwrap_err().to_string(),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            parse("!=a").unwrap_err().to_string(),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            parse("!x=a").unwrap_err().to_string(),
            "found '=', expected: ',' or 'end of string'"
        );
    }

    #[test]
    fn matching_semantics() {
        let l = labels(json!({"a": "1", "b": "x"}));
        assert!(parse("a=1").unwrap().matches(&l));
        assert!(parse("a==1").unwrap().matches(&l));
        assert!(!parse("a!=1").unwrap().matches(&l));
        assert!(parse("c!=1").unwrap().matches(&l));
        assert!(parse("c notin (1)").unwrap().matches(&l));
        assert!(parse("!c").unwrap().matches(&l));
        assert!(!parse("!a").unwrap().matches(&l));
        assert!(parse("b in (x,y)").unwrap().matches(&l));
        assert!(parse("").unwrap().matches(&l));
        assert!(parse("").unwrap().is_empty());
        // `x=` selects the empty value.
        assert!(parse("c=").unwrap().matches(&labels(json!({"c": ""}))));
        assert!(!parse("c=").unwrap().matches(&l));
        // `in`/`notin` are values inside parentheses.
        assert!(parse("a in (in,notin)")
            .unwrap()
            .matches(&labels(json!({"a": "notin"}))));
    }

    #[test]
    fn string_form_is_kube_canonical() {
        assert_eq!(
            parse("z notin (b,a), x,!y, w>3").unwrap().to_string(),
            "w>3,x,!y,z notin (a,b)"
        );
    }

    #[test]
    fn requires_exact_match() {
        let s = parse("a=1,b in (x),c in (x,y)").unwrap();
        assert_eq!(s.requires_exact_match("a"), Some("1"));
        assert_eq!(s.requires_exact_match("b"), Some("x"));
        assert_eq!(s.requires_exact_match("c"), None);
        assert_eq!(s.requires_exact_match("d"), None);
    }

    #[test]
    fn label_selector_objects() {
        assert!(from_label_selector_json(&Value::Null)
            .unwrap()
            .matches_nothing());
        let all = from_label_selector_json(&json!({})).unwrap();
        assert!(all.is_empty());
        assert!(all.matches(&labels(json!({}))));
        let s = from_label_selector_json(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap();
        assert!(s.matches(&labels(json!({"app": "web", "tier": "a"}))));
        assert!(!s.matches(&labels(json!({"app": "web", "tier": "a", "legacy": "y"}))));
        assert_eq!(s.to_string(), "app=web,!legacy,tier in (a,b)");
        assert_eq!(
            from_label_selector_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "Foo"}]})
            )
            .unwrap_err()
            .to_string(),
            "\"Foo\" is not a valid label selector operator"
        );
        assert_eq!(
            from_label_selector_json(&json!({"matchExpressions": [{"key": "a", "operator": "In"}]}))
                .unwrap_err().to_string(),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        assert_eq!(
            from_label_selector_json(
                &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]})
            )
            .unwrap_err().to_string(),
            "values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist"
        );
        assert_eq!(
            from_label_selector_json(&json!({"matchLabels": {"a b": "x"}}))
                .unwrap_err()
                .to_string(),
            format!("key: Invalid value: \"a b\": {NAME_PART_REGEX}")
        );
    }

    #[test]
    fn gt_with_bad_label_value_aggregates() {
        let err = Requirement::new("k", Operator::GreaterThan, vec!["a-".into()])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("[values[0]: Invalid value: \"a-\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][k]: Invalid value: \"a-\": a valid label must"));
        assert!(err.ends_with("]"));
    }
}
