"""The run history: real runs recorded with --history, reports ingested, the status of each case
over the runs (a real version change made by a source-build copy of torch-mlir on PYTHONPATH),
and bad database files and reports."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from e2e_support import REPO, Project

from harness.history import status
from harness.history.store import (
    HISTORY_OUTCOMES,
    OUTCOME_CODES,
    SCHEMA_VERSION,
    HistoryStore,
    apply_migrations,
    open_history,
)
from harness.installation.packages import version_text
from harness.outcomes import Outcome
from harness.views.history_html import OUTCOME_COLOURS

pytest_plugins = ["pytester"]

CASES = '''\
from harness.families.conv import conv_backward_case

CASES = [conv_backward_case(name, input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3])
         for name in ("always_pass", "always_fail", "flip", "regress", "fixed")]
'''
BASELINE = version_text("torch-mlir")
MOVED = "20261002"


def harness(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


def source_build_of_torch_mlir(folder: Path, version: str) -> Path:
    """What a torch-mlir source build on PYTHONPATH looks like to the harness: the package (its
    files linked from the installed one) with a version file and no distribution metadata."""
    import importlib.util

    installed = Path(next(iter(importlib.util.find_spec("torch_mlir").submodule_search_locations)))
    package = folder / "torch_mlir"
    package.mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name != "__pycache__":
            (package / entry.name).symlink_to(entry)
    (package / "version.py").write_text(f'__version__ = "{version}"\n')
    return folder


@pytest.fixture
def project(pytester) -> Project:
    project = Project(pytester.path, pytester)
    project.write("cases/history.py", CASES)
    project.write("configs/versioned.yaml", json.dumps(
        {"name": "versioned", "class": "fake_backends:VersionedBackend", "options": {"baseline": BASELINE}}))
    return project


def statuses(folder: Path, db: str = "history.db") -> dict[str, dict]:
    done = harness("history", "show", db, "--format=json", "--all", cwd=folder)
    assert done.returncode == 0, done.stderr
    return {c["case"].rsplit("/", 1)[1]: c for c in json.loads(done.stdout)["cases"]}


def test_five_runs_give_each_status_and_what_changed(project, monkeypatch, tmp_path):
    for run in range(1, 6):
        if run == 5:   # torch-mlir moves to a source build that says another version
            build = source_build_of_torch_mlir(tmp_path / "build", MOVED)
            monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(build), os.environ.get("PYTHONPATH")])))
        result = project.run("--backend=versioned", "--history=history.db", "--report-md=report.md",
                             "cases/history.py")
        assert f"history: recorded as run {run} in history.db" in result.output, result.output[-3000:]
    assert result.report["environment"]["torch_mlir"] == MOVED
    markdown = (project.path / "report.md").read_text()   # the last run's triage report
    for title in ("## New failures since the run before (1)", "## Fixed since the run before (1)",
                  "## Flaky cases (1)"):
        assert title in markdown
    # Named once, by its distribution name: the run's torch_mlir and the backend's torch-mlir moved alike.
    head = markdown.split("## Fixed")[0]
    assert f"torch-mlir {BASELINE} → {MOVED}" in head and head.count(f"{BASELINE} → {MOVED}") == 1

    cases = statuses(project.path)
    assert {name: c["status"] for name, c in cases.items()} == {
        "always_pass": "passing", "always_fail": "failing", "flip": "flaky", "regress": "new_failure",
        "fixed": "fixed"}
    assert cases["always_fail"]["since"] == 1 and cases["always_fail"]["recent"] == "CCCCC"
    assert cases["flip"]["flaky_since"] == 2 and cases["flip"]["recent"] == "CPCPC"
    for name in ("regress", "fixed"):   # the torch-mlir the run saw, and the one its backend reported
        assert cases[name]["changed"] == {"torch_mlir": [BASELINE, MOVED], "torch-mlir": [BASELINE, MOVED]}
        assert cases[name]["run"] == 5 and cases[name]["previous"] == 4

    # The same report again adds nothing; the terminal table lists what changed.
    done = harness("history", "ingest", "history.db", "report.json", cwd=project.path)
    assert done.stdout.strip() == "report.json: run 5 (recorded already: nothing added)", done.stderr
    text = harness("history", "show", "history.db", cwd=project.path).stdout
    assert text.splitlines()[0].startswith("5 runs; the latest, run 5,")
    for title in ("new failures (1)", "fixed (1)", "flaky (1)", "still failing (1)"):
        assert title in text
    assert "torch-mlir " + BASELINE + " -> " + MOVED in text and "torch_mlir " + BASELINE not in text


def test_a_failure_that_passes_when_rerun_in_a_fresh_worker_is_flaky(project):
    result = project.run("--backend=versioned", "--rerun-failures=2", "cases/history.py", "-k", "flip")
    record = result.record("versioned", "conv_backward/2d/flip")
    assert (record["flaky"], record["verdict"]) == (True, "unexpected_failure") and result.ret == 1
    assert [(a["outcome"], a["phase"]) for a in record["attempts"]] == [("compile_error", "compile"), ("passed", None)]
    assert record["attempts"][0]["signature"] == "RuntimeError: conv_backward/2d/flip fails on torch-mlir N"
    first, second = (project.path / "flip_attempts.txt").read_text().split()
    assert first != second   # the rerun ran in another worker process
    assert "FLAKY: conv_backward/2d/flip [attempts: compile_error, passed] (fails the run" in result.output

    result = project.run("--backend=versioned", "--rerun-failures=2", "--flaky-ok", "--history=history.db",
                         "cases/history.py", "-k", "flip")
    assert (result.ret, result.record("versioned", "conv_backward/2d/flip")["verdict"]) == (0, "flaky")
    assert statuses(project.path)["flip"]["status"] == "flaky"   # from its first run in the history


def test_an_expected_failure_that_passes_then_fails_on_a_rerun_is_marked_nondeterministic(project):
    """An xfail case passes (its first attempt here is the even one), fails again on the rerun:
    --update-expectations marks its entry nondeterministic instead of deleting it, and then either
    outcome is reported as flaky and the run is green."""
    project.write("xfail/versioned.yaml", "- id: conv_backward/2d/flip\n  phase: compile\n  reason: flips\n")
    (project.path / "flip_attempts.txt").write_text("0\n")   # the next attempt is the second: it passes
    result = project.run("--backend=versioned", "--rerun-failures=2", "--update-expectations", "cases/history.py",
                         "-k", "flip")
    record = result.record("versioned", "conv_backward/2d/flip")
    assert [a["outcome"] for a in record["attempts"]] == ["passed", "compile_error"] and record["flaky"]
    assert (record["verdict"], result.ret) == ("unexpected_pass", 1)
    text = (project.path / "xfail" / "versioned.yaml").read_text()
    assert text == ("# review: marked nondeterministic by --update-expectations (its reruns gave passed, "
                    "compile_error)\n- id: conv_backward/2d/flip\n  phase: compile\n  reason: flips\n"
                    "  nondeterministic: true\n"), text
    for outcome in ("passed", "compile_error"):   # attempts 4 and 5
        result = project.run("--backend=versioned", "cases/history.py", "-k", "flip")
        record = result.record("versioned", "conv_backward/2d/flip")
        assert (record["outcome"], record["verdict"], result.ret) == (outcome, "flaky", 0), result.output[-2000:]
        assert (f"FLAKY: conv_backward/2d/flip [{outcome}] its entry says its outcome is nondeterministic "
                "(xfail/versioned.yaml:2)") in result.output


def write_report(path: Path, run_id: str, created: float, outcomes: dict[str, str], torch: str = "2.13.0") -> Path:
    results = [{"case": case, "backend": "b", "outcome": outcome, "phase": None if outcome == "passed" else "lower",
                "signature": None if outcome == "passed" else f"{case} broke", "expected": "pass", "verdict": "ok",
                "duration_s": 0.1} for case, outcome in outcomes.items()]
    path.write_text(json.dumps({"schema_version": 1, "run_id": run_id, "created": created, "complete": True,
                                "environment": {"torch": torch, "backends": {"b": {"versions": {}, "reported": {}}}},
                                "results": results}))
    return path


def test_a_report_older_than_the_newest_run_gives_the_state_of_runs_ingested_in_order(tmp_path):
    days = [{"x": "passed", "y": "compile_error"}, {"x": "compile_error", "y": "passed"},
            {"x": "compile_error", "y": "passed"}]
    reports = [write_report(tmp_path / f"{i}.json", f"r{i}", 1000.0 + i, d, torch=f"2.{i}") for i, d in enumerate(days)]
    with open_history(tmp_path / "in_order.db", write=True) as store:
        for report in reports:
            store.ingest(report)
        in_order = status.case_statuses(store, include_passing=True)
    with open_history(tmp_path / "shuffled.db", write=True) as store:
        for report in (reports[2], reports[0], reports[1]):
            store.ingest(report)
        shuffled = status.case_statuses(store, include_passing=True)
    assert shuffled == in_order
    with open_history(tmp_path / "at_once.db", write=True) as store:   # one ingest, a report given twice
        assert store.ingest_all([reports[2], reports[0], reports[0], reports[1]]) == [
            (3, True), (1, True), (1, False), (2, True)]
        assert status.case_statuses(store, include_passing=True) == in_order
    assert [(c["case"], c["status"], c["since"]) for c in in_order] == [("x", "failing", 2), ("y", "passing", None)]


@pytest.mark.e2e
def test_an_older_schema_is_migrated_and_a_newer_one_refused(tmp_path):
    old = tmp_path / "v1.db"
    db = duckdb.connect(str(old))   # a file of schema 1, as the first harness with a history wrote it
    apply_migrations(HistoryStore(old, db), 0, 1)
    db.execute("INSERT INTO runs VALUES (1, 'r0', 0.5, 'pytest', NULL, NULL, true, 1, 'r0.json')")
    db.execute("INSERT INTO fingerprints VALUES (1, 'b', '{}')")
    db.execute("INSERT INTO results VALUES (1, 'x', 'b', 'compile_error', 'lower', 'x broke', 'pass', 'ok', 0.1)")
    db.close()
    with open_history(old, write=True) as store:   # migrated, its run kept: x was failing, now fixed
        assert store.db.execute("SELECT value FROM meta").fetchall() == [(str(SCHEMA_VERSION),)]
        store.ingest(write_report(tmp_path / "r.json", "r1", 1.0, {"x": "passed"}))
        assert [(c["case"], c["status"]) for c in status.case_statuses(store)] == [("x", "fixed")]
    db = duckdb.connect(str(old))
    db.execute("UPDATE meta SET value = '99'")
    db.close()
    done = harness("history", "show", "v1.db", cwd=tmp_path)
    assert (done.returncode, done.stderr.strip()) == (
        2, f"error: v1.db: has history schema 99; this harness reads up to {SCHEMA_VERSION}; "
           "upgrade the harness, or pass another file")


@pytest.mark.parametrize("content, problem", [
    (b"not a database at all" * 100, "is not a history database"),
])
def test_a_corrupt_database_is_one_line_for_the_tool_and_for_pytest(project, content, problem):
    (project.path / "history.db").write_bytes(content)
    done = harness("history", "show", "history.db", cwd=project.path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: history.db: {problem} (")
    result = project.run("--backend=eager", "--history=history.db", "cases/tiny.py")
    assert result.ret == 4 and len(result.error_lines()) == 1, result.output[-2000:]
    assert result.error_lines()[0].startswith(f"ERROR: --history: history.db: {problem}")


@pytest.mark.e2e
@pytest.mark.parametrize("content, problem", [
    ('{"results": []}', "is not a harness report (no schema_version or results)"),
    ("this is not JSON", "is not JSON"),
])
def test_a_file_that_is_not_a_report_is_one_line(tmp_path, content, problem):
    (tmp_path / "r.json").write_text(content)
    done = harness("history", "ingest", "h.db", "r.json", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: r.json: {problem}")


@pytest.mark.e2e
def test_two_processes_ingesting_at_once_lose_nothing_and_double_nothing(tmp_path):
    reports = [write_report(tmp_path / f"{i}.json", f"r{i}", 1000.0 + i, {f"c{j}": "passed" for j in range(2000)})
               for i in range(6)]
    names = [r.name for r in reports]
    # Each process ingests every report, in another order: six runs, each once.
    both = [subprocess.Popen([sys.executable, "-m", "harness", "history", "ingest", "h.db", *order], cwd=tmp_path,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for order in (names, names[::-1])]
    outputs = [p.communicate(timeout=300) for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    with open_history(tmp_path / "h.db", write=False) as store:
        assert [r["identity"] for r in status.runs(store)] == [f"r{i}" for i in range(6)]
        assert store.db.execute("SELECT count(*) FROM results").fetchall() == [(6 * 2000,)]


CHROMIUM = Path("/usr/bin/chromium")


def history_page(tmp_path: Path) -> Path:
    """Four runs of three cases, torch moving every run (so no flip is flaky), as a history page."""
    days = [{"x": "passed", "y": "compile_error", "z": "passed"}, {"x": "compile_error", "y": "passed", "z": "crashed"},
            {"x": "compile_error", "y": "passed", "z": "passed"}, {"x": "mismatch", "y": "passed", "z": "crashed"}]
    reports = [write_report(tmp_path / f"{i}.json", f"r{i}", 1000.0 + i, d, torch=f"2.{i}") for i, d in enumerate(days)]
    assert harness("history", "ingest", "h.db", *[r.name for r in reports], cwd=tmp_path).returncode == 0
    done = harness("history", "show", "h.db", "--html=h.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "h.html"


def test_every_outcome_has_its_letter_and_colour_or_none_for_not_run():
    """Total over the enum: a new outcome cannot reach the history without a letter and a colour."""
    assert list(OUTCOME_CODES) == list(OUTCOME_COLOURS) == list(Outcome)
    assert HISTORY_OUTCOMES == [o for o in Outcome if o is not Outcome.NOT_RUN]
    assert all(OUTCOME_CODES[o] and OUTCOME_COLOURS[o] for o in HISTORY_OUTCOMES)
    assert len({OUTCOME_CODES[o] for o in HISTORY_OUTCOMES}) == len(HISTORY_OUTCOMES)   # a strip reads back
    assert OUTCOME_CODES[Outcome.NOT_RUN] is None and OUTCOME_COLOURS[Outcome.NOT_RUN] is None


@pytest.mark.e2e
def test_the_history_page_draws_the_pass_rates_and_each_cases_strip_offline(tmp_path):
    page = history_page(tmp_path).read_text()
    assert "http://" not in page and "https://" not in page and "<script src" not in page
    polyline = page.split("<polyline", 1)[1].split("/>", 1)[0]
    assert polyline.count(",") == 4   # one point per run of backend b
    assert "b, run 2: 1 of 3 passed (33.3%)" in page
    # x: still failing since run 2 (P C C M); z: a new failure, torch 2.2 -> 2.3
    assert page.count("<rect") == 4 + 4
    assert "since run 2" in page and "changed: torch 2.2 \u2192 2.3" in page


@pytest.mark.e2e
@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is not installed (apt-get install chromium)")
def test_chromium_runs_the_history_pages_filters(tmp_path):
    page = history_page(tmp_path)
    done = subprocess.run([str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri() + "#q=torch%202.2"],
                          capture_output=True, text=True, timeout=180)
    assert 'data-ready="1"' in done.stdout, done.stderr[-2000:]
    assert "Showing 1 of 2 cases" in done.stdout
    hidden = [line for line in done.stdout.splitlines() if line.startswith("<tr class=") and "hidden" in line]
    assert len(hidden) == 1 and 'data-status="failing"' in hidden[0]
