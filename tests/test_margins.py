"""Margins: how close each compared output came to failing (harness.worker.compare.Accuracy), in
the record, the reports and the history, and the drift judged on them (harness.history.drift)."""
from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys

import numpy as np
import pytest
from e2e_support import REPO

from harness.outcomes import Outcome
from harness.record import Record
from harness.views.margins import closest, margins_markdown
from harness.worker.compare import Accuracy, Output, compare, ulp_figures

TOL = (1e-6, 1e-6)


def out(values, dtype="float32", name="y"):
    return Output(name, np.asarray(values, dtype=np.float64), dtype)


def measured(got, want, tolerance=TOL, reductions=None, **kwargs) -> tuple[str | None, Accuracy]:
    accuracy = Accuracy()
    problem = compare(got, want, "float32", tolerance, reductions or {}, accuracy=accuracy, **kwargs)
    return problem, accuracy


def test_a_known_relative_error_gives_its_margin():
    want = np.linspace(1.0, 2.0, 11)
    for relative in (2.5e-7, 5e-7, 9e-7):   # a quarter, a half and nine tenths of rtol: all pass
        problem, accuracy = measured([out(want * (1 + relative))], [out(want)], tolerance=(1e-6, 0.0))
        assert problem is None
        assert accuracy.margins == {"y": pytest.approx(relative / 1e-6, rel=5e-3)}   # 3 significant digits


def test_the_margin_is_the_worst_elements_error_over_its_allowed_error():
    want = np.linspace(1.0, 2.0, 11)
    rms = np.sqrt(np.mean(want ** 2))
    _, accuracy = measured([out(want * (1 + 5e-7))], [out(want)], reductions={"y": 4})
    expected = max(5e-7 * w / (2 * (1e-6 * w + 1e-6 * max(1.0, rms))) for w in want)   # sqrt(4) = 2
    assert accuracy.margins["y"] == pytest.approx(expected, rel=5e-3)


def test_a_failing_output_has_a_margin_above_one_and_equal_values_zero():
    want = np.linspace(1.0, 2.0, 11)
    problem, accuracy = measured([out(want * 1.01), out(want, name="z")], [out(want), out(want, name="z")])
    assert problem.startswith("y: ")
    assert accuracy.margins["y"] > 1 and accuracy.margins["z"] == 0.0


def test_the_worst_input_set_wins_and_integer_outputs_have_no_margin():
    accuracy = Accuracy()
    want = np.linspace(1.0, 2.0, 11)
    for relative in (5e-7, 1e-7):
        compare([out(want * (1 + relative)), out([1, 2], "int64", "i")], [out(want), out([1, 2], "int64", "i")],
                "float32", (1e-6, 0.0), {}, accuracy=accuracy, reference=[out(want), out([1, 2], "int64", "i")])
    assert accuracy.margins == {"y": pytest.approx(0.5, rel=5e-3)}


def test_the_ratio_rules_margin_is_the_rms_error_over_what_it_allows():
    want = np.linspace(1.0, 2.0, 11)
    eager = out(want + 1e-6)
    _, accuracy = measured([out(want + 2e-6)], [out(want)], reference=[eager], ratio=(3.0, 1e-5))
    assert accuracy.margins["y"] == pytest.approx(2e-6 / (3 * 1e-6 + 1e-5 * np.sqrt(np.mean(want ** 2))), rel=5e-3)


@pytest.mark.parametrize("dtype, bits", [("float16", 10), ("bfloat16", 7)])
def test_ulps_of_a_half_precision_output(dtype, bits):
    want = np.linspace(1.0, 1.9, 10)   # one binade: an ULP is 2 ** -bits
    got = want + 3 * 2.0 ** -bits
    figures = ulp_figures(out(got, dtype), out(want, dtype))
    assert figures == {"max": pytest.approx(3.0), "p99": pytest.approx(3.0)}
    _, accuracy = measured([out(got, dtype)], [out(want)], tolerance=(1e-2, 1e-2), reference=[out(want, dtype)])
    assert accuracy.ulps["y"] == {"max": 3.0, "p99": 3.0}


def test_ulps_at_zero_use_the_smallest_normal_spacing():
    figures = ulp_figures(out([2.0 ** -24], "float16"), out([0.0], "float16"))
    assert figures["max"] == pytest.approx(1.0)   # float16's subnormal spacing: 2 ** (-14 - 10)


@pytest.mark.extra("onnx")
def test_onnx_margins_follow_onnx_runners_rule():
    from harness.families.onnx.values import margins as onnx_margins

    want = np.array([1.0, 2.0, np.nan], dtype=np.float32)
    got = np.array([1.0005, 2.0, np.nan], dtype=np.float32)
    figures = onnx_margins([got, np.array([1])], [want, np.array([1])], ["f", "i"], rtol=1e-3, atol=1e-7)
    assert list(figures) == ["f"]
    assert figures["f"] == pytest.approx(float(np.float32(1.0005) - 1) / (1e-7 + 1e-3), rel=1e-4)


def _record(backend, case, outcome, margins, ulps=None) -> Record:
    return Record.from_json({"case": case, "backend": backend, "outcome": outcome, "margins": margins,
                             "ulps": ulps or {}})


def test_a_record_keeps_its_margins_through_json_and_refuses_damaged_ones():
    record = _record("b", "f/c", "passed", {"y": 0.5}, {"y": {"max": 3.0, "p99": 1.0}})
    again = Record.from_json(json.loads(json.dumps(record.to_json())))
    assert again.findings.margins == {"y": 0.5} and again.findings.ulps == {"y": {"max": 3.0, "p99": 1.0}}
    with pytest.raises(ValueError, match="its margins are not an object of numbers"):
        Record.from_json({"case": "f/c", "backend": "b", "outcome": "passed", "margins": {"y": "high"}})


def test_the_markdown_report_lists_the_passing_outputs_closest_to_failing():
    records = [_record("b", "f/near", "passed", {"y": 0.9, "z": 0.1}, {"y": {"max": 12.0, "p99": 3.0}}),
               _record("b", "f/far", "passed", {"y": 0.2}),
               _record("b", "f/failed", "mismatch", {"y": 4.0})]
    assert [(m.case, m.output) for m in closest(records)] == [("f/near", "y"), ("f/far", "y"), ("f/near", "z")]
    text = "\n".join(margins_markdown(records))
    assert "## Closest to failing" in text
    assert "| 0.9 | `b` | `f/near` | `y` | 12, 3 |" in text
    assert "f/failed" not in text
    assert margins_markdown([_record("b", "f/c", "compile_error", {})]) == []
    assert Outcome.PASSED.value == "passed"


# ---- end to end: through a worker, the record, the reports and the history

IDENTITY_CASES = """\
- family: module
  name: identity
  module: torch.nn:Identity
  inputs: [{shape: [64], dtype: float64, values: uniform, low: 1, high: 2}]
  tolerance: {rtol: 1.0e-9, atol: 0}
"""


def harness_command(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.mark.e2e
def test_a_backend_with_a_known_relative_error_reports_the_margins_it_gives(e2e_project):
    """Identity in float64, judged with rtol 1e-9 (atol: the backend's 1e-12): an error of r
    relative gives a margin of r / 1e-9, less the 1e-12 absolute share (under 0.1%)."""
    e2e_project.write("cases.yaml", IDENTITY_CASES)
    backends = ["eager"] + [e2e_project.add_fake(f"off-{n}", "scaled", phase="run", options={"relative": r})
                            for n, r in (("quarter", 2.5e-10), ("half", 5e-10))]
    result = e2e_project.run(f"--backend={','.join(backends)}", "--cases-file=cases.yaml", "-k", "identity",
                             "--report-md=report.md")
    assert result.ret == 0, result.output[-3000:]
    margins = {b: result.record(b, "module/cases_file/identity")["margins"] for b in backends}
    assert margins["eager"] == {"output": 0.0}
    assert margins["off-quarter"]["output"] == pytest.approx(0.25, rel=2e-3)
    assert margins["off-half"]["output"] == pytest.approx(0.5, rel=2e-3)
    markdown = (e2e_project.path / "report.md").read_text()
    assert "| 0.5 | `off-half` | `module/cases_file/identity` | `output` |" in markdown


def _drift_rule(reports: list[dict], floor: float) -> set[tuple[str, str, str]]:
    """What the rule says drifts, from the reports themselves: each output passing in the last,
    with a margin at least `floor` and twice the median of its passing margins before."""
    *earlier, last = [{(r["case"], r["backend"]): r for r in report["results"]} for report in reports]
    drifting = set()
    for key, record in last.items():
        before = [e[key]["margins"] for e in earlier if key in e and e[key]["outcome"] == "passed"]
        for output, now in record["margins"].items() if record["outcome"] == "passed" else ():
            baseline = statistics.median(m[output] for m in before if output in m)
            if now >= floor and now >= 2 * baseline:
                drifting.add((*key, output))
    return drifting


@pytest.mark.e2e
@pytest.mark.nightly   # CI time: the margins' and the drift's rules have unit tests here
def test_drift_over_the_convolution_backward_family(e2e_project):
    """Three runs of one build, then one whose every output is off by half its dtype's rtol, in one
    history: the drift is exactly what the rule says of the reports' margins, and the first three
    runs alone drift nothing (their margins are the same, run to run). Half an rtol moves a margin
    by at most 0.5 / sqrt(the output's reduction length), so by the default rule (a margin of at
    least 0.25) none drifts (measured 2026-12-06: the largest, 0.217, from 0), by a floor of 0.1
    37 of 281 do."""
    shutil.copy(REPO / "cases" / "conv_backward.py", e2e_project.path / "cases" / "conv_backward.py")
    reports = []
    for run in range(4):
        e2e_project.add_fake("drifty", "scaled", phase="run", only="*" if run == 3 else "none")
        result = e2e_project.run("--backend=drifty", "-n", "2", "--history=history.db", "cases/conv_backward.py",
                                 report=f"run{run}.json")
        assert result.ret == 0, result.output[-3000:]
        reports.append(result.report)
        if run == 2:
            assert [r["margins"] for r in reports[0]["results"]] == [r["margins"] for r in reports[2]["results"]]
            shown = harness_command("history", "show", "history.db", "--format=json", "--fail-on-drift",
                                    cwd=e2e_project.path)
            assert shown.returncode == 0 and json.loads(shown.stdout)["drift"] == [], shown.stderr
    outputs = sum(len(r["margins"]) for r in reports[3]["results"])
    for floor in (0.25, 0.1):
        shown = harness_command("history", "show", "history.db", "--format=json", "--fail-on-drift",
                                f"--drift-floor={floor}", cwd=e2e_project.path)
        drift = json.loads(shown.stdout)["drift"]
        expected = _drift_rule(reports, floor)
        assert {(d["case"], d["backend"], d["output"]) for d in drift} == expected
        assert all(d["runs"] == 3 and d["now"] >= 2 * d["baseline"] for d in drift)
        assert shown.returncode == int(bool(drift)), shown.stderr
    assert 0 < len(drift) < outputs, (len(drift), outputs)   # at floor 0.1 the rule picks some, not all
    assert f"{len(drift)} outputs drifted (--fail-on-drift)" in shown.stderr
    text = harness_command("history", "show", "history.db", cwd=e2e_project.path).stdout
    assert "closer to their tolerance" not in text   # none by the default rule
    text = harness_command("history", "show", "history.db", "--drift-floor=0.1", cwd=e2e_project.path).stdout
    assert f"passing, but closer to their tolerance than before (margin: error over tolerance) ({len(drift)})" in text
