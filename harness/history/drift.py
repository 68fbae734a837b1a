"""Drift: passing outputs that came much closer to failing than they used to.

A result's margin for an output is its worst error over its tolerance (1.0 at the limit;
harness.worker.compare.Accuracy). A lowering change that triples an op's error but stays inside
the tolerance changes no verdict; its margin shows it. An output drifts when, in its latest
result (a pass), its margin is at least FACTOR times its baseline and at least FLOOR: the
baseline is the median margin of its earlier passing results, the latest BASELINE_RUNS of them,
in runs with the same reference packages (REFERENCE_PACKAGES: what makes the inputs and the
float64 golden; the backend's own packages may differ, since their change is what drift is
about). Margins are deterministic on CPU with fixed seeds, so runs of one build flag nothing.
"""
from __future__ import annotations

from typing import Any

from harness.history.status import NUMBERED
from harness.history.store import HistoryStore

FACTOR = 2.0          # the margin now over its baseline
FLOOR = 0.25          # ... and the margin now at least this: 0.001 -> 0.003 is no news
BASELINE_RUNS = 20    # the earlier results a baseline is the median of
REFERENCE_PACKAGES = ("python", "torch", "numpy")   # a run's own versions that make the golden


def drift(store: HistoryStore, factor: float = FACTOR, floor: float = FLOOR) -> list[dict[str, Any]]:
    """Every drifting output, the largest growth first: {case, backend, output, baseline, now,
    runs (the baseline's), run (the latest)}."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        reference AS (SELECT seq, string_agg(package || '=' || coalesce(version, ''), ',' ORDER BY package) AS key
                      FROM versions WHERE scope = '' AND list_contains($packages, package) GROUP BY seq),
        latest AS (SELECT m."case", m.backend, m.output, m.margin, m.seq, n.run, coalesce(r.key, '') AS key
                   FROM state s JOIN margins m ON m.seq = s.last_seq AND m."case" = s."case" AND m.backend = s.backend
                   JOIN numbered n ON n.seq = m.seq LEFT JOIN reference r ON r.seq = m.seq
                   WHERE s.last_pass),
        earlier AS (SELECT l."case", l.backend, l.output, m.margin,
                           row_number() OVER (PARTITION BY l."case", l.backend, l.output ORDER BY n.run DESC) AS back
                    FROM latest l
                    JOIN margins m ON m."case" = l."case" AND m.backend = l.backend AND m.output = l.output
                    JOIN numbered n ON n.seq = m.seq LEFT JOIN reference r ON r.seq = m.seq
                    WHERE n.run < l.run AND coalesce(r.key, '') = l.key)
        SELECT l."case", l.backend, l.output, median(e.margin) AS baseline, l.margin AS now, count(*) AS runs, l.run
        FROM latest l JOIN earlier e USING ("case", backend, output)
        WHERE e.back <= {BASELINE_RUNS}
        GROUP BY l."case", l.backend, l.output, l.margin, l.run
        HAVING l.margin >= $floor AND l.margin >= $factor * median(e.margin)
        ORDER BY l.margin / greatest(median(e.margin), 1e-300) DESC, l."case", l.backend, l.output""",
                            {"packages": list(REFERENCE_PACKAGES), "floor": floor, "factor": factor}).fetchall()
    return [{"case": case, "backend": backend, "output": output, "baseline": baseline, "now": now,
             "runs": runs, "run": run} for case, backend, output, baseline, now, runs, run in rows]
