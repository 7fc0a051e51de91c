//! Field selectors: kube's `fields.ParseSelector` (with `\,` `\=` `\\` escaping),
//! matching, and the custom-resource field set (`metadata.name`, `metadata.namespace`
//! and the CRD's `selectableFields`).

use super::SelectorError;
use crate::table::jsonpath;
use serde_json::Value;
use std::fmt;

/// How a term compares the field with its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value`
    Equals,
    /// `field==value`
    DoubleEquals,
    /// `field!=value`
    NotEquals,
}

/// One `field op value` term (the value already unescaped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label, e.g. `metadata.name`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The literal value.
    pub value: String,
}

impl FieldRequirement {
    /// Does a field with this value (missing fields read as `""`) satisfy the term?
    pub fn matches_value(&self, actual: &str) -> bool {
        match self.operator {
            FieldOperator::Equals | FieldOperator::DoubleEquals => actual == self.value,
            FieldOperator::NotEquals => actual != self.value,
        }
    }
}

/// A parsed field selector: the AND of its terms, in kube's (sorted) order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        FieldSelector::default()
    }

    /// kube's `OneTermEqualSelector`.
    pub fn one_term_equal(field: &str, value: &str) -> Self {
        FieldSelector {
            terms: vec![FieldRequirement {
                field: field.to_string(),
                operator: FieldOperator::Equals,
                value: value.to_string(),
            }],
        }
    }

    /// The terms in kube's order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.terms
    }

    /// True when nothing is restricted.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Match with a field lookup (`None` reads as the empty string, as kube's `Fields.Get`).
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms
            .iter()
            .all(|t| t.matches_value(get(&t.field).as_deref().unwrap_or("")))
    }

    /// kube's `RequiresExactMatch`: the value an `=`/`==` term demands for `field`.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && t.operator != FieldOperator::NotEquals)
            .map(|t| t.value.as_str())
    }

    /// Check every field label against what a custom resource supports (kube's CR
    /// `ConvertFieldLabel`); the error is kube's 400 message
    /// `field label not supported: <label>` for the first unsupported term.
    /// `selectable` holds the CRD version's `selectableFields[].jsonPath` values.
    pub fn check_custom_resource_labels(
        &self,
        namespaced: bool,
        selectable: &[String],
    ) -> Result<(), SelectorError> {
        for t in &self.terms {
            let ok = t.field == "metadata.name"
                || (namespaced && t.field == "metadata.namespace")
                || selectable
                    .iter()
                    .any(|p| p.strip_prefix('.').unwrap_or(p) == t.field);
            if !ok {
                return Err(SelectorError::FieldLabelNotSupported(t.field.clone()));
            }
        }
        Ok(())
    }

    /// Match a custom resource, reading fields as kube's CR strategy `GetAttrs` does.
    /// An error (a selectable field path with several results) is kube's list error text.
    pub fn matches_custom_resource(
        &self,
        obj: &Value,
        selectable: &[String],
    ) -> Result<bool, SelectorError> {
        for t in &self.terms {
            let actual = cr_field_value(obj, &t.field, selectable)?;
            if !t.matches_value(actual.as_deref().unwrap_or("")) {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let op = match t.operator {
                    FieldOperator::NotEquals => "!=",
                    _ => "=",
                };
                format!("{}{}{}", t.field, op, escape_value(&t.value))
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// kube's `EscapeValue`: backslash-escape `\`, `,` and `=`.
pub fn escape_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// kube's `UnescapeValue`, with its error texts.
pub fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::FieldEscape(c.to_string()));
            }
            out.push(c);
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // kube prints the rune with %v, i.e. its code point number.
            ',' | '=' => return Err(SelectorError::FieldUnescaped(c)),
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::FieldEscape(String::new()));
    }
    Ok(out)
}

/// Split on commas that are not backslash-escaped (escapes are kept in the terms).
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&s[start..i]);
            start = i + 1;
        }
    }
    terms.push(&s[start..]);
    terms
}

/// The first `!=`, `==` or `=` (checked in that order at each position) splits a term.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::DoubleEquals),
            ("=", FieldOperator::Equals),
        ] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], kind, value));
            }
        }
    }
    None
}

/// Parse a `?fieldSelector=` string as kube's `fields.ParseSelector`; the error is kube's
/// message. Terms are sorted as kube sorts them, so errors name the same term.
pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
    let mut parts = split_terms(selector);
    parts.sort_unstable();
    let mut terms = Vec::new();
    for part in parts {
        if part.is_empty() {
            continue;
        }
        let (lhs, operator, rhs) = split_term(part).ok_or_else(|| SelectorError::FieldTerm {
            selector: selector.to_string(),
            term: part.to_string(),
        })?;
        let value = unescape_value(rhs)?;
        // kube's identity transform drops a term whose field and value are both empty.
        if lhs.is_empty() && value.is_empty() {
            continue;
        }
        terms.push(FieldRequirement {
            field: lhs.to_string(),
            operator,
            value,
        });
    }
    Ok(FieldSelector { terms })
}

/// The value of a field label on a custom resource, as kube's CR strategy reads it:
/// `metadata.name`, `metadata.namespace`, or a selectable field (`selectable` holds the
/// CRD's `selectableFields[].jsonPath`, e.g. `.spec.color`) printed as Go's `fmt.Sprint`.
/// `Ok(None)` means absent or null (kube compares it as `""`); `Err` is kube's message
/// (`field label not supported: x`, or the selectable-field evaluation error).
pub fn cr_field_value(
    obj: &Value,
    field: &str,
    selectable: &[String],
) -> Result<Option<String>, SelectorError> {
    match field {
        "metadata.name" | "metadata.namespace" => {
            let key = &field["metadata.".len()..];
            return Ok(obj
                .get("metadata")
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .map(str::to_string));
        }
        _ => {}
    }
    let Some(path) = selectable
        .iter()
        .find(|p| p.strip_prefix('.').unwrap_or(p) == field)
    else {
        return Err(SelectorError::FieldLabelNotSupported(field.to_string()));
    };
    let parsed = jsonpath::parse(path).map_err(SelectorError::FieldJsonPathParse)?;
    let results = parsed.find(obj).map_err(SelectorError::FieldJsonPathFind)?;
    match results.as_slice() {
        [] => Ok(None),
        [Value::Null] => Ok(None),
        [one] => Ok(Some(jsonpath::go_sprint(one))),
        _ => Err(SelectorError::FieldJsonPathResults),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get_from<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(f, _)| *f == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn crud_semantics_list_field_selector_by_name() {
        // conformance case crud-semantics/list-field-selector: metadata.name=w1
        let sel = parse("metadata.name=w1").unwrap();
        let w1 = json!({"metadata": {"name": "w1", "namespace": "default"}});
        let w2 = json!({"metadata": {"name": "w2", "namespace": "default"}});
        assert!(sel.matches_custom_resource(&w1, &[]).unwrap());
        assert!(!sel.matches_custom_resource(&w2, &[]).unwrap());
        assert_eq!(sel.requires_exact_match("metadata.name"), Some("w1"));
    }

    #[test]
    fn operators_and_missing_fields() {
        let f = get_from(&[("a", "1")]);
        assert!(parse("a=1").unwrap().matches(&f));
        assert!(parse("a==1").unwrap().matches(&f));
        assert!(!parse("a!=1").unwrap().matches(&f));
        // A missing field reads as "".
        assert!(parse("b=").unwrap().matches(&f));
        assert!(parse("b!=x").unwrap().matches(&f));
        assert!(parse("").unwrap().is_empty());
        assert!(parse(",,").unwrap().is_empty());
    }

    #[test]
    fn escaping_matches_kube() {
        // kube selector_test.go: escaped commas, equals and backslashes in values.
        let sel = parse(r"a=\,,b=\=,c=\\").unwrap();
        let vals: Vec<&str> = sel
            .requirements()
            .iter()
            .map(|r| r.value.as_str())
            .collect();
        assert_eq!(vals, vec![",", "=", "\\"]);
        assert_eq!(sel.to_string(), r"a=\,,b=\=,c=\\");
        assert_eq!(
            parse("a=b=c").unwrap_err().to_string(),
            "invalid field selector: unescaped character in value: 61"
        );
        assert_eq!(
            parse(r"a=\x").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \x"
        );
        assert_eq!(
            parse(r"a=b\").unwrap_err().to_string(),
            r"invalid field selector: invalid escape sequence: \"
        );
    }

    #[test]
    fn unparseable_term_message() {
        assert_eq!(
            parse("foo").unwrap_err().to_string(),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        // Terms are sorted before parsing, so kube reports `abc` before `zzz`.
        assert_eq!(
            parse("zzz,abc").unwrap_err().to_string(),
            "invalid selector: 'zzz,abc'; can't understand 'abc'"
        );
    }

    #[test]
    fn split_prefers_not_equals_then_double() {
        let s = parse("a!=b").unwrap();
        assert_eq!(s.requirements()[0].operator, FieldOperator::NotEquals);
        let s = parse("a==b").unwrap();
        assert_eq!(s.requirements()[0].operator, FieldOperator::DoubleEquals);
        assert_eq!(s.requirements()[0].value, "b");
        // `=` alone (empty field and value) is dropped by kube's identity transform.
        assert!(parse("=").unwrap().is_empty());
    }

    #[test]
    fn custom_resource_labels() {
        let sel = parse("spec.foo=x").unwrap();
        assert_eq!(
            sel.check_custom_resource_labels(true, &[])
                .unwrap_err()
                .to_string(),
            "field label not supported: spec.foo"
        );
        assert!(sel
            .check_custom_resource_labels(true, &[".spec.foo".to_string()])
            .is_ok());
        let ns = parse("metadata.namespace=default").unwrap();
        assert!(ns.check_custom_resource_labels(true, &[]).is_ok());
        assert_eq!(
            ns.check_custom_resource_labels(false, &[])
                .unwrap_err()
                .to_string(),
            "field label not supported: metadata.namespace"
        );
    }

    #[test]
    fn selectable_field_values_print_as_go() {
        let obj = json!({"metadata": {"name": "a"}, "spec": {"color": "blue", "size": 3, "on": true, "nil": null}});
        let sf: Vec<String> = [
            ".spec.color",
            ".spec.size",
            ".spec.on",
            ".spec.missing",
            ".spec.nil",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            cr_field_value(&obj, "spec.color", &sf).unwrap().as_deref(),
            Some("blue")
        );
        assert_eq!(
            cr_field_value(&obj, "spec.size", &sf).unwrap().as_deref(),
            Some("3")
        );
        assert_eq!(
            cr_field_value(&obj, "spec.on", &sf).unwrap().as_deref(),
            Some("true")
        );
        assert_eq!(cr_field_value(&obj, "spec.missing", &sf).unwrap(), None);
        assert_eq!(cr_field_value(&obj, "spec.nil", &sf).unwrap(), None);
        assert_eq!(
            cr_field_value(&obj, "spec.other", &sf)
                .unwrap_err()
                .to_string(),
            "field label not supported: spec.other"
        );
        let sel = parse("spec.size=3,spec.on=true,spec.missing=").unwrap();
        assert!(sel.matches_custom_resource(&obj, &sf).unwrap());
        let sel = parse("spec.color!=blue").unwrap();
        assert!(!sel.matches_custom_resource(&obj, &sf).unwrap());
    }
}
