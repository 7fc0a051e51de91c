//! Server-side apply: merging an applied configuration into a live object by a CRD's
//! structural schema (list-type map/set/atomic, map-type granular/atomic, preserved
//! unknown fields), with managedFields on both sides. Never panics.
#![no_main]

use crd_apiserver::apply::{self, Scope};
use crd_apiserver::registry::catalog::CompiledCrd;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// A CRD whose schema exercises every merge strategy.
fn crd() -> &'static CompiledCrd {
    static CRD: OnceLock<CompiledCrd> = OnceLock::new();
    CRD.get_or_init(|| {
        let object = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "replicas": {"type": "integer"},
                                    "ports": {
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name", "protocol"],
                                        "items": {"type": "object", "required": ["name"], "properties": {
                                            "name": {"type": "string"},
                                            "protocol": {"type": "string", "default": "TCP"},
                                            "port": {"type": "integer"}
                                        }}
                                    },
                                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                                    "args": {"type": "array", "items": {"type": "string"}},
                                    "env": {"type": "object", "additionalProperties": {"type": "string"}},
                                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}},
                                    "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                                }
                            },
                            "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
                        }
                    }}
                }]
            }
        });
        match CompiledCrd::compile(object, 1) {
            Ok(c) => c,
            Err(e) => panic!("the fuzz CRD does not compile: {e}"),
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    // `config \0 live`; no live object means create-on-apply.
    let (config, live) = match rest.iter().position(|b| *b == 0) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let Ok(mut config) = serde_json::from_slice::<Value>(config) else {
        return;
    };
    if let Some(obj) = config.as_object_mut() {
        obj.insert("apiVersion".into(), json!("example.com/v1"));
        obj.insert("kind".into(), json!("Widget"));
    }
    let live: Option<Value> = live.and_then(|l| serde_json::from_slice(l).ok());
    let crd = crd();
    let subresource = if flags & 2 != 0 { "status" } else { "" };
    let version = crd.versions[0].schema();
    let scope = Scope {
        schema: &version.structural,
        api_version: "example.com/v1",
        kind: "Widget",
        subresource,
        status_subresource: true,
        versions: &[],
        now: "2024-01-02T03:04:05Z",
    };
    let manager = if flags & 4 != 0 { "kubectl" } else { "fuzz" };
    let force = flags & 1 != 0;
    if let Ok(merged) = apply::apply(live.as_ref(), &config, manager, force, &scope) {
        // Re-applying the same configuration by the same manager succeeds.
        let again = apply::apply(Some(&merged), &config, manager, force, &scope);
        assert!(
            again.is_ok(),
            "re-apply failed: {:?}",
            again.err().map(|e| e.to_string())
        );
    }
    if let Some(live) = &live {
        let mut updated = config.clone();
        apply::record_update(Some(live), &mut updated, manager, &scope);
    }
});
