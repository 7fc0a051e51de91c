//! Body decoding as a create/update request does it: JSON or YAML by content type,
//! kube's duplicate-field detection, and the error texts built from a failure.
#![no_main]

use crd_apiserver::codec;
use libfuzzer_sys::fuzz_target;

/// Content types the decoder distinguishes (the first input byte picks one).
const CONTENT_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/apply-patch+yaml",
    "application/merge-patch+json",
    "application/json; charset=utf-8",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let content_type = CONTENT_TYPES[selector as usize % CONTENT_TYPES.len()];
    match codec::decode_body(body, content_type) {
        Ok(value) => {
            // What the decoder accepted re-encodes and decodes to the same value.
            if let Ok(bytes) = serde_json::to_vec(&value) {
                let again = codec::decode_json(&bytes);
                assert!(
                    again.as_ref().is_ok_and(|v| *v == value),
                    "re-decoding {value} gave {again:?}"
                );
            }
        }
        Err(e) => {
            let _ = codec::unrecognized_object_message("Widget", &e, body);
        }
    }
    let _ = codec::find_duplicate_fields(body);
    let _ = codec::yaml_duplicate_key_error(body);
    let _ = codec::interpret_type_meta(body);
    let _ = codec::summarize_body(body);
    let _ = codec::decode_manifests(body, selector & 1 == 0);
});
