"""The history database's schema, as the steps that build it: MIGRATIONS[i] takes a file from
schema version i to i + 1, and a new file runs them all (harness.history.store.apply_migrations;
the store's docstring says what each table holds)."""
from __future__ import annotations

from harness.stages.sql import STAGES_TYPE

# REBUILD_STATE: rebuild `state` from `results` once the steps are done.
MIGRATIONS: list[list[str]] = [
    [   # 1: runs, their versions, results, and the state of each (case, backend)
        "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        """CREATE TABLE runs (seq INTEGER PRIMARY KEY, identity VARCHAR UNIQUE, created DOUBLE, command VARCHAR,
               harness_commit VARCHAR, project_commit VARCHAR, complete BOOLEAN, results INTEGER, source VARCHAR)""",
        "CREATE TABLE versions (seq INTEGER, scope VARCHAR, package VARCHAR, version VARCHAR)",
        "CREATE TABLE fingerprints (seq INTEGER, backend VARCHAR, fingerprint VARCHAR)",
        "CREATE TABLE tallies (seq INTEGER, backend VARCHAR, results INTEGER, passed INTEGER)",
        """CREATE TABLE results (seq INTEGER, "case" VARCHAR, backend VARCHAR, outcome VARCHAR, phase VARCHAR,
               signature VARCHAR, expected VARCHAR, verdict VARCHAR, duration DOUBLE)""",
        """CREATE TABLE state ("case" VARCHAR, backend VARCHAR, last_seq INTEGER, last_pass BOOLEAN,
               last_outcome VARCHAR, last_phase VARCHAR, last_signature VARCHAR, prev_seq INTEGER,
               prev_pass BOOLEAN, prev_signature VARCHAR, streak_start INTEGER, flaky_seq INTEGER,
               recent VARCHAR)""",
    ],
    [   # 2: reruns in a fresh worker (--rerun-failures): every attempt, and whether they disagreed
        "ALTER TABLE results ADD COLUMN attempts VARCHAR",
        "ALTER TABLE results ADD COLUMN flaky BOOLEAN DEFAULT false",
        "REBUILD_STATE",   # the flaky rule now reads reruns too
    ],
    [   # 3: what a result cost and how fast it ran (--perf), its size figures, and the machine
        "ALTER TABLE runs ADD COLUMN machine VARCHAR",
        "ALTER TABLE results ADD COLUMN compile_s DOUBLE",
        "ALTER TABLE results ADD COLUMN peak_mb DOUBLE",
        """CREATE TABLE timings (seq INTEGER, "case" VARCHAR, backend VARCHAR, threads INTEGER, speedup DOUBLE,
               low DOUBLE, high DOUBLE, compiled_s DOUBLE, eager_s DOUBLE)""",
        'CREATE TABLE sizes (seq INTEGER, "case" VARCHAR, backend VARCHAR, name VARCHAR, value BIGINT)',
    ],
    [   # 4: the culprit ops of a mismatch isolated with --isolate
        """CREATE TABLE culprits (seq INTEGER, "case" VARCHAR, backend VARCHAR, rank INTEGER, op VARCHAR,
               module VARCHAR, ratio DOUBLE)""",
    ],
    [   # 5: stage fingerprints: what a compiler change changed, and since which run
        f'CREATE TABLE ir_fingerprints (seq INTEGER, "case" VARCHAR, backend VARCHAR, stages {STAGES_TYPE})',
        "ALTER TABLE state ADD COLUMN IF NOT EXISTS last_hash UBIGINT",
        "ALTER TABLE state ADD COLUMN IF NOT EXISTS ir_seq INTEGER",
        "ALTER TABLE state ADD COLUMN IF NOT EXISTS ir_stage VARCHAR",
    ],
    [   # 6: how close each passing output came to failing (harness.history.drift)
        'CREATE TABLE margins (seq INTEGER, "case" VARCHAR, backend VARCHAR, output VARCHAR, margin DOUBLE)',
    ],
]
SCHEMA_VERSION = len(MIGRATIONS)
