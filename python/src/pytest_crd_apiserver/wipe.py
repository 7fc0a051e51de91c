"""Resetting a server through its API (it has no reset endpoint): every object whose uid
was not there at start is deleted, as the Rust harness's `reset()` wipes storage."""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterator, List, NamedTuple

from kubernetes import dynamic
from kubernetes.client import ApiException

from .error import CrdApiServerError

# Aggregated discovery: every group's resources in one request per root.
AGGREGATED_DISCOVERY = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
)
# Webhooks and policies go first: one whose server is gone would refuse the deletions.
ADMISSION_GROUP = "admissionregistration.k8s.io"
CRD_GROUP = "apiextensions.k8s.io"
# How long namespaces and CRDs get to finish terminating.
TERMINATION_TIMEOUT = 30.0


class Resource(NamedTuple):
    """A listable, deletable resource in its group's preferred version."""

    path: str  # the list path, e.g. /apis/apps/v1/deployments
    group: str
    name: str
    namespaced: bool

    def object_path(self, namespace: str, name: str) -> str:
        """The path of one object of this resource."""
        prefix, _, plural = self.path.rpartition("/")
        if self.namespaced:
            return f"{prefix}/namespaces/{namespace}/{plural}/{name}"
        return f"{self.path}/{name}"


def snapshot(client: dynamic.DynamicClient) -> frozenset[str]:
    """The uids of every object the server holds now."""
    return frozenset(item["metadata"]["uid"] for _, item in _objects(client, _resources(client)))


def reset(client: dynamic.DynamicClient, baseline: frozenset[str], crds: bool) -> None:
    """Delete every object not in `baseline` (CRDs only when `crds`), removing
    finalizers, and wait until deleted namespaces and CRDs are gone."""
    resources = _resources(client)
    first = [r for r in resources if r.group == ADMISSION_GROUP]
    namespaces = [r for r in resources if r.group == "" and r.name == "namespaces"]
    definitions = [r for r in resources if r.group == CRD_GROUP and crds]
    rest = [
        r
        for r in resources
        if r.group not in (ADMISSION_GROUP, CRD_GROUP) and r not in namespaces
    ]
    done = set(baseline)
    for stage in (first, rest, namespaces, definitions):
        terminating = []
        for resource, item in _objects(client, stage):
            meta = item["metadata"]
            if meta["uid"] in done:
                continue  # in the baseline, or seen through another group (events)
            done.add(meta["uid"])
            path = resource.object_path(meta.get("namespace", ""), meta["name"])
            _delete(client, path, bool(meta.get("finalizers")))
            terminating.append(path)
        if stage is namespaces or stage is definitions:
            _wait_gone(client, terminating)


def _resources(client: dynamic.DynamicClient) -> List[Resource]:
    found = []
    for root in ("/api", "/apis"):
        doc = _get(client, root, accept=AGGREGATED_DISCOVERY)
        if doc.get("kind") != "APIGroupDiscoveryList":
            raise CrdApiServerError(f"{root} answered no aggregated discovery: {doc.get('kind')}")
        for group in doc["items"]:
            name = group["metadata"].get("name", "")
            seen = set()
            # Preferred version first; a resource only some versions serve is in one of
            # the others (CRDs of one group with different versions).
            for version in group["versions"]:
                v = version["version"]
                prefix = f"/api/{v}" if root == "/api" else f"/apis/{name}/{v}"
                for r in version["resources"]:
                    plural = r["resource"]
                    if plural in seen or not {"list", "delete"} <= set(r.get("verbs", [])):
                        continue
                    seen.add(plural)
                    namespaced = r["scope"] == "Namespaced"
                    found.append(Resource(f"{prefix}/{plural}", name, plural, namespaced))
    return found


def _objects(
    client: dynamic.DynamicClient, resources: List[Resource]
) -> Iterator[tuple[Resource, Dict[str, Any]]]:
    for resource in resources:
        for item in _get(client, resource.path).get("items") or []:
            yield resource, item


def _delete(client: dynamic.DynamicClient, path: str, had_finalizers: bool) -> None:
    try:
        reply = client.request(
            "DELETE",
            path,
            query_params=[("gracePeriodSeconds", 0), ("propagationPolicy", "Background")],
            serialize=False,
        )
    except ApiException as e:
        if e.status == 404:
            return
        raise CrdApiServerError(f"reset: deleting {path} answered {e.status}: {e.body}") from e
    body = json.loads(reply.data or b"{}")
    still = body.get("kind") != "Status" and body.get("metadata", {}).get("finalizers")
    if had_finalizers or still:
        try:
            client.request(
                "PATCH",
                path,
                body=[{"op": "remove", "path": "/metadata/finalizers"}],
                content_type="application/json-patch+json",
                serialize=False,
            )
        except ApiException as e:
            # Gone, or its finalizers already removed (the patch's path is missing).
            if e.status not in (404, 422):
                raise CrdApiServerError(
                    f"reset: removing the finalizers of {path} answered {e.status}: {e.body}"
                ) from e


def _wait_gone(client: dynamic.DynamicClient, paths: List[str]) -> None:
    deadline = time.monotonic() + TERMINATION_TIMEOUT
    for path in paths:
        while True:
            try:
                left = _get(client, path)
            except ApiException as e:
                if e.status == 404:
                    break
                raise
            if time.monotonic() > deadline:
                raise CrdApiServerError(
                    f"reset: {path} still exists {TERMINATION_TIMEOUT:g} s after its deletion: "
                    f"{json.dumps(left.get('status'))}"
                )
            time.sleep(0.02)


def _get(
    client: dynamic.DynamicClient, path: str, accept: str = "application/json"
) -> Dict[str, Any]:
    reply = client.request("GET", path, header_params={"Accept": accept}, serialize=False)
    doc: Dict[str, Any] = json.loads(reply.data)
    return doc
