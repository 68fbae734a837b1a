"""What one decomposition costs whatever the program: the part of torch-mlir's decomposition
(`ExportedProgram.run_decompositions` with torch-mlir's table, which `fx.export_and_import` runs
and torch-mlir's own e2e runner with it) that does not depend on the program.

For each of a few small programs it times, in one process, after one warm-up call each:
  export        torch.export.export(strict=True), as torch-mlir's FX importer config does
  decompose     run_decompositions(torch-mlir's table), the whole call
  split         PyTorch's split of the table into CompositeImplicitAutograd overrides and Python
                decompositions (torch.export.exported_program._split_decomp_table_to_cia_and_python_decomp),
                which walks every operator namespace each call
  override      entering and leaving PyTorch's override of those ops' kernels
                (_override_composite_implicit_decomp), which every call does around its trace
Both private functions are PyTorch's own, called as run_decompositions calls them; PyTorch notes
that the walk cannot be cached (a Python library may add ops at any time). Printed: the medians,
and what share of a decomposition the two fixed parts are.

    python benchmarks/decomposition_floor.py [--repeat 20]
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable


def programs() -> list[tuple[str, Any, tuple]]:
    import torch

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.softmax(x, dim=1)

    class MeanMul(torch.nn.Module):
        def forward(self, a, b):
            return a.mean(0) * b

    class Matmul(torch.nn.Module):
        def forward(self, a, b):
            return torch.matmul(a, b).relu()

    return [("softmax", Softmax(), (torch.rand(3, 4),)),
            ("mean_mul", MeanMul(), (torch.rand(3, 4), torch.rand(3, 4))),
            ("matmul", Matmul(), (torch.rand(3, 4), torch.rand(4, 5)))]


def timed(work: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    started = time.perf_counter()
    work(*args, **kwargs)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    import torch
    from torch.export import exported_program as internals
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = get_decomposition_table()
    samples: dict[str, list[float]] = {"export": [], "decompose": [], "split": [], "override": []}

    overrides, _ = internals._split_decomp_table_to_cia_and_python_decomp(dict(table))

    def override() -> None:
        with internals._override_composite_implicit_decomp(overrides):
            pass

    for _, module, inputs in programs():
        exported = torch.export.export(module, inputs, strict=True)
        exported.run_decompositions(table)   # the warm-up
        for _ in range(args.repeat):
            samples["export"].append(timed(torch.export.export, module, inputs, strict=True))
            samples["decompose"].append(timed(exported.run_decompositions, table))
            samples["split"].append(timed(internals._split_decomp_table_to_cia_and_python_decomp, dict(table)))
            samples["override"].append(timed(override))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    for name, value in medians.items():
        print(f"{name:10s} median {value * 1000:6.1f} ms  ({min(samples[name]) * 1000:.1f}-"
              f"{max(samples[name]) * 1000:.1f}) over {len(samples[name])} calls")
    fixed = medians["split"] + medians["override"]
    print(f"fixed part of a decomposition: {fixed * 1000:.1f} ms of {medians['decompose'] * 1000:.1f} ms "
          f"({fixed / medians['decompose']:.0%})")


if __name__ == "__main__":
    main()
