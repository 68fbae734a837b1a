"""Torch-side builders of the OpInfo families (imported in worker processes only).

A case is one sample of PyTorch's OpInfo database: `(op, variant, dtype, sample_index)`, found
with harness.families.opinfo.manifest and checked against the fingerprint its params carry.

* `build_forward(case)`: the sample as a module whose `forward` takes the sample's tensors (the
  leaves of its flattened `(input, args, kwargs)`; everything else stays a constant) and returns
  the op's output leaves.
* `build_gradient(case)`: the vector-Jacobian product of those outputs with seeded cotangents.
Comparison settings measured per op are read from rules.yaml.
"""
from __future__ import annotations

import fnmatch
import functools
import re
import zlib
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

from harness.backend_interface import Program
from harness.case_data import Case
from harness.families.built import EagerGolden, Float64Golden
from harness.families.interface import Built
from harness.families.opinfo.manifest import cpu_dtypes, fingerprint, is_random, leaves_of, op_table, samples
from harness.torch_outputs import output_names

# ------------------------------------------------------------------------------------- builders

class SampleModule(torch.nn.Module):
    """forward(*tensors) -> the op's output leaves, the sample's other arguments held as constants."""

    def __init__(self, fn, leaves: list, spec, where: str):
        super().__init__()
        self.fn, self.spec, self.where = fn, spec, where
        self.constants = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        self.tensor_slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        paths = leaf_names(spec)
        self.input_names = [paths[slot] for slot in self.tensor_slots]   # input, args.0, kwargs.weight, ...

    def forward(self, *tensors):
        leaves = list(self.constants)
        for slot, tensor in zip(self.tensor_slots, tensors):
            leaves[slot] = tensor
        input, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return tuple(pytree.tree_leaves(self.fn(input, *args, **kwargs)))

    def repro_source(self) -> str:
        """The module as a standalone class `Model` that takes the sample from op_db again."""
        return REPRO_MODEL.format(where=self.where)


REPRO_MODEL = '''\
import itertools

from torch.testing._internal import common_methods_invocations  # pip install expecttest
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils import _pytree as pytree

# As the harness runs it: op_db's seeding wrapper (which torch.compile cannot trace) calls the op directly.
common_methods_invocations.wrapper_set_seed = lambda op, *args, **kwargs: op(*args, **kwargs)

NAME, VARIANT, DTYPE, INDEX = {where}


class Model(torch.nn.Module):
    """forward(*tensors) -> the op's output leaves, for OpInfo sample INDEX of NAME (VARIANT) at DTYPE."""

    def __init__(self):
        super().__init__()
        self.op = next(op for op in op_db if (op.name, op.variant_test_name or "") == (NAME, VARIANT))
        sample = next(itertools.islice(self.op.sample_inputs("cpu", getattr(torch, DTYPE),
                                                             requires_grad=self.op.supports_autograd), INDEX, None))
        leaves, self.spec = pytree.tree_flatten((sample.input, list(sample.args), dict(sample.kwargs)))
        self.constants = [None if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        self.slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        self.differentiable = [i for i in self.slots if leaves[i].requires_grad]

    def forward(self, *tensors):
        leaves = list(self.constants)
        for slot, tensor in zip(self.slots, tensors):
            leaves[slot] = tensor
        input, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return tuple(pytree.tree_leaves(self.op.op(input, *args, **kwargs)))
'''


REPRO_VJP = '''

class Model(Model):  # noqa: F811 - the gradient: forward(*tensors, *cotangents) -> the VJP
    """The vector-Jacobian product of the op's outputs that require grad with the cotangents."""

    def forward(self, *tensors_and_cotangents):
        tensors, cotangents = tensors_and_cotangents[:len(self.slots)], tensors_and_cotangents[len(self.slots):]
        with torch.enable_grad():
            leaves = list(self.constants)
            for slot, tensor in zip(self.slots, tensors):
                leaves[slot] = tensor.detach().requires_grad_(slot in self.differentiable)
            input, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
            outputs = [o for o in pytree.tree_leaves(self.op.op(input, *args, **kwargs))
                       if isinstance(o, torch.Tensor) and o.requires_grad]
            wrt = [leaves[i] for i in self.differentiable]
            grads = torch.autograd.grad(outputs, wrt, cotangents, allow_unused=True)
        return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, wrt))
'''


@functools.cache
def call_seeded_ops_directly() -> None:
    """op_db calls its random ops (and a few others) through `wrapper_set_seed`, which freezes the
    RNG state and seeds 42 so that two eager calls agree. Dynamo cannot trace that wrapper
    (torch.compile stops at a pybind11 object), and a random op's values are not compared here:
    in a worker, the wrapper calls the op directly, as a user's model would."""
    from torch.testing._internal import common_methods_invocations

    common_methods_invocations.wrapper_set_seed = _call


def _call(op, *args, **kwargs):
    return op(*args, **kwargs)


def find_sample(case: Case):
    """The op and the sample a case names, made as the manifest made it (with requires_grad for an
    op that supports autograd: a few ops make other values then); a fingerprint that differs is an
    error naming both."""
    p = case.params
    call_seeded_ops_directly()
    op = op_table().get((p["op"], p["variant"]))
    if op is None:
        raise ValueError(f"{case.id}: torch {torch.__version__} has no OpInfo {p['op']!r} variant {p['variant']!r}")
    sample = next(samples(op, p["dtype"], p["sample_index"], None, bool(op.supports_autograd)), None)
    if sample is None:
        raise ValueError(f"{case.id}: {p['op']} has no sample {p['sample_index']} at {p['dtype']} on torch "
                         f"{torch.__version__}")
    found = fingerprint(sample)
    if p.get("fingerprint") and p["fingerprint"] != found:
        raise ValueError(f"{case.id}: the sample changed: its fingerprint is {found!r}, the case says "
                         f"{p['fingerprint']!r} (torch {torch.__version__}); rerun to rebuild the manifest, "
                         "or update the cases file")
    return op, sample


def build_forward(case: Case) -> Built:
    op, sample = find_sample(case)
    leaves, spec = leaves_of(sample)
    p = case.params
    leaves = [leaf.detach() if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    module = SampleModule(op.op, leaves, spec, repr((p["op"], p["variant"], p["dtype"], p["sample_index"])))
    inputs = tuple(leaf for leaf in leaves if isinstance(leaf, torch.Tensor))
    with torch.no_grad():  # on copies: a sample may ask the op to write into its input
        input, args, kwargs = pytree.tree_unflatten([_copy(leaf) for leaf in leaves], spec)
        output = op.op(input, *args, **kwargs)
    program = Program(case.id, module, inputs, None, output_names(output))
    float64 = "float64" in cpu_dtypes(op) and p["dtype"] != "float64"
    built = Built(program, [inputs], reference=[tuple(pytree.tree_leaves(output))],
                  golden=Float64Golden() if float64 else EagerGolden())
    if is_random(op, sample):
        built.unchecked["*"] = "a random op (its values after export differ from eager's)"
    _apply_own_tolerance(built, op, p["dtype"])
    _apply_rules(built, case.family, p["op"], p["variant"], p["dtype"])
    if "input" in module.input_names:
        _apply_selections(built, sample, module.input_names.index("input"), case)
    return built


class VJPModule(SampleModule):
    """forward(*tensors, *cotangents) -> the vector-Jacobian product: the gradient, for each of the
    sample's tensors that requires grad, of sum(output * cotangent) over the op's floating outputs."""

    def __init__(self, fn, leaves: list, spec, where: str, cotangents: int):
        super().__init__(fn, leaves, spec, where)
        self.differentiable = [slot for slot in self.tensor_slots if leaves[slot].requires_grad]
        self.input_names += [f"cotangent{i}" for i in range(cotangents)]

    def _call(self, leaves: list):
        input, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.fn(input, *args, **kwargs)

    @staticmethod
    def _floating(output) -> list:
        return [o for o in pytree.tree_leaves(output) if isinstance(o, torch.Tensor) and o.requires_grad]

    def forward(self, *tensors_and_cotangents):
        tensors = tensors_and_cotangents[:len(self.tensor_slots)]
        cotangents = tensors_and_cotangents[len(self.tensor_slots):]
        with torch.enable_grad():
            leaves: list[Any] = list(self.constants)   # the tensor slots filled below
            for slot, tensor in zip(self.tensor_slots, tensors):
                leaves[slot] = tensor.detach().requires_grad_(True) if slot in self.differentiable else tensor
            outputs = self._floating(self._call(leaves))
            wrt = [leaves[slot] for slot in self.differentiable]
            grads = torch.autograd.grad(outputs, wrt, cotangents, allow_unused=True)
        return tuple(torch.zeros_like(x) if g is None else g for g, x in zip(grads, wrt))

    def repro_source(self) -> str:
        return REPRO_MODEL.format(where=self.where) + REPRO_VJP


def build_gradient(case: Case) -> Built:
    """The sample's vector-Jacobian product with a cotangent seeded from the case id, compared with
    eager autograd in float64; graph-capturing backends get it traced by make_fx (forward and
    backward as one aten graph)."""
    op, sample = find_sample(case)
    leaves, spec = leaves_of(sample)
    p = case.params
    input, args, kwargs = pytree.tree_unflatten([_copy(leaf) for leaf in leaves], spec)
    outputs = VJPModule._floating(op.op(input, *args, **kwargs))
    module = VJPModule(op.op, leaves, spec, repr((p["op"], p["variant"], p["dtype"], p["sample_index"])),
                       len(outputs))
    if not module.differentiable or not outputs:
        raise ValueError(f"{case.id}: the sample has no tensor that requires grad, or no output that does")
    generator = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))
    cotangents = tuple(torch.randn(o.shape, dtype=o.dtype, generator=generator) for o in outputs)
    tensors = tuple(leaf.detach() for leaf in leaves if isinstance(leaf, torch.Tensor))
    inputs = tensors + cotangents
    names = [f"grad_{module.input_names[module.tensor_slots.index(slot)]}" for slot in module.differentiable]

    def traced():
        from torch.fx.experimental.proxy_tensor import make_fx

        return make_fx(module)(*inputs)

    program = Program(case.id, module, inputs, None, names, traced=traced)
    with torch.no_grad():
        reference = module(*[_copy(t) for t in inputs])
    upcast = "float64" in cpu_dtypes(op) and p["dtype"] != "float64"
    built = Built(program, [inputs], reference=[tuple(reference)],
                  golden=Float64Golden() if upcast else EagerGolden())
    if is_random(op, sample):
        built.unchecked["*"] = "a random op (its values after export differ from eager's)"
    _apply_own_tolerance(built, op, p["dtype"])
    _apply_rules(built, case.family, p["op"], p["variant"], p["dtype"])
    return built


def own_tolerance(op, dtype: str) -> tuple[float, float] | None:
    """(rtol, atol): the loosest `toleranceOverride` the OpInfo gives the dtype on CPU (or on
    every device), over its tests; None when it gives none. PyTorch's own tests compare against a
    reference at that dtype, so it is at least as loose as the harness's float64 golden needs."""
    from torch.testing._internal.common_device_type import toleranceOverride

    wanted = getattr(torch, dtype)
    found = [tol for info in op.decorators if getattr(info, "device_type", None) in (None, "cpu")
             for decorator in getattr(info, "decorators", ()) if isinstance(decorator, toleranceOverride)
             for key, tol in decorator.d.items() if key == wanted]
    if not found:
        return None
    return max(t.rtol for t in found), max(t.atol for t in found)


HALF_DTYPES = ("float16", "bfloat16")   # where an OpInfo's own tolerance applies: float32's are measured here


def _apply_own_tolerance(built: Built, op, dtype: str) -> None:
    tolerance = own_tolerance(op, dtype) if dtype in HALF_DTYPES else None
    if tolerance is not None:
        built.tolerance = tolerance
        built.notes["tolerance"] = f"rtol={tolerance[0]:g}, atol={tolerance[1]:g} (the OpInfo's toleranceOverride)"


RULES_FILE = Path(__file__).with_name("rules.yaml")


@functools.cache
def comparison_rules() -> list[dict]:
    """harness/families/opinfo/rules.yaml: per-op comparison settings, measured."""
    import yaml

    return yaml.safe_load(RULES_FILE.read_text(encoding="utf-8")) or []


def _rules_for(family: str, op: str, variant: str, dtype: str):
    """The rules whose patterns match the case, in file order."""
    for rule in comparison_rules():
        if all(fnmatch.fnmatchcase(value, str(rule.get(key, "*")))
               for key, value in (("family", family), ("op", op), ("variant", variant), ("dtype", dtype))):
            yield rule


def _apply_rules(built: Built, family: str, op: str, variant: str, dtype: str) -> None:
    for rule in _rules_for(family, op, variant, dtype):
        built.unchecked.update(rule.get("unchecked", {}))
        if "tolerance" in rule:
            built.tolerance = (float(rule["tolerance"]["rtol"]), float(rule["tolerance"]["atol"]))
            built.notes["tolerance"] = (f"rtol={built.tolerance[0]:g}, atol={built.tolerance[1]:g} "
                                        f"(harness/families/opinfo/rules.yaml: {rule['reason']})")


def _apply_selections(built: Built, sample, position: int, case: Case) -> None:
    """The rules' index outputs of this sample, with the dim each one indexes along."""
    outputs = set(built.program.output_names)
    p = case.params
    for rule in _rules_for(case.family, p["op"], p["variant"], p["dtype"]):
        for name, where in rule.get("selects", {}).items():
            if len(sample.args) > where["arg"]:
                dim = sample.args[where["arg"]]
            elif where["kwarg"] in sample.kwargs or "default" in where:
                dim = sample.kwargs.get(where["kwarg"], where.get("default"))
            else:
                continue  # the op's form without a dim returns no indices
            if name in outputs:
                built.selects[name] = (position, None if dim is None else int(dim))


def leaf_names(spec) -> list[str]:
    """Names of the leaves of a flattened (input, args, kwargs): input, args.0, kwargs.weight, ..."""
    dummy = pytree.tree_unflatten([0] * spec.num_leaves, spec)
    paths = [pytree.keystr(path) for path, _ in pytree.tree_flatten_with_path(dummy)[0]]
    names = []
    for path in paths:
        parts = [p.strip("'\"") for p in path.strip("[]").split("][")]
        head = ("input", "args", "kwargs")[int(parts[0])]
        names.append(".".join([head, *parts[1:]]) if head != "input" or len(parts) > 1 else head)
    return [re.sub(r"[^\w.]", "_", name) for name in names]


def _copy(leaf: Any) -> Any:
    return leaf.clone() if isinstance(leaf, torch.Tensor) else leaf
