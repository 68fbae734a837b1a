"""`python -m harness history show DB`: what changed in the latest runs, as a terminal table."""
from __future__ import annotations

import datetime
import re
from typing import Any, Sequence

SECTIONS = (("new_failure", "new failures"), ("fixed", "fixed"), ("flaky", "flaky"), ("failing", "still failing"))
SHOWN = 50   # rows per section; --format=json lists them all


def history_text(runs: list[dict[str, Any]], cases: list[dict[str, Any]], performance: Sequence[dict[str, Any]] = (),
                 sizes: Sequence[dict[str, Any]] = (), culprits: Sequence[dict[str, Any]] = (),
                 ir: Sequence[dict[str, Any]] = (), drifting: Sequence[dict[str, Any]] = ()) -> str:
    """What changed: correctness by status, then the passing outputs that drifted towards their
    tolerance (harness.history.drift), speed (harness.history.perf_changes), sizes and IR
    (harness.history.status.ir_changes), then the mismatches by culprit op
    (harness.history.culprit_groups)."""
    if not runs:
        return "no runs recorded yet"
    latest = runs[-1]
    lines = [f"{len(runs)} run{'s' if len(runs) != 1 else ''}; the latest, run {latest['run']}, "
             f"{when(latest['created'])}: {latest['command'] or latest['source']}"]
    sections = [(title, [row(c) for c in cases if c["status"] == status]) for status, title in SECTIONS]
    sections += [("passing, but closer to their tolerance than before (margin: error over tolerance)",
                  [drift_row(d) for d in drifting]),
                 ("slower or faster than the runs before (--perf)", [perf_row(c) for c in performance]),
                 ("size figures changed", [size_row(c) for c in sizes]),
                 ("IR changed, at the first stage that did (stage fingerprints)", [ir_row(c) for c in ir]),
                 ("mismatches by culprit op (--isolate; their latest results)", [culprit_row(g) for g in culprits])]
    for title, rows in sections:
        if rows:
            lines += ["", f"{title} ({len(rows)})", *table(rows[:SHOWN])]
            if len(rows) > SHOWN:
                lines.append(f"  ... and {len(rows) - SHOWN} more (--format=json lists every one)")
    if len(lines) == 1:
        lines += ["", "every case passed in its latest run and in the one before"]
    return "\n".join(lines)


def drift_row(change: dict[str, Any]) -> list[str]:
    growth = f"{change['now'] / change['baseline']:.3g}x" if change["baseline"] else "from 0"
    return [f"run {change['run']}", change["backend"], change["case"], change["output"],
            f"margin {change['baseline']:.3g} -> {change['now']:.3g} ({growth}; baseline: median of "
            f"{change['runs']} run{'s' * (change['runs'] > 1)})"]


def perf_row(change: dict[str, Any]) -> list[str]:
    figures = f"{change['status']}: speedup {change['baseline']:.3g}x -> {change['latest']:.3g}x"
    detail = describe_changes(change["changed"], "->") or "nothing recorded changed"
    return [f"since run {change['since']}", change["backend"], change["case"], figures,
            "; ".join(filter(None, [detail, ir_note(change)]))]


def ir_row(change: dict[str, Any]) -> list[str]:
    outcome = change["last_outcome"] + (f" in {change['last_phase']}" if change["last_phase"] else "")
    speed = change.get("speed")
    beside = f"{change['status']}, {outcome} in run {change['run']}" + (
        f"; {speed['status']} since run {speed['since']}" if speed else "")
    return [f"since run {change['since']}", change["backend"], change["case"], f"at {change['stage']}", beside]


def ir_note(case: dict[str, Any]) -> str:
    ir = case.get("ir_changed")
    return f"IR changed since run {ir['since']} at {ir['stage']}" if ir else ""


def size_row(change: dict[str, Any]) -> list[str]:
    return [f"run {change['run']}", change["backend"], change["case"],
            f"{change['name']} {change['before']} -> {change['after']} (run {change['previous']} -> {change['run']})"]


def culprit_row(group: dict[str, Any]) -> list[str]:
    results = group["results"]
    first = results[0]
    example = f"e.g. {first['case']} on {first['backend']}" + (f" ({first['module']})" if first["module"] else "")
    more = f" and {len(results) - 1} more" if len(results) > 1 else ""
    return [group["op"], f"{len(results)} result{'s' * (len(results) > 1)}", example + more]


def when_text(case: dict[str, Any], flaky: str = "") -> str:
    """Since when a failing or flaky case is so, else the run its status is about."""
    if case["status"] == "failing":
        return f"since run {case['since']}"
    if case["status"] == "flaky":
        return f"{flaky}since run {case['flaky_since']}"
    return f"run {case['run']}"


def row(case: dict[str, Any]) -> list[str]:
    when_ = when_text(case, flaky="flaky ")
    outcome = case["last_outcome"] + (f" in {case['last_phase']}" if case["last_phase"] else "")
    detail = describe_changes(case.get("changed"), "->")
    if case["status"] in ("failing", "new_failure", "flaky") and case["last_signature"]:
        detail = "; ".join(filter(None, [detail, case["last_signature"][:100]]))
    if case.get("signature_changed"):
        detail = "signature changed: " + detail
    detail = "; ".join(filter(None, [detail or "nothing recorded changed", ir_note(case)]))
    return [when_, case["backend"], case["case"], outcome, case["recent"], detail]


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(r, widths)) + "  " + r[-1] for r in rows]


def when(created: float) -> str:
    return datetime.datetime.fromtimestamp(created, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def describe_changes(changed: dict[str, list] | None, arrow: str = "\u2192") -> str:
    """`changed` as text: "torch 2.13.0 -> 2.14.0, torch-mlir 20261001 -> 20261002". A package the
    environment names twice, by its import name (torch_mlir, the run's) and its distribution name
    (torch-mlir, a backend's), is named once when both changed alike: the first name, in
    `changed`'s (sorted) order the distribution's."""
    seen, parts = set(), []
    for name, (old, new) in (changed or {}).items():
        key = (re.sub(r"[-_.]+", "-", name).lower(), old, new)   # PEP 503's normalised name
        if key not in seen:
            seen.add(key)
            parts.append(f"{name} {old} {arrow} {new}")
    return ", ".join(parts)
