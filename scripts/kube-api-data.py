#!/usr/bin/env python3
"""Copy kube's recorded API documents into the repository, deliberately.

Usage: scripts/kube-api-data.py [RECORDED_DIR]   (default: ../shared/kube-v1.36)

From a directory of documents recorded from a real kube-apiserver (README.md there):
- discovery/*.json -> crates/apimachinery/data/kube-v1.36/discovery/ (minified; the
  test CRD group `load.example.com` dropped from the aggregated `/apis` document),
  and the same documents, pretty, into testdata/kube-v1.36/discovery/ as expectations;
- openapi-v3/*.json -> crates/apimachinery/src/openapi_builtin.json: every definition
  of every group-version, merged, in OpenAPI v2's form (`#/definitions/` references, a
  reference with siblings written beside them rather than wrapped in `allOf`),
  descriptions and `default`s kept.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "kube-v1.36")
TEST_GROUP = "load.example.com"


def v2_node(node):
    if isinstance(node, list):
        return [v2_node(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: v2_node(v) for k, v in node.items()}
    ref = out.get("$ref")
    if isinstance(ref, str):
        out["$ref"] = ref.replace("#/components/schemas/", "#/definitions/", 1)
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        del out["allOf"]
        out["$ref"] = all_of[0]["$ref"]
    return out


GVK = "x-kubernetes-group-version-kind"


def merge_gvks(key, old, new):
    """Meta kinds (DeleteOptions, WatchEvent) name the group of each document they are
    in: the merged definition names them all, as `/openapi/v2` does."""
    rest = lambda d: {k: v for k, v in d.items() if k != GVK}
    if rest(old) != rest(new):
        sys.exit(f"{key} differs between documents")
    gvks = {json.dumps(g, sort_keys=True): g for g in old.get(GVK, []) + new.get(GVK, [])}
    merged = dict(new)
    merged[GVK] = sorted(gvks.values(), key=lambda g: (g["group"], g["version"], g["kind"]))
    return merged


def main():
    data = os.path.join(ROOT, "crates", "apimachinery", "data", "kube-v1.36", "discovery")
    tests = os.path.join(ROOT, "testdata", "kube-v1.36", "discovery")
    os.makedirs(data, exist_ok=True)
    os.makedirs(tests, exist_ok=True)
    src = os.path.join(SRC, "discovery")
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(src, name)) as f:
            doc = json.load(f)
        if name == "aggregated-apis.json":
            doc["items"] = [g for g in doc["items"] if g["metadata"].get("name") != TEST_GROUP]
        with open(os.path.join(data, name), "w") as f:
            json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
        with open(os.path.join(tests, name), "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
    defs = {}
    src = os.path.join(SRC, "openapi-v3")
    for name in sorted(os.listdir(src)):
        with open(os.path.join(src, name)) as f:
            schemas = json.load(f)["components"]["schemas"]
        for key, schema in schemas.items():
            converted = v2_node(schema)
            if key in defs and defs[key] != converted:
                converted = merge_gvks(key, defs[key], converted)
            defs[key] = converted
    out = os.path.join(ROOT, "crates", "apimachinery", "src", "openapi_builtin.json")
    with open(out, "w") as f:
        json.dump(dict(sorted(defs.items())), f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")


main()
