"""Every molecule scenario, run against the control plane of the test run."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, ansible_env

SCENARIOS = sorted(p.name for p in (ROOT / "molecule").iterdir() if (p / "molecule.yml").exists())


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario, control_plane):
    env = ansible_env(control_plane)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    proc = subprocess.run(["molecule", "test", "-s", scenario], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False, timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
