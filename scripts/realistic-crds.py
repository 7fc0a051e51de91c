#!/usr/bin/env python3
"""Write testdata/crds-realistic/: fifteen CRDs of the size and shape operators ship,
made from kube's own built-in kinds (the recorded OpenAPI definitions in
crates/apimachinery/src/openapi_builtin.json) rather than copied from anywhere: each
CRD's spec and status schemas are a built-in kind's, inlined into a structural schema
(references expanded, IntOrString as x-kubernetes-int-or-string, free-form objects
preserved), with kube's descriptions, a default and CEL rules on top.

Usage: scripts/realistic-crds.py   (rewrites the directory; needs PyYAML)
"""
import json
import os

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFS = json.load(open(os.path.join(ROOT, "crates/apimachinery/src/openapi_builtin.json")))
OUT = os.path.join(ROOT, "testdata/crds-realistic")

# (kind of the CRD, built-in definition its spec and status come from)
KINDS = [
    ("AppDeployment", "io.k8s.api.apps.v1.Deployment"),
    ("AppStatefulSet", "io.k8s.api.apps.v1.StatefulSet"),
    ("NodeAgent", "io.k8s.api.apps.v1.DaemonSet"),
    ("BatchRun", "io.k8s.api.batch.v1.Job"),
    ("Schedule", "io.k8s.api.batch.v1.CronJob"),
    ("Workload", "io.k8s.api.core.v1.Pod"),
    ("Endpoint", "io.k8s.api.core.v1.Service"),
    ("Route", "io.k8s.api.networking.v1.Ingress"),
    ("Policy", "io.k8s.api.networking.v1.NetworkPolicy"),
    ("Volume", "io.k8s.api.core.v1.PersistentVolume"),
    ("Claim", "io.k8s.api.core.v1.PersistentVolumeClaim"),
    ("Autoscaler", "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler"),
    ("Budget", "io.k8s.api.policy.v1.PodDisruptionBudget"),
    ("Template", "io.k8s.api.core.v1.PodTemplate"),
    ("ReplicaPool", "io.k8s.api.apps.v1.ReplicaSet"),
]

KEEP = {"type", "description", "format", "enum", "required", "x-kubernetes-map-type"}
# CRDs generated with controller-gen's crd:maxDescLen=0 carry no descriptions: these do not.
NO_DESCRIPTIONS = {"Workload", "Template", "ReplicaPool", "NodeAgent", "BatchRun", "AppStatefulSet", "Schedule", "Volume", "Claim", "Policy", "Budget"}


def strip_descriptions(schema):
    if isinstance(schema, dict):
        schema.pop("description", None)
        for v in schema.values():
            strip_descriptions(v)
    elif isinstance(schema, list):
        for v in schema:
            strip_descriptions(v)
FREE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def structural(schema, depth=0):
    """kube's definition as a structural CRD schema."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name == "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" or depth > 40:
            out = dict(FREE)
        else:
            out = structural(DEFS[name], depth + 1)
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    if schema.get("format") == "int-or-string":
        out = {"x-kubernetes-int-or-string": True}
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    if "type" not in schema:
        out = dict(FREE)
        if "description" in schema:
            out["description"] = schema["description"]
        return out
    out = {k: v for k, v in schema.items() if k in KEEP}
    if out.get("format") not in (None, "int32", "int64", "date-time", "byte", "double"):
        del out["format"]
    if "properties" in schema:
        out["properties"] = {k: structural(v, depth + 1) for k, v in schema["properties"].items()}
    if "items" in schema:
        out["items"] = structural(schema["items"], depth + 1)
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = structural(schema["additionalProperties"], depth + 1)
    if schema.get("x-kubernetes-list-type") in ("atomic", "set"):
        items = out.get("items", {})
        if schema["x-kubernetes-list-type"] == "atomic" or items.get("type") in ("string", "integer"):
            out["x-kubernetes-list-type"] = schema["x-kubernetes-list-type"]
    return out


def crd(kind, definition):
    plural = kind.lower()[:-1] + "ies" if kind.endswith("y") else kind.lower() + "s"
    group = "realistic.example.com"
    props = DEFS[definition]["properties"]
    spec = structural(props["spec"]) if "spec" in props else structural(props["template"])
    spec.setdefault("properties", {})["tier"] = {
        "type": "string", "enum": ["gold", "silver", "bronze"], "default": "bronze",
        "description": "The service tier (a default and an enum, as operators add).",
    }
    spec["x-kubernetes-validations"] = [
        {"rule": "self.tier != 'gold' || has(self.owner)", "message": "gold needs an owner"},
    ]
    spec["properties"]["owner"] = {"type": "string", "maxLength": 63}
    root = {
        "type": "object",
        "description": DEFS[definition].get("description", ""),
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        },
        "x-kubernetes-validations": [
            {"rule": "self.metadata.name.size() <= 63", "message": "name too long"},
        ],
    }
    versions = [{
        "name": "v1", "served": True, "storage": True,
        "schema": {"openAPIV3Schema": root},
    }]
    if "status" in props:
        root["properties"]["status"] = structural(props["status"])
        versions[0]["subresources"] = {"status": {}}
    if kind in NO_DESCRIPTIONS:
        strip_descriptions(root)
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": kind + "List", "plural": plural,
                      "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": versions,
        },
    }


def main():
    for name in os.listdir(OUT):
        if name.endswith((".yaml", ".json")):
            os.remove(os.path.join(OUT, name))
    for kind, definition in KINDS:
        doc = crd(kind, definition)
        with open(os.path.join(OUT, doc["spec"]["names"]["plural"] + ".yaml"), "w") as f:
            yaml.safe_dump(doc, f, sort_keys=True, width=100)


if __name__ == "__main__":
    main()
