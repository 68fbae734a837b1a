"""How steady is eager's time on a tiny model, outside the harness's workers? Times eager forward of
four tiny models of the registry with the harness's own timing loop (harness.worker.timing: warm-up,
1 ms samples, repeats to a 1% median interval or a 10 s budget), one thread.

    python benchmarks/eager_noise.py once         # one line of medians (seconds); run it in N fresh processes
    python benchmarks/eager_noise.py rounds 6     # six lines from one process, 5 s apart

Run it beside a load to see what contention does (a two-thread numpy matrix product, a one-thread
Python loop). Needs the [models] extra.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from harness.families.loader import family
from harness.families.model.build import build
from harness.families.model.registry import registry_cases
from harness.protocol import PerfRequest
from harness.worker.timing import measure

MODELS = ("model/resnet/tiny", "model/bert/tiny/persistent_buffers", "model/t5/tiny", "model/whisper/tiny")
REGISTRY = Path(__file__).resolve().parent.parent / "cases" / "models" / "transformers.yaml"


def medians(built: dict) -> dict[str, float]:
    """Each model's eager median, seconds per call."""
    out = {}
    for case_id, case in built.items():
        inputs = case.input_sets[0]

        def eager(case=case, inputs=inputs):
            with torch.no_grad():
                return case.program.module(*inputs)

        out[case_id] = measure({"compiled": eager}, PerfRequest(1, 10.0, 0.01, True))["compiled"]["median"]
    return out


def main(argv: list[str]) -> None:
    torch.set_num_threads(1)
    cases = [c for c in registry_cases(family("model"), REGISTRY, ["tiny"]) if c.id in MODELS]
    built = {c.id: build(c) for c in cases}
    for index in range(int(argv[1]) if argv[0] == "rounds" else 1):
        if index:
            time.sleep(5)
        print(json.dumps(medians(built)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["once"])
