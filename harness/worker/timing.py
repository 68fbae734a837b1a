"""--perf: a passed case's compiled code timed against eager, in the worker that compiled it.

The two sides alternate (compiled, eager, compiled, ...) so that whatever slows the machine down hits
both, and the speedup is taken from pairs. A sample is one call, or several calls when one is too
short for the clock to be fair (SAMPLE_S). After the warm-up the repeats go on until each side's
median is known within the request's target (harness.perf.stats.relative_half_width) or the budget
is spent. The garbage collector is off while timing, as timeit has it.

What is timed is `backend.run` as a whole, the conversions of its inputs and outputs included: the
price a caller of the compiled program pays. Eager is the program's module under no_grad, as the
eager backend runs it; an ONNX model has no eager side, so only its compiled side is timed.
"""
from __future__ import annotations

import dataclasses
import gc
import math
import time
from typing import Any, Callable

import torch

from harness.backend_interface import CaseContext, Program
from harness.errors import describe_error
from harness.families.interface import Built
from harness.perf.stats import relative_half_width, speedup, summary
from harness.protocol import PerfRequest

WARMUP = 2            # calls per side before any sample
SAMPLE_S = 1e-3       # a sample lasts at least this long (calls are repeated inside it)
MIN_PAIRS = 5
MAX_PAIRS = 1000
CHECK_EVERY = 5       # pairs between two looks at the precision
SLOW_SHARE = 4        # a case whose one run takes more than budget / SLOW_SHARE is not timed


def time_case(backend: Any, artifact: Any, built: Built, context: CaseContext, perf: PerfRequest,
              first_run_s: float) -> dict:
    """The figures of a passed case: each side's summary, the speedup, how the repeats stopped.
    A failure while timing is reported in the figures: the case has passed already."""
    if first_run_s * SLOW_SHARE > perf.budget_s:
        return {"skipped": f"one run took {first_run_s:.3g} s, more than 1/{SLOW_SHARE} of the budget "
                           f"({perf.budget_s:g} s per case); raise --perf-budget to time it"}
    quiet = dataclasses.replace(context, enter=lambda phase: None)   # no phase messages while timing
    inputs = built.input_sets[0]
    sides = {"compiled": lambda: backend.run(artifact, inputs, quiet)}
    program = built.program
    if isinstance(program, Program):
        sides["eager"] = lambda: _eager(program, inputs)
    try:
        return {"threads": perf.threads, **measure(sides, perf)}
    except Exception as e:  # noqa: BLE001 - the case passed; its timing failed
        return {"error": describe_error(e)}


def _eager(program: Program, inputs: tuple) -> Any:
    with torch.no_grad():
        return program.module(*inputs)


def measure(sides: dict[str, Callable[[], Any]], perf: PerfRequest) -> dict:
    """Each side's summary, the speedup when there is an eager side, and what stopped the repeats."""
    deadline = time.perf_counter() + perf.budget_s
    loops = {name: _calibrate(call) for name, call in sides.items()}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    stopped = "max_pairs"
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for pair in range(1, MAX_PAIRS + 1):
            for name, call in sides.items():
                samples[name].append(_sample(call, loops[name]))
            if time.perf_counter() > deadline and pair >= 2:
                stopped = "budget"
                break
            if pair >= MIN_PAIRS and pair % CHECK_EVERY == 0 and all(
                    relative_half_width(s) <= perf.target for s in samples.values()):
                stopped = "target"
                break
    finally:
        if gc_was_on:
            gc.enable()
    figures = {name: {**summary(values), "loops": loops[name]} for name, values in samples.items()}
    if "eager" in samples:
        figures["speedup"] = speedup(list(zip(samples["eager"], samples["compiled"])))
    return {**figures, "stopped": stopped}


def _calibrate(call: Callable[[], Any]) -> int:
    """Warm the side up; the calls per sample that make a sample last SAMPLE_S."""
    for _ in range(WARMUP - 1):
        call()
    started = time.perf_counter()
    call()
    once = time.perf_counter() - started
    return max(1, math.ceil(SAMPLE_S / once)) if once > 0 else 1000


def _sample(call: Callable[[], Any], loops: int) -> float:
    started = time.perf_counter()
    for _ in range(loops):
        call()
    return (time.perf_counter() - started) / loops
