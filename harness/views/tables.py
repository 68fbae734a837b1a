"""The backend table of docs/reference/backends.md, from a report: backends with their counts per family,
and the ops whose lowering paths differ between backends of one class."""
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


def lowering_table(records: list[Record], configs: dict) -> str:
    """Markdown: each op whose paths differ between backends of one class (torch-mlir's default
    config decomposes aten.convolution_backward where the direct one keeps it), per backend how
    many cases took each path, and passed. An op that takes several paths alike on every backend
    (by its case's program) tells nothing of a backend; backends of different classes speak of
    paths in different words (torch-mlir's kept, Inductor's generated), so they never compare."""
    paths: dict[tuple[str, str], collections.Counter] = {}
    for r in records:
        for op, path in r.findings.lowering.items():
            counts = paths.setdefault((r.backend, op), collections.Counter())
            counts[path] += 1
            counts[path + " passed"] += r.outcome is Outcome.PASSED
    taken: dict[tuple[str, str], set[frozenset]] = collections.defaultdict(set)   # (class, op): path sets
    for (backend, op), counts in paths.items():
        taken[_vocabulary(backend, configs), op].add(frozenset(k for k in counts if not k.endswith(" passed")))
    shown = {key: c for key, c in paths.items() if len(taken[_vocabulary(key[0], configs), key[1]]) > 1}
    if not shown:
        return ""
    words = sorted({w for c in shown.values() for w in c if not w.endswith(" passed")})
    rows = [["backend", "op", *(f"{w}: cases (passed)" for w in words)], ["---"] * (2 + len(words))]
    for (backend, op), c in sorted(shown.items(), key=lambda item: (item[0][1], item[0][0])):
        rows.append([f"`{backend}`", f"`{op}`", *(f"{c[w]} ({c[w + ' passed']})" if c[w] else "" for w in words)])
    return _markdown(rows)


def _vocabulary(backend: str, configs: dict) -> str:
    """The backends whose paths compare: those of one class (a backend without a config is alone)."""
    config = configs.get(backend)
    return config.class_path if config else f"backend {backend}"


def _markdown(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"

