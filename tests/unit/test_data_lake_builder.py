"""The data lake builder (plugins/module_utils/builders/data_lake.py), held to upstream: OpenShift's
API types (the CRDs of openshift/api at the module version of hack/openshift/go.mod), the pod
identity webhooks the cloud-credential-operator installs, the names the webhooks and the cloud
SDKs read, Kubeflow's render (../shared/upstream/), and the clouds' trust rules
(test_data_lake_trust.py)."""
import functools
import gzip
import json
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import data_lake as d
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from cluster import openshift_crds
from test_data_lake_trust import aws_trust_admits, azure_credential_admits

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT.parent / "shared" / "upstream"
PROFILE = {"app.kubernetes.io/part-of": "kubeflow-profile"}
AWS = {"data_lake_aws_role_template": "arn:aws:iam::123456789012:role/kf-{namespace}"}
AZURE = {"data_lake_provider": "azure", "data_lake_azure_tenant_id": "72f988bf-86f1-41af-91ab-2d7cd011db47",
         "data_lake_azure_client_ids": {"a": "11111111-2222-3333-4444-555555555555"}}
GCP = {"data_lake_provider": "gcp",
       "data_lake_gcp_provider": "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/ocp/providers/c1"}
ISSUER = "https://oidc.example.com/c1"
AUTH = {"apiVersion": "config.openshift.io/v1", "kind": "Authentication", "metadata": {"name": "cluster"},
        "spec": {"serviceAccountIssuer": ISSUER}}
STS = {"apiVersion": "operator.openshift.io/v1", "kind": "CloudCredential", "metadata": {"name": "cluster"},
       "spec": {"credentialsMode": "Manual"}}

# openshift/cloud-credential-operator at b187feee66f4ce0f992059b21a97a2ae88e4cdd9,
# bindata/v4.1.0/{aws,azure,gcp}-pod-identity-webhook/mutatingwebhook.yaml (the names and selectors;
# pkg/operator/podidentity/podidentitywebhook_controller.go installs the one of the cluster's
# platform: AWS and GCP always, Azure when the secret azure-credentials holds azure_tenant_id)
CCO_WEBHOOKS = {
    "aws": """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: pod-identity-webhook
webhooks:
  - name: pod-identity-webhook.aws.mutate.io
""",
    "azure": """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: pod-identity-webhook
webhooks:
  - name: pod-identity-webhook.azure.mutate.io
    objectSelector:
      matchLabels:
        azure.workload.identity/use: "true"
""",
    "gcp": """
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: pod-identity-webhook
webhooks:
  - name: pod-identity-webhook.gcp.mutate.io
"""}
# aws/amazon-eks-pod-identity-webhook at 3bf80a348116483b2162190e43232e4d243f76c4: pkg/handler/handler.go
# (the environment a web identity pod gets) and pkg/annotations.go (RoleARNAnnotation "role-arn",
# AudienceAnnotation "audience") under OpenShift's --annotation-prefix=eks.amazonaws.com
# (cloud-credential-operator bindata/v4.1.0/aws-pod-identity-webhook/deployment.yaml, which also
# gives --token-audience=sts.amazonaws.com)
AWS_WEBHOOK_ENV = {"AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"}
AWS_PREFIX, AWS_ROLE, AWS_AUDIENCE, AWS_TOKEN_AUDIENCE = "eks.amazonaws.com", "role-arn", "audience", "sts.amazonaws.com"
# Azure/azure-workload-identity at 04d01a2fc7f5024290a38f6ccaf69561cf70455d pkg/webhook/consts.go
AZURE_ENV = {"AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST"}
AZURE_CLIENT_ID_ANNOTATION, AZURE_USE_LABEL = "azure.workload.identity/client-id", "azure.workload.identity/use"
AZURE_DEFAULT_AUDIENCE = "api://AzureADTokenExchange"
# googleapis/google-auth-library-python at 2ea24b03436765fa3cf279ce148482ff6332136b:
# google/auth/identity_pool.py (Credentials: subject_token_type, token_url default
# "https://sts.googleapis.com/v1/token", credential_source {"file": ...}), google/auth/_default.py
# (the file named by GOOGLE_APPLICATION_CREDENTIALS, of type "external_account")
GOOGLE_EXTERNAL_ACCOUNT = "external_account"
GOOGLE_STS = "https://sts.googleapis.com/v1/token"
GOOGLE_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
# kubeflow/kubeflow at v1.10.0 (90e987bf87d3e7c900926310b00bfa16b59e41eb), the poddefaults-webhook
# image of every supported render: components/crud-web-apps/jupyter/backend/apps/common/routes/get.py
# (the form's option is the first key of spec.selector.matchLabels, described by spec.desc) and
# apps/common/form.py set_notebook_configurations (the notebook gets <that key>: "true")


@functools.lru_cache(maxsize=None)
def _crd(name_part):
    path = next(p for p in openshift_crds() if name_part in p.name)
    return yaml.safe_load(path.read_text())


def _schema(crd):
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def mode(values, auth=None, cco=None, webhook=None, served=True, **given):
    """The builder's mode on a cluster with the STS fields (AUTH, STS) unless others are given;
    `auth=None` given by name is a cluster without the Authentication `cluster`."""
    auth = AUTH if auth is None and "no_auth" not in given else auth
    return d.cluster_mode(values, auth, STS if cco is None else cco, webhook, served)


def namespaces(*names, labels=None):
    return [{"metadata": {"name": n, "labels": dict(PROFILE if labels is None else labels)}} for n in names]


def accounts(*pairs):
    return [{"metadata": {"namespace": ns, "name": name}} for ns, name in pairs]


# ---------------------------------------------------------------- the cluster's mode

def test_the_default_issuer_is_the_one_openshifts_api_names():
    description = _schema(_crd("authentications-Default"))["properties"]["spec"]["properties"][
        "serviceAccountIssuer"]["description"]
    assert "The default is %s" % d.DEFAULT_ISSUER in description


def test_the_fields_kfocp_reads_are_in_openshifts_api():
    spec = _schema(_crd("cloudcredentials"))["properties"]["spec"]["properties"]
    assert "Manual" in spec["credentialsMode"]["enum"]
    crd = _crd("cloudcredentials")
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["scope"]) == \
        ("operator.openshift.io", "CloudCredential", "Cluster")
    crd = _crd("authentications-Default")
    assert (crd["spec"]["group"], crd["spec"]["names"]["kind"], crd["spec"]["scope"]) == \
        ("config.openshift.io", "Authentication", "Cluster")


@pytest.mark.parametrize("auth, problem", [
    (None, r"there is no Authentication named cluster"),
    ({"spec": {}}, r"is empty, so the cluster signs its tokens as https://kubernetes.default.svc"),
    ({"spec": {"serviceAccountIssuer": ""}}, r"is empty"),
    ({"spec": {"serviceAccountIssuer": "https://kubernetes.default.svc"}}, r"an address inside the cluster"),
    ({"spec": {"serviceAccountIssuer": "https://api.internal.svc/x"}}, r"an address inside the cluster"),
    ({"spec": {"serviceAccountIssuer": "http://oidc.example.com"}}, r"is not an https URL"),
])
def test_a_cluster_without_an_issuer_the_cloud_can_trust_is_refused_naming_the_field_and_the_fix(auth, problem):
    with pytest.raises(DefinitionError) as err:
        mode(AWS, auth=auth, **({"no_auth": True} if auth is None else {}))
    assert str(err.value).startswith("Authentication cluster spec.serviceAccountIssuer: ")
    assert re.search(problem, str(err.value))
    fix = str(err.value).split(". ", 1)[1]
    assert ("config.openshift.io/v1 Authentication cluster" in fix if auth is None else
            "set Authentication cluster spec.serviceAccountIssuer to its https URL" in fix and "ccoctl" in fix)


@pytest.mark.parametrize("provider, values", [("aws", AWS), ("azure", AZURE)])
def test_the_webhook_is_known_by_the_name_the_cloud_credential_operator_gives_it(provider, values):
    for cloud, text in CCO_WEBHOOKS.items():
        found = mode(values, webhook=yaml.safe_load(text))
        assert found["webhook"] is (cloud == provider)
        assert found["injection"] == ("webhook" if cloud == provider else "poddefault")
    assert mode(values)["webhook"] is False


def test_the_webhook_asked_for_where_there_is_none_is_refused():
    with pytest.raises(DefinitionError, match=r"^data_lake_injection: webhook, but the cluster has no "
                                              r"pod-identity-webhook.aws.mutate.io webhook .* Use auto or poddefault"):
        mode(dict(AWS, data_lake_injection="webhook"), webhook=yaml.safe_load(CCO_WEBHOOKS["gcp"]))


def test_a_poddefault_where_kubeflow_serves_none_is_refused():
    with pytest.raises(DefinitionError, match=r"^data_lake_injection: poddefault needs Kubeflow's PodDefault"):
        mode(AWS, served=False)
    # the AWS webhook alone needs no PodDefault; Azure's needs it for the pod label
    assert mode(AWS, webhook=yaml.safe_load(CCO_WEBHOOKS["aws"]), served=False)["injection"] == "webhook"
    with pytest.raises(DefinitionError, match=r"Azure Workload Identity needs Kubeflow's PodDefault"):
        mode(AZURE, webhook=yaml.safe_load(CCO_WEBHOOKS["azure"]), served=False)


def test_google_cloud_always_mounts_its_credential_configuration():
    assert mode(GCP, webhook=yaml.safe_load(CCO_WEBHOOKS["gcp"]))["injection"] == "poddefault"
    with pytest.raises(DefinitionError, match=r"^data_lake_injection: webhook does not work with data_lake_provider gcp"):
        mode(dict(GCP, data_lake_injection="webhook"))


def test_the_mode_is_said():
    said = "\n".join(mode(AWS)["messages"])
    assert "issuer %s (Authentication cluster spec.serviceAccountIssuer)" % ISSUER in said
    assert "credentialsMode Manual (CloudCredential cluster spec.credentialsMode): OpenShift's STS" in said
    assert "pod-identity-webhook.aws.mutate.io: not installed" in said and "a PodDefault data-lake" in said


# ---------------------------------------------------------------- the names the webhooks and SDKs read

def test_the_aws_annotations_and_audience_are_the_pod_identity_webhooks():
    assert d.AWS_ROLE_ANNOTATION == AWS_PREFIX + "/" + AWS_ROLE
    assert d.AWS_AUDIENCE_ANNOTATION == AWS_PREFIX + "/" + AWS_AUDIENCE
    assert d.AUDIENCES["aws"] == AWS_TOKEN_AUDIENCE


def test_the_azure_names_are_azure_workload_identitys():
    assert (d.AZURE_CLIENT_ID_ANNOTATION, d.AZURE_USE_LABEL) == (AZURE_CLIENT_ID_ANNOTATION, AZURE_USE_LABEL)
    assert d.AUDIENCES["azure"] == AZURE_DEFAULT_AUDIENCE


def _plan(values, found, names=("a", "b"), live=()):
    return d.plan(values, found, namespaces(*names), accounts(*live))


def _by_kind(objects, kind, namespace):
    return [o for o in objects if o["kind"] == kind and o["metadata"]["namespace"] == namespace]


def _token_file(poddefault):
    """Where the kubelet puts the projected token: the mount path and the source's path."""
    spec = poddefault["spec"]
    volume = next(v for v in spec["volumes"] if "projected" in v)
    mount = next(m for m in spec["volumeMounts"] if m["name"] == volume["name"])
    return mount["mountPath"] + "/" + volume["projected"]["sources"][0]["serviceAccountToken"]["path"]


@pytest.mark.parametrize("values, names", [(AWS, AWS_WEBHOOK_ENV), (AZURE, AZURE_ENV), (GCP, {GOOGLE_ENV})])
def test_without_a_webhook_the_poddefault_projects_the_token_and_sets_the_sdks_environment(values, names):
    found = mode(values)
    pd = _by_kind(_plan(values, found, names=("a",))["objects"], "PodDefault", "a")[0]
    env = dict((e["name"], e["value"]) for e in pd["spec"]["env"])
    assert set(env) == names
    source = pd["spec"]["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]
    assert source["audience"] == found["audience"] and source["expirationSeconds"] == 3600
    token = _token_file(pd)
    if "AWS_WEB_IDENTITY_TOKEN_FILE" in env:
        assert env["AWS_WEB_IDENTITY_TOKEN_FILE"] == token and env["AWS_ROLE_ARN"] == "arn:aws:iam::123456789012:role/kf-a"
    if "AZURE_FEDERATED_TOKEN_FILE" in env:
        assert env["AZURE_FEDERATED_TOKEN_FILE"] == token and env["AZURE_CLIENT_ID"] == AZURE["data_lake_azure_client_ids"]["a"]
    # the notebook form offers it: one label key, described
    assert list(pd["spec"]["selector"]["matchLabels"].items()) == [("data-lake", "true")] and pd["spec"]["desc"]


def test_google_cloud_reads_an_external_account_configuration_of_the_projected_token():
    found = mode(dict(GCP, data_lake_gcp_service_account_template="kf-{namespace}@p.iam.gserviceaccount.com"))
    objects = _plan(dict(GCP, data_lake_gcp_service_account_template="kf-{namespace}@p.iam.gserviceaccount.com"),
                    found, names=("a",))["objects"]
    pd = _by_kind(objects, "PodDefault", "a")[0]
    configmap = _by_kind(objects, "ConfigMap", "a")[0]
    path = dict((e["name"], e["value"]) for e in pd["spec"]["env"])[GOOGLE_ENV]
    mount = next(m for m in pd["spec"]["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
    volume = next(v for v in pd["spec"]["volumes"] if v["name"] == mount["name"])
    assert volume["configMap"]["name"] == configmap["metadata"]["name"]
    config = json.loads(configmap["data"][path[len(mount["mountPath"]) + 1:]])
    assert config["type"] == GOOGLE_EXTERNAL_ACCOUNT and config["token_url"] == GOOGLE_STS
    assert config["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt"
    assert config["credential_source"]["file"] == _token_file(pd)
    assert config["audience"] == GCP["data_lake_gcp_provider"]
    assert config["service_account_impersonation_url"].endswith("/serviceAccounts/kf-a@p.iam.gserviceaccount.com:generateAccessToken")


def test_with_the_aws_webhook_the_accounts_are_annotated_and_no_poddefault_is_made():
    found = mode(AWS, webhook=yaml.safe_load(CCO_WEBHOOKS["aws"]))
    result = _plan(AWS, found, live=[("a", "default-editor"), ("a", "default"), ("b", "default-editor")])
    annotated = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in result["objects"])
    assert annotated == [("a", "default"), ("a", "default-editor"), ("b", "default-editor")]
    assert all(o["kind"] == "ServiceAccount" and o["metadata"]["annotations"][AWS_PREFIX + "/" + AWS_ROLE]
               == "arn:aws:iam::123456789012:role/kf-%s" % o["metadata"]["namespace"] for o in result["objects"])
    assert all(AWS_PREFIX + "/" + AWS_AUDIENCE not in o["metadata"]["annotations"] for o in result["objects"])
    assert result["skipped"] == ["b: no service account default yet (annotated on the next run)"]
    # another audience is told to the webhook
    other = mode(dict(AWS, data_lake_audience="lake"), webhook=yaml.safe_load(CCO_WEBHOOKS["aws"]))
    objects = _plan(dict(AWS, data_lake_audience="lake"), other, names=("a",), live=[("a", "default")])["objects"]
    assert objects[0]["metadata"]["annotations"][AWS_PREFIX + "/" + AWS_AUDIENCE] == "lake"


def test_with_the_azure_webhook_the_accounts_are_annotated_and_the_poddefault_adds_the_pod_label():
    found = mode(AZURE, webhook=yaml.safe_load(CCO_WEBHOOKS["azure"]))
    objects = _plan(AZURE, found, names=("a",), live=[("a", "default-editor")])["objects"]
    account = _by_kind(objects, "ServiceAccount", "a")[0]
    assert account["metadata"]["annotations"][AZURE_CLIENT_ID_ANNOTATION] == AZURE["data_lake_azure_client_ids"]["a"]
    pd = _by_kind(objects, "PodDefault", "a")[0]
    selector = yaml.safe_load(CCO_WEBHOOKS["azure"])["webhooks"][0]["objectSelector"]["matchLabels"]
    assert pd["spec"]["labels"] == selector and "env" not in pd["spec"]


# ---------------------------------------------------------------- the trust documents

def _claims(namespace, account, found):
    return {"iss": found["issuer"], "sub": "system:serviceaccount:%s:%s" % (namespace, account), "aud": [found["audience"]]}


def test_each_profiles_aws_role_trusts_its_own_accounts_only():
    found = mode(AWS)
    docs = dict((doc["path"], doc["content"]) for doc in _plan(AWS, found)["documents"])
    assert sorted(docs) == ["aws/a.json", "aws/b.json"]
    for account in ("default-editor", "default"):
        assert aws_trust_admits(docs["aws/a.json"], _claims("a", account, found), "123456789012")
        assert not aws_trust_admits(docs["aws/b.json"], _claims("a", account, found), "123456789012")
    assert not aws_trust_admits(docs["aws/a.json"], _claims("a", "default-viewer", found), "123456789012")
    assert not aws_trust_admits(docs["aws/a.json"], dict(_claims("a", "default", found), aud=["other"]), "123456789012")


def test_each_profiles_azure_credentials_trust_its_own_accounts_only():
    ids = {"a": AZURE["data_lake_azure_client_ids"]["a"], "b": "66666666-2222-3333-4444-555555555555"}
    values = dict(AZURE, data_lake_azure_client_ids=ids)
    found = mode(values)
    docs = dict((doc["path"], doc["content"]) for doc in _plan(values, found)["documents"])
    a, b = docs["azure/a.json"]["federated_identity_credentials"], docs["azure/b.json"]["federated_identity_credentials"]
    assert any(azure_credential_admits(c, _claims("a", "default-editor", found)) for c in a)
    assert not any(azure_credential_admits(c, _claims("a", "default-editor", found)) for c in b)


def test_a_profile_without_an_identity_is_left_out_and_said():
    found = mode(AZURE)
    result = _plan(AZURE, found)
    assert [doc["path"] for doc in result["documents"]] == ["azure/a.json"]
    assert result["skipped"] == ["b: no client id for it (data_lake_azure_client_ids)"]
    assert not [o for o in result["objects"] if o["metadata"]["namespace"] == "b"]


def test_only_profile_namespaces_are_served():
    found = mode(AWS)
    result = d.plan(AWS, found, namespaces("a") + namespaces("web", labels={}), [])
    assert [doc["path"] for doc in result["documents"]] == ["aws/a.json"]


def test_a_namespaces_own_role_wins_over_the_template():
    values = dict(AWS, data_lake_aws_roles={"b": "arn:aws:iam::123456789012:role/special"})
    assert d.identity(d.check(values), "b") == "arn:aws:iam::123456789012:role/special"
    assert d.identity(d.check(values), "a") == "arn:aws:iam::123456789012:role/kf-a"


# ---------------------------------------------------------------- inputs

@pytest.mark.parametrize("values, message", [
    ({}, r"^data_lake_aws_role_template: is empty"),
    ({"data_lake_aws_role_template": "arn:{profile}"}, r"unknown placeholder \{profile\}"),
    ({"data_lake_aws_role_template": "role-{namespace}"}, r"is not an IAM role ARN"),
    (dict(AWS, data_lake_aws_roles={"b": "nope"}), r"^data_lake_aws_roles.b: 'nope' is not an IAM role ARN"),
    (dict(AWS, data_lake_provider="oci"), r"^data_lake_provider: 'oci' is not a provider"),
    (dict(AWS, data_lake_accounts=[]), r"^data_lake_accounts: must be a non-empty list"),
    (dict(AWS, data_lake_accounts=["Bad_Name"]), r"^data_lake_accounts\[0\]: 'Bad_Name' is not a DNS subdomain"),
    (dict(AWS, data_lake_token_expiration=60), r"^data_lake_token_expiration: 60 is out of range"),
    (dict(AZURE, data_lake_azure_tenant_id="x"), r"^data_lake_azure_tenant_id: 'x' is not a tenant id"),
    (dict(AZURE, data_lake_azure_client_ids={}), r"^data_lake_azure_client_ids: must be a non-empty mapping"),
    (dict(GCP, data_lake_gcp_provider="projects/1"), r"^data_lake_gcp_provider: 'projects/1' is not a workload"),
    (dict(AWS, data_lake_poddefault_label="not a key!"), r"^data_lake_poddefault_label: 'not a key!'"),
])
def test_wrong_inputs_are_refused_naming_the_field(values, message):
    with pytest.raises(DefinitionError, match=message):
        d.check(values)


@pytest.mark.skipif(not UPSTREAM.exists(), reason="needs ../shared/upstream (the Kubeflow renders)")
@pytest.mark.parametrize("tag", ["v1.10.2", "v1.11.0", "26.03"])
def test_the_default_accounts_run_notebooks_pipelines_and_inference_in_every_render(tag):
    with gzip.open(UPSTREAM / ("example-render-%s.yaml.gz" % tag), "rt") as render:
        docs = [x for x in yaml.load_all(render, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if x]
    # multi-user Kubeflow Pipelines runs each profile's pipelines as this account
    runner = {x["data"].get("DEFAULTPIPELINERUNNERSERVICEACCOUNT") for x in docs
              if x["kind"] == "ConfigMap" and "DEFAULTPIPELINERUNNERSERVICEACCOUNT" in (x.get("data") or {})}
    assert runner == {"default-editor"} and "default-editor" in d.DEFAULTS["data_lake_accounts"]
    # an InferenceService's predictor names its account or runs as the namespace's default
    isvc = next(x for x in docs if x["kind"] == "CustomResourceDefinition"
                and x["metadata"]["name"] == "inferenceservices.serving.kserve.io")
    version = next(v for v in isvc["spec"]["versions"] if v["name"] == "v1beta1")
    predictor = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["predictor"]
    assert "serviceAccountName" in predictor["properties"] and "default" in d.DEFAULTS["data_lake_accounts"]
    # the PodDefault's fields are in the render's CRD
    crd = next(x for x in docs if x["kind"] == "CustomResourceDefinition" and x["metadata"]["name"] == "poddefaults.kubeflow.org")
    fields = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for values in (AWS, GCP):
        for pd in [o for o in _plan(values, mode(values), names=("a",))["objects"] if o["kind"] == "PodDefault"]:
            assert set(pd["spec"]) <= set(fields)
    assert crd["spec"]["group"] == "kubeflow.org" and [v["name"] for v in crd["spec"]["versions"]] == ["v1alpha1"]


# ---------------------------------------------------------------- the IAM roles, with credentials

def test_a_role_arn_gives_the_name_and_path_as_aws_documents_them():
    # awsdocs/iam-user-guide doc_source/reference_identifiers.md @ 0f5432dc0cfd2205a03920743143e9d5d7718aeb:
    # "An IAM role: arn:aws:iam::123456789012:role/S3Access"; "Another user with a path reflecting an organization
    # chart: arn:aws:iam::123456789012:user/division_abc/subdivision_xyz/Bob" (the path /division_abc/subdivision_xyz/)
    doc = {"identity": "arn:aws:iam::123456789012:role/division_abc/subdivision_xyz/RDSAccess", "content": {"x": 1}}
    plain = {"identity": "arn:aws:iam::123456789012:role/S3Access", "content": {}}
    roles = d.aws_roles([doc, plain], "kf")
    assert [(r["name"], r["path"]) for r in roles] == [("RDSAccess", "/division_abc/subdivision_xyz/"), ("S3Access", "/")]
    assert roles[0]["document"] == {"x": 1}
    assert roles[0]["tags"] == {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "kf"}


def _live(name, tags=None):
    return {"role_name": name, "arn": "arn:aws:iam::123456789012:role/" + name, "tags": tags or {}}


def test_only_roles_tagged_for_this_instance_are_removed_and_a_foreign_wanted_role_is_refused():
    ours = {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "kf"}
    live = [_live("kf-a", ours), _live("kf-gone", ours), _live("kf-other"),
            _live("kf-else", dict(ours, **{"kfocp.io/instance": "other"}))]
    wanted = [{"name": "kf-a"}]
    assert d.aws_roles_to_remove(live, wanted, "kf") == ["kf-gone"]
    assert d.aws_roles_to_remove(live, [], "kf") == ["kf-a", "kf-gone"]
    with pytest.raises(DefinitionError, match=r"^data_lake_aws_role_template: the IAM roles kf-other exist and are "
                                              r"not kfocp's"):
        d.aws_roles_to_remove(live, [{"name": "kf-other"}], "kf")


def test_only_roles_the_settings_could_name_have_their_tags_read():
    live = [_live("kf-a"), _live("kf-b"), _live("admin"), _live("single")]
    assert d.aws_role_candidates(live, AWS, []) == ["kf-a", "kf-b"]
    assert d.aws_role_candidates(live, {"data_lake_aws_roles": {"x": "arn:aws:iam::123456789012:role/single"}}, []) \
        == ["single"]
    values = {"data_lake_aws_role_template": "arn:aws:iam::123456789012:role/kf-{namespace}",
              "data_lake_aws_roles": {"x": "arn:aws:iam::123456789012:role/single"}}
    assert d.aws_role_candidates(live, values, [{"name": "admin"}]) == ["admin", "kf-a", "kf-b", "single"]
    assert d.aws_role_candidates(live, values, []) == ["kf-a", "kf-b", "single"]
