//! cel-go's `string.format(list)` (strings extension): `%s`, `%d`, `%f`, `%e`, `%b`,
//! `%o`, `%x`, `%X` and `%%`, with the `en_US` locale cel-go formats numbers in.

use super::value::display;
use super::value::{EvalError, Val};

/// Format `args` into `f`.
pub fn format(f: &str, args: &[Val<'_>]) -> Result<String, EvalError> {
    let mut out = String::new();
    let mut chars = f.chars().peekable();
    let mut next = 0usize;
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            out.push('%');
            continue;
        }
        let mut precision: Option<usize> = None;
        if chars.peek() == Some(&'.') {
            chars.next();
            let mut digits = String::new();
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                digits.push(d);
                chars.next();
            }
            precision =
                Some(digits.parse().map_err(|_| {
                    EvalError::new("unable to convert precision specifier to integer")
                })?);
        }
        let Some(verb) = chars.next() else {
            return Err(EvalError::new("unexpected end of format string"));
        };
        let Some(arg) = args.get(next) else {
            return Err(EvalError::new(format!("index {next} out of range")));
        };
        next += 1;
        out.push_str(&clause(verb, precision, arg)?);
    }
    if next < args.len() {
        return Err(EvalError::new(format!(
            "too many arguments supplied to string.format (expected {next}, got {})",
            args.len()
        )));
    }
    Ok(out)
}

fn clause(verb: char, precision: Option<usize>, arg: &Val<'_>) -> Result<String, EvalError> {
    match verb {
        's' => format_string(arg),
        'd' => match arg {
            Val::Int(i) => Ok(i.to_string()),
            Val::Uint(u) => Ok(u.to_string()),
            _ => Err(EvalError::new(format!(
                "error during formatting: decimal clause can only be used on integers, was given {}",
                arg.type_name()
            ))),
        },
        'f' => {
            let d = float_arg(arg, "fixed-point")?;
            Ok(group_thousands(&format!("{:.*}", precision.unwrap_or(6), d)))
        }
        'e' => {
            let d = float_arg(arg, "scientific")?;
            // cel-go passes the precision as a width (`%6e`).
            let s = go_exp(d, 6);
            Ok(format!("{s:>width$}", width = precision.unwrap_or(6)))
        }
        'b' | 'o' | 'x' | 'X' => radix(verb, arg),
        other => Err(EvalError::new(format!(
            "could not parse formatting clause: unrecognized formatting clause \"{other}\""
        ))),
    }
}

fn float_arg(arg: &Val<'_>, clause: &str) -> Result<f64, EvalError> {
    match arg {
        Val::Double(d) => Ok(*d),
        Val::Str(s) if &**s == "NaN" => Ok(f64::NAN),
        Val::Str(s) if &**s == "Infinity" => Ok(f64::INFINITY),
        Val::Str(s) if &**s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => Err(EvalError::new(format!(
            "error during formatting: {clause} clause can only be used on doubles, was given {}",
            arg.type_name()
        ))),
    }
}

fn go_exp(d: f64, precision: usize) -> String {
    if !d.is_finite() {
        return display(&Val::Double(d));
    }
    let s = format!("{d:.precision$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

fn group_thousands(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map(|r| ("-", r)).unwrap_or(("", s));
    let (int, frac) = rest
        .split_once('.')
        .map(|(a, b)| (a, Some(b)))
        .unwrap_or((rest, None));
    if !int.bytes().all(|b| b.is_ascii_digit()) {
        return s.to_string();
    }
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

fn radix(verb: char, arg: &Val<'_>) -> Result<String, EvalError> {
    let fmt_i = |i: i128| match verb {
        'b' => format!("{}{:b}", if i < 0 { "-" } else { "" }, i.unsigned_abs()),
        'o' => format!("{}{:o}", if i < 0 { "-" } else { "" }, i.unsigned_abs()),
        'x' => format!("{}{:x}", if i < 0 { "-" } else { "" }, i.unsigned_abs()),
        _ => format!("{}{:X}", if i < 0 { "-" } else { "" }, i.unsigned_abs()),
    };
    match arg {
        Val::Int(i) => Ok(fmt_i(*i as i128)),
        Val::Uint(u) => Ok(fmt_i(*u as i128)),
        Val::Bool(b) if verb == 'b' => Ok(if *b { "1" } else { "0" }.into()),
        Val::Str(s) if verb == 'x' || verb == 'X' => Ok(hex(s.as_bytes(), verb == 'X')),
        Val::Bytes(b) if verb == 'x' || verb == 'X' => Ok(hex(b, verb == 'X')),
        _ => Err(EvalError::new(format!(
            "error during formatting: only integers{} can be formatted with this clause, was given {}",
            if verb == 'b' { " and bools" } else { "" },
            arg.type_name()
        ))),
    }
}

fn hex(b: &[u8], upper: bool) -> String {
    b.iter()
        .map(|x| {
            if upper {
                format!("{x:02X}")
            } else {
                format!("{x:02x}")
            }
        })
        .collect()
}

fn format_string(arg: &Val<'_>) -> Result<String, EvalError> {
    Ok(match arg {
        Val::List(l) => {
            let items = l.items()?;
            let parts: Result<Vec<String>, EvalError> = items.iter().map(quoted).collect();
            format!("[{}]", parts?.join(", "))
        }
        Val::Map(m) => {
            let mut pairs = Vec::new();
            for k in m.keys() {
                let v = m.get(&k)?.unwrap_or(Val::Null);
                pairs.push((quoted(&k)?, quoted(&v)?));
            }
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            let body: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
            format!("{{{}}}", body.join(", "))
        }
        Val::Type(t) => t.to_string(),
        Val::Optional(_) | Val::Preserved(_) => {
            return Err(EvalError::new(format!(
                "error during formatting: string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given {}",
                arg.type_name()
            )))
        }
        other => display(other),
    })
}

fn quoted(v: &Val<'_>) -> Result<String, EvalError> {
    Ok(match v {
        Val::Str(s) => crate::field::go_quote(s),
        Val::Bytes(b) => format!("b{}", crate::field::go_quote(&String::from_utf8_lossy(b))),
        Val::Double(d) if !d.is_finite() => crate::field::go_quote(&display(v)),
        Val::Double(d) => format!("{d:.6}"),
        Val::Timestamp(_) => format!("timestamp({})", crate::field::go_quote(&display(v))),
        Val::Duration(_) => format!("duration({})", crate::field::go_quote(&display(v))),
        Val::Type(t) => format!("type({t})"),
        other => format_string(other)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_cel_go() {
        assert_eq!(
            format("%s is %d", &[Val::str("x"), Val::Int(3)]).unwrap(),
            "x is 3"
        );
        assert_eq!(format("%.2f", &[Val::Double(1234.5)]).unwrap(), "1,234.50");
        assert_eq!(format("%x", &[Val::Int(255)]).unwrap(), "ff");
        assert_eq!(
            format("%s", &[Val::list(vec![Val::str("a"), Val::Int(1)])]).unwrap(),
            "[\"a\", 1]"
        );
        assert_eq!(format("100%%", &[]).unwrap(), "100%");
    }
}
