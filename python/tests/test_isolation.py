"""`crd_apiserver_clean`: what one test creates is gone in the next; what the server
started with stays. The two tests run in this order (pytest keeps a file's order)."""

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from pytest_crd_apiserver import CrdApiServer

WIDGETS = ("example.com", "v1")


def widget(name: str, finalizers: list) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "finalizers": finalizers}, "spec": {"color": "blue"}}


def test_a_test_leaves_objects_of_every_sort_behind(crd_apiserver_clean: CrdApiServer) -> None:
    api_client = crd_apiserver_clean.api_client
    core = client.CoreV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    core.create_namespace({"metadata": {"name": "leftover"}})
    core.create_namespaced_config_map(
        "leftover", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    custom.create_namespaced_custom_object(*WIDGETS, "leftover", "widgets",
                                           widget("held", ["example.com/hold"]))
    # A scheduled pod: deleted, it would wait out its grace period (no kubelet here).
    core.create_namespaced_service_account("leftover", {"metadata": {"name": "default"}})
    core.create_namespaced_pod("leftover", {
        "metadata": {"name": "scheduled"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "busybox"}]},
    })
    core.create_namespaced_config_map("default", {"metadata": {"name": "leftover"}})
    core.create_namespaced_service(
        "kube-system", {"metadata": {"name": "leftover"}, "spec": {"ports": [{"port": 80}]}}
    )
    client.SchedulingV1Api(api_client).create_priority_class(
        {"metadata": {"name": "leftover"}, "value": 1000}
    )
    # A webhook nobody serves, failing closed: left in place, it refuses every later
    # ConfigMap creation.
    client.AdmissionregistrationV1Api(api_client).create_validating_webhook_configuration({
        "metadata": {"name": "leftover"},
        "webhooks": [{
            "name": "leftover.example.com",
            "clientConfig": {"url": "https://127.0.0.1:1/never"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }],
    })
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map("default", {"metadata": {"name": "refused"}})
    assert refused.value.status == 500
    assert "failed calling webhook" in json.loads(refused.value.body)["message"]


def test_the_next_test_finds_none_of_them(crd_apiserver_clean: CrdApiServer) -> None:
    api_client = crd_apiserver_clean.api_client
    core = client.CoreV1Api(api_client)
    gone = [
        lambda: core.read_namespace("leftover"),
        lambda: core.read_namespaced_config_map("leftover", "default"),
        lambda: core.read_namespaced_service("leftover", "kube-system"),
        lambda: client.SchedulingV1Api(api_client).read_priority_class("leftover"),
        lambda: client.AdmissionregistrationV1Api(
            api_client).read_validating_webhook_configuration("leftover"),
    ]
    for read in gone:
        with pytest.raises(ApiException) as missing:
            read()
        assert missing.value.status == 404
    core.create_namespaced_config_map("default", {"metadata": {"name": "allowed"}})
    # What the server started with stays: the loaded CRD, the system namespaces, the
    # `kubernetes` Service.
    crd = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(
        "widgets.example.com")
    assert crd.spec.names.kind == "Widget"
    assert {n.metadata.name for n in core.list_namespace().items} == {
        "default", "kube-public", "kube-system"}
    assert core.read_namespaced_service("kubernetes", "default").spec.ports[0].port == 443


def test_reset_with_crds_deletes_the_crds_created_since_start(
    crd_apiserver_clean: CrdApiServer,
) -> None:
    api_client = crd_apiserver_clean.api_client
    extensions = client.ApiextensionsV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    # v1alpha1: in discovery, a version of example.com other than its preferred v1.
    gadgets = ("example.com", "v1alpha1", "default", "gadgets")
    extensions.create_custom_resource_definition({
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {
                "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            }}],
        },
    })
    gadget = {"apiVersion": "example.com/v1alpha1", "kind": "Gadget", "metadata": {"name": "g1"}}
    custom.create_namespaced_custom_object(*gadgets, gadget)

    crd_apiserver_clean.reset()
    assert extensions.read_custom_resource_definition("gadgets.example.com").spec.group
    assert custom.list_namespaced_custom_object(*gadgets)["items"] == []

    crd_apiserver_clean.reset(crds=True)
    with pytest.raises(ApiException) as missing:
        extensions.read_custom_resource_definition("gadgets.example.com")
    assert missing.value.status == 404
    assert extensions.read_custom_resource_definition("widgets.example.com").spec.group
