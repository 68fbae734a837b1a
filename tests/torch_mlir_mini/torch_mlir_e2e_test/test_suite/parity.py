"""Tests in the shapes where the harness's MLIR backends once did less than torch-mlir's own
fx_importer config on the same wheels: uint8 inputs, Python-number results, a sampling loop
that bufferized into quadratic copies, data-dependent control flow (which fails in both)."""
import torch

from torch_mlir_e2e_test.annotations import annotate_args, export
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class UInt8Add(torch.nn.Module):
    @export
    @annotate_args([None, ([3, 4], torch.uint8, True), ([3, 4], torch.uint8, True)])
    def forward(self, a, b):
        return a + b, a > b   # uint8 wraps around; a bool result beside it


@register_test_case(module_factory=lambda: UInt8Add())
def UInt8Add_basic(module, tu: TestUtils):
    module.forward(tu.randint(3, 4, low=0, high=256, dtype=torch.uint8),
                   tu.randint(3, 4, low=0, high=256, dtype=torch.uint8))


class ItemResults(torch.nn.Module):
    @export
    @annotate_args([None, ([4], torch.int64, True), ([4], torch.float32, True)])
    def forward(self, ints, floats):
        return (ints * 2).sum().item(), floats.mean().item()   # a Python int and a Python float


@register_test_case(module_factory=lambda: ItemResults())
def ItemResults_basic(module, tu: TestUtils):
    module.forward(tu.randint(4, low=-50, high=50), tu.rand(4, low=-1.0))


class ScaledByItsValues(torch.nn.Module):
    @export
    @annotate_args([None, ([3], torch.float32, True), ([], torch.float32, True), ([], torch.int64, True)])
    def forward(self, x, scale, repeat):
        # float() and int() of tensors: data-dependent, which only strict (TorchDynamo) export traces
        return x * float(scale) * int(repeat), float(scale) + 1.0


@register_test_case(module_factory=lambda: ScaledByItsValues())
def ScaledByItsValues_basic(module, tu: TestUtils):
    module.forward(tu.rand(3), tu.rand(), tu.randint(low=1, high=5))


class MultinomialOneHot(torch.nn.Module):
    @export
    @annotate_args([None, ([100], torch.float64, True)])
    def forward(self, x):
        one_hot = (x == x.max()).to(x.dtype)   # every sample is the argmax: the mean is exact
        return torch.multinomial(one_hot, 1024 * 1024, replacement=True).to(torch.float64).mean()


# 1M samples: about a second once compiled; bufferized with a copy per sample, it ran for hours.
@register_test_case(module_factory=lambda: MultinomialOneHot(), timeout_seconds=30)
def MultinomialOneHot_basic(module, tu: TestUtils):
    module.forward(tu.rand(100).double())


class DataDependentIf(torch.nn.Module):
    @export
    @annotate_args([None, ([5], torch.float32, True)])
    def forward(self, x):
        if x.sum() > 0:   # control flow on a value: no torch.export mode can trace it
            return x
        return -x


@register_test_case(module_factory=lambda: DataDependentIf())
def DataDependentIf_basic(module, tu: TestUtils):
    module.forward(tu.rand(5, low=-1.0))
