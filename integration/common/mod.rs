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

/// The kubectl every kubectl test drives (1.32 on the project's machines).
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// How long the server may take to print its ready line.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the server may take to exit after SIGTERM.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Prefix of the single line the server prints on stdout once it accepts requests.
const READY_PREFIX: &str = "crd-apiserver ready at ";

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
}

impl TestServer {
    /// Starts the server with the default arguments (embedded storage).
    pub fn start() -> TestServer {
        TestServer::start_with(&[])
    }

    /// Starts the server with `--port 0 --kubeconfig-out <tmp>/kubeconfig` plus `extra`
    /// and waits for its ready line.
    pub fn start_with(extra: &[&str]) -> TestServer {
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
        let mut child = Command::new(&binary)
            .arg("--port")
            .arg("0")
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr_file))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", binary.display()));
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

    /// Sends SIGTERM and waits for the process to exit; returns its exit status, or
    /// `None` when it did not exit within the timeout (it is then killed).
    pub fn terminate(&self) -> Option<ExitStatus> {
        let mut child = self.child.lock().unwrap_or_else(|e| e.into_inner());
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
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
        "crd-apiserver-test-{}-{n}-{nanos}",
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
