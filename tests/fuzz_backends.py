"""A backend with planted bugs for the fuzzer's tests (tests/test_fuzz.py; never used by the product).

`PlantedBugBackend` runs the case in eager PyTorch, except that a transposed convolution fails to
lower and a grouped one fails to compile (the transposed check comes first), each with a message
of its own: two bugs, two signatures, whatever else the configuration holds. The test copies this
file into its project root, where the workers import it (the root is on their PYTHONPATH).
"""
from __future__ import annotations

import torch

from harness.backend_interface import Backend
from harness.outcomes import Phase


class PlantedBugBackend(Backend):
    def compile(self, program, case):
        case.enter(Phase.EXPORT)
        stride, padding, dilation, transposed, output_padding, groups = program.module.geometry
        case.enter(Phase.LOWER)
        if transposed:
            raise RuntimeError("planted: failed to legalize operation 'fake.conv_transpose'")
        case.enter(Phase.COMPILE)
        if groups > 1:
            raise RuntimeError(f"planted: grouped convolution with {groups} groups is not supported")
        return program

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        with torch.no_grad():
            return program.module(*inputs)
