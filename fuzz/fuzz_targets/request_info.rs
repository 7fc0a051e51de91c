//! Request path parsing (kube's RequestInfo) and query decoding: never panics, and
//! what it reports is consistent with the path.
#![no_main]

use crd_apiserver::http::{parse_query, percent_decode, request_info};
use http::Method;
use libfuzzer_sys::fuzz_target;

const METHODS: &[Method] = &[
    Method::GET,
    Method::HEAD,
    Method::POST,
    Method::PUT,
    Method::PATCH,
    Method::DELETE,
    Method::OPTIONS,
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (path, query) = text.split_once('?').unwrap_or((text, ""));
    let method = &METHODS[selector as usize % METHODS.len()];
    let info = request_info::parse(method, path, selector & 0x80 != 0);
    if info.is_resource_request {
        assert!(
            info.api_prefix == "api" || info.api_prefix == "apis",
            "{path:?}: resource request under {:?}",
            info.api_prefix
        );
        assert!(!info.resource().is_empty(), "{path:?}: no resource");
    }
    for part in [info.group(), info.namespace(), info.resource(), info.name()] {
        assert!(
            !part.contains('/'),
            "{path:?}: segment {part:?} holds a slash"
        );
    }
    let _ = parse_query(Some(query));
    let _ = percent_decode(text);
});
