"""An HTTPS admission webhook server in the test process, for the server to call by
`clientConfig.url`: a CA and a serving certificate for 127.0.0.1 (made with
`cryptography` when it is installed, else with the `openssl` CLI), one review function
answering every AdmissionReview, and the reviews received."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

# (path, AdmissionReview request) -> the response's fields besides `uid`.
Review = Callable[[str, Dict[str, Any]], Dict[str, Any]]


class Certificates(NamedTuple):
    """PEM: the CA (for `caBundle`), and the serving certificate and key it signed."""

    ca: bytes
    cert: bytes
    key: bytes


def certificates_with_cryptography(_: Path) -> Certificates:
    """A CA and a serving certificate for IP 127.0.0.1, made with `cryptography`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return Certificates(ca.public_bytes(pem), cert.public_bytes(pem), key_pem)


def certificates_with_openssl(workdir: Path) -> Certificates:
    """A CA and a serving certificate for IP 127.0.0.1, made with the `openssl` CLI."""
    ca_key, ca, key, csr, cert, ext = (
        workdir / n for n in ("ca.key", "ca.crt", "tls.key", "tls.csr", "tls.crt", "ext.cnf")
    )
    ext.write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n"
        "extendedKeyUsage=serverAuth\nauthorityKeyIdentifier=keyid\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for command in (
        ["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "1",
         "-subj", "/CN=webhook test CA", "-addext", "basicConstraints=critical,CA:TRUE"],
        ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"],
        ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-set_serial", "2",
         "-days", "1", "-extfile", ext, "-out", cert],
    ):
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True)
    return Certificates(ca.read_bytes(), cert.read_bytes(), key.read_bytes())


def certificate_makers() -> List[Callable[[Path], Certificates]]:
    """`cryptography` first when it is installed, the `openssl` CLI always."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        return [certificates_with_openssl]
    return [certificates_with_cryptography, certificates_with_openssl]


class WebhookServer:
    """An HTTPS server on a free port of 127.0.0.1 answering AdmissionReviews."""

    def __init__(self, review: Review, certificates: Certificates, workdir: Path) -> None:
        self.requests: List[Tuple[str, Dict[str, Any]]] = []
        """Every (path, AdmissionReview request) received, in order."""
        self.ca_bundle = base64.b64encode(certificates.ca).decode()
        """The CA as a webhook's `clientConfig.caBundle`."""
        (workdir / "serving.crt").write_bytes(certificates.cert)
        (workdir / "serving.key").write_bytes(certificates.key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(workdir / "serving.crt", workdir / "serving.key")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(review, self.requests))
        self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def client_config(self, path: str) -> Dict[str, str]:
        """A webhook's `clientConfig` calling `path` on this server."""
        port = self._httpd.server_address[1]
        return {"url": f"https://127.0.0.1:{port}{path}", "caBundle": self.ca_bundle}

    def close(self) -> None:
        """Stop serving."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


def _handler(review: Review, requests: List[Tuple[str, Dict[str, Any]]]) -> type:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            path = self.path.split("?")[0]
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["request"]
            requests.append((path, request))
            reply = json.dumps({
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "response": {"uid": request["uid"], **review(path, request)},
            }).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # pytest shows failures; a line per request is noise

    return Handler
