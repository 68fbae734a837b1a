"""A backend for `python -m harness isolate`'s self-tests (never used by the product).

`PerturbingBackend` exports the program as the harness does and runs the exported graph with an
FX interpreter, exactly, except that the results of the one aten op named by its `perturb`
option ("aten.gelu.default") come out 1% off: a lowering slightly wrong, the whole model drifting.
With `perturb_after` OP too, only where its first argument is OP's result (a fusion of the two
that is wrong): alone, fed an input, the op is exact, so only a prefix of the program shows it.
With `crash_on_cut` OP, compiling a program isolate cut out that holds OP crashes the process
(a segfault). With `refuse_cut_programs`, it refuses to compile the programs isolate cuts out (ids
`isolated/...`): a backend that compiles the case but not a one-op program.
"""
from __future__ import annotations

import ctypes

import torch

from harness.backend_interface import Backend, export_program, own_outputs, user_output_count
from harness.outcomes import Phase


class PerturbingBackend(Backend):
    OPTIONS = {"perturb": "the aten op whose results come out 1% off, e.g. aten.gelu.default",
               "perturb_after": "perturb only where the op's first argument is this op's result (a fusion)",
               "crash_on_cut": "segfault compiling a program isolate cut out that holds this op",
               "refuse_cut_programs": "refuse to compile the programs isolate cuts out (true/false)"}

    def compile(self, program, case):
        case.enter(Phase.EXPORT)
        exported = export_program(program)
        case.enter(Phase.COMPILE)
        cut = program.name.startswith("isolated/")
        if cut and any(_name(n) == self.options.get("crash_on_cut") for n in exported.graph.nodes):
            ctypes.string_at(0)
        if self.options.get("refuse_cut_programs") and cut:
            raise RuntimeError(f"this backend compiles whole models only, not {program.name}")
        return exported.module(), user_output_count(exported)

    def run(self, artifact, inputs, case):
        module, count = artifact
        perturbed, after = self.options.get("perturb", ""), self.options.get("perturb_after")

        def fused(node) -> bool:
            first = node.args[0] if node.args else None
            return after is None or (isinstance(first, torch.fx.Node) and _name(first) == after)

        class Perturbing(torch.fx.Interpreter):
            def run_node(self, node):
                result = super().run_node(node)
                if node.op == "call_function" and _name(node) == perturbed and fused(node):
                    return _one_percent_off(result)
                return result

        with torch.no_grad():
            return own_outputs(list(Perturbing(module).run(*inputs)), count)


def _name(node) -> str:
    return str(node.target).removeprefix("torch.ops.")


def _one_percent_off(value):
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return value * 1.01
    if isinstance(value, (tuple, list)):   # a multi-result op (convolution_backward): each of its results
        return type(value)(_one_percent_off(v) for v in value)
    return value
