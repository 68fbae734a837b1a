"""Manifests a worker-side lister writes once and collection reads: where they live, one writer at a
time, and the lister run as a helper process (harness.helper_process: the pytest process never
imports torch)."""
from __future__ import annotations

import contextlib
import fcntl
import sys
import time
from pathlib import Path
from typing import Iterator

from harness.errors import HarnessInputError
from harness.helper_process import run_helper

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


def run_lister(module: str, args: list[str], what: str, seconds: str, timeout: float,
               env: dict[str, str] | None = None) -> None:
    """`python -m MODULE ARGS` with the harness importable and `env` added to its environment;
    progress said on stderr (it takes a while), and a failure raised as ManifestError with the
    lister's last line. It runs in the working directory: the paths it is given may be relative."""
    print(f"torch-backend-e2e: listing {what}; once, about {seconds}", file=sys.__stderr__, flush=True)
    started = time.monotonic()
    try:
        run_helper(module, args, rootdir=PACKAGE_ROOT, cwd=Path.cwd(), env=env, what=f"listing {what}", where=module,
                   timeout=timeout)
    except HarnessInputError as e:
        raise ManifestError(e.problem) from None   # its family says where: its cases, or a cases file's line
    print(f"torch-backend-e2e: {what} listed in {time.monotonic() - started:.1f} s", file=sys.__stderr__, flush=True)
