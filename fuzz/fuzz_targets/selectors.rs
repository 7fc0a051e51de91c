//! Label and field selector parsing: never panics, and a parsed selector's string
//! form parses back to the same selector.
#![no_main]

use crd_apiserver::selector::{fields, labels};
use libfuzzer_sys::fuzz_target;

/// A field selector's terms as sorted (field, value, negated): a conjunction, so
/// neither the order of terms nor the spelling of `=`/`==` changes what it selects.
fn terms(s: &fields::FieldSelector) -> Vec<(String, String, bool)> {
    let mut terms: Vec<_> = s
        .requirements()
        .iter()
        .map(|r| {
            let negated = r.operator == fields::FieldOperator::NotEquals;
            (r.field.clone(), r.value.clone(), negated)
        })
        .collect();
    terms.sort();
    terms
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(selector) = labels::parse(text) {
        let printed = selector.to_string();
        let again = labels::parse(&printed);
        assert_eq!(
            again.as_ref().ok(),
            Some(&selector),
            "label selector {text:?} printed as {printed:?} parsed as {again:?}"
        );
        let _ = selector.matches_with(|k| (k.len() % 2 == 0).then_some("v"));
    }
    if let Ok(selector) = fields::parse(text) {
        let printed = selector.to_string();
        let again = fields::parse(&printed);
        assert_eq!(
            again.as_ref().ok().map(terms),
            Some(terms(&selector)),
            "field selector {text:?} printed as {printed:?} parsed as {again:?}"
        );
        let _ = selector.matches(|f| Some(f.to_owned()));
    }
    let _ = fields::unescape_value(text);
});
