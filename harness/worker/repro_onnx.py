"""The worker's half of an ONNX model's repro bundle: the model and its data as ONNX's test layout.

model.onnx, test_data_set_<i>/input_<j>.pb and output_<j>.pb (the expected outputs), and
repro.py (harness/worker/repro_onnx_script.py, with the source of the harness's as_declared in
place of its import: `script_text`) with repro.json and backend_repro.py (the backend's
`standalone(program)` script, or none.py): it runs the model on the backend and compares as
ONNX's backend runner does, with onnx, numpy and the backend's own package only.
"""
from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

from harness.backend_interface import STANDALONE_SCRIPTS, OnnxProgram, Standalone
from harness.backends.onnx_front import as_declared, declared_dtype
from harness.families.interface import Built
from harness.worker.bundle import Bundle

SCRIPT = Path(__file__).with_name("repro_onnx_script.py")
# The script's import of the harness's functions, which a bundle's repro.py has their source for:
# one implementation, yet a repro.py that needs no harness.
SHARED_IMPORT = "from harness.backends.onnx_front import as_declared  # noqa: E402\n"
SHARED = (declared_dtype, as_declared)


def write_onnx_files(bundle: Bundle, built: Built, backend: Any, rerun: str, tolerance: tuple[float, float]) -> None:
    program = built.program
    assert isinstance(program, OnnxProgram), "written for an ONNX model's case"
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
    bundle.write("repro.py", script_text())


def script_text() -> str:
    """repro_onnx_script.py with the source of SHARED in place of its import of them."""
    template = SCRIPT.read_text(encoding="utf-8")
    if template.count(SHARED_IMPORT) != 1:
        raise AssertionError(f"{SCRIPT.name} must import the shared functions once, as {SHARED_IMPORT!r}")
    return template.replace(SHARED_IMPORT, "\n\n".join(inspect.getsource(f) for f in SHARED))
