"""kfocp.kubeflow.info, the collection's read, against kubernetes.core.k8s_info on the same API
server: for each read the roles make (an object by name, a missing one, label selectors with a
negation, every namespace, a field selector, a kind the server does not serve), both modules
return the same resources and api_found. The oracle is kubernetes.core's own module."""
import textwrap

from helpers import ensure_namespace, run_playbook


def _reads(namespace):
    return [
        {"kind": "Namespace", "name": "default"},
        {"kind": "ConfigMap", "name": "not-there", "namespace": namespace},
        {"kind": "ConfigMap", "namespace": namespace, "label_selectors": ["kfocp-test=%s" % namespace, "!skip"]},
        {"kind": "ConfigMap", "label_selectors": ["kfocp-test=%s" % namespace]},
        {"kind": "ConfigMap", "namespace": namespace, "field_selectors": ["metadata.name=one"]},
        {"api_version": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
         "label_selectors": ["!olm.copiedFrom"]},
        {"api_version": "config.openshift.io/v1", "kind": "ClusterVersion", "name": "version"},
        {"api_version": "nothing.example.com/v1", "kind": "Nothing"},
    ]


def test_info_reads_what_kubernetes_core_k8s_info_reads(control_plane, kube, instance, tmp_path):
    namespace = instance
    ensure_namespace(kube, namespace)
    configmaps = kube.resource("v1", "ConfigMap")
    for name, labels in (("one", {"kfocp-test": namespace}), ("two", {"kfocp-test": namespace}),
                         ("three", {"kfocp-test": namespace, "skip": "yes"})):
        kube.apply(configmaps, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "namespace": namespace, "labels": labels}, "data": {"k": name}}, "kfocp-test")
    play = tmp_path / "reads.yml"
    # the same options to both modules
    task = textwrap.indent(textwrap.dedent("""\
        - name: Read with %s
          %s:
            kubeconfig: "{{ kfocp_kubeconfig }}"
            api_version: "{{ item.api_version | default('v1') }}"
            kind: "{{ item.kind }}"
            name: "{{ item.name | default(omit) }}"
            namespace: "{{ item.namespace | default(omit) }}"
            label_selectors: "{{ item.label_selectors | default(omit) }}"
            field_selectors: "{{ item.field_selectors | default(omit) }}"
          loop: "{{ reads }}"
        """), "    ")
    play.write_text("- hosts: local\n  gather_facts: false\n  tasks:\n"
                    + "".join(task % (module, module) for module in ("kubernetes.core.k8s_info", "kfocp.kubeflow.info")))
    reads = _reads(namespace)
    result = run_playbook(control_plane, str(play), {"reads": reads, "kfocp_kubeconfig": str(control_plane.kubeconfig)},
                          tmp_path)
    assert result.rc == 0, result.stdout[-3000:]
    theirs = result.task_results("kubernetes.core.k8s_info")[0]["results"]
    ours = result.task_results("kfocp.kubeflow.info")[0]["results"]
    assert len(theirs) == len(ours) == len(reads), (len(theirs), len(ours))
    for read, their, our in zip(reads, theirs, ours):
        assert our["api_found"] == their["api_found"], read
        assert our["resources"] == their["resources"], read
    # the reads found something where something is there: the comparison is not of empty lists
    found = [len(r["resources"]) for r in ours]
    assert found[0] == 1 and found[1] == 0 and found[2] == 2 and found[3] == 3 and found[4] == 1, found
    assert ours[-1]["api_found"] is False
