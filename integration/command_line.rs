//! kube-apiserver's command line against the real binary: `--help` is kube v1.36's
//! (then our own flags), `--version`, kube's errors and exit code for what kube refuses,
//! envtest's argv accepted and served over HTTPS only, and kube's flags that do not
//! apply here logged once as ignored.
//!
//! Expected texts were observed from a kube-apiserver v1.36 built from the Kubernetes
//! tree (`kube-apiserver ARGS; echo $?`): stderr `Error: ...` and exit code 1, help on
//! stdout and exit code 0.

mod common;

use common::{json_accept, kubeconfig_ca, server_binary, Http, TestCa, TestServer};
use std::process::{Command, Output, Stdio};

/// kube-apiserver v1.36's `--help`, recorded from the real binary.
const KUBE_HELP: &str =
    include_str!("../crates/apimachinery/data/kube-v1.36/kube-apiserver-help.txt");

fn run(args: &[&str]) -> Output {
    Command::new(server_binary())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", server_binary().display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_is_kubes_then_our_own_flags() {
    for flag in ["--help", "-h"] {
        let out = run(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        let stdout = text(&out.stdout);
        let ours = stdout
            .strip_prefix(KUBE_HELP)
            .unwrap_or_else(|| panic!("{flag}: kube's help text first; got:\n{stdout}"));
        assert!(
            ours.starts_with("\ncrd-apiserver flags (not kube-apiserver's):\n\n"),
            "{ours}"
        );
        for own in [
            "--port PORT",
            "--kubeconfig-out PATH",
            "--load DIR",
            "--log-pipeline",
        ] {
            assert!(ours.contains(&format!("      {own} ")), "{own} in\n{ours}");
        }
        // envtest decides from --help whether to pass --insecure-port: v1.36 has none.
        assert!(!stdout.contains("--insecure-port"));
        assert_eq!(text(&out.stderr), "");
    }
}

#[test]
fn version_is_kube_style() {
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "Kubernetes v1.36.2\n");
}

#[test]
fn refusals_read_as_kubes() {
    // (argv, kube-apiserver v1.36's stderr) observed from the real binary.
    let cases: &[(&[&str], &str)] = &[
        (&["--no-such-flag"], "Error: unknown flag: --no-such-flag\n"),
        (&["--no-such-flag=1"], "Error: unknown flag: --no-such-flag\n"),
        (&["--help", "--no-such"], "Error: unknown flag: --no-such\n"),
        (&["-x"], "Error: unknown shorthand flag: 'x' in -x\n"),
        (&["---x"], "Error: bad flag syntax: ---x\n"),
        (&["--secure-port"], "Error: flag needs an argument: --secure-port\n"),
        (
            &["--secure-port=abc"],
            "Error: invalid argument \"abc\" for \"--secure-port\" flag: strconv.ParseInt: parsing \"abc\": invalid syntax\n",
        ),
        (
            &["--allow-privileged=maybe"],
            "Error: invalid argument \"maybe\" for \"--allow-privileged\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax\n",
        ),
        (
            &["--request-timeout=5", "--secure-port", "1"],
            "Error: invalid argument \"5\" for \"--request-timeout\" flag: time: missing unit in duration \"5\"\n",
        ),
        (
            &["--bind-address=notip"],
            "Error: invalid argument \"notip\" for \"--bind-address\" flag: failed to parse IP: \"notip\"\n",
        ),
        (
            &["--v=x"],
            "Error: invalid argument \"x\" for \"-v, --v\" flag: strconv.ParseUint: parsing \"x\": invalid syntax\n",
        ),
        // A boolean takes no separate value: `false` is an argument.
        (
            &["--anonymous-auth", "false"],
            "Error: \"kube-apiserver\" does not take any arguments, got [\"false\"]\n",
        ),
        (
            &["a", "b"],
            "Error: \"kube-apiserver\" does not take any arguments, got [\"a\" \"b\"]\n",
        ),
    ];
    for (args, stderr) in cases {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert_eq!(text(&out.stderr), *stderr, "{args:?}");
        assert_eq!(text(&out.stdout), "", "{args:?}");
    }
}

#[test]
fn envtests_argv_serves_https_only_and_logs_ignored_flags_once() {
    let dir =
        std::env::temp_dir().join(format!("crd-apiserver-command-line-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let ca = TestCa::new("client-cert-auth-ca");
    let ca_file = dir.join("client-cert-auth-ca.crt");
    std::fs::write(&ca_file, &ca.pem).expect("CA file");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let d = dir.to_str().expect("UTF-8 temp dir");
    // envtest's argv (controller-runtime's control plane), without --etcd-servers (the
    // embedded store) and the service account key files; --secure-port comes after the
    // harness's `--secure-port 0`: the last one wins, as in kube.
    let argv = [
        "--advertise-address=127.0.0.1".to_string(),
        "--allow-privileged=true".to_string(),
        "--authorization-mode=RBAC".to_string(),
        "--bind-address=127.0.0.1".to_string(),
        format!("--cert-dir={d}"),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
        "--disable-admission-plugins=ServiceAccount".to_string(),
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        "--service-cluster-ip-range=10.0.0.0/24".to_string(),
        // kube flags that do not apply here, in both value forms.
        "--feature-gates".to_string(),
        "AllAlpha=false".to_string(),
        "--v=2".to_string(),
        "--audit-log-maxage".to_string(),
        "3".to_string(),
    ];
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let server = TestServer::start_secure(&args);
    assert_eq!(server.url(), format!("https://127.0.0.1:{port}"));
    assert!(
        dir.join("apiserver.crt").exists(),
        "serving pair kept in --cert-dir"
    );

    let server_ca = kubeconfig_ca(&server).expect("the generated CA in the kubeconfig");
    let (cert, key) = ca.client("admin", &["system:masters"]);
    let http = Http::new_tls(
        server.url(),
        "command-line-test",
        &server_ca,
        Some((&cert, &key)),
    );
    let r = http
        .request("GET", "/api/v1/namespaces", &[], &json_accept(), None)
        .expect("a response");
    assert_eq!(r.status, 200, "{}", r.text());

    let stderr = server.stderr();
    let ignored: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("kube-apiserver flags accepted but ignored"))
        .collect();
    assert_eq!(ignored.len(), 1, "{stderr}");
    // Each once, in the order given.
    assert!(
        ignored[0].ends_with(": --v --audit-log-maxage"),
        "{}",
        ignored[0]
    );
    // Started as kube-apiserver is (a --secure-port, no --port): no plain HTTP.
    assert!(!stderr.contains("serving plain HTTP"), "{stderr}");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unusable_service_account_key_files_stop_the_start_in_kubes_words() {
    let dir = std::env::temp_dir().join(format!("crd-apiserver-sa-keys-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let junk = dir.join("junk.pem");
    std::fs::write(
        &junk,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .expect("junk file");
    let j = junk.display();
    let out = run(&[
        "--secure-port=0",
        &format!("--service-account-key-file={j}"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(&format!(
            "error reading public key file {j}: data does not contain any valid RSA or ECDSA public keys\n"
        )),
        "{}",
        text(&out.stderr)
    );
    let out = run(&[
        "--secure-port=0",
        &format!("--service-account-signing-key-file={j}"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).ends_with(&format!(
            "failed to parse service-account-issuer-key-file: error reading private key file {j}: data does not contain a valid RSA or ECDSA private key\n"
        )),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runtime_config_and_feature_gates_are_checked_as_kube_checks_them() {
    // Texts observed from kube-apiserver v1.36 (`"command failed" err=...`), exit code 1.
    let cases = [
        (
            "--runtime-config=foo/v1=true,bar/v2",
            "unknown api groups bar/v2,foo/v1",
        ),
        (
            "--runtime-config=apps/v2=true",
            "group version apps/v2 that has not been registered",
        ),
        (
            "--runtime-config=api/all=maybe",
            "invalid value api/all=maybe",
        ),
        (
            "--runtime-config=a/b/c/d=true",
            "runtime-config invalid key a/b/c/d",
        ),
        (
            "--feature-gates=CRDValidationRatcheting=false",
            "cannot set feature gate CRDValidationRatcheting to false, feature is locked to true",
        ),
        (
            "--feature-gates=wardle:X=true",
            "component not registered: wardle",
        ),
        (
            "--feature-gates=APIResponseCompression",
            "missing bool value for APIResponseCompression",
        ),
    ];
    for (flag, message) in cases {
        let out = run(&["--secure-port=0", flag]);
        assert_eq!(out.status.code(), Some(1), "{flag}");
        assert!(
            text(&out.stderr).ends_with(&format!("{message}\n")),
            "{flag}: {}",
            text(&out.stderr)
        );
    }
    // Accepted: an unknown gate is warned about, as kube; the version turned on is served.
    let server = TestServer::start_with(&[
        "--feature-gates=Foo=true,kube:AllAlpha=false",
        "--runtime-config=api/v1=true,networking.k8s.io/v1beta1=true",
    ]);
    let stderr = server.stderr();
    assert!(
        stderr.contains("unrecognized feature gate: Foo"),
        "{stderr}"
    );
    assert!(!stderr.contains("not applied"), "{stderr}");
    assert_eq!(
        server.http().get("/apis/networking.k8s.io/v1beta1").status,
        200
    );
}

#[test]
fn advertise_address_is_what_discovery_and_the_kubernetes_service_name() {
    let server = TestServer::start_with(&["--advertise-address=10.1.2.3"]);
    let port = server.url().rsplit(':').next().expect("a port").to_string();
    let http = server.http();
    let api = http.get("/api").json().expect("/api");
    assert_eq!(
        api["serverAddressByClientCIDRs"][0]["serverAddress"],
        format!("10.1.2.3:{port}")
    );
    let slice = http
        .get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes")
        .json()
        .expect("the kubernetes EndpointSlice");
    assert_eq!(slice["endpoints"][0]["addresses"][0], "10.1.2.3", "{slice}");
}

#[test]
fn requests_are_logged_one_by_one_only_when_asked() {
    // The default filter, as a user starting the binary gets it: no line per request
    // (kube-apiserver logs requests from -v=3 only).
    let quiet = TestServer::start_with_env(
        &["--fault", "verb=get,resource=configmaps,error=500"],
        &[("CRD_APISERVER_LOG", None), ("RUST_LOG", None)],
    );
    let http = quiet.http();
    let r = http
        .request("GET", "/api/v1/namespaces", &[], &json_accept(), None)
        .expect("a response");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = http
        .request(
            "GET",
            "/apis/nope.example.com/v1/things",
            &[],
            &json_accept(),
            None,
        )
        .expect("a response");
    assert_eq!(r.status, 404, "{}", r.text());
    let stderr = quiet.stderr();
    assert!(!stderr.contains("crd_apiserver::request"), "{stderr}");
    assert!(!stderr.contains("path=/api/v1/namespaces"), "{stderr}");
    // A server error is logged at the default level.
    let path = "/api/v1/namespaces/default/configmaps/c";
    let r = http
        .request("GET", path, &[], &json_accept(), None)
        .expect("a response");
    assert_eq!(r.status, 500, "{}", r.text());
    let stderr = quiet.stderr();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("crd_apiserver::request"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("code=500"), "{}", lines[0]);
    assert!(lines[0].contains(&format!("path={path}")), "{}", lines[0]);

    // Asked for: a line per request, with its path, code and size.
    let loud = TestServer::start_with_env(
        &[],
        &[(
            "CRD_APISERVER_LOG",
            Some("info,crd_apiserver::request=debug"),
        )],
    );
    let r = loud
        .http()
        .request(
            "GET",
            "/api/v1/namespaces/default",
            &[],
            &json_accept(),
            None,
        )
        .expect("a response");
    assert_eq!(r.status, 200, "{}", r.text());
    let stderr = loud.stderr();
    let line = stderr
        .lines()
        .find(|l| {
            l.contains("crd_apiserver::request") && l.contains("path=/api/v1/namespaces/default")
        })
        .unwrap_or_else(|| panic!("no request line in:\n{stderr}"));
    assert!(line.contains("method=GET"), "{line}");
    assert!(line.contains("code=200"), "{line}");
    assert!(line.contains(&format!("bytes={}", r.body.len())), "{line}");
}
