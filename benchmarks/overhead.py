"""What the harness adds on top of the compiler: pytest + isolation against a bare in-process loop.

Runs the cases whose ids contain FILTER (the convolution-backward family by default; `opinfo`
for the default OpInfo selection, forward and gradient) on one backend four ways, each in a
fresh process (the backend's crash-set cases are left out of all of them: the harness does not
attempt them, and they would kill the bare loop):
  bare         one Python process: build, golden, compile, run, compare, case after case
               (no pytest, no workers, no isolation; failures are caught and counted)
  one worker   pytest --backend=B -k FILTER -n 0    (one worker, beside the pytest process)
  -n 2         the same with two pytest-xdist workers (each worker one compute thread)
  -n 2, 2 thr  -n 2 with OMP_NUM_THREADS=2 in each worker: what the thread split is worth
The four run in turn, --repeat times (the machine is shared: interleaving spreads its noise over
all four), and the medians and their ratios to the bare loop's median are printed, then what the
harness itself spends, from the last one-worker run's JSON report: the first case's wait for
the worker's start-up, the median controller time per case (protocol and memory watch: a case's
wall minus its phases), the time outside every case (pytest's start, collection, the report),
and the cost of one memory-watch reading.

    python benchmarks/overhead.py [--backend linalg-on-tensors] [--filter conv_backward] [--repeat 3]
    python benchmarks/overhead.py --filter opinfo      # issue 12's target: at most 1.15x, and 0.6x with -n 2
    python benchmarks/overhead.py --backend onnxruntime --filter onnx_node   # issue 21's: 1.15x, 0.6x with -n 2
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

from harness.controller.pool import WATCH_INTERVAL
from harness.controller.process_tree import ProcessTree
from harness.controller.workers import worker_environment
from harness.project import Project, settings_from_args

ROOT = Path(__file__).resolve().parent.parent

BARE_LOOP = """
import argparse, sys
from pathlib import Path
from harness.backend_interface import case_context, create_backend
from harness.outcomes import Expected
from harness.project import Project, settings_from_args
from harness.worker.execute import execute
project = Project(settings_from_args(argparse.Namespace(), Path(sys.argv[1])))   # as pytest sees it there
config, families = project.config(sys.argv[2]), project.families
backend = create_backend(config.name, config.class_path, config.options)
# The crash set's cases would kill this loop; the harness does not attempt them either.
expectations = project.expectations(config.name)
cases = [c for c in project.cases if sys.argv[3] in c.id
         and not ((entry := expectations.lookup(c.id)) and entry.kind is Expected.CRASH)]
failed = 0
for case in cases:
    try:
        family = families[case.family].worker_request(case.params)
        context = case_context(case.to_json(), lambda phase: None)
        outcome, _ = execute(case.to_json(), family, config.to_json(), backend, context)
        failed += outcome.value != "passed"
    except Exception:
        failed += 1
print(len(cases), failed)
"""


def wall(command: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env and {**os.environ, **env})
    elapsed = time.monotonic() - started
    if done.returncode not in (0, 1):  # 1: the bare loop or pytest saw failures; that is data
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, done


def bare_loop(args: argparse.Namespace) -> float:
    """The loop, in a process with a worker's environment (the families' variables: PYTHONHASHSEED
    is read at start-up)."""
    env = worker_environment(Project(settings_from_args(argparse.Namespace(), ROOT)))
    seconds, done = wall([sys.executable, "-c", BARE_LOOP, str(ROOT), args.backend, args.filter], env=env)
    if len(done.stdout.split()) != 2:  # the loop itself broke (exit 1 is also an uncaught exception)
        sys.exit(f"the bare loop printed no counts:\n{done.stderr[-2000:]}")
    return seconds


def harness_costs(report: Path, wall_s: float) -> str:
    """What the harness spent beyond the phases of the cases, from a one-worker run's report (its
    results are in the order they ran)."""
    results = json.loads(report.read_text())["results"]
    beyond = [r["duration_s"] - sum(r["phase_durations"].values()) for r in results]
    outside = wall_s - sum(r["duration_s"] for r in results)
    tree = ProcessTree(os.getpid())
    reading_ms = timeit.timeit(tree.rss_mb, number=200) / 200 * 1000
    return (f"the first case waited {beyond[0]:.2f} s for the worker's start-up; per case after it the "
            f"controller spent a median {statistics.median(beyond[1:]) * 1000:.1f} ms (protocol, memory watch); "
            f"outside the cases {outside:.1f} s (pytest's start, collection, report); one memory-watch "
            f"reading {reading_ms:.2f} ms, every {WATCH_INTERVAL:g} s of a case")


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
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the four runs (medians are quoted)")
    args = parser.parse_args()
    walls: dict[str, list[float]] = {name: [] for name in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        one_worker, report = Path(tmp) / "one.json", Path(tmp) / "report.json"
        pytest = [sys.executable, "-m", "pytest", "-q", f"--backend={args.backend}", "-k", args.filter]
        for round_ in range(1, args.repeat + 1):
            walls["bare"].append(bare_loop(args))
            walls["one worker"].append(wall(pytest + ["-n", "0", f"--report-json={one_worker}"])[0])
            walls["-n 2"].append(wall(pytest + ["-n", "2", f"--report-json={report}"])[0])
            walls["-n 2, 2 thr"].append(wall(pytest + ["-n", "2"], env={"OMP_NUM_THREADS": "2"})[0])
            print(f"round {round_}: " + ", ".join(f"{name} {w[-1]:.1f} s" for name, w in walls.items()), flush=True)
        costs = harness_costs(one_worker, walls["one worker"][-1])
        medians = phase_medians(report)
    bare = statistics.median(walls["bare"])
    for name, seconds in walls.items():
        median = statistics.median(seconds)
        print(f"{name + ':':13} median {median:7.1f} s  ratio {median / bare:.2f}")
    print(costs)
    print("per-phase medians (s, from the last -n 2 run): "
          + ", ".join(f"{phase} {seconds:.3f}" for phase, seconds in medians.items()))


RUNS = ("bare", "one worker", "-n 2", "-n 2, 2 thr")


if __name__ == "__main__":
    main()
