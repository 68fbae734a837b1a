"""The status of each (case, backend) over the history, judged on its latest run against the one
before (the runs that hold it):

  passing      passed in the latest run and in the one before (or in its only run)
  failing      failed in both (or in its only run); `since`: the first run of this failing streak;
               `signature_changed` when the latest failure's signature is not the one before's
  new_failure  failed in the latest run, passed in the one before; `changed`: what differs
  fixed        passed in the latest run, failed in the one before; `changed` likewise
  flaky        at some run its outcome changed while nothing it depends on did (no package
               version, no commit), or its reruns in fresh workers disagreed; flaky wins

Each also says whether its IR changed (`ir_changed`): the latest run at which one of its stage
fingerprints differed from its result before, and the first stage that did (harness.stages.changes).

A failure is any outcome but passed; not_run (a crash-set case not attempted) is no result.
Runs are numbered from 1, oldest first.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.history.store import HistoryStore, open_history
from harness.reports import report_identity

STATUSES = ("new_failure", "flaky", "fixed", "failing", "passing")   # the order views list them in

NUMBERED = "SELECT seq, row_number() OVER (ORDER BY created, seq) AS run FROM runs"   # runs numbered from 1
STATUS_SQL = f"""
    WITH numbered AS ({NUMBERED})
    SELECT s."case", s.backend,
      CASE WHEN s.flaky_seq IS NOT NULL THEN 'flaky'
           WHEN s.last_pass AND coalesce(s.prev_pass, true) THEN 'passing'
           WHEN s.last_pass THEN 'fixed'
           WHEN s.prev_pass THEN 'new_failure'
           ELSE 'failing' END AS status,
      last.run AS run, since.run AS since, prev.run AS previous, flaky.run AS flaky_since,
      s.last_outcome, s.last_phase, s.last_signature,
      NOT s.last_pass AND s.prev_pass IS NOT NULL AND NOT s.prev_pass
          AND s.last_signature IS DISTINCT FROM s.prev_signature AS signature_changed,
      s.prev_seq, s.last_seq, s.recent, ir.run AS ir_since, s.ir_stage
    FROM state s
    JOIN numbered last ON last.seq = s.last_seq
    LEFT JOIN numbered prev ON prev.seq = s.prev_seq
    LEFT JOIN numbered since ON since.seq = s.streak_start
    LEFT JOIN numbered flaky ON flaky.seq = s.flaky_seq
    LEFT JOIN numbered ir ON ir.seq = s.ir_seq
"""


def case_statuses(store: HistoryStore, include_passing: bool = False,
                  run_identity: str | None = None) -> list[dict[str, Any]]:
    """Every (case, backend) that is not plain passing (all of them with include_passing), the
    most recent first, with what changed for new failures and fixed cases; with `run_identity`,
    only the cases whose latest run is that run (what a run's own report describes)."""
    conditions = ([] if include_passing else ["status <> 'passing'"]) + (
        ["last_seq = (SELECT seq FROM runs WHERE identity = $run)"] if run_identity else [])
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    order = " ".join(f"WHEN '{s}' THEN {i}" for i, s in enumerate(STATUSES))
    rows = store.db.execute(f"""SELECT * FROM ({STATUS_SQL}) {where}
                                ORDER BY run DESC, CASE status {order} END, backend, "case" """,
                            {"run": run_identity} if run_identity else {}).fetchall()
    names = [d[0] for d in store.db.description]
    cases = [dict(zip(names, row)) for row in rows]
    versions = versions_of(store, {seq for c in cases if c["status"] in ("new_failure", "fixed")
                                    for seq in (c["prev_seq"], c["last_seq"])})
    for case in cases:
        before, after = case.pop("prev_seq"), case.pop("last_seq")
        case["ir_changed"] = ir_changed(case)
        case["changed"] = (differences(seen_by(versions[before], case["backend"]),
                                        seen_by(versions[after], case["backend"]))
                           if case["status"] in ("new_failure", "fixed") else None)
        if case["status"] != "failing":
            case["since"] = None
            case.pop("signature_changed")
        if case["status"] != "flaky":
            case.pop("flaky_since")
    return cases


def ir_changed(row: dict[str, Any]) -> dict[str, Any] | None:
    """A status row's IR change as {since: run, stage}; None when its IR never changed."""
    since, stage = row.pop("ir_since"), row.pop("ir_stage")
    return None if since is None else {"since": since, "stage": stage}


def ir_changes(store: HistoryStore) -> list[dict[str, Any]]:
    """Every (case, backend) whose IR changed at some run (its latest such run, and the first stage
    that changed), beside its status and latest outcome: the latest change first."""
    rows = store.db.execute(f"""SELECT "case", backend, ir_since, ir_stage, status, run, last_outcome, last_phase
                                FROM ({STATUS_SQL}) WHERE ir_since IS NOT NULL
                                ORDER BY ir_since DESC, backend, ir_stage, "case" """).fetchall()
    names = [d[0] for d in store.db.description]
    changes = [dict(zip(names, row)) for row in rows]
    for change in changes:
        change.update(ir_changed(change) or {})   # the query keeps the changed ones: never None here
    return changes


def versions_of(store: HistoryStore, seqs: set[int]) -> dict[int, dict[str, dict[str, str]]]:
    """Per run: scope ('' or a backend) -> {package: version}, the commits in scope ''."""
    by_run: dict[int, dict[str, dict[str, str]]] = {seq: {} for seq in seqs}
    if not seqs:
        return by_run
    chosen = sorted(seqs)
    for seq, scope, package, version in store.db.execute(
            "SELECT seq, scope, package, version FROM versions WHERE list_contains(?, seq)", [chosen]).fetchall():
        by_run[seq].setdefault(scope, {})[package] = version
    for seq, harness, project in store.db.execute(
            "SELECT seq, harness_commit, project_commit FROM runs WHERE list_contains(?, seq)", [chosen]).fetchall():
        by_run[seq].setdefault("", {}).update({"harness commit": harness, "project commit": project})
    return by_run


def seen_by(scoped: dict[str, dict[str, str]], backend: str) -> dict[str, str]:
    """What a backend's results depend on in a run: the run's versions and commits, then its own."""
    return {**scoped.get("", {}), **scoped.get(backend, {})}


def differences(before: dict[str, str], after: dict[str, str]) -> dict[str, list]:
    return {name: [before.get(name), after.get(name)] for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)}


def runs(store: HistoryStore) -> list[dict[str, Any]]:
    rows = store.db.execute("""SELECT row_number() OVER (ORDER BY created, seq) AS run, identity, created, command,
                                      harness_commit, project_commit, complete, results, source
                               FROM runs ORDER BY created, seq""").fetchall()
    names = [d[0] for d in store.db.description]
    return [dict(zip(names, row)) for row in rows]


def pass_rates(store: HistoryStore) -> list[dict[str, Any]]:
    """Per run and backend: results, how many passed (not_run left out), for the history page."""
    rows = store.db.execute(f"""
        WITH numbered AS ({NUMBERED})
        SELECT n.run, t.backend, t.results, t.passed FROM tallies t JOIN numbered n USING (seq)
        ORDER BY n.run, t.backend""").fetchall()
    return [{"run": run, "backend": backend, "results": results, "passed": passed}
            for run, backend, results, passed in rows]


def run_statuses(database: Path, report: dict) -> list[dict[str, Any]]:
    """The statuses of a recorded report's cases (its run the latest of each): for its Markdown report."""
    with open_history(database, write=False) as store:
        return case_statuses(store, run_identity=report_identity(report))
