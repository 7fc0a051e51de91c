//! Security end to end against the real binary: HTTPS with given and generated
//! certificates (and kubectl over it), kube's authenticators (token file, client
//! certificates, front-proxy request headers, anonymous), the authorizer's 403, the
//! plain-HTTP bind rule, and kube's request limits (413, JSON depth, 431, timeouts).

mod common;

use common::{json_accept, kubeconfig_ca, poll, Http, HttpResponse, TestCa, TestServer, TlsFiles};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// kube's body for failed authentication.
fn unauthorized_body() -> Value {
    json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
        "message":"Unauthorized","reason":"Unauthorized","code":401})
}

/// An HTTPS client trusting the server's generated CA.
fn https(server: &TestServer, client: Option<(&str, &str)>) -> Http {
    let ca = kubeconfig_ca(server).expect("the kubeconfig carries the generated CA");
    Http::new_tls(server.url(), "security-test", &ca, client)
}

fn get_with(http: &Http, path: &str, headers: &[(&str, &str)]) -> HttpResponse {
    let mut all = json_accept();
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    http.request("GET", path, &[], &all, None)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// The user name kube's AlwaysDeny 403 message names, for identity checks.
fn forbidden_user(r: &HttpResponse) -> String {
    assert_eq!(r.status, 403, "{}", r.text());
    let message = r.json().expect("Status")["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let start = message.find("User \"").expect("a user in the message") + 6;
    message[start..]
        .split('"')
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn tls_with_given_cert_files_serves_https() {
    let dir = tempdir("given");
    let files = TlsFiles::generate(&dir);
    let server = TestServer::start_secure(&[
        "--tls-cert-file",
        files.server_cert.to_str().unwrap_or_default(),
        "--tls-private-key-file",
        files.server_key.to_str().unwrap_or_default(),
    ]);
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let ca = std::fs::read_to_string(&files.ca).expect("CA");
    let http = Http::new_tls(server.url(), "security-test", &ca, None);
    let r = get_with(&http, "/version", &[]);
    assert_eq!(r.status, 200, "{}", r.text());
    // A lone leaf names no CA: the kubeconfig trusts the leaf itself (Go's verifier,
    // kubectl's, accepts a leaf found among its roots; `kubeconfig_out_verifies_a_tls_cert_file_server`).
    let leaf = std::fs::read_to_string(&files.server_cert).expect("leaf");
    let squash = |s: &str| s.split_whitespace().collect::<String>();
    assert_eq!(
        kubeconfig_ca(&server).map(|c| squash(&c)),
        Some(squash(&leaf))
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tls_with_generated_ca_kept_in_cert_dir_and_alpn_h2() {
    let dir = tempdir("certdir");
    let cert_dir = dir.join("certs");
    let cert_dir_arg = cert_dir.to_str().unwrap_or_default().to_string();
    let started = Instant::now();
    let server = TestServer::start_secure(&["--cert-dir", &cert_dir_arg]);
    let startup = started.elapsed();
    let ca = kubeconfig_ca(&server).expect("generated CA in the kubeconfig");
    assert!(cert_dir.join("apiserver.crt").exists() && cert_dir.join("apiserver.key").exists());
    let r = get_with(&https(&server, None), "/readyz", &[]);
    assert_eq!(r.status, 200, "{}", r.text());

    // ALPN offers HTTP/2 first, as kube's Go server does.
    let addr = server.url().trim_start_matches("https://").to_string();
    let handshakes = 20;
    let t = Instant::now();
    for _ in 0..handshakes {
        assert_eq!(
            alpn(&addr, &ca, &[b"h2", b"http/1.1"]),
            Some(b"h2".to_vec())
        );
    }
    let per_handshake = t.elapsed() / handshakes;
    assert_eq!(alpn(&addr, &ca, &[b"http/1.1"]), Some(b"http/1.1".to_vec()));
    eprintln!(
        "TLS: server start-up {startup:?} (with key generation), handshake {per_handshake:?}"
    );

    // A restart on the same --cert-dir reuses the pair: clients keep trusting it.
    drop(server);
    let again = TestServer::start_secure(&["--cert-dir", &cert_dir_arg]);
    assert_eq!(kubeconfig_ca(&again).as_deref(), Some(ca.as_str()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Completes a TLS handshake offering `protocols`; the protocol the server chose.
fn alpn(addr: &str, ca_pem: &str, protocols: &[&[u8]]) -> Option<Vec<u8>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA");
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
    let name = ServerName::try_from("127.0.0.1").expect("server name");
    let mut conn =
        rustls::ClientConnection::new(std::sync::Arc::new(config), name).expect("client");
    let mut tcp = TcpStream::connect(addr).expect("connect");
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).expect("handshake");
    }
    conn.alpn_protocol().map(<[u8]>::to_vec)
}

#[test]
fn kubectl_works_over_tls_with_the_generated_kubeconfig() {
    let server = TestServer::start_secure(&[]);
    let out = server.kubectl(&["create", "namespace", "team-a"]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
    let out = server.kubectl(&["get", "namespaces", "-o", "name"]);
    assert!(out.status.success(), "{}", common::describe_output(&out));
    let names = String::from_utf8_lossy(&out.stdout);
    assert!(names.lines().any(|l| l == "namespace/team-a"), "{names}");
}

#[test]
fn token_file_users_are_served_and_bad_tokens_get_kubes_401() {
    let dir = tempdir("tokens");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,uid-1,\"dev,ops\"\n").expect("token file");
    let server =
        TestServer::start_secure(&["--token-auth-file", tokens.to_str().unwrap_or_default()]);
    let http = https(&server, None);
    let r = get_with(
        &http,
        "/api/v1/namespaces",
        &[("Authorization", &bearer("alice-token"))],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = get_with(
        &http,
        "/api/v1/namespaces",
        &[("Authorization", &bearer("nope"))],
    );
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.json(), Some(unauthorized_body()));
    // No credentials: anonymous, allowed by AlwaysAllow.
    assert_eq!(get_with(&http, "/api/v1/namespaces", &[]).status, 200);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn always_deny_names_the_user_in_kubes_403() {
    let dir = tempdir("deny");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,uid-1,dev\n").expect("token file");
    let server = TestServer::start_secure(&[
        "--token-auth-file",
        tokens.to_str().unwrap_or_default(),
        "--authorization-mode",
        "AlwaysDeny",
    ]);
    let http = https(&server, None);
    let alice = [("Authorization", bearer("alice-token"))];
    let alice: Vec<(&str, &str)> = alice.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = get_with(
        &http,
        "/apis/stable.example.com/v1/namespaces/default/crontabs/my-cron",
        &alice,
    );
    assert_eq!(
        r.json(),
        Some(
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"crontabs.stable.example.com \"my-cron\" is forbidden: User \"alice\" cannot get resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"default\": Everything is forbidden.",
            "reason":"Forbidden",
            "details":{"name":"my-cron","group":"stable.example.com","kind":"crontabs"},"code":403})
        )
    );
    let r = get_with(&http, "/api/v1/namespaces", &[]);
    assert_eq!(
        r.json().expect("Status")["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope: Everything is forbidden."
    );
    let r = get_with(&http, "/healthz", &alice);
    assert_eq!(
        r.json().expect("Status")["message"],
        "forbidden: User \"alice\" cannot get path \"/healthz\": Everything is forbidden."
    );
    // The kubeconfig's admin token authenticates as system:admin in system:masters,
    // which kube allows before asking any configured authorizer, AlwaysDeny included.
    let admin = common::admin_token(&server);
    let r = get_with(
        &http,
        "/api/v1/namespaces",
        &[("Authorization", &bearer(&admin))],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().expect("list")["kind"], "NamespaceList");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn client_certificate_user_is_the_common_name() {
    let dir = tempdir("x509");
    let ca = TestCa::new("client-ca");
    let ca_file = dir.join("client-ca.crt");
    std::fs::write(&ca_file, &ca.pem).expect("CA file");
    let server = TestServer::start_secure(&[
        "--client-ca-file",
        ca_file.to_str().unwrap_or_default(),
        "--authorization-mode",
        "AlwaysDeny",
    ]);
    let (cert, key) = ca.client("carol", &["team-1", "team-2"]);
    let r = get_with(
        &https(&server, Some((&cert, &key))),
        "/api/v1/namespaces",
        &[],
    );
    assert_eq!(forbidden_user(&r), "carol");
    // A certificate from a CA the server does not trust: kube's 401, not anonymous.
    let stranger = TestCa::new("other-ca");
    let (cert, key) = stranger.client("mallory", &["system:masters"]);
    let r = get_with(
        &https(&server, Some((&cert, &key))),
        "/api/v1/namespaces",
        &[],
    );
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.json(), Some(unauthorized_body()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn request_header_front_proxy_with_allowed_names() {
    let dir = tempdir("front-proxy");
    let proxy_ca = TestCa::new("front-proxy-ca");
    let ca_file = dir.join("front-proxy-ca.crt");
    std::fs::write(&ca_file, &proxy_ca.pem).expect("CA file");
    let server = TestServer::start_secure(&[
        "--requestheader-client-ca-file",
        ca_file.to_str().unwrap_or_default(),
        "--requestheader-allowed-names",
        "front-proxy-client",
        "--authorization-mode",
        "AlwaysDeny",
    ]);
    let (cert, key) = proxy_ca.client("front-proxy-client", &[]);
    let proxy = https(&server, Some((&cert, &key)));
    let as_dave = [
        ("X-Remote-User", "dave"),
        ("X-Remote-Group", "g1"),
        ("X-Remote-Extra-Scopes", "read"),
    ];
    let r = get_with(&proxy, "/api/v1/namespaces", &as_dave);
    assert_eq!(forbidden_user(&r), "dave");
    // The proxy without a user header vouches for nobody: anonymous.
    let r = get_with(&proxy, "/api/v1/namespaces", &[]);
    assert_eq!(forbidden_user(&r), "system:anonymous");
    // The headers from a client without the proxy's certificate are ignored.
    let r = get_with(&https(&server, None), "/api/v1/namespaces", &as_dave);
    assert_eq!(forbidden_user(&r), "system:anonymous");
    // A certificate of the proxy CA with a name not allowed: 401.
    let (cert, key) = proxy_ca.client("someone-else", &[]);
    let r = get_with(
        &https(&server, Some((&cert, &key))),
        "/api/v1/namespaces",
        &as_dave,
    );
    assert_eq!(r.status, 401, "{}", r.text());
    assert_eq!(r.json(), Some(unauthorized_body()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn anonymous_auth_off_answers_401_even_for_healthz_and_metrics() {
    let server = TestServer::start_secure(&["--anonymous-auth=false"]);
    let http = https(&server, None);
    for path in ["/api/v1/namespaces", "/healthz", "/metrics"] {
        let r = get_with(&http, path, &[]);
        assert_eq!(r.status, 401, "{path}: {}", r.text());
        assert_eq!(r.json(), Some(unauthorized_body()));
    }
    let admin = common::admin_token(&server);
    let r = get_with(
        &http,
        "/api/v1/namespaces",
        &[("Authorization", &bearer(&admin))],
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn anonymous_auth_on_reaches_health_and_version() {
    let server = TestServer::start_secure(&[]);
    let http = https(&server, None);
    for path in ["/livez", "/readyz", "/healthz", "/version"] {
        assert_eq!(get_with(&http, path, &[]).status, 200, "{path}");
    }
}

#[test]
fn plain_http_on_a_non_loopback_address_is_refused_at_start_up() {
    let out = Command::new(common::server_binary())
        .args(["--bind-address", "0.0.0.0", "--port", "0"])
        .stdin(Stdio::null())
        .output()
        .expect("run the server");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("crd-apiserver: refusing to serve plain HTTP on 0.0.0.0:0: it is not a loopback address")
            && stderr.contains("--insecure-allow-remote-http"),
        "{stderr}"
    );
    // HTTPS alone on the same address starts.
    let mut child = Command::new(common::server_binary())
        .args(["--bind-address", "0.0.0.0", "--secure-port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the server");
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.starts_with("crd-apiserver ready at https://0.0.0.0:"),
        "{line:?}"
    );
}

#[test]
fn body_over_3_mib_is_kubes_413() {
    let server = TestServer::start();
    let body = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"big\",\"annotations\":{{\"a\":\"{}\"}}}}}}",
        "x".repeat(4 << 20)
    );
    // Both with the length declared and streamed without one.
    for declared in [true, false] {
        let (status, text) = raw_post(
            server.url(),
            "/api/v1/namespaces",
            body.as_bytes(),
            declared,
        );
        assert!(status.starts_with("HTTP/1.1 413"), "{status}");
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(
            json,
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Request entity too large: limit is 3145728",
                "reason":"RequestEntityTooLarge","code":413})
        );
    }
    assert_eq!(server.http().get("/healthz").status, 200);
}

/// POSTs `body` as JSON over a raw connection, writing while reading (the server
/// answers 413 before the body ends); the status line and the response body.
fn raw_post(url: &str, path: &str, body: &[u8], declared: bool) -> (String, String) {
    let addr = url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nAccept: application/json\r\nConnection: close\r\n"
    );
    let mut payload = Vec::new();
    if declared {
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        payload.extend_from_slice(body);
    } else {
        head.push_str("Transfer-Encoding: chunked\r\n\r\n");
        for chunk in body.chunks(64 * 1024) {
            payload.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            payload.extend_from_slice(chunk);
            payload.extend_from_slice(b"\r\n");
        }
        payload.extend_from_slice(b"0\r\n\r\n");
    }
    let mut writer = tcp.try_clone().expect("clone");
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(head.as_bytes());
        // The server may stop reading once it has answered.
        let _ = writer.write_all(&payload);
    });
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match tcp.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&chunk[..n]),
        }
        if response_complete(&response) {
            break;
        }
    }
    let _ = tcp.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or_default().to_string();
    (status, body.to_string())
}

/// Whether a response with a `content-length` has all its body.
fn response_complete(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .is_some_and(|n| body.len() >= n)
}

#[test]
fn deep_nesting_is_a_400_not_a_crash() {
    let server = TestServer::start();
    let depth = 20_000;
    let body = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"deep\"}},\"spec\":{}1{}}}",
        "{\"a\":".repeat(depth),
        "}".repeat(depth)
    );
    let mut headers = json_accept();
    headers.push(("Content-Type".into(), "application/json".into()));
    let r = server
        .http()
        .request(
            "POST",
            "/api/v1/namespaces",
            &[],
            &headers,
            Some(body.into_bytes()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("exceeded max depth"), "{}", r.text());
    assert_eq!(server.http().get("/healthz").status, 200);
    assert!(server.exited().is_none());
}

/// Sends a raw HTTP/1.1 request and returns the status line.
fn raw_status_line(url: &str, request: &str) -> String {
    let addr = url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(addr).expect("connect");
    tcp.set_read_timeout(Some(Duration::from_secs(15)))
        .expect("timeout");
    // The server may answer before reading everything; a reset then is fine.
    let _ = tcp.write_all(request.as_bytes());
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.contains(&b'\n') {
        match tcp.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&buf)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn oversized_headers_are_431_and_many_headers_are_fine() {
    let server = TestServer::start();
    let big = "a".repeat(1_100_000);
    let line = raw_status_line(
        server.url(),
        &format!("GET /version HTTP/1.1\r\nHost: localhost\r\nX-Big: {big}\r\n\r\n"),
    );
    assert!(line.starts_with("HTTP/1.1 431"), "{line}");
    let many: String = (0..150)
        .map(|i| format!("X-Remote-Group: g{i}\r\n"))
        .collect();
    let line = raw_status_line(
        server.url(),
        &format!("GET /version HTTP/1.1\r\nHost: localhost\r\n{many}Connection: close\r\n\r\n"),
    );
    assert!(line.starts_with("HTTP/1.1 200"), "{line}");
    assert_eq!(server.http().get("/healthz").status, 200);
}

#[test]
fn request_timeout_is_kubes_504_and_watches_are_exempt() {
    let server = TestServer::start_with(&[
        "--request-timeout",
        "1s",
        "--fault",
        "verb=list,resource=namespaces,latency=10s",
        "--fault",
        "verb=watch,resource=namespaces,latency=2s",
    ]);
    let http = server.http();
    let started = Instant::now();
    let r = http.get("/api/v1/namespaces");
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(
        r.json(),
        Some(
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
            "message":"Timeout: request did not complete within the allotted timeout",
            "reason":"Timeout","details":{},"code":504})
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // A watch outlives --request-timeout.
    let r = http.get("/api/v1/namespaces?watch=true&timeoutSeconds=1");
    assert_eq!(r.status, 200, "{}", r.text());
    // ?timeout= must be a Go duration.
    let r = http.get("/api/v1/namespaces?timeout=abc");
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().expect("Status")["message"],
        "invalid timeout specified in the request URL - time: invalid duration \"abc\""
    );
}

#[test]
fn timeout_query_shortens_the_deadline() {
    let server = TestServer::start_with(&["--fault", "verb=list,resource=namespaces,latency=20s"]);
    let started = Instant::now();
    let r = server.http().get("/api/v1/namespaces?timeout=1s");
    assert_eq!(r.status, 504, "{}", r.text());
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // Other requests are unaffected.
    let ok = poll(Duration::from_secs(10), || {
        (server.http().get("/api/v1/namespaces/default").status == 200).then_some(())
    });
    assert!(ok.is_some());
}

/// A fresh temp dir for one test's files.
fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "crd-apiserver-security-{name}-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn requests_past_max_inflight_get_kubes_429_and_masters_pass() {
    let dir = tempdir("inflight");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,uid-1,dev\n").expect("token file");
    // One read-only place; reads of ConfigMaps are held 2 s so that one stays taken.
    let server = TestServer::start_secure(&[
        "--token-auth-file",
        tokens.to_str().unwrap_or_default(),
        "--max-requests-inflight=1",
        "--max-mutating-requests-inflight=0",
        "--fault",
        "verb=get,resource=configmaps,latency=2s",
    ]);
    let http = https(&server, None);
    let alice = bearer("alice-token");
    let held = {
        let http = https(&server, None);
        let alice = alice.clone();
        // Until it gets the place (the polls below may hold it for a moment).
        std::thread::spawn(move || loop {
            let r = get_with(
                &http,
                "/api/v1/namespaces/default/configmaps/x",
                &[("Authorization", &alice)],
            );
            if r.status != 429 {
                return r;
            }
        })
    };
    let r = poll(Duration::from_secs(15), || {
        let r = get_with(&http, "/api/v1/namespaces", &[("Authorization", &alice)]);
        (r.status == 429).then_some(r)
    })
    .expect("a second read-only request gets 429 while the first is held");
    assert_eq!(r.header("retry-after").as_deref(), Some("1"));
    let status = r.json().unwrap();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Too many requests, please try again later."
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    // system:masters (the kubeconfig's admin) is not counted; mutating requests have no
    // limit (0); watches are long-running and pass.
    let out = server.kubectl(&["get", "namespaces", "-o", "name"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let r = http
        .request(
            "POST",
            "/api/v1/namespaces/default/configmaps",
            &[],
            &[
                ("Authorization".to_string(), alice.clone()),
                ("Content-Type".to_string(), "application/json".to_string()),
            ],
            Some(body.to_string().into_bytes()),
        )
        .expect("a response");
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(held.join().expect("held request").status, 404);
    // The place is free again.
    let r = get_with(&http, "/api/v1/namespaces", &[("Authorization", &alice)]);
    assert_eq!(r.status, 200, "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}
