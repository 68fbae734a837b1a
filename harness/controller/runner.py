"""Per-process harness state: configs, cases, expectations and the worker pool.

The pytest plugin asks the Runner to run one (case, backend) pair and gets a Record back.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import os
import shutil
import time
from pathlib import Path
from typing import Callable

from harness import native_stacks
from harness.bundle_layout import bundle_path
from harness.case_data import Case
from harness.controller.bundles import write_readme
from harness.controller.pool import WorkerPool
from harness.controller.signature import signature
from harness.controller.workers import CaseWorkers, Role, case_workers
from harness.files import display_path
from harness.installation.executables import torch_mlir_opt
from harness.installation.packages import locate
from harness.ops.claims import claimed
from harness.outcomes import Expected, Outcome, decide
from harness.perf.rounds import is_timed
from harness.perf.rounds import merge as merge_rounds
from harness.program_kinds import PROGRAM_KINDS
from harness.project import Project
from harness.project_files.configs import BackendConfig, backend_problem
from harness.protocol import CaseResult, PerfRequest
from harness.record import Attempt, Record
from harness.rerun import Place


class Runner:
    def __init__(self, project: Project, start_worker: bool = False, place: Place | None = None,
                 xdist_run: str | None = None):
        """start_worker: start the first worker as soon as the backends are known, so that it imports
        torch and the backends while this process loads cases and expectations and pytest collects.
        place: where the run happened, for the rerun commands (default: the rootdir alone).
        xdist_run: the id of the xdist run this process is a worker of (its workers' pools share a
        fork server)."""
        self.project, self.settings, self.xdist_run = project, project.settings, xdist_run
        self.place = place or Place(project.settings.rootdir)
        self._workers: CaseWorkers | None = None
        self.families = project.families
        self.configs = {name: project.config(name) for name in self.settings.backends}
        if start_worker:
            self.workers.pool.start()
        try:
            self.expectations = {name: project.expectations(name) for name in self.configs}
        except BaseException:  # a bad cases or expectations file: the worker must not outlive the error
            self.close()
            raise
        self.module_cases, self.discovered = project.module_cases, project.discovered

    @property
    def known_ids(self) -> list[str]:
        """Every case id entries may name: asked for only when needed (a family may list a whole database for it)."""
        return self.project.known_ids

    @property
    def conditions(self) -> dict[str, str | None]:
        return self.project.conditions

    @property
    def versions(self) -> dict[str, str]:
        return self.project.versions

    def expectation_files(self, backend: str) -> tuple[Path, Path]:
        return self.project.expectation_files(backend)

    @property
    def all_cases(self) -> list[Case]:
        return self.project.cases

    def run(self, case: Case, backend: str, nodeid: str) -> Record:
        config = self.configs[backend]
        entry = self.workers.entry(case, config)
        expected = entry.kind if entry else Expected.PASS
        rerun = self.place.case(backend, nodeid, expected)
        bundle = None
        started = time.monotonic()
        if entry is not None and expected is Expected.CRASH and not self.settings.run_crash_set:
            result = CaseResult(Outcome.NOT_RUN, None, f"in the crash set ({entry.source}): {entry.reason}; "
                                                       "run it with --run-crash-set")
        else:
            if self.settings.artifacts_dir is not None:
                bundle = bundle_path(self.settings.artifacts_dir, backend, case.id)
            result = self._attempt(case, config, bundle, rerun, timed=expected is Expected.PASS)
            if self.settings.perf_rounds > 1 and is_timed(result.findings.perf):
                rounds = self._timed_rounds(case, config, result.findings.perf, rerun)
                result = dataclasses.replace(result, findings=dataclasses.replace(result.findings, perf=rounds))
        result = claimed(result, config)
        phase = result.phase and result.phase.value
        judged = functools.partial(decide, result.outcome, expected, result.phase, entry.phase if entry else None,
                                   nondeterministic=bool(entry and entry.nondeterministic))
        attempts = self._reruns(case, config, result, rerun) if judged().is_unexpected else []
        flaky = len({a.outcome for a in attempts}) > 1
        verdict = judged(reruns_disagree=flaky, flaky_ok=self.settings.flaky_ok)
        record = Record(case=case.id, backend=backend, nodeid=nodeid, params=dict(case.params),
                        tags=list(case.tags), outcome=result.outcome, phase=result.phase, expected=expected,
                        verdict=verdict, duration_s=round(time.monotonic() - started, 3),
                        message=result.message, expectation_source=entry.source if entry else None,
                        expected_phase=entry.phase if entry else None, findings=result.findings,
                        signature=signature(result.outcome.value, phase, result.message, result.frame),
                        backend_versions=result.versions or {},
                        subject=self.families[case.family].subject(case.params), attempts=attempts, flaky=flaky,
                        rerun_command=rerun)
        if bundle is not None:
            self._keep_or_drop(bundle, record, rerun)
        return record

    def _attempt(self, case: Case, config: BackendConfig, bundle: Path | None, rerun: str,
                 timed: bool = False) -> CaseResult:
        """One run of the case; with --perf, its threads are fixed, and a pass is timed when `timed`
        (a case expected to pass)."""
        s = self.settings
        perf = PerfRequest(s.perf_threads, s.perf_budget_s, s.perf_target, timed) if s.perf else None
        return self.workers.run(case, config, bundle=bundle, rerun=rerun, perf=perf)

    def _timed_rounds(self, case: Case, config: BackendConfig, first: dict, rerun: str) -> dict:
        """--perf-rounds: the first round's figures, and each further round's from a worker that has
        run no case (harness.perf.rounds). A round whose case fails or is not timed is left out."""
        rounds = [first]
        for _ in range(self.settings.perf_rounds - 1):
            self.pool.fresh_worker()
            again = self._attempt(case, config, None, rerun, timed=True)
            if again.outcome is Outcome.PASSED and is_timed(again.findings.perf):
                rounds.append(again.findings.perf)
        return merge_rounds(rounds, self.settings.perf_rounds)

    def _reruns(self, case: Case, config: BackendConfig, first: CaseResult, rerun: str) -> list[Attempt]:
        """Every attempt of an unexpected result (the first, then up to --rerun-failures more, until
        one's outcome differs), each rerun in a worker that has run no case: a pass in the process
        that failed would prove little. An unexpected pass is rerun too: a failure on a rerun
        makes the case flaky, not fixed."""
        if not self.settings.rerun_failures:
            return []
        attempts = [_attempt_of(first)]
        for _ in range(self.settings.rerun_failures):
            self.pool.fresh_worker()
            started = time.monotonic()
            again = self._attempt(case, config, None, rerun)   # the first attempt's bundle stays
            attempts.append(_attempt_of(again, time.monotonic() - started))
            if again.outcome is not first.outcome:
                break
        return attempts

    def _keep_or_drop(self, bundle: Path, record: Record, rerun: str) -> None:
        """Keep an unexpected result's bundle (every bundle with --artifacts=all), with its README."""
        keep = self.settings.artifacts_all or record.verdict.is_unexpected
        if not keep or not bundle.is_dir():
            shutil.rmtree(bundle, ignore_errors=True)
            return
        write_readme(bundle, record.to_json(), rerun, self.place.rootdir)
        record.artifacts = display_path(bundle)

    def timeout(self, case: Case, backend: str) -> float:
        """The case's timeout on the backend (harness.controller.run_case.case_timeout)."""
        return self.workers.timeout(case, self.configs[backend])

    @property
    def most_attempts(self) -> int:
        """The most runs one case may take: a timed pass's rounds, or a failure and its reruns."""
        return max(self.settings.perf_rounds if self.settings.perf else 1, 1 + self.settings.rerun_failures)

    @property
    def workers(self) -> CaseWorkers:
        """The run's workers (harness.controller.workers); none starts until a case or `start_worker`
        asks."""
        if self._workers is None:
            self._workers = case_workers(self.project, list(self.configs.values()), Role.RUN, run=self.xdist_run)
        return self._workers

    @property
    def pool(self) -> WorkerPool:
        return self.workers.pool

    def backend_environment(self) -> dict:
        """Per selected backend: its config file, the versions of what it requires and where each is
        imported from, its expectation files."""
        return {name: {"config": display_path(c.source), **_required_packages(c),
                       "xfail_file": display_path(self.expectation_files(name)[0]),
                       "crash_set_file": display_path(self.expectation_files(name)[1])}
                for name, c in self.configs.items()}

    def backends_for(self, case: Case) -> list[str]:
        """The selected backends that take the case's kind of program (a front-end connects them)."""
        kind = self.families[case.family].kind(case.params)
        return [name for name, config in self.configs.items() if config.takes(kind)]

    def uncollected(self, touched: Callable[[str], bool] = lambda family: True) -> list[str]:
        """One line per (family, backend) whose cases are not collected: no front-end connects them
        (`touched`: the families the run's selection touches; the others are not its concern)."""
        counts = collections.Counter((case.family, kind, name) for case in self.project.cases_where(touched)
                                     if (kind := self.families[case.family].kind(case.params))
                                     for name, config in self.configs.items() if not config.takes(kind))
        return [_uncollected_line(n, family, kind, backend, self.configs[backend].takes_only())
                for (family, kind, backend), n in counts.items()]

    def perf_contention(self, processes: int) -> str | None:
        """A warning when --perf's workers, each with --perf-threads threads, need more cores than there are."""
        cores, threads = os.cpu_count() or 1, self.settings.perf_threads
        if not self.settings.perf or processes * threads <= cores:
            return None
        return (f"--perf: {processes} workers x {threads} thread{'s' * (threads > 1)} on {cores} cores: timing "
                f"under contention is noise; run with -n {max(1, cores // threads)} or fewer")

    def notices(self, processes: int = 1, touched: Callable[[str], bool] = lambda family: True) -> list[str]:
        """What this run cannot do or decided for the user, one line each, for the run's summary
        (`processes`: pytest-xdist's, 1 without it; `touched`: whether the run's selection touches a
        family). A line about a family, one not installed or not taken by a backend, is said when
        the run touches it or its expectation files name it, not to every run of the project."""
        named = {e.missing_family for x in self.expectations.values() for e in x.entries if e.missing_family}
        notes = [n for name, found in self.project.discoveries.items() if touched(name) or name in named
                 for n in found.notices]
        notes += self.uncollected(touched)
        notes += [n for name, lines in self.project.case_notices.items() if touched(name) for n in lines]
        notes += filter(None, [self.perf_contention(processes)])
        notes += [line for expectations in self.expectations.values()
                  for line in expectations.not_installed_lines(self.discovered.missing)]
        if native_stacks.PY_SPY is None:
            notes.append("native stacks unavailable: py-spy not found beside this Python or on PATH "
                         "(pip install py-spy); hangs and crashes are reported without their native frame")
        if (self.settings.artifacts_dir and any("torch-mlir" in c.requires for c in self.configs.values())
                and torch_mlir_opt() is None):
            notes.append("repro bundles: torch-mlir-opt not found beside torch_mlir or on PATH; "
                         "stages.txt lists the pass pipelines without a command")
        unread = [e for expectations in self.expectations.values() for e in expectations.entries if e.unread]
        if unread:
            names = sorted({n for e in unread for n in e.unread})
            lines: dict[str, list[str]] = {}
            for entry in unread:
                path, _, line = entry.source.rpartition(":")
                lines.setdefault(path, []).append(line)
            where = "; ".join(f"{path} line{'s' * (len(ls) > 1)} {', '.join(ls)}" for path, ls in lines.items())
            notes.append(f"when: {'; '.join(f'{n} is {self.conditions[n]}' for n in names)}: an unknown version "
                         f"satisfies no condition, so {len(unread)} entries do not apply ({where}); state it "
                         f"with --assume-version {names[0]}=VERSION")
        return notes

    def check_backends(self) -> None:
        """Before the first case: a selected backend the first worker could not create (its class
        does not import, takes no such option, raises) as one error line (HarnessInputError)."""
        if self._workers is not None:
            for name, problem in self._workers.pool.preload_problems().items():
                raise backend_problem(self.configs[name], problem)

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()


def _uncollected_line(count: int, family: str, kind: str, backend: str, takes: str) -> str:
    """`N <family> cases not collected for B: it takes PyTorch programs only`; for a form of a kind
    the backend's list names (a training step of a PyTorch program), `..., not PyTorch training steps`."""
    cases = f"{count:,} {family} case{'s' * (count != 1)}"
    program = PROGRAM_KINDS[kind]
    form = f", not {program.description}" if program.variant_of else ""
    return f"{cases} not collected for {backend}: it takes {takes}{form}"


def _required_packages(config: BackendConfig) -> dict:
    """The versions of what a config requires, and the folder each is imported from."""
    found = {d: locate(d, config.module_of(d)) for d in config.requires}
    return {"versions": {d: p and p.version_text for d, p in found.items()},
            "imported_from": {d: p and p.path for d, p in found.items()}}


def _attempt_of(result: CaseResult, seconds: float | None = None) -> Attempt:
    phase = result.phase and result.phase.value
    if seconds is None:
        seconds = sum(result.findings.phase_durations.values())
    return Attempt(outcome=result.outcome, phase=result.phase,
                   signature=signature(result.outcome.value, phase, result.message, result.frame),
                   duration_s=round(seconds, 3))
