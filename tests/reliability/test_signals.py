"""Signals from outside a run.

- SIGTERM to a busy harness worker: that case is `crashed` with "SIGTERM" in its message, and the
  run goes on with the next case on a replacement worker.
- Ctrl-C (SIGINT to pytest's process group, as a terminal sends it), serial and under `-n 2`: a
  partial report marked `"complete": false` and no process of the run left, whether harness
  worker, spare, xdist worker or py-spy.

tests/test_interrupt.py covers SIGINT to the controller alone (serial run, harness workers
stopped, incomplete report) and SIGKILL to the controller (workers die with it).
"""
from __future__ import annotations

import json
import os
import signal

import pytest
from e2e_support import TINY_IDS, wait_for
from reliability_support import ProcessWatch, cmdline, finish, kill_all, needs_proc, start_pytest

pytestmark = needs_proc

AWAITING = "conv_backward/2d/tiny_stride2"   # the case that waits for a signal (the 2nd of cases/tiny.py)
PID_FILE = "pids/conv_backward_2d_tiny_stride2.pid"


def add_awaiting_backend(project, name: str = "await") -> str:
    project.write(f"configs/{name}.yaml", json.dumps({
        "name": name, "class": "fake_backends:RandomFaultBackend", "timeout": 300,
        "options": {"force": {AWAITING: "await_signal", "*": "pass"}}}))
    return name


def worker_pid(project, log) -> int:
    """The pid of the harness worker running AWAITING, once it is waiting."""
    path = project.path / PID_FILE
    wait_for(lambda: path.exists(), 120, "the case to write its pid", log)
    pid = int(path.read_text())
    assert "-m harness.worker" in cmdline(pid), cmdline(pid)
    return pid


def test_sigterm_to_a_worker_records_the_case_crashed_and_the_run_goes_on(e2e_project):
    backend = add_awaiting_backend(e2e_project)
    watch = ProcessWatch(e2e_project.path)
    proc = start_pytest(e2e_project, "-v", f"--backend={backend}", "--report-json=report.json")
    watch.start(proc.pid)
    try:
        os.kill(worker_pid(e2e_project, e2e_project.path / "run.log"), signal.SIGTERM)
        result = finish(e2e_project, proc, 120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watch.stop()
        left = watch.leftovers()
        kill_all(left)
    assert not left, left
    record = result.record(backend, AWAITING)
    assert (record["outcome"], record["phase"], record["verdict"]) == ("crashed", "run", "unexpected_failure")
    assert record["message"].startswith("worker killed by SIGTERM"), record["message"][:2000]
    assert " during phase run" in record["message"].splitlines()[0]
    assert record["signature"].startswith("SIGTERM"), record["signature"]
    # The cases before and after it pass: the one after on a replacement worker.
    assert [(r["case"], r["outcome"]) for r in result.results] == [
        (TINY_IDS[0], "passed"), (AWAITING, "crashed"), (TINY_IDS[2], "passed")]
    assert result.report["complete"] is True
    assert result.ret == 1
    assert "Traceback" not in result.output and "INTERNALERROR" not in result.output


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "n2"])
def test_ctrl_c_writes_a_partial_report_and_leaves_no_process(e2e_project, xdist):
    backend = add_awaiting_backend(e2e_project)
    log = e2e_project.path / "run.log"
    watch = ProcessWatch(e2e_project.path)
    proc = start_pytest(e2e_project, "-v", *(["-n", "2"] if xdist else []), f"--backend={backend}",
                        "--report-json=report.json", new_session=True)
    watch.start(proc.pid)
    try:
        worker_pid(e2e_project, log)
        if not xdist:  # the case before the waiting one is done
            wait_for(lambda: f"{TINY_IDS[0]}[{backend}] PASSED" in log.read_text(), 30, "the first case", log)
        watch.sample()
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: the foreground group
        result = finish(e2e_project, proc, 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        watch.stop()
        left = watch.leftovers()
        kill_all(left)
    assert not left, f"{len(left)} processes of the run left:\n" + "\n".join(
        f"{pid}: {line}" for (pid, _), line in left.items())
    assert any("harness.worker" in line for line in watch.seen.values())
    assert result.ret == 2, result.output[-3000:]  # pytest's INTERRUPTED
    assert "INTERNALERROR" not in result.output, result.output[-3000:]
    report = result.report
    assert report is not None, result.output[-3000:]
    assert report["complete"] is False
    cases = [r["case"] for r in report["results"]]
    assert AWAITING not in cases and len(cases) == len(set(cases))
    assert all(r["outcome"] == "passed" for r in report["results"])
    if not xdist:
        assert cases == [TINY_IDS[0]]
    assert sum(s["total"] for s in report["summary"].values()) == len(cases)
