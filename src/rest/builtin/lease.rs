//! `coordination.k8s.io/v1` Leases (`pkg/registry/coordination/lease`,
//! `ValidateLease`): what leader election writes.

use super::{age_cell, at, field_doc, object_meta_errors, object_meta_update_errors};
use crate::field::{Error, ErrorList, Path};
use crate::rest::typed::{str_at, TypedStrategy};
use crate::table::{BuiltinColumn, BuiltinPrinter};
use serde_json::{json, Value};

/// The API group of Leases.
pub const GROUP: &str = "coordination.k8s.io";

/// The `leases` strategy.
pub struct LeaseStrategy;

/// kube's `ValidateLeaseSpec` (coordinated leader election is off: no strategies).
fn validate_spec(obj: &Value) -> ErrorList {
    let path = Path::new("spec");
    let mut errs = Vec::new();
    if let Some(d) = at(obj, "/spec/leaseDurationSeconds").as_i64() {
        if d <= 0 {
            errs.push(Error::invalid(
                &path.child("leaseDurationSeconds"),
                json!(d),
                "must be greater than 0",
            ));
        }
    }
    if let Some(t) = at(obj, "/spec/leaseTransitions").as_i64() {
        if t < 0 {
            errs.push(Error::invalid(
                &path.child("leaseTransitions"),
                json!(t),
                "must be greater than or equal to 0",
            ));
        }
    }
    errs
}

/// The fields of the `CoordinatedLeaderElection` feature, off by default: kube drops them.
fn drop_disabled_fields(obj: &mut Value, old: Option<&Value>) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for f in ["strategy", "preferredHolder"] {
        let old_had = old.is_some_and(|o| !at(o, &format!("/spec/{f}")).is_null());
        if !old_had {
            spec.remove(f);
        }
    }
}

impl TypedStrategy for LeaseStrategy {
    fn default(&self, obj: &mut Value) {
        // MicroTime fields are written back with microseconds, as Go encodes them.
        for p in ["/spec/acquireTime", "/spec/renewTime"] {
            if let Some(v) = obj.pointer_mut(p) {
                super::event::normalize_time(v, true);
            }
        }
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        drop_disabled_fields(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_disabled_fields(new, Some(old));
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        let mut errs = object_meta_errors(obj);
        errs.extend(validate_spec(obj));
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = object_meta_update_errors(new, old);
        errs.extend(validate_spec(new));
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn printer(&self) -> BuiltinPrinter {
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new(
                    "Holder",
                    "string",
                    0,
                    &field_doc("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
                ),
                BuiltinColumn::age(),
            ],
            cells: |obj, now| {
                vec![
                    json!(crate::rest::object::name(obj)),
                    json!(str_at(obj, "/spec/holderIdentity")),
                    age_cell(obj, now),
                ]
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(spec: Value) -> Value {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn lease_duration_must_be_positive() {
        let errs = LeaseStrategy.validate(&lease(
            json!({"leaseDurationSeconds": 0, "leaseTransitions": -1}),
        ));
        let msgs: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            msgs,
            vec![
                "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
                "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
    }

    #[test]
    fn coordinated_election_fields_are_dropped_on_create() {
        let mut l = lease(json!({"holderIdentity": "a", "strategy": "OldestEmulationVersion"}));
        LeaseStrategy.prepare_for_create(&mut l);
        assert_eq!(l["spec"], json!({"holderIdentity": "a"}));
    }
}
