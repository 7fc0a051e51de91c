//! The autoscaling group: HorizontalPodAutoscaler (v2; v1 validates as its v2 form,
//! as kube validates the internal object both convert to).

use super::*;

/// Validate an autoscaling/v2 object (create and update check the same rules).
pub fn validate_v2(kind: &str, obj: &Value) -> ErrorList {
    match kind {
        "HorizontalPodAutoscaler" => {
            horizontal_pod_autoscaler_spec(value_at(obj, "spec"), &Path::new("spec"))
        }
        _ => ErrorList::new(),
    }
}

/// Validate an autoscaling/v1 object: its v2 form's rules (the fields checked have the
/// same paths in both versions).
pub fn validate_v1(kind: &str, obj: &Value) -> ErrorList {
    let mut v2 = obj.clone();
    crate::builtin_conversion::convert("autoscaling", kind, "v2", &mut v2);
    validate_v2(kind, &v2)
}

/// `validateHorizontalPodAutoscalerSpec` (replica bounds and the scale target; metrics
/// and behavior are not checked here).
pub fn horizontal_pod_autoscaler_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let min = opt_int(spec, "minReplicas");
    if let Some(m) = min.filter(|m| *m < 1) {
        errs.push(Error::invalid(
            &path.child("minReplicas"),
            Value::from(m),
            "must be greater than or equal to 1",
        ));
    }
    let max = int_at(spec, "maxReplicas");
    if max == 0 {
        errs.push(Error::required(
            &path.child("maxReplicas"),
            "must be set and greater than 0",
        ));
    } else if max < 0 {
        errs.push(Error::invalid(
            &path.child("maxReplicas"),
            Value::from(max),
            "must be greater than or equal to 1",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(Error::invalid(
            &path.child("maxReplicas"),
            Value::from(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    errs.extend(cross_version_object_reference(
        value_at(spec, "scaleTargetRef"),
        &path.child("scaleTargetRef"),
    ));
    errs
}

/// `ValidateCrossVersionObjectReference` with the API group required.
fn cross_version_object_reference(r: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in ["kind", "name"] {
        let value = str_at(r, key);
        if value.is_empty() {
            errs.push(Error::required(&path.child(key), ""));
        } else {
            for msg in crate::schema::objectmeta::validate_path_segment_name(value, false) {
                errs.push(Error::invalid(&path.child(key), Value::from(value), msg));
            }
        }
    }
    let api_version = str_at(r, "apiVersion");
    let parts: Vec<&str> = api_version.split('/').collect();
    let msg = match parts.as_slice() {
        [_] | ["", _] => Some("apiVersion must specify API group".to_string()),
        [_, _] => None,
        _ => Some(format!("unexpected GroupVersion string: {api_version}")),
    };
    if let Some(msg) = msg {
        errs.push(Error::invalid(
            &path.child("apiVersion"),
            Value::from(api_version),
            msg,
        ));
    }
    errs
}
