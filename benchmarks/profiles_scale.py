"""Converge and no-op times of playbooks/profiles.yml for N declared profiles.

    python benchmarks/profiles_scale.py [--sizes 100,500,2000] [--dir DIR]

For each size, on a fresh control plane: run 1 creates the Profiles; the profile controller's
objects are then written (tests/helpers.play_profile_controller: the controller is not built
here); run 2 applies the namespace policies and access; run 3 is the no-op re-run. Every
profile has one contributor. Prints one line per size and writes JSON to benchmarks/results/.
Not part of `make test`.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "hack"), str(ROOT / "tests")]

from cluster import ControlPlane  # noqa: E402
from helpers import ansible_env, play_profile_controller  # noqa: E402


def run(plane, extra_file):
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(ROOT / "inventories/local/hosts.yml"),
           str(ROOT / "playbooks/profiles.yml"), "-e", "@%s" % extra_file]
    start = time.monotonic()
    proc = subprocess.run(cmd, env=ansible_env(plane), capture_output=True, text=True, check=False, cwd=ROOT)
    took = time.monotonic() - start
    if proc.returncode:
        raise SystemExit("profiles.yml failed:\n" + proc.stdout[-3000:])
    changed = int(proc.stdout.rsplit("changed=", 1)[1].split()[0])
    return took, changed


def measure(size, directory):
    plane = ControlPlane(directory)
    plane.destroy()
    plane.up()
    try:
        extra = {"kfocp_instance": "bench",
                 "profiles_list": [{"name": "user-%05d" % i, "owner": {"user": "user-%05d@example.com" % i},
                                    "contributors": [{"user": "lead@example.com", "role": "view"}]} for i in range(size)]}
        extra_file = Path(directory) / "extra.json"
        extra_file.write_text(json.dumps(extra))
        profiles, unused = run(plane, extra_file)
        start = time.monotonic()
        play_profile_controller(plane)
        controller = time.monotonic() - start
        policies, changed = run(plane, extra_file)
        noop, noop_changed = run(plane, extra_file)
        return {"profiles": size, "create_profiles_s": round(profiles, 1), "controller_objects_s": round(controller, 1),
                "apply_policies_s": round(policies, 1), "noop_s": round(noop, 1), "noop_changed": noop_changed,
                "load_average": os.getloadavg()[0]}
    finally:
        plane.destroy()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,500,2000")
    parser.add_argument("--dir", default=None, help="control plane directory (default: a temporary one)")
    args = parser.parse_args()
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        directory = args.dir or tempfile.mkdtemp(prefix="kfocp-bench-profiles-")
        row = measure(size, directory)
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = ROOT / "benchmarks" / "results" / ("profiles-%s.json" % datetime.datetime.now().strftime("%Y%m%dT%H%M%S"))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2))
    print("written to %s" % out)


if __name__ == "__main__":
    main()
