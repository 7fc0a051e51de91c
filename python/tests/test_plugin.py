"""The plugin's wiring, in inner pytest sessions (`pytester`) and on the session server:
options, what a fixture hands out, errors, and the server's stop."""

import os
import shutil
import textwrap
import urllib.request
from pathlib import Path

import pytest
from kubernetes import client

from pytest_crd_apiserver import BIN_ENV, CrdApiServer, find_binary

CRDS = Path(__file__).parent / "crds"


@pytest.fixture(scope="session")
def binary(pytestconfig: pytest.Config) -> str:
    """The binary this session runs, as an absolute path."""
    return find_binary(pytestconfig.invocation_params.dir)


def test_the_session_server_hands_out_its_url_kubeconfig_and_client(
    crd_apiserver: CrdApiServer,
) -> None:
    with urllib.request.urlopen(f"{crd_apiserver.url}/readyz") as reply:
        assert reply.read() == b"ok"
    assert f"server: {crd_apiserver.url}\n" in crd_apiserver.kubeconfig.read_text()
    assert crd_apiserver.api_client.configuration.host == crd_apiserver.url
    version = client.VersionApi(crd_apiserver.api_client).get_code()
    assert (version.major, version.minor) == ("1", "36")


def test_options_reach_the_server_and_it_stops_after_a_failed_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    monkeypatch.setenv(BIN_ENV, binary)  # absolute: inner sessions run in another directory
    shutil.copytree(CRDS, pytester.path / "crds")
    pytester.makeini("[pytest]\ncrd_apiserver_load = crds\n")
    pytester.makeconftest(textwrap.dedent("""
        import pytest

        @pytest.fixture(scope="session")
        def crd_apiserver_args():
            return ["--disable-admission-plugins=ServiceAccount"]
    """))
    pytester.makepyfile(textwrap.dedent("""
        import json, urllib.request

        def test_loaded_and_configured(crd_apiserver):
            with open("server.txt", "w") as f:
                f.write(f"{crd_apiserver.process.pid} {crd_apiserver.url}")
            crds = f"{crd_apiserver.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
            with urllib.request.urlopen(f"{crds}/widgets.example.com") as reply:
                assert json.load(reply)["spec"]["names"]["kind"] == "Widget"
            # Without the ServiceAccount plugin, no ServiceAccount `default` is needed.
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
            create = urllib.request.Request(
                f"{crd_apiserver.url}/api/v1/namespaces/default/pods",
                data=json.dumps(pod).encode(), headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(create) as reply:
                assert reply.status == 201

        def test_fails(crd_apiserver):
            assert False, "this test fails"
    """))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    pid, url = (pytester.path / "server.txt").read_text().split()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/readyz", timeout=5)


def test_the_cluster_options_start_controllers_and_simulated_nodes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    monkeypatch.setenv(BIN_ENV, binary)
    pytester.makeini(
        "[pytest]\ncrd_apiserver_controllers = *\ncrd_apiserver_simulate_nodes = 2\n"
    )
    pytester.makepyfile(textwrap.dedent("""
        import time
        from kubernetes import client

        def test_a_deployment_becomes_available(crd_apiserver_clean):
            core = client.CoreV1Api(crd_apiserver_clean.api_client)
            assert len(core.list_node().items) == 2
            apps = client.AppsV1Api(crd_apiserver_clean.api_client)
            apps.create_namespaced_deployment("default", {
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                         "template": {"metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "w", "image": "nginx"}]}}}})
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                status = apps.read_namespaced_deployment("web", "default").status
                if status.available_replicas == 2:
                    break
                time.sleep(0.05)
            assert status.available_replicas == 2
            pods = core.list_namespaced_pod("default", label_selector="app=web").items
            assert [p.status.phase for p in pods] == ["Running", "Running"]
    """))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)


def test_a_missing_binary_is_an_error_saying_how_to_build_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(BIN_ENV, raising=False)
    monkeypatch.setenv("PATH", str(pytester.mkdir("empty")))
    pytester.makepyfile("def test_needs_the_server(crd_apiserver):\n    pass\n")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "E *CrdApiServerError: the crd-apiserver binary was not found: set CRD_APISERVER_BIN "
        "to its path or put it on PATH (build it *`cargo build --release --bin crd-apiserver`*"
    ])


def test_a_server_that_fails_to_start_is_an_error_with_its_log(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, binary: str
) -> None:
    monkeypatch.setenv(BIN_ENV, binary)
    pytester.makeini("[pytest]\ncrd_apiserver_args = --log-format json\n")
    bad = pytester.mkdir("bad")
    (bad / "widget.yaml").write_text(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {replicas: 1}\n"
    )
    pytester.makepyfile("def test_needs_the_server(crd_apiserver):\n    pass\n")
    result = pytester.runpytest_subprocess(
        f"--crd-apiserver-load={CRDS}", f"--crd-apiserver-load={bad}"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        f"E *CrdApiServerError: crd-apiserver exited with status 1: {binary} --port 0 "
        f"--kubeconfig-out *kubeconfig --load {CRDS} --load {bad} --log-format json",
        "E *its log (*crd-apiserver.log) ends with:",
        'E *Widget.example.com "w" is invalid: spec.color: Required value*',
    ])
