//! Request-body decoding with kube's semantics and error texts.
//!
//! * JSON is checked with a port of Go's `encoding/json` scanner so malformed bodies get
//!   Go's exact messages (`unexpected end of JSON input`, `invalid character 'x' looking
//!   for beginning of value`), and numbers decode as kube's unstructured JSON does
//!   (integers without `.` become int64, everything else float64).
//! * YAML follows `sigs.k8s.io/yaml` (goyaml v2, YAML 1.1 plain scalars: `yes`/`on` are
//!   booleans, `010` is octal) followed by a JSON round trip, so `1.0` becomes `1`.
//! * Strict-decoding helpers: duplicate JSON fields (`duplicate field "spec.a"`) and
//!   duplicate YAML keys (`line 3: key "a" already set in map`).
//! * kube's decode error wrappers (`the object provided is unrecognized ...`) and
//!   list continue tokens.
//!
//! Submodules: `json` (the scanner and decoder), `yaml`, `manifests` (files of many
//! documents), `packed` (bytes kept compressed), `errors` (kube's texts around decoding), `continue_token`.

mod continue_token;
mod errors;
mod json;
mod manifests;
mod packed;
pub mod protobuf;
mod yaml;

pub use continue_token::{
    decode_continue, encode_continue, invalid_continue_token_message, CONTINUE_EXPIRED_MESSAGE,
    CONTINUE_WITH_RESOURCE_VERSION_MESSAGE,
};
pub use errors::{
    cannot_be_handled_message, duplicate_field_message, go_json_error, go_json_kind,
    interpret_type_meta, interpret_type_meta_value, missing_kind_message, strict_decoding_error,
    summarize_body, unknown_field_message, unrecognized_object_message,
};
pub use json::{
    decode_json, decode_json_with_duplicates, decode_stored_json, find_duplicate_fields,
    json_syntax_error,
};
pub use manifests::decode_manifests;
pub use packed::Packed;
pub use yaml::{
    decode_yaml, decode_yaml_with_duplicate_keys, yaml_duplicate_key_error, MAX_YAML_DEPTH,
};

use serde_json::Value;

/// A body that could not be decoded; the text is what kube's decoder reports.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Go `encoding/json` error text, e.g. `unexpected end of JSON input`.
    #[error("{0}")]
    Json(String),
    /// `sigs.k8s.io/yaml` `YAMLToJSON` error text, e.g. `yaml: line 2: ...`. kube's
    /// apply handler (`yaml.Unmarshal`) prefixes it with `error converting YAML to JSON: `.
    #[error("{0}")]
    Yaml(String),
    /// A content type this decoder does not handle.
    #[error("unsupported media type {0:?}")]
    UnsupportedMediaType(String),
    /// The body decoded, but is not a JSON object (kube's messages need the body to
    /// say what it is; see [`unrecognized_object_message`]).
    #[error("the body is not an object")]
    NotAnObject,
}

/// What the codec's other readers fail with: a body's type meta, a continue token, a
/// manifest file. The texts are kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    /// `apiVersion`/`kind` could not be read (kube's `SimpleMetaFactory.Interpret`).
    #[error("couldn't get version/kind; json parse error: {0}")]
    TypeMeta(#[source] DecodeError),
    /// A continue token for a key outside the listed prefix.
    #[error("unable to encode next field: the key and key prefix do not match")]
    ContinueKeyPrefix,
    /// A continue token that is no base64url.
    #[error("continue key is not valid: illegal base64 data at input byte {0}")]
    ContinueBase64(usize),
    /// A continue token whose JSON does not decode (Go's `encoding/json` text).
    #[error("continue key is not valid: {0}")]
    ContinueJson(#[source] DecodeError),
    /// A continue token of another version than `meta.k8s.io/v1`.
    #[error("continue key is not valid: server does not recognize this encoded version {0}")]
    ContinueVersion(String),
    /// A continue token without resourceVersion.
    #[error(
        "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
    )]
    ContinueResourceVersion,
    /// A continue token without start key.
    #[error("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")]
    ContinueStartEmpty,
    /// A continue token whose start key is no clean path.
    #[error("continue key is not valid: {0}")]
    ContinueStart(String),
    /// A manifest file that does not decode.
    #[error(transparent)]
    Manifest(DecodeError),
    /// One document of a YAML manifest file does not decode.
    #[error("document {document}: {error}")]
    ManifestDocument {
        /// The document's number, from 1.
        document: usize,
        /// Why it does not decode.
        #[source]
        error: DecodeError,
    },
}

impl DecodeError {
    /// The error text.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// Decode a request body by its `Content-Type` (parameters such as `charset` ignored):
/// JSON for `application/json` and the JSON patch types, YAML for `application/yaml`
/// and `application/apply-patch+yaml`.
pub fn decode_body(bytes: &[u8], content_type: &str) -> Result<Value, DecodeError> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "application/json"
        | "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => decode_json(bytes),
        "application/yaml" | "application/apply-patch+yaml" => decode_yaml(bytes),
        _ => Err(DecodeError::UnsupportedMediaType(media)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_body_by_content_type() {
        assert_eq!(
            decode_body(b"{\"a\":1}", "application/json; charset=utf-8").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            decode_body(b"a: 1\n", "application/apply-patch+yaml").unwrap(),
            json!({"a": 1})
        );
        assert_eq!(
            decode_body(b"{", "application/merge-patch+json").unwrap_err(),
            DecodeError::Json("unexpected end of JSON input".to_string())
        );
        assert!(matches!(
            decode_body(b"", "text/plain"),
            Err(DecodeError::UnsupportedMediaType(_))
        ));
    }
}
