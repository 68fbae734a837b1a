"""The run history at a year of nightlies: how fast reports ingest, how fast every view answers,
how big the file grows.

    python benchmarks/history_scale.py [--runs 365] [--backends 7] [--cases 30000] [--batch 1] [--db PATH]

Writes one synthetic JSON report per night (a harness report's shape and keys: 7 x 30,000 results,
a night of every OpInfo sample on every backend), ingests it with `python -m harness history
ingest`'s code path (`--batch` reports per ingest, as a backfill of old reports passes them), and
deletes it (a year of reports would be 47 GB). Outcomes: 85% of the
(case, backend) pairs always pass, 10% always fail (one of 400 signatures), 3% flip at random,
2% break when torch moves (every 30 nights) and stay broken; a night now and then is partial.
Prints the ingest rate (results per second of ingest, report writing not counted: the median
of the nights and the total), the time of each view's query at the end (history show as text
and as JSON, the history page, the Markdown report's sections for the last run), and the file's
size. Targets (issue 22): at least 200,000 results a second; every view at most 1 s.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.history import status  # noqa: E402
from harness.history.perf_changes import perf_changes, size_changes  # noqa: E402
from harness.history.store import open_history  # noqa: E402
from harness.tools.history_commands import history_json  # noqa: E402
from harness.views.history_html import render_history_html  # noqa: E402
from harness.views.history_text import history_text  # noqa: E402

FAILING = ["compile_error", "mismatch", "runtime_error", "crashed"]
RESULT = ('{{"case": "{case}", "backend": "{backend}", "nodeid": "cases/opinfo.py::{case}[{backend}]", '
          '"params": {{"op": "{op}", "sample": {sample}, "dtype": "float32"}}, "tags": ["opinfo", "float32"], '
          '"outcome": "{outcome}", "phase": {phase}, "expected": "{expected}", "verdict": "{verdict}", '
          '"duration_s": {duration}, "message": {message}, "expectation_source": null, '
          '"phase_durations": {{"setup": 0.01, "compile": {duration}}}, "notes": {{}}, "signature": {signature}, '
          '"artifacts": null, "backend_versions": {{}}, "subject": "{op}", "fingerprints": {{{fingerprints}}}}}')
# Stage fingerprints as an MLIR backend's: a failure in `lower` has the first four. `exported` and
# what follows change when torch moves (TORCH, replaced per night), `linalg_ir` and `llvm_ir` of
# one pair in 100 when the harness does, weekly (WEEK).
STAGES = ("exported", "decomposed", "torch_ir", "torch_backend_ir", "linalg_ir", "llvm_ir")
TORCH, WEEK = "tttttttt", "wwwwwwww"


def kinds(pairs: int, rng: random.Random) -> list[str]:
    return rng.choices(["pass", "fail", "flip", "regress"], weights=[85, 10, 3, 2], k=pairs)


class Nights:
    """Each (case, backend)'s result as report text, passing and failing, written once; a night
    picks one of the two per pair (the reports differ only in outcomes and their environment)."""

    def __init__(self, args: argparse.Namespace, rng: random.Random):
        self.args, self.rng = args, rng
        self.backends = [f"backend{b}" for b in range(args.backends)]
        self.kinds = kinds(args.backends * args.cases, rng)
        self.lines = [(self._line(b, c, fails=False), self._line(b, c, fails=True))
                      for b in range(args.backends) for c in range(args.cases)]

    def _line(self, b: int, c: int, fails: bool) -> str:
        kind = self.kinds[b * self.args.cases + c]
        sig = f"error {c % 400}: failed to legalize operation 'torch.aten.op{c % 400}'"
        return RESULT.format(
            case=f"opinfo/op{c // 10}/default/float32/{c % 10}", backend=self.backends[b], op=f"op{c // 10}",
            sample=c % 10, outcome=FAILING[c % 4] if fails else "passed", phase='"lower"' if fails else "null",
            expected="xfail" if kind == "fail" else "pass",
            verdict="ok" if not fails or kind == "fail" else "unexpected_failure", duration=0.05,
            message=json.dumps(sig + " (at harness/backends/mlir.py:120)") if fails else '""',
            signature=json.dumps(sig) if fails else "null", fingerprints=self._fingerprints(b, c, fails))

    def _fingerprints(self, b: int, c: int, fails: bool) -> str:
        moves = {stage: TORCH for stage in STAGES}
        if c % 100 == 0:
            moves.update(linalg_ir=WEEK, llvm_ir=WEEK)
        stages = STAGES[:4] if fails else STAGES
        return ", ".join(f'"{stage}": "{b:02x}{i:x}{c:05x}{moves[stage]}"' for i, stage in enumerate(stages))

    def write(self, path: Path, night: int) -> int:
        cases, random_ = self.args.cases, self.rng.random
        picked = [failing if (kind == "fail" or (kind == "flip" and random_() < 0.5)
                              or (kind == "regress" and night // 30 > (i % cases) % 12)) else passing
                  for i, (kind, (passing, failing)) in enumerate(zip(self.kinds, self.lines))]
        environment = {"python": "3.11.7", "torch": f"2.{13 + night // 30}.0", "torch_mlir": "20261001",
                       "numpy": "2.4.6", "command": "pytest --opinfo-samples=all",
                       "harness_commit": f"{night // 7:040x}",   # the harness moves weekly
                       "project_commit": None,
                       "backends": {b: {"versions": {"torch-mlir": "20261001"}, "reported": {}} for b in self.backends}}
        head = json.dumps({"schema_version": 1, "run_id": f"night-{night}", "complete": night % 50 != 7,
                           "created": 1.7e9 + night * 86400.0, "environment": environment})
        results = ",\n".join(picked).replace(TORCH, f"{night // 30:08x}").replace(WEEK, f"{night // 7:08x}")
        path.write_text(head[:-1] + ', "results": [\n' + results + "\n]}\n", encoding="utf-8")
        return len(picked)


def timed(what: str, run) -> float:
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    print(f"  {what}: {seconds:.3f} s", flush=True)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=365)
    parser.add_argument("--backends", type=int, default=7)
    parser.add_argument("--cases", type=int, default=30000)
    parser.add_argument("--batch", type=int, default=1,
                        help="reports per `history ingest` (a backfill passes many; a nightly one)")
    parser.add_argument("--db", type=Path, help="keep the database here (default: a temporary folder)")
    args = parser.parse_args()
    nights = Nights(args, random.Random(0))
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "history.db"
        rates, total_results, total_seconds = [], 0, 0.0
        for first in range(0, args.runs, args.batch):
            batch = range(first, min(first + args.batch, args.runs))
            reports = [Path(tmp) / f"night{night}.json" for night in batch]
            count = sum(nights.write(report, night) for report, night in zip(reports, batch))
            started = time.perf_counter()
            with open_history(db, write=True) as store:
                store.ingest_all(reports)
            seconds = time.perf_counter() - started
            for report in reports:
                report.unlink()
            rates.append(count / seconds)
            total_results += count
            total_seconds += seconds
            if first % (10 * args.batch) == 0 or batch[-1] == args.runs - 1:
                print(f"nights {batch[0] + 1}-{batch[-1] + 1}: {count:,} results in {seconds:.2f} s "
                      f"({count / seconds:,.0f}/s); file {db.stat().st_size / 2**20:,.0f} MiB", flush=True)
        print(f"ingest: {total_results:,} results; median {statistics.median(rates):,.0f} results/s per ingest "
              f"of {args.batch} report(s), "
              f"overall {total_results / total_seconds:,.0f}/s")
        print(f"file: {db.stat().st_size / 2**20:,.0f} MiB for {args.runs} runs")
        print("views at this size:")
        with open_history(db, write=False) as store:
            last = {"run_id": f"night-{args.runs - 1}"}
            views = [timed("history show (text)",
                           lambda: history_text(status.runs(store), status.case_statuses(store),
                                                perf_changes(store), size_changes(store), ir=status.ir_changes(store))),
                     timed("history show --format=json", lambda: history_json(store)),
                     timed("history show --html", lambda: render_history_html(store)),
                     timed("the Markdown report's history sections",
                           lambda: status.case_statuses(store, run_identity=last["run_id"]))]
        print(f"slowest view: {max(views):.3f} s")


if __name__ == "__main__":
    main()
