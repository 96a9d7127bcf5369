"""The data_lake role through site.yml against the real API server, with OpenShift's STS fields
dressed on the plane: its Authentication `cluster` names the plane's own service account issuer
(as OpenShift's kube-apiserver takes --service-account-issuer from it), its CloudCredential
`cluster` is in Manual mode, Kubeflow's PodDefault CRD is the one of the real render.

The real kube-apiserver mints the tokens the cloud would see: TokenRequests bound to a notebook
pod, as the kubelet makes them for a projected serviceAccountToken volume (kubernetes v1.36.4
pkg/volume/projected/projected.go: audiences [source.audience], source.expirationSeconds,
boundObjectRef the Pod). Their iss, sub and aud are judged against each profile's trust document
as AWS documents its trust policies (tests/unit/test_data_lake_trust.py).

Kubeflow's admission webhook is played by apply_poddefaults below, held to kubeflow/kubeflow
components/admission-webhook/main.go at v1.10.0 (90e987bf87d3e7c900926310b00bfa16b59e41eb), the
poddefaults-webhook image of every supported render."""
import base64
import copy
import gzip
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import isolated_policies, only_roles, play_profile_controller, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_data_lake_trust import aws_trust_admits  # noqa: E402  (the clouds' trust rules, with their tests)

OWN_PLANE = True  # Authentication and CloudCredential `cluster` are the cluster's singletons
UPSTREAM = Path(__file__).resolve().parents[3] / "shared" / "upstream"
RENDER = UPSTREAM / "example-render-26.03.yaml.gz"
ACCOUNT = "123456789012"
ANNOTATION_PREFIX = "poddefault.admission.kubeflow.org"  # main.go annotationPrefix

pytestmark = pytest.mark.skipif(not RENDER.exists(), reason="needs ../shared/upstream (Kubeflow's PodDefault CRD)")


# ---------------------------------------------------------------- Kubeflow's admission webhook

def _selects(selector, labels):
    # metav1.LabelSelectorAsSelector; the PodDefaults here select by matchLabels only
    assert not selector.get("matchExpressions")
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def _merge_named(current, defaults, key="name", what="volumes"):
    """mergeVolumes / mergeEnv: an item of a new name is appended; one of a known name must be
    identical (reflect.DeepEqual), else the pod is refused."""
    merged, by_name = list(current), dict((item[key], item) for item in current)
    for item in defaults:
        if item[key] not in by_name:
            by_name[item[key]] = item
            merged.append(item)
        elif by_name[item[key]] != item:
            raise ValueError("merging %s has a conflict on %s" % (what, item[key]))
    return merged


def _merge_mounts(current, defaults):
    """mergeVolumeMounts: by name and by mountPath, each must be new or identical."""
    merged = _merge_named(current, defaults, what="volume mounts")
    by_path = {}
    for mount in current + defaults:
        if by_path.setdefault(mount["mountPath"], mount) != mount:
            raise ValueError("merging volume mounts has a conflict on mount path %s" % mount["mountPath"])
    return merged


def _merge_map(existing, defaults):
    """mergeMap: a new key is added; a known key with another value is a conflict."""
    merged = dict(existing or {})
    for key, value in (defaults or {}).items():
        if merged.setdefault(key, value) != value:
            raise ValueError("conflict on %s" % key)
    return merged


def apply_poddefaults(pod, poddefaults):
    """mutatePods: the PodDefaults of the pod's namespace whose selector matches its labels
    (filterPodDefaults), unless the pod is excluded, applied as applyPodDefaultsOnPod does: volumes,
    labels, annotations, service account, and each container's env and volume mounts
    (applyPodDefaultsOnContainer), then the annotation <prefix>/poddefault-<name>: <resourceVersion>."""
    pod = copy.deepcopy(pod)
    meta, spec = pod["metadata"], pod["spec"]
    if (meta.get("annotations") or {}).get(ANNOTATION_PREFIX + "/exclude") == "true":
        return pod
    matching = [pd for pd in poddefaults if pd["metadata"]["namespace"] == meta["namespace"]
                and _selects(pd["spec"]["selector"], meta.get("labels") or {})]
    if not matching:
        return pod
    for pd in matching:
        spec["volumes"] = _merge_named(spec.get("volumes") or [], pd["spec"].get("volumes") or [])
        meta["labels"] = _merge_map(meta.get("labels"), pd["spec"].get("labels"))
        meta["annotations"] = _merge_map(meta.get("annotations"), pd["spec"].get("annotations"))
        if pd["spec"].get("serviceAccountName"):
            spec["serviceAccountName"] = pd["spec"]["serviceAccountName"]
        for container in spec["containers"]:
            container["env"] = _merge_named(container.get("env") or [], pd["spec"].get("env") or [], what="env")
            container["volumeMounts"] = _merge_mounts(container.get("volumeMounts") or [],
                                                      pd["spec"].get("volumeMounts") or [])
    for pd in matching:
        meta["annotations"]["%s/poddefault-%s" % (ANNOTATION_PREFIX, pd["metadata"]["name"])] = \
            pd["metadata"]["resourceVersion"]
    return pod


def test_the_stand_in_merges_and_refuses_as_the_webhook_does():
    pd = {"metadata": {"name": "x", "namespace": "a", "resourceVersion": "7"},
          "spec": {"selector": {"matchLabels": {"x": "true"}}, "env": [{"name": "E", "value": "1"}],
                   "volumes": [{"name": "v", "emptyDir": {}}], "volumeMounts": [{"name": "v", "mountPath": "/v"}]}}
    pod = {"metadata": {"name": "p", "namespace": "a", "labels": {"x": "true"}},
           "spec": {"containers": [{"name": "c", "env": [{"name": "E", "value": "1"}]}]}}
    out = apply_poddefaults(pod, [pd])
    assert out["spec"]["containers"][0]["env"] == [{"name": "E", "value": "1"}]
    assert out["metadata"]["annotations"] == {ANNOTATION_PREFIX + "/poddefault-x": "7"}
    assert apply_poddefaults(dict(pod, metadata=dict(pod["metadata"], labels={})), [pd]) == dict(
        pod, metadata=dict(pod["metadata"], labels={}))
    with pytest.raises(ValueError, match="conflict on E"):
        apply_poddefaults({"metadata": pod["metadata"], "spec": {"containers": [
            {"name": "c", "env": [{"name": "E", "value": "2"}]}]}}, [pd])


# ---------------------------------------------------------------- the plane, dressed

def _apply(control_plane, obj):
    done = control_plane.kubectl("apply", "--server-side", "--field-manager=openshift", "--force-conflicts",
                                 "-f", "-", input=json.dumps(obj), check=False)
    assert done.returncode == 0, done.stderr


def dress(control_plane, issuer, mode="Manual"):
    _apply(control_plane, {"apiVersion": "config.openshift.io/v1", "kind": "Authentication",
                           "metadata": {"name": "cluster"}, "spec": {"serviceAccountIssuer": issuer}})
    _apply(control_plane, {"apiVersion": "operator.openshift.io/v1", "kind": "CloudCredential",
                           "metadata": {"name": "cluster"}, "spec": {"credentialsMode": mode, "managementState": "Managed"}})


def install_poddefault_crd(control_plane):
    with gzip.open(RENDER, "rt") as render:
        crd = next(x for x in yaml.load_all(render, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                   if x and x["kind"] == "CustomResourceDefinition" and x["metadata"]["name"] == "poddefaults.kubeflow.org")
    _apply(control_plane, crd)
    control_plane.wait_established("poddefaults.kubeflow.org")


def make_profiles(control_plane, kube, *names):
    for name in names:
        _apply(control_plane, {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name},
                               "spec": {"owner": {"kind": "User", "name": name + "@example.com"}}})
    play_profile_controller(control_plane, list(names), kube=kube)
    accounts = kube.resource("v1", "ServiceAccount")
    for name in names:  # `default`: kube-controller-manager's serviceaccount controller
        wait_for(lambda: kube.get(accounts, "default", name), 30, what="the default account of %s" % name)


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def kubelet_token(control_plane, pod, source):
    """The token the kubelet writes into the pod's projected volume for this source."""
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"audiences": [source["audience"]], "expirationSeconds": source["expirationSeconds"],
                     "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod["metadata"]["name"],
                                        "uid": pod["metadata"]["uid"]}}}
    url = "%s/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
        control_plane.server, pod["metadata"]["namespace"], pod["spec"]["serviceAccountName"])
    return control_plane.request("POST", url, body)["status"]["token"]


def said(result):
    """What the role said of the cluster (its debug task), the last time it said it."""
    found = [m for m in (r.get("msg") for r in result.task_results("debug")) if isinstance(m, list)
             and any(str(line).startswith("issuer ") for line in m)]
    return "\n".join(found[-1]) if found else ""


def wrong_inputs(result):
    """The pre-flight's refusal: the message of the task that failed the run."""
    return " ".join(str(((e.get("event_data") or {}).get("res") or {}).get("msg")) for e in result.events
                    if e.get("event") == "runner_on_failed"
                    and (e.get("event_data") or {}).get("task_action") == "ansible.builtin.fail")


def extravars(instance, documents, **more):
    out = dict(only_roles("data_lake"), kfocp_instance=instance, kfocp_data_lake_enabled=True, data_lake_enabled=True,
               data_lake_aws_role_template="arn:aws:iam::%s:role/kubeflow-{namespace}" % ACCOUNT,
               data_lake_documents_dir=str(documents))
    out.update(more)
    return out


def notebook(name, namespace):
    """A notebook's pod as the notebook controller makes it, with the form's configuration label."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"notebook-name": name, "data-lake": "true"}},
            "spec": {"serviceAccountName": "default-editor",
                     "containers": [{"name": name, "image": "kubeflownotebookswg/jupyter-scipy:v1.10.0"}]}}


def test_two_profiles_get_a_poddefault_and_a_trust_document_each_and_a_token_matches_only_its_own(
        playbook, kube, control_plane, instance, tmp_path):
    issuer = control_plane.server
    dress(control_plane, issuer)
    install_poddefault_crd(control_plane)
    a, b = instance + "-a", instance + "-b"
    make_profiles(control_plane, kube, a, b)
    documents = tmp_path / "lake"
    extra = extravars(instance, documents)

    # check mode says what it would do, and changes nothing
    check = playbook("site", extra, check=True)
    assert check.rc == 0, check.stdout[-4000:]
    assert kube.get(kube.resource("kubeflow.org/v1alpha1", "PodDefault"), "data-lake", a) is None
    assert not documents.exists()

    first = playbook("site", extra)
    assert first.rc == 0, first.stdout[-4000:]
    assert "issuer %s (Authentication cluster spec.serviceAccountIssuer)" % issuer in said(first)
    assert "credentialsMode Manual (CloudCredential cluster spec.credentialsMode): OpenShift's STS" in said(first)
    assert "pod-identity-webhook.aws.mutate.io: not installed" in said(first)

    # one trust document per profile
    docs = dict((p.stem, json.loads(p.read_text())) for p in (documents / "aws").glob("*.json"))
    assert {a, b} <= set(docs)
    assert all(name in (a, b) or not name.startswith(instance) for name in docs)

    # the PodDefault as the API server keeps it (the render's CRD prunes what it does not know)
    poddefaults = kube.resource("kubeflow.org/v1alpha1", "PodDefault")
    pd_a = kube.get(poddefaults, "data-lake", a)
    assert pd_a["spec"]["env"][0] == {"name": "AWS_ROLE_ARN", "value": "arn:aws:iam::%s:role/kubeflow-%s" % (ACCOUNT, a)}

    # a notebook pod of profile A, as Kubeflow's webhook admits it, created on the real API server
    mutated = apply_poddefaults(notebook("nb", a), [pd_a, kube.get(poddefaults, "data-lake", b)])
    made = control_plane.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(mutated), check=False)
    assert made.returncode == 0, made.stderr
    pod = json.loads(made.stdout)
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "data-lake-token")
    source = volume["projected"]["sources"][0]["serviceAccountToken"]
    assert source == {"audience": "sts.amazonaws.com", "expirationSeconds": 3600, "path": "token"}
    container = pod["spec"]["containers"][0]
    env = dict((e["name"], e["value"]) for e in container["env"])
    mount = next(m for m in container["volumeMounts"] if m["name"] == "data-lake-token")
    assert env["AWS_WEB_IDENTITY_TOKEN_FILE"] == mount["mountPath"] + "/" + source["path"]
    assert env["AWS_ROLE_ARN"].endswith(":role/kubeflow-" + a)

    # the token the kubelet would write there, minted by the API server
    token = claims(kubelet_token(control_plane, pod, source))
    expected = (issuer, "system:serviceaccount:%s:default-editor" % a, ["sts.amazonaws.com"])
    assert (token["iss"], token["sub"], token["aud"]) == expected
    assert aws_trust_admits(docs[a], token, ACCOUNT)
    assert not aws_trust_admits(docs[b], token, ACCOUNT)
    # every listed account of A, and no account of B, through A's role
    for account in ("default-editor", "default"):
        minted = claims(control_plane.request("POST", "%s/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
            control_plane.server, b, account), {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                                "spec": {"audiences": ["sts.amazonaws.com"]}})["status"]["token"])
        assert aws_trust_admits(docs[b], minted, ACCOUNT) and not aws_trust_admits(docs[a], minted, ACCOUNT)
    viewer = claims(control_plane.request("POST", "%s/api/v1/namespaces/%s/serviceaccounts/default-viewer/token" % (
        control_plane.server, a), {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                   "spec": {"audiences": ["sts.amazonaws.com"]}})["status"]["token"])
    assert not aws_trust_admits(docs[a], viewer, ACCOUNT)

    again = playbook("site", extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout[-4000:]

    # B stops being a profile namespace: its PodDefault and its document go, A's stay
    assert control_plane.kubectl("label", "namespace", b, "app.kubernetes.io/part-of-").returncode == 0
    third = playbook("site", extra)
    assert third.rc == 0, third.stdout[-4000:]
    assert kube.get(poddefaults, "data-lake", b) is None and kube.get(poddefaults, "data-lake", a) is not None
    assert not (documents / "aws" / (b + ".json")).exists() and (documents / "aws" / (a + ".json")).exists()

    # the webhook OpenShift installs on AWS: the accounts are annotated instead, the PodDefault goes
    webhook = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
               "metadata": {"name": "pod-identity-webhook"},
               "webhooks": [{"name": "pod-identity-webhook.aws.mutate.io", "admissionReviewVersions": ["v1beta1"],
                             "failurePolicy": "Ignore", "sideEffects": "None",
                             "clientConfig": {"service": {"name": "pod-identity-webhook",
                                                          "namespace": "openshift-cloud-credential-operator",
                                                          "path": "/mutate"}},
                             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                        "resources": ["pods"]}]}]}
    _apply(control_plane, webhook)
    fourth = playbook("site", extra)
    assert fourth.rc == 0, fourth.stdout[-4000:]
    assert "pod-identity-webhook.aws.mutate.io: installed" in said(fourth)
    accounts = kube.resource("v1", "ServiceAccount")
    for account in ("default-editor", "default"):
        annotations = kube.get(accounts, account, a)["metadata"].get("annotations") or {}
        assert annotations.get("eks.amazonaws.com/role-arn") == "arn:aws:iam::%s:role/kubeflow-%s" % (ACCOUNT, a)
    assert "eks.amazonaws.com/role-arn" not in (kube.get(accounts, "default-viewer", a)["metadata"].get("annotations") or {})
    assert kube.get(poddefaults, "data-lake", a) is None
    assert playbook("site", extra).count("changed") == 0

    # off: the annotations are given back, the accounts stay (the profile controller's)
    off = playbook("site", dict(extra, data_lake_state="absent"))
    assert off.rc == 0, off.stdout[-4000:]
    account = kube.get(accounts, "default-editor", a)
    assert account is not None and "eks.amazonaws.com/role-arn" not in (account["metadata"].get("annotations") or {})
    assert not list((documents / "aws").glob("*.json"))


def test_a_cluster_without_an_issuer_the_cloud_can_trust_is_refused_before_any_change(
        playbook, kube, control_plane, instance, tmp_path):
    install_poddefault_crd(control_plane)
    c = instance + "-c"
    make_profiles(control_plane, kube, c)
    documents = tmp_path / "lake"
    dress(control_plane, "")  # the field left empty: OpenShift's default, https://kubernetes.default.svc
    refused = playbook("site", extravars(instance, documents))
    assert refused.rc != 0
    refusal = wrong_inputs(refused)
    assert refusal.startswith("Nothing was changed. Wrong inputs: data_lake: "), refusal
    assert "Authentication cluster spec.serviceAccountIssuer: is empty" in refusal
    assert "set Authentication cluster spec.serviceAccountIssuer to its https URL" in refusal
    assert kube.get(kube.resource("kubeflow.org/v1alpha1", "PodDefault"), "data-lake", c) is None
    assert not os.path.exists(documents)


# ---------------------------------------------------------------- the IAM roles, on an emulator

AWS_ENV = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": os.devnull,
           "AWS_SHARED_CREDENTIALS_FILE": os.devnull, "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
SECRET = "not-a-real-secret-0f3c9a"  # a dummy key, the emulator takes any: it must never be logged


@pytest.fixture
def iam_emulator(tmp_path):
    """moto in server mode on a free loopback port: an emulator of IAM's API (moto's own account is
    123456789012), so that amazon.aws.iam_role makes its real calls and nothing leaves the machine."""
    server = Path(sys.executable).parent / "moto_server"
    if not server.exists():
        pytest.skip("needs moto[server] (requirements-dev.txt)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = open(tmp_path / "moto.log", "wb")  # pylint: disable=consider-using-with
    proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log,
                            env=dict(os.environ, **AWS_ENV))
    url = "http://127.0.0.1:%d" % port

    def up():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False
    wait_for(up, 30, what="moto_server on %s" % url)
    import boto3  # pylint: disable=import-outside-toplevel
    client = boto3.client("iam", endpoint_url=url, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    yield url, client
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def test_with_credentials_the_profiles_iam_roles_are_created_with_their_trust_and_removed_with_them(
        playbook, kube, control_plane, instance, tmp_path, iam_emulator):
    url, iam = iam_emulator
    dress(control_plane, control_plane.server)
    install_poddefault_crd(control_plane)
    a, b = instance + "-a", instance + "-b"
    make_profiles(control_plane, kube, a, b)
    # a role of the same name prefix that someone else made, without kfocp's tags
    trust = json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})
    iam.create_role(RoleName="kubeflow-%s-other" % instance, AssumeRolePolicyDocument=trust)
    documents = tmp_path / "lake"
    extra = extravars(instance, documents, data_lake_aws_create_roles=True, data_lake_aws_endpoint_url=url,
                      data_lake_aws_access_key="testing", data_lake_aws_secret_key=SECRET)

    first = playbook("site", extra, env=AWS_ENV)
    assert first.rc == 0, first.stdout[-4000:]
    assert SECRET not in first.stdout and SECRET not in json.dumps(first.events)
    for name in (a, b):
        role = iam.get_role(RoleName="kubeflow-" + name)["Role"]
        document = json.loads((documents / "aws" / (name + ".json")).read_text())
        assert role["AssumeRolePolicyDocument"] == document
        assert role["Arn"] == "arn:aws:iam::%s:role/kubeflow-%s" % (ACCOUNT, name)
        tags = dict((t["Key"], t["Value"]) for t in iam.list_role_tags(RoleName="kubeflow-" + name)["Tags"])
        assert tags == {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": instance}

    again = playbook("site", extra, env=AWS_ENV)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout[-4000:]

    # B stops being a profile namespace: its role goes; A's and the untagged one stay
    assert control_plane.kubectl("label", "namespace", b, "app.kubernetes.io/part-of-").returncode == 0
    third = playbook("site", extra, env=AWS_ENV)
    assert third.rc == 0, third.stdout[-4000:]
    names = set(r["RoleName"] for r in iam.list_roles()["Roles"])
    assert "kubeflow-" + a in names and "kubeflow-" + b not in names
    assert "kubeflow-%s-other" % instance in names

    # a wanted role that exists without kfocp's tags is refused, and left as it is
    iam.create_role(RoleName="kubeflow-" + b, AssumeRolePolicyDocument=trust)
    assert control_plane.kubectl("label", "namespace", b, "app.kubernetes.io/part-of=kubeflow-profile").returncode == 0
    refused = playbook("site", extra, env=AWS_ENV)
    assert refused.rc != 0
    assert "the IAM roles kubeflow-%s exist and are not kfocp's" % b in refused.stdout, refused.stdout[-4000:]
    assert iam.get_role(RoleName="kubeflow-" + b)["Role"]["AssumeRolePolicyDocument"] == json.loads(trust)
    # refused before the cluster and the documents change
    assert kube.get(kube.resource("kubeflow.org/v1alpha1", "PodDefault"), "data-lake", b) is None
    assert not (documents / "aws" / (b + ".json")).exists()

    # absent: kfocp's roles go, the others stay
    off = playbook("site", dict(extra, data_lake_state="absent"), env=AWS_ENV)
    assert off.rc == 0, off.stdout[-4000:]
    names = set(r["RoleName"] for r in iam.list_roles()["Roles"])
    assert "kubeflow-" + a not in names
    assert {"kubeflow-" + b, "kubeflow-%s-other" % instance} <= names


def test_a_new_profile_gets_its_data_lake_on_a_profiles_run(playbook, kube, control_plane, instance, tmp_path):
    """playbooks/profiles.yml, the play that declares profiles, converges their data lake too: a
    profile declared there gets its PodDefault and its trust document once the profile controller
    has made its namespace, with no site.yml run."""
    dress(control_plane, control_plane.server)
    install_poddefault_crd(control_plane)
    new = instance + "-new"
    documents = tmp_path / "lake"
    extra = dict(isolated_policies(instance), kfocp_instance=instance,
                 profiles_list=[{"name": new, "owner": {"user": "carol@example.com"}}],
                 data_lake_enabled=True, data_lake_documents_dir=str(documents),
                 data_lake_injection="poddefault",  # an earlier test of this plane leaves the AWS webhook installed
                 data_lake_selector={"app.kubernetes.io/part-of": "kubeflow-profile", "kfocp-test": instance},
                 data_lake_aws_role_template="arn:aws:iam::%s:role/kubeflow-{namespace}" % ACCOUNT)
    first = playbook("profiles", extra)
    assert first.rc == 0, first.stdout[-4000:]
    play_profile_controller(control_plane, [new], {"kfocp-test": instance}, kube=kube)
    second = playbook("profiles", extra)
    assert second.rc == 0, second.stdout[-4000:]
    pd = kube.get(kube.resource("kubeflow.org/v1alpha1", "PodDefault"), "data-lake", new)
    assert pd is not None and {"name": "AWS_ROLE_ARN", "value": "arn:aws:iam::%s:role/kubeflow-%s" % (ACCOUNT, new)} \
        in pd["spec"]["env"]
    assert sorted(p.name for p in (documents / "aws").glob("*.json")) == [new + ".json"]
    # off for the profiles play: the data lake is left as it is
    off = playbook("profiles", dict(extra, kfocp_data_lake_enabled=False, data_lake_state="absent"))
    assert off.rc == 0, off.stdout[-4000:]
    assert kube.get(kube.resource("kubeflow.org/v1alpha1", "PodDefault"), "data-lake", new) is not None
