//! Drives the real kubectl (1.32) against crd-apiserver. Expected outputs are kubectl's
//! own formats as printed against a real cluster.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::{describe_output, poll, testdata_dir, TestServer};
use serde_json::{json, Value};

/// How long a kubectl step may wait for the server to reach a state.
const SETTLE: Duration = Duration::from_secs(10);

/// The message kube gives for an invalid object name (DNS-1123 subdomain).
const BAD_NAME_MESSAGE: &str = "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 \
     subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start \
     and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// Absolute path of a testdata file, as kubectl will quote it in messages.
fn data(relative: &str) -> String {
    let path: PathBuf = testdata_dir().join(relative);
    assert!(path.exists(), "missing testdata file {}", path.display());
    path.to_string_lossy().into_owned()
}

/// Runs kubectl, asserts it succeeded, returns stdout.
fn ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed\n{}\n--- server stderr (tail) ---\n{}",
        describe_output(&out),
        server.stderr_tail(20)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs kubectl, asserts it failed with exit code 1, returns stderr.
fn fails(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert_eq!(
        out.status.code(),
        Some(1),
        "kubectl {args:?} should have failed with exit code 1\n{}",
        describe_output(&out)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Stdout and stderr of a finished kubectl.
fn streams(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Creates a CRD from testdata and waits for it to be Established, checking kubectl's
/// exact messages.
fn install_crd(server: &TestServer, file: &str, name: &str) {
    assert_eq!(
        ok(server, &["create", "-f", &data(file)]),
        format!("customresourcedefinition.apiextensions.k8s.io/{name} created\n")
    );
    wait_established(server, name);
}

/// Waits with kubectl until the CRD `name` is Established, checking kubectl's message.
fn wait_established(server: &TestServer, name: &str) {
    assert_eq!(
        ok(
            server,
            &[
                "wait",
                "--for",
                "condition=Established",
                "--timeout=20s",
                &format!("crd/{name}")
            ]
        ),
        format!("customresourcedefinition.apiextensions.k8s.io/{name} condition met\n")
    );
}

/// Parses kubectl's column output: cells start where their header starts (tabwriter
/// aligns them), so empty cells are kept. Header names are split at 2+ spaces.
fn parse_table(text: &str) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return (Vec::new(), Vec::new());
    };
    let mut columns: Vec<(usize, String)> = Vec::new();
    let bytes = header.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !(bytes[i] == b' ' && bytes.get(i + 1) == Some(&b' ')) {
            i += 1;
        }
        columns.push((start, header[start..i].trim().to_string()));
    }
    let names: Vec<String> = columns.iter().map(|(_, n)| n.clone()).collect();
    let rows = lines
        .map(|line| {
            let mut row = BTreeMap::new();
            for (idx, (start, name)) in columns.iter().enumerate() {
                let end = columns
                    .get(idx + 1)
                    .map(|(s, _)| *s)
                    .unwrap_or(line.len())
                    .min(line.len());
                let cell = line.get((*start).min(line.len())..end).unwrap_or("");
                row.insert(name.clone(), cell.trim().to_string());
            }
            row
        })
        .collect();
    (names, rows)
}

/// Whether `s` looks like kubectl's human duration for a young object ("0s", "12s",
/// "2m3s").
fn is_age(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.ends_with(|c: char| "smhdy".contains(c))
        && s.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
}

/// Whether `s` is an RFC 3339 UTC timestamp like `2026-01-02T03:04:05Z`.
fn is_rfc3339_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'Z'
}

/// The value kubectl prints for a JSONPath on one object.
fn jsonpath(server: &TestServer, target: &[&str], path: &str) -> String {
    let expr = format!("jsonpath={path}");
    let mut args: Vec<&str> = vec!["get"];
    args.extend_from_slice(target);
    args.extend_from_slice(&["-o", &expr]);
    ok(server, &args)
}

#[test]
fn server_lifecycle_kubeconfig_and_sigterm() {
    let server = TestServer::start();
    let out = server.kubectl(&["get", "crd"]);
    let (stdout, stderr) = streams(&out);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(stdout, "");
    assert_eq!(stderr, "No resources found\n");

    let (columns, rows) = parse_table(&ok(&server, &["get", "namespaces"]));
    assert_eq!(columns, ["NAME", "STATUS", "AGE"]);
    let default = rows
        .iter()
        .find(|r| r["NAME"] == "default")
        .unwrap_or_else(|| panic!("namespace default missing: {rows:?}"));
    assert_eq!(default["STATUS"], "Active");
    assert!(is_age(&default["AGE"]), "AGE {:?}", default["AGE"]);

    let status = server.terminate();
    assert!(
        status.is_some_and(|s| s.success()),
        "SIGTERM should stop the server cleanly with exit status 0, got {status:?}\n{}",
        server.stderr_tail(20)
    );
}

#[test]
fn crd_established_discovered_and_listed() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");

    let (columns, rows) = parse_table(&ok(&server, &["get", "crd"]));
    assert_eq!(columns, ["NAME", "CREATED AT"]);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["NAME"], "widgets.example.com");
    assert!(
        is_rfc3339_utc(&rows[0]["CREATED AT"]),
        "CREATED AT {:?}",
        rows[0]["CREATED AT"]
    );

    let (columns, rows) = parse_table(&ok(&server, &["api-resources", "--api-group=example.com"]));
    assert_eq!(
        columns,
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["NAME"], "widgets");
    assert_eq!(rows[0]["SHORTNAMES"], "wd,wdg");
    assert_eq!(rows[0]["APIVERSION"], "example.com/v1");
    assert_eq!(rows[0]["NAMESPACED"], "true");
    assert_eq!(rows[0]["KIND"], "Widget");

    // The CRD's conditions as kube sets them.
    let conditions = jsonpath(
        &server,
        &["crd", "widgets.example.com"],
        "{range .status.conditions[*]}{.type}={.status};{end}",
    );
    assert!(
        conditions.contains("Established=True;") && conditions.contains("NamesAccepted=True;"),
        "conditions: {conditions}"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["crd", "widgets.example.com"],
            "{.status.acceptedNames.shortNames}"
        ),
        "[\"wd\",\"wdg\"]"
    );

    let out = server.kubectl(&["get", "widgets"]);
    let (stdout, stderr) = streams(&out);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(stdout, "");
    assert_eq!(stderr, "No resources found in default namespace.\n");
}

#[test]
fn create_apply_and_get_with_printer_columns() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    install_crd(&server, "crds/gadgets.yaml", "gadgets.example.com");

    assert_eq!(
        ok(&server, &["create", "-f", &data("objects/widget-w1.yaml")]),
        "widget.example.com/w1 created\n"
    );
    // Client-side apply: kubectl validates against /openapi/v3 and sends a merge patch.
    assert_eq!(
        ok(&server, &["apply", "-f", &data("objects/widget-w2.yaml")]),
        "widget.example.com/w2 created\n"
    );
    assert_eq!(
        ok(&server, &["apply", "-f", &data("objects/widget-w2.yaml")]),
        "widget.example.com/w2 unchanged\n"
    );
    let changed = testdata_and_replace("objects/widget-w2.yaml", "color: blue", "color: green");
    let changed_path = server.write_file("widget-w2-green.yaml", &changed);
    assert_eq!(
        ok(&server, &["apply", "-f", &changed_path.to_string_lossy()]),
        "widget.example.com/w2 configured\n"
    );
    let last_applied = jsonpath(
        &server,
        &["widget", "w2"],
        "{.metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration}",
    );
    let last_applied: Value = serde_json::from_str(last_applied.trim())
        .unwrap_or_else(|e| panic!("last-applied-configuration is not JSON ({e}): {last_applied}"));
    assert_eq!(last_applied["spec"]["color"], "green");

    // Printer columns; replicas/finish of w1 come from the schema defaults.
    let (columns, rows) = parse_table(&ok(&server, &["get", "widgets"]));
    assert_eq!(columns, ["NAME", "COLOR", "REPLICAS", "AGE"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(
        (
            &rows[0]["NAME"][..],
            &rows[0]["COLOR"][..],
            &rows[0]["REPLICAS"][..]
        ),
        ("w1", "red", "1")
    );
    assert_eq!(
        (
            &rows[1]["NAME"][..],
            &rows[1]["COLOR"][..],
            &rows[1]["REPLICAS"][..]
        ),
        ("w2", "green", "2")
    );
    assert!(rows.iter().all(|r| is_age(&r["AGE"])), "{rows:?}");

    // Priority-1 columns only with -o wide.
    let (columns, rows) = parse_table(&ok(&server, &["get", "widgets", "-o", "wide"]));
    assert_eq!(columns, ["NAME", "COLOR", "REPLICAS", "FINISH", "AGE"]);
    assert_eq!(rows[0]["FINISH"], "matte");
    assert_eq!(rows[1]["FINISH"], "gloss");

    // All namespaces: kubectl adds the NAMESPACE column.
    let (columns, rows) = parse_table(&ok(&server, &["get", "widgets", "-A"]));
    assert_eq!(columns, ["NAMESPACE", "NAME", "COLOR", "REPLICAS", "AGE"]);
    assert!(rows.iter().all(|r| r["NAMESPACE"] == "default"), "{rows:?}");
    assert_eq!(rows.len(), 2, "{rows:?}");

    // Short name, single object, label and field selectors.
    let (columns, rows) = parse_table(&ok(&server, &["get", "wd", "w1"]));
    assert_eq!(columns, ["NAME", "COLOR", "REPLICAS", "AGE"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["NAME"], "w1");
    assert_eq!(
        ok(
            &server,
            &["get", "widgets", "-l", "tier=silver", "-o", "name"]
        ),
        "widget.example.com/w2\n"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "get",
                "widgets",
                "--field-selector",
                "spec.color=red",
                "-o",
                "name"
            ]
        ),
        "widget.example.com/w1\n"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "get",
                "widgets",
                "--field-selector",
                "metadata.name=w2",
                "-o",
                "name"
            ]
        ),
        "widget.example.com/w2\n"
    );

    // -o yaml of a list: kubectl wraps items in a v1 List.
    let yaml = ok(&server, &["get", "widgets", "-o", "yaml"]);
    let list: Value =
        serde_norway::from_str(&yaml).unwrap_or_else(|e| panic!("-o yaml ({e}):\n{yaml}"));
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2, "{yaml}");
    assert_eq!(items[0]["apiVersion"], "example.com/v1");
    assert_eq!(items[0]["kind"], "Widget");
    assert_eq!(items[0]["metadata"]["name"], "w1");
    assert_eq!(items[0]["metadata"]["namespace"], "default");
    assert_eq!(items[0]["metadata"]["generation"], 1);
    assert_eq!(
        items[0]["spec"],
        serde_json::json!({"color": "red", "replicas": 1, "finish": "matte"})
    );
    assert!(items[0]["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));
    assert!(items[0]["metadata"]["resourceVersion"]
        .as_str()
        .is_some_and(|rv| !rv.is_empty()));

    // A CRD without printer columns shows NAME and AGE.
    assert_eq!(
        ok(&server, &["create", "-f", &data("objects/gadget-g1.yaml")]),
        "gadget.example.com/g1 created\n"
    );
    let (columns, rows) = parse_table(&ok(&server, &["get", "gadgets"]));
    assert_eq!(columns, ["NAME", "AGE"]);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["NAME"], "g1");
    assert!(is_age(&rows[0]["AGE"]), "{rows:?}");

    // A category spans both kinds; kubectl then prefixes names with kind.group.
    let toys = ok(&server, &["get", "toys", "-o", "name"]);
    let mut names: Vec<&str> = toys.lines().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "gadget.example.com/g1",
            "widget.example.com/w1",
            "widget.example.com/w2"
        ]
    );
    let toys_table = ok(&server, &["get", "toys"]);
    assert!(
        toys_table.contains("widget.example.com/w1")
            && toys_table.contains("gadget.example.com/g1"),
        "{toys_table}"
    );
}

/// A testdata file with one substring replaced (to derive variants of an object).
fn testdata_and_replace(relative: &str, from: &str, to: &str) -> String {
    let text = common::testdata(relative);
    assert!(text.contains(from), "{relative} lacks {from:?}");
    text.replace(from, to)
}

#[test]
fn explain_shows_schema_and_descriptions() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");

    let spec = ok(&server, &["explain", "widget.spec"]);
    for expected in [
        "GROUP:      example.com\nKIND:       Widget\nVERSION:    v1\n\nFIELD: spec <Object>\n",
        "DESCRIPTION:\n    WidgetSpec is the desired state of a Widget.\n",
        "FIELDS:\n  color\t<string> -required-\n    Color of the widget.\n",
        "  finish\t<string>\n  enum: matte, gloss\n    Surface finish.\n",
        "  replicas\t<integer>\n    Number of copies wanted.\n",
    ] {
        assert!(
            spec.contains(expected),
            "kubectl explain widget.spec lacks {expected:?}:\n{spec}"
        );
    }

    let top = ok(&server, &["explain", "widgets"]);
    for expected in [
        "GROUP:      example.com\nKIND:       Widget\nVERSION:    v1\n\nDESCRIPTION:\n    A Widget is a configurable thing made for tests.\n",
        "  apiVersion\t<string>\n",
        "  kind\t<string>\n",
        "  metadata\t<ObjectMeta>\n",
        "  spec\t<Object>\n    WidgetSpec is the desired state of a Widget.\n",
        "  status\t<Object>\n    WidgetStatus is the observed state of a Widget.\n",
    ] {
        assert!(
            top.contains(expected),
            "kubectl explain widgets lacks {expected:?}:\n{top}"
        );
    }

    // The kind's metadata is a `$ref` with a description beside it, which /openapi/v3
    // wraps in `allOf` as kube does: kubectl shows kube's field text, then ObjectMeta's.
    let metadata = ok(&server, &["explain", "widget.metadata"]);
    for expected in [
        "FIELD: metadata <ObjectMeta>\n\n\nDESCRIPTION:\n    Standard object's metadata. More info:\n",
        "    ObjectMeta is metadata that all persisted resources must have",
    ] {
        assert!(
            metadata.contains(expected),
            "kubectl explain widget.metadata lacks {expected:?}:\n{metadata}"
        );
    }

    let err = fails(&server, &["explain", "widget.spec.nope"]);
    assert!(
        err.contains("field \"nope\" does not exist"),
        "kubectl explain of a missing field: {err}"
    );
}

/// The CRD of `crds/widgets.yaml` and a Widget in one multi-document file.
fn crd_and_widget_file(server: &TestServer) -> String {
    let text = format!(
        "{}---\n{}",
        common::testdata("crds/widgets.yaml"),
        common::testdata("objects/widget-w2.yaml")
    );
    server
        .write_file("widgets-and-w2.yaml", &text)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn apply_of_a_crd_and_its_object_in_one_file() {
    let server = TestServer::start();
    let file = crd_and_widget_file(&server);
    // kubectl builds every object (validating against /openapi/v2, mapping by discovery)
    // before applying any: the CRD is created, the Widget has no mapping yet.
    let out = server.kubectl(&["apply", "-f", &file]);
    let (stdout, stderr) = streams(&out);
    assert_eq!(out.status.code(), Some(1), "{}", describe_output(&out));
    assert_eq!(
        stdout,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    assert_eq!(
        stderr,
        format!(
            "error: resource mapping not found for name: \"w2\" namespace: \"\" from \"{file}\": \
             no matches for kind \"Widget\" in version \"example.com/v1\"\n\
             ensure CRDs are installed first\n"
        )
    );
    wait_established(&server, "widgets.example.com");
    // Once the CRD is established the same file applies.
    assert_eq!(
        ok(&server, &["apply", "-f", &file]),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com unchanged\n\
         widget.example.com/w2 created\n"
    );
    assert_eq!(
        jsonpath(&server, &["widget", "w2"], "{.spec.color}"),
        "blue"
    );
}

#[test]
fn client_side_validation_of_a_list_uses_openapi_v2() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    // kubectl leaves validation to the server for kinds whose /openapi/v3 operations take
    // `fieldValidation`, but validates a `List` itself, against /openapi/v2.
    let list = "apiVersion: v1\nkind: List\nitems:\n\
        - apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm1\n  data:\n    a: b\n  bogus: 1\n\
        - apiVersion: example.com/v1\n  kind: Widget\n  metadata:\n    name: w3\n  spec:\n    color: red\n    shade: dark\n";
    let file = server.write_file("unknown-fields.yaml", list);
    let file = file.to_string_lossy();
    for validate in ["--validate=strict", "--validate=true"] {
        let err = fails(&server, &["apply", validate, "-f", &file]);
        assert_eq!(
            err,
            format!(
                "error: error validating \"{file}\": error validating data: \
                 [ValidationError(ConfigMap): unknown field \"bogus\" in io.k8s.api.core.v1.ConfigMap, \
                 ValidationError(Widget.spec): unknown field \"shade\" in com.example.v1.Widget.spec]; \
                 if you choose to ignore these errors, turn validation off with --validate=false\n"
            ),
            "{validate}"
        );
    }
    let valid = list
        .replace("  bogus: 1\n", "")
        .replace("    shade: dark\n", "");
    let file = server.write_file("valid.yaml", &valid);
    assert_eq!(
        ok(
            &server,
            &["apply", "--validate=strict", "-f", &file.to_string_lossy()]
        ),
        "configmap/cm1 created\nwidget.example.com/w3 created\n"
    );
    // kubectl explain reads /openapi/v3 and still finds the kind.
    let explain = ok(&server, &["explain", "widget.spec.color"]);
    assert!(
        explain.contains("FIELD: color <string>"),
        "kubectl explain widget.spec.color:\n{explain}"
    );
}

/// kube's e2e "should create/apply an invalid/valid CR with arbitrary-extra properties
/// for CRD with partially-specified validation schema": kubectl reads /openapi/v2 as
/// protobuf (client-go's Accept) and leaves the CR's unknown fields to the server's
/// strict field validation, which allows them only where the schema preserves them.
#[test]
fn create_and_apply_of_a_cr_with_extra_properties_under_a_partial_schema() {
    let server = TestServer::start();
    let bars = json!({"description": "List of Bars and their specs.", "type": "array", "items": {
        "type": "object", "required": ["name"], "properties": {
            "name": {"description": "Name of Bar.", "type": "string"},
            "age": {"description": "Age of Bar.", "type": "string"},
            "bazs": {"description": "List of Bazs.", "type": "array", "items": {"type": "string"}}}}});
    let status_bars = json!({"description": "List of Bars and their statuses.", "type": "array",
        "items": {"type": "object", "properties": {
            "name": {"description": "Name of Bar.", "type": "string"},
            "available": {"description": "Whether the Bar is installed.", "type": "boolean"},
            "quxType": {"description": "Indicates to external qux type.", "type": "string",
                        "pattern": "in-tree|out-of-tree"}}}});
    // kube's `schemaFoo`, with arbitrary extra properties allowed at the root.
    let schema = json!({"description": "Foo CRD for Testing", "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {
            "spec": {"type": "object", "description": "Specification of Foo",
                     "properties": {"bars": bars}},
            "status": {"type": "object", "description": "Status of Foo",
                       "properties": {"bars": status_bars}}}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.crd-publish-openapi-test.example.com"},
        "spec": {"group": "crd-publish-openapi-test.example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}]}})
    .to_string();
    let file = server.write_file("foos.json", &crd);
    ok(&server, &["create", "-f", &file.to_string_lossy()]);
    wait_established(&server, "foos.crd-publish-openapi-test.example.com");
    // What kubectl's validation reads: the v2 document as protobuf.
    let proto = server
        .http()
        .request(
            "GET",
            "/openapi/v2",
            &[],
            &[(
                "Accept".to_string(),
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf".to_string(),
            )],
            None,
        )
        .expect("GET /openapi/v2");
    assert_eq!(proto.status, 200, "{}", proto.text());

    let meta = r#""kind":"Foo","apiVersion":"crd-publish-openapi-test.example.com/v1","metadata":{"name":"test-cr"}"#;
    // Unknown fields inside `spec` are refused: only the root preserves them.
    let invalid = server.write_file(
        "invalid.json",
        &format!(r#"{{{meta},"spec":{{"bars":[{{"name":"test-bar"}}],"extraProperty":"arbitrary-value"}}}}"#),
    );
    for verb in ["create", "apply"] {
        let err = fails(
            &server,
            &[verb, "--validate=true", "-f", &invalid.to_string_lossy()],
        );
        assert!(
            err.contains(r#"unknown field "spec.extraProperty""#),
            "kubectl {verb}: {err}"
        );
    }
    // At the root they are kept.
    let valid = server.write_file(
        "valid.json",
        &format!(r#"{{{meta},"spec":{{"bars":[{{"name":"test-bar"}}]}},"extraProperty":"arbitrary-value"}}"#),
    );
    for verb in ["create", "apply"] {
        ok(
            &server,
            &[verb, "--validate=true", "-f", &valid.to_string_lossy()],
        );
        assert_eq!(
            jsonpath(&server, &["foo", "test-cr"], "{.extraProperty}"),
            "arbitrary-value"
        );
        ok(&server, &["delete", "foos", "test-cr"]);
    }
}

#[test]
fn apply_of_a_changed_crd_patches_it() {
    let server = TestServer::start();
    let crd = data("crds/widgets.yaml");
    assert_eq!(
        ok(&server, &["apply", "-f", &crd]),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    let changed = testdata_and_replace(
        "crds/widgets.yaml",
        "shortNames: [wd, wdg]",
        "shortNames: [wd, wdg, wdgt]",
    );
    let changed = server.write_file("widgets-changed.yaml", &changed);
    // The apiextensions operations publish strategic merge patches, so kubectl sends one
    // (`-v=8` logs each request's headers), without falling back to /openapi/v2.
    let out = server.kubectl(&["apply", "-f", &changed.to_string_lossy(), "-v=8"]);
    let (stdout, stderr) = streams(&out);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        stdout,
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com configured\n"
    );
    let patch_content_type = stderr
        .lines()
        .skip_while(|l| !l.contains("] PATCH "))
        .find_map(|l| l.split_once("Content-Type: ").map(|(_, t)| t.trim()));
    assert_eq!(
        patch_content_type,
        Some("application/strategic-merge-patch+json"),
        "{stderr}"
    );
    assert!(!stderr.contains("/openapi/v2"), "{stderr}");
    assert_eq!(
        jsonpath(
            &server,
            &["crd", "widgets.example.com"],
            "{.spec.names.shortNames}"
        ),
        "[\"wd\",\"wdg\",\"wdgt\"]"
    );
}

#[test]
fn label_annotate_patch_and_scale() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    ok(&server, &["create", "-f", &data("objects/widget-w1.yaml")]);

    assert_eq!(
        ok(&server, &["label", "widget", "w1", "env=prod"]),
        "widget.example.com/w1 labeled\n"
    );
    assert_eq!(
        ok(
            &server,
            &["get", "widgets", "-l", "env=prod,tier=gold", "-o", "name"]
        ),
        "widget.example.com/w1\n"
    );
    assert_eq!(
        ok(&server, &["label", "widget", "w1", "env-"]),
        "widget.example.com/w1 unlabeled\n"
    );
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.metadata.labels}"),
        "{\"tier\":\"gold\"}"
    );

    assert_eq!(
        ok(&server, &["annotate", "widget", "w1", "owner=team-a"]),
        "widget.example.com/w1 annotated\n"
    );
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.metadata.annotations.owner}"),
        "team-a"
    );
    // Metadata changes do not bump generation.
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.metadata.generation}"),
        "1"
    );

    assert_eq!(
        ok(
            &server,
            &[
                "patch",
                "widget",
                "w1",
                "--type=merge",
                "-p",
                r#"{"spec":{"color":"yellow"}}"#
            ]
        ),
        "widget.example.com/w1 patched\n"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["widget", "w1"],
            "{.spec.color} {.metadata.generation}"
        ),
        "yellow 2"
    );
    // Same patch again: the object does not change, and kubectl notices.
    assert_eq!(
        ok(
            &server,
            &[
                "patch",
                "widget",
                "w1",
                "--type=merge",
                "-p",
                r#"{"spec":{"color":"yellow"}}"#
            ]
        ),
        "widget.example.com/w1 patched (no change)\n"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "patch",
                "widget",
                "w1",
                "--type=json",
                "-p",
                r#"[{"op":"test","path":"/spec/color","value":"yellow"},{"op":"replace","path":"/spec/color","value":"purple"}]"#
            ]
        ),
        "widget.example.com/w1 patched\n"
    );
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.spec.color}"),
        "purple"
    );

    assert_eq!(
        ok(&server, &["scale", "widget", "w1", "--replicas=3"]),
        "widget.example.com/w1 scaled\n"
    );
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.spec.replicas}"),
        "3"
    );
    let scale = ok(
        &server,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
        ],
    );
    let scale: Value =
        serde_json::from_str(&scale).unwrap_or_else(|e| panic!("scale is not JSON ({e}): {scale}"));
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["metadata"]["name"], "w1");
    assert_eq!(scale["spec"]["replicas"], 3);

    // Scaling with a precondition that no longer holds is refused.
    let err = fails(
        &server,
        &[
            "scale",
            "widget",
            "w1",
            "--current-replicas=1",
            "--replicas=5",
        ],
    );
    assert_eq!(
        err, "error: Expected replicas to be 1, was 3\n",
        "kubectl scale precondition"
    );

    // A server-side apply of the Scale (as built-ins take it): the applier owns the
    // replicas under `subresource: scale`, at the custom resource's version.
    let resp = server
        .http()
        .request(
            "PATCH",
            "/apis/example.com/v1/namespaces/default/widgets/w1/scale",
            &[
                ("fieldManager".to_string(), "scaler".to_string()),
                ("force".to_string(), "true".to_string()),
            ],
            &[(
                "Content-Type".to_string(),
                "application/apply-patch+yaml".to_string(),
            )],
            Some(b"apiVersion: autoscaling/v1\nkind: Scale\nspec:\n  replicas: 4\n".to_vec()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(
        jsonpath(&server, &["widget", "w1"], "{.spec.replicas}"),
        "4"
    );
    let entries = jsonpath(
        &server,
        &["widget", "w1"],
        "{.metadata.managedFields[?(@.manager==\"scaler\")]}",
    );
    let entry: Value = serde_json::from_str(&entries)
        .unwrap_or_else(|e| panic!("entry is not JSON ({e}): {entries}"));
    assert_eq!(
        entry,
        json!({"manager": "scaler", "operation": "Apply", "apiVersion": "example.com/v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}},
            "subresource": "scale"})
    );
}

#[test]
fn delete_and_finalizers() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    ok(&server, &["create", "-f", &data("objects/widget-w1.yaml")]);

    // kubectl delete waits (by watching the object) until it is gone.
    assert_eq!(
        ok(&server, &["delete", "widget", "w1", "--timeout=20s"]),
        "widget.example.com \"w1\" deleted\n"
    );
    assert_eq!(
        fails(&server, &["get", "widget", "w1"]),
        "Error from server (NotFound): widgets.example.com \"w1\" not found\n"
    );

    assert_eq!(
        ok(
            &server,
            &["create", "-f", &data("objects/widget-held.yaml")]
        ),
        "widget.example.com/held created\n"
    );
    assert_eq!(
        ok(&server, &["delete", "widget", "held", "--wait=false"]),
        "widget.example.com \"held\" deleted\n"
    );
    let marked = jsonpath(
        &server,
        &["widget", "held"],
        "{.metadata.deletionTimestamp} {.metadata.finalizers}",
    );
    let (timestamp, finalizers) = marked.split_once(' ').unwrap_or(("", ""));
    assert!(
        is_rfc3339_utc(timestamp),
        "deletionTimestamp should be set while the finalizer holds: {marked:?}"
    );
    assert_eq!(finalizers, "[\"example.com/hold\"]");
    // Still listed while terminating.
    assert_eq!(
        ok(&server, &["get", "widgets", "-o", "name"]),
        "widget.example.com/held\n"
    );

    assert_eq!(
        ok(
            &server,
            &[
                "patch",
                "widget",
                "held",
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#
            ]
        ),
        "widget.example.com/held patched\n"
    );
    let gone = poll(SETTLE, || {
        let out = server.kubectl(&["get", "widget", "held"]);
        (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
    });
    assert_eq!(
        gone.as_deref(),
        Some("Error from server (NotFound): widgets.example.com \"held\" not found\n")
    );
}

#[test]
fn watch_prints_added_modified_deleted() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    ok(&server, &["create", "-f", &data("objects/widget-w1.yaml")]);

    let mut watch = server.kubectl_background(&["get", "widgets", "-w", "--output-watch-events"]);
    let header = watch
        .wait_for_line(SETTLE, |l| l.starts_with("EVENT"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["EVENT", "NAME", "COLOR", "REPLICAS", "AGE"]
    );
    let first_tokens = |line: &str| -> (String, String) {
        let mut t = line.split_whitespace();
        (
            t.next().unwrap_or("").to_string(),
            t.next().unwrap_or("").to_string(),
        )
    };
    let line = watch
        .wait_for_line(SETTLE, |l| !l.starts_with("EVENT"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first_tokens(&line), ("ADDED".into(), "w1".into()), "{line}");

    ok(&server, &["create", "-f", &data("objects/widget-w2.yaml")]);
    let line = watch
        .wait_for_line(SETTLE, |_| true)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first_tokens(&line), ("ADDED".into(), "w2".into()), "{line}");
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&cells[2..4], ["blue", "2"], "{line}");

    ok(
        &server,
        &[
            "patch",
            "widget",
            "w1",
            "--type=merge",
            "-p",
            r#"{"spec":{"color":"orange"}}"#,
        ],
    );
    let line = watch
        .wait_for_line(SETTLE, |_| true)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        first_tokens(&line),
        ("MODIFIED".into(), "w1".into()),
        "{line}"
    );
    assert_eq!(line.split_whitespace().nth(2), Some("orange"), "{line}");

    ok(&server, &["delete", "widget", "w2", "--wait=false"]);
    let line = watch
        .wait_for_line(SETTLE, |_| true)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        first_tokens(&line),
        ("DELETED".into(), "w2".into()),
        "{line}"
    );

    let extra = watch.drain(Duration::from_millis(500));
    let stderr = watch.stop();
    assert!(
        extra.is_empty(),
        "unexpected extra watch output: {extra:#?}\nall lines: {:#?}\nstderr: {stderr}",
        watch.seen()
    );
}

#[test]
fn error_messages_match_kube() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    let w1 = data("objects/widget-w1.yaml");
    ok(&server, &["create", "-f", &w1]);

    assert_eq!(
        fails(&server, &["get", "widget", "nope"]),
        "Error from server (NotFound): widgets.example.com \"nope\" not found\n"
    );
    assert_eq!(
        fails(&server, &["create", "-f", &w1]),
        format!(
            "Error from server (AlreadyExists): error when creating \"{w1}\": widgets.example.com \"w1\" already exists\n"
        )
    );

    // Conflict: replace with the resourceVersion from before another change.
    let stale = ok(&server, &["get", "widget", "w1", "-o", "yaml"]);
    let stale_path = server.write_file("w1-stale.yaml", &stale);
    let stale_path = stale_path.to_string_lossy().into_owned();
    ok(&server, &["label", "widget", "w1", "touched=yes"]);
    assert_eq!(
        fails(&server, &["replace", "-f", &stale_path]),
        format!(
            "Error from server (Conflict): error when replacing \"{stale_path}\": Operation cannot be \
             fulfilled on widgets.example.com \"w1\": the object has been modified; please apply \
             your changes to the latest version and try again\n"
        )
    );

    assert_eq!(
        fails(
            &server,
            &["create", "-f", &data("objects/widget-bad-name.yaml")]
        ),
        format!("The Widget \"Bad_Name\" is invalid: {BAD_NAME_MESSAGE}\n")
    );

    let not_in_enum = server.write_file(
        "w3.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w3\nspec:\n  color: red\n  finish: shiny\n",
    );
    assert_eq!(
        fails(&server, &["create", "-f", &not_in_enum.to_string_lossy()]),
        "The Widget \"w3\" is invalid: spec.finish: Unsupported value: \"shiny\": supported \
         values: \"matte\", \"gloss\"\n"
    );
    let missing_required = server.write_file(
        "w4.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w4\nspec:\n  replicas: 1\n",
    );
    assert_eq!(
        fails(
            &server,
            &["create", "-f", &missing_required.to_string_lossy()]
        ),
        "The Widget \"w4\" is invalid: spec.color: Required value\n"
    );
    // Several causes: kubectl prints one per line (kube's cause order is not fixed). A
    // negative replicas also fails kube's scale check, whose path is the CRD's
    // specReplicasPath as written (leading dot).
    let errors = server.write_file(
        "w5.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w5\nspec:\n  replicas: -1\n  finish: shiny\n",
    );
    let err = fails(&server, &["create", "-f", &errors.to_string_lossy()]);
    let mut lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("The Widget \"w5\" is invalid: "),
        "{err}"
    );
    lines.remove(0);
    lines.sort();
    assert_eq!(
        lines,
        [
            "* .spec.replicas: Invalid value: -1: should be a non-negative integer",
            "* spec.color: Required value",
            "* spec.finish: Unsupported value: \"shiny\": supported values: \"matte\", \"gloss\"",
            "* spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ],
        "{err}"
    );

    // kubectl validates strictly by default, on the server (fieldValidation=Strict).
    let unknown_field = server.write_file(
        "w6.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w6\nspec:\n  color: red\n  bogus: 1\n",
    );
    let unknown_field = unknown_field.to_string_lossy().into_owned();
    assert_eq!(
        fails(&server, &["apply", "-f", &unknown_field]),
        format!(
            "Error from server (BadRequest): error when creating \"{unknown_field}\": Widget in \
             version \"v1\" cannot be handled as a Widget: strict decoding error: unknown field \
             \"spec.bogus\"\n"
        )
    );

    // Missing namespace: create is refused, list is simply empty (as in kube).
    assert_eq!(
        fails(&server, &["create", "-f", &w1, "-n", "nope"]),
        format!(
            "Error from server (NotFound): error when creating \"{w1}\": namespaces \"nope\" not found\n"
        )
    );
    let out = server.kubectl(&["get", "widgets", "-n", "nope"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        streams(&out),
        (
            String::new(),
            "No resources found in nope namespace.\n".to_string()
        )
    );

    assert_eq!(
        fails(&server, &["get", "sprockets"]),
        "error: the server doesn't have a resource type \"sprockets\"\n"
    );
}

#[test]
fn imperative_create_namespace() {
    let server = TestServer::start();
    // `kubectl create namespace` uses the typed client, which sends protobuf.
    assert_eq!(
        ok(&server, &["create", "namespace", "team-b"]),
        "namespace/team-b created\n"
    );
    assert_eq!(
        jsonpath(&server, &["namespace", "team-b"], "{.status.phase}"),
        "Active"
    );
}

#[test]
fn imperative_create_rbac_objects() {
    let server = TestServer::start();
    // The typed client sends these as protobuf too.
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "role",
                "reader",
                "-n",
                "default",
                "--verb=get,list",
                "--resource=configmaps",
                "--resource-name=cfg"
            ]
        ),
        "role.rbac.authorization.k8s.io/reader created\n"
    );
    assert_eq!(
        jsonpath(&server, &["role", "reader", "-n", "default"], "{.rules[0].verbs} {.rules[0].resources} {.rules[0].resourceNames} {.rules[0].apiGroups}"),
        r#"["get","list"] ["configmaps"] ["cfg"] [""]"#
    );
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "clusterrole",
                "agg",
                "--aggregation-rule=team=a,tier=web"
            ]
        ),
        "clusterrole.rbac.authorization.k8s.io/agg created\n"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["clusterrole", "agg"],
            "{.aggregationRule.clusterRoleSelectors[0].matchLabels}"
        ),
        r#"{"team":"a","tier":"web"}"#
    );
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "clusterrole",
                "urls",
                "--verb=get",
                "--non-resource-url=/logs/*"
            ]
        ),
        "clusterrole.rbac.authorization.k8s.io/urls created\n"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["clusterrole", "urls"],
            "{.rules[0].nonResourceURLs}"
        ),
        r#"["/logs/*"]"#
    );
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "rolebinding",
                "read",
                "-n",
                "default",
                "--role=reader",
                "--user=alice",
                "--serviceaccount=default:bot"
            ]
        ),
        "rolebinding.rbac.authorization.k8s.io/read created\n"
    );
    assert_eq!(
        jsonpath(&server, &["rolebinding", "read", "-n", "default"], "{.roleRef.kind}/{.roleRef.name} {.subjects[0].kind}:{.subjects[0].name} {.subjects[1].kind}:{.subjects[1].namespace}/{.subjects[1].name}"),
        "Role/reader User:alice ServiceAccount:default/bot"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "clusterrolebinding",
                "all",
                "--clusterrole=urls",
                "--group=devs"
            ]
        ),
        "clusterrolebinding.rbac.authorization.k8s.io/all created\n"
    );
    assert_eq!(
        jsonpath(
            &server,
            &["clusterrolebinding", "all"],
            "{.roleRef.apiGroup} {.subjects[0].kind}:{.subjects[0].name}"
        ),
        "rbac.authorization.k8s.io Group:devs"
    );
}

#[test]
fn deleting_a_namespace_deletes_its_objects() {
    let server = TestServer::start();
    install_crd(&server, "crds/widgets.yaml", "widgets.example.com");
    let w1 = data("objects/widget-w1.yaml");

    let namespace = server.write_file(
        "team-a.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team-a\n",
    );
    assert_eq!(
        ok(&server, &["create", "-f", &namespace.to_string_lossy()]),
        "namespace/team-a created\n"
    );
    assert_eq!(
        jsonpath(&server, &["namespace", "team-a"], "{.status.phase}"),
        "Active"
    );
    assert_eq!(
        ok(&server, &["create", "-f", &w1, "-n", "team-a"]),
        "widget.example.com/w1 created\n"
    );
    ok(&server, &["create", "-f", &w1]);

    // kubectl waits until the namespace is really gone.
    assert_eq!(
        ok(&server, &["delete", "namespace", "team-a", "--timeout=30s"]),
        "namespace \"team-a\" deleted\n"
    );
    assert_eq!(
        fails(&server, &["get", "namespace", "team-a"]),
        "Error from server (NotFound): namespaces \"team-a\" not found\n"
    );
    // The object is gone: the API answers NotFound for it...
    let resp = server
        .http()
        .get("/apis/example.com/v1/namespaces/team-a/widgets/w1");
    assert_eq!(resp.status, 404);
    assert_eq!(
        resp.json()
            .and_then(|j| j["message"].as_str().map(String::from)),
        Some("widgets.example.com \"w1\" not found".to_string())
    );
    // ...and kubectl, seeing a NotFound, checks the namespace and reports that instead.
    assert_eq!(
        fails(&server, &["get", "widget", "w1", "-n", "team-a"]),
        "Error from server (NotFound): namespaces \"team-a\" not found\n"
    );
    // Objects of other namespaces are untouched.
    assert_eq!(
        ok(&server, &["get", "widgets", "-o", "name"]),
        "widget.example.com/w1\n"
    );
    // Re-creating the namespace does not bring the objects back.
    ok(&server, &["create", "-f", &namespace.to_string_lossy()]);
    let out = server.kubectl(&["get", "widgets", "-n", "team-a"]);
    assert_eq!(
        streams(&out),
        (
            String::new(),
            "No resources found in team-a namespace.\n".to_string()
        ),
        "{}",
        describe_output(&out)
    );
}

#[test]
fn deleting_a_crd_deletes_its_objects() {
    let server = TestServer::start();
    install_crd(&server, "crds/gadgets.yaml", "gadgets.example.com");
    ok(&server, &["create", "-f", &data("objects/gadget-g1.yaml")]);
    assert_eq!(
        ok(&server, &["get", "gadgets", "-o", "name"]),
        "gadget.example.com/g1\n"
    );

    assert_eq!(
        ok(
            &server,
            &["delete", "crd", "gadgets.example.com", "--timeout=30s"]
        ),
        "customresourcedefinition.apiextensions.k8s.io \"gadgets.example.com\" deleted\n"
    );
    // `api-resources` refreshes kubectl's discovery cache (it still lists gadgets).
    let resources = ok(&server, &["api-resources", "--api-group=example.com"]);
    assert!(
        !resources.contains("gadgets"),
        "discovery still lists gadgets after the CRD was deleted:\n{resources}"
    );
    assert_eq!(
        fails(&server, &["get", "gadgets"]),
        "error: the server doesn't have a resource type \"gadgets\"\n"
    );
    let list = server
        .http()
        .get("/apis/example.com/v1/namespaces/default/gadgets");
    assert_eq!(list.status, 404, "{}", list.text());

    install_crd(&server, "crds/gadgets.yaml", "gadgets.example.com");
    let out = server.kubectl(&["get", "gadgets"]);
    assert_eq!(
        streams(&out),
        (
            String::new(),
            "No resources found in default namespace.\n".to_string()
        ),
        "objects must not survive their CRD\n{}",
        describe_output(&out)
    );
}

#[test]
fn load_dir_applies_built_in_kinds_with_their_defaults() {
    let dir = std::env::temp_dir().join(format!(
        "crd-apiserver-load-builtins-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("fixtures.yaml"),
        r#"apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: team}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: nginx}]}
"#,
    )
    .expect("fixtures");
    let server = TestServer::start_with(&["--load", dir.to_str().expect("UTF-8 path")]);
    assert_eq!(
        jsonpath(
            &server,
            &["-n", "team", "configmap", "settings"],
            "{.data.mode}"
        ),
        "fast"
    );
    // Loaded through the write pipeline: kube's defaults are there.
    assert_eq!(
        jsonpath(
            &server,
            &["-n", "team", "deployment", "web"],
            "{.spec.replicas} {.spec.strategy.type} {.spec.template.spec.containers[0].imagePullPolicy}"
        ),
        "1 RollingUpdate Always"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn load_dir_serves_crds_when_ready() {
    let crds = data("crds");
    let server = TestServer::start_with(&["--load", &crds]);
    // No waiting: --load means the CRDs are served once the ready line is printed.
    let out = server.kubectl(&["get", "widgets,gadgets"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        streams(&out),
        (
            String::new(),
            "No resources found in default namespace.\n".to_string()
        )
    );
    let names = ok(&server, &["get", "crd", "-o", "name"]);
    assert_eq!(
        names,
        "customresourcedefinition.apiextensions.k8s.io/gadgets.example.com\n\
         customresourcedefinition.apiextensions.k8s.io/instances.kudo.example.com\n\
         customresourcedefinition.apiextensions.k8s.io/widgets.example.com\n"
    );
    for crd in ["gadgets.example.com", "widgets.example.com"] {
        assert_eq!(
            jsonpath(
                &server,
                &["crd", crd],
                "{.status.conditions[?(@.type==\"Established\")].status}"
            ),
            "True",
            "{crd} should be Established at start"
        );
    }
}
