//! List continue tokens: kube's `storage.EncodeContinue`/`DecodeContinue` and the texts
//! of their errors.

use super::{decode_json, CodecError, DecodeError};
use crate::goformat::{go_json_kind, go_json_string};
use base64::Engine;
use serde_json::Value;

/// kube's 400 text for a continue token it cannot decode: `invalid continue token: <err>`.
pub fn invalid_continue_token_message(err: &str) -> String {
    format!("invalid continue token: {err}")
}

/// kube's 400 text when `continue` comes with a `resourceVersion`.
pub const CONTINUE_WITH_RESOURCE_VERSION_MESSAGE: &str =
    "specifying resource version is not allowed when using continue";

/// kube's 410 `Expired` text when the continue token's revision was compacted.
pub const CONTINUE_EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

const CONTINUE_ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    base64::engine::GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireNone)
        .with_decode_allow_trailing_bits(true),
);

/// kube's `EncodeContinue`: base64url (no padding) of `{"v":"meta.k8s.io/v1","rv":N,"start":K}`
/// where K is `key` without `key_prefix`.
pub fn encode_continue(
    key: &str,
    key_prefix: &str,
    resource_version: i64,
) -> Result<String, CodecError> {
    let next = match key.strip_prefix(key_prefix) {
        Some(next) if next.len() != key.len() => next,
        _ => return Err(CodecError::ContinueKeyPrefix),
    };
    let json = format!(
        "{{\"v\":\"meta.k8s.io/v1\",\"rv\":{resource_version},\"start\":{}}}",
        go_json_string(next)
    );
    Ok(CONTINUE_ENGINE.encode(json))
}

/// Go's `path.Clean`.
fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".to_string();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

/// kube's `DecodeContinue`: the storage key to resume from and the token's
/// resourceVersion; the error is kube's (`continue key is not valid: ...`).
pub fn decode_continue(token: &str, key_prefix: &str) -> Result<(String, i64), CodecError> {
    let data = CONTINUE_ENGINE.decode(token).map_err(|e| {
        let at = match e {
            base64::DecodeError::InvalidByte(i, _)
            | base64::DecodeError::InvalidLastSymbol(i, _) => i,
            _ => token.len().saturating_sub(1),
        };
        CodecError::ContinueBase64(at)
    })?;
    let v = decode_json(&data).map_err(CodecError::ContinueJson)?;
    let Value::Object(obj) = v else {
        let kind = go_json_kind(&v);
        if kind == "null" {
            return Err(CodecError::ContinueVersion(String::new()));
        }
        return Err(CodecError::ContinueJson(DecodeError::Json(format!(
            "json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        ))));
    };
    let get = |name: &str| {
        obj.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    };
    let type_err = |v: &Value, field: &str, ty: &str| {
        let what = match v {
            Value::Number(n) => format!("number {n}"),
            Value::String(_) => "string".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Array(_) => "array".to_string(),
            _ => "object".to_string(),
        };
        let what = if ty == "string" && what.starts_with("number") {
            "number".to_string()
        } else {
            what
        };
        CodecError::ContinueJson(DecodeError::Json(format!(
            "json: cannot unmarshal {what} into Go struct field continueToken.{field} of type {ty}"
        )))
    };
    let api_version = match get("v") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(type_err(other, "v", "string")),
    };
    let rv = match get("rv") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) => n
            .as_i64()
            .ok_or_else(|| type_err(&Value::Number(n.clone()), "rv", "int64"))?,
        Some(other) => return Err(type_err(other, "rv", "int64")),
    };
    let start = match get("start") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => return Err(type_err(other, "start", "string")),
    };
    if api_version != "meta.k8s.io/v1" {
        return Err(CodecError::ContinueVersion(api_version));
    }
    if rv == 0 {
        return Err(CodecError::ContinueResourceVersion);
    }
    if start.is_empty() {
        return Err(CodecError::ContinueStartEmpty);
    }
    let key = if start.starts_with('/') {
        start.clone()
    } else {
        format!("/{start}")
    };
    if path_clean(&key) != key {
        return Err(CodecError::ContinueStart(start));
    }
    Ok((format!("{key_prefix}{}", &key[1..]), rv))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_like_kube() {
        let token =
            encode_continue("/registry/widgets/default/w2", "/registry/widgets/", 42).unwrap();
        // kube's token for this state is the base64url of its JSON.
        assert_eq!(
            CONTINUE_ENGINE.decode(&token).unwrap(),
            br#"{"v":"meta.k8s.io/v1","rv":42,"start":"default/w2"}"#.to_vec()
        );
        assert_eq!(
            decode_continue(&token, "/registry/widgets/").unwrap(),
            ("/registry/widgets/default/w2".to_string(), 42)
        );
        let enc = |s: &str| CONTINUE_ENGINE.encode(s);
        assert_eq!(
            decode_continue(&enc(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#), "/p/").unwrap_err().to_string(),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_continue(&enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#), "/p/")
                .unwrap_err()
                .to_string(),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_continue(
                &enc(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"../x"}"#),
                "/p/"
            )
            .unwrap_err()
            .to_string(),
            "continue key is not valid: ../x"
        );
        assert_eq!(
            decode_continue(&enc(r#"{"v":"x/v2","rv":1,"start":"a"}"#), "/p/")
                .unwrap_err()
                .to_string(),
            "continue key is not valid: server does not recognize this encoded version x/v2"
        );
        assert_eq!(
            decode_continue(&enc("{"), "/p/").unwrap_err().to_string(),
            "continue key is not valid: unexpected end of JSON input"
        );
        assert_eq!(
            decode_continue("a$b", "/p/").unwrap_err().to_string(),
            "continue key is not valid: illegal base64 data at input byte 1"
        );
        assert_eq!(
            invalid_continue_token_message("continue key is not valid: x"),
            "invalid continue token: continue key is not valid: x"
        );
    }

    #[test]
    fn path_clean_matches_go() {
        assert_eq!(path_clean("/a/b/../c"), "/a/c");
        assert_eq!(path_clean("/../x"), "/x");
        assert_eq!(path_clean("/a//b/"), "/a/b");
        assert_eq!(path_clean("/a/./b"), "/a/b");
        assert_eq!(path_clean("/"), "/");
    }
}
