"""Per-test agreement between torch-mlir's own e2e runner and the harness, on the same tests.

What it measures. For one config of torch-mlir's `projects/pt1/e2e_testing/main.py` it runs, one
after the other (never at the same time), two sides on the tests of a checkout:

- the runner side: torch-mlir's own `run_tests` with its process pool, in a subprocess of this
  interpreter, with the TestConfig and backend objects `main.py --config=CONFIG` makes, the
  config's crashing set (as `xfail_sets.py` computes it at run time) not attempted, each result
  judged pass/fail by `reporting.SingleTestReport(result, ErrorContext.empty()).failed`, the
  very check `report_results` makes;
- the harness side: in a temporary working directory, `python -m harness import-xfail-sets` of
  the config's two sets, then `python -m pytest -p harness.plugin --torch-mlir-suite=...
  --backend=BACKEND -n JOBS --report-json=harness.json`; a test passes when its outcome is
  `passed`.

Over the tests both sides attempted it counts both pass, both fail, harness-only failures and
runner-only failures (each row with each side's first error line); the tests only one side
attempted are listed with why. The agreement is (both pass + both fail) / both attempted. Each
side's wall runs from its processes' start to their end (the harness's: import-xfail-sets plus
pytest; pytest alone is given too); the ratio is harness / runner. The harness side lists the
suite into a fresh manifest cache inside its temporary directory, so both sides pay for
importing the suite.

How to repeat it:

    python benchmarks/torch_mlir_agreement.py --torch-mlir ~/torch-mlir --config fx_importer \\
        [--filter REGEX] [--jobs 2] [--out DIR]

--filter is upstream's: `re.match` on the test name (a prefix match); the harness side gets the
same names as a `-k` expression. It writes DIR/agreement.json and DIR/agreement.md (default
./agreement-CONFIG), and each side's log and report beside them. Exit status: 0 when both sides
ran, whatever they found; 2 for bad input (one line: no checkout, an unknown config, a runner that
cannot import); 1 when a side ran but left nothing to compare.

What is changed in torch-mlir's runner, and why (all in the runner subprocess, none in the
checkout):

- Pool size. `run_tests` takes min(int(0.8 * cpu_count) + 1, #tests, TORCH_MLIR_TEST_CONCURRENCY)
  processes, but sets 1 when `multiprocess.cpu_count() == 2`, and with 1 it runs every test
  sequentially, discards those results, then runs them all again in the pool. To get "a pool of
  JOBS" the runner process sets TORCH_MLIR_TEST_CONCURRENCY=JOBS and replaces
  `multiprocess.cpu_count` by one that answers max(real, 2 * JOBS, 3), never 2, so the pool has
  JOBS processes and each test runs once (with --jobs 1, or a filter of one test, upstream's
  double run remains).
- `framework.compile_and_run_test` (which `run_tests` looks up when it calls the pool) is
  wrapped: before calling upstream's function the wrapper appends "PID TEST" to a file, after it
  appends the test's verdict (the same SingleTestReport check). When a pool process dies,
  `run_tests` prints "At least one of testing processes has exited with code != 0." and exits,
  losing every result; the files still tell which test each process had started and what had
  finished. `multiprocess.Pool` is wrapped only to keep its process list, to read the dead
  process's exit status (run_tests's own copy is a local).
- `torch_mlir._version` (imported by test_suite/__init__.py and xfail_sets.py): the checkout's
  projects/pt1/python/torch_mlir/_version.py when it is importable (the wheel's torch_mlir is a
  namespace package, so the checkout's folder joins it), else a module object with upstream's two
  names, `version` (packaging's) and `torch_version_for_comparison()`, put in sys.modules.
- `torch_mlir_e2e_test.configs` is made a bare package (its __init__.py not run): that file
  imports every config, and the lazy-tensor one needs torch_mlir._mlir_libs._REFERENCE_LAZY_BACKEND,
  which the wheel lacks. FxImporterTestConfig is the same class, from configs/fx_importer_backend.py.
- The test_suite modules of `register_all_tests()` are imported one by one, in its order: a module
  that fails (conv.py and vision_models.py need torchvision, which cannot be installed beside the
  CPU torch) costs only its own tests and is recorded with its error, as the harness does.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PT1 = Path("projects") / "pt1"
PACKAGE = "torch_mlir_e2e_test"

# config -> (harness backend, xfail set, crash set, backend module, backend class, FxImporterTestConfig's
# output type): as main.py makes them
CONFIGS = {
    "fx_importer": ("linalg-on-tensors", "FX_IMPORTER_XFAIL_SET", "FX_IMPORTER_CRASHING_SET",
                    "linalg_on_tensors_backends.refbackend", "RefBackendLinalgOnTensorsBackend", None),
    "fx_importer_tosa": ("tosa", "FX_IMPORTER_TOSA_XFAIL_SET", "FX_IMPORTER_TOSA_CRASHING_SET",
                         "tosa_backends.linalg_on_tensors", "LinalgOnTensorsTosaBackend", "tosa"),
    "fx_importer_stablehlo": ("stablehlo", "FX_IMPORTER_STABLEHLO_XFAIL_SET", "FX_IMPORTER_STABLEHLO_CRASHING_SET",
                              "stablehlo_backends.linalg_on_tensors", "LinalgOnTensorsStablehloBackend", "stablehlo"),
}

RUNNER_SIDE = "--runner-side"          # the hidden sub-command the runner subprocess is started with
SUITE_ENV = "AGREEMENT_SUITE"          # read by the pool's spawned processes, which re-run this file
STARTED_ENV = "AGREEMENT_STARTED"
FINISHED_ENV = "AGREEMENT_FINISHED"
CANNOT_RUN = 3                          # the runner subprocess's status for "cannot import / evaluate"


class BadInput(Exception):
    """One line for the user; the script exits with status 2."""


class SideFailed(Exception):
    """A side that ran but left nothing to compare: one line, status 1."""


def first_error_line(text: str | None) -> str:
    """The line that says what went wrong: reporting's `ERROR:` line; else, for a traceback, its
    exception line (kept behind upstream's "Runtime error: " and the like, and followed by the first
    `error:` diagnostic of a torch-mlir compiler error); else the first non-empty line."""
    lines = [line.rstrip() for line in (text or "").splitlines() if line.strip()]
    for line in lines:
        if line.startswith("ERROR: "):
            return line
    marker = "Traceback (most recent call last)"
    starts = [i for i, line in enumerate(lines) if marker in line]
    if starts:
        start = starts[-1]   # a chained exception's last traceback raised it
        prefix = lines[start][:lines[start].index(marker)]
        rest = lines[start + 1:]
        exception = next((line for line in rest if not line.startswith(" ")), None)
        if exception:
            diagnostic = next((line.strip() for line in rest if line.strip().startswith("error:")), None)
            more = f" | {diagnostic}" if diagnostic and diagnostic not in exception else ""
            return f"{prefix}{exception}{more}"
    return lines[0] if lines else ""


# ------------------------------------------------------------------------------------------------
# The runner side: a subprocess that imports torch and torch-mlir's framework.

def bootstrap(suite: str) -> str:
    """Make the checkout's framework importable as upstream's main.py sees it; say where
    torch_mlir._version comes from. Run in the runner process and in each of its pool processes."""
    if suite not in sys.path:
        sys.path.insert(0, suite)
    os.environ[SUITE_ENV] = suite
    name = "torch_mlir._version"
    found = sys.modules.get(name) or importlib.util.find_spec(name)
    if found is None:
        sys.modules[name] = _version_module()
    source = getattr(found, "origin", None) or getattr(found, "__file__", None) or "provided by this script"
    configs = f"{PACKAGE}.configs"
    if configs not in sys.modules:
        package = types.ModuleType(configs)
        package.__path__ = [str(Path(suite) / PACKAGE / "configs")]
        package.__package__ = configs
        sys.modules[configs] = package
    return source


def _version_module() -> types.ModuleType:
    import torch
    from packaging import version

    module = types.ModuleType("torch_mlir._version")
    module.version = version
    # as upstream's: ignore +cpu, +cu117 and the like in comparisons
    module.torch_version_for_comparison = lambda: version.parse(torch.__version__.split("+", 1)[0])
    return module


def import_runner(suite: str, config_name: str) -> types.SimpleNamespace:
    """framework, reporting, registry and the config's TestConfig, or BadInput naming what is missing."""
    try:
        framework = importlib.import_module(f"{PACKAGE}.framework")
        reporting = importlib.import_module(f"{PACKAGE}.reporting")
        registry = importlib.import_module(f"{PACKAGE}.registry")
        importlib.import_module(f"{PACKAGE}.test_suite")   # its __init__.py: torch_mlir._version
        fx = importlib.import_module(f"{PACKAGE}.configs.fx_importer_backend")
        _, _, _, backend_module, backend_class, output_type = CONFIGS[config_name]
        backend = getattr(importlib.import_module(f"{PACKAGE}.{backend_module}"), backend_class)()
        args = (backend,) if output_type is None else (backend, output_type)
        config = fx.FxImporterTestConfig(*args)
        for name in ("run_tests", "compile_and_run_test"):
            getattr(framework, name)
        reporting.SingleTestReport, reporting.ErrorContext  # noqa: B018 - what the verdict needs
    except Exception as e:  # noqa: BLE001 - any failure here is one line for the user
        raise BadInput(_import_failure(suite, e)) from None
    return types.SimpleNamespace(framework=framework, reporting=reporting, registry=registry, config=config)


def _import_failure(suite: str, e: Exception) -> str:
    where = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(suite)]
    at = f" (at {where[-1].filename}:{where[-1].lineno})" if where else ""
    if isinstance(e, ModuleNotFoundError) and e.name:
        top = e.name.partition(".")[0]
        fix = ("; pip install multiprocess (torch-mlir's framework.py imports it)" if top == "multiprocess"
               else "" if top in ("torch_mlir", PACKAGE) else f"; pip install {top}")
        return f"torch-mlir's runner cannot import: no module named {e.name!r}{at}{fix}"
    return f"torch-mlir's runner cannot import: {type(e).__name__}: {e}{at}"


def suite_module_names(suite: str) -> tuple[list[str], str]:
    """The test_suite modules register_all_tests() imports, in its order (every module if it names none)."""
    init = Path(suite) / PACKAGE / "test_suite" / "__init__.py"
    names = []
    for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and node.name == "register_all_tests":
            names = [a.name for n in ast.walk(node) if isinstance(n, ast.ImportFrom) and n.level == 1
                     and n.module is None for a in n.names]
    if names:
        return names, "register_all_tests()"
    every = sorted(p.stem for p in init.parent.glob("*.py") if p.name != "__init__.py")
    return every, "every test_suite module (register_all_tests() names none)"


def register_tests(runner: types.SimpleNamespace, suite: str) -> tuple[list, list[dict], list[str]]:
    """Import the modules one by one; a module that fails costs its own tests only."""
    registry = runner.registry.GLOBAL_TEST_REGISTRY
    names, _ = suite_module_names(suite)
    failed = []
    for name in names:
        before = len(registry)
        try:
            importlib.import_module(f"{PACKAGE}.test_suite.{name}")
        except Exception as e:  # noqa: BLE001 - the module's failure, recorded
            del registry[before:]
            failed.append({"module": name, "error": f"{type(e).__name__}: {e}",
                           "missing": getattr(e, "name", None) if isinstance(e, ImportError) else None})
    return list(registry), failed, names


def load_sets(checkout: str, xfail_name: str, crash_name: str) -> tuple[set, set]:
    """The config's two sets as upstream's xfail_sets.py computes them here (it is run, as main.py does)."""
    path = Path(checkout) / PT1 / "e2e_testing" / "xfail_sets.py"
    try:
        spec = importlib.util.spec_from_file_location("e2e_testing.xfail_sets", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return set(getattr(module, xfail_name)), set(getattr(module, crash_name))
    except Exception as e:  # noqa: BLE001 - one line for the user
        raise BadInput(f"{path}: cannot evaluate it: {type(e).__name__}: {e}") from None


def verdict(reporting, result) -> dict:
    """Upstream's per-test check, the one report_results makes."""
    report = reporting.SingleTestReport(result, reporting.ErrorContext.empty())
    failed = report.failed
    return {"passed": not failed, "error": first_error_line(report.error_str()) if failed else None}


_UPSTREAM: dict = {}   # framework's own compile_and_run_test, in the runner process


def traced_compile_and_run_test(test, config, verbose=False):
    """Upstream's compile_and_run_test, with which process started the test and its verdict written
    down first-hand (a pool that dies loses the results run_tests holds)."""
    framework = importlib.import_module(f"{PACKAGE}.framework")
    upstream = _UPSTREAM.get("compile_and_run_test", framework.compile_and_run_test)
    _append(os.environ[STARTED_ENV], f"{os.getpid()} {test.unique_name}\n")
    result = upstream(test, config, verbose)
    record = {"test": test.unique_name, "pid": os.getpid(),
              **verdict(importlib.import_module(f"{PACKAGE}.reporting"), result)}
    _append(os.environ[FINISHED_ENV], json.dumps(record) + "\n")
    return result


def _append(path: str, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:  # one write per line: lines of two processes do not mix
        f.write(text)


def patch_runner(framework, jobs: int, pools: list) -> None:
    """The three changes the docstring lists: pool size, the traced test function, the pool's processes."""
    import multiprocess

    os.environ["TORCH_MLIR_TEST_CONCURRENCY"] = str(jobs)
    real = multiprocess.cpu_count()
    multiprocess.cpu_count = lambda: max(real, 2 * jobs, 3)   # never 2: no forced single process
    _UPSTREAM["compile_and_run_test"] = framework.compile_and_run_test
    framework.compile_and_run_test = traced_compile_and_run_test
    make_pool = multiprocess.Pool

    def recording_pool(*args, **kwargs):
        pool = make_pool(*args, **kwargs)
        pools.append((pool, list(pool._pool)))
        return pool

    multiprocess.Pool = recording_pool


def pool_crash(pools: list, started: Path, finished: dict) -> dict:
    """Which pool process died, with which status, on which test; what the others were running."""
    running = {}
    for line in started.read_text(encoding="utf-8").splitlines() if started.exists() else []:
        pid, _, name = line.partition(" ")
        running[int(pid)] = name
    died = []
    for pool, processes in pools:
        for process in processes:
            if process.exitcode:
                test = running.get(process.pid)
                died.append({"pid": process.pid, "exitcode": process.exitcode,
                             "signal": _signal_name(process.exitcode), "test": test if test not in finished else None})
        pool.terminate()
    dead = {d["test"] for d in died}
    # the other processes' tests (a replacement process's too: the pool starts one for the dead)
    interrupted = sorted(t for t in running.values() if t not in finished and t not in dead)
    return {"died": died, "interrupted": interrupted}


def _signal_name(exitcode: int) -> str | None:
    try:
        return signal.Signals(-exitcode).name if exitcode < 0 else None
    except ValueError:
        return None


def runner_side(spec_path: str) -> int:
    """The runner subprocess's main: writes the JSON the parent reads."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    out = Path(spec["out"])
    try:
        data = run_upstream(spec)
    except BadInput as e:
        out.write_text(json.dumps({"error": str(e)}) + "\n", encoding="utf-8")
        return CANNOT_RUN
    out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


def run_upstream(spec: dict) -> dict:
    suite = str(Path(spec["checkout"]) / PT1 / "python")
    version_source = bootstrap(suite)
    runner = import_runner(suite, spec["config"])
    registered, failed_modules, modules = register_tests(runner, suite)
    _, xfail_name, crash_name, *_ = CONFIGS[spec["config"]]
    xfail_set, crash_set = load_sets(spec["checkout"], xfail_name, crash_name)
    pattern = spec["filter"] or ".*"
    selected = [t for t in registered if re.match(pattern, t.unique_name)]
    tests = [t for t in selected if t.unique_name not in crash_set]
    data = {"version_module": version_source, "modules": modules, "failed_modules": failed_modules,
            "registered": [t.unique_name for t in registered], "selected": [t.unique_name for t in selected],
            "xfail_set": sorted(xfail_set), "crash_set": sorted(crash_set),
            "attempted": [t.unique_name for t in tests], "results": {}, "crash": None, "run_tests_s": 0.0}
    if tests:
        data.update(run_pool(runner, tests, spec))
    return data


def run_pool(runner, tests: list, spec: dict) -> dict:
    started, finished = Path(spec["started"]), Path(spec["finished"])
    os.environ[STARTED_ENV], os.environ[FINISHED_ENV] = str(started), str(finished)
    pools: list = []
    patch_runner(runner.framework, spec["jobs"], pools)
    begin = time.monotonic()
    try:
        results = runner.framework.run_tests(tests, runner.config, False, False)
    except SystemExit:   # run_tests's exit(1) when a pool process died
        done = _finished(finished)
        return {"results": done, "crash": pool_crash(pools, started, done), "run_tests_s": time.monotonic() - begin}
    seconds = time.monotonic() - begin
    for pool, _ in pools:
        pool.terminate()   # run_tests leaves its pool open; closed here, not by the interpreter's exit
    return {"results": {r.unique_name: verdict(runner.reporting, r) for r in results}, "run_tests_s": seconds,
            "processes": [p.pid for _, procs in pools for p in procs]}


def _finished(path: Path) -> dict:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []
    return {r["test"]: {"passed": r["passed"], "error": r["error"]} for r in records}


if __name__ == "__mp_main__" and os.environ.get(SUITE_ENV):
    # A pool process of the runner side (spawned: it re-runs this file under this name) unpickles
    # tests whose modules import torch_mlir._version and the config, so it needs the same bootstrap.
    bootstrap(os.environ[SUITE_ENV])


# ------------------------------------------------------------------------------------------------
# The parent: checks the input, runs the two sides one after the other, compares, writes.

def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-mlir", required=True, metavar="CHECKOUT", help="a torch-mlir checkout's top directory")
    parser.add_argument("--config", required=True, help=", ".join(CONFIGS))
    parser.add_argument("--filter", default=None, help="upstream's --filter: re.match on the test name")
    parser.add_argument("--jobs", type=int, default=2, help="the runner's pool size and the harness's -n (default 2)")
    parser.add_argument("--out", type=Path, default=None, help="where to write (default ./agreement-CONFIG)")
    return parser.parse_args(argv)


def check_input(args: argparse.Namespace) -> Path:
    checkout = Path(args.torch_mlir).expanduser().resolve()
    if not (checkout / PT1).is_dir():
        raise BadInput(f"{args.torch_mlir}: not a torch-mlir checkout (no projects/pt1); "
                       "pass the checkout's top directory")
    if args.config not in CONFIGS:
        raise BadInput(f"--config {args.config}: not a config this script knows; known: {', '.join(CONFIGS)}")
    for needed in (PT1 / "python" / PACKAGE / "test_suite" / "__init__.py", PT1 / "e2e_testing" / "xfail_sets.py"):
        if not (checkout / needed).is_file():
            raise BadInput(f"{args.torch_mlir}: no {needed}; pass the top directory of a torch-mlir checkout")
    if args.jobs < 1:
        raise BadInput(f"--jobs {args.jobs}: give 1 or more")
    try:
        re.compile(args.filter or "")
    except re.error as e:
        raise BadInput(f"--filter {args.filter!r}: not a regular expression ({e})") from None
    return checkout


def declared_tests(checkout: Path) -> list[str]:
    """Every test the suite's sources register (read with ast, as the harness's lister does: no torch)."""
    from harness.families.torch_mlir.manifest import registrations

    names = []
    for path in sorted((checkout / PT1 / "python" / PACKAGE / "test_suite").glob("*.py")):
        names.extend(registrations(path.read_text(encoding="utf-8")))
    return names


def run_runner(checkout: Path, args: argparse.Namespace, out: Path) -> tuple[dict, float]:
    """torch-mlir's runner in a subprocess of this interpreter; its JSON and its wall."""
    spec = {"checkout": str(checkout), "config": args.config, "filter": args.filter, "jobs": args.jobs,
            "out": str(out / "runner.json"), "started": str(out / "runner-started.txt"),
            "finished": str(out / "runner-finished.jsonl")}
    for name in ("out", "started", "finished"):
        Path(spec[name]).unlink(missing_ok=True)
    (out / "runner-spec.json").write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in (SUITE_ENV, STARTED_ENV, FINISHED_ENV)}
    begin = time.monotonic()
    with open(out / "runner.log", "w", encoding="utf-8") as log:
        command = [sys.executable, str(Path(__file__).resolve()), RUNNER_SIDE, str(out / "runner-spec.json")]
        status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, check=False).returncode
    wall = time.monotonic() - begin
    path = out / "runner.json"
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    if status == CANNOT_RUN and data and "error" in data:
        raise BadInput(data["error"])
    if data is None and status > 0:
        raise SideFailed(f"the runner side exited with status {status} and wrote no results; see {out / 'runner.log'}")
    if data is None:   # a signal ended the runner process itself (a sequential pass runs tests in it)
        data = died_runner(out, status)
    return data, wall


def died_runner(out: Path, status: int) -> dict:
    done = _finished(out / "runner-finished.jsonl")
    started = out / "runner-started.txt"
    lines = started.read_text(encoding="utf-8").splitlines() if started.exists() else []
    names = [line.partition(" ")[2] for line in lines]
    last = next((n for n in reversed(names) if n not in done), None)
    return {"results": done, "crash": {"died": [{"pid": None, "exitcode": status, "signal": _signal_name(status),
                                                 "test": last, "runner_process": True}], "interrupted": []},
            "registered": [], "selected": [], "attempted": [], "crash_set": [], "xfail_set": [],
            "failed_modules": [], "modules": [], "version_module": None, "run_tests_s": 0.0,
            "note": f"the runner process exited with status {status} before writing its results; see runner.log"}


def harness_env(cache: Path) -> dict:
    # not a pytest-xdist worker's variables (when this script runs under pytest): the harness's pytest is its own run
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT_TEST"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TORCH_BACKEND_E2E_CACHE"] = str(cache)   # fresh: the suite is listed, as the runner imports it
    return env


def selection_args(work: Path, names: list[str] | None, backend: str) -> list[str]:
    """-k naming each selected case exactly (`torch_mlir/NAME[BACKEND]` is a substring of no other
    item's name), in an @file: a whole suite's expression is longer than one argument may be."""
    if names is None:
        return []
    expression = " or ".join(f"torch_mlir/{n}[{backend}]" for n in names)
    (work / "select.args").write_text(f"-k\n{expression}\n", encoding="utf-8")
    return [f"@{work / 'select.args'}"]


def run_harness(checkout: Path, args: argparse.Namespace, out: Path, names: list[str] | None) -> dict:
    """import-xfail-sets then pytest, in a temporary working directory; the report and the walls."""
    backend, xfail_name, crash_name, *_ = CONFIGS[args.config]
    suite = checkout / PT1 / "python"
    with tempfile.TemporaryDirectory(prefix="agreement-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        env = harness_env(Path(tmp) / "cache")
        sets_file = checkout / PT1 / "e2e_testing" / "xfail_sets.py"
        importing = [sys.executable, "-m", "harness", "import-xfail-sets", str(sets_file),
                     "--torch-mlir-suite", str(suite), "--set", xfail_name, "--crash-set", crash_name,
                     "--backend", backend]
        testing = [sys.executable, "-m", "pytest", "-p", "harness.plugin", f"--torch-mlir-suite={suite}",
                   f"--backend={backend}", "-n", str(args.jobs), "--report-json=harness.json",
                   *selection_args(work, names, backend)]
        with open(out / "harness.log", "w", encoding="utf-8") as log:
            import_status, import_wall = _timed(importing, work, env, log)
            if import_status != 0:
                raise SideFailed(f"harness import-xfail-sets exited with status {import_status}; "
                                 f"see {out / 'harness.log'}")
            pytest_status, pytest_wall = _timed(testing, work, env, log)
        report = work / "harness.json"
        if not report.exists():
            raise SideFailed(f"the harness's pytest exited with status {pytest_status} and wrote no report; "
                             f"see {out / 'harness.log'}")
        shutil.copy(report, out / "harness.json")
        for folder in ("xfail", "crash_sets"):
            shutil.copytree(work / folder, out / "harness-expectations" / folder, dirs_exist_ok=True)
    data = json.loads((out / "harness.json").read_text(encoding="utf-8"))
    return {"report": data, "import_wall_s": import_wall, "pytest_wall_s": pytest_wall,
            "wall_s": import_wall + pytest_wall, "pytest_status": pytest_status}


def _timed(command: list[str], cwd: Path, env: dict, log) -> tuple[int, float]:
    log.write("$ " + " ".join(command) + "\n")
    log.flush()
    begin = time.monotonic()
    status = subprocess.run(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    return status, time.monotonic() - begin


def harness_results(report: dict, backend: str) -> dict[str, dict]:
    """Test name -> outcome, passed, first error line (from the harness's JSON report)."""
    results = {}
    for record in report["results"]:
        if record["backend"] == backend and record["case"].startswith("torch_mlir/"):
            passed = record["outcome"] == "passed"
            results[record["case"].removeprefix("torch_mlir/")] = {
                "outcome": record["outcome"], "passed": passed, "expected": record.get("expected"),
                "error": None if passed else first_harness_line(record)}
    return results


def first_harness_line(record: dict) -> str:
    """`OUTCOME in PHASE: ` and the message's line that says what (a mismatch's message opens with
    `mismatch in phase compare`, the line after it names the output)."""
    lines = [line.strip() for line in record.get("message", "").splitlines() if line.strip()]
    if len(lines) > 1 and " in phase " in lines[0]:
        lines = lines[1:]
    where = f" in {record['phase']}" if record.get("phase") else ""
    return f"{record['outcome']}{where}: {first_error_line(chr(10).join(lines))}"


def compare(runner: dict, harness: dict[str, dict], config: str) -> dict:
    """Rows over the tests both attempted; the others with why."""
    runner_results = dict(runner["results"])
    for died in (runner.get("crash") or {}).get("died", []):
        if died["test"]:
            runner_results[died["test"]] = {"passed": False, "error": _death_line(died)}
    harness_attempted = {n for n, r in harness.items() if r["outcome"] != "not_run"}
    both = sorted(set(runner_results) & harness_attempted)
    xfail = set(runner["xfail_set"])
    rows = [_row(name, runner_results[name], harness[name], name in xfail) for name in both]
    only_runner = [{"test": n, "why": _why_not_harness(harness.get(n))}
                   for n in sorted(set(runner_results) - harness_attempted)]
    only_harness = [{"test": n, "why": _why_not_runner(n, runner, config)}
                    for n in sorted(harness_attempted - set(runner_results))]
    neither = sorted((set(harness) - harness_attempted) & (set(runner["selected"]) - set(runner_results)))
    lits = [lit(r["passed"], n in xfail) for n, r in runner_results.items()]
    runner_lit = {k: lits.count(k) for k in ("PASS", "FAIL", "XFAIL", "XPASS") if k in lits}
    return {"rows": rows, "only_runner": only_runner, "only_harness": only_harness, "neither": neither,
            "runner_lit": runner_lit}


def _death_line(died: dict) -> str:
    status = died["signal"] or f"exit status {died['exitcode']}"
    who = "the runner process" if died.get("runner_process") else f"pool process {died['pid']}"
    return f"crashed: {who} died ({status}) running this test; run_tests gave up"


CATEGORIES = {(True, True): "both pass", (False, False): "both fail",
              (True, False): "harness-only failure", (False, True): "runner-only failure"}


def _row(name: str, runner: dict, harness: dict, xfail: bool) -> dict:
    return {"test": name, "category": CATEGORIES[(runner["passed"], harness["passed"])],
            "runner_error": runner["error"], "runner_lit": lit(runner["passed"], xfail),
            "harness_outcome": harness["outcome"], "harness_expected": harness["expected"],
            "harness_error": harness["error"]}


def lit(passed: bool, xfail: bool) -> str:
    """What report_results would print for the test."""
    return {(True, False): "PASS", (False, False): "FAIL", (True, True): "XPASS", (False, True): "XFAIL"}[passed, xfail]


def _why_not_harness(record: dict | None) -> str:
    if record is None:
        return "no result in the harness's report (not one of its cases: see its run's summary in harness.log)"
    return "in the harness's crash set (imported), not run"


def _why_not_runner(name: str, runner: dict, config: str) -> str:
    if name in runner["crash_set"]:
        return f"in {CONFIGS[config][2]} as xfail_sets.py computes it when run; not attempted"
    if name in runner["selected"]:
        return "the runner's pool died before this test finished"
    if name not in runner["registered"]:
        failed = ", ".join(f"{m['module']} ({m['error']})" for m in runner["failed_modules"])
        return ("not registered by the runner: its module is not one register_all_tests() imports"
                + (f", or did not import ({failed})" if failed else ""))
    return "not selected on the runner side"


def summarise(comparison: dict, runner_wall: float, harness: dict) -> dict:
    rows = comparison["rows"]
    counts = {c: sum(r["category"] == c for r in rows) for c in CATEGORIES.values()}
    same = counts["both pass"] + counts["both fail"]
    return {"both_attempted": len(rows), **{k.replace(" ", "_").replace("-", "_"): v for k, v in counts.items()},
            "agreement_pct": round(100.0 * same / len(rows), 2) if rows else None,
            "only_runner": len(comparison["only_runner"]), "only_harness": len(comparison["only_harness"]),
            "neither": len(comparison["neither"]), "runner_report_results": comparison["runner_lit"],
            "runner_wall_s": round(runner_wall, 1), "harness_wall_s": round(harness["wall_s"], 1),
            "harness_pytest_wall_s": round(harness["pytest_wall_s"], 1),
            "harness_import_wall_s": round(harness["import_wall_s"], 1),
            "wall_ratio": round(harness["wall_s"] / runner_wall, 2) if runner_wall else None}


def summary_lines(args: argparse.Namespace, s: dict, runner: dict) -> list[str]:
    lines = [f"config {args.config} (harness backend {CONFIGS[args.config][0]}), filter {args.filter or '(none)'}, "
             f"jobs {args.jobs}",
             f"both attempted: {s['both_attempted']}  both pass: {s['both_pass']}  both fail: {s['both_fail']}  "
             f"harness-only failure: {s['harness_only_failure']}  runner-only failure: {s['runner_only_failure']}",
             f"agreement: {s['agreement_pct']}% (same pass/fail / both attempted)",
             f"only the runner attempted: {s['only_runner']}  only the harness attempted: {s['only_harness']}  "
             f"neither (crash sets): {s['neither']}",
             f"wall: runner {s['runner_wall_s']} s, harness {s['harness_wall_s']} s (import-xfail-sets "
             f"{s['harness_import_wall_s']} s + pytest {s['harness_pytest_wall_s']} s); "
             f"harness/runner {s['wall_ratio']}",
             "runner, as report_results counts it: "
             + "  ".join(f"{k} {v}" for k, v in s["runner_report_results"].items())]
    for died in (runner.get("crash") or {}).get("died", []):
        lines.append(f"the runner crashed: {_death_line(died)} ({died['test']})")
    for module in runner.get("failed_modules", []):
        lines.append(f"runner: test_suite module {module['module']} did not import ({module['error']})")
    return lines


def markdown(args: argparse.Namespace, lines: list[str], comparison: dict) -> str:
    text = [f"# torch-mlir runner vs harness: {args.config}", "", *[f"- {line}" for line in lines], ""]
    order = ["harness-only failure", "runner-only failure", "both fail", "both pass"]
    for category in order:
        rows = [r for r in comparison["rows"] if r["category"] == category]
        text += [f"## {category} ({len(rows)})", ""]
        if rows:
            text += ["| test | runner | harness |", "| --- | --- | --- |"]
            text += [f"| {r['test']} | {_cell(r['runner_error'] or 'pass')} | "
                     f"{_cell(r['harness_error'] or r['harness_outcome'])} |" for r in rows]
            text.append("")
    for key, title in (("only_runner", "only the runner attempted"), ("only_harness", "only the harness attempted")):
        text += [f"## {title} ({len(comparison[key])})", ""]
        if comparison[key]:
            text += ["| test | why |", "| --- | --- |"]
            text += [f"| {r['test']} | {_cell(r['why'])} |" for r in comparison[key]]
            text.append("")
    text += [f"## attempted by neither: in both crash sets ({len(comparison['neither'])})", "",
             ", ".join(comparison["neither"]) or "none", ""]
    return "\n".join(text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]


def main(argv: list[str]) -> int:
    if argv[:1] == [RUNNER_SIDE]:
        return runner_side(argv[1])
    args = parse_args(argv)
    try:
        checkout = check_input(args)
        declared = declared_tests(checkout)
        names = None if not args.filter else [n for n in declared if re.match(args.filter, n)]
        if names == []:
            raise BadInput(f"--filter {args.filter!r} matches no test of {checkout / PT1 / 'python'}")
        out = (args.out or Path(f"agreement-{args.config}")).resolve()
        out.mkdir(parents=True, exist_ok=True)
        print(f"runner side: torch-mlir's run_tests, a pool of {args.jobs} ...", flush=True)
        runner, runner_wall = run_runner(checkout, args, out)
        print(f"runner side: {len(runner['results'])} results in {runner_wall:.1f} s", flush=True)
        print(f"harness side: import-xfail-sets, then pytest -n {args.jobs} ...", flush=True)
        harness = run_harness(checkout, args, out, names)
    except BadInput as e:
        print(e, file=sys.stderr)
        return 2
    except SideFailed as e:
        print(e, file=sys.stderr)
        return 1
    backend = CONFIGS[args.config][0]
    comparison = compare(runner, harness_results(harness["report"], backend), args.config)
    summary = summarise(comparison, runner_wall, harness)
    lines = summary_lines(args, summary, runner)
    print("\n".join(lines))
    data = {"config": args.config, "backend": backend, "checkout": str(checkout), "filter": args.filter,
            "jobs": args.jobs, "summary": summary, **comparison,
            "runner": {k: runner.get(k) for k in ("version_module", "modules", "failed_modules", "crash",
                                                  "run_tests_s", "note")}
            | {"wall_s": runner_wall, "registered": len(runner["registered"]), "attempted": len(runner["attempted"])},
            "harness": {k: harness[k] for k in ("import_wall_s", "pytest_wall_s", "wall_s", "pytest_status")}}
    (out / "agreement.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (out / "agreement.md").write_text(markdown(args, lines, comparison), encoding="utf-8")
    print(f"wrote {out / 'agreement.json'} and {out / 'agreement.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
