"""The isolation of one mismatching case on one backend, op by op (`python -m harness isolate`,
harness.isolate.command). Controller side: it imports no torch.

1. The case runs once as pytest runs it: it must fail as a mismatch.
2. The reference process of the program's kind (ProgramKind.reference_process: harness.isolate.reference
   for PyTorch programs, harness.isolate.reference_onnx for ONNX models), a process of its own with
   a timeout, builds the case, runs it at float64 and at the case's dtype keeping every value, and
   writes one one-op program per candidate op, fed the float64 reference values of its arguments.
3. The ops go to the backend as cases of the family that isolates that kind's ops (Family.isolates)
   on the harness's workers (harness.controller.workers, Role.ISOLATE): the backend's `compile`
   and `run` as for any case, the case's timeout, a crash or hang a result like any other. All
   ops go in one program, one compile; a batch that fails to compile or run is split in halves,
   down to the op that fails alone, reported as that op's failure. A backend that cannot run the
   first op alone makes the case not isolatable.
4. An op the family's rule fails (the ratio to eager's own error, or the tolerance), whose error
   is larger than eager's own, is a culprit; culprits rank by that ratio. The first of each aten
   op gets a repro bundle.
   With none, harness.isolate.prefix cuts the program at the first prefix whose results diverge.
"""
from __future__ import annotations

import math
import re
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import TextIO

from harness.bundle_layout import bundle_path
from harness.case_data import Case
from harness.controller.bundles import write_readme
from harness.controller.run_case import run_case
from harness.controller.workers import CaseWorkers, Role, case_workers, worker_environment
from harness.errors import HarnessInputError
from harness.families.loader import serving_family
from harness.helper_process import ask_helper
from harness.installation.executables import python_command
from harness.isolate import failure_line
from harness.isolate.prefix import first_divergent_prefix
from harness.outcomes import Expected, Outcome, decide
from harness.program_kinds import PROGRAM_KINDS
from harness.project import Project
from harness.project_files.configs import BackendConfig
from harness.protocol import CaseResult

NOTES_KEY = "isolate"     # where the isolating family's golden puts its figures in a result's notes
BATCH_OPS = 256           # ops per program at most: one compile of a whole model's ops stays bounded
REFERENCE_TIMEOUT_TIMES = 4   # the reference process's timeout, in case timeouts (it builds and runs twice)
MOST_BUNDLES = 10         # distinct culprit ops that get a repro bundle, the most likely first
# What a culprit's errors are against, whose own error it is ranked by, and their measure: a PyTorch
# op's (RMS errors, eager's), unless the reference process says otherwise (an ONNX node's)
CULPRIT_DEFAULTS = {"against": "float64", "reference": "eager", "measure": "rms"}


class Isolation:
    """One case's isolation on one backend; `run` returns what the command prints as JSON."""

    def __init__(self, case: Case, project: Project, backend: BackendConfig, out: Path, log: TextIO = sys.stderr,
                 flags: tuple[str, ...] = (), workers: CaseWorkers | None = None):
        """flags: the project's settings as typed on the command line, for the rerun command.
        workers: a run's own (pytest --isolate), borrowed and left running; by default its own."""
        self.case, self.project, self.backend, self.out, self.log_stream = case, project, backend, out, log
        self.flags = flags
        self.family = project.families[case.family]
        self.started = time.monotonic()
        self.borrowed = workers
        self.workers = workers
        self.compiles = 0
        self.figures: dict[str, dict] = {}     # op node -> its figures, from a batch that ran
        self.failures: dict[str, str] = {}     # op node -> why the backend could not run it alone

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {message}", file=self.log_stream, flush=True)

    def run(self, mismatch: CaseResult | None = None) -> dict:
        """mismatch: the case's result, when a run has it already (else the case runs first)."""
        if not self.backend.takes(self.family.program):
            raise HarnessInputError(self.case.id, f"{self.backend.name} takes {self.backend.takes_only()}, not this "
                                    f"case's program (family {self.family.name})", "isolate it on a backend that does")
        self._reference_module()   # a kind of program nothing cuts ops out of fails before the case runs
        self.workers = self.borrowed or case_workers(self.project, [self.backend], Role.ISOLATE)
        try:
            self.timeout = self.workers.timeout(self.case, self.backend)
            self._check_mismatch(mismatch or self.workers.run(self.case, self.backend))
            reference = self._reference()
            ops = reference["ops"]
            self.ops_by_node = {op["node"]: op for op in ops}
            self.rule = {"ratio": reference["ratio"], "tolerance": reference["tolerance"]}
            self.log(f"{len(ops)} candidate ops; judging them on {self.backend.name}")
            self._judge_all(ops)
            culprits = self._culprits(ops)
            cut = None
            if not culprits and not self.failures:
                cut = first_divergent_prefix(self, ops)
            self._bundles(culprits)
        finally:
            if self.borrowed is None:
                self.workers.close()
        by_node = self.ops_by_node
        return {"case": self.case.id, "backend": self.backend.name, "culprits": culprits,
                "failed_ops": [{"op": by_node[n]["op"], "node": n, "module": by_node[n]["module"], "failure": why}
                               for n, why in self.failures.items()],
                "cut": cut, "ops": len(ops), "compiles": self.compiles,
                "seconds": round(time.monotonic() - self.started, 1)}

    # ---- 1. the case must fail as a mismatch

    def _check_mismatch(self, result: CaseResult) -> None:
        if result.outcome is Outcome.PASSED:
            raise HarnessInputError(self.case.id, f"passes on {self.backend.name}: nothing to isolate")
        if result.outcome is not Outcome.MISMATCH:
            raise HarnessInputError(self.case.id, f"fails on {self.backend.name} as {result.outcome.description} "
                                    f"in phase {result.phase.value if result.phase else '?'}, not as a mismatch: "
                                    "isolate finds wrong numbers", "python -m harness reduce finds where it fails")
        self.log(f"{self.case.id} mismatches on {self.backend.name}: {result.message.splitlines()[0]}")

    # ---- 2. the reference values, in a process of its own

    def _reference(self) -> dict:
        shutil.rmtree(self.out / "ops", ignore_errors=True)   # an earlier isolation's
        self.log("building the program and running it at float64 and at its dtype")
        reply = self._reference_process({})
        if not reply["ops"]:
            raise HarnessInputError(self.case.id, "not isolatable: its program has no op with floating results")
        return reply

    def write_prefix(self, node: str) -> dict:
        """The program up to this op, written as an op's folder (harness.isolate.prefix_program)."""
        return self._reference_process({"prefix": node})

    def _reference_module(self) -> str:
        """The module run as the reference process of the case's kind of program."""
        kind = PROGRAM_KINDS[self.family.program]
        if kind.reference_process is None:
            raise HarnessInputError(self.case.id, f"not isolatable: nothing cuts the ops out of {kind.description}")
        return kind.reference_process

    def _reference_process(self, extra: dict) -> dict:
        """harness.isolate.reference's reply to the request plus `extra`, run in a process of its own."""
        request = {"case": self.case.to_json(), "family": self.family.worker_request(self.case.params),
                   "out": str(self.out), **extra}
        reply = ask_helper(self._reference_module(), request, rootdir=self.project.settings.rootdir,
                           env=worker_environment(self.project), timeout=self.timeout * REFERENCE_TIMEOUT_TIMES,
                           what="building and running its program at float64 and at its dtype", where=self.case.id,
                           timeout_fix="raise the case's timeout")
        if "error" in reply:
            raise HarnessInputError(self.case.id, f"not isolatable: its program does not build and run here "
                                    f"({reply['error']})")
        return reply

    # ---- 3. the ops on the backend

    def run_isolated(self, ops: list[dict], bundle: Path | None = None, rerun: str = "") -> CaseResult:
        """One program of these ops on the backend, in a worker (a crash or hang is its result)."""
        params = {"ops": [op["folder"] for op in ops], "dtype": self.case.params["dtype"], **self.rule,
                  "reductions": {n: k for op in ops for n, k in op["reductions"].items()}}
        if params["tolerance"] is not None:
            params["tolerance"] = dict(zip(("rtol", "atol"), params["tolerance"]))
        first = re.sub(r"[^A-Za-z0-9_.-]+", "_", ops[0]["node"]).strip("_.") or "op"   # an ONNX node's /a/B
        name = f"{self.case.id}/{first}" + (f"-and-{len(ops) - 1}-more" if len(ops) > 1 else "")
        self.compiles += 1
        settings = self.project.settings
        family = serving_family("isolates", self.family.program)
        assert self.workers is not None, "run() started them"
        return run_case(self.workers.pool, family.case(name, params, timeout=self.timeout), family, self.backend,
                        given_timeout=settings.case_timeout, memory_limit_mb=settings.memory_limit_mb,
                        bundle=bundle, rerun=rerun)

    def _judge_all(self, ops: list[dict]) -> None:
        batches = [ops[i:i + BATCH_OPS] for i in range(0, len(ops), BATCH_OPS)]
        if not self._ran(batches[0], self.run_isolated(batches[0])):
            probe = self.run_isolated(ops[:1])
            if not self._ran(ops[:1], probe):
                raise HarnessInputError(self.case.id, f"not isolatable on {self.backend.name}: it cannot run a "
                                        f"one-op program ({ops[0]['op']}: {failure_line(probe)})")
            self._split(batches[0][1:])
        for batch in batches[1:]:
            self._judge(batch)

    def _judge(self, ops: list[dict]) -> None:
        if ops and not self._ran(ops, self.run_isolated(ops)):
            self._split(ops)

    def _split(self, ops: list[dict]) -> None:
        """A batch that did not run: each half again, down to the op that fails alone."""
        if len(ops) == 1:
            return
        half = len(ops) // 2
        self.log(f"a batch of {len(ops)} ops failed: trying {half} and {len(ops) - half}")
        self._judge(ops[:half])
        self._judge(ops[half:])

    def _ran(self, ops: list[dict], result: CaseResult) -> bool:
        """Record the batch's figures; False when it failed otherwise (a lone op's failure is recorded)."""
        notes = result.findings.notes.get(NOTES_KEY)
        if result.outcome in (Outcome.PASSED, Outcome.MISMATCH) and notes and notes["figures"]:
            for op in ops:
                self.figures[op["node"]] = _op_figures(op, notes)
            return True
        if len(ops) == 1:
            self.failures[ops[0]["node"]] = failure_line(result)
            self.log(f"{ops[0]['op']} ({ops[0]['node']}) fails alone: {failure_line(result)}")
        return False

    # ---- 4. the culprits

    def _culprits(self, ops: list[dict]) -> list[dict]:
        culprits = []
        for op in ops:
            figures = self.figures.get(op["node"])
            if figures and figures["off"] and figures["error"] > figures["eager_error"]:
                ratio = figures["error"] / figures["eager_error"] if figures["eager_error"] else math.inf
                culprits.append({"op": op["op"], "node": op["node"], "module": op["module"], "source": op["source"],
                                 "error": figures["error"], "eager_error": figures["eager_error"],
                                 "ratio": ratio, "shapes": op["shapes"], "dtypes": op["dtypes"],
                                 **{key: op.get(key, default) for key, default in CULPRIT_DEFAULTS.items()}})
        culprits.sort(key=lambda c: -c["ratio"])
        for culprit in culprits:   # JSON has no infinity: null where eager's error is 0 or a result has no error
            culprit.update({key: None for key in ("error", "ratio") if math.isinf(culprit[key])})
        return culprits

    def rerun_command(self) -> str:
        return (f"cd {shlex.quote(str(self.project.settings.rootdir))} && {python_command()} -m harness isolate "
                + shlex.join([self.case.id, f"--backend={self.backend.name}", *self.flags]))

    def _bundles(self, culprits: list[dict]) -> None:
        """A bundle for the most likely culprit of each aten op (its other instances share the
        lowering: "bundle" null), of the first MOST_BUNDLES ops: each bundle costs a compile."""
        bundled: set[str] = set()
        for culprit in culprits:
            first = culprit["op"] not in bundled and len(bundled) < MOST_BUNDLES
            culprit["bundle"] = self._bundle(culprit) if first else None
            bundled.add(culprit["op"])

    def _bundle(self, culprit: dict) -> str | None:
        """The culprit alone, rerun with a repro bundle: repro.py runs its op on its reference inputs."""
        path = bundle_path(self.out / "bundles", self.backend.name, culprit["node"])
        shutil.rmtree(path, ignore_errors=True)
        rerun = self.rerun_command()
        result = self.run_isolated([self.ops_by_node[culprit["node"]]], bundle=path, rerun=rerun)
        if not path.is_dir():
            return None
        write_readme(path, {"case": f"{self.case.id} ({culprit['op']}, node {culprit['node']}, alone)",
                            "backend": self.backend.name, "outcome": result.outcome.value,
                            "phase": result.phase and result.phase.value,
                            "verdict": decide(result.outcome, Expected.PASS, result.phase, None).value,
                            "expected": Expected.PASS.value, "message": result.message}, rerun,
                     self.project.settings.rootdir)
        return str(path)


def _op_figures(op: dict, notes: dict) -> dict:
    """The op's error, eager's, and whether the rule fails it: its worst result's."""
    figures = [notes["figures"].get(name) or {} for name in op["outputs"]]
    errors = [(f.get("error"), f.get("eager_error")) for f in figures]
    known = [(e, g) for e, g in errors if e is not None]
    error, eager_error = max(known, key=lambda pair: pair[0]) if known else (math.inf, 0.0)
    return {"error": error, "eager_error": eager_error, "off": any(n in notes["off"] for n in op["outputs"])}
