//! String formats of CRD schemas, checked as kube-apiserver checks them.
//!
//! kube validates `format` with kube-openapi's default `strfmt` registry, after
//! stripping every format a CRD may not use (`StripUnsupportedFormatsPostProcessor`).
//! Format names are compared with `-` removed (`date-time` == `datetime`), and an
//! unknown format is ignored. Each checker below mirrors the Go function kube uses
//! (`net/url.ParseRequestURI`, `net/mail.ParseAddress`, `time.Parse`, ...).

use regex::Regex;
use std::sync::LazyLock;

/// Normalised names (without `-`) of the string formats CRD schemas may use in kube 1.36.
const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// A format name as kube's registry compares it: every `-` removed.
pub fn normalize_format_name(format: &str) -> String {
    format.replace('-', "")
}

/// True when kube validates string values against `format` (after name normalisation).
pub fn is_known_format(format: &str) -> bool {
    // Checked for every string a write validates: a name without dashes is its own
    // normal form.
    if !format.contains('-') {
        return SUPPORTED_FORMATS.contains(&format);
    }
    SUPPORTED_FORMATS.contains(&normalize_format_name(format).as_str())
}

/// The format kube keeps on a schema node of type `schema_type` (`""` when it strips it).
///
/// Integer nodes keep `int32`/`int64`, number nodes `float`/`double`, string and
/// untyped nodes the supported string formats; every other combination is dropped.
pub fn strip_unsupported_format<'a>(schema_type: &str, format: &'a str) -> &'a str {
    let keep = match schema_type {
        "" | "string" => is_known_format(format),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format
    } else {
        ""
    }
}

/// True when `s` is valid for `format`; unknown formats accept everything.
pub fn check_format(format: &str, s: &str) -> bool {
    match normalize_format_name(format).as_str() {
        "bsonobjectid" => is_bson_object_id(s),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => is_hostname(s),
        "ipv4" => parse_ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => parse_ip_strict(s).is_some() && s.contains(':'),
        "cidr" => is_cidr_sloppy(s),
        "mac" => is_mac(s),
        "uuid" => UUID.is_match(s),
        "uuid3" => UUID3.is_match(s),
        "uuid4" => UUID4.is_match(s),
        "uuid5" => UUID5.is_match(s),
        "isbn" => is_isbn(s, 10) || is_isbn(s, 13),
        "isbn10" => is_isbn(s, 10),
        "isbn13" => is_isbn(s, 13),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && SSN.is_match(s),
        "hexcolor" => HEXCOLOR.is_match(s),
        "rgbcolor" => RGBCOLOR.is_match(s),
        "byte" => BASE64.is_match(s),
        "password" => true,
        "date" => is_date(s),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        "k8sshortname" => s.len() <= 63 && K8S_SHORT_NAME.is_match(s),
        "k8slongname" => s.len() <= 253 && K8S_LONG_NAME.is_match(s),
        _ => true,
    }
}

/// Compile one of the fixed patterns below; they are literals known to be valid.
fn fixed(pattern: &str) -> Regex {
    // The patterns are literals of this file (covered by the unit tests), never request data.
    regex::RegexBuilder::new(pattern)
        .size_limit(64 << 20)
        .build()
        .expect("format pattern literal compiles")
}

// Go's `\d` and `\s` are ASCII-only, so the patterns spell the classes out.
static UUID: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID3: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static HOSTNAME: LazyLock<Regex> = LazyLock::new(|| {
    fixed(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static CREDIT_CARD: LazyLock<Regex> = LazyLock::new(|| {
    fixed(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static ISBN10: LazyLock<Regex> = LazyLock::new(|| fixed(r"^(?:[0-9]{9}X|[0-9]{10})$"));
static ISBN13: LazyLock<Regex> = LazyLock::new(|| fixed(r"^(?:[0-9]{13})$"));
static HEXCOLOR: LazyLock<Regex> = LazyLock::new(|| fixed(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGBCOLOR: LazyLock<Regex> = LazyLock::new(|| {
    fixed(
        r"^rgb\([\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*,[\t\n\f\r ]*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])[\t\n\f\r ]*\)$",
    )
});
static BASE64: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static SSN: LazyLock<Regex> = LazyLock::new(|| fixed(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static DATE_TIME_CLOCK: LazyLock<Regex> = LazyLock::new(|| {
    fixed(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static DURATION_PART: LazyLock<Regex> =
    LazyLock::new(|| fixed(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))"));
static K8S_SHORT_NAME: LazyLock<Regex> =
    LazyLock::new(|| fixed(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"));
static K8S_LONG_NAME: LazyLock<Regex> =
    LazyLock::new(|| fixed(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"));

/// `bsonobjectid`: 24 hex digits (12 bytes), as `hex.DecodeString` + length check.
fn is_bson_object_id(s: &str) -> bool {
    s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// `hostname`: kube-openapi's hostname pattern, at most 255 bytes, labels at most 63 bytes.
fn is_hostname(s: &str) -> bool {
    HOSTNAME.is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// `isbn10` / `isbn13` with their check digits, ignoring ASCII spaces and dashes.
fn is_isbn(s: &str, version: u32) -> bool {
    let sanitized: Vec<u8> = s
        .bytes()
        .filter(|b| !matches!(b, b'-' | b'\t' | b'\n' | b'\x0c' | b'\r' | b' '))
        .collect();
    let text = String::from_utf8_lossy(&sanitized);
    let digit = |i: usize| i64::from(sanitized[i]) - i64::from(b'0');
    if version == 10 {
        if !ISBN10.is_match(&text) {
            return false;
        }
        let mut checksum: i64 = (0..9).map(|i| (i as i64 + 1) * digit(i)).sum();
        checksum += if sanitized[9] == b'X' {
            100
        } else {
            10 * digit(9)
        };
        checksum % 11 == 0
    } else {
        if !ISBN13.is_match(&text) {
            return false;
        }
        let checksum: i64 = (0..12)
            .map(|i| if i % 2 == 0 { digit(i) } else { 3 * digit(i) })
            .sum();
        digit(12) - ((10 - (checksum % 10)) % 10) == 0
    }
}

/// `creditcard`: the digits (everything else dropped) match a card pattern and pass Luhn.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    if !CREDIT_CARD.is_match(&digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for b in digits.bytes().rev() {
        let mut n = u32::from(b - b'0');
        if double {
            n *= 2;
            if n >= 10 {
                n = n % 10 + 1;
            }
        }
        sum += n;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// `date`: Go's `time.Parse("2006-01-02", s)`, which checks month and day ranges.
fn is_date(s: &str) -> bool {
    parse_full_date(s).is_some()
}

/// Parse `YYYY-MM-DD` exactly as Go's layout `2006-01-02` does.
fn parse_full_date(s: &str) -> Option<(i64, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &b[r];
        if part.iter().all(u8::is_ascii_digit) {
            Some(part.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
        } else {
            None
        }
    };
    let year = i64::from(num(0..4)?);
    let month = num(5..7)?;
    let day = num(8..10)?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(month, year) {
        return None;
    }
    Some((year, month, day))
}

/// Days in a month of the proleptic Gregorian calendar.
pub(crate) fn days_in_month(month: u32, year: i64) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `date-time`: kube-openapi's `IsDateTime` (a full date, `t`, then a clock with zone).
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(caps) = DATE_TIME_CLOCK.captures(parts[1]) else {
        return false;
    };
    let field = |i: usize| caps.get(i).map_or("", |m| m.as_str());
    field(1) <= "23" && field(2) <= "59" && field(3) <= "59"
}

/// `duration`: Go's `time.ParseDuration`, or kube-openapi's lenient `<n> <unit>` matcher.
fn is_duration(s: &str) -> bool {
    if go_parse_duration(s) {
        return true;
    }
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for caps in DURATION_PART.captures_iter(s) {
        let digits = caps.get(2).map_or("", |m| m.as_str());
        // strconv.Atoi fails on overflow, which fails the whole parse.
        if digits.parse::<i64>().is_err() {
            return false;
        }
        let unit = caps.get(3).map_or("", |m| m.as_str()).trim().to_lowercase();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, variant) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(variant)) || variant.to_lowercase() == unit {
                    ok = true;
                }
            }
        }
    }
    ok
}

/// Go's `time.ParseDuration` acceptance: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with known units.
fn go_parse_duration(orig: &str) -> bool {
    const UNITS: &[(&str, u64)] = &[
        ("ns", 1),
        ("us", 1_000),
        ("\u{b5}s", 1_000),
        ("\u{3bc}s", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ];
    let mut s = orig.as_bytes();
    let mut neg = false;
    if let Some(&c) = s.first() {
        if c == b'-' || c == b'+' {
            neg = c == b'-';
            s = &s[1..];
        }
    }
    if s == b"0" {
        return true;
    }
    if s.is_empty() {
        return false;
    }
    let limit: u64 = 1 << 63;
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return false;
        }
        // Consume [0-9]*
        let mut v: u64 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            if v > limit / 10 {
                return false;
            }
            v = v * 10 + u64::from(s[i] - b'0');
            if v > limit {
                return false;
            }
            i += 1;
        }
        let pre = i > 0;
        s = &s[i..];
        // Consume (\.[0-9]*)?
        let mut post = false;
        let mut frac: u64 = 0;
        let mut scale: f64 = 1.0;
        if s.first() == Some(&b'.') {
            s = &s[1..];
            let mut j = 0;
            let mut overflow = false;
            while j < s.len() && s[j].is_ascii_digit() {
                if !overflow {
                    if frac > (i64::MAX as u64) / 10 {
                        overflow = true;
                    } else {
                        let y = frac * 10 + u64::from(s[j] - b'0');
                        if y > limit {
                            overflow = true;
                        } else {
                            frac = y;
                            scale *= 10.0;
                        }
                    }
                }
                j += 1;
            }
            post = j > 0;
            s = &s[j..];
        }
        if !pre && !post {
            return false;
        }
        // Consume the unit: everything up to the next digit or '.'.
        let mut k = 0;
        while k < s.len() && !(s[k] == b'.' || s[k].is_ascii_digit()) {
            k += 1;
        }
        if k == 0 {
            return false;
        }
        let unit_bytes = &s[..k];
        s = &s[k..];
        let Some(&(_, unit)) = UNITS.iter().find(|(name, _)| name.as_bytes() == unit_bytes) else {
            return false;
        };
        if v > limit / unit {
            return false;
        }
        v *= unit;
        if frac > 0 {
            v += (frac as f64 * (unit as f64 / scale)) as u64;
            if v > limit {
                return false;
            }
        }
        total += v;
        if total > limit {
            return false;
        }
    }
    neg || total < limit
}

/// `mac`: Go's `net.ParseMAC` (6, 8 or 20 octets; `:`/`-` separated or dotted quads).
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8], sep: Option<u8>| -> bool {
        if x.len() > 2 {
            if let Some(e) = sep {
                if x[2] != e {
                    return false;
                }
            } else {
                return false;
            }
        }
        x.len() >= 2 && x[0].is_ascii_hexdigit() && x[1].is_ascii_hexdigit()
    };
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n).all(|i| hex2(&b[i * 3..], Some(b[2])))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n / 2).all(|i| {
            let x = i * 5;
            hex2(&b[x..x + 2], None) && hex2(&b[x + 2..], Some(b[4]))
        })
    } else {
        false
    }
}

/// The number in `base` (10: the forked `dtoi`, 16: `xtoi`) that `s` starts with, and
/// its length, as k8s.io/utils' forked net package reads it: none without a digit, none
/// once the value reaches 0xFFFFFF.
fn number_prefix(s: &[u8], base: u32) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while let Some(d) = s.get(i).and_then(|&c| char::from(c).to_digit(base)) {
        n = n * base + d;
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// IPv4 as k8s.io/utils' `ParseIPSloppy` reads it: leading zeros allowed.
fn parse_ipv4_sloppy(mut s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    for (i, slot) in out.iter_mut().enumerate() {
        if s.is_empty() {
            return None;
        }
        if i > 0 {
            if s[0] != b'.' {
                return None;
            }
            s = &s[1..];
        }
        let (n, c) = number_prefix(s, 10)?;
        if n > 0xFF {
            return None;
        }
        s = &s[c..];
        *slot = n as u8;
    }
    if s.is_empty() {
        Some(out)
    } else {
        None
    }
}

/// IPv6 as the forked Go parser reads it (embedded IPv4 may have leading zeros).
fn parse_ipv6_sloppy(mut s: &[u8]) -> Option<[u8; 16]> {
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.len() >= 2 && s[0] == b':' && s[1] == b':' {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let (n, c) = number_prefix(s, 16)?;
        if n > 0xFFFF {
            return None;
        }
        if c < s.len() && s[c] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return None;
            }
            if i + 4 > 16 {
                return None;
            }
            let v4 = parse_ipv4_sloppy(s)?;
            ip[i..i + 4].copy_from_slice(&v4);
            s = &[];
            i += 4;
            break;
        }
        ip[i] = (n >> 8) as u8;
        ip[i + 1] = n as u8;
        i += 2;
        s = &s[c..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return None;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    if i < 16 {
        let e = ellipsis?;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in ip.iter_mut().skip(e).take(n) {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return None;
    }
    Some(ip)
}

/// `ParseIPSloppy`: the first `.` or `:` decides between IPv4 and IPv6.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    let b = s.as_bytes();
    for &c in b {
        match c {
            b'.' => return parse_ipv4_sloppy(b).map(|_| ()),
            b':' => return parse_ipv6_sloppy(b).map(|_| ()),
            _ => {}
        }
    }
    None
}

/// `ParseCIDRSloppy`: address (IPv4 first, then IPv6), `/`, prefix length in range.
fn is_cidr_sloppy(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if parse_ipv4_sloppy(addr.as_bytes()).is_some() {
        32
    } else if parse_ipv6_sloppy(addr.as_bytes()).is_some() {
        128
    } else {
        return false;
    };
    match number_prefix(mask.as_bytes(), 10) {
        Some((n, used)) => used == mask.len() && n <= bits,
        None => false,
    }
}

/// Strict IPv4 as Go's `net/netip`: four decimal fields, no leading zeros.
fn parse_ipv4_strict(s: &[u8]) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let fields: Vec<&[u8]> = s.split(|&c| c == b'.').collect();
    if fields.len() != 4 {
        return None;
    }
    for (slot, f) in out.iter_mut().zip(fields) {
        if f.is_empty()
            || f.len() > 3
            || !f.iter().all(u8::is_ascii_digit)
            || (f.len() > 1 && f[0] == b'0')
        {
            return None;
        }
        let n = f.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0'));
        if n > 255 {
            return None;
        }
        *slot = n as u8;
    }
    Some(out)
}

/// Go's `net.ParseIP` (netip rules, no zone): used by the `ipv6` format.
fn parse_ip_strict(s: &str) -> Option<()> {
    let b = s.as_bytes();
    if !b.contains(&b':') {
        return parse_ipv4_strict(b).map(|_| ());
    }
    parse_ipv6_strict(b).map(|_| ())
}

/// IPv6 per `netip.ParseAddr`: 16-bit hex groups, one `::`, optional trailing IPv4.
fn parse_ipv6_strict(s: &[u8]) -> Option<()> {
    if s.contains(&b'%') {
        return None;
    }
    let (head, tail) = match find_double_colon(s) {
        Some(i) => (&s[..i], Some(&s[i + 2..])),
        None => (s, None),
    };
    let count_groups = |part: &[u8], allow_v4_last: bool| -> Option<usize> {
        if part.is_empty() {
            return Some(0);
        }
        let groups: Vec<&[u8]> = part.split(|&c| c == b':').collect();
        let mut n = 0;
        for (i, g) in groups.iter().enumerate() {
            let last = i + 1 == groups.len();
            if last && allow_v4_last && g.contains(&b'.') {
                parse_ipv4_strict(g)?;
                n += 2;
                continue;
            }
            // Go's netip bounds the value, not the digit count (leading zeros pass).
            if g.is_empty() || !g.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let significant = g.iter().skip_while(|&&c| c == b'0').count();
            if significant > 4 {
                return None;
            }
            n += 1;
        }
        Some(n)
    };
    match tail {
        None => (count_groups(head, true)? == 8).then_some(()),
        Some(t) => {
            if find_double_colon(t).is_some() {
                return None;
            }
            let n = count_groups(head, false)? + count_groups(t, true)?;
            (n < 8).then_some(())
        }
    }
}

fn find_double_colon(s: &[u8]) -> Option<usize> {
    s.windows(2).position(|w| w == b"::")
}

/// `uri`: Go's `url.ParseRequestURI` acceptance.
fn is_request_uri(raw: &str) -> bool {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) || raw.is_empty() {
        return false;
    }
    if raw == "*" {
        return true;
    }
    // Split off a scheme (letters, then letters/digits/+-.) ended by ':'.
    let bytes = raw.as_bytes();
    let mut scheme = "";
    let mut rest = raw;
    for (i, &c) in bytes.iter().enumerate() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || c == b'+' || c == b'-' || c == b'.' {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == b':' {
            if i == 0 {
                return false;
            }
            scheme = &raw[..i];
            rest = &raw[i + 1..];
        }
        break;
    }
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        rest = &rest[..rest.len() - 1];
    } else if let Some((before, _query)) = rest.split_once('?') {
        rest = before;
    }
    if !rest.starts_with('/') {
        // Opaque URIs (`mailto:x`) are accepted; relative references are not.
        return !scheme.is_empty();
    }
    if !scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        if !valid_authority(authority) {
            return false;
        }
        rest = path;
    }
    unescape_ok(rest, Escape::Path)
}

#[derive(Clone, Copy, PartialEq)]
enum Escape {
    Path,
    Host,
    Zone,
    UserPassword,
}

/// Go's `unescape` validity check for one URL component.
fn unescape_ok(s: &str, mode: Escape) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                return false;
            }
            let high = (b[i + 1] as char).to_digit(16).unwrap_or(0);
            if mode == Escape::Host && high < 8 && &s[i..i + 3] != "%25" {
                return false;
            }
            if mode == Escape::Zone {
                let v = high * 16 + (b[i + 2] as char).to_digit(16).unwrap_or(0);
                if &s[i..i + 3] != "%25" && v != u32::from(b' ') && host_should_escape(v as u8) {
                    return false;
                }
            }
            i += 3;
        } else {
            if (mode == Escape::Host || mode == Escape::Zone)
                && b[i] < 0x80
                && host_should_escape(b[i])
            {
                return false;
            }
            i += 1;
        }
    }
    true
}

/// Go's `shouldEscape(c, encodeHost)` for ASCII bytes.
fn host_should_escape(c: u8) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    !matches!(
        c,
        b'!' | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b':'
            | b'['
            | b']'
            | b'<'
            | b'>'
            | b'"'
            | b'-'
            | b'_'
            | b'.'
            | b'~'
    )
}

/// Go's `parseAuthority`: optional userinfo, then a host with an optional port.
fn valid_authority(authority: &str) -> bool {
    let (user, host) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    if !valid_host(host) {
        return false;
    }
    match user {
        None => true,
        Some(u) => {
            let valid_chars = u.chars().all(|r| {
                r.is_ascii_alphanumeric()
                    || matches!(
                        r,
                        '-' | '.'
                            | '_'
                            | ':'
                            | '~'
                            | '!'
                            | '$'
                            | '&'
                            | '\''
                            | '('
                            | ')'
                            | '*'
                            | '+'
                            | ','
                            | ';'
                            | '='
                            | '%'
                            | '@'
                    )
            });
            valid_chars && unescape_ok(u, Escape::UserPassword)
        }
    }
}

/// Go's `parseHost` validity (IP literals in brackets, optional numeric port).
fn valid_host(host: &str) -> bool {
    let valid_port = |p: &str| {
        p.is_empty() || (p.starts_with(':') && p[1..].bytes().all(|b| b.is_ascii_digit()))
    };
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return false;
        };
        if !valid_port(&host[i + 1..]) {
            return false;
        }
        if let Some(zone) = host[..i].find("%25") {
            return unescape_ok(&host[..zone], Escape::Host)
                && unescape_ok(&host[zone..i], Escape::Zone)
                && unescape_ok(&host[i..], Escape::Host);
        }
    } else if let Some(i) = host.rfind(':') {
        if !valid_port(&host[i..]) {
            return false;
        }
    }
    unescape_ok(host, Escape::Host)
}

/// `email`: Go's `net/mail.ParseAddress` succeeds with a non-empty address.
fn is_email(s: &str) -> bool {
    let mut p = MailParser { s };
    p.parse_single_address()
        .is_some_and(|addr| !addr.is_empty())
}

/// A port of Go's `net/mail` address parser, reduced to accept/reject.
struct MailParser<'a> {
    s: &'a str,
}

impl<'a> MailParser<'a> {
    fn parse_single_address(&mut self) -> Option<String> {
        let addrs = self.parse_address(true)?;
        if !self.skip_cfws() || !self.s.is_empty() || addrs.len() != 1 {
            return None;
        }
        addrs.into_iter().next()
    }

    fn parse_address(&mut self, handle_group: bool) -> Option<Vec<String>> {
        self.skip_space();
        if self.s.is_empty() {
            return None;
        }
        if let Some(spec) = self.consume_addr_spec() {
            self.skip_space();
            if self.peek() == Some(b'(') {
                self.consume_display_name_comment()?;
            }
            return Some(vec![spec]);
        }
        // A display name (only its validity matters here).
        if self.peek() != Some(b'<') {
            self.consume_phrase()?;
        }
        self.skip_space();
        if handle_group && self.consume(b':') {
            return self.consume_group_list();
        }
        if !self.consume(b'<') {
            return None;
        }
        let spec = self.consume_addr_spec()?;
        if !self.consume(b'>') {
            return None;
        }
        Some(vec![spec])
    }

    fn consume_group_list(&mut self) -> Option<Vec<String>> {
        let mut group = Vec::new();
        self.skip_space();
        if self.consume(b';') {
            self.skip_cfws();
            return Some(group);
        }
        loop {
            self.skip_space();
            group.extend(self.parse_address(false)?);
            if !self.skip_cfws() {
                return None;
            }
            if self.consume(b';') {
                self.skip_cfws();
                break;
            }
            if !self.consume(b',') {
                return None;
            }
        }
        Some(group)
    }

    fn consume_addr_spec(&mut self) -> Option<String> {
        let orig = self.s;
        let result = self.consume_addr_spec_inner();
        if result.is_none() {
            self.s = orig;
        }
        result
    }

    fn consume_addr_spec_inner(&mut self) -> Option<String> {
        self.skip_space();
        if self.s.is_empty() {
            return None;
        }
        let local = if self.peek() == Some(b'"') {
            let q = self.consume_quoted_string()?;
            if q.is_empty() {
                return None;
            }
            q
        } else {
            self.consume_atom(true, false)?
        };
        if !self.consume(b'@') {
            return None;
        }
        self.skip_space();
        if self.s.is_empty() {
            return None;
        }
        let domain = if self.peek() == Some(b'[') {
            self.consume_domain_literal()?
        } else {
            self.consume_atom(true, false)?
        };
        Some(format!("{local}@{domain}"))
    }

    fn consume_domain_literal(&mut self) -> Option<String> {
        if !self.consume(b'[') {
            return None;
        }
        let mut dtext = String::new();
        loop {
            let c = self.s.chars().next()?;
            if c == ']' {
                break;
            }
            if c == '[' || c == '\\' || !is_vchar(c) {
                return None;
            }
            dtext.push(c);
            self.s = &self.s[c.len_utf8()..];
        }
        if !self.consume(b']') {
            return None;
        }
        parse_ip_strict(&dtext)?;
        Some(format!("[{dtext}]"))
    }

    fn consume_phrase(&mut self) -> Option<String> {
        let mut words: Vec<String> = Vec::new();
        let mut failed = false;
        loop {
            self.skip_space();
            if self.s.is_empty() {
                break;
            }
            let word = if self.peek() == Some(b'"') {
                self.consume_quoted_string()
            } else {
                self.consume_atom(true, true).and_then(|w| {
                    if rfc2047_charset_error(&w) {
                        None
                    } else {
                        Some(w)
                    }
                })
            };
            match word {
                Some(w) => words.push(w),
                None => {
                    failed = true;
                    break;
                }
            }
        }
        if failed && words.is_empty() {
            return None;
        }
        Some(words.join(" "))
    }

    fn consume_quoted_string(&mut self) -> Option<String> {
        let mut out = String::new();
        let mut escaped = false;
        let mut chars = self.s.char_indices().skip(1);
        loop {
            let (i, r) = chars.next()?;
            if escaped {
                if !is_vchar(r) && !is_wsp(r) {
                    return None;
                }
                out.push(r);
                escaped = false;
            } else if is_qtext(r) || is_wsp(r) {
                out.push(r);
            } else if r == '"' {
                self.s = &self.s[i + 1..];
                return Some(out);
            } else if r == '\\' {
                escaped = true;
            } else {
                return None;
            }
        }
    }

    fn consume_atom(&mut self, dot: bool, permissive: bool) -> Option<String> {
        let end = self
            .s
            .char_indices()
            .find(|&(_, r)| !is_atext(r, dot, permissive))
            .map_or(self.s.len(), |(i, _)| i);
        if end == 0 {
            return None;
        }
        let atom = &self.s[..end];
        if !permissive && (atom.starts_with('.') || atom.contains("..") || atom.ends_with('.')) {
            return None;
        }
        self.s = &self.s[end..];
        Some(atom.to_string())
    }

    fn consume_display_name_comment(&mut self) -> Option<()> {
        if !self.consume(b'(') {
            return None;
        }
        let comment = self.consume_comment()?;
        if comment
            .split([' ', '\t'])
            .filter(|w| !w.is_empty())
            .any(rfc2047_charset_error)
        {
            return None;
        }
        Some(())
    }

    fn consume(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.s = &self.s[1..];
            true
        } else {
            false
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().first().copied()
    }

    fn skip_space(&mut self) {
        self.s = self.s.trim_start_matches([' ', '\t']);
    }

    fn skip_cfws(&mut self) -> bool {
        self.skip_space();
        while self.consume(b'(') {
            if self.consume_comment().is_none() {
                return false;
            }
            self.skip_space();
        }
        true
    }

    fn consume_comment(&mut self) -> Option<String> {
        let mut depth = 1;
        let mut comment = Vec::new();
        let mut b = self.s.as_bytes();
        while !b.is_empty() && depth > 0 {
            if b[0] == b'\\' && b.len() > 1 {
                b = &b[1..];
            } else if b[0] == b'(' {
                depth += 1;
            } else if b[0] == b')' {
                depth -= 1;
            }
            if depth > 0 {
                comment.push(b[0]);
            }
            b = &b[1..];
        }
        let consumed = self.s.len() - b.len();
        // A comment may end inside a multi-byte rune only on invalid input; clamp to a boundary.
        let mut cut = consumed;
        while !self.s.is_char_boundary(cut) {
            cut += 1;
        }
        self.s = &self.s[cut..];
        (depth == 0).then(|| String::from_utf8_lossy(&comment).into_owned())
    }
}

fn is_atext(r: char, dot: bool, permissive: bool) -> bool {
    match r {
        '.' => dot,
        '(' | ')' | '[' | ']' | ';' | '@' | '\\' | ',' => permissive,
        '<' | '>' | '"' | ':' => false,
        _ => is_vchar(r),
    }
}

fn is_qtext(r: char) -> bool {
    r != '\\' && r != '"' && is_vchar(r)
}

fn is_vchar(r: char) -> bool {
    ('!'..='~').contains(&r) || (r as u32) >= 0x80
}

fn is_wsp(r: char) -> bool {
    r == ' ' || r == '\t'
}

/// True for an RFC 2047 encoded word that decodes but names a charset Go cannot convert.
fn rfc2047_charset_error(word: &str) -> bool {
    if word.len() < 8
        || !word.starts_with("=?")
        || !word.ends_with("?=")
        || word.matches('?').count() != 4
    {
        return false;
    }
    let inner = &word[2..word.len() - 2];
    let mut parts = inner.splitn(3, '?');
    let (Some(charset), Some(enc), Some(text)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if enc.len() != 1 || charset.is_empty() {
        return false;
    }
    let decodes = match enc.as_bytes()[0] {
        b'B' | b'b' => is_std_base64(text),
        b'Q' | b'q' => is_q_encoding(text),
        _ => false,
    };
    if !decodes {
        return false;
    }
    let cs = charset.to_ascii_lowercase();
    !(cs == "utf-8" || cs == "iso-8859-1" || cs == "us-ascii")
}

fn is_std_base64(s: &str) -> bool {
    let b = s.as_bytes();
    if !b.len().is_multiple_of(4) {
        return false;
    }
    let pad = b.iter().rev().take_while(|&&c| c == b'=').count();
    pad <= 2
        && b[..b.len() - pad]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

fn is_q_encoding(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'=' => {
                if i + 2 >= b.len() {
                    return false;
                }
                if !b[i + 1].is_ascii_hexdigit() || !b[i + 2].is_ascii_hexdigit() {
                    return false;
                }
                i += 3;
            }
            c if (b' '..=b'~').contains(&c) || c == b'\n' || c == b'\r' || c == b'\t' => i += 1,
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_and_unknown_formats_accept_everything() {
        assert!(is_known_format("date-time"));
        assert!(is_known_format("datetime"));
        assert!(is_known_format("k8s-short-name"));
        assert!(!is_known_format("int32"));
        assert!(!is_known_format("quantity"));
        assert!(check_format("no-such-format", "anything"));
        assert_eq!(strip_unsupported_format("string", "date-time"), "date-time");
        assert_eq!(strip_unsupported_format("", "email"), "email");
        assert_eq!(strip_unsupported_format("string", "int32"), "");
        assert_eq!(strip_unsupported_format("integer", "int32"), "int32");
        assert_eq!(strip_unsupported_format("integer", "date"), "");
        assert_eq!(strip_unsupported_format("number", "double"), "double");
        assert_eq!(strip_unsupported_format("boolean", "byte"), "");
    }
    /// Inputs checked against the Go functions kube uses (stdlib `net/url`, `net/mail`,
    /// `net/netip`, `time`, k8s.io/utils' sloppy IP parser, kube-openapi's strfmt).
    const GO_REFERENCE: &[(&str, &str, bool)] = &[
        ("bsonobjectid", "507f1f77bcf86cd799439011", true),
        ("bsonobjectid", "507F1F77BCF86CD799439011", true),
        ("bsonobjectid", "507f1f77bcf86cd79943901", false),
        ("bsonobjectid", "zz7f1f77bcf86cd799439011", false),
        ("byte", "aGVsbG8=", true),
        ("byte", "aGVsbG8", false),
        ("byte", "", false),
        ("byte", "aGk=", true),
        ("byte", "a+/=", true),
        ("byte", "####", false),
        ("cidr", "10.0.0.0/8", true),
        ("cidr", "10.0.0.0/33", false),
        ("cidr", "010.0.0.0/8", true),
        ("cidr", "::/0", true),
        ("cidr", "2001:db8::/129", false),
        ("cidr", "10.0.0.0", false),
        ("cidr", "10.0.0.0/08", true),
        ("cidr", "10.0.0.0/+8", false),
        ("cidr", "fe80::1/64", true),
        ("creditcard", "4111 1111 1111 1111", true),
        ("creditcard", "4111111111111112", false),
        ("creditcard", "5500-0000-0000-0004", true),
        ("creditcard", "abc", false),
        ("date", "2024-02-29", true),
        ("date", "2023-02-29", false),
        ("date", "2024-13-01", false),
        ("date", "2024-1-01", false),
        ("date", "2024-01-01T00:00:00Z", false),
        ("date", "0000-01-01", true),
        ("date", "2024-04-31", false),
        ("date-time", "2024-01-02T03:04:05Z", true),
        ("date-time", "2024-01-02t03:04:05z", true),
        ("date-time", "2024-01-02T03:04:05.123+01:00", true),
        ("date-time", "2024-01-02 03:04:05Z", false),
        ("date-time", "2024-01-02T24:00:00Z", false),
        ("date-time", "2024-01-02T03:04:05", false),
        ("date-time", "abc", false),
        ("date-time", "2024-01-02T03:04:05Zt", true),
        ("date-time", "2024-01-02T03:04:60Z", false),
        ("duration", "1h", true),
        ("duration", "1h30m", true),
        ("duration", "1.5h", true),
        ("duration", "-3s", true),
        ("duration", "0", true),
        ("duration", "", false),
        ("duration", "1", false),
        ("duration", "5 days", true),
        ("duration", "abc 3 weeks xyz", true),
        ("duration", "1d", true),
        ("duration", "10 min", true),
        ("duration", "2 hours", true),
        ("duration", "3µs", true),
        ("duration", "3μs", true),
        ("duration", "1x", false),
        ("duration", "99999999999999999999s", false),
        ("duration", "9223372036854775807ns", true),
        ("duration", "9223372036854775808ns", false),
        ("duration", ".5s", true),
        ("duration", "1.s", true),
        ("duration", "+5m", true),
        ("email", "a@b.com", true),
        ("email", "John Doe <john@example.com>", true),
        ("email", "john@", false),
        ("email", "@example.com", false),
        ("email", "a.b@c", true),
        ("email", "a..b@c.com", false),
        ("email", "\"quoted name\"@example.com", true),
        ("email", "plain", false),
        ("email", "a@b.com (comment)", true),
        ("email", "<a@b.com>", true),
        ("email", "a@b.com, c@d.com", false),
        ("email", "group: a@b.com;", true),
        ("email", "group: a@b.com, c@d.com;", false),
        ("email", "Joe <joe@x>", true),
        ("email", " a@b.com ", true),
        ("email", "a@b.com>", false),
        ("email", "ünï@ex.com", true),
        ("email", ".a@b.com", false),
        ("email", "a.@b.com", false),
        ("email", "a@b..com", false),
        ("hexcolor", "#fff", true),
        ("hexcolor", "fff", true),
        ("hexcolor", "#ffff", false),
        ("hexcolor", "#A0B1C2", true),
        ("hexcolor", "#g00", false),
        ("hostname", "example.com", true),
        ("hostname", "localhost", true),
        ("hostname", "a", true),
        ("hostname", "-bad.com", false),
        ("hostname", "ex_ample.com", false),
        ("hostname", "xn--bcher-kva.example", true),
        ("hostname", "münchen.de", true),
        ("hostname", "a.b", false),
        ("hostname", "1.2.3.4", false),
        ("hostname", "foo..bar", false),
        ("hostname", "a-.com", false),
        ("hostname", "host-", false),
        ("hostname", "UPPER.Example.COM", true),
        ("hostname", "a.b.c1", false),
        ("hostname", "123", true),
        ("ipv4", "1.2.3.4", true),
        ("ipv4", "001.002.003.004", true),
        ("ipv4", "256.1.1.1", false),
        ("ipv4", "1.2.3", false),
        ("ipv4", "::ffff:1.2.3.4", true),
        ("ipv4", "1.2.3.4.5", false),
        ("ipv4", "", false),
        ("ipv4", "1.2.3.04", true),
        ("ipv4", " 1.2.3.4", false),
        ("ipv4", "0000000001.2.3.4", true),
        ("ipv6", "::1", true),
        ("ipv6", "2001:db8::1", true),
        ("ipv6", "::ffff:1.2.3.4", true),
        ("ipv6", "1.2.3.4", false),
        ("ipv6", "fe80::1%eth0", false),
        ("ipv6", "::", true),
        ("ipv6", "1:2:3:4:5:6:7:8", true),
        ("ipv6", "1:2:3:4:5:6:7:8:9", false),
        ("ipv6", "::ffff:01.2.3.4", false),
        ("ipv6", "00001::", true),
        ("ipv6", "1::2::3", false),
        ("ipv6", "1:2:3:4:5:6:1.2.3.4", true),
        ("ipv6", "gg::1", false),
        ("ipv6", ":::", false),
        ("isbn", "0321751043", true),
        ("isbn", "978-0321751041", true),
        ("isbn", "0321751044", false),
        ("isbn", "978 0 321 75104 1", true),
        ("isbn", "123456789X", true),
        ("isbn10", "0321751043", true),
        ("isbn10", "978-0321751041", false),
        ("isbn10", "123456789X", true),
        ("isbn13", "978-0321751041", true),
        ("isbn13", "0321751043", false),
        ("k8s-short-name", "abc", true),
        ("k8s-short-name", "a-b", true),
        ("k8s-short-name", "-a", false),
        ("k8s-short-name", "A", false),
        ("k8s-short-name", "a.b", false),
        ("mac", "00:00:5e:00:53:01", true),
        ("mac", "00-00-5e-00-53-01", true),
        ("mac", "0000.5e00.5301", true),
        ("mac", "00:00:5e:00:53", false),
        ("mac", "00:00:5e:00:53:01:02:03", true),
        ("mac", "00:00:5e-00:53:01", false),
        ("mac", "zz:00:5e:00:53:01", false),
        ("mac", "00005e005301", false),
        ("rgbcolor", "rgb(255,255,255)", true),
        ("rgbcolor", "rgb( 0 , 10 , 200 )", true),
        ("rgbcolor", "rgb(256,0,0)", false),
        ("rgbcolor", "rgb(1,2)", false),
        ("ssn", "123-45-6789", true),
        ("ssn", "123 45 6789", true),
        ("ssn", "123456789", false),
        ("ssn", "123-45-678a", false),
        ("uri", "http://example.com", true),
        (
            "uri",
            "https://user:pw@example.com:8080/path?q=1#frag",
            true,
        ),
        ("uri", "/relative/path", true),
        ("uri", "relative", false),
        ("uri", "mailto:me@example.com", true),
        ("uri", "", false),
        ("uri", "*", true),
        ("uri", "http://exa mple.com", false),
        ("uri", "http://[::1]:80/x", true),
        ("uri", "http://%41.com/", false),
        ("uri", "http://x.com/%zz", false),
        ("uri", "http://x.com/%4", false),
        ("uri", ":nope", false),
        ("uri", "ftp://host/", true),
        ("uri", "http://host:port/", false),
        ("uri", "//host/path", true),
        ("uri", "a1+b.c:opaque", true),
        ("uri", "http://ex{ample.com/", false),
        ("uri", "http://host/a b", true),
        ("uri", "http://h\u{1}/", false),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
        ("uuid", "123E4567E89B12D3A456426614174000", true),
        ("uuid", "123e4567-e89b-12d3-a456-42661417400", false),
        ("uuid", "not-a-uuid", false),
        ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
        ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
    ];

    #[test]
    fn formats_match_go_reference_table() {
        let mismatches: Vec<String> = GO_REFERENCE
            .iter()
            .filter(|(f, s, ok)| check_format(f, s) != *ok)
            .map(|(f, s, ok)| format!("{f} {s:?}: expected {ok}"))
            .collect();
        assert!(mismatches.is_empty(), "{mismatches:#?}");
    }

    #[test]
    fn email_domain_literals_follow_current_go() {
        assert!(check_format("email", "a@[192.0.2.1]"));
        assert!(!check_format("email", "a@[not-an-ip]"));
    }
}
