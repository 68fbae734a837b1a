"""What starting costs: `pytest --co` (listing every case), and a run whose every case needs a new
worker (--recycle-after=1: what a crash, a hang or recycling costs), each against the same in
another checkout (the code before a change), interleaved A B A B.

    python benchmarks/startup.py [--before ../main-before] [--repeat 10] [--skip recycle]

Each run is a fresh process from this checkout's folder (or the other's, with that checkout first
on PYTHONPATH); printed: the median wall and CPU seconds with their range, and the median of the
pairwise ratios (A/B) with their range.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from overhead import timed_run  # a fresh process, timed from outside (wall, and CPU of all it waited for)

ROOT = Path(__file__).resolve().parent.parent
RUNS = {
    "collect": ["-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"],
    "recycle": ["-m", "pytest", "-q", "-p", "no:cacheprovider", "--backend=linalg-on-tensors", "-m", "conv_backward",
                "-k", "1d", "--recycle-after=1", "-n", "0", "--cache=off"],
}


def timed(args: list[str], checkout: Path) -> tuple[float, float]:
    """Wall and CPU seconds of `python ARGS` in the checkout, that checkout first on the path."""
    path = os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))
    run = timed_run([sys.executable, *args], env={"PYTHONPATH": path}, cwd=checkout)
    return run.wall_s, run.cpu_s


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout, run interleaved with this one")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--skip", action="append", default=[], choices=list(RUNS))
    args = parser.parse_args()
    for name, command in RUNS.items():
        if name in args.skip:
            continue
        this: list[tuple[float, float]] = []
        other: list[tuple[float, float]] = []
        for _ in range(args.repeat):
            this.append(timed(command, ROOT))
            if args.before:
                other.append(timed(command, args.before.resolve()))
        print(f"{name}: wall {spread([w for w, _ in this])} s, cpu {spread([c for _, c in this])} s")
        if other:
            print(f"{name} (before): wall {spread([w for w, _ in other])} s, cpu {spread([c for _, c in other])} s")
            print(f"{name} ratio: wall {spread([a[0] / b[0] for a, b in zip(this, other)])}, "
                  f"cpu {spread([a[1] / b[1] for a, b in zip(this, other)])}")


if __name__ == "__main__":
    main()
