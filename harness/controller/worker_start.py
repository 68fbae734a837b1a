"""How a worker process starts: the Python it runs, the environment it starts with, its share of the
cores; forked by its pool's fork server (harness.controller.forks), else a `python -m harness.worker`
of its own."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from harness.controller.forks import ForkedProcess, ForkServer, ServerGone


def thread_share() -> int:
    """Threads per worker: the cores divided among pytest-xdist's processes (each runs one worker),
    so that `-n 2` on two cores does not run four compute threads; the user's OMP_NUM_THREADS wins."""
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, (os.cpu_count() or 1) // max(1, processes))


@dataclasses.dataclass(frozen=True)
class Interpreter:
    """The Python a worker runs: this one, or another environment's (a bisection's probe: a venv
    with another version of a package, or a source build first on the path)."""

    python: str = sys.executable
    path_first: tuple[str, ...] = ()   # before the rootdir on PYTHONPATH


THIS_PYTHON = Interpreter()


def process_env(rootdir: Path, env: dict[str, str] | None, interpreter: Interpreter) -> dict[str, str]:
    """What a worker's Python starts with: this process's environment, the pool's (what the families'
    builders need: Family.worker_env), the harness importable, unbuffered output, faulthandler."""
    path = [*interpreter.path_first, str(rootdir), os.environ.get("PYTHONPATH")]
    return {**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(filter(None, path)),
            "PYTHONFAULTHANDLER": "1", "PYTHONUNBUFFERED": "1"}


def start_worker(rootdir: Path, env: dict[str, str] | None, interpreter: Interpreter,
                 forks: ForkServer | None) -> subprocess.Popen | ForkedProcess:
    """A worker with its stdin, stdout and stderr piped (its first message, Start, is the pool's to send)."""
    env = process_env(rootdir, env, interpreter)
    threads = env.get("OMP_NUM_THREADS") or str(thread_share())   # the user's (or the pool's) first
    own = {"OMP_NUM_THREADS": threads}
    if forks is not None and forks.alive:
        try:
            return forks.spawn(own, int(threads) if threads.isdigit() else thread_share())
        except ServerGone:
            pass   # it died since: a process of its own
    return subprocess.Popen([interpreter.python, "-m", "harness.worker"], cwd=rootdir, env={**env, **own},
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)  # Ctrl-C reaches the controller only; it stops the workers
