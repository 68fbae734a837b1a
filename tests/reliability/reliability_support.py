"""Helpers of the reliability suite: run pytest on an e2e project in a subprocess while watching
every process of the run, and find the ones left behind.

A process belongs to a run when its working directory is the project (the pytest controller,
xdist workers, harness workers and the py-spy they start all run there) or when it descends
from the run's pytest. Processes are told apart by (pid, start time), so a reused pid is not
mistaken for a survivor.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from e2e_support import E2EResult, python_path_env, serial_unless_told

LINUX_PROC = Path("/proc/self/stat").exists()
needs_proc = pytest.mark.skipif(not LINUX_PROC, reason="needs Linux /proc")


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start time in clock ticks) of a process, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1]), int(fields[19])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _cwd(pid: int) -> Path | None:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


Proc = tuple[int, int]  # (pid, start time)


def run_processes(project: Path, root_pid: int | None = None) -> dict[Proc, str]:
    """Live (not zombie) processes of a run: cwd inside the project, or descendants of root_pid.
    The calling process (whose cwd is the pytester directory) is not one of them."""
    project = project.resolve()
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            stat = _stat(int(entry.name))
            if stat is not None:
                stats[int(entry.name)] = stat
    found = {}
    for pid, (state, _, start) in stats.items():
        if state in ("Z", "X"):
            continue
        cwd = _cwd(pid)
        mine = cwd is not None and (cwd == project or project in cwd.parents)
        if not mine and root_pid is not None:
            ancestor, hops = pid, 0
            while ancestor in stats and hops < 64:
                ancestor, hops = stats[ancestor][1], hops + 1
                if ancestor == root_pid:
                    mine = True
                    break
        if mine:
            found[(pid, start)] = cmdline(pid)
    return found


def still_alive(procs: dict[Proc, str]) -> dict[Proc, str]:
    alive = {}
    for (pid, start), line in procs.items():
        stat = _stat(pid)
        if stat is not None and stat[2] == start and stat[0] not in ("Z", "X"):
            alive[(pid, start)] = line
    return alive


class ProcessWatch:
    """Samples the processes of a run in a background thread: every one seen, and the peak count."""

    def __init__(self, project: Path, interval: float = 0.25):
        self.project, self.interval = project, interval
        self.root_pid: int | None = None
        self.seen: dict[Proc, str] = {}
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self, root_pid: int) -> None:
        self.root_pid = root_pid
        self._thread.start()

    def sample(self) -> dict[Proc, str]:
        now = run_processes(self.project, self.root_pid)
        # A process caught while it exits reads an empty command line: keep the one seen before.
        self.seen.update({proc: line for proc, line in now.items() if line or proc not in self.seen})
        self.peak = max(self.peak, len(now))
        return now

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def leftovers(self, grace: float = 10.0) -> dict[Proc, str]:
        """Processes of the run still alive after up to `grace` seconds (empty when all are gone)."""
        deadline = time.monotonic() + grace
        while True:
            left = {**still_alive(self.seen), **run_processes(self.project)}
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)


def kill_all(procs: dict[Proc, str]) -> None:
    """Clean up after a failed test: SIGKILL exactly these processes (by pid and start time)."""
    for (pid, _start) in still_alive(procs):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def start_pytest(project, *args: str, log_name: str = "run.log", new_session: bool = False) -> subprocess.Popen:
    """pytest -p harness.plugin ARGS in the project, output to LOG_NAME, SIGINT at its default action
    (a shell's background job may ignore it). new_session: its own process group, like a terminal's
    foreground job, so that os.killpg reaches pytest and its xdist workers the way Ctrl-C does."""
    env = dict(os.environ, PYTHONPATH=python_path_env(), PYTHONUNBUFFERED="1")
    for name in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST"):
        env.pop(name, None)
    out = open(project.path / log_name, "w")
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-p", "no:cacheprovider",
             *serial_unless_told(args)],
            cwd=project.path, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=new_session, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    finally:
        out.close()
    proc.started_at = time.monotonic()
    return proc


def finish(project, proc: subprocess.Popen, timeout: float, log_name: str = "run.log",
           report: str = "report.json") -> E2EResult:
    """Wait for a run started by start_pytest; its result with the parsed report (None if absent or
    not valid JSON: `report_text` keeps the raw text)."""
    started = getattr(proc, "started_at", time.monotonic())
    try:
        ret = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"the run took over {timeout} s\n{(project.path / log_name).read_text()[-5000:]}")
    output = (project.path / log_name).read_text()
    path = project.path / report
    text = path.read_text() if path.exists() else None
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        data = None
    result = E2EResult(ret, output, "", data, time.monotonic() - started)
    result.report_text = text
    return result
