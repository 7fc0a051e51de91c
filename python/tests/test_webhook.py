"""Admission webhooks written in Python, called by the server over HTTPS by URL."""

import base64
import json
from pathlib import Path
from typing import Any, Callable, Dict, Iterator

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from admission_webhook import Certificates, WebhookServer, certificate_makers
from pytest_crd_apiserver import CrdApiServer


def review(path: str, request: Dict[str, Any]) -> Dict[str, Any]:
    """/mutate labels the ConfigMap; /validate refuses one with a `forbidden` key."""
    if path == "/mutate":
        patch = [{"op": "add", "path": "/metadata/labels/mutated-by", "value": "python"}]
        return {
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(patch).encode()).decode(),
        }
    if "forbidden" in (request["object"].get("data") or {}):
        return {"allowed": False, "status": {"message": "the forbidden key is set"}}
    return {"allowed": True}


@pytest.fixture(params=certificate_makers(), ids=lambda make: make.__name__)
def webhook(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[WebhookServer]:
    make: Callable[[Path], Certificates] = request.param
    server = WebhookServer(review, make(tmp_path), tmp_path)
    yield server
    server.close()


def hook(name: str, webhook: WebhookServer, path: str) -> Dict[str, Any]:
    return {
        "name": name,
        "clientConfig": webhook.client_config(path),
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"webhook-test": "yes"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 5,
    }


def test_python_webhooks_mutate_and_refuse_config_maps(
    crd_apiserver_clean: CrdApiServer, webhook: WebhookServer
) -> None:
    api_client = crd_apiserver_clean.api_client
    admission = client.AdmissionregistrationV1Api(api_client)
    admission.create_mutating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "python-mutate"},
        "webhooks": [hook("mutate.example.com", webhook, "/mutate")],
    })
    admission.create_validating_webhook_configuration({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "python-validate"},
        "webhooks": [hook("validate.example.com", webhook, "/validate")],
    })
    core = client.CoreV1Api(api_client)

    def config_map(name: str, data: Dict[str, str]) -> Dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"webhook-test": "yes"}}, "data": data}

    created = core.create_namespaced_config_map("default", config_map("allowed", {"a": "b"}))
    assert created.metadata.labels == {"webhook-test": "yes", "mutated-by": "python"}
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_config_map("default", config_map("refused", {"forbidden": "x"}))
    assert refused.value.status == 400
    assert json.loads(refused.value.body)["message"] == (
        'admission webhook "validate.example.com" denied the request: the forbidden key is set'
    )

    seen = [(path, r["operation"], r["kind"]["kind"], r["namespace"], r["name"])
            for path, r in webhook.requests]
    assert seen == [
        ("/mutate", "CREATE", "ConfigMap", "default", "allowed"),
        ("/validate", "CREATE", "ConfigMap", "default", "allowed"),
        ("/mutate", "CREATE", "ConfigMap", "default", "refused"),
        ("/validate", "CREATE", "ConfigMap", "default", "refused"),
    ]
    # The validating hook sees the object as mutated.
    assert webhook.requests[1][1]["object"]["metadata"]["labels"]["mutated-by"] == "python"
