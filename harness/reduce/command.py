"""`python -m harness reduce`: the smallest program that fails as a case fails.

    python -m harness reduce CASE --backend NAME [--cases-file FILE | --report REPORT] --out DIR [-n N]
    python -m harness reduce --all REPORT --out DIR [-n N]

It runs the case, takes its signature, and cuts the case's program (the family's graph: for a
PyTorch program its exported FX graph, harness.reduce.torch_graph) with delta debugging
(harness.reduce.search). A candidate counts as failing only when it fails in the same phase with
the same signature; every candidate is a case of the `reduced` family run in a harness worker
with the case's timeout, so a crash or a hang is a candidate's outcome. This process imports
torch (to cut the graph); the compilers run only in the workers.

DIR gets model.py (the reduced program), inputs.pt (and constants.pt for large constants),
case.yaml (`pytest --cases-file=case.yaml --backend=NAME` from DIR reruns it), bundle/ (the
reduced case's repro bundle with each stage's IR) and reduce.json.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import itertools
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from harness.backend import load_object
from harness.controller.bundles import write_readme
from harness.controller.pool import WorkerPool
from harness.controller.run_case import case_timeout, run_case
from harness.controller.signature import Failure
from harness.errors import HarnessInputError
from harness.families.interface import Family
from harness.families.plugins import default_options, discover_all, load_families, worker_env
from harness.files import shown, write_text_atomically
from harness.inputs.configs import BackendConfig, load_configs, select_backend
from harness.inputs.registry import case_modules, load_case_module, load_cases_file
from harness.outcomes import Phase
from harness.spec import Case

REDUCED_FAMILY = "reduced"


@dataclasses.dataclass
class Setting:
    backend: BackendConfig
    families: dict[str, Family]
    out: Path
    parallel: int = 1
    timeout: float | None = None     # --case-timeout
    verbose: bool = False            # log every candidate's result
    log: Any = sys.stderr


class Workers:
    """One worker pool per candidate run at once, and the threads that drive them. The threads live
    as long as the pools: a worker dies with the thread that started it (its parent-death signal)."""

    def __init__(self, backend: BackendConfig, count: int, env: dict[str, str]):
        self.pools = [WorkerPool(Path.cwd(), preload=[backend.to_json()], env=env) for _ in range(count)]
        self.executor = ThreadPoolExecutor(max_workers=count)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()
        self.executor.shutdown()


class Reduction:
    """One case's reduction on one backend, on `workers` (made for it when not given)."""

    def __init__(self, case: Case, setting: Setting, workers: Workers | None = None):
        self.case, self.setting = case, setting
        self.family = setting.families[case.family]
        self.env = worker_env(setting.families)
        self.workers = workers or Workers(setting.backend, setting.parallel, self.env)
        self.pools = self.workers.pools
        self.timeout = case_timeout(case, setting.backend, given=setting.timeout)
        self.started = time.monotonic()

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=self.setting.log, flush=True)

    def run(self) -> dict | None:
        """reduce.json's content, or None when the case does not fail (nothing to reduce)."""
        failure = self._original_failure()
        if failure is None:
            return None
        graph = self._graph()
        from harness.reduce.search import DeltaDebugger

        with tempfile.TemporaryDirectory(prefix="candidates-", dir=self.setting.out) as scratch:
            folders = (Path(scratch) / str(n) for n in itertools.count())
            self._check_whole(graph, failure, next(folders))
            search = DeltaDebugger(len(graph.units), lambda candidates: self._test(graph, candidates, failure, folders),
                                   len(self.pools), self.log)
            kept = search.reduce()
        return self._write_result(graph, kept, failure, search)

    def _original_failure(self) -> Failure | None:
        failure = Failure.of(run_case(self.pools[0], self.case, self.family, self.setting.backend,
                                      given_timeout=self.timeout))
        if failure is not None:
            self.log(f"{self.case.id} fails on {self.setting.backend.name}: {failure.signature} "
                     f"(phase {failure.phase})")
        if failure is not None and failure.phase in (Phase.SETUP.value, Phase.EXPORT.value):
            raise HarnessInputError(self.case.id, f"fails before there is a graph to cut ({failure.signature} in "
                                    f"phase {failure.phase})", "only a failure after export can be reduced")
        return failure

    def _check_whole(self, graph, failure: Failure, folder: Path) -> None:
        """The exported program, uncut, must fail as the case does (or nothing it is cut to can)."""
        whole = self._candidate_failure(self.pools[0], graph.write(frozenset(range(len(graph.units))), folder))
        if not failure.kept_by(whole):
            got = f"{whole.signature} in phase {whole.phase}" if whole else "it passes"
            raise HarnessInputError(self.case.id, f"its program as exported fails otherwise ({got}; the case: "
                                    f"{failure.signature} in phase {failure.phase})",
                                    "nothing can be reduced on this backend")

    def _test(self, graph, candidates, failure: Failure, folders) -> list[bool | None]:
        """Run a batch of candidates at once: does each keep the failure (None: it is no program)?"""
        from harness.reduce.search import run_batch

        written = [graph.write(kept, next(folders)) for kept in candidates]
        failures = run_batch(self.workers.executor, self.pools, self._candidate_failure, written)
        if self.setting.verbose:
            for kept, got in zip(candidates, failures):
                self.log(f"  candidate of {graph.describe(kept)}: "
                         f"{'no output' if got is None else got.signature if got else 'passes'}")
        return [failure.kept_by(f) if f else f for f in failures]

    def _graph(self):
        """The family's graph of the case's program, built here as a worker would build it."""
        path = self.family.graph_cutter()
        if path is None:
            raise HarnessInputError(f"family {self.family.name}", "does not say how its programs are cut",
                                    "reduce a case of a family with a graph (Family.graph)")
        os.environ.update(self.env)
        from harness.families.interface import load_builder
        from harness.reduce import NotReducible

        built = load_builder(self.family.worker_request(self.case.params))(self.case)
        try:
            graph = load_object(path)(built, dict(self.case.params))   # imports torch or onnx, in this process only
            self.candidates = self.setting.families[graph.family]
            return graph
        except NotReducible as e:
            raise HarnessInputError(self.case.id, f"cannot be reduced: {e}") from None
        except Exception as e:  # noqa: BLE001 - the exporter's error, in one line
            raise HarnessInputError(self.case.id, f"its program does not export here "
                                    f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None

    def _candidate(self, params: dict) -> Case:
        if self.candidates.name == REDUCED_FAMILY:   # the original's reductions, for the outputs it keeps
            reductions = self.family.reduction_sizes(self.case.params)
            params = {**params, "reductions": {n: reductions[n] for n in params["output_names"] if n in reductions}}
        return self.candidates.case(self.name, params, timeout=self.timeout)

    @property
    def name(self) -> str:
        """The reduced case's name, as case.yaml's entry gives it (a cases file's cases are cases_file/...)."""
        return "cases_file/" + re.sub(r"[^A-Za-z0-9_.\-]", "_", self.case.id)

    def _candidate_failure(self, pool: WorkerPool, params: dict | None) -> Failure | bool | None:
        """The candidate's failure; False when it passes, None when it is no program."""
        if params is None:
            return None
        result = run_case(pool, self._candidate(params), self.candidates, self.setting.backend,
                          given_timeout=self.timeout)
        return Failure.of(result) or False

    def _write_result(self, graph, kept: frozenset, failure: Failure, search) -> dict:
        out = self.setting.out
        shutil.rmtree(out / "bundle", ignore_errors=True)   # an earlier reduction's, in the same folder
        for stale in [out / "constants.pt", *out.glob("input_*.npy"), *out.glob("output_*.npy")]:
            stale.unlink(missing_ok=True)
        params = graph.write(kept, out)
        relative = {**self._candidate(params).params}
        for key in self.candidates.path_params:   # case.yaml's paths, from its own folder
            value = relative[key]
            relative[key] = [os.path.relpath(v, out) for v in value] if isinstance(value, list) else \
                os.path.relpath(value, out)
        entry = {"family": self.candidates.name, "name": self.case.id, **relative}
        write_text_atomically(out / "case.yaml", f"# {self.case.id} on {self.setting.backend.name}, reduced: "
                              f"{failure.signature}\n" + yaml.safe_dump([entry], sort_keys=False))
        rerun = f"pytest --cases-file=case.yaml --backend={self.setting.backend.name}"
        final = self._rerun_with_bundle(params, rerun)
        if not failure.kept_by(final):
            self.log(f"warning: the reduced program failed the same way during the search, but its last run gave "
                     f"{final.signature if final else 'a pass'}: the failure is not deterministic")
        ops = graph.op_names(kept)
        result = {"case": self.case.id, "backend": self.setting.backend.name, "signature": failure.signature,
                  "phase": failure.phase, "reduced_signature": final and final.signature,
                  "original_ops": len(graph.op_names(frozenset(range(len(graph.units))))), "reduced_ops": len(ops),
                  "ops": ops, "steps": [dataclasses.asdict(s) for s in search.steps],
                  "candidates_run": search.candidates_run + 1,   # with the uncut program
                  "seconds": round(time.monotonic() - self.started, 1),
                  "program": graph.program_file, "rerun": f"cd {shlex.quote(str(out))} && {rerun}"}
        write_text_atomically(out / "reduce.json", json.dumps(result, indent=1) + "\n")
        self.log(f"{_ops(result['original_ops'])} -> {_ops(len(ops))} ({', '.join(ops)}) in {result['seconds']} s, "
                 f"{result['candidates_run']} candidates: {shown(out)}")
        return result

    def _rerun_with_bundle(self, params: dict, rerun: str) -> Failure | None:
        bundle = self.setting.out / "bundle"
        result = run_case(self.pools[0], self._candidate(params), self.candidates, self.setting.backend,
                          given_timeout=self.timeout, bundle=bundle)
        final = Failure.of(result)
        if bundle.is_dir():
            write_readme(bundle, {"case": f"{self.candidates.name}/{self.name}", "backend": self.setting.backend.name,
                                  "outcome": result.outcome.value, "phase": final and final.phase,
                                  "verdict": "failed" if final else "passed", "expected": "pass",
                                  "signature": final and final.signature, "message": result.message}, rerun)
        return final


def _ops(count: int) -> str:
    return f"{count} op{'s' * (count != 1)}"


# --------------------------------------------------------------------------- finding the case

def find_case(case_id: str, families: dict[str, Family], cases_file: Path | None, report: Path | None,
              cases_dirs: list[Path]) -> Case:
    source = cases_file or report
    if source is not None and not source.is_file():
        raise HarnessInputError(str(source), "no such file")
    if report is not None:   # the report's ids, its params
        from harness.reduce.all_failures import report_cases
        from harness.tools.rundiff import read_report

        cases = list(report_cases(read_report(report), families).values())
    elif cases_file is not None:
        cases = load_cases_file(cases_file, families)
    else:
        options = default_options(families)
        cases = [c for path in case_modules(cases_dirs) for c in load_case_module(path, options)]
        cases += [c for found in discover_all(families, options).cases.values() for c in found]
    for case in cases:
        if case.id == case_id:
            return case
    where = shown(source) if source else ", ".join(shown(d) for d in cases_dirs)
    close = difflib.get_close_matches(case_id, [c.id for c in cases], n=1)
    raise HarnessInputError(case_id, f"no such case in {where} ({len(cases)} cases)",
                            f"did you mean {close[0]}?" if close else "check the id (pytest --collect-only -q lists "
                            "them), or pass --cases-file or --report holding it")


def reduce_command(args: argparse.Namespace) -> int:
    families = load_families([], Path.cwd())
    if args.parallel < 1:
        raise HarnessInputError(f"-n {args.parallel}", "must be at least 1")
    if args.all is not None:
        from harness.reduce.all_failures import reduce_all

        return reduce_all(args, families)
    if args.case is None or args.backend is None:
        raise HarnessInputError("reduce", "needs a CASE and --backend=NAME (or --all REPORT)")
    case = find_case(args.case, families, args.cases_file, args.report, args.cases_dir or [Path("cases")])
    setting = Setting(select_backend(load_configs(args.configs_dir or [Path("configs")]), args.backend),
                      families, output_folder(args.out), args.parallel, args.case_timeout, args.verbose)
    reduction = Reduction(case, setting)
    try:
        result = reduction.run()
    finally:
        reduction.workers.close()
    if result is None:
        print(f"{case.id} passes on {args.backend}: nothing to reduce")
    return 0


def output_folder(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessInputError(str(path), f"cannot create the output folder ({e.strerror or e})") from None
    return path.resolve()


def add_reduce_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("reduce", help="the smallest program that fails as a case does (same signature)")
    sub.add_argument("case", nargs="?", help="the case id, e.g. module/conv_bn_relu")
    sub.add_argument("--backend", help="the backend it fails on")
    sub.add_argument("--cases-file", type=Path, help="the cases file that holds the case")
    sub.add_argument("--report", type=Path, help="a JSON report holding the case (its params are read there)")
    sub.add_argument("--all", type=Path, metavar="REPORT",
                     help="reduce every unexpected failure of this report, one per signature and backend")
    sub.add_argument("--out", type=Path, required=True, help="the folder for the reduced program(s)")
    sub.add_argument("-n", dest="parallel", type=int, default=1, help="candidates run at once (workers)")
    sub.add_argument("--case-timeout", type=float, help="seconds per candidate, in place of the backend's")
    sub.add_argument("-v", "--verbose", action="store_true", help="log every candidate's result")
    sub.add_argument("--cases-dir", type=Path, action="append", help="default: cases")
    sub.add_argument("--configs-dir", type=Path, action="append", help="default: configs")
    sub.set_defaults(run=reduce_command)
