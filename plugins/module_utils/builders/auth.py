# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ingress auth in front of the Kubeflow gateway.

An OpenShift oauth-proxy (provider openshift) receives every request through a reencrypt Route,
with a serving certificate made by the service CA, and passes it to the gateway's HTTP port. It
lets in only users who pass a subject access review: by default a dedicated check (`access` on
`kubeflow.kfocp.io` named `users`, in the proxy's namespace) that a Role grants to the Kubeflow
users group (`system:authenticated:oauth`: everyone who logged in through OpenShift OAuth).
An OAuthClient with a generated secret (kept in a Secret) lets it log users in. An EnvoyFilter on
the gateway removes any kubeflow-userid header the client sent and sets it to the OpenShift user
name, derived from the x-forwarded-user and x-forwarded-email the proxy established
(roles/auth/files/userid.lua). A NetworkPolicy admits only the proxy's pods to the gateway's
pods, so that no pod in the cluster can send the gateway identity headers of its own choosing.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import json

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, dns_subdomain, namespace, require)

# The role's settings as the builder names them (auth_<key>), defaults from role_defaults; the
# gateway (auth_gateway) is given apart.
DEFAULTS = role_defaults.unprefixed("auth", ("name", "namespace", "host", "client_id", "secret_name", "image", "sar",
                                             "users_groups", "replicas", "extra_args", "gateway_policy"))
SAR_KEYS = ("namespace", "group", "resource", "name", "verb")
# oauth-proxy POSTs --openshift-sar as it is to authorization.openshift.io/v1 SubjectAccessReviews,
# whose Action (openshift/api authorization/v1/types.go) names the API group resourceAPIGroup and
# the object resourceName: the API server drops a `group` or `name` key.
OPENSHIFT_SAR_KEYS = {"namespace": "namespace", "group": "resourceAPIGroup", "resource": "resource",
                      "name": "resourceName", "verb": "verb"}
SERVING_CERT = "service.beta.openshift.io/serving-cert-secret-name"
HTTPS_PORT = 8443
SECRET_KEYS = ("client_secret", "cookie_secret")
# oauth-proxy's flags (openshift/oauth-proxy, main.go, oauthproxy.go ServeHTTP and Authenticate)
# under which a request reaches the upstream with the X-Forwarded-User/-Email the client sent:
# paths let through without authentication, an htpasswd login (its session has no e-mail, so the
# client's X-Forwarded-Email stays), and switching the user headers off.
# The flag that makes oauth-proxy authenticate bearer tokens and client certificates, authorised by
# its own per-path access records (providers/openshift/provider.go: no authenticator without it).
DELEGATE_FLAG = "--openshift-delegate-urls"
IDENTITY_FLAGS = ("--skip-auth-regex", "--bypass-auth-for", "--bypass-auth-except-for", "--skip-auth-preflight",
                  "--htpasswd-file", "--pass-user-headers", "--pass-basic-auth")
# oauth-proxy's own paths hang under --proxy-prefix (main.go: default /oauth; oauthproxy.go: PingPath
# <prefix>/healthz, SignOutPath <prefix>/sign_out, the callback <prefix>/callback): the probes, the
# redirect URL and the dashboard's logout path (components_dashboard_logout_url) name /oauth.
PROXY_PREFIX = "/oauth"
PREFIX_FLAG = "--proxy-prefix"


def normalise(settings, field="auth"):
    s = copy.deepcopy(DEFAULTS)
    given = settings or {}
    require(isinstance(given, dict), field, "must be a mapping", "Give the auth settings")
    for key, value in given.items():
        require(key in DEFAULTS, "%s_%s" % (field, key), "is not a known setting",
                "Use one of %s" % ", ".join("%s_%s" % (field, k) for k in sorted(DEFAULTS)))
        if key == "sar":
            require(isinstance(value, dict), field + "_sar", "must be a mapping",
                    "Give {namespace, group, resource, name, verb}, e.g. {group: kfocp.io, resource: kubeflow, "
                    "name: users, verb: access}")
            for sub in value:
                require(sub in SAR_KEYS, "%s_sar.%s" % (field, sub), "is not a field of the access review",
                        "Use %s" % ", ".join(SAR_KEYS))
            s["sar"] = dict(DEFAULTS["sar"], **dict((k, v) for k, v in value.items() if v is not None))
        else:
            s[key] = copy.deepcopy(value)
    require(isinstance(s["host"], str) and s["host"], field + "_host",
            "is required: it is the Route's host and the OAuth redirect URI",
            "Set it to the host users open, e.g. kubeflow.apps.<cluster domain>")
    dns_subdomain(s["host"], field + "_host")
    dns_label(s["name"], field + "_name")
    dns_subdomain(s["secret_name"], field + "_secret_name")
    dns_subdomain(s["client_id"], field + "_client_id")
    if s["namespace"]:
        dns_label(s["namespace"], field + "_namespace")
    for key in ("resource", "verb"):
        require(isinstance(s["sar"].get(key), str) and s["sar"][key], "%s_sar.%s" % (field, key), "is required",
                "Give the resource and verb a user must be allowed, e.g. access kubeflow.kfocp.io")
    for key in ("namespace", "group", "name"):
        require(isinstance(s["sar"].get(key), str), "%s_sar.%s" % (field, key), "must be a string",
                "Give it, or leave it empty")
    require(isinstance(s["users_groups"], list) and all(isinstance(g, str) and g for g in s["users_groups"]),
            field + "_users_groups", "must be a list of group names",
            "Give e.g. [system:authenticated:oauth] or [kubeflow-users]; [] grants the access review to nobody")
    require(isinstance(s["gateway_policy"], bool), field + "_gateway_policy", "must be true or false",
            "Leave it true unless another NetworkPolicy guards the gateway")
    require(isinstance(s["replicas"], int) and s["replicas"] >= 1, field + "_replicas",
            "%r is not a replica count" % (s["replicas"],), "Use 1 or more")
    require(isinstance(s["extra_args"], list) and all(isinstance(a, str) and a.startswith("--")
                                                      for a in s["extra_args"]),
            field + "_extra_args", "must be a list of --flag=value strings", "Give oauth-proxy flags, e.g. --cookie-expire=8h")
    for arg in s["extra_args"]:
        flag = arg.split("=", 1)[0]
        require(flag != DELEGATE_FLAG, field + "_extra_args",
                "%s would let bearer tokens in, authorised by its own access record rather than auth_sar" % flag,
                "Leave it out: users log in through the browser; programs use the components' Services in the "
                "cluster with a ServiceAccount token (roles/auth/README.md, API clients)")
        require(flag != PREFIX_FLAG, field + "_extra_args",
                "%s would move oauth-proxy's own paths away from %s: its probes (%s/healthz), the OAuth callback "
                "(%s/callback) and the dashboard's logout (%s/sign_out) name them" % ((flag,) + (PROXY_PREFIX,) * 4),
                "Leave it out: kfocp serves Kubeflow at the root of auth_host, with oauth-proxy's paths under %s"
                % PROXY_PREFIX)
        require(flag not in IDENTITY_FLAGS, field + "_extra_args",
                "%s would let a request reach the gateway with identity headers the client chose" % flag,
                "Leave it out: the gateway trusts x-forwarded-user and x-forwarded-email, which oauth-proxy "
                "sets only on the requests it authenticated with OpenShift")
    return s


def _gateway(gateway, field="auth_gateway"):
    require(isinstance(gateway, dict) and gateway, field, "is not known",
            "Run the service_mesh role earlier in the play (it sets service_mesh_gateway_info), or give "
            "{namespace, service, http_port, selector, api_versions}")
    for key in ("namespace", "service", "selector", "api_versions"):
        require(gateway.get(key), "%s.%s" % (field, key), "is required",
                "Give it, or run the service_mesh role earlier in the play")
    require(gateway["api_versions"].get("EnvoyFilter"), field + ".api_versions.EnvoyFilter", "is required",
            "Use the mesh builder's istio_api_versions(flavour)")
    return gateway


def check(settings, gateway):
    """The settings with defaults filled in, and the gateway, checked before anything is read or written."""
    s = normalise(settings)
    _gateway(gateway)
    require(not (s["gateway_policy"] and gateway.get("mesh_network_policies")), "auth_gateway_policy",
            "cannot guard the gateway: the mesh operator's own NetworkPolicies "
            "(service_mesh_ossm2.manage_network_policy: true) admit every pod to it, and NetworkPolicies add up",
            "Set service_mesh_ossm2.manage_network_policy: false (the default), or auth_gateway_policy: false "
            "and keep pods other than oauth-proxy off the gateway your own way")
    return s


def _padded(secret):
    """oauth-proxy's addPadding: '=' up to a multiple of 4 characters (three when one is missing over)."""
    return secret + {1: "===", 2: "==", 3: "="}.get(len(secret) % 4, "")


def cookie_secret_bytes(secret):
    """The AES key oauth-proxy makes of its cookie secret (options.go, secretBytes): the secret
    decoded as URL-safe base64 and padded like the secret, or the secret itself when it does not
    decode. Go's decoder skips carriage returns and newlines; '+' and '/' are not in its alphabet."""
    if "+" in secret or "/" in secret:
        return secret.encode("utf-8")
    try:
        decoded = base64.b64decode(_padded(secret).replace("\r", "").replace("\n", ""), altchars=b"-_",
                                   validate=True)
    except (ValueError, TypeError):
        return secret.encode("utf-8")
    return _padded(decoded.decode("latin-1")).encode("latin-1")


def _flag(args, name):
    """The value of the last --name[=value] in `args` ('true' for a bare flag), or None."""
    value = None
    for arg in args:
        flag, sep, given = arg.partition("=")
        if flag == name:
            value = given if sep else "true"
    return value


def cookie_cipher(args):
    """Whether oauth-proxy makes an AES cipher of the cookie secret: with --pass-access-token, or a
    --cookie-refresh other than 0 (options.go, Validate; oauthproxy.go, NewOAuthProxy)."""
    refresh = _flag(args, "--cookie-refresh")
    return (_flag(args, "--pass-access-token") or "false").lower() in ("true", "1", "t") or \
        bool(refresh and refresh.strip("0.nsuµmh"))


def _secrets(secrets, extra_args=()):
    require(isinstance(secrets, dict), "secrets", "must be a mapping", "Give client_secret and cookie_secret")
    for key in SECRET_KEYS:
        require(isinstance(secrets.get(key), str) and len(secrets.get(key) or "") >= 16, "secrets.%s" % key,
                "must be a string of at least 16 characters", "Generate it (the role does)")
    if cookie_cipher(extra_args):
        size = len(cookie_secret_bytes(secrets["cookie_secret"]))
        require(size in (16, 24, 32), "secrets.cookie_secret",
                "makes a key of %d bytes; with --pass-access-token or --cookie-refresh in auth_extra_args, "
                "oauth-proxy needs 16, 24 or 32 (it base64-decodes the secret)" % size,
                "Delete the Secret auth_secret_name so that the role generates a new one (32 characters, a "
                "24-byte key), or give a secret that base64-decodes to 16, 24 or 32 bytes")
    return secrets


def sar_attributes(settings, proxy_namespace):
    """The access review a user must pass ({namespace, group, resource, name, verb}; an empty
    namespace is the proxy's)."""
    s = normalise(settings)
    attributes = dict((key, value) for key, value in s["sar"].items() if value)
    attributes["namespace"] = s["sar"]["namespace"] or proxy_namespace
    return attributes


def sar(settings, proxy_namespace="kubeflow"):
    """The --openshift-sar value: the access review a user must pass, in the keys of OpenShift's
    SubjectAccessReview (resourceAPIGroup, resourceName)."""
    action = dict((OPENSHIFT_SAR_KEYS[key], value) for key, value in sar_attributes(settings, proxy_namespace).items())
    return json.dumps(action, sort_keys=True, separators=(",", ":"))


def access_grant(settings, proxy_namespace):
    """The Role that allows exactly the access review, and its RoleBinding to the users groups
    (nothing when no group is given: then the cluster admin grants it)."""
    s = normalise(settings)
    if not s["users_groups"]:
        return []
    attributes = sar_attributes(s, proxy_namespace)
    rule = {"apiGroups": [attributes.get("group", "")], "resources": [attributes["resource"]],
            "verbs": [attributes["verb"]]}
    if attributes.get("name"):
        rule["resourceNames"] = [attributes["name"]]
    name = s["name"] + "-users"
    meta = {"name": name, "namespace": attributes["namespace"]}
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": dict(meta), "rules": [rule]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}
                          for group in s["users_groups"]]}]


def gateway_network_policy(settings, gateway, proxy_namespace):
    """The NetworkPolicy that admits only the proxy's pods to the gateway's pods: the gateway
    trusts x-forwarded-user and x-forwarded-email, so no other pod may reach it."""
    s = normalise(settings)
    peer = {"podSelector": {"matchLabels": {"app": s["name"]}}}
    if proxy_namespace != gateway["namespace"]:
        peer["namespaceSelector"] = {"matchLabels": {"kubernetes.io/metadata.name": proxy_namespace}}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": s["name"] + "-only", "namespace": gateway["namespace"]},
            "spec": {"podSelector": {"matchLabels": dict(gateway["selector"])}, "policyTypes": ["Ingress"],
                     "ingress": [{"from": [peer]}]}}


def proxy_args(settings, gateway):
    """oauth-proxy's arguments: provider openshift, upstream the gateway's HTTP port, the SAR."""
    s = normalise(settings)
    proxy_namespace = s["namespace"] or gateway["namespace"]
    upstream = "http://%s.%s.svc.cluster.local:%d" % (gateway["service"], gateway["namespace"],
                                                      int(gateway.get("http_port", 80)))
    return ["--provider=openshift",
            "--https-address=:%d" % HTTPS_PORT,
            "--http-address=",
            "--upstream=%s" % upstream,
            "--client-id=%s" % s["client_id"],
            "--client-secret-file=/etc/oauth/client/client_secret",
            "--cookie-secret-file=/etc/oauth/client/cookie_secret",
            "--redirect-url=https://%s%s/callback" % (s["host"], PROXY_PREFIX),
            "--tls-cert=/etc/tls/private/tls.crt",
            "--tls-key=/etc/tls/private/tls.key",
            "--openshift-sar=%s" % sar(s, proxy_namespace),
            "--pass-user-headers=true",
            "--skip-provider-button=true",
            "--scope=user:info user:check-access"] + list(s["extra_args"])


def userid_filter(gateway, lua_source, name="kfocp-kubeflow-userid"):
    """The EnvoyFilter that makes the gateway set kubeflow-userid from oauth-proxy's identity headers only."""
    require(isinstance(lua_source, str) and "envoy_on_request" in lua_source, "lua_source",
            "must be Lua code with an envoy_on_request function", "Load roles/auth/files/userid.lua")
    api = gateway["api_versions"]["EnvoyFilter"]
    return {"apiVersion": api, "kind": "EnvoyFilter",
            "metadata": {"name": name, "namespace": gateway["namespace"]},
            "spec": {"workloadSelector": {"labels": dict(gateway["selector"])},
                     "configPatches": [{
                         "applyTo": "HTTP_FILTER",
                         "match": {"context": "GATEWAY",
                                   "listener": {"filterChain": {"filter": {
                                       "name": "envoy.filters.network.http_connection_manager",
                                       "subFilter": {"name": "envoy.filters.http.router"}}}}},
                         "patch": {"operation": "INSERT_BEFORE",
                                   "value": {"name": "kfocp.kubeflow_userid",
                                             "typed_config": {
                                                 "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
                                                 "inlineCode": lua_source}}}}]}}


def objects(settings, gateway, secrets, lua_source):
    """The role's whole desired state. `gateway` is mesh.gateway_info(); `secrets` holds the
    OAuth client secret and the cookie secret (generated once, read back on later runs)."""
    s = normalise(settings)
    gateway = _gateway(gateway)
    secrets = _secrets(secrets, s["extra_args"])
    ns = s["namespace"] or gateway["namespace"]
    name = s["name"]
    labels = {"app": name}
    objs = []
    if ns != gateway["namespace"]:
        objs.append(namespace(ns))
    data = dict((key, base64.b64encode(secrets[key].encode("utf-8")).decode("ascii")) for key in SECRET_KEYS)
    objs.append({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                 "metadata": {"name": s["secret_name"], "namespace": ns}, "data": data})
    objs.append({"apiVersion": "oauth.openshift.io/v1", "kind": "OAuthClient", "metadata": {"name": s["client_id"]},
                 "secret": secrets["client_secret"], "grantMethod": "auto",
                 "redirectURIs": ["https://%s" % s["host"]]})
    objs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})
    container = {
        "name": "oauth-proxy", "image": s["image"], "args": proxy_args(s, gateway),
        "ports": [{"name": "https", "containerPort": HTTPS_PORT, "protocol": "TCP"}],
        "readinessProbe": {"httpGet": {"path": PROXY_PREFIX + "/healthz", "port": HTTPS_PORT, "scheme": "HTTPS"}},
        "livenessProbe": {"httpGet": {"path": PROXY_PREFIX + "/healthz", "port": HTTPS_PORT, "scheme": "HTTPS"}},
        "resources": {"requests": {"cpu": "10m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
        "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "oauth", "mountPath": "/etc/oauth/client", "readOnly": True},
                         {"name": "tls", "mountPath": "/etc/tls/private", "readOnly": True}]}
    objs.append({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"replicas": s["replicas"], "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels, "annotations": {"sidecar.istio.io/inject": "false"}},
                              "spec": {"serviceAccountName": name, "containers": [container],
                                       "volumes": [{"name": "oauth", "secret": {"secretName": s["secret_name"]}},
                                                   {"name": "tls", "secret": {"secretName": name + "-tls"}}]}}}})
    objs.append({"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": name, "namespace": ns, "labels": labels,
                              "annotations": {SERVING_CERT: name + "-tls"}},
                 "spec": {"selector": labels,
                          "ports": [{"name": "https", "port": 443, "targetPort": HTTPS_PORT, "protocol": "TCP"}]}})
    objs.append({"apiVersion": "route.openshift.io/v1", "kind": "Route",
                 "metadata": {"name": name, "namespace": ns},
                 "spec": {"host": s["host"], "to": {"kind": "Service", "name": name, "weight": 100},
                          "port": {"targetPort": "https"},
                          "tls": {"termination": "reencrypt", "insecureEdgeTerminationPolicy": "Redirect"}}})
    objs.append(userid_filter(gateway, lua_source))
    objs += access_grant(s, ns)
    if s["gateway_policy"]:
        objs.append(gateway_network_policy(s, gateway, ns))
    if ns != gateway["namespace"]:  # the namespace this role creates admits exactly its own pods
        level = pod_security.templates_level([(o["spec"]["template"]["spec"], o["spec"]["template"].get("metadata"))
                                              for o in objs if o["kind"] == "Deployment"], openshift=True)
        objs[0]["metadata"]["labels"] = dict(objs[0]["metadata"].get("labels") or {}, **pod_security.labels(level))
    return objs
