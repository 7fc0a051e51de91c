//! kube's protobuf encoding (`application/vnd.kubernetes.protobuf`) of every built-in
//! kind, driven by a table of kube's messages (`table`, from `data/kube-v1.36/protobuf.json`):
//! the `k8s\0` envelope around `runtime.Unknown`, message bytes <-> the JSON object
//! kube's Go types marshal to (`decode`, `encode`), and watch frames.
//!
//! Invariant: every length is checked against the remaining input and nesting is
//! capped, so no body makes the decoder panic, over-allocate or overflow its stack.

mod decode;
pub mod duration;
mod encode;
mod table;
mod wire;

#[cfg(test)]
mod tests;

use serde_json::Value;
use table::TABLE;
use wire::{put_bytes, Payload, Reader};

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\x00";

/// How deep messages may nest (kube's JSON decoder allows as deep).
pub const MAX_DEPTH: usize = 10_000;

/// Why a body does not decode, in the words of kube's serializer and gogo's generated
/// `Unmarshal`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
    /// An empty body.
    #[error("empty data")]
    Empty,
    /// The body lacks the `k8s\0` prefix.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NotProtobuf,
    /// The body ends inside a field.
    #[error("unexpected EOF")]
    UnexpectedEof,
    /// A varint longer than 64 bits.
    #[error("proto: integer overflow")]
    IntegerOverflow,
    /// A length that is negative as Go's int.
    #[error("proto: negative length found during unmarshaling")]
    NegativeLength,
    /// A wire type protobuf does not have (or a group).
    #[error("proto: illegal wireType {0}")]
    IllegalWireType(u64),
    /// Field number 0.
    #[error("proto: illegal tag 0 (wire type {0})")]
    IllegalTag(u64),
    /// A field sent with the wrong wire type (wire type, Go field name).
    #[error("proto: wrong wireType = {0} for field {1}")]
    WrongWireType(u64, String),
    /// A timestamp out of range.
    #[error("proto: bad timestamp")]
    BadTimestamp,
    /// Deeper than [`MAX_DEPTH`].
    #[error("proto: exceeded maximum nesting depth")]
    TooDeep,
    /// A raw-JSON field (`RawExtension`, `FieldsV1`, `JSON`) holding something else.
    #[error("{0}")]
    RawJson(String),
    /// A kind that has no protobuf message (custom resources, unknown kinds).
    #[error("no kind \"{0}\" is registered for the protobuf encoding")]
    UnregisteredKind(String),
}

impl From<ProtobufError> for crate::status::Status {
    /// kube's 400 for a body that does not decode.
    fn from(e: ProtobufError) -> Self {
        crate::status::Status::bad_request(e.to_string())
    }
}

/// Whether `apiVersion`/`kind` has a protobuf message (every built-in kind does;
/// custom resources do not).
pub fn is_registered(api_version: &str, kind: &str) -> bool {
    TABLE.kind(api_version, kind).is_some()
}

/// Decode a `k8s\0`-enveloped body into the JSON object kube would have decoded.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    if body.is_empty() {
        return Err(ProtobufError::Empty);
    }
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::NotProtobuf)?;
    let (api_version, kind, raw) = unknown(rest)?;
    let msg = TABLE
        .kind(&api_version, &kind)
        .ok_or_else(|| ProtobufError::UnregisteredKind(kind.clone()))?;
    let mut obj = decode::message(msg, raw, 0)?;
    if let Value::Object(m) = &mut obj {
        if !kind.is_empty() {
            m.insert("kind".into(), Value::String(kind));
        }
        if !api_version.is_empty() {
            m.insert("apiVersion".into(), Value::String(api_version));
        }
    }
    Ok(obj)
}

/// Decode a create/update body for an object of `target` (`apiVersion`, `kind`), with
/// kube's 400 texts; `custom`: a custom resource, which has no protobuf form.
pub fn decode_body(body: &[u8], target: (&str, &str), custom: bool) -> Result<Value, String> {
    let envelope = if body.is_empty() {
        Err(ProtobufError::Empty)
    } else {
        body.strip_prefix(MAGIC)
            .ok_or(ProtobufError::NotProtobuf)
            .and_then(unknown)
    };
    let (mut api_version, mut kind, raw) = envelope.map_err(|e| {
        format!(
            "the object provided is unrecognized (must be of type {}): {e} ({})",
            target.1,
            super::summarize_body(body)
        )
    })?;
    // Missing parts of the type come from the endpoint, as kube's decoder defaults them.
    if api_version.is_empty() {
        api_version = target.0.to_string();
    }
    if kind.is_empty() {
        kind = target.1.to_string();
    }
    let version = api_version.rsplit('/').next().unwrap_or("");
    let cannot = |reason: String| {
        format!(
            "{kind} in version {version:?} cannot be handled as a {}: {reason}",
            target.1
        )
    };
    if custom {
        return Err(cannot("object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message".into()));
    }
    let msg = TABLE.kind(&api_version, &kind).ok_or_else(|| {
        cannot(format!(
            "no kind {kind:?} is registered for version {api_version:?} in scheme \"pkg/runtime/scheme.go:110\""
        ))
    })?;
    let mut obj = decode::message(msg, raw, 0).map_err(|e| cannot(e.to_string()))?;
    if let Value::Object(m) = &mut obj {
        m.insert("kind".into(), Value::String(kind.clone()));
        m.insert("apiVersion".into(), Value::String(api_version.clone()));
    }
    Ok(obj)
}

/// `runtime.Unknown`: (apiVersion, kind, raw).
fn unknown(b: &[u8]) -> Result<(String, String, &[u8]), ProtobufError> {
    let mut rd = Reader::new(b);
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let text = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    while let Some((num, p)) = rd.next_field()? {
        match (num, p) {
            (1, Payload::Bytes(tm)) => {
                let mut t = Reader::new(tm);
                while let Some((n, p)) = t.next_field()? {
                    match (n, p) {
                        (1, Payload::Bytes(s)) => api_version = text(s),
                        (2, Payload::Bytes(s)) => kind = text(s),
                        (1, p) => {
                            return Err(ProtobufError::WrongWireType(
                                p.wire_type(),
                                "APIVersion".into(),
                            ))
                        }
                        (2, p) => {
                            return Err(ProtobufError::WrongWireType(p.wire_type(), "Kind".into()))
                        }
                        _ => {}
                    }
                }
            }
            (2, Payload::Bytes(r)) => raw = r,
            (1, p) => {
                return Err(ProtobufError::WrongWireType(
                    p.wire_type(),
                    "TypeMeta".into(),
                ))
            }
            (2, p) => return Err(ProtobufError::WrongWireType(p.wire_type(), "Raw".into())),
            _ => {}
        }
    }
    Ok((api_version, kind, raw))
}

/// Encode a JSON object of a built-in kind (its `apiVersion` and `kind` say which) in
/// the `k8s\0` envelope, as kube's protobuf serializer writes it.
pub fn encode(obj: &Value) -> Result<Vec<u8>, ProtobufError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let msg = TABLE
        .kind(api_version, kind)
        .ok_or_else(|| ProtobufError::UnregisteredKind(kind.to_string()))?;
    let mut raw = Vec::new();
    encode::message(msg, obj, 0, &mut raw);
    let mut type_meta = Vec::new();
    put_bytes(&mut type_meta, 1, api_version.as_bytes());
    put_bytes(&mut type_meta, 2, kind.as_bytes());
    let mut out = MAGIC.to_vec();
    put_bytes(&mut out, 1, &type_meta);
    put_bytes(&mut out, 2, &raw);
    put_bytes(&mut out, 3, b"");
    put_bytes(&mut out, 4, b"");
    Ok(out)
}

/// One frame of a protobuf watch stream: a 4-byte big-endian length, then a meta/v1
/// `WatchEvent` (no envelope) whose object is the enveloped object `object`.
pub fn watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut raw_ext = Vec::new();
    put_bytes(&mut raw_ext, 1, object);
    let mut event = Vec::new();
    put_bytes(&mut event, 1, event_type.as_bytes());
    put_bytes(&mut event, 2, &raw_ext);
    let mut out = (event.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&event);
    out
}

/// Decode the bytes of the message named `name` (`k8s.io.api.apps.v1.Deployment`).
pub fn decode_message(name: &str, b: &[u8]) -> Result<Value, ProtobufError> {
    let msg = TABLE
        .message(name)
        .ok_or_else(|| ProtobufError::UnregisteredKind(name.to_string()))?;
    decode::message(msg, b, 0)
}

/// Encode `v` as the message named `name`.
pub fn encode_message(name: &str, v: &Value) -> Result<Vec<u8>, ProtobufError> {
    let msg = TABLE
        .message(name)
        .ok_or_else(|| ProtobufError::UnregisteredKind(name.to_string()))?;
    let mut out = Vec::new();
    encode::message(msg, v, 0, &mut out);
    Ok(out)
}
