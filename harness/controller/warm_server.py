"""A warm server: the fork server (harness.worker.fork_server --listen) kept between runs, so that
a rerun's first worker is a fork of a process that imported torch already, not a process that
imports it again (1 to 2 s of every run's start here).

A run connects to the server of its key, or starts it and connects. The key is everything the
server's imports depend on: the Python, the workers' environment (but the variables that change
from one command to the next in one shell: VOLATILE), the folder, the preloaded backend classes,
the harness's code (its files' contents), torch's install and the site-packages folders (a package
installed, removed or upgraded changes their listing). An edit to the harness or a new install
gives a new key, so a new server; an old one leaves by itself after IDLE_S seconds without a
run. A warm server preloads only the harness's own backend classes and never a compiler's
modules: a project's backend or a compiler rebuilt between two runs would be stale in it, so a
worker imports those itself, as a worker of a fresh process does.

The xdist workers of one run share a server the same way, keyed on the run's id too (`run`): it
leaves as soon as their pools have, so it holds what a warm server may not (a project's backend
classes, the compilers' modules), and a run of two workers imports torch once, not twice.

The servers' sockets, locks and logs are in a folder of the user's own (mode 0700) under
$XDG_RUNTIME_DIR or the temporary folder. Starting is done under a lock, so two runs that start
at once share one server; a socket whose server died (killed) is replaced.
"""
from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import psutil

from harness.controller.forks import MESSAGE_BYTES, ForkServer, ServerGone
from harness.entry_points import DISTRIBUTION
from harness.stages.fingerprinting import digest
from harness.stages.keys import build_digest

IDLE_S = 900.0        # a server no run has used for this long exits
MAX_SOCKET_PATH = 108   # bytes of a Unix socket's address, its final NUL included (Linux's sun_path)
START_TIMEOUT = 30.0  # seconds for a new server to listen (it binds its socket before importing)
# Variables that differ between two commands of one shell (or one pytest test and the next) and
# that torch's import does not read: a worker is given the run's own values of these.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "COLUMNS", "LINES", "PYTEST_CURRENT_TEST"})

_started: list[subprocess.Popen] = []   # this process's servers: kept, so that no warning says "still running"


def connect(python: str, env: dict[str, str], cwd: Path, classes: Sequence[str],
            memo_dir: Path | None = None, run: str | None = None) -> ForkServer:
    """The warm server of this key, started when there is none; with `run` (an xdist run's id), the
    server of that run's pools instead, which leaves when they do and so may hold what a warm one
    may not (a project's backends, the compilers). ServerGone when none could be (the caller starts
    one pool's server instead)."""
    folder = _folder()
    if run is None:
        classes = [spec for spec in classes if spec.startswith("harness.")]
    name = server_key(python, env, cwd, classes, memo_dir, run)
    path = folder / f"{name}.sock"
    if len(os.fsencode(path)) >= MAX_SOCKET_PATH:
        raise ServerGone   # a folder too deep for a Unix socket's address
    if len(json.dumps(env)) > MESSAGE_BYTES // 2:
        raise ServerGone   # an environment too large for a request (each carries it)
    with open(folder / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        channel = _connected(path)
        if channel is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()   # a server that was killed left it
            kind, idle = ("warm", IDLE_S) if run is None else ("run", 0)   # a run's leaves with its pools
            channel = _started_and_connected([python, "-m", "harness.worker.fork_server", "--listen", str(path),
                                              str(idle), kind, *classes], env, cwd, path, folder / f"{name}.log")
    return ForkServer(channel, env, cwd)


def server_key(python: str, env: dict[str, str], cwd: Path, classes: Sequence[str], memo_dir: Path | None,
               run: str | None = None) -> str:
    """The digest of what a server's imports depend on (the module docstring), and the run it is
    for; `memo_dir` keeps the harness's files' hashes between runs, as the stage keys do."""
    kept = {k: v for k, v in env.items() if k not in VOLATILE and not k.startswith("PYTEST_XDIST")}
    installed = [(p, os.stat(p).st_mtime_ns) for p in dict.fromkeys(sys.path)
                 if ("site-packages" in p or "dist-packages" in p) and os.path.isdir(p)]
    return digest(json.dumps([os.path.realpath(python), sys.version, kept, str(cwd), list(classes), installed,
                              build_digest(DISTRIBUTION, "harness", memo_dir=memo_dir), _torch_install(), run]))


def _torch_install() -> list:
    """Where torch is and when its files were written (a reinstall of one version writes new ones)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return []
    stat = os.stat(spec.origin)
    return [spec.origin, stat.st_ino, stat.st_mtime_ns, stat.st_size]


def _folder() -> Path:
    """The user's own folder of servers; ServerGone when it is not the user's alone."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"torch-backend-e2e-{os.getuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    stat = folder.lstat()
    if stat.st_uid != os.getuid() or stat.st_mode & 0o077 or not folder.is_dir() or folder.is_symlink():
        raise ServerGone   # another user's, or open to others: no server of ours in it
    return folder


def _connected(path: Path) -> socket.socket | None:
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        channel.connect(str(path))
    except OSError:   # none there, or one that no server listens on
        channel.close()
        return None
    return channel


def _started_and_connected(command: list[str], env: dict[str, str], cwd: Path, path: Path,
                           log_path: Path) -> socket.socket:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, cwd=cwd, env={**env, "OMP_NUM_THREADS": "1"}, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True)   # its own session: it outlives us
    _started.append(proc)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        channel = _connected(path)
        if channel is not None:
            return channel
        time.sleep(0.005)
    raise ServerGone


def running() -> list[tuple[psutil.Process, Path]]:
    """This user's warm servers and their sockets."""
    with contextlib.suppress(ServerGone):
        folder = str(_folder())
        found = []
        for proc in psutil.process_iter(["cmdline", "uids"]):
            line = proc.info["cmdline"] or []
            if "harness.worker.fork_server" in line and "--listen" in line and proc.info["uids"].real == os.getuid():
                at = line.index("--listen")
                path = Path(line[at + 1])
                if str(path.parent) == folder and line[at + 3:at + 4] == ["warm"]:   # not a run's own
                    found.append((proc, path))
        return found
    return []
