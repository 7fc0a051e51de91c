//! The decode stage's checks on the decoded object: type meta, unknown and duplicate
//! fields under `fieldValidation`, and the scale subresource's paths.

use super::VersionSchema;
use crate::crd::scale::ScaleSpec;
use crate::field::{self, Path};
use crate::schema::objectmeta;
use crate::status::Status;
use crate::write::{FieldValidation, WriteOptions};
use serde_json::{json, Value};

/// kube decodes a custom resource's `metadata` into Go's `ObjectMeta`: a field of the
/// wrong JSON type (`labels: {"a": 5}`, `finalizers: "a"`) is refused, never stored,
/// with Go's `json: cannot unmarshal ...`: a 400 for a create or update body, a 422 on
/// `patch` quoting the patched object for a patch.
pub fn metadata_type_check(
    obj: &Value,
    (kind, version): (&str, &str),
    is_patch: bool,
) -> Result<(), Status> {
    let err = match obj.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if objectmeta::plainly_typed(m) => None,
        Some(meta @ Value::Object(_)) => {
            crate::typed::go_type_error(meta, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        }
        Some(other) => Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            crate::goformat::go_json_kind(other)
        )),
    };
    let Some(e) = err else { return Ok(()) };
    if is_patch {
        let patched = serde_json::to_string(obj).unwrap_or_default();
        let err = field::Error::invalid(&Path::new("patch"), json!(patched), e);
        return Err(Status::invalid("", "", "", &[err]));
    }
    Err(Status::bad_request(
        crate::codec::cannot_be_handled_message(kind, version, kind, &e),
    ))
}

/// kube's checks of an object's `apiVersion` and `kind` against the endpoint's: each
/// must be `api_version`/`kind`. `absent_ok`: built-in kinds (typed, their decoder
/// fills what is absent) accept an empty one; custom resources (unstructured) do not.
pub fn type_meta_errors(
    obj: &Value,
    api_version: &str,
    kind: &str,
    absent_ok: bool,
) -> field::ErrorList {
    let mut errs = Vec::new();
    let got_kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let got_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let wrong = |got: &str, want: &str| got != want && !(absent_ok && got.is_empty());
    if wrong(got_kind, kind) {
        errs.push(field::Error::invalid(
            &Path::new("kind"),
            json!(got_kind),
            format!("must be {kind}"),
        ));
    }
    if wrong(got_version, api_version) {
        errs.push(field::Error::invalid(
            &Path::new("apiVersion"),
            json!(got_version),
            format!("must be {api_version}"),
        ));
    }
    errs
}

/// The checks kube's decoder makes on the `apiVersion`/`kind` of a custom resource's
/// create or update body (`group`/`version`/`kind` are the endpoint's): no `kind` and a
/// foreign group/version are 400s before any stage runs. `json_body` says whether the
/// body is JSON (kube quotes YAML bodies converted to JSON in one message); `strict`
/// whether kube's strict decoder ran (`fieldValidation` Warn or Strict): the two decoders
/// word a missing kind differently.
pub fn check_body_type_meta(
    obj: &Value,
    endpoint: (&str, &str, &str),
    body: &[u8],
    json_body: bool,
    strict: bool,
) -> Result<(), Status> {
    let (group, version, kind) = endpoint;
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (body_group, body_version) = parse_group_version(api_version);
    if obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        if strict {
            return Err(Status::bad_request(
                crate::codec::unrecognized_object_message(
                    kind,
                    &crate::codec::DecodeError::NotAnObject,
                    body,
                ),
            ));
        }
        // The lenient decoder fills the kind (and a missing version) from the endpoint.
        let shown_version =
            if body_version.is_empty() && (body_group.is_empty() || body_group == group) {
                version
            } else {
                body_version
            };
        let data = if json_body {
            String::from_utf8_lossy(body).into_owned()
        } else {
            serde_json::to_string(obj).unwrap_or_default()
        };
        return Err(Status::bad_request(format!(
            "{kind} in version {} cannot be handled as a {kind}: {}",
            field::go_quote(shown_version),
            crate::codec::missing_kind_message(data.as_bytes())
        )));
    }
    if body_group != group || body_version != version {
        let data_gv = if body_group.is_empty() {
            body_version.to_string()
        } else {
            format!("{body_group}/{body_version}")
        };
        return Err(Status::bad_request(format!(
            "the API version in the data ({data_gv}) does not match the expected API version ({group}/{version})"
        )));
    }
    Ok(())
}

/// kube's `ParseGroupVersion`, with an unparsable value read as empty (as
/// `Unstructured.GroupVersionKind` does).
fn parse_group_version(api_version: &str) -> (&str, &str) {
    let mut parts = api_version.splitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(version), None, _) => ("", version),
        (Some(group), Some(version), None) => (group, version),
        _ => ("", ""),
    }
}

/// Whether `obj` names another group or kind than the schema's (kube's decoder neither
/// prunes nor defaults such an object).
pub fn is_foreign_kind(obj: &Value, s: &VersionSchema) -> bool {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    kind != s.kind || parse_group_version(api_version).0 != s.group
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
    (kind, version): (&str, &str),
    opts: &WriteOptions,
    unknown: &[String],
    patched: Option<&str>,
) -> Result<Vec<String>, Status> {
    let mut problems: Vec<String> = opts
        .duplicate_fields
        .iter()
        .map(|f| crate::codec::duplicate_field_message(f))
        .collect();
    problems.extend(
        unknown
            .iter()
            .map(|f| crate::codec::unknown_field_message(f)),
    );
    match opts.field_validation {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(problems),
        FieldValidation::Strict if problems.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => {
            let text = crate::codec::strict_decoding_error(&problems);
            if let Some(patched) = patched {
                let err = field::Error::invalid(&Path::new("patch"), json!(patched), text);
                return Err(Status::invalid("", "", "", &[err]));
            }
            let kind = obj.get("kind").and_then(Value::as_str).unwrap_or(kind);
            Err(Status::bad_request(
                crate::codec::cannot_be_handled_message(kind, version, kind, &text),
            ))
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
                crate::goformat::go_type_name(cur)
            ));
        }
    }
    match cur {
        Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or(0)),
        Value::Null => Ok(0),
        other => Err(format!(
            ".{trimmed} accessor error: {other} is of the type {}, expected int64",
            crate::goformat::go_type_name(other)
        )),
    }
}

/// kube's `ValidateScaleSpec`: the spec replicas path holds a non-negative int32.
pub fn validate_scale_spec(obj: &Value, scale: &ScaleSpec) -> field::ErrorList {
    replicas_errors(obj, &scale.spec_replicas_path)
}

/// kube's `ValidateScaleStatus` (replicas; the only one a `/status` write runs).
pub fn validate_scale_status(obj: &Value, scale: &ScaleSpec) -> field::ErrorList {
    replicas_errors(obj, &scale.status_replicas_path)
}

/// The replicas at `path` as kube checks them: an int64, not negative, within int32.
fn replicas_errors(obj: &Value, path: &str) -> field::ErrorList {
    match nested_int(obj, path) {
        Err(e) => vec![field::Error::invalid(&Path::new(path), json!(0), e)],
        Ok(n) if n < 0 => vec![field::Error::invalid(
            &Path::new(path),
            json!(n),
            "should be a non-negative integer",
        )],
        Ok(n) if n > i32::MAX as i64 => vec![field::Error::invalid(
            &Path::new(path),
            json!(n),
            format!("should be less than or equal to {}", i32::MAX),
        )],
        Ok(_) => Vec::new(),
    }
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
    fn body_of_another_group_is_a_400_naming_both_versions() {
        let endpoint = ("pipeline.example.com", "v1", "Widget");
        let obj = json!({"apiVersion": "other.example.com/v1", "kind": "Widget"});
        let err = check_body_type_meta(&obj, endpoint, b"{}", true, true).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            "the API version in the data (other.example.com/v1) does not match the expected API version (pipeline.example.com/v1)"
        );
        let ok = json!({"apiVersion": "pipeline.example.com/v1", "kind": "Gadget"});
        assert!(check_body_type_meta(&ok, endpoint, b"{}", true, true).is_ok());
    }

    #[test]
    fn body_without_kind_is_worded_per_decoder() {
        let endpoint = ("pipeline.example.com", "v1", "Widget");
        let body = br#"{"metadata":{"name":"n"}}"#;
        let obj = json!({"metadata": {"name": "n"}});
        let strict = check_body_type_meta(&obj, endpoint, body, true, true).unwrap_err();
        assert_eq!(
            strict.message,
            r#"the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{"metadata":{"name":"n"}}' ({"metadata":{"name":"n"}})"#
        );
        let lenient = check_body_type_meta(&obj, endpoint, body, true, false).unwrap_err();
        assert_eq!(
            lenient.message,
            r#"Widget in version "v1" cannot be handled as a Widget: Object 'Kind' is missing in '{"metadata":{"name":"n"}}'"#
        );
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
