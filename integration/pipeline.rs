//! The custom-resource request pipeline (issue 3) over HTTP: decode, prune, default and
//! validate on create (POST), update (PUT), JSON merge patch and JSON patch, with
//! kube-apiserver's exact status codes, `Status` bodies and `Warning` headers; pruning
//! and defaulting on read; the CRD-time schema checks; and the pipeline trace
//! (`X-Pipeline-Trace`, `--log-pipeline`).
//!
//! Expected texts come from the responses recorded from a real kube-apiserver
//! (`testdata/conformance/golden/`) where one covers the case, else from kube's source
//! (named at each test). KEP-5667 (`x-kubernetes-property-names`) gives no texts; those
//! follow `schema::property_names`.

mod common;

use common::{Http, HttpResponse, TestServer};
use serde_json::{json, Map, Value};
use std::time::Duration;

const GROUP: &str = "pipeline.example.com";
const API_VERSION: &str = "pipeline.example.com/v1";
const WIDGETS: &str = "/apis/pipeline.example.com/v1/namespaces/default/widgets";
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGET_CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.pipeline.example.com";

/// How long a new or changed CRD may take to be served.
const CRD_TIMEOUT: Duration = Duration::from_secs(20);

/// kube's `IsQualifiedName` message for a bad name part (apimachinery `content/kube.go`
/// with `RegexError`: note the two spaces before each "or").
const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// kube's `IsValidLabelValue` message.
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// The `x-kubernetes-property-names` Forbidden text of `schema::property_names`.
const ONLY_STRING_VALIDATIONS: &str = "must not be set for map keys: only type, format, enum, maxLength, minLength, pattern and x-kubernetes-validations are allowed";

/// The spec schema of the test CRD: the recorded `validation` case's fields (so its
/// golden errors apply), the recorded `defaulting` case's defaults, and a map with
/// validated keys.
fn spec_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "string"},
            "plain": {"type": "string"},
            "nested": {"type": "object", "properties": {"inner": {"type": "string", "default": "x"}}},
            "withDefaultParent": {"type": "object", "default": {}, "properties": {"inner": {"type": "integer", "default": 7}}},
            "nonNullable": {"type": "string", "default": "filled"},
            "nullableField": {"type": "string", "nullable": true, "default": "filled"},
            "nullableNoDefault": {"type": "string", "nullable": true},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "protocol": {"type": "string", "default": "TCP"}
            }}},
            "weights": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "weight": {"type": "integer", "default": 10}
            }}},
            "name": {"type": "string", "minLength": 2, "maxLength": 8, "pattern": "^[a-z]+$"},
            "replicas": {"type": "integer", "minimum": 0, "maximum": 3, "default": 1},
            "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1.0},
            "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "byName": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "value": {"type": "integer"}
                }}
            },
            "port": {"x-kubernetes-int-or-string": true},
            "email": {"type": "string", "format": "email"},
            "size": {"type": "string", "enum": ["S", "M", "L"]},
            "props": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "title": {"type": "string", "maxLength": 4},
            "limits": {"type": "object", "required": ["max"], "properties": {"max": {"type": "integer"}}},
            "keys": {
                "type": "object",
                "x-kubernetes-property-names": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                "additionalProperties": {"type": "string"}
            }
        }
    })
}

/// A CRD of group `pipeline.example.com` with one version `v1` and this root schema.
fn crd(plural: &str, kind: &str, root_schema: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": kind.to_lowercase(),
                "kind": kind,
                "listKind": format!("{kind}List")
            },
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": root_schema}}]
        }
    })
}

/// The `widgets.pipeline.example.com` CRD every test uses.
fn widget_crd() -> Value {
    crd(
        "widgets",
        "Widget",
        json!({"type": "object", "properties": {"spec": spec_schema()}}),
    )
}

/// A Widget named `name` with this spec.
fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": API_VERSION, "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// The four writes every stage is driven through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verb {
    Create,
    Put,
    MergePatch,
    JsonPatch,
}

const VERBS: [Verb; 4] = [Verb::Create, Verb::Put, Verb::MergePatch, Verb::JsonPatch];

impl Verb {
    /// Object names per test and verb, e.g. `prune-merge`.
    fn name(self, prefix: &str) -> String {
        let suffix = match self {
            Verb::Create => "create",
            Verb::Put => "put",
            Verb::MergePatch => "merge",
            Verb::JsonPatch => "json",
        };
        format!("{prefix}-{suffix}")
    }

    /// The status a successful write answers.
    fn ok_status(self) -> u16 {
        if self == Verb::Create {
            201
        } else {
            200
        }
    }

    fn is_patch(self) -> bool {
        matches!(self, Verb::MergePatch | Verb::JsonPatch)
    }
}

/// A server with the Widget CRD served.
struct Pipeline {
    server: TestServer,
    http: Http,
}

impl Pipeline {
    fn start() -> Pipeline {
        Pipeline::start_with(&[])
    }

    fn start_with(args: &[&str]) -> Pipeline {
        let server = TestServer::start_with(args);
        let http = server.http();
        let p = Pipeline { server, http };
        let r = p.http.send_json("POST", CRDS, &widget_crd());
        assert_eq!(r.status, 201, "creating the Widget CRD: {}", r.text());
        p.wait_served(WIDGETS);
        p
    }

    /// Waits until `list_path` answers 200.
    fn wait_served(&self, list_path: &str) {
        let r = self.http.wait_for_status(list_path, 200, CRD_TIMEOUT);
        assert_eq!(r.status, 200, "{list_path} not served: {}", r.text());
    }

    /// Sends `body` with `method`, `content_type`, query pairs and extra headers.
    fn send(
        &self,
        method: &str,
        path: &str,
        query: &[(&str, &str)],
        content_type: &str,
        headers: &[(&str, &str)],
        body: Vec<u8>,
    ) -> HttpResponse {
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut all = vec![
            ("Accept".to_string(), "application/json".to_string()),
            ("Content-Type".to_string(), content_type.to_string()),
        ];
        all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.http
            .request(method, path, &query, &all, Some(body))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// PATCH `path` with `patch` of `content_type`.
    fn patch(&self, path: &str, content_type: &str, patch: &Value) -> HttpResponse {
        self.send("PATCH", path, &[], content_type, &[], to_bytes(patch))
    }

    /// GET one Widget, which must exist.
    fn get(&self, name: &str) -> Value {
        let r = self.http.get(&format!("{WIDGETS}/{name}"));
        assert_eq!(r.status, 200, "GET {name}: {}", r.text());
        body(&r)
    }

    /// Changes the Widget CRD's spec properties with `change`, then waits until creates
    /// follow it: probes `<prefix>-<n>` with `spec` are created until `followed` holds
    /// for a reply.
    fn change_spec_properties(
        &self,
        change: impl FnOnce(&mut Value),
        prefix: &str,
        spec: Value,
        followed: impl Fn(&Value) -> bool,
    ) {
        let mut crd = body(&self.http.get(WIDGET_CRD));
        change(
            &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"],
        );
        let r = self.http.send_json("PUT", WIDGET_CRD, &crd);
        assert_eq!(r.status, 200, "updating the CRD: {}", r.text());
        let probes = std::cell::Cell::new(0);
        let seen = common::poll(CRD_TIMEOUT, || {
            probes.set(probes.get() + 1);
            let name = format!("{prefix}-{}", probes.get());
            let r = self.write(Verb::Create, &name, &widget(&name, spec.clone()), &[], &[]);
            (r.status == 201 && followed(&body(&r))).then_some(())
        });
        assert!(seen.is_some(), "creates never followed the changed schema");
    }

    /// Creates the Widget an update starts from (spec `{}` plus defaults).
    fn create_base(&self, name: &str) {
        let r = self
            .http
            .send_json("POST", WIDGETS, &widget(name, json!({})));
        assert_eq!(r.status, 201, "creating {name}: {}", r.text());
    }

    /// The stored `resourceVersion` of a Widget.
    fn resource_version(&self, name: &str) -> String {
        self.get(name)["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no resourceVersion"))
            .to_string()
    }

    /// Writes `obj` (named `name`) with `verb`: POST it; PUT it with the current
    /// resourceVersion; merge-patch with it as the patch; or JSON-patch its top-level
    /// fields and metadata fields (`add`). Updates start from a fresh base object.
    fn write(
        &self,
        verb: Verb,
        name: &str,
        obj: &Value,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> HttpResponse {
        let item = format!("{WIDGETS}/{name}");
        match verb {
            Verb::Create => self.send(
                "POST",
                WIDGETS,
                query,
                "application/json",
                headers,
                to_bytes(obj),
            ),
            Verb::Put => {
                self.create_base(name);
                let mut put = obj.clone();
                put["metadata"]["resourceVersion"] = json!(self.resource_version(name));
                self.send(
                    "PUT",
                    &item,
                    query,
                    "application/json",
                    headers,
                    to_bytes(&put),
                )
            }
            Verb::MergePatch => {
                self.create_base(name);
                let ct = "application/merge-patch+json";
                self.send("PATCH", &item, query, ct, headers, to_bytes(obj))
            }
            Verb::JsonPatch => {
                self.create_base(name);
                let ct = "application/json-patch+json";
                self.send(
                    "PATCH",
                    &item,
                    query,
                    ct,
                    headers,
                    to_bytes(&json_patch_of(obj)),
                )
            }
        }
    }

    /// Writes a raw body (duplicate fields, malformed JSON) with `verb`; for PUT, the
    /// body may contain `{{rv}}`, replaced by the base object's resourceVersion.
    fn write_raw(&self, verb: Verb, name: &str, raw: &str, query: &[(&str, &str)]) -> HttpResponse {
        let item = format!("{WIDGETS}/{name}");
        let bytes = |s: &str| s.as_bytes().to_vec();
        match verb {
            Verb::Create => self.send("POST", WIDGETS, query, "application/json", &[], bytes(raw)),
            Verb::Put => {
                self.create_base(name);
                let raw = raw.replace("{{rv}}", &self.resource_version(name));
                self.send("PUT", &item, query, "application/json", &[], bytes(&raw))
            }
            Verb::MergePatch => {
                self.create_base(name);
                let ct = "application/merge-patch+json";
                self.send("PATCH", &item, query, ct, &[], bytes(raw))
            }
            Verb::JsonPatch => {
                self.create_base(name);
                let ct = "application/json-patch+json";
                self.send("PATCH", &item, query, ct, &[], bytes(raw))
            }
        }
    }
}

fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_else(|e| panic!("encoding {v}: {e}"))
}

fn body(r: &HttpResponse) -> Value {
    r.json()
        .unwrap_or_else(|| panic!("status {}: body is not JSON: {}", r.status, r.text()))
}

/// RFC 6902 `add` operations setting every top-level field of `obj` but `metadata`,
/// and every metadata field but `name`.
fn json_patch_of(obj: &Value) -> Value {
    let mut ops = Vec::new();
    for (k, v) in obj.as_object().into_iter().flatten() {
        if k == "metadata" {
            for (mk, mv) in v.as_object().into_iter().flatten() {
                if mk != "name" {
                    ops.push(json!({"op": "add", "path": format!("/metadata/{mk}"), "value": mv}));
                }
            }
        } else {
            ops.push(json!({"op": "add", "path": format!("/{k}"), "value": v}));
        }
    }
    Value::Array(ops)
}

/// Every `Warning` header value, in order.
fn warnings(r: &HttpResponse) -> Vec<String> {
    r.headers
        .iter()
        .filter(|(k, _)| k == "warning")
        .map(|(_, v)| v.clone())
        .collect()
}

/// The `Warning` header kube sends for `text`: `299 - "<Go-quoted text>"`.
fn warning(text: &str) -> String {
    format!(
        "299 - \"{}\"",
        text.replace('\\', "\\\\").replace('"', "\\\"")
    )
}

/// A kube `Status` failure body without details.
fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code
    })
}

/// A cause as kube writes it.
fn cause(field: &str, reason: &str, message: &str) -> Value {
    json!({"field": field, "reason": reason, "message": message})
}

fn sorted(mut causes: Vec<Value>) -> Vec<Value> {
    causes.sort_by_key(|c| c.to_string());
    causes
}

/// Asserts a 422 Invalid `Status` for `kind.group "name"` with exactly these causes (in
/// any order: kube emits schema errors in map order) and kube's aggregated message built
/// from them in the order they came (duplicates once, brackets for several).
fn assert_invalid(
    r: &HttpResponse,
    kind: &str,
    group: &str,
    name: &str,
    expected: &[Value],
    what: &str,
) {
    assert_eq!(r.status, 422, "{what}: {}", r.text());
    let b = body(r);
    let causes = b["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{what}: no causes in {b}"));
    assert_eq!(
        sorted(causes.clone()),
        sorted(expected.to_vec()),
        "{what}: causes"
    );
    let mut items: Vec<String> = Vec::new();
    for c in &causes {
        let item = format!(
            "{}: {}",
            c["field"].as_str().unwrap_or(""),
            c["message"].as_str().unwrap_or("")
        );
        if !items.contains(&item) {
            items.push(item);
        }
    }
    let aggregate = if items.len() == 1 {
        items[0].clone()
    } else {
        format!("[{}]", items.join(", "))
    };
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let mut details = Map::new();
    if !name.is_empty() {
        details.insert("name".into(), json!(name));
    }
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    if !kind.is_empty() {
        details.insert("kind".into(), json!(kind));
    }
    details.insert("causes".into(), Value::Array(causes));
    let mut expected_body = status_body(
        422,
        "Invalid",
        &format!("{qualified} \"{name}\" is invalid: {aggregate}"),
    );
    expected_body["details"] = Value::Object(details);
    assert_eq!(b, expected_body, "{what}: body");
}

/// Asserts kube's 422 for a patch failing strict decoding (`handlers/patch.go`:
/// `NewInvalid(GroupKind{}, "", [patch: Invalid value: "<patched object JSON>": strict
/// decoding error: ...])`) and returns the patched object it quotes.
fn assert_strict_patch_error(r: &HttpResponse, problems: &str, what: &str) -> Value {
    assert_eq!(r.status, 422, "{what}: {}", r.text());
    let b = body(r);
    let causes = b["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(causes.len(), 1, "{what}: one cause: {b}");
    let c = &causes[0];
    assert_eq!(c["field"], "patch", "{what}");
    assert_eq!(c["reason"], "FieldValueInvalid", "{what}");
    let msg = c["message"].as_str().unwrap_or("");
    let suffix = format!("\": strict decoding error: {problems}");
    let quoted = msg
        .strip_prefix("Invalid value: \"")
        .and_then(|m| m.strip_suffix(suffix.as_str()))
        .unwrap_or_else(|| panic!("{what}: cause message {msg:?} does not end in {suffix:?}"));
    // Go's %q and JSON escape this ASCII JSON text alike.
    let patched_json: String = serde_json::from_str(&format!("\"{quoted}\""))
        .unwrap_or_else(|e| panic!("{what}: unquoting {quoted}: {e}"));
    let patched: Value = serde_json::from_str(&patched_json)
        .unwrap_or_else(|e| panic!("{what}: the quoted patched object is not JSON: {e}"));
    let mut expected = status_body(422, "Invalid", &format!(" \"\" is invalid: patch: {msg}"));
    expected["details"] = json!({"causes": [c.clone()]});
    assert_eq!(b, expected, "{what}: body");
    patched
}

/// Field `path` (dotted) of `v`.
fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    path.split('.').fold(v, |cur, k| &cur[k])
}

fn absent(v: &Value, path: &str) -> bool {
    let (parent, leaf) = path.rsplit_once('.').unwrap_or(("", path));
    let parent = if parent.is_empty() { v } else { at(v, parent) };
    parent.get(leaf).is_none()
}

/// The spec every Widget gets from an empty spec: kube's defaults, no missing parent
/// created (`nested` has no default of its own).
fn defaulted_empty_spec() -> Value {
    json!({
        "withDefaultParent": {"inner": 7},
        "nonNullable": "filled",
        "nullableField": "filled",
        "replicas": 1
    })
}

/// Merges the fields of `extra` into the object `base`.
fn with(mut base: Value, extra: Value) -> Value {
    for (k, v) in extra.as_object().into_iter().flatten() {
        base[k] = v.clone();
    }
    base
}

/// The causes of a recorded `validation` case step, re-read for this CRD.
fn golden_validation_causes(step: &str) -> Vec<Value> {
    let golden = common::testdata_json("conformance/golden/validation.golden.json");
    golden[step]["body"]["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("golden validation step {step} has no causes"))
}

#[test]
fn prune_drops_unknown_fields_with_warnings_in_kube_order() {
    let p = Pipeline::start();
    for verb in VERBS {
        let name = verb.name("prune");
        let mut obj = widget(
            &name,
            json!({"a": "1", "x": 1, "nested": {"inner": "i", "junk": 1}}),
        );
        obj["zzz"] = json!(1);
        obj["metadata"]["junk"] = json!(1);
        let r = p.write(verb, &name, &obj, &[], &[]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        // kube: strict errors of ObjectMeta first, then the pruned paths sorted.
        assert_eq!(
            warnings(&r),
            vec![
                warning("unknown field \"metadata.junk\""),
                warning("unknown field \"spec.nested.junk\""),
                warning("unknown field \"spec.x\""),
                warning("unknown field \"zzz\""),
            ],
            "{verb:?}"
        );
        for stored in [body(&r), p.get(&name)] {
            for gone in ["zzz", "metadata.junk", "spec.x", "spec.nested.junk"] {
                assert!(
                    absent(&stored, gone),
                    "{verb:?}: {gone} survived in {stored}"
                );
            }
            assert_eq!(at(&stored, "spec.a"), "1", "{verb:?}");
            assert_eq!(
                at(&stored, "spec.nested"),
                &json!({"inner": "i"}),
                "{verb:?}"
            );
        }
    }
}

/// What a write prunes is gone from storage, not only from its reply: once the schema
/// declares the field, the objects written before do not show it (kube stores the
/// decoded object). The write's reply is its stored form (no second decoding of it).
#[test]
fn pruned_fields_stay_gone_when_the_schema_later_declares_them() {
    let p = Pipeline::start();
    let mut written = Vec::new();
    for verb in VERBS {
        let name = verb.name("later");
        let r = p.write(
            verb,
            &name,
            &widget(&name, json!({"a": "1", "later": "pruned"})),
            &[],
            &[],
        );
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        let reply = body(&r);
        assert!(absent(&reply, "spec.later"), "{verb:?}: {reply}");
        assert_eq!(
            reply,
            p.get(&name),
            "{verb:?}: the reply is what a GET reads"
        );
        written.push(name);
    }

    p.change_spec_properties(
        |props| props["later"] = json!({"type": "string"}),
        "later-probe",
        json!({"later": "kept"}),
        |reply| at(reply, "spec.later") == "kept",
    );

    for name in written {
        let got = p.get(&name);
        assert!(
            absent(&got, "spec.later"),
            "{name}: a pruned field came back from storage: {got}"
        );
        assert_eq!(at(&got, "spec.a"), "1", "{name}");
    }
}

/// A write's reply is, byte for byte, what a read of its object serves afterwards
/// (the server makes it from the stored bytes): checked against reads made anew from
/// storage once the CRD changed, with metadata whose strings need escaping and keys
/// on both sides of `resourceVersion`.
#[test]
fn a_writes_reply_holds_the_bytes_a_read_of_its_object_serves() {
    let p = Pipeline::start();
    let mut replies = Vec::new();
    for verb in VERBS {
        let name = verb.name("bytes");
        let mut obj = widget(&name, json!({"a": "\"quoted\" \u{e9}\u{1f600}\n", "x": 1}));
        obj["metadata"]["labels"] = json!({"resourceVersion": "label", "z": "1"});
        obj["metadata"]["annotations"] = json!({"note": "tab\there </script> \\"});
        obj["metadata"]["finalizers"] = json!(["example.com/keep"]);
        let r = p.write(verb, &name, &obj, &[], &[("X-Pipeline-Trace", "true")]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        assert_eq!(
            warnings(&r),
            vec![warning("unknown field \"spec.x\"")],
            "{verb:?}"
        );
        assert!(r.header("x-pipeline-trace").is_some(), "{verb:?}");
        let reply = body(&r);
        let mut canonical = serde_json::to_vec(&reply).unwrap();
        canonical.push(b'\n');
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            String::from_utf8_lossy(&canonical),
            "{verb:?}: the reply is JSON as kube's encoder writes it"
        );
        assert_eq!(reply["metadata"]["uid"].as_str().map(str::len), Some(36));
        replies.push((name, r.body));
    }

    // A new property no object has: the served form changes, and reads decode,
    // prune, default and encode the stored objects again.
    p.change_spec_properties(
        |props| props["unused"] = json!({"type": "string"}),
        "bytes-probe",
        json!({"unused": "u"}),
        |reply| at(reply, "spec.unused") == "u",
    );
    for (name, written) in replies {
        let r = p.http.get(&format!("{WIDGETS}/{name}"));
        assert_eq!(r.status, 200, "{name}: {}", r.text());
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            String::from_utf8_lossy(&written),
            "{name}: the write's reply and a later read differ"
        );
    }
}

/// An update starts from the stored object as a read serves it at that moment (kube
/// decodes it from storage under the current schema): a run of updates each sees the
/// one before, and once the schema gains a default, an update that changes nothing
/// else writes nothing, since the stored object read under the new schema has it too.
#[test]
fn updates_start_from_the_stored_object_as_the_current_schema_serves_it() {
    let p = Pipeline::start();
    let item = format!("{WIDGETS}/chain");
    p.create_base("chain");
    let merge = |spec: Value| {
        p.patch(
            &item,
            "application/merge-patch+json",
            &json!({"spec": spec}),
        )
    };
    for i in 1..=5 {
        let r = merge(json!({"a": i.to_string()}));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(at(&body(&r), "spec.a"), &json!(i.to_string()));
    }
    let test_then_replace = json!([
        {"op": "test", "path": "/spec/a", "value": "5"},
        {"op": "replace", "path": "/spec/a", "value": "6"}
    ]);
    let r = p.patch(&item, "application/json-patch+json", &test_then_replace);
    assert_eq!(
        r.status,
        200,
        "the JSON patch saw the last update: {}",
        r.text()
    );
    let mut put = body(&r);
    put["spec"]["a"] = json!("7");
    let r = p.send("PUT", &item, &[], "application/json", &[], to_bytes(&put));
    assert_eq!(r.status, 200, "{}", r.text());
    let written = body(&r);
    assert_eq!(written["metadata"]["generation"], json!(8));

    // Other objects show when the server follows the new schema (a read of `chain`
    // itself would make its served form anew).
    p.change_spec_properties(
        |props| props["plain"]["default"] = json!("later"),
        "chain-probe",
        json!({}),
        |reply| at(reply, "spec.plain") == "later",
    );
    let r = merge(json!({"a": "7"}));
    assert_eq!(r.status, 200, "{}", r.text());
    let after = body(&r);
    assert_eq!(at(&after, "spec.plain"), "later");
    assert_eq!(
        after["metadata"]["resourceVersion"], written["metadata"]["resourceVersion"],
        "nothing changed, nothing written: {after}"
    );
}

#[test]
fn strict_rejects_unknown_fields_400_for_create_and_put_422_for_patches() {
    let p = Pipeline::start();
    let strict = [("fieldValidation", "Strict")];
    for verb in VERBS {
        let name = verb.name("strict");
        let mut obj = widget(&name, json!({"a": "changed", "x": 1}));
        obj["zzz"] = json!(1);
        let r = p.write(verb, &name, &obj, &strict, &[]);
        let problems = "unknown field \"spec.x\", unknown field \"zzz\"";
        if verb.is_patch() {
            let patched = assert_strict_patch_error(&r, problems, &format!("{verb:?}"));
            // The quoted object is the patched one, before pruning.
            assert_eq!(at(&patched, "spec.x"), 1, "{verb:?}");
            assert_eq!(at(&patched, "spec.a"), "changed", "{verb:?}");
            assert_eq!(at(&patched, "metadata.name"), name.as_str(), "{verb:?}");
        } else {
            assert_eq!(r.status, 400, "{verb:?}: {}", r.text());
            // Written in metav1.Status's field order, as kube's encoder writes it.
            assert!(
                r.text()
                    .starts_with(r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"#),
                "{}",
                r.text()
            );
            assert!(
                r.text()
                    .ends_with("\"reason\":\"BadRequest\",\"code\":400}\n"),
                "{}",
                r.text()
            );
            assert_eq!(
                body(&r),
                status_body(
                    400,
                    "BadRequest",
                    &format!("Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: {problems}")
                ),
                "{verb:?}"
            );
        }
        assert!(warnings(&r).is_empty(), "{verb:?}: {:?}", warnings(&r));
        // Nothing was written.
        if verb == Verb::Create {
            assert_eq!(p.http.get(&format!("{WIDGETS}/{name}")).status, 404);
        } else {
            assert!(
                absent(&p.get(&name), "spec.a"),
                "{verb:?}: the update was stored"
            );
        }
    }
}

#[test]
fn ignore_drops_unknown_and_duplicate_fields_without_warnings() {
    let p = Pipeline::start();
    let ignore = [("fieldValidation", "Ignore")];
    for verb in VERBS {
        let name = verb.name("ignore");
        let obj = widget(&name, json!({"a": "1", "x": 1}));
        let r = p.write(verb, &name, &obj, &ignore, &[]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        assert!(warnings(&r).is_empty(), "{verb:?}: {:?}", warnings(&r));
        assert!(absent(&body(&r), "spec.x"), "{verb:?}");
    }
    let raw = r#"{"apiVersion":"pipeline.example.com/v1","kind":"Widget","metadata":{"name":"ignore-dup"},"spec":{"a":"1","a":"2"}}"#;
    let r = p.write_raw(Verb::Create, "ignore-dup", raw, &ignore);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    assert_eq!(at(&body(&r), "spec.a"), "2");
}

#[test]
fn duplicate_fields_warn_by_default_and_fail_under_strict() {
    let p = Pipeline::start();
    // Create and PUT bodies are whole objects; a merge patch is the changed part only.
    let raw = |verb: Verb, name: &str| match verb {
        Verb::Create => format!(
            r#"{{"apiVersion":"{API_VERSION}","kind":"Widget","metadata":{{"name":"{name}"}},"spec":{{"a":"1","x":1,"a":"2"}}}}"#
        ),
        Verb::Put => format!(
            r#"{{"apiVersion":"{API_VERSION}","kind":"Widget","metadata":{{"name":"{name}","resourceVersion":"{{{{rv}}}}"}},"spec":{{"a":"1","x":1,"a":"2"}}}}"#
        ),
        _ => r#"{"spec":{"a":"1","x":1,"a":"2"}}"#.to_string(),
    };
    for verb in [Verb::Create, Verb::Put, Verb::MergePatch] {
        let name = verb.name("dup");
        let r = p.write_raw(verb, &name, &raw(verb, &name), &[]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        // Decoding errors (duplicates) come before pruning's unknown fields.
        assert_eq!(
            warnings(&r),
            vec![
                warning("duplicate field \"spec.a\""),
                warning("unknown field \"spec.x\"")
            ],
            "{verb:?}"
        );
        assert_eq!(
            at(&body(&r), "spec.a"),
            "2",
            "{verb:?}: the last value wins"
        );

        let name = verb.name("dup-strict");
        let r = p.write_raw(
            verb,
            &name,
            &raw(verb, &name),
            &[("fieldValidation", "Strict")],
        );
        let problems = "duplicate field \"spec.a\", unknown field \"spec.x\"";
        if verb.is_patch() {
            assert_strict_patch_error(&r, problems, &format!("{verb:?}"));
        } else {
            assert_eq!(
                body(&r),
                status_body(
                    400,
                    "BadRequest",
                    &format!("Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: {problems}")
                ),
                "{verb:?}"
            );
        }
    }
}

#[test]
fn yaml_bodies_go_through_the_same_stages() {
    let p = Pipeline::start();
    let yaml = |name: &str, rv: Option<&str>| {
        let rv = rv
            .map(|v| format!("  resourceVersion: \"{v}\"\n"))
            .unwrap_or_default();
        format!(
            "apiVersion: {API_VERSION}\nkind: Widget\nmetadata:\n  name: {name}\n{rv}spec:\n  a: one\n  x: 1\n  ports:\n  - name: p\n"
        )
    };
    let expected_spec = with(
        defaulted_empty_spec(),
        json!({"a": "one", "ports": [{"name": "p", "protocol": "TCP"}]}),
    );
    let r = p.send(
        "POST",
        WIDGETS,
        &[],
        "application/yaml",
        &[],
        yaml("yaml-create", None).into_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(warnings(&r), vec![warning("unknown field \"spec.x\"")]);
    assert_eq!(body(&r)["spec"], expected_spec);

    p.create_base("yaml-put");
    let rv = p.resource_version("yaml-put");
    let item = format!("{WIDGETS}/yaml-put");
    let r = p.send(
        "PUT",
        &item,
        &[],
        "application/yaml",
        &[],
        yaml("yaml-put", Some(&rv)).into_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warnings(&r), vec![warning("unknown field \"spec.x\"")]);
    assert_eq!(body(&r)["spec"], expected_spec);

    let strict = [("fieldValidation", "Strict")];
    let r = p.send(
        "POST",
        WIDGETS,
        &strict,
        "application/yaml",
        &[],
        yaml("yaml-strict", None).into_bytes(),
    );
    assert_eq!(
        body(&r),
        status_body(
            400,
            "BadRequest",
            "Widget in version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \"spec.x\""
        )
    );
}

#[test]
fn kind_and_api_version_must_match_the_endpoint() {
    let p = Pipeline::start();
    // Recorded `validation` kind-mismatch: 422 naming the body's kind. kube's decoder
    // leaves an object of another kind alone, so its unknown fields draw no warnings.
    for verb in VERBS {
        let name = verb.name("kind");
        let mut obj = widget(&name, json!({"x": 1}));
        obj["kind"] = json!("Gadget");
        let r = p.write(verb, &name, &obj, &[], &[]);
        let expected = [cause(
            "kind",
            "FieldValueInvalid",
            "Invalid value: \"Gadget\": must be Widget",
        )];
        assert_invalid(
            &r,
            "Gadget",
            GROUP,
            &name,
            &expected,
            &format!("{verb:?} kind"),
        );
        assert!(warnings(&r).is_empty(), "{verb:?}: {:?}", warnings(&r));
    }
    // Another group: kube's create/update handlers refuse the body before any stage
    // (handlers/create.go, update.go); a patched object reaches validation instead.
    for verb in VERBS {
        let name = verb.name("group");
        let mut obj = widget(&name, json!({}));
        obj["apiVersion"] = json!("other.example.com/v1");
        let r = p.write(verb, &name, &obj, &[], &[]);
        if verb.is_patch() {
            let expected = [cause(
                "apiVersion",
                "FieldValueInvalid",
                "Invalid value: \"other.example.com/v1\": must be pipeline.example.com/v1",
            )];
            assert_invalid(
                &r,
                "Widget",
                "other.example.com",
                &name,
                &expected,
                &format!("{verb:?}"),
            );
        } else {
            assert_eq!(
                body(&r),
                status_body(
                    400,
                    "BadRequest",
                    "the API version in the data (other.example.com/v1) does not match the expected API version (pipeline.example.com/v1)"
                ),
                "{verb:?}"
            );
        }
    }
    // No kind: kube's strict decoder (the default, Warn) cannot type the body.
    let raw = r#"{"apiVersion":"pipeline.example.com/v1","metadata":{"name":"nokind"}}"#;
    let r = p.write_raw(Verb::Create, "nokind", raw, &[]);
    assert_eq!(
        body(&r),
        status_body(
            400,
            "BadRequest",
            &format!(
                "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{raw}' ({} ...)",
                &raw[..30]
            )
        )
    );
}

#[test]
fn malformed_bodies_are_400_with_kube_text() {
    let p = Pipeline::start();
    // Recorded `validation` malformed-json, for this endpoint's kind.
    let raw =
        r#"{"apiVersion": "pipeline.example.com/v1", "kind": "Widget", "metadata": {"name": "m1""#;
    let expected = status_body(
        400,
        "BadRequest",
        &format!(
            "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: unexpected end of JSON input ({} ...)",
            &raw[..30]
        ),
    );
    for verb in [Verb::Create, Verb::Put] {
        let r = p.write_raw(verb, &verb.name("malformed"), raw, &[]);
        assert_eq!(body(&r), expected, "{verb:?}");
    }
    // Patches: kube's strict decoding of the patch body (handlers/patch.go).
    for verb in [Verb::MergePatch, Verb::JsonPatch] {
        let r = p.write_raw(verb, &verb.name("malformed"), r#"{"spec":"#, &[]);
        assert_eq!(
            body(&r),
            status_body(
                400,
                "BadRequest",
                "error decoding patch: unexpected end of JSON input"
            ),
            "{verb:?}"
        );
    }
}

#[test]
fn defaults_apply_on_every_verb_without_creating_missing_parents() {
    let p = Pipeline::start();
    // Create: recorded `defaulting` create-empty/create-partial behaviour.
    let r = p.write(
        Verb::Create,
        "def-create",
        &widget(
            "def-create",
            json!({"ports": [{"name": "p"}], "weights": {"k": {}}, "nested": {}}),
        ),
        &[],
        &[],
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let full = with(
        defaulted_empty_spec(),
        json!({"ports": [{"name": "p", "protocol": "TCP"}], "weights": {"k": {"weight": 10}}, "nested": {"inner": "x"}}),
    );
    assert_eq!(body(&r)["spec"], full);
    let r = p.write(
        Verb::Create,
        "def-empty",
        &widget("def-empty", json!({})),
        &[],
        &[],
    );
    assert_eq!(
        body(&r)["spec"],
        defaulted_empty_spec(),
        "no `nested` without its own default"
    );

    let r = p.write(
        Verb::Put,
        "def-put",
        &widget("def-put", json!({"ports": [{"name": "p"}]})),
        &[],
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        body(&r)["spec"],
        with(
            defaulted_empty_spec(),
            json!({"ports": [{"name": "p", "protocol": "TCP"}]})
        )
    );

    // A merge patch's null removes the field; defaulting fills it again.
    let patch =
        json!({"spec": {"replicas": null, "nullableField": null, "ports": [{"name": "q"}]}});
    let r = p.write(Verb::MergePatch, "def-merge", &patch, &[], &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        body(&r)["spec"],
        with(
            defaulted_empty_spec(),
            json!({"ports": [{"name": "q", "protocol": "TCP"}]})
        )
    );

    p.create_base("def-json");
    let ops = json!([
        {"op": "remove", "path": "/spec/replicas"},
        {"op": "remove", "path": "/spec/withDefaultParent"},
        {"op": "add", "path": "/spec/weights", "value": {"k": {}}}
    ]);
    let item = format!("{WIDGETS}/def-json");
    let r = p.patch(&item, "application/json-patch+json", &ops);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        body(&r)["spec"],
        with(
            defaulted_empty_spec(),
            json!({"weights": {"k": {"weight": 10}}})
        )
    );
}

#[test]
fn nulls_are_dropped_kept_or_defaulted_by_nullability_on_every_verb() {
    let p = Pipeline::start();
    let nulls = json!({
        "plain": null,
        "nested": null,
        "nonNullable": null,
        "nullableField": null,
        "nullableNoDefault": null,
        "weights": {"k": null}
    });
    // Non-nullable without default: dropped; non-nullable with default: defaulted;
    // nullable: kept (kube's PruneNonNullableNullsWithoutDefaults, then Default).
    let expected = json!({
        "nonNullable": "filled",
        "nullableField": null,
        "nullableNoDefault": null,
        "weights": {},
        "withDefaultParent": {"inner": 7},
        "replicas": 1
    });
    for verb in [Verb::Create, Verb::Put, Verb::JsonPatch] {
        let name = verb.name("nulls");
        let r = p.write(verb, &name, &widget(&name, nulls.clone()), &[], &[]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        assert_eq!(body(&r)["spec"], expected, "{verb:?}");
        assert_eq!(p.get(&name)["spec"], expected, "{verb:?} read back");
    }
    // In a merge patch null means "remove": defaults come back, nullable ones included.
    let r = p.write(
        Verb::MergePatch,
        "nulls-merge",
        &json!({"spec": nulls}),
        &[],
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        body(&r)["spec"],
        with(defaulted_empty_spec(), json!({"weights": {}}))
    );
}

#[test]
fn reads_apply_the_current_schema_defaults_and_pruning() {
    let p = Pipeline::start();
    let r = p.write(
        Verb::Create,
        "old",
        &widget("old", json!({"a": "kept", "b": "dropped later"})),
        &[],
        &[],
    );
    assert_eq!(r.status, 201, "{}", r.text());

    // The CRD gains a default for `plain` and loses `b`.
    let mut crd = body(&p.http.get(WIDGET_CRD));
    let props = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"];
    props["plain"]["default"] = json!("later");
    props.as_object_mut().map(|m| m.remove("b"));
    let r = p.http.send_json("PUT", WIDGET_CRD, &crd);
    assert_eq!(r.status, 200, "updating the CRD: {}", r.text());

    let seen = common::poll(CRD_TIMEOUT, || {
        let got = p.get("old");
        (at(&got, "spec.plain") == "later").then_some(got)
    })
    .unwrap_or_else(|| panic!("the new default never showed on GET: {}", p.get("old")));
    assert_eq!(at(&seen, "spec.a"), "kept");
    assert!(
        absent(&seen, "spec.b"),
        "b is no longer in the schema: {seen}"
    );
    let list = body(&p.http.get(WIDGETS));
    assert_eq!(
        list["items"][0]["spec"], seen["spec"],
        "LIST reads like GET"
    );
}

#[test]
fn validation_errors_aggregate_into_one_invalid_status_on_every_verb() {
    let p = Pipeline::start();
    // The recorded `validation` many-errors body and causes.
    let many = json!({
        "name": "A", "replicas": 9, "ratio": 1.0, "tags": ["a", "b", "c"], "set": ["a", "a"],
        "byName": [{"name": "x"}, {"name": "x"}], "port": 1.5, "size": "XL", "props": {"a": "x", "b": "y"}
    });
    let golden = golden_validation_causes("many-errors");
    assert_eq!(golden.len(), 9);
    // Lengths count characters ("éééé" is 8 bytes), though kube's text says bytes;
    // `required` as in the recorded missing-required step.
    let extra = json!({"title": "ééééé", "limits": {}});
    let mut expected = golden.clone();
    expected.push(cause(
        "spec.title",
        "FieldValueTooLong",
        "Too long: may not be more than 4 bytes",
    ));
    expected.push(cause(
        "spec.limits.max",
        "FieldValueRequired",
        "Required value",
    ));
    for verb in VERBS {
        let name = verb.name("invalid");
        let r = p.write(
            verb,
            &name,
            &widget(&name, with(many.clone(), extra.clone())),
            &[],
            &[],
        );
        assert_invalid(&r, "Widget", GROUP, &name, &expected, &format!("{verb:?}"));
    }
    let r = p.write(
        Verb::Create,
        "chars",
        &widget("chars", json!({"title": "éééé"})),
        &[],
        &[],
    );
    assert_eq!(r.status, 201, "4 characters fit maxLength 4: {}", r.text());
    // Recorded wrong-types.
    let r = p.write(
        Verb::Create,
        "types",
        &widget("types", json!({"replicas": "two", "tags": "x"})),
        &[],
        &[],
    );
    assert_invalid(
        &r,
        "Widget",
        GROUP,
        "types",
        &golden_validation_causes("wrong-types"),
        "wrong types",
    );
}

#[test]
fn metadata_name_labels_and_annotations_are_validated() {
    let p = Pipeline::start();
    // Recorded bad-name.
    let r = p.write(
        Verb::Create,
        "Bad_Name",
        &widget("Bad_Name", json!({})),
        &[],
        &[],
    );
    assert_invalid(
        &r,
        "Widget",
        GROUP,
        "Bad_Name",
        &golden_validation_causes("bad-name"),
        "bad name",
    );

    // kube's ValidateLabels / ValidateAnnotations (apimachinery validation).
    let label_key = cause(
        "metadata.labels",
        "FieldValueInvalid",
        &format!("Invalid value: \"bad key\": {NAME_PART_MSG}"),
    );
    let label_value = cause(
        "metadata.labels",
        "FieldValueInvalid",
        &format!("Invalid value: \"bad value!\": {LABEL_VALUE_MSG}"),
    );
    let annotation_key = cause(
        "metadata.annotations",
        "FieldValueInvalid",
        &format!("Invalid value: \"bad key\": {NAME_PART_MSG}"),
    );
    let mut obj = widget("meta", json!({}));
    obj["metadata"]["labels"] = json!({"bad key": "v", "ok": "bad value!"});
    obj["metadata"]["annotations"] = json!({"bad key": "v"});
    let r = p.write(Verb::Create, "meta", &obj, &[], &[]);
    let expected = [label_key.clone(), label_value, annotation_key];
    assert_invalid(
        &r,
        "Widget",
        GROUP,
        "meta",
        &expected,
        "create labels/annotations",
    );

    let mut obj = widget("big", json!({}));
    obj["metadata"]["annotations"] = json!({"a": "x".repeat(262_144)});
    let r = p.write(Verb::Create, "big", &obj, &[], &[]);
    let expected = [cause(
        "metadata.annotations",
        "FieldValueTooLong",
        "Too long: may not be more than 262144 bytes",
    )];
    assert_invalid(&r, "Widget", GROUP, "big", &expected, "annotations size");

    // Updates: kube's generic registry validates metadata twice (rest.BeforeUpdate's
    // common fields) and the custom resource strategy once more, so the cause appears
    // three times; the message dedups it.
    for verb in [Verb::Put, Verb::MergePatch, Verb::JsonPatch] {
        let name = verb.name("labels");
        let mut obj = widget(&name, json!({}));
        obj["metadata"]["labels"] = json!({"bad key": "v"});
        let r = p.write(verb, &name, &obj, &[], &[]);
        let expected = vec![label_key.clone(); 3];
        assert_invalid(
            &r,
            "Widget",
            GROUP,
            &name,
            &expected,
            &format!("{verb:?} labels"),
        );
    }
}

#[test]
fn property_names_are_checked_at_crd_creation_and_on_every_write() {
    let p = Pipeline::start();
    let map_with_keys = |key_schema: Value| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"m": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "x-kubernetes-property-names": key_schema
        }}}}})
    };
    let at_m = "spec.validation.openAPIV3Schema.properties[spec].properties[m]";
    let crd_name = "keys.pipeline.example.com";

    // Only string validations on keys.
    let bad = crd(
        "keys",
        "Key",
        map_with_keys(json!({"type": "string", "maximum": 3, "minItems": 1})),
    );
    let r = p.http.send_json("POST", CRDS, &bad);
    let forbidden = |f: &str| {
        cause(
            &format!("{at_m}.x-kubernetes-property-names.{f}"),
            "FieldValueForbidden",
            &format!("Forbidden: {ONLY_STRING_VALIDATIONS}"),
        )
    };
    let expected = [forbidden("maximum"), forbidden("minItems")];
    assert_invalid(
        &r,
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        crd_name,
        &expected,
        "key validations",
    );

    // Only on maps.
    let on_list = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"m": {
        "type": "array",
        "items": {"type": "string"},
        "x-kubernetes-property-names": {"type": "string"}
    }}}}});
    let r = p.http.send_json("POST", CRDS, &crd("keys", "Key", on_list));
    let expected = [
        cause(
            &format!("{at_m}.type"),
            "FieldValueInvalid",
            "Invalid value: \"array\": must be object if x-kubernetes-property-names is specified",
        ),
        cause(
            &format!("{at_m}.additionalProperties"),
            "FieldValueRequired",
            "Required value: must be specified if x-kubernetes-property-names is specified",
        ),
    ];
    assert_invalid(
        &r,
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        crd_name,
        &expected,
        "on a list",
    );

    // Every write checks keys, naming the key's path.
    let expected = [
        cause(
            "spec.keys[Bad]",
            "FieldValueInvalid",
            "Invalid value: \"Bad\": spec.keys[Bad] in body should match '^[a-z]+$'",
        ),
        cause(
            "spec.keys[toolong]",
            "FieldValueTooLong",
            "Too long: may not be more than 5 bytes",
        ),
    ];
    for verb in VERBS {
        let name = verb.name("keys");
        let obj = widget(
            &name,
            json!({"keys": {"ok": "1", "Bad": "2", "toolong": "3"}}),
        );
        let r = p.write(verb, &name, &obj, &[], &[]);
        assert_invalid(&r, "Widget", GROUP, &name, &expected, &format!("{verb:?}"));
    }
    let r = p.write(
        Verb::Create,
        "keys-ok",
        &widget("keys-ok", json!({"keys": {"abc": "1"}})),
        &[],
        &[],
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn crds_with_non_structural_schemas_or_bad_defaults_are_rejected() {
    let p = Pipeline::start();
    let crd_kind = ("CustomResourceDefinition", "apiextensions.k8s.io");
    let name = "bads.pipeline.example.com";
    let reject = |schema: Value, expected: &[Value], what: &str| {
        let r = p.http.send_json("POST", CRDS, &crd("bads", "Bad", schema));
        assert_invalid(&r, crd_kind.0, crd_kind.1, name, expected, what);
    };
    let root = "spec.validation.openAPIV3Schema";
    // kube apiserver/schema/validation.go.
    reject(
        json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
        &[cause(
            &format!("{root}.properties[spec].type"),
            "FieldValueRequired",
            "Required value: must not be empty for specified object fields",
        )],
        "missing type",
    );
    reject(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"l": {"type": "array", "items": {"properties": {}}}}}}}),
        &[cause(
            &format!("{root}.properties[spec].properties[l].items.type"),
            "FieldValueRequired",
            "Required value: must not be empty for specified array items",
        )],
        "missing items type",
    );
    // Recorded `defaulting` crd-with-invalid-default-rejected.
    reject(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": "one", "maximum": 3}}}}}),
        &[cause(
            &format!("{root}.properties[spec].properties[replicas].default"),
            "FieldValueTypeInvalid",
            "Invalid value: \"string\":  in body must be of type integer: \"string\"",
        )],
        "invalid default",
    );
    // kube defaulting/validation.go: defaults must be pruned already.
    reject(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"o": {"type": "object", "default": {"unknown": 1}, "properties": {"a": {"type": "string"}}}}}}}),
        &[cause(
            &format!("{root}.properties[spec].properties[o].default"),
            "FieldValueInvalid",
            "Invalid value: {\"unknown\":1}: must not have unknown fields",
        )],
        "unprunable default",
    );
    // Versions with different schemas are reported per version.
    let mut two = crd("bads", "Bad", json!({"type": "object"}));
    two["spec"]["versions"] = json!([
        {"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}},
        {"name": "v2", "served": true, "storage": false, "schema": {"openAPIV3Schema":
            {"type": "object", "properties": {"spec": {"properties": {}}}}}}
    ]);
    let r = p.http.send_json("POST", CRDS, &two);
    let expected = [cause(
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].type",
        "FieldValueRequired",
        "Required value: must not be empty for specified object fields",
    )];
    assert_invalid(
        &r,
        crd_kind.0,
        crd_kind.1,
        name,
        &expected,
        "per-version schema",
    );
}

#[test]
fn trace_header_names_what_prune_removed_and_default_set() {
    let p = Pipeline::start();
    let asked = [("X-Pipeline-Trace", "true")];
    for verb in VERBS {
        let name = verb.name("trace");
        let obj = widget(&name, json!({"x": 1, "ports": [{"name": "p"}]}));
        let r = p.write(verb, &name, &obj, &[], &asked);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        let trace = r
            .header("x-pipeline-trace")
            .unwrap_or_else(|| panic!("{verb:?}: no X-Pipeline-Trace header"));
        for line in [
            "prune: removed spec.x",
            "default: set spec.ports[0].protocol",
        ] {
            assert!(trace.contains(line), "{verb:?}: {line:?} not in {trace:?}");
        }
        if verb == Verb::Create {
            assert!(trace.contains("default: set spec.replicas"), "{trace:?}");
        }

        let name = verb.name("untraced");
        let r = p.write(verb, &name, &widget(&name, json!({"x": 1})), &[], &[]);
        assert_eq!(r.status, verb.ok_status(), "{verb:?}: {}", r.text());
        assert_eq!(
            r.header("x-pipeline-trace"),
            None,
            "{verb:?}: trace not asked for"
        );
    }
}

#[test]
fn log_pipeline_writes_the_trace_to_stderr() {
    let p = Pipeline::start_with(&["--log-pipeline"]);
    let r = p.write(
        Verb::Create,
        "logged",
        &widget("logged", json!({"x": 1})),
        &[],
        &[],
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.header("x-pipeline-trace"),
        None,
        "logging does not add the header"
    );
    let logged = common::poll(Duration::from_secs(5), || {
        let err = p.server.stderr();
        (err.contains("prune: removed spec.x") && err.contains("default: set spec.replicas"))
            .then_some(())
    });
    assert!(
        logged.is_some(),
        "no trace lines in stderr:\n{}",
        p.server.stderr_tail(20)
    );
}

/// kube's `WarningsOnCreate`/`WarningsOnUpdate` of custom resources
/// (`generateWarningsFromObj` in apiextensions' strategy): finalizers a write adds that
/// are not domain-qualified with a path get a warning each, sorted; the standard ones
/// and those already there get none (kube's status strategy warns of nothing).
#[test]
fn added_finalizers_that_are_not_domain_qualified_warn() {
    let p = Pipeline::start();
    let unqualified = |f: &str| {
        warning(&format!(
            "metadata.finalizers: \"{f}\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers"
        ))
    };
    let without_path = |f: &str| {
        warning(&format!(
            "metadata.finalizers: \"{f}\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
        ))
    };
    let mut obj = widget("fin", json!({}));
    obj["metadata"]["finalizers"] = json!([
        "unqualified-finalizer",
        "example.com",
        "example.com/ok",
        "orphan"
    ]);
    let created = p.http.send_json("POST", WIDGETS, &obj);
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(
        warnings(&created),
        [
            without_path("example.com"),
            unqualified("unqualified-finalizer")
        ]
    );
    // Only what a write adds warns.
    let item = format!("{WIDGETS}/fin");
    let patch = json!({"metadata": {"finalizers":
        ["unqualified-finalizer", "example.com", "example.com/ok", "orphan", "another"]}});
    let patched = p.http.merge_patch(&item, &patch);
    assert_eq!(patched.status, 200, "{}", patched.text());
    assert_eq!(warnings(&patched), [unqualified("another")]);
    let relabelled = p
        .http
        .merge_patch(&item, &json!({"metadata": {"labels": {"a": "b"}}}));
    assert_eq!(relabelled.status, 200, "{}", relabelled.text());
    assert_eq!(warnings(&relabelled), Vec::<String>::new());
    // A refused write warns of nothing.
    let refused = p.http.merge_patch(
        &item,
        &json!({"metadata": {"finalizers": ["again"]}, "spec": {"name": "X"}}),
    );
    assert_eq!(refused.status, 422, "{}", refused.text());
    assert_eq!(warnings(&refused), Vec::<String>::new());
}

/// One sample of `/metrics` (a gauge without labels).
fn gauge(http: &Http, name: &str) -> f64 {
    let text = http.get("/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}

/// A CRD version's schema is compiled on its first request and dropped past
/// `--compiled-schemas-budget` (`apimachinery::crd::on_demand`): with a budget of one
/// byte only the schema a request just compiled is kept, and every request to the
/// other CRD compiles its schema again — defaults, value validations and CEL rules
/// must hold each time as with both kept.
#[test]
fn schemas_dropped_past_the_budget_are_compiled_again_on_use() {
    let p = Pipeline::start_with(&["--compiled-schemas-budget", "1"]);
    let gadgets = "/apis/pipeline.example.com/v1/namespaces/default/gadgets";
    let gadget_crd = crd(
        "gadgets",
        "Gadget",
        json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.size <= self.limit", "message": "size over limit"}],
            "properties": {
                "size": {"type": "integer", "default": 1},
                "limit": {"type": "integer", "default": 10, "maximum": 100}
            }
        }}}),
    );
    let r = p.http.send_json("POST", CRDS, &gadget_crd);
    assert_eq!(r.status, 201, "{}", r.text());
    p.wait_served(gadgets);
    let gadget = |name: &str, spec: Value| json!({"apiVersion": API_VERSION, "kind": "Gadget", "metadata": {"name": name}, "spec": spec});
    for round in 0..3 {
        let name = format!("w{round}");
        let r = p.http.send_json("POST", WIDGETS, &widget(&name, json!({})));
        assert_eq!(r.status, 201, "round {round}: {}", r.text());
        assert_eq!(at(&body(&r), "spec.nonNullable"), "filled", "round {round}");
        assert_eq!(gauge(&p.http, "crd_apiserver_compiled_schemas"), 1.0);

        let r = p
            .http
            .send_json("POST", gadgets, &gadget(&name, json!({"size": 3})));
        assert_eq!(r.status, 201, "round {round}: {}", r.text());
        assert_eq!(at(&body(&r), "spec.limit"), 10, "round {round}");
        assert_eq!(gauge(&p.http, "crd_apiserver_compiled_schemas"), 1.0);
        assert!(gauge(&p.http, "crd_apiserver_compiled_schemas_json_bytes") > 100.0);

        // The Widget schema again (dropped for the Gadget's): its pattern check.
        let r = p.http.send_json(
            "POST",
            WIDGETS,
            &widget(&format!("bad{round}"), json!({"name": "UPPER"})),
        );
        assert_eq!(r.status, 422, "round {round}: {}", r.text());
        // And the Gadget's rules, compiled once more.
        let r = p.http.send_json(
            "POST",
            gadgets,
            &gadget(&format!("big{round}"), json!({"size": 11})),
        );
        assert_eq!(r.status, 422, "round {round}: {}", r.text());
        assert!(r.text().contains("size over limit"), "{}", r.text());
        let r = p.http.send_json(
            "POST",
            gadgets,
            &gadget(&format!("max{round}"), json!({"limit": 101})),
        );
        assert_eq!(r.status, 422, "round {round}: {}", r.text());
        assert!(
            r.text().contains("spec.limit: Invalid value: 101: spec.limit in body should be less than or equal to 100"),
            "{}",
            r.text()
        );
        // A read of a stored Widget is defaulted by its (recompiled) schema.
        assert_eq!(at(&p.get(&name), "spec.withDefaultParent.inner"), 7);
    }
}
