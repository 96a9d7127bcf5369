# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The data lake: short-lived cloud credentials for the accounts that run each profile's work.

A pod's service account token, projected with the cloud's audience and signed by the cluster's
service account issuer, is exchanged by the cloud's SDK for credentials of one identity per
profile: an IAM role (AWS), a managed identity (Azure), a workload identity pool principal
(Google Cloud). Nothing is stored; the token lasts data_lake_token_expiration seconds.

Three parts, all pure:
- cluster_mode: what the cluster allows, from OpenShift's Authentication `cluster`
  (spec.serviceAccountIssuer), CloudCredential `cluster` (spec.credentialsMode) and the pod
  identity webhook that the cloud-credential-operator installs (MutatingWebhookConfiguration
  pod-identity-webhook). A setting that cannot work there is refused, naming the field and the fix.
- objects: per profile namespace, the service account annotations (shared: patched, never created)
  where the webhook turns them into a token and environment, else a Kubeflow PodDefault that
  projects the token and sets the SDK's environment itself (and, for Google Cloud, a ConfigMap with
  the credential configuration file the SDK reads).
- documents: per profile and provider, the trust the cloud team applies: an IAM role trust policy,
  Azure federated identity credentials, Google Cloud workload identity principals.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_subdomain, label_selector, qualified_name, require)

DEFAULTS = role_defaults.DEFAULTS["data_lake"]
PROVIDERS = ("aws", "azure", "gcp")
INJECTIONS = ("auto", "webhook", "poddefault")

# The audience each cloud's token exchange expects by default: the AWS pod identity webhook's
# --token-audience default and OpenShift's deployment of it (sts.amazonaws.com); Azure Workload
# Identity's DefaultAudience. Google Cloud's is the workload identity pool provider's own name.
AUDIENCES = {"aws": "sts.amazonaws.com", "azure": "api://AzureADTokenExchange"}

# amazon-eks-pod-identity-webhook pkg/annotations.go under the prefix OpenShift runs it with
# (--annotation-prefix=eks.amazonaws.com); azure-workload-identity pkg/webhook/consts.go.
AWS_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
AWS_AUDIENCE_ANNOTATION = "eks.amazonaws.com/audience"
AZURE_CLIENT_ID_ANNOTATION = "azure.workload.identity/client-id"
AZURE_USE_LABEL = "azure.workload.identity/use"

# The pod identity webhook the cloud-credential-operator installs on each cloud
# (bindata/v4.1.0/<cloud>-pod-identity-webhook/mutatingwebhook.yaml): configuration and webhook names.
WEBHOOK_CONFIGURATION = "pod-identity-webhook"
WEBHOOKS = {"aws": "pod-identity-webhook.aws.mutate.io", "azure": "pod-identity-webhook.azure.mutate.io",
            "gcp": "pod-identity-webhook.gcp.mutate.io"}

# What kfocp mounts where no webhook does it.
TOKEN_VOLUME = "data-lake-token"
TOKEN_DIR = "/var/run/secrets/kfocp.io/data-lake"
TOKEN_FILE = TOKEN_DIR + "/token"
GCP_CONFIGMAP = "data-lake-gcp-credentials"
GCP_CONFIG_VOLUME = "data-lake-gcp-credentials"
GCP_CONFIG_DIR = "/etc/kfocp.io/data-lake"
GCP_CONFIG_KEY = "credential-configuration.json"
# Google's external account credential configuration (google-auth identity_pool.Credentials).
GCP_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:jwt"
GCP_TOKEN_URL = "https://sts.googleapis.com/v1/token"
GCP_PROVIDER = re.compile(r"^//iam\.googleapis\.com/projects/(\d+)/locations/global/workloadIdentityPools/"
                          r"([a-z0-9-]+)/providers/([a-z0-9-]+)$")
AWS_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/[\w+=,.@/-]+$")
GUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_PLACEHOLDER = re.compile(r"\{([a-z]+)\}")
# The issuer every OpenShift cluster has until it is set (openshift/api config/v1
# types_authentication.go: "The default is https://kubernetes.default.svc"): reachable only inside it.
DEFAULT_ISSUER = "https://kubernetes.default.svc"
ISSUER_FIX = ("Give the cluster an issuer the cloud can reach: create the OIDC discovery endpoint "
              "(ccoctl <cloud> create-identity-provider, OpenShift's STS / workload identity install), set "
              "Authentication cluster spec.serviceAccountIssuer to its https URL "
              "(oc patch authentication cluster --type=merge -p '{\"spec\":{\"serviceAccountIssuer\":\"https://...\"}}'), "
              "and register that URL with the cloud once (README of the data_lake role), then run again")


def settings_of(values):
    """The role's settings: DEFAULTS overlaid with the given values."""
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in (values or {}).items() if k in DEFAULTS))
    return merged


def _template(value, field, names=("namespace",)):
    for name in _PLACEHOLDER.findall(value or ""):
        require(name in names, field, "unknown placeholder {%s}" % name,
                "Use only %s" % ", ".join("{%s}" % n for n in names))
    return value


def _fill(template, namespace):
    return _PLACEHOLDER.sub(lambda m: {"namespace": namespace}[m.group(1)], template)


def check(values):
    """The checks that need no cluster. Returns the settings."""
    s = settings_of(values)
    require(s["data_lake_state"] in ("present", "absent"), "data_lake_state", "%r is not a state" % s["data_lake_state"],
            "Use present or absent")
    provider = s["data_lake_provider"]
    require(provider in PROVIDERS, "data_lake_provider", "%r is not a provider" % (provider,),
            "Use aws, azure or gcp")
    require(s["data_lake_injection"] in INJECTIONS, "data_lake_injection", "%r is not a mode" % (s["data_lake_injection"],),
            "Use auto (the webhook where the cluster has it, else a PodDefault), webhook or poddefault")
    label_selector(s["data_lake_selector"], "data_lake_selector")
    accounts = s["data_lake_accounts"]
    require(isinstance(accounts, list) and accounts, "data_lake_accounts", "must be a non-empty list",
            "List the service accounts that run a tenant's work, for example [default-editor, default]")
    for index, account in enumerate(accounts):
        dns_subdomain(account, "data_lake_accounts[%d]" % index)
    require(len(set(accounts)) == len(accounts), "data_lake_accounts", "lists an account twice", "List each once")
    expiration = s["data_lake_token_expiration"]
    require(isinstance(expiration, int) and not isinstance(expiration, bool) and 600 <= expiration <= 86400,
            "data_lake_token_expiration", "%r is out of range" % (expiration,),
            "Use seconds from 600 (the API server's minimum for a projected token) to 86400")
    dns_subdomain(s["data_lake_poddefault_name"], "data_lake_poddefault_name")
    qualified_name(s["data_lake_poddefault_label"], "data_lake_poddefault_label")
    require(isinstance(s["data_lake_documents_dir"], str) and s["data_lake_documents_dir"], "data_lake_documents_dir",
            "is empty", "Give the directory the trust documents are written to")
    {"aws": _check_aws, "azure": _check_azure, "gcp": _check_gcp}[provider](s)
    return s


def _check_aws(s):
    template, roles = s["data_lake_aws_role_template"], s["data_lake_aws_roles"]
    require(isinstance(roles, dict), "data_lake_aws_roles", "must be a mapping", "Map a namespace to its role ARN")
    require(template or roles, "data_lake_aws_role_template", "is empty",
            "Give the profiles' IAM role ARN, for example arn:aws:iam::123456789012:role/kubeflow-{namespace}")
    if template:
        _template(template, "data_lake_aws_role_template")
        require(AWS_ROLE_ARN.match(_fill(template, "ns")), "data_lake_aws_role_template",
                "%r is not an IAM role ARN" % template, "Write arn:aws:iam::<12-digit account>:role/<name>")
    for name, arn in roles.items():
        require(isinstance(arn, str) and AWS_ROLE_ARN.match(arn), "data_lake_aws_roles.%s" % name,
                "%r is not an IAM role ARN" % (arn,), "Write arn:aws:iam::<12-digit account>:role/<name>")


def _check_azure(s):
    require(isinstance(s["data_lake_azure_tenant_id"], str) and GUID.match(s["data_lake_azure_tenant_id"]),
            "data_lake_azure_tenant_id", "%r is not a tenant id" % (s["data_lake_azure_tenant_id"],),
            "Give the Microsoft Entra tenant's id (a GUID)")
    ids = s["data_lake_azure_client_ids"]
    require(isinstance(ids, dict) and ids, "data_lake_azure_client_ids", "must be a non-empty mapping",
            "Map each profile namespace to the client id of its managed identity")
    for name, client_id in ids.items():
        require(isinstance(client_id, str) and GUID.match(client_id), "data_lake_azure_client_ids.%s" % name,
                "%r is not a client id" % (client_id,), "Give the managed identity's client id (a GUID)")
    require(str(s["data_lake_azure_authority_host"]).startswith("https://"), "data_lake_azure_authority_host",
            "must be an https URL", "Use https://login.microsoftonline.com/ or your cloud's")


def _check_gcp(s):
    require(GCP_PROVIDER.match(s["data_lake_gcp_provider"] or ""), "data_lake_gcp_provider",
            "%r is not a workload identity pool provider" % (s["data_lake_gcp_provider"],),
            "Write //iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>")
    if s["data_lake_gcp_service_account_template"]:
        _template(s["data_lake_gcp_service_account_template"], "data_lake_gcp_service_account_template")


def audience(s):
    """The audience kfocp projects: the setting, or the provider's."""
    if s["data_lake_audience"]:
        return s["data_lake_audience"]
    if s["data_lake_provider"] == "gcp":
        return "https:" + s["data_lake_gcp_provider"]
    return AUDIENCES[s["data_lake_provider"]]


# ---------------------------------------------------------------- the cluster's mode

def cluster_mode(values, authentication, cloudcredential, webhook_configuration, poddefaults_served=True):
    """What kfocp does on this cluster, from the live Authentication `cluster`, CloudCredential
    `cluster` and MutatingWebhookConfiguration pod-identity-webhook (each None when absent), and
    whether the API serves Kubeflow's PodDefault (kubeflow.org/v1alpha1).
    Returns {issuer, credentials_mode, webhook, injection, messages}; refuses a setting that cannot
    work (a DefinitionError naming the field and the fix)."""
    s = check(values)
    provider = s["data_lake_provider"]
    issuer = ((authentication or {}).get("spec") or {}).get("serviceAccountIssuer") or ""
    field = "Authentication cluster spec.serviceAccountIssuer"
    require(authentication is not None, field, "cannot be read: there is no Authentication named cluster",
            "Run against an OpenShift cluster (config.openshift.io/v1 Authentication cluster), then run again")
    require(issuer, field, "is empty, so the cluster signs its tokens as %s, which no cloud can reach to "
            "verify them" % DEFAULT_ISSUER, ISSUER_FIX)
    host = re.sub(r"^https://", "", issuer).split("/")[0].split(":")[0]
    require(issuer.startswith("https://"), field, "%r is not an https URL" % issuer, ISSUER_FIX)
    require(issuer.rstrip("/") != DEFAULT_ISSUER and not host.endswith((".svc", ".cluster.local")), field,
            "%r is an address inside the cluster, which no cloud can reach to verify its tokens" % issuer, ISSUER_FIX)
    mode = ((cloudcredential or {}).get("spec") or {}).get("credentialsMode", "")
    names = [w.get("name") for w in (webhook_configuration or {}).get("webhooks") or []]
    webhook = WEBHOOKS[provider] in names
    injection = s["data_lake_injection"]
    if provider == "gcp":
        require(injection != "webhook", "data_lake_injection", "webhook does not work with data_lake_provider gcp",
                "Google Cloud reads a credential configuration file, which kfocp mounts with a PodDefault: "
                "use auto or poddefault")
        injection = "poddefault"
    elif injection == "auto":
        injection = "webhook" if webhook else "poddefault"
    else:
        require(injection == "poddefault" or webhook, "data_lake_injection",
                "webhook, but the cluster has no %s webhook (MutatingWebhookConfiguration %s)"
                % (WEBHOOKS[provider], WEBHOOK_CONFIGURATION),
                "Use auto or poddefault: kfocp then projects the token with a Kubeflow PodDefault")
    require(poddefaults_served or (injection == "webhook" and provider == "aws"), "data_lake_injection",
            "%s needs Kubeflow's PodDefault (kubeflow.org/v1alpha1), which the cluster does not serve" % (
                "Azure Workload Identity" if provider == "azure" and injection == "webhook" else injection),
            "Install Kubeflow first (the components role, with its admission webhook), then run again")
    messages = ["issuer %s (Authentication cluster spec.serviceAccountIssuer): tokens for the audience %s"
                % (issuer, audience(s)),
                "credentialsMode %s (CloudCredential cluster spec.credentialsMode)%s"
                % (mode or "'' (default)", ": OpenShift's STS / workload identity mode" if mode == "Manual" else
                   ": the cluster's own components keep their cloud credentials; the profiles' workloads use the issuer"),
                ("pod identity webhook %s: %s" % (WEBHOOKS[provider], "installed" if webhook else "not installed")),
                "each profile gets %s" % ("service account annotations the webhook turns into a token and environment"
                                          if injection == "webhook" else
                                          "a PodDefault %s that projects the token and sets the environment"
                                          % s["data_lake_poddefault_name"])]
    if s["data_lake_provider"] == "aws" and re.match(r"^https://[^/]+:\d+", issuer):
        messages.append("note: AWS asks for an issuer URL without a port number")
    return {"issuer": issuer, "credentials_mode": mode, "webhook": webhook, "injection": injection,
            "audience": audience(s), "messages": messages}


# ---------------------------------------------------------------- per profile

def _is_profile(namespace, s):
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in label_selector(s["data_lake_selector"], "data_lake_selector").items())


def identity(s, namespace):
    """The cloud identity of a profile namespace: the role ARN, the client id, or the Google
    service account to impersonate ('' for none); None when the settings give it none."""
    provider = s["data_lake_provider"]
    if provider == "aws":
        roles = s["data_lake_aws_roles"] or {}
        if roles.get(namespace):
            return roles[namespace]
        template = s["data_lake_aws_role_template"]
        return _fill(template, namespace) if template else None
    if provider == "azure":
        return (s["data_lake_azure_client_ids"] or {}).get(namespace)
    template = s["data_lake_gcp_service_account_template"]
    return _fill(template, namespace) if template else ""


def subject(namespace, account):
    """The `sub` claim the API server puts in an account's token."""
    return "system:serviceaccount:%s:%s" % (namespace, account)


def _env(s, namespace, ident):
    provider = s["data_lake_provider"]
    if provider == "aws":
        env = [{"name": "AWS_ROLE_ARN", "value": ident}, {"name": "AWS_WEB_IDENTITY_TOKEN_FILE", "value": TOKEN_FILE}]
        if s["data_lake_aws_region"]:
            env += [{"name": "AWS_REGION", "value": s["data_lake_aws_region"]},
                    {"name": "AWS_DEFAULT_REGION", "value": s["data_lake_aws_region"]},
                    {"name": "AWS_STS_REGIONAL_ENDPOINTS", "value": "regional"}]
        return env
    if provider == "azure":
        return [{"name": "AZURE_CLIENT_ID", "value": ident},
                {"name": "AZURE_TENANT_ID", "value": s["data_lake_azure_tenant_id"]},
                {"name": "AZURE_FEDERATED_TOKEN_FILE", "value": TOKEN_FILE},
                {"name": "AZURE_AUTHORITY_HOST", "value": s["data_lake_azure_authority_host"]}]
    return [{"name": "GOOGLE_APPLICATION_CREDENTIALS", "value": GCP_CONFIG_DIR + "/" + GCP_CONFIG_KEY}]


def gcp_credential_configuration(s, namespace):
    """Google's external account credential configuration for a profile: the token file kfocp
    projects is the subject token; with a service account template, that account is impersonated."""
    config = {"type": "external_account", "audience": s["data_lake_gcp_provider"],
              "subject_token_type": GCP_TOKEN_TYPE, "token_url": GCP_TOKEN_URL,
              "credential_source": {"file": TOKEN_FILE, "format": {"type": "text"}}}
    account = identity(s, namespace)
    if account:
        config["service_account_impersonation_url"] = (
            "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/%s:generateAccessToken" % account)
    return config


def _describe(s, ident):
    provider = s["data_lake_provider"]
    if provider == "gcp":
        how = "workload identity federation" + (" as " + ident if ident else "")
    else:
        how = {"aws": "the IAM role ", "azure": "the managed identity "}[provider] + ident
    return "Read the data lake as this profile (%s)" % how


def poddefault(s, namespace, ident, mode):
    """The Kubeflow PodDefault a notebook (or any pod) opts into with the label
    <data_lake_poddefault_label>: "true". With the webhook (Azure), it only adds the pod label the
    webhook selects; without one, it projects the token and sets the SDK's environment."""
    spec = {"desc": _describe(s, ident),
            "selector": {"matchLabels": {s["data_lake_poddefault_label"]: "true"}}}
    if mode["injection"] == "webhook":
        spec["labels"] = {AZURE_USE_LABEL: "true"}
    else:
        spec["volumes"] = [{"name": TOKEN_VOLUME, "projected": {"sources": [{"serviceAccountToken": {
            "audience": mode["audience"], "expirationSeconds": s["data_lake_token_expiration"], "path": "token"}}]}}]
        spec["volumeMounts"] = [{"name": TOKEN_VOLUME, "mountPath": TOKEN_DIR, "readOnly": True}]
        spec["env"] = _env(s, namespace, ident)
        if s["data_lake_provider"] == "gcp":
            spec["volumes"].append({"name": GCP_CONFIG_VOLUME, "configMap": {"name": GCP_CONFIGMAP}})
            spec["volumeMounts"].append({"name": GCP_CONFIG_VOLUME, "mountPath": GCP_CONFIG_DIR, "readOnly": True})
    return {"apiVersion": "kubeflow.org/v1alpha1", "kind": "PodDefault",
            "metadata": {"name": s["data_lake_poddefault_name"], "namespace": namespace}, "spec": spec}


def _annotations(s, ident, mode):
    if s["data_lake_provider"] == "aws":
        annotations = {AWS_ROLE_ANNOTATION: ident}
        if mode["audience"] != AUDIENCES["aws"]:
            annotations[AWS_AUDIENCE_ANNOTATION] = mode["audience"]
        return annotations
    return {AZURE_CLIENT_ID_ANNOTATION: ident}


def _namespace_objects(s, namespace, ident, mode, live_accounts):
    objs = []
    provider = s["data_lake_provider"]
    if mode["injection"] == "webhook":
        for account in s["data_lake_accounts"]:
            if (namespace, account) in live_accounts:
                objs.append({"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": account, "namespace": namespace,
                                          "annotations": dict(_annotations(s, ident, mode), **{o.OWNERSHIP: o.SHARED})}})
    if provider == "gcp":
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": GCP_CONFIGMAP, "namespace": namespace},
                     "data": {GCP_CONFIG_KEY: json.dumps(gcp_credential_configuration(s, namespace), indent=2,
                                                         sort_keys=True)}})
    if mode["injection"] == "poddefault" or provider == "azure":
        objs.append(poddefault(s, namespace, ident, mode))
    return objs


def trust_document(s, mode, namespace, ident):
    """What the cloud must trust for one profile: the accounts' subjects through the cluster's
    issuer, with the audience kfocp projects."""
    provider, issuer = s["data_lake_provider"], mode["issuer"]
    subjects = [subject(namespace, account) for account in s["data_lake_accounts"]]
    if provider == "aws":
        provider_url = re.sub(r"^https://", "", issuer).rstrip("/")
        account_id = AWS_ROLE_ARN.match(ident).group(1)
        partition = ident.split(":")[1]
        return {"Version": "2012-10-17", "Statement": [{
            "Effect": "Allow",
            "Principal": {"Federated": "arn:%s:iam::%s:oidc-provider/%s" % (partition, account_id, provider_url)},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringEquals": {provider_url + ":sub": subjects, provider_url + ":aud": mode["audience"]}}}]}
    if provider == "azure":
        return {"client_id": ident, "federated_identity_credentials": [
            {"name": ("kfocp-%s-%s" % (namespace, account))[:120], "issuer": issuer,
             "subject": subject(namespace, account), "audiences": [mode["audience"]]}
            for account in s["data_lake_accounts"]]}
    match = GCP_PROVIDER.match(s["data_lake_gcp_provider"])
    pool = "projects/%s/locations/global/workloadIdentityPools/%s" % (match.group(1), match.group(2))
    return {"provider": s["data_lake_gcp_provider"], "issuer": issuer, "allowed_audiences": [mode["audience"]],
            "service_account": ident or None,
            "members": ["principal://iam.googleapis.com/%s/subject/%s" % (pool, sub) for sub in subjects]}


def plan(values, mode, namespaces, serviceaccounts):
    """Everything for the profile namespaces among `namespaces` (live Namespaces): the objects to
    apply, the trust documents to write ({path, content}), and what is left out and why."""
    s = check(values)
    live_accounts = set((a["metadata"].get("namespace"), a["metadata"]["name"]) for a in serviceaccounts or [])
    result = {"objects": [], "documents": [], "skipped": []}
    provider = s["data_lake_provider"]
    for ns in sorted(n["metadata"]["name"] for n in namespaces or [] if _is_profile(n, s)):
        ident = identity(s, ns)
        if ident is None:
            result["skipped"].append("%s: no %s for it (%s)" % (
                ns, "role" if provider == "aws" else "client id",
                "data_lake_aws_roles" if provider == "aws" else "data_lake_azure_client_ids"))
            continue
        if provider == "aws":
            require(AWS_ROLE_ARN.match(ident), "data_lake_aws_role_template", "gives %r for %s, not an IAM role ARN"
                    % (ident, ns), "Fix the template or name the namespace's role in data_lake_aws_roles")
        result["objects"] += _namespace_objects(s, ns, ident, mode, live_accounts)
        result["documents"].append({"path": "%s/%s.json" % (provider, ns), "identity": ident,
                                    "content": trust_document(s, mode, ns, ident)})
        missing = [a for a in s["data_lake_accounts"] if (ns, a) not in live_accounts]
        if missing and mode["injection"] == "webhook":
            result["skipped"].append("%s: no service account %s yet (annotated on the next run)"
                                     % (ns, ", ".join(missing)))
    return result


# ---------------------------------------------------------------- the IAM roles, with credentials

def aws_role_tags(instance):
    """The tags that mark an IAM role kfocp created for this instance: only such a role is ever
    changed or removed."""
    return {o.MANAGED_BY: "kfocp", o.INSTANCE: instance or "kfocp"}


def aws_roles(documents, instance):
    """The IAM role of each profile, from the plan's AWS documents: {name, path, document, tags},
    the name and path taken from the role ARN (arn:aws:iam::<account>:role<path><name>)."""
    roles = []
    for doc in documents or []:
        resource = doc["identity"].split(":", 5)[5][len("role"):]
        path, name = resource.rsplit("/", 1)
        roles.append({"name": name, "path": path + "/", "document": doc["content"], "tags": aws_role_tags(instance)})
    return roles


def aws_role_candidates(live_roles, values, wanted):
    """The names among the live IAM roles (ListRoles, which gives no tags) that kfocp may have
    created: a wanted one, one named in data_lake_aws_roles, or one whose ARN fits
    data_lake_aws_role_template for some namespace. Only their tags are read (GetRole)."""
    s = settings_of(values)
    arns = set((s["data_lake_aws_roles"] or {}).values())
    names = set(role["name"] for role in wanted or [])
    template = s["data_lake_aws_role_template"]
    fits = re.compile("^" + ".+".join(re.escape(part) for part in template.split("{namespace}")) + "$") \
        if template else None
    return sorted(role["role_name"] for role in live_roles or []
                  if role["role_name"] in names or role.get("arn") in arns or (fits and fits.match(role.get("arn", ""))))


def aws_roles_to_remove(live_roles, wanted, instance):
    """The names of the live IAM roles (amazon.aws.iam_role_info's iam_roles) that kfocp created for
    this instance (both tags) and that no profile wants any more. An untagged role, or one of
    another instance, is left alone whatever its name; a wanted role that exists without the tags
    is someone else's, and refused before any change."""
    tags = aws_role_tags(instance)
    names = set(role["name"] for role in wanted or [])
    ours = dict((role["role_name"], all((role.get("tags") or {}).get(k) == v for k, v in tags.items()))
                for role in live_roles or [])
    foreign = sorted(name for name in names if name in ours and not ours[name])
    require(not foreign, "data_lake_aws_role_template",
            "the IAM roles %s exist and are not kfocp's (no tags %s)" % (", ".join(foreign), json.dumps(tags)),
            "Name other roles (data_lake_aws_role_template, data_lake_aws_roles), or delete those, then run again")
    return sorted(name for name, mine in ours.items() if mine and name not in names)
