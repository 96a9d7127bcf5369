"""The gateway's Lua filter, run in a real Lua runtime (lupa) against a request-handle double."""
from pathlib import Path

import pytest

lupa = pytest.importorskip("lupa")

SOURCE = (Path(__file__).resolve().parents[2] / "roles" / "auth" / "files" / "userid.lua").read_text()


class Headers:
    """Envoy's header map as the Lua filter sees it: get, add, replace, remove (names are case-insensitive)."""

    def __init__(self, values):
        self.values = [(k.lower(), v) for k, v in values.items()]

    def get(self, _self, name):
        for key, value in self.values:
            if key == name.lower():
                return value
        return None

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


def test_a_spoofed_header_is_replaced_by_the_proxy_identity():
    headers = run({"kubeflow-userid": "admin@example.com", "x-forwarded-user": "alice"})
    assert headers.all("kubeflow-userid") == ["alice"]


def test_a_spoofed_header_in_other_case_is_replaced_too():
    headers = run({"Kubeflow-UserID": "admin", "X-Forwarded-User": "bob"})
    assert headers.all("kubeflow-userid") == ["bob"]


def test_no_forwarded_user_leaves_no_userid():
    headers = run({"kubeflow-userid": "admin@example.com"})
    assert headers.all("kubeflow-userid") == []


def test_an_empty_forwarded_user_leaves_no_userid():
    headers = run({"kubeflow-userid": "admin", "x-forwarded-user": ""})
    assert headers.all("kubeflow-userid") == []


def test_other_headers_are_kept():
    headers = run({"x-forwarded-user": "alice", "cookie": "a=b"})
    assert headers.all("cookie") == ["a=b"] and headers.all("kubeflow-userid") == ["alice"]
