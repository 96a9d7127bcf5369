"""Kubernetes API server rules kfocp relies on, judged by the real API server.

The namespace_policies role refuses, before any change, exactly the LimitRange settings the API
server refuses: each row goes to the real API server as a server-side dry run of the LimitRange the
role would write, and to the role's own check."""
import json

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROWS = [
    {"default": {"cpu": "1", "memory": "2Gi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}},
    {"default": {"cpu": "100m"}, "defaultRequest": {"cpu": "1"}},
    {"min": {"cpu": "2"}, "max": {"cpu": "1"}},
    {"min": {"memory": "1Gi"}, "defaultRequest": {"memory": "512Mi"}},
    {"default": {"memory": "4Gi"}, "max": {"memory": "2Gi"}},
    {"maxLimitRequestRatio": {"cpu": "500m"}},
    {"maxLimitRequestRatio": {"cpu": "1"}},
    {"min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}},
    {"min": {"cpu": "1"}, "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "3"}},
    {"min": {"cpu": "0"}, "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "30"}},
    {"default": {"nvidia.com/gpu": "1"}, "defaultRequest": {"nvidia.com/gpu": "0"}},
    {"default": {"nvidia.com/gpu": "1"}, "defaultRequest": {"nvidia.com/gpu": "1"}},
    {"default": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "2Mi"}},
    {"default": {"example.kubernetes.io/thing": "2"}, "defaultRequest": {"example.kubernetes.io/thing": "1"}},
    {"default": {"ephemeral-storage": "2Gi"}, "defaultRequest": {"ephemeral-storage": "1Gi"}},
]


def api_server_refuses(control_plane, namespace, limits):
    obj = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": np.LIMITRANGE, "namespace": namespace},
           "spec": {"limits": [dict(limits, type="Container")]}}
    proc = control_plane.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-", input=json.dumps(obj),
                                 check=False)
    assert proc.returncode == 0 or "is invalid" in proc.stderr, proc.stderr
    return proc.returncode != 0


def role_refuses(limits):
    try:
        np.Settings({"namespace_policies_limitrange": limits}).check()
    except DefinitionError:
        return True
    return False


@pytest.mark.parametrize("limits", ROWS)
def test_the_role_refuses_what_the_api_server_refuses(control_plane, limits):
    assert role_refuses(limits) == api_server_refuses(control_plane, "default", limits)


def test_the_api_server_labels_every_namespace_with_its_name(control_plane, kube, instance):
    """The auth and serverless NetworkPolicies select namespaces by kubernetes.io/metadata.name
    (builders/auth.py, builders/serverless.NAME_LABEL), which the API server itself sets to the
    namespace's name (k8s.io/kubernetes pkg/registry/core/namespace/strategy.go)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import serverless

    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": instance}}
    control_plane.kubectl("create", "-f", "-", input=json.dumps(obj))
    try:
        labels = kube.get(kube.resource("v1", "Namespace"), instance)["metadata"]["labels"]
        assert labels[serverless.NAME_LABEL] == instance
    finally:
        control_plane.kubectl("delete", "namespace", instance, "--wait=false")
