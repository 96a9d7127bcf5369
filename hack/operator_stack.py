"""The second test stack: the Python stack of the quay.io/operator-framework/ansible-operator image
(Python 3.12 and every package of its Pipfile.lock, operator/hack/ansible-operator/requirements.txt)
with the collections kfocp's image installs on it (awx/ee-collections.yml), in a venv of its own.

    python hack/operator_stack.py build --venv .venv-operator

The image's Dockerfile (operator/Dockerfile.ansible-operator) takes the collections from Galaxy,
which is not reachable here: the same versions are taken from the `ansible` bundle's wheel on PyPI
(the bundle that requirements.txt pins holds exactly those versions), and only those collections are
unpacked into the venv's site-packages, where ansible-core finds them as it finds the bundle's.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "operator" / "hack" / "ansible-operator" / "requirements.txt"
COLLECTIONS = ROOT / "awx" / "ee-collections.yml"
VERSION = (3, 12)


def bundle_pin():
    """The `ansible` bundle requirements.txt pins: its wheel holds the collections at the versions
    awx/ee-collections.yml names (checked when they are unpacked)."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.startswith("ansible=="):
            return line.strip()
    raise SystemExit("requirements.txt pins no `ansible` bundle")


def find_python(given=None):
    """A Python 3.12 that runs: `given`, python3.12 on PATH, or one of pyenv's (whose shim on PATH
    may refuse to run when 3.12 is not pyenv's selected version)."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [given] if given else [shutil.which("python3.12"), "/usr/bin/python3.12",
                                        "/usr/local/bin/python3.12"] + \
        sorted(glob.glob(os.path.join(root, "versions", "3.12*", "bin", "python3.12")), reverse=True)
    for candidate in filter(None, candidates):
        try:
            out = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=60, check=False)
        except OSError:
            continue
        if out.returncode == 0 and out.stdout.strip() == "%d.%d" % VERSION:
            return candidate
    raise SystemExit("the ansible-operator image's stack needs Python 3.12 (its Pipfile.lock); none runs here "
                     "(tried %s): install one, or give it with OPERATOR_PYTHON=/path/to/python3.12"
                     % ", ".join(filter(None, candidates)))


def unpack_collections(wheel, site_packages):
    """Unpack from the bundle's wheel the collections awx/ee-collections.yml lists, and only them;
    each one's MANIFEST.json must give the pinned version."""
    wanted = {c["name"]: str(c["version"]) for c in yaml.safe_load(COLLECTIONS.read_text())["collections"]}
    target = Path(site_packages) / "ansible_collections"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        for name, version in sorted(wanted.items()):
            prefix = "ansible_collections/%s/" % name.replace(".", "/")
            manifest = json.loads(archive.read(prefix + "MANIFEST.json"))["collection_info"]
            if manifest["version"] != version:
                raise SystemExit("%s: %s holds %s %s, awx/ee-collections.yml pins %s"
                                 % (COLLECTIONS.name, os.path.basename(wheel), name, manifest["version"], version))
            shutil.rmtree(target / name.replace(".", "/"), ignore_errors=True)
            archive.extractall(site_packages, [n for n in names if n.startswith(prefix)])
    return wanted


def build(venv, python):
    venv = Path(venv)
    python = find_python(python)
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["install", "--no-compile", "-r", str(REQUIREMENTS)], check=True)
    site_packages = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                   capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(pip + ["download", "--no-deps", "-d", tmp, bundle_pin()], check=True)
        (wheel,) = glob.glob(os.path.join(tmp, "ansible-*.whl"))
        wanted = unpack_collections(wheel, site_packages)
    print("%s: Python %s, %s; collections %s" % (
        venv, subprocess.run([str(venv / "bin" / "python"), "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip(),
        ", ".join(line for line in REQUIREMENTS.read_text().splitlines()
                  if line.startswith(("ansible-core==", "ansible-runner==", "kubernetes=="))),
        ", ".join("%s %s" % item for item in sorted(wanted.items()))))
    (venv / ".installed").touch()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="make the venv (removed first when it exists)")
    b.add_argument("--venv", default=str(ROOT / ".venv-operator"))
    b.add_argument("--python", default=os.environ.get("OPERATOR_PYTHON") or None)
    args = parser.parse_args(argv)
    if args.command == "build":
        build(args.venv, args.python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
