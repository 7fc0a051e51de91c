"""A watch from a resourceVersion receives the writes after it, in order."""

from kubernetes import client, watch

from pytest_crd_apiserver import CrdApiServer

WIDGETS = ("example.com", "v1", "default", "widgets")


def test_a_watch_receives_added_modified_and_deleted(crd_apiserver_clean: CrdApiServer) -> None:
    api = client.CustomObjectsApi(crd_apiserver_clean.api_client)
    since = api.list_namespaced_custom_object(*WIDGETS)["metadata"]["resourceVersion"]
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
            "spec": {"color": "blue"}}
    api.create_namespaced_custom_object(*WIDGETS, body)
    api.patch_namespaced_custom_object(*WIDGETS, "w1", {"spec": {"color": "red"}})
    api.delete_namespaced_custom_object(*WIDGETS, "w1")

    events = []
    stream = watch.Watch()
    for event in stream.stream(
        api.list_namespaced_custom_object, *WIDGETS, resource_version=since, timeout_seconds=10
    ):
        obj = event["object"]
        events.append((event["type"], obj["metadata"]["name"], obj["spec"]["color"]))
        if len(events) == 3:
            stream.stop()
    assert events == [("ADDED", "w1", "blue"), ("MODIFIED", "w1", "red"), ("DELETED", "w1", "red")]
