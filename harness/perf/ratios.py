"""Two sets of timed results, case by case: two backends of one report (two lowerings), or one
backend in two reports (two runs, two versions). `python -m harness perf compare`.

Each case's ratio is B's time over A's, and each side's time is taken against the eager calls
interleaved with it (harness.worker.timing): what slowed the machine during one run cancels, so
two runs of the same code compare as equal. A model of ONNX's has no eager side; its raw medians
are compared. The interval is a percentile bootstrap over each side's samples (pairs stay
pairs): the ratio of medians has no rank test of its own, and the bootstrap gives the interval a
reader needs to see how big a difference is, not only whether there is one. When both sides were
timed in several rounds (--perf-rounds), the rounds are the unit instead: Welch's t interval over
their figures, which holds the noise between processes that one process's samples cannot show.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

from harness.errors import HarnessInputError
from harness.files import display_path
from harness.perf.rounds import compiled_samples, is_timed, pairs, round_time, rounds_of
from harness.perf.stats import geomean, median, ratio, ratio_of_rounds, relative_time
from harness.reports import read_report

# A difference within this fraction either way is not called significant. One run's samples show
# the noise within a worker, not between two: the same code, compiled in another process, times
# differently (its memory layout), and two quiet runs of the convolution-gradient cases here differed by
# a median 6% and a 95th percentile of 25% per case. At 0.25, 97% of the cases of an A/A come out
# not significant (the worst of 7 pairs of runs 93%); at 0, 52% (benchmarks/RESULTS.md, 2026-12-03).
MIN_CHANGE = 0.25


@dataclasses.dataclass
class Side:
    """One side of a comparison: a backend's timed results in a report."""

    label: str                       # "linalg-on-tensors (run.json)"
    timed: dict[str, dict]           # case id -> the record's perf figures


def timed_backends(report: dict) -> dict[str, dict[str, dict]]:
    """Per backend, per case: the perf figures of its timed results."""
    found: dict[str, dict[str, dict]] = {}
    for record in report["results"]:
        perf = record.get("perf")
        if isinstance(perf, dict) and is_timed(perf):
            found.setdefault(record["backend"], {})[record["case"]] = perf
    return found


def sides(reports: Sequence[Path], backends: Sequence[str]) -> tuple[Side, Side]:
    """A and B from the command line: one report and two backends, or two reports and a backend
    each (one name for both, or none when each report timed one backend besides eager)."""
    if len(reports) == 1:
        if len(backends) != 2:
            raise HarnessInputError("perf compare", "one report compares two of its backends",
                                    "name them: --backends A,B (or give two reports)")
        found = _timed(reports[0])
        return _side(reports[0], found, backends[0]), _side(reports[0], found, backends[1])
    if len(reports) != 2 or len(backends) > 2:
        raise HarnessInputError("perf compare", "give one report and --backends A,B, or two reports "
                                "(and at most one backend for each)")
    names: list[str | None] = [*backends] * 2 if len(backends) == 1 else [*backends] or [None, None]
    return _side(reports[0], _timed(reports[0]), names[0]), _side(reports[1], _timed(reports[1]), names[1])


def _timed(path: Path) -> dict[str, dict[str, dict]]:
    found = timed_backends(read_report(path))
    if not found:
        raise HarnessInputError(display_path(path), "has no timed results", "run pytest with --perf to time cases")
    return found


def _side(path: Path, found: dict[str, dict[str, dict]], name: str | None) -> Side:
    if name is None:
        candidates = [n for n in found if n != "eager"] or list(found)
        if len(candidates) > 1:
            raise HarnessInputError(display_path(path), f"holds timed results of {len(candidates)} backends "
                                    f"({', '.join(sorted(candidates))})", "pick one with --backends NAME")
        name = candidates[0]
    if name not in found:
        raise HarnessInputError(f"--backends {name}", f"{display_path(path)} has no timed results of it",
                                f"use one of {', '.join(sorted(found))}")
    return Side(f"{name} ({display_path(path)})", found[name])


def compare(a: Side, b: Side, min_change: float = MIN_CHANGE) -> dict[str, Any]:
    """The comparison as JSON: per case A's and B's compiled medians (seconds), B/A with its
    interval and significance (beyond `min_change` either way); the counts; the geomean of B/A."""
    common = sorted(set(a.timed) & set(b.timed))
    if not common:
        raise HarnessInputError(f"{a.label} and {b.label}", f"no timed case in common ({len(a.timed)} and "
                                f"{len(b.timed)} timed cases)", "compare runs of the same cases")
    cases = [_case(case, a.timed[case], b.timed[case], min_change) for case in common]
    significant = [c for c in cases if c["significant"]]
    summary = geomean([{"value": c["ratio"], "low": c["low"], "high": c["high"]} for c in cases])
    return {"a": a.label, "b": b.label, "cases": cases,
            "faster": sum(c["ratio"] < 1 for c in significant), "slower": sum(c["ratio"] > 1 for c in significant),
            "not_significant": len(cases) - len(significant), "geomean": summary,
            "only_a": len(set(a.timed) - set(b.timed)), "only_b": len(set(b.timed) - set(a.timed)),
            "min_change": min_change}


def _case(case: str, a: dict, b: dict, min_change: float) -> dict[str, Any]:
    """Two sides timed in several rounds each compare round by round (harness.perf.rounds); else
    their samples, pooled over the rounds, are bootstrapped."""
    paired = "eager" in a and "eager" in b
    rounds_a, rounds_b = rounds_of(a), rounds_of(b)
    if len(rounds_a) > 1 and len(rounds_b) > 1:
        figures = ratio_of_rounds([round_time(r, paired) for r in rounds_a],
                                  [round_time(r, paired) for r in rounds_b], min_change)
    elif paired:
        figures = ratio(_pooled(rounds_a, pairs), _pooled(rounds_b, pairs), relative_time, min_change)
    else:
        figures = ratio(_pooled(rounds_a, compiled_samples), _pooled(rounds_b, compiled_samples), median, min_change)
    return {"case": case, "a": a["compiled"]["median"], "b": b["compiled"]["median"], **figures,
            "against_eager": paired, "rounds": [len(rounds_a), len(rounds_b)]}


def _pooled(rounds: list[dict], items: Any) -> list:
    return [item for r in rounds for item in items(r)]


def compare_text(result: dict[str, Any]) -> str:
    """The comparison for a terminal: one line per case, then the counts and the geomean."""
    width = max(len("case"), *(len(c["case"]) for c in result["cases"]))
    lines = [f"A: {result['a']}", f"B: {result['b']}",
             "B/A: B's time over A's, each against the eager calls timed beside it; 95% interval: "
             + _interval_kind(result["cases"])
             + (f"; significant beyond {result['min_change']:.0%} either way" if result["min_change"] else ""), "",
             f"{'case':<{width}}  {'A':>9}  {'B':>9}  {'B/A':>6}  {'interval':<15}"]
    for c in result["cases"]:
        verdict = ("faster" if c["ratio"] < 1 else "slower") if c["significant"] else "not significant"
        lines.append(f"{c['case']:<{width}}  {_seconds(c['a']):>9}  {_seconds(c['b']):>9}  {c['ratio']:>6.3f}  "
                     f"{c['low']:.3f}-{c['high']:.3f}      {verdict}")
    g = result["geomean"]
    lines += ["", f"{len(result['cases'])} cases timed on both sides: {result['faster']} faster, {result['slower']} "
                  f"slower, {result['not_significant']} not significant; geomean B/A {g['value']:.3f} "
                  f"({g['low']:.3f}-{g['high']:.3f})"]
    if result["only_a"] or result["only_b"]:
        lines.append(f"left out: {result['only_a']} cases timed in A only, {result['only_b']} in B only")
    return "\n".join(lines) + "\n"


def _interval_kind(cases: list[dict[str, Any]]) -> str:
    by_rounds = sum(min(c["rounds"]) > 1 for c in cases)
    if by_rounds == len(cases):
        return "t over the rounds"
    return "bootstrap over the samples" + (f" (t over the rounds for {by_rounds})" if by_rounds else "")


def _seconds(value: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"
