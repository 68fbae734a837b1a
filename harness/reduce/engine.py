"""The reduction of one case on one backend: the smallest program that fails as the case fails
(`python -m harness reduce`, harness.reduce.command).

It runs the case, takes its signature, and cuts the case's program (the family's graph: for a
PyTorch program its exported FX graph, harness.reduce.torch_graph) with delta debugging
(harness.reduce.search). A candidate counts as failing only when it fails in the same phase with
the same signature; every candidate is a case of the `reduced` family run in a harness worker
with the case's timeout, so a crash or a hang is a candidate's outcome. This process imports
torch (to cut the graph); the compilers run only in the workers.

DIR gets model.py (the reduced program), inputs.pt (and constants.pt for large constants),
case.yaml, bundle/ (the reduced case's repro bundle with each stage's IR) and reduce.json, whose
`rerun` runs case.yaml alone as printed, from any folder: in the project, with its ini and configs
(harness.rerun.Place.cases_file).
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Literal, TextIO

import yaml

from harness.backend_interface import load_object
from harness.case_data import Case
from harness.controller.bundles import write_readme
from harness.controller.signature import Failure
from harness.controller.workers import CaseWorkers, Role, case_workers, worker_environment
from harness.errors import HarnessInputError
from harness.files import display_path, write_text_atomically
from harness.outcomes import Expected, Phase, decide
from harness.program_kinds import PROGRAM_KINDS
from harness.project import Project
from harness.project_files.configs import BackendConfig
from harness.project_files.ini import ini_file
from harness.rerun import Place


class Workers:
    """The project's workers for one backend (harness.controller.workers), one pool per candidate run
    at once, and the threads that drive them. The threads live as long as the pools: a worker dies
    with the thread that started it (its parent-death signal)."""

    def __init__(self, project: Project, backend: BackendConfig, count: int):
        self.pools = [case_workers(project, [backend], Role.REDUCE) for _ in range(count)]
        self.executor = ThreadPoolExecutor(max_workers=count)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()
        self.executor.shutdown()


class Reduction:
    """One case's reduction on one backend, on `workers` (made for it when not given)."""

    def __init__(self, case: Case, project: Project, backend: BackendConfig, out: Path, parallel: int = 1,
                 verbose: bool = False, log: TextIO = sys.stderr, workers: Workers | None = None,
                 place: Place | None = None):
        """verbose: log every candidate's result; workers: pools of an earlier reduction on `backend`;
        place: the project, for the rerun command (default: its rootdir and ini, no typed flags)."""
        self.case, self.backend, self.out, self.verbose, self.log_stream = case, backend, out, verbose, log
        root = project.settings.rootdir
        self.place = place or Place(root, ini_file(root))
        self.project, self.families = project, project.families
        self.family = self.families[case.family]
        self.workers = workers or Workers(project, backend, parallel)
        self.pools = self.workers.pools
        self.timeout = self.pools[0].timeout(case, backend)   # the candidates' too: the expectation entry's first
        self.started = time.monotonic()

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=self.log_stream, flush=True)

    def run(self) -> dict | None:
        """reduce.json's content, or None when the case does not fail (nothing to reduce)."""
        failure = self._original_failure()
        if failure is None:
            return None
        graph = self._graph()
        from harness.reduce.search import DeltaDebugger

        with tempfile.TemporaryDirectory(prefix="candidates-", dir=self.out) as scratch:
            folders = (Path(scratch) / str(n) for n in itertools.count())
            self._check_whole(graph, failure, next(folders))
            search = DeltaDebugger(len(graph.units), lambda candidates: self._test(graph, candidates, failure, folders),
                                   len(self.pools), self.log)
            kept = search.reduce()
        return self._write_result(graph, kept, failure, search)

    def _original_failure(self) -> Failure | None:
        failure = Failure.of(self.pools[0].run(self.case, self.backend))
        if failure is not None:
            self.log(f"{self.case.id} fails on {self.backend.name}: {failure.signature} "
                     f"(phase {failure.phase})")
        if failure is not None and failure.signature.startswith("mismatch:"):
            self.log(f"a mismatch: {self._isolate_command()} names the ops whose own results are off, "
                     "often faster; reducing, each cut program judged by the case family's rule")
        if failure is not None and failure.phase in (Phase.SETUP.value, Phase.EXPORT.value):
            raise HarnessInputError(self.case.id, f"fails before there is a graph to cut ({failure.signature} in "
                                    f"phase {failure.phase})", "only a failure after export can be reduced")
        return failure

    def _check_whole(self, graph, failure: Failure, folder: Path) -> None:
        """The exported program, uncut, must fail as the case does (or nothing it is cut to can)."""
        whole = self._candidate_failure(self.pools[0], graph.write(frozenset(range(len(graph.units))), folder))
        if not failure.kept_by(whole or None):   # False (it passes) is no failure
            got = f"{whole.signature} in phase {whole.phase}" if whole else "it passes"
            raise HarnessInputError(self.case.id, f"its program as exported fails otherwise ({got}; the case: "
                                    f"{failure.signature} in phase {failure.phase})",
                                    f"try {self._isolate_command()}" if failure.signature.startswith("mismatch:")
                                    else "nothing can be reduced on this backend")

    def _isolate_command(self) -> str:
        return f"python -m harness isolate {self.case.id} --backend {self.backend.name}"

    def _test(self, graph, candidates, failure: Failure, folders) -> list[bool | None]:
        """Run a batch of candidates at once: does each keep the failure (None: it is no program)?"""
        from harness.reduce.search import run_batch

        written = [graph.write(kept, next(folders)) for kept in candidates]
        failures = run_batch(self.workers.executor, self.pools, self._candidate_failure, written)
        if self.verbose:
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
        os.environ.update(worker_environment(self.project))
        from harness.families.interface import load_builder
        from harness.reduce import NotReducible

        built = load_builder(self.family.worker_request(self.case.params))(self.case)
        try:
            graph = load_object(path)(built, dict(self.case.params))   # imports torch or onnx, in this process only
            self.candidates = self.families[graph.family]
            return graph
        except NotReducible as e:
            raise HarnessInputError(self.case.id, f"cannot be reduced: {e}") from None
        except Exception as e:  # noqa: BLE001 - the exporter's error, in one line
            raise HarnessInputError(self.case.id, f"its program does not export here "
                                    f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})") from None

    def _candidate(self, params: dict) -> Case:
        # PyTorch programs are compared with their outputs' reduction lengths: the original's, for the outputs it keeps
        if PROGRAM_KINDS[self.candidates.program].pytorch:
            reductions = self.family.reduction_sizes(self.case.params)
            params = {**params, "reductions": {n: reductions[n] for n in params["output_names"] if n in reductions}}
        return self.candidates.case(self.name, params, timeout=self.timeout)

    @property
    def name(self) -> str:
        """The reduced case's name, as case.yaml's entry gives it (a cases file's cases are cases_file/...)."""
        return "cases_file/" + re.sub(r"[^A-Za-z0-9_.\-]", "_", self.case.id)

    def _candidate_failure(self, pool: CaseWorkers, params: dict | None) -> Failure | Literal[False] | None:
        """The candidate's failure; False when it passes, None when it is no program."""
        if params is None:
            return None
        result = pool.run(self._candidate(params), self.backend)
        return Failure.of(result) or False

    def _write_result(self, graph, kept: frozenset, failure: Failure, search) -> dict:
        out = self.out
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
        write_text_atomically(out / "case.yaml", f"# {self.case.id} on {self.backend.name}, reduced: "
                              f"{failure.signature}\n" + yaml.safe_dump([entry], sort_keys=False))
        rerun = self._rerun_command(out / "case.yaml")
        final = self._rerun_with_bundle(params, rerun)
        if not failure.kept_by(final):
            self.log(f"warning: the reduced program failed the same way during the search, but its last run gave "
                     f"{final.signature if final else 'a pass'}: the failure is not deterministic")
        ops = graph.op_names(kept)
        result = {"case": self.case.id, "backend": self.backend.name, "signature": failure.signature,
                  "phase": failure.phase, "reduced_signature": final and final.signature,
                  "original_ops": len(graph.op_names(frozenset(range(len(graph.units))))), "reduced_ops": len(ops),
                  "ops": ops, "steps": [dataclasses.asdict(s) for s in search.steps],
                  "candidates_run": search.candidates_run + 1,   # with the uncut program
                  "seconds": round(time.monotonic() - self.started, 1),
                  "program": graph.program_file, "rerun": rerun}
        write_text_atomically(out / "reduce.json", json.dumps(result, indent=1) + "\n")
        self.log(f"{_ops(result['original_ops'])} -> {_ops(len(ops))} ({', '.join(ops)}) in {result['seconds']} s, "
                 f"{result['candidates_run']} candidates: {display_path(out)}")
        self.log(f"rerun: {rerun}")
        return result

    def _rerun_command(self, case_file: Path) -> str:
        """The command that runs case.yaml's case in the project: the project as it loads with that
        cases file says under which file the case is collected (a case module it joins, or itself)."""
        case_id = f"{self.candidates.name}/{self.name}"
        with_file = Project(dataclasses.replace(self.project.settings, cases_files=[case_file]))
        homes = [path for path, cases in with_file.module_cases.items() if any(c.id == case_id for c in cases)]
        return self.place.cases_file(self.backend.name, case_file, homes[0] if homes else case_file, case_id)

    def _rerun_with_bundle(self, params: dict, rerun: str) -> Failure | None:
        bundle = self.out / "bundle"
        result = self.pools[0].run(self._candidate(params), self.backend, bundle=bundle,
                                   rerun=rerun)   # repro.py's command too
        final = Failure.of(result)
        if bundle.is_dir():
            write_readme(bundle, {"case": f"{self.candidates.name}/{self.name}", "backend": self.backend.name,
                                  "outcome": result.outcome.value, "phase": final and final.phase,
                                  "verdict": decide(result.outcome, Expected.PASS, result.phase, None).value,
                                  "expected": Expected.PASS.value,
                                  "signature": final and final.signature, "message": result.message}, rerun,
                         self.place.rootdir)
        return final


def _ops(count: int) -> str:
    return f"{count} op{'s' * (count != 1)}"


def output_folder(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessInputError(str(path), f"cannot create the output folder ({e.strerror or e})") from None
    return path.resolve()
