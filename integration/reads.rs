//! Reads answered from the served-bytes cache (`rest::served_cache`): a JSON GET or
//! list of a custom resource serves the bytes made at the last read of the same stored
//! revision under the same CRD revision. What a client must never notice: the bytes
//! equal what decoding, pruning, defaulting and encoding anew give (compared with the
//! YAML and Table forms, which never use the cache), writes and CRD schema changes
//! show at once, lists page as before.

mod common;

use common::{json_accept, TestServer};
use serde_json::{json, Value};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn crd(default_color: Option<&str>) -> Value {
    let mut color = json!({"type": "string"});
    if let Some(d) = default_color {
        color["default"] = json!(d);
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.reads.example.com"},
        "spec": {"group": "reads.example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"}, "color": color}}}}}}]}})
}

const GADGETS: &str = "/apis/reads.example.com/v1/namespaces/default/gadgets";

#[test]
fn cached_reads_equal_fresh_ones_and_follow_writes_and_schema_changes() {
    let server = TestServer::start();
    let http = server.http();
    let r = http.send_json("POST", CRDS, &crd(None));
    assert_eq!(r.status, 201, "{}", r.text());
    let ready = common::poll(std::time::Duration::from_secs(10), || {
        (http.get(GADGETS).status == 200).then_some(())
    });
    assert!(ready.is_some());
    for i in 0..7 {
        let g = json!({"apiVersion": "reads.example.com/v1", "kind": "Gadget",
            "metadata": {"name": format!("g{i}")}, "spec": {"size": i, "unknown": "pruned"}});
        let r = http.send_json("POST", GADGETS, &g);
        assert_eq!(r.status, 201, "{}", r.text());
    }
    let get = |path: &str| http.get(path);
    let yaml = |path: &str| -> Value {
        let mut h = json_accept();
        h.retain(|(k, _)| k != "Accept");
        h.push(("Accept".into(), "application/yaml".into()));
        let r = http.request("GET", path, &[], &h, None).expect("GET");
        serde_norway::from_slice(&r.body).expect("YAML")
    };
    // The first read makes the bytes, the second serves them: the same, and what the
    // uncached YAML form holds.
    let first = get(&format!("{GADGETS}/g1"));
    let second = get(&format!("{GADGETS}/g1"));
    assert_eq!(first.status, 200);
    assert_eq!(first.body, second.body);
    assert_eq!(
        first.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(first.json().expect("JSON"), yaml(&format!("{GADGETS}/g1")));
    assert_eq!(first.json().expect("JSON")["spec"], json!({"size": 1}));
    // A list of cached items is the list the uncached form gives.
    let list = get(GADGETS).json().expect("list");
    assert_eq!(list, yaml(GADGETS));
    assert_eq!(list["kind"], "GadgetList");
    assert_eq!(list["metadata"]["continue"], "");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(7));
    assert_eq!(list["items"][1], first.json().expect("JSON"));
    // Pages: limit, continue and remainingItemCount as before.
    let page = http
        .get(&format!("{GADGETS}?limit=3"))
        .json()
        .expect("page");
    assert_eq!(page["items"].as_array().map(Vec::len), Some(3));
    assert_eq!(page["metadata"]["remainingItemCount"], 4);
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    let rest = http
        .get(&format!(
            "{GADGETS}?limit=10&continue={}",
            common::encode_query_part(&token)
        ))
        .json()
        .expect("page 2");
    let names: Vec<&str> = page["items"]
        .as_array()
        .into_iter()
        .chain(rest["items"].as_array())
        .flatten()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["g0", "g1", "g2", "g3", "g4", "g5", "g6"]);
    assert!(rest["metadata"].get("remainingItemCount").is_none());
    // A write shows at once.
    let r = http.merge_patch(&format!("{GADGETS}/g1"), &json!({"spec": {"size": 100}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        get(&format!("{GADGETS}/g1")).json().expect("JSON")["spec"]["size"],
        100
    );
    assert_eq!(
        get(GADGETS).json().expect("list")["items"][1]["spec"]["size"],
        100
    );
    // A schema change (a default) shows at once on objects read before it.
    let mut current = http
        .get(&format!("{CRDS}/gadgets.reads.example.com"))
        .json()
        .expect("CRD");
    current["spec"] = crd(Some("blue"))["spec"].clone();
    let r = http.send_json(
        "PUT",
        &format!("{CRDS}/gadgets.reads.example.com"),
        &current,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let defaulted = common::poll(std::time::Duration::from_secs(10), || {
        let g = get(&format!("{GADGETS}/g2")).json()?;
        (g["spec"]["color"] == "blue").then_some(g)
    });
    let g2 = defaulted.expect("the new default on a read after the CRD change");
    assert_eq!(g2, yaml(&format!("{GADGETS}/g2")));
    assert!(get(GADGETS).json().expect("list")["items"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|o| o["spec"]["color"] == "blue"));
    // A deleted object is gone.
    let r = http
        .request(
            "DELETE",
            &format!("{GADGETS}/g3"),
            &[],
            &json_accept(),
            None,
        )
        .expect("DELETE");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(get(&format!("{GADGETS}/g3")).status, 404);
}

#[test]
fn unsupported_field_labels_are_400_before_anything_is_listed() {
    let server = TestServer::start_with(&[
        "--load",
        &common::testdata_dir().join("crds").display().to_string(),
    ]);
    let http = server.http();
    // Nothing to look at: kube still refuses the label when it decodes the request.
    let cases = [
        (
            "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=spec.bogus%3D1",
            "field label not supported: spec.bogus",
        ),
        (
            "/api/v1/namespaces/default/configmaps?fieldSelector=bogus%3D1",
            "\"bogus\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
        (
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&fieldSelector=bogus%3D1",
            "\"bogus\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
    ];
    for (path, message) in cases {
        let r = http.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.text());
        assert_eq!(r.json().expect("status")["message"], message, "{path}");
    }
    // A cluster-scoped custom resource has no `metadata.namespace` label (kube's CR
    // label conversion).
    let dials = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "dials.reads.example.com"},
        "spec": {"group": "reads.example.com", "scope": "Cluster",
            "names": {"plural": "dials", "singular": "dial", "kind": "Dial"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    assert_eq!(http.send_json("POST", CRDS, &dials).status, 201);
    let served = common::poll(std::time::Duration::from_secs(10), || {
        (http.get("/apis/reads.example.com/v1/dials").status == 200).then_some(())
    });
    assert!(served.is_some());
    let r = http.get("/apis/reads.example.com/v1/dials?fieldSelector=metadata.namespace%3Dx");
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().expect("status")["message"],
        "field label not supported: metadata.namespace"
    );
    assert_eq!(
        http.get("/apis/reads.example.com/v1/dials?fieldSelector=metadata.name%3Dx")
            .status,
        200
    );
    // Supported labels list as ever.
    for path in [
        "/apis/example.com/v1/namespaces/default/widgets?fieldSelector=spec.color%3Dred",
        "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dx",
        "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1",
    ] {
        assert_eq!(http.get(path).status, 200, "{path}");
    }
}
