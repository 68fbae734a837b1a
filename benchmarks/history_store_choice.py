"""SQLite or DuckDB for the run history: the same nights of results written to each, measured.

    python benchmarks/history_store_choice.py [--runs 10] [--results 210000]

Each night is `--results` rows of a result's recorded columns (case, backend, outcome, phase,
signature, expected, verdict, duration), 10% of them failures with one of 400 signatures. For
each store: the median seconds to append a night (SQLite: executemany in one transaction, WAL,
synchronous=NORMAL; DuckDB: one INSERT from column arrays), the file's size per night, and two
queries at the end: every (case, backend) of the latest night beside its outcome the night before
(what the status needs without a kept state), and the pass rate of every backend in every night
(the history page's chart).
"""
from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

COLUMNS = ("seq", "case_id", "backend", "outcome", "phase", "signature", "expected", "verdict", "duration")
PAIRS = """SELECT n.case_id, n.backend, n.outcome, o.outcome FROM results n
           LEFT JOIN results o ON o.case_id = n.case_id AND o.backend = n.backend AND o.seq = {last} - 1
           WHERE n.seq = {last}"""
RATES = "SELECT seq, backend, count(*), sum(outcome = 'passed') FROM results GROUP BY seq, backend"


def night(seq: int, results: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    cases = np.arange(results) % 30000
    fails = rng.random(results) < 0.1
    return {"seq": np.full(results, seq), "case_id": np.array([f"opinfo/op{c // 10}/default/float32/{c % 10}"
                                                               for c in cases], dtype=object),
            "backend": np.array([f"backend{i // 30000}" for i in range(results)], dtype=object),
            "outcome": np.where(fails, "compile_error", "passed").astype(object),
            "phase": np.where(fails, "lower", None).astype(object),
            "signature": np.array([f"error {c % 400}: failed to legalize" if f else None
                                   for c, f in zip(cases, fails)], dtype=object),
            "expected": np.full(results, "pass", dtype=object), "verdict": np.full(results, "ok", dtype=object),
            "duration": rng.random(results)}


def sqlite_store(path: Path):
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"CREATE TABLE results ({', '.join(COLUMNS)})")
    db.execute("CREATE INDEX by_run ON results (seq, case_id, backend)")

    def append(data):
        with db:
            db.executemany(f"INSERT INTO results VALUES ({', '.join('?' * len(COLUMNS))})",
                           zip(*(data[c].tolist() for c in COLUMNS)))
    return db, append


def duckdb_store(path: Path):
    db = duckdb.connect(str(path))
    db.execute("CREATE TABLE results (seq INTEGER, case_id VARCHAR, backend VARCHAR, outcome VARCHAR, phase VARCHAR, "
               "signature VARCHAR, expected VARCHAR, verdict VARCHAR, duration DOUBLE)")

    def append(data):
        db.execute("INSERT INTO results SELECT * FROM data")   # DuckDB scans the dict of arrays by name
    return db, append


def measure(name: str, make, folder: Path, nights: list[dict]) -> None:
    db, append = make(folder / f"{name}.db")
    seconds = []
    for data in nights:
        started = time.perf_counter()
        append(data)
        seconds.append(time.perf_counter() - started)
    db.close()
    size = sum(p.stat().st_size for p in folder.glob(f"{name}.db*")) / len(nights) / 2**20
    print(f"{name}: append a night median {statistics.median(seconds):.2f} s "
          f"({len(nights[0]['seq']) / statistics.median(seconds):,.0f} results/s), {size:.1f} MiB per night")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--results", type=int, default=210000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    nights = [night(seq, args.results, rng) for seq in range(1, args.runs + 1)]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, make, reopen in (("sqlite", sqlite_store, lambda p: sqlite3.connect(p)),
                                   ("duckdb", duckdb_store, lambda p: duckdb.connect(str(p)))):
            measure(name, make, folder, nights)
            db = reopen(folder / f"{name}.db")
            for title, sql in (("latest night beside the one before", PAIRS.format(last=args.runs)),
                               ("pass rate per backend and night", RATES)):
                started = time.perf_counter()
                db.execute(sql).fetchall()
                print(f"  {title}: {time.perf_counter() - started:.2f} s")
            db.close()


if __name__ == "__main__":
    main()
