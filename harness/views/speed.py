"""--perf's figures per backend and per case, for the terminal, Markdown and HTML views: the
geomean speedup over eager with its interval, what was left out, the compile cost."""
from __future__ import annotations

import dataclasses
import statistics

from harness.outcomes import COMPILE_COST_PHASES
from harness.perf.rounds import is_timed
from harness.perf.stats import geomean
from harness.record import Record
from harness.views.markdown_text import code, row


@dataclasses.dataclass(frozen=True)
class BackendSpeed:
    backend: str
    geomean: dict | None      # {"value", "low", "high", "count"} of the speedups over eager; None: none timed
    compiled_only: int        # timed without an eager side (ONNX models)
    skipped: int              # too slow for the budget, or the timing failed
    left_out: int             # failed, crashed or expected to fail: not timed
    compile_median_s: float | None   # the median over the timed cases of export + import + lower + compile
    peak_mb: float | None     # the highest peak resident memory of a worker, any phase, any timed case


@dataclasses.dataclass(frozen=True)
class CaseSpeed:
    case: str
    backend: str
    speedup: dict             # {"value", "low", "high"}
    significant: bool         # the interval excludes 1: faster or slower than eager for sure


def backend_speeds(records: list[Record]) -> list[BackendSpeed]:
    """One per backend with a timed result (a --perf run), sorted."""
    rows = []
    for backend in sorted({r.backend for r in records if r.findings.perf is not None}):
        mine = [r.findings for r in records if r.backend == backend]
        timed = [f for f in mine if is_timed(f.perf)]
        figures = [f.perf for f in timed if f.perf is not None]
        compile_s = [sum(f.phase_durations.get(p, 0.0) for p in COMPILE_COST_PHASES) for f in timed]
        peaks = [mb for f in timed for mb in f.phase_peak_mb.values()]
        rows.append(BackendSpeed(
            backend, geomean([f["speedup"] for f in figures if "speedup" in f]),
            sum(1 for f in figures if "speedup" not in f),
            sum(1 for f in mine if f.perf and not is_timed(f.perf)), sum(1 for f in mine if f.perf is None),
            statistics.median(compile_s) if compile_s else None, max(peaks, default=None)))
    return rows


def case_speeds(records: list[Record]) -> list[CaseSpeed]:
    """Every result timed against eager, by backend and case."""
    return [CaseSpeed(r.case, r.backend, s, not s["low"] <= 1 <= s["high"])
            for r in sorted(records, key=lambda r: (r.backend, r.case))
            if r.findings.perf and (s := r.findings.perf.get("speedup"))]


def speed_line(row: BackendSpeed) -> str:
    """The backend's figures as one line (the terminal summary's)."""
    g = row.geomean
    parts = [f"geomean speedup over eager {g['value']:.3g}x ({g['low']:.3g}-{g['high']:.3g}) over {g['count']} "
             "timed cases" if g else "no case timed against eager"]
    if row.compiled_only:
        parts.append(f"{row.compiled_only} timed without an eager side (ONNX models)")
    if row.skipped:
        parts.append(f"{row.skipped} not timed (too slow for --perf-budget, or the timing failed: see their perf)")
    if row.left_out:
        parts.append(f"{row.left_out} left out (failed, crashed or expected to fail)")
    if row.compile_median_s is not None:
        parts.append(f"median compile {row.compile_median_s:.2f} s")
    if row.peak_mb is not None:
        parts.append(f"peak {row.peak_mb:.0f} MiB")
    return "; ".join(parts)


def speed_markdown(records: list[Record]) -> list[str]:
    """--perf's figures: per backend, then every timed case in a collapsed table."""
    rows = backend_speeds(records)
    if not rows:
        return []
    out = ["## Speed against eager (--perf)", "",
           "Eager's median over the compiled code's, timed interleaved in the worker that compiled the case; "
           "intervals are 95%. The compile time is export to compile; peak is a worker's highest resident "
           "memory.", "",
           row(["backend", "geomean speedup", "interval", "timed", "not timed", "median compile s", "peak MiB"]),
           row(["---", "---:", "---", "---:", "---:", "---:", "---:"])]
    for b in rows:
        g = b.geomean
        out.append(row([code(b.backend), f"{g['value']:.3g}x" if g else "", f"{g['low']:.3g}-{g['high']:.3g}"
                        if g else "", str(g["count"] if g else 0), str(b.skipped + b.left_out),
                        f"{b.compile_median_s:.2f}" if b.compile_median_s is not None else "",
                        f"{b.peak_mb:.0f}" if b.peak_mb is not None else ""]))
    cases = case_speeds(records)
    out += ["", f"<details><summary>{len(cases)} timed results, case by case</summary>", "",
            row(["backend", "case", "speedup", "interval", ""]), row(["---", "---", "---:", "---", "---"])]
    for c in cases:
        s = c.speedup
        out.append(row([code(c.backend), code(c.case), f"{s['value']:.3g}x", f"{s['low']:.3g}-{s['high']:.3g}",
                        "" if c.significant else "not significant"]))
    return out + ["", "</details>", ""]
