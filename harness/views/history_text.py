"""`python -m harness history show DB`: what changed in the latest runs, as a terminal table."""
from __future__ import annotations

import datetime
from typing import Any

SECTIONS = (("new_failure", "new failures"), ("fixed", "fixed"), ("flaky", "flaky"), ("failing", "still failing"))
SHOWN = 50   # rows per section; --format=json lists them all


def history_text(runs: list[dict[str, Any]], cases: list[dict[str, Any]]) -> str:
    if not runs:
        return "no runs recorded yet"
    latest = runs[-1]
    lines = [f"{len(runs)} run{'s' if len(runs) != 1 else ''}; the latest, run {latest['run']}, "
             f"{when(latest['created'])}: {latest['command'] or latest['source']}"]
    for status, title in SECTIONS:
        chosen = [c for c in cases if c["status"] == status]
        if not chosen:
            continue
        lines += ["", f"{title} ({len(chosen)})", *table([row(c) for c in chosen[:SHOWN]])]
        if len(chosen) > SHOWN:
            lines.append(f"  ... and {len(chosen) - SHOWN} more (--format=json lists every one)")
    if len(lines) == 1:
        lines += ["", "every case passed in its latest run and in the one before"]
    return "\n".join(lines)


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
    return [when_, case["backend"], case["case"], outcome, case["recent"], detail or "nothing recorded changed"]


def table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  " + "  ".join(cell.ljust(width) for cell, width in zip(r, widths)) + "  " + r[-1] for r in rows]


def when(created: float) -> str:
    return datetime.datetime.fromtimestamp(created, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def describe_changes(changed: dict[str, list] | None, arrow: str = "\u2192") -> str:
    """`changed` as text: "torch 2.13.0 -> 2.14.0, torch-mlir 20261001 -> 20261002"."""
    return ", ".join(f"{name} {old} {arrow} {new}" for name, (old, new) in (changed or {}).items())
