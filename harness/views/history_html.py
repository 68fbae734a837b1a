"""The history page (`python -m harness history show DB --html PATH`): one self-contained HTML file.

Charts per backend over the runs (the pass rate; with timings, the geomean speedup over eager;
the median compile time and the peak memory), the cases that got slower or faster, and a table of
every case that is not plain passing (new failures, flaky, fixed, still failing) with a strip of
its last outcomes and a sparkline of its speedup, all drawn as inline SVG by the template (no
script is needed to see them; nothing is fetched). A small script filters the table by status,
backend and text (`#q=TEXT` links to a filtered view), as the matrix page does, writing with
textContent only.

A run with results on a backend but no figure for a chart (no case compiled: a compile time of 0,
or no memory measured) is a gap in that backend's line, not a point at 0. The speedup line joins
its timed runs across runs without --perf, which are not missing figures but other kinds of run.
"""
from __future__ import annotations

import importlib.resources
from typing import Any

import jinja2
import markupsafe

from harness.history import status
from harness.history.perf_changes import backend_trends, perf_changes, speedup_series
from harness.history.store import HISTORY_OUTCOMES, OUTCOME_CODES, HistoryStore
from harness.outcomes import Outcome
from harness.views.history_text import describe_changes, when, when_text

CASES_SHOWN = 5000          # table rows; the JSON view lists every case
CHART = {"width": 720, "height": 220, "left": 56, "right": 12, "top": 12, "bottom": 28}
SPARK = {"width": 90, "height": 16}   # a case's speedup over its last runs
# One colour per backend line, and one per outcome in the strips (as the matrix page colours them).
LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22"]
# Every outcome named; not_run has no colour, as it has no letter in the history.
OUTCOME_COLOURS: dict[Outcome, str | None] = {
    Outcome.PASSED: "#2da44e", Outcome.MISMATCH: "#d4a72c", Outcome.COMPILE_ERROR: "#cf222e",
    Outcome.RUNTIME_ERROR: "#e16f24", Outcome.CRASHED: "#8250df", Outcome.TIMED_OUT: "#6e40c9",
    Outcome.WRONG_LOWERING: "#1f9e94", Outcome.NOT_RUN: None}
_BY_CODE = {OUTCOME_CODES[o]: o for o in HISTORY_OUTCOMES}   # a strip's letter -> its outcome
STATUS_TITLES = {"new_failure": "new failure", "flaky": "flaky", "fixed": "fixed", "failing": "still failing"}

_ASSETS = importlib.resources.files("harness.views") / "assets"
_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    (_ASSETS / "history.html.j2").read_text(encoding="utf-8"))
_JS = markupsafe.Markup((_ASSETS / "history.js").read_text(encoding="utf-8"))


def render_history_html(store: HistoryStore) -> str:
    runs = status.runs(store)
    cases = status.case_statuses(store)
    rates, trends, series = status.pass_rates(store), backend_trends(store), speedup_series(store)
    backends = sorted({c["backend"] for c in cases} | {r["backend"] for r in rates})
    charts = [("Pass rate per backend", line_chart(
        {(r["run"], r["backend"]): (r["passed"] / r["results"], f"{r['passed']} of {r['results']} passed "
                                    f"({r['passed'] / r['results']:.1%})")
         for r in rates if r["results"]}, runs, 1.0, "{:.0%}"))]
    for key, title, unit in (("speedup", "Geomean speedup over eager (--perf)", "{:.2g}x"),
                             ("compile_s", "Median compile time (export to compile), seconds", "{:.2g} s"),
                             ("peak_mb", "Peak memory of a worker, MiB", "{:.0f} MiB")):
        points = trend_points(trends, key, unit)
        values = [v for v, _ in points.values() if v is not None]
        if values:
            charts.append((title, line_chart(points, runs, max(values) * 1.1, unit)))
    return _TEMPLATE.render(
        title=f"history of {store.path.name}", runs=runs, latest=runs[-1] if runs else None,
        latest_when=when(runs[-1]["created"]) if runs else "", charts=charts,
        backends=backends, statuses=STATUS_TITLES, cases=[_row(c, series) for c in cases[:CASES_SHOWN]],
        n_cases=len(cases), speed=[_speed_row(c, series) for c in perf_changes(store)[:CASES_SHOWN]],
        legend=[(o.value, OUTCOME_COLOURS[o]) for o in HISTORY_OUTCOMES], js=_JS)


def trend_points(trends: list[dict[str, Any]], key: str, unit: str) -> dict[tuple[int, str], tuple[float | None, str]]:
    """{(run, backend): (value, its tooltip)} of one figure of backend_trends; a None value is a gap.
    A compile time or memory of 0 is no figure (the sum of no compile phase: no case compiled); a
    run without a speedup is left out, so the line joins the runs timed with --perf."""
    return {(t["run"], t["backend"]): (t[key], unit.format(t[key])) if t[key] else (None, "")
            for t in trends if t[key] is not None or key != "speedup"}


def line_chart(points: dict[tuple[int, str], tuple[float | None, str]], runs: list[dict[str, Any]], top: float,
               label: str) -> dict[str, Any]:
    """Lines (one per backend) of {(run, backend): (value, its tooltip)} over the runs, values from
    0 to `top`, in the SVG's coordinates; `label` formats the y axis's values. A None value breaks
    the backend's line there: each line is its `segments`, polylines between the gaps."""
    c = CHART
    inner_w, inner_h = c["width"] - c["left"] - c["right"], c["height"] - c["top"] - c["bottom"]
    last = max(len(runs), 2)
    top = top or 1.0

    def x(run: int) -> float:
        return round(c["left"] + (run - 1) * inner_w / (last - 1), 1)

    def y(value: float) -> float:
        return round(c["top"] + (1 - value / top) * inner_h, 1)

    lines = []
    for i, backend in enumerate(sorted({b for _, b in points})):
        mine = sorted((run, value, tip) for (run, b), (value, tip) in points.items() if b == backend)
        segments: list[list[str]] = [[]]
        for run, value, _ in mine:
            if value is None:
                if segments[-1]:
                    segments.append([])
            else:
                segments[-1].append(f"{x(run)},{y(value)}")
        lines.append({"backend": backend, "colour": LINE_COLOURS[i % len(LINE_COLOURS)],
                      "segments": [" ".join(s) for s in segments if len(s) > 1],
                      "dots": [{"x": x(run), "y": y(value), "title": f"{backend}, run {run}: {tip}"}
                               for run, value, tip in mine if value is not None]})
    ticks = sorted({1, last if len(runs) > 1 else 1, *range(1, last + 1, max(1, last // 8))})
    return {**c, "lines": lines, "x_ticks": [{"x": x(t), "label": t} for t in ticks if t <= max(len(runs), 1)],
            "y_ticks": [{"y": y(top * k / 4), "label": label.format(top * k / 4)} for k in range(5)],
            "bottom_y": c["height"] - c["bottom"], "right_x": c["width"] - c["right"]}


def sparkline(series: list[tuple[int, float]]) -> dict[str, Any] | None:
    """A case's speedups over its last runs as a small polyline, scaled to their own range."""
    if not series:
        return None
    values = [v for _, v in series]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = SPARK["width"] / max(len(values) - 1, 1)
    points = " ".join(f"{round(i * step, 1)},{round(SPARK['height'] - 2 - (v - low) / span * (SPARK['height'] - 4), 1)}"
                      for i, v in enumerate(values))
    return {**SPARK, "points": points,
            "title": "speedup over eager, oldest first: " + ", ".join(f"run {r} {v:.3g}x" for r, v in series)}


def _speed_row(change: dict[str, Any], series: dict) -> dict[str, Any]:
    return {**change, "changed_text": describe_changes(change.get("changed")),
            "spark": sparkline(series.get((change["case"], change["backend"]), []))}


def _row(case: dict[str, Any], series: dict) -> dict[str, Any]:
    outcomes = [_BY_CODE[code] for code in case["recent"] or ""]
    strip = [{"x": i * 9, "colour": OUTCOME_COLOURS[o], "title": o.value} for i, o in enumerate(outcomes)]
    return {**case, "when": when_text(case), "strip": strip, "strip_width": max(9 * len(strip), 9),
            "changed_text": describe_changes(case.get("changed")),
            "status_title": STATUS_TITLES[case["status"]],
            "spark": sparkline(series.get((case["case"], case["backend"]), []))}
