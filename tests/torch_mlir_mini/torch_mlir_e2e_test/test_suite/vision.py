"""Like upstream's vision_models: it needs torchvision, which the harness's environment does not have."""
import torch
import torchvision  # noqa: F401

from torch_mlir_e2e_test.framework import TestUtils
from torch_mlir_e2e_test.registry import register_test_case


class Identity(torch.nn.Module):
    def forward(self, x):
        return x


@register_test_case(module_factory=lambda: Identity())
def VisionIdentity_basic(module, tu: TestUtils):
    module.forward(tu.rand(1, 3, 8, 8))


@register_test_case(module_factory=lambda: Identity())
def VisionIdentityTwo_basic(module, tu: TestUtils):
    module.forward(tu.rand(1, 3, 4, 4))
