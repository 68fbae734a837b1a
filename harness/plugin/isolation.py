"""pytest --isolate: each case that fails as a mismatch is isolated to the ops that make it
(harness.isolate.engine, the search `python -m harness isolate` runs) on the run's own workers,
right after its result; what it found goes into the case's record (Record.isolation), which every
report shows and the history groups by culprit op."""
from __future__ import annotations

from pathlib import Path

from harness.bundle_layout import bundle_path
from harness.case_data import Case
from harness.controller.runner import Runner
from harness.errors import HarnessInputError
from harness.files import display_path
from harness.outcomes import Outcome
from harness.protocol import CaseResult
from harness.record import Record

FOLDER = "isolation"   # under --artifacts-dir, else under the rootdir: as `python -m harness isolate` writes


def isolation_of(runner: Runner, case: Case, record: Record) -> dict | None:
    """The isolation of a mismatching result with --isolate (None otherwise): the culprits and
    what else the search found, or {"error": why it could not isolate}."""
    if not runner.settings.isolate or record.outcome is not Outcome.MISMATCH:
        return None
    from harness.isolate.engine import Isolation  # the search loads for --isolate alone

    settings = runner.settings
    backend = record.backend
    out = bundle_path((settings.artifacts_dir or settings.rootdir) / FOLDER, backend, case.id).resolve()
    try:
        out.mkdir(parents=True, exist_ok=True)
        mismatch = CaseResult(record.outcome, record.phase, record.message)
        with open(out / "isolate.log", "w", encoding="utf-8") as log:
            found = Isolation(case, runner.project, runner.configs[backend], out, log=log,
                              workers=runner.workers).run(mismatch)
    except HarnessInputError as e:
        return {"error": str(e), "folder": display_path(out)}
    except OSError as e:
        return {"error": f"cannot write {display_path(out)} ({e.strerror or e})", "folder": display_path(out)}
    for culprit in found["culprits"]:
        culprit["bundle"] = culprit["bundle"] and display_path(Path(culprit["bundle"]))
    return {key: found[key] for key in ("culprits", "failed_ops", "ops", "compiles", "seconds")} | {
        "cut": found["cut"] and found["cut"]["text"], "folder": display_path(out)}
