"""harness.reports and harness.views.terminal: the JSON report (written, and read by every command
through one module) and the terminal summary, from records."""
from __future__ import annotations

import json

import pytest

from harness.cli import main
from harness.record import Record
from harness.reports import SCHEMA_VERSION, summarise
from harness.reports import write_report as write_json
from harness.views.terminal import terminal_lines


def rec(backend, case, outcome="passed", verdict="ok", phase=None, message=""):
    return {"backend": backend, "case": case, "outcome": outcome, "verdict": verdict, "phase": phase,
            "message": message}


RECORDS = [
    rec("b2", "fam/2d/z"),
    rec("b1", "fam/2d/y", "crashed", "unexpected_failure", "run", "worker killed by SIGSEGV during phase run\nmore"),
    rec("b1", "fam/2d/x"),
    rec("b1", "fam/2d/w", "passed", "unexpected_pass"),
    rec("b1", "fam/2d/v", "not_run", "skipped"),
    rec("b1", "fam/2d/u", "compile_error", "ok", "lower", "expected"),
]


def test_summarise_counts_per_backend():
    assert summarise(RECORDS) == {
        "b1": {"total": 5, "outcomes": {"crashed": 1, "passed": 2, "not_run": 1, "compile_error": 1},
               "verdicts": {"unexpected_failure": 1, "ok": 2, "unexpected_pass": 1, "skipped": 1}},
        "b2": {"total": 1, "outcomes": {"passed": 1}, "verdicts": {"ok": 1}},
    }


def test_write_json_sorts_and_summarises(tmp_path):
    path = tmp_path / "r.json"
    write_json(path, {"python": "3.11"}, list(RECORDS), complete=True)
    report = json.loads(path.read_text())
    assert set(report) == {"schema_version", "run_id", "complete", "created", "environment", "results", "summary"}
    assert report["schema_version"] == SCHEMA_VERSION == 1
    assert report["complete"] is True
    assert report["environment"] == {"python": "3.11"}
    assert [(r["backend"], r["case"]) for r in report["results"]] == sorted((r["backend"], r["case"]) for r in RECORDS)
    assert report["summary"] == summarise(RECORDS)
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary file left behind


def test_write_json_replaces_an_old_report(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    write_json(path, {}, [], complete=False)
    report = json.loads(path.read_text())
    assert report["complete"] is False and report["results"] == [] and report["summary"] == {}


def test_terminal_lines():
    assert terminal_lines([Record.from_json(r) for r in RECORDS]) == [
        "b1: 5 cases  passed=2  compile_error=1  crashed=1  not_run=1",
        "b2: 1 cases  passed=1",
        "unexpected failures: 1, by signature",
        "  1 x crashed in run [b1] worker killed by SIGSEGV during phase run",
        "      e.g. fam/2d/y on b1",
        "UNEXPECTED_PASS: fam/2d/w on b1: delete the entry at None (or narrow its id)",
    ]


def test_the_summary_groups_unexpected_failures_by_signature_largest_first():
    refusal = dict(outcome="compile_error", verdict="unexpected_failure", phase="setup",
                   message="NotImplementedError: unsupported: dilation", signature="NotImplementedError: unsupported: "
                                                                                   "dilation")
    records = [rec("b1", f"conv/{n}") | refusal for n in ("c", "a", "b")]
    records += [rec("b2", "conv/a") | refusal, rec("b1", "conv/z", "mismatch", "unexpected_failure", "compare",
                                                   "out: 1 of 4 elements differ") | {"signature": "mismatch: out"}]
    records += [rec("b1", "conv/m", "compile_error", "unexpected_failure", "lower", "boom")
                | {"signature": "boom", "expected": "xfail", "expected_phase": "run",
                   "expectation_source": "xfail/b1.yaml:3"}]
    assert terminal_lines([Record.from_json(r) for r in records])[2:] == [
        "unexpected failures: 6, by signature",
        "  4 x compile_error in setup [b1, b2] NotImplementedError: unsupported: dilation",
        "      e.g. conv/a on b1 and 3 more",
        "  1 x compile_error in lower [b1] boom",
        "      e.g. conv/m on b1; its entry (xfail/b1.yaml:3) expects run",
        "  1 x mismatch in compare [b1] mismatch: out",
        "      e.g. conv/z on b1",
    ]


@pytest.mark.parametrize("command", [
    ["history", "ingest", "h.db", "r.json"], ["diff", "r.json", "r.json"], ["merge", "r.json", "-o", "m.json"],
    ["report", "r.json", "--md", "r.md"], ["reduce", "--all", "r.json", "--out", "out"], ["table", "r.json"],
], ids=lambda command: " ".join(command[:2]))
def test_a_truncated_report_is_one_line_from_every_command(tmp_path, monkeypatch, capsys, command):
    """Every command reads a report through harness.reports: a damaged one is one `error:` line, exit 2."""
    write_json(tmp_path / "whole.json", {}, [dict(r, params={}) for r in RECORDS], complete=True)
    text = (tmp_path / "whole.json").read_text()
    (tmp_path / "r.json").write_text(text[:len(text) // 2])
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: r.json: is not JSON (") and error.count("\n") == 1, error
