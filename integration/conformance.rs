//! Runs the conformance cases recorded from a real kube-apiserver
//! (`testdata/conformance/`) against crd-apiserver: one test per case file.
//!
//! The runner follows the reference runner `kdiff.py` step for step: the same
//! normalisation, subset comparison, `expect` assertions, captures and golden
//! comparison, so a case means the same thing here as where it was recorded.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use common::{Etcd, HttpResponse, TestServer};
use serde_json::{Map, Value};

/// Metadata fields whose non-empty values differ between servers and runs.
const VOLATILE_META: [&str; 5] = [
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "deletionTimestamp",
    "selfLink",
];

/// Timestamp fields that are replaced by `<time>`.
const TIME_FIELDS: [&str; 4] = [
    "time",
    "lastTransitionTime",
    "lastUpdateTime",
    "lastHeartbeatTime",
];

/// User agent of the recording client: kube derives managedFields' `manager` from it,
/// and the golden bodies say `manager: python-requests`.
const RECORDING_USER_AGENT: &str = "python-requests/2.32.3";

/// How long a new CRD may take to serve its list path (as in kdiff.py).
const CRD_SERVED_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs one case file against a fresh server on `backend` and fails with every
/// failing step.
fn run_case_file(name: &str, backend: Backend) {
    let dir = common::testdata_dir().join("conformance");
    let case_path = dir.join("cases").join(format!("{name}.yaml"));
    let text = fs::read_to_string(&case_path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", case_path.display()));
    let case: Value = serde_norway::from_str(&text)
        .unwrap_or_else(|e| panic!("parsing {}: {e}", case_path.display()));
    let case_name = case
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(name)
        .to_string();
    let golden_path = dir.join("golden").join(format!("{case_name}.golden.json"));
    let golden: Map<String, Value> = match fs::read_to_string(&golden_path) {
        Ok(text) => serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", golden_path.display())),
        // Like kdiff: no golden file means only steps with `expect` can pass.
        Err(_) => Map::new(),
    };

    // Declared before the server, so the server stops first.
    let etcd = match backend {
        Backend::Memory => None,
        Backend::Etcd => {
            let etcd = Etcd::start();
            etcd.wait_ready();
            Some(etcd)
        }
    };
    // The built-in cases were recorded with `--service-cluster-ip-range 10.96.0.0/24`
    // (their README): their fixed cluster IPs come from that range.
    let args: &[&str] = if case_name.starts_with("builtins-") {
        &["--service-cluster-ip-range", "10.96.0.0/24"]
    } else {
        &[]
    };
    let server = match &etcd {
        None => TestServer::start_with(args),
        Some(etcd) => TestServer::start_on_etcd(&etcd.url(), args),
    };
    let client = Client {
        http: server.http_as(RECORDING_USER_AGENT),
    };
    let results = run_case(&client, &case, &case_name, &golden);

    let total = results.len();
    let gaps = known_gaps(&case_name);
    let failed: Vec<&(String, Vec<String>)> = results
        .iter()
        .filter(|(id, errs)| !errs.is_empty() && !gaps.contains(&step_of(id)))
        .collect();
    // A known gap that passes now must leave the list: the list only shrinks.
    let closed: Vec<&str> = gaps
        .iter()
        .copied()
        .filter(|gap| {
            results
                .iter()
                .any(|(id, errs)| step_of(id) == *gap && errs.is_empty())
        })
        .collect();
    assert!(
        closed.is_empty(),
        "case {case_name} on {backend:?}: known gaps that pass now, remove them from KNOWN_GAPS: {closed:?}"
    );
    if failed.is_empty() {
        assert!(total > 0, "case {case_name} has no steps");
        return;
    }
    let mut report = String::new();
    for (id, errs) in &failed {
        report.push_str(&format!("FAIL {id}\n"));
        for e in errs.iter() {
            report.push_str(&format!("       {e}\n"));
        }
    }
    report.push_str(&format!(
        "{} passed, {} failed\n",
        total - failed.len(),
        failed.len()
    ));
    if let Some(status) = server.exited() {
        report.push_str(&format!("server exited early: {status}\n"));
    }
    report.push_str(&format!(
        "--- server stderr (tail) ---\n{}\n",
        server.stderr_tail(40)
    ));
    panic!("conformance case {case_name} on {backend:?}:\n{report}");
}

/// Recorded steps this server does not answer as kube yet, per case: each is reported
/// by the test as a known gap (it must fail; once it passes the test says to remove
/// it). None today.
const KNOWN_GAPS: &[(&str, &[&str])] = &[];

/// The known gaps of a case.
fn known_gaps(case: &str) -> Vec<&'static str> {
    KNOWN_GAPS
        .iter()
        .filter(|(c, _)| *c == case)
        .flat_map(|(_, steps)| steps.iter().copied())
        .collect()
}

/// `case#step` → `step`.
fn step_of(id: &str) -> &str {
    id.split_once('#').map_or(id, |(_, step)| step)
}

/// Where the server under test keeps its objects.
#[derive(Clone, Copy, Debug)]
enum Backend {
    /// The embedded store (no flags).
    Memory,
    /// A real etcd started for the case (`--etcd-servers`).
    Etcd,
}

/// One test per case file and backend, from one list: `crud_semantics` runs the case
/// on the embedded store, `etcd::crud_semantics` the same case on a real etcd.
macro_rules! conformance_cases {
    ($($test:ident => $case:literal,)*) => {
        $(
            #[test]
            fn $test() {
                run_case_file($case, Backend::Memory);
            }
        )*

        /// The same cases with the server on a real etcd.
        mod etcd {
            $(
                #[test]
                fn $test() {
                    super::run_case_file($case, super::Backend::Etcd);
                }
            )*
        }
    };
}

conformance_cases! {
    crud_semantics => "crud-semantics",
    pruning_kep => "pruning-kep",
    defaulting => "defaulting",
    validation => "validation",
    cel_transition_blog => "cel-transition-blog",
    ssa => "ssa",
    immutable_kep => "immutable-kep",
    fidelity => "fidelity",
    builtins_core => "builtins-core",
    builtins_apps => "builtins-apps",
    builtins_batch_net => "builtins-batch-net",
}

// ---------------------------------------------------------------------------
// The runner (a port of kdiff.py).

/// One response as the runner sees it: the raw response and its JSON body.
struct Reply {
    response: HttpResponse,
    json: Option<Value>,
}

impl Reply {
    /// The `Warning` header as Python's requests shows it: repeated headers joined by
    /// ", "; an empty header counts as none.
    fn warnings(&self) -> Option<String> {
        self.response.header("warning").filter(|w| !w.is_empty())
    }
}

/// The HTTP side of the runner.
struct Client {
    http: common::Http,
}

impl Client {
    /// Sends one step's request the way kdiff's `Client.call` does.
    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        content_type: Option<&str>,
        query: Option<&Value>,
        headers: Option<&Value>,
    ) -> Result<Reply, String> {
        let mut hdrs: Vec<(String, String)> = Vec::new();
        if let Some(Value::Object(h)) = headers {
            for (k, v) in h {
                hdrs.push((k.clone(), python_str(v)));
            }
        }
        let mut data = None;
        if let Some(body) = body {
            let bytes = match body {
                Value::String(raw) => raw.clone().into_bytes(),
                _ if content_type.is_some_and(|ct| ct.contains("yaml")) => {
                    serde_norway::to_string(body)
                        .map_err(|e| format!("encoding YAML body: {e}"))?
                        .into_bytes()
                }
                _ => serde_json::to_vec(body).map_err(|e| format!("encoding JSON body: {e}"))?,
            };
            data = Some(bytes);
            hdrs.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
            hdrs.push((
                "Content-Type".to_string(),
                content_type.unwrap_or("application/json").to_string(),
            ));
        }
        if !hdrs.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
            hdrs.push(("Accept".to_string(), "application/json".to_string()));
        }
        let mut params = Vec::new();
        if let Some(Value::Object(q)) = query {
            for (k, v) in q {
                match v {
                    Value::Array(items) => {
                        for item in items {
                            params.push((k.clone(), python_str(item)));
                        }
                    }
                    Value::Null => {}
                    other => params.push((k.clone(), python_str(other))),
                }
            }
        }
        let response = self.http.request(method, path, &params, &hdrs, data)?;
        let json = response.json();
        Ok(Reply { response, json })
    }
}

/// Runs every step of a case; returns `(step id, failures)` per step.
fn run_case(
    c: &Client,
    case: &Value,
    name: &str,
    golden: &Map<String, Value>,
) -> Vec<(String, Vec<String>)> {
    let empty = Vec::new();
    let steps = case
        .get("steps")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let crds = case.get("crds").and_then(Value::as_array).unwrap_or(&empty);
    let mut results = Vec::new();
    if let Some(err) = install_crds(c, crds) {
        for (i, step) in steps.iter().enumerate() {
            let sid = step.get("name").map(python_str).unwrap_or(i.to_string());
            results.push((format!("{name}#{sid}"), vec![format!("setup: {err}")]));
        }
        return results;
    }
    let mut captured: BTreeMap<String, String> = BTreeMap::new();
    for (i, raw_step) in steps.iter().enumerate() {
        let sid = match raw_step.get("name") {
            Some(n) => python_str(n),
            None => i.to_string(),
        };
        let step = substitute(raw_step, &captured);
        let method = step.get("method").and_then(Value::as_str).unwrap_or("GET");
        let Some(path) = step.get("path").and_then(Value::as_str) else {
            results.push((
                format!("{name}#{sid}"),
                vec!["step has no path".to_string()],
            ));
            continue;
        };
        let reply = c.call(
            method,
            path,
            step.get("body"),
            step.get("content_type").and_then(Value::as_str),
            step.get("query"),
            step.get("headers"),
        );
        let reply = match reply {
            Ok(r) => r,
            Err(e) => {
                results.push((format!("{name}#{sid}"), vec![format!("runner error: {e}")]));
                continue;
            }
        };
        if let Some(Value::Object(capture)) = step.get("capture") {
            for (var, p) in capture {
                let p = python_str(p);
                let v = get_path(reply.json.as_ref(), &p);
                captured.insert(var.clone(), v.map(python_str).unwrap_or_default());
            }
        }
        if let Some(secs) = step.get("sleep").and_then(Value::as_f64) {
            if secs > 0.0 {
                thread::sleep(Duration::from_secs_f64(secs));
            }
        }
        let errs = check(&step, &reply, golden.get(&sid));
        results.push((format!("{name}#{sid}"), errs));
    }
    for crd in crds {
        if let Some(crd_name) = crd.pointer("/metadata/name").and_then(Value::as_str) {
            let _ = c.call(
                "DELETE",
                &format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd_name}"),
                None,
                None,
                None,
                None,
            );
        }
    }
    results
}

/// The list path of a CRD's first served version in namespace `default`.
fn crd_paths(crd: &Value) -> Option<String> {
    let spec = crd.get("spec")?;
    let group = spec.get("group")?.as_str()?;
    let plural = spec.pointer("/names/plural")?.as_str()?;
    let version = spec
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("served").and_then(Value::as_bool).unwrap_or(true))?
        .get("name")?
        .as_str()?;
    let scope = spec
        .get("scope")
        .and_then(Value::as_str)
        .unwrap_or("Namespaced");
    let ns = if scope == "Namespaced" {
        "namespaces/default/"
    } else {
        ""
    };
    Some(format!("/apis/{group}/{version}/{ns}{plural}"))
}

/// Creates the case's CRDs and waits until each serves its list path.
fn install_crds(c: &Client, crds: &[Value]) -> Option<String> {
    for crd in crds {
        let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            return Some("CRD without metadata.name".to_string());
        };
        let crd_path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
        let _ = c.call("DELETE", &crd_path, None, None, None, None);
        wait_gone(c, &crd_path);
        let r = match c.call(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Some(crd),
            None,
            None,
            None,
        ) {
            Ok(r) => r,
            Err(e) => return Some(format!("CRD {name} not created: {e}")),
        };
        if r.response.status != 200 && r.response.status != 201 {
            return Some(format!(
                "CRD {name} not created: {} {}",
                r.response.status,
                truncate(&r.response.text(), 300)
            ));
        }
        let Some(path) = crd_paths(crd) else {
            return Some(format!("CRD {name} has no served version"));
        };
        let deadline = Instant::now() + CRD_SERVED_TIMEOUT;
        loop {
            if let Ok(r) = c.call("GET", &path, None, None, None, None) {
                if r.response.status == 200 {
                    break;
                }
            }
            if Instant::now() >= deadline {
                return Some(format!("CRD {name} not served at {path}"));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }
    None
}

/// Waits until GET `crd_path` answers 404.
fn wait_gone(c: &Client, crd_path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = c.call("GET", crd_path, None, None, None, None) {
            if r.response.status == 404 {
                return;
            }
        }
        thread::sleep(Duration::from_millis(200));
    }
}

/// What kdiff records for a response: status, normalised body or text, warnings.
fn observed(reply: &Reply) -> Value {
    let mut out = Map::new();
    out.insert("status".into(), Value::from(reply.response.status));
    match &reply.json {
        Some(js) => {
            out.insert("body".into(), normalise(js));
        }
        None => {
            out.insert(
                "text".into(),
                Value::String(truncate(&reply.response.text(), 2000)),
            );
        }
    }
    if let Some(w) = reply.warnings() {
        out.insert("warnings".into(), Value::String(w));
    }
    Value::Object(out)
}

/// Checks one step: against its `expect` when present, else against the golden
/// recording.
fn check(step: &Value, reply: &Reply, golden: Option<&Value>) -> Vec<String> {
    let mut errs = Vec::new();
    let Some(exp) = step.get("expect") else {
        let Some(want) = golden else {
            return vec!["no expect and no golden recording".to_string()];
        };
        let got = observed(reply);
        if want.get("status") != got.get("status") {
            errs.push(format!(
                "status: want {} got {}: {}",
                dumps_opt(want.get("status")),
                dumps_opt(got.get("status")),
                truncate(&dumps_opt(got.get("body")), 300)
            ));
        }
        if want.get("warnings") != got.get("warnings") {
            errs.push(format!(
                "Warning header: want {} got {}",
                repr_opt(want.get("warnings")),
                repr_opt(got.get("warnings"))
            ));
        }
        if let Some(wb) = want.get("body") {
            let gb = got.get("body").cloned().unwrap_or(Value::Null);
            if let Some(js) = &reply.json {
                errs.extend(managed_fields_out_of_order(js, "body"));
            }
            errs.extend(subset(
                &same_second_order(&strip_ignored(wb, step)),
                &same_second_order(&strip_ignored(&gb, step)),
                "body",
            ));
        }
        return errs;
    };
    let status = reply.response.status;
    if let Some(want) = exp.get("status") {
        if !json_eq(want, &Value::from(status)) {
            errs.push(format!(
                "status: want {} got {status}: {}",
                dumps(want),
                truncate(&reply.response.text(), 300)
            ));
        }
    }
    if let Some(want) = exp.get("json") {
        let actual = reply.json.as_ref().map(normalise).unwrap_or(Value::Null);
        errs.extend(subset(want, &actual, "body"));
    }
    if let Some(Value::Array(absent)) = exp.get("absent") {
        for p in absent {
            let p = python_str(p);
            if let Some(v) = get_path(reply.json.as_ref(), &p) {
                errs.push(format!(
                    "{p}: should be absent, is {}",
                    truncate(&dumps(v), 120)
                ));
            }
        }
    }
    if let Some(Value::Object(paths)) = exp.get("paths") {
        for (p, want) in paths {
            match get_path(reply.json.as_ref(), p) {
                Some(got) if json_eq(got, want) => {}
                got => errs.push(format!(
                    "{p}: want {} got {}",
                    dumps(want),
                    got.map(|g| truncate(&dumps(g), 160))
                        .unwrap_or_else(|| "<missing>".to_string())
                )),
            }
        }
    }
    if let Some(Value::Array(wanted)) = exp.get("message_contains") {
        let msg = reply
            .json
            .as_ref()
            .and_then(|js| js.get("message"))
            .and_then(Value::as_str)
            .unwrap_or("");
        for s in wanted {
            let s = python_str(s);
            if !msg.contains(&s) {
                errs.push(format!(
                    "message lacks {}: {}",
                    repr(&s),
                    repr(&truncate(msg, 300))
                ));
            }
        }
    }
    if let Some(Value::Array(wanted)) = exp.get("warnings_contain") {
        let header = reply.response.header("warning");
        for s in wanted {
            let s = python_str(s);
            if !header.as_deref().unwrap_or("").contains(&s) {
                errs.push(format!(
                    "Warning header lacks {}: {}",
                    repr(&s),
                    header.as_deref().map(repr).unwrap_or_else(|| "None".into())
                ));
            }
        }
    }
    errs
}

/// kube's order of `managedFields` entries: operation, time (to the second; none
/// first), manager, apiVersion, subresource.
fn managed_order_key(entry: &Value, with_time: bool) -> [String; 5] {
    let s = |k: &str| {
        entry
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    [
        s("operation"),
        if with_time { s("time") } else { String::new() },
        s("manager"),
        s("apiVersion"),
        s("subresource"),
    ]
}

/// Every `managedFields` in `v` ordered as kube orders entries whose times fall in
/// one second. The recordings ran each case within one second; a run here may cross
/// a second boundary between two writes, which reorders entries by their (real) times,
/// so the comparison with the recording puts both in the one-second order, and
/// [`managed_fields_out_of_order`] checks the reply's own order against its times.
fn same_second_order(v: &Value) -> Value {
    match v {
        Value::Object(obj) => Value::Object(
            obj.iter()
                .map(|(k, x)| {
                    let x = match (k.as_str(), x) {
                        ("managedFields", Value::Array(entries)) => {
                            let mut entries: Vec<Value> =
                                entries.iter().map(same_second_order).collect();
                            entries.sort_by_cached_key(|e| managed_order_key(e, false));
                            Value::Array(entries)
                        }
                        _ => same_second_order(x),
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(same_second_order).collect()),
        other => other.clone(),
    }
}

/// Errors for every `managedFields` in the reply not in kube's order by the entries'
/// own times.
fn managed_fields_out_of_order(v: &Value, path: &str) -> Vec<String> {
    match v {
        Value::Object(obj) => obj
            .iter()
            .flat_map(|(k, x)| {
                let here = format!("{path}.{k}");
                match (k.as_str(), x) {
                    ("managedFields", Value::Array(entries)) => {
                        let keys: Vec<[String; 5]> =
                            entries.iter().map(|e| managed_order_key(e, true)).collect();
                        if keys.windows(2).all(|w| w[0] <= w[1]) {
                            Vec::new()
                        } else {
                            vec![format!("{here}: entries not in kube's order: {keys:?}")]
                        }
                    }
                    _ => managed_fields_out_of_order(x, &here),
                }
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .flat_map(|(i, x)| managed_fields_out_of_order(x, &format!("{path}[{i}]")))
            .collect(),
        _ => Vec::new(),
    }
}

/// Replaces values that legitimately differ between servers and runs (see the
/// conformance README): volatile metadata, timestamps, continue tokens, counts; sorts
/// `details.causes` and the items of an aggregated message.
fn normalise(v: &Value) -> Value {
    let mut v = v.clone();
    if let Value::Object(obj) = &mut v {
        let has_causes = matches!(
            obj.get("details").and_then(|d| d.get("causes")),
            Some(Value::Array(_))
        );
        if has_causes {
            if let Some(Value::Array(causes)) =
                obj.get_mut("details").and_then(|d| d.get_mut("causes"))
            {
                causes.sort_by_cached_key(python_dumps_sorted);
            }
            if let Some(Value::String(msg)) = obj.get_mut("message") {
                if let Some(sorted) = sort_aggregated_message(msg) {
                    *msg = sorted;
                }
            }
        }
    }
    match v {
        Value::Object(obj) => {
            let mut out = Map::new();
            for (k, x) in obj {
                let nx = if VOLATILE_META.contains(&k.as_str()) && !x.is_object() && !x.is_array() {
                    match &x {
                        Value::Null => x,
                        Value::String(s) if s.is_empty() => x,
                        _ => Value::String("<set>".into()),
                    }
                } else if TIME_FIELDS.contains(&k.as_str()) && x.is_string() {
                    Value::String("<time>".into())
                } else if k == "continue" && x.as_str().is_some_and(|s| !s.is_empty()) {
                    Value::String("<token>".into())
                } else if k == "remainingItemCount" {
                    Value::String("<count>".into())
                } else {
                    normalise(&x)
                };
                out.insert(k, nx);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(normalise).collect()),
        other => other,
    }
}

/// `head: [a, b]` with its items sorted, when `msg` is an aggregated message.
fn sort_aggregated_message(msg: &str) -> Option<String> {
    if !msg.ends_with(']') {
        return None;
    }
    let (head, body) = msg.split_once(": [")?;
    let mut items = split_items(&body[..body.len() - 1]);
    items.sort();
    Some(format!("{head}: [{}]", items.join(", ")))
}

/// Splits `a: x, b: y` at the ", " that start a new `field: ` item (values may
/// contain commas).
fn split_items(body: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut cur = String::new();
    for part in body.split(", ") {
        if !cur.is_empty() && starts_new_item(part) {
            items.push(std::mem::take(&mut cur));
            cur = part.to_string();
        } else if cur.is_empty() {
            cur = part.to_string();
        } else {
            cur.push_str(", ");
            cur.push_str(part);
        }
    }
    if !cur.is_empty() {
        items.push(cur);
    }
    items
}

/// Whether `part` starts with `<nil>: ` or `field.path[0]: `.
fn starts_new_item(part: &str) -> bool {
    if part.starts_with("<nil>: ") {
        return true;
    }
    let field_len = part
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || b"_.[]-".contains(b))
        .count();
    field_len > 0 && part[field_len..].starts_with(": ")
}

/// Follows a dotted path (list items by index); `None` where kdiff says KeyError.
fn get_path<'a>(obj: Option<&'a Value>, dotted: &str) -> Option<&'a Value> {
    let mut cur = obj?;
    for part in dotted.split('.') {
        cur = match cur {
            Value::Array(items) => {
                let i: i64 = part.trim().parse().ok()?;
                let len = items.len() as i64;
                // Python indexing: negative counts from the end.
                let idx = if i < 0 { len + i } else { i };
                if idx < 0 || idx >= len {
                    return None;
                }
                &items[idx as usize]
            }
            Value::Object(map) => map.get(part)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Every key in `expected` must match `actual`; lists must match element-wise and in
/// length.
fn subset(expected: &Value, actual: &Value, path: &str) -> Vec<String> {
    match expected {
        Value::Object(exp) => {
            let Value::Object(act) = actual else {
                return vec![format!(
                    "{}: expected object, got {}",
                    if path.is_empty() { "." } else { path },
                    truncate(&dumps(actual), 120)
                )];
            };
            let mut errs = Vec::new();
            for (k, v) in exp {
                match act.get(k) {
                    None => errs.push(format!("{path}.{k}: missing")),
                    Some(a) => errs.extend(subset(v, a, &format!("{path}.{k}"))),
                }
            }
            errs
        }
        Value::Array(exp) => match actual {
            Value::Array(act) if act.len() == exp.len() => exp
                .iter()
                .zip(act)
                .enumerate()
                .flat_map(|(i, (e, a))| subset(e, a, &format!("{path}[{i}]")))
                .collect(),
            _ => vec![format!(
                "{path}: expected list {}, got {}",
                truncate(&dumps(expected), 160),
                truncate(&dumps(actual), 160)
            )],
        },
        _ if !json_eq(expected, actual) => vec![format!(
            "{path}: expected {}, got {}",
            dumps(expected),
            truncate(&dumps(actual), 160)
        )],
        _ => Vec::new(),
    }
}

/// Python's `==` on decoded JSON: numbers compare by value (`1 == 1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x == y
            } else {
                x.as_f64() == y.as_f64()
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Replaces `{{var}}` in every string with the captured values.
fn substitute(v: &Value, captured: &BTreeMap<String, String>) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, x)| (k.clone(), substitute(x, captured)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|x| substitute(x, captured)).collect())
        }
        Value::String(s) => {
            let mut s = s.clone();
            for (k, x) in captured {
                s = s.replace(&format!("{{{{{k}}}}}"), x);
            }
            Value::String(s)
        }
        other => other.clone(),
    }
}

/// Removes the step's `ignore` dotted paths from a body before comparison.
fn strip_ignored(body: &Value, step: &Value) -> Value {
    let mut body = body.clone();
    let Some(Value::Array(ignore)) = step.get("ignore") else {
        return body;
    };
    for p in ignore {
        let p = python_str(p);
        let parts: Vec<&str> = p.split('.').collect();
        let Some((last, parents)) = parts.split_last() else {
            continue;
        };
        let mut cur = Some(&mut body);
        for part in parents {
            cur = match cur {
                Some(Value::Object(map)) => map.get_mut(*part),
                _ => None,
            };
        }
        if let Some(Value::Object(map)) = cur {
            map.remove(*last);
        }
    }
    body
}

/// Python's `str()` of a decoded YAML/JSON scalar (strings unquoted).
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::Number(n) => n.to_string(),
        other => dumps(other),
    }
}

/// Python's `json.dumps(v)` (", " and ": " separators, ASCII only).
fn dumps(v: &Value) -> String {
    let mut out = String::new();
    write_python_json(v, false, &mut out);
    out
}

/// `json.dumps` of an optional value (`null` for a missing one).
fn dumps_opt(v: Option<&Value>) -> String {
    v.map(dumps).unwrap_or_else(|| "null".into())
}

/// Python's `json.dumps(v, sort_keys=True)`: the sort key kdiff uses for causes.
fn python_dumps_sorted(v: &Value) -> String {
    let mut out = String::new();
    write_python_json(v, true, &mut out);
    out
}

/// Writes `v` the way Python's json module does with default settings.
fn write_python_json(v: &Value, sort_keys: bool, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_python_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_json(x, sort_keys, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if sort_keys {
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_python_string(k, out);
                out.push_str(": ");
                write_python_json(x, sort_keys, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal with Python's `ensure_ascii` escaping.
fn write_python_string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr()` of a string, close enough for failure messages.
fn repr(s: &str) -> String {
    format!("{s:?}")
}

/// `repr()` of an optional golden/observed string value (`None` when absent).
fn repr_opt(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => repr(s),
        Some(other) => dumps(other),
        None => "None".into(),
    }
}

/// The first `n` characters of `s` (Python's `s[:n]`).
fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod runner_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_fields_compare_in_one_seconds_order_and_are_checked_against_their_times() {
        let entry = |subresource: &str, time: &str| {
            let mut e = json!({"manager": "m", "operation": "Update", "apiVersion": "apps/v1",
                               "time": time});
            if !subresource.is_empty() {
                e["subresource"] = json!(subresource);
            }
            e
        };
        // Written across a second boundary: the status entry's second comes first.
        let crossed = json!({"metadata": {"managedFields": [
            entry("status", "2026-01-01T00:00:01Z"),
            entry("", "2026-01-01T00:00:02Z"),
        ]}});
        assert!(managed_fields_out_of_order(&crossed, "body").is_empty());
        // The recording's order, all in one second, with times replaced.
        let recorded = json!({"metadata": {"managedFields": [entry("", "<time>"), entry("status", "<time>")]}});
        assert_eq!(
            same_second_order(&normalise(&crossed)),
            same_second_order(&recorded)
        );
        // Entries out of order for their own times are an error.
        let wrong = json!({"items": [{"metadata": {"managedFields": [
            entry("", "2026-01-01T00:00:02Z"),
            entry("status", "2026-01-01T00:00:01Z"),
        ]}}]});
        let errs = managed_fields_out_of_order(&wrong, "body");
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("body.items[0].metadata.managedFields: "),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn normalise_replaces_volatile_values_and_sorts_causes() {
        let body = json!({
            "kind": "Status",
            "message": "X \"v\" is invalid: [spec.b: Invalid value: 1, 2, spec.a: Required value]",
            "details": {"causes": [
                {"field": "spec.b", "message": "m"},
                {"field": "spec.a", "message": "m"}
            ]},
            "metadata": {"uid": "abc", "resourceVersion": "", "creationTimestamp": null,
                         "managedFields": [{"time": "2024-01-01T00:00:00Z"}]},
            "continue": "tok", "remainingItemCount": 3
        });
        let n = normalise(&body);
        assert_eq!(
            n["message"],
            "X \"v\" is invalid: [spec.a: Required value, spec.b: Invalid value: 1, 2]"
        );
        assert_eq!(n["details"]["causes"][0]["field"], "spec.a");
        assert_eq!(n["metadata"]["uid"], "<set>");
        assert_eq!(n["metadata"]["resourceVersion"], "");
        assert_eq!(n["metadata"]["creationTimestamp"], Value::Null);
        assert_eq!(n["metadata"]["managedFields"][0]["time"], "<time>");
        assert_eq!(n["continue"], "<token>");
        assert_eq!(n["remainingItemCount"], "<count>");
    }

    #[test]
    fn split_items_keeps_commas_inside_values() {
        let items = split_items(
            "spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\", <nil>: x",
        );
        assert_eq!(
            items,
            vec![
                "spec.size: Unsupported value: \"XL\": supported values: \"S\", \"M\"",
                "<nil>: x"
            ]
        );
    }

    #[test]
    fn subset_reports_missing_and_length_mismatch() {
        let errs = subset(
            &json!({"a": 1, "b": [1, 2], "c": {"d": "x"}}),
            &json!({"a": 1.0, "b": [1], "c": {}}),
            "body",
        );
        assert_eq!(
            errs,
            vec![
                "body.b: expected list [1, 2], got [1]".to_string(),
                "body.c.d: missing".to_string()
            ]
        );
    }

    #[test]
    fn get_path_follows_lists_and_reports_missing() {
        let v = json!({"items": [{"metadata": {"name": "w1"}}]});
        assert_eq!(
            get_path(Some(&v), "items.0.metadata.name"),
            Some(&json!("w1"))
        );
        assert_eq!(get_path(Some(&v), "items.1"), None);
        assert_eq!(
            get_path(Some(&v), "items.-1.metadata.name"),
            Some(&json!("w1"))
        );
        assert_eq!(get_path(None, "a"), None);
    }

    #[test]
    fn substitute_replaces_captures_everywhere() {
        let mut captured = BTreeMap::new();
        captured.insert("rv".to_string(), "42".to_string());
        let v = substitute(
            &json!({"m": {"resourceVersion": "{{rv}}"}, "l": ["x{{rv}}"]}),
            &captured,
        );
        assert_eq!(v, json!({"m": {"resourceVersion": "42"}, "l": ["x42"]}));
    }

    #[test]
    fn python_dumps_matches_json_module() {
        assert_eq!(
            python_dumps_sorted(&json!({"b": "é\"", "a": [1, true, null]})),
            "{\"a\": [1, true, null], \"b\": \"\\u00e9\\\"\"}"
        );
    }
}
