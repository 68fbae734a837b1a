"""Manifests a worker-side lister writes once and collection reads: where they live, one writer at a
time, and the lister run as a subprocess (the pytest process never imports torch)."""
from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

PACKAGE_ROOT = Path(__file__).resolve().parents[2]   # the directory holding the harness package


class ManifestError(Exception):
    """The manifest could not be written: the message says why and what to do."""


@contextlib.contextmanager
def locked(directory: Path, key: str) -> Iterator[None]:
    """One writer of KEY's manifests; the other collecting processes (xdist workers) wait, then read."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run_worker_module(module: str, args: list[str], what: str, timeout: float,
                      env: dict[str, str] | None = None) -> str:
    """`python -m MODULE ARGS` with the harness importable: its stdout, or ManifestError naming
    `what` with the module's last line of stderr."""
    env = dict(env or os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_ROOT), env.get("PYTHONPATH")]))
    try:
        done = subprocess.run([sys.executable, "-m", module, *args], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ManifestError(f"{what} took over {timeout:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise ManifestError(f"{what} failed: {last}")
    return done.stdout


def run_lister(module: str, args: list[str], what: str, seconds: str, timeout: float,
               env: dict[str, str] | None = None) -> None:
    """`python -m MODULE ARGS` with the harness importable; progress said on stderr (it takes a while),
    and a failure raised as ManifestError with the lister's last line."""
    print(f"torch-backend-e2e: listing {what}; once, about {seconds}", file=sys.__stderr__, flush=True)
    started = time.monotonic()
    run_worker_module(module, args, f"listing {what}", timeout, env)
    print(f"torch-backend-e2e: {what} listed in {time.monotonic() - started:.1f} s", file=sys.__stderr__, flush=True)
