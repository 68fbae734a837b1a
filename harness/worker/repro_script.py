#!/usr/bin/env python3
"""A case reproduced without the harness: `python repro.py`, from any directory.

The worker copies this file into each repro bundle as repro.py, beside what it reads:
repro.json (the case's constants), model.py (the module as source), backend_repro.py (the
backend's compile_and_run, from harness/backends/standalone) and inputs/*.npy. It needs torch,
numpy and the backend's own package, never the harness. It prints, for each input set and output,
the largest error against float64 eager PyTorch and how many elements are beyond the harness's
tolerance; a compile or run failure raises the compiler's own error.
"""
import copy
import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# beside this file in its bundle, found through the path entry above (mypy checks the template alone)
import backend_repro  # type: ignore[import-not-found]  # noqa: E402
from model import Model  # type: ignore[import-not-found]  # noqa: E402

CONSTANTS = json.loads((HERE / "repro.json").read_text())
DTYPE = getattr(torch, CONSTANTS["dtype"])
UNNAMED = "Dim.DYNAMIC"   # a dim the harness exported as torch.export.Dim.DYNAMIC (harness/worker/repro.py)


def load_inputs(index):
    folder = HERE / "inputs"
    arrays = (torch.from_numpy(np.load(folder / f"set{index}_{name}.npy")) for name in CONSTANTS["input_names"])
    return tuple(t.to(DTYPE) if t.is_floating_point() else t for t in arrays)  # bfloat16 was saved as float32


def dynamic_shapes():
    """One {dim: torch.export.Dim} or None per input, or None (from repro.json's names)."""
    specs = CONSTANTS["dynamic_shapes"]
    if specs is None:
        return None
    dims = {name: torch.export.Dim(name) for spec in specs if spec for name in spec.values() if name != UNNAMED}
    dims[UNNAMED] = torch.export.Dim.DYNAMIC   # export infers which of these dims are equal
    return tuple(None if spec is None else {int(k): dims[name] for k, name in spec.items()} for spec in specs)


def as_real(value):
    value = torch.as_tensor(value)
    return torch.view_as_real(value.resolve_conj()).double() if value.is_complex() else value.double()


def report(index, name, got, want):
    got, want = as_real(got), as_real(want)
    if got.shape != want.shape:
        print(f"input set {index}: {name}: shape {list(got.shape)}, expected {list(want.shape)}")
        return
    rms = want.pow(2).mean().sqrt().item() if want.numel() else 0.0
    bound = CONSTANTS["reductions"].get(name, 1) ** 0.5 * (CONSTANTS["rtol"] * want.abs()
                                                           + CONSTANTS["atol"] * max(1.0, rms))
    err = (got - want).abs()
    bad = int((err > bound).sum()) + int((torch.isnan(got) != torch.isnan(want)).sum())  # NaN must meet NaN
    worst = err[~torch.isnan(err)].max().item() if bool((~torch.isnan(err)).any()) else 0.0
    print(f"input set {index}: {name}: max abs error {worst:.3g}, "
          f"{bad} of {want.numel()} elements beyond the harness's tolerance")


def main():
    print(f"{CONSTANTS['case']} on {CONSTANTS['backend']} ({CONSTANTS['versions']})")
    input_sets = [load_inputs(index) for index in range(CONSTANTS["input_sets"])]
    model = Model()
    wide = copy.deepcopy(model).to(torch.float64)   # the golden: float64 weights too, before compiling
    results = backend_repro.compile_and_run(model, input_sets[0], dynamic_shapes(), input_sets,
                                            CONSTANTS["backend_constants"])
    for index, (inputs, got) in enumerate(zip(input_sets, results)):
        with torch.no_grad():
            want = wide(*(t.double() if t.is_floating_point() else t for t in inputs))
        for name, g, w in zip(CONSTANTS["output_names"], got, want):
            report(index, name, g, w)


if __name__ == "__main__":
    main()
