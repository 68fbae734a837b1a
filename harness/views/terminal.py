"""The lit-style terminal summary: counts per backend, then each unexpected result on one line."""
from __future__ import annotations

import collections

from harness.outcomes import Outcome, Verdict
from harness.record import Record
from harness.views.speed import backend_speeds, speed_line


def terminal_lines(records: list[Record]) -> list[str]:
    """Per backend: counts per outcome, then each unexpected result on one line."""
    lines = []
    for backend in sorted({r.backend for r in records}):
        mine = sorted((r for r in records if r.backend == backend), key=lambda r: r.case)
        outcomes = collections.Counter(r.outcome for r in mine)
        counts = "  ".join(f"{o.value}={outcomes[o]}" for o in Outcome if outcomes[o])
        lines.append(f"{backend}: {len(mine)} cases  {counts}")
        lines += [f"  perf: {speed_line(row)}" for row in backend_speeds(mine)]
        for r in mine:
            if r.flaky:
                lines.append(f"  FLAKY: {r.case} [attempts: {', '.join(a.outcome.value for a in r.attempts)}]"
                             + ("" if r.verdict is Verdict.FLAKY else " (fails the run; --flaky-ok lets it pass)"))
            elif r.verdict is Verdict.FLAKY:
                lines.append(f"  FLAKY: {r.case} [{r.outcome.value}] its entry says its outcome is nondeterministic "
                             f"({r.expectation_source})")
            elif r.verdict.is_unexpected:
                where = f" in {r.phase}" if r.phase else ""
                first = r.message.splitlines()[0][:160] if r.message else ""
                lines.append(f"  {r.verdict.value.upper()}: {r.case} [{r.outcome.value}{where}] {first}")
    return lines


