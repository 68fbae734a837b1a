"""What the harness adds on top of the compiler, cold: pytest + isolation against bare in-process loops.

Runs the cases whose ids contain FILTER (the convolution-backward family by default; `opinfo`
for the default OpInfo selection, forward and gradient) on one backend these ways, each in a
fresh process and every one cold (the stage cache off: `--cache=off`, and the loops drop its
setting; the backend's crash-set cases are left out of all of them: the harness does not attempt
them, and they would kill the loops):
  bare         one Python process with nothing of the harness imported: torch-mlir's
               `fx.export_and_import` to Linalg, the backend's LLVM pass list, the ExecutionEngine at
               O2, a float64 comparison (benchmarks/bare_loop.py; conv_backward cases on a backend
               taking the FX importer only)
  compiler     one Python process calling torch.export, the decomposition, torch-mlir's FX
               importer, the pass pipelines and the ExecutionEngine directly, then allclose
               (benchmarks/overhead_loops.py; MLIR backends with the FX importer only)
  worker       one Python process doing what a worker does for each case (the phase clock,
               harness.worker.execute, the result message), without pytest, pipes or isolation
  one worker   pytest --backend=B -k FILTER -n 0 --cache=off   (one worker, beside the pytest process)
  -n 2         the same with two pytest-xdist workers (each worker one compute thread)
  -n 2, 2 thr  -n 2 with OMP_NUM_THREADS=2 in each worker: what the thread split is worth
  cache cold   one worker with the stage cache on and empty (a fresh --cache-dir): what writing
               the entries costs a first run
  warm rerun   the same command again, on the entries cache cold wrote (run it with cache cold)
  warm server  the warm rerun with --warm-server=on, timed the second time: its worker forked from
               a server the first one left, torch imported (what a run in a terminal does; the
               server's and its workers' CPU is not the run's: they are not its processes)
They run in turn, --repeat times (the machine is shared: interleaving spreads its noise over
all of them). Printed: each one's median wall and CPU seconds (its processes' user + system: the
figure a busy machine disturbs least), with the range, and their ratios to the faster of the bare
and the compiler loop (to the worker loop's where neither ran); what the worker loop spent on the
harness's own parts inside the worker (fingerprints, IR prints, size figures, notes, the phase
clock); then, from the last one-worker run's JSON report, the first case's wait for the worker's
start-up, the median controller time per case (protocol and memory watch: a case's wall minus
its phases), the time outside every case (pytest's start, collection, the report), and the cost
of one memory-watch reading.

    python benchmarks/overhead.py [--backend linalg-on-tensors] [--filter conv_backward] [--repeat 3]
    python benchmarks/overhead.py --before ../main --skip "-n 2, 2 thr"   # a change's before and after, interleaved
    python benchmarks/overhead.py --filter opinfo      # issue 12's target: at most 1.15x, and 0.6x with -n 2
    python benchmarks/overhead.py --backend onnxruntime --filter onnx_node   # issue 21's: 1.15x, 0.6x with -n 2
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

from harness.controller.process_tree import ProcessTree
from harness.controller.worker_process import WATCH_INTERVAL
from harness.controller.workers import worker_environment
from harness.project import Project, settings_from_args

ROOT = Path(__file__).resolve().parent.parent
LOOPS = Path(__file__).resolve().parent / "overhead_loops.py"
BARE = Path(__file__).resolve().parent / "bare_loop.py"


@dataclasses.dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float   # user + system of the process and every descendant it waited for
    stdout: str


def timed_run(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> Timed:
    """A fresh process, timed from outside, as a user's machine runs it: with Python writing its
    bytecode (this machine's shells set PYTHONDONTWRITEBYTECODE, which makes every run compile the
    harness and pytest's rewritten modules again, about 0.6 s of a start)."""
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **(env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):  # 1: pytest saw failures; that is data
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Timed(elapsed, cpu, done.stdout)


def loop(kind: str, args: argparse.Namespace) -> tuple[Timed, dict]:
    """One of benchmarks/overhead_loops.py's loops, in a process with a worker's environment (the
    families' variables: PYTHONHASHSEED is read at start-up); its JSON line."""
    env = worker_environment(Project(settings_from_args(argparse.Namespace(), ROOT)))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))   # this checkout's
    done = timed_run([sys.executable, str(LOOPS), kind, str(ROOT), args.backend, args.filter], env=env)
    try:
        return done, json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):   # the loop itself broke
        sys.exit(f"the {kind} loop printed no counts:\n{done.stdout[-2000:]}")


def bare_loop(args: argparse.Namespace, cases_file: Path) -> tuple[Timed, dict]:
    """benchmarks/bare_loop.py over the cases of `cases_file`, in a process of its own: no harness
    on its path, no worker environment."""
    if not cases_file.exists():
        return Timed(0.0, 0.0, ""), {"n/a": "no conv_backward case on an FX-importer MLIR backend"}
    done = timed_run([sys.executable, str(BARE), str(cases_file)], cwd=cases_file.parent)
    return done, json.loads(done.stdout.strip().splitlines()[-1])


def write_bare_cases(args: argparse.Namespace, path: Path) -> None:
    """The bare loop's cases, as data: each conv_backward case's geometry, mask, dtype, input shapes
    and tolerances, from the family's own builder; the backend's LLVM pass list. Written only for
    an MLIR backend with the FX importer (the bare loop's only path)."""
    from overhead_loops import project_cases

    from harness.backend_interface import create_backend
    from harness.backends.mlir import MlirBackend
    from harness.families.interface import load_builder

    project, config, cases = project_cases(ROOT, args.backend, args.filter)
    backend = create_backend(config.name, config.class_path, config.options)
    cases = [c for c in cases if c.family == "conv_backward"]
    if not cases or not isinstance(backend, MlirBackend) or backend.options.get("torch_front_end", "fx_importer") \
            != "fx_importer":
        return
    rows = []
    for case in cases:
        built = load_builder(project.families[case.family].worker_request(case.params))(case)
        module = built.program.module
        stride, padding, dilation, transposed, output_padding, groups = module.geometry
        tolerance = config.tolerances[case.params.get("dtype", "float32")]
        rows.append(dict(id=case.id, bias_sizes=module.bias_sizes, stride=stride, padding=padding,
                         dilation=dilation, transposed=transposed, output_padding=output_padding, groups=groups,
                         output_mask=module.output_mask, dtype=case.params.get("dtype", "float32"),
                         dynamic=bool(built.program.dynamic_shapes),
                         input_sets=[[list(t.shape) for t in inputs] for inputs in built.input_sets],
                         rtol=tolerance.rtol, atol=tolerance.atol))
    # The compiler's work as the backend is configured to do it: strict export costs about a quarter
    # more CPU than torch-mlir's default, non-strict (13 1-D cases, 2026-12-06).
    work = {"strict_export": bool(backend.options.get("strict_export", False)),
            "backend_legal_ops": list(backend.options.get("backend_legal_ops", [])),
            "llvm_lowering_passes": backend.llvm_lowering_passes()}
    path.write_text(json.dumps({"cases": rows, "backend": work}))


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
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the runs (medians are quoted)")
    parser.add_argument("--skip", action="append", default=[], choices=RUNS, help="leave this run out (repeatable)")
    parser.add_argument("--before", type=Path, help="another checkout (the code before a change): its one-worker "
                        "and -n 2 runs interleaved with these, as `one worker (before)` and `-n 2 (before)`")
    args = parser.parse_args()
    runs: dict[str, list[Timed]] = {}
    extras: dict[str, list[float]] = {}
    outcomes: dict[str, str] = {}   # a loop's cases and failures: one that broke fails them all
    with tempfile.TemporaryDirectory() as tmp:
        if "bare" not in args.skip:
            write_bare_cases(args, Path(tmp) / "bare_cases.json")
        one_worker, report = Path(tmp) / "one.json", Path(tmp) / "report.json"
        for round_ in range(1, args.repeat + 1):
            for name, run in round_runs(args, Path(tmp), round_, one_worker, report):
                if name not in args.skip:
                    timed = run()
                    if isinstance(timed, tuple):   # a loop: its figures too
                        timed, counts = timed
                        if "n/a" in counts:
                            continue
                        outcomes[name] = f"{counts['cases']} cases, {counts['failed']} did not pass"
                        for part, seconds in counts.get("extras_s", {}).items():
                            extras.setdefault(part, []).append(seconds)
                    runs.setdefault(name, []).append(timed)
            print(f"round {round_}: " + ", ".join(f"{name} {r[-1].wall_s:.1f} s" for name, r in runs.items()),
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        costs = harness_costs(one_worker, runs["one worker"][-1].wall_s) if "one worker" in runs else ""
        medians = phase_medians(report) if "-n 2" in runs else {}
    loops = [name for name in ("bare", "compiler") if name in runs] or ["worker"]
    base_name = min(loops, key=lambda name: statistics.median(r.wall_s for r in runs[name]))
    base = {what: statistics.median(getattr(r, what) for r in runs[base_name]) for what in ("wall_s", "cpu_s")}
    print("the loops: " + "; ".join(f"{name} {text}" for name, text in outcomes.items()))
    print(f"ratios to the {base_name} loop's medians, the faster of {' and '.join(loops)} (ranges: each run's "
          f"fastest and slowest)")
    for name, timed in runs.items():
        print(f"{name + ':':20}" + "  ".join(_figure(what, [getattr(r, what) for r in timed], base[what])
                                            for what in ("wall_s", "cpu_s")))
    print("inside the worker loop, the harness's own parts (median s over the cases): " + ", ".join(
        f"{part} {statistics.median(seconds):.2f}" for part, seconds in extras.items()))
    print(costs)
    print("per-phase medians (s, from the last -n 2 run): "
          + ", ".join(f"{phase} {seconds:.3f}" for phase, seconds in medians.items()))


def round_runs(args: argparse.Namespace, tmp: Path, round_: int, one_worker: Path, report: Path) -> list:
    """(name, what runs it) of one round, in order; a loop's gives its JSON figures too."""
    pytest = [sys.executable, "-m", "pytest", "-q", f"--backend={args.backend}", "-k", args.filter]
    cold = pytest + ["--cache=off"]
    cache_dir = tmp / f"cache{round_}"   # empty: every stage a miss, and written
    runs = [("bare", lambda: bare_loop(args, tmp / "bare_cases.json")),
            ("compiler", lambda: loop("compiler", args)), ("worker", lambda: loop("worker", args))]
    if args.before:
        runs += [("one worker (before)", lambda: timed_run(cold + ["-n", "0"], cwd=args.before)),
                 ("-n 2 (before)", lambda: timed_run(cold + ["-n", "2"], cwd=args.before))]
    return runs + [
        ("one worker", lambda: timed_run(cold + ["-n", "0", f"--report-json={one_worker}"])),
        ("-n 2", lambda: timed_run(cold + ["-n", "2", f"--report-json={report}"])),
        ("-n 2, 2 thr", lambda: timed_run(cold + ["-n", "2"], env={"OMP_NUM_THREADS": "2"})),
        ("cache cold", lambda: timed_run(pytest + ["-n", "0", "--cache=on", f"--cache-dir={cache_dir}"])),
        ("warm rerun", lambda: timed_run(pytest + ["-n", "0", "--cache=on", f"--cache-dir={cache_dir}"])),
        ("warm server", lambda: [timed_run(pytest + ["-n", "0", "--cache=on", f"--cache-dir={cache_dir}",
                                                     "--warm-server=on"]) for _ in range(2)][-1])]


def _figure(what: str, samples: list[float], base: float) -> str:
    median = statistics.median(samples)
    label = "wall" if what == "wall_s" else "cpu"
    return f"{label} {median:6.1f} s ({min(samples):.1f}-{max(samples):.1f}) ratio {median / base:.2f}"


RUNS = ("bare", "compiler", "worker", "one worker (before)", "-n 2 (before)", "one worker", "-n 2", "-n 2, 2 thr",
        "cache cold", "warm rerun", "warm server")


if __name__ == "__main__":
    main()
