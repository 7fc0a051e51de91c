#!/usr/bin/env python3
"""Start-to-healthy as envtest sees it: envtest's files (ECDSA P-256 serving pair in
--cert-dir, client CA, service-account signer certificate and key, made with the
openssl CLI), envtest's argv, and its probe (GET https://127.0.0.1:PORT/healthz until
200), timed from spawn to the first 200, for crd-apiserver on the embedded store and
on etcd and, when KUBE_APISERVER names a kube-apiserver binary, for kube-apiserver on
etcd. etcd is started (and awaited) before each run and not counted, as envtest starts
it first. The floor, measured in the same run, is spawning `crd-apiserver --version`.

    python3 benches/envtest_start.py [--runs N]
      CRD_APISERVER_BIN (default target/release/crd-apiserver)
      KUBE_APISERVER    (optional) a kube-apiserver binary to compare with
      ETCD_BIN          (default /usr/bin/etcd)
"""

import argparse
import os
import shutil
import socket
import ssl
import statistics
import subprocess
import tempfile
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def ca(dir: str, name: str) -> None:
    """A TinyCA: a P-256 key (PKCS#8) and a self-signed CA certificate."""
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", f"{dir}/{name}.key")
    openssl("req", "-x509", "-new", "-key", f"{dir}/{name}.key", "-days", "7",
            "-subj", "/O=envtest/CN=envtest-environment", "-out", f"{dir}/{name}.crt")


def envtest_files(dir: str) -> None:
    ca(dir, "serving-ca")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-out", f"{dir}/apiserver.key")
    openssl("req", "-new", "-key", f"{dir}/apiserver.key", "-subj", "/O=envtest/CN=localhost",
            "-out", f"{dir}/apiserver.csr")
    with open(f"{dir}/san.ext", "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", f"{dir}/apiserver.csr", "-CA", f"{dir}/serving-ca.crt",
            "-CAkey", f"{dir}/serving-ca.key", "-CAcreateserial", "-days", "7",
            "-extfile", f"{dir}/san.ext", "-out", f"{dir}/apiserver.crt")
    ca(dir, "sa-signer")
    ca(dir, "client-cert-auth-ca")


def start_etcd(dir: str) -> tuple[subprocess.Popen, str]:
    client, peer = free_port(), free_port()
    url = f"http://127.0.0.1:{client}"
    etcd = subprocess.Popen(
        [os.environ.get("ETCD_BIN", "/usr/bin/etcd"), "--data-dir", f"{dir}/etcd",
         "--listen-client-urls", url, "--advertise-client-urls", url,
         "--listen-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
         "--initial-cluster", f"default=http://127.0.0.1:{peer}", "--unsafe-no-fsync"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1) as r:
                if r.status == 200:
                    return etcd, url
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("etcd did not become healthy")


def start_to_healthy(binary: str, etcd_url: str | None) -> float:
    dir = tempfile.mkdtemp(prefix="k8s_test_framework_")
    etcd = None
    try:
        envtest_files(dir)
        if etcd_url == "start":
            etcd, etcd_url = start_etcd(dir)
        port = free_port()
        args = [binary, "--allow-privileged=true", "--authorization-mode=RBAC",
                "--bind-address=127.0.0.1", f"--cert-dir={dir}",
                f"--client-ca-file={dir}/client-cert-auth-ca.crt",
                "--disable-admission-plugins=ServiceAccount"]
        if etcd_url:
            args.append(f"--etcd-servers={etcd_url}")
        args += [f"--secure-port={port}", f"--service-account-issuer=https://127.0.0.1:{port}/",
                 f"--service-account-key-file={dir}/sa-signer.crt",
                 f"--service-account-signing-key-file={dir}/sa-signer.key",
                 "--service-cluster-ip-range=10.0.0.0/24"]
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        started = time.monotonic()
        server = subprocess.Popen(args, cwd=dir, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            while time.monotonic() - started < 60:
                try:
                    with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz",
                                                context=insecure, timeout=1) as r:
                        if r.status == 200:
                            return time.monotonic() - started
                except OSError:
                    pass
                if server.poll() is not None:
                    raise RuntimeError(f"{binary} exited with {server.returncode}")
                time.sleep(0.005)
            raise RuntimeError(f"{binary} not healthy within 60 s")
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        if etcd:
            etcd.terminate()
            etcd.wait()
        shutil.rmtree(dir, ignore_errors=True)


def floor(binary: str) -> float:
    started = time.monotonic()
    subprocess.run([binary, "--version"], check=True, capture_output=True)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    ours = os.path.abspath(os.environ.get("CRD_APISERVER_BIN", "target/release/crd-apiserver"))
    cases = [("floor: crd-apiserver --version", lambda: floor(ours)),
             ("crd-apiserver, embedded store", lambda: start_to_healthy(ours, None)),
             ("crd-apiserver, etcd", lambda: start_to_healthy(ours, "start"))]
    kube = os.environ.get("KUBE_APISERVER")
    if kube:
        kube = os.path.abspath(kube)
        cases.append(("kube-apiserver, etcd", lambda: start_to_healthy(kube, "start")))
    print(f"{'':34} {'median':>10} {'min':>10} {'max':>10}   ({runs} runs, spawn to /healthz 200)")
    for name, run in cases:
        times = [run() for _ in range(runs)]
        print(f"{name:34} {statistics.median(times) * 1000:8.1f}ms "
              f"{min(times) * 1000:8.1f}ms {max(times) * 1000:8.1f}ms")


if __name__ == "__main__":
    main()
