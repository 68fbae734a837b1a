"""The reduced family's torch half (worker only): load model.py and inputs.pt.

The golden is a float64 copy of the module (its floating constants upcast) run on the inputs
upcast, as for any PyTorch case, judged by the original family's rule: within the tolerance, or
with `ratio` by the ratio to eager's own error at the inputs' dtypes (RatioGolden, a model's rule),
so that a cut program fails as the whole one did. A program that cannot run in float64 (a dtype
fixed by one of its ops) falls back to eager at the inputs' dtypes, and the result's notes say so.
"""
from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path

import torch

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.built import EagerGolden, GivenGolden, Golden, RatioGolden
from harness.families.interface import Built
from harness.graph_source import standalone_source


def build(case: Case) -> Built:
    params = case.params
    module = _load_model(Path(params["module"]))
    inputs = tuple(torch.load(params["inputs"]))
    dynamic = [_dims(params["dynamic"].get(str(i))) for i in range(len(inputs))]
    program = Program(case.id, module, inputs, dynamic if any(dynamic) else None, params["output_names"])
    tolerance = params["tolerance"]
    with torch.no_grad():   # each output's dtype, and the values of integer and boolean outputs
        reference = [tuple(module(*inputs))]
    ratio = params.get("ratio")
    try:
        values = [_float64_outputs(module, inputs)]
        golden: Golden = RatioGolden(values, *ratio) if ratio else GivenGolden(values)
        notes = {}
    except Exception as e:  # noqa: BLE001 - any failure to run in float64: compare with eager at its dtypes
        golden = EagerGolden()
        notes = {"golden": f"eager at the program's dtypes (in float64 it raised {type(e).__name__})"}
    return Built(program, [inputs], reference=reference, golden=golden,
                 tolerance=tolerance and (tolerance["rtol"], tolerance["atol"]), notes=notes)


def _load_model(path: Path) -> torch.nn.Module:
    name = f"reduced_model_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, "a .py file has a spec and a loader"
    loaded = sys.modules[name] = importlib.util.module_from_spec(spec)   # torch.export looks the class up
    spec.loader.exec_module(loaded)
    model = loaded.Model()
    model.repro_source = lambda: standalone_source(path)
    return model


def _dims(dims: list[int] | None):
    return {d: torch.export.Dim.DYNAMIC for d in dims} if dims else None


def _float64_outputs(module: torch.nn.Module, inputs: tuple) -> tuple:
    wide = copy.deepcopy(module)
    for name, buffer in list(wide.named_buffers()):
        if buffer.is_floating_point():
            setattr(wide, name, buffer.to(torch.float64))
    upcast = tuple(t.to(torch.float64) if t.is_floating_point() else t for t in inputs)
    with torch.no_grad():
        return tuple(wide(*upcast))
