"""The history page (`python -m harness history show DB --html PATH`): one self-contained HTML file.

A pass-rate chart per backend over the runs, and a table of every case that is not plain passing
(new failures, flaky, fixed, still failing) with a strip of its last outcomes, both drawn as
inline SVG by the template (no script is needed to see them; nothing is fetched). A small script
filters the table by status, backend and text (`#q=TEXT` links to a filtered view), as the
matrix page does, writing with textContent only.
"""
from __future__ import annotations

import importlib.resources
from typing import Any

import jinja2
import markupsafe

from harness.history import status
from harness.history.store import HISTORY_OUTCOMES, OUTCOME_CODES, HistoryStore
from harness.outcomes import Outcome
from harness.views.history_text import describe_changes, when, when_text

CASES_SHOWN = 5000          # table rows; the JSON view lists every case
CHART = {"width": 720, "height": 220, "left": 44, "right": 12, "top": 12, "bottom": 28}
# One colour per backend line, and one per outcome in the strips (as the matrix page colours them).
LINE_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
                "#7f7f7f", "#bcbd22"]
# Every outcome named; not_run has no colour, as it has no letter in the history.
OUTCOME_COLOURS: dict[Outcome, str | None] = {
    Outcome.PASSED: "#2da44e", Outcome.MISMATCH: "#d4a72c", Outcome.COMPILE_ERROR: "#cf222e",
    Outcome.RUNTIME_ERROR: "#e16f24", Outcome.CRASHED: "#8250df", Outcome.TIMED_OUT: "#6e40c9", Outcome.NOT_RUN: None}
_BY_CODE = {OUTCOME_CODES[o]: o for o in HISTORY_OUTCOMES}   # a strip's letter -> its outcome
STATUS_TITLES = {"new_failure": "new failure", "flaky": "flaky", "fixed": "fixed", "failing": "still failing"}

_ASSETS = importlib.resources.files("harness.views") / "assets"
_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    (_ASSETS / "history.html.j2").read_text(encoding="utf-8"))
_JS = markupsafe.Markup((_ASSETS / "history.js").read_text(encoding="utf-8"))


def render_history_html(store: HistoryStore) -> str:
    runs = status.runs(store)
    cases = status.case_statuses(store)
    backends = sorted({c["backend"] for c in cases} | {r["backend"] for r in status.pass_rates(store)})
    return _TEMPLATE.render(
        title=f"history of {store.path.name}", runs=runs, latest=runs[-1] if runs else None,
        latest_when=when(runs[-1]["created"]) if runs else "", chart=pass_rate_chart(status.pass_rates(store), runs),
        backends=backends, statuses=STATUS_TITLES, cases=[_row(c) for c in cases[:CASES_SHOWN]],
        n_cases=len(cases), legend=[(o.value, OUTCOME_COLOURS[o]) for o in HISTORY_OUTCOMES], js=_JS)


def pass_rate_chart(rates: list[dict[str, Any]], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Polylines (one per backend) of the pass rate over the runs, in the SVG's coordinates."""
    c = CHART
    inner_w, inner_h = c["width"] - c["left"] - c["right"], c["height"] - c["top"] - c["bottom"]
    last = max(len(runs), 2)

    def x(run: int) -> float:
        return round(c["left"] + (run - 1) * inner_w / (last - 1), 1)

    def y(rate: float) -> float:
        return round(c["top"] + (1 - rate) * inner_h, 1)

    lines = []
    for i, backend in enumerate(sorted({r["backend"] for r in rates})):
        points = [(r["run"], r["passed"] / r["results"], r) for r in rates if r["backend"] == backend and r["results"]]
        lines.append({"backend": backend, "colour": LINE_COLOURS[i % len(LINE_COLOURS)],
                      "points": " ".join(f"{x(run)},{y(rate)}" for run, rate, _ in points),
                      "dots": [{"x": x(run), "y": y(rate), "title": f"{backend}, run {run}: {r['passed']} of "
                                f"{r['results']} passed ({rate:.1%})"} for run, rate, r in points]})
    ticks = sorted({1, last if len(runs) > 1 else 1, *range(1, last + 1, max(1, last // 8))})
    return {**c, "lines": lines, "x_ticks": [{"x": x(t), "label": t} for t in ticks if t <= max(len(runs), 1)],
            "y_ticks": [{"y": y(v / 100), "label": f"{v}%"} for v in (0, 25, 50, 75, 100)],
            "bottom_y": c["height"] - c["bottom"], "right_x": c["width"] - c["right"]}


def _row(case: dict[str, Any]) -> dict[str, Any]:
    outcomes = [_BY_CODE[code] for code in case["recent"] or ""]
    strip = [{"x": i * 9, "colour": OUTCOME_COLOURS[o], "title": o.value} for i, o in enumerate(outcomes)]
    return {**case, "when": when_text(case), "strip": strip, "strip_width": max(9 * len(strip), 9),
            "changed_text": describe_changes(case.get("changed")),
            "status_title": STATUS_TITLES[case["status"]]}
