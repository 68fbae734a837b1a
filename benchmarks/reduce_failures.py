"""How small and how fast `python -m harness reduce` gets on a backend's real failures.

    python benchmarks/reduce_failures.py [--backend tosa] [--opinfo 50] [-n 2] [--out DIR] [--json PATH]

The cases: every module case and the first --opinfo OpInfo cases (by id, `opinfo/` only) that the
backend's expectation files (xfail/ and crash_sets/, each entry measured) list as failing or
crashing. Each is reduced as the command does (its own output folder under --out), on worker
pools kept from one case to the next. Per case: the signature, the ops before and after, the
candidates run and the seconds; at the end the medians, how many came to at most 3 ops, and
how many could not be reduced and why (a program that does not export, a failure that the
exported program does not reproduce, a case that passes now).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness.errors import HarnessInputError  # noqa: E402
from harness.project import Project, settings_from_args  # noqa: E402
from harness.reduce.engine import Reduction, Workers  # noqa: E402


def failing_ids(backend: str, opinfo: int) -> list[str]:
    ids = []
    for folder in ("xfail", "crash_sets"):
        entries = yaml.safe_load((REPO / folder / f"{backend}.yaml").read_text()) or []
        ids += [e["id"] for e in entries if "*" not in e["id"]]
    modules = sorted(i for i in ids if i.startswith("module/"))
    return modules + sorted(i for i in ids if i.startswith("opinfo/"))[:opinfo]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="tosa")
    parser.add_argument("--opinfo", type=int, default=50, help="how many failing OpInfo cases")
    parser.add_argument("-n", dest="parallel", type=int, default=2)
    parser.add_argument("--out", type=Path, help="the reduced programs (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write every case's result here")
    args = parser.parse_args()
    os.chdir(REPO)   # the workers' root: module cases import cases.models from there

    project = Project(settings_from_args(argparse.Namespace(), REPO))
    cases = {c.id: c for c in project.cases}
    config = project.config(args.backend)
    wanted = [i for i in failing_ids(args.backend, args.opinfo) if i in cases]
    out = args.out or Path(tempfile.mkdtemp(prefix="reduce-bench-"))
    workers = Workers(project, config, args.parallel)
    rows = []
    try:
        for index, case_id in enumerate(wanted, 1):
            folder = out / case_id.replace("/", "_")
            folder.mkdir(parents=True, exist_ok=True)
            started = time.monotonic()
            row = {"case": case_id}
            with open(folder / "log.txt", "w") as log:
                try:
                    result = Reduction(cases[case_id], project, config, folder, args.parallel, log=log,
                                       workers=workers).run()
                    row.update({"status": "passes now"} if result is None else {"status": "reduced", **{
                        k: result[k] for k in ("signature", "original_ops", "reduced_ops", "ops", "candidates_run")}})
                except HarnessInputError as e:
                    row.update(status="not reduced", reason=e.problem[:160])
            row["seconds"] = round(time.monotonic() - started, 1)
            rows.append(row)
            size = f"{row['original_ops']} -> {row['reduced_ops']} ops" if row["status"] == "reduced" else row["status"]
            print(f"[{index}/{len(wanted)}] {case_id}: {size}, {row['seconds']} s"
                  + (f" ({row.get('reason')})" if row.get("reason") else ""), flush=True)
    finally:
        workers.close()
    summarise(rows, args.backend)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def summarise(rows: list[dict], backend: str) -> None:
    reduced = [r for r in rows if r["status"] == "reduced"]
    print(f"\n{backend}: {len(rows)} failing cases, {len(reduced)} reduced")
    if reduced:
        print(f"  ops before: median {statistics.median(r['original_ops'] for r in reduced)}, "
              f"max {max(r['original_ops'] for r in reduced)}")
        print(f"  ops after:  median {statistics.median(r['reduced_ops'] for r in reduced)}, "
              f"max {max(r['reduced_ops'] for r in reduced)}; at most 3 ops: "
              f"{sum(r['reduced_ops'] <= 3 for r in reduced)} of {len(reduced)}")
        print(f"  seconds:    median {statistics.median(r['seconds'] for r in reduced)}, "
              f"max {max(r['seconds'] for r in reduced)}; candidates: median "
              f"{statistics.median(r['candidates_run'] for r in reduced)}")
    for status in ("not reduced", "passes now"):
        left = [r for r in rows if r["status"] == status]
        if left:
            print(f"  {status}: {len(left)}")
            for r in left:
                print(f"    {r['case']}: {r.get('reason', '')}")


if __name__ == "__main__":
    raise SystemExit(main())
