"""Stopping a run: Ctrl-C stops the workers and leaves an incomplete report; a killed controller's
workers die with it (PR_SET_PDEATHSIG)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_support import python_path_env, wait_for

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def proc_info(pid: int) -> tuple[str, int, str] | None:
    """(state, ppid, cmdline) of a live process, or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), cmdline


def alive(pid: int) -> bool:
    info = proc_info(pid)
    return info is not None and info[0] != "Z"  # a zombie has exited


def harness_workers() -> list[int]:
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]
    return [pid for pid in pids if (info := proc_info(pid)) and "-m harness.worker" in info[2] and info[0] != "Z"]


def descends_from(pid: int, ancestor: int) -> bool:
    for _ in range(50):
        info = proc_info(pid)
        if info is None or info[1] <= 1:
            return False
        if info[1] == ancestor:
            return True
        pid = info[1]
    return False


def workers_in(project_path: Path) -> list[int]:
    """Live harness workers started for this project (their cwd is the project's rootdir)."""
    found = []
    for pid in harness_workers():
        try:
            if Path(os.readlink(f"/proc/{pid}/cwd")) == project_path:
                found.append(pid)
        except OSError:
            pass
    return found


def start_hanging_run(project) -> tuple[subprocess.Popen, Path, list[int]]:
    """pytest on a backend whose 2nd case hangs for good; returns once that case is running."""
    project.add_fake("hang-long", "hang", "run", "conv_backward/2d/tiny_stride2", timeout=300)
    log = project.path / "run.log"
    env = dict(os.environ, PYTHONPATH=python_path_env(), PYTHONUNBUFFERED="1")
    env.pop("PYTEST_ADDOPTS", None)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "harness.plugin", "-v", "-p", "no:cacheprovider", "-n", "0",
             "--backend=hang-long", "--report-json=report.json"],
            cwd=project.path, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            # a shell's background job may ignore SIGINT, and Python then never raises KeyboardInterrupt
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        wait_for(lambda: "tiny[hang-long] PASSED" in log.read_text()
                 and "tiny_stride2[hang-long]" in log.read_text(), 120, "the hanging case to start", log)
        workers = wait_for(lambda: [w for w in harness_workers() if descends_from(w, proc.pid)], 30,
                           "a harness.worker process under that pytest", log)
        time.sleep(0.5)  # the hanging case is now inside the native deadlock
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, log, workers


def test_ctrl_c_stops_workers_and_writes_an_incomplete_report(e2e_project):
    proc, log, workers = start_hanging_run(e2e_project)
    try:
        assert all(alive(w) for w in workers)
        proc.send_signal(signal.SIGINT)
        ret = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()
    assert ret == 2, output  # pytest's INTERRUPTED
    assert "KeyboardInterrupt" in output and "INTERNALERROR" not in output
    wait_for(lambda: not any(alive(w) for w in workers) and not workers_in(e2e_project.path), 5,
             "the workers to stop")
    report = json.loads((e2e_project.path / "report.json").read_text())
    assert report["complete"] is False
    assert [(r["case"], r["outcome"]) for r in report["results"]] == [("conv_backward/2d/tiny", "passed")]
    assert report["summary"] == {"hang-long": {"total": 1, "outcomes": {"passed": 1}, "verdicts": {"ok": 1}}}


def test_workers_die_with_a_killed_controller(e2e_project):
    proc, log, workers = start_hanging_run(e2e_project)
    try:
        proc.kill()  # SIGKILL: no cleanup code runs in the controller
        proc.wait(timeout=30)
        wait_for(lambda: not any(alive(w) for w in workers) and not workers_in(e2e_project.path), 5,
                 "the orphaned workers to die")
    finally:
        for w in workers:
            if alive(w):
                os.kill(w, signal.SIGKILL)
    assert not (e2e_project.path / "report.json").exists()
