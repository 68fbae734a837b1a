"""`python -m harness reduce --all REPORT --out DIR`: one reduction per signature group.

Every unexpected failure of the report is grouped by (backend, signature); each group's first
case (by id) is reduced into DIR/<backend>/<hash of the signature>/, on worker pools kept per
backend from one group to the next. DIR/reductions.json lists every group with what came of it
(reduced, not reduced and why, or passing now); `python -m harness report REPORT
--reductions DIR/reductions.json` links each group of the triage reports to its program
(harness.views.reductions reads the file).
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from harness.errors import HarnessInputError
from harness.files import display_path, write_text_atomically
from harness.outcomes import Verdict
from harness.project import Project
from harness.reduce.engine import Reduction, Workers
from harness.reports import read_report
from harness.rerun import Place

REDUCTIONS_FILE = "reductions.json"


def failure_groups(report: dict) -> dict[tuple[str, str], list[dict]]:
    """(backend, signature) -> the unexpected failures with it, by case id."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for record in sorted(report.get("results", []), key=lambda r: (r["backend"], r["case"])):
        if record.get("verdict") == Verdict.UNEXPECTED_FAILURE.value and record.get("signature"):
            groups.setdefault((record["backend"], record["signature"]), []).append(record)
    return groups


def reduce_all(project: Project, report_path: Path, out: Path, parallel: int, verbose: bool,
               place: Place | None = None) -> int:
    report = read_report(report_path)
    cases = project.report_cases(report)
    groups = failure_groups(report)
    print(f"{display_path(report_path)}: {len(groups)} signature groups of unexpected failures", file=sys.stderr,
          flush=True)
    entries: list[dict] = []
    workers: dict[str, Workers] = {}
    try:
        for index, ((backend, signature), records) in enumerate(groups.items(), 1):
            case = cases.get(records[0]["case"])
            folder = out / backend / hashlib.sha1(signature.encode()).hexdigest()[:10]
            entry = {"backend": backend, "signature": signature, "case": records[0]["case"],
                     "cases": len(records), "folder": str(folder.relative_to(out))}
            print(f"[{index}/{len(groups)}] {backend}: {signature} ({records[0]['case']}, "
                  f"{len(records)} case{'s' * (len(records) > 1)})", file=sys.stderr, flush=True)
            try:
                if case is None:
                    raise HarnessInputError(records[0]["case"], "its params cannot be rebuilt from the report")
                folder.mkdir(parents=True, exist_ok=True)
                reduction = Reduction(case, project, project.config(backend), folder, parallel, verbose,
                                      workers=workers.get(backend), place=place)
                workers[backend] = reduction.workers
                result = reduction.run()
                entry.update({"status": "passes now"} if result is None else
                             {"status": "reduced", **{k: result[k] for k in ("original_ops", "reduced_ops", "ops",
                                                                            "seconds", "program")}})
            except HarnessInputError as e:
                entry.update(status="not reduced", reason=str(e))
                print(f"  not reduced: {e}", file=sys.stderr, flush=True)
            entries.append(entry)
            write_text_atomically(out / REDUCTIONS_FILE, json.dumps(
                {"report": str(Path(report_path).resolve()), "reductions": entries}, indent=1) + "\n")
    finally:
        for backend_workers in workers.values():
            backend_workers.close()
    reduced = sum(e["status"] == "reduced" for e in entries)
    print(f"{reduced} of {len(entries)} groups reduced: {display_path(out / REDUCTIONS_FILE)}")
    return 0
