//! kube's own CEL libraries with their value types: URLs, quantities, IP addresses and
//! CIDRs, semantic versions and named formats. Functions, errors and costs follow
//! `k8s.io/apiserver/pkg/cel/library`.

use super::decls::{self, FORMAT_NAMES};
use super::limits::{REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR};
use super::value::{self, EvalError, EvalResult, Extension, Map, Val};
use crate::schema::objectmeta;
use std::any::Any;
use std::cmp::Ordering;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::rc::Rc;

/// kube's fixed cost of an authorization check (two checks per expression at most).
pub const AUTHZ_CHECK_COST: u64 = 350_000;

/// kube's cost of parsing a field or label selector of `len` characters.
pub fn selector_cost(len: u64) -> u64 {
    let by = |n: u64, f: f64| (n as f64 * f).ceil() as u64;
    10 + by(len, STRING_TRAVERSAL_COST_FACTOR) + by(by(len, 0.5), 50.0)
}

/// Whether a kube library function costs 1, estimated and at run time alike.
pub(crate) fn is_unit_cost(name: &str) -> bool {
    matches!(
        name,
        "masked"
        | "prefixLength"
        | "family"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "format.named"
        | "sign"
        | "asInteger"
        | "isInteger"
        | "asApproximateFloat"
        | "isGreaterThan"
        | "isLessThan"
        | "compareTo"
        | "add"
        | "sub"
        | "major"
        | "minor"
        | "patch"
        | "getScheme"
        | "getHostname"
        | "getHost"
        | "getPort"
        | "getEscapedPath"
        | "getQuery"
        // kube's authz library: builders and accessors.
        | "serviceAccount"
        | "path"
        | "group"
        | "resource"
        | "subresource"
        | "namespace"
        | "name"
        | "allowed"
        | "reason"
        | "error"
        | "errored"
    )
}

/// Values of kube's library types.
#[derive(Debug, Clone, PartialEq)]
pub enum Ext {
    /// `kubernetes.URL`.
    Url(Url),
    /// `kubernetes.Quantity`.
    Quantity(Quantity),
    /// `net.IP`.
    Ip(IpAddr),
    /// `net.CIDR`: the address as written and the prefix length.
    Cidr(IpAddr, u8),
    /// `kubernetes.Semver`.
    Semver(Semver),
    /// `kubernetes.NamedFormat`.
    Format(&'static str),
}

impl Extension for Ext {
    fn type_name(&self) -> &'static str {
        match self {
            Ext::Url(_) => decls::URL,
            Ext::Quantity(_) => decls::QUANTITY,
            Ext::Ip(_) => decls::IP,
            Ext::Cidr(..) => decls::CIDR,
            Ext::Semver(_) => decls::SEMVER,
            Ext::Format(_) => decls::FORMAT,
        }
    }

    fn equals(&self, other: &dyn Extension) -> bool {
        let Some(other) = other.as_any().downcast_ref::<Ext>() else {
            return false;
        };
        match (self, other) {
            (Ext::Quantity(a), Ext::Quantity(b)) => a.compare(b) == Ordering::Equal,
            (Ext::Semver(a), Ext::Semver(b)) => a.compare(b) == Ordering::Equal,
            _ => self == other,
        }
    }

    fn to_string_val(&self) -> Option<String> {
        match self {
            Ext::Ip(ip) => Some(ip.to_string()),
            Ext::Cidr(ip, len) => Some(format!("{ip}/{len}")),
            _ => None,
        }
    }

    fn call<'a>(&self, name: &str, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
        Some(match (self, name, args) {
            (Ext::Url(u), _, []) => url_getter(u, name)?,
            (Ext::Quantity(q), _, _) => quantity_method(q, name, args)?,
            (Ext::Ip(ip), _, []) => ip_method(ip, name)?,
            (Ext::Cidr(ip, len), _, _) => cidr_method(*ip, *len, name, args)?,
            (Ext::Semver(v), _, _) => semver_method(v, name, args)?,
            (Ext::Format(f), "validate", [Val::Str(s)]) => {
                let errs = validate_format(f, s);
                Ok(Val::Optional(if errs.is_empty() {
                    None
                } else {
                    Some(Rc::new(value::strings_val(&errs)))
                }))
            }
            _ => return None,
        })
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The kube library value `v` is, if it is one.
fn kube_ext<'v>(v: &'v Val<'_>) -> Option<&'v Ext> {
    match v {
        Val::Ext(e) => e.as_any().downcast_ref::<Ext>(),
        _ => None,
    }
}

fn ext<'a>(e: Ext) -> Val<'a> {
    Val::Ext(Rc::new(e))
}

/// Namespaced global functions of the kube libraries.
pub fn is_global(qualified: &str) -> bool {
    qualified == "ip.isCanonical"
        || qualified == "format.named"
        || qualified
            .strip_prefix("format.")
            .is_some_and(|f| FORMAT_NAMES.contains(&f))
}

fn err<'a>(msg: impl Into<String>) -> EvalResult<'a> {
    Err(EvalError::new(msg))
}

/// Call a global function of the kube libraries, if `name` is one (their member
/// functions are the values' own: [`Extension::call`]).
pub fn call<'a>(name: &str, member: bool, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    if let Some(f) = name.strip_prefix("format.") {
        if f == "named" {
            return Some(match args {
                [Val::Str(n)] => Ok(Val::Optional(
                    FORMAT_NAMES
                        .iter()
                        .find(|x| **x == &**n)
                        .map(|x| Rc::new(ext(Ext::Format(x)))),
                )),
                _ => Err(EvalError::no_such_overload()),
            });
        }
        if let (Some(x), []) = (FORMAT_NAMES.iter().find(|x| **x == f), args) {
            return Some(Ok(ext(Ext::Format(x))));
        }
    }
    if member {
        return None;
    }
    global(name, args)
}

fn global<'a>(name: &str, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    Some(match (name, args) {
        ("url", [Val::Str(s)]) => match Url::parse(s) {
            Ok(u) => Ok(ext(Ext::Url(u))),
            Err(e) => err(format!(
                "URL parse error during conversion from string: {e}"
            )),
        },
        ("isURL", [Val::Str(s)]) => Ok(Val::Bool(Url::parse(s).is_ok())),
        ("quantity", [Val::Str(s)]) => Quantity::parse(s)
            .map(|q| ext(Ext::Quantity(q)))
            .map_err(|e| EvalError::new(e.to_string())),
        ("isQuantity", [Val::Str(s)]) => Ok(Val::Bool(Quantity::parse(s).is_ok())),
        ("ip", [Val::Str(s)]) => parse_ip(s)
            .map(|ip| ext(Ext::Ip(ip)))
            .map_err(EvalError::new),
        ("isIP", [Val::Str(s)]) => Ok(Val::Bool(parse_ip(s).is_ok())),
        ("ip.isCanonical", [Val::Str(s)]) => match parse_ip(s) {
            Ok(ip) => Ok(Val::Bool(ip.to_string() == **s)),
            Err(e) => err(e),
        },
        ("cidr", [Val::Str(s)]) => parse_cidr(s)
            .map(|(ip, l)| ext(Ext::Cidr(ip, l)))
            .map_err(EvalError::new),
        ("isCIDR", [Val::Str(s)]) => Ok(Val::Bool(parse_cidr(s).is_ok())),
        ("semver", [Val::Str(s)]) => Semver::parse(s)
            .map(|v| ext(Ext::Semver(v)))
            .map_err(|e| EvalError::new(e.to_string())),
        ("semver", [Val::Str(s), Val::Bool(n)]) => {
            let parsed = if *n {
                Semver::parse_normalized(s)
            } else {
                Semver::parse(s)
            };
            parsed
                .map(|v| ext(Ext::Semver(v)))
                .map_err(|e| EvalError::new(e.to_string()))
        }
        ("isSemver", [Val::Str(s)]) => Ok(Val::Bool(Semver::parse(s).is_ok())),
        ("isSemver", [Val::Str(s), Val::Bool(n)]) => Ok(Val::Bool(
            if *n {
                Semver::parse_normalized(s)
            } else {
                Semver::parse(s)
            }
            .is_ok(),
        )),
        _ => return None,
    })
}

/// kube's runtime cost of its library calls (`args` with the target first).
pub fn call_cost(name: &str, args: &[Val<'_>]) -> Option<u64> {
    let size = |i: usize| args.get(i).map(Val::cost_size).unwrap_or(1);
    let by = |n: u64, f: f64| (n as f64 * f).ceil() as u64;
    Some(match name {
        "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
            by(size(0), STRING_TRAVERSAL_COST_FACTOR)
        }
        "ip" => match args.first() {
            Some(Val::Ext(_)) => 1,
            _ => by(size(0), STRING_TRAVERSAL_COST_FACTOR),
        },
        "ip.isCanonical" => by(size(0), 2.0 * STRING_TRAVERSAL_COST_FACTOR),
        "check" => AUTHZ_CHECK_COST,
        "fieldSelector" | "labelSelector" => selector_cost(size(1)),
        n if is_unit_cost(n) => 1,
        "containsIP" | "containsCIDR" => {
            let cidr = size(0);
            let mut c = by(cidr + cidr, STRING_TRAVERSAL_COST_FACTOR);
            if name == "containsCIDR" {
                c += by(cidr, STRING_TRAVERSAL_COST_FACTOR) + 1;
            }
            if matches!(args.get(1), Some(Val::Str(_))) {
                c += by(size(1), STRING_TRAVERSAL_COST_FACTOR);
            }
            c
        }
        "validate" => {
            let s = by(1 + size(1), STRING_TRAVERSAL_COST_FACTOR);
            let max_regex = match args.first().and_then(kube_ext) {
                Some(Ext::Format(f)) => format_max_regex_size(f),
                _ => return None,
            };
            s * by(max_regex, REGEX_STRING_LENGTH_COST_FACTOR)
        }
        _ => return None,
    })
}

/// A string kube's libraries do not parse as a URL, quantity or version; the texts are
/// Go's (`net/url`, `resource.ParseQuantity`, blang/semver).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Go's `url.Error` for `Parse`: `parse "<url>": <reason>`.
    #[error("parse {}: {reason}", crate::field::go_quote(.url))]
    Url {
        /// The string parsed.
        url: String,
        /// Why it is no URL.
        reason: String,
    },
    /// A quantity that does not match kube's grammar.
    #[error("{QUANTITY_FORMAT_ERR}")]
    Quantity,
    /// A quantity too large to represent.
    #[error("quantity too large")]
    QuantityTooLarge,
    /// A sum or difference of quantities out of range.
    #[error("quantity overflow")]
    QuantityOverflow,
    /// A quantity whose suffix is no unit or exponent.
    #[error("unable to parse quantity's suffix")]
    QuantitySuffix,
    /// An empty version.
    #[error("Version string empty")]
    SemverEmpty,
    /// A version without three dot-separated parts.
    #[error("No Major.Minor.Patch elements found")]
    SemverElements,
    /// A major, minor or patch number with other characters than digits.
    #[error("Invalid character(s) found in {what} number {}", crate::field::go_quote(.number))]
    SemverNumber {
        /// `major`, `minor` or `patch`.
        what: &'static str,
        /// The text.
        number: String,
    },
    /// A major, minor or patch number with leading zeroes.
    #[error("{} number must not contain leading zeroes {}", capitalize(.what), crate::field::go_quote(.number))]
    SemverLeadingZero {
        /// `major`, `minor` or `patch`.
        what: &'static str,
        /// The text.
        number: String,
    },
    /// A version number out of range (Go's `strconv` text).
    #[error("{0}")]
    SemverRange(#[source] std::num::ParseIntError),
    /// A prerelease identifier with other characters than `[0-9A-Za-z-]`.
    #[error("Invalid character(s) found in prerelease {}", crate::field::go_quote(.0))]
    SemverPrerelease(String),
    /// A numeric prerelease identifier with leading zeroes.
    #[error("Version contains leading zero in numeric prerelease {}", crate::field::go_quote(.0))]
    SemverPrereleaseLeadingZero(String),
    /// A build metadata identifier with other characters than `[0-9A-Za-z-]`.
    #[error("Invalid character(s) found in build meta data {}", crate::field::go_quote(.0))]
    SemverBuild(String),
    /// A short version (normalized parsing) with prerelease or build metadata.
    #[error("short version cannot contain PreRelease/Build meta data")]
    SemverShort,
}

// ---------------------------------------------------------------------------------------
// URLs (Go's `url.ParseRequestURI`, then `url.Parse`)

/// A parsed URL.
#[derive(Debug, Clone, PartialEq)]
pub struct Url {
    scheme: String,
    host: String,
    path: String,
    raw_query: String,
}

impl Url {
    /// Go's `url.ParseRequestURI`: an absolute URL or an absolute path.
    pub fn parse(s: &str) -> Result<Url, ParseError> {
        let fail = |reason: String| ParseError::Url {
            url: s.to_string(),
            reason,
        };
        if s.is_empty() {
            return Err(fail("empty url".into()));
        }
        if s.chars().any(|c| (c as u32) < 0x20 || c as u32 == 0x7f) {
            return Err(fail("net/url: invalid control character in URL".into()));
        }
        // url.Parse drops the fragment; ParseRequestURI only checks the rest.
        let rest = s.split_once('#').map(|(a, _)| a).unwrap_or(s);
        let (rest, raw_query) = match rest.split_once('?') {
            Some((a, q)) => (a, q.to_string()),
            None => (rest, String::new()),
        };
        let (scheme, rest) = match scheme_of(rest) {
            Some((sch, r)) => (sch.to_ascii_lowercase(), r),
            None => {
                if !rest.starts_with('/') {
                    return Err(fail("invalid URI for request".into()));
                }
                (String::new(), rest)
            }
        };
        let (host, path) = if let Some(after) = rest.strip_prefix("//") {
            let end = after.find('/').unwrap_or(after.len());
            let authority = &after[..end];
            let host = match authority.rsplit_once('@') {
                Some((_, h)) => h,
                None => authority,
            };
            (host.to_string(), after[end..].to_string())
        } else if !scheme.is_empty() && !rest.starts_with('/') {
            // An opaque URL (`mailto:x`).
            (String::new(), String::new())
        } else {
            (String::new(), rest.to_string())
        };
        if let Some(port) = host.rsplit_once(':').map(|(_, p)| p) {
            let has_port = !host.starts_with('[') || host.contains("]:");
            if has_port && !port.chars().all(|c| c.is_ascii_digit()) {
                return Err(fail(format!("invalid port \":{port}\" after host")));
            }
        }
        Ok(Url {
            scheme,
            host,
            path,
            raw_query,
        })
    }

    fn hostname(&self) -> &str {
        let h = &self.host;
        if let Some(rest) = h.strip_prefix('[') {
            return rest.split(']').next().unwrap_or_default();
        }
        h.rsplit_once(':').map(|(a, _)| a).unwrap_or(h)
    }

    fn port(&self) -> &str {
        let h = &self.host;
        if h.starts_with('[') {
            return h.split("]:").nth(1).unwrap_or_default();
        }
        h.rsplit_once(':').map(|(_, p)| p).unwrap_or_default()
    }
}

fn scheme_of(s: &str) -> Option<(&str, &str)> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    if !first.is_ascii_alphabetic()
        || !chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    {
        return None;
    }
    Some((scheme, &s[colon + 1..]))
}

fn url_getter<'a>(u: &Url, name: &str) -> Option<EvalResult<'a>> {
    Some(Ok(match name {
        "getScheme" => Val::str(&u.scheme),
        "getHost" => Val::str(&u.host),
        "getHostname" => Val::str(u.hostname()),
        "getPort" => Val::str(u.port()),
        "getEscapedPath" => Val::str(&u.path),
        "getQuery" => {
            let mut entries: Vec<(String, Vec<String>)> = Vec::new();
            for pair in u.raw_query.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let (k, v) = (percent_decode(k), percent_decode(v));
                match entries.iter_mut().find(|(x, _)| *x == k) {
                    Some((_, vs)) => vs.push(v),
                    None => entries.push((k, vec![v])),
                }
            }
            Val::Map(Map::Owned(Rc::new(
                entries
                    .into_iter()
                    .map(|(k, vs)| (Val::str(&k), value::strings_val(&vs)))
                    .collect(),
            )))
        }
        _ => return None,
    }))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match s.get(i + 1..i + 3).map(|h| u8::from_str_radix(h, 16))
            {
                Some(Ok(v)) => {
                    out.push(v);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

// ---------------------------------------------------------------------------------------
// Quantities (`resource.Quantity`)

/// How a quantity is written (kube's `resource.Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuantityFormat {
    /// `1k`, `500m`.
    DecimalSI,
    /// `1Ki`, `1Gi`.
    BinarySI,
    /// `1e3`.
    DecimalExponent,
}

/// A quantity as an exact decimal: `mantissa * 10^exp`.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    mantissa: i128,
    exp: i32,
}

const QUANTITY_FORMAT_ERR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

impl Quantity {
    /// kube's `resource.ParseQuantity`.
    pub fn parse(s: &str) -> Result<Quantity, ParseError> {
        if s.is_empty() {
            return Err(ParseError::Quantity);
        }
        let (neg, rest) = match s.as_bytes()[0] {
            b'-' => (true, &s[1..]),
            b'+' => (false, &s[1..]),
            _ => (false, s),
        };
        let num_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_digit() || *b == b'.')
            .count();
        let (num, suffix) = rest.split_at(num_len);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(ParseError::Quantity);
        }
        let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
        let digits = format!("{int_part}{frac_part}");
        let digits = digits.trim_start_matches('0');
        let digits = digits.get(..digits.len().min(36)).unwrap_or_default();
        let mut mantissa: i128 = if digits.is_empty() {
            0
        } else {
            digits.parse().map_err(|_| ParseError::Quantity)?
        };
        let mut exp = -(frac_part.len() as i32);
        match suffix {
            "" => {}
            "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
                let k = match suffix {
                    "Ki" => 1,
                    "Mi" => 2,
                    "Gi" => 3,
                    "Ti" => 4,
                    "Pi" => 5,
                    _ => 6,
                };
                mantissa = mantissa
                    .checked_mul(1024i128.pow(k))
                    .ok_or(ParseError::QuantityTooLarge)?;
            }
            "n" => exp -= 9,
            "u" => exp -= 6,
            "m" => exp -= 3,
            "k" => exp += 3,
            "M" => exp += 6,
            "G" => exp += 9,
            "T" => exp += 12,
            "P" => exp += 15,
            "E" => exp += 18,
            other => {
                let e = other
                    .strip_prefix('e')
                    .or_else(|| other.strip_prefix('E'))
                    .ok_or(ParseError::QuantitySuffix)?;
                let v: i32 = e.parse().map_err(|_| ParseError::QuantitySuffix)?;
                exp += v;
            }
        }
        if neg {
            mantissa = -mantissa;
        }
        Ok(Quantity { mantissa, exp })
    }

    fn sign(&self) -> i64 {
        self.mantissa.signum() as i64
    }

    /// The value scaled to a common exponent with `other`, if it fits.
    fn aligned(&self, other: &Quantity) -> Option<(i128, i128, i32)> {
        let e = self.exp.min(other.exp);
        let a = self
            .mantissa
            .checked_mul(10i128.checked_pow((self.exp - e) as u32)?)?;
        let b = other
            .mantissa
            .checked_mul(10i128.checked_pow((other.exp - e) as u32)?)?;
        Some((a, b, e))
    }

    /// The value as a float (approximate).
    pub fn approx(&self) -> f64 {
        self.mantissa as f64 * 10f64.powi(self.exp)
    }

    /// Compares two quantities by value (`1` equals `1000m`).
    pub fn compare(&self, other: &Quantity) -> Ordering {
        match self.aligned(other) {
            Some((a, b, _)) => a.cmp(&b),
            None => self
                .approx()
                .partial_cmp(&other.approx())
                .unwrap_or(Ordering::Equal),
        }
    }

    fn as_int64(&self) -> Option<i64> {
        if self.exp >= 0 {
            let v = self
                .mantissa
                .checked_mul(10i128.checked_pow(self.exp as u32)?)?;
            return i64::try_from(v).ok();
        }
        let d = 10i128.checked_pow((-self.exp) as u32)?;
        if self.mantissa % d != 0 {
            return None;
        }
        i64::try_from(self.mantissa / d).ok()
    }

    /// Zero.
    pub fn zero() -> Quantity {
        Quantity {
            mantissa: 0,
            exp: 0,
        }
    }

    /// Whether the quantity is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// The format a quantity written as `s` keeps (kube's `Quantity.Format`): binary
    /// for `Ki`..`Ei` suffixes, exponent for `e`/`E`, else decimal SI.
    pub fn format_of(s: &str) -> QuantityFormat {
        let suffix =
            s.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '+' || c == '-');
        if suffix.ends_with('i') {
            QuantityFormat::BinarySI
        } else if suffix.starts_with(['e', 'E']) {
            QuantityFormat::DecimalExponent
        } else {
            QuantityFormat::DecimalSI
        }
    }

    /// kube's canonical text of the quantity in `format` (`Quantity.String()`):
    /// `1Gi`, `500m`, `1k`, `2e3`; binary only for whole multiples of 1024.
    pub fn canonical(&self, format: QuantityFormat) -> String {
        if self.mantissa == 0 {
            return "0".into();
        }
        if format == QuantityFormat::BinarySI && self.mantissa.abs() >= 1024 {
            if let Some(mut whole) = self.as_int128() {
                let mut power = 0;
                while whole % 1024 == 0 && power < 6 {
                    whole /= 1024;
                    power += 1;
                }
                let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
                return format!("{whole}{suffix}");
            }
        }
        // Decimal: strip factors of ten, then bring the exponent to a multiple of 3.
        let (mut m, mut e) = (self.mantissa, self.exp);
        while m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        while e.rem_euclid(3) != 0 {
            m *= 10;
            e -= 1;
        }
        let suffix = match (format, e) {
            (QuantityFormat::DecimalExponent, 0) => String::new(),
            (QuantityFormat::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 0) => String::new(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{m}{suffix}")
    }

    fn as_int128(&self) -> Option<i128> {
        if self.exp >= 0 {
            return self
                .mantissa
                .checked_mul(10i128.checked_pow(self.exp as u32)?);
        }
        let d = 10i128.checked_pow((-self.exp) as u32)?;
        (self.mantissa % d == 0).then(|| self.mantissa / d)
    }

    /// The sum (or, with `negate`, the difference) of two quantities.
    pub fn add(&self, other: &Quantity, negate: bool) -> Result<Quantity, ParseError> {
        let (a, b, e) = self.aligned(other).ok_or(ParseError::QuantityOverflow)?;
        let b = if negate { -b } else { b };
        Ok(Quantity {
            mantissa: a.checked_add(b).ok_or(ParseError::QuantityOverflow)?,
            exp: e,
        })
    }
}

fn quantity_method<'a>(q: &Quantity, name: &str, rest: &[Val<'a>]) -> Option<EvalResult<'a>> {
    let other = |v: &Val<'a>| -> Option<Quantity> {
        match v {
            Val::Ext(_) => match kube_ext(v)? {
                Ext::Quantity(o) => Some(o.clone()),
                _ => None,
            },
            Val::Int(i) => Some(Quantity {
                mantissa: *i as i128,
                exp: 0,
            }),
            _ => None,
        }
    };
    Some(match (name, rest) {
        ("sign", []) => Ok(Val::Int(q.sign())),
        ("isInteger", []) => Ok(Val::Bool(q.as_int64().is_some())),
        ("asInteger", []) => match q.as_int64() {
            Some(i) => Ok(Val::Int(i)),
            None => err("cannot convert value to integer"),
        },
        ("asApproximateFloat", []) => Ok(Val::Double(q.approx())),
        ("add" | "sub", [o]) => {
            let o = other(o)?;
            q.add(&o, name == "sub")
                .map(|r| ext(Ext::Quantity(r)))
                .map_err(|e| EvalError::new(e.to_string()))
        }
        ("isLessThan", [o]) => Ok(Val::Bool(q.compare(&other(o)?) == Ordering::Less)),
        ("isGreaterThan", [o]) => Ok(Val::Bool(q.compare(&other(o)?) == Ordering::Greater)),
        ("compareTo", [o]) => Ok(Val::Int(match q.compare(&other(o)?) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        })),
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// IP addresses and CIDRs (Go's `netip`, minus zones and IPv4-mapped IPv6)

fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let quoted = crate::field::go_quote(raw);
    if raw.contains('%') {
        return Err(format!(
            "IP address {quoted} with zone value is not allowed"
        ));
    }
    let ip: IpAddr = raw
        .parse()
        .map_err(|_| format!("IP Address {quoted} parse error during conversion from string: ParseAddr({quoted}): unable to parse IP"))?;
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {quoted} is not allowed"));
        }
    }
    Ok(ip)
}

fn parse_cidr(raw: &str) -> Result<(IpAddr, u8), String> {
    let quoted = crate::field::go_quote(raw);
    let bad = || {
        format!("network address parse error during conversion from string: netip.ParsePrefix({quoted}): bad prefix")
    };
    let (addr, len) = raw.split_once('/').ok_or_else(|| {
        format!("network address parse error during conversion from string: netip.ParsePrefix({quoted}): no '/'")
    })?;
    if addr.contains('%') {
        return Err(bad());
    }
    let ip: IpAddr = addr.parse().map_err(|_| bad())?;
    if len.is_empty()
        || !len.bytes().all(|b| b.is_ascii_digit())
        || (len.len() > 1 && len.starts_with('0'))
    {
        return Err(bad());
    }
    let l: u8 = len.parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    if l > max {
        return Err(bad());
    }
    if let IpAddr::V6(v6) = ip {
        if v6.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {quoted} is not allowed"));
        }
    }
    Ok((ip, l))
}

fn ip_method<'a>(ip: &IpAddr, name: &str) -> Option<EvalResult<'a>> {
    Some(Ok(match name {
        "family" => Val::Int(if ip.is_ipv4() { 4 } else { 6 }),
        "isUnspecified" => Val::Bool(ip.is_unspecified()),
        "isLoopback" => Val::Bool(ip.is_loopback()),
        "isLinkLocalMulticast" => Val::Bool(match ip {
            IpAddr::V4(v4) => v4.octets()[..3] == [224, 0, 0],
            IpAddr::V6(v6) => v6.segments()[0] & 0xff0f == 0xff02,
        }),
        "isLinkLocalUnicast" => Val::Bool(match ip {
            IpAddr::V4(v4) => v4.octets()[..2] == [169, 254],
            IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
        }),
        "isGlobalUnicast" => Val::Bool(is_global_unicast(ip)),
        _ => return None,
    }))
}

/// Go's `netip.Addr.IsGlobalUnicast`.
fn is_global_unicast(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_unspecified()
                || v4.is_loopback()
                || v4.is_multicast()
                || v4.octets()[..2] == [169, 254]
                || *v4 == Ipv4Addr::BROADCAST)
        }
        IpAddr::V6(v6) => {
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || v6.segments()[0] & 0xffc0 == 0xfe80)
        }
    }
}

fn mask(ip: IpAddr, len: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let m = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            IpAddr::V4(Ipv4Addr::from(bits & m))
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let m = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            IpAddr::V6(Ipv6Addr::from(bits & m))
        }
    }
}

fn contains(net: IpAddr, len: u8, ip: IpAddr) -> bool {
    net.is_ipv4() == ip.is_ipv4() && mask(net, len) == mask(ip, len)
}

fn cidr_method<'a>(ip: IpAddr, len: u8, name: &str, rest: &[Val<'a>]) -> Option<EvalResult<'a>> {
    let as_ip = |v: &Val<'a>| -> Option<Result<IpAddr, String>> {
        match v {
            Val::Str(s) => Some(parse_ip(s)),
            Val::Ext(_) => match kube_ext(v)? {
                Ext::Ip(i) => Some(Ok(*i)),
                _ => None,
            },
            _ => None,
        }
    };
    let as_cidr = |v: &Val<'a>| -> Option<Result<(IpAddr, u8), String>> {
        match v {
            Val::Str(s) => Some(parse_cidr(s)),
            Val::Ext(_) => match kube_ext(v)? {
                Ext::Cidr(i, l) => Some(Ok((*i, *l))),
                _ => None,
            },
            _ => None,
        }
    };
    Some(match (name, rest) {
        ("ip", []) => Ok(ext(Ext::Ip(ip))),
        ("masked", []) => Ok(ext(Ext::Cidr(mask(ip, len), len))),
        ("prefixLength", []) => Ok(Val::Int(i64::from(len))),
        ("containsIP", [o]) => match as_ip(o)? {
            Ok(other) => Ok(Val::Bool(contains(ip, len, other))),
            Err(e) => err(e),
        },
        ("containsCIDR", [o]) => match as_cidr(o)? {
            Ok((other, olen)) => Ok(Val::Bool(olen >= len && contains(ip, len, other))),
            Err(e) => err(e),
        },
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------
// Semantic versions (blang/semver)

/// A semantic version.
#[derive(Debug, Clone, PartialEq)]
pub struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<String>,
}

impl Semver {
    /// blang/semver's strict `Parse`.
    pub fn parse(s: &str) -> Result<Semver, ParseError> {
        if s.is_empty() {
            return Err(ParseError::SemverEmpty);
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err(ParseError::SemverElements);
        }
        let num = |p: &str, what: &'static str| -> Result<u64, ParseError> {
            if !p.bytes().all(|b| b.is_ascii_digit()) || p.is_empty() {
                return Err(ParseError::SemverNumber {
                    what,
                    number: p.to_string(),
                });
            }
            if p.len() > 1 && p.starts_with('0') {
                return Err(ParseError::SemverLeadingZero {
                    what,
                    number: p.to_string(),
                });
            }
            p.parse().map_err(ParseError::SemverRange)
        };
        let major = num(parts[0], "major")?;
        let minor = num(parts[1], "minor")?;
        let tail = parts[2];
        let end = tail.find(['-', '+']).unwrap_or(tail.len());
        let patch = num(&tail[..end], "patch")?;
        let mut pre = Vec::new();
        let rest = &tail[end..];
        let (pre_str, build) = match rest.strip_prefix('-') {
            Some(r) => match r.split_once('+') {
                Some((p, b)) => (Some(p), Some(b)),
                None => (Some(r), None),
            },
            None => (None, rest.strip_prefix('+')),
        };
        if let Some(p) = pre_str {
            for id in p.split('.') {
                if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                    return Err(ParseError::SemverPrerelease(id.to_string()));
                }
                if id.bytes().all(|b| b.is_ascii_digit()) && id.len() > 1 && id.starts_with('0') {
                    return Err(ParseError::SemverPrereleaseLeadingZero(id.to_string()));
                }
                pre.push(id.to_string());
            }
        }
        if let Some(b) = build {
            for id in b.split('.') {
                if id.is_empty() || !id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
                    return Err(ParseError::SemverBuild(id.to_string()));
                }
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// kube's `normalizeAndParse`: `v` prefix, missing minor/patch, leading zeros.
    pub fn parse_normalized(s: &str) -> Result<Semver, ParseError> {
        let s = s.strip_prefix('v').unwrap_or(s);
        let mut parts: Vec<String> = s.splitn(3, '.').map(String::from).collect();
        for p in parts.iter_mut() {
            if p.len() > 1 {
                let t = p.trim_start_matches('0');
                *p = if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit()) {
                    format!("0{t}")
                } else {
                    t.to_string()
                };
            }
        }
        if parts.len() < 3 {
            if parts.last().is_some_and(|l| l.contains(['+', '-'])) {
                return Err(ParseError::SemverShort);
            }
            while parts.len() < 3 {
                parts.push("0".into());
            }
        }
        Semver::parse(&parts.join("."))
    }

    fn compare(&self, o: &Semver) -> Ordering {
        let base = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if base != Ordering::Equal {
            return base;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            _ => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let ord = match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(x), Ok(y)) => x.cmp(&y),
                (Ok(_), Err(_)) => Ordering::Less,
                (Err(_), Ok(_)) => Ordering::Greater,
                _ => a.cmp(b),
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

fn semver_method<'a>(v: &Semver, name: &str, rest: &[Val<'a>]) -> Option<EvalResult<'a>> {
    let other = |x: &Val<'a>| -> Option<Semver> {
        match x {
            Val::Ext(_) => match kube_ext(x)? {
                Ext::Semver(s) => Some(s.clone()),
                _ => None,
            },
            _ => None,
        }
    };
    Some(Ok(match (name, rest) {
        ("major", []) => Val::Int(v.major as i64),
        ("minor", []) => Val::Int(v.minor as i64),
        ("patch", []) => Val::Int(v.patch as i64),
        ("isLessThan", [o]) => Val::Bool(v.compare(&other(o)?) == Ordering::Less),
        ("isGreaterThan", [o]) => Val::Bool(v.compare(&other(o)?) == Ordering::Greater),
        ("compareTo", [o]) => Val::Int(match v.compare(&other(o)?) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }),
        _ => return None,
    }))
}

// ---------------------------------------------------------------------------------------
// Named formats

fn format_max_regex_size(f: &str) -> u64 {
    match f {
        "dns1123Label" | "dns1035Label" | "dns1123LabelPrefix" | "dns1035LabelPrefix" => 30,
        "dns1123Subdomain" | "qualifiedName" | "dns1123SubdomainPrefix" => 60,
        "labelValue" => 40,
        "uri" => 2083,
        "uuid" => 99,
        "byte" => 153,
        _ => 132,
    }
}

fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        format!("{}a", &name[..name.len() - 2])
    } else {
        name.to_string()
    }
}

fn validate_format(f: &str, s: &str) -> Vec<String> {
    match f {
        "dns1123Label" => objectmeta::validate_dns1123_label(s),
        "dns1123LabelPrefix" => objectmeta::validate_dns1123_label(&mask_trailing_dash(s)),
        "dns1123Subdomain" => objectmeta::is_dns1123_subdomain(s),
        "dns1123SubdomainPrefix" => objectmeta::is_dns1123_subdomain(&mask_trailing_dash(s)),
        "dns1035Label" => objectmeta::is_dns1035_label(s),
        "dns1035LabelPrefix" => objectmeta::is_dns1035_label(&mask_trailing_dash(s)),
        "qualifiedName" => objectmeta::is_qualified_name(s),
        "labelValue" => objectmeta::is_label_value(s),
        "uri" => match Url::parse(s) {
            Ok(_) => Vec::new(),
            Err(e) => vec![e.to_string()],
        },
        "uuid" => {
            if crate::schema::formats::check_format("uuid", s) {
                Vec::new()
            } else {
                vec!["does not match the UUID format".into()]
            }
        }
        "byte" => {
            if crate::schema::formats::check_format("byte", s) {
                Vec::new()
            } else {
                vec!["invalid base64".into()]
            }
        }
        "date" => {
            if crate::schema::formats::check_format("date", s) {
                Vec::new()
            } else {
                vec!["invalid date".into()]
            }
        }
        _ => {
            if crate::schema::formats::check_format("datetime", s) {
                Vec::new()
            } else {
                vec!["invalid datetime".into()]
            }
        }
    }
}

#[cfg(test)]
mod quantity_text_tests {
    use super::*;

    #[test]
    fn quantities_print_as_kube_prints_them() {
        let c = |s: &str| {
            Quantity::parse(s)
                .unwrap()
                .canonical(Quantity::format_of(s))
        };
        assert_eq!(c("0.1"), "100m");
        assert_eq!(c("1024Mi"), "1Gi");
        assert_eq!(c("1500"), "1500");
        assert_eq!(c("1000"), "1k");
        assert_eq!(c("512Ki"), "512Ki");
        assert_eq!(c("1.5Gi"), "1536Mi");
        assert_eq!(c("100Ki"), "100Ki");
        assert_eq!(c("1e3"), "1e3");
        assert_eq!(c("0"), "0");
        let sum = Quantity::parse("250m")
            .unwrap()
            .add(&Quantity::parse("1").unwrap(), false)
            .unwrap();
        assert_eq!(sum.canonical(QuantityFormat::DecimalSI), "1250m");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_compare_exactly() {
        let q = |s: &str| Quantity::parse(s).expect(s);
        assert_eq!(q("1").compare(&q("1000m")), Ordering::Equal);
        assert_eq!(q("1Ki").compare(&q("1024")), Ordering::Equal);
        assert_eq!(q("1.5G").compare(&q("1500M")), Ordering::Equal);
        assert_eq!(q("100m").compare(&q("0.2")), Ordering::Less);
        assert_eq!(q("1e3").as_int64(), Some(1000));
        assert_eq!(q("1500m").as_int64(), None);
        assert!(Quantity::parse("1x").is_err());
        assert_eq!(
            Quantity::parse("abc").unwrap_err().to_string(),
            QUANTITY_FORMAT_ERR
        );
    }

    #[test]
    fn urls_parse_like_parse_request_uri() {
        let u = Url::parse("https://user@example.com:8443/a/b?x=1&x=2&y").expect("url");
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(u.hostname(), "example.com");
        assert_eq!(u.port(), "8443");
        assert_eq!(u.path, "/a/b");
        assert!(Url::parse("/relative/path").is_ok());
        assert!(Url::parse("relative").is_err());
        let v6 = Url::parse("http://[::1]:80/").expect("url");
        assert_eq!(v6.hostname(), "::1");
        assert_eq!(v6.port(), "80");
    }

    #[test]
    fn ips_and_cidrs() {
        assert!(parse_ip("10.0.0.1").is_ok());
        assert!(parse_ip("::ffff:1.2.3.4").is_err());
        assert!(parse_ip("fe80::1%eth0").is_err());
        let (net, len) = parse_cidr("10.0.0.0/8").expect("cidr");
        assert!(contains(net, len, "10.1.2.3".parse().expect("ip")));
        assert!(!contains(net, len, "11.1.2.3".parse().expect("ip")));
        assert!(parse_cidr("10.0.0.0/33").is_err());
    }

    #[test]
    fn semvers_order_by_precedence() {
        let v = |s: &str| Semver::parse(s).expect(s);
        assert_eq!(v("1.2.3").compare(&v("1.10.0")), Ordering::Less);
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0")), Ordering::Less);
        assert_eq!(
            v("1.0.0-alpha.1").compare(&v("1.0.0-alpha.beta")),
            Ordering::Less
        );
        assert!(Semver::parse("01.2.3").is_err());
        assert_eq!(
            Semver::parse_normalized("v1.2").expect("normalized"),
            v("1.2.0")
        );
    }
}
