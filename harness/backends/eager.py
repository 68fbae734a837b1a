"""The reference backend: the module run by PyTorch itself, no compiler in between."""
from __future__ import annotations

import torch

from harness.backend_interface import STANDALONE_SCRIPTS, Backend, Program, Standalone
from harness.outcomes import Phase


class EagerBackend(Backend):
    OPTIONS: dict[str, str] = {}   # none
    LISTS_OPS = None   # the reference exports nothing and lists nothing: a program that hangs export runs here

    def compile(self, program: Program, case) -> Program:
        case.enter(Phase.COMPILE)
        return program

    def run(self, artifact: Program, inputs, case):
        case.enter(Phase.RUN)
        with torch.no_grad():
            return artifact.module(*inputs)

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__}

    def standalone(self, program: Program) -> Standalone:
        return Standalone(STANDALONE_SCRIPTS / "eager.py", {})
