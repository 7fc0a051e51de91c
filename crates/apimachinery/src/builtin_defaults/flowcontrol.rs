//! flowcontrol.apiserver.k8s.io/v1 defaults (`pkg/apis/flowcontrol/v1/defaults.go`).

use super::{child_mut, field, ptr, set_defaults, FieldDefault, Lit::*};
use serde_json::Value;

/// flowcontrol.apiserver.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    match kind {
        "FlowSchema" => set_defaults(obj, FLOW_SCHEMA),
        "PriorityLevelConfiguration" => {
            let Some(spec) = child_mut(obj, "spec") else {
                return;
            };
            if let Some(limited) = child_mut(spec, "limited") {
                set_defaults(limited, LIMITED);
                if let Some(q) = limited
                    .pointer_mut("/limitResponse/queuing")
                    .filter(|q| q.is_object())
                {
                    set_defaults(q, QUEUING);
                }
            }
            if let Some(exempt) = child_mut(spec, "exempt") {
                set_defaults(exempt, EXEMPT);
            }
        }
        _ => {}
    }
}

const FLOW_SCHEMA: &[FieldDefault] = &[field("/spec/matchingPrecedence", Int(1000))];

const LIMITED: &[FieldDefault] = &[
    ptr("/nominalConcurrencyShares", Int(30)),
    ptr("/lendablePercent", Int(0)),
];

const EXEMPT: &[FieldDefault] = &[
    ptr("/nominalConcurrencyShares", Int(0)),
    ptr("/lendablePercent", Int(0)),
];

const QUEUING: &[FieldDefault] = &[
    field("/handSize", Int(8)),
    field("/queues", Int(64)),
    field("/queueLengthLimit", Int(50)),
];
