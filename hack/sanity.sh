#!/usr/bin/env bash
# ansible-test sanity needs the collection at ansible_collections/kfocp/kubeflow: copy the
# tracked files there and run it with the venv's Python.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# ansible-test downloads a pip bootstrap script from a host outside the package registries;
# give it the local one instead, under the name it looks for.
pip_version=$(python - <<'PY'
import inspect, re
from ansible_test._internal import python_requirements as r
print(re.search(r"pip='([0-9.]+)'", inspect.getsource(r.get_venv_packages)).group(1))
PY
)
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
mkdir -p "$(dirname "$cache")" && cp "$root/hack/get_pip.py" "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dest="$work/ansible_collections/kfocp/kubeflow"
mkdir -p "$dest"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$dest")
cd "$dest"
git init -q && git add -A >/dev/null
python_version=$(python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ansible-test sanity --python "$python_version" --color no \
  "$@"
