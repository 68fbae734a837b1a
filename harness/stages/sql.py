"""Stage fingerprints in the history, as SQL: how they are stored, and which stage changed first
between two results (harness.stages.changes, the same rule as the report diff's: in the newer
record's order, which is its backend's stage order).

Stored only when they change: `ir_fingerprints` holds a (case, backend)'s fingerprints as the
report has them (their JSON object, which DuckDB reads minified) at the first run that
fingerprinted it and at each run whose fingerprints differ from its result before, in the order
the runs ran. A build's fingerprints stay the same night after night, so a year of nightlies adds
rows only where a compiler or torch changed a case's IR. Stored with every result (a MAP of 64-bit
integers), they were 8 bytes a stage that no compression takes away: 4 times the file of 8
synthetic nights and 0.56 times the ingest rate (benchmarks/RESULTS.md).

`state` keeps per (case, backend) a 64-bit hash of its latest fingerprints' JSON, so that an
ingest finds the changed ones by comparing one number per result (parsing no JSON object but
theirs), and the latest run whose IR changed with the first stage that did; no view reads
`ir_fingerprints`. A report older than the newest run adds its own row where it differs from the
run before it, and restores that run's value at the next run recorded before (the rows say what
changed, not what every run held); `state` is then rebuilt from the rows.
"""
from __future__ import annotations

STAGES_TYPE = "JSON"
ORDER = "SELECT seq, row_number() OVER (ORDER BY created, seq) AS run FROM runs"   # runs numbered by when they ran


def has_stages(stages: str) -> str:
    return f"coalesce({stages} <> '{{}}', false)"


def fingerprints_hash(stages: str) -> str:
    return f"CASE WHEN {has_stages(stages)} THEN hash({stages}) END"


def first_changed_stage(old: str, new: str) -> str:
    """The first stage, in the new JSON object's own order (a cast to MAP keeps it), that both
    fingerprints' objects hold with different values; NULL when none does (NULL on either side: not
    compared)."""
    old, new = (f"CAST({side} AS MAP(VARCHAR, VARCHAR))" for side in (old, new))
    return f"list_filter(map_keys({new}), lambda x: {old}[x] <> {new}[x])[1]"


def record_newest(seq: int) -> list[str]:
    """The newest run's rows, where its fingerprints' hash differs from `state`'s, into the temp
    table `ir_new` too, with the first changed stage (for _advance_state)."""
    return [f"""
        CREATE OR REPLACE TEMP TABLE ir_new AS
        WITH numbered AS ({ORDER}),
        changed AS (SELECT i.r."case" AS "case", i.r.backend AS backend, i.r.fingerprints AS stages
                    FROM incoming i LEFT JOIN state s ON s."case" = i.r."case" AND s.backend = i.r.backend
                    WHERE i.seq = {seq} AND {has_stages('i.r.fingerprints')}
                          AND s.last_hash IS DISTINCT FROM hash(i.r.fingerprints)),
        before AS (SELECT f."case", f.backend, arg_max(f.stages, n.run) AS stages
                   FROM ir_fingerprints f JOIN numbered n USING (seq) SEMI JOIN changed c USING ("case", backend)
                   GROUP BY f."case", f.backend)
        SELECT c."case", c.backend, c.stages, {first_changed_stage('b.stages', 'c.stages')} AS changed
        FROM changed c LEFT JOIN before b USING ("case", backend)""",
            f'INSERT INTO ir_fingerprints SELECT {seq}, "case", backend, stages FROM ir_new']


def record_older(seq: int) -> str:
    """The rows of a run older than the newest (parameter: the seqs of its ingest, which bring
    their own rows): its own where it differs from the run before, and that run's value again at
    the next run recorded before, where no row says what it held."""
    return f"""
        INSERT INTO ir_fingerprints
        WITH numbered AS ({ORDER}),
        mine AS (SELECT r."case" AS "case", r.backend AS backend, r.fingerprints AS stages FROM incoming
                 WHERE seq = {seq} AND {has_stages('r.fingerprints')}),
        here AS (SELECT run FROM numbered WHERE seq = {seq}),
        before AS (SELECT f."case", f.backend, arg_max(f.stages, n.run) AS stages
                   FROM ir_fingerprints f JOIN numbered n USING (seq) WHERE n.run < (SELECT run FROM here)
                   GROUP BY f."case", f.backend),
        after AS (SELECT r."case", r.backend, arg_min(r.seq, n.run) AS seq
                  FROM results r JOIN numbered n USING (seq)
                  WHERE n.run > (SELECT run FROM here) AND NOT list_contains(?, r.seq) GROUP BY r."case", r.backend)
        SELECT {seq}, m."case", m.backend, m.stages FROM mine m LEFT JOIN before b USING ("case", backend)
        WHERE b.stages IS DISTINCT FROM m.stages
        UNION ALL
        SELECT a.seq, m."case", m.backend, b.stages
        FROM mine m JOIN before b USING ("case", backend) JOIN after a USING ("case", backend)
        WHERE b.stages IS DISTINCT FROM m.stages AND NOT EXISTS (
            SELECT 1 FROM ir_fingerprints f WHERE f.seq = a.seq AND f."case" = m."case" AND f.backend = m.backend)"""


# Per (case, backend), from every row: its latest fingerprints' hash, the latest run whose IR
# changed and the first stage that did (a CTE of `state`'s rebuild).
IR_STATE = f"""
    ir_rows AS (
      SELECT f."case", f.backend, f.seq, f.stages, row_number() OVER p AS k, lag(f.stages) OVER p AS before
      FROM ir_fingerprints f JOIN runs u USING (seq)
      WINDOW p AS (PARTITION BY f."case", f.backend ORDER BY u.created, f.seq)),
    ir_state AS (
      SELECT "case", backend, {fingerprints_hash('arg_max(stages, k)')} AS last_hash,
             arg_max(seq, k) FILTER (WHERE changed IS NOT NULL) AS ir_seq,
             arg_max(changed, k) FILTER (WHERE changed IS NOT NULL) AS ir_stage
      FROM (SELECT *, {first_changed_stage('before', 'stages')} AS changed FROM ir_rows)
      GROUP BY "case", backend)"""
