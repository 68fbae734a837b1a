"""Tests that take the compiling process down: a segfault in torch-mlir itself (the pinned wheel's
DecomposeAtenNonzeroOp on a 0-d input), and a hang in native code."""
import ctypes

import torch

from torch_mlir_e2e_test.annotations import annotate_args, export
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class Nonzero(torch.nn.Module):
    @export
    @annotate_args([None, ([], torch.float32, True)])
    def forward(self, x):
        return torch.nonzero(x)


@register_test_case(module_factory=lambda: Nonzero())
def NonzeroCrash_basic(module, tu: TestUtils):
    module.forward(tu.rand())


def _deadlock():
    """Lock a mutex twice: a native deadlock that no Python signal handler can interrupt."""
    mutex = ctypes.create_string_buffer(64)
    libc = ctypes.CDLL(None)
    libc.pthread_mutex_lock(mutex)
    libc.pthread_mutex_lock(mutex)


@torch.library.custom_op("torch_mlir_mini::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@doubled.register_fake
def _doubled_while_tracing(x):
    _deadlock()   # torch.export (strict or not) runs this fake kernel; eager runs the real one
    return torch.empty_like(x)


class HangsWhileExporting(torch.nn.Module):
    """Eager is fine; while torch.export traces forward, the op's fake kernel hangs in native code."""

    @export
    @annotate_args([None, ([2], torch.float32, True)])
    def forward(self, x):
        return doubled(x)


@register_test_case(module_factory=lambda: HangsWhileExporting(), timeout_seconds=5)
def NativeHang_basic(module, tu: TestUtils):
    module.forward(tu.rand(2))
