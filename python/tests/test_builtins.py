"""Built-in kinds through the typed client: kube's defaults come back."""

from kubernetes import client

from pytest_crd_apiserver import CrdApiServer


def test_a_deployment_reads_back_with_kubes_defaults(crd_apiserver_clean: CrdApiServer) -> None:
    apps = client.AppsV1Api(crd_apiserver_clean.api_client)
    apps.create_namespaced_deployment(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
                },
            },
        },
    )
    d = apps.read_namespaced_deployment("web", "default")
    assert d.metadata.generation == 1
    assert d.spec.replicas == 1
    assert d.spec.revision_history_limit == 10
    assert d.spec.progress_deadline_seconds == 600
    assert d.spec.strategy.type == "RollingUpdate"
    assert d.spec.strategy.rolling_update.max_surge == "25%"
    assert d.spec.strategy.rolling_update.max_unavailable == "25%"
    pod = d.spec.template.spec
    assert pod.restart_policy == "Always"
    assert pod.dns_policy == "ClusterFirst"
    assert pod.scheduler_name == "default-scheduler"
    assert pod.termination_grace_period_seconds == 30
    container = pod.containers[0]
    assert container.image_pull_policy == "IfNotPresent"
    assert container.termination_message_path == "/dev/termination-log"
    assert container.termination_message_policy == "File"
