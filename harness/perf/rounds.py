"""--perf-rounds: a passed case timed in several workers, each one fresh, that built and compiled it
again (harness.controller.runner).

The same program times differently a few seconds later in another process, by more than one
process's samples show: on the tiny models, eager's median moved by a typical 7 to 22% from round
to round, the compiled side's by 2 to 9%, mostly from what else ran on the cores at the time (a
two-thread load beside it made eager up to 4.6x slower; benchmarks/RESULTS.md). With rounds, the
round is the unit: each gives one figure, and the case's figure is their geometric mean with a t
interval over the rounds (harness.perf.stats.over_rounds). A record keeps every round's
summaries and samples under `rounds`; its top-level `compiled` and `eager` pool the samples.
"""
from __future__ import annotations

from typing import Any, TypeGuard

from harness.perf.stats import median, over_rounds, relative_time, summary

SIDES = ("compiled", "eager")


def is_timed(perf: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """A record's perf figures hold a timing (not `skipped` or `error`)."""
    return perf is not None and "compiled" in perf


def compiled_samples(round_: dict[str, Any]) -> list[float]:
    return round_["compiled"]["samples"]


def rounds_of(perf: dict[str, Any]) -> list[dict[str, Any]]:
    """A timed record's rounds: its `rounds`, or the record itself when it was timed once."""
    return perf.get("rounds") or [perf]


def pairs(round_: dict[str, Any]) -> list[tuple[float, float]]:
    """A round's (eager, compiled) samples, in the order they were taken."""
    return list(zip(round_["eager"]["samples"], round_["compiled"]["samples"]))


def round_time(round_: dict[str, Any], against_eager: bool) -> float:
    """A round's one figure of time: the compiled side's over eager's, or its own median."""
    return relative_time(pairs(round_)) if against_eager else median(compiled_samples(round_))


def merge(rounds: list[dict[str, Any]], wanted: int) -> dict[str, Any]:
    """The figures of a case timed in `rounds` (each as harness.worker.timing gives them; the first
    round's worker is the one that ran the case), `wanted` having been asked for."""
    missing = {"rounds_missing": wanted - len(rounds)} if len(rounds) < wanted else {}
    if len(rounds) == 1:
        return {**rounds[0], **missing}
    sides = [side for side in SIDES if side in rounds[0]]
    figures: dict[str, Any] = {"threads": rounds[0]["threads"]}
    for side in sides:
        pooled = summary([s for r in rounds for s in r[side]["samples"]])
        del pooled["samples"]          # they stay in the rounds
        figures[side] = pooled
    if "eager" in sides:
        figures["speedup"] = over_rounds([1 / round_time(r, True) for r in rounds])
    figures["rounds"] = [{key: r[key] for key in (*sides, "speedup", "stopped") if key in r} for r in rounds]
    return {**figures, **missing}
