//! Patch application as a PATCH request does it: JSON patch (RFC 6902), JSON merge
//! patch (RFC 7386) and strategic merge patch, parsed with kube's errors and applied
//! to a document (the custom-resource and built-in paths). Never panics.
#![no_main]

use crd_apiserver::handlers::patch::Patch;
use crd_apiserver::http::negotiate::BodyType;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const TYPES: &[BodyType] = &[
    BodyType::JsonPatch,
    BodyType::MergePatch,
    BodyType::StrategicMergePatch,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    // `document \0 patch`; without a separator the patch applies to a webhook
    // configuration (the kind whose strategic merge patch merges lists by key).
    let (doc, patch) = match rest.iter().position(|b| *b == 0) {
        Some(i) => (
            serde_json::from_slice(&rest[..i]).unwrap_or(Value::Null),
            &rest[i + 1..],
        ),
        None => (
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "w", "labels": {"a": "b"}},
                "webhooks": [
                    {"name": "a.example.com", "matchConditions": [{"name": "m", "expression": "true"}]},
                    {"name": "b.example.com"}
                ]
            }),
            rest,
        ),
    };
    let ty = TYPES[selector as usize % TYPES.len()];
    let builtin = selector & 0x80 != 0;
    if let Ok(p) = Patch::parse(ty, patch, builtin) {
        if let Ok(patched) = p.apply(&doc) {
            // A merge patch is idempotent (RFC 7386): applying it again changes nothing.
            if let Patch::Merge(_) = p {
                let again = p.apply(&patched);
                assert_eq!(
                    again.ok().as_ref(),
                    Some(&patched),
                    "merge patch not idempotent"
                );
            }
        }
    }
});
