//! `--runtime-config` as kube-apiserver v1.36 honours it: the beta and alpha versions it
//! turns on are served with kube's discovery (`testdata/kube-v1.36/runtime-config/`,
//! recorded from a real kube-apiserver started with `api/all=true`), their objects are
//! stored in kube's storage version and read back in any version served, and what it
//! turns off is gone from routes, discovery and APIServices.

mod common;

use common::{testdata_dir, TestServer};
use serde_json::{json, Value};

const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";

/// Every recorded off-by-default `APIResourceList`: `(file, path served)`.
fn recorded_documents() -> Vec<(String, String)> {
    let dir = testdata_dir().join("kube-v1.36/runtime-config/discovery");
    let mut out: Vec<(String, String)> = std::fs::read_dir(&dir)
        .expect("testdata")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter_map(|name| {
            let gv = name.strip_prefix("apis_")?.strip_suffix(".json")?;
            let (group, version) = gv.rsplit_once('_')?;
            let path = format!("/apis/{group}/{version}");
            Some((name, path))
        })
        .collect();
    out.sort();
    out
}

fn recorded(name: &str) -> Value {
    common::testdata_json(&format!("kube-v1.36/runtime-config/discovery/{name}"))
}

fn aggregated_versions(server: &TestServer, group: &str) -> Vec<String> {
    let headers = [("Accept".to_string(), AGGREGATED.to_string())];
    let resp = server
        .http()
        .request("GET", "/apis", &[], &headers, None)
        .expect("request");
    let doc = resp.json().expect("json");
    doc["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|g| g["metadata"]["name"] == group)
        .map(|g| {
            g["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .map(|v| v["version"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn api_all_serves_every_version_kube_serves_with_kubes_discovery() {
    let server = TestServer::start_with(&["--runtime-config=api/all=true"]);
    let http = server.http();
    let docs = recorded_documents();
    assert_eq!(docs.len(), 10, "{docs:?}");
    for (file, path) in &docs {
        let resp = http.get(path);
        assert_eq!(resp.status, 200, "{path}: {}", resp.text());
        assert_eq!(resp.json().expect("json"), recorded(file), "{path}");
    }
    assert_eq!(
        aggregated_versions(&server, "resource.k8s.io"),
        ["v1", "v1beta2", "v1beta1", "v1alpha3"]
    );
    assert_eq!(
        aggregated_versions(&server, "internal.apiserver.k8s.io"),
        ["v1alpha1"]
    );
    // The legacy group: every version listed, the GA one preferred.
    let group = http.get("/apis/networking.k8s.io").json().expect("json");
    assert_eq!(
        group["versions"],
        json!([
            {"groupVersion": "networking.k8s.io/v1", "version": "v1"},
            {"groupVersion": "networking.k8s.io/v1beta1", "version": "v1beta1"},
        ])
    );
    assert_eq!(group["preferredVersion"]["version"], "v1");
    // kubectl sees them.
    let out = server.kubectl(&["api-versions"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for gv in [
        "coordination.k8s.io/v1alpha2",
        "networking.k8s.io/v1beta1",
        "resource.k8s.io/v1beta2",
        "storage.k8s.io/v1beta1",
    ] {
        assert!(text.lines().any(|l| l == gv), "{gv} missing:\n{text}");
    }
}

#[test]
fn by_default_the_beta_versions_are_not_served() {
    let server = TestServer::start();
    let http = server.http();
    for (_, path) in recorded_documents() {
        assert_eq!(http.get(&path).status, 404, "{path}");
    }
    let resp = http.get("/apis/networking.k8s.io/v1beta1/servicecidrs");
    assert_eq!(resp.status, 404);
    assert_eq!(aggregated_versions(&server, "networking.k8s.io"), ["v1"]);
}

#[test]
fn a_beta_version_shares_the_ga_versions_objects() {
    let server = TestServer::start_with(&["--runtime-config=networking.k8s.io/v1beta1=true"]);
    let http = server.http();
    let cidr = json!({
        "apiVersion": "networking.k8s.io/v1beta1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "extra"},
        "spec": {"cidrs": ["10.200.0.0/24"]},
    });
    let resp = http.send_json(
        "POST",
        "/apis/networking.k8s.io/v1beta1/servicecidrs",
        &cidr,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json().expect("json");
    assert_eq!(created["apiVersion"], "networking.k8s.io/v1beta1");
    assert_eq!(created["spec"]["cidrs"], json!(["10.200.0.0/24"]));
    // The same object through v1.
    let v1 = http
        .get("/apis/networking.k8s.io/v1/servicecidrs/extra")
        .json()
        .expect("json");
    assert_eq!(v1["apiVersion"], "networking.k8s.io/v1");
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(v1["spec"], created["spec"]);
    // Objects written through v1 (the server's own `kubernetes` ServiceCIDR) list
    // through v1beta1 in v1beta1.
    let list = http
        .get("/apis/networking.k8s.io/v1beta1/servicecidrs")
        .json()
        .expect("json");
    assert_eq!(list["apiVersion"], "networking.k8s.io/v1beta1");
    let items = list["items"].as_array().expect("items");
    assert!(items.len() >= 2, "{list}");
    for item in items {
        assert_eq!(item["apiVersion"], "networking.k8s.io/v1beta1", "{item}");
    }
    // A watch through v1beta1 speaks v1beta1.
    let resp = http.watch_for(
        "/apis/networking.k8s.io/v1beta1/servicecidrs",
        1,
        &[("fieldSelector", "metadata.name=extra")],
    );
    let first = resp.text().lines().next().map(str::to_string);
    let event: Value = serde_json::from_str(&first.expect("an event")).expect("json");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["apiVersion"], "networking.k8s.io/v1beta1");
    // kubectl addresses the beta version by its full name.
    let out = server.kubectl(&[
        "get",
        "servicecidrs.v1beta1.networking.k8s.io",
        "extra",
        "-o",
        "jsonpath={.apiVersion}",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "networking.k8s.io/v1beta1"
    );
    // The APIService of the version turned on, with kube's priorities.
    let svc = http
        .get("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.networking.k8s.io")
        .json()
        .expect("json");
    assert_eq!(svc["spec"]["groupPriorityMinimum"], 17200, "{svc}");
    assert_eq!(svc["spec"]["versionPriority"], 9, "{svc}");
    // Only what was turned on.
    let resp = http.get("/apis/storage.k8s.io/v1beta1/volumeattributesclasses");
    assert_eq!(resp.status, 404);
}

#[test]
fn dra_v1beta1_converts_to_and_from_the_stored_v1() {
    let server = TestServer::start_with(&["--runtime-config=resource.k8s.io/v1beta1=true"]);
    let http = server.http();
    let claim = json!({
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"devices": {"requests": [{
            "name": "one",
            "deviceClassName": "gpu.example.com",
            "allocationMode": "ExactCount",
            "count": 2,
        }]}},
    });
    let resp = http.send_json(
        "POST",
        "/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims",
        &claim,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let created = resp.json().expect("json");
    assert_eq!(created["apiVersion"], "resource.k8s.io/v1beta1");
    assert_eq!(
        created["spec"]["devices"]["requests"][0]["deviceClassName"],
        "gpu.example.com"
    );
    let v1 = http
        .get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/gpu")
        .json()
        .expect("json");
    assert_eq!(v1["apiVersion"], "resource.k8s.io/v1");
    assert_eq!(
        v1["spec"]["devices"]["requests"][0],
        json!({"name": "one", "exactly": {
            "deviceClassName": "gpu.example.com",
            "allocationMode": "ExactCount",
            "count": 2,
        }})
    );
    // Written through v1, read through v1beta1.
    let slice = json!({
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "nodeName": "node-a",
            "pool": {"name": "node-a", "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"model": {"string": "x100"}}}],
        },
    });
    let resp = http.send_json("POST", "/apis/resource.k8s.io/v1/resourceslices", &slice);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let beta = http
        .get("/apis/resource.k8s.io/v1beta1/resourceslices/node-a-gpus")
        .json()
        .expect("json");
    assert_eq!(beta["apiVersion"], "resource.k8s.io/v1beta1");
    assert_eq!(
        beta["spec"]["devices"][0],
        json!({"name": "gpu-0", "basic": {"attributes": {"model": {"string": "x100"}}}})
    );
}

#[test]
fn a_beta_only_kind_is_stored_in_its_storage_version() {
    let server = TestServer::start_with(&[
        "--runtime-config=coordination.k8s.io/v1alpha2=true,coordination.k8s.io/v1beta1=true",
    ]);
    let http = server.http();
    let candidate = json!({
        "apiVersion": "coordination.k8s.io/v1alpha2",
        "kind": "LeaseCandidate",
        "metadata": {"name": "c1", "namespace": "default"},
        "spec": {
            "leaseName": "controller",
            "binaryVersion": "1.36.0",
            "strategy": "OldestEmulationVersion",
        },
    });
    let resp = http.send_json(
        "POST",
        "/apis/coordination.k8s.io/v1alpha2/namespaces/default/leasecandidates",
        &candidate,
    );
    assert_eq!(resp.status, 201, "{}", resp.text());
    let beta = http
        .get("/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates/c1")
        .json()
        .expect("json");
    assert_eq!(beta["apiVersion"], "coordination.k8s.io/v1beta1");
    assert_eq!(beta["spec"]["leaseName"], "controller");
}

#[test]
fn a_resource_or_version_turned_off_is_gone() {
    let server =
        TestServer::start_with(&["--runtime-config=apps/v1/deployments=false,batch/v1=false"]);
    let http = server.http();
    assert_eq!(http.get("/apis/apps/v1/deployments").status, 404);
    assert_eq!(http.get("/apis/apps/v1/replicasets").status, 200);
    let apps = http.get("/apis/apps/v1").json().expect("json");
    let names: Vec<&str> = apps["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with("deployments")),
        "{names:?}"
    );
    assert!(names.contains(&"replicasets"));
    assert_eq!(http.get("/apis/batch/v1").status, 404);
    assert_eq!(http.get("/apis/batch/v1/jobs").status, 404);
    assert!(aggregated_versions(&server, "batch").is_empty());
    let resp = http.get("/apis/apiregistration.k8s.io/v1/apiservices/v1.batch");
    assert_eq!(resp.status, 404, "{}", resp.text());
}
