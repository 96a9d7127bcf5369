# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of every kfocp module: when the module would run on this machine, with the Python
that runs Ansible, it runs in a process forked from the task's worker, with the module already
imported, instead of a new interpreter that unpacks and compiles the module from its AnsiballZ
payload.

That interpreter spends about 0.4 s of CPU on each kfocp task before the module does anything:
ansible-core's module_utils and kfocp's are compiled from the source in the payload, each file
twice (zipimport compiles a module to find its file name, then again to run it). In the worker,
ansible-core's module_utils come from their bytecode cache, and kfocp's are compiled once.

The module's side of the contract is unchanged: AnsiballZ's own loader runs it (its arguments
where AnsibleModule reads them, the module as __main__, an exception it does not handle returned
as a failed result), in a process of its own with the task's environment and ansible-core's
module_utils set as in a module's process; its output is parsed by ansible-core's own
ActionBase._parse_returned_data, as the output of a module run over a connection is. Any other
case (another connection, become, async, another Python, an ansible-core before 2.19) runs the
module as ansible-core's `normal` action does."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import atexit
import gc
import importlib
import inspect
import json
import os
import pathlib
import signal
import sys
import tempfile
import traceback

from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash
from ansible.vars.clean import remove_internal_keys

try:  # ansible-core 2.19's module_utils: AnsiballZ's loader, and what differs between the controller
    # and a module's process
    from ansible.module_utils import _internal as module_internal
    from ansible.module_utils._internal import _traceback
    from ansible.module_utils._internal._ansiballz import _loader
    from ansible.module_utils.common.json import Direction, get_module_encoder
    FORKS = (hasattr(module_internal, "is_controller") and hasattr(_traceback, "_is_module_traceback_enabled")
             and {"json_params", "profile", "module_fqn", "modlib_path", "extensions"}
             <= set(inspect.signature(_loader.run_module).parameters))
except ImportError:  # ansible-core 2.18 (the ansible-operator image's) has no such loader: its AnsiballZ
    # wrapper sets basic._ANSIBLE_ARGS and calls runpy itself. Every module runs as ansible-core runs it.
    FORKS = False

COLLECTION = "kfocp.kubeflow."
MODULES = "ansible_collections.kfocp.kubeflow.plugins.modules."
# the directory that holds this collection's ansible_collections (AnsiballZ's zip, for a module)
MODLIB = str(pathlib.Path(os.path.abspath(__file__)).parents[5])
# The serialization profile of a module that declares none (kfocp's modules declare none).
PROFILE = "legacy"

display = Display()


def same_python(interpreter):
    """True when `interpreter` (the host's ansible_python_interpreter) is the Python running this."""
    if not interpreter or not isinstance(interpreter, str):
        return False
    return os.path.realpath(interpreter) == os.path.realpath(sys.executable)


class DirectAction(NormalAction):

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        if not self._runs_here(task_vars):
            return super(DirectAction, self).run(tmp, task_vars)
        result = super(NormalAction, self).run(tmp, task_vars)  # ActionBase's checks (check mode, async)
        args = self._task.args
        self._update_module_args(self._task.action, args, task_vars)
        environment = {}
        self._compute_environment_string(environment)
        display.vvv("Running %s in a process forked from the worker" % self._task.resolved_action,
                    host=self._play_context.remote_addr)
        module = MODULES + self._task.resolved_action[len(COLLECTION):]
        importlib.import_module(module)  # its module_utils are compiled once, here
        payload = json.dumps({"ANSIBLE_MODULE_ARGS": args},
                             cls=get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)).encode()
        data = self._parse_returned_data(run_forked(module, payload, environment), PROFILE)
        remove_internal_keys(data)
        for stream in ("stdout", "stderr"):
            if stream in data and stream + "_lines" not in data:
                data[stream + "_lines"] = (data.get(stream) or "").splitlines()
        return merge_hash(result, data)

    def _runs_here(self, task_vars):
        """The module would run on this machine, as this user, with this Python, and not async."""
        if not FORKS or self._task.async_val or self._play_context.become:
            return False
        if getattr(self._connection, "transport", None) != "local":
            return False
        if not (self._task.resolved_action or "").startswith(COLLECTION):
            return False
        interpreter = task_vars.get("ansible_python_interpreter")
        return same_python(self._templar.template(interpreter) if interpreter is not None else None)


def run_forked(module, payload, environment):
    """Run `module` (its Python name) in a child process, as AnsiballZ's loader runs it, with
    `payload` as its arguments and the task's `environment`; {rc, stdout, stderr} as a connection's
    exec_command gives them."""
    if not FORKS:
        raise RuntimeError("a module runs in a process forked from the worker only with ansible-core 2.19's "
                           "module loader (ansible.module_utils._internal._ansiballz); this ansible-core has none")
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as err:
        read_end, write_end = os.pipe()
        # the worker's objects are left out of the module's garbage collections, which would
        # otherwise walk them all (and copy every page they are on) as the module allocates
        gc.freeze()
        pid = os.fork()
        if pid == 0:  # the module's process: it never returns
            os._exit(_child(module, payload, environment, read_end, write_end, err.fileno()))  # pylint: disable=protected-access
        gc.unfreeze()
        os.close(write_end)
        with os.fdopen(read_end, "rb") as out:
            stdout = out.read()
        _pid, status = os.waitpid(pid, 0)
        err.seek(0)
        stderr = err.read()
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "stdout": stdout.decode("utf-8", "replace"), "stderr": stderr.decode("utf-8", "replace")}


def _child(module, payload, environment, read_end, write_end, err):
    """The module's process, from the fork to its exit code."""
    code = 1
    try:
        os.close(read_end)
        os.dup2(write_end, 1)
        os.dup2(err, 2)
        # the worker's sys.stdout need not write to its fd 1
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # pylint: disable=consider-using-with
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # pylint: disable=consider-using-with
        for signum in (signal.SIGINT, signal.SIGTERM):  # as a new interpreter has them
            signal.signal(signum, signal.SIG_DFL)
        atexit._clear()  # pylint: disable=protected-access  # the worker's are not the module's
        os.environ.update(dict((str(k), str(v)) for k, v in environment.items()))
        # module_utils as a module's process has them (the controller's Display takes its warnings
        # and decides on tracebacks there): warnings and deprecations go in the result
        module_internal.is_controller = False
        _traceback._is_traceback_enabled = _traceback._is_module_traceback_enabled  # pylint: disable=protected-access
        # as AnsiballZ runs it: its arguments where AnsibleModule reads them, the module run as
        # __main__, and an exception it does not handle returned as a failed result
        _loader.run_module(json_params=payload, profile=PROFILE, module_fqn=module, modlib_path=MODLIB, extensions={})
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()  # to stderr, as an interpreter prints what ends it
    finally:
        atexit._run_exitfuncs()  # pylint: disable=protected-access  # the module's cleanups
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # pylint: disable=broad-except
                pass
    return code
