"""How the harness starts a Python helper process: one environment, one way to start it, one way to
read a one-shot helper's reply.

The controller side never imports torch, so whatever needs it runs in a process of its own: the case
workers (harness.controller.worker_start), the check of the backend classes
(harness.controller.backend_probe), the isolation's reference process (harness.isolate.engine), the
families' listers and checkers (harness.families.manifest_cache and the families' own). Each starts
here, with `helper_env`'s environment: this process's, what the caller adds (a family's variables,
a thread count), and PYTHONPATH with the rootdir first, so that the project's own backend classes
and case modules import there as here. The workers' fork server (harness.controller.forks) keeps
its own way of starting, with its socket, but starts with the workers' environment, made here too.

A one-shot helper runs to its end: `ask_helper` sends it a JSON request on stdin and reads its one
reply, the last line of its stdout, as JSON; `run_helper` runs one whose work is the files it
writes. Either way a timeout, or a helper that died before it was done, is one HarnessInputError
line whose problem names what the helper was doing and the last line of its stderr (a Python
traceback's last line is the exception).

It sits below both the families and the controller (pyproject.toml's layers), which both start
helpers, and imports nothing but the shared vocabulary.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from harness.errors import HarnessInputError


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """The Python a helper runs: this one, or another environment's (a bisection's probe: a venv
    with another version of a package, or a source build first on the path)."""

    python: str = sys.executable
    path_first: tuple[str, ...] = ()   # before the rootdir on PYTHONPATH


THIS_PYTHON = Interpreter()


def helper_env(rootdir: Path, extra: Mapping[str, str] | None = None,
               interpreter: Interpreter = THIS_PYTHON) -> dict[str, str]:
    """This process's environment with `extra`, and on PYTHONPATH the interpreter's own folders, the
    rootdir, then the PYTHONPATH the harness was started with (a source build of torch-mlir, say)."""
    path = [*interpreter.path_first, str(rootdir), os.environ.get("PYTHONPATH")]
    return {**os.environ, **(extra or {}), "PYTHONPATH": os.pathsep.join(filter(None, path))}


def start_helper(module: str, args: Sequence[str] = (), *, rootdir: Path, env: Mapping[str, str] | None = None,
                 interpreter: Interpreter = THIS_PYTHON, cwd: Path | None = None,
                 text: bool = False) -> subprocess.Popen:
    """`python -m MODULE ARGS` with helper_env(rootdir, env), stdin, stdout and stderr piped, running
    in `cwd` (default: the rootdir, where the project's relative paths resolve as they do for pytest).
    It gets a session of its own: Ctrl-C reaches the controller only, which stops its helpers."""
    return subprocess.Popen([interpreter.python, "-m", module, *args], cwd=cwd or rootdir,
                            env=helper_env(rootdir, env, interpreter), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=text, start_new_session=True)


def ask_helper(module: str, request: Any, *, rootdir: Path, what: str, where: str, timeout: float,
               timeout_fix: str = "", env: Mapping[str, str] | None = None, cwd: Path | None = None) -> dict:
    """A one-shot helper's reply to `request` (sent as JSON on its stdin): the last line of its
    stdout, as JSON. A reply once written is complete, whatever the helper's exit status (a crash
    while torch shuts down loses nothing); a helper that wrote none failed."""
    out, err, status = _finish(module, [], json.dumps(request), rootdir=rootdir, what=what, where=where,
                               timeout=timeout, timeout_fix=timeout_fix, env=env, cwd=cwd)
    replies = out.strip().splitlines()
    if not replies:
        raise _failure(what, where, err, status)
    return json.loads(replies[-1])


def run_helper(module: str, args: Sequence[str], *, rootdir: Path, what: str, where: str, timeout: float,
               env: Mapping[str, str] | None = None, cwd: Path | None = None) -> None:
    """Run a one-shot helper whose work is the files it writes (a family's lister): done when it
    exits with status 0."""
    _, err, status = _finish(module, args, None, rootdir=rootdir, what=what, where=where, timeout=timeout,
                             timeout_fix="", env=env, cwd=cwd)
    if status != 0:
        raise _failure(what, where, err, status)


def _finish(module: str, args: Sequence[str], request: str | None, *, rootdir: Path, what: str, where: str,
            timeout: float, timeout_fix: str, env: Mapping[str, str] | None,
            cwd: Path | None) -> tuple[str, str, int]:
    """Start the helper, give it the request (None: nothing, stdin closed) and wait for it: its
    stdout, stderr and exit status. Past the timeout, or when the controller is interrupted, it is
    killed: a helper is never left running."""
    proc = start_helper(module, args, rootdir=rootdir, env=env, cwd=cwd, text=True)
    try:
        out, err = proc.communicate(request, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HarnessInputError(where, f"{what} took over {timeout:g} s", timeout_fix) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return out, err, proc.returncode


def _failure(what: str, where: str, err: str, status: int) -> HarnessInputError:
    """The one line of a helper that died: its last line of stderr, else its exit status."""
    last = (err.strip().splitlines() or [f"exit status {status}"])[-1]
    return HarnessInputError(where, f"{what} failed: {last}")
