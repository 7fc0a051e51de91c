//! JSON objects -> protobuf message bytes, as kube's generated `Marshal` writes them:
//! fields by number, non-pointer scalars and structs always (zero or not), pointers,
//! lists and maps only when set, map entries sorted by key.

use super::table::{Field, Message, Special, Ty, TABLE};
use super::wire::{put_bytes, put_key, put_varint};
use super::{duration, MAX_DEPTH};
use serde_json::{Map, Value};

/// Encode `v` as message `msg`. Values of the wrong JSON type count as zero.
pub fn message(msg: usize, v: &Value, depth: usize, out: &mut Vec<u8>) {
    if depth > MAX_DEPTH {
        return;
    }
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || message_inner(msg, v, depth, out))
}

fn message_inner(msg: usize, v: &Value, depth: usize, out: &mut Vec<u8>) {
    let m = &TABLE.messages[msg];
    if m.special != Special::None {
        return special(m, v, depth, out);
    }
    let empty = Map::new();
    let obj = v.as_object().unwrap_or(&empty);
    for f in &m.fields {
        if f.inline {
            let mut sub = Vec::new();
            message(msg_of(f), v, depth + 1, &mut sub);
            put_bytes(out, f.num, &sub);
            continue;
        }
        let value = obj.get(&f.name).filter(|v| !v.is_null());
        field(f, value, depth, out);
    }
}

fn msg_of(f: &Field) -> usize {
    match f.ty {
        Ty::Msg(i) => i,
        _ => 0,
    }
}

fn field(f: &Field, value: Option<&Value>, depth: usize, out: &mut Vec<u8>) {
    if f.map {
        let Some(Value::Object(map)) = value else {
            return;
        };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort();
        for k in keys {
            let mut entry = Vec::new();
            put_bytes(&mut entry, 1, k.as_bytes());
            one(2, f.ty, Some(&map[k]), depth, &mut entry);
            put_bytes(out, f.num, &entry);
        }
        return;
    }
    if f.repeated {
        for item in value.and_then(Value::as_array).into_iter().flatten() {
            one(f.num, f.ty, Some(item), depth, out);
        }
        return;
    }
    if f.pointer && value.is_none() {
        return;
    }
    if f.ty == Ty::Bytes && value.is_none() {
        return;
    }
    one(f.num, f.ty, value, depth, out);
}

/// Write one value (its zero when absent).
fn one(num: u32, ty: Ty, value: Option<&Value>, depth: usize, out: &mut Vec<u8>) {
    match ty {
        Ty::Str => {
            let s = value.and_then(Value::as_str).unwrap_or("");
            put_bytes(out, num, s.as_bytes());
        }
        Ty::Bytes => {
            use base64::Engine;
            let s = value.and_then(Value::as_str).unwrap_or("");
            let b = base64::engine::general_purpose::STANDARD
                .decode(s)
                .unwrap_or_default();
            put_bytes(out, num, &b);
        }
        Ty::Bool => {
            put_key(out, num, 0);
            put_varint(
                out,
                u64::from(value.and_then(Value::as_bool).unwrap_or(false)),
            );
        }
        Ty::Int32 | Ty::Int64 => {
            put_key(out, num, 0);
            let n = value.and_then(int).unwrap_or(0);
            let n = if ty == Ty::Int32 {
                i64::from(n as i32)
            } else {
                n
            };
            put_varint(out, n as u64);
        }
        Ty::Double => {
            put_key(out, num, 1);
            let f = value.and_then(Value::as_f64).unwrap_or(0.0);
            out.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Ty::Msg(i) => {
            let mut sub = Vec::new();
            message(i, value.unwrap_or(&Value::Null), depth + 1, &mut sub);
            put_bytes(out, num, &sub);
        }
    }
}

fn int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| u as i64))
        .or_else(|| v.as_f64().map(|f| f as i64))
}

fn special(m: &Message, v: &Value, depth: usize, out: &mut Vec<u8>) {
    match m.special {
        Special::Time | Special::MicroTime => {
            // kube writes nothing for the zero time, seconds only for Time.
            let Some(t) = v
                .as_str()
                .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            else {
                return;
            };
            put_key(out, 1, 0);
            put_varint(out, t.timestamp() as u64);
            if m.special == Special::MicroTime {
                put_key(out, 2, 0);
                let micros = t.timestamp_subsec_micros();
                put_varint(out, u64::from(micros * 1000));
            }
        }
        Special::Duration => {
            put_key(out, 1, 0);
            let nanos = v.as_str().and_then(duration::parse).unwrap_or(0);
            put_varint(out, nanos as u64);
        }
        Special::Quantity => {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => "0".to_string(),
            };
            put_bytes(out, 1, s.as_bytes());
        }
        Special::IntOrString => {
            let (ty, i, s) = match v {
                Value::String(s) => (1, 0, s.as_str()),
                v => (0, int(v).unwrap_or(0), ""),
            };
            put_key(out, 1, 0);
            put_varint(out, ty);
            put_key(out, 2, 0);
            put_varint(out, i64::from(i as i32) as u64);
            put_bytes(out, 3, s.as_bytes());
        }
        Special::RawJson => {
            if !v.is_null() {
                put_bytes(out, 1, &serde_json::to_vec(v).unwrap_or_default());
            }
        }
        Special::Items => {
            for s in v.as_array().into_iter().flatten() {
                put_bytes(out, 1, s.as_str().unwrap_or("").as_bytes());
            }
        }
        Special::PropsOrArray | Special::PropsOrBool | Special::PropsOrStringArray => {
            let props = TABLE.message(
                "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
            );
            let Some(props) = props else { return };
            let schema_num = if m.special == Special::PropsOrBool {
                2
            } else {
                1
            };
            match (m.special, v) {
                (Special::PropsOrBool, Value::Bool(b)) => {
                    put_key(out, 1, 0);
                    put_varint(out, u64::from(*b));
                }
                (Special::PropsOrBool, Value::Object(_)) => {
                    put_key(out, 1, 0);
                    put_varint(out, 1);
                    one(schema_num, Ty::Msg(props), Some(v), depth, out);
                }
                (Special::PropsOrArray, Value::Array(items)) => {
                    for item in items {
                        one(2, Ty::Msg(props), Some(item), depth, out);
                    }
                }
                (Special::PropsOrStringArray, Value::Array(items)) => {
                    for item in items {
                        put_bytes(out, 2, item.as_str().unwrap_or("").as_bytes());
                    }
                }
                (_, Value::Object(_)) => one(schema_num, Ty::Msg(props), Some(v), depth, out),
                _ => {}
            }
        }
        Special::None => {}
    }
}
