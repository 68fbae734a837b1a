"""The `reductions` family's builder (imported in a worker only): the module and its seeded input."""
from __future__ import annotations

import zlib

import torch

from harness.api import Built, Case, Program


class Reduce(torch.nn.Module):
    def __init__(self, op: str, dims: list[int], keepdim: bool):
        super().__init__()
        self.op, self.dims, self.keepdim = op, dims, keepdim

    def forward(self, x):
        dim = self.dims[0] if self.op == "prod" else self.dims
        return (getattr(torch, self.op)(x, dim=dim, keepdim=self.keepdim),)

    def repro_source(self) -> str:
        return f'''
class Model(torch.nn.Module):
    def forward(self, x):
        dim = {self.dims[0] if self.op == "prod" else self.dims!r}
        return (torch.{self.op}(x, dim=dim, keepdim={self.keepdim!r}),)
'''


def build(case: Case) -> Built:
    p = case.params
    generator = torch.Generator().manual_seed(zlib.crc32(case.id.encode()))
    low = 0.5 if p["op"] == "prod" else -1.0   # a product of values near 1 neither vanishes nor explodes
    x = (torch.rand(p["shape"], generator=generator, dtype=torch.float64) + low).to(getattr(torch, p["dtype"]))
    module = Reduce(p["op"], p["dims"], p["keepdim"])
    return Built(Program(case.id, module, (x,), None, ["output"]), [(x,)])
