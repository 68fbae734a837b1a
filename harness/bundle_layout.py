"""The repro bundle's layout, shared by the worker that writes it and the controller that reads it.

    <DIR>/<backend>/<case>-<hash>/
        README.md           what happened, and the commands that reproduce it (the controller, last)
        case.json           the case as the harness ran it
        inputs/set0_<name>.npy ...   every input set (bfloat16 stored as float32: exact)
        repro.py            torch and the backend alone, outside the harness (harness/worker/repro_script.py),
                            reading repro.json (the case's constants), model.py (the module as
                            source) and backend_repro.py (from harness/backends/standalone)
        ir/NN-<stage>.mlir  the IR each compiler stage started from (MLIR backends)
        stages.txt          per stage: the torch-mlir-opt command that runs its pass pipeline on
                            the saved IR (or, where torch-mlir-opt lacks passes, the pipeline)

The worker writes as it goes (harness.worker.bundle), so a hang or a crash still leaves the
inputs and the IR the failing stage started from; the controller then writes README.md, or
deletes the folder when only unexpected results are kept (harness.controller.bundles).
"""
from __future__ import annotations

import re
import zlib
from pathlib import Path

STAGES_FILE = "stages.txt"


def bundle_path(root: Path, backend: str, case_id: str) -> Path:
    """A folder under root for the pair, whatever the names contain: sanitised and collision-free
    (a name that sanitising changes gets a hash of the original), never outside root."""
    return Path(root) / _safe(backend) / _safe(case_id)


def _safe(name: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:80]
    return safe if safe == name and safe.strip(".") else f"{safe}-{zlib.crc32(name.encode()):08x}"


def last_stage_command(path: Path) -> str | None:
    """The torch-mlir-opt command of the last stage that started (the one that failed, if one
    did), or None when there is none or torch-mlir-opt cannot run that stage."""
    stages = Path(path) / STAGES_FILE
    if not stages.exists():
        return None
    last = stages.read_text(encoding="utf-8").splitlines()[-1]
    return None if last.startswith("#") else last

