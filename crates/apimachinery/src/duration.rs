//! Go's `time.Duration` in text: `time.ParseDuration`, which kube's flags, query
//! parameters and CEL's `duration()` accept, and the lenient form kube-openapi takes
//! for `format: duration` schema values.

use regex::Regex;
use std::sync::LazyLock;

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn go_parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let int_part = &rest[..int_len];
        rest = &rest[int_len..];
        let mut frac_part = "";
        if rest.starts_with('.') {
            rest = &rest[1..];
            let frac_len = rest.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &rest[..frac_len];
            rest = &rest[frac_len..];
        }
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        let unit_len = rest
            .char_indices()
            .find(|(_, c)| *c == '.' || c.is_ascii_digit())
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let unit: u128 = match &rest[..unit_len] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[unit_len..];
        let whole: u128 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().ok()?
        };
        let mut v = whole.checked_mul(unit)?;
        if !frac_part.is_empty() {
            let digits = frac_part.len().min(30) as u32;
            let f: u128 = frac_part[..digits as usize].parse().ok()?;
            v += f * unit / 10u128.pow(digits);
        }
        total = total.checked_add(v)?;
        if total > i64::MAX as u128 + u128::from(neg) {
            return None;
        }
    }
    let total = i128::try_from(total).ok()?;
    i64::try_from(if neg { -total } else { total }).ok()
}

/// A `format: duration` schema value: Go's durations, then kube-openapi's `<n> <unit>`.
pub fn parse_schema_duration(s: &str) -> Option<i64> {
    if let Some(d) = go_parse_duration(s) {
        return Some(d);
    }
    static LENIENT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"^(\d+)\s*(ns|us|µs|ms|s|m|h|d|w|nanoseconds?|microseconds?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?|sec|min|hr)$").ok()
    });
    let caps = LENIENT.as_ref()?.captures(s.trim())?;
    let n: i64 = caps.get(1)?.as_str().parse().ok()?;
    let unit: i64 = match caps.get(2)?.as_str() {
        "ns" | "nanosecond" | "nanoseconds" => 1,
        "us" | "µs" | "microsecond" | "microseconds" => 1_000,
        "ms" | "millisecond" | "milliseconds" => 1_000_000,
        "s" | "sec" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hr" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => 604_800_000_000_000,
    };
    n.checked_mul(unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_parse_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(go_parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(go_parse_duration("-2ms"), Some(-2_000_000));
        assert_eq!(go_parse_duration("0"), Some(0));
        assert_eq!(go_parse_duration("1"), None);
        assert_eq!(go_parse_duration("1d"), None);
    }
}
