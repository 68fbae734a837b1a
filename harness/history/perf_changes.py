"""Performance changes over the history, learned from the history itself (no hand-edited goldens):

  slower / faster  a case's speedup over eager stepped away from the runs before it, on the same
                   machine and threads, and stayed there: `since` is the first run after the
                   step, `changed` what differs between the run before it and it (ready for
                   `python -m harness bisect`)
  size             a size figure (ops per stage, artifact bytes) differs from the previous run's:
                   they are exact, so any change is one

A step is looked for only where something the backend depends on changed between two runs (a
version, the harness's or the project's commit): runs of the same code measure the same thing, so
a difference between them is noise. That keeps the tests few, and dates a step exactly.

At such a run the case's series splits into a baseline (the WINDOW runs before it) and a tail
(every run since, at least CONFIRM). The difference of their medians must be at least FLOOR times
the noise, and at least Z of its standard errors. The noise is the typical case's on that backend
and machine (the median over its cases of 1.4826 times the median absolute deviation of their
latest runs), or half the case's own if that is larger: one case's own estimate from a few runs is
itself noisy, so it only counts when it is far above the rest. A change is therefore reported
from the CONFIRMth run that shows it, dated from the first; a busy night or two moves no median.
Where versions change every night, every run is such a split and the likeliest one, the best
two-level fit of the runs around it, dates the step.
benchmarks/history_perf.py measures how often this flags a case that did not change, and misses one
that did.
"""
from __future__ import annotations

import itertools
import math
import statistics
from typing import Any, NamedTuple

from harness.history.status import NUMBERED, differences, seen_by, versions_of
from harness.history.store import HistoryStore

WINDOW = 20        # runs in a baseline
MIN_BASELINE = 5   # runs a baseline needs before a case is judged
CONFIRM = 4        # runs a tail needs: a step is reported from its fourth run on
FLOOR = 3.0        # the smallest step, in units of the noise
Z = 5.0            # how many standard errors a step's medians must differ by
SERIES = 60        # the latest timed runs read per case: a step further back is not looked for
MEDIAN_ERROR = math.sqrt(math.pi / 2)   # a median's standard error over a mean's, for normal noise


class Point(NamedTuple):
    run: int
    seq: int
    value: float
    low: float
    high: float
    changed: bool = False   # something the backend depends on differs from the point before


def perf_changes(store: HistoryStore) -> list[dict[str, Any]]:
    """Every (case, backend) whose latest timing is out of its band, the latest step first."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        ranked AS (SELECT t."case", t.backend, coalesce(r.machine, '') AS machine, coalesce(t.threads, 0) AS threads,
                          n.run, t.seq, t.speedup, t.low, t.high,
                          row_number() OVER (PARTITION BY t."case", t.backend ORDER BY n.run DESC) AS back
                   FROM timings t JOIN runs r USING (seq) JOIN numbered n USING (seq)
                   WHERE t.speedup > 0 AND t.low > 0 AND t.high > 0)
        SELECT "case", backend, machine, threads, run, seq, speedup, low, high FROM ranked WHERE back <= {SERIES}
        ORDER BY "case", backend, run""").fetchall()
    versions = versions_of(store, {row[5] for row in rows})
    series: dict[tuple, list[Point]] = {}
    for (case, backend), grouped in itertools.groupby(rows, key=lambda row: row[:2]):
        group = list(grouped)
        latest = group[-1][2:4]   # judged on the machine and threads of its latest timing
        series[(case, backend, *latest)] = _points([row[4:] for row in group if tuple(row[2:4]) == latest],
                                                   versions, backend)
    typical = _typical_noise(series)
    changes = []
    for (case, backend, machine, threads), points in series.items():
        step = find_step(points, typical.get((backend, machine, threads), 0.0))
        if step is not None:
            changes.append({"case": case, "backend": backend, **step})
    for change in changes:
        change["changed"] = differences(seen_by(versions[change.pop("before_seq")], change["backend"]),
                                        seen_by(versions[change.pop("since_seq")], change["backend"]))
    return sorted(changes, key=lambda c: (-c["since"], c["backend"], c["case"]))


def _points(rows: list[tuple], versions: dict[int, dict], backend: str) -> list[Point]:
    seen = [seen_by(versions[row[1]], backend) for row in rows]
    return [Point(run, seq, value, low, high, changed=i > 0 and seen[i] != seen[i - 1])
            for i, (run, seq, value, low, high) in enumerate(rows)]


def _typical_noise(series: dict[tuple, list[Point]]) -> dict[tuple, float]:
    """Per (backend, machine, threads): the median over its cases of their own noise."""
    noises: dict[tuple, list[float]] = {}
    for (_, backend, machine, threads), points in series.items():
        if len(points) >= MIN_BASELINE:
            noises.setdefault((backend, machine, threads), []).append(
                _noise([math.log(p.value) for p in points[-WINDOW:]]))
    return {key: statistics.median(values) for key, values in noises.items()}


def _noise(logs: list[float]) -> float:
    """A robust standard deviation: 1.4826 times the median absolute deviation."""
    centre = statistics.median(logs)
    return 1.4826 * statistics.median(abs(x - centre) for x in logs)


def find_step(points: list[Point], typical: float) -> dict[str, Any] | None:
    """The clearest step at a changed run whose tail reaches the latest run, or None (see the
    module's doc)."""
    logs = [math.log(p.value) for p in points]
    splits = [s for s in range(MIN_BASELINE, len(points) - CONFIRM + 1) if points[s].changed]
    best = None
    for start in splits:
        baseline, tail = logs[max(0, start - WINDOW):start], logs[start:]
        noise = max(typical, _noise(baseline) / 2)
        if noise == 0:
            continue
        score = (statistics.median(tail) - statistics.median(baseline)) / noise
        needed = max(FLOOR, Z * MEDIAN_ERROR * math.sqrt(1 / len(baseline) + 1 / len(tail)))
        if abs(score) >= needed and (best is None or abs(score) / needed > best[0]):
            best = (abs(score) / needed, score, start)
    if best is None:
        return None
    _, score, start = best
    start = _locate(logs, start, [s for s in splits if abs(s - start) < CONFIRM])
    return {"status": "slower" if score < 0 else "faster", "since": points[start].run, "run": points[-1].run,
            "baseline": round(math.exp(statistics.median(logs[max(0, start - WINDOW):start])), 4),
            "latest": points[-1].value, "score": round(score, 1),
            "before_seq": points[start - 1].seq, "since_seq": points[start].seq}


def _locate(logs: list[float], start: int, near: list[int]) -> int:
    """Of the changed runs near `start`, the one that splits the runs around it into the two levels
    that fit them best, each level its median, the misfit summed in absolute values (robust to a
    stray run). Where versions change every night, the medians' test alone dates a step loosely:
    a run or two of the old level hardly moves a median."""
    first = max(0, start - WINDOW)

    def misfit(split: int) -> float:
        return sum(sum(abs(x - statistics.median(part)) for x in part)
                   for part in (logs[first:split], logs[split:]))

    return min(near, key=lambda split: (misfit(split), split))


def size_changes(store: HistoryStore) -> list[dict[str, Any]]:
    """Every size figure whose value in a (case, backend)'s latest run with sizes differs from the
    run before it."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        ordered AS (SELECT s."case", s.backend, s.name, s.value, n.run,
                           lag(s.value) OVER w AS before, lag(n.run) OVER w AS previous,
                           row_number() OVER (PARTITION BY s."case", s.backend, s.name ORDER BY n.run DESC) AS back
                    FROM sizes s JOIN numbered n USING (seq)
                    WINDOW w AS (PARTITION BY s."case", s.backend, s.name ORDER BY n.run))
        SELECT "case", backend, name, before, value, previous, run FROM ordered
        WHERE back = 1 AND before IS NOT NULL AND before <> value
        ORDER BY run DESC, backend, "case", name""").fetchall()
    return [{"case": case, "backend": backend, "name": name, "before": before, "after": after,
             "previous": previous, "run": run} for case, backend, name, before, after, previous, run in rows]


def backend_trends(store: HistoryStore) -> list[dict[str, Any]]:
    """Per run and backend: the geomean speedup over eager of its timed results, the median compile
    time (export to compile) and the highest peak memory of its results, for the history page."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        speed AS (SELECT seq, backend, exp(avg(ln(speedup))) AS speedup FROM timings WHERE speedup > 0
                  GROUP BY seq, backend),
        cost AS (SELECT seq, backend, median(compile_s) AS compile_s, max(peak_mb) AS peak_mb FROM results
                 GROUP BY seq, backend)
        SELECT n.run, c.backend, s.speedup, c.compile_s, c.peak_mb FROM cost c JOIN numbered n USING (seq)
        LEFT JOIN speed s USING (seq, backend) ORDER BY n.run, c.backend""").fetchall()
    return [{"run": run, "backend": backend, "speedup": speedup, "compile_s": compile_s, "peak_mb": peak_mb}
            for run, backend, speedup, compile_s, peak_mb in rows]


def speedup_series(store: HistoryStore, last: int = 30) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """Per (case, backend): its last timed speedups as (run, speedup), oldest first."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        ranked AS (SELECT t."case", t.backend, n.run, t.speedup,
                          row_number() OVER (PARTITION BY t."case", t.backend ORDER BY n.run DESC) AS back
                   FROM timings t JOIN numbered n USING (seq) WHERE t.speedup > 0)
        SELECT "case", backend, run, speedup FROM ranked WHERE back <= {int(last)} ORDER BY "case", backend, run
        """).fetchall()
    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for case, backend, run, speedup in rows:
        series.setdefault((case, backend), []).append((run, speedup))
    return series
