"""The README's tables, from a report: backends with their counts per family, lowering paths."""
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


def model_table(records: list[Record]) -> str:
    """Markdown: per model case (`model/<name>/<tier>[/<variant>]`) and backend, passed or the phase
    it failed in with a numbered note; the notes list each distinct failure's signature."""
    mine = [r for r in records if r.case.startswith("model/")]
    backends = sorted({r.backend for r in mine})
    notes: dict[tuple[str, str], int] = {}
    rows = [["model", *(f"`{b}`" for b in backends)], ["---"] * (len(backends) + 1)]
    by_case: dict[str, dict[str, Record]] = {}
    for r in mine:
        by_case.setdefault(r.case.removeprefix("model/"), {})[r.backend] = r
    for case, results in sorted(by_case.items()):
        rows.append([f"`{case}`", *(_model_cell(results.get(b), notes) for b in backends)])
    listed = [f"{n}. {phase}: {signature}" for (phase, signature), n in notes.items()]
    return _markdown(rows) + ("\n" + "\n".join(listed) + "\n" if listed else "")


def _model_cell(record: Record | None, notes: dict[tuple[str, str], int]) -> str:
    if record is None:
        return ""
    if record.outcome is Outcome.PASSED:
        return "pass"
    phase = record.phase.value if record.phase else record.outcome.value
    signature = record.signature or (record.message.splitlines() or [""])[0]
    key = (phase, signature.replace("|", "\\|"))
    number = notes.setdefault(key, len(notes) + 1)
    return f"{record.outcome.value} in {phase} [{number}]" if record.phase else f"{record.outcome.value} [{number}]"


def replace_between(text: str, begin: str, end: str, body: str) -> str:
    """`text` with everything between the two marker lines replaced by `body`."""
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + body + text[stop:]


def _markdown(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(cells) + " |" for cells in rows) + "\n"

