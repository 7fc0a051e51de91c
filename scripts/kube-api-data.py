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
  descriptions and `default`s kept;
- openapi-v3/*.json -> crates/apimachinery/data/kube-v1.36/openapi-v3.json.zlib: the
  documents themselves, as served at `/openapi/v3/<group-version>`, in one zlib stream
  of `{"documents": {"api/v1": ..., "apis/apps/v1": ...}, "shared": [...]}` where a
  subtree met more than once (a parameter, a schema in several documents) is written
  once in `shared` and replaced by `{"$shared": <index>}` (shared entries refer only to
  earlier ones); keys sorted. And into testdata/kube-v1.36/openapi-v3/digests.json, as
  the expectation the integration test holds the served documents to, a digest of each
  member of each document (OPENAPI_DIGESTS below says which and how);
- protobuf-fields.json -> crates/apimachinery/data/kube-v1.36/protobuf.json: every
  message's fields (number, JSON name, type, and from the Go types in a Kubernetes
  tree, KUBE_TREE (default /tmp/kube), whether a field is a pointer, `omitempty`,
  `omitzero` or `inline`), and which message each apiVersion/kind is.

With RUNTIME_CONFIG_DIR set (default /tmp/kb/rec): the documents of the group/versions
kube serves only when `--runtime-config` turns them on, recorded from kube-apiserver
v1.36 started with `--runtime-config=api/all=true` (`discovery/` and `openapi-v3/` of
each such group/version; OpenAPI documents written as Go's reflection writes kube-openapi's
structs are read too). Their discovery goes to
crates/apimachinery/data/kube-v1.36/runtime-config/ (and, pretty, to
testdata/kube-v1.36/runtime-config/discovery/), their OpenAPI documents into the same
zlib stream (digests in testdata/kube-v1.36/runtime-config/openapi-v3-digests.json), the
definitions they add to openapi_builtin.json (a definition the default documents have
is kept as they have it), and their messages to protobuf.json, read from the
`generated.proto` files of KUBE_TREE where protobuf-fields.json has none.
"""
import collections
import glob
import hashlib
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "..", "shared", "kube-v1.36")
TEST_GROUP = "load.example.com"
KUBE_TREE = os.environ.get("KUBE_TREE", "/tmp/kube")
RUNTIME_CONFIG_DIR = os.environ.get("RUNTIME_CONFIG_DIR", "/tmp/kb/rec")

# The wrappers Go's reflection writes around kube-openapi's fields (`SchemaProps`, ...):
# their members belong to the object that holds them.
GO_WRAPPERS = {
    "ArbitraryKeys", "SchemaProps", "SwaggerSchemaProps", "OperationProps", "MediaTypeProps",
    "VendorExtensible", "Extensions", "PathProps", "ParameterProps", "ResponseProps",
    "RequestBodyProps", "HeaderProps", "ComponentsProps", "SecuritySchemeProps", "Refable",
    "ExampleProps", "EncodingProps", "InfoProps", "ResponsesProps", "ItemsProps",
}


def unwrap_go(node):
    if isinstance(node, list):
        return [unwrap_go(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in GO_WRAPPERS:
            if isinstance(value, dict):
                out.update(unwrap_go(value))
        elif not (key == "Ref" and isinstance(value, dict)):
            out[key] = unwrap_go(value)
    return out


def runtime_config_documents(kind):
    """{file name: document} of the recorded off-by-default group/versions."""
    src = os.path.join(RUNTIME_CONFIG_DIR, kind)
    if not os.path.isdir(src):
        sys.exit(f"{src}: no recorded off-by-default documents (RUNTIME_CONFIG_DIR)")
    out = {}
    for name in sorted(os.listdir(src)):
        if name.endswith(".json"):
            with open(os.path.join(src, name)) as f:
                out[name] = unwrap_go(json.load(f))
    return out


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
    rc_data = os.path.join(ROOT, "crates", "apimachinery", "data", "kube-v1.36", "runtime-config")
    rc_tests = os.path.join(ROOT, "testdata", "kube-v1.36", "runtime-config", "discovery")
    os.makedirs(rc_data, exist_ok=True)
    os.makedirs(rc_tests, exist_ok=True)
    for name, doc in runtime_config_documents("discovery").items():
        with open(os.path.join(rc_data, name), "w") as f:
            json.dump(doc, f, separators=(",", ":"), ensure_ascii=False)
        with open(os.path.join(rc_tests, name), "w") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
    for doc in runtime_config_documents("openapi-v3").values():
        for key, schema in doc["components"]["schemas"].items():
            defs.setdefault(key, v2_node(schema))
    out = os.path.join(ROOT, "crates", "apimachinery", "src", "openapi_builtin.json")
    with open(out, "w") as f:
        json.dump(dict(sorted(defs.items())), f, separators=(",", ":"), ensure_ascii=False)
        f.write("\n")


GO_FIELD = re.compile(r'^\s+(?:(\w+)\s+)?([*\[\]\w.]+)\s+`([^`]*)`')


def go_struct_fields(tree):
    """{proto package: {struct: {field number: (json name, flags)}}} from Go sources."""
    out = {}
    staging = os.path.join(tree, "staging", "src", "k8s.io")
    for proto in glob.glob(os.path.join(staging, "**", "generated.proto"), recursive=True):
        with open(proto) as f:
            m = re.search(r"^package ([\w.]+);", f.read(), re.M)
        structs = out.setdefault(m.group(1), {})
        for go in glob.glob(os.path.join(os.path.dirname(proto), "*.go")):
            if go.endswith("_test.go") or "generated" in os.path.basename(go):
                continue
            current = None
            with open(go) as f:
                for line in f:
                    start = re.match(r"^type (\w+) struct \{", line)
                    if start:
                        current = structs.setdefault(start.group(1), {})
                        continue
                    if line.startswith("}"):
                        current = None
                        continue
                    field = GO_FIELD.match(line) if current is not None else None
                    if not field:
                        continue
                    gotype, tag = field.group(2), field.group(3)
                    pb = re.search(r'protobuf:"\w+,(\d+),', tag)
                    js = re.search(r'json:"([^"]*)"', tag)
                    if not pb or not js:
                        continue
                    parts = js.group(1).split(",")
                    flags = ""
                    if gotype.startswith("*"):
                        flags += "p"
                    if "omitempty" in parts[1:]:
                        flags += "o"
                    if "omitzero" in parts[1:]:
                        flags += "z"
                    if "inline" in parts[1:]:
                        flags += "i"
                    current[int(pb.group(1))] = (parts[0], flags)
    return out


PROTO_FIELD = re.compile(r"^\s*(optional|repeated)?\s*(map<[^>]*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")


def proto_messages(tree, packages):
    """{message: [field]} (protobuf-fields.json's form) of `packages`, read from the
    `generated.proto` files of a Kubernetes tree."""
    out = {}
    staging = os.path.join(tree, "staging", "src", "k8s.io")
    for proto in glob.glob(os.path.join(staging, "**", "generated.proto"), recursive=True):
        with open(proto) as f:
            text = f.read()
        package = re.search(r"^package ([\w.]+);", text, re.M).group(1)
        if package not in packages:
            continue
        current = None
        for line in text.splitlines():
            start = re.match(r"^message (\w+) \{", line)
            if start:
                current = out.setdefault(package + "." + start.group(1), [])
                continue
            if line.startswith("}"):
                current = None
                continue
            field = PROTO_FIELD.match(line) if current is not None else None
            if field:
                label, ty, name, number = field.groups()
                current.append({
                    "label": label or "optional",
                    "name": name,
                    "number": int(number),
                    "type": ty.replace(" ", ""),
                })
    return out


def protobuf_table():
    with open(os.path.join(SRC, "protobuf-fields.json")) as f:
        messages = json.load(f)
    rc_openapi = runtime_config_documents("openapi-v3")
    packages = set()
    for doc in rc_openapi.values():
        for key in doc["components"]["schemas"]:
            package = "k8s.io." + key[len("io.k8s."):].rsplit(".", 1)[0].replace("-", "_")
            if not any(m.startswith(package + ".") for m in messages):
                packages.add(package)
    for name, fields in proto_messages(KUBE_TREE, packages).items():
        messages.setdefault(name, fields)
    go = go_struct_fields(KUBE_TREE)

    def resolve(package, ty):
        if ty.startswith("."):
            return ty[1:]
        if ty in ("string", "bytes", "bool", "int32", "int64", "double", "float"):
            return ty
        return package + "." + ty

    table = {}
    for name, fields in sorted(messages.items()):
        package, short = name.rsplit(".", 1)
        struct = go.get(package, {}).get(short, {})
        rows = []
        for fd in sorted(fields, key=lambda x: x["number"]):
            json_name, flags = struct.get(fd["number"], (fd["name"], "o"))
            ty = fd["type"]
            if ty.startswith("map<"):
                key, value = ty[4:-1].split(",", 1)
                ty = "map:" + resolve(package, value)
            else:
                ty = resolve(package, ty)
            if fd["label"] == "repeated":
                flags += "r"
            rows.append([fd["number"], json_name or fd["name"], ty, flags])
        table[name] = rows
    kinds = {}
    documents = []
    for path in sorted(glob.glob(os.path.join(SRC, "openapi-v3", "*.json"))):
        with open(path) as f:
            documents.append(json.load(f))
    documents.extend(rc_openapi.values())
    for doc in documents:
        for key, schema in doc["components"]["schemas"].items():
            message = "k8s.io." + key[len("io.k8s."):].replace("-", "_")
            if message not in table:
                continue
            for gvk in schema.get(GVK, []):
                api_version = (gvk["group"] + "/" if gvk["group"] else "") + gvk["version"]
                kinds[api_version + "/" + gvk["kind"]] = message
    out = os.path.join(ROOT, "crates", "apimachinery", "data", "kube-v1.36", "protobuf.json")
    with open(out, "w") as f:
        json.dump({"kinds": kinds, "messages": table}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")


def canonical(value):
    """Compact JSON, keys sorted, non-ASCII as UTF-8: the bytes the digests are of."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


SHARED = "$shared"
# A subtree is shared when it occurs twice or more and its JSON is at least this long.
SHARED_MIN_LEN = 48


def openapi_documents():
    docs = {}
    for path in sorted(glob.glob(os.path.join(SRC, "openapi-v3", "*.json"))):
        name = os.path.basename(path)[: -len(".json")].replace("_", "/")
        with open(path) as f:
            docs[name] = json.load(f)
    return docs


def runtime_config_openapi_documents():
    return {
        name[: -len(".json")].replace("_", "/"): doc
        for name, doc in runtime_config_documents("openapi-v3").items()
    }


def pooled(docs):
    seen = collections.Counter()

    def count(v):
        if isinstance(v, dict):
            if SHARED in v:
                sys.exit(f"a recorded document has a {SHARED!r} key")
            for x in v.values():
                count(x)
        elif isinstance(v, list):
            for x in v:
                count(x)
        seen[canonical(v)] += 1

    for d in docs.values():
        count(d)
    shared, index = [], {}

    def inner(v):
        if isinstance(v, dict):
            return {k: outer(x) for k, x in v.items()}
        if isinstance(v, list):
            return [outer(x) for x in v]
        return v

    def outer(v):
        key = canonical(v)
        if seen[key] < 2 or len(key) < SHARED_MIN_LEN:
            return inner(v)
        if key not in index:
            entry = inner(v)
            index[key] = len(shared)
            shared.append(entry)
        return {SHARED: index[key]}

    out = {"documents": {k: inner(d) for k, d in docs.items()}, "shared": shared}

    def expand(v):
        if isinstance(v, dict):
            if set(v) == {SHARED}:
                return expand(shared[v[SHARED]])
            return {k: expand(x) for k, x in v.items()}
        if isinstance(v, list):
            return [expand(x) for x in v]
        return v

    for k, d in docs.items():
        if canonical(expand(out["documents"][k])) != canonical(d):
            sys.exit(f"pooling {k} does not round-trip")
    return out


def openapi_digests(doc):
    """OPENAPI_DIGESTS: {JSON pointer: first 16 hex digits of the SHA-256 of the member's
    canonical JSON} for `/paths/<path>`, `/components/<section>/<name>` and every other
    top-level member (`/openapi`, `/info`); pointers escape `~` and `/` (RFC 6901)."""
    esc = lambda k: k.replace("~", "~0").replace("/", "~1")
    digest = lambda v: hashlib.sha256(canonical(v).encode()).hexdigest()[:16]
    out = {}
    for key, value in doc.items():
        if key == "paths" and isinstance(value, dict):
            for p, item in value.items():
                out[f"/paths/{esc(p)}"] = digest(item)
        elif key == "components" and isinstance(value, dict):
            for section, members in value.items():
                for name, item in members.items():
                    out[f"/components/{esc(section)}/{esc(name)}"] = digest(item)
        else:
            out[f"/{esc(key)}"] = digest(value)
    return dict(sorted(out.items()))


def openapi_v3():
    import zlib

    docs = openapi_documents()
    rc_docs = runtime_config_openapi_documents()
    docs.update(rc_docs)
    data = os.path.join(ROOT, "crates", "apimachinery", "data", "kube-v1.36", "openapi-v3.json.zlib")
    with open(data, "wb") as f:
        f.write(zlib.compress(canonical(pooled(docs)).encode(), 9))
    tests = os.path.join(ROOT, "testdata", "kube-v1.36", "openapi-v3")
    os.makedirs(tests, exist_ok=True)
    with open(os.path.join(tests, "digests.json"), "w") as f:
        json.dump(
            {k: openapi_digests(d) for k, d in docs.items() if k not in rc_docs},
            f, indent=1, sort_keys=True,
        )
        f.write("\n")
    with open(os.path.join(ROOT, "testdata", "kube-v1.36", "runtime-config", "openapi-v3-digests.json"), "w") as f:
        json.dump({k: openapi_digests(d) for k, d in rc_docs.items()}, f, indent=1, sort_keys=True)
        f.write("\n")


main()
protobuf_table()
openapi_v3()
