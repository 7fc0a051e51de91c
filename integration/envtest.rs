//! controller-runtime's envtest, played byte for byte against the real binary: the
//! files envtest writes before starting kube-apiserver (the serving pair in
//! `--cert-dir`, the client CA, the service-account signer as a self-signed CA
//! certificate and its PKCS#8 key), its `--help` probe for `--insecure-port`, its argv
//! (sorted `--flag=value`, as `process.Arguments` renders them), its readiness probe
//! (`GET https://127.0.0.1:PORT/healthz`), its users (client certificates signed by
//! the client CA: `admin` in `system:masters`), its CRD install and discovery wait, a
//! webhook configured by URL, and its stop (SIGTERM). Once with ECDSA P-256 keys
//! (controller-runtime today) and once with RSA 2048 keys (older releases), each on
//! a real etcd and on the embedded store (`--etcd-servers` absent).
//!
//! Read from controller-runtime's `pkg/internal/testing/controlplane/apiserver.go`,
//! `auth.go`, `certs/tinyca.go`, `process/process.go` and `pkg/envtest/crd.go`.

mod common;

use common::webhook::{HttpsWebhookServer, Reply};
use common::{free_port, json_accept, poll, server_binary, testdata_dir, Etcd, Http};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The key type envtest makes its keys with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Keys {
    /// ECDSA P-256 (controller-runtime today).
    Ecdsa,
    /// RSA 2048 (older releases). ring makes no RSA keys: these are read from
    /// `testdata/keys/` (one per role, as envtest makes one per certificate).
    Rsa,
}

impl Keys {
    fn key(self, role: &str) -> KeyPair {
        match self {
            Keys::Ecdsa => KeyPair::generate().expect("ECDSA key"),
            Keys::Rsa => {
                let path = testdata_dir().join(format!("keys/rsa-{role}.key"));
                let pem = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
                KeyPair::from_pem(&pem).expect("RSA PKCS#8 key")
            }
        }
    }
}

/// envtest's `TinyCA`: a self-signed CA (`envtest-environment`, O `envtest`) that
/// signs serving and client certificates.
struct TinyCa {
    cert_pem: String,
    key_pem: String,
    issuer: Issuer<'static, KeyPair>,
    keys: Keys,
}

impl TinyCa {
    fn new(keys: Keys, role: &str) -> TinyCa {
        let key = keys.key(role);
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params
            .distinguished_name
            .push(DnType::CommonName, "envtest-environment");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "envtest");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let cert = params.self_signed(&key).expect("CA certificate");
        TinyCa {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            issuer: Issuer::new(params, key),
            keys,
        }
    }

    /// `NewServingCert()`: CN `localhost`, for localhost and what it resolves to.
    fn serving(&self, role: &str) -> (String, String) {
        let names = ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec();
        self.leaf(
            role,
            names,
            "localhost",
            &["envtest"],
            ExtendedKeyUsagePurpose::ServerAuth,
        )
    }

    /// `NewClientCert()`: CN the user, O its groups.
    fn client(&self, name: &str, groups: &[&str]) -> (String, String) {
        self.leaf(
            "client",
            Vec::new(),
            name,
            groups,
            ExtendedKeyUsagePurpose::ClientAuth,
        )
    }

    fn leaf(
        &self,
        role: &str,
        names: Vec<String>,
        cn: &str,
        orgs: &[&str],
        usage: ExtendedKeyUsagePurpose,
    ) -> (String, String) {
        let key = self.keys.key(role);
        let mut params = CertificateParams::new(names).expect("leaf params");
        params.distinguished_name.push(DnType::CommonName, cn);
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params.key_usages = vec![
            KeyUsagePurpose::KeyEncipherment,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.extended_key_usages = vec![usage];
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// The API server process envtest started, stopped with SIGTERM on drop.
struct Process {
    child: Child,
    dir: PathBuf,
}

impl Process {
    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.join("apiserver.stderr")).unwrap_or_default()
    }

    /// `process.State.Stop()`: SIGTERM, then up to 20 s for the exit.
    fn stop(&mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not stop within 20s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: guestbooks.webapp.envtest.example.com
spec:
  group: webapp.envtest.example.com
  names: {kind: Guestbook, listKind: GuestbookList, plural: guestbooks, singular: guestbook}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, default: 1, minimum: 0}
"#;

/// One envtest run: files, `--help` probe, argv, readiness, users, service account
/// tokens, CRDs, a webhook by URL, stop.
fn envtest(keys: Keys, etcd: Option<&Etcd>) {
    let dir = std::env::temp_dir().join(format!(
        "k8s_test_framework_{}_{keys:?}_{}",
        std::process::id(),
        etcd.is_some()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("cert dir");
    let write = |name: &str, data: &str| {
        std::fs::write(dir.join(name), data).unwrap_or_else(|e| panic!("writing {name}: {e}"))
    };

    // populateAPIServerCerts: the serving pair, then the service-account signer.
    let serving_ca = TinyCa::new(keys, "serving-ca");
    let (serving_cert, serving_key) = serving_ca.serving("serving");
    write("apiserver.crt", &serving_cert);
    write("apiserver.key", &serving_key);
    let sa = TinyCa::new(keys, "sa-signer");
    write("sa-signer.crt", &sa.cert_pem);
    write("sa-signer.key", &sa.key_pem);
    // CertAuthn: the client CA.
    let client_ca = TinyCa::new(keys, "client-ca");
    write("client-cert-auth-ca.crt", &client_ca.cert_pem);

    // discoverFlags: `--insecure-port` is in kube v1.36's help no more.
    let help = Command::new(server_binary())
        .arg("--help")
        .output()
        .expect("--help");
    assert!(help.status.success());
    let insecure = regex::Regex::new(r"(?m)^\s*--insecure-port\b").unwrap();
    assert!(!insecure.is_match(&String::from_utf8_lossy(&help.stdout)));

    let port = free_port();
    let d = dir.display();
    let mut args: Vec<String> = vec![
        "--allow-privileged=true".into(),
        "--authorization-mode=RBAC".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={d}"),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
        "--disable-admission-plugins=ServiceAccount".into(),
    ];
    if let Some(etcd) = etcd {
        args.push(format!("--etcd-servers={}", etcd.url()));
    }
    args.extend([
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={d}/sa-signer.crt"),
        format!("--service-account-signing-key-file={d}/sa-signer.key"),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
    ]);
    let stdout = std::fs::File::create(dir.join("apiserver.stdout")).expect("stdout file");
    let stderr = std::fs::File::create(dir.join("apiserver.stderr")).expect("stderr file");
    let started = Instant::now();
    let child = Command::new(server_binary())
        .args(&args)
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("starting the server as kube-apiserver");
    let mut process = Process {
        child,
        dir: dir.clone(),
    };
    let base = format!("https://127.0.0.1:{port}");

    // pollURLUntilOK: anonymous GET /healthz every 100 ms until 200, within 20 s. The
    // probe trusts envtest's serving CA: the server serves the pair envtest wrote.
    let anonymous = Http::new_tls(&base, "envtest", &serving_ca.cert_pem, None);
    let healthy = poll(Duration::from_secs(20), || {
        let r = anonymous.request("GET", "/healthz", &[], &[], None).ok()?;
        (r.status == 200).then_some(r)
    });
    assert!(healthy.is_some(), "not healthy: {}", process.stderr());
    eprintln!(
        "{keys:?} keys, etcd {}: ready {:?} after start",
        etcd.is_some(),
        started.elapsed()
    );
    assert_eq!(healthy.unwrap().text(), "ok");

    // AddUser: admin in system:masters, client certificates from the client CA.
    let (cert, key) = client_ca.client("admin", &["system:masters"]);
    let admin = Http::new_tls(&base, "envtest", &serving_ca.cert_pem, Some((&cert, &key)));
    let r = admin.get("/api/v1/namespaces/default");
    assert_eq!(r.status, 200, "{}", r.text());
    let (cert, key) = client_ca.client("alice", &["dev"]);
    let alice = Http::new_tls(&base, "envtest", &serving_ca.cert_pem, Some((&cert, &key)));
    let r = alice.get("/api/v1/namespaces");
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "namespaces is forbidden: User \"alice\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );

    service_account_tokens(
        keys,
        &admin,
        &base,
        &serving_ca.cert_pem,
        &sa.cert_pem,
        port,
    );
    crds_and_webhook(keys, &admin, &dir);

    let status = process.stop();
    assert!(status.success(), "{status:?}\n{}", process.stderr());
}

/// A TokenRequest's token is signed by envtest's signer key (the `kid` of its
/// certificate's public key; ES256 or RS256) and authenticates as the ServiceAccount.
fn service_account_tokens(
    keys: Keys,
    admin: &Http,
    base: &str,
    serving_ca: &str,
    sa_cert: &str,
    port: u16,
) {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    // The ServiceAccount admission plugin is off: no `default` account is needed.
    let r = admin.send_json(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = admin.send_json(
        "POST",
        "/api/v1/namespaces/default/serviceaccounts/builder/token",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json().unwrap()["status"]["token"]
        .as_str()
        .expect("status.token")
        .to_string();
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    let decode = |p: &str| -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).expect("base64url")).expect("JSON")
    };
    let (header, claims) = (decode(parts[0]), decode(parts[1]));
    assert_eq!(claims["iss"], format!("https://127.0.0.1:{port}/"));
    assert_eq!(claims["aud"], json!([format!("https://127.0.0.1:{port}/")]));
    assert_eq!(claims["sub"], "system:serviceaccount:default:builder");

    // Verified here with the public key of sa-signer.crt, as any JWT library would.
    let pem = x509_parser::pem::Pem::iter_from_buffer(sa_cert.as_bytes())
        .next()
        .expect("a PEM block")
        .expect("PEM");
    let cert = pem.parse_x509().expect("sa-signer.crt");
    let spki = cert.public_key();
    let kid = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(spki.raw));
    assert_eq!(header["kid"], kid);
    let (alg, verification): (&str, &dyn ring::signature::VerificationAlgorithm) = match keys {
        Keys::Ecdsa => ("ES256", &ring::signature::ECDSA_P256_SHA256_FIXED),
        Keys::Rsa => ("RS256", &ring::signature::RSA_PKCS1_2048_8192_SHA256),
    };
    assert_eq!(header["alg"], alg);
    let signature = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature");
    ring::signature::UnparsedPublicKey::new(verification, &spki.subject_public_key.data)
        .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
        .expect("the token verifies with envtest's signer certificate");

    // The token authenticates: RBAC then denies the account what it was not granted.
    let bearer = Http::new_tls(base, "envtest", serving_ca, None);
    let r = bearer
        .request(
            "GET",
            "/api/v1/namespaces/default/pods",
            &[],
            &[("Authorization".to_string(), format!("Bearer {token}"))],
            None,
        )
        .expect("a response");
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json().unwrap()["message"],
        "pods is forbidden: User \"system:serviceaccount:default:builder\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    let r = admin.send_json(
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let status = &r.json().unwrap()["status"];
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:builder"
    );
}

/// `InstallCRDs` (read from a directory, created), `WaitForCRDs` (each served version
/// in discovery), then a custom resource with its default, and a validating webhook
/// configured by URL that denies what it is told to.
fn crds_and_webhook(keys: Keys, admin: &Http, dir: &Path) {
    let crd_dir = dir.join("crds");
    std::fs::create_dir_all(&crd_dir).expect("CRD dir");
    std::fs::write(crd_dir.join("guestbooks.yaml"), CRD).expect("CRD file");
    let text = std::fs::read_to_string(crd_dir.join("guestbooks.yaml")).expect("CRD file");
    let crd: Value = serde_norway::from_str(&text).expect("CRD YAML");
    let r = admin.send_json(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let discovered = poll(Duration::from_secs(10), || {
        let r = admin
            .request(
                "GET",
                "/apis/webapp.envtest.example.com/v1",
                &[],
                &json_accept(),
                None,
            )
            .ok()?;
        let body = r.json()?;
        let names: Vec<&str> = body["resources"]
            .as_array()?
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        (names.contains(&"guestbooks") && names.contains(&"guestbooks/status")).then_some(())
    });
    assert!(
        discovered.is_some(),
        "guestbooks never appeared in discovery"
    );
    let path = "/apis/webapp.envtest.example.com/v1/namespaces/default/guestbooks";
    let r = admin.send_json(
        "POST",
        path,
        &json!({"apiVersion": "webapp.envtest.example.com/v1", "kind": "Guestbook",
                "metadata": {"name": "first"}, "spec": {}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json().unwrap()["spec"]["size"], 1);

    // envtest's webhook server: its own CA and a serving certificate, by URL.
    let webhook_ca = TinyCa::new(keys, "serving-ca");
    let (cert, key) = webhook_ca.serving("serving");
    let reply: Reply = Arc::new(|_path: &str, review: &Value| {
        let request = &review["request"];
        let name = request["name"].as_str().unwrap_or("");
        let allowed = !name.starts_with("bad");
        Some(json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {
                "uid": request["uid"], "allowed": allowed,
                "status": {"code": 403, "message": format!("{name} is not welcome")},
            },
        }))
    });
    let webhook = HttpsWebhookServer::start_with(&cert, &key, &webhook_ca.cert_pem, reply);
    let r = admin.send_json(
        "POST",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "guestbook-validator"},
            "webhooks": [{
                "name": "vguestbook.envtest.example.com",
                "clientConfig": webhook.client_config("/validate-guestbook"),
                "rules": [{"apiGroups": ["webapp.envtest.example.com"], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["guestbooks"]}],
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
            }],
        }),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let denied = poll(Duration::from_secs(10), || {
        let r = admin.send_json(
            "POST",
            path,
            &json!({"apiVersion": "webapp.envtest.example.com/v1", "kind": "Guestbook",
                    "metadata": {"name": "bad-one"}, "spec": {}}),
        );
        (r.status == 403).then_some(r)
    })
    .expect("the webhook denies bad-one");
    assert_eq!(
        denied.json().unwrap()["message"],
        "admission webhook \"vguestbook.envtest.example.com\" denied the request: bad-one is not welcome"
    );
    let r = admin.send_json(
        "POST",
        path,
        &json!({"apiVersion": "webapp.envtest.example.com/v1", "kind": "Guestbook",
                "metadata": {"name": "good-one"}, "spec": {"size": 3}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(webhook
        .requests()
        .iter()
        .any(|(p, body)| p == "/validate-guestbook" && body["request"]["name"] == "good-one"));
}

#[test]
fn envtest_with_ecdsa_keys_on_the_embedded_store() {
    envtest(Keys::Ecdsa, None);
}

#[test]
fn envtest_with_ecdsa_keys_on_etcd() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    envtest(Keys::Ecdsa, Some(&etcd));
}

#[test]
fn envtest_with_rsa_keys_on_the_embedded_store() {
    envtest(Keys::Rsa, None);
}

#[test]
fn envtest_with_rsa_keys_on_etcd() {
    let etcd = Etcd::start();
    etcd.wait_ready();
    envtest(Keys::Rsa, Some(&etcd));
}
