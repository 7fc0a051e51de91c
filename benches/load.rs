//! Startup and load benchmark of the real `crd-apiserver` binary, over loopback only,
//! on the embedded store and on a real etcd.
//!
//! Run: `cargo bench --bench load` (startup, load, memory per object), or
//! `cargo bench --bench load -- soak` / `LOAD_MODE=soak` for the soak run.
//!
//! Environment (all optional):
//! * `LOAD_BACKEND` — `memory`, `etcd` or `both` (default `both`). The etcd run starts
//!   its own single-member etcd (`ETCD_BIN` or `/usr/bin/etcd`) on free loopback ports
//!   with a data dir under the temp dir, and removes it afterwards.
//! * `LOAD_SECONDS` — how long each load phase runs (default 10).
//! * `LOAD_CLIENTS` — concurrent clients, one thread each (default 8).
//! * `STARTUP_RUNS` — how many cold starts are timed per backend (default 20).
//! * `LOAD_OBJECTS` — objects created by the memory phase (default 50000: past the
//!   embedded store's 10,000-revision history window, so the figure is what a stored
//!   object costs, not its write's place in the history; RSS also grows in 2 MiB steps,
//!   210 bytes an object at 10k).
//! * `LOAD_MODE` — `load` (default) or `soak`.
//! * `SOAK_SECONDS` — length of the soak (default 120; the first third is warm-up).
//! * `SOAK_WATCHES` — watches kept open during the soak (default 4).
//!
//! It builds nothing itself: cargo builds the release binary for benches and hands its
//! path over in `CARGO_BIN_EXE_crd-apiserver`. Phases, per backend:
//! 1. startup: process spawn → `/readyz` answers 200, min/median/p95 over the runs;
//! 2. load: one server, a CRD, then every client runs a fixed mix of create / get /
//!    list / update / merge-patch on custom resources in its own namespace until the
//!    time is up (or it reaches [`MAX_REQUESTS_PER_CLIENT`]); prints requests/s and
//!    latency percentiles per verb;
//! 3. memory: a fresh server, the server's RSS (`VmRSS` of `/proc/<pid>/status`) before
//!    and after creating [`LOAD_OBJECTS`] custom resources through the full pipeline;
//!    prints the delta per 10k objects.
//!
//! Last, one line per backend with create / update / get throughput and p99, and the
//! memory per 10k objects. Any failed request makes the command exit non-zero.
//!
//! Soak (`LOAD_MODE=soak`): a fresh server per backend, [`SOAK_OBJECTS`] objects,
//! `SOAK_WATCHES` watches reading every event, and writers merge-patching the objects
//! and creating/deleting short-lived ones for `SOAK_SECONDS`; the server's RSS is sampled
//! every second. Prints RSS at start, after warm-up (the embedded store's history
//! window is full by then) and at the end, and the growth after warm-up.

#[path = "../integration/common/mod.rs"]
mod common;

use serde_json::json;
use std::collections::HashMap;
use std::process::{Child, Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The server binary cargo built for this bench (release profile).
const SERVER_BINARY: &str = env!("CARGO_BIN_EXE_crd-apiserver");

/// How long one start may take before the run counts as failed.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// Pause between `/readyz` polls while a server starts (the timing resolution).
const READY_POLL: Duration = Duration::from_millis(1);

/// Upper bound on any single request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Hard cap per client, so a run is bounded in count as well as in time.
const MAX_REQUESTS_PER_CLIENT: usize = 500_000;

/// Page size of the list requests (kube's `limit`), so lists stay cheap as objects pile up.
const LIST_LIMIT: usize = 50;

/// Objects the soak keeps updating.
const SOAK_OBJECTS: usize = 200;

/// API group, version and plural of the benchmark's custom resource.
const GROUP: &str = "load.bench.example.com";
const VERSION: &str = "v1";
const PLURAL: &str = "loadtests";

/// Where the benchmarked server keeps its objects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backend {
    /// The embedded store.
    Memory,
    /// A single-member etcd this bench starts (`--etcd-servers`).
    Etcd,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Memory => "memory",
            Backend::Etcd => "etcd",
        }
    }

    /// The backends `LOAD_BACKEND` asks for (default both).
    fn from_env() -> Result<Vec<Backend>, String> {
        match std::env::var("LOAD_BACKEND").as_deref() {
            Err(_) | Ok("both") => Ok(vec![Backend::Memory, Backend::Etcd]),
            Ok("memory") => Ok(vec![Backend::Memory]),
            Ok("etcd") => Ok(vec![Backend::Etcd]),
            Ok(other) => Err(format!(
                "LOAD_BACKEND={other:?}: expected memory, etcd or both"
            )),
        }
    }
}

/// One request kind of the mix.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    Create,
    Get,
    List,
    Update,
    Patch,
}

impl Verb {
    const ALL: [Verb; 5] = [
        Verb::Create,
        Verb::Get,
        Verb::List,
        Verb::Update,
        Verb::Patch,
    ];

    fn name(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Update => "update",
            Verb::Patch => "merge-patch",
        }
    }

    fn index(self) -> usize {
        match self {
            Verb::Create => 0,
            Verb::Get => 1,
            Verb::List => 2,
            Verb::Update => 3,
            Verb::Patch => 4,
        }
    }
}

/// The request mix each client cycles through: 20% create, 40% get, 10% list,
/// 20% update (PUT with the resourceVersion last seen), 10% merge-patch. It starts
/// with a create so gets and writes have a target.
const MIX: [Verb; 10] = [
    Verb::Create,
    Verb::Get,
    Verb::Update,
    Verb::Get,
    Verb::List,
    Verb::Create,
    Verb::Get,
    Verb::Patch,
    Verb::Get,
    Verb::Update,
];

/// A started server process, killed when dropped so no run leaves one behind.
struct ServerProcess {
    child: Child,
    base: String,
}

impl ServerProcess {
    /// Spawns the binary on a free loopback port with `args` (the backend's flags);
    /// returns it with the spawn instant.
    fn spawn(args: &[String]) -> Result<(ServerProcess, Instant), String> {
        let port = common::free_port();
        let started = Instant::now();
        let child = Command::new(SERVER_BINARY)
            .args(["--bind-address", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .env("CRD_APISERVER_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {SERVER_BINARY}: {e}"))?;
        let server = ServerProcess {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        Ok((server, started))
    }

    /// Polls `/readyz` until it answers 200; returns the time since `started`.
    fn wait_ready(&mut self, started: Instant) -> Result<Duration, String> {
        let agent = agent(Duration::from_millis(500));
        let url = format!("{}/readyz", self.base);
        loop {
            if let Ok(resp) = agent.get(&url).call() {
                if resp.status().as_u16() == 200 {
                    return Ok(started.elapsed());
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("the server exited before it was ready: {status}"));
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(format!(
                    "/readyz did not answer 200 within {READY_TIMEOUT:?}"
                ));
            }
            thread::sleep(READY_POLL);
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP client that hands back non-2xx answers instead of turning them into errors.
fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build()
        .new_agent()
}

/// The value at `q` (0..=1) of sorted `samples`.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn env_number(name: &str, default: u64) -> Result<u64, String> {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .map_err(|_| format!("{name}={v:?} is not a whole number")),
        Err(_) => Ok(default),
    }
}

/// Phase 1: time `runs` cold starts.
fn startup(runs: u64, args: &[String]) -> Result<(), String> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let (mut server, started) = ServerProcess::spawn(args)?;
        times.push(server.wait_ready(started)?);
    }
    times.sort();
    println!(
        "startup (spawn → /readyz 200), {runs} runs: min {}, median {}, p95 {}",
        ms(times.first().copied().unwrap_or_default()),
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.95)),
    );
    Ok(())
}

/// The benchmark CRD: a namespaced kind with defaults, patterns, a list-type map and a map.
fn load_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "loadtest", "kind": "LoadTest"},
            "versions": [{
                "name": VERSION, "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "required": ["image"],
                        "properties": {
                            "image": {"type": "string", "pattern": "^[a-z0-9./-]+(:[a-zA-Z0-9._-]+)?$"},
                            "replicas": {"type": "integer", "minimum": 0, "default": 1},
                            "mode": {"type": "string", "enum": ["fast", "safe"], "default": "safe"},
                            "owner": {"type": "string", "format": "email"},
                            "ports": {
                                "type": "array",
                                "x-kubernetes-list-type": "map",
                                "x-kubernetes-list-map-keys": ["name"],
                                "items": {"type": "object", "required": ["name"], "properties": {
                                    "name": {"type": "string"},
                                    "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                    "protocol": {"type": "string", "default": "TCP"}
                                }}
                            },
                            "env": {"type": "object", "additionalProperties": {"type": "string"}}
                        }
                    }}
                }}
            }]
        }
    })
}

/// The custom resource a client creates.
fn load_object(namespace: &str, name: &str, n: usize) -> serde_json::Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": "LoadTest",
        "metadata": {"name": name, "namespace": namespace, "labels": {"client": namespace}},
        "spec": {
            "image": format!("registry.example.com/app:v{n}"),
            "owner": "team@example.com",
            "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}],
            "env": {"LOG_LEVEL": "info", "INDEX": n.to_string()}
        }
    })
}

/// Sends `body` as JSON (POST, PUT or PATCH); returns the status code and the body text.
fn send_json(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    content_type: &str,
    body: &serde_json::Value,
) -> Result<(u16, String), String> {
    let bytes = serde_json::to_vec(body).map_err(|e| format!("encoding: {e}"))?;
    let request = match method {
        "POST" => agent.post(url),
        "PUT" => agent.put(url),
        "PATCH" => agent.patch(url),
        other => return Err(format!("unsupported method {other}")),
    };
    let mut resp = request
        .content_type(content_type)
        .send(&bytes[..])
        .map_err(|e| format!("{method} {url}: {e}"))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| format!("{method} {url}: reading the answer: {e}"))?;
    Ok((status, text))
}

/// GETs `url`; returns the status code and the body length.
fn get(agent: &ureq::Agent, url: &str) -> Result<(u16, usize), String> {
    let mut resp = agent
        .get(url)
        .call()
        .map_err(|e| format!("GET {url}: {e}"))?;
    let status = resp.status().as_u16();
    let body = resp
        .body_mut()
        .read_to_vec()
        .map_err(|e| format!("GET {url}: reading the answer: {e}"))?;
    Ok((status, body.len()))
}

/// Creates the CRD and one namespace per client, and waits until the kind is served.
fn prepare(base: &str, clients: usize) -> Result<(), String> {
    let agent = agent(REQUEST_TIMEOUT);
    let crd_url = format!("{base}/apis/apiextensions.k8s.io/v1/customresourcedefinitions");
    let (status, text) = send_json(&agent, "POST", &crd_url, "application/json", &load_crd())?;
    if status != 201 {
        return Err(format!("creating the CRD: {status} {text}"));
    }
    for i in 0..clients {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": format!("load-{i}")}});
        let url = format!("{base}/api/v1/namespaces");
        let (status, text) = send_json(&agent, "POST", &url, "application/json", &ns)?;
        if status != 201 {
            return Err(format!("creating namespace load-{i}: {status} {text}"));
        }
    }
    let probe = format!("{base}/apis/{GROUP}/{VERSION}/namespaces/load-0/{PLURAL}");
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if get(&agent, &probe)?.0 == 200 {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("{probe} was not served within {READY_TIMEOUT:?}"));
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// What one client measured.
#[derive(Default)]
struct ClientReport {
    /// Latencies per verb, indexed by [`Verb::index`].
    latencies: [Vec<Duration>; 5],
    errors: usize,
    /// The first few failures, for the printout.
    error_samples: Vec<String>,
}

impl ClientReport {
    fn fail(&mut self, what: String) {
        self.errors += 1;
        if self.error_samples.len() < 3 {
            self.error_samples.push(what);
        }
    }
}

/// One client: cycles through [`MIX`] in namespace `load-<id>` until `deadline`.
fn run_client(base: &str, id: usize, deadline: Instant) -> ClientReport {
    let agent = agent(REQUEST_TIMEOUT);
    let ns = format!("load-{id}");
    let collection = format!("{base}/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}");
    let list_url = format!("{collection}?limit={LIST_LIMIT}");
    let mut report = ClientReport::default();
    let mut created: Vec<String> = Vec::new();
    // The object as last answered, per name: updates send it back with its
    // resourceVersion (this client is the only writer in its namespace).
    let mut latest: HashMap<String, serde_json::Value> = HashMap::new();
    for n in 0..MAX_REQUESTS_PER_CLIENT {
        if Instant::now() >= deadline {
            break;
        }
        let mut verb = MIX[n % MIX.len()];
        if created.is_empty() {
            verb = Verb::Create;
        }
        // Spread gets and patches over everything this client created so far.
        let target = created
            .get((n * 7919) % created.len().max(1))
            .cloned()
            .unwrap_or_default();
        let started = Instant::now();
        let outcome = match verb {
            Verb::Create => {
                let name = format!("obj-{n}");
                let body = load_object(&ns, &name, n);
                send_json(&agent, "POST", &collection, "application/json", &body).map(
                    |(status, text)| {
                        if status == 201 {
                            remember(&mut latest, &name, &text);
                            created.push(name);
                        }
                        (status, 201, text)
                    },
                )
            }
            Verb::Update => {
                let mut body = latest.get(&target).cloned().unwrap_or_default();
                body["spec"]["replicas"] = json!(n % 5);
                send_json(
                    &agent,
                    "PUT",
                    &format!("{collection}/{target}"),
                    "application/json",
                    &body,
                )
                .map(|(status, text)| {
                    if status == 200 {
                        remember(&mut latest, &target, &text);
                    }
                    (status, 200, text)
                })
            }
            Verb::Get => get(&agent, &format!("{collection}/{target}"))
                .map(|(status, _)| (status, 200, String::new())),
            Verb::List => get(&agent, &list_url).map(|(status, _)| (status, 200, String::new())),
            Verb::Patch => {
                let patch = json!({"spec": {"replicas": n % 7, "env": {"PATCHED": n.to_string()}}});
                send_json(
                    &agent,
                    "PATCH",
                    &format!("{collection}/{target}"),
                    "application/merge-patch+json",
                    &patch,
                )
                .map(|(status, text)| {
                    if status == 200 {
                        remember(&mut latest, &target, &text);
                    }
                    (status, 200, text)
                })
            }
        };
        let elapsed = started.elapsed();
        match outcome {
            Ok((status, want, _)) if status == want => {
                report.latencies[verb.index()].push(elapsed);
            }
            Ok((status, want, text)) => report.fail(format!(
                "{}: got {status}, want {want}: {text}",
                verb.name()
            )),
            Err(e) => report.fail(format!("{}: {e}", verb.name())),
        }
    }
    report
}

/// Keeps the object a write answered with, for the next update of `name`.
fn remember(latest: &mut HashMap<String, serde_json::Value>, name: &str, text: &str) {
    if let Ok(object) = serde_json::from_str(text) {
        latest.insert(name.to_owned(), object);
    }
}

/// Throughput and p99 latency of one verb in one load phase.
#[derive(Clone, Copy, Default)]
struct VerbSummary {
    per_second: f64,
    p99: Duration,
}

/// What one load phase measured: the failed requests and a summary per verb.
struct LoadSummary {
    errors: usize,
    verbs: [VerbSummary; 5],
}

/// What one backend's run measured.
struct BackendSummary {
    load: LoadSummary,
    /// RSS growth per 10k objects created, in bytes.
    bytes_per_10k: f64,
}

/// Phase 2: load one server (started with `args`) with `clients` clients for `seconds`.
fn load(seconds: u64, clients: usize, args: &[String]) -> Result<LoadSummary, String> {
    let (mut server, started) = ServerProcess::spawn(args)?;
    server.wait_ready(started)?;
    prepare(&server.base, clients)?;
    let duration = Duration::from_secs(seconds);
    let begin = Instant::now();
    let deadline = begin + duration;
    let reports: Vec<ClientReport> = thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|id| {
                let base = server.base.as_str();
                scope.spawn(move || run_client(base, id, deadline))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let mut r = ClientReport::default();
                    r.fail("a client thread panicked".into());
                    r
                })
            })
            .collect()
    });
    let wall = begin.elapsed().as_secs_f64();
    if let Ok(Some(status)) = server.child.try_wait() {
        return Err(format!("the server exited during the load phase: {status}"));
    }

    println!(
        "load: {clients} clients, {wall:.1} s, loopback, mix 20% create / 40% get / \
         10% list (limit={LIST_LIMIT}) / 20% update / 10% merge-patch"
    );
    println!(
        "{:<12} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "verb", "requests", "req/s", "p50", "p90", "p99", "max"
    );
    let mut total = 0;
    let mut verbs = [VerbSummary::default(); 5];
    for verb in Verb::ALL {
        let mut all: Vec<Duration> = reports
            .iter()
            .flat_map(|r| r.latencies[verb.index()].iter().copied())
            .collect();
        all.sort();
        total += all.len();
        verbs[verb.index()] = VerbSummary {
            per_second: all.len() as f64 / wall,
            p99: percentile(&all, 0.99),
        };
        println!(
            "{:<12} {:>9} {:>10.0} {:>10} {:>10} {:>10} {:>10}",
            verb.name(),
            all.len(),
            all.len() as f64 / wall,
            ms(percentile(&all, 0.5)),
            ms(percentile(&all, 0.9)),
            ms(percentile(&all, 0.99)),
            ms(all.last().copied().unwrap_or_default()),
        );
    }
    println!("{:<12} {:>9} {:>10.0}", "total", total, total as f64 / wall);
    let errors: usize = reports.iter().map(|r| r.errors).sum();
    println!("errors: {errors}");
    for sample in reports.iter().flat_map(|r| r.error_samples.iter()).take(5) {
        println!("  {sample}");
    }
    Ok(LoadSummary { errors, verbs })
}

/// The phases on one backend; an etcd run starts (and removes) its own etcd.
fn run_backend(backend: Backend, settings: &Settings) -> Result<BackendSummary, String> {
    println!("== backend: {}", backend.name());
    // Each phase that stores objects gets its own etcd, so one phase's objects do not
    // weigh on the next; dropping it kills etcd and removes its data.
    let etcd_args = |etcd: &Option<common::Etcd>| -> Vec<String> {
        match etcd {
            None => Vec::new(),
            Some(etcd) => vec!["--etcd-servers".to_owned(), etcd.url()],
        }
    };
    let etcd = start_etcd(backend);
    let args = etcd_args(&etcd);
    startup(settings.runs, &args).map_err(|e| format!("startup: {e}"))?;
    let load = load(settings.seconds, settings.clients, &args).map_err(|e| format!("load: {e}"))?;
    drop(etcd);
    let etcd = start_etcd(backend);
    let bytes_per_10k = memory(settings.objects, settings.clients, &etcd_args(&etcd))
        .map_err(|e| format!("memory: {e}"))?;
    Ok(BackendSummary {
        load,
        bytes_per_10k,
    })
}

/// A fresh single-member etcd for the etcd backend, none for the embedded store.
fn start_etcd(backend: Backend) -> Option<common::Etcd> {
    match backend {
        Backend::Memory => None,
        Backend::Etcd => {
            let etcd = common::Etcd::start();
            etcd.wait_ready();
            Some(etcd)
        }
    }
}

/// The resident set size of process `pid`, in bytes.
fn rss_of(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("reading /proc/{pid}/status: {e}"))?;
    crd_apiserver::metrics::rss_of_status(&status)
        .ok_or_else(|| format!("no VmRSS in /proc/{pid}/status"))
}

fn mib(bytes: f64) -> String {
    format!("{:.1} MiB", bytes / (1024.0 * 1024.0))
}

/// How long the memory phase waits before reading RSS.
const RSS_SETTLE: Duration = Duration::from_millis(500);

/// Phase 3: RSS of a fresh server before and after `objects` creates through the full
/// pipeline (the create mix's objects, spread over `clients` namespaces).
fn memory(objects: u64, clients: usize, args: &[String]) -> Result<f64, String> {
    let (mut server, started) = ServerProcess::spawn(args)?;
    server.wait_ready(started)?;
    prepare(&server.base, clients)?;
    // One object first, so lazily built per-CRD state is not counted per object.
    let warm_agent = agent(REQUEST_TIMEOUT);
    let first = format!(
        "{}/apis/{GROUP}/{VERSION}/namespaces/load-0/{PLURAL}",
        server.base
    );
    let (status, text) = send_json(
        &warm_agent,
        "POST",
        &first,
        "application/json",
        &load_object("load-0", "warm", 0),
    )?;
    if status != 201 {
        return Err(format!("creating the first object: {status} {text}"));
    }
    let pid = server.child.id();
    // Each reading after a pause: the allocator returns what requests freed after a
    // short delay, and transient buffers must not count as stored objects.
    thread::sleep(RSS_SETTLE);
    let before = rss_of(pid)?;
    let begin = Instant::now();
    let per_client = objects.div_ceil(clients as u64);
    let failures: Vec<String> = thread::scope(|scope| {
        let handles: Vec<_> = (0..clients)
            .map(|id| {
                let base = server.base.as_str();
                scope.spawn(move || -> Result<(), String> {
                    let agent = agent(REQUEST_TIMEOUT);
                    let ns = format!("load-{id}");
                    let url = format!("{base}/apis/{GROUP}/{VERSION}/namespaces/{ns}/{PLURAL}");
                    for n in 0..per_client as usize {
                        let name = format!("mem-{n}");
                        let body = load_object(&ns, &name, n);
                        let (status, text) =
                            send_json(&agent, "POST", &url, "application/json", &body)?;
                        if status != 201 {
                            return Err(format!("creating {ns}/{name}: {status} {text}"));
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(_) => Some("a client thread panicked".into()),
            })
            .collect()
    });
    if let Some(e) = failures.first() {
        return Err(e.clone());
    }
    let created = per_client * clients as u64;
    let elapsed = begin.elapsed();
    thread::sleep(RSS_SETTLE);
    let after = rss_of(pid)?;
    let delta = after.saturating_sub(before) as f64;
    let per_10k = delta / created as f64 * 10_000.0;
    println!(
        "memory: {created} objects created in {:.1} s ({:.0}/s); server RSS {} → {} (+{}), {} per 10k objects ({:.0} bytes per object)",
        elapsed.as_secs_f64(),
        created as f64 / elapsed.as_secs_f64(),
        mib(before as f64),
        mib(after as f64),
        mib(delta),
        mib(per_10k),
        delta / created as f64,
    );
    Ok(per_10k)
}

/// What the soak's watchers saw.
#[derive(Default)]
struct WatchTally {
    events: u64,
    reopened: u64,
    errors: Vec<String>,
}

/// One watcher: watches the soak namespace from now until `deadline`, reading every
/// event and reopening (from the last resourceVersion seen) when the server ends it.
fn soak_watcher(base: &str, deadline: Instant) -> WatchTally {
    use std::io::BufRead;
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(None)
        .build()
        .new_agent();
    let mut tally = WatchTally::default();
    let mut rv = String::new();
    while Instant::now() < deadline {
        let left = deadline
            .saturating_duration_since(Instant::now())
            .as_secs()
            .max(1);
        let mut url = format!(
            "{base}/apis/{GROUP}/{VERSION}/namespaces/soak/{PLURAL}?watch=true&timeoutSeconds={left}"
        );
        if !rv.is_empty() {
            url.push_str(&format!("&resourceVersion={rv}"));
        }
        let resp = match agent.get(&url).call() {
            Ok(r) if r.status().as_u16() == 200 => r,
            Ok(r) => {
                tally.errors.push(format!("watch answered {}", r.status()));
                return tally;
            }
            Err(e) => {
                tally.errors.push(format!("watch: {e}"));
                return tally;
            }
        };
        let reader = std::io::BufReader::new(resp.into_body().into_reader());
        for line in reader.lines() {
            let Ok(line) = line else { break };
            let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                continue;
            };
            if event["type"] == "ERROR" {
                // Expired (410): start over from now.
                rv.clear();
                break;
            }
            if let Some(v) = event["object"]["metadata"]["resourceVersion"].as_str() {
                rv = v.to_owned();
            }
            tally.events += 1;
        }
        tally.reopened += 1;
    }
    tally
}

/// One soak writer: merge-patches the shared objects round-robin, and every tenth
/// request creates or deletes a short-lived object; returns (requests, failures).
fn soak_writer(base: &str, id: usize, deadline: Instant) -> (u64, Vec<String>) {
    let agent = agent(REQUEST_TIMEOUT);
    let collection = format!("{base}/apis/{GROUP}/{VERSION}/namespaces/soak/{PLURAL}");
    let mut requests = 0u64;
    let mut failures = Vec::new();
    let mut n = 0usize;
    while Instant::now() < deadline && failures.len() < 3 {
        n += 1;
        let result = if n.is_multiple_of(10) {
            let name = format!("tmp-{id}-{}", n / 20);
            if n.is_multiple_of(20) {
                send_json(
                    &agent,
                    "POST",
                    &collection,
                    "application/json",
                    &load_object("soak", &name, n),
                )
                .map(|(s, t)| (s, 201, t))
            } else {
                let url = format!("{collection}/tmp-{id}-{}", n / 20);
                agent
                    .delete(&url)
                    .call()
                    .map_err(|e| format!("DELETE {url}: {e}"))
                    .map(|r| (r.status().as_u16(), 200, String::new()))
            }
        } else {
            let target = format!("{collection}/soak-{}", (n * 7 + id) % SOAK_OBJECTS);
            let patch = json!({"spec": {"replicas": n % 5, "env": {"WRITER": id.to_string(), "N": n.to_string()}}});
            send_json(
                &agent,
                "PATCH",
                &target,
                "application/merge-patch+json",
                &patch,
            )
            .map(|(s, t)| (s, 200, t))
        };
        requests += 1;
        match result {
            Ok((status, want, _)) if status == want => {}
            // A delete racing nothing: the object of this round was not created.
            Ok((404, 200, _)) => {}
            Ok((status, want, text)) => failures.push(format!("got {status}, want {want}: {text}")),
            Err(e) => failures.push(e),
        }
    }
    (requests, failures)
}

/// The soak on one backend: prints RSS over time and returns (warm, end) RSS in bytes.
fn soak(backend: Backend, seconds: u64, watches: usize, writers: usize) -> Result<(), String> {
    println!("== soak: backend {}", backend.name());
    let etcd = start_etcd(backend);
    let args: Vec<String> = match &etcd {
        None => Vec::new(),
        Some(etcd) => vec!["--etcd-servers".to_owned(), etcd.url()],
    };
    let (mut server, started) = ServerProcess::spawn(&args)?;
    server.wait_ready(started)?;
    prepare(&server.base, 0)?;
    let agent = agent(REQUEST_TIMEOUT);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "soak"}});
    let (status, text) = send_json(
        &agent,
        "POST",
        &format!("{}/api/v1/namespaces", server.base),
        "application/json",
        &ns,
    )?;
    if status != 201 {
        return Err(format!("creating namespace soak: {status} {text}"));
    }
    let collection = format!(
        "{}/apis/{GROUP}/{VERSION}/namespaces/soak/{PLURAL}",
        server.base
    );
    for i in 0..SOAK_OBJECTS {
        let (status, text) = send_json(
            &agent,
            "POST",
            &collection,
            "application/json",
            &load_object("soak", &format!("soak-{i}"), i),
        )?;
        if status != 201 {
            return Err(format!("creating soak-{i}: {status} {text}"));
        }
    }
    let pid = server.child.id();
    let start_rss = rss_of(pid)?;
    let begin = Instant::now();
    let deadline = begin + Duration::from_secs(seconds);
    let warm_up = Duration::from_secs(seconds / 3);
    let base = server.base.as_str();
    let (samples, tallies, writes) = thread::scope(|scope| {
        let watchers: Vec<_> = (0..watches)
            .map(|_| scope.spawn(move || soak_watcher(base, deadline)))
            .collect();
        let writer_handles: Vec<_> = (0..writers)
            .map(|id| scope.spawn(move || soak_writer(base, id, deadline)))
            .collect();
        let mut samples: Vec<(Duration, u64)> = Vec::new();
        while Instant::now() < deadline {
            if let Ok(rss) = rss_of(pid) {
                samples.push((begin.elapsed(), rss));
            }
            thread::sleep(Duration::from_secs(1));
        }
        let tallies: Vec<WatchTally> = watchers
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect();
        let writes: Vec<(u64, Vec<String>)> = writer_handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (0, vec!["a writer panicked".to_owned()]))
            })
            .collect();
        (samples, tallies, writes)
    });
    let wall = begin.elapsed().as_secs_f64();
    if let Ok(Some(status)) = server.child.try_wait() {
        return Err(format!("the server exited during the soak: {status}"));
    }
    let end_rss = rss_of(pid)?;
    let requests: u64 = writes.iter().map(|(n, _)| n).sum();
    let events: u64 = tallies.iter().map(|t| t.events).sum();
    let warm_rss = samples
        .iter()
        .find(|(t, _)| *t >= warm_up)
        .map(|(_, r)| *r)
        .unwrap_or(start_rss);
    let max_rss = samples.iter().map(|(_, r)| *r).max().unwrap_or(end_rss);
    println!(
        "soak: {wall:.0} s, {writers} writers ({requests} writes, {:.0}/s), {watches} watches ({events} events, {:.0}/s; reopened {} times)",
        requests as f64 / wall,
        events as f64 / wall,
        tallies.iter().map(|t| t.reopened).sum::<u64>(),
    );
    println!("rss over time (s → MiB):");
    let step = (samples.len() / 12).max(1);
    let line: Vec<String> = samples
        .iter()
        .step_by(step)
        .map(|(t, r)| format!("{}→{:.1}", t.as_secs(), *r as f64 / 1048576.0))
        .collect();
    println!("  {}", line.join("  "));
    let growth = end_rss as f64 - warm_rss as f64;
    let after_warm = (wall - warm_up.as_secs_f64()).max(1.0) / 60.0;
    println!(
        "rss: start {}, after warm-up ({} s) {}, end {}, max {}; growth after warm-up {} ({:+.1}%, {} per minute)",
        mib(start_rss as f64),
        warm_up.as_secs(),
        mib(warm_rss as f64),
        mib(end_rss as f64),
        mib(max_rss as f64),
        mib(growth),
        growth / warm_rss.max(1) as f64 * 100.0,
        mib(growth / after_warm),
    );
    let failures: Vec<&String> = writes
        .iter()
        .flat_map(|(_, f)| f)
        .chain(tallies.iter().flat_map(|t| &t.errors))
        .collect();
    if !failures.is_empty() {
        for f in failures.iter().take(5) {
            eprintln!("  {f}");
        }
        return Err(format!(
            "{} request(s) failed during the soak",
            failures.len()
        ));
    }
    Ok(())
}

/// The settings every phase reads from the environment.
struct Settings {
    runs: u64,
    seconds: u64,
    clients: usize,
    objects: u64,
}

fn main() -> ExitCode {
    // cargo passes `--bench` (and any filter) to every bench target; `soak` as a filter
    // (`cargo bench --bench load -- soak`) picks the soak.
    let soak_asked = std::env::args().skip(1).any(|a| a == "soak");
    let settings = (|| -> Result<(Vec<Backend>, Settings, bool), String> {
        let soak = match std::env::var("LOAD_MODE").as_deref() {
            Err(_) | Ok("load") => soak_asked,
            Ok("soak") => true,
            Ok(other) => return Err(format!("LOAD_MODE={other:?}: expected load or soak")),
        };
        Ok((
            Backend::from_env()?,
            Settings {
                runs: env_number("STARTUP_RUNS", 20)?,
                seconds: env_number("LOAD_SECONDS", 10)?,
                clients: env_number("LOAD_CLIENTS", 8)?.max(1) as usize,
                objects: env_number("LOAD_OBJECTS", 50_000)?.max(1),
            },
            soak,
        ))
    })();
    let (backends, settings, soak_mode) = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("load bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    if soak_mode {
        let knobs = (|| -> Result<(u64, u64), String> {
            Ok((
                env_number("SOAK_SECONDS", 120)?,
                env_number("SOAK_WATCHES", 4)?,
            ))
        })();
        let (seconds, watches) = match knobs {
            Ok(k) => k,
            Err(e) => {
                eprintln!("load bench: {e}");
                return ExitCode::FAILURE;
            }
        };
        for backend in backends {
            if let Err(e) = soak(backend, seconds.max(3), watches.max(1) as usize, 4) {
                eprintln!("load bench: soak on {}: {e}", backend.name());
                return ExitCode::FAILURE;
            }
            println!();
        }
        return ExitCode::SUCCESS;
    }
    let clients = settings.clients;
    let mut summaries = Vec::new();
    for backend in backends {
        match run_backend(backend, &settings) {
            Ok(summary) => summaries.push((backend, summary)),
            Err(e) => {
                eprintln!("load bench: {}: {e}", backend.name());
                return ExitCode::FAILURE;
            }
        }
        println!();
    }
    println!(
        "== summary ({clients} clients, throughput and p99 latency per verb; RSS per 10k objects)"
    );
    println!(
        "{:<8} {:>22} {:>22} {:>22} {:>14}",
        "backend", "create", "update", "get", "RSS/10k"
    );
    for (backend, summary) in &summaries {
        let cell = |verb: Verb| {
            let v = summary.load.verbs[verb.index()];
            format!("{:.0}/s p99 {}", v.per_second, ms(v.p99))
        };
        println!(
            "{:<8} {:>22} {:>22} {:>22} {:>14}",
            backend.name(),
            cell(Verb::Create),
            cell(Verb::Update),
            cell(Verb::Get),
            mib(summary.bytes_per_10k),
        );
    }
    let errors: usize = summaries.iter().map(|(_, s)| s.load.errors).sum();
    if errors > 0 {
        eprintln!("load bench: {errors} request(s) failed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
