# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role's defaults, in one place: the values of each role's defaults/main.yml, which keeps
them for Ansible with the comments for users. None marks a setting derived from the play's other
variables: for the tenancy roles by settings.DERIVED, for the others by the one template their
defaults/main.yml holds (DERIVED_IN_DEFAULTS). The builders take their defaults from here and the
operator's CRD is generated from the argument specs, which hold the same values.
tests/unit/test_role_settings.py fails when a role default, an argument spec default, or a
builder's or the fast path's own default differs from these, or when another copy appears.

The components role's catalog of each Kubeflow release is release data (module_utils/releases.py).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import serverless

# Names no profile takes, declared, automatic or self-service: system and platform namespaces
# (OpenShift's, the mesh's, Kubeflow's, the operators' and kfocp's own).
RESERVED = ["default", "kube-*", "openshift*", "kubeflow", "kubeflow-*", "istio-*", "knative-*", "kfocp-*",
            "cert-manager", "oauth2-proxy", "auth", "nvidia-gpu-operator"]
QUOTA = {"cpu": "8", "memory": "32Gi", "requests.nvidia.com/gpu": "1", "persistentvolumeclaims": "10",
         "requests.storage": "100Gi"}

# Each role's defaults (its defaults/main.yml); None: derived.
DEFAULTS = {
    "profiles": {
        "profiles_state": "present",
        "profiles_list": [],
        "profiles_quota_default": QUOTA,
        "profiles_auto_from_users": False,
        "profiles_auto_provider": "",
        "profiles_auto_exclude": ["kube:admin"],
        "profiles_reserved_names": RESERVED,
        "profiles_name_prefix": "",
        "profiles_group_owner_role": "edit",
        "profiles_userid_header": "kubeflow-userid",
        "profiles_userid_prefix": "",
        "profiles_authz_principals": None,
        "profiles_prune": False,
        "profiles_namespace_wait": 0,
    },
    "profile_self_service": {
        "profile_self_service_state": "present",
        "profile_self_service_group": "kubeflow-profile-creators",
        "profile_self_service_admin_groups": ["system:masters", "system:cluster-admins"],
        "profile_self_service_max_quota": QUOTA,
        "profile_self_service_name_prefix": "my-",
        "profile_self_service_params_namespace": "kfocp-self-service",
    },
    "scc": {
        "scc_state": "present",
        "scc_grants_default": [
            {"namespace": "kubeflow", "serviceaccount": "katib-mysql", "scc": "anyuid",
             "reason": "MySQL image runs as UID 999"},
            {"namespace": "kubeflow", "serviceaccount": "mysql", "scc": "anyuid", "reason": "MySQL image runs as UID 999"},
            {"namespace": "kubeflow", "serviceaccount": "minio-sa", "scc": "anyuid",
             "reason": "MinIO image runs as a fixed UID"},
            {"namespace": "kubeflow", "serviceaccount": "metadata-grpc-server", "scc": "anyuid",
             "reason": "ml-metadata server image runs as a fixed UID"}],
        "scc_grants_extra": [],
        "scc_grants": None,
        "scc_allowed": ["restricted-v2", "nonroot-v2", "nonroot", "anyuid", "hostnetwork-v2", "privileged"],
        "scc_create_namespaces": True,
        "scc_render_dir": "",
    },
    "namespace_policies": {
        "namespace_policies_state": "present",
        "namespace_policies_selector": {"app.kubernetes.io/part-of": "kubeflow-profile"},
        "namespace_policies_prune_max_share": 0.5,
        "namespace_policies_mesh_mode": "mesh",
        "namespace_policies_mesh_name": "data-science-smcp",
        "namespace_policies_mesh_namespace": "istio-system",
        "namespace_policies_pod_security": "baseline",
        "namespace_policies_tolerations_mode": "annotation",
        "namespace_policies_gpu_tolerations": [{"key": "workload", "operator": "Equal", "value": "ai-ml",
                                                "effect": "NoSchedule"}],
        "namespace_policies_whitelist_others": True,
        "namespace_policies_others_whitelist": [{"key": "node.kubernetes.io/" + k, "operator": "Exists"} for k in (
            "not-ready", "unreachable", "memory-pressure", "disk-pressure", "pid-pressure", "network-unavailable",
            "unschedulable")],
        "namespace_policies_whitelist_namespaces": ["*"],
        "namespace_policies_whitelist_exclude": ["default", "openshift", "openshift-*", "kube-*"],
        "namespace_policies_gpu_operator_namespace": "nvidia-gpu-operator",
        "namespace_policies_limitrange": {"default": {"cpu": "1", "memory": "2Gi"},
                                          "defaultRequest": {"cpu": "100m", "memory": "256Mi"}},
        "namespace_policies_scc": "",
        "namespace_policies_scc_serviceaccounts": ["default-editor"],
        "namespace_policies_serverless": False,
        "namespace_policies_serverless_principals": serverless.data_path_principals(),
        "namespace_policies_serverless_workloads": [
            {"name": "kserve-predictor", "match_labels": {"component": "predictor"}},
            {"name": "kserve-transformer", "match_labels": {"component": "transformer"}},
            {"name": "kserve-explainer", "match_labels": {"component": "explainer"}}],
        "namespace_policies_data_lake": False,
        "namespace_policies_data_lake_serviceaccount": "default-editor",
        "namespace_policies_data_lake_annotation": "eks.amazonaws.com/role-arn",
        "namespace_policies_data_lake_role_template": "",
        "namespace_policies_data_lake_roles": {},
    },
    "auth": {
        "auth_state": "present",
        "auth_host": "",
        "auth_gateway": None,
        "auth_namespace": "",
        "auth_name": "kubeflow-oauth-proxy",
        "auth_client_id": "kubeflow",
        "auth_secret_name": "kubeflow-oauth",
        "auth_image": "quay.io/openshift/origin-oauth-proxy:4.16",
        "auth_sar": {"namespace": "", "group": "kfocp.io", "resource": "kubeflow", "name": "users", "verb": "access"},
        "auth_users_groups": ["system:authenticated:oauth"],
        "auth_gateway_policy": True,
        "auth_replicas": 1,
        "auth_extra_args": [],
    },
    "service_mesh": {
        "service_mesh_state": "present",
        "service_mesh_flavour": "ossm2",
        "service_mesh_namespace": "kubeflow-mesh",
        "service_mesh_member_label": {"kfocp.io/mesh": "kubeflow"},
        "service_mesh_olm": True,
        # only the keys given change: the rest are the mesh builder's (builders/mesh.py NESTED)
        "service_mesh_gateway": {},
        "service_mesh_ossm2": {},
        "service_mesh_ossm3": {},
        "service_mesh_external": {},
        "service_mesh_keep_ossm2": False,
        "service_mesh_wait": True,
        "service_mesh_csv_timeout": 600,
        "service_mesh_ready_timeout": 600,
        "service_mesh_wait_delay": 5,
    },
    "gpu": {
        "gpu_state": "present",
        "gpu_operators": [{"namespace": "openshift-nfd", "package": "nfd", "source": "redhat-operators"},
                          {"namespace": "nvidia-gpu-operator", "package": "gpu-operator-certified",
                           "source": "certified-operators"}],
        "gpu_csv_timeout": 600,
        "gpu_csv_poll_interval": 10,
        "gpu_nfd_enabled": True,
        "gpu_nfd_name": "nfd-instance",
        "gpu_nfd_namespace": "openshift-nfd",
        "gpu_nfd_spec": {"operand": {"servicePort": 12000},
                         "workerConfig": {"configData": "sources:\n  pci:\n    deviceClassWhitelist: [\"0200\", \"03\", \"12\"]\n"
                                                        "    deviceLabelFields: [\"vendor\"]\n"}},
        "gpu_cluster_policy_enabled": True,
        "gpu_cluster_policy_name": "gpu-cluster-policy",
        "gpu_cluster_policy_spec": {
            "operator": {"defaultRuntime": "crio", "use_ocp_driver_toolkit": True},
            "daemonsets": {"updateStrategy": "RollingUpdate"},
            "driver": {"enabled": True}, "toolkit": {"enabled": True}, "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": True}, "dcgmExporter": {"enabled": True}, "gfd": {"enabled": True},
            "nodeStatusExporter": {"enabled": True}, "mig": {"strategy": "single"}},
        "gpu_machinesets": [],
        "gpu_cloud": "",
        "gpu_instance_type_fields": {"aws": "instanceType", "azure": "vmSize", "gcp": "machineType"},
    },
    "autoscaler": {
        "autoscaler_state": "present",
        "autoscaler_cluster": {
            "max_nodes_total": 24, "cores": {"min": 8, "max": 512}, "memory_gib": {"min": 32, "max": 4096},
            "scale_down": {"enabled": True, "delay_after_add": "10m", "delay_after_delete": "5m",
                           "delay_after_failure": "30s", "unneeded_time": "10m", "utilization_threshold": "0.4"},
            "pod_priority_threshold": -10, "balance_similar_node_groups": True,
            "ignore_daemonsets_utilization": True, "skip_nodes_with_local_storage": False},
        "autoscaler_gpu_max": 16,
        "autoscaler_min_replicas": 0,
        "autoscaler_max_replicas": 2,
        "autoscaler_machinesets": None,
        "autoscaler_priority_classes": [
            {"name": "ai-ml-serving", "value": 100000,
             "description": "Online model serving (KServe, Knative); preempts training and batch work."},
            {"name": "ai-ml-interactive", "value": 50000, "description": "Notebooks and interactive work."},
            {"name": "ai-ml-training", "value": 10000, "description": "Training jobs and pipelines."},
            {"name": "ai-ml-batch", "value": 1000, "preemption_policy": "Never",
             "description": "Batch and best-effort jobs; waits for capacity instead of preempting."}],
        "autoscaler_watermark": {"enabled": False, "namespace": "proactive-node-scaling-operator", "name": "ai-ml",
                                 "percentage": 20, "node_selector": {"workload": "ai-ml"},
                                 "priority_class": "ai-ml-headroom", "priority_value": -5},
    },
    "serverless": {
        "serverless_state": "present",
        "serverless_operators": [{"namespace": "openshift-serverless", "package": "serverless-operator",
                                  "source": "redhat-operators", "target_namespaces": []}],
        "serverless_csv_timeout": 600,
        "serverless_csv_poll_interval": 10,
        "serverless_serving_namespace": serverless.SERVING_NAMESPACE,
        "serverless_ingress_namespace": serverless.SERVING_NAMESPACE + "-ingress",
        "serverless_knative_serving_name": "knative-serving",
        "serverless_knative_serving_spec": {"high-availability": {"replicas": 2}},
        "serverless_mesh": {"enabled": True, "namespace": "kubeflow-mesh", "control_plane": "kubeflow", "members": True,
                            "member_namespaces": [],
                            "allow_from": [{"policy-group.network.openshift.io/ingress": ""},
                                           {"network.openshift.io/policy-group": "monitoring"},
                                           {"policy-group.network.openshift.io/host-network": ""}]},
    },
    "components": {
        "components_state": "present",
        "components_source": "git",
        "components_git_url": "https://github.com/kubeflow/manifests.git",
        "components_git_ref": "26.03",
        "components_release": "",
        "components_dir": "",
        "components_tarball": "",
        "components_subdir": "",
        "components_kubectl": "",
        "components_timeout": 600,
        "components_remote_bases": {},
        "components_components": {},
        "components_catalog": {},
        "components_namespace": "kubeflow",
        "components_dashboard_logout_url": "/oauth/sign_out",
        "components_profile_principals": None,
        "components_kserve_ingress_domain": None,
        "components_take_over": [],
        "components_api_versions": {"networking.istio.io/VirtualService": "v1beta1",
                                    "networking.istio.io/Gateway": "v1beta1",
                                    "networking.istio.io/DestinationRule": "v1beta1",
                                    "security.istio.io/AuthorizationPolicy": "v1"},
        "components_render_dir": "",
        "components_mirror_enabled": False,
        "components_image_prefixes": {},
        "components_image_digests": {},
        "components_mirror_file": "",
        "components_sidecar_enabled": True,
        "components_mesh_member": True,
        "components_sidecar_namespaces": [],
        "components_sidecar_revision": "",
        "components_sidecar_authservice": [],
        "components_sidecar_exclude": [],
        "components_vs_enabled": False,
        "components_vs_gateway": "",
        "components_vs_hosts": [],
        "components_vs_export_to": [],
        "components_metadata_envoy_enabled": True,
        "components_metadata_envoy_base_id": 1,
        "components_metadata_envoy_config": "/etc/envoy.yaml",
        "components_argo_external": False,
        "components_argo_s3": {},
        "components_scc_enabled": True,
        "components_scc_uid_range": {},
        "components_scc_selinux_level": "",
        "components_pod_security": "auto",
        "components_profile_pod_security": "",
        "components_no_log": True,
    },
    "data_lake": {
        "data_lake_enabled": False,
        "data_lake_state": "present",
        "data_lake_provider": "aws",
        "data_lake_selector": {"app.kubernetes.io/part-of": "kubeflow-profile"},
        "data_lake_accounts": ["default-editor", "default"],
        "data_lake_injection": "auto",
        "data_lake_audience": "",
        "data_lake_token_expiration": 3600,
        "data_lake_aws_role_template": "",
        "data_lake_aws_roles": {},
        "data_lake_aws_region": "",
        "data_lake_aws_create_roles": False,
        "data_lake_aws_access_key": "",
        "data_lake_aws_secret_key": "",
        "data_lake_aws_session_token": "",
        "data_lake_aws_endpoint_url": "",
        "data_lake_azure_tenant_id": "",
        "data_lake_azure_client_ids": {},
        "data_lake_azure_authority_host": "https://login.microsoftonline.com/",
        "data_lake_gcp_provider": "",
        "data_lake_gcp_service_account_template": "",
        "data_lake_poddefault_name": "data-lake",
        "data_lake_poddefault_label": "data-lake",
        "data_lake_documents_dir": "kfocp-data-lake",
    },
}

# The settings of the roles outside the fast path that their defaults/main.yml derives, each with
# the one template that does it (the other roles' variables it reads).
DERIVED_IN_DEFAULTS = {
    "auth_gateway": "{{ service_mesh_gateway_info | default({}) }}",
    "autoscaler_machinesets": "{{ gpu_machinesets | default([]) | kfocp.kubeflow.autoscaler_targets("
                              "autoscaler_min_replicas, autoscaler_max_replicas) }}",
}


def unprefixed(role, keys=None):
    """A copy of `role`'s defaults without the role's prefix, as its builder names them: all of
    them, or those of `keys` (names without the prefix)."""
    prefix = role + "_"
    out = dict((name[len(prefix):], copy.deepcopy(value)) for name, value in DEFAULTS[role].items())
    return out if keys is None else dict((key, out[key]) for key in keys)
