"""The mismatches of the history grouped by culprit op: each (case, backend) whose latest result
is a mismatch isolated with --isolate counts once under each distinct op it was found off at
(its most likely node's module), so one lowering's bug shows as one row across models."""
from __future__ import annotations

from typing import Any

from harness.history.status import NUMBERED
from harness.history.store import HistoryStore
from harness.outcomes import Outcome


def culprit_groups(store: HistoryStore) -> list[dict[str, Any]]:
    """[{op, results: [{case, backend, module, ratio, run}]}], the op with the most results first."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED}),
        latest AS (SELECT c."case", c.backend, c.op, c.module, c.ratio, n.run,
                          row_number() OVER (PARTITION BY c."case", c.backend, c.op ORDER BY c.rank) AS k
                   FROM culprits c JOIN state s ON s."case" = c."case" AND s.backend = c.backend
                        AND s.last_seq = c.seq AND s.last_outcome = ?
                   JOIN numbered n ON n.seq = c.seq)
        SELECT op, "case", backend, module, ratio, run FROM latest WHERE k = 1
        ORDER BY count(*) OVER (PARTITION BY op) DESC, op, "case", backend""",
                            [Outcome.MISMATCH.value]).fetchall()
    groups: dict[str, list[dict[str, Any]]] = {}
    for op, case, backend, module, ratio, run in rows:
        groups.setdefault(op, []).append({"case": case, "backend": backend, "module": module, "ratio": ratio,
                                          "run": run})
    return [{"op": op, "results": results} for op, results in groups.items()]
