"""int8 programs, their pure half: the `quantize` param of the module and model families, and
whether torchao is here to quantize (harness.families.quantized quantizes and judges, in workers).

    quantize    int8: the case is its program quantized by PyTorch's PT2E flow (torchao's
                X86InductorQuantizer: static, per-channel weights, per-tensor activations),
                calibrated on the case's input sets; ids end in /int8 by convention   default none
"""
from __future__ import annotations

import collections
import functools
import importlib.util
from typing import Any, Callable, Iterable, Mapping

from harness.case_data import Case
from harness.installation.extras import install_command

KEY = "quantize"
SCHEMES = ("int8",)
EXTRA = "quant"   # the extra that installs torchao


def validate(params: Mapping[str, Any]) -> dict:
    """`quantize` complete; ValueError naming the value and the fix."""
    scheme = params.get(KEY)
    if scheme is not None and scheme not in SCHEMES:
        raise ValueError(f"quantize {scheme!r} is not one of {', '.join(SCHEMES)} (or leave it out)")
    if scheme is not None and params.get("train_step"):
        raise ValueError("quantize applies to the forward pass: a training step is not quantized "
                         "(leave one of them out)")
    return {KEY: scheme}


def tags(params: Mapping[str, Any]) -> list[str]:
    return [params[KEY]] if params.get(KEY) else []


@functools.cache
def installed() -> bool:
    """Whether torchao, which quantizes, can be imported here."""
    return importlib.util.find_spec("torchao") is not None


def collectable(cases: Iterable[Case], quantized_by_torchao: Callable[[Case], bool]) -> \
        tuple[list[Case], dict[str, list[str]]]:
    """The cases this installation can run: without torchao, those it would quantize (PyTorch
    programs, `quantized_by_torchao`) are left out (an expectation entry may still name them), with
    a notice per family. An ONNX model is quantized by onnxruntime, its family's own dependency."""
    cases = list(cases)
    if installed():
        return cases, {}
    missing = [c for c in cases if c.params.get(KEY) and quantized_by_torchao(c)]
    left_out = collections.Counter(c.family for c in missing)
    notices = {family: [f"{family}: {n} int8 case{'s' * (n > 1)} ({KEY}: int8) not collected: torchao is not "
                        f"installed ({install_command([EXTRA])})"] for family, n in left_out.items()}
    return [c for c in cases if c not in missing], notices
