"""Test and TestUtils in the shape of torch-mlir's framework.py (its runner is not part of this)."""
from typing import Any, Callable, NamedTuple

import torch


class TestUtils:
    """Seeds torch with 0 when made; draws test inputs."""

    def __init__(self):
        torch.manual_seed(0)

    def rand(self, *sizes, low=0.0, high=1.0):
        return torch.empty(sizes).uniform_(low, high)

    def randint(self, *sizes, low=0, high=10, dtype=torch.int64):
        return torch.randint(low, high, sizes, dtype=dtype)

    def nans(self, *sizes):
        values = torch.empty(sizes)
        values[...] = torch.nan
        return values


class Test(NamedTuple):
    unique_name: str
    program_factory: Callable[[], torch.nn.Module]
    program_invoker: Callable[[Any, TestUtils], None]
    timeout_seconds: int
