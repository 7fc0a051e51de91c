//! Numbers of unstructured JSON as kube holds them (Go's `int64` or `float64` behind
//! serde_json's `Number`): their order, in the two ways kube compares them.

use serde_json::Number;
use std::cmp::Ordering;

/// How an integer and a float compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MixedNumbers {
    /// By value only, `1 == 1.0`: structured-merge-diff's `value.Compare` (apply).
    ByValue,
    /// By value, then the integer first, `1 < 1.0`: a total order that agrees with Go's
    /// `reflect.DeepEqual` (and serde_json's `==`), where `int64(1) != float64(1)`.
    IntegerFirst,
}

/// The order of two JSON numbers: integers exactly (i64 and u64 alike), floats and
/// mixed pairs by value, mixed pairs of equal value as `mixed` says.
pub fn compare_numbers(x: &Number, y: &Number, mixed: MixedNumbers) -> Ordering {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    let (xi, yi) = (int(x), int(y));
    if let (Some(a), Some(b)) = (xi, yi) {
        return a.cmp(&b);
    }
    let by_value = x
        .as_f64()
        .unwrap_or(0.0)
        .partial_cmp(&y.as_f64().unwrap_or(0.0))
        .unwrap_or(Ordering::Equal);
    match mixed {
        MixedNumbers::ByValue => by_value,
        // `false < true`: the integer (not a float) comes first.
        MixedNumbers::IntegerFirst => by_value.then(xi.is_none().cmp(&yi.is_none())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: serde_json::Value) -> Number {
        match v {
            serde_json::Value::Number(n) => n,
            other => panic!("not a number: {other}"),
        }
    }

    #[test]
    fn integers_compare_exactly_across_i64_and_u64() {
        let big = n(serde_json::json!(u64::MAX));
        let neg = n(serde_json::json!(-1));
        for mixed in [MixedNumbers::ByValue, MixedNumbers::IntegerFirst] {
            assert_eq!(compare_numbers(&neg, &big, mixed), Ordering::Less);
            assert_eq!(compare_numbers(&big, &big, mixed), Ordering::Equal);
        }
    }

    #[test]
    fn an_integer_and_an_equal_float_differ_only_for_deep_equality() {
        let (one, one_f) = (n(serde_json::json!(1)), n(serde_json::json!(1.0)));
        assert_eq!(
            compare_numbers(&one, &one_f, MixedNumbers::ByValue),
            Ordering::Equal
        );
        assert_eq!(
            compare_numbers(&one, &one_f, MixedNumbers::IntegerFirst),
            Ordering::Less
        );
        assert_eq!(
            compare_numbers(&one_f, &one, MixedNumbers::IntegerFirst),
            Ordering::Greater
        );
        let two_f = n(serde_json::json!(2.0));
        for mixed in [MixedNumbers::ByValue, MixedNumbers::IntegerFirst] {
            assert_eq!(compare_numbers(&two_f, &one, mixed), Ordering::Greater);
            assert_eq!(compare_numbers(&one_f, &two_f, mixed), Ordering::Less);
        }
    }
}
