"""Tests in the shape of torch-mlir's test_suite modules: a module class, then a registered invoker."""
import torch

from torch_mlir_e2e_test.annotations import annotate_args, export
from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class AddModule(torch.nn.Module):
    @export
    @annotate_args([None, ([3, 4], torch.float32, True), ([3, 4], torch.float32, True)])
    def forward(self, a, b):
        return a + b


@register_test_case(module_factory=lambda: AddModule())
def AddModule_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 4), tu.rand(3, 4, low=-1.0))


class MatmulDynamicBatch(torch.nn.Module):
    @export
    @annotate_args([None, ([-1, 4, 5], torch.float32, True), ([-1, 5, 6], torch.float32, True)])
    def forward(self, a, b):
        return torch.bmm(a, b)


@register_test_case(module_factory=lambda: MatmulDynamicBatch())
def MatmulDynamicBatch_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 4, 5), tu.rand(2, 5, 6))


class Accumulate(torch.nn.Module):
    @export
    @annotate_args([None, ([2, 3], torch.float32, True), ([2, 3], torch.float32, True)])
    def forward(self, total, x):
        return total + 2 * x


@register_test_case(module_factory=lambda: Accumulate())
def AccumulateTwice_basic(module, tu: TestUtils):
    total = module.forward(tu.rand(2, 3), tu.rand(2, 3))
    module.forward(total, tu.rand(2, 3))   # the first call's output fed back in


class SumScalar(torch.nn.Module):
    @export
    @annotate_args([None, ([4, 5], torch.float32, True)])
    def forward(self, x):
        return x.sum()


@register_test_case(module_factory=lambda: SumScalar())
def SumScalar_basic(module, tu: TestUtils):
    module.forward(tu.rand(4, 5, low=-1.0))


class FloatIntAdd(torch.nn.Module):
    @export
    @annotate_args([None, ([], torch.float32, True), ([], torch.int64, True)])
    def forward(self, lhs, rhs):
        return float(lhs) + int(rhs)   # a Python float


@register_test_case(module_factory=lambda: FloatIntAdd())
def FloatIntAdd_basic(module, tu: TestUtils):
    module.forward(tu.rand(), tu.randint(low=-100, high=100))


class MaxAndIndex(torch.nn.Module):
    @export
    @annotate_args([None, ([3, 6], torch.float32, True)])
    def forward(self, x):
        values, indices = torch.max(x, dim=1)
        return values, indices


@register_test_case(module_factory=lambda: MaxAndIndex())
def TupleOutput_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 6))


class TwoResults(torch.nn.Module):
    @export
    @annotate_args([None, ([5], torch.float32, True)])
    def forward(self, x):
        return [x + 1, x * x]


@register_test_case(module_factory=lambda: TwoResults())
def ListOutput_basic(module, tu: TestUtils):
    module.forward(tu.rand(5))


class NanToNum(torch.nn.Module):
    @export
    @annotate_args([None, ([2, 3], torch.float32, True), ([2, 3], torch.float32, True)])
    def forward(self, nans, x):
        return torch.nan_to_num(nans + x, nan=0.5), torch.isnan(nans)


@register_test_case(module_factory=lambda: NanToNum())
def NanToNum_basic(module, tu: TestUtils):
    module.forward(tu.nans(2, 3), tu.rand(2, 3))


class SeededLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)   # as upstream's modules with weights: each build has the same ones
        self.linear = torch.nn.Linear(4, 3)

    @export
    @annotate_args([None, ([2, 4], torch.float32, True)])
    def forward(self, x):
        return self.linear(x)


@register_test_case(module_factory=lambda: SeededLinear())
def SeededLinear_basic(module, tu: TestUtils):
    module.forward(tu.rand(2, 4))


class BFloat16Relu(torch.nn.Module):
    @export
    @annotate_args([None, ([3, 5], torch.bfloat16, True)])
    def forward(self, x):
        return torch.relu(x)


@register_test_case(module_factory=lambda: BFloat16Relu())
def BFloat16Relu_basic(module, tu: TestUtils):
    module.forward(tu.rand(3, 5, low=-1.0).to(torch.bfloat16))


class RegisteredInAClassBody:
    """Upstream registers a few tests inside class bodies; they are tests like the others."""

    @register_test_case(module_factory=lambda: AddModule())
    def AddModuleFromClassBody_basic(module, tu: TestUtils):
        module.forward(tu.rand(3, 4), tu.rand(3, 4))
