"""Custom resources of the CRD loaded from tests/crds (the `crd_apiserver_load` option)."""

import json

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from pytest_crd_apiserver import CrdApiServer

WIDGETS = ("example.com", "v1", "default", "widgets")


def widget(name: str, spec: dict) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec}


def test_a_widget_is_created_with_its_schema_defaults(crd_apiserver_clean: CrdApiServer) -> None:
    api = client.CustomObjectsApi(crd_apiserver_clean.api_client)
    created = api.create_namespaced_custom_object(*WIDGETS, widget("w1", {"color": "blue"}))
    assert created["spec"] == {"color": "blue", "replicas": 1}
    assert created["metadata"]["generation"] == 1
    read = api.get_namespaced_custom_object(*WIDGETS, "w1")
    assert read["metadata"]["uid"] == created["metadata"]["uid"]
    assert read["spec"] == {"color": "blue", "replicas": 1}


def test_a_widget_failing_its_schema_is_refused_with_kubes_422(
    crd_apiserver_clean: CrdApiServer,
) -> None:
    api = client.CustomObjectsApi(crd_apiserver_clean.api_client)
    with pytest.raises(ApiException) as refused:
        api.create_namespaced_custom_object(*WIDGETS, widget("w2", {"replicas": -1}))
    assert refused.value.status == 422
    status = json.loads(refused.value.body)
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Widget.example.com "w2" is invalid: [spec.replicas: Invalid value: -1: spec.replicas '
        "in body should be greater than or equal to 0, spec.color: Required value]"
    )
