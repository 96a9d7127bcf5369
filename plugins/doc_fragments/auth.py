# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path to a kubeconfig file, or the kubeconfig as a dictionary.
      - Falls back to E(K8S_AUTH_KUBECONFIG), then E(KUBECONFIG) and C(~/.kube/config), then the
        service account of the pod it runs in.
    type: raw
  context:
    description: The kubeconfig context to use. Falls back to E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description: URL of the API server. Falls back to E(K8S_AUTH_HOST).
    type: str
  api_key:
    description: A bearer token for O(host). Falls back to E(K8S_AUTH_API_KEY).
    type: str
  ca_cert:
    description: CA bundle that signs the API server certificate. Falls back to E(K8S_AUTH_CA_CERT), then E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description: Client certificate file. Falls back to E(K8S_AUTH_CLIENT_CERT), then E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description: Client key file. Falls back to E(K8S_AUTH_CLIENT_KEY), then E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  validate_certs:
    description: Verify the API server certificate. Falls back to E(K8S_AUTH_VALIDATE_CERTS), then
      E(K8S_AUTH_VERIFY_SSL); from the environment only V(0), V(false) and V(no) turn it off.
    type: bool
    aliases: [verify_ssl]
  proxy:
    description: HTTP proxy URL for the API server. Falls back to E(K8S_AUTH_PROXY).
    type: str
notes:
  - The same environment variables as M(kubernetes.core.k8s) are read, so AWX and Automation
    Controller credentials that inject E(K8S_AUTH_HOST), E(K8S_AUTH_API_KEY) and
    E(K8S_AUTH_SSL_CA_CERT) work unchanged.
requirements:
  - kubernetes >= 24.2.0 (Python)
"""
