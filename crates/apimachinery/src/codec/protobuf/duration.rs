//! meta/v1 `Duration` in JSON: Go's `time.Duration` string (`1h0m0s`, `1.5s`, `300ms`).

/// Go's `Duration.String` of `nanos`.
pub fn format(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let u = nanos.unsigned_abs();
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}µs", frac(u, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 6))
    } else {
        let secs = frac(u % 60_000_000_000, 9);
        let mins = u / 60_000_000_000;
        match (mins / 60, mins % 60) {
            (0, 0) => format!("{secs}s"),
            (0, m) => format!("{m}m{secs}s"),
            (h, m) => format!("{h}h{m}m{secs}s"),
        }
    };
    format!("{sign}{body}")
}

fn frac(v: u64, digits: u32) -> String {
    let p = 10u64.pow(digits);
    let (int, f) = (v / p, v % p);
    if f == 0 {
        return int.to_string();
    }
    let f = format!("{f:0width$}", width = digits as usize);
    format!("{int}.{}", f.trim_end_matches('0'))
}

/// Go's `time.ParseDuration`, in nanoseconds; `None` when malformed or out of range.
pub fn parse(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += number * unit;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    Some(if neg { -(total as i64) } else { total as i64 })
}
