"""The gateway's Lua filter, run in a real Lua runtime (lupa) against a request-handle double."""
from pathlib import Path

import pytest

import standins

lupa = pytest.importorskip("lupa")

SOURCE = (Path(__file__).resolve().parents[2] / "roles" / "auth" / "files" / "userid.lua").read_text()


class Headers:
    """Envoy's header map as the Lua filter sees it (envoyproxy/envoy 040783c8,
    source/extensions/filters/http/lua/wrappers.cc): get, add, replace, remove, each on the name
    lower-cased; get returns every value of the header joined with "," (getAllOfHeaderAsString),
    remove removes every value."""

    def __init__(self, values):
        self.values = [(k.lower(), v) for k, v in values.items()]

    def get(self, _self, name):
        found = [value for key, value in self.values if key == name.lower()]
        return ",".join(found) if found else None

    def add(self, _self, name, value):
        self.values.append((name.lower(), value))

    def replace(self, _self, name, value):
        self.remove(_self, name)
        self.add(_self, name, value)

    def remove(self, _self, name):
        self.values = [(k, v) for k, v in self.values if k != name.lower()]

    def all(self, name):
        return [v for k, v in self.values if k == name.lower()]


def run(request_headers):
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(SOURCE)
    headers = Headers(request_headers)
    lua_headers = runtime.table_from({"get": headers.get, "add": headers.add, "replace": headers.replace,
                                      "remove": headers.remove})
    handle = runtime.table_from({"headers": lambda _self: lua_headers})
    runtime.globals().envoy_on_request(handle)
    return headers


# OpenShift user names, as profiles are owned by them; each pair must reach Kubeflow as itself
NAMES = ["alice", "alice@a.com", "alice@b.com", "alice@a.com@b.com", "bob@cluster.local", "carol@cluster.local.example"]


def userid(name, client=None):
    """The kubeflow-userid the gateway sets for `name`'s browser session through oauth-proxy."""
    values = run(standins.oauth_proxy_upstream_headers(client or {}, name)).all("kubeflow-userid")
    assert len(values) <= 1, values
    return values[0] if values else None


# oauth-proxy authenticates browser sessions only (kfocp gives it no --openshift-delegate-urls, so
# it authenticates no bearer token: tests/unit/test_auth_builder.py)
@pytest.mark.parametrize("name", [n for n in NAMES if not n.endswith("@cluster.local")])
def test_the_identity_is_the_openshift_user_name(name):
    assert userid(name) == name


def test_names_that_share_the_part_before_the_at_stay_apart():
    seen = [userid(name) for name in ("alice", "alice@a.com", "alice@b.com")]
    assert seen == ["alice", "alice@a.com", "alice@b.com"]


def test_a_name_ending_in_cluster_local_is_read_as_its_short_name_in_a_browser():
    # oauth-proxy sends the same two headers for the browser sessions of "bob" and of
    # "bob@cluster.local" (GetEmailAddress appends nothing to a name that holds "@"): the gateway
    # cannot tell them apart, and reads "bob" (roles/auth/README.md, "Identity").
    assert standins.oauth_proxy_headers("bob@cluster.local") == standins.oauth_proxy_headers("bob")
    assert userid("bob@cluster.local") == "bob"


@pytest.mark.parametrize("client", [
    {"kubeflow-userid": "admin"}, {"Kubeflow-UserID": "admin"},
    {"x-forwarded-user": "admin", "x-forwarded-email": "admin@cluster.local"},
    {"X-Forwarded-Email": "alice@evil.com", "KUBEFLOW-USERID": "alice@evil.com"},
])
def test_identity_headers_the_client_sent_never_survive(client):
    assert userid("alice", client=client) == "alice"
    assert userid("alice@a.com", client=client) == "alice@a.com"


def test_a_spoofed_header_is_replaced_by_the_proxy_identity():
    headers = run({"kubeflow-userid": "admin@example.com", "x-forwarded-user": "alice",
                   "x-forwarded-email": "alice@cluster.local"})
    assert headers.all("kubeflow-userid") == ["alice"]


def test_a_spoofed_header_in_other_case_is_replaced_too():
    headers = run({"Kubeflow-UserID": "admin", "X-Forwarded-User": "bob", "X-Forwarded-Email": "bob@cluster.local"})
    assert headers.all("kubeflow-userid") == ["bob"]


@pytest.mark.parametrize("headers", [
    {"x-forwarded-user": "alice"},  # no e-mail: not what the proxy sends with the openshift provider
    {"x-forwarded-email": "alice@cluster.local"},
    {"x-forwarded-user": "alice", "x-forwarded-email": "mallory@example.com"},
    {"x-forwarded-user": "alice@a.com", "x-forwarded-email": "alice@a.com"},
    {"x-forwarded-user": "alice", "x-forwarded-email": "alicex@cluster.local"},
])
def test_a_pair_the_proxy_never_sends_gives_no_userid(headers):
    assert run(dict(headers, **{"kubeflow-userid": "admin"})).all("kubeflow-userid") == []


def test_no_forwarded_user_leaves_no_userid():
    headers = run({"kubeflow-userid": "admin@example.com"})
    assert headers.all("kubeflow-userid") == []


def test_an_empty_forwarded_user_leaves_no_userid():
    headers = run({"kubeflow-userid": "admin", "x-forwarded-user": ""})
    assert headers.all("kubeflow-userid") == []


def test_other_headers_are_kept():
    headers = run({"x-forwarded-user": "alice", "x-forwarded-email": "alice@cluster.local", "cookie": "a=b"})
    assert headers.all("cookie") == ["a=b"] and headers.all("kubeflow-userid") == ["alice"]
