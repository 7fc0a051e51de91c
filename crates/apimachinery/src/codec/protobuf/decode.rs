//! Protobuf message bytes -> the JSON object kube's Go types would marshal to.
//!
//! Go's generated `Marshal` writes every non-pointer scalar (zero or not) and pointers
//! only when set; Go's JSON then drops `omitempty` zero scalars, keeps non-pointer
//! structs (their zero form too) unless `omitzero`. Decoding mirrors both steps.

use super::table::{Field, Message, Special, Ty, TABLE};
use super::wire::{Payload, Reader};
use super::{ProtobufError, MAX_DEPTH};
use base64::Engine;
use serde_json::{json, Map, Value};

/// What one field held on the wire.
enum Slot<'a> {
    One(Payload<'a>),
    Many(Vec<Payload<'a>>),
}

/// Decode message `msg`'s bytes into its JSON form.
pub fn message(msg: usize, b: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    if depth > MAX_DEPTH {
        return Err(ProtobufError::TooDeep);
    }
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || message_inner(msg, b, depth))
}

fn message_inner(msg: usize, b: &[u8], depth: usize) -> Result<Value, ProtobufError> {
    let m = &TABLE.messages[msg];
    let mut slots: Vec<Option<Slot>> = (0..m.fields.len()).map(|_| None).collect();
    let mut rd = Reader::new(b);
    while let Some((num, p)) = rd.next_field()? {
        let Some(i) = m.fields.iter().position(|f| u64::from(f.num) == num) else {
            continue;
        };
        let f = &m.fields[i];
        check_wire(f, &p)?;
        if f.repeated || f.map {
            match &mut slots[i] {
                Some(Slot::Many(v)) => v.push(p),
                s => *s = Some(Slot::Many(vec![p])),
            }
        } else {
            slots[i] = Some(Slot::One(p));
        }
    }
    if m.special != Special::None {
        return special(m, &slots, depth);
    }
    let mut out = Map::new();
    for (f, slot) in m.fields.iter().zip(&slots) {
        if f.inline {
            let v = match slot {
                Some(Slot::One(Payload::Bytes(b))) => message(msg_of(f), b, depth + 1)?,
                _ => zero(msg_of(f), depth + 1)?,
            };
            if let Value::Object(inner) = v {
                out.extend(inner);
            }
            continue;
        }
        if let Some(v) = field_json(f, slot.as_ref(), depth)? {
            out.insert(f.name.clone(), v);
        }
    }
    Ok(Value::Object(out))
}

fn msg_of(f: &Field) -> usize {
    match f.ty {
        Ty::Msg(i) => i,
        _ => 0,
    }
}

/// A wire type that does not fit the field's type: Go's "wrong wireType" error.
fn check_wire(f: &Field, p: &Payload) -> Result<(), ProtobufError> {
    let want = match f.ty {
        Ty::Str | Ty::Bytes | Ty::Msg(_) => 2,
        _ if f.map => 2,
        Ty::Bool | Ty::Int32 | Ty::Int64 => 0,
        Ty::Double => 1,
    };
    let got = p.wire_type();
    // Repeated numbers may come packed.
    if got == want || (f.repeated && got == 2 && !matches!(f.ty, Ty::Str | Ty::Bytes | Ty::Msg(_)))
    {
        return Ok(());
    }
    Err(ProtobufError::WrongWireType(got, f.go_name.clone()))
}

/// The JSON of one field, or `None` when Go's JSON would leave it out.
fn field_json(
    f: &Field,
    slot: Option<&Slot>,
    depth: usize,
) -> Result<Option<Value>, ProtobufError> {
    if f.map {
        let entries = match slot {
            Some(Slot::Many(v)) => v.as_slice(),
            _ => &[],
        };
        if entries.is_empty() {
            return Ok(None);
        }
        let mut out = Map::new();
        for p in entries {
            let Payload::Bytes(b) = p else { continue };
            let (k, v) = map_entry(f, b, depth)?;
            out.insert(k, v);
        }
        return Ok(Some(Value::Object(out)));
    }
    if f.repeated {
        let items = match slot {
            Some(Slot::Many(v)) => v.as_slice(),
            _ => &[],
        };
        let mut out = Vec::new();
        for p in items {
            match (f.ty, p) {
                (Ty::Bool | Ty::Int32 | Ty::Int64, Payload::Bytes(b)) => {
                    let mut rd = Reader::new(b);
                    while !rd.at_end() {
                        out.push(scalar(f.ty, &Payload::Varint(rd.varint()?))?);
                    }
                }
                (Ty::Double, Payload::Bytes(b)) => {
                    for c in b.chunks(8) {
                        let bits = u64::from_le_bytes(
                            c.try_into().map_err(|_| ProtobufError::UnexpectedEof)?,
                        );
                        out.push(json!(f64::from_bits(bits)));
                    }
                }
                _ => out.push(value(f.ty, p, depth)?),
            }
        }
        return Ok((!out.is_empty()).then_some(Value::Array(out)));
    }
    let v = match slot {
        Some(Slot::One(p)) => value(f.ty, p, depth)?,
        _ if f.pointer => return Ok(None),
        _ => match f.ty {
            Ty::Msg(i) => zero(i, depth + 1)?,
            t => zero_scalar(t),
        },
    };
    if f.pointer {
        return Ok(Some(v));
    }
    let empty = match &v {
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => matches!(f.ty, Ty::Bytes),
        _ => false,
    };
    let is_struct = matches!(f.ty, Ty::Msg(_));
    if f.omitzero && is_struct {
        let Ty::Msg(i) = f.ty else { return Ok(None) };
        if v == zero(i, depth + 1)? {
            return Ok(None);
        }
    }
    if empty && (f.omitempty || f.omitzero) && !is_struct {
        return Ok(None);
    }
    // A quantity or int-or-string is a struct to Go: `omitempty` does not drop it.
    Ok(Some(v))
}

fn map_entry(f: &Field, b: &[u8], depth: usize) -> Result<(String, Value), ProtobufError> {
    let mut rd = Reader::new(b);
    let (mut key, mut val) = (String::new(), None);
    while let Some((num, p)) = rd.next_field()? {
        match num {
            1 => key = string(&p, "Key")?,
            2 => {
                if !matches!(p, Payload::Bytes(_))
                    && matches!(f.ty, Ty::Str | Ty::Bytes | Ty::Msg(_))
                {
                    return Err(ProtobufError::WrongWireType(p.wire_type(), "Value".into()));
                }
                val = Some(value(f.ty, &p, depth)?)
            }
            _ => {}
        }
    }
    let val = match val {
        Some(v) => v,
        None => match f.ty {
            Ty::Msg(i) => zero(i, depth + 1)?,
            t => zero_scalar(t),
        },
    };
    Ok((key, val))
}

fn string(p: &Payload, field: &str) -> Result<String, ProtobufError> {
    match p {
        // Go keeps invalid UTF-8 in strings; its JSON writes U+FFFD for it.
        Payload::Bytes(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        p => Err(ProtobufError::WrongWireType(p.wire_type(), field.into())),
    }
}

fn scalar(ty: Ty, p: &Payload) -> Result<Value, ProtobufError> {
    Ok(match (ty, p) {
        (Ty::Bool, Payload::Varint(v)) => json!(*v != 0),
        (Ty::Int32, Payload::Varint(v)) => json!(*v as i32),
        (Ty::Int64, Payload::Varint(v)) => json!(*v as i64),
        (Ty::Double, Payload::Fixed64(v)) => {
            let f = f64::from_bits(*v);
            serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
        }
        _ => Value::Null,
    })
}

fn value(ty: Ty, p: &Payload, depth: usize) -> Result<Value, ProtobufError> {
    match (ty, p) {
        (Ty::Str, p) => Ok(Value::String(string(p, "")?)),
        (Ty::Bytes, Payload::Bytes(b)) => {
            Ok(json!(base64::engine::general_purpose::STANDARD.encode(b)))
        }
        (Ty::Msg(i), Payload::Bytes(b)) => message(i, b, depth + 1),
        (t, p) => scalar(t, p),
    }
}

fn zero_scalar(ty: Ty) -> Value {
    match ty {
        Ty::Str => json!(""),
        Ty::Bool => json!(false),
        Ty::Int32 | Ty::Int64 => json!(0),
        Ty::Double => json!(0.0),
        Ty::Bytes | Ty::Msg(_) => Value::Null,
    }
}

/// The JSON of a message's Go zero value.
pub fn zero(msg: usize, depth: usize) -> Result<Value, ProtobufError> {
    message(msg, &[], depth)
}

fn one<'a, 'b>(m: &Message, slots: &'b [Option<Slot<'a>>], num: u32) -> Option<&'b Payload<'a>> {
    let i = m.fields.iter().position(|f| f.num == num)?;
    match &slots[i] {
        Some(Slot::One(p)) => Some(p),
        Some(Slot::Many(v)) => v.last(),
        None => None,
    }
}

fn many<'a, 'b>(m: &Message, slots: &'b [Option<Slot<'a>>], num: u32) -> &'b [Payload<'a>] {
    let Some(i) = m.fields.iter().position(|f| f.num == num) else {
        return &[];
    };
    match &slots[i] {
        Some(Slot::Many(v)) => v,
        Some(Slot::One(p)) => std::slice::from_ref(p),
        None => &[],
    }
}

fn int(p: Option<&Payload>) -> i64 {
    match p {
        Some(Payload::Varint(v)) => *v as i64,
        _ => 0,
    }
}

fn raw_json(b: &[u8]) -> Result<Value, ProtobufError> {
    if b.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(b).map_err(|e| ProtobufError::RawJson(e.to_string()))
}

fn special(m: &Message, slots: &[Option<Slot>], depth: usize) -> Result<Value, ProtobufError> {
    let bytes = |num| match one(m, slots, num) {
        Some(Payload::Bytes(b)) => *b,
        _ => &[][..],
    };
    Ok(match m.special {
        Special::Time | Special::MicroTime => {
            let (secs, nanos) = (int(one(m, slots, 1)), int(one(m, slots, 2)));
            if slots.iter().all(Option::is_none) {
                return Ok(Value::Null);
            }
            let micro = m.special == Special::MicroTime;
            let nanos = if micro {
                (nanos.clamp(0, 999_999_999) / 1000) * 1000
            } else {
                0
            };
            let t = chrono::DateTime::from_timestamp(secs, nanos as u32)
                .ok_or(ProtobufError::BadTimestamp)?;
            let fmt = if micro {
                "%Y-%m-%dT%H:%M:%S%.6fZ"
            } else {
                "%Y-%m-%dT%H:%M:%SZ"
            };
            json!(t.format(fmt).to_string())
        }
        Special::Duration => json!(super::duration::format(int(one(m, slots, 1)))),
        Special::Quantity => {
            let s = string(one(m, slots, 1).unwrap_or(&Payload::Bytes(b"")), "String")?;
            json!(if s.is_empty() { "0".to_string() } else { s })
        }
        Special::IntOrString => {
            if int(one(m, slots, 1)) == 1 {
                json!(string(
                    one(m, slots, 3).unwrap_or(&Payload::Bytes(b"")),
                    "StrVal"
                )?)
            } else {
                json!(int(one(m, slots, 2)) as i32)
            }
        }
        Special::RawJson => raw_json(bytes(1))?,
        Special::Items => {
            let items: Result<Vec<Value>, _> = many(m, slots, 1)
                .iter()
                .map(|p| string(p, "Items").map(Value::String))
                .collect();
            let items = items?;
            if items.is_empty() {
                Value::Null
            } else {
                Value::Array(items)
            }
        }
        Special::PropsOrArray | Special::PropsOrBool | Special::PropsOrStringArray => {
            let schema_field = 1;
            let (schema_num, other) = match m.special {
                Special::PropsOrBool => (2, 1),
                _ => (schema_field, 2),
            };
            let schema = match (one(m, slots, schema_num), props_message()) {
                (Some(Payload::Bytes(b)), Some(i)) => Some(message(i, b, depth + 1)?),
                _ => None,
            };
            match m.special {
                Special::PropsOrBool => match schema {
                    Some(s) => s,
                    None => json!(int(one(m, slots, other)) != 0),
                },
                Special::PropsOrArray => {
                    let list = many(m, slots, other);
                    if list.is_empty() {
                        schema.unwrap_or(Value::Null)
                    } else {
                        let i = props_message().unwrap_or(0);
                        let items: Result<Vec<Value>, _> = list
                            .iter()
                            .map(|p| match p {
                                Payload::Bytes(b) => message(i, b, depth + 1),
                                _ => Ok(Value::Null),
                            })
                            .collect();
                        Value::Array(items?)
                    }
                }
                _ => {
                    let list = many(m, slots, other);
                    if list.is_empty() {
                        schema.unwrap_or(Value::Null)
                    } else {
                        let items: Result<Vec<Value>, _> = list
                            .iter()
                            .map(|p| string(p, "Property").map(Value::String))
                            .collect();
                        Value::Array(items?)
                    }
                }
            }
        }
        Special::None => Value::Null,
    })
}

fn props_message() -> Option<usize> {
    TABLE.message("k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps")
}
