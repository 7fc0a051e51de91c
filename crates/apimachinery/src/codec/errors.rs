//! kube's texts around decoding: strict-decoding wrappers (`duplicate field`, `unknown
//! field`), the 400s for bodies that are no object (`the object provided is
//! unrecognized ...`, `Object 'Kind' is missing`), `SimpleMetaFactory.Interpret`'s
//! errors and Go's `json: cannot unmarshal ...` type errors.

use super::{decode_json, decode_yaml, json_syntax_error, CodecError, DecodeError};
use serde_json::Value;

/// kube's strict-decoding text for a duplicate field: `duplicate field "spec.a"`.
pub fn duplicate_field_message(path: &str) -> String {
    format!("duplicate field {}", crate::field::go_quote(path))
}

/// kube's strict-decoding text for an unknown field: `unknown field "spec.a"`.
pub fn unknown_field_message(path: &str) -> String {
    format!("unknown field {}", crate::field::go_quote(path))
}

/// kube's `strict decoding error: a, b` wrapper.
pub fn strict_decoding_error(errors: &[String]) -> String {
    format!("strict decoding error: {}", errors.join(", "))
}

/// kube's `summarizeData(body, 30)`: the body itself when it starts with `{`, hex
/// otherwise, cut at 30 bytes with ` ...`, and `<empty>` for no body.
pub fn summarize_body(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (part, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(part)),
        Some(_) => {
            let hex: String = part.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// kube's 400 text for a create/update body it could not turn into an object:
/// `the object provided is unrecognized (must be of type Val): <reason> (<summary>)`,
/// where the reason is what kube's decoder reports for that failure (JSON syntax errors
/// come through `couldn't get version/kind; json parse error: `, YAML errors as is).
pub fn unrecognized_object_message(target_kind: &str, err: &DecodeError, body: &[u8]) -> String {
    let reason = match err {
        DecodeError::Json(e) => format!("couldn't get version/kind; json parse error: {e}"),
        DecodeError::Yaml(e) => e.clone(),
        DecodeError::UnsupportedMediaType(m) => format!("unsupported media type {m:?}"),
        DecodeError::NotAnObject => {
            let v = decode_json(body).or_else(|_| decode_yaml(body));
            match v {
                Ok(Value::Object(_)) | Err(_) => missing_kind_message(body),
                Ok(Value::Null) => missing_kind_message(body),
                Ok(other) => format!(
                    "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND_TYPE}",
                    go_json_kind(&other)
                ),
            }
        }
    };
    format!(
        "the object provided is unrecognized (must be of type {target_kind}): {reason} ({})",
        summarize_body(body)
    )
}

/// kube's `Object 'Kind' is missing in '<body>'`.
pub fn missing_kind_message(body: &[u8]) -> String {
    format!(
        "Object 'Kind' is missing in '{}'",
        String::from_utf8_lossy(body)
    )
}

pub use crate::goformat::go_json_kind;

/// Go's `json.Unmarshal` error for decoding `body` into the Go type named `go_type`
/// (e.g. `map[string]interface {}`, `[]jsonpatch.Operation`): the syntax error, or
/// `json: cannot unmarshal array into Go value of type map[string]interface {}`;
/// `None` when the body fits.
pub fn go_json_error(body: &[u8], go_type: &str) -> Option<String> {
    if let Some(e) = json_syntax_error(body) {
        return Some(e);
    }
    let v = decode_json(body).ok()?;
    let wants = |ty: &str, v: &Value| -> bool {
        let any = ty == "interface {}";
        any || match v {
            Value::Null => true,
            Value::Array(_) => ty.starts_with("[]"),
            Value::Object(_) => {
                !ty.starts_with("[]")
                    && (ty.starts_with("map[") || ty.starts_with("struct") || ty.contains('.'))
            }
            Value::String(_) => ty == "string",
            Value::Number(_) => ["int", "uint", "float"].iter().any(|p| ty.starts_with(p)),
            Value::Bool(_) => ty == "bool",
        }
    };
    if !wants(go_type, &v) {
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type {go_type}",
            go_json_kind(&v)
        ));
    }
    // Elements of a slice of named (map or struct) types must be objects.
    if let (Some(elem), Value::Array(items)) = (go_type.strip_prefix("[]"), &v) {
        for item in items {
            if !wants(elem, item) {
                return Some(format!(
                    "json: cannot unmarshal {} into Go value of type {elem}",
                    go_json_kind(item)
                ));
            }
        }
    }
    None
}

/// kube's 400 text when a body with a kind failed to decode:
/// `Val in version "v1" cannot be handled as a Val: <err>`.
pub fn cannot_be_handled_message(
    kind: &str,
    version: &str,
    target_kind: &str,
    err: &str,
) -> String {
    format!(
        "{kind} in version {} cannot be handled as a {target_kind}: {err}",
        crate::field::go_quote(version)
    )
}

/// The Go type kube's `Interpret` decodes into, as `encoding/json` names it in errors.
const FIND_KIND_TYPE: &str =
    "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// Read `apiVersion` and `kind` as kube's `SimpleMetaFactory.Interpret` does; the error
/// is kube's text (`couldn't get version/kind; json parse error: ...`).
pub fn interpret_type_meta(bytes: &[u8]) -> Result<(String, String), CodecError> {
    let v = decode_json(bytes).map_err(CodecError::TypeMeta)?;
    interpret_type_meta_value(&v)
}

/// [`interpret_type_meta`] for an already decoded body (e.g. YAML converted to JSON).
pub fn interpret_type_meta_value(v: &Value) -> Result<(String, String), CodecError> {
    let wrap = |e: String| CodecError::TypeMeta(DecodeError::Json(e));
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => return Ok((String::new(), String::new())),
        other => {
            return Err(wrap(format!(
                "json: cannot unmarshal {} into Go value of type {FIND_KIND_TYPE}",
                go_json_kind(other)
            )))
        }
    };
    let (mut api_version, mut kind) = (String::new(), String::new());
    let mut first_error: Option<String> = None;
    // Go matches struct fields case-insensitively; the last occurrence wins.
    for (k, val) in obj {
        let target = if k.eq_ignore_ascii_case("apiVersion") {
            ("apiVersion", &mut api_version)
        } else if k.eq_ignore_ascii_case("kind") {
            ("kind", &mut kind)
        } else {
            continue;
        };
        match val {
            Value::String(s) => *target.1 = s.clone(),
            Value::Null => {}
            other => {
                first_error.get_or_insert_with(|| {
                    format!(
                        "json: cannot unmarshal {} into Go struct field .{} of type string",
                        go_json_kind(other),
                        target.0
                    )
                });
            }
        }
    }
    match first_error {
        Some(e) => Err(wrap(e)),
        None => Ok((api_version, kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::decode_body;

    #[test]
    fn validation_golden_malformed_json() {
        // validation.golden.json `malformed-json`: the body is cut short.
        let body = br#"{"apiVersion": "validation.example.com/v1", "kind": "Val", "metadata": {"name": "v6""#;
        let err = decode_body(body, "application/json").unwrap_err();
        assert_eq!(
            unrecognized_object_message("Val", &err, body),
            "the object provided is unrecognized (must be of type Val): couldn't get version/kind; json parse error: unexpected end of JSON input ({\"apiVersion\": \"validation.exa ...)"
        );
    }

    #[test]
    fn pruning_golden_strict_message_shape() {
        // pruning-kep.golden.json `strict-field-validation-rejects-unknown`.
        let errs = vec![
            unknown_field_message("ex2.json"),
            unknown_field_message("topLevelUnknown"),
        ];
        assert_eq!(
            cannot_be_handled_message("Prune", "v1", "Prune", &strict_decoding_error(&errs)),
            "Prune in version \"v1\" cannot be handled as a Prune: strict decoding error: unknown field \"ex2.json\", unknown field \"topLevelUnknown\""
        );
    }

    #[test]
    fn interpret_errors() {
        assert_eq!(
            interpret_type_meta(br#"{"apiVersion": 5}"#).unwrap_err().to_string(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .apiVersion of type string"
        );
        assert_eq!(
            interpret_type_meta(b"[]").unwrap_err().to_string(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
        );
        assert_eq!(
            interpret_type_meta(br#"{"KIND": "Val", "apiVersion": "a/v1"}"#).unwrap(),
            ("a/v1".to_string(), "Val".to_string())
        );
    }

    #[test]
    fn interpret_prefix_matches_unrecognized_reason() {
        let body = br#"{"a": "#;
        assert_eq!(
            interpret_type_meta(body).unwrap_err().to_string(),
            "couldn't get version/kind; json parse error: unexpected end of JSON input"
        );
    }

    #[test]
    fn not_an_object_messages() {
        assert_eq!(
            unrecognized_object_message("Val", &DecodeError::NotAnObject, b"[1]"),
            "the object provided is unrecognized (must be of type Val): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" } (5b315d)"
        );
        assert_eq!(
            unrecognized_object_message("Val", &DecodeError::NotAnObject, b"null"),
            "the object provided is unrecognized (must be of type Val): Object 'Kind' is missing in 'null' (6e756c6c)"
        );
        let yaml = b"a: [1\n";
        let err = decode_body(yaml, "application/yaml").unwrap_err();
        assert_eq!(
            unrecognized_object_message("Val", &err, yaml),
            "the object provided is unrecognized (must be of type Val): yaml: line 1: did not find expected ',' or ']' (613a205b310a)"
        );
    }

    #[test]
    fn go_json_errors_for_patch_bodies() {
        assert_eq!(
            go_json_error(b"[1]", "map[string]interface {}").as_deref(),
            Some("json: cannot unmarshal array into Go value of type map[string]interface {}")
        );
        assert_eq!(
            go_json_error(b"{", "[]jsonpatch.Operation").as_deref(),
            Some("unexpected end of JSON input")
        );
        assert_eq!(
            go_json_error(b"{}", "[]jsonpatch.Operation").as_deref(),
            Some("json: cannot unmarshal object into Go value of type []jsonpatch.Operation")
        );
        assert_eq!(
            go_json_error(b"[1]", "[]jsonpatch.Operation").as_deref(),
            Some("json: cannot unmarshal number into Go value of type jsonpatch.Operation")
        );
        assert_eq!(
            go_json_error(br#"[{"op": "add"}]"#, "[]jsonpatch.Operation"),
            None
        );
        assert_eq!(
            go_json_error(br#"{"a": 1}"#, "map[string]interface {}"),
            None
        );
    }

    #[test]
    fn summaries() {
        assert_eq!(summarize_body(b""), "<empty>");
        assert_eq!(summarize_body(b"{}"), "{}");
        assert_eq!(summarize_body(b"a: b"), "613a2062");
        assert_eq!(
            summarize_body(&[b'x'; 40]),
            format!("{} ...", "78".repeat(30))
        );
    }
}
