"""Local stand-in for the get-pip.py that ansible-test downloads: it installs the pip bundled
with Python (ensurepip), then runs `pip install` with the arguments ansible-test gives, from the
package index. No file is fetched from elsewhere."""
import subprocess
import sys

# ensurepip in a child process: in-process it points PIP_CONFIG_FILE at /dev/null for good.
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + args))
