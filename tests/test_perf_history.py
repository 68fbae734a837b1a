"""The history's performance changes (harness.history.perf_changes): a step in a case's speedup
found and dated with the versions that changed, no flag without a change of versions or without a
step, timings compared on one machine only, and size figures that changed."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli import main
from harness.history.perf_changes import perf_changes, size_changes
from harness.history.store import open_history
from harness.reports import build_report

CASE = "conv_backward/2d/x"
WOBBLE = [1.0, 1.03, 0.98, 1.01, 0.97, 1.02, 0.99, 1.04, 0.96, 1.0, 1.02, 0.98]   # a night's noise, repeatable


def night(path: Path, number: int, speedup: float, *, version: str = "1", machine: str = "m x2",
          sizes: dict | None = None) -> Path:
    record = {"case": CASE, "backend": "b", "outcome": "passed", "phase": None, "signature": None, "expected": "pass",
              "verdict": "ok", "duration_s": 1.0, "sizes": sizes or {},
              "perf": {"threads": 1, "speedup": {"value": speedup, "low": speedup / 1.05, "high": speedup * 1.05},
                       "compiled": {"median": 1e-4 / speedup}, "eager": {"median": 1e-4}}}
    environment = {"torch": "2.13.0", "machine": machine, "backends": {"b": {"versions": {"torch-mlir": version}}}}
    report = build_report(environment, [record], True, run_id=f"night-{number}", created=1.8e9 + number * 86400)
    target = path / f"night-{number}.json"
    target.write_text(json.dumps(report), encoding="utf-8")
    return target


def history(tmp_path: Path, speedups: list[float], **per_night) -> Path:
    db = tmp_path / "history.db"
    with open_history(db, write=True) as store:
        for number, speedup in enumerate(speedups):
            store.ingest(night(tmp_path, number, speedup, **{k: v(number) for k, v in per_night.items()}))
    return db


def changes(db: Path) -> list[dict]:
    with open_history(db, write=False) as store:
        return perf_changes(store)


STEP = [2.0 * w for w in WOBBLE[:8]] + [1.0 * w for w in WOBBLE[8:12]]   # twice as slow from run 9


def new_version_at(run: int):
    return lambda n: "1" if n + 1 < run else "2"


def test_a_step_is_flagged_from_its_fourth_run_dated_from_its_first_with_what_changed(tmp_path):
    [change] = changes(history(tmp_path, STEP, version=new_version_at(9)))
    assert (change["status"], change["since"], change["run"]) == ("slower", 9, 12)
    assert change["changed"] == {"torch-mlir": ["1", "2"]} and change["baseline"] == pytest.approx(2.0, rel=0.03)


def test_a_step_seen_in_three_runs_only_is_not_reported_yet(tmp_path):
    assert changes(history(tmp_path, STEP[:-1], version=new_version_at(9))) == []


def test_a_step_is_placed_where_the_versions_changed_not_where_a_busy_night_blurs_it(tmp_path):
    blurred = STEP[:8] + [1.8] + STEP[9:]   # the step's first night looks like the old level
    [change] = changes(history(tmp_path, blurred, version=new_version_at(9)))
    assert change["since"] == 9


def test_a_step_without_a_change_of_versions_is_the_machine_not_the_code(tmp_path):
    assert changes(history(tmp_path, STEP)) == []


def test_noise_alone_flags_nothing_even_when_the_versions_change_every_night(tmp_path):
    assert changes(history(tmp_path, [1.5 * w for w in WOBBLE], version=str)) == []


def test_timings_compare_on_one_machine_only(tmp_path):
    db = history(tmp_path, STEP, version=new_version_at(9), machine=lambda n: "m x2" if n < 8 else "another x64")
    assert changes(db) == []   # four runs on the new machine: too few to judge


def test_any_change_of_a_size_figure_is_listed(tmp_path):
    db = history(tmp_path, [1.0, 1.0, 1.0], sizes=lambda n: {"linalg_ops": 120 if n < 2 else 134, "torch_ops": 7})
    with open_history(db, write=False) as store:
        assert size_changes(store) == [{"case": CASE, "backend": "b", "name": "linalg_ops", "before": 120,
                                        "after": 134, "previous": 2, "run": 3}]


def test_history_show_lists_speed_and_size_changes_beside_correctness(tmp_path, capsys):
    db = history(tmp_path, STEP, version=new_version_at(9), sizes=lambda n: {"linalg_ops": 120 if n < 11 else 134})
    assert main(["history", "show", str(db)]) == 0
    out = capsys.readouterr().out
    assert "slower or faster than the runs before (--perf) (1)" in out
    assert f"since run 9  b  {CASE}  slower: speedup 2.01x -> 0.98x  torch-mlir 1 -> 2" in out
    assert f"run 12  b  {CASE}  linalg_ops 120 -> 134 (run 11 -> 12)" in out
    assert main(["history", "show", str(db), "--format=json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [c["status"] for c in shown["performance"]] == ["slower"] and len(shown["sizes"]) == 1


def test_the_history_page_plots_the_geomean_speedup_and_lists_the_step_with_a_sparkline(tmp_path):
    from harness.views.history_html import render_history_html

    db = history(tmp_path, STEP, version=new_version_at(9))
    with open_history(db, write=False) as store:
        page = render_history_html(store)
    assert "<h2>Geomean speedup over eager (--perf)</h2>" in page and "b, run 11: 1x" in page
    assert "<h2>Slower or faster than the runs before (--perf)</h2>" in page
    assert "speedup over eager, oldest first: run 1 2x, run 2 2.06x" in page   # the sparkline's tooltip
    assert "torch-mlir 1 \u2192 2" in page
