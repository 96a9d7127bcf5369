# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Option specs shared by the modules; documented in doc_fragments/auth.py, group_defaults.py and apply.py."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

AUTH_ARGS = {
    "kubeconfig": {"type": "raw"},
    "context": {"type": "str"},
    "host": {"type": "str"},
    "api_key": {"type": "str", "no_log": True},
    "ca_cert": {"type": "path", "aliases": ["ssl_ca_cert"]},
    "client_cert": {"type": "path", "aliases": ["cert_file"]},
    "client_key": {"type": "path", "aliases": ["key_file"], "no_log": False},
    "validate_certs": {"type": "bool", "aliases": ["verify_ssl"]},
    "proxy": {"type": "str"},
}

# What the kfocp group's module_defaults pass that a module which applies nothing (cr_status, info)
# accepts and does not use; the modules that apply take the same two (ENGINE_ARGS, SET_ARGS).
GROUP_DEFAULTS_ARGS = {
    "instance": {"type": "str", "default": "kfocp"},
    "report": {"type": "str", "choices": ["changed", "all"], "default": "changed"},
}

ENGINE_ARGS = {
    "instance": GROUP_DEFAULTS_ARGS["instance"],
    "set": {"type": "str"},
    "field_manager": {"type": "str", "default": "kfocp"},
    "force": {"type": "bool", "default": False},
    "adopt": {"type": "bool", "default": False},
    "concurrency": {"type": "int", "default": 32},
    "wait_timeout": {"type": "int", "default": 120},
}

# What the modules that apply a set of objects (apply, tenancy) also take; each documents them.
SET_ARGS = {
    "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
    "prune": {"type": "bool", "default": False},
    "report": GROUP_DEFAULTS_ARGS["report"],
    "prune_max_share": {"type": "float"},
}

# Where a manifests tree comes from and how it is rendered (manifests_build, manifests_apply)
RENDER_ARGS = {
    "source": {"type": "str", "choices": ["git", "dir", "tarball"], "default": "dir"},
    "git_url": {"type": "str"},
    "git_ref": {"type": "str", "default": "HEAD"},
    "dir": {"type": "path"},
    "tarball": {"type": "path"},
    "subdir": {"type": "str"},
    "kubectl": {"type": "path"},
    "timeout": {"type": "int", "default": 600},
    "remote_bases": {"type": "dict", "default": {}},
}


def argspec(*specs):
    merged = {}
    for spec in specs:
        merged.update(copy.deepcopy(spec))
    return merged


def auth_params(params):
    return dict((key, params.get(key)) for key in AUTH_ARGS)
