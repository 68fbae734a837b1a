"""A PyTorch program quantized to int8 by PyTorch's PT2E flow (worker only; torchao, the `quant`
extra): export, prepare with torchao's X86InductorQuantizer (its default configuration: static
quantization, int8 weights per output channel, uint8 activations per tensor), calibrate on every
input set of the case, convert. The quantized graph holds `quantized_decomposed` quantize and
dequantize ops around the float ops they feed, which a backend lowers or fuses."""
from __future__ import annotations

import collections
import contextlib
import io
from typing import Any

import torch

from harness.backend_interface import Program
from harness.families.built import Built
from harness.families.quantized.golden import QuantizedGolden
from harness.installation.extras import install_command
from harness.quantization import EXTRA

QUANTIZE_OPS = ("quantize_per_tensor", "quantize_per_channel", "dequantize_per_tensor", "dequantize_per_channel")


class NotQuantized(RuntimeError):
    """The quantizer left no quantize or dequantize op in the graph: the case would test float code."""


def quantized_built(case_id: str, module: torch.nn.Module, names: list[str], input_sets: list[tuple],
                    dynamic: Any, notes: dict) -> Built:
    """The Built of `module`'s int8 program: the quantized graph, its eager outputs on every input
    set as the golden, judged in quantization steps (QuantizedGolden)."""
    quantized = QuantizedProgram(quantize_int8(module, input_sets, dynamic), module)
    with torch.no_grad():
        reference = [tuple(quantized(*inputs)) for inputs in input_sets]
    notes["quantized"] = ", ".join(f"{op} x{n}" for op, n in sorted(quantize_ops(quantized.graph_module).items()))
    program = Program(case_id, quantized, input_sets[0], dynamic, names)
    return Built(program, input_sets, reference=reference, golden=QuantizedGolden(tuple(names)), notes=notes)


class QuantizedProgram(torch.nn.Module):
    """The quantized graph as the program's module; its repro quantizes the float module's own
    repro the same way."""

    def __init__(self, graph_module: torch.fx.GraphModule, float_module: torch.nn.Module):
        super().__init__()
        self.graph_module = graph_module
        self.input_names = list(getattr(float_module, "input_names", []))
        source = getattr(float_module, "repro_source", None)   # a method of the family's modules
        self._float_source = source() if callable(source) else None

    def forward(self, *inputs):
        return tuple(self.graph_module(*inputs))

    def repro_source(self) -> str:
        if self._float_source is None:
            raise NotImplementedError("the float module offers no repro source")
        return self._float_source.replace("class Model(", "class FloatModel(") + REPRO_QUANTIZED


REPRO_QUANTIZED = '''

class Model(torch.nn.Module):
    """FloatModel quantized to int8 as the harness quantizes it (torchao's PT2E flow, its
    X86InductorQuantizer's default configuration), calibrated on the first inputs it is called
    with (the harness calibrated on every input set of the case: with several, values may differ
    by a quantization step)."""

    def __init__(self):
        super().__init__()
        self.float_model, self.quantized = FloatModel().eval(), None

    def forward(self, *inputs):
        if self.quantized is None:
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
            from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
                X86InductorQuantizer, get_default_x86_inductor_quantization_config)
            quantizer = X86InductorQuantizer()
            quantizer.set_global(get_default_x86_inductor_quantization_config())
            prepared = prepare_pt2e(torch.export.export(self.float_model, inputs, strict=False).module(), quantizer)
            with torch.no_grad():
                prepared(*inputs)
            self.quantized = convert_pt2e(prepared)
        return tuple(self.quantized(*inputs))
'''


def quantize_int8(module: torch.nn.Module, input_sets: list[tuple], dynamic_shapes: Any = None) -> torch.fx.GraphModule:
    """`module` quantized, calibrated on `input_sets`; NotQuantized when the result holds no
    quantize/dequantize op (a module of ops the quantizer has no pattern for)."""
    prepare_pt2e, convert_pt2e, quantizer = _torchao()
    exported = torch.export.export(module, input_sets[0], dynamic_shapes=dynamic_shapes, strict=False).module()
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for inputs in input_sets:
            prepared(*inputs)
    quantized = convert_pt2e(prepared)
    counts = quantize_ops(quantized)
    if not counts:
        raise NotQuantized("torchao's X86InductorQuantizer left no quantize or dequantize op in the graph: "
                           "no op of this program has a quantization pattern, so its int8 variant would test "
                           "float code; leave quantize out for this case")
    return quantized


def quantize_ops(graph_module: torch.fx.GraphModule) -> dict[str, int]:
    """How many of each quantize and dequantize op the graph holds."""
    names = (getattr(node.target, "__name__", str(node.target)).split(".")[0]
             for node in graph_module.graph.nodes if node.op == "call_function")
    return dict(collections.Counter(name for name in names if name in QUANTIZE_OPS))


def _torchao():
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            # torchao prints a line for each GPU kernel library it cannot load on a CPU-only machine
            from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
            from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
                X86InductorQuantizer,
                get_default_x86_inductor_quantization_config,
            )
    except ImportError as e:
        raise RuntimeError(f"quantize: int8 needs torchao, which is not installed ({install_command([EXTRA])}): "
                           f"{e}") from None
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    return prepare_pt2e, convert_pt2e, quantizer
