"""The `torch_mlir` family's builder (worker only): one test of torch-mlir's e2e suite as a program.

In upstream's order: the test's module factory, then the suite's own TestUtils (which seeds torch
with 0), then the invoker with a recorder in place of the module; each `module.forward(...)` call
is recorded with its inputs (cloned before the call: forward may write into them) and its output,
eager PyTorch's, which is the golden. Then the factory builds the module again for the backend,
as upstream does (a module whose weights must match seeds torch in its __init__).

The calls become one program run on each call's inputs: non-tensor arguments are constants of the
program (they must be the same in every call), and a dim whose size differs between calls is
exported dynamic. Outputs are compared with the harness's comparison at upstream's tolerance
(rtol 1e-3, atol 1e-7), against eager at the test's own dtypes: a float within
rtol * |golden| + atol * max(1, rms(golden)), never divided by the golden (upstream's scalar check
divides, so it cannot judge a zero golden and passes any negative one); NaN where the golden has
NaN; integers and booleans exactly.
"""
from __future__ import annotations

import inspect

import torch
from torch.utils import _pytree as pytree

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.built import EagerGolden
from harness.families.interface import Built
from harness.families.torch_mlir.manifest import import_registry, import_test_module
from harness.torch_outputs import output_leaves, output_names

UPSTREAM_TOLERANCE = (1e-3, 1e-7)   # reporting.py's allclose(rtol=1e-3, atol=1e-7)


class Recorder:
    """Stands for the module in the invoker: records each call of a method as (symbol, inputs, output)."""

    def __init__(self, module, calls: list, path: tuple[str, ...] = ()):
        self._module, self._calls, self._path = module, calls, path

    def __getattr__(self, name):
        return Recorder(getattr(self._module, name), self._calls, self._path + (name,))

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"the test calls module.{'.'.join(self._path)} with keyword arguments; the adapter "
                            "replays positional arguments only")
        inputs = pytree.tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, args)
        output = self._module(*args)
        self._calls.append((".".join(self._path), inputs, output))
        return output


class ReplayedCalls(torch.nn.Module):
    """forward(*tensors): the test module's forward, with the calls' non-tensor arguments as constants."""

    def __init__(self, inner: torch.nn.Module, constants: list, params: dict):
        super().__init__()
        self.inner, self.constants, self.params = inner, constants, params
        self.slots = [i for i, c in enumerate(constants) if c is TENSOR]
        arguments = [n for n in inspect.signature(inner.forward).parameters if n not in ("args", "kwargs")]
        self.input_names = [arguments[i] if i < len(arguments) else f"input{i}" for i in self.slots]  # bundle files

    def forward(self, *tensors):
        arguments = list(self.constants)
        for slot, tensor in zip(self.slots, tensors):
            arguments[slot] = tensor
        return output_leaves(self.inner(*arguments))

    def repro_source(self) -> str:
        return REPRO_MODEL.format(where=repr((self.params["suite"], self.params["module"], self.params["test"])),
                                  constants=repr([None if c is TENSOR else c for c in self.constants]),
                                  slots=self.slots)


TENSOR = object()   # marks an argument slot that the program takes as an input

REPRO_MODEL = '''\
import sys
import types

from torch.utils import _pytree as pytree

SUITE, MODULE, TEST = {where}
CONSTANTS, SLOTS = {constants}, {slots}   # the calls' non-tensor arguments; where the tensors go


def _factory():
    """The test's module factory, from the suite checkout (test_suite/__init__.py is not run)."""
    sys.path.insert(0, SUITE)
    package = types.ModuleType("torch_mlir_e2e_test.test_suite")
    package.__path__ = [SUITE + "/torch_mlir_e2e_test/test_suite"]
    sys.modules.setdefault(package.__name__, package)
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY

    __import__(package.__name__ + "." + MODULE)
    return next(t for t in GLOBAL_TEST_REGISTRY if t.unique_name == TEST).program_factory


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = _factory()()

    def forward(self, *tensors):
        arguments = list(CONSTANTS)
        for slot, tensor in zip(SLOTS, tensors):
            arguments[slot] = tensor
        return tuple(pytree.tree_leaves(self.inner(*arguments)))
'''


def find_test(params: dict):
    registry = import_registry(params["suite"])
    import_test_module(params["module"])
    for test in registry.GLOBAL_TEST_REGISTRY:
        if test.unique_name == params["test"]:
            return test
    raise ValueError(f"{params['module']} registers no test {params['test']!r} (the suite changed since it was listed)")


def record_calls(test) -> list[tuple[str, tuple, object]]:
    """The golden trace, made as upstream makes it: factory, TestUtils(), invoker."""
    from torch_mlir_e2e_test.framework import TestUtils

    calls: list = []
    module = test.program_factory()
    test.program_invoker(Recorder(module, calls), TestUtils())
    if not calls:
        raise ValueError(f"{test.unique_name} calls no method of its module")
    other = sorted({symbol for symbol, _, _ in calls} - {"forward"})
    if other:
        raise ValueError(f"{test.unique_name} calls module.{', module.'.join(other)}; the adapter compiles "
                         "forward only")
    return calls


def build(case: Case) -> Built:
    p = dict(case.params)
    test = find_test(p)
    calls = record_calls(test)
    constants = _constants(test.unique_name, [inputs for _, inputs, _ in calls])
    module = ReplayedCalls(test.program_factory(), constants, p)
    input_sets = [tuple(a for a in inputs if isinstance(a, torch.Tensor)) for _, inputs, _ in calls]
    references = [output_leaves(output) for _, _, output in calls]
    program = Program(case.id, module, input_sets[0], _differing_dims(input_sets), output_names(calls[0][2]))
    built = Built(program, input_sets, reference=references, golden=EagerGolden(), tolerance=UPSTREAM_TOLERANCE)
    built.notes["golden"] = f"eager PyTorch at the test's dtypes, {len(calls)} call(s) of forward"
    return built


def _constants(name: str, calls: list[tuple]) -> list:
    """Per argument slot: TENSOR, or the non-tensor value every call passes there."""
    first = calls[0]
    slots = [TENSOR if isinstance(a, torch.Tensor) else a for a in first]
    for inputs in calls[1:]:
        again = [TENSOR if isinstance(a, torch.Tensor) else a for a in inputs]
        if len(again) != len(slots) or any(a is not b and a != b for a, b in zip(again, slots)):
            raise ValueError(f"{name} calls forward with different non-tensor arguments or counts; the adapter "
                             "compiles one program for every call")
    return slots


def _differing_dims(input_sets: list[tuple]):
    """Dims whose size differs between the calls, as torch.export.Dim.DYNAMIC; None when none do."""
    dims = []
    for tensors in zip(*input_sets):
        ranks = {t.dim() for t in tensors}
        if len(ranks) != 1:
            raise ValueError("the calls pass tensors of different ranks in one argument; the adapter compiles one "
                             "program for every call")
        differ = [d for d in range(tensors[0].dim()) if len({t.shape[d] for t in tensors}) > 1]
        dims.append({d: torch.export.Dim.DYNAMIC for d in differ} or None)
    return tuple(dims) if any(dims) else None
