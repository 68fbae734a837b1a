"""The backend table of docs/reference/backends.md, from a report: backends with their counts per family,
and the ops whose lowering path differs between cases or backends."""
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
    """Markdown: per backend, each op that takes more than one path in the report (from one case to
    another, or from one backend to another), how many cases took each path, and passed."""
    paths: dict[tuple[str, str], collections.Counter] = {}
    for r in records:
        for op, path in r.lowering.items():
            counts = paths.setdefault((r.backend, op), collections.Counter())
            counts[path] += 1
            counts[path + " passed"] += r.outcome is Outcome.PASSED
    taken: dict[str, set[str]] = collections.defaultdict(set)
    for (_, op), counts in paths.items():
        taken[op].update(k for k in counts if not k.endswith(" passed"))
    shown = {key: counts for key, counts in paths.items() if len(taken[key[1]]) > 1}
    if not shown:
        return ""
    words = sorted({w for _, op in shown for w in taken[op]})
    rows = [["backend", "op", *(f"{w}: cases (passed)" for w in words)], ["---"] * (2 + len(words))]
    for (backend, op), c in sorted(shown.items(), key=lambda item: (item[0][1], item[0][0])):
        rows.append([f"`{backend}`", f"`{op}`", *(f"{c[w]} ({c[w + ' passed']})" if c[w] else "" for w in words)])
    return _markdown(rows)


def _markdown(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"

