"""The fleet recipe's steps (README, "A fleet with Argo CD"), shared by tests/integration/test_fleet.py
and benchmarks/fleet.py: an inventory of clusters, and playbooks/render.yml over it."""
import json
import subprocess
import sys
from pathlib import Path

import yaml

from helpers import ROOT, ansible_env

LOCAL_COMPONENTS = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "components.yml")
                                  .read_text())["components_components"]


def inventory(path, kubectl, servers, hostvars=None):
    """A fleet inventory at `path`: one host per cluster of `servers` ({host: its URL as Argo CD
    knows it, None for the cluster Argo CD runs in}), each with the local inventory's components
    from the fixture tree, rendered with `kubectl`, and the variables `hostvars` gives it."""
    hosts = {}
    for host, server in servers.items():
        hosts[host] = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                       "kfocp_instance": host, "components_source": "dir",
                       "components_dir": str(ROOT / "tests" / "fixtures" / "manifests"), "components_release": "v1.10.2",
                       "components_components": LOCAL_COMPONENTS, "components_kubectl": kubectl,
                       "components_no_log": False}
        if server:
            hosts[host]["kfocp_gitops_server"] = server
        hosts[host].update((hostvars or {}).get(host) or {})
    Path(path).write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    return Path(path)


def render(hosts, tree, repo_url, extra=None, forks=5):
    """playbooks/render.yml over the inventory `hosts` into the work tree `tree`; returns
    {host: changed count} from the PLAY RECAP. A failed run raises with its output."""
    extravars = dict({"kfocp_render_root": str(tree), "kfocp_gitops_repo_url": repo_url,
                      "kfocp_gitops_revision": "main"}, **(extra or {}))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(hosts), "-f", str(forks),
                           str(ROOT / "playbooks" / "render.yml"), "-e", json.dumps(extravars)],
                          env=ansible_env(None), capture_output=True, text=True, check=False, cwd=ROOT, timeout=900)
    if proc.returncode:
        raise RuntimeError("render.yml failed:\n" + proc.stdout[-4000:] + proc.stderr[-2000:])
    recap = proc.stdout.split("PLAY RECAP")[-1].splitlines()[1:]
    return dict((line.split()[0], int(line.split("changed=")[1].split()[0])) for line in recap if "changed=" in line)
