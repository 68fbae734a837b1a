"""How long `python -m harness coverage` takes on a report, and whether its statuses agree with the
expectation files.

    python benchmarks/op_coverage.py REPORT.json [--repeats 5]

Timing: each format (md, json, html) is a fresh `python -m harness coverage REPORT --format F -o
FILE` process, the formats interleaved, `--repeats` rounds; it prints each one's median, min and max
wall seconds (the issue's goal: at most 5 s on a report of OpInfo on the nine backends).

Agreement: the expectation files of this checkout (xfail/, crash_sets/) are loaded afresh, as a
run loads them, and each (op, backend) of the matrix is checked against them: an op that `failed`
must have every failure that counts against it listed by an entry (an expected failure, or a
crash-set case not run), and every case of an op that `passed` must be listed by none. It prints
the number of (op, backend) cells of each status and every cell that disagrees (exit status 1 if
any does).
"""
from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import reports  # noqa: E402
from harness.families.loader import entry_point_families  # noqa: E402
from harness.ops.coverage import FAILED, PASSED, case_ops, counted_against, coverage  # noqa: E402
from harness.outcomes import Outcome  # noqa: E402
from harness.project import Project, settings_from_args, tool_arguments  # noqa: E402
from harness.record import Record  # noqa: E402


def timed(report: Path, repeats: int) -> dict[str, list[float]]:
    walls: dict[str, list[float]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(repeats):
            for form in ("md", "json", "html"):
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "harness", "coverage", str(report), "--format", form,
                                "-o", str(Path(folder) / f"coverage.{form}")], cwd=ROOT, check=True)
                walls[form].append(time.perf_counter() - started)
    return walls


def disagreements(records: list[Record]) -> tuple[collections.Counter, list[str]]:
    families = entry_point_families().values()
    cov = coverage(records, [f.name for f in families if f.coverage == "ops"],
                   [f.name for f in families if f.coverage == "programs"])
    project = Project(settings_from_args(tool_arguments().parse_args([]), ROOT))
    listed = {b: project.expectations(b) for b in cov.backends}
    ops_of = case_ops(records)
    counted: dict[tuple[str, str], list[Record]] = collections.defaultdict(list)   # failures counted against
    cases: dict[tuple[str, str], list[Record]] = collections.defaultdict(list)
    for r in records:
        ops = ops_of.get(r.case) or {r.what_it_tests}
        for op in counted_against(r, ops):
            counted[(op, r.backend)].append(r)
        for op in ops:
            cases[(op, r.backend)].append(r)
    statuses: collections.Counter = collections.Counter()
    wrong = []
    for op in cov.ops:
        for backend in cov.backends:
            status = cov.cell(op, backend).status
            statuses[status] += 1
            if status == FAILED:
                wrong += [f"{op} on {backend}: {r.case} failed ({r.outcome.value}) and no entry lists it"
                          for r in counted[(op, backend)] if listed[backend].lookup(r.case) is None]
            elif status == PASSED:
                wrong += [f"{op} on {backend}: {r.case} passed but {listed[backend].lookup(r.case).source} lists it"
                          for r in cases[(op, backend)]
                          if r.outcome is Outcome.PASSED and listed[backend].lookup(r.case) is not None]
    return statuses, wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    records = [Record.from_json(r) for r in reports.read_report(args.report)["results"]]
    print(f"{args.report}: {len(records)} records, {len({r.case for r in records})} cases, "
          f"{len({r.backend for r in records})} backends")
    for form, walls in timed(args.report.resolve(), args.repeats).items():
        print(f"coverage --format={form}: median {statistics.median(walls):.2f} s "
              f"(min {min(walls):.2f}, max {max(walls):.2f}, {len(walls)} runs)")
    statuses, wrong = disagreements(records)
    print("cells: " + ", ".join(f"{status} {count}" for status, count in sorted(statuses.items())))
    print(f"disagreeing with the expectation files: {len(wrong)}")
    for line in wrong[:50]:
        print(f"  {line}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
