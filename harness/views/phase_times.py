"""Time and memory by phase, per backend, from every record: where a backend spends its time
(the anchor is SHARK-TestSuite's per-stage time report, with every phase and every case counted)."""
from __future__ import annotations

import dataclasses
import statistics

from harness.outcomes import Phase
from harness.record import Record


@dataclasses.dataclass(frozen=True)
class PhaseRow:
    backend: str
    phase: str
    cases: int            # results that spent time in the phase
    total_s: float
    median_s: float
    slowest: str          # the case that spent the most wall time in it
    slowest_s: float
    cpu_s: float          # total CPU seconds (the worker's threads and the compilers it waited for)
    peak_mb: float | None  # the highest peak resident memory of a worker in it; None: not measured


def phase_rows(records: list[Record]) -> list[PhaseRow]:
    """One row per (backend, phase) that any result spent time in, backends sorted, phases in order."""
    rows = []
    for backend in sorted({r.backend for r in records}):
        mine = [r for r in records if r.backend == backend]
        for phase in (p.value for p in Phase):
            timed = [(r.findings.phase_durations[phase], r) for r in mine if phase in r.findings.phase_durations]
            if not timed:
                continue
            seconds, slowest = max(timed, key=lambda pair: pair[0])
            found = [r.findings for _, r in timed]
            peaks = [f.phase_peak_mb[phase] for f in found if phase in f.phase_peak_mb]
            rows.append(PhaseRow(backend, phase, len(timed), sum(s for s, _ in timed),
                                 statistics.median(s for s, _ in timed), slowest.case, seconds,
                                 sum(f.phase_cpu_s.get(phase, 0.0) for f in found), max(peaks, default=None)))
    return rows
