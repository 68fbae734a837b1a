"""The results database: one DuckDB file, no server.

Tables:
  meta          schema_version
  runs          one per ingested report: identity (the report's run_id; `created:<time>` for a
                report older than run_id), when it ran, the command line, the harness's and the
                tested project's commits, complete, how many results
  versions      every package version of a run's environment: scope '' (python, torch, ...) or
                a backend's name (its config's and its workers' reported versions)
  fingerprints  per run and backend, its versions and commits as one string: two runs with the
                same fingerprint changed nothing that backend's results depend on
  tallies       per run and backend, its results and how many passed (not_run left out)
  results       every result: case, backend, outcome, phase, signature, expected, verdict,
                duration, attempts (JSON, when rerun), flaky, compile seconds (export to compile), peak MiB
  ir_fingerprints  a result's stage fingerprints where they changed (harness.stages.sql)
  timings       every timed result (--perf): its threads, speedup over eager with its interval, and
                both medians; `runs.machine` says where it was timed
  sizes         every result's size figures (ops per stage, artifact bytes), one row per figure
  culprits      every culprit op of a mismatch isolated with --isolate: its rank, module path and
                error over eager's
  margins       every passed result's outputs' margins (their worst error over their tolerance;
                a failure's are in its report): what drift is judged on (harness.history.drift)
  state         per (case, backend), what the status needs, kept up to date at each ingest (a
                year of nightlies holds 77 million results; no view scans them): its last and
                previous result, where its current pass/fail streak began, the first run that
                showed it flaky, its last 30 outcomes, its latest stage fingerprints and the latest
                run that changed them, at which stage

Runs are numbered by when they ran (`created`), oldest first; a report older than the newest
run already recorded rebuilds `state` from `results`. Writers hold an exclusive lock on
DB.lock and readers a shared one, so concurrent ingests run one after the other, and ingesting
a report whose identity is recorded already adds nothing.
"""
from __future__ import annotations

import contextlib
import fcntl
import time
from pathlib import Path
from typing import Any, Iterator

import duckdb

from harness.errors import HarnessInputError
from harness.files import display_path
from harness.history.fingerprints import fingerprint, scoped_versions
from harness.history.schema import MIGRATIONS, SCHEMA_VERSION
from harness.outcomes import COMPILE_COST_PHASES, Outcome
from harness.reports import REGENERATE, read_report, report_identity
from harness.stages.sql import IR_STATE, fingerprints_hash, record_newest, record_older

RECENT = 30   # outcomes kept per (case, backend) for the history page's strips
LOCK_TIMEOUT = 600.0
# One letter per outcome in state.recent, every outcome named (a new one needs its letter, or None):
# None for not_run, which is not history (nothing was tried).
OUTCOME_CODES: dict[Outcome, str | None] = {
    Outcome.PASSED: "P", Outcome.MISMATCH: "M", Outcome.COMPILE_ERROR: "C", Outcome.RUNTIME_ERROR: "R",
    Outcome.CRASHED: "X", Outcome.TIMED_OUT: "T", Outcome.WRONG_LOWERING: "L", Outcome.NOT_RUN: None}
HISTORY_OUTCOMES = [o for o in Outcome if OUTCOME_CODES[o]]   # what the history records, in the enum's order
# The outcomes as the results table holds them (the reports' strings), for the SQL below.
_PASSED, _NOT_RUN = Outcome.PASSED.value, Outcome.NOT_RUN.value


# A report's results as DuckDB reads them from the file (keys not named here are not read).
RESULT_STRUCT = ('STRUCT("case" VARCHAR, backend VARCHAR, outcome VARCHAR, phase VARCHAR, signature VARCHAR, '
                 'expected VARCHAR, verdict VARCHAR, duration_s DOUBLE, attempts JSON, flaky BOOLEAN, '
                 'phase_durations MAP(VARCHAR, DOUBLE), phase_peak_mb MAP(VARCHAR, DOUBLE), '
                 'sizes MAP(VARCHAR, BIGINT), perf STRUCT(threads INTEGER, speedup STRUCT(value DOUBLE, low DOUBLE, '
                 'high DOUBLE), compiled STRUCT(median DOUBLE), eager STRUCT(median DOUBLE)), '
                 'isolation STRUCT(culprits STRUCT(op VARCHAR, module VARCHAR, ratio DOUBLE)[]), '
                 'fingerprints JSON, margins MAP(VARCHAR, DOUBLE))[]')
# A result's compile cost: its phases from export to compile (an eager result has none of them).
COMPILE_SQL = f"list_sum([coalesce(r.phase_durations[p], 0) for p in {list(COMPILE_COST_PHASES)}])"
HEADER_COLUMNS = {"schema_version": "INTEGER", "run_id": "VARCHAR", "created": "DOUBLE", "complete": "BOOLEAN",
                  "environment": "JSON"}
# The report is one JSON object (records = true: read as such; left to guess, DuckDB is 6x slower).
READ_OPTIONS = "format = 'unstructured', records = true, maximum_object_size = 2147483647"


class HistoryStore:
    """An open history database; use `open_history`."""

    def __init__(self, path: Path, connection: duckdb.DuckDBPyConnection):
        self.path, self.db = path, connection

    # ---- writing ---------------------------------------------------------------------------

    def ingest(self, report: Path) -> tuple[int, bool]:
        """Record the run of a JSON report: (its run number, False when it was recorded already)."""
        return self.ingest_all([report])[0]

    def ingest_all(self, reports: list[Path]) -> list[tuple[int, bool]]:
        """Record the runs of several reports in one transaction, their results read in one
        statement (DuckDB parses the files in parallel): per report, (its run number, False when
        it was recorded already, or given twice)."""
        headers = [self._header(report) for report in reports]
        identities = [report_identity(h) for h in headers]
        known = dict(self.db.execute("SELECT identity, seq FROM runs WHERE list_contains(?, identity)",
                                     [identities]).fetchall())
        first = {identity: i for i, identity in reversed(list(enumerate(identities)))}
        new = sorted((i for i, identity in enumerate(identities) if identity not in known and first[identity] == i),
                     key=lambda i: headers[i]["created"])
        next_seq = self.db.execute("SELECT coalesce(max(seq), 0) + 1 FROM runs").fetchall()[0][0]
        newest = self.db.execute("SELECT coalesce(max(created), -1e300) FROM runs").fetchall()[0][0]
        seqs = {i: next_seq + k for k, i in enumerate(new)}
        if new:
            self.db.execute("BEGIN TRANSACTION")
            try:
                for i in new:
                    self._insert_run(seqs[i], identities[i], headers[i], reports[i])
                self._insert_results({str(reports[i]): seqs[i] for i in new})
                if headers[new[0]]["created"] >= newest:
                    for i in new:
                        for statement in record_newest(seqs[i]):
                            self.db.execute(statement)
                        self._advance_state(seqs[i])
                else:   # a report older than the newest run: its results change every later streak
                    for i in new:
                        self.db.execute(record_older(seqs[i]), [list(seqs.values())])
                    self.rebuild_state()
                self.db.execute("DROP TABLE incoming; DROP TABLE IF EXISTS ir_new")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise
        return [(self.run_number(seqs[i]), True) if i in seqs
                else (self.run_number(known.get(identity) or seqs[first[identity]]), False)
                for i, identity in enumerate(identities)]

    def _header(self, report: Path) -> dict[str, Any]:
        """The report's keys but its results, read and checked by harness.reports: a damaged
        report is one error line before anything is recorded."""
        data = read_report(report)
        if data.get("created") is None:
            raise HarnessInputError(display_path(report), "is not a harness report (no schema_version or created)",
                                    REGENERATE)
        return {**{k: None for k in HEADER_COLUMNS}, **{k: v for k, v in data.items() if k != "results"}}

    def _insert_run(self, seq: int, identity: str, header: dict, report: Path) -> None:
        environment = header["environment"]
        self.db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
                        [seq, identity, header["created"], environment.get("command"),
                         environment.get("harness_commit"), environment.get("project_commit"),
                         bool(header["complete"]), str(report), environment.get("machine")])
        scoped = scoped_versions(environment)
        rows = [(seq, scope, package, version) for scope, versions in scoped.items()
                for package, version in versions.items()]
        if rows:
            self.db.executemany("INSERT INTO versions VALUES (?, ?, ?, ?)", rows)
        self.db.executemany("INSERT INTO fingerprints VALUES (?, ?, ?)",
                            [(seq, backend, fingerprint(scoped, backend, environment))
                             for backend in scoped if backend])

    def _insert_results(self, seqs: dict[str, int]) -> None:
        """Every result of the reports {path: its run's seq}, then each run's tallies."""
        files = list(seqs)
        self.db.execute(f"""
            CREATE OR REPLACE TEMP TABLE incoming AS SELECT f.seq, r
            FROM (SELECT filename, unnest(results) AS r FROM read_json(?, columns = {{'results': '{RESULT_STRUCT}'}},
                  filename = true, {READ_OPTIONS}))
            JOIN (SELECT unnest(?) AS filename, unnest(?) AS seq) f USING (filename)""",
                        [files, files, [seqs[f] for f in files]])
        self.db.execute(f"""
            INSERT INTO results SELECT seq, r."case", r.backend, r.outcome, r.phase, r.signature, r.expected,
                   r.verdict, r.duration_s, CAST(r.attempts AS VARCHAR), coalesce(r.flaky, false),
                   CASE WHEN r.phase_durations IS NOT NULL THEN {COMPILE_SQL} END,
                   list_max(map_values(r.phase_peak_mb))
            FROM incoming""")
        self.db.execute("""
            INSERT INTO timings SELECT seq, r."case", r.backend, r.perf.threads, r.perf.speedup.value,
                   r.perf.speedup.low, r.perf.speedup.high, r.perf.compiled.median, r.perf.eager.median
            FROM incoming WHERE r.perf.compiled.median IS NOT NULL""")
        self.db.execute("""
            INSERT INTO sizes SELECT seq, "case", backend, unnest(map_keys(sizes)), unnest(map_values(sizes))
            FROM (SELECT seq, r."case" AS "case", r.backend AS backend, r.sizes AS sizes FROM incoming
                  WHERE cardinality(r.sizes) > 0)""")
        self.db.execute("""
            INSERT INTO culprits SELECT seq, "case", backend, rank, c.op, c.module, c.ratio
            FROM (SELECT seq, r."case" AS "case", r.backend AS backend, unnest(r.isolation.culprits) AS c,
                         generate_subscripts(r.isolation.culprits, 1) AS rank
                  FROM incoming WHERE len(r.isolation.culprits) > 0)""")
        self.db.execute(f"""
            INSERT INTO margins SELECT seq, "case", backend, unnest(map_keys(margins)), unnest(map_values(margins))
            FROM (SELECT seq, r."case" AS "case", r.backend AS backend, r.margins AS margins FROM incoming
                  WHERE r.outcome = '{_PASSED}' AND cardinality(r.margins) > 0)""")
        chosen = list(seqs.values())
        self.db.execute(f"""INSERT INTO tallies
                           SELECT seq, backend, count(*), count(*) FILTER (WHERE outcome = '{_PASSED}')
                           FROM results WHERE list_contains(?, seq) AND outcome <> '{_NOT_RUN}'
                           GROUP BY seq, backend""", [chosen])
        self.db.execute("""UPDATE runs SET results = t.n FROM (SELECT seq, count(*) AS n FROM results
                           WHERE list_contains(?, seq) GROUP BY seq) t WHERE runs.seq = t.seq""", [chosen])
        # A backend with results but no environment block (a hand-made report) still gets a fingerprint.
        self.db.execute("""INSERT INTO fingerprints SELECT DISTINCT seq, backend, '' FROM results r
                           WHERE list_contains(?, seq) AND NOT EXISTS (SELECT 1 FROM fingerprints f
                           WHERE f.seq = r.seq AND f.backend = r.backend)""", [chosen])

    def _advance_state(self, seq: int) -> None:
        """Fold the newest run's results (the ingest's `incoming`, its IR changes `ir_new`) into
        `state`, one set operation (no per-case loop); the table is replaced whole, which DuckDB
        writes faster than it updates 200,000 rows."""
        self.db.execute(f"""
            CREATE OR REPLACE TABLE state AS
            WITH arriving AS (
              SELECT r."case", r.backend, r.outcome = '{_PASSED}' AS pass, r.outcome, r.phase, r.signature,
                     coalesce(r.flaky, false) AS flaky, {fingerprints_hash('r.fingerprints')} AS fingerprints_hash
              FROM incoming WHERE seq = {seq} AND r.outcome IN {_codes_list()})
            SELECT coalesce(n."case", s."case") AS "case", coalesce(n.backend, s.backend) AS backend,
              CASE WHEN n."case" IS NULL THEN s.last_seq ELSE {seq} END AS last_seq,
              CASE WHEN n."case" IS NULL THEN s.last_pass ELSE n.pass END AS last_pass,
              CASE WHEN n."case" IS NULL THEN s.last_outcome ELSE n.outcome END AS last_outcome,
              CASE WHEN n."case" IS NULL THEN s.last_phase ELSE n.phase END AS last_phase,
              CASE WHEN n."case" IS NULL THEN s.last_signature ELSE n.signature END AS last_signature,
              CASE WHEN n."case" IS NULL THEN s.prev_seq ELSE s.last_seq END AS prev_seq,
              CASE WHEN n."case" IS NULL THEN s.prev_pass ELSE s.last_pass END AS prev_pass,
              CASE WHEN n."case" IS NULL THEN s.prev_signature ELSE s.last_signature END AS prev_signature,
              CASE WHEN n."case" IS NULL THEN s.streak_start
                   WHEN s."case" IS NULL OR s.last_pass <> n.pass THEN {seq} ELSE s.streak_start END AS streak_start,
              CASE WHEN n."case" IS NULL OR s.flaky_seq IS NOT NULL THEN s.flaky_seq
                   WHEN n.flaky OR (s.last_pass <> n.pass AND f_last.fingerprint = f_new.fingerprint) THEN {seq}
                   END AS flaky_seq,
              CASE WHEN n."case" IS NULL THEN s.recent
                   ELSE right(coalesce(s.recent, '') || {_code_sql('n.outcome')}, {RECENT}) END AS recent,
              coalesce(n.fingerprints_hash, s.last_hash) AS last_hash,
              CASE WHEN c.changed IS NULL THEN s.ir_seq ELSE {seq} END AS ir_seq,
              coalesce(c.changed, s.ir_stage) AS ir_stage
            FROM state s FULL OUTER JOIN arriving n ON s."case" = n."case" AND s.backend = n.backend
            LEFT JOIN ir_new c ON c."case" = n."case" AND c.backend = n.backend
            LEFT JOIN fingerprints f_last ON f_last.seq = s.last_seq AND f_last.backend = s.backend
            LEFT JOIN fingerprints f_new ON f_new.seq = {seq} AND f_new.backend = n.backend""")

    def rebuild_state(self) -> None:
        """`state` from every result, in the order the runs ran (the same rules as _advance_state)."""
        self.db.execute(f"""
            CREATE OR REPLACE TABLE state AS
            WITH ordered AS (
              SELECT r."case", r.backend, r.seq, r.outcome, r.outcome = '{_PASSED}' AS pass, r.phase, r.signature,
                     coalesce(r.flaky, false) AS flaky, f.fingerprint,
                     row_number() OVER (PARTITION BY r."case", r.backend ORDER BY u.created, r.seq) AS k
              FROM results r JOIN runs u USING (seq)
              LEFT JOIN fingerprints f ON f.seq = r.seq AND f.backend = r.backend
              WHERE r.outcome IN {_codes_list()}),
            steps AS (
              SELECT *, lag(pass) OVER w AS before_pass, lag(fingerprint) OVER w AS before_fingerprint,
                     lag(signature) OVER w AS before_signature, lag(seq) OVER w AS before_seq,
                     count(*) OVER (PARTITION BY "case", backend) AS n
              FROM ordered WINDOW w AS (PARTITION BY "case", backend ORDER BY k)),
            {IR_STATE},
            outcomes AS (SELECT "case", backend,
              max(seq) FILTER (WHERE k = n) AS last_seq, bool_or(pass) FILTER (WHERE k = n) AS last_pass,
              max(outcome) FILTER (WHERE k = n) AS last_outcome, max(phase) FILTER (WHERE k = n) AS last_phase,
              max(signature) FILTER (WHERE k = n) AS last_signature,
              max(before_seq) FILTER (WHERE k = n) AS prev_seq,
              bool_or(before_pass) FILTER (WHERE k = n) AS prev_pass,
              max(before_signature) FILTER (WHERE k = n) AS prev_signature,
              arg_max(seq, k) FILTER (WHERE before_pass IS NULL OR before_pass <> pass) AS streak_start,
              arg_min(seq, k) FILTER (WHERE flaky OR (before_pass <> pass AND before_fingerprint = fingerprint))
                  AS flaky_seq,
              string_agg({_code_sql('outcome')}, '' ORDER BY k) FILTER (WHERE k > n - {RECENT}) AS recent
              FROM steps GROUP BY "case", backend)
            SELECT o.*, i.last_hash, i.ir_seq, i.ir_stage FROM outcomes o LEFT JOIN ir_state i USING ("case", backend)
            """)

    # ---- reading ---------------------------------------------------------------------------

    def run_number(self, seq: int) -> int:
        """A run's number: its place among the recorded runs by when they ran, from 1."""
        return self.db.execute("SELECT count(*) FROM runs WHERE created < (SELECT created FROM runs WHERE seq = ?) "
                               "OR (created = (SELECT created FROM runs WHERE seq = ?) AND seq <= ?)",
                               [seq, seq, seq]).fetchall()[0][0]


def _code_sql(column: str) -> str:
    whens = " ".join(f"WHEN {column} = '{o.value}' THEN '{OUTCOME_CODES[o]}'" for o in HISTORY_OUTCOMES)
    return f"CASE {whens} END"


def _codes_list() -> str:
    return "(" + ", ".join(f"'{o.value}'" for o in HISTORY_OUTCOMES) + ")"


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


# ---- opening -------------------------------------------------------------------------------

@contextlib.contextmanager
def open_history(path: Path, write: bool) -> Iterator[HistoryStore]:
    """The database at `path` (created when writing to a new one), migrated to this schema,
    under the lock; every problem with the file is one HarnessInputError naming it."""
    path = Path(path)
    if not write and not path.exists():
        raise HarnessInputError(display_path(path),
                                "does not exist", "record a run first: pytest --history=" + display_path(path))
    with _locked(path, exclusive=write):
        try:
            connection = duckdb.connect(str(path), read_only=not write)
        except duckdb.Error as e:
            why = "not a DuckDB file" if "not a valid DuckDB database" in str(e) else _first_line(e)
            raise HarnessInputError(display_path(path), f"is not a history database ({why})",
                                    "move it away, or pass another path, and record the runs again") from None
        try:
            store = HistoryStore(path, connection)
            _migrate(store, write)
            yield store
        finally:
            connection.close()


def _migrate(store: HistoryStore, write: bool) -> None:
    version = _schema_version(store)
    if version > SCHEMA_VERSION:
        raise HarnessInputError(display_path(store.path), f"has history schema {version}; this harness reads up to "
                                f"{SCHEMA_VERSION}", "upgrade the harness, or pass another file")
    if version == SCHEMA_VERSION:
        return
    if not write:
        raise HarnessInputError(display_path(store.path), f"has history schema {version}, older than this harness's "
                                f"{SCHEMA_VERSION}", f"migrate it: python -m harness history ingest {store.path}")
    apply_migrations(store, version, SCHEMA_VERSION)


def apply_migrations(store: HistoryStore, start: int, stop: int) -> None:
    """Take the file from schema `start` to `stop`, in one transaction; `state` is rebuilt once, at
    the end, when a step asks for it (the rebuild reads the newest schema's columns)."""
    store.db.execute("BEGIN TRANSACTION")
    steps = [statement for version in range(start, stop) for statement in MIGRATIONS[version]]
    for statement in steps:
        if statement != "REBUILD_STATE":
            store.db.execute(statement)
    if "REBUILD_STATE" in steps:
        store.rebuild_state()
    store.db.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(stop)])
    store.db.execute("COMMIT")


def _schema_version(store: HistoryStore) -> int:
    tables = {t for (t,) in store.db.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if not tables:
        return 0   # a new file
    if "meta" not in tables:
        raise HarnessInputError(display_path(store.path), "is a DuckDB file but not a history database (no meta table)",
                                "pass the file pytest --history wrote")
    row = store.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    return int(row[0][0]) if row else 0


@contextlib.contextmanager
def _locked(path: Path, exclusive: bool) -> Iterator[None]:
    """DB.lock held while the file is open: DuckDB lets one process write a file, and a second
    opening it would fail instead of waiting its turn."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        handle = open(lock_path, "a+")
    except OSError as e:
        raise HarnessInputError(display_path(path),
                                f"cannot be opened ({e.strerror})", "check the folder exists") from None
    with handle:
        deadline = time.monotonic() + LOCK_TIMEOUT
        while True:
            try:
                fcntl.flock(handle, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise HarnessInputError(display_path(path),
                                            f"is locked by another process for over {LOCK_TIMEOUT:g} s",
                                            "wait for the other ingest to finish") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
