"""Delta debugging over a graph's units, candidates run in parallel (torch-free).

The search is ddmin (Zeller and Hildebrandt's): split the kept units into n chunks and try
removing each; the first removal that still fails the same way is taken and n shrinks by one,
else n doubles, until single units are tried (the result is then 1-minimal: removing any one
unit loses the failure; those removals are asked twice, for a failure that comes and goes). The
removals of one round run `parallel` at a time, each on its own worker pool; of those that still
fail, the first in order wins, so the result does not depend on which worker was quicker.
"""
from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

Kept = frozenset


@dataclasses.dataclass
class Step:
    nodes: int            # nodes kept after the step
    candidates_run: int   # candidates run so far
    seconds: float        # since the search started


class DeltaDebugger:
    """`test(candidates)` runs a batch of candidates (at most `parallel`, together) and says for
    each whether it keeps the failure (None: not a program, e.g. nothing left to return)."""

    def __init__(self, units: int, test: Callable[[Sequence[Kept]], list[bool | None]], parallel: int = 1,
                 progress: Callable[[str], None] = lambda message: None):
        self.all = Kept(range(units))
        self.test = test
        self.parallel = max(1, parallel)
        self.progress = progress
        self.known: dict[Kept, bool | None] = {self.all: True}
        self.steps: list[Step] = []
        self.candidates_run = 0
        self.started = time.monotonic()

    def reduce(self) -> Kept:
        kept = sorted(self.all)
        chunks = 2
        asked_twice: set[Kept] = set()
        while len(kept) >= 2:
            parts = _split(kept, chunks)
            candidates = [Kept(kept) - Kept(part) for part in parts]
            smaller = self._first_failing(candidates)
            if smaller is None and chunks >= len(kept) and Kept(kept) not in asked_twice:
                smaller = self._asked_again(candidates)   # 1-minimal: unless the failure comes and goes
                asked_twice.add(Kept(kept))
            if smaller is not None:
                kept = sorted(smaller)
                chunks = max(chunks - 1, 2)
                self.steps.append(Step(len(kept), self.candidates_run, round(time.monotonic() - self.started, 2)))
                self.progress(f"{len(kept)} nodes kept after {self.candidates_run} candidates")
            elif chunks >= len(kept):
                break
            else:
                chunks = min(2 * chunks, len(kept))
        return Kept(kept)

    def _asked_again(self, candidates: list[Kept]) -> Kept | None:
        """The single removals that lost the failure, run once more: a failure that comes and goes
        (torch-mlir's segfault in its ONNX conversion, with the worker's memory) must not end the
        search at a program one unit too large."""
        for candidate in candidates:
            if self.known.get(candidate) is False:
                del self.known[candidate]
        return self._first_failing(candidates)

    def _first_failing(self, candidates: list[Kept]) -> Kept | None:
        for start in range(0, len(candidates), self.parallel):
            batch = candidates[start:start + self.parallel]
            todo = [c for c in batch if c not in self.known]
            if todo:
                self.candidates_run += len(todo)
                self.known.update(zip(todo, self.test(todo)))
            for candidate in batch:
                if self.known[candidate]:
                    return candidate
        return None


def _split(items: list[int], parts: int) -> list[list[int]]:
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for index in range(parts):
        end = start + size + (index < extra)
        out.append(items[start:end])
        start = end
    return [part for part in out if part]


def run_batch(executor: ThreadPoolExecutor, pools: list, run_one: Callable, candidates: Sequence) -> list:
    """run_one(pool, candidate) for each candidate, the i-th on pools[i], on the executor's threads.
    The threads must outlive the reduction: a worker dies with the thread that started it (its
    parent-death signal follows the thread)."""
    return list(executor.map(run_one, pools[:len(candidates)], candidates))
