"""Snapshots: `crd_apiserver_restored` starts every test from the session's snapshot
(the `--load`ed CRD plus what `crd_apiserver_setup` created); a fork is a server of its
own; a restore ends the watches opened before it. The first four tests run in this
order (pytest keeps a file's order)."""

import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from kubernetes import client, watch
from kubernetes.client import ApiException

from pytest_crd_apiserver import BIN_ENV, CrdApiServer, CrdApiServerError, find_binary

NAMESPACE = "fixtures"
WIDGETS = ("example.com", "v1", NAMESPACE, "widgets")
LOADED = {"w1": "blue", "w2": "green"}


def widget(name: str, color: str) -> Dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"color": color}}


def colors(api_client: client.ApiClient) -> Dict[str, str]:
    """The widgets in NAMESPACE, name to color."""
    items = client.CustomObjectsApi(api_client).list_namespaced_custom_object(*WIDGETS)["items"]
    return {w["metadata"]["name"]: w["spec"]["color"] for w in items}


def status_of(read: Any) -> int:
    with pytest.raises(ApiException) as failed:
        read()
    return int(failed.value.status)


# A suite puts this override in its conftest.py; here it serves this file's tests.
@pytest.fixture(scope="session")
def crd_apiserver_setup(crd_apiserver: CrdApiServer) -> None:
    """The suite's objects, created once through the API before the snapshot."""
    core = client.CoreV1Api(crd_apiserver.api_client)
    core.create_namespace({"metadata": {"name": NAMESPACE}})
    core.create_namespaced_config_map(
        NAMESPACE, {"metadata": {"name": "settings"}, "data": {"mode": "loaded"}}
    )
    custom = client.CustomObjectsApi(crd_apiserver.api_client)
    for name, color in LOADED.items():
        custom.create_namespaced_custom_object(*WIDGETS, widget(name, color))


def test_a_test_changes_the_loaded_state(crd_apiserver_restored: CrdApiServer) -> None:
    api_client = crd_apiserver_restored.api_client
    assert colors(api_client) == LOADED
    core = client.CoreV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    custom.patch_namespaced_custom_object(*WIDGETS, "w1", {"spec": {"color": "red"}})
    custom.delete_namespaced_custom_object(*WIDGETS, "w2")
    custom.create_namespaced_custom_object(*WIDGETS, widget("w3", "black"))
    core.delete_namespaced_config_map("settings", NAMESPACE)
    core.create_namespace({"metadata": {"name": "scratch"}})
    client.RbacAuthorizationV1Api(api_client).create_namespaced_role(NAMESPACE, {
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    })
    assert colors(api_client) == {"w1": "red", "w3": "black"}
    # The `--load`ed CRD goes too, its widgets with it.
    extensions = client.ApiextensionsV1Api(api_client)
    extensions.delete_custom_resource_definition("widgets.example.com")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            extensions.read_custom_resource_definition("widgets.example.com")
        except ApiException as e:
            assert e.status == 404
            break
        time.sleep(0.02)
    assert status_of(lambda: colors(api_client)) == 404


def test_the_next_test_starts_from_the_snapshot(crd_apiserver_restored: CrdApiServer) -> None:
    api_client = crd_apiserver_restored.api_client
    core = client.CoreV1Api(api_client)
    crd = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(
        "widgets.example.com")
    assert crd.spec.names.kind == "Widget"
    assert colors(api_client) == LOADED
    assert core.read_namespaced_config_map("settings", NAMESPACE).data == {"mode": "loaded"}
    assert status_of(lambda: core.read_namespace("scratch")) == 404
    assert status_of(lambda: client.RbacAuthorizationV1Api(api_client).read_namespaced_role(
        "reader", NAMESPACE)) == 404
    # The restored CRD serves again: its schema defaults and validates.
    custom = client.CustomObjectsApi(api_client)
    created = custom.create_namespaced_custom_object(*WIDGETS, widget("w4", "white"))
    assert created["spec"] == {"color": "white", "replicas": 1}
    assert status_of(lambda: custom.create_namespaced_custom_object(
        *WIDGETS, {**widget("w5", "x"), "spec": {}})) == 422


def test_a_test_on_the_session_server_writes_without_a_restore(
    crd_apiserver: CrdApiServer,
) -> None:
    api_client = crd_apiserver.api_client
    # The previous test's widget is gone: it was restored after that test.
    assert colors(api_client) == LOADED
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        *WIDGETS, widget("unrestored", "grey"))
    assert colors(api_client) == {**LOADED, "unrestored": "grey"}


def test_a_restored_test_after_it_starts_from_the_snapshot_too(
    crd_apiserver_restored: CrdApiServer,
) -> None:
    assert colors(crd_apiserver_restored.api_client) == LOADED


def test_a_fork_is_isolated_from_its_source_both_ways(
    crd_apiserver_restored: CrdApiServer,
) -> None:
    source = crd_apiserver_restored
    custom = client.CustomObjectsApi(source.api_client)
    custom.patch_namespaced_custom_object(*WIDGETS, "w1", {"spec": {"color": "yellow"}})
    source.snapshot("before-fork")
    custom.patch_namespaced_custom_object(*WIDGETS, "w1", {"spec": {"color": "purple"}})

    with source.fork("before-fork") as fork:
        assert fork.snapshot_name == "before-fork"
        assert fork.url != source.url
        assert f"server: {fork.url}\n" in fork.kubeconfig.read_text()
        assert fork.api_client.configuration.host == fork.url
        # The fork holds the snapshot, not what the source wrote after it.
        assert colors(fork.api_client) == {"w1": "yellow", "w2": "green"}

        fork_custom = client.CustomObjectsApi(fork.api_client)
        fork_custom.create_namespaced_custom_object(*WIDGETS, widget("in-fork", "orange"))
        fork_custom.delete_namespaced_custom_object(*WIDGETS, "w2")
        custom.create_namespaced_custom_object(*WIDGETS, widget("in-source", "pink"))
        client.CoreV1Api(source.api_client).delete_namespaced_config_map("settings", NAMESPACE)

        assert colors(fork.api_client) == {"w1": "yellow", "in-fork": "orange"}
        assert colors(source.api_client) == {"w1": "purple", "w2": "green", "in-source": "pink"}
        assert client.CoreV1Api(fork.api_client).read_namespaced_config_map(
            "settings", NAMESPACE).data == {"mode": "loaded"}

        # Snapshots are each server's own: the fork's are taken and restored on it.
        assert "session" not in fork.snapshots()
        fork.snapshot("in-fork")
        fork_custom.delete_namespaced_custom_object(*WIDGETS, "in-fork")
        assert fork.restore("in-fork").written == 1
        assert colors(fork.api_client) == {"w1": "yellow", "in-fork": "orange"}
        assert "in-fork" not in source.snapshots()
        assert colors(source.api_client) == {"w1": "purple", "w2": "green", "in-source": "pink"}


def test_a_restore_ends_open_watches_and_a_new_watch_works(
    crd_apiserver_restored: CrdApiServer,
) -> None:
    server = crd_apiserver_restored
    custom = client.CustomObjectsApi(server.api_client)
    at = server.snapshot("before-watch")
    assert server.snapshots()["before-watch"] == at

    seen: List[Tuple[str, Any]] = []
    failed: List[int] = []
    first = threading.Event()

    def follow() -> None:
        stream = watch.Watch()
        try:
            for event in stream.stream(custom.list_namespaced_custom_object, *WIDGETS,
                                       resource_version=at, timeout_seconds=30):
                obj = event["raw_object"] if event["type"] == "ERROR" else event["object"]
                seen.append((event["type"], obj.get("code") or obj["metadata"]["name"]))
                first.set()
        except ApiException as e:  # the client lists no more after a second 410
            failed.append(int(e.status))

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    created = custom.create_namespaced_custom_object(*WIDGETS, widget("watched", "red"))
    assert first.wait(10), "the watch received nothing"
    started = time.monotonic()

    restored = server.restore("before-watch")
    follower.join(15)
    assert not follower.is_alive(), "the watch outlived the restore"
    assert time.monotonic() - started < 10  # ended by the restore, not its timeout
    assert seen[0] == ("ADDED", "watched")
    # 410 Gone: as an ERROR event, or raised by the client after its one retry.
    assert failed == [410] or ("ERROR", 410) in seen
    assert all(kind in ("ADDED", "ERROR") for kind, _ in seen)

    assert restored.written == 1
    assert int(restored.resource_version) > int(created["metadata"]["resourceVersion"])
    assert colors(server.api_client) == LOADED
    # A watch from after the restore sees the writes that follow it.
    custom.create_namespaced_custom_object(*WIDGETS, widget("after", "blue"))
    events = []
    stream = watch.Watch()
    for event in stream.stream(custom.list_namespaced_custom_object, *WIDGETS,
                               resource_version=restored.resource_version, timeout_seconds=10):
        events.append((event["type"], event["object"]["metadata"]["name"]))
        stream.stop()
    assert events == [("ADDED", "after")]


def test_unknown_snapshots_and_bad_names_are_errors(crd_apiserver_restored: CrdApiServer) -> None:
    server = crd_apiserver_restored
    assert "session" in server.snapshots()
    with pytest.raises(CrdApiServerError, match=r"restore 'nope': 404 snapshot \"nope\" not found"):
        server.restore("nope")
    with pytest.raises(CrdApiServerError, match=r"fork 'nope': 404 snapshot \"nope\" not found"):
        server.fork("nope")
    with pytest.raises(CrdApiServerError, match=r"snapshot 'Bad_Name': 400 invalid snapshot name"):
        server.snapshot("Bad_Name")
    assert "Bad_Name" not in server.snapshots()


def test_the_restore_after_a_test_runs_when_it_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pytestconfig: pytest.Config
) -> None:
    monkeypatch.setenv(BIN_ENV, find_binary(pytestconfig.invocation_params.dir))
    pytester.makeconftest(textwrap.dedent("""
        import pytest
        from kubernetes import client

        @pytest.fixture(scope="session")
        def crd_apiserver_setup(crd_apiserver):
            client.CoreV1Api(crd_apiserver.api_client).create_namespaced_config_map(
                "default", {"metadata": {"name": "loaded"}})
    """))
    pytester.makepyfile(textwrap.dedent("""
        from kubernetes import client

        def names(server):
            core = client.CoreV1Api(server.api_client)
            return {c.metadata.name for c in core.list_namespaced_config_map("default").items}

        def test_writes_then_fails(crd_apiserver_restored):
            core = client.CoreV1Api(crd_apiserver_restored.api_client)
            core.delete_namespaced_config_map("loaded", "default")
            core.create_namespaced_config_map("default", {"metadata": {"name": "stray"}})
            assert False, "this test fails"

        def test_starts_from_the_snapshot(crd_apiserver_restored, crd_apiserver_snapshot):
            assert crd_apiserver_snapshot == "session"
            assert "loaded" in names(crd_apiserver_restored)
            assert "stray" not in names(crd_apiserver_restored)
    """))
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
