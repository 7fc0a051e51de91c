//! CEL rules as a CRD carries them: the expression is checked against cel-go's limits,
//! parsed, type-checked and cost-estimated when the CRD is validated, then evaluated
//! on a create and an update of an object. Whatever the expression (deep nesting,
//! long chains, huge literals, odd tokens), nothing panics or overflows the stack:
//! every input is a compile error, a validation error or a verdict.
#![no_main]

use crd_apiserver::pipeline;
use crd_apiserver::registry::{catalog::CompiledCrd, crd};
use crd_apiserver::rest::WriteOptions;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fn crd_with(rule: &str, message_expression: bool) -> Value {
    let mut validation = json!({"rule": rule});
    if message_expression {
        validation = json!({"rule": "self.x >= 0", "messageExpression": rule});
    }
    let mut c = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "fuzzes.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "fuzzes", "singular": "fuzz", "kind": "Fuzz", "listKind": "FuzzList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [validation],
                    "properties": {
                        "x": {"type": "integer"},
                        "s": {"type": "string", "maxLength": 64},
                        "l": {"type": "array", "maxItems": 8, "items": {"type": "integer"}},
                        "m": {"type": "object", "maxProperties": 8, "additionalProperties": {"type": "string", "maxLength": 16}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }}}]
        }
    });
    crd::default_crd(&mut c);
    c
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Fuzz",
           "metadata": {"name": "f", "namespace": "default"}, "spec": spec})
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Ok(rule) = std::str::from_utf8(rest) else {
        return;
    };
    let c = crd_with(rule, selector & 1 == 1);
    if !crd::validate_crd(&c).is_empty() {
        return;
    }
    let Ok(compiled) = CompiledCrd::compile(c, 1) else {
        return;
    };
    let schema = &compiled.versions[0].schema();
    let opts = WriteOptions::default();
    let old = object(json!({"x": 1, "s": "a", "l": [1, 2], "m": {"k": "v"}, "free": {"a": [1, {"b": null}]}}));
    if let Ok(created) = pipeline::create(old.clone(), schema, &opts) {
        let mut new = created.object.clone();
        new["spec"]["x"] = json!(2);
        let _ = pipeline::update(new, &created.object, schema, &opts);
    }
});
