"""The pytest plugin: options and fixtures (registered through the `pytest11` entry point).

- `crd_apiserver` (session): one server for the test session, never reset.
- `crd_apiserver_clean` (function): that server, reset before the test.
- `crd_apiserver_setup`, `crd_apiserver_snapshot` (session): what the suite creates
  once (override the first), then the snapshot `session` of the server.
- `crd_apiserver_restored` (function): that server at the snapshot `session`, put back
  to it after the test.
- `crd_apiserver_load`, `crd_apiserver_args` (session): what the server is started
  with; override them in a `conftest.py` to compute them. The ini options
  `crd_apiserver_controllers` and `crd_apiserver_simulate_nodes` turn on the cluster
  that moves (`--controllers`, `--simulate-nodes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List, Optional

import pytest

from .server import CrdApiServer, find_binary

LOAD_HELP = "manifest files or directories the server applies at start (--load), CRDs first"
ARGS_HELP = "further crd-apiserver flags, e.g. --disable-admission-plugins=ServiceAccount"
CONTROLLERS_HELP = "kube-controller-manager's controllers to run (--controllers), e.g. * or deployment,replicaset"
NODES_HELP = "how many simulated Ready Nodes, with a scheduler and kubelets (--simulate-nodes)"

SESSION_SNAPSHOT = "session"
"""The name of the snapshot `crd_apiserver_snapshot` takes."""

# The server's resourceVersion when it was last at the session snapshot (taken or
# restored): while it has not moved, nothing wrote to it and no restore is needed.
_AT_SNAPSHOT = pytest.StashKey[Optional[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The `crd_apiserver_load` and `crd_apiserver_args` ini options, `--crd-apiserver-load`."""
    group = parser.getgroup("crd-apiserver")
    group.addoption(
        "--crd-apiserver-load",
        action="append",
        default=[],
        metavar="PATH",
        help=LOAD_HELP + " (repeatable; added to the crd_apiserver_load ini option)",
    )
    parser.addini(
        "crd_apiserver_load", LOAD_HELP + " (relative to the ini file)", type="paths", default=[]
    )
    parser.addini("crd_apiserver_args", ARGS_HELP, type="args", default=[])
    parser.addini("crd_apiserver_controllers", CONTROLLERS_HELP, type="string", default="")
    parser.addini("crd_apiserver_simulate_nodes", NODES_HELP, type="string", default="0")


@pytest.fixture(scope="session")
def crd_apiserver_load(pytestconfig: pytest.Config) -> List[Path]:
    """What the server `--load`s: the ini option's paths, then the command line's."""
    from_ini: List[Path] = pytestconfig.getini("crd_apiserver_load")
    base = pytestconfig.invocation_params.dir
    from_cli = [base / p for p in pytestconfig.getoption("crd_apiserver_load")]
    return list(from_ini) + from_cli


@pytest.fixture(scope="session")
def crd_apiserver_args(pytestconfig: pytest.Config) -> List[str]:
    """Flags appended to the server's command line: the `crd_apiserver_args` ini option,
    then `--controllers` and `--simulate-nodes` from their ini options."""
    args: List[str] = list(pytestconfig.getini("crd_apiserver_args"))
    controllers: str = pytestconfig.getini("crd_apiserver_controllers").strip()
    if controllers:
        args.append(f"--controllers={controllers}")
    nodes: str = pytestconfig.getini("crd_apiserver_simulate_nodes").strip()
    if nodes and nodes != "0":
        args.append(f"--simulate-nodes={nodes}")
    return args


@pytest.fixture(scope="session")
def crd_apiserver(
    crd_apiserver_load: List[Path],
    crd_apiserver_args: List[str],
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[CrdApiServer]:
    """One crd-apiserver for the session (objects persist from test to test); stopped
    at the end of the session, whatever the tests' outcome."""
    server = CrdApiServer.start(
        tmp_path_factory.mktemp("crd-apiserver"),
        crd_apiserver_load,
        crd_apiserver_args,
        binary=find_binary(pytestconfig.invocation_params.dir),
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def crd_apiserver_clean(crd_apiserver: CrdApiServer) -> CrdApiServer:
    """The session's server, reset before this test: only what was there at start."""
    crd_apiserver.reset()
    return crd_apiserver


@pytest.fixture(scope="session")
def crd_apiserver_setup(crd_apiserver: CrdApiServer) -> None:
    """What the suite creates once, before `crd_apiserver_snapshot` is taken: by
    default nothing beyond the `--load`ed manifests. Override it in a `conftest.py` (as
    a session fixture taking `crd_apiserver`) to create objects through the API."""


@pytest.fixture(scope="session")
def crd_apiserver_snapshot(
    crd_apiserver: CrdApiServer, crd_apiserver_setup: None, pytestconfig: pytest.Config
) -> str:
    """The snapshot `session` of the session's server, taken once, when a test first
    needs it: after `--load` and `crd_apiserver_setup`. Its name."""
    pytestconfig.stash[_AT_SNAPSHOT] = crd_apiserver.snapshot(SESSION_SNAPSHOT)
    return SESSION_SNAPSHOT


@pytest.fixture
def crd_apiserver_restored(
    crd_apiserver: CrdApiServer, crd_apiserver_snapshot: str, pytestconfig: pytest.Config
) -> Iterator[CrdApiServer]:
    """The session's server at the snapshot `crd_apiserver_snapshot`: restored to it
    before the test when something wrote to the server since it was last there (tests
    on the other fixtures), and after the test, whatever its outcome. A restore is
    skipped while the server's resourceVersion has not moved."""
    _back_to(crd_apiserver, crd_apiserver_snapshot, pytestconfig)
    yield crd_apiserver
    _back_to(crd_apiserver, crd_apiserver_snapshot, pytestconfig)


def _back_to(server: CrdApiServer, snapshot: str, pytestconfig: pytest.Config) -> None:
    """Restore `snapshot` unless the server has not moved since it was last there."""
    stash = pytestconfig.stash
    if stash.get(_AT_SNAPSHOT, None) != server.resource_version():
        stash[_AT_SNAPSHOT] = server.restore(snapshot).resource_version
