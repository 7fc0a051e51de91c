"""The Python `kubernetes` client against crd-apiserver: typed create, patch (its
default strategic merge, merge, JSON patch), server-side apply and watch of
Deployments, Pods and Services, asserting kube's defaults on what comes back.

Run by integration/client.rs with the server's kubeconfig as the only argument; prints
`ok` when every assertion held (a failed assertion exits non-zero with its traceback).
"""

import ipaddress
import sys

from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
apps = client.AppsV1Api()
core = client.CoreV1Api()
NS = "default"

rv0 = apps.list_namespaced_deployment(NS).metadata.resource_version

d = apps.create_namespaced_deployment(NS, {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
                     "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}},
    },
})
assert d.spec.replicas == 1, d.spec.replicas
assert d.spec.revision_history_limit == 10, d.spec.revision_history_limit
assert d.spec.progress_deadline_seconds == 600, d.spec.progress_deadline_seconds
assert d.spec.strategy.type == "RollingUpdate", d.spec.strategy
assert d.spec.strategy.rolling_update.max_surge == "25%", d.spec.strategy
assert d.spec.strategy.rolling_update.max_unavailable == "25%", d.spec.strategy
assert d.spec.template.spec.containers[0].image_pull_policy == "IfNotPresent"
assert d.metadata.generation == 1

# A dict body is sent as a strategic merge patch: containers merge by name.
d = apps.patch_namespaced_deployment("web", NS, {
    "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.28"}]}}}})
assert [c.image for c in d.spec.template.spec.containers] == ["nginx:1.28"]
assert d.metadata.generation == 2
d = apps.patch_namespaced_deployment(
    "web", NS, {"metadata": {"labels": {"tier": "front"}}},
    _content_type="application/merge-patch+json")
assert d.metadata.labels == {"tier": "front"}, d.metadata.labels
# A list body is sent as a JSON patch.
d = apps.patch_namespaced_deployment("web", NS, [
    {"op": "test", "path": "/spec/replicas", "value": 1},
    {"op": "replace", "path": "/spec/replicas", "value": 3}])
assert d.spec.replicas == 3
d = apps.patch_namespaced_deployment(
    "api", NS, {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "api"}},
                 "template": {"metadata": {"labels": {"app": "api"}},
                              "spec": {"containers": [{"name": "api", "image": "api:1"}]}}}},
    field_manager="python-test", _content_type="application/apply-patch+yaml")
assert d.spec.revision_history_limit == 10
entries = [m for m in d.metadata.managed_fields if m.manager == "python-test"]
assert [m.operation for m in entries] == ["Apply"], d.metadata.managed_fields

# The watch from before the create replays every change of `web`.
w = watch.Watch()
seen = []
for event in w.stream(apps.list_namespaced_deployment, NS, resource_version=rv0,
                      field_selector="metadata.name=web", timeout_seconds=5):
    obj = event["object"]
    assert isinstance(obj, client.V1Deployment), type(obj)
    seen.append((event["type"], obj.metadata.generation))
    if len(seen) == 4:
        w.stop()
assert seen == [("ADDED", 1), ("MODIFIED", 2), ("MODIFIED", 2), ("MODIFIED", 3)], seen

# The ServiceAccount admission plugin (on, as in kube-apiserver) needs the namespace's
# `default` ServiceAccount; with no controller-manager, nothing else creates it.
core.create_namespaced_service_account(NS, {
    "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
p = core.create_namespaced_pod(NS, {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
assert p.status.phase == "Pending", p.status
assert p.status.qos_class == "BestEffort", p.status
assert p.spec.service_account_name == "default", p.spec
assert p.spec.restart_policy == "Always"
assert p.spec.dns_policy == "ClusterFirst"
assert p.spec.containers[0].image_pull_policy == "Always"
p = core.patch_namespaced_pod("p1", NS, {"metadata": {"labels": {"app": "x"}}})
assert p.metadata.labels == {"app": "x"}

s = core.create_namespaced_service(NS, {
    "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
    "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
ip = ipaddress.ip_address(s.spec.cluster_ip)
assert ip in ipaddress.ip_network("10.0.0.0/24"), ip
assert s.spec.cluster_ips == [s.spec.cluster_ip]
assert s.spec.type == "ClusterIP" and s.spec.session_affinity == "None"
assert s.spec.ports[0].protocol == "TCP" and s.spec.ports[0].target_port == 80
s = core.patch_namespaced_service(
    "web", NS, {"spec": {"ports": [{"port": 80, "name": "http"}]}})
assert [(x.name, x.port) for x in s.spec.ports] == [("http", 80)], s.spec.ports
assert s.spec.cluster_ip == str(ip), "the cluster IP is kept"

w = watch.Watch()
names = set()
for event in w.stream(core.list_namespaced_service, NS, timeout_seconds=5):
    assert event["type"] == "ADDED", event["type"]
    names.add(event["object"].metadata.name)
    if names >= {"web", "kubernetes"}:
        w.stop()
assert names == {"web", "kubernetes"}, names

print("ok")
