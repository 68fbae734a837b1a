"""The worker's half of an ONNX model's repro bundle: the model and its data as ONNX's test layout.

model.onnx, test_data_set_<i>/input_<j>.pb and output_<j>.pb (the expected outputs), and
repro.py (harness/worker/repro_onnx_script.py, copied) with repro.json and backend_repro.py (the
backend's `standalone(program)` script, or none.py): it runs the model on the backend and
compares as ONNX's backend runner does, with onnx, numpy and the backend's own package only.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from harness.backend import STANDALONE_SCRIPTS, Standalone
from harness.families.interface import Built
from harness.worker.bundle import Bundle

SCRIPT = Path(__file__).with_name("repro_onnx_script.py")


def write_onnx_files(bundle: Bundle, built: Built, backend: Any, rerun: str, tolerance: tuple[float, float]) -> None:
    program = built.program
    source = Path(program.path).parent
    shutil.copyfile(program.path, bundle.path / "model.onnx")
    data_sets = sorted(source.glob("test_data_set_*"))
    for data in data_sets:
        shutil.copytree(data, bundle.path / data.name)
    rtol, atol = tolerance
    standalone = (backend.standalone(program)
                  or Standalone(STANDALONE_SCRIPTS / "none.py", {"backend": backend.name, "rerun": rerun}))
    bundle.write("repro.json", json.dumps({"backend": backend.name, "rtol": rtol, "atol": atol,
                                           "data_sets": [d.name for d in data_sets],
                                           "backend_constants": standalone.constants}, indent=1) + "\n")
    shutil.copyfile(standalone.script, bundle.path / "backend_repro.py")
    shutil.copyfile(SCRIPT, bundle.path / "repro.py")
