"""The pytest plugin: options and fixtures (registered through the `pytest11` entry point).

- `crd_apiserver` (session): one server for the test session, never reset.
- `crd_apiserver_clean` (function): that server, reset before the test.
- `crd_apiserver_load`, `crd_apiserver_args` (session): what the server is started
  with; override them in a `conftest.py` to compute them. The ini options
  `crd_apiserver_controllers` and `crd_apiserver_simulate_nodes` turn on the cluster
  that moves (`--controllers`, `--simulate-nodes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, List

import pytest

from .server import CrdApiServer, find_binary

LOAD_HELP = "manifest files or directories the server applies at start (--load), CRDs first"
ARGS_HELP = "further crd-apiserver flags, e.g. --disable-admission-plugins=ServiceAccount"
CONTROLLERS_HELP = "kube-controller-manager's controllers to run (--controllers), e.g. * or deployment,replicaset"
NODES_HELP = "how many simulated Ready Nodes, with a scheduler and kubelets (--simulate-nodes)"


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
