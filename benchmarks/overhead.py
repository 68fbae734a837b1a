"""What the harness adds on top of the compiler: pytest + isolation against a bare in-process loop.

Runs the cases whose ids contain FILTER (the convolution-backward family by default; `opinfo`
for the default OpInfo selection, forward and gradient) on one backend three ways, each in a
fresh process, in one session so the numbers are comparable (the backend's crash-set cases are
left out of all three: the harness does not attempt them, and they would kill the bare loop):
  bare      one Python process: build, golden, compile, run, compare, case after case
            (no pytest, no workers, no isolation; failures are caught and counted)
  harness   pytest --backend=B -k conv_backward -n 0       (one worker, in the pytest process)
  harness2  the same with -n 2                             (two pytest-xdist workers)
and prints each wall time, the ratios harness/bare and harness2/bare, and the per-phase
medians of the harness run (from its JSON report).

    python benchmarks/overhead.py [--backend linalg-on-tensors] [--filter conv_backward]
    python benchmarks/overhead.py --filter opinfo      # issue 12's target: at most 1.15x, and 0.6x with -n 2
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BARE_LOOP = """
import fnmatch, sys, time
import yaml
from pathlib import Path
from harness.backend import create_backend
from harness.inputs.configs import load_configs
from harness.families import FAMILIES
from harness.worker.execute import execute
from harness.inputs.registry import case_modules, load_case_module
root = Path(sys.argv[1]); config = load_configs([root / "configs"])[sys.argv[2]]
backend = create_backend(config.name, config.class_path, config.options)
cases = [c for p in case_modules([root / "cases"]) for c in load_case_module(p) if sys.argv[3] in c.id]
# The crash set's cases would kill this loop; the harness does not attempt them either.
crash_set = [e["id"] for e in yaml.safe_load((root / "crash_sets" / f"{sys.argv[2]}.yaml").read_text()) or []]
cases = [c for c in cases if not any(fnmatch.fnmatchcase(c.id, pattern) for pattern in crash_set)]
failed = 0
for case in cases:
    try:
        family = FAMILIES[case.family].worker_request(case.params)
        outcome, _ = execute(case.to_json(), family, config.to_json(), backend, lambda phase: None)
        failed += outcome.value != "passed"
    except Exception:
        failed += 1
print(len(cases), failed)
"""


def wall(command: list[str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    elapsed = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: the bare loop or pytest saw failures; that is data
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done.stdout


def phase_medians(report: Path) -> dict[str, float]:
    phases: dict[str, list[float]] = {}
    for result in json.loads(report.read_text())["results"]:
        for phase, seconds in result["phase_durations"].items():
            phases.setdefault(phase, []).append(seconds)
    return {phase: statistics.median(values) for phase, values in phases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("--filter", default="conv_backward", help="substring of the case ids to run")
    args = parser.parse_args()
    bare, counts = wall([sys.executable, "-c", BARE_LOOP, str(ROOT), args.backend, args.filter])
    if len(counts.split()) != 2:  # the loop itself broke (exit 1 is also an uncaught exception)
        sys.exit(f"the bare loop printed no counts: {counts!r}; run it by hand to see why")
    print(f"bare loop:           {bare:7.1f} s  (cases, failed: {counts.strip()})")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        pytest = [sys.executable, "-m", "pytest", "-q", f"--backend={args.backend}", "-k", args.filter,
                  f"--report-json={report}"]
        one, _ = wall(pytest + ["-n", "0"])
        print(f"harness, 1 worker:   {one:7.1f} s  ratio {one / bare:.2f}")
        two, _ = wall(pytest + ["-n", "2"])
        print(f"harness, -n 2:       {two:7.1f} s  ratio {two / bare:.2f}")
        medians = phase_medians(report)
    print("per-phase medians (s, from the -n 2 run): "
          + ", ".join(f"{phase} {seconds:.3f}" for phase, seconds in medians.items()))


if __name__ == "__main__":
    main()
