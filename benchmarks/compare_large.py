"""The comparison of a large case's outputs: the convolution-backward family's 3D case (8.4 million
elements of grad_input), eager float32 against the float64 golden, as the worker compares them.

    python benchmarks/compare_large.py [--repeat 5]

Prints the median and range of harness.worker.compare.compare's seconds, and of the golden's
float64 run, in this process (torch imported, the case built once).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cases.conv_backward import CASES  # noqa: E402
from harness.families.conv.build import build_backward  # noqa: E402
from harness.worker.compare import DEFAULT_TOLERANCES, Accuracy, compare  # noqa: E402
from harness.worker.execute import as_outputs, golden  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    case = next(c for c in CASES if c.id.endswith("ConvolutionBackwardModule3DStatic"))
    built = build_backward(case)
    inputs = built.input_sets[0]
    with torch.no_grad():
        got = as_outputs(built.program.output_names, built.program.module(*inputs))
    goldens, compares = [], []
    for _ in range(args.repeat):
        started = time.perf_counter()
        want = golden(built.program, inputs)
        goldens.append(time.perf_counter() - started)
        started = time.perf_counter()
        problem = compare(got, want, "float32", DEFAULT_TOLERANCES["float32"], {}, accuracy=Accuracy())
        compares.append(time.perf_counter() - started)
    elements = sum(o.values.size for o in got)
    print(f"{case.id}: {elements:,} elements; compare {_spread(compares)} s, the golden's float64 run "
          f"{_spread(goldens)} s ({'differs' if problem else 'matches'} without the reductions' scaling)")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f} to {max(values):.3f})"


if __name__ == "__main__":
    main()
