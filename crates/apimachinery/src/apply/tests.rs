//! The recorded conformance cases (`testdata/conformance`) replayed at the module level:
//! object in, object and managedFields out, compared with kube's recorded bodies
//! (`time` values aside), plus kube behaviours the recordings do not cover.

use super::*;
use crate::schema::props::JSONSchemaProps;
use serde_json::json;

const SSA_CASE: &str = include_str!("../../../../testdata/conformance/cases/ssa.yaml");
const SSA_GOLDEN: &str = include_str!("../../../../testdata/conformance/golden/ssa.golden.json");
const CRUD_CASE: &str = include_str!("../../../../testdata/conformance/cases/crud-semantics.yaml");
const CRUD_GOLDEN: &str =
    include_str!("../../../../testdata/conformance/golden/crud-semantics.golden.json");

const NOW: &str = "2025-01-01T00:00:00Z";
const LATER: &str = "2025-01-01T00:00:05Z";

/// The first CRD's schema and the case's steps.
fn case(text: &str) -> (Structural, Value) {
    let case: Value = serde_norway::from_str(text).unwrap();
    let schema = case["crds"][0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
    let props: JSONSchemaProps = serde_json::from_value(schema).unwrap();
    (Structural::from_props(&props), case["steps"].clone())
}

fn step_body(steps: &Value, name: &str) -> Value {
    steps
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .map(|s| s["body"].clone())
        .unwrap()
}

fn golden(text: &str, step: &str) -> Value {
    let g: Value = serde_json::from_str(text).unwrap();
    g[step]["body"].clone()
}

/// managedFields with every `time` replaced by kube's recorder placeholder.
fn managed_fields_without_time(obj: &Value) -> Value {
    let mut mf = obj["metadata"]["managedFields"].clone();
    for e in mf.as_array_mut().into_iter().flatten() {
        if let Some(t) = e.get_mut("time") {
            assert!(t.as_str().is_some_and(|s| s.ends_with('Z')), "{t}");
            *t = json!("<time>");
        }
    }
    mf
}

fn scope<'a>(schema: &'a Structural, api_version: &'a str, kind: &'a str) -> Scope<'a> {
    Scope {
        schema,
        api_version,
        kind,
        subresource: "",
        status_subresource: false,
        versions: &[],
        now: NOW,
    }
}

/// What storage adds on create (the pipeline's prepare stage).
fn stored(mut obj: Value) -> Value {
    obj["metadata"]["namespace"] = json!("default");
    obj["metadata"]["uid"] = json!("1b4e28ba-2fa1-11d2-883f-0016d3cca427");
    obj["metadata"]["creationTimestamp"] = json!(NOW);
    obj
}

fn assert_matches_golden(obj: &Value, golden: &Value) {
    assert_eq!(
        managed_fields_without_time(obj),
        golden["metadata"]["managedFields"]
    );
    assert_eq!(obj["spec"], golden["spec"]);
}

#[test]
fn ssa_recorded_steps() {
    let (schema, steps) = case(SSA_CASE);
    let s = scope(&schema, "ssa.example.com/v1", "App");

    // apply-create: create on apply.
    let created = apply(None, &step_body(&steps, "apply-create"), "alice", false, &s).unwrap();
    assert_matches_golden(&created, &golden(SSA_GOLDEN, "apply-create"));
    let live = stored(created);

    // apply-second-manager-disjoint
    let live = apply(
        Some(&live),
        &step_body(&steps, "apply-second-manager-disjoint"),
        "bob",
        false,
        &s,
    )
    .unwrap();
    assert_matches_golden(&live, &golden(SSA_GOLDEN, "apply-second-manager-disjoint"));

    // apply-conflict: the whole 409 body.
    let err = apply(
        Some(&live),
        &step_body(&steps, "apply-conflict"),
        "bob",
        false,
        &s,
    )
    .unwrap_err();
    assert_eq!(
        err.to_status().to_json(),
        golden(SSA_GOLDEN, "apply-conflict")
    );

    // apply-force
    let live = apply(
        Some(&live),
        &step_body(&steps, "apply-force"),
        "bob",
        true,
        &s,
    )
    .unwrap();
    assert_matches_golden(&live, &golden(SSA_GOLDEN, "apply-force"));

    // alice-drops-field-removes-it
    let live = apply(
        Some(&live),
        &step_body(&steps, "alice-drops-field-removes-it"),
        "alice",
        false,
        &s,
    )
    .unwrap();
    assert_matches_golden(&live, &golden(SSA_GOLDEN, "alice-drops-field-removes-it"));

    // update-by-other-manager-via-merge: the merge patch {spec: {image: httpd}}.
    let mut patched = live.clone();
    patched["spec"]["image"] = json!("httpd");
    record_update(Some(&live), &mut patched, "carol", &s);
    assert_matches_golden(
        &patched,
        &golden(SSA_GOLDEN, "update-by-other-manager-via-merge"),
    );
    assert_matches_golden(&patched, &golden(SSA_GOLDEN, "get-final"));

    // apply-missing-field-manager
    assert_eq!(
        validate_patch_options("", None, true)
            .unwrap_err()
            .to_json(),
        golden(SSA_GOLDEN, "apply-missing-field-manager")
    );
}

#[test]
fn crud_semantics_recorded_update_entries() {
    let (schema, steps) = case(CRUD_CASE);
    let mut s = scope(&schema, "crud.example.com/v1", "Widget");
    s.status_subresource = true;
    let g = |step: &str| golden(CRUD_GOLDEN, step)["metadata"]["managedFields"].clone();

    // create (status is never owned on the main resource)
    let mut obj = step_body(&steps, "create");
    record_update(None, &mut obj, "python-requests", &s);
    assert_eq!(managed_fields_without_time(&obj), g("create"));
    obj.as_object_mut().unwrap().remove("status");
    let live = stored(obj);

    // update-spec-bumps-generation: merge patch {spec: {size: 5}, status: {ready: true}}
    let mut new = live.clone();
    new["spec"]["size"] = json!(5);
    new["status"] = json!({"ready": true});
    record_update(Some(&live), &mut new, "python-requests", &s);
    assert_eq!(
        managed_fields_without_time(&new),
        g("update-spec-bumps-generation")
    );
    new.as_object_mut().unwrap().remove("status");
    let live = new;

    // status-update-via-subresource: only status is owned, by a `status` entry.
    let mut status_scope = s;
    status_scope.subresource = "status";
    let mut new = live.clone();
    new["spec"]["size"] = json!(99);
    new["status"] = json!({"ready": true});
    record_update(Some(&live), &mut new, "python-requests", &status_scope);
    assert_eq!(
        managed_fields_without_time(&new),
        g("status-update-via-subresource")
    );
    let mut live = live.clone();
    live["status"] = new["status"].clone();
    live["metadata"]["managedFields"] = new["metadata"]["managedFields"].clone();

    // label-change-keeps-generation
    let mut new = live.clone();
    new["metadata"]["labels"]["extra"] = json!("1");
    record_update(Some(&live), &mut new, "python-requests", &s);
    assert_eq!(
        managed_fields_without_time(&new),
        g("label-change-keeps-generation")
    );
    let live = new;

    // json-patch-ok: add /spec/color
    let mut new = live.clone();
    new["spec"]["color"] = json!("red");
    record_update(Some(&live), &mut new, "python-requests", &s);
    assert_eq!(managed_fields_without_time(&new), g("json-patch-ok"));
    let live = new;

    // finalizer-blocks-delete: a set, owned value by value.
    let mut new = live.clone();
    new["metadata"]["finalizers"] = json!(["example.com/hold"]);
    record_update(Some(&live), &mut new, "python-requests", &s);
    assert_eq!(
        managed_fields_without_time(&new),
        g("finalizer-blocks-delete")
    );
    let live = new;

    // remove-finalizer-deletes: removed fields leave every entry.
    let mut new = live.clone();
    new["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("finalizers");
    record_update(Some(&live), &mut new, "python-requests", &s);
    assert_eq!(
        managed_fields_without_time(&new),
        g("remove-finalizer-deletes")
    );
}

fn app() -> Structural {
    case(SSA_CASE).0
}

fn app_config(spec: Value) -> Value {
    json!({"apiVersion": "ssa.example.com/v1", "kind": "App", "metadata": {"name": "a1"}, "spec": spec})
}

#[test]
fn consecutive_updates_of_one_manager_make_one_entry_with_the_latest_time() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let mut obj = app_config(json!({"replicas": 1}));
    record_update(None, &mut obj, "carol", &s);
    let live = stored(obj);
    let mut later = s;
    later.now = LATER;
    let mut new = live.clone();
    new["spec"]["image"] = json!("x");
    record_update(Some(&live), &mut new, "carol", &later);
    let mf = &new["metadata"]["managedFields"];
    assert_eq!(mf.as_array().unwrap().len(), 1);
    assert_eq!(mf[0]["time"], LATER);
    assert_eq!(
        mf[0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:image": {}, "f:replicas": {}}})
    );
    // A write that changes nothing keeps the entry and its time.
    let mut same = new.clone();
    let mut even_later = s;
    even_later.now = "2025-01-01T00:01:00Z";
    record_update(Some(&new), &mut same, "carol", &even_later);
    assert_eq!(same["metadata"]["managedFields"][0]["time"], LATER);
}

#[test]
fn empty_managed_fields_reset_and_untracked_objects_stay_untracked() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let mut obj = app_config(json!({"replicas": 1}));
    record_update(None, &mut obj, "carol", &s);
    let live = stored(obj);
    let mut new = live.clone();
    new["metadata"]["managedFields"] = json!([]);
    record_update(Some(&live), &mut new, "carol", &s);
    assert!(new["metadata"].get("managedFields").is_none());
    let live = new;
    let mut new = live.clone();
    new["spec"]["replicas"] = json!(2);
    record_update(Some(&live), &mut new, "carol", &s);
    assert!(new["metadata"].get("managedFields").is_none());
    // The first apply gives the existing fields to before-first-apply.
    let applied = apply(
        Some(&new),
        &app_config(json!({"image": "x"})),
        "alice",
        false,
        &s,
    )
    .unwrap();
    let mf = &applied["metadata"]["managedFields"];
    assert_eq!(mf[0]["manager"], "alice");
    assert_eq!(mf[1]["manager"], BEFORE_FIRST_APPLY);
    assert_eq!(mf[1]["operation"], "Update");
    assert_eq!(
        mf[1]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:replicas": {}}})
    );
}

#[test]
fn request_managed_fields_replace_stored_ones_unless_on_a_subresource() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let mut obj = app_config(json!({"replicas": 1}));
    record_update(None, &mut obj, "carol", &s);
    let live = stored(obj);
    let mine = json!([{"manager": "dave", "operation": "Update", "apiVersion": "ssa.example.com/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}, "time": NOW}]);
    let mut new = live.clone();
    new["metadata"]["managedFields"] = mine.clone();
    record_update(Some(&live), &mut new, "carol", &s);
    assert_eq!(new["metadata"]["managedFields"], mine);
}

#[test]
fn conflict_with_an_update_manager_and_several_conflicts() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let mut obj = app_config(json!({"replicas": 1, "image": "a"}));
    record_update(None, &mut obj, "carol", &s);
    let live = stored(obj);
    let err = apply(
        Some(&live),
        &app_config(json!({"replicas": 2, "image": "b"})),
        "alice",
        false,
        &s,
    )
    .unwrap_err()
    .to_status();
    assert_eq!(err.code, 409);
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"carol\" using ssa.example.com/v1:\n- .spec.image\n- .spec.replicas"
    );
    let causes = err.to_json()["details"]["causes"].clone();
    assert_eq!(
        causes,
        json!([
            {"reason": "FieldManagerConflict", "message": "conflict with \"carol\" using ssa.example.com/v1", "field": ".spec.image"},
            {"reason": "FieldManagerConflict", "message": "conflict with \"carol\" using ssa.example.com/v1", "field": ".spec.replicas"}
        ])
    );
    // Applying the same value is no conflict: both own it.
    let shared = apply(
        Some(&live),
        &app_config(json!({"replicas": 1})),
        "alice",
        false,
        &s,
    )
    .unwrap();
    let mf = shared["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mf.len(), 2);
    // Nothing changed, so the new Apply entry has no time (as kube).
    assert!(mf[0].get("time").is_none());
    assert_eq!(shared["spec"], live["spec"]);
}

#[test]
fn status_apply_owns_only_status() {
    let schema = app();
    let mut s = scope(&schema, "ssa.example.com/v1", "App");
    s.status_subresource = true;
    s.subresource = "status";
    let live = stored({
        let mut o = app_config(json!({"replicas": 1}));
        record_update(None, &mut o, "carol", &{
            let mut m = s;
            m.subresource = "";
            m
        });
        o
    });
    let config = json!({"apiVersion": "ssa.example.com/v1", "kind": "App", "metadata": {"name": "a1"},
        "spec": {"replicas": 5}, "status": {"ready": true}});
    // The App schema has no status property: kube rejects the undeclared field.
    let err = apply(Some(&live), &config, "ctl", false, &s).unwrap_err();
    assert_eq!(
        err.to_status().to_json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "failed to create typed patch object (/a1; ssa.example.com/v1, Kind=App): .status: field not declared in schema",
            "code": 500})
    );
    let (crud, _) = case(CRUD_CASE);
    let mut cs = scope(&crud, "crud.example.com/v1", "Widget");
    cs.status_subresource = true;
    cs.subresource = "status";
    let live = stored(
        json!({"apiVersion": "crud.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "managedFields": [{"manager": "m", "operation": "Update",
            "apiVersion": "crud.example.com/v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:size": {}}}, "time": NOW}]},
        "spec": {"size": 1}}),
    );
    let out = apply(
        Some(&live),
        &json!({"apiVersion": "crud.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
            "spec": {"size": 7}, "status": {"ready": true}}),
        "ctl",
        false,
        &cs,
    )
    .unwrap();
    let mf = out["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mf[0]["manager"], "ctl");
    assert_eq!(mf[0]["subresource"], "status");
    assert_eq!(mf[0]["fieldsV1"], json!({"f:status": {"f:ready": {}}}));
    // spec is not this endpoint's: no conflict, and m keeps spec.size.
    assert_eq!(mf[1]["fieldsV1"], json!({"f:spec": {"f:size": {}}}));
}

#[test]
fn apply_request_errors() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let wrong_kind =
        json!({"apiVersion": "ssa.example.com/v2", "kind": "App", "metadata": {"name": "a1"}});
    assert_eq!(
        apply(None, &wrong_kind, "a", false, &s).unwrap_err(),
        ApplyError::BadRequest("invalid object type: ssa.example.com/v2, Kind=App".into())
    );
    let mut with_mf = app_config(json!({}));
    with_mf["metadata"]["managedFields"] = json!([]);
    assert_eq!(
        apply(None, &with_mf, "a", false, &s).unwrap_err(),
        ApplyError::BadRequest("metadata.managedFields must be nil".into())
    );
    let dup = app_config(json!({"ports": [{"name": "a"}, {"name": "a", "port": 1}]}));
    assert_eq!(
        apply(None, &dup, "a", false, &s).unwrap_err().to_status().message,
        "failed to create typed patch object (/a1; ssa.example.com/v1, Kind=App): .spec.ports: duplicate entries for key [name=\"a\"]"
    );
    assert_eq!(
        validate_patch_options("m", Some(true), false)
            .unwrap_err()
            .message,
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

#[test]
fn apply_removes_list_map_item_and_set_value_no_longer_applied() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let live = stored(
        apply(
            None,
            &app_config(json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}], "tags": ["x", "y"]})),
            "alice",
            false,
            &s,
        )
        .unwrap(),
    );
    let out = apply(
        Some(&live),
        &app_config(json!({"ports": [{"name": "b", "port": 2}], "tags": ["y"]})),
        "alice",
        false,
        &s,
    )
    .unwrap();
    assert_eq!(
        out["spec"],
        json!({"ports": [{"name": "b", "port": 2}], "tags": ["y"]})
    );
}

#[test]
fn kubectl_apply_keeps_last_applied_annotation_in_step() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let old_config = json!({"apiVersion": "ssa.example.com/v1", "kind": "App", "metadata": {"name": "a1"}, "spec": {"replicas": 1}});
    // Created by client-side apply: an Update entry by kubectl-client-side-apply.
    let mut obj = old_config.clone();
    obj["metadata"]["annotations"] =
        json!({LAST_APPLIED_ANNOTATION: crate::goformat::go_json(&old_config) + "\n"});
    record_update(None, &mut obj, "kubectl-client-side-apply", &s);
    let live = stored(obj);
    // A server-side apply by kubectl may take the fields the annotation claims.
    let config = app_config(json!({"replicas": 3}));
    let out = apply(Some(&live), &config, "kubectl", false, &s).unwrap();
    assert_eq!(out["spec"]["replicas"], 3);
    assert_eq!(
        out["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        format!("{}\n", crate::goformat::go_json(&config))
    );
    // Any other manager conflicts.
    assert!(matches!(
        apply(Some(&live), &config, "other", false, &s),
        Err(ApplyError::Conflicts(_))
    ));
}

#[test]
fn time_only_change_is_reverted() {
    let schema = app();
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let mut obj = app_config(json!({"replicas": 1}));
    record_update(None, &mut obj, "carol", &s);
    let old = stored(obj);
    let mut new = old.clone();
    new["metadata"]["managedFields"][0]["time"] = json!(LATER);
    revert_time_only_change(&mut new, &old);
    assert_eq!(new, old);
    // Any other change keeps the new time.
    new["metadata"]["managedFields"][0]["time"] = json!(LATER);
    new["spec"]["replicas"] = json!(2);
    revert_time_only_change(&mut new, &old);
    assert_eq!(new["metadata"]["managedFields"][0]["time"], LATER);
    // So does a change elsewhere in metadata, or in the entry itself.
    let changes: [fn(&mut Value); 3] = [
        |v| v["metadata"]["labels"] = json!({"a": "b"}),
        |v| v["metadata"]["managedFields"][0]["manager"] = json!("dave"),
        |v| v["metadata"]["managedFields"][0]["fieldsV1"] = json!({}),
    ];
    for change in changes {
        let mut new = old.clone();
        new["metadata"]["managedFields"][0]["time"] = json!(LATER);
        change(&mut new);
        let expected = new.clone();
        revert_time_only_change(&mut new, &old);
        assert_eq!(new, expected);
    }
}

/// A recorded create: the stored object kube returned, minus its managedFields, run
/// through `record_update` as a POST, must get kube's recorded entry back.
fn assert_recorded_create(case_text: &str, golden_text: &str, crd: usize, step: &str) {
    let case: Value = serde_norway::from_str(case_text).unwrap();
    let crd = &case["crds"][crd]["spec"];
    let version = &crd["versions"][0];
    let props: JSONSchemaProps =
        serde_json::from_value(version["schema"]["openAPIV3Schema"].clone()).unwrap();
    let schema = Structural::from_props(&props);
    let api_version = format!(
        "{}/{}",
        crd["group"].as_str().unwrap(),
        version["name"].as_str().unwrap()
    );
    let kind = crd["names"]["kind"].as_str().unwrap().to_string();
    let mut s = scope(&schema, &api_version, &kind);
    s.status_subresource = version["subresources"].get("status").is_some();
    let recorded = golden(golden_text, step);
    let mut obj = recorded.clone();
    let meta = obj["metadata"].as_object_mut().unwrap();
    for k in [
        "managedFields",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        meta.remove(k);
    }
    record_update(None, &mut obj, "python-requests", &s);
    assert_eq!(
        managed_fields_without_time(&obj),
        recorded["metadata"]["managedFields"],
        "{step}"
    );
}

#[test]
fn recorded_creates_own_what_kube_recorded() {
    let pruning = include_str!("../../../../testdata/conformance/cases/pruning-kep.yaml");
    let pruning_golden =
        include_str!("../../../../testdata/conformance/golden/pruning-kep.golden.json");
    // Preserve-unknown-fields subtrees: deduced maps granular, embedded metadata ObjectMeta.
    assert_recorded_create(pruning, pruning_golden, 0, "create-all-examples");
    let defaulting = include_str!("../../../../testdata/conformance/cases/defaulting.yaml");
    let defaulting_golden =
        include_str!("../../../../testdata/conformance/golden/defaulting.golden.json");
    // Defaulted fields belong to the creator; a null is owned as a leaf.
    assert_recorded_create(defaulting, defaulting_golden, 0, "create-empty");
    assert_recorded_create(defaulting, defaulting_golden, 0, "create-partial");
    let validation = include_str!("../../../../testdata/conformance/cases/validation.yaml");
    let validation_golden =
        include_str!("../../../../testdata/conformance/golden/validation.golden.json");
    assert_recorded_create(validation, validation_golden, 0, "valid");
    let cel = include_str!("../../../../testdata/conformance/cases/cel-transition-blog.yaml");
    let cel_golden =
        include_str!("../../../../testdata/conformance/golden/cel-transition-blog.golden.json");
    assert_recorded_create(cel, cel_golden, 1, "map-create");
    assert_recorded_create(CRUD_CASE, CRUD_GOLDEN, 0, "create-generate-name");
}

#[test]
fn atomic_list_and_atomic_map_are_owned_and_conflict_as_a_whole() {
    let (mut schema, _) = case(SSA_CASE);
    // Make env atomic for this test: args (no list-type) already is.
    if let Some(env) = schema
        .properties
        .get_mut("spec")
        .and_then(|s| s.properties.get_mut("env"))
    {
        env.x_map_type = Some("atomic".into());
    }
    let s = scope(&schema, "ssa.example.com/v1", "App");
    let live = stored(
        apply(
            None,
            &app_config(json!({"args": ["a"], "env": {"A": "1"}})),
            "alice",
            false,
            &s,
        )
        .unwrap(),
    );
    assert_eq!(
        live["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {"f:args": {}, "f:env": {}}})
    );
    let err = apply(
        Some(&live),
        &app_config(json!({"args": ["a", "b"], "env": {"B": "2"}})),
        "bob",
        false,
        &s,
    )
    .unwrap_err()
    .to_status();
    assert_eq!(
        err.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.args\n- .spec.env"
    );
    // Forced, bob's values replace alice's whole list and map, and ownership moves.
    let out = apply(
        Some(&live),
        &app_config(json!({"args": ["a", "b"], "env": {"B": "2"}})),
        "bob",
        true,
        &s,
    )
    .unwrap();
    assert_eq!(out["spec"], json!({"args": ["a", "b"], "env": {"B": "2"}}));
    let mf = out["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(mf.len(), 1);
    assert_eq!(mf[0]["manager"], "bob");
}

/// A schema with every shape a create's fields can take: scalars, nested and empty
/// objects, list-maps, sets, atomic lists, granular and atomic maps, int-or-string,
/// preserved unknown fields, an embedded resource, and a status.
fn every_shape_schema() -> Structural {
    let props: JSONSchemaProps = serde_json::from_value(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "name": {"type": "string"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name", "protocol"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "protocol": {"type": "string"},
                    "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                "additionalProperties": {"type": "string"}},
            "nested": {"type": "object", "properties": {"a": {"type": "object",
                "properties": {"b": {"type": "string"}}}}},
            "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "ios": {"x-kubernetes-int-or-string": true},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}}},
        "status": {"type": "object", "properties": {
            "ready": {"type": "boolean"},
            "conditions": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "properties": {
                    "type": {"type": "string"}, "status": {"type": "string"}}}}}}}}))
    .unwrap();
    Structural::from_props(&props)
}

mod create_fields {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    fn word() -> impl Strategy<Value = Value> {
        prop::sample::select(vec!["a", "b", "x", "tcp", "udp"]).prop_map(|s| json!(s))
    }

    /// Mostly the declared type, now and then another one (which the conversion check
    /// refuses, so that both paths must leave the entries out).
    fn mostly(typed: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
        prop_oneof![
            30 => typed,
            1 => Just(Value::Null),
            1 => prop_oneof![Just(json!(1)), Just(json!("s")), Just(json!({})), Just(json!([]))],
        ]
        .boxed()
    }

    fn soup() -> BoxedStrategy<Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (-3i64..3).prop_map(Value::from),
            word(),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[abk]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .boxed()
    }

    fn string_map() -> BoxedStrategy<Value> {
        prop::collection::btree_map("[abk]", word(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed()
    }

    fn object(fields: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
        let parts: Vec<_> = fields
            .into_iter()
            .map(|(k, s)| prop::option::weighted(0.6, s).prop_map(move |v| (k, v)))
            .collect();
        parts
            .prop_map(|kvs| {
                Value::Object(
                    kvs.into_iter()
                        .filter_map(|(k, v)| v.map(|v| (k.to_string(), v)))
                        .collect(),
                )
            })
            .boxed()
    }

    /// [`object`] that always has `key`.
    fn keyed(
        key: &'static str,
        fields: Vec<(&'static str, BoxedStrategy<Value>)>,
    ) -> BoxedStrategy<Value> {
        (word(), object(fields))
            .prop_map(move |(k, mut o)| {
                o[key] = k;
                o
            })
            .boxed()
    }

    fn soup_map() -> BoxedStrategy<Value> {
        prop::collection::btree_map("[abk]", soup(), 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed()
    }

    fn list_of(item: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
        prop::collection::vec(item, 0..4)
            .prop_map(Value::Array)
            .boxed()
    }

    fn created() -> impl Strategy<Value = Value> {
        let port = keyed(
            "name",
            vec![
                ("protocol", word().boxed()),
                ("port", (0i64..3).prop_map(Value::from).boxed()),
            ],
        );
        let spec = object(vec![
            ("replicas", mostly((0i64..5).prop_map(Value::from).boxed())),
            ("name", mostly(word().boxed())),
            ("ports", mostly(list_of(port))),
            ("tags", mostly(list_of(word().boxed()))),
            ("args", mostly(list_of(word().boxed()))),
            ("env", mostly(string_map())),
            ("selector", mostly(string_map())),
            (
                "nested",
                mostly(object(vec![("a", object(vec![("b", word().boxed())]))])),
            ),
            ("any", soup_map()),
            (
                "ios",
                prop_oneof![word(), (0i64..3).prop_map(Value::from)].boxed(),
            ),
            (
                "embedded",
                object(vec![
                    ("apiVersion", Just(json!("v1")).boxed()),
                    ("kind", Just(json!("Thing")).boxed()),
                    (
                        "metadata",
                        object(vec![("name", word().boxed()), ("labels", string_map())]),
                    ),
                    ("spec", soup_map()),
                ]),
            ),
        ]);
        let condition = keyed("type", vec![("status", word().boxed())]);
        let status = object(vec![
            ("ready", any::<bool>().prop_map(Value::from).boxed()),
            ("conditions", list_of(condition)),
        ]);
        let owner = keyed(
            "uid",
            vec![
                ("apiVersion", Just(json!("v1")).boxed()),
                ("kind", Just(json!("Owner")).boxed()),
                ("name", word().boxed()),
            ],
        );
        let metadata = object(vec![
            ("name", word().boxed()),
            ("generateName", word().boxed()),
            ("namespace", Just(json!("default")).boxed()),
            (
                "uid",
                Just(json!("1b4e28ba-2fa1-11d2-883f-0016d3cca427")).boxed(),
            ),
            ("generation", Just(json!(1)).boxed()),
            ("resourceVersion", Just(json!("7")).boxed()),
            ("creationTimestamp", Just(json!(NOW)).boxed()),
            ("labels", string_map()),
            ("annotations", string_map()),
            ("finalizers", list_of(word().boxed())),
            ("ownerReferences", list_of(owner)),
        ]);
        object(vec![
            (
                "apiVersion",
                prop_oneof![Just(json!("x.example.com/v1")), Just(json!("other/v2"))].boxed(),
            ),
            (
                "kind",
                prop_oneof![Just(json!("Thing")), Just(json!("Other"))].boxed(),
            ),
            ("metadata", metadata),
            ("spec", spec),
            ("status", status),
        ])
    }

    /// A create's entries written directly equal those the general path computes
    /// through decoded entries, a comparison and field sets, for every object and
    /// with or without the status subresource.
    #[test]
    fn a_creates_direct_entries_equal_the_general_paths() {
        let schema = every_shape_schema();
        let mut runner = TestRunner::new(Config {
            cases: 2000,
            ..Config::default()
        });
        let recorded = std::cell::Cell::new(0usize);
        let cases = (created(), any::<bool>());
        runner
            .run(&cases, |(obj, status_subresource)| {
                let mut s = scope(&schema, "x.example.com/v1", "Thing");
                s.status_subresource = status_subresource;
                let mut direct = obj.clone();
                record_create(&mut direct, "m", &s);
                let mut general = obj.clone();
                record_update_by_sets(None, &mut general, "m", &s);
                prop_assert_eq!(&direct, &general, "object {}", obj);
                if direct["metadata"].get("managedFields").is_some() {
                    recorded.set(recorded.get() + 1);
                }
                Ok(())
            })
            .unwrap();
        // Most generated objects convert and own something: the comparison is not
        // only over objects both paths leave alone.
        assert!(recorded.get() > 1000, "{} of 2000 recorded", recorded.get());
    }
}
