"""What recording every phase's CPU time, peak memory and the size figures costs a family's cases
(issue 33's target: at most 2% of the convolution-backward family's wall time).

Two whole runs, before and after, cannot resolve 2% on this machine (the same run's medians
spread 2.5x). So the cost is measured where it is spent, in one worker-like process, against
the cases' own time measured in the same loop:
  clock   what a phase change costs now (wall, CPU and peak memory; PhaseClock) beyond what it
          cost before (wall only), timed over 20,000 changes, times the changes each case made;
  sizes   the size figures' own calls (ops of the exported graph, MLIR walks after each stage),
          timed around each call while the cases run;
  case    each case's build, compile, run and compare (harness.worker.execute), as a worker runs it.
The loop runs --repeat times; the ratio (clock + sizes) / case is given per repeat, with the
median and the range.

    python benchmarks/phase_figures.py [--backend linalg-on-tensors] [--filter conv_backward] [--repeat 5]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import harness.backends.mlir as mlir_backend
from harness.backend_interface import case_context, create_backend
from harness.outcomes import Expected, Phase
from harness.project import Project, settings_from_args
from harness.worker.execute import execute
from harness.worker.session import PhaseClock

ROOT = Path(__file__).resolve().parent.parent
CHANGES = 20_000


class WallOnlyClock:
    """The clock as it was before the figures: one perf_counter per phase change."""

    def __init__(self):
        self.phase, self.durations, self.started = Phase.SETUP, {}, time.perf_counter()

    def enter(self, phase: Phase) -> None:
        now = time.perf_counter()
        key = self.phase.value
        self.durations[key] = round(self.durations.get(key, 0.0) + now - self.started, 6)
        self.phase, self.started = Phase(phase), time.perf_counter()


def change_cost(make) -> float:
    """Seconds per phase change of a clock."""
    clock = make()
    phases = [Phase.EXPORT, Phase.IMPORT, Phase.LOWER, Phase.COMPILE, Phase.RUN, Phase.COMPARE]
    started = time.perf_counter()
    for i in range(CHANGES):
        clock.enter(phases[i % len(phases)])
    return (time.perf_counter() - started) / CHANGES


def timed(function, spent: list[float]):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started
    return wrapper


def one_pass(cases, families, config, backend) -> tuple[float, float, int]:
    """(the cases' seconds, the size figures' seconds, phase changes) over every case once."""
    sizes = [0.0]
    mlir_backend.mlir_ops = timed(MLIR_OPS, sizes)
    mlir_backend.graph_ops = timed(GRAPH_OPS, sizes)
    total, changes = 0.0, 0
    for case in cases:
        clock = PhaseClock(lambda message: None)
        entered = [0]

        def enter(phase: Phase, clock=clock, entered=entered) -> None:
            entered[0] += 1
            clock.enter(phase)

        started = time.perf_counter()
        try:
            execute(case.to_json(), families[case.family].worker_request(case.params), config.to_json(), backend,
                    case_context(case.to_json(), enter))
        except Exception:  # noqa: BLE001 - an expected failure's time counts as a worker spends it
            pass
        total += time.perf_counter() - started
        changes += entered[0] + 1   # and the clock's stop at the end
    return total, sizes[0], changes


MLIR_OPS, GRAPH_OPS = mlir_backend.mlir_ops, mlir_backend.graph_ops


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("--filter", default="conv_backward")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    project = Project(settings_from_args(argparse.Namespace(), ROOT))   # as pytest sees the repository
    config, families = project.config(args.backend), project.families
    backend = create_backend(config.name, config.class_path, config.options)
    expectations = project.expectations(config.name)   # the crash set's cases are not attempted
    cases = [c for c in project.cases if args.filter in c.id
             and not ((entry := expectations.lookup(c.id)) and entry.kind is Expected.CRASH)]
    print(f"{len(cases)} cases of {args.filter!r} on {args.backend}, {args.repeat} passes")
    ratios = []
    for index in range(args.repeat):
        extra_per_change = change_cost(lambda: PhaseClock(lambda message: None)) - change_cost(WallOnlyClock)
        seconds, sizes, changes = one_pass(cases, families, config, backend)
        ratio = (sizes + extra_per_change * changes) / seconds
        ratios.append(ratio)
        print(f"pass {index + 1}: cases {seconds:.1f} s, size figures {sizes * 1e3:.1f} ms, "
              f"clock {extra_per_change * 1e6:.1f} us x {changes} changes = {extra_per_change * changes * 1e3:.1f} ms: "
              f"{ratio:.3%} of the cases' time")
    print(f"overhead: median {statistics.median(ratios):.3%}, range {min(ratios):.3%} to {max(ratios):.3%} "
          f"(target: at most 2%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
