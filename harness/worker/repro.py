"""The worker's half of a repro bundle: the inputs as .npy and a standalone repro.py.

repro.py needs torch, numpy and the backend's own package, never the harness: the module is
written out as source (`Program.module.repro_source()`), the inputs are loaded from the bundle,
and the backend contributes `compile_and_run` (`Backend.repro_source(program)`), or nothing, in
which case the script says so and still runs the module in eager PyTorch.
"""
from __future__ import annotations

import inspect
import json
from typing import Any

import numpy as np
import torch

from harness.backend import Program
from harness.worker.bundle import Bundle

NO_STANDALONE = '''
def compile_and_run(model, example_inputs, dynamic_shapes, input_sets):
    raise SystemExit("backend {backend}: no standalone reproduction yet; rerun it through the harness:\\n  {rerun}")
'''

TEMPLATE = '''#!/usr/bin/env python3
"""{case} on {backend}, reproduced without the harness: python repro.py (from any directory).

Written by torch-backend-e2e with {versions}.
Prints, for each input set and output, the largest error against float64 eager PyTorch, and
the harness's tolerance for it; a compile or run failure raises the compiler's own error.
"""
import pathlib

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
DTYPE = torch.{dtype}
INPUT_NAMES = {input_names!r}
OUTPUT_NAMES = {output_names!r}
RTOL, ATOL = {rtol!r}, {atol!r}                 # scaled by sqrt(reduction length) per output:
REDUCTIONS = {reductions!r}


{module_source}

def load_inputs(index):
    return tuple(torch.from_numpy(np.load(HERE / "inputs" / f"set{{index}}_{{name}}.npy")).to(DTYPE)
                 for name in INPUT_NAMES)


INPUT_SETS = [load_inputs(index) for index in range({n_sets})]
{dynamic_shapes}
{backend_source}

def main():
    model = Model()
    results = compile_and_run(model, INPUT_SETS[0], DYNAMIC_SHAPES, INPUT_SETS)
    for index, (inputs, got) in enumerate(zip(INPUT_SETS, results)):
        with torch.no_grad():
            want = model(*(t.double() for t in inputs))
        for name, g, w in zip(OUTPUT_NAMES, got, want):
            g = torch.as_tensor(g).double()
            if g.shape != w.shape:
                print(f"input set {{index}}: {{name}}: shape {{list(g.shape)}}, expected {{list(w.shape)}}")
                continue
            rms = w.pow(2).mean().sqrt().item() if w.numel() else 0.0
            bound = REDUCTIONS.get(name, 1) ** 0.5 * (RTOL * w.abs() + ATOL * max(1.0, rms))
            bad = int(((g - w).abs() > bound).sum()) + int(torch.isnan(g).sum())
            print(f"input set {{index}}: {{name}}: max abs error {{(g - w).abs().max().item():.3g}}, "
                  f"{{bad}} of {{w.numel()}} elements beyond the harness's tolerance")


if __name__ == "__main__":
    main()
'''


def write_repro(bundle: Bundle, case: dict, program: Program, input_sets: list[tuple], backend: Any,
                tolerance: tuple[float, float], reductions: dict[str, int], rerun: str,
                versions: dict[str, str]) -> None:
    """case.json, inputs/*.npy and repro.py into the bundle."""
    bundle.write("case.json", json.dumps(case, indent=1) + "\n")
    names = list(inspect.signature(program.module.forward).parameters)
    for index, inputs in enumerate(input_sets):
        for name, tensor in zip(names, inputs):
            array = tensor.detach().cpu()
            array = array.float() if array.dtype == torch.bfloat16 else array  # numpy has no bfloat16
            np.save(bundle.path / "inputs" / f"set{index}_{name}.npy", array.numpy())
    backend_source = backend.repro_source(program) or NO_STANDALONE.format(backend=backend.name, rerun=rerun)
    bundle.write("repro.py", TEMPLATE.format(
        case=case["id"], backend=backend.name, dtype=case["params"]["dtype"],
        versions=", ".join(f"{k} {v}" for k, v in versions.items()),
        input_names=names, output_names=list(program.output_names), rtol=tolerance[0], atol=tolerance[1],
        reductions=reductions, module_source=program.module.repro_source(), n_sets=len(input_sets),
        dynamic_shapes=dynamic_shapes_source(program.dynamic_shapes), backend_source=backend_source))


def dynamic_shapes_source(dynamic_shapes: Any) -> str:
    """`DYNAMIC_SHAPES = ...` for a tuple of {dim: torch.export.Dim} or None per input."""
    if dynamic_shapes is None:
        return "DYNAMIC_SHAPES = None\n"
    dims = {d.__name__ for spec in dynamic_shapes if spec for d in spec.values()}
    lines = [f"{name} = torch.export.Dim({name!r})" for name in sorted(dims)]
    specs = ", ".join("None" if spec is None else
                      "{" + ", ".join(f"{k}: {d.__name__}" for k, d in spec.items()) + "}"
                      for spec in dynamic_shapes)
    return "\n".join(lines + [f"DYNAMIC_SHAPES = ({specs},)"]) + "\n"


def versions_of(backend: Any) -> dict[str, str]:
    try:
        return {"torch": torch.__version__, **backend.versions()}
    except Exception:  # noqa: BLE001 - a failing version probe must not cost the bundle
        return {"torch": torch.__version__}

