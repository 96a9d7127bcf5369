"""kfocp's constants and defaults held to facts read from upstream source. Each fact below is an
excerpt of the file named beside it (repository, path, commit), registered in docs/contracts.md;
where upstream logic decides, the test carries that logic as upstream writes it and runs it on
what kfocp produces."""
from pathlib import Path

import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security, scc
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]

# openshift/cluster-kube-apiserver-operator bindata/bootkube/scc-manifests/ at
# c813e820bb94cf2af88a6343c8554624c334c04c: the SCCs OpenShift ships (0000_20_kube-apiserver-operator_00_scc-<name>.yaml)
SHIPPED_SCCS = {"anyuid", "hostaccess", "hostmount-anyuid", "hostmount-anyuid-v2", "hostnetwork", "hostnetwork-v2",
                "nested-container", "nonroot", "nonroot-v2", "privileged", "restricted", "restricted-v2",
                "restricted-v3"}


def test_every_scc_kfocp_may_grant_is_one_openshift_ships():
    defaults = yaml.safe_load((ROOT / "roles" / "scc" / "defaults" / "main.yml").read_text())
    assert set(scc.KNOWN_SCCS) <= SHIPPED_SCCS
    assert set(defaults["scc_allowed"]) <= SHIPPED_SCCS


# openshift/cluster-policy-controller pkg/psalabelsyncer/podsecurity_label_sync_controller.go at
# 050c1ee6aeb0838daf75858fd853cca1e0098fa9: isNSControlled (the exempt payload namespaces are left out)
SYNC_LABEL = "security.openshift.io/scc.podSecurityLabelSync"
CONTROLLER = "pod-security-admission-label-synchronization-controller"
PSA_LABELS = ["pod-security.kubernetes.io/%s%s" % (mode, suffix) for mode in ("enforce", "warn", "audit")
              for suffix in ("", "-version")]


def _label_managers(namespace):
    owners = {}
    for entry in namespace["metadata"].get("managedFields") or []:
        for key in ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}:
            owners[key[2:]] = entry["manager"]
    return owners


def is_ns_controlled(namespace):
    name, labels = namespace["metadata"]["name"], namespace["metadata"].get("labels") or {}
    if labels.get(SYNC_LABEL) == "true":
        return True
    if name.startswith("openshift-"):
        return False
    managers = _label_managers(namespace)
    owning = False
    for label in PSA_LABELS:
        if label in labels:
            manager = managers.get(label, "")
            if manager and manager not in ("cluster-policy-controller", CONTROLLER):
                continue
        owning = True
    if not owning:
        return False
    return labels.get(SYNC_LABEL) != "false"


def _namespace(labels, manager):
    fields = {"f:metadata": {"f:labels": dict(("f:" + key, {}) for key in labels)}}
    return {"metadata": {"name": "team-a", "labels": dict(labels),
                         "managedFields": [{"manager": manager, "operation": "Apply", "fieldsV1": fields}]}}


def test_the_label_synchroniser_leaves_kfocps_pod_security_labels_alone():
    assert pod_security.SYNC_LABEL == SYNC_LABEL
    assert not is_ns_controlled(_namespace(pod_security.labels("baseline"), "kfocp-namespace_policies"))
    # the transcription decides both ways: a namespace with only a level of kfocp's would be synced
    assert is_ns_controlled(_namespace({PSA_LABELS[0]: "baseline"}, "kfocp"))


# aws/amazon-eks-pod-identity-webhook pkg/annotations.go at 90e92d1ac4bef681491c29c2b1b6141717f42135
# (RoleARNAnnotation = "role-arn") and main.go at 0048675f4335581bd22d59c81352667f9b138b43
# (--annotation-prefix default "eks.amazonaws.com"; --token-audience default "sts.amazonaws.com")
POD_IDENTITY_ROLE_ANNOTATION = "eks.amazonaws.com" + "/" + "role-arn"


def test_the_data_lake_annotation_is_the_pod_identity_webhooks():
    defaults = yaml.safe_load((ROOT / "roles" / "namespace_policies" / "defaults" / "main.yml").read_text())
    assert np.DEFAULTS["namespace_policies_data_lake_annotation"] == POD_IDENTITY_ROLE_ANNOTATION
    assert defaults["namespace_policies_data_lake_annotation"] == POD_IDENTITY_ROLE_ANNOTATION


# kubeflow/manifests at tag v1.10.2 (d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39): directories with a
# kustomization.yaml, and applications/profiles/upstream/base/namespace-labels.yaml
MANIFESTS_V1_10_2 = {
    "common/kubeflow-roles/base", "common/istio/kubeflow-istio-resources/base",
    "applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user",
    "applications/jupyter/notebook-controller/upstream/overlays/kubeflow",
    "applications/jupyter/jupyter-web-app/upstream/overlays/istio",
    "applications/katib/upstream/installs/katib-with-kubeflow", "applications/kserve/kserve",
    "applications/kserve/models-web-app/overlays/kubeflow",
    "applications/training-operator/upstream/overlays/kubeflow", "applications/centraldashboard/overlays/oauth2-proxy",
    "applications/volumes-web-app/upstream/overlays/istio",
    "applications/tensorboard/tensorboard-controller/upstream/overlays/kubeflow",
    "applications/tensorboard/tensorboards-web-app/upstream/overlays/istio",
    "applications/profiles/upstream/overlays/kubeflow", "applications/admission-webhook/upstream/overlays/cert-manager",
}
PROFILE_NAMESPACE_LABELS = {"katib.kubeflow.org/metrics-collector-injection": "enabled",
                            "serving.kubeflow.org/inferenceservice": "enabled",
                            "pipelines.kubeflow.org/enabled": "true",
                            "app.kubernetes.io/part-of": "kubeflow-profile"}


def test_the_catalog_paths_are_those_of_the_pinned_manifests_release():
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
    catalog = releases.catalog("v1.10.2")
    assert set(path for paths in catalog.values() for path in paths) <= MANIFESTS_V1_10_2


def test_the_profile_namespace_selector_matches_the_label_upstream_gives_profile_namespaces():
    selector = np.selector(np.DEFAULTS["namespace_policies_selector"])
    assert all(PROFILE_NAMESPACE_LABELS.get(key) == value for key, value in selector.items())
    assert m.PROFILE_LABELS_FILE == "namespace-labels.yaml"


# openshift/api security/v1/consts.go (module github.com/openshift/api v0.0.0-20260318185450-1f2fa3f09f4e)
UID_RANGE_ANNOTATION = "openshift.io/sa.scc.uid-range"


def test_a_bad_uid_range_points_at_the_namespace_annotation_openshift_writes():
    try:
        m.derive_scc([], uid_range={"start": "x", "size": 1})
    except DefinitionError as err:
        assert UID_RANGE_ANNOTATION in str(err)
    else:
        raise AssertionError("a bad range was accepted")


# kubeflow/manifests v1.10.2, rendered: profiles-config USERID_HEADER/USERID_PREFIX,
# centraldashboard-parameters CD_USERID_*, the web apps' *_USERID_*, ml-pipeline and ml-pipeline-ui
# KUBEFLOW_USERID_*: every component reads the user from this header, with no prefix
USERID_HEADER, USERID_PREFIX = "kubeflow-userid", ""


def test_the_user_header_is_the_one_every_kubeflow_component_reads():
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles

    defaults = yaml.safe_load((ROOT / "roles" / "profiles" / "defaults" / "main.yml").read_text())
    assert (profiles.DEFAULTS["profiles_userid_header"], profiles.DEFAULTS["profiles_userid_prefix"]) == \
        (USERID_HEADER, USERID_PREFIX)
    assert (defaults["profiles_userid_header"], defaults["profiles_userid_prefix"]) == (USERID_HEADER, USERID_PREFIX)


# k8s.io/kubernetes v1.36.4 plugin/pkg/admission/serviceaccount/admission.go: the service account
# volume is mounted at DefaultAPITokenMountPath and holds the pod's namespace in the file "namespace"
SERVICE_ACCOUNT_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def test_the_operator_reads_its_namespace_where_the_service_account_volume_puts_it():
    import sys

    sys.path.insert(0, str(ROOT / "operator"))
    from kfocp_operator import main

    assert str(main.SA_NAMESPACE) == SERVICE_ACCOUNT_MOUNT + "/namespace"
