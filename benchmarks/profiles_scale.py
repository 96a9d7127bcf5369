"""Case 4b alone (kfocp's roles, playbooks/profiles.yml) at several sizes: a shortcut to
benchmarks/run.py, which measures it beside the other methods.

    python benchmarks/profiles_scale.py [--sizes 100,500,2000]
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run.main(["--methods", "kfocp-roles", "--no-operator", "--no-clusters"] + sys.argv[1:]))
