"""Every option kfocp's playbooks pass to awx.awx and kubernetes.core modules is one the installed
collection documents, as ansible-doc (the real tool, with the collections requirements.txt
installs) reports it, aliases included. A misspelt option fails these modules only when they
run, which for awx/configure.yml is against a live AWX."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "awx" / "configure.yml"] + sorted((ROOT / "molecule").glob("*/*.yml")) + \
    sorted((ROOT / "playbooks").glob("*.yml")) + sorted((ROOT / "roles").glob("*/tasks/*.yml"))
PREFIXES = ("awx.awx.", "kubernetes.core.")


def _tasks(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            yield from _tasks(item.get(key))


def uses():
    """{module: {option: 'file'}} of every call, and of every module_defaults group entry."""
    found = {}
    for path in FILES:
        for task in _tasks(yaml.safe_load(path.read_text())):
            for key, args in task.items():
                if key.startswith(PREFIXES) and isinstance(args, dict):
                    for option in args:
                        found.setdefault(key, {})[option] = path.relative_to(ROOT).as_posix()
            for group, args in (task.get("module_defaults") or {}).items():
                if group == "group/kubernetes.core.k8s":
                    for option in args or {}:
                        found.setdefault("kubernetes.core.k8s_info", {})[option] = path.relative_to(ROOT).as_posix()
    return found


USES = uses()


@pytest.fixture(scope="module")
def documented():
    doc = Path(sys.executable).parent / "ansible-doc"
    proc = subprocess.run([str(doc), "-j", *sorted(USES)], capture_output=True, text=True, check=True, timeout=300)
    out = {}
    for name, data in json.loads(proc.stdout).items():
        options = (data.get("doc") or {}).get("options") or {}
        out[name] = set(options) | set(alias for o in options.values() for alias in o.get("aliases") or [])
    return out


def test_the_playbooks_call_these_modules():
    assert {"awx.awx.credential_type", "awx.awx.job_template", "kubernetes.core.k8s_info"} <= set(USES)


@pytest.mark.parametrize("module", sorted(USES))
def test_every_option_passed_is_documented_by_the_installed_collection(module, documented):
    unknown = dict((option, where) for option, where in USES[module].items() if option not in documented[module])
    assert not unknown, "%s has no option %s" % (module, unknown)
