//! The functions rules can call, at run time: CEL's standard library and the libraries
//! kube adds to it (cel-go's strings, lists, sets and optionals extensions; kube's lists,
//! regex, URL, quantity, IP/CIDR, format and semver libraries — the last ones in
//! [`super::kubelib`]). Declarations for the type checker are in [`super::decls`].
//!
//! [`call`] dispatches on the function name and the runtime types of the arguments (the
//! target first for member calls); [`call_cost`] is cel-go's runtime cost of the call,
//! with kube's cost estimator for its own functions.

use super::kubelib;
use super::limits::{REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR};
use super::value::{
    compare, display, duration_string, equals, map_list_key, strings_val, EvalError, EvalResult,
    List, ListKind, Map, Val,
};
use ::cel::common::ast::operators;
use chrono::{DateTime, Datelike, FixedOffset, Timelike, Utc};
use regex::Regex;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::{Arc, LazyLock, Mutex};

type Args<'a> = Vec<Val<'a>>;

/// Call `name` (member call: `args[0]` is the target).
pub fn call<'a>(name: &str, member: bool, args: Args<'a>) -> EvalResult<'a> {
    if let Some(r) = operator(name, &args) {
        return r;
    }
    if let Some(r) = standard(name, member, &args) {
        return r;
    }
    if let Some(r) = strings_ext(name, member, &args) {
        return r;
    }
    if let Some(r) = lists_ext(name, member, &args) {
        return r;
    }
    if let Some(r) = optionals(name, member, &args) {
        return r;
    }
    if name == super::macros::MAP_INSERT {
        return map_insert(args);
    }
    if let (true, Some((Val::Ext(target), rest))) = (member, args.split_first()) {
        if let Some(r) = target.call(name, rest) {
            return r;
        }
    }
    if let Some(r) = kubelib::call(name, member, &args) {
        return r;
    }
    Err(EvalError::no_such_overload())
}

/// Global functions whose names have a namespace (`optional.of`, `strings.quote`).
pub fn is_global(qualified: &str) -> bool {
    matches!(
        qualified,
        "optional.of"
            | "optional.ofNonZeroValue"
            | "optional.none"
            | "strings.quote"
            | "sets.contains"
            | "sets.equivalent"
            | "sets.intersects"
            | "lists.range"
            | "math.greatest"
            | "math.least"
    ) || kubelib::is_global(qualified)
}

/// Identifiers that name types (`type(x) == int`).
pub fn type_value<'a>(name: &str) -> Option<Val<'a>> {
    let t = match name {
        "bool" => "bool",
        "int" => "int",
        "uint" => "uint",
        "double" => "double",
        "string" => "string",
        "bytes" => "bytes",
        "list" => "list",
        "map" => "map",
        "null_type" => "null_type",
        "type" => "type",
        "optional_type" => "optional_type",
        "google.protobuf.Duration" => "google.protobuf.Duration",
        "google.protobuf.Timestamp" => "google.protobuf.Timestamp",
        _ => return None,
    };
    Some(Val::Type(t))
}

fn bool_val<'a>(b: bool) -> EvalResult<'a> {
    Ok(Val::Bool(b))
}

fn err<'a>(msg: impl Into<String>) -> EvalResult<'a> {
    Err(EvalError::new(msg))
}

// ---------------------------------------------------------------------------------------
// Operators

fn operator<'a>(name: &str, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    Some(match (name, args) {
        (operators::LOGICAL_NOT, [Val::Bool(b)]) => bool_val(!b),
        (operators::NEGATE, [Val::Int(i)]) => i
            .checked_neg()
            .map(Val::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (operators::NEGATE, [Val::Double(d)]) => Ok(Val::Double(-d)),
        (operators::EQUALS, [a, b]) => equals(a, b).map(Val::Bool),
        (operators::NOT_EQUALS, [a, b]) => equals(a, b).map(|e| Val::Bool(!e)),
        (operators::LESS, [a, b]) => compare(a, b).map(|o| Val::Bool(o == Some(Ordering::Less))),
        (operators::LESS_EQUALS, [a, b]) => {
            compare(a, b).map(|o| Val::Bool(matches!(o, Some(Ordering::Less | Ordering::Equal))))
        }
        (operators::GREATER, [a, b]) => {
            compare(a, b).map(|o| Val::Bool(o == Some(Ordering::Greater)))
        }
        (operators::GREATER_EQUALS, [a, b]) => {
            compare(a, b).map(|o| Val::Bool(matches!(o, Some(Ordering::Greater | Ordering::Equal))))
        }
        (operators::ADD, [a, b]) => add(a, b),
        (operators::SUBSTRACT, [a, b]) => sub(a, b),
        (operators::MULTIPLY, [Val::Int(a), Val::Int(b)]) => a
            .checked_mul(*b)
            .map(Val::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (operators::MULTIPLY, [Val::Uint(a), Val::Uint(b)]) => a
            .checked_mul(*b)
            .map(Val::Uint)
            .ok_or_else(|| EvalError::new("unsigned integer overflow")),
        (operators::MULTIPLY, [Val::Double(a), Val::Double(b)]) => Ok(Val::Double(a * b)),
        (operators::DIVIDE, [Val::Int(a), Val::Int(b)]) => {
            if *b == 0 {
                err("division by zero")
            } else {
                a.checked_div(*b)
                    .map(Val::Int)
                    .ok_or_else(|| EvalError::new("integer overflow"))
            }
        }
        (operators::DIVIDE, [Val::Uint(a), Val::Uint(b)]) => {
            if *b == 0 {
                err("division by zero")
            } else {
                Ok(Val::Uint(a / b))
            }
        }
        (operators::DIVIDE, [Val::Double(a), Val::Double(b)]) => Ok(Val::Double(a / b)),
        (operators::MODULO, [Val::Int(a), Val::Int(b)]) => {
            if *b == 0 {
                err("modulus by zero")
            } else {
                a.checked_rem(*b)
                    .map(Val::Int)
                    .ok_or_else(|| EvalError::new("integer overflow"))
            }
        }
        (operators::MODULO, [Val::Uint(a), Val::Uint(b)]) => {
            if *b == 0 {
                err("modulus by zero")
            } else {
                Ok(Val::Uint(a % b))
            }
        }
        (operators::INDEX, [a, b]) => index(a, b),
        (operators::OPT_INDEX, [a, b]) => optional_index(a, b),
        (operators::IN, [v, Val::List(l)]) => (|| {
            let mut error = None;
            for i in 0..l.len() {
                match equals(&l.get(i)?, v) {
                    Ok(true) => return Ok(Val::Bool(true)),
                    Ok(false) => {}
                    Err(e) => error = error.or(Some(e)),
                }
            }
            match error {
                Some(e) => Err(e),
                None => Ok(Val::Bool(false)),
            }
        })(),
        (operators::IN, [k, Val::Map(m)]) => match k {
            Val::Str(_) | Val::Int(_) | Val::Uint(_) | Val::Bool(_) | Val::Double(_) => {
                m.get(k).map(|v| Val::Bool(v.is_some()))
            }
            _ => Err(EvalError::no_such_overload()),
        },
        _ => return None,
    })
}

fn add<'a>(a: &Val<'a>, b: &Val<'a>) -> EvalResult<'a> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => x
            .checked_add(*y)
            .map(Val::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (Val::Uint(x), Val::Uint(y)) => x
            .checked_add(*y)
            .map(Val::Uint)
            .ok_or_else(|| EvalError::new("unsigned integer overflow")),
        (Val::Double(x), Val::Double(y)) => Ok(Val::Double(x + y)),
        (Val::Str(x), Val::Str(y)) => {
            let mut s = String::with_capacity(x.len() + y.len());
            s.push_str(x);
            s.push_str(y);
            Ok(Val::Str(Rc::from(s)))
        }
        (Val::Bytes(x), Val::Bytes(y)) => {
            let mut v = x.to_vec();
            v.extend_from_slice(y);
            Ok(Val::Bytes(Rc::from(v)))
        }
        (Val::List(x), Val::List(y)) => concat_lists(x.clone(), y),
        (Val::Duration(x), Val::Duration(y)) => x
            .checked_add(*y)
            .map(Val::Duration)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (Val::Timestamp(t), Val::Duration(d)) | (Val::Duration(d), Val::Timestamp(t)) => {
            timestamp_add(t, *d)
        }
        _ => Err(EvalError::no_such_overload()),
    }
}

fn sub<'a>(a: &Val<'a>, b: &Val<'a>) -> EvalResult<'a> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => x
            .checked_sub(*y)
            .map(Val::Int)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (Val::Uint(x), Val::Uint(y)) => x
            .checked_sub(*y)
            .map(Val::Uint)
            .ok_or_else(|| EvalError::new("unsigned integer overflow")),
        (Val::Double(x), Val::Double(y)) => Ok(Val::Double(x - y)),
        (Val::Duration(x), Val::Duration(y)) => x
            .checked_sub(*y)
            .map(Val::Duration)
            .ok_or_else(|| EvalError::new("integer overflow")),
        (Val::Timestamp(t), Val::Duration(d)) => match d.checked_neg() {
            Some(n) => timestamp_add(t, n),
            None => err("integer overflow"),
        },
        (Val::Timestamp(x), Val::Timestamp(y)) => (*x - *y)
            .num_nanoseconds()
            .map(Val::Duration)
            .ok_or_else(|| EvalError::new("integer overflow")),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn timestamp_add<'a>(t: &DateTime<Utc>, nanos: i64) -> EvalResult<'a> {
    let r = t
        .checked_add_signed(chrono::TimeDelta::nanoseconds(nanos))
        .ok_or_else(|| EvalError::new("timestamp overflow"))?;
    check_timestamp_range(r)
}

fn check_timestamp_range<'a>(t: DateTime<Utc>) -> EvalResult<'a> {
    // CEL timestamps span years 0001 to 9999.
    if t.year() < 1 || t.year() > 9999 {
        return err("timestamp overflow");
    }
    Ok(Val::Timestamp(t))
}

/// `l[i]` / `m[k]`.
fn index<'a>(operand: &Val<'a>, key: &Val<'a>) -> EvalResult<'a> {
    match operand {
        Val::List(l) => {
            let i = list_index(key)?;
            if i < 0 || i as usize >= l.len() {
                return Err(EvalError::new(format!("index out of bounds: {i}")));
            }
            l.get(i as usize)
        }
        Val::Map(m) => match m.get(key)? {
            Some(v) => Ok(v),
            None => Err(EvalError::new(format!("no such key: {}", display(key)))),
        },
        Val::Optional(None) => Ok(Val::Optional(None)),
        Val::Optional(Some(v)) => match index(v, key) {
            Ok(x) => Ok(Val::Optional(Some(Rc::new(x)))),
            Err(e)
                if e.message.starts_with("no such key")
                    || e.message.starts_with("index out of bounds") =>
            {
                Ok(Val::Optional(None))
            }
            Err(e) => Err(e),
        },
        _ => Err(EvalError::no_such_overload()),
    }
}

/// `l[?i]` / `m[?k]`.
fn optional_index<'a>(operand: &Val<'a>, key: &Val<'a>) -> EvalResult<'a> {
    let target = match operand {
        Val::Optional(None) => return Ok(Val::Optional(None)),
        Val::Optional(Some(v)) => (**v).clone(),
        other => other.clone(),
    };
    match index(&target, key) {
        Ok(v) => Ok(Val::Optional(Some(Rc::new(v)))),
        Err(e)
            if e.message.starts_with("no such key")
                || e.message.starts_with("index out of bounds") =>
        {
            Ok(Val::Optional(None))
        }
        Err(e) => Err(e),
    }
}

fn list_index(key: &Val<'_>) -> Result<i64, EvalError> {
    match key {
        Val::Int(i) => Ok(*i),
        Val::Uint(u) => {
            i64::try_from(*u).map_err(|_| EvalError::new(format!("index out of bounds: {u}")))
        }
        Val::Double(d) if d.fract() == 0.0 => Ok(*d as i64),
        other => Err(EvalError::new(format!(
            "unsupported index type '{}' in list",
            other.type_name()
        ))),
    }
}

/// `l + r`: the result keeps `l`'s list kind (a set or map list merges `r` into it).
fn concat_lists<'a>(l: List<'a>, r: &List<'a>) -> EvalResult<'a> {
    let kind = l.kind().clone();
    let mut items = match l {
        List::Owned(rc, _) => Rc::try_unwrap(rc).unwrap_or_else(|rc| (*rc).clone()),
        List::Json(..) => l.items()?,
    };
    let right = r.items()?;
    match &kind {
        ListKind::Atomic => items.extend(right),
        ListKind::Set => {
            for v in right {
                let mut seen = false;
                for x in &items {
                    if equals(x, &v)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    items.push(v);
                }
            }
        }
        ListKind::Map(keys) => {
            for v in right {
                let kv = map_list_key(&v, keys)?;
                let mut replaced = false;
                for x in items.iter_mut() {
                    let kx = map_list_key(x, keys)?;
                    let mut same = true;
                    for (a, b) in kx.iter().zip(&kv) {
                        let eq = match (a, b) {
                            (None, None) => true,
                            (Some(a), Some(b)) => equals(a, b)?,
                            _ => false,
                        };
                        if !eq {
                            same = false;
                            break;
                        }
                    }
                    if same {
                        *x = v.clone();
                        replaced = true;
                        break;
                    }
                }
                if !replaced {
                    items.push(v);
                }
            }
        }
    }
    Ok(Val::List(List::Owned(Rc::new(items), kind)))
}

// ---------------------------------------------------------------------------------------
// Standard functions

fn standard<'a>(name: &str, member: bool, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    Some(match (name, args) {
        ("size", [v]) => match v {
            Val::Str(s) => Ok(Val::Int(s.chars().count() as i64)),
            Val::Bytes(b) => Ok(Val::Int(b.len() as i64)),
            Val::List(l) => Ok(Val::Int(l.len() as i64)),
            Val::Map(m) => Ok(Val::Int(m.len() as i64)),
            _ => Err(EvalError::no_such_overload()),
        },
        ("contains", [Val::Str(s), Val::Str(sub)]) if member => bool_val(s.contains(&**sub)),
        ("startsWith", [Val::Str(s), Val::Str(p)]) if member => bool_val(s.starts_with(&**p)),
        ("endsWith", [Val::Str(s), Val::Str(p)]) if member => bool_val(s.ends_with(&**p)),
        ("matches", [Val::Str(s), Val::Str(p)]) => regex(p).map(|re| Val::Bool(re.is_match(s))),
        ("int", [v]) if !member => to_int(v),
        ("uint", [v]) if !member => to_uint(v),
        ("double", [v]) if !member => to_double(v),
        ("string", [v]) if !member => to_string(v),
        ("bytes", [v]) if !member => match v {
            Val::Bytes(_) => Ok(v.clone()),
            Val::Str(s) => Ok(Val::Bytes(Rc::from(s.as_bytes()))),
            _ => Err(EvalError::no_such_overload()),
        },
        ("bool", [v]) if !member => match v {
            Val::Bool(_) => Ok(v.clone()),
            Val::Str(s) => match &**s {
                "1" | "t" | "true" | "TRUE" | "True" => bool_val(true),
                "0" | "f" | "false" | "FALSE" | "False" => bool_val(false),
                _ => err("type conversion error from 'string' to 'bool'"),
            },
            _ => Err(EvalError::no_such_overload()),
        },
        ("duration", [v]) if !member => match v {
            Val::Duration(_) => Ok(v.clone()),
            Val::Str(s) => crate::duration::go_parse_duration(s)
                .map(Val::Duration)
                .ok_or_else(|| EvalError::new(format!("time: invalid duration \"{s}\""))),
            _ => Err(EvalError::no_such_overload()),
        },
        ("timestamp", [v]) if !member => match v {
            Val::Timestamp(_) => Ok(v.clone()),
            Val::Str(s) => match DateTime::parse_from_rfc3339(s) {
                Ok(t) => check_timestamp_range(t.with_timezone(&Utc)),
                Err(_) => err(format!(
                    "parsing time \"{s}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                )),
            },
            Val::Int(secs) => match DateTime::from_timestamp(*secs, 0) {
                Some(t) => check_timestamp_range(t),
                None => err("timestamp overflow"),
            },
            _ => Err(EvalError::no_such_overload()),
        },
        ("dyn", [v]) if !member => Ok(v.clone()),
        ("type", [v]) if !member => Ok(Val::Type(v.type_name())),
        (getter, [Val::Timestamp(t), rest @ ..]) if member && rest.len() <= 1 => {
            let tz = match rest.first() {
                None => None,
                Some(Val::Str(z)) => Some(z.clone()),
                Some(_) => return Some(Err(EvalError::no_such_overload())),
            };
            return timestamp_getter(getter, t, tz.as_deref());
        }
        (getter, [Val::Duration(d)]) if member => {
            let v = match getter {
                "getHours" => d / 3_600_000_000_000,
                "getMinutes" => d / 60_000_000_000,
                "getSeconds" => d / 1_000_000_000,
                "getMilliseconds" => d / 1_000_000,
                _ => return None,
            };
            Ok(Val::Int(v))
        }
        _ => return None,
    })
}

fn to_int<'a>(v: &Val<'a>) -> EvalResult<'a> {
    match v {
        Val::Int(_) => Ok(v.clone()),
        Val::Uint(u) => i64::try_from(*u)
            .map(Val::Int)
            .map_err(|_| EvalError::new("range error converting uint to int")),
        Val::Double(d) => {
            if d.is_nan() || *d <= -9.223_372_036_854_776e18 || *d >= 9.223_372_036_854_776e18 {
                err("range error converting double to int")
            } else {
                Ok(Val::Int(*d as i64))
            }
        }
        Val::Str(s) => s.parse::<i64>().map(Val::Int).map_err(|_| {
            EvalError::new(format!("strconv.ParseInt: parsing \"{s}\": invalid syntax"))
        }),
        Val::Timestamp(t) => Ok(Val::Int(t.timestamp())),
        Val::Duration(d) => Ok(Val::Int(*d)),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn to_uint<'a>(v: &Val<'a>) -> EvalResult<'a> {
    match v {
        Val::Uint(_) => Ok(v.clone()),
        Val::Int(i) => u64::try_from(*i)
            .map(Val::Uint)
            .map_err(|_| EvalError::new("range error converting int to uint")),
        Val::Double(d) => {
            if d.is_nan() || *d < 0.0 || *d >= 1.8446744073709552e19 {
                err("range error converting double to uint")
            } else {
                Ok(Val::Uint(*d as u64))
            }
        }
        Val::Str(s) => s.parse::<u64>().map(Val::Uint).map_err(|_| {
            EvalError::new(format!(
                "strconv.ParseUint: parsing \"{s}\": invalid syntax"
            ))
        }),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn to_double<'a>(v: &Val<'a>) -> EvalResult<'a> {
    match v {
        Val::Double(_) => Ok(v.clone()),
        Val::Int(i) => Ok(Val::Double(*i as f64)),
        Val::Uint(u) => Ok(Val::Double(*u as f64)),
        Val::Str(s) => s.parse::<f64>().map(Val::Double).map_err(|_| {
            EvalError::new(format!(
                "strconv.ParseFloat: parsing \"{s}\": invalid syntax"
            ))
        }),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn to_string<'a>(v: &Val<'a>) -> EvalResult<'a> {
    Ok(Val::str(&match v {
        Val::Str(_) => return Ok(v.clone()),
        Val::Int(i) => i.to_string(),
        Val::Uint(u) => u.to_string(),
        Val::Double(d) => crate::goformat::go_float_v(*d),
        Val::Bool(b) => b.to_string(),
        Val::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => s.to_string(),
            Err(_) => return err("invalid UTF-8 in bytes, cannot convert to string"),
        },
        Val::Duration(d) => duration_string(*d),
        Val::Timestamp(t) => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        Val::Ext(e) => match e.to_string_val() {
            Some(s) => s,
            None => return Err(EvalError::no_such_overload()),
        },
        _ => return Err(EvalError::no_such_overload()),
    }))
}

fn timestamp_getter<'a>(
    getter: &str,
    t: &DateTime<Utc>,
    tz: Option<&str>,
) -> Option<EvalResult<'a>> {
    let offset = match tz {
        None => FixedOffset::east_opt(0),
        Some(z) => parse_fixed_zone(z),
    };
    let Some(offset) = offset else {
        return Some(err(format!("unknown time zone {}", tz.unwrap_or_default())));
    };
    let local = t.with_timezone(&offset);
    let v = match getter {
        "getFullYear" => local.year() as i64,
        "getMonth" => local.month0() as i64,
        "getDayOfYear" => local.ordinal0() as i64,
        "getDayOfMonth" => local.day0() as i64,
        "getDate" => local.day() as i64,
        "getDayOfWeek" => local.weekday().num_days_from_sunday() as i64,
        "getHours" => local.hour() as i64,
        "getMinutes" => local.minute() as i64,
        "getSeconds" => local.second() as i64,
        "getMilliseconds" => (local.nanosecond() / 1_000_000) as i64,
        _ => return None,
    };
    Some(Ok(Val::Int(v)))
}

/// `UTC` or a fixed `±HH:MM` offset (IANA zone names need a time zone database).
fn parse_fixed_zone(z: &str) -> Option<FixedOffset> {
    if z == "UTC" {
        return FixedOffset::east_opt(0);
    }
    let (sign, rest) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => (1, z),
    };
    let (h, m) = rest.split_once(':')?;
    let secs = h.parse::<i32>().ok()? * 3600 + m.parse::<i32>().ok()? * 60;
    FixedOffset::east_opt(sign * secs)
}

/// A compiled RE2 pattern (Go syntax), cached for the process: rules reuse a few
/// patterns over and over.
pub fn regex(pattern: &str) -> Result<Arc<Regex>, EvalError> {
    static CACHE: LazyLock<Mutex<HashMap<String, Arc<Regex>>>> =
        LazyLock::new(|| Mutex::new(HashMap::new()));
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(r) = cache.get(pattern) {
        return Ok(r.clone());
    }
    let re = crate::schema::structural::compile_go_regexp(pattern)
        .map_err(|e| EvalError::new(e.to_string()))?;
    let re = Arc::new(re);
    if cache.len() > 4096 {
        cache.clear();
    }
    cache.insert(pattern.to_string(), re.clone());
    Ok(re)
}

// ---------------------------------------------------------------------------------------
// cel-go strings extension (version 2)

fn strings_ext<'a>(name: &str, member: bool, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    if name == "strings.quote" {
        return Some(match args {
            [Val::Str(s)] => Ok(Val::str(&quote(s))),
            _ => Err(EvalError::no_such_overload()),
        });
    }
    if name == "join" && member {
        let [Val::List(l), rest @ ..] = args else {
            return None;
        };
        let sep = match rest {
            [] => "",
            [Val::Str(s)] => s,
            _ => return Some(Err(EvalError::no_such_overload())),
        };
        return Some((|| {
            let mut out = String::new();
            for i in 0..l.len() {
                if i > 0 {
                    out.push_str(sep);
                }
                match l.get(i)? {
                    Val::Str(s) => out.push_str(&s),
                    other => return err(format!("join: invalid input: {}", display(&other))),
                }
            }
            Ok(Val::str(&out))
        })());
    }
    if name == "format" && member {
        if let [Val::Str(f), Val::List(l)] = args {
            return Some(
                l.items()
                    .and_then(|items| super::format::format(f, &items))
                    .map(|s| Val::str(&s)),
            );
        }
        return None;
    }
    let (s, rest) = match args.split_first() {
        Some((Val::Str(s), rest)) if member => (s.clone(), rest),
        _ => return None,
    };
    let runes = || s.chars().collect::<Vec<char>>();
    Some(match (name, rest) {
        ("charAt", [Val::Int(i)]) => {
            let r = runes();
            if *i < 0 || *i as usize > r.len() {
                err(format!("index out of range: {i}"))
            } else if *i as usize == r.len() {
                Ok(Val::str(""))
            } else {
                Ok(Val::str(&r[*i as usize].to_string()))
            }
        }
        ("indexOf", [Val::Str(sub)]) => index_of(&runes(), sub, 0),
        ("indexOf", [Val::Str(sub), Val::Int(off)]) => index_of(&runes(), sub, *off),
        ("lastIndexOf", [Val::Str(sub)]) => {
            let r = runes();
            if sub.is_empty() {
                Ok(Val::Int(r.len() as i64))
            } else if s.len() < sub.len() {
                Ok(Val::Int(-1))
            } else {
                last_index_of(&r, sub, r.len() as i64 - 1)
            }
        }
        ("lastIndexOf", [Val::Str(sub), Val::Int(off)]) => last_index_of(&runes(), sub, *off),
        ("lowerAscii", []) => Ok(Val::str(&s.to_ascii_lowercase())),
        ("upperAscii", []) => Ok(Val::str(&s.to_ascii_uppercase())),
        ("replace", [Val::Str(old), Val::Str(new)]) => Ok(Val::str(&go_replace(&s, old, new, -1))),
        ("replace", [Val::Str(old), Val::Str(new), Val::Int(n)]) => {
            Ok(Val::str(&go_replace(&s, old, new, *n)))
        }
        ("split", [Val::Str(sep)]) => Ok(string_list(go_split(&s, sep, -1))),
        ("split", [Val::Str(sep), Val::Int(n)]) => Ok(string_list(go_split(&s, sep, *n))),
        ("substring", [Val::Int(start)]) => {
            let r = runes();
            if *start < 0 || *start as usize > r.len() {
                err(format!("index out of range: {start}"))
            } else {
                Ok(Val::str(&r[*start as usize..].iter().collect::<String>()))
            }
        }
        ("substring", [Val::Int(start), Val::Int(end)]) => {
            let r = runes();
            let l = r.len() as i64;
            if start > end {
                err(format!(
                    "invalid substring range. start: {start}, end: {end}"
                ))
            } else if *start < 0 || *start > l {
                err(format!("index out of range: {start}"))
            } else if *end < 0 || *end > l {
                err(format!("index out of range: {end}"))
            } else {
                Ok(Val::str(
                    &r[*start as usize..*end as usize].iter().collect::<String>(),
                ))
            }
        }
        ("trim", []) => Ok(Val::str(s.trim())),
        // kube's regex library.
        ("find", [Val::Str(re)]) => {
            regex(re).map(|r| Val::str(r.find(&s).map(|m| m.as_str()).unwrap_or_default()))
        }
        ("findAll", [Val::Str(re)]) => regex(re).map(|r| {
            let found: Vec<String> = r.find_iter(&s).map(|m| m.as_str().to_string()).collect();
            string_list(found)
        }),
        ("findAll", [Val::Str(re), Val::Int(n)]) => regex(re).map(|r| {
            let limit = if *n < 0 { usize::MAX } else { *n as usize };
            let found: Vec<String> = r
                .find_iter(&s)
                .take(limit)
                .map(|m| m.as_str().to_string())
                .collect();
            string_list(found)
        }),
        ("reverse", []) => Ok(Val::str(&s.chars().rev().collect::<String>())),
        _ => return None,
    })
}

fn string_list<'a>(items: Vec<String>) -> Val<'a> {
    strings_val(&items)
}

fn index_of<'a>(runes: &[char], sub: &str, offset: i64) -> EvalResult<'a> {
    if sub.is_empty() {
        return Ok(Val::Int(offset));
    }
    if offset < 0 {
        return err(format!("index out of range: {offset}"));
    }
    let sub: Vec<char> = sub.chars().collect();
    let off = offset as usize;
    if off >= runes.len() {
        return Ok(Val::Int(-1));
    }
    let end = (runes.len() + 1).saturating_sub(sub.len());
    for i in off..end {
        if runes[i..i + sub.len()] == sub[..] {
            return Ok(Val::Int(i as i64));
        }
    }
    Ok(Val::Int(-1))
}

fn last_index_of<'a>(runes: &[char], sub: &str, offset: i64) -> EvalResult<'a> {
    if sub.is_empty() {
        return Ok(Val::Int(offset));
    }
    if offset < 0 {
        return err(format!("index out of range: {offset}"));
    }
    let sub: Vec<char> = sub.chars().collect();
    let mut off = offset;
    if off as usize >= runes.len() {
        return Ok(Val::Int(-1));
    }
    if off > runes.len() as i64 - sub.len() as i64 {
        off = runes.len() as i64 - sub.len() as i64;
    }
    let mut i = off;
    while i >= 0 {
        let u = i as usize;
        if runes[u..u + sub.len()] == sub[..] {
            return Ok(Val::Int(i));
        }
        i -= 1;
    }
    Ok(Val::Int(-1))
}

/// Go's `strings.Replace` (n < 0: all).
fn go_replace(s: &str, old: &str, new: &str, n: i64) -> String {
    if n < 0 {
        if old.is_empty() {
            return go_replace(s, old, new, i64::MAX);
        }
        return s.replace(old, new);
    }
    if old.is_empty() {
        // Go inserts `new` before every rune and at the end, up to n times.
        let mut out = String::new();
        let mut count = 0;
        for c in s.chars() {
            if count < n {
                out.push_str(new);
                count += 1;
            }
            out.push(c);
        }
        if count < n {
            out.push_str(new);
        }
        return out;
    }
    s.replacen(old, new, usize::try_from(n).unwrap_or(usize::MAX))
}

/// Go's `strings.SplitN` (n < 0: all; 0: none).
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let chars: Vec<String> = s.chars().map(String::from).collect();
        if n < 0 || chars.len() as i64 <= n {
            return chars;
        }
        let k = (n - 1) as usize;
        let mut out: Vec<String> = chars[..k].to_vec();
        out.push(chars[k..].concat());
        return out;
    }
    if n < 0 {
        return s.split(sep).map(String::from).collect();
    }
    s.splitn(n as usize, sep).map(String::from).collect()
}

/// cel-go's `strings.quote`.
fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------------------
// Lists: kube's library and cel-go's lists extension (version 3)

fn lists_ext<'a>(name: &str, member: bool, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    if name == "lists.range" {
        return Some(match args {
            [Val::Int(n)] => Ok(Val::list((0..(*n).max(0)).map(Val::Int).collect())),
            _ => Err(EvalError::no_such_overload()),
        });
    }
    if let Some(set_op) = name.strip_prefix("sets.") {
        let [Val::List(a), Val::List(b)] = args else {
            return Some(Err(EvalError::no_such_overload()));
        };
        return Some((|| {
            let (a, b) = (a.items()?, b.items()?);
            let contains = |xs: &[Val<'a>], ys: &[Val<'a>]| -> Result<bool, EvalError> {
                for y in ys {
                    let mut found = false;
                    for x in xs {
                        if equals(x, y)? {
                            found = true;
                            break;
                        }
                    }
                    if !found {
                        return Ok(false);
                    }
                }
                Ok(true)
            };
            Ok(Val::Bool(match set_op {
                "contains" => contains(&a, &b)?,
                "equivalent" => contains(&a, &b)? && contains(&b, &a)?,
                _ => {
                    let mut any = false;
                    'outer: for y in &b {
                        for x in &a {
                            if equals(x, y)? {
                                any = true;
                                break 'outer;
                            }
                        }
                    }
                    any
                }
            }))
        })());
    }
    if !member {
        return None;
    }
    let (Val::List(l), rest) = args.split_first()? else {
        // indexOf/lastIndexOf on strings are the strings extension's.
        return None;
    };
    Some((|| match (name, rest) {
        ("isSorted", []) => {
            let items = l.items()?;
            for w in items.windows(2) {
                if compare(&w[0], &w[1])? == Some(Ordering::Greater) {
                    return Ok(Val::Bool(false));
                }
            }
            Ok(Val::Bool(true))
        }
        ("sum", []) => {
            let items = l.items()?;
            let mut acc = match items.first() {
                None => return Ok(Val::Int(0)),
                Some(v) => match v {
                    Val::Int(_) => Val::Int(0),
                    Val::Uint(_) => Val::Uint(0),
                    Val::Double(_) => Val::Double(0.0),
                    Val::Duration(_) => Val::Duration(0),
                    _ => return Err(EvalError::no_such_overload()),
                },
            };
            for v in &items {
                acc = add(&acc, v)?;
            }
            Ok(acc)
        }
        ("min" | "max", []) => {
            let items = l.items()?;
            let Some(mut best) = items.first().cloned() else {
                return err(format!("{name} called on empty list"));
            };
            for v in items.iter().skip(1) {
                let o = compare(v, &best)?;
                if (name == "min" && o == Some(Ordering::Less))
                    || (name == "max" && o == Some(Ordering::Greater))
                {
                    best = v.clone();
                }
            }
            Ok(best)
        }
        ("indexOf", [x]) => {
            for i in 0..l.len() {
                if equals(&l.get(i)?, x)? {
                    return Ok(Val::Int(i as i64));
                }
            }
            Ok(Val::Int(-1))
        }
        ("lastIndexOf", [x]) => {
            for i in (0..l.len()).rev() {
                if equals(&l.get(i)?, x)? {
                    return Ok(Val::Int(i as i64));
                }
            }
            Ok(Val::Int(-1))
        }
        ("slice", [Val::Int(start), Val::Int(end)]) => {
            let len = l.len() as i64;
            if *start < 0 || *end < 0 {
                return err(format!(
                    "cannot slice({start}, {end}), negative indexes not supported"
                ));
            }
            if start > end {
                return err(format!(
                    "cannot slice({start}, {end}), start index must be less than or equal to end index"
                ));
            }
            if *end > len {
                return err(format!(
                    "cannot slice({start}, {end}), list is length {len}"
                ));
            }
            let items = l.items()?;
            Ok(Val::list(items[*start as usize..*end as usize].to_vec()))
        }
        ("flatten", []) => flatten(l, 1),
        ("flatten", [Val::Int(depth)]) => {
            if *depth < 0 {
                return err("level must be non-negative");
            }
            flatten(l, *depth)
        }
        ("distinct", []) => {
            let mut out: Vec<Val<'a>> = Vec::new();
            for v in l.items()? {
                let mut seen = false;
                for x in &out {
                    if equals(x, &v)? {
                        seen = true;
                        break;
                    }
                }
                if !seen {
                    out.push(v);
                }
            }
            Ok(Val::list(out))
        }
        ("reverse", []) => {
            let mut items = l.items()?;
            items.reverse();
            Ok(Val::list(items))
        }
        ("sort", []) => {
            let mut items = l.items()?;
            let mut failure = None;
            items.sort_by(|a, b| match compare(a, b) {
                Ok(o) => o.unwrap_or(Ordering::Equal),
                Err(e) => {
                    failure.get_or_insert(e);
                    Ordering::Equal
                }
            });
            match failure {
                Some(e) => Err(e),
                None => Ok(Val::list(items)),
            }
        }
        ("first", []) => Ok(Val::Optional(if l.is_empty() {
            None
        } else {
            Some(Rc::new(l.get(0)?))
        })),
        ("last", []) => Ok(Val::Optional(if l.is_empty() {
            None
        } else {
            Some(Rc::new(l.get(l.len() - 1)?))
        })),
        _ => Err(EvalError::no_such_overload()),
    })())
}

fn flatten<'a>(l: &List<'a>, depth: i64) -> EvalResult<'a> {
    let mut out = Vec::new();
    for v in l.items()? {
        match (&v, depth) {
            (Val::List(inner), d) if d > 0 => match flatten(inner, d - 1)? {
                Val::List(flat) => out.extend(flat.items()?),
                other => out.push(other),
            },
            _ => out.push(v),
        }
    }
    Ok(Val::list(out))
}

/// `cel.@mapInsert(m, k, v)` of `transformMap`: a new map with one more entry.
fn map_insert(args: Args<'_>) -> EvalResult<'_> {
    let [Val::Map(m), k, v] =
        <[Val<'_>; 3]>::try_from(args).map_err(|_| EvalError::no_such_overload())?
    else {
        return Err(EvalError::no_such_overload());
    };
    if m.get(&k)?.is_some() {
        return err(format!("insert failed: key {} already exists", display(&k)));
    }
    let mut entries: Vec<(Val<'_>, Val<'_>)> = Vec::with_capacity(m.len() + 1);
    for key in m.keys() {
        if let Some(val) = m.get(&key)? {
            entries.push((key, val));
        }
    }
    entries.push((k, v));
    Ok(Val::Map(Map::Owned(Rc::new(entries))))
}

// ---------------------------------------------------------------------------------------
// Optionals

fn optionals<'a>(name: &str, member: bool, args: &[Val<'a>]) -> Option<EvalResult<'a>> {
    Some(match (name, member, args) {
        ("optional.of", false, [v]) => Ok(Val::Optional(Some(Rc::new(v.clone())))),
        ("optional.ofNonZeroValue", false, [v]) => Ok(Val::Optional(if is_zero(v) {
            None
        } else {
            Some(Rc::new(v.clone()))
        })),
        ("optional.none", false, []) => Ok(Val::Optional(None)),
        ("hasValue", true, [Val::Optional(o)]) => bool_val(o.is_some()),
        ("value", true, [Val::Optional(o)]) => match o {
            Some(v) => Ok((**v).clone()),
            None => err("optional.none() dereference"),
        },
        ("or", true, [Val::Optional(o), Val::Optional(other)]) => Ok(match o {
            Some(_) => Val::Optional(o.clone()),
            None => Val::Optional(other.clone()),
        }),
        ("orValue", true, [Val::Optional(o), v]) => Ok(match o {
            Some(x) => (**x).clone(),
            None => v.clone(),
        }),
        _ => return None,
    })
}

fn is_zero(v: &Val<'_>) -> bool {
    match v {
        Val::Null => true,
        Val::Bool(b) => !b,
        Val::Int(i) => *i == 0,
        Val::Uint(u) => *u == 0,
        Val::Double(d) => *d == 0.0,
        Val::Str(s) => s.is_empty(),
        Val::Bytes(b) => b.is_empty(),
        Val::Duration(d) => *d == 0,
        Val::List(l) => l.is_empty(),
        Val::Map(m) => m.is_empty(),
        Val::Optional(o) => o.is_none(),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Runtime cost (cel-go's `costCall` and kube's `CostEstimator.CallCost`)

fn ceil_factor(size: u64, factor: f64) -> u64 {
    (size as f64 * factor).ceil() as u64
}

/// kube's `traversalCost`: bytes of strings, sum over lists and maps.
fn traversal_cost(v: &Val<'_>) -> u64 {
    match v {
        Val::Str(s) => (s.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64,
        Val::Bytes(b) => (b.len() as f64 * STRING_TRAVERSAL_COST_FACTOR) as u64,
        Val::List(l) => l
            .items()
            .map(|items| items.iter().map(traversal_cost).sum())
            .unwrap_or(1),
        Val::Map(m) => m
            .keys()
            .iter()
            .map(|k| {
                traversal_cost(k)
                    + m.get(k)
                        .ok()
                        .flatten()
                        .map(|v| traversal_cost(&v))
                        .unwrap_or(1)
            })
            .sum(),
        _ => 1,
    }
}

/// The runtime cost of a call (`args` with the target first for member calls).
pub fn call_cost(name: &str, member: bool, args: &[Val<'_>], result: &EvalResult<'_>) -> u64 {
    let size = |i: usize| args.get(i).map(Val::cost_size).unwrap_or(1);
    let is_list_target = matches!(args.first(), Some(Val::List(_)));
    match name {
        "isSorted" | "sum" | "max" | "min" if member => {
            return args.first().map(traversal_cost).unwrap_or(0)
        }
        "indexOf" | "lastIndexOf" if member && is_list_target => {
            return args.first().map(traversal_cost).unwrap_or(0)
        }
        "indexOf" | "lastIndexOf" if member => {
            return args.first().map(traversal_cost).unwrap_or(0)
        }
        "url" | "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            return ceil_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
        }
        "replace" | "split" => return ceil_factor(size(0), 2.0 * STRING_TRAVERSAL_COST_FACTOR),
        "join" => {
            let rs = result.as_ref().map(Val::cost_size).unwrap_or(1);
            return ceil_factor(rs, 2.0 * STRING_TRAVERSAL_COST_FACTOR);
        }
        "find" | "findAll" if args.len() >= 2 => {
            let s = ceil_factor(1 + size(0), STRING_TRAVERSAL_COST_FACTOR);
            let r = ceil_factor(size(1), REGEX_STRING_LENGTH_COST_FACTOR);
            return s * r;
        }
        _ => {}
    }
    if let Some(c) = kubelib::call_cost(name, args) {
        return c;
    }
    match name {
        "startsWith" | "endsWith" if member => ceil_factor(size(0), STRING_TRAVERSAL_COST_FACTOR),
        "bytes" | "string" if matches!(args.first(), Some(Val::Str(_) | Val::Bytes(_))) => {
            ceil_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
        }
        "strings.quote" | "format" => ceil_factor(size(0), STRING_TRAVERSAL_COST_FACTOR),
        operators::IN if matches!(args.get(1), Some(Val::List(_))) => size(1),
        operators::EQUALS | operators::NOT_EQUALS => {
            if matches!(args.first(), Some(Val::Ext(_))) {
                return 1;
            }
            ceil_factor(size(0).min(size(1)), STRING_TRAVERSAL_COST_FACTOR)
        }
        operators::LESS
        | operators::GREATER
        | operators::LESS_EQUALS
        | operators::GREATER_EQUALS
            if matches!(args.first(), Some(Val::Str(_) | Val::Bytes(_))) =>
        {
            ceil_factor(size(0).min(size(1)), STRING_TRAVERSAL_COST_FACTOR)
        }
        operators::ADD if matches!(args.first(), Some(Val::Str(_) | Val::Bytes(_))) => {
            ceil_factor(size(0) + size(1), STRING_TRAVERSAL_COST_FACTOR)
        }
        "matches" => {
            let s = ceil_factor(1 + size(0), STRING_TRAVERSAL_COST_FACTOR);
            let r = ceil_factor(size(1), REGEX_STRING_LENGTH_COST_FACTOR);
            s * r
        }
        "contains" if member => {
            ceil_factor(size(0), STRING_TRAVERSAL_COST_FACTOR)
                * ceil_factor(size(1), STRING_TRAVERSAL_COST_FACTOR)
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_split_and_replace() {
        assert_eq!(go_split("a,b,c", ",", 2), vec!["a", "b,c"]);
        assert_eq!(go_split("abc", "", -1), vec!["a", "b", "c"]);
        assert!(go_split("a,b", ",", 0).is_empty());
        assert_eq!(go_replace("aaa", "a", "b", 2), "bba");
        assert_eq!(go_replace("ab", "", "-", -1), "-a-b-");
    }
}
