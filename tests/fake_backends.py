"""Misbehaving backends for the harness's own tests (never used by the product).

`FaultyBackend` runs the case in eager PyTorch but, for case ids matching the `only` glob,
injects the fault named by its `fault` option in the phase named by `phase`.
"""
from __future__ import annotations

import ctypes
import fnmatch
import os

import torch

from harness.backend import Backend
from harness.outcomes import Phase

_libc = ctypes.CDLL(None)


def hang_in_native_code() -> None:
    """Lock a non-recursive mutex twice: a deadlock no Python signal handler can interrupt."""
    mutex = ctypes.create_string_buffer(64)  # all-zero bytes: PTHREAD_MUTEX_INITIALIZER on glibc
    _libc.pthread_mutex_lock(mutex)
    _libc.pthread_mutex_lock(mutex)


def _perturb(outputs, how):
    outputs = [o.clone() for o in outputs]
    first = outputs[0]
    if how == "wrong_values":
        first.mul_(1.01).add_(0.5)
    elif how == "nan":
        first.view(-1)[0] = float("nan")
    elif how == "wrong_shape":
        outputs[0] = torch.cat([first, first], dim=0)
    elif how == "wrong_dtype":
        outputs[0] = first.to(torch.float64 if first.dtype != torch.float64 else torch.float32)
    return outputs


def native_fault(entry_point: str):
    """Call into tests/native/fake_compiler.cpp, built into the project as libfake_compiler.so."""
    return lambda: getattr(ctypes.CDLL(os.path.abspath("libfake_compiler.so")), entry_point)()


FAULTS = {
    "hang": hang_in_native_code,
    "segfault": lambda: ctypes.string_at(0),
    "abort": lambda: _libc.abort(),
    "exit": lambda: os._exit(3),
    "raise": lambda: (_ for _ in ()).throw(RuntimeError("injected compiler failure: 'fake.op' failed to legalize")),
    "print_flood": lambda: print("x" * 1_000_000, flush=True),
    "native_hang": native_fault("fake_pattern_hang"),
    "native_crash": native_fault("fake_pass_crash"),
}
RESULT_FAULTS = {"wrong_values", "nan", "wrong_shape", "wrong_dtype"}


class FaultyBackend(Backend):
    def _armed(self, program, phase_name) -> bool:
        return (fnmatch.fnmatchcase(program.name, self.options.get("only", "*"))
                and self.options.get("phase", "compile") == phase_name)

    def compile(self, program, phase):
        for name in ("export", "import", "lower", "compile"):
            phase(Phase(name))
            if self._armed(program, name) and self.options["fault"] in FAULTS:
                FAULTS[self.options["fault"]]()
        return program

    def run(self, program, inputs, phase):
        phase(Phase.RUN)
        if self._armed(program, "run") and self.options["fault"] in FAULTS:
            FAULTS[self.options["fault"]]()
        with torch.no_grad():
            outputs = program.module(*inputs)
        if fnmatch.fnmatchcase(program.name, self.options.get("only", "*")) and self.options["fault"] in RESULT_FAULTS:
            return _perturb(outputs, self.options["fault"])
        return outputs
