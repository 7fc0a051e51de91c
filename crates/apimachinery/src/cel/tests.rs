//! The seed's examples (the "CEL transition rules" blog post, seed 002) through the
//! real pipeline, with current kube-apiserver's wording; plus the behaviours around
//! them: optionalOldSelf, correlation, reasons, fieldPath, messageExpression.

use crate::crd::compiled::CompiledCrd;
use crate::pipeline::{self, VersionSchema};
use crate::status::Status;
use crate::write::WriteOptions;
use serde_json::{json, Value};

fn crd(kind: &str, schema: Value) -> CompiledCrd {
    let plural = format!("{}s", kind.to_lowercase());
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.stable.example.com")},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    });
    CompiledCrd::compile(crd, 1).expect("CRD compiles")
}

/// The CRD's first version's schema, kept for the rest of the test run.
fn schema(c: &CompiledCrd) -> &'static VersionSchema {
    Box::leak(Box::new(c.versions[0].schema()))
}

fn object(kind: &str, name: &str, fields: Value) -> Value {
    let mut o = json!({"apiVersion": "stable.example.com/v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}});
    if let (Some(m), Some(f)) = (o.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            m.insert(k.clone(), v.clone());
        }
    }
    o
}

/// `kubectl apply` of a new object: what the store keeps.
fn create(s: &VersionSchema, obj: Value) -> Result<Value, Status> {
    pipeline::create(obj, s, &WriteOptions::default()).map(|a| {
        let mut stored = a.object;
        stored["metadata"]["resourceVersion"] = json!("1");
        stored
    })
}

/// `kubectl apply` of a changed object (a full replacement of the fields).
fn update(s: &VersionSchema, old: &Value, fields: Value) -> Result<Value, Status> {
    let mut new = old.clone();
    for k in ["value", "values"] {
        if let Some(m) = new.as_object_mut() {
            m.remove(k);
        }
    }
    if let (Some(m), Some(f)) = (new.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            m.insert(k.clone(), v.clone());
        }
    }
    pipeline::update(new, old, s, &WriteOptions::default()).map(|a| a.object)
}

fn message(r: Result<Value, Status>) -> String {
    match r {
        Ok(v) => panic!("expected a rejection, got {v}"),
        Err(st) => {
            assert_eq!(st.code, 422);
            st.message
        }
    }
}

fn immutable_since_first_write() -> CompiledCrd {
    crd(
        "ImmutableSinceFirstWrite",
        json!({
            "type": "object",
            "properties": {
                "value": {"maxLength": 512, "type": "string",
                    "x-kubernetes-validations": [{"message": "Value is immutable", "rule": "self == oldSelf"}]}
            },
            "x-kubernetes-validations": [{"message": "Value is required once set", "rule": "!has(oldSelf.value) || has(self.value)"}]
        }),
    )
}

#[test]
fn blog_immutable_since_first_write() {
    let c = immutable_since_first_write();
    let s = schema(&c);
    let k = "ImmutableSinceFirstWrite";
    // Creating an empty object is allowed: value is optional.
    let stored = create(s, object(k, "test1", json!({}))).expect("created");
    // The first write of value is allowed.
    let stored = update(s, &stored, json!({"value": "Hello, world!"})).expect("configured");
    // Changing it is blocked by the field rule; current kube prints the value.
    assert_eq!(
        message(update(s, &stored, json!({"value": "Hello, new world!"}))),
        "ImmutableSinceFirstWrite.stable.example.com \"test1\" is invalid: value: Invalid value: \"Hello, new world!\": Value is immutable"
    );
    // Removing it is blocked by the type rule; objects are printed without a value.
    assert_eq!(
        message(update(s, &stored, json!({}))),
        "ImmutableSinceFirstWrite.stable.example.com \"test1\" is invalid: <nil>: Invalid value: Value is required once set"
    );
    // Re-applying the same value passes.
    update(s, &stored, json!({"value": "Hello, world!"})).expect("unchanged");
}

#[test]
fn blog_immutable_since_creation() {
    let c = crd(
        "ImmutableSinceCreation",
        json!({
            "type": "object",
            "properties": {
                "value": {"maxLength": 512, "type": "string",
                    "x-kubernetes-validations": [{"message": "Value is immutable", "rule": "self == oldSelf"}]}
            },
            "required": ["value"]
        }),
    );
    let s = schema(&c);
    let k = "ImmutableSinceCreation";
    // Without the required field: the schema error blocks the rules (current kube
    // prints the nil value as `null`, the blog's v1.28 as "null").
    let msg = message(create(s, object(k, "test1", json!({}))));
    assert_eq!(
        msg,
        "ImmutableSinceCreation.stable.example.com \"test1\" is invalid: [value: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
    let stored = create(s, object(k, "test1", json!({"value": "Hello, world!"}))).expect("created");
    assert_eq!(
        message(update(s, &stored, json!({"value": "Hello, new world!"}))),
        "ImmutableSinceCreation.stable.example.com \"test1\" is invalid: value: Invalid value: \"Hello, new world!\": Value is immutable"
    );
    assert_eq!(
        message(update(s, &stored, json!({}))),
        "ImmutableSinceCreation.stable.example.com \"test1\" is invalid: [value: Required value, <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"
    );
}

#[test]
fn blog_append_only_list() {
    let c = crd(
        "AppendOnlyList",
        json!({
            "type": "object",
            "properties": {
                "value": {
                    "type": "array", "maxItems": 100,
                    "items": {"type": "object", "required": ["name"], "properties": {
                        "name": {"type": "string"}, "image": {"type": "string"}}},
                    "x-kubernetes-validations": [{"message": "Values may only be added", "rule": "oldSelf.all(x, x in self)"}]
                }
            },
            "x-kubernetes-validations": [{"message": "Value is required once set", "rule": "!has(oldSelf.value) || has(self.value)"}]
        }),
    );
    let s = schema(&c);
    let k = "AppendOnlyList";
    let one = json!([{"name": "container1", "image": "nginx/nginx"}]);
    let two = json!([{"name": "container1", "image": "nginx/nginx"}, {"name": "container2", "image": "mongodb/mongodb"}]);
    let stored = create(s, object(k, "testlist", json!({"value": one}))).expect("created");
    let stored = update(s, &stored, json!({"value": two})).expect("configured");
    assert_eq!(
        message(update(s, &stored, json!({"value": one}))),
        "AppendOnlyList.stable.example.com \"testlist\" is invalid: value: Invalid value: Values may only be added"
    );
    assert_eq!(
        message(update(s, &stored, json!({}))),
        "AppendOnlyList.stable.example.com \"testlist\" is invalid: <nil>: Invalid value: Value is required once set"
    );
}

#[test]
fn blog_map_with_append_only_keys_immutable_values() {
    let c = crd(
        "MapAppendOnlyKeys",
        json!({
            "type": "object",
            "properties": {
                "values": {
                    "type": "object", "maxProperties": 10,
                    "additionalProperties": {"type": "string"},
                    "x-kubernetes-validations": [{"message": "Keys may not be removed and their values must stay the same",
                        "rule": "oldSelf.all(key, key in self && self[key] == oldSelf[key])"}]
                }
            },
            "x-kubernetes-validations": [{"message": "Value is required once set", "rule": "!has(oldSelf.values) || has(self.values)"}]
        }),
    );
    let s = schema(&c);
    let k = "MapAppendOnlyKeys";
    let stored = create(
        s,
        object(k, "testmap", json!({"values": {"key1": "value1"}})),
    )
    .expect("created");
    let stored = update(
        s,
        &stored,
        json!({"values": {"key1": "value1", "key2": "value2"}}),
    )
    .expect("configured");
    let want = "MapAppendOnlyKeys.stable.example.com \"testmap\" is invalid: values: Invalid value: Keys may not be removed and their values must stay the same";
    assert_eq!(
        message(update(s, &stored, json!({"values": {"key1": "value1"}}))),
        want
    );
    assert_eq!(
        message(update(
            s,
            &stored,
            json!({"values": {"key1": "changed", "key2": "value2"}})
        )),
        want
    );
    assert_eq!(
        message(update(s, &stored, json!({}))),
        "MapAppendOnlyKeys.stable.example.com \"testmap\" is invalid: <nil>: Invalid value: Value is required once set"
    );
}

#[test]
fn blog_basics_maximum_greater_than_minimum() {
    let c = crd(
        "Sized",
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"maximumSize": {"type": "integer"}, "minimumSize": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": "self.maximumSize > self.minimumSize", "message": "Maximum size must be greater than minimum size."}]
        }}}),
    );
    let s = schema(&c);
    create(
        s,
        object(
            "Sized",
            "ok",
            json!({"spec": {"maximumSize": 5, "minimumSize": 1}}),
        ),
    )
    .expect("valid");
    assert_eq!(
        message(create(s, object("Sized", "bad", json!({"spec": {"maximumSize": 1, "minimumSize": 5}})))),
        "Sized.stable.example.com \"bad\" is invalid: spec: Invalid value: Maximum size must be greater than minimum size."
    );
}

// ---------------------------------------------------------------------------------------
// CRD creation: rules are compiled and cost-checked (kube's e2e CRD validation rules).

fn crd_errors(schema: Value) -> Vec<String> {
    let mut crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    });
    crate::crd::default_crd(&mut crd);
    crate::crd::validate_crd(&crd)
        .iter()
        .map(|e| e.to_string())
        .collect()
}

fn e2e_schema_with_validation_expression() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.x + self.y > 0"},
                    {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
                    {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}
                ],
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "integer"},
                    "firstArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "secondArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}
                }
            },
            "status": {
                "type": "object",
                "x-kubernetes-validations": [{"rule": "self.health == 'ok' || self.health == 'unhealthy'"}],
                "properties": {"health": {"type": "string"}}
            }
        }
    })
}

#[test]
fn e2e_rules_within_budget_are_accepted() {
    assert_eq!(
        crd_errors(e2e_schema_with_validation_expression()),
        Vec::<String>::new()
    );
}

#[test]
fn e2e_rule_referring_to_a_property_that_does_not_exist() {
    let errs = crd_errors(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.z == 100"}],
        "properties": {"x": {"type": "integer"}}
    }}}));
    assert_eq!(
        errs,
        vec!["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.z == 100\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'z'\n | self.z == 100\n | ....^"]
    );
}

#[test]
fn e2e_rule_with_a_syntax_error() {
    let errs = crd_errors(json!({"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [{"rule": "self = 42"}]
    }}}));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("compilation failed: ERROR: <input>:1:6: Syntax error"),
        "{}",
        errs[0]
    );
}

#[test]
fn e2e_rule_exceeding_the_estimated_cost_limit() {
    let errs = crd_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}
        }}}}}),
    );
    assert_eq!(
        errs,
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            "spec.validation.openAPIV3Schema.properties[spec].properties[x].items.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
        ]
    );
}

#[test]
fn bounded_lists_make_the_expensive_rule_affordable() {
    let errs = crd_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {
            "type": "array", "maxItems": 10,
            "items": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64},
                "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]}
        }}}}}),
    );
    assert_eq!(errs, Vec::<String>::new());
}

#[test]
fn e2e_runtime_cost_limit_stops_expensive_rules() {
    let c = crd("Large", e2e_schema_with_validation_expression());
    let s = schema(&c);
    let large: Vec<Value> = (0..725).map(|_| json!(20)).collect();
    let msg = message(create(
        s,
        object(
            "Large",
            "cr-1",
            json!({"spec": {"x": 1, "y": 1, "firstArray": [], "secondArray": [], "largeArray": large}}),
        ),
    ));
    assert!(msg.contains("spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.largeArray.all(x, self.largeArray.all(y, y == x))"), "{msg}");
}

#[test]
fn e2e_rules_satisfied_and_failed() {
    let c = crd("Ok", e2e_schema_with_validation_expression());
    let s = schema(&c);
    create(s, object("Ok", "ok", json!({"spec": {"x": 1, "y": 0, "firstArray": [1, 2], "secondArray": [3], "largeArray": [1, 1]}, "status": {"health": "ok"}}))).expect("satisfies every rule");
    let msg = message(create(
        s,
        object(
            "Ok",
            "bad",
            json!({"spec": {"x": 0, "y": 0, "firstArray": [2, 1], "secondArray": [], "largeArray": []}}),
        ),
    ));
    assert_eq!(
        msg,
        "Ok.stable.example.com \"bad\" is invalid: [spec: Invalid value: failed rule: self.x + self.y > 0, spec: Invalid value: failed rule: self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)]"
    );
}

#[test]
fn e2e_transition_rule_applies_to_updates_only() {
    let c = crd(
        "Num",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "num": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf"}]}}}}}),
    );
    let s = schema(&c);
    let stored = create(s, object("Num", "n", json!({"spec": {"num": 10}})))
        .expect("no transition on create");
    let mut new = stored.clone();
    new["spec"]["num"] = json!(9);
    let msg =
        message(pipeline::update(new, &stored, s, &WriteOptions::default()).map(|a| a.object));
    assert_eq!(msg, "Num.stable.example.com \"n\" is invalid: spec.num: Invalid value: 9: failed rule: self > oldSelf");
}

// ---------------------------------------------------------------------------------------
// Transition rules, correlation, reasons, fieldPath, messageExpression, ratcheting.

fn admitted(r: Result<crate::write::Admitted, Status>) -> crate::write::Admitted {
    match r {
        Ok(a) => a,
        Err(st) => panic!("rejected: {}", st.message),
    }
}

#[test]
fn optional_old_self_runs_on_create_too() {
    let c = crd(
        "Opt",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() ? self == oldSelf.value() : self.startsWith('new-')",
            "optionalOldSelf": true, "message": "must start with new- and never change"}]}}}}}),
    );
    let s = schema(&c);
    assert_eq!(
        message(create(s, object("Opt", "a", json!({"spec": {"name": "old-x"}})))),
        "Opt.stable.example.com \"a\" is invalid: spec.name: Invalid value: \"old-x\": must start with new- and never change"
    );
    let stored =
        create(s, object("Opt", "a", json!({"spec": {"name": "new-x"}}))).expect("created");
    let mut new = stored.clone();
    new["spec"]["name"] = json!("new-y");
    let msg =
        message(pipeline::update(new, &stored, s, &WriteOptions::default()).map(|a| a.object));
    assert!(
        msg.ends_with("spec.name: Invalid value: \"new-y\": must start with new- and never change"),
        "{msg}"
    );
}

#[test]
fn list_map_items_correlate_by_key_plain_lists_do_not() {
    let c = crd(
        "Ports",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ports": {"type": "array", "maxItems": 10, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "maxLength": 10}, "port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}}}}}}),
    );
    let s = schema(&c);
    let stored = create(
        s,
        object(
            "Ports",
            "p",
            json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]}}),
        ),
    )
    .expect("created");
    // Reordering and adding items is fine: items are matched by name.
    let mut new = stored.clone();
    new["spec"]["ports"] =
        json!([{"name": "c", "port": 9}, {"name": "b", "port": 2}, {"name": "a", "port": 1}]);
    admitted(pipeline::update(new, &stored, s, &WriteOptions::default()));
    let mut new = stored.clone();
    new["spec"]["ports"] = json!([{"name": "b", "port": 3}, {"name": "a", "port": 1}]);
    let msg =
        message(pipeline::update(new, &stored, s, &WriteOptions::default()).map(|a| a.object));
    assert!(
        msg.ends_with("spec.ports[0]: Invalid value: port is immutable"),
        "{msg}"
    );
}

#[test]
fn old_self_under_plain_lists_is_rejected_at_crd_creation() {
    let errs = crd_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10,
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}}),
    );
    assert_eq!(
        errs,
        vec!["spec.validation.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[items]"]
    );
}

#[test]
fn rule_fields_are_checked_at_crd_creation() {
    let errs = crd_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string", "maxLength": 5}},
        "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "self.a == 'x'", "reason": "FieldValueBogus"},
            {"rule": "self.a == 'x'", "fieldPath": ".nope"},
            {"rule": "self.a == 'x'", "optionalOldSelf": true},
            {"rule": "self.a == 'x'", "messageExpression": "1"}
        ]}}}),
    );
    let p = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        errs,
        vec![
            format!("{p}[0].rule: Required value: rule is not specified"),
            format!("{p}[1].reason: Unsupported value: \"FieldValueBogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
            format!("{p}[2].fieldPath: Invalid value: \".nope\": must be a valid path"),
        ],
        "schema errors stop the rules from compiling"
    );
    let errs = crd_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"a": {"type": "string", "maxLength": 5}},
        "x-kubernetes-validations": [
            {"rule": "self.a == 'x'", "optionalOldSelf": true},
            {"rule": "self.a == 'x'", "messageExpression": "1"}
        ]}}}),
    );
    assert_eq!(
        errs,
        vec![
            format!("{p}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"),
            format!("{p}[1].messageExpression: Invalid value: {{\"Rule\":\"self.a == 'x'\",\"Message\":\"\",\"MessageExpression\":\"1\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}}: messageExpression must evaluate to a string"),
        ]
    );
}

#[test]
fn reason_field_path_and_message_expression() {
    let c = crd(
        "Quota",
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 10}, "maxProperties": 5}},
        "x-kubernetes-validations": [
            {"rule": "self.min <= self.max", "messageExpression": "'min (' + string(self.min) + ') must not exceed max (' + string(self.max) + ')'",
             "fieldPath": ".max", "reason": "FieldValueForbidden"},
            {"rule": "!has(self.labels) || !('bad' in self.labels)", "reason": "FieldValueRequired", "message": "no bad label", "fieldPath": ".labels"},
            {"rule": "self.max < 100", "reason": "FieldValueDuplicate"}
        ]}}}),
    );
    let s = schema(&c);
    let obj = object(
        "Quota",
        "q",
        json!({"spec": {"min": 5, "max": 200, "labels": {"bad": "x"}}}),
    );
    let st = pipeline::create(obj, s, &WriteOptions::default()).expect_err("rejected");
    let causes: Vec<(String, String, String)> = st
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.reason.clone(), c.field.clone(), c.message.clone()))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(
        causes,
        vec![
            (
                "FieldValueRequired".into(),
                "spec.labels".into(),
                "Required value: no bad label".into()
            ),
            (
                "FieldValueDuplicate".into(),
                "spec".into(),
                "Duplicate value".into()
            ),
        ]
    );
    let obj = object("Quota", "q", json!({"spec": {"min": 5, "max": 1}}));
    let st = pipeline::create(obj, s, &WriteOptions::default()).expect_err("rejected");
    assert_eq!(st.message, "Quota.stable.example.com \"q\" is invalid: spec.max: Forbidden: min (5) must not exceed max (1)");
}

#[test]
fn unchanged_invalid_values_are_ratcheted_to_warnings() {
    let c = crd(
        "Ratchet",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self.startsWith('ok')", "message": "must start with ok"}]},
        "b": {"type": "integer"}}}}}),
    );
    let s = schema(&c);
    // An object stored before the rule existed.
    let stored = object("Ratchet", "r", json!({"spec": {"a": "bad", "b": 1}}));
    let mut stored = stored;
    stored["metadata"]["uid"] = json!("u");
    stored["metadata"]["resourceVersion"] = json!("1");
    stored["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00Z");
    stored["metadata"]["generation"] = json!(1);
    let mut new = stored.clone();
    new["spec"]["b"] = json!(2);
    let a = admitted(pipeline::update(new, &stored, s, &WriteOptions::default()));
    assert_eq!(
        a.warnings,
        vec!["spec.a: Invalid value: \"bad\": must start with ok".to_string()]
    );
    let mut new = stored.clone();
    new["spec"]["a"] = json!("worse");
    let msg =
        message(pipeline::update(new, &stored, s, &WriteOptions::default()).map(|a| a.object));
    assert!(
        msg.ends_with("spec.a: Invalid value: \"worse\": must start with ok"),
        "{msg}"
    );
}

#[test]
fn runtime_errors_are_reported_per_rule() {
    let c = crd(
        "Errs",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "integer"}, "m": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 3},
        "v": {"x-kubernetes-int-or-string": true}},
        "x-kubernetes-validations": [
            {"rule": "self.m['missing'] == 'x'"},
            {"rule": "10 / self.a > 1"},
            {"rule": "self.v > 1"}
        ]}}}),
    );
    let s = schema(&c);
    let msg = message(create(
        s,
        object("Errs", "e", json!({"spec": {"a": 0, "m": {}, "v": "x"}})),
    ));
    assert_eq!(
        msg,
        "Errs.stable.example.com \"e\" is invalid: [spec: Invalid value: \"object\": no such key: missing evaluating rule: self.m['missing'] == 'x', spec: Invalid value: \"object\": division by zero evaluating rule: 10 / self.a > 1, spec: Invalid value: \"object\": 'no such overload': call arguments did not match a supported operator, function or macro signature for rule: self.v > 1]"
    );
}

// ---------------------------------------------------------------------------------------
// The libraries kube's environment offers, as CRD authors use them.

fn library_crd() -> CompiledCrd {
    crd(
        "Lib",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 63},
            "image": {"type": "string", "maxLength": 255},
            "replicas": {"type": "integer"},
            "ratio": {"type": "number"},
            "port": {"x-kubernetes-int-or-string": true},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}},
            "scores": {"type": "array", "maxItems": 10, "items": {"type": "integer"}},
            "labels": {"type": "object", "maxProperties": 10, "additionalProperties": {"type": "string", "maxLength": 20}},
            "timeout": {"type": "string", "format": "duration"},
            "created": {"type": "string", "format": "date-time"},
            "memory": {"type": "string", "maxLength": 20},
            "endpoint": {"type": "string", "maxLength": 100},
            "address": {"type": "string", "maxLength": 45},
            "version": {"type": "string", "maxLength": 20},
            "set": {"type": "array", "maxItems": 5, "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 5}},
            "with-dash": {"type": "string", "maxLength": 5},
            "namespace": {"type": "string", "maxLength": 5}
        }}}}),
    )
}

fn library_object() -> Value {
    object(
        "Lib",
        "lib",
        json!({"spec": {
            "name": "web-1", "image": "registry.example.com/web:1.2.3", "replicas": 3, "ratio": 0.5, "port": "8080",
            "tags": ["a", "b", "c"], "scores": [3, 1, 2], "labels": {"app": "web", "tier": "front"},
            "timeout": "1m30s", "created": "2024-05-06T07:08:09Z", "memory": "1536Mi",
            "endpoint": "https://example.com:8443/api/v1?watch=true", "address": "10.0.0.7", "version": "v1.2",
            "set": ["x", "y"], "with-dash": "d", "namespace": "ns"
        }}),
    )
}

/// Evaluate each rule on the library object's `spec`; all must hold.
fn assert_rules_hold(rules: &[&str]) {
    let c = library_crd();
    let s = schema(&c);
    let mut failures = Vec::new();
    for rule in rules {
        let mut crd_schema = json!({"type": "object"});
        crd_schema["properties"] = c.info.versions[0]
            .schema
            .as_ref()
            .map(|s| s.value()["properties"].clone())
            .unwrap_or_default();
        crd_schema["properties"]["spec"]["x-kubernetes-validations"] = json!([{"rule": rule}]);
        let with_rule = crd("Lib", crd_schema);
        let _ = s;
        if let Err(st) = create(schema(&with_rule), library_object()) {
            failures.push(format!("{rule}: {}", st.message));
        }
    }
    assert!(
        failures.is_empty(),
        "rules that did not hold:\n{}",
        failures.join("\n")
    );
}

#[test]
fn kubebuilder_rules_hold() {
    assert_rules_hold(&[
        "self.replicas >= 1 && self.replicas <= 10",
        "has(self.name) && size(self.name) <= 63",
        "self.name.matches('^[a-z0-9-]+$')",
        "self.image.startsWith('registry.example.com/') && self.image.endsWith(':1.2.3')",
        "self.image.contains('/web')",
        "self.tags.all(t, t.size() == 1) && self.tags.exists(t, t == 'b') && self.tags.exists_one(t, t == 'c')",
        "self.labels.all(k, k in ['app', 'tier']) && 'app' in self.labels && self.labels['app'] == 'web'",
        "self.replicas > 2 ? self.ratio < 1.0 : true",
        "self.replicas * 2 == 6 && self.replicas / 2 == 1 && self.replicas % 2 == 1 && -self.replicas == -3",
        "self.ratio + 0.5 == 1.0 && self.replicas > 0.5 && 2u > 1",
        "!has(self.missing_is_not_declared_so_use_labels) || true".replace("self.missing_is_not_declared_so_use_labels", "self.labels").as_str(),
        "type(self.port) == string ? self.port.matches('^[0-9]+$') : self.port > 0",
        "self.with__dash__dash == 'd' && self.__namespace__ == 'ns'",
        "self.scores.map(s, s * 10) == [30, 10, 20] && self.scores.filter(s, s > 1).size() == 2",
        "self.tags + ['d'] == ['a', 'b', 'c', 'd']",
        "self.set == ['y', 'x']",
        "int('12') == 12 && string(12) == '12' && double('1.5') == 1.5 && uint(3) == 3u && bool('true')",
        "dyn(self.replicas) == 3",
    ]);
}

#[test]
fn strings_lists_sets_and_optionals_hold() {
    assert_rules_hold(&[
        "self.name.charAt(0) == 'w' && self.name.indexOf('-') == 3 && self.name.lastIndexOf('b') == 2",
        "self.name.upperAscii() == 'WEB-1' && 'ABC'.lowerAscii() == 'abc' && '  x '.trim() == 'x'",
        "self.name.replace('-', '_') == 'web_1' && self.name.split('-') == ['web', '1'] && self.name.substring(4) == '1'",
        "self.tags.join(',') == 'a,b,c' && strings.quote('a\"b') == '\"a\\\\\"b\"'",
        "'%s has %d tags'.format([dyn(self.name), dyn(self.tags.size())]) == 'web-1 has 3 tags'",
        "self.scores.isSorted() == false && self.scores.sum() == 6 && self.scores.min() == 1 && self.scores.max() == 3",
        "self.scores.indexOf(1) == 1 && self.scores.lastIndexOf(9) == -1",
        "self.scores.sort() == [1, 2, 3] && self.scores.reverse() == [2, 1, 3] && [1, 1, 2].distinct() == [1, 2]",
        "self.scores.slice(1, 2) == [1] && [[1], [2, 3]].flatten() == [1, 2, 3] && lists.range(3) == [0, 1, 2]",
        "self.scores.first().value() == 3 && [].first().hasValue() == false",
        "sets.contains(self.tags, ['a']) && sets.equivalent(['a', 'b'], ['b', 'a']) && sets.intersects(self.tags, ['c', 'z'])",
        "self.?name.orValue('') == 'web-1' && self.labels[?'nope'].orValue('none') == 'none'",
        "optional.of(1).hasValue() && !optional.none().hasValue() && optional.ofNonZeroValue('').orValue('z') == 'z'",
        "self.image.find('[0-9]+') == '1' && self.image.findAll('[0-9]') == ['1', '2', '3']",
        "self.tags.all(i, t, i < 3 && t != '') && self.labels.exists(k, v, v == 'web')",
        "self.tags.transformList(i, t, t + string(i)) == ['a0', 'b1', 'c2']",
        "self.labels.transformMap(k, v, v.size()) == {'app': 3, 'tier': 5}",
    ]);
}

#[test]
fn kube_types_hold() {
    assert_rules_hold(&[
        "quantity(self.memory).isGreaterThan(quantity('1Gi')) && quantity('1').compareTo(quantity('1000m')) == 0",
        "quantity('1.5').asApproximateFloat() == 1.5 && quantity('2k').asInteger() == 2000 && isQuantity(self.memory)",
        "quantity('1').add(quantity('500m')) == quantity('1500m') && quantity('1').sub(1).sign() == 0",
        "url(self.endpoint).getScheme() == 'https' && url(self.endpoint).getHostname() == 'example.com'",
        "url(self.endpoint).getPort() == '8443' && url(self.endpoint).getEscapedPath() == '/api/v1'",
        "url(self.endpoint).getQuery()['watch'] == ['true'] && isURL('/path') && !isURL('relative')",
        "isIP(self.address) && ip(self.address).family() == 4 && ip('::1').isLoopback() && ip.isCanonical('2001:db8::1')",
        "cidr('10.0.0.0/8').containsIP(self.address) && cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16')",
        "cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8') && cidr('10.0.0.0/8').prefixLength() == 8",
        "string(cidr('10.0.0.0/8').ip()) == '10.0.0.0' && !isCIDR('10.0.0.0')",
        "semver(self.version, true).minor() == 2 && semver('1.2.3').isLessThan(semver('1.10.0')) && isSemver('1.0.0-rc.1')",
        "!format.dns1123Label().validate(self.name).hasValue() && format.dns1123Label().validate('Bad_Name').hasValue()",
        "format.named('labelValue').hasValue() && !format.named('nope').hasValue()",
        "self.timeout == duration('90s') && self.timeout.getSeconds() == 90 && self.timeout > duration('1m')",
        "self.created.getFullYear() == 2024 && self.created.getMonth() == 4 && self.created.getDate() == 6",
        "self.created + duration('1h') > self.created && timestamp('2024-05-06T07:08:09Z') == self.created",
        "string(self.created) == '2024-05-06T07:08:09Z' && string(duration('1m30s')) == '90s'",
    ]);
}

#[test]
fn rules_on_every_item_of_a_long_list_fit_the_budget() {
    let c = crd(
        "Many",
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "maxItems": 2000, "items": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 20}},
            "x-kubernetes-validations": [{"rule": "self.name.size() < 10", "message": "short names"}]},
            "x-kubernetes-validations": [{"rule": "self.all(i, i.name != '')"}]}}}}}),
    );
    let s = schema(&c);
    let items: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("n{i}")}))
        .collect();
    let started = std::time::Instant::now();
    create(s, object("Many", "m", json!({"spec": {"items": items}}))).expect("valid");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let mut items: Vec<Value> = (0..2000)
        .map(|i| json!({"name": format!("n{i}")}))
        .collect();
    items[1500] = json!({"name": "much-too-long-name"});
    assert_eq!(
        message(create(
            s,
            object("Many", "m", json!({"spec": {"items": items}}))
        )),
        "Many.stable.example.com \"m\" is invalid: spec.items[1500]: Invalid value: short names"
    );
}

/// Run `f` on a thread with a 2 MiB stack, as tokio's workers and libtest's threads
/// have by default.
fn on_small_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .expect("thread starts")
        .join()
        .expect("no stack overflow")
}

fn spec_rule_errors(rule: String) -> Vec<String> {
    crd_errors(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{"rule": rule}]
    }}}))
}

#[test]
fn deep_rules_are_refused_with_cel_go_limits_not_a_stack_overflow() {
    let (has, sum, parens) = on_small_stack(|| {
        (
            spec_rule_errors(format!("has(self{})", ".a".repeat(1500))),
            spec_rule_errors(vec!["1"; 2500].join("+") + " > 0"),
            spec_rule_errors("(".repeat(5000) + "true" + &")".repeat(5000)),
        )
    });
    assert_eq!(has.len(), 1, "{has:?}");
    assert!(
        has[0].ends_with("compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"),
        "{has:?}"
    );
    assert!(
        sum[0].ends_with("compilation failed: ERROR: <input>:-1:0: max recursion depth exceeded"),
        "{sum:?}"
    );
    assert!(
        parens[0].ends_with(
            "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: 250"
        ),
        "{parens:?}"
    );
}

#[test]
fn the_deepest_rules_cel_go_accepts_compile_and_run_on_a_small_stack() {
    let nested = "(".repeat(249) + "self.x == 1" + &")".repeat(249);
    let chain = "self.x + ".repeat(248) + "self.x > 0";
    let ok = on_small_stack(move || {
        let c = crd(
            "Deep",
            json!({"type": "object", "properties": {"spec": {
                "type": "object",
                "properties": {"x": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": nested}, {"rule": chain}]
            }}}),
        );
        let good = create(schema(&c), object("Deep", "d", json!({"spec": {"x": 1}})));
        let bad = create(schema(&c), object("Deep", "d", json!({"spec": {"x": 2}})));
        (good.is_ok(), bad.map_err(|s| s.code))
    });
    assert!(ok.0);
    assert_eq!(ok.1.unwrap_err(), 422);
}
