"""The crd-apiserver process: found, started on a free port with a kubeconfig, waited
on until `/readyz` answers, reset between tests and stopped with SIGTERM; its snapshots
(`/admin/snapshots`): taken, restored and forked into servers of their own."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Type
from urllib.parse import quote

from kubernetes import config, dynamic
from kubernetes.client import ApiClient, ApiException

from . import wipe
from .error import CrdApiServerError

BIN_ENV = "CRD_APISERVER_BIN"
"""The environment variable naming the binary (else `crd-apiserver` on PATH)."""

READY_PREFIX = "crd-apiserver ready at "
"""What the server prints on stdout, followed by its URL, once it accepts requests."""


def find_binary(base: Optional[Path] = None) -> str:
    """The crd-apiserver binary: `$CRD_APISERVER_BIN` (relative to `base`, else to the
    current directory), else `crd-apiserver` on PATH."""
    configured = os.environ.get(BIN_ENV)
    if configured:
        path = (base or Path.cwd()) / Path(configured).expanduser()
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise CrdApiServerError(f"{BIN_ENV}={configured} is not an executable file")
        return str(path.resolve())
    found = shutil.which("crd-apiserver")
    if found is None:
        raise CrdApiServerError(
            "the crd-apiserver binary was not found: set CRD_APISERVER_BIN to its path or "
            "put it on PATH (build it in the crd-apiserver repository with "
            "`cargo build --release --bin crd-apiserver`: target/release/crd-apiserver)"
        )
    return found


class Restored(NamedTuple):
    """What `restore` did."""

    written: int
    """How many objects it wrote back (created, changed back or deleted)."""
    resource_version: str
    """The server's resourceVersion after it (above every one handed out before)."""


class _Served:
    """What a server and a fork have in common: a URL, a kubeconfig, a client, and
    snapshots through `/admin/snapshots` with the kubeconfig's credentials."""

    def __init__(
        self, url: str, kubeconfig: Path, api_client: ApiClient, client: dynamic.DynamicClient
    ) -> None:
        self.url = url
        """The server's base URL, e.g. `http://127.0.0.1:40123`."""
        self.kubeconfig = kubeconfig
        """A kubeconfig file for the server (`kubectl --kubeconfig`, `KUBECONFIG=`)."""
        self.api_client = api_client
        """A `kubernetes.client.ApiClient` built from `kubeconfig`."""
        self._client = client
        self._forks = 0

    def snapshot(self, name: str) -> str:
        """Save the server's current state (objects, CRDs, RBAC, webhooks) as the
        snapshot `name`, replacing one of that name; return its resourceVersion. Names
        are DNS labels (lowercase alphanumerics and '-'). Taking one copies nothing."""
        reply = self._admin("POST", "/admin/snapshots", [("name", name)], f"snapshot {name!r}")
        return str(reply["resourceVersion"])

    def restore(self, name: str) -> Restored:
        """Put the server back to the snapshot `name`, in place: the snapshot's
        objects, CRDs, RBAC and webhooks, at new resourceVersions. Open watches end
        with 410 Gone (an informer lists again)."""
        reply = self._admin(
            "POST", f"/admin/snapshots/{quote(name, safe='')}/restore", [], f"restore {name!r}"
        )
        return Restored(int(reply["written"]), str(reply["resourceVersion"]))

    def fork(self, name: str) -> CrdApiServerFork:
        """Start a new server from the snapshot `name`, independent of this one (writes
        to either are not seen by the other). It runs until the server it was forked
        from stops (the session's end for the fixtures' server); `close()` the fork,
        or use it in a `with` block, to close its client."""
        reply = self._admin(
            "POST", f"/admin/snapshots/{quote(name, safe='')}/fork", [], f"fork {name!r}"
        )
        self._forks += 1
        workdir = self.kubeconfig.parent / "forks" / f"{self._forks}-{name}"
        return CrdApiServerFork.open(workdir, name, reply["url"], reply["kubeconfig"])

    def snapshots(self) -> Dict[str, str]:
        """The server's snapshots: their resourceVersions by name."""
        reply = self._admin("GET", "/admin/snapshots", [], "listing snapshots")
        return {s["name"]: str(s["resourceVersion"]) for s in reply["snapshots"]}

    def resource_version(self) -> str:
        """The server's current resourceVersion (a list's): it changes with every write,
        restores included."""
        reply = self._client.request(
            "GET", "/api/v1/namespaces", query_params=[("limit", 1)], serialize=False
        )
        return str(json.loads(reply.data)["metadata"]["resourceVersion"])

    def _admin(
        self, method: str, path: str, query: List[Tuple[str, Any]], what: str
    ) -> Dict[str, Any]:
        try:
            reply = self._client.request(method, path, query_params=query, serialize=False)
        except ApiException as e:
            raise CrdApiServerError(f"{what}: {e.status} {_message(e)}") from e
        doc: Dict[str, Any] = json.loads(reply.data)
        return doc


class CrdApiServerFork(_Served):
    """A server started from a snapshot (`fork`): its URL, a kubeconfig file, and an
    official `kubernetes` client for it, like `CrdApiServer`'s. It runs until the server
    it was forked from stops; `close()` closes the client."""

    def __init__(
        self,
        snapshot_name: str,
        url: str,
        kubeconfig: Path,
        api_client: ApiClient,
        client: dynamic.DynamicClient,
    ) -> None:
        super().__init__(url, kubeconfig, api_client, client)
        self.snapshot_name = snapshot_name
        """The snapshot it was started from."""

    @classmethod
    def open(
        cls, workdir: Path, snapshot_name: str, url: str, kubeconfig_text: str
    ) -> CrdApiServerFork:
        """Write the fork's kubeconfig to `workdir`, build its client and wait until
        it answers `/readyz`."""
        workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = workdir / "kubeconfig"
        kubeconfig.write_text(kubeconfig_text)
        kubeconfig.chmod(0o600)  # it may hold credentials
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            client = dynamic.DynamicClient(api_client, cache_file=str(workdir / "discovery.json"))
            _wait_ready(client, time.monotonic() + 10.0, None)
        except BaseException:
            api_client.close()
            raise
        return cls(snapshot_name, url, kubeconfig, api_client, client)

    def close(self) -> None:
        """Close the client (the fork itself runs on until its parent stops)."""
        self.api_client.close()

    def __enter__(self) -> CrdApiServerFork:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.close()


class CrdApiServer(_Served):
    """A running crd-apiserver and an official `kubernetes` client configured for it."""

    def __init__(
        self,
        process: subprocess.Popen[str],
        url: str,
        kubeconfig: Path,
        log_path: Path,
        api_client: ApiClient,
        client: dynamic.DynamicClient,
        baseline: frozenset[str],
    ) -> None:
        super().__init__(url, kubeconfig, api_client, client)
        self.process = process
        """The server's process."""
        self.log_path = log_path
        """The server's stderr (its logs)."""
        self._baseline = baseline

    @classmethod
    def start(
        cls,
        workdir: Path,
        load: Sequence[Path] = (),
        args: Sequence[str] = (),
        binary: Optional[str] = None,
        timeout: float = 60.0,
    ) -> CrdApiServer:
        """Start the server on a free loopback port with `--load` for each of `load` and
        `args` appended; return once it answers `/readyz`. Files go to `workdir`."""
        binary = binary or find_binary()
        workdir.mkdir(parents=True, exist_ok=True)
        kubeconfig = workdir / "kubeconfig"
        log_path = workdir / "crd-apiserver.log"
        command = [binary, "--port", "0", "--kubeconfig-out", str(kubeconfig)]
        for path in load:
            command += ["--load", str(path)]
        command += list(args)
        deadline = time.monotonic() + timeout
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, text=True
            )
        try:
            url = _read_ready_line(process, deadline, timeout, log_path)
            api_client = config.new_client_from_config(config_file=str(kubeconfig))
            client = dynamic.DynamicClient(api_client, cache_file=str(workdir / "discovery.json"))
            _wait_ready(client, deadline, log_path)
            baseline = wipe.snapshot(client)
            return cls(process, url, kubeconfig, log_path, api_client, client, baseline)
        except BaseException:
            _terminate(process, 10.0)
            raise

    def reset(self, crds: bool = False) -> None:
        """Delete every object created since the server started (finalizers
        notwithstanding), webhook configurations first and namespaces last; the objects
        there at start (the `--load`ed ones, the system namespaces, the `kubernetes`
        Service) stay. CRDs created since start go too when `crds` is true."""
        wipe.reset(self._client, self._baseline, crds)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server: SIGTERM, then SIGKILL after `timeout` seconds. Raises if the
        server had already exited (it crashed during the tests)."""
        exited_before = self.process.poll()
        _terminate(self.process, timeout)
        self.api_client.close()
        if exited_before is not None:
            raise CrdApiServerError(
                f"crd-apiserver exited during the tests with status {exited_before}; "
                f"its log ({self.log_path}) ends with:\n{_tail(self.log_path)}"
            )

    def __enter__(self) -> CrdApiServer:
        return self

    def __exit__(
        self,
        kind: Optional[Type[BaseException]],
        value: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.stop()


def _read_ready_line(
    process: subprocess.Popen[str], deadline: float, timeout: float, log_path: Path
) -> str:
    stdout = process.stdout
    assert stdout is not None
    readable, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
    line = stdout.readline() if readable else ""
    if line.startswith(READY_PREFIX):
        return line[len(READY_PREFIX) :].strip()
    if not readable:
        problem = f"printed no ready line within {timeout:g} s"
    else:
        try:
            problem = f"exited with status {process.wait(timeout=10.0)}"
        except subprocess.TimeoutExpired:
            problem = f"printed {line!r} instead of its ready line"
    raise CrdApiServerError(
        f"crd-apiserver {problem}: {' '.join(map(str, process.args))}\n"  # type: ignore[arg-type]
        f"its log ({log_path}) ends with:\n{_tail(log_path)}"
    )


def _wait_ready(
    client: dynamic.DynamicClient, deadline: float, log_path: Optional[Path]
) -> None:
    while True:
        try:
            client.request("GET", "/readyz", serialize=False)
            return
        except ApiException as e:
            if time.monotonic() > deadline:
                log = f"; its log ({log_path}) ends with:\n{_tail(log_path)}" if log_path else ""
                raise CrdApiServerError(
                    f"crd-apiserver's /readyz still answers {e.status}: {e.body!r}{log}"
                ) from e
        time.sleep(0.05)


def _message(e: ApiException) -> str:
    """A failed request's Status message, else its body."""
    if not e.body:
        return str(e.reason)
    try:
        message = json.loads(e.body)["message"]
    except (TypeError, ValueError, KeyError):
        return str(e.body)
    return str(message)


def _terminate(process: subprocess.Popen[str], timeout: float) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        return f"(unreadable: {e})"
    return "\n".join(text.splitlines()[-lines:])
