//! kube's protobuf request encoding (`application/vnd.kubernetes.protobuf`) for the
//! built-in kinds typed clients send that way (kubectl's `create namespace`): the
//! `k8s\0` envelope around `runtime.Unknown`, decoded to the JSON object kube would
//! have seen. Messages are described by small field tables, not generated code.

use serde_json::{json, Map, Value};

/// The envelope's magic prefix.
const MAGIC: &[u8] = b"k8s\x00";

/// Why a body does not decode, in the words of Go's protobuf runtime and kube's
/// serializer; a client sees it as a 400 through `From<ProtobufError> for Status`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProtobufError {
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
    /// A length that does not fit in memory.
    #[error("proto: bad length")]
    BadLength,
    /// A wire type protobuf does not have (or a group).
    #[error("proto: illegal wireType {0}")]
    IllegalWireType(u64),
    /// A string that is not UTF-8.
    #[error("proto: invalid UTF-8")]
    InvalidUtf8,
    /// A string sent as a varint.
    #[error("proto: wrong wireType for string")]
    StringWireType,
    /// A timestamp out of range.
    #[error("proto: bad timestamp")]
    BadTimestamp,
    /// A field sent with the wrong wire type.
    #[error("proto: wrong wireType for field {0}")]
    FieldWireType(&'static str),
    /// A kind this server does not decode from protobuf.
    #[error("no kind \"{0}\" is registered for the protobuf encoding")]
    UnregisteredKind(String),
}

impl From<ProtobufError> for crate::status::Status {
    /// kube's 400 for a body that does not decode.
    fn from(e: ProtobufError) -> Self {
        crate::status::Status::bad_request(e.to_string())
    }
}

#[derive(Clone, Copy)]
enum Ty {
    Str,
    Int,
    Bool,
    Time,
    StrMap,
    /// `map<string, bytes>`: values base64-encoded, as Go's JSON writes `[]byte`.
    BytesMap,
    Msg(&'static [Field]),
}

#[derive(Clone, Copy)]
struct Field {
    num: u64,
    name: &'static str,
    ty: Ty,
    repeated: bool,
}

const fn f(num: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        num,
        name,
        ty,
        repeated: false,
    }
}

const fn r(num: u64, name: &'static str, ty: Ty) -> Field {
    Field {
        num,
        name,
        ty,
        repeated: true,
    }
}

const OWNER_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(5, "apiVersion", Ty::Str),
    f(6, "controller", Ty::Bool),
    f(7, "blockOwnerDeletion", Ty::Bool),
];

const OBJECT_META: &[Field] = &[
    f(1, "name", Ty::Str),
    f(2, "generateName", Ty::Str),
    f(3, "namespace", Ty::Str),
    f(4, "selfLink", Ty::Str),
    f(5, "uid", Ty::Str),
    f(6, "resourceVersion", Ty::Str),
    f(7, "generation", Ty::Int),
    f(8, "creationTimestamp", Ty::Time),
    f(9, "deletionTimestamp", Ty::Time),
    f(10, "deletionGracePeriodSeconds", Ty::Int),
    f(11, "labels", Ty::StrMap),
    f(12, "annotations", Ty::StrMap),
    r(13, "ownerReferences", Ty::Msg(OWNER_REFERENCE)),
    r(14, "finalizers", Ty::Str),
];

const NAMESPACE_SPEC: &[Field] = &[r(1, "finalizers", Ty::Str)];
const NAMESPACE_STATUS: &[Field] = &[f(1, "phase", Ty::Str)];
const NAMESPACE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(NAMESPACE_SPEC)),
    f(3, "status", Ty::Msg(NAMESPACE_STATUS)),
];

const PRECONDITIONS: &[Field] = &[f(1, "uid", Ty::Str), f(2, "resourceVersion", Ty::Str)];
const DELETE_OPTIONS: &[Field] = &[
    f(1, "gracePeriodSeconds", Ty::Int),
    f(2, "preconditions", Ty::Msg(PRECONDITIONS)),
    f(3, "orphanDependents", Ty::Bool),
    f(4, "propagationPolicy", Ty::Str),
    r(5, "dryRun", Ty::Str),
];

const CONFIG_MAP: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "data", Ty::StrMap),
    f(3, "binaryData", Ty::BytesMap),
    f(4, "immutable", Ty::Bool),
];
const SECRET: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "data", Ty::BytesMap),
    f(3, "type", Ty::Str),
    f(4, "stringData", Ty::StrMap),
    f(5, "immutable", Ty::Bool),
];

const OBJECT_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "namespace", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
    f(5, "apiVersion", Ty::Str),
    f(6, "resourceVersion", Ty::Str),
    f(7, "fieldPath", Ty::Str),
];
const LOCAL_OBJECT_REFERENCE: &[Field] = &[f(1, "name", Ty::Str)];
const SERVICE_ACCOUNT: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    r(2, "secrets", Ty::Msg(OBJECT_REFERENCE)),
    r(3, "imagePullSecrets", Ty::Msg(LOCAL_OBJECT_REFERENCE)),
    f(4, "automountServiceAccountToken", Ty::Bool),
];

const TYPE_META: &[Field] = &[f(1, "apiVersion", Ty::Str), f(2, "kind", Ty::Str)];

// authorization.k8s.io/v1 access reviews (`kubectl auth can-i`); selector requirements
// and SubjectAccessReview `extra` are not decoded.
const SELECTOR_ATTRIBUTES: &[Field] = &[f(1, "rawSelector", Ty::Str)];
const RESOURCE_ATTRIBUTES: &[Field] = &[
    f(1, "namespace", Ty::Str),
    f(2, "verb", Ty::Str),
    f(3, "group", Ty::Str),
    f(4, "version", Ty::Str),
    f(5, "resource", Ty::Str),
    f(6, "subresource", Ty::Str),
    f(7, "name", Ty::Str),
    f(8, "fieldSelector", Ty::Msg(SELECTOR_ATTRIBUTES)),
    f(9, "labelSelector", Ty::Msg(SELECTOR_ATTRIBUTES)),
];
const NON_RESOURCE_ATTRIBUTES: &[Field] = &[f(1, "path", Ty::Str), f(2, "verb", Ty::Str)];
const SELF_SUBJECT_ACCESS_REVIEW_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
];
const SUBJECT_ACCESS_REVIEW_SPEC: &[Field] = &[
    f(1, "resourceAttributes", Ty::Msg(RESOURCE_ATTRIBUTES)),
    f(2, "nonResourceAttributes", Ty::Msg(NON_RESOURCE_ATTRIBUTES)),
    f(3, "user", Ty::Str),
    r(4, "groups", Ty::Str),
    f(6, "uid", Ty::Str),
];
const SELF_SUBJECT_ACCESS_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SELF_SUBJECT_ACCESS_REVIEW_SPEC)),
];
const SELF_SUBJECT_RULES_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(&[f(1, "namespace", Ty::Str)])),
];
const SUBJECT_ACCESS_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(SUBJECT_ACCESS_REVIEW_SPEC)),
];

// authentication.k8s.io/v1 TokenRequest (`kubectl create token`).
const BOUND_OBJECT_REFERENCE: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiVersion", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "uid", Ty::Str),
];
const TOKEN_REQUEST_SPEC: &[Field] = &[
    r(1, "audiences", Ty::Str),
    f(3, "boundObjectRef", Ty::Msg(BOUND_OBJECT_REFERENCE)),
    f(4, "expirationSeconds", Ty::Int),
];
const TOKEN_REQUEST: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(TOKEN_REQUEST_SPEC)),
];

// authentication.k8s.io/v1 reviews (`kubectl auth whoami`); the status is the server's.
const TOKEN_REVIEW_SPEC: &[Field] = &[f(1, "token", Ty::Str), r(2, "audiences", Ty::Str)];
const TOKEN_REVIEW: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    f(2, "spec", Ty::Msg(TOKEN_REVIEW_SPEC)),
];
const SELF_SUBJECT_REVIEW: &[Field] = &[f(1, "metadata", Ty::Msg(OBJECT_META))];

// rbac.authorization.k8s.io/v1 (`kubectl create role|clusterrole|rolebinding|clusterrolebinding`).
const POLICY_RULE: &[Field] = &[
    r(1, "verbs", Ty::Str),
    r(2, "apiGroups", Ty::Str),
    r(3, "resources", Ty::Str),
    r(4, "resourceNames", Ty::Str),
    r(5, "nonResourceURLs", Ty::Str),
];
const LABEL_SELECTOR_REQUIREMENT: &[Field] = &[
    f(1, "key", Ty::Str),
    f(2, "operator", Ty::Str),
    r(3, "values", Ty::Str),
];
const LABEL_SELECTOR: &[Field] = &[
    f(1, "matchLabels", Ty::StrMap),
    r(2, "matchExpressions", Ty::Msg(LABEL_SELECTOR_REQUIREMENT)),
];
const AGGREGATION_RULE: &[Field] = &[r(1, "clusterRoleSelectors", Ty::Msg(LABEL_SELECTOR))];
const ROLE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    r(2, "rules", Ty::Msg(POLICY_RULE)),
];
const CLUSTER_ROLE: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    r(2, "rules", Ty::Msg(POLICY_RULE)),
    f(3, "aggregationRule", Ty::Msg(AGGREGATION_RULE)),
];
const SUBJECT: &[Field] = &[
    f(1, "kind", Ty::Str),
    f(2, "apiGroup", Ty::Str),
    f(3, "name", Ty::Str),
    f(4, "namespace", Ty::Str),
];
const ROLE_REF: &[Field] = &[
    f(1, "apiGroup", Ty::Str),
    f(2, "kind", Ty::Str),
    f(3, "name", Ty::Str),
];
const ROLE_BINDING: &[Field] = &[
    f(1, "metadata", Ty::Msg(OBJECT_META)),
    r(2, "subjects", Ty::Msg(SUBJECT)),
    f(3, "roleRef", Ty::Msg(ROLE_REF)),
];

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(ProtobufError::UnexpectedEof)?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(ProtobufError::IntegerOverflow)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or(ProtobufError::UnexpectedEof)?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// Next (field number, wire type, payload) where payload is the varint value or bytes.
    fn next(&mut self) -> Result<Option<(u64, Payload<'a>)>, ProtobufError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let payload = match key & 7 {
            0 => Payload::Varint(self.varint()?),
            1 => Payload::Bytes(self.bytes(8)?),
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| ProtobufError::BadLength)?;
                Payload::Bytes(self.bytes(n)?)
            }
            5 => Payload::Bytes(self.bytes(4)?),
            w => return Err(ProtobufError::IllegalWireType(w)),
        };
        Ok(Some((key >> 3, payload)))
    }
}

enum Payload<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn string(p: &Payload) -> Result<String, ProtobufError> {
    match p {
        Payload::Bytes(b) => String::from_utf8(b.to_vec()).map_err(|_| ProtobufError::InvalidUtf8),
        Payload::Varint(_) => Err(ProtobufError::StringWireType),
    }
}

fn time(b: &[u8]) -> Result<Value, ProtobufError> {
    // kube's `Time.Unmarshal`: no bytes is the zero time (JSON null, omitted).
    if b.is_empty() {
        return Ok(Value::Null);
    }
    let mut rd = Reader { buf: b, pos: 0 };
    let mut secs = 0i64;
    while let Some((num, p)) = rd.next()? {
        if let (1, Payload::Varint(v)) = (num, p) {
            secs = v as i64;
        }
    }
    let t = chrono::DateTime::from_timestamp(secs, 0).ok_or(ProtobufError::BadTimestamp)?;
    Ok(json!(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
}

fn message(b: &[u8], fields: &[Field]) -> Result<Map<String, Value>, ProtobufError> {
    let mut out = Map::new();
    let mut rd = Reader { buf: b, pos: 0 };
    while let Some((num, p)) = rd.next()? {
        let Some(field) = fields.iter().find(|f| f.num == num) else {
            continue;
        };
        let value = match (field.ty, &p) {
            (Ty::Str, _) => json!(string(&p)?),
            (Ty::Int, Payload::Varint(v)) => json!(*v as i64),
            (Ty::Bool, Payload::Varint(v)) => json!(*v != 0),
            (Ty::Time, Payload::Bytes(b)) => time(b)?,
            (Ty::Msg(sub), Payload::Bytes(b)) => Value::Object(message(b, sub)?),
            (Ty::StrMap | Ty::BytesMap, Payload::Bytes(b)) => {
                let mut entry = Reader { buf: b, pos: 0 };
                let (mut k, mut v) = (String::new(), String::new());
                while let Some((n, ep)) = entry.next()? {
                    match (n, &ep) {
                        (1, _) => k = string(&ep)?,
                        (2, Payload::Bytes(raw)) if matches!(field.ty, Ty::BytesMap) => {
                            use base64::Engine;
                            v = base64::engine::general_purpose::STANDARD.encode(raw);
                        }
                        (2, _) => v = string(&ep)?,
                        _ => {}
                    }
                }
                let map = out.entry(field.name).or_insert_with(|| json!({}));
                if let Some(m) = map.as_object_mut() {
                    m.insert(k, json!(v));
                }
                continue;
            }
            _ => return Err(ProtobufError::FieldWireType(field.name)),
        };
        if field.repeated {
            let list = out.entry(field.name).or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut() {
                a.push(value);
            }
        } else if !(value.is_null()
            || value.as_str() == Some("")
            || value.as_object().is_some_and(Map::is_empty))
        {
            // Go's JSON encoding omits empty strings and empty structs.
            out.insert(field.name.into(), value);
        }
    }
    Ok(out)
}

/// Decode a protobuf request body of a kind this server accepts that way
/// (`Namespace`, `DeleteOptions`) into its JSON form.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let rest = body.strip_prefix(MAGIC).ok_or(ProtobufError::NotProtobuf)?;
    let mut rd = Reader { buf: rest, pos: 0 };
    let (mut type_meta, mut raw) = (Map::new(), &[][..]);
    while let Some((num, p)) = rd.next()? {
        match (num, p) {
            (1, Payload::Bytes(b)) => type_meta = message(b, TYPE_META)?,
            (2, Payload::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let kind = type_meta
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let fields = match kind.as_str() {
        "Namespace" => NAMESPACE,
        "ConfigMap" => CONFIG_MAP,
        "Secret" => SECRET,
        "ServiceAccount" => SERVICE_ACCOUNT,
        "DeleteOptions" => DELETE_OPTIONS,
        "SelfSubjectAccessReview" => SELF_SUBJECT_ACCESS_REVIEW,
        "SelfSubjectRulesReview" => SELF_SUBJECT_RULES_REVIEW,
        "SubjectAccessReview" | "LocalSubjectAccessReview" => SUBJECT_ACCESS_REVIEW,
        "Role" => ROLE,
        "ClusterRole" => CLUSTER_ROLE,
        "RoleBinding" | "ClusterRoleBinding" => ROLE_BINDING,
        "TokenRequest" => TOKEN_REQUEST,
        "TokenReview" => TOKEN_REVIEW,
        "SelfSubjectReview" => SELF_SUBJECT_REVIEW,
        other => return Err(ProtobufError::UnregisteredKind(other.to_string())),
    };
    let mut obj = message(raw, fields)?;
    for (k, v) in type_meta {
        obj.insert(k, v);
    }
    Ok(Value::Object(obj))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_kubectl_create_namespace() {
        // The body kubectl 1.32 sends for `kubectl create namespace foo`.
        let body: &[u8] = b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1b\n\x13\n\x03foo\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00\"\x00";
        let v = decode(body).unwrap();
        assert_eq!(v["kind"], "Namespace");
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["metadata"]["name"], "foo");
        assert!(v["metadata"].get("namespace").is_none());
    }

    #[test]
    fn rejects_non_protobuf_and_truncated_bodies() {
        assert_eq!(decode(b"{}"), Err(ProtobufError::NotProtobuf));
        assert_eq!(
            decode(b"k8s\x00\n\x0f\n\x02v1").map_err(|e| e.to_string()),
            Err("unexpected EOF".to_string())
        );
        assert_eq!(
            decode(b"k8s\x00\n\x06\x12\x04Node").map_err(|e| e.to_string()),
            Err("no kind \"Node\" is registered for the protobuf encoding".to_string())
        );
    }
}
