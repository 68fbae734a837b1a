"""How a worker process starts: the environment it starts with, its share of the cores; forked by its
pool's fork server (harness.controller.forks), else a `python -m harness.worker` of its own, started
as every helper process is (harness.helper_process)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness.controller.forks import ForkedProcess, ForkServer, ServerGone
from harness.helper_process import Interpreter, helper_env, start_helper

# What a worker adds to a helper's environment: a crash's Python stack in its output (faulthandler),
# and replies that reach the controller as they are written
WORKER_FLAGS = {"PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}


def thread_share() -> int:
    """Threads per worker: the cores divided among pytest-xdist's processes (each runs one worker),
    so that `-n 2` on two cores does not run four compute threads; the user's OMP_NUM_THREADS wins."""
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, (os.cpu_count() or 1) // max(1, processes))


def worker_variables(env: dict[str, str] | None) -> dict[str, str]:
    """What a worker's environment adds to this process's: the pool's (what the families' builders
    need: Family.worker_env), then the worker's own flags."""
    return {**(env or {}), **WORKER_FLAGS}


def process_env(rootdir: Path, env: dict[str, str] | None, interpreter: Interpreter) -> dict[str, str]:
    """What a worker's Python starts with (the fork server's too): a helper's environment, the
    harness importable, with the pool's variables and the worker's flags."""
    return helper_env(rootdir, worker_variables(env), interpreter)


def start_worker(rootdir: Path, env: dict[str, str] | None, interpreter: Interpreter,
                 forks: ForkServer | None) -> subprocess.Popen | ForkedProcess:
    """A worker with its stdin, stdout and stderr piped (its first message, Start, is the pool's to send)."""
    # the user's thread count (or the pool's) first
    threads = process_env(rootdir, env, interpreter).get("OMP_NUM_THREADS") or str(thread_share())
    own = {"OMP_NUM_THREADS": threads}
    if forks is not None and forks.alive:
        try:
            return forks.spawn(own, int(threads) if threads.isdigit() else thread_share())
        except ServerGone:
            pass   # it died since: a process of its own
    return start_helper("harness.worker", rootdir=rootdir, env={**worker_variables(env), **own},
                        interpreter=interpreter)
