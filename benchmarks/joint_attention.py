"""The attention gradients of a joint graph, against autograd's: PyTorch's own
`torch.export.experimental._export_forward_backward`, and the harness's (harness.training.joint,
which keeps the CPU flash attention whole). One attention layer, causal or not, with or without a
mask; prints the largest gradient error of each, and autograd's largest gradient.

    python benchmarks/joint_attention.py
"""
from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch.export.experimental import _export_forward_backward
from torch.utils import _pytree as pytree

from harness.training.joint import joint_graph
from harness.training.step import Loss, TrainStep


class Attention(torch.nn.Module):
    def __init__(self, causal: bool, masked: bool):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8, 8))
        self.causal, self.masked = causal, masked

    def forward(self, x):
        mask = torch.ones(5, 5, dtype=torch.bool).tril() if self.masked else None
        y = F.scaled_dot_product_attention(x @ self.weight, x @ self.weight.t(), x,
                                           is_causal=self.causal and not self.masked, attn_mask=mask)
        return (y,)


def main() -> None:
    warnings.simplefilter("ignore")
    print("| causal | mask | PyTorch's joint graph: max error | the harness's | autograd's largest gradient |")
    print("| --- | --- | --- | --- | --- |")
    for causal in (True, False):
        for masked in (False, True):
            torch.manual_seed(0)
            x = torch.randn(2, 2, 5, 8)
            step = TrainStep(Loss(Attention(causal, masked), 0, False, torch.zeros(2, 2, 5, 8)), "module.", None,
                             0.01, (x,))
            want = step(x)[1]
            theirs = _export_forward_backward(torch.export.export(step.loss, (x,)))
            theirs.module_call_graph[0].signature.out_spec = pytree.tree_structure((0, 1))   # loss and gradient
            mine = joint_graph(step, (x,), None, strict=False)
            errors = [float((graph.module()(x)[1] - want).abs().max())
                      for graph in (theirs, mine)]
            print(f"| {causal} | {masked} | {errors[0]:.4g} | {errors[1]:.4g} | {float(want.abs().max()):.4g} |")


if __name__ == "__main__":
    main()
