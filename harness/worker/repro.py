"""The worker's half of a repro bundle: the inputs as .npy and a standalone repro.py.

repro.py is harness/worker/repro_script.py, copied; it reads what is written beside it:
repro.json (the case's constants), model.py (the module as source, `Program.module.repro_source()`)
and backend_repro.py (the backend's `standalone(program)` script from harness/backends/standalone,
or none.py, which says there is no standalone reproduction and how to rerun the case). It needs
torch, numpy and the backend's own package, never the harness.
"""
from __future__ import annotations

import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.backend_interface import STANDALONE_SCRIPTS, OnnxProgram, Program, Standalone
from harness.families.interface import Built
from harness.worker.bundle import Bundle

SCRIPT = Path(__file__).with_name("repro_script.py")
NUMPY_WIDER = {torch.bfloat16: lambda t: t.float(), torch.complex32: lambda t: t.to(torch.complex64)}
NO_STANDALONE = STANDALONE_SCRIPTS / "none.py"
DYNAMIC_HINT = "Dim.DYNAMIC"   # a dim given as torch.export.Dim.DYNAMIC (no name): repro_script.py reads it back


def write_repro(bundle: Bundle, case: dict, built: Built, backend: Any, tolerance: tuple[float, float],
                reductions: dict[str, int], rerun: str, versions: dict[str, str]) -> None:
    """case.json and what reproduces the case, by the kind of program: a PyTorch program's inputs
    and repro.py (below); an ONNX model's files (harness.worker.repro_onnx)."""
    bundle.write("case.json", json.dumps(case, indent=1) + "\n")
    if isinstance(built.program, OnnxProgram):
        from harness.worker.repro_onnx import write_onnx_files

        write_onnx_files(bundle, built, backend, rerun, built.tolerance or tolerance)
    else:
        _write_torch_repro(bundle, case, built.program, built.input_sets, backend, tolerance, reductions, rerun,
                           versions)


def _write_torch_repro(bundle: Bundle, case: dict, program: Program, input_sets: list[tuple], backend: Any,
                       tolerance: tuple[float, float], reductions: dict[str, int], rerun: str,
                       versions: dict[str, str]) -> None:
    """inputs/*.npy, and repro.py with what it reads."""
    names = (list(getattr(program.module, "input_names", ()))   # a module taking *tensors names them
             or list(inspect.signature(program.module.forward).parameters))
    for index, inputs in enumerate(input_sets):
        for name, tensor in zip(names, inputs):
            array = tensor.detach().cpu().resolve_conj().resolve_neg()
            array = NUMPY_WIDER.get(array.dtype, lambda t: t)(array)  # numpy has no bfloat16, no complex32
            np.save(bundle.path / "inputs" / f"set{index}_{name}.npy", array.numpy())
    standalone = backend.standalone(program) or Standalone(NO_STANDALONE, {"backend": backend.name, "rerun": rerun})
    constants = {"case": case["id"], "backend": backend.name, "dtype": case["params"]["dtype"],
                 "versions": ", ".join(f"{k} {v}" for k, v in versions.items()),
                 "input_names": names, "output_names": list(program.output_names), "input_sets": len(input_sets),
                 "rtol": tolerance[0], "atol": tolerance[1], "reductions": reductions,
                 "dynamic_shapes": dynamic_shapes_names(program.dynamic_shapes),
                 "backend_constants": standalone.constants}
    bundle.write("repro.json", json.dumps(constants, indent=1) + "\n")
    bundle.write("model.py", "import torch\n\n\n" + program.module.repro_source())
    shutil.copyfile(standalone.script, bundle.path / "backend_repro.py")
    shutil.copyfile(SCRIPT, bundle.path / "repro.py")


def dynamic_shapes_names(dynamic_shapes: Any) -> list | None:
    """A tuple of {dim: torch.export.Dim} or None per input, as JSON: {dim: the Dim's name}."""
    if dynamic_shapes is None:
        return None
    return [None if spec is None else {str(k): getattr(d, "__name__", DYNAMIC_HINT) for k, d in spec.items()}
            for spec in dynamic_shapes]


def versions_of(backend: Any) -> dict[str, str]:
    try:
        return {"torch": torch.__version__, **backend.versions()}
    except Exception:  # noqa: BLE001 - a failing version probe must not cost the bundle
        return {"torch": torch.__version__}
