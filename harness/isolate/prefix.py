"""The cut for errors that only show in combination (`python -m harness isolate`, when no op is
off alone): the program's prefixes, each up to a candidate op and returning every value the rest
reads, are run on the backend and judged as the ops are; a bisection over the ops' order finds the
first prefix whose results diverge, assuming that a prefix longer than a divergent one diverges
too (an error does not heal downstream). Each prefix is written by the reference process
(harness.isolate.reference with "prefix") and run as one more op of the isolating family (Family.isolates).
Controller side: it imports no torch."""
from __future__ import annotations

from typing import Any

from harness.isolate import failure_line


def first_divergent_prefix(isolation: Any, ops: list[dict]) -> dict | None:
    """{"node", "op", "module", "source", "prefixes_run", "text"} of the first divergent prefix's
    boundary op, or None when the whole program's prefix up to its last op does not diverge (then
    the error is in what follows the last candidate op, or the backend's run is not deterministic).
    `isolation`: the harness.isolate.engine.Isolation it serves."""
    isolation.log("no op is off alone: cutting the program at growing prefixes")
    verdicts: dict[int, bool | str] = {}

    def diverges(index: int) -> bool | str:
        if index not in verdicts:
            verdicts[index] = _prefix_verdict(isolation, ops[index])
            isolation.log(f"  the prefix up to {ops[index]['node']}: "
                          f"{'diverges' if verdicts[index] is True else verdicts[index] or 'matches'}")
        return verdicts[index]

    last = diverges(len(ops) - 1)
    if last is not True:
        return None if last is False else _cut(ops[-1], len(verdicts), f"fails on the backend: {last}")
    low, high = 0, len(ops) - 1   # high's prefix diverges; every prefix before low's does not
    while low < high:
        middle = (low + high) // 2
        verdict = diverges(middle)
        if isinstance(verdict, str):
            return _cut(ops[middle], len(verdicts), f"fails on the backend: {verdict}")
        low, high = (low, middle) if verdict else (middle + 1, high)
    return _cut(ops[high], len(verdicts), "diverges first")


def _prefix_verdict(isolation: Any, op: dict) -> bool | str:
    """True when the prefix up to the op diverges (a result the family's rule fails, further from
    float64 than eager's), False when it matches, else why it did not run."""
    written = isolation.write_prefix(op["node"])
    result = isolation.run_isolated([written])
    notes = result.findings.notes.get("isolate")
    if not notes or not notes["figures"]:
        return failure_line(result)
    figures = notes["figures"]
    return any(figures[name]["error"] is None or figures[name]["error"] > figures[name]["eager_error"]
               for name in notes["off"])


def _cut(op: dict, runs: int, what: str) -> dict:
    text = (f"no op is off alone; the program up to {op['op']} (node {op['node']}, {op['module'] or 'the program'}) "
            f"{what} ({runs} prefixes run)" + (f"\n   source: {op['source']}" if op["source"] else ""))
    return {"node": op["node"], "op": op["op"], "module": op["module"], "source": op["source"],
            "prefixes_run": runs, "text": text}
