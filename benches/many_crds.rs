//! Many large CRDs (issue 27): what installing hundreds of CRDs costs the server, the
//! way a user installs them. Per backend (`MANY_BACKEND=memory|etcd|both`, default
//! both), on a fresh release server process:
//!
//! 1. `MANY_LARGE` (default 300) large CRDs, generated here from kube's own built-in
//!    kinds (`crates/apimachinery/src/openapi_builtin.json`): each CRD's schema is a
//!    whole built-in kind with its references inlined and kube's descriptions kept,
//!    plus a CEL rule, ten CRDs per group. Applied one by one as `kubectl apply
//!    --server-side` does (an apply patch per CRD, `fieldManager=kubectl`), then waited
//!    for as `kubectl wait --for condition=Established crd --all` does (a list pinned
//!    by `fieldSelector=metadata.name=` per CRD until it reports Established). Then
//!    the reads users make next: a CRD get and a list by name, `/apis`, `/openapi/v3`
//!    and the largest group's document (first and second time), one object per CRD.
//!    The server's RSS and CPU seconds after all that, against the CRDs' JSON size.
//!    On etcd, a restart: a new server over the same etcd, timed until it serves
//!    every CRD.
//! 2. `MANY_SMALL` (default 1000) small CRDs (10 fields each), applied and waited
//!    for the same way, and the CRD get / list-by-name latency with them installed.
//!
//! Every step that repeats per CRD is printed for the first 30 CRDs and the last 30,
//! with their ratio (growth: 1.0 when a CRD costs the same whatever came before),
//! next to the targets.
//!
//! Run: `cargo bench --bench many_crds` (`MANY_LARGE=60 MANY_SMALL=100
//! MANY_BACKEND=memory` for a quick pass). Needs `etcd` for the etcd backend
//! (`/usr/bin/etcd`, Debian's `etcd-server`, or `ETCD_BIN`).

#[path = "../integration/common/mod.rs"]
mod common;

use common::{Etcd, Http, HttpResponse, TestServer};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const DEFINITIONS: &str = include_str!("../crates/apimachinery/src/openapi_builtin.json");
/// CRDs per group, as an operator ships several kinds in one group.
const PER_GROUP: usize = 10;
/// The block compared at the start and at the end of a run.
const BLOCK: usize = 30;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

// ---- the CRD sets ----------------------------------------------------------------

/// A built-in definition as a structural CRD schema: references inlined (ObjectMeta,
/// and a definition met again inside itself, such as JSONSchemaProps, left
/// free-form), IntOrString as `x-kubernetes-int-or-string`, free-form objects
/// preserved. `path`: the definitions being inlined around `schema`.
fn structural<'a>(defs: &'a Map<String, Value>, schema: &Value, path: &mut Vec<&'a str>) -> Value {
    let free = || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let with_description = |mut out: Value| {
        if let Some(d) = schema.get("description") {
            out["description"] = d.clone();
        }
        out
    };
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or_default();
        let out = match defs.get_key_value(name) {
            Some((name, def))
                if name != "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                    && !path.contains(&name.as_str()) =>
            {
                path.push(name);
                let out = structural(defs, def, path);
                path.pop();
                out
            }
            _ => free(),
        };
        return with_description(out);
    }
    if schema.get("format").and_then(Value::as_str) == Some("int-or-string") {
        return with_description(json!({"x-kubernetes-int-or-string": true}));
    }
    if schema.get("type").is_none() {
        return with_description(free());
    }
    let mut out = Map::new();
    for key in [
        "type",
        "description",
        "enum",
        "required",
        "x-kubernetes-map-type",
    ] {
        if let Some(v) = schema.get(key) {
            out.insert(key.to_string(), v.clone());
        }
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str) {
        if ["int32", "int64", "date-time", "byte", "double"].contains(&format) {
            out.insert("format".into(), json!(format));
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        let props: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), structural(defs, v, path)))
            .collect();
        out.insert("properties".into(), Value::Object(props));
    }
    if let Some(items) = schema.get("items") {
        out.insert("items".into(), structural(defs, items, path));
    }
    if let Some(additional) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        out.insert(
            "additionalProperties".into(),
            structural(defs, additional, path),
        );
    }
    let list_type = schema.get("x-kubernetes-list-type").and_then(Value::as_str);
    if let Some(list_type @ ("atomic" | "set")) = list_type {
        let scalar_items = matches!(
            out.get("items")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str),
            Some("string" | "integer")
        );
        let array = out.get("type").and_then(Value::as_str) == Some("array");
        if array && (list_type == "atomic" || scalar_items) {
            out.insert("x-kubernetes-list-type".into(), json!(list_type));
        }
    }
    Value::Object(out)
}

/// One CRD of the set, `index` within it.
struct Generated {
    name: String,
    group: String,
    plural: String,
    kind: String,
    crd: Value,
}

fn crd(index: usize, kind: String, mut root: Value, status: bool) -> Generated {
    let group = format!("g{}.many.example.com", index / PER_GROUP);
    let plural = format!("{}s", kind.to_lowercase());
    let name = format!("{plural}.{group}");
    root["x-kubernetes-validations"] =
        json!([{"rule": "self.metadata.name.size() <= 63", "message": "name too long"}]);
    let mut version = json!({"name": "v1", "served": true, "storage": true,
                             "schema": {"openAPIV3Schema": root}});
    if status {
        version["subresources"] = json!({"status": {}});
    }
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": format!("{kind}List"), "plural": plural,
                      "singular": kind.to_lowercase()},
            "scope": "Namespaced",
            "versions": [version],
        },
    });
    Generated {
        name,
        group,
        plural,
        kind,
        crd,
    }
}

/// `n` large CRDs: kube's built-in kinds (every definition with a group-version-kind
/// outside apimachinery's own), each inlined whole, with a numbered kind and a
/// description of its own so that no two schemas are the same. Every third CRD is one
/// of the kinds whose schema reaches 100 KB (those carrying a pod spec), the others
/// cycle through the rest: about a third of the set at 100 KB or more, as in the
/// set the issue was measured with.
fn large_crds(n: usize) -> Vec<Generated> {
    let defs: Map<String, Value> = serde_json::from_str(DEFINITIONS).expect("built-in definitions");
    type Kinds<'a> = Vec<(&'a String, Value)>;
    let (big, rest): (Kinds, Kinds) = defs
        .iter()
        .filter(|(name, def)| {
            def.get("x-kubernetes-group-version-kind").is_some()
                && !name.starts_with("io.k8s.apimachinery.")
        })
        .map(|(name, def)| (name, structural(&defs, def, &mut vec![name.as_str()])))
        .partition(|(_, schema)| serde_json::to_vec(schema).map_or(0, |b| b.len()) >= 100_000);
    (0..n)
        .map(|i| {
            let (name, schema) = match i % 3 {
                0 => &big[(i / 3) % big.len()],
                _ => &rest[(i - i / 3 - 1) % rest.len()],
            };
            let short = name.rsplit('.').next().unwrap_or("Kind");
            let mut root = schema.clone();
            root["properties"]["metadata"] = json!({"type": "object"});
            root["properties"]["apiVersion"] = json!({"type": "string"});
            root["properties"]["kind"] = json!({"type": "string"});
            // An object with only a name must be creatable: one object per CRD.
            if let Some(root) = root.as_object_mut() {
                root.remove("required");
            }
            let description = root["description"].as_str().unwrap_or_default().to_string();
            root["description"] = json!(format!("CRD {i} of the set. {description}"));
            let status = root["properties"].get("status").is_some();
            crd(i, format!("{short}{i}"), root, status)
        })
        .collect()
}

/// `n` small CRDs: ten fields each, one with a default and an enum.
fn small_crds(n: usize) -> Vec<Generated> {
    (0..n)
        .map(|i| {
            let mut fields = Map::new();
            for f in 0..8 {
                fields.insert(format!("field{f}"), json!({"type": "string", "maxLength": 64}));
            }
            fields.insert("replicas".into(), json!({"type": "integer", "minimum": 0}));
            fields.insert(
                "tier".into(),
                json!({"type": "string", "enum": ["gold", "silver", "bronze"], "default": "bronze"}),
            );
            let root = json!({"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": fields}}});
            crd(i, format!("Small{i}"), root, false)
        })
        .collect()
}

// ---- the steps -------------------------------------------------------------------

fn apply(http: &Http, c: &Generated) -> Duration {
    let body = serde_json::to_vec(&c.crd).expect("encode");
    let headers = vec![
        ("Accept".to_string(), "application/json".to_string()),
        (
            "Content-Type".to_string(),
            "application/apply-patch+yaml".to_string(),
        ),
    ];
    let query = vec![("fieldManager".to_string(), "kubectl".to_string())];
    let started = Instant::now();
    let response = http
        .request(
            "PATCH",
            &format!("{CRDS}/{}", c.name),
            &query,
            &headers,
            Some(body),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let took = started.elapsed();
    assert!(
        response.status == 201 || response.status == 200,
        "apply {}: {} {}",
        c.name,
        response.status,
        response.text()
    );
    took
}

fn list_by_name(http: &Http, name: &str) -> (Duration, HttpResponse) {
    let query = vec![("fieldSelector".to_string(), format!("metadata.name={name}"))];
    let started = Instant::now();
    let response = http
        .request("GET", CRDS, &query, &common::json_accept(), None)
        .unwrap_or_else(|e| panic!("{e}"));
    (started.elapsed(), response)
}

fn established(list: &HttpResponse) -> bool {
    list.json()
        .and_then(|l| {
            let conditions = l.pointer("/items/0/status/conditions")?.as_array()?.clone();
            Some(
                conditions
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True"),
            )
        })
        .unwrap_or(false)
}

/// `kubectl wait --for condition=Established crd --all`: per CRD, its list by name
/// until Established. The time of each CRD's first list.
fn wait_established(http: &Http, set: &[Generated]) -> Vec<Duration> {
    let deadline = Instant::now() + Duration::from_secs(300);
    set.iter()
        .map(|c| {
            let (first, mut response) = list_by_name(http, &c.name);
            while !established(&response) {
                assert!(Instant::now() < deadline, "{} never Established", c.name);
                std::thread::sleep(Duration::from_millis(5));
                response = list_by_name(http, &c.name).1;
            }
            first
        })
        .collect()
}

fn timed(http: &Http, path: &str) -> (Duration, HttpResponse) {
    let started = Instant::now();
    let response = http.get(path);
    let took = started.elapsed();
    assert_eq!(response.status, 200, "GET {path}: {}", response.text());
    (took, response)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn sum(ds: &[Duration]) -> Duration {
    ds.iter().sum()
}

fn median(ds: &[Duration]) -> Duration {
    let mut sorted = ds.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// The first and last [`BLOCK`] of a per-CRD series: their sums and the ratio.
fn growth(ds: &[Duration]) -> (Duration, Duration, f64) {
    let n = BLOCK.min(ds.len());
    let first = sum(&ds[..n]);
    let last = sum(&ds[ds.len() - n..]);
    let ratio = last.as_secs_f64() / first.as_secs_f64().max(1e-9);
    (first, last, ratio)
}

/// Prints the rows of one run: what, the measured value, the target and its verdict.
struct Report;

impl Report {
    fn row(&self, what: impl Into<String>, value: impl Into<String>, target: impl Into<String>) {
        let (what, value, target) = (what.into(), value.into(), target.into());
        println!("  {what:<52} {value:>28}   {target}");
    }

    fn per_crd(&self, what: &str, ds: &[Duration], target: &str) {
        let (first, last, ratio) = growth(ds);
        self.row(
            format!("{what}: first {BLOCK} / last {BLOCK}"),
            format!("{:.0} / {:.0} ms, ×{ratio:.2}", ms(first), ms(last)),
            target,
        );
    }
}

/// Applies `set` one by one, then waits for every CRD to be Established, as kubectl
/// does; reports both per CRD and in all. The server's RSS once all are applied.
fn apply_and_wait(server: &TestServer, http: &Http, set: &[Generated]) -> f64 {
    let started = Instant::now();
    let applies: Vec<Duration> = set.iter().map(|c| apply(http, c)).collect();
    let applied = started.elapsed();
    let rss_applied = server.rss_mib();
    let waits = wait_established(http, set);
    let usable = started.elapsed();
    Report.per_crd("apply", &applies, "growth ≤ noise");
    Report.per_crd("wait (list by name)", &waits, "growth ≤ noise");
    Report.row(
        "applied, then all Established",
        format!(
            "{:.2} s + {:.2} s = {:.2} s",
            applied.as_secs_f64(),
            (usable - applied).as_secs_f64(),
            usable.as_secs_f64()
        ),
        format!("< 10 s: {}", verdict(usable < Duration::from_secs(10))),
    );
    rss_applied
}

/// A get of the CRD `last` and a list pinned to its name, 20 times each: the medians.
fn lookups(http: &Http, last: &Generated, what: &str) {
    let gets: Vec<Duration> = (0..20)
        .map(|_| timed(http, &format!("{CRDS}/{}", last.name)).0)
        .collect();
    let by_name: Vec<Duration> = (0..20).map(|_| list_by_name(http, &last.name).0).collect();
    Report.row(
        what,
        format!(
            "{:.2} ms, {:.2} ms",
            ms(median(&gets)),
            ms(median(&by_name))
        ),
        format!(
            "< 5 ms: {}",
            verdict(median(&gets).max(median(&by_name)) < Duration::from_millis(5))
        ),
    );
}

fn server_on(backend: &str) -> (TestServer, Option<Etcd>) {
    match backend {
        "etcd" => {
            let etcd = Etcd::start();
            etcd.wait_ready();
            let server = TestServer::start_embedded(&["--etcd-servers", &etcd.url()]);
            (server, Some(etcd))
        }
        _ => (TestServer::start_embedded(&[]), None),
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "met"
    } else {
        "NOT met"
    }
}

fn large(backend: &str, n: usize) {
    let set = large_crds(n);
    let sizes: Vec<usize> = set
        .iter()
        .map(|c| serde_json::to_vec(&c.crd).map(|b| b.len()).unwrap_or(0))
        .collect();
    let total: usize = sizes.iter().sum();
    let mut sorted = sizes.clone();
    sorted.sort();
    println!(
        "\n{n} large CRDs on {backend}: {:.1} MB of JSON, median {} KB, largest {} KB, {} of them ≥ 100 KB",
        total as f64 / 1e6,
        sorted[sorted.len() / 2] / 1000,
        sorted[sorted.len() - 1] / 1000,
        sizes.iter().filter(|&&s| s >= 100_000).count()
    );
    let (server, etcd) = server_on(backend);
    let http = server.http();
    let report = Report;
    let rss_empty = server.rss_mib();

    let rss_applied = apply_and_wait(&server, &http, &set);
    lookups(
        &http,
        &set[set.len() - 1],
        "CRD get, list by name (median of 20)",
    );
    let rss_established = server.rss_mib();
    let (apis, _) = timed(&http, "/apis");
    report.row("/apis", format!("{:.1} ms", ms(apis)), "");
    let (root_first, root) = timed(&http, "/openapi/v3");
    let (root_again, _) = timed(&http, "/openapi/v3");
    // The largest group-version document: the group holding the largest CRD.
    let largest = set
        .iter()
        .zip(&sizes)
        .max_by_key(|(_, s)| **s)
        .map(|(c, _)| c.group.clone())
        .unwrap_or_default();
    let path = root
        .json()
        .and_then(|r| {
            r.pointer(&format!("/paths/apis~1{largest}~1v1/serverRelativeURL"))
                .cloned()
        })
        .and_then(|u| u.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("/openapi/v3/apis/{largest}/v1"));
    let (group_first, document) = timed(&http, &path);
    let (group_again, _) = timed(&http, &path);
    report.row(
        "/openapi/v3: first, again",
        format!("{:.1} ms, {:.1} ms", ms(root_first), ms(root_again)),
        format!(
            "cached < 50 ms: {}",
            verdict(root_again < Duration::from_millis(50))
        ),
    );
    report.row(
        format!(
            "group document ({} KB): first, again",
            document.body.len() / 1000
        ),
        format!("{:.1} ms, {:.1} ms", ms(group_first), ms(group_again)),
        format!(
            "cached < 50 ms: {}",
            verdict(group_again < Duration::from_millis(50))
        ),
    );
    let started = Instant::now();
    for c in &set {
        let object = json!({"apiVersion": format!("{}/v1", c.group), "kind": c.kind,
                            "metadata": {"name": "one", "namespace": "default"}});
        let response = http.send_json(
            "POST",
            &format!("/apis/{}/v1/namespaces/default/{}", c.group, c.plural),
            &object,
        );
        assert_eq!(response.status, 201, "{}: {}", c.name, response.text());
    }
    report.row(
        "one object per CRD",
        format!("{:.2} s", started.elapsed().as_secs_f64()),
        "",
    );
    let rss = server.rss_mib();
    let schema_mb = total as f64 / (1 << 20) as f64;
    report.row(
        "server RSS at the end, ratio to the CRDs' JSON",
        format!("{rss:.0} MiB, ×{:.1}", rss / schema_mb),
        format!("< ×5: {}", verdict(rss / schema_mb < 5.0)),
    );
    report.row(
        "RSS empty, applied, Established",
        format!("{rss_empty:.0}, {rss_applied:.0}, {rss_established:.0} MiB"),
        "",
    );
    report.row(
        "server CPU time",
        format!("{:.1} s", server.cpu_time().as_secs_f64()),
        "",
    );
    if let Some(etcd) = &etcd {
        server.terminate();
        let started = Instant::now();
        let again = TestServer::start_embedded(&["--etcd-servers", &etcd.url()]);
        let ready = started.elapsed();
        let http = again.http();
        for c in set.iter().rev() {
            let path = format!("/apis/{}/v1/namespaces/default/{}/one", c.group, c.plural);
            let response = http.wait_for_status(&path, 200, Duration::from_secs(60));
            assert_eq!(response.status, 200, "{path}: {}", response.text());
        }
        let serving = started.elapsed();
        report.row(
            "restart: ready line, serving every CRD",
            format!(
                "{:.2} s, {:.2} s",
                ready.as_secs_f64(),
                serving.as_secs_f64()
            ),
            format!("< 3 s: {}", verdict(serving < Duration::from_secs(3))),
        );
    }
}

fn small(backend: &str, n: usize) {
    let set = small_crds(n);
    println!("\n{n} small CRDs on {backend}");
    let (server, _etcd) = server_on(backend);
    let http = server.http();
    let report = Report;
    apply_and_wait(&server, &http, &set);
    lookups(
        &http,
        &set[set.len() - 1],
        &format!("CRD get, list by name, {n} installed (median of 20)"),
    );
    report.row(
        "server RSS, CPU time",
        format!(
            "{:.0} MiB, {:.1} s",
            server.rss_mib(),
            server.cpu_time().as_secs_f64()
        ),
        "",
    );
}

fn main() {
    let backends = match std::env::var("MANY_BACKEND").as_deref() {
        Ok("memory") => vec!["memory"],
        Ok("etcd") => vec!["etcd"],
        _ => vec!["memory", "etcd"],
    };
    let large_n = env_usize("MANY_LARGE", 300);
    let small_n = env_usize("MANY_SMALL", 1000);
    for backend in backends {
        if large_n > 0 {
            large(backend, large_n.max(BLOCK));
        }
        if small_n > 0 {
            small(backend, small_n.max(BLOCK));
        }
    }
}
