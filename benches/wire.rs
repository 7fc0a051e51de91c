//! Request throughput of the server against a floor, measured the way wrk measures a
//! server: N keep-alive HTTPS connections kept busy back to back, one verb at a time.
//!
//! Run: `cargo bench --bench wire` (`WIRE_SECONDS`, default 5 per phase;
//! `WIRE_CONNECTIONS`, default 32; `WIRE_BACKEND=memory|etcd|both`, default memory).
//!
//! Everything runs in this process on the same kind of runtime, so the server and the
//! floor share the machine with the same client: the server as `Server::start` runs it
//! (HTTPS, the full request pipeline, kube's admission plugins), and the floor — a
//! trivial hyper handler over the same rustls configuration and hyper builder,
//! returning the bytes a GET of the stored object returns. The client is hyper's HTTP/1.1
//! connection API over rustls, one task per connection; it reads every body.
//!
//! Phases (each prints requests/s, p50 and p99 latency, and its ratio to the floor):
//! floor; GET of stored custom resources; create (POST, the full pipeline: a default and
//! a CEL rule); update (PUT of each connection's own object with its current
//! resourceVersion); merge patch; list of 500 objects. On etcd (`WIRE_BACKEND=etcd`):
//! etcd's own put rate with the same value size, through this crate's etcd client with
//! the same concurrency (the ceiling), then create and GET through the server.
//! The targets of issue 19 are printed beside the measured values.

#[path = "../integration/common/mod.rs"]
mod common;

use bytes::Bytes;
use crd_apiserver::server::{Config, Server};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The binary's allocator (`src/main.rs`), so the server is measured as it ships
/// (remove these two lines to measure glibc's malloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GROUP: &str = "wire.bench.example.com";
const PLURAL: &str = "gadgets";

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{PLURAL}.{GROUP}")},
        "spec": {"group": GROUP, "scope": "Namespaced",
            "names": {"plural": PLURAL, "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object",
                        "x-kubernetes-validations": [{"rule": "self.replicas <= 1000000", "message": "too many"}],
                        "properties": {
                            "color": {"type": "string", "default": "red"},
                            "replicas": {"type": "integer"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}}}}}}}]}})
}

fn gadget(name: &str, replicas: u64) -> Value {
    json!({"apiVersion": format!("{GROUP}/v1"), "kind": "Gadget",
           "metadata": {"name": name, "labels": {"app": "bench"}},
           "spec": {"replicas": replicas, "labels": {"tier": "backend", "team": "wire"}}})
}

/// A request a connection sends: method, path, content type and body.
struct Req {
    method: http::Method,
    path: String,
    content_type: &'static str,
    body: Bytes,
}

impl Req {
    fn get(path: String) -> Req {
        Req {
            method: http::Method::GET,
            path,
            content_type: "",
            body: Bytes::new(),
        }
    }

    fn json(method: http::Method, path: String, content_type: &'static str, body: &Value) -> Req {
        Req {
            method,
            path,
            content_type,
            body: Bytes::from(serde_json::to_vec(body).expect("JSON")),
        }
    }
}

/// What one phase measured.
struct Measured {
    rate: f64,
    p50: Duration,
    p99: Duration,
    errors: u64,
    /// CPU time of this whole process (server, floor and client) per request: steadier
    /// than the rate on a shared machine, and the floor's is the client's share.
    cpu_per_request: Duration,
}

/// CPU time this process has used (user + system), from `/proc/self/stat`.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and stime are the
    // 12th and 13th, in clock ticks of 1/100 s on Linux.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// The client: TLS to `addr` (any certificate: the floor and the server are ours),
/// `token` as the bearer.
#[derive(Clone)]
struct Client {
    addr: SocketAddr,
    token: Arc<str>,
    tls: tokio_rustls::TlsConnector,
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

impl Client {
    fn new(addr: SocketAddr, token: &str) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(crd_apiserver::tls::SkipVerify(provider)))
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Client {
            addr,
            token: token.into(),
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
        }
    }

    async fn connect(&self) -> Sender {
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
        let tls = self.tls.connect(name, tcp).await.expect("TLS handshake");
        let (sender, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .expect("HTTP/1.1 handshake");
        tokio::spawn(conn);
        sender
    }

    /// Send `req`; the status and body.
    async fn send(&self, sender: &mut Sender, req: &Req) -> (u16, Bytes) {
        if sender.ready().await.is_err() {
            eprintln!("connection closed before {} {}", req.method, req.path);
        }
        let mut b = http::Request::builder()
            .method(req.method.clone())
            .uri(&req.path)
            .header("Host", "127.0.0.1")
            .header("Accept", "application/json")
            .header("Authorization", format!("Bearer {}", self.token));
        if !req.content_type.is_empty() {
            b = b.header("Content-Type", req.content_type);
        }
        let request = b.body(Full::new(req.body.clone())).expect("request");
        match sender.send_request(request).await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                let body = resp
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                (status, body)
            }
            Err(e) => (0, Bytes::from(e.to_string())),
        }
    }
}

/// Keep `connections` connections busy for `seconds`, connection `c`'s `i`-th request
/// made by `make(c, i, last_body)`; `ok` judges each status.
async fn phase<F>(
    client: &Client,
    connections: usize,
    seconds: Duration,
    ok: u16,
    make: F,
) -> Measured
where
    F: Fn(usize, u64, &Bytes) -> Req + Send + Sync + 'static,
{
    let make = Arc::new(make);
    let errors = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + seconds;
    let started = Instant::now();
    let cpu_before = process_cpu();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let client = client.clone();
        let make = make.clone();
        let errors = errors.clone();
        tasks.push(tokio::spawn(async move {
            let mut sender = client.connect().await;
            let mut latencies = Vec::with_capacity(65_536);
            let mut last = Bytes::new();
            let mut i = 0u64;
            while Instant::now() < deadline {
                let req = make(c, i, &last);
                let t = Instant::now();
                let (status, body) = client.send(&mut sender, &req).await;
                latencies.push(t.elapsed());
                if status != ok {
                    if errors.fetch_add(1, Ordering::Relaxed) < 3 {
                        eprintln!(
                            "  {} {} -> {status}: {}",
                            req.method,
                            req.path,
                            String::from_utf8_lossy(&body[..body.len().min(300)])
                        );
                    }
                    if status == 0 {
                        sender = client.connect().await;
                    }
                }
                last = body;
                i += 1;
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.expect("connection task"));
    }
    let elapsed = started.elapsed();
    let cpu = process_cpu().saturating_sub(cpu_before);
    all.sort();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Measured {
        rate: all.len() as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
        errors: errors.load(Ordering::Relaxed),
        cpu_per_request: cpu / (all.len().max(1) as u32),
    }
}

/// The floor: the server's TLS configuration and hyper builder, answering `body` to
/// every request, on a multi-thread runtime of its own as the server has.
async fn start_floor(body: Bytes) -> SocketAddr {
    let runtime: &'static tokio::runtime::Runtime = Box::leak(Box::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("floor runtime"),
    ));
    runtime.spawn(serve_floor(body)).await.expect("floor start")
}

async fn serve_floor(body: Bytes) -> SocketAddr {
    use hyper_util::server::conn::auto;
    let cert = crd_apiserver::tls::ServingCert::self_signed(
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        None,
    )
    .expect("certificate");
    let tls = tokio_rustls::TlsAcceptor::from(
        crd_apiserver::tls::server_config(&cert, Vec::new()).expect("TLS config"),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let tls = tls.clone();
            let body = body.clone();
            tokio::spawn(async move {
                let Ok(stream) = tls.accept(stream).await else {
                    return;
                };
                let svc = hyper::service::service_fn(move |_req| {
                    let body = body.clone();
                    async move {
                        Ok::<_, std::convert::Infallible>(
                            http::Response::builder()
                                .header("Content-Type", "application/json")
                                .body(Full::new(body))
                                .expect("response"),
                        )
                    }
                });
                let _ = auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

/// The admin token of a server's kubeconfig.
fn token_of(server: &Server) -> String {
    server
        .kubeconfig()
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: ").map(str::to_string))
        .expect("admin token")
}

fn report(name: &str, m: &Measured, floor: Option<f64>, target: &str) {
    let ratio = floor
        .map(|f| format!("{:5.1}% of floor", 100.0 * m.rate / f))
        .unwrap_or_default();
    println!(
        "{name:<28} {:>9.0}/s  p50 {:>7.2} ms  p99 {:>7.2} ms  cpu {:>5.0} us/req  {ratio:<16} {target}{}",
        m.rate,
        m.p50.as_secs_f64() * 1e3,
        m.p99.as_secs_f64() * 1e3,
        m.cpu_per_request.as_secs_f64() * 1e6,
        if m.errors > 0 {
            format!("  ({} errors)", m.errors)
        } else {
            String::new()
        }
    );
}

async fn start_server(etcd: Option<String>) -> Server {
    let config = Config {
        port: 0,
        serve_http: false,
        secure: Some(crd_apiserver::tls::SecureServing::default()),
        etcd_servers: etcd.into_iter().collect(),
        ..Config::default()
    };
    Server::start(config).await.expect("server start")
}

/// Set up the CRD and `objects` gadgets in `namespace` (through HTTP).
async fn seed(client: &Client, namespace: &str, objects: usize) {
    let mut s = client.connect().await;
    let crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions".to_string();
    let (status, _) = client
        .send(
            &mut s,
            &Req::json(http::Method::POST, crd_path, "application/json", &crd()),
        )
        .await;
    assert!(status == 201 || status == 409, "CRD: {status}");
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    let (status, _) = client
        .send(
            &mut s,
            &Req::json(
                http::Method::POST,
                "/api/v1/namespaces".into(),
                "application/json",
                &ns,
            ),
        )
        .await;
    assert!(status == 201 || status == 409, "namespace: {status}");
    let collection = format!("/apis/{GROUP}/v1/namespaces/{namespace}/{PLURAL}");
    for _ in 0..200 {
        if client.send(&mut s, &Req::get(collection.clone())).await.0 == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for i in 0..objects {
        let (status, body) = client
            .send(
                &mut s,
                &Req::json(
                    http::Method::POST,
                    collection.clone(),
                    "application/json",
                    &gadget(&format!("g{i}"), i as u64),
                ),
            )
            .await;
        assert_eq!(
            status,
            201,
            "object {i}: {}",
            String::from_utf8_lossy(&body)
        );
    }
}

/// GETs of the 1,000 seeded objects under `base`, spread over the connections.
fn gets(base: &str) -> impl Fn(usize, u64, &Bytes) -> Req + Send + Sync + 'static {
    let base = base.to_string();
    move |c, i, _| Req::get(format!("{base}/g{}", (c * 31 + i as usize) % 1000))
}

/// Creates of new objects under `base`, a name per connection and request.
fn creates(base: &str) -> impl Fn(usize, u64, &Bytes) -> Req + Send + Sync + 'static {
    let base = base.to_string();
    move |c, i, _| {
        Req::json(
            http::Method::POST,
            base.clone(),
            "application/json",
            &gadget(&format!("new-{c}-{i}"), i),
        )
    }
}

fn resource_version(body: &Bytes) -> String {
    serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| {
            v.pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .unwrap_or_default()
}

/// Whether phase `name` runs (`WIRE_PHASES`, comma-separated; default all).
fn wanted(name: &str) -> bool {
    match std::env::var("WIRE_PHASES") {
        Ok(list) if !list.is_empty() => list.split(',').any(|p| p == name),
        _ => true,
    }
}

async fn memory_phases(connections: usize, seconds: Duration) {
    let server = start_server(None).await;
    let client = Client::new(server.addr(), &token_of(&server));
    seed(&client, "bench", 1000).await;
    seed(&client, "list", 500).await;
    let base = format!("/apis/{GROUP}/v1/namespaces/bench/{PLURAL}");
    // The floor answers what a GET of a stored object answers.
    let mut s = client.connect().await;
    let (_, sample) = client.send(&mut s, &Req::get(format!("{base}/g0"))).await;
    let floor_addr = start_floor(sample.clone()).await;
    let floor_client = Client::new(floor_addr, "none");
    println!(
        "embedded store, {connections} connections, {} s per phase, object {} bytes",
        seconds.as_secs(),
        sample.len()
    );
    let path = base.clone();
    let floor = phase(&floor_client, connections, seconds, 200, move |_, _, _| {
        Req::get(format!("{path}/g0"))
    })
    .await;
    report("floor (same stack, static)", &floor, None, "");
    if wanted("get") {
        let get = phase(&client, connections, seconds, 200, gets(&base)).await;
        report(
            "GET custom resource",
            &get,
            Some(floor.rate),
            "target >= 75% of floor",
        );
    }
    if wanted("create") {
        let create = phase(&client, connections, seconds, 201, creates(&base)).await;
        report(
            "create (full pipeline)",
            &create,
            Some(floor.rate),
            "target >= 25,000/s",
        );
    }
    // Each connection updates its own object with the resourceVersion it last saw.
    if !wanted("update") {
        return list_phase(&client, connections, seconds, floor.rate, server).await;
    }
    let path = base.clone();
    let update = phase(&client, connections, seconds, 200, move |c, i, last| {
        let mut obj = gadget(&format!("g{c}"), i + 1);
        let rv = resource_version(last);
        if i == 0 || rv.is_empty() {
            return Req::get(format!("{path}/g{c}"));
        }
        obj["metadata"]["resourceVersion"] = json!(rv);
        Req::json(
            http::Method::PUT,
            format!("{path}/g{c}"),
            "application/json",
            &obj,
        )
    })
    .await;
    report(
        "update (PUT, own object)",
        &update,
        Some(floor.rate),
        "target >= 20,000/s",
    );
    let path = base.clone();
    let patch = phase(&client, connections, seconds, 200, move |c, i, _| {
        Req::json(
            http::Method::PATCH,
            format!("{path}/g{}", c + 100),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": i}}),
        )
    })
    .await;
    report(
        "merge patch",
        &patch,
        Some(floor.rate),
        "target >= 20,000/s",
    );
    list_phase(&client, connections, seconds, floor.rate, server).await;
}

/// The list phase, then the server's shutdown.
async fn list_phase(
    client: &Client,
    connections: usize,
    seconds: Duration,
    floor: f64,
    server: Server,
) {
    if wanted("list") {
        let list_path = format!("/apis/{GROUP}/v1/namespaces/list/{PLURAL}");
        let list = phase(client, connections, seconds, 200, move |_, _, _| {
            Req::get(list_path.clone())
        })
        .await;
        report("list of 500", &list, Some(floor), "target >= 1,500/s");
    }
    server.shutdown().await;
}

async fn etcd_phases(connections: usize, seconds: Duration) {
    let etcd = common::Etcd::start();
    etcd.wait_ready();
    let url = etcd.url();
    // etcd's own put rate with the value size the server stores, same concurrency.
    let storage = crd_apiserver::storage::etcd::EtcdStorage::connect(
        crd_apiserver::storage::etcd::EtcdConfig::new(vec![url.clone()]),
    )
    .await
    .expect("etcd client");
    let value = serde_json::to_vec(&gadget("g", 1)).expect("JSON");
    let value = [
        value.clone(),
        vec![b' '; 700usize.saturating_sub(value.len())],
    ]
    .concat();
    let storage = Arc::new(storage);
    let deadline = Instant::now() + seconds;
    let count = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..connections {
        let (storage, value, count) = (storage.clone(), value.clone(), count.clone());
        tasks.push(tokio::spawn(async move {
            use crd_apiserver::storage::Storage;
            let mut i = 0;
            while Instant::now() < deadline {
                let _ = storage
                    .create(&format!("/ceiling/{c}/{i}"), value.clone())
                    .await;
                count.fetch_add(1, Ordering::Relaxed);
                i += 1;
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let ceiling = count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    println!(
        "etcd, {connections} connections, {} s per phase; etcd's own put rate ({} B values): {ceiling:.0}/s",
        seconds.as_secs(),
        value.len()
    );
    let server = start_server(Some(url)).await;
    let client = Client::new(server.addr(), &token_of(&server));
    seed(&client, "bench", 1000).await;
    let base = format!("/apis/{GROUP}/v1/namespaces/bench/{PLURAL}");
    let create = phase(&client, connections, seconds, 201, creates(&base)).await;
    report(
        "create on etcd",
        &create,
        Some(ceiling),
        "(of etcd's put rate) target >= 3x kube's",
    );
    let get = phase(&client, connections, seconds, 200, gets(&base)).await;
    report("GET on etcd", &get, None, "");
    server.shutdown().await;
}

fn main() {
    // `cargo bench` passes `--bench`; a name filter selects nothing here.
    let seconds = Duration::from_secs(env_or("WIRE_SECONDS", 5));
    let connections = env_or("WIRE_CONNECTIONS", 32);
    let backend = std::env::var("WIRE_BACKEND").unwrap_or_else(|_| "memory".into());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    runtime.block_on(async {
        if backend == "memory" || backend == "both" {
            memory_phases(connections, seconds).await;
        }
        if backend == "etcd" || backend == "both" {
            etcd_phases(connections, seconds).await;
        }
    });
}
