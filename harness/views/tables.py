"""The backend table of docs/reference/backends.md, from a report: backends with their counts per family,
lowering paths."""
from __future__ import annotations

import collections

from harness.outcomes import Expected, Outcome
from harness.record import Record


def backend_table(records: list[Record], configs: dict) -> str:
    """Markdown: per backend, what it exercises, how to install it, and its counts per family."""
    families = sorted({r.case.split("/")[0] for r in records})
    head = ["backend", "what it exercises", "install"] + [f"{f}: passed / xfail / crash set" for f in families]
    rows = [head, ["---"] * len(head)]
    for backend in sorted({r.backend for r in records}):
        config = configs.get(backend)
        row = [f"`{backend}`", config.description if config else "", f"`{config.install}`" if config else ""]
        for family in families:
            mine = [r for r in records if r.backend == backend and r.case.startswith(family + "/")]
            passed = sum(r.outcome is Outcome.PASSED for r in mine)
            expected = collections.Counter(r.expected for r in mine)
            row.append(f"{passed} / {expected[Expected.XFAIL]} / {expected[Expected.CRASH]}" if mine else "not run")
        rows.append(row)
    return _markdown(rows)


def lowering_table(records: list[Record]) -> str:
    """Markdown: per backend and watched op, how many cases took each lowering path, and passed."""
    paths: dict[tuple[str, str], collections.Counter] = {}
    for r in records:
        for op, path in r.notes.items():
            if path in ("direct", "decomposed"):
                counts = paths.setdefault((r.backend, op), collections.Counter())
                counts[path] += 1
                counts[path + " passed"] += r.outcome is Outcome.PASSED
    if not paths:
        return ""
    rows = [["backend", "op", "decomposed: cases (passed)", "direct: cases (passed)"], ["---"] * 4]
    for (backend, op), c in sorted(paths.items()):
        rows.append([f"`{backend}`", f"`{op}`", f"{c['decomposed']} ({c['decomposed passed']})",
                     f"{c['direct']} ({c['direct passed']})"])
    return _markdown(rows)


def _markdown(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"

