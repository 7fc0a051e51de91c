//! Shared fixture for the end-to-end tests: a real `crd-apiserver` process on a free
//! port, a kubeconfig pointing at it, the real kubectl, and a small HTTP client.
//!
//! Each test binary uses a different subset of this module.
#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub mod outage;
pub mod webhook;

/// The kubectl every kubectl test drives (1.32 on the project's machines).
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// How long the server may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Prefix of the single line the server prints on stdout once it accepts requests.
const READY_PREFIX: &str = "crd-apiserver ready at ";

/// Name prefix of a test server's temp dir: `crd-apiserver-test-{test pid}-...`.
const SERVER_DIR_PREFIX: &str = "crd-apiserver-test-";

/// The file in a test server's temp dir that holds the server's pid.
const SERVER_PID_FILE: &str = "server.pid";

/// Path of the server binary: cargo's own for integration tests of the real crate,
/// else `CRD_APISERVER_BIN` (scratch crates and manual runs).
pub fn server_binary() -> PathBuf {
    if let Some(path) = option_env!("CARGO_BIN_EXE_crd-apiserver") {
        return PathBuf::from(path);
    }
    match std::env::var_os("CRD_APISERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => panic!(
            "no crd-apiserver binary: not built by cargo as part of this crate and \
             CRD_APISERVER_BIN is not set"
        ),
    }
}

/// The repository's `testdata/` folder, found from this file's own location so that
/// it works whether this module is compiled by the real crate or mounted by path.
pub fn testdata_dir() -> PathBuf {
    // `file!()` is relative to the manifest dir in the real crate and absolute when
    // mounted by path.
    let source = Path::new(file!());
    let this_file = if source.is_absolute() {
        source.to_path_buf()
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(source)
    };
    let repo = this_file
        .ancestors()
        .nth(3)
        .unwrap_or_else(|| panic!("cannot locate the repository from {}", this_file.display()));
    repo.join("testdata")
}

/// Reads a file below `testdata/`, failing loudly when it is missing.
pub fn testdata(relative: &str) -> String {
    let path = testdata_dir().join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Parses a YAML file below `testdata/` into JSON.
pub fn testdata_json(relative: &str) -> serde_json::Value {
    let text = testdata(relative);
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("parsing testdata/{relative}: {e}"))
}

/// A running `crd-apiserver` child process with its own temp dir; stopped on drop.
pub struct TestServer {
    child: Mutex<Child>,
    url: String,
    dir: PathBuf,
    kubeconfig: PathBuf,
    stderr_path: PathBuf,
    /// The etcd this server was given under `TEST_BACKEND=etcd`; stopped after it.
    etcd: Option<Etcd>,
}

impl TestServer {
    /// Starts the server with the default arguments (embedded storage).
    pub fn start() -> TestServer {
        TestServer::start_with(&[])
    }

    /// Starts the server with `--port 0 --kubeconfig-out <tmp>/kubeconfig` plus `extra`
    /// and waits for its ready line. With `TEST_BACKEND=etcd` in the environment (and no
    /// `--etcd-servers` in `extra`) the server gets its own fresh etcd, so every suite
    /// runs unchanged against the etcd backend.
    pub fn start_with(extra: &[&str]) -> TestServer {
        TestServer::start_listening(&["--port", "0"], extra, true)
    }

    /// Starts the server on the embedded store whatever `TEST_BACKEND` says, for what
    /// only the embedded store has (`--watch-history`).
    pub fn start_embedded(extra: &[&str]) -> TestServer {
        TestServer::start_listening(&["--port", "0"], extra, false)
    }

    /// [`TestServer::start_secure`] on the embedded store whatever `TEST_BACKEND` says.
    pub fn start_embedded_secure(extra: &[&str]) -> TestServer {
        TestServer::start_listening(&["--secure-port", "0"], extra, false)
    }

    /// Starts the server serving only HTTPS (`--secure-port 0`) plus `extra`; its URL
    /// is `https://127.0.0.1:PORT` and its kubeconfig carries the CA and admin token.
    pub fn start_secure(extra: &[&str]) -> TestServer {
        TestServer::start_listening(&["--secure-port", "0"], extra, true)
    }

    /// Starts the server with the `listen` flags, `--kubeconfig-out` and `extra`; on its
    /// own etcd when `backend_from_env` and `TEST_BACKEND=etcd`.
    fn start_listening(listen: &[&str], extra: &[&str], backend_from_env: bool) -> TestServer {
        TestServer::start_listening_env(listen, extra, backend_from_env, &[])
    }

    /// [`TestServer::start_with`] with these environment variables set (`Some`) or
    /// removed (`None`) for the server's process.
    pub fn start_with_env(extra: &[&str], env: &[(&str, Option<&str>)]) -> TestServer {
        TestServer::start_listening_env(&["--port", "0"], extra, true, env)
    }

    fn start_listening_env(
        listen: &[&str],
        extra: &[&str],
        backend_from_env: bool,
        env: &[(&str, Option<&str>)],
    ) -> TestServer {
        let etcd = match std::env::var("TEST_BACKEND").as_deref() {
            Ok("etcd") if backend_from_env && !extra.contains(&"--etcd-servers") => {
                let etcd = Etcd::start();
                etcd.wait_ready();
                Some(etcd)
            }
            Ok("etcd" | "memory") | Err(_) => None,
            Ok(other) => panic!("TEST_BACKEND={other:?}: expected memory or etcd"),
        };
        let etcd_url = etcd.as_ref().map(Etcd::url);
        let mut extra = extra.to_vec();
        if let Some(url) = &etcd_url {
            extra.extend(["--etcd-servers", url.as_str()]);
        }
        let extra = extra.as_slice();
        reap_abandoned_processes();
        let binary = server_binary();
        assert!(
            binary.exists(),
            "crd-apiserver binary {} does not exist",
            binary.display()
        );
        let dir = unique_temp_dir();
        let kubeconfig = dir.join("kubeconfig");
        let stderr_path = dir.join("server.stderr");
        let stderr_file = fs::File::create(&stderr_path)
            .unwrap_or_else(|e| panic!("creating {}: {e}", stderr_path.display()));
        let mut command = Command::new(&binary);
        for (name, value) in env {
            match value {
                Some(v) => command.env(name, v),
                None => command.env_remove(name),
            };
        }
        let mut child = command
            .args(listen)
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr_file))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
        let _ = fs::write(dir.join(SERVER_PID_FILE), child.id().to_string());
        let stdout = child.stdout.take();
        let url = match stdout.map(wait_for_ready_line) {
            Some(Ok(url)) => url,
            Some(Err(why)) => {
                let _ = child.kill();
                let status = child.wait().ok();
                let stderr = fs::read_to_string(&stderr_path).unwrap_or_default();
                let _ = fs::remove_dir_all(&dir);
                panic!(
                    "crd-apiserver {} {extra:?} did not become ready: {why}\nexit status: \
                     {status:?}\n--- stderr ---\n{stderr}",
                    binary.display()
                );
            }
            None => panic!("crd-apiserver stdout was not captured"),
        };
        assert!(
            kubeconfig.exists(),
            "server printed its ready line but did not write --kubeconfig-out {}",
            kubeconfig.display()
        );
        TestServer {
            child: Mutex::new(child),
            url,
            dir,
            kubeconfig,
            stderr_path,
            etcd,
        }
    }

    /// Base URL, e.g. `http://127.0.0.1:40123` (no trailing slash).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Path of the kubeconfig the server wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// This server's private temp dir (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `contents` to a file in the temp dir and returns its path.
    pub fn write_file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.join(name);
        fs::write(&path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The last `n` lines of the server's stderr, for failure reports.
    pub fn stderr_tail(&self, n: usize) -> String {
        let all = self.stderr();
        let lines: Vec<&str> = all.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// `Some(status)` when the server process has already exited.
    pub fn exited(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        child.try_wait().ok().flatten()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.lock().unwrap_or_else(|e| e.into_inner()).id()
    }

    /// The server's resident memory in MiB (`VmRSS` of `/proc/PID/status`).
    pub fn rss_mib(&self) -> f64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    }

    /// CPU time (user + system) the server has used, from `/proc/PID/stat`.
    pub fn cpu_time(&self) -> Duration {
        let stat = fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // Fields after the command name (which may hold spaces) start after ')'.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks: u64 = [11, 12]
            .iter()
            .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
            .sum();
        // Linux reports in USER_HZ, 100 on every supported architecture.
        Duration::from_millis(ticks * 10)
    }

    /// Sends SIGTERM and waits for the process to exit; returns its exit status, or
    /// `None` when it did not exit within the timeout (it is then killed).
    pub fn terminate(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        // A server frozen by `signal("STOP")` must be thawed to handle SIGTERM.
        for signal in ["-CONT", "-TERM"] {
            let _ = Command::new("kill")
                .arg(signal)
                .arg(child.id().to_string())
                .status();
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        None
    }

    /// Sends `signal` (e.g. `STOP` to freeze, `CONT` to thaw) to the server process.
    pub fn signal(&self, signal: &str) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap_or_else(|e| panic!("running kill: {e}"));
        assert!(status.success(), "kill -{signal} {} failed", child.id());
    }

    /// A kubectl command preconfigured for this server (own kubeconfig and caches).
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        assert!(
            Path::new(KUBECTL).exists(),
            "{KUBECTL} is missing: the kubectl tests need the real kubectl 1.32"
        );
        let mut cmd = Command::new(KUBECTL);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            // Per-server discovery cache: ports are reused between tests.
            .arg("--cache-dir")
            .arg(self.dir.join("kube-cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .env("HOME", &self.dir)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs kubectl with `args` against this server and returns its output.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_command(args)
            .output()
            .unwrap_or_else(|e| panic!("running {KUBECTL} {args:?}: {e}"))
    }

    /// Starts kubectl in the background with stdout piped line by line.
    pub fn kubectl_background(&self, args: &[&str]) -> BackgroundCommand {
        let mut child = self
            .kubectl_command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {KUBECTL} {args:?}: {e}"));
        let stdout = child.stdout.take();
        let (tx, rx) = mpsc::channel();
        if let Some(stdout) = stdout {
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        BackgroundCommand {
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// An HTTP client for this server that identifies itself as `user_agent`.
    pub fn http_as(&self, user_agent: &str) -> Http {
        Http::new(&self.url, user_agent)
    }

    /// An HTTP client for this server.
    pub fn http(&self) -> Http {
        self.http_as("crd-apiserver-integration/0")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.terminate();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Reads the server's stdout until the ready line; keeps draining it afterwards so the
/// server never blocks on a full pipe.
fn wait_for_ready_line(stdout: ChildStdout) -> Result<String, String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut first = String::new();
        let sent = match reader.read_line(&mut first) {
            Ok(0) => tx.send(Err("stdout closed before the ready line".to_string())),
            Ok(_) => tx.send(Ok(first)),
            Err(e) => tx.send(Err(format!("reading stdout: {e}"))),
        };
        if sent.is_ok() {
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
        }
    });
    let line = match rx.recv_timeout(READY_TIMEOUT) {
        Ok(result) => result?,
        Err(RecvTimeoutError::Timeout) => {
            return Err(format!("no ready line within {READY_TIMEOUT:?}"))
        }
        Err(RecvTimeoutError::Disconnected) => return Err("stdout reader stopped".to_string()),
    };
    let line = line.trim_end_matches(['\r', '\n']);
    let url = line
        .strip_prefix(READY_PREFIX)
        .ok_or_else(|| format!("first stdout line is not the ready line: {line:?}"))?;
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .or_else(|| url.strip_prefix("https://127.0.0.1:"))
        .ok_or_else(|| format!("ready line has an unexpected address: {line:?}"))?;
    match port.parse::<u16>() {
        Ok(p) if p != 0 => Ok(url.to_string()),
        _ => Err(format!("ready line has no usable port: {line:?}")),
    }
}

/// A fresh, empty directory under the system temp dir.
fn unique_temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!(
        "{SERVER_DIR_PREFIX}{}-{n}-{nanos}",
        std::process::id()
    ));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// A kubectl process running in the background (e.g. `get -w`); killed on drop.
pub struct BackgroundCommand {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl BackgroundCommand {
    /// Waits up to `timeout` for the next stdout line whose text satisfies `wanted`,
    /// skipping others; `Err` lists every line seen so far.
    pub fn wait_for_line(
        &mut self,
        timeout: Duration,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if wanted(&line) {
                        return Ok(line);
                    }
                }
                Err(_) => {
                    let stderr = self.stop();
                    return Err(format!(
                        "no matching line within {timeout:?}; lines so far: {:#?}\nstderr: {stderr}",
                        self.seen
                    ));
                }
            }
        }
    }

    /// Reads lines until none arrives for `quiet`; returns them (they are also kept in
    /// `seen`).
    pub fn drain(&mut self, quiet: Duration) -> Vec<String> {
        let mut extra = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(quiet) {
            self.seen.push(line.clone());
            extra.push(line);
        }
        extra
    }

    /// Every stdout line read so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// Kills the process and returns what it wrote to stderr.
    pub fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        stderr
    }
}

impl Drop for BackgroundCommand {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response as the tests see it: any status, headers and raw body.
#[derive(Debug, Clone)]
pub struct HttpResponse {
    /// HTTP status code.
    pub status: u16,
    /// Headers in arrival order, names lowercased.
    pub headers: Vec<(String, String)>,
    /// Raw body bytes.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The body parsed as JSON, `None` when it is not JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body as (lossy) UTF-8 text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// All values of header `name` joined by ", " (how Python's requests and Go's
    /// `Header.Values` consumers see repeated headers); `None` when absent.
    pub fn header(&self, name: &str) -> Option<String> {
        let values: Vec<&str> = self
            .headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect();
        if values.is_empty() {
            None
        } else {
            Some(values.join(", "))
        }
    }
}

/// A minimal HTTP client for the server; non-2xx statuses are responses, not errors.
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
    base: String,
}

impl Http {
    /// A client for `base` (e.g. `http://127.0.0.1:PORT`) sending `user_agent`.
    pub fn new(base: &str, user_agent: &str) -> Http {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(15)))
            .user_agent(user_agent)
            // The server is local: environment proxies must not apply.
            .proxy(None)
            .build()
            .new_agent();
        Http {
            agent,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// An HTTPS client for `base` trusting only the PEM CA `ca_pem`, presenting the
    /// PEM client certificate and key `client` when given.
    pub fn new_tls(
        base: &str,
        user_agent: &str,
        ca_pem: &str,
        client: Option<(&str, &str)>,
    ) -> Http {
        use ureq::tls::{Certificate, ClientCert, PrivateKey, RootCerts, TlsConfig};
        let ca = Certificate::from_pem(ca_pem.as_bytes()).unwrap_or_else(|e| panic!("CA PEM: {e}"));
        let client = client.map(|(cert, key)| {
            let cert =
                Certificate::from_pem(cert.as_bytes()).unwrap_or_else(|e| panic!("cert PEM: {e}"));
            let key =
                PrivateKey::from_pem(key.as_bytes()).unwrap_or_else(|e| panic!("key PEM: {e}"));
            ClientCert::new_with_certs(&[cert], key)
        });
        let tls = TlsConfig::builder()
            .root_certs(RootCerts::new_with_certs(&[ca]))
            .client_cert(client)
            .build();
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(15)))
            .user_agent(user_agent)
            .proxy(None)
            .tls_config(tls)
            .build()
            .new_agent();
        Http {
            agent,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// The base URL requests go to (no trailing slash).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Sends one request; `Err` only for transport failures (connection, timeout).
    pub fn request(
        &self,
        method: &str,
        path: &str,
        query: &[(String, String)],
        headers: &[(String, String)],
        body: Option<Vec<u8>>,
    ) -> Result<HttpResponse, String> {
        let mut url = format!("{}{}", self.base, path);
        if !query.is_empty() {
            let encoded: Vec<String> = query
                .iter()
                .map(|(k, v)| format!("{}={}", encode_query_part(k), encode_query_part(v)))
                .collect();
            url.push(if path.contains('?') { '&' } else { '?' });
            url.push_str(&encoded.join("&"));
        }
        let mut builder = ureq::http::Request::builder().method(method).uri(&url);
        for (k, v) in headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let sent = match body {
            Some(bytes) => builder
                .body(bytes)
                .map_err(|e| format!("building {method} {url}: {e}"))
                .and_then(|req| self.agent.run(req).map_err(|e| e.to_string())),
            None => builder
                .body(())
                .map_err(|e| format!("building {method} {url}: {e}"))
                .and_then(|req| self.agent.run(req).map_err(|e| e.to_string())),
        };
        let mut response = sent.map_err(|e| format!("{method} {url}: {e}"))?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = response
            .body_mut()
            .with_config()
            .limit(256 * 1024 * 1024)
            .read_to_vec()
            .map_err(|e| format!("{method} {url}: reading body: {e}"))?;
        Ok(HttpResponse {
            status,
            headers,
            body,
        })
    }

    /// GET `path` accepting JSON; panics on transport failure.
    pub fn get(&self, path: &str) -> HttpResponse {
        self.request("GET", path, &[], &json_accept(), None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sends `body` as JSON with `method` to `path`; panics on transport failure.
    pub fn send_json(&self, method: &str, path: &str, body: &serde_json::Value) -> HttpResponse {
        let mut headers = json_accept();
        headers.push(("Content-Type".to_string(), "application/json".to_string()));
        let bytes = serde_json::to_vec(body).unwrap_or_else(|e| panic!("encoding body: {e}"));
        self.request(method, path, &[], &headers, Some(bytes))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A JSON merge patch (`application/merge-patch+json`) of `path`.
    pub fn merge_patch(&self, path: &str, patch: &serde_json::Value) -> HttpResponse {
        let mut headers = json_accept();
        headers.push((
            "Content-Type".to_string(),
            "application/merge-patch+json".to_string(),
        ));
        let bytes = serde_json::to_vec(patch).unwrap_or_else(|e| panic!("encoding body: {e}"));
        self.request("PATCH", path, &[], &headers, Some(bytes))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// A watch of `path` for `seconds` (`timeoutSeconds`) with `query` added: the
    /// whole stream once the server ends it.
    pub fn watch_for(&self, path: &str, seconds: u32, query: &[(&str, &str)]) -> HttpResponse {
        let mut q = vec![
            ("watch".to_string(), "true".to_string()),
            ("timeoutSeconds".to_string(), seconds.to_string()),
        ];
        for (k, v) in query {
            q.retain(|(have, _)| have != k);
            q.push((k.to_string(), v.to_string()));
        }
        self.request("GET", path, &q, &[], None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Polls GET `path` until it answers `status` or `timeout` passes; returns the
    /// last response.
    pub fn wait_for_status(&self, path: &str, status: u16, timeout: Duration) -> HttpResponse {
        let deadline = Instant::now() + timeout;
        loop {
            let response = self.request("GET", path, &[], &json_accept(), None);
            if let Ok(r) = &response {
                if r.status == status || Instant::now() >= deadline {
                    return r.clone();
                }
            } else if Instant::now() >= deadline {
                panic!("GET {path}: {response:?}");
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The `details.causes` of a `Status` body as `field: message` lines.
pub fn causes(status: &serde_json::Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    format!(
                        "{}: {}",
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `Accept: application/json`, the default for API calls in these tests.
pub fn json_accept() -> Vec<(String, String)> {
    vec![("Accept".to_string(), "application/json".to_string())]
}

/// Percent-encodes a query key or value (RFC 3986 unreserved characters stay).
pub fn encode_query_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Polls `check` every 50 ms until it returns `Some` or `timeout` passes.
pub fn poll<T>(timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Renders a process output for assertion messages.
pub fn describe_output(output: &Output) -> String {
    format!(
        "exit: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

// ---------------------------------------------------------------------------
// etcd: real members on loopback ports for the etcd-backed suites.

/// How long a fresh etcd member or cluster may take to serve a linearizable read.
const ETCD_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Name prefix of an etcd member's temp dir: `crd-apiserver-etcd-{test pid}-{port}`.
const ETCD_DIR_PREFIX: &str = "crd-apiserver-etcd-";

/// The file in an etcd member's temp dir that holds its pid.
const ETCD_PID_FILE: &str = "etcd.pid";

/// The etcd binary: `ETCD_BIN`, else Debian's `etcd-server` at `/usr/bin/etcd`; a
/// missing binary fails the test (`scripts/test.sh` installs it).
pub fn etcd_binary() -> PathBuf {
    let binary =
        PathBuf::from(std::env::var("ETCD_BIN").unwrap_or_else(|_| "/usr/bin/etcd".into()));
    assert!(
        binary.is_file(),
        "the etcd tests need etcd at {} (install Debian's etcd-server, or set ETCD_BIN)",
        binary.display()
    );
    binary
}

/// A loopback port nobody listens on right now.
///
/// Ports come from below Linux's ephemeral range (32768 up), which the kernel hands to
/// outgoing connections: a port taken from that range could be given to some client's
/// connection before the process meant to listen on it binds it. Each test process
/// walks its own stretch of 10000..32000 (by pid), skipping ports in use.
pub fn free_port() -> u16 {
    const LOW: u32 = 10_000;
    const SPAN: u32 = 22_000;
    static NEXT: AtomicUsize = AtomicUsize::new(usize::MAX);
    let _ = NEXT.compare_exchange(
        usize::MAX,
        (std::process::id() as usize * 97) % SPAN as usize,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = (LOW + (NEXT.fetch_add(1, Ordering::SeqCst) as u32 % SPAN)) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {LOW}..{}", LOW + SPAN)
}

/// PEM files of a test CA, etcd's serving certificate and a client certificate.
pub struct TlsFiles {
    /// The CA that signed both certificates (`--etcd-cafile`).
    pub ca: PathBuf,
    /// etcd's serving certificate, for 127.0.0.1 and localhost.
    pub server_cert: PathBuf,
    /// Its key.
    pub server_key: PathBuf,
    /// A client certificate etcd accepts (`--etcd-certfile`).
    pub client_cert: PathBuf,
    /// Its key (`--etcd-keyfile`).
    pub client_key: PathBuf,
}

impl TlsFiles {
    /// Writes a fresh CA, a server certificate for 127.0.0.1 and a client certificate.
    pub fn generate(dir: &Path) -> TlsFiles {
        use rcgen::{
            BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
        };
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).expect("CA certificate");
        let ca = Issuer::new(ca_params, ca_key);
        let leaf = |names: Vec<String>, usage: Vec<ExtendedKeyUsagePurpose>| {
            let key = KeyPair::generate().expect("leaf key");
            let mut params = CertificateParams::new(names).expect("leaf params");
            params.extended_key_usages = usage;
            let cert = params.signed_by(&key, &ca).expect("leaf certificate");
            (cert.pem(), key.serialize_pem())
        };
        let (server_cert, server_key) = leaf(
            vec!["127.0.0.1".to_owned(), "localhost".to_owned()],
            vec![
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        );
        let (client_cert, client_key) = leaf(Vec::new(), vec![ExtendedKeyUsagePurpose::ClientAuth]);
        let write = |name: &str, pem: &str| {
            let path = dir.join(name);
            fs::write(&path, pem).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
            path
        };
        TlsFiles {
            ca: write("ca.crt", &ca_cert.pem()),
            server_cert: write("server.crt", &server_cert),
            server_key: write("server.key", &server_key),
            client_cert: write("client.crt", &client_cert),
            client_key: write("client.key", &client_key),
        }
    }
}

/// A test CA that signs client certificates.
pub struct TestCa {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl TestCa {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> TestCa {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let key = KeyPair::generate().expect("CA key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("CA certificate");
        TestCa {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A client certificate (PEM cert, PEM key) for CN `cn` and organizations `orgs`.
    pub fn client(&self, cn: &str, orgs: &[&str]) -> (String, String) {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair};
        let key = KeyPair::generate().expect("client key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client params");
        params.distinguished_name.push(DnType::CommonName, cn);
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("client certificate");
        (cert.pem(), key.serialize_pem())
    }

    /// A serving certificate (PEM cert, PEM key) for the DNS names `dns` and 127.0.0.1.
    pub fn server(&self, dns: &[&str]) -> (String, String) {
        use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, KeyPair, SanType};
        let key = KeyPair::generate().expect("server key");
        let names: Vec<String> = dns.iter().map(|d| d.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("server params");
        params.distinguished_name.push(DnType::CommonName, dns[0]);
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("server certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// The admin bearer token the server put into its kubeconfig (HTTPS servers).
pub fn admin_token(server: &TestServer) -> String {
    let text = fs::read_to_string(server.kubeconfig()).expect("kubeconfig");
    let config: serde_json::Value = serde_norway::from_str(&text).expect("kubeconfig YAML");
    config
        .pointer("/users/0/user/token")
        .and_then(serde_json::Value::as_str)
        .expect("token in the kubeconfig")
        .to_string()
}

/// The serving CA the server put into its kubeconfig (HTTPS servers).
pub fn kubeconfig_ca(server: &TestServer) -> Option<String> {
    let text = fs::read_to_string(server.kubeconfig()).expect("kubeconfig");
    let config: serde_json::Value = serde_norway::from_str(&text).expect("kubeconfig YAML");
    let data = config
        .pointer("/clusters/0/cluster/certificate-authority-data")?
        .as_str()?
        .to_string();
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD
        .decode(data)
        .expect("base64 CA");
    Some(String::from_utf8(pem).expect("PEM text"))
}

/// One etcd member on loopback ports with its own temp data dir; killed and its dir
/// removed on drop.
pub struct Etcd {
    binary: PathBuf,
    dir: PathBuf,
    name: String,
    client_port: u16,
    peer_port: u16,
    /// etcd's `--initial-cluster`: this member alone, or every member of a cluster.
    initial_cluster: String,
    /// Serve clients over TLS, requiring client certificates signed by its CA.
    tls: Option<TlsFiles>,
    /// More etcd flags, e.g. `--grpc-keepalive-interval 1s`.
    extra_args: Vec<String>,
    child: Option<Child>,
}

impl Etcd {
    /// Starts a single-member etcd on free ports.
    pub fn start() -> Etcd {
        let mut etcd = Etcd::stopped();
        etcd.restart();
        etcd
    }

    /// Prepares a single-member etcd on free ports without starting it.
    pub fn stopped() -> Etcd {
        Etcd::member("default")
    }

    /// Starts a single-member etcd with more flags (`["--grpc-keepalive-interval", "1s"]`).
    pub fn start_with(args: &[&str]) -> Etcd {
        let mut etcd = Etcd::stopped();
        etcd.extra_args = args.iter().map(|a| (*a).to_owned()).collect();
        etcd.restart();
        etcd
    }

    /// Starts etcd serving clients over TLS with client-certificate authentication.
    pub fn start_tls() -> Etcd {
        let mut etcd = Etcd::stopped();
        etcd.tls = Some(TlsFiles::generate(&etcd.dir));
        etcd.restart();
        etcd
    }

    /// A member named `name` on fresh ports and an empty temp dir, not started.
    fn member(name: &str) -> Etcd {
        reap_abandoned_processes();
        let binary = etcd_binary();
        let client_port = free_port();
        let peer_port = free_port();
        let dir = std::env::temp_dir().join(format!(
            "{ETCD_DIR_PREFIX}{}-{client_port}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        let initial_cluster = format!("{name}=http://127.0.0.1:{peer_port}");
        Etcd {
            binary,
            dir,
            name: name.to_owned(),
            client_port,
            peer_port,
            initial_cluster,
            tls: None,
            extra_args: Vec::new(),
            child: None,
        }
    }

    /// The client URL, e.g. `http://127.0.0.1:40123` (`https://` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    fn peer_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.peer_port)
    }

    /// The TLS files of a member started with [`Etcd::start_tls`].
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    /// Whether the process runs (it may still be electing a leader).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Starts (again) on the same ports and data.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "etcd is already running");
        let client = self.url();
        let peer = self.peer_url();
        let log_path = self.dir.join("etcd.log");
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .unwrap_or_else(|e| panic!("opening {}: {e}", log_path.display()));
        let log_copy = log
            .try_clone()
            .unwrap_or_else(|e| panic!("cloning the etcd log handle: {e}"));
        let mut command = Command::new(&self.binary);
        if let Some(tls) = &self.tls {
            command
                .arg("--cert-file")
                .arg(&tls.server_cert)
                .arg("--key-file")
                .arg(&tls.server_key)
                .arg("--trusted-ca-file")
                .arg(&tls.ca)
                .arg("--client-cert-auth");
        }
        let child = command
            .args(["--name", &self.name])
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial_cluster])
            .args(["--initial-cluster-state", "new"])
            // Peers of one cluster share the token, so members of clusters started by
            // other tests on reused ports never join each other.
            .args(["--initial-cluster-token", &self.cluster_token()])
            // Debian's etcd (3.4.23) may answer progress requests ahead of events
            // (etcd-io/etcd#15220), so the server takes progress only from etcd's
            // periodic notifications there: tests want them often (README, etcd).
            .args(["--experimental-watch-progress-notify-interval", "100ms"])
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(log_copy)
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", self.binary.display()));
        let _ = fs::write(self.dir.join(ETCD_PID_FILE), child.id().to_string());
        self.child = Some(child);
    }

    fn cluster_token(&self) -> String {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.initial_cluster.bytes() {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        format!("crd-apiserver-test-{hash:016x}")
    }

    /// Kills etcd (like a crash: SIGKILL) and waits for it to exit; the data stays.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends `signal` (e.g. `STOP` to freeze, `CONT` to thaw) to the running etcd.
    pub fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("etcd is running");
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// The tail of etcd's log, for failure reports.
    pub fn log_tail(&self, n: usize) -> String {
        let all = fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default();
        let lines: Vec<&str> = all.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// POSTs `body` to etcd's JSON gRPC gateway (`/v3/kv/range`, ...); `Err` with the
    /// status and body when etcd refuses. Plain-HTTP members only.
    pub fn gateway(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<serde_json::Value, String> {
        assert!(self.tls.is_none(), "the gateway helpers speak plain HTTP");
        let response = Http::new(&self.url(), "crd-apiserver-integration/0").request(
            "POST",
            path,
            &[],
            &[("Content-Type".to_owned(), "application/json".to_owned())],
            Some(body.to_string().into_bytes()),
        )?;
        match response.json() {
            Some(json) if response.status == 200 => Ok(json),
            _ => Err(format!("{path}: {} {}", response.status, response.text())),
        }
    }

    /// Waits until the member serves a linearizable read (it has a leader).
    pub fn wait_ready(&self) {
        let ready = poll(ETCD_READY_TIMEOUT, || {
            self.gateway(
                "/v3/kv/range",
                &serde_json::json!({"key": base64_text(b"/")}),
            )
            .ok()
        });
        assert!(
            ready.is_some(),
            "etcd {} not ready within {ETCD_READY_TIMEOUT:?}\n--- etcd log ---\n{}",
            self.url(),
            self.log_tail(30)
        );
    }

    /// Every key under `prefix` with its value, read through the gateway.
    pub fn keys(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        let mut end = prefix.as_bytes().to_vec();
        // etcd's prefix range: the prefix with its last byte incremented.
        if let Some(last) = end.last_mut() {
            *last += 1;
        }
        let response = self
            .gateway(
                "/v3/kv/range",
                &serde_json::json!({"key": base64_text(prefix.as_bytes()), "range_end": base64_text(&end)}),
            )
            .unwrap_or_else(|e| panic!("reading keys under {prefix}: {e}"));
        let kvs = response
            .get("kvs")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        kvs.iter()
            .map(|kv| {
                let field = |name: &str| {
                    base64_bytes(
                        kv.get(name)
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or(""),
                    )
                };
                (
                    String::from_utf8_lossy(&field("key")).into_owned(),
                    field("value"),
                )
            })
            .collect()
    }

    /// This member's id and the id of the leader it follows, as the gateway prints
    /// them; `None` when it does not answer.
    pub fn member_and_leader(&self) -> Option<(String, String)> {
        // A stopped member answers nothing.
        self.child.as_ref()?;
        let status = self
            .gateway("/v3/maintenance/status", &serde_json::json!({}))
            .ok()?;
        let id = |v: Option<&serde_json::Value>| v?.as_str().map(str::to_owned);
        Some((
            id(status.pointer("/header/member_id"))?,
            id(status.get("leader"))?,
        ))
    }

    /// How many watches etcd holds (its `etcd_debugging_mvcc_watcher_total` gauge).
    pub fn watchers(&self) -> u64 {
        let text = ureq::get(&format!("{}/metrics", self.url()))
            .call()
            .unwrap_or_else(|e| panic!("reading etcd's metrics: {e}"))
            .into_body()
            .read_to_string()
            .unwrap_or_else(|e| panic!("reading etcd's metrics: {e}"));
        text.lines()
            .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
            .unwrap_or_else(|| panic!("no watcher gauge in etcd's metrics"))
    }

    /// The watcher count once it has stayed the same for a second and a half (within
    /// half a minute): the server's own watches open just after start-up, later on a
    /// loaded machine.
    pub fn settled_watchers(&self) -> u64 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mut last = self.watchers();
        let mut since = std::time::Instant::now();
        while since.elapsed() < std::time::Duration::from_millis(1500)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(100));
            let now = self.watchers();
            if now != last {
                last = now;
                since = std::time::Instant::now();
            }
        }
        last
    }

    /// The current store revision, read through the gateway.
    pub fn revision(&self) -> i64 {
        let response = self
            .gateway(
                "/v3/kv/range",
                &serde_json::json!({"key": base64_text(b"/"), "count_only": true}),
            )
            .unwrap_or_else(|e| panic!("reading the revision: {e}"));
        // The gateway prints 64-bit numbers as strings.
        response
            .pointer("/header/revision")
            .and_then(serde_json::Value::as_str)
            .and_then(|r| r.parse().ok())
            .unwrap_or_else(|| panic!("no revision in {response}"))
    }

    /// Compacts etcd's history up to `revision` through the gateway.
    pub fn compact(&self, revision: i64) {
        self.gateway(
            "/v3/kv/compaction",
            &serde_json::json!({"revision": revision.to_string(), "physical": true}),
        )
        .unwrap_or_else(|e| panic!("compacting to {revision}: {e}"));
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A frozen etcd must be thawed to die cleanly.
            let _ = Command::new("kill")
                .arg("-CONT")
                .arg(child.id().to_string())
                .status();
        }
        self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Several etcd members on loopback forming one cluster; every member is killed on drop.
pub struct EtcdCluster {
    /// The members, in `--initial-cluster` order.
    pub members: Vec<Etcd>,
}

impl EtcdCluster {
    /// Starts a new cluster of `size` members and waits until each serves reads.
    pub fn start(size: usize) -> EtcdCluster {
        let mut members: Vec<Etcd> = (0..size).map(|i| Etcd::member(&format!("m{i}"))).collect();
        let initial = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url()))
            .collect::<Vec<_>>()
            .join(",");
        for member in &mut members {
            member.initial_cluster = initial.clone();
            member.restart();
        }
        let cluster = EtcdCluster { members };
        for member in &cluster.members {
            member.wait_ready();
        }
        cluster
    }

    /// The index of the member that leads now, as the members report it.
    pub fn leader(&self) -> Option<usize> {
        let ids: Vec<Option<(String, String)>> =
            self.members.iter().map(Etcd::member_and_leader).collect();
        ids.iter()
            .position(|id| id.as_ref().is_some_and(|(member, leader)| member == leader))
    }

    /// Moves leadership to member `to` (asked of the current leader) and waits until
    /// it leads.
    pub fn make_leader(&self, to: usize) {
        let Some((target, _)) = self.members[to].member_and_leader() else {
            panic!("member {to} does not answer");
        };
        let moved = poll(ETCD_READY_TIMEOUT, || {
            let leader = self.leader()?;
            if leader == to {
                return Some(());
            }
            let _ = self.members[leader].gateway(
                "/v3/maintenance/transfer-leadership",
                &serde_json::json!({ "targetID": target }),
            );
            None
        });
        assert!(moved.is_some(), "member {to} did not become the leader");
    }

    /// Every member's client URL, comma-separated (`--etcd-servers`).
    pub fn urls(&self) -> String {
        self.members
            .iter()
            .map(Etcd::url)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Kills test servers and etcd members left behind by test processes that died
/// without dropping them (a killed test binary), found by their temp dirs and the pid
/// files in them; once per test process.
fn reap_abandoned_processes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let owned = [
                (SERVER_DIR_PREFIX, SERVER_PID_FILE),
                (ETCD_DIR_PREFIX, ETCD_PID_FILE),
            ]
            .into_iter()
            .find_map(|(prefix, pid_file)| Some((name.strip_prefix(prefix)?, pid_file)));
            let Some((rest, pid_file)) = owned else {
                continue;
            };
            let owner = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let Some(owner) = owner else { continue };
            if Path::new(&format!("/proc/{owner}")).exists() {
                continue;
            }
            let dir = entry.path();
            let pid = fs::read_to_string(dir.join(pid_file))
                .ok()
                .and_then(|p| p.trim().parse::<u32>().ok());
            if let Some(pid) = pid {
                // Only the process that used this very dir: pids get reused.
                let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                if String::from_utf8_lossy(&cmdline).contains(&*dir.to_string_lossy()) {
                    let _ = Command::new("kill")
                        .arg("-KILL")
                        .arg(pid.to_string())
                        .status();
                }
            }
            let _ = fs::remove_dir_all(&dir);
        }
    });
}

pub fn base64_text(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn base64_bytes(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|e| panic!("etcd gateway sent invalid base64 {text:?}: {e}"))
}

impl TestServer {
    /// Starts the server on etcd (`--etcd-servers servers`, comma-separated URLs) plus `extra`.
    pub fn start_on_etcd(servers: &str, extra: &[&str]) -> TestServer {
        let mut args = vec!["--etcd-servers", servers];
        args.extend_from_slice(extra);
        TestServer::start_with(&args)
    }
}
