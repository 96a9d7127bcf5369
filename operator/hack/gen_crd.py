"""Generate the Kubeflow CRD from the roles' argument specs.

    python operator/hack/gen_crd.py            # write operator/config/crd/bases/kfocp.io_kubeflows.yaml
    python operator/hack/gen_crd.py --check    # exit 1 when the committed file is out of date
"""
import argparse
import sys
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[1]
ROOT = OPERATOR.parent
TARGET = OPERATOR / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
sys.path.insert(0, str(OPERATOR))

from kfocp_operator.spec import SpecModel, render  # noqa: E402


def generate(root=ROOT):
    model = SpecModel.from_collection(root)
    for warning in model.warnings:
        print("warning: %s" % warning, file=sys.stderr)
    return render(model)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare with the committed file; change nothing")
    parser.add_argument("--roles-from", type=Path, default=ROOT, help="read the roles of this checkout (default: this one)")
    args = parser.parse_args(argv)
    text = generate(args.roles_from)
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print("%s is out of date: run `make operator-crd`" % TARGET.relative_to(ROOT), file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    print(TARGET.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
