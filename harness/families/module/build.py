"""The module family's torch half (worker only): build the named nn.Module and draw its inputs.

The module's floating parameters and buffers are cast to the case's dtype (its first floating
input's), so that `dtype: float16` on the inputs tests the model in float16.

Order, so that a case reproduces anywhere: torch is seeded with the case's seed, the module is
built, then a generator seeded the same way draws every input set in turn. The golden is a float64
copy of the module run on the inputs upcast; a module that cannot run in float64 (an op without a
float64 kernel, a dtype fixed inside forward) falls back to eager at the case's dtype, and the
result's notes say so.
"""
from __future__ import annotations

import inspect
import os

import torch

from harness.backend_interface import Program, load_object
from harness.case_data import Case
from harness.draw_tensors import draw_sets
from harness.families.built import EagerGolden, GivenGolden, Golden
from harness.families.interface import Built
from harness.families.quantized.pt2e import quantized_built
from harness.families.train_step.build import train_step_built
from harness.torch_outputs import float64_outputs, output_leaves, output_names


class ModuleCase(torch.nn.Module):
    """forward(*inputs) -> the flat output leaves of the user's module."""

    def __init__(self, params: dict):
        super().__init__()
        self.params = params
        torch.manual_seed(params["seed"])
        factory = load_object(params["module"])
        self.inner = factory(**params["init"])
        if not isinstance(self.inner, torch.nn.Module):
            raise TypeError(f"{params['module']}(**init) returned {type(self.inner).__name__} {self.inner!r:.80}, "
                            "not an nn.Module")
        self.inner.to(getattr(torch, params["dtype"])).train(params["train"] or params["train_step"])
        self.input_names = _argument_names(self.inner, len(params["inputs"]))

    def forward(self, *inputs):
        return output_leaves(self.inner(*inputs))

    def repro_source(self) -> str:
        p = self.params
        return REPRO_MODEL.format(where=repr((p["module"], p["init"], p["seed"], p["train"])), dtype=p["dtype"],
                                  root=repr(os.getcwd()))   # the worker runs in the rootdir


REPRO_MODEL = '''\
import importlib
import sys

from torch.utils import _pytree as pytree

# The module is imported as the harness imported it: from the project's root (or PYTHONPATH, first).
sys.path.append({root})
MODULE, INIT, SEED, TRAIN = {where}
DTYPE = torch.{dtype}   # the module's floating parameters and buffers are cast to the case's dtype


class Model(torch.nn.Module):
    """forward(*inputs) -> the output leaves of MODULE(**INIT), built as the harness builds it."""

    def __init__(self):
        super().__init__()
        path, _, attr = MODULE.partition(":")
        torch.manual_seed(SEED)
        self.inner = getattr(importlib.import_module(path), attr)(**INIT)
        self.inner.to(DTYPE).train(TRAIN)

    def forward(self, *inputs):
        return tuple(pytree.tree_leaves(self.inner(*inputs)))
'''


def build(case: Case) -> Built:
    p = case.params
    module = ModuleCase(dict(p))
    input_sets = draw_sets(p["inputs"], p["input_sets"], p["seed"])
    with torch.no_grad():
        nested = [module.inner(*_copies(inputs)) for inputs in input_sets]
    outputs = [output_leaves(output) for output in nested]
    dims = tuple({d: torch.export.Dim.DYNAMIC for d in spec["dynamic"]} or None for spec in p["inputs"])
    dynamic = dims if any(dims) else None
    if p["train_step"]:
        return train_step_built(case, module, output_names(nested[0]), outputs[0], input_sets, dynamic, False, {})
    if p["quantize"]:
        return quantized_built(case.id, module, output_names(nested[0]), input_sets, dynamic, {})
    program = Program(case.id, module, input_sets[0], dynamic, output_names(nested[0]))
    tolerance = p["tolerance"] and (p["tolerance"]["rtol"], p["tolerance"]["atol"])
    golden: Golden = EagerGolden()
    notes = {}
    if p["dtype"] != "float64":
        try:
            golden = GivenGolden(float64_outputs(module, input_sets))
        except Exception as e:  # noqa: BLE001 - any failure: the module cannot run in float64
            notes["golden"] = f"eager at {p['dtype']}: the module does not run in float64 ({type(e).__name__}: {e})"
    return Built(program, input_sets, reference=outputs, golden=golden, tolerance=tolerance or None, notes=notes)


def _copies(inputs: tuple) -> tuple:
    return tuple(t.clone() for t in inputs)   # a module may write into its inputs


def _argument_names(module: torch.nn.Module, count: int) -> list[str]:
    """forward()'s parameter names, for the bundle's input files; input0... where it takes *args."""
    parameters = [p for p in inspect.signature(module.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in parameters[:count]]
    return names + [f"input{i}" for i in range(len(names), count)]
