"""The results journal (harness.journal): SIGTERM ends a run as Ctrl-C does, with a report of every
result finished before it; after a SIGKILL, `python -m harness recover` writes the report from the
journal, `merge` and the history take it, and no process of the run is left; a journal cut
mid-line recovers its complete lines."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_support import TINY_IDS, python_path_env, wait_for
from reliability.reliability_support import ProcessWatch, finish, kill_all, needs_proc, start_pytest

from harness.cli import main
from harness.journal import HEADER, RESULT, journal_path

AWAITING = "conv_backward/2d/tiny_stride2"   # the 2nd case of cases/tiny.py: it waits for a signal
PID_FILE = "pids/conv_backward_2d_tiny_stride2.pid"
CHILD_FILE = "pids/conv_backward_2d_tiny_stride2.child"


def add_awaiting_backend(project, kind: str = "await_signal") -> str:
    project.write("configs/await.yaml", json.dumps({
        "name": "await", "class": "fake_backends:RandomFaultBackend", "timeout": 300,
        "options": {"force": {AWAITING: kind, "*": "pass"}}}))
    return "await"


def journaled(project) -> list[dict]:
    """The records in the project's journal now (its complete lines)."""
    path = journal_path(project.path / "report.json")
    lines = path.read_text().split("\n")[:-1] if path.exists() else []
    return [json.loads(line)["record"] for line in lines if json.loads(line)["$report_type"] == RESULT]


def start_awaiting_run(project, *args: str, kind: str = "await_signal"):
    """pytest on the awaiting backend; returns (process, watch) once the awaiting case runs and
    the journal holds every other result a serial run finishes before it."""
    backend = add_awaiting_backend(project, kind)
    watch = ProcessWatch(project.path)
    proc = start_pytest(project, "-v", *args, f"--backend={backend}", "--report-json=report.json", new_session=True)
    watch.start(proc.pid)
    log = project.path / "run.log"
    wait_for(lambda: (project.path / PID_FILE).exists(), 120, "the awaiting case to start", log)
    wait_for(lambda: journaled(project), 30, "the first result in the journal", log)
    watch.sample()
    return proc, watch


def stop(proc, watch) -> dict:
    """After the test: the processes of the run still alive after a few seconds, then killed."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    watch.stop()
    left = watch.leftovers(grace=5)
    kill_all(left)
    return left


@needs_proc
@pytest.mark.parametrize(("xdist", "group"), [(False, False), (True, True), (True, False)],
                         ids=["serial", "n2-group", "n2-controller"])
def test_sigterm_writes_the_report_with_every_finished_result(e2e_project, xdist, group):
    proc, watch = start_awaiting_run(e2e_project, *(["-n", "2"] if xdist else []))
    try:
        before = journaled(e2e_project)
        if group:   # `timeout` and a terminal's job control signal the group: the xdist workers too
            os.killpg(proc.pid, signal.SIGTERM)
        else:       # docker stop, Kubernetes: the main process alone
            proc.send_signal(signal.SIGTERM)
        result = finish(e2e_project, proc, 60)
    finally:
        left = stop(proc, watch)
    assert not left, left
    assert result.ret == 2, result.output[-3000:]   # pytest's INTERRUPTED, as Ctrl-C gives
    assert "SIGTERM received" in result.output and "INTERNALERROR" not in result.output, result.output[-3000:]
    report = result.report
    assert report is not None and report["complete"] is False, result.output[-3000:]
    cases = [r["case"] for r in report["results"]]
    assert {r["case"] for r in before} <= set(cases) and AWAITING not in cases
    assert all(r["outcome"] == "passed" for r in report["results"])
    if not xdist:
        assert cases == [TINY_IDS[0]] == [r["case"] for r in before]
    assert not journal_path(e2e_project.path / "report.json").exists()   # the report is written: it served


@needs_proc
def test_sigkill_leaves_a_journal_that_recover_turns_into_the_report(e2e_project):
    proc, watch = start_awaiting_run(e2e_project, kind="await_with_child")
    child = int((e2e_project.path / CHILD_FILE).read_text())
    try:
        before = journaled(e2e_project)
        proc.kill()
        proc.wait()
        killed = time.monotonic()
        watch.sample()
        left = watch.leftovers(grace=5)   # the harness worker, its keeper and the child it started
        outlived = time.monotonic() - killed
    finally:
        left_after = stop(proc, watch)
    assert not left and not left_after, f"left {outlived:.1f} s after the kill: {left}"
    print(f"the run's processes outlived pytest by {outlived:.2f} s")
    assert any(pid == child for pid, _ in watch.seen), "the case's child process was not seen"
    assert not (e2e_project.path / "report.json").exists()

    done = harness_command(e2e_project.path, "recover", "report.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "report.json: 1 result recovered from report.json.journal, marked incomplete\n"
    report = json.loads((e2e_project.path / "report.json").read_text())
    assert report["complete"] is False
    assert [r["case"] for r in before] == [TINY_IDS[0]]
    assert report["results"] == [{k: v for k, v in r.items() if k != "backend_versions"} for r in before]
    assert report["environment"]["backends"]["await"]["config"] == "configs/await.yaml"

    merged = harness_command(e2e_project.path, "merge", "report.json", "-o", "merged.json")
    assert merged.returncode == 0, merged.stderr
    assert json.loads((e2e_project.path / "merged.json").read_text())["complete"] is False
    ingested = harness_command(e2e_project.path, "history", "ingest", "history.duckdb", "report.json")
    assert ingested.returncode == 0 and ingested.stdout == "report.json: run 1\n", ingested.stderr


def harness_command(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=python_path_env())
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)


# ---- recovery from a journal as a killed run leaves it ----------------------------------------

def record(case: str, **more) -> dict:
    return {"backend": "be", "case": case, "nodeid": f"cases/x.py::{case}[be]", "outcome": "passed",
            "expected": "pass", "verdict": "ok", "params": {}, "tags": [], "phase": None, "duration_s": 0.5,
            "message": "", "expectation_source": None, "phase_durations": {}, "notes": {}, **more}


def write_journal(folder: Path, *records: dict, tail: str = "") -> Path:
    header = {"$report_type": HEADER, "e2e_journal": 1, "run_id": "abc",
              "environment": {"python": "3.11", "backends": {"be": {"config": "configs/be.yaml"}}}}
    lines = [header, *({"$report_type": RESULT, "record": r} for r in records)]
    path = journal_path(folder / "report.json")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines) + tail)
    return folder / "report.json"


def test_a_journal_cut_mid_line_recovers_every_complete_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cut = json.dumps({"$report_type": RESULT, "record": record("c")})[:40]
    write_journal(tmp_path, record("a", backend_versions={"be-compiler": "1.2"}), record("b"), tail=cut)
    assert main(["recover", "report.json"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "report.json: 2 results recovered from report.json.journal, marked incomplete",
        "report.json.journal: 1 line dropped: cut mid-way, the run was killed while writing it"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["case"] for r in report["results"]] == ["a", "b"] and report["complete"] is False
    assert report["run_id"] == "abc"
    assert report["environment"]["backends"]["be"] == {"config": "configs/be.yaml",
                                                         "reported": {"be-compiler": "1.2"}}
    assert report["summary"] == {"be": {"total": 2, "outcomes": {"passed": 2}, "verdicts": {"ok": 2}}}


def test_a_whole_journal_drops_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_journal(tmp_path, record("a"))
    assert main(["recover", "report.json"]) == 0
    assert capsys.readouterr().out == "report.json: 1 result recovered from report.json.journal, marked incomplete\n"


FIX = "; rerun the cases, or pass a report that has its journal beside it"


@pytest.mark.parametrize(("damage", "problem"), [
    (None, "report.json.journal: no such journal (a run with --report-json writes it beside the report until the "
           "report is written)"),
    ("header cut", "report.json.journal: is not a results journal of this harness (no header line)"),
    ("middle line", "report.json.journal: line 2 is not JSON, and only the last line can be cut by a killed run"),
    ("bad record", "report.json.journal: line 2 is a result without its backend, case or outcome"),
    ("bad outcome", "report.json.journal: line 2: result 'a': 'won' is not a valid Outcome"),
])
def test_a_missing_or_damaged_journal_is_one_error_line(tmp_path, capsys, monkeypatch, damage, problem):
    monkeypatch.chdir(tmp_path)
    if damage == "header cut":
        journal_path(tmp_path / "report.json").write_text('{"$report_type": "Sess')
    elif damage == "middle line":
        write_journal(tmp_path, record("a"), record("b"))
        path = journal_path(tmp_path / "report.json")
        lines = path.read_text().split("\n")
        path.write_text("\n".join([lines[0], lines[1][:30], *lines[2:]]))
    elif damage == "bad record":
        broken = record("a")
        del broken["outcome"]
        write_journal(tmp_path, broken)
    elif damage == "bad outcome":
        write_journal(tmp_path, record("a", outcome="won"))
    assert main(["recover", "report.json"]) == 2
    assert capsys.readouterr().err == f"error: {problem}{FIX}\n"   # as docs/reference/bad-input.md shows it
    assert not (tmp_path / "report.json").exists()


def test_a_journal_that_cannot_be_written_is_one_summary_line(tmp_path):
    from harness.journal import JournalWriter

    said: list[str] = []
    journal = JournalWriter(tmp_path / "missing-folder" / "r.json.journal", lambda: {}, warn=said.append)
    journal.append({"case": "a"})
    journal.append({"case": "b"})
    assert len(said) == 1 and said[0].startswith("results journal: cannot write ") and "No such file" in said[0]
