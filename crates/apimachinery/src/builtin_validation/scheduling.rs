//! `scheduling.k8s.io`: the update rules of PriorityClasses.

use super::{immutable, int_at};
use crate::field::{Error, ErrorList, Path};
use serde_json::Value;

/// kube's `ValidatePriorityClassUpdate` (beyond metadata): `value` and
/// `preemptionPolicy` never change.
pub fn validate_update(kind: &str, new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    if kind != "PriorityClass" {
        return errs;
    }
    if int_at(new, "value") != int_at(old, "value") {
        errs.push(Error::forbidden(
            &Path::new("value"),
            "may not be changed in an update.",
        ));
    }
    errs.extend(immutable(
        new,
        old,
        "preemptionPolicy",
        &Path::new("preemptionPolicy"),
    ));
    errs
}
