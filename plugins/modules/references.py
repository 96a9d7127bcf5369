#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: references
short_description: Find the broken references between the Kubeflow objects a cluster holds
version_added: 0.1.0
description:
  - Reads the cluster's Namespaces, ServiceAccounts, Services, Deployments, StatefulSets, DaemonSets,
    Jobs, CronJobs, AuthorizationPolicies, VirtualServices, DestinationRules, ServiceEntries and
    Routes in every namespace, and the ConfigMaps of O(namespaces), and reports every reference
    from an object of O(namespaces) that does not hold, naming both objects and the field.
  - B(principal) - every principal of an ALLOW or DENY AuthorizationPolicy (C(from.source.principals),
    C(notPrincipals), and the values of a C(when) condition on C(source.principal)) is Istio's
    C(<trust domain>/ns/<namespace>/sa/<service account>) of a ServiceAccount that exists, or one
    of O(gateway_principals).
  - B(host) - every host that names an in-cluster Service (C(<name>.<namespace>),
    C(<name>.<namespace>.svc), C(<name>.<namespace>.svc.cluster.local), with or without scheme,
    port and path) in a VirtualService destination, a DestinationRule host, a ServiceEntry endpoint,
    a container's C(env) value or a ConfigMap value, and every Route backend, names a Service that
    exists. A VirtualService destination or DestinationRule host without a dot is a Service of
    the object's own namespace.
  - B(backend) - every Service a VirtualService or Route sends to selects the pods of a Deployment,
    StatefulSet, DaemonSet, Job or CronJob of its namespace.
  - B(path) - each path the VirtualServices publish on O(gateway) is admitted, by the
    AuthorizationPolicies on the way to the workload behind it (as Istio decides), for a
    logged-in user's request (header C(kubeflow-userid)) from the first of O(gateway_principals),
    and refused for the same request from O(other_principal).
  - 'Not reported, each for a reason upstream''s renders show: a principal or host with a wildcard
    (C(*)) names no one account or Service. A two-label host C(<a>.<b>) is a Service''s name only
    when C(<b>) is a namespace of the cluster or one of upstream''s (kubeflow, istio-system,
    knative-serving, knative-serving-ingress, keda, auth, oauth2-proxy, cert-manager, kube-system,
    kubeflow-system); otherwise it is a domain (C(kubeflow.org), C(docker.io)).'
  - 'A host in a namespace that does not exist, where the namespace is one of O(absent_namespaces)
    (by default those of optional components that KServe''s C(inferenceservice-config) names as kfocp
    installs it: keda, KServe''s optional autoscaler; knative-serving-ingress, where OpenShift
    Serverless runs the Kourier Service kfocp gives KServe as its local gateway), is listed in
    RV(skipped). In any other namespace that does not exist (C(kubeflow) after the components moved
    to another namespace; C(istio-system), where upstream names a Service of an Istio kfocp does not
    run) it is a finding.'
  - A VirtualService's C(hosts), a ServiceEntry's C(hosts) and a Route's C(spec.host) are the names
    those objects answer to or declare, not Services.
  - A ConfigMap's C(_example) key is Knative's documentation of its settings, "not actually
    functional configuration" (Knative Serving's C(config-tracing) names zipkin in istio-system there).
  - A path to a workload whose pods say C(sidecar.istio.io/inject) V(false) (KFP's metadata-envoy, an
    Envoy itself) has no proxy, so no AuthorizationPolicy is on its way; it is listed in RV(no_proxy).
    A path to a workload that gets no proxy without saying so is a finding.
  - A path whose workload's own ALLOW policies admit only service accounts of its namespace (KFAM's
    C(/kfam/), admitted from the central dashboard's account only) is not published for users at
    the gateway; it is listed in RV(internal).
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.group_defaults
options:
  namespaces:
    description:
      - The namespaces whose objects' references are checked (the components' namespace, and the
        profile namespaces to check their policies). Empty - every namespace.
    type: list
    elements: str
    default: []
  gateway_principals:
    description:
      - The principals of the gateway kfocp runs (C(service_mesh_gateway_info.principal)), which
        count as existing without a ServiceAccount where the check reads. The path check sends its
        requests from the first; without any, it does not run.
    type: list
    elements: str
    default: []
  gateway:
    description:
      - The kubeflow Gateway as C(<namespace>/<name>), on which the path check follows the
        VirtualServices' routes. Empty - no path check.
    type: str
    default: ''
  root_namespace:
    description: The mesh's root namespace, whose AuthorizationPolicies apply to every workload.
    type: str
    default: istio-system
  absent_namespaces:
    description:
      - The namespaces of components that need not be installed, whose hosts are listed in
        RV(skipped) when the namespace does not exist. Not given - V(keda) and V(knative-serving-ingress).
    type: list
    elements: str
  other_principal:
    description: The principal of the other workload the path check sends a request from.
    type: str
    default: cluster.local/ns/kfocp-reference-check/sa/default
notes:
  - Reads only; check mode reads as well.
  - The checks are the pure functions of C(plugins/module_utils/references.py), which tests call on
    rendered objects too.
"""

EXAMPLES = r"""
- name: Find the broken references of the components
  kfocp.kubeflow.references:
    namespaces: [kubeflow]
    gateway: kubeflow/kubeflow-gateway
    gateway_principals: ["{{ service_mesh_gateway_info.principal }}"]
    root_namespace: "{{ service_mesh_gateway_info.mesh_namespace }}"
  register: references

- name: Fail on any
  ansible.builtin.assert:
    that: references.findings | length == 0
    fail_msg: "{{ references.findings | map(attribute='msg') | list }}"
"""

RETURN = r"""
findings:
  description:
    - One entry per broken reference - C(check) (principal, host, backend or path), C(source) and
      C(target) (each C(kind), C(namespace), C(name)), C(field) (of the source), C(value),
      C(problem), and C(msg), the whole in one line.
  returned: success
  type: list
  elements: dict
  sample:
    - check: host
      source: {kind: Deployment, namespace: kubeflow, name: centraldashboard}
      field: spec.template.spec.containers[0].env[2].value (KFAM_SERVICE_HOST)
      value: profiles-kfam.kubeflow
      target: {kind: Service, namespace: kubeflow, name: profiles-kfam}
      problem: does not exist
skipped:
  description: The hosts in namespaces of components not installed, by namespace (where each is).
  returned: success
  type: dict
no_proxy:
  description: The paths on the gateway to a workload that asks for no proxy.
  returned: success
  type: list
  elements: str
internal:
  description: The paths on the gateway whose workload admits only its neighbours.
  returned: success
  type: list
  elements: str
checked:
  description: How many references each check examined (principals, hosts, backends, paths).
  returned: success
  type: dict
kinds_not_served:
  description: The kinds the API server does not serve, which were not read.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (AUTH_ARGS, GROUP_DEFAULTS_ARGS, argspec,
                                                                          auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils import references


def main():
    spec = argspec(AUTH_ARGS, GROUP_DEFAULTS_ARGS, {
        "namespaces": {"type": "list", "elements": "str", "default": []},
        "gateway_principals": {"type": "list", "elements": "str", "default": []},
        "gateway": {"type": "str", "default": ""},
        "root_namespace": {"type": "str", "default": "istio-system"},
        "absent_namespaces": {"type": "list", "elements": "str"},
        "other_principal": {"type": "str", "default": references.OTHER_PRINCIPAL},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    namespaces = params["namespaces"] or None
    try:
        objects, missing = references.read(Client.from_params(auth_params(params)), namespaces)
    except KubeError as err:
        module.fail_json(msg=str(err), changed=False)
    out = references.check(objects, params["gateway_principals"], params["gateway"], params["root_namespace"],
                           namespaces, params["absent_namespaces"], params["other_principal"])
    module.exit_json(changed=False, kinds_not_served=missing, **out)


if __name__ == "__main__":
    main()
