//! The decode stage's checks on the decoded object: type meta, unknown and duplicate
//! fields under `fieldValidation`, and the scale subresource's paths.

use super::VersionSchema;
use crate::field::{self, Path};
use crate::registry::crd::ScaleSpec;
use crate::rest::{FieldValidation, WriteOptions};
use crate::status::Status;
use serde_json::{json, Value};

/// `apiVersion`/`kind` must be the endpoint's (kube's `ValidateTypeMeta`).
pub fn type_meta_errors(obj: &Value, s: &VersionSchema) -> field::ErrorList {
    let mut errs = Vec::new();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if kind != s.kind {
        errs.push(field::Error::invalid(
            &Path::new("kind"),
            json!(kind),
            format!("must be {}", s.kind),
        ));
    }
    let expected = s.api_version();
    if api_version != expected {
        errs.push(field::Error::invalid(
            &Path::new("apiVersion"),
            json!(api_version),
            format!("must be {expected}"),
        ));
    }
    errs
}

/// Kind and group as the body states them (kube names the body's kind in `Invalid` errors).
pub fn body_group_kind(obj: &Value) -> (String, String) {
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let group = match api_version.split_once('/') {
        Some((g, _)) => g.to_string(),
        None => String::new(),
    };
    (kind, group)
}

/// Apply `fieldValidation` to the unknown fields pruning found (and the duplicate
/// fields decoding found): warnings under Warn, a 400 under Strict, nothing under Ignore.
pub fn unknown_field_policy(
    obj: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
    unknown: Vec<String>,
    patched: Option<&str>,
) -> Result<Vec<String>, Status> {
    let mut problems: Vec<String> = opts
        .duplicate_fields
        .iter()
        .map(|f| format!("duplicate field {}", field::go_quote(f)))
        .collect();
    problems.extend(
        unknown
            .iter()
            .map(|f| format!("unknown field {}", field::go_quote(f))),
    );
    match opts.field_validation {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict if patched.is_some() => {
            let err = field::Error::invalid(
                &Path::new("patch"),
                json!(patched.unwrap_or_default()),
                format!("strict decoding error: {}", problems.join(", ")),
            );
            Err(Status::invalid("", "", "", &[err]))
        }
        FieldValidation::Strict => {
            let kind = obj.get("kind").and_then(Value::as_str).unwrap_or(&s.kind);
            Err(Status::bad_request(format!(
                "{kind} in version {} cannot be handled as a {kind}: strict decoding error: {}",
                field::go_quote(&s.version),
                problems.join(", ")
            )))
        }
    }
}

/// Read an integer at a scale path such as `.spec.replicas` (absent = 0, like kube).
fn nested_int(obj: &Value, path: &str) -> Result<i64, String> {
    let mut cur = obj;
    let trimmed = path.trim_start_matches('.');
    for (i, part) in trimmed.split('.').enumerate() {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return Ok(0),
        }
        if i + 1 < trimmed.split('.').count() && !cur.is_object() {
            return Err(format!(
                "{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                part,
                cur,
                go_type_name(cur)
            ));
        }
    }
    match cur {
        Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or(0)),
        Value::Null => Ok(0),
        other => Err(format!(
            ".{trimmed} accessor error: {other} is of the type {}, expected int64",
            go_type_name(other)
        )),
    }
}

fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// kube's `ValidateScaleSpec` + `ValidateScaleStatus`.
pub fn validate_scale(obj: &Value, scale: &ScaleSpec) -> field::ErrorList {
    let mut errs = Vec::new();
    let mut check = |path: &str| match nested_int(obj, path) {
        Err(e) => errs.push(field::Error::invalid(&Path::new(path), json!(0), e)),
        Ok(n) if n < 0 => errs.push(field::Error::invalid(
            &Path::new(path),
            json!(n),
            "should be a non-negative integer",
        )),
        Ok(n) if n > i32::MAX as i64 => errs.push(field::Error::invalid(
            &Path::new(path),
            json!(n),
            format!("should be less than or equal to {}", i32::MAX),
        )),
        Ok(_) => {}
    };
    check(&scale.spec_replicas_path);
    check(&scale.status_replicas_path);
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_ints_follow_kube() {
        let o = json!({"spec": {"replicas": 3}, "status": {}});
        assert_eq!(nested_int(&o, ".spec.replicas"), Ok(3));
        assert_eq!(nested_int(&o, ".status.replicas"), Ok(0));
        assert!(nested_int(&json!({"spec": {"replicas": "x"}}), ".spec.replicas").is_err());
    }

    #[test]
    fn body_kind_and_group() {
        let o = json!({"apiVersion": "validation.example.com/v1", "kind": "Other"});
        assert_eq!(
            body_group_kind(&o),
            ("Other".to_string(), "validation.example.com".to_string())
        );
    }
}
