"""The glue between the builders and Ansible's filters (plugins/plugin_utils/filters.py), judged
through Ansible's own templating: the builders get plain data, not Ansible's lazy containers, whose
copy.deepcopy copies the templar and every variable of the play with it."""
import collections.abc
import copy
import sys

import pytest
from ansible.errors import AnsibleFilterError
from ansible.parsing.dataloader import DataLoader
from ansible import template as ansible_template
from ansible.template import Templar

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter

# ansible-core 2.19 renders only strings marked trusted; in 2.18 (the ansible-operator image's) every
# string is a template, and there is no trust_as_template.
trust_as_template = getattr(ansible_template, "trust_as_template", lambda value: value)


class Hosts(collections.abc.Mapping):
    """A mapping that is no dict, as Ansible's hostvars."""

    def __getitem__(self, key):
        return {"host": key}

    def __iter__(self):
        return iter(["c1"])

    def __len__(self):
        return 1


def copies(value):
    """How many objects copy.deepcopy visits to copy `value`, its recursive calls included."""
    calls = []
    code = copy.deepcopy.__code__

    def count(frame, event, _arg):
        if event == "call" and frame.f_code is code:
            calls.append(1)
    sys.setprofile(count)
    try:
        copy.deepcopy(value)
    finally:
        sys.setprofile(None)
    return len(calls)


def render(expression, filters, variables):
    templar = Templar(loader=DataLoader(), variables=variables)
    templar.environment.filters.update(filters)
    return templar.template(trust_as_template(expression))


VARIABLES = {
    "profiles_list": [{"name": "p%04d" % i, "owner": {"user": "u%04d" % i}} for i in range(2000)],
    "mesh_namespace": "istio-system",
    "settings": {"flavour": trust_as_template("{{ 'ossm3' }}"),
                 "namespace": trust_as_template("{{ mesh_namespace }}"),
                 "gateway": {"name": "kubeflow-ingressgateway", "namespace": trust_as_template("{{ mesh_namespace }}")}},
}


@pytest.mark.skipif(not hasattr(ansible_template, "trust_as_template"),
                    reason="ansible-core 2.18 hands filters plain rendered dicts: no lazy containers")
def test_ansible_hands_filters_lazy_containers():
    """The control: without the glue a filter gets Ansible's lazy dict, and copying it copies the
    templar (and so the 2000 profiles of the play)."""
    seen = []
    render("{{ settings | probe }}", {"probe": lambda value: seen.append(value) or ""}, VARIABLES)
    assert isinstance(seen[0], dict) and type(seen[0]).__name__ != "dict"
    assert copies(seen[0]) > 4000, "a copy of the lazy dict copies every profile of the play"


def test_builders_get_plain_rendered_data():
    seen = []
    render("{{ settings | probe }}", {"probe": as_filter(lambda value: seen.append(value) or "")}, VARIABLES)
    value = seen[0]
    assert {type(value), type(value["gateway"])} == {dict}, "exactly dict, not a subclass of it"
    assert value == {"flavour": "ossm3", "namespace": "istio-system",
                     "gateway": {"name": "kubeflow-ingressgateway", "namespace": "istio-system"}}
    assert copies(value) < 20, "a copy of the settings copies the settings alone"


def test_a_builder_through_the_glue_gives_what_it_gives_on_plain_data():
    out = render("{{ settings | gateway_info }}", {"gateway_info": as_filter(mesh.gateway_info)}, VARIABLES)
    plain = {"flavour": "ossm3", "namespace": "istio-system",
             "gateway": {"name": "kubeflow-ingressgateway", "namespace": "istio-system"}}
    assert out == mesh.gateway_info(plain)


def test_other_mappings_and_keywords_are_left_alone():
    seen = []
    hosts = Hosts()
    as_filter(lambda value, other=None: seen.append((value, other)))(hosts, other=hosts)
    assert seen == [(hosts, hosts)]


def test_a_definition_error_becomes_a_filter_error_with_its_message():
    def wrong(_value):
        raise DefinitionError("service_mesh_flavour: 'x' is not a mesh flavour")
    with pytest.raises(AnsibleFilterError, match="service_mesh_flavour: 'x' is not a mesh flavour"):
        as_filter(wrong)({})


# Filters that must see their arguments as they came: spec_variables hands a Kubeflow resource's
# values to the roles still marked unsafe by ansible-operator (markUnsafe), which a plain copy drops.
UNWRAPPED = {"spec_variables"}


def test_every_filter_of_the_collection_goes_through_the_glue():
    import importlib
    from pathlib import Path
    names, filters = [], Path(__file__).resolve().parents[2] / "plugins" / "filter"
    for path in sorted(filters.glob("*.py")):
        module = importlib.import_module("ansible_collections.kfocp.kubeflow.plugins.filter." + path.stem)
        for name, func in module.FilterModule().filters().items():
            names.append(name)
            wrapped = getattr(func, "__wrapped__", None) is not None
            assert wrapped != (name in UNWRAPPED), "%s (%s): wrapped by as_filter is %s" % (name, path.name, wrapped)
    assert len(names) == len(list(filters.glob("*.yml")))
