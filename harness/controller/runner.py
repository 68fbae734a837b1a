"""Per-process harness state: configs, cases, expectations and the worker pool.

The pytest plugin asks the Runner to run one (case, backend) pair and gets a Record back.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import platform
import shutil
import time
from pathlib import Path
from typing import Any, Mapping

from harness import native_stacks
from harness.bundle_layout import bundle_path
from harness.controller.bundles import write_readme
from harness.controller.pool import WorkerPool
from harness.controller.run_case import DEFAULT_MEMORY_LIMIT_MB, case_timeout, run_case
from harness.controller.signature import signature
from harness.errors import HarnessInputError
from harness.families.interface import Family
from harness.families.plugins import discover_all, worker_env
from harness.files import shown
from harness.inputs.configs import BackendConfig, load_configs, select_backend
from harness.inputs.expectations import Entry, Expectations, load_expectations
from harness.inputs.registry import case_module_ids, case_modules, check_unique, load_case_module, load_cases_file
from harness.installation.executables import torch_mlir_opt
from harness.installation.packages import locate, version_text
from harness.outcomes import Expected, Outcome, decide
from harness.protocol import CaseResult
from harness.record import Attempt, Record, repro_command
from harness.spec import Case


@dataclasses.dataclass
class Settings:
    rootdir: Path
    backends: list[str]
    cases_dirs: list[Path]
    configs_dirs: list[Path]
    xfail_dir: Path
    crash_sets_dir: Path
    cases_files: list[Path]
    run_crash_set: bool
    case_timeout: float | None
    artifacts_dir: Path | None = None   # repro bundles go here (--artifacts-dir)
    artifacts_all: bool = False         # bundles for every result, not only unexpected ones
    memory_limit_mb: float | None = DEFAULT_MEMORY_LIMIT_MB  # per worker, unless the config sets one
    recycle_after: int | None = None    # cases per worker before it is replaced
    recycle_rss_mb: float | None = None # resident MiB after a case beyond which the worker is replaced
    assumed_versions: dict[str, str] = dataclasses.field(default_factory=dict)  # --assume-version NAME=VERSION
    rerun_failures: int = 0             # reruns of an unexpected failure, each in a fresh worker
    flaky_ok: bool = False              # a case whose attempts disagreed does not fail the run
    # The families' options by dest name (harness.families.plugins.resolve): what case modules'
    # cases(options) and the families' discover(options) see.
    family_options: dict[str, Any] = dataclasses.field(default_factory=dict)


def expectation_conditions(configs: dict[str, BackendConfig], assumed: dict[str, str] | None = None,
                           installed: dict[str, str] | None = None) -> dict[str, str | None]:
    """What an expectation's `when:` may name, with its version: installed, 'unknown (source build
    at PATH)', or None (not there); `assumed` versions (--assume-version) replace them. `installed`:
    installed_versions(), when the caller already has them."""
    conditions = {**{d: version_text(d, c.module_of(d)) for c in configs.values() for d in c.requires},
                  **(installed if installed is not None else installed_versions())}
    for name, version in (assumed or {}).items():
        if name not in conditions:
            raise HarnessInputError(f"--assume-version={name}={version}", f"unknown name {name!r}",
                                    f"use one of {', '.join(sorted(conditions))}")
        conditions[name] = version
    return conditions


def installed_versions() -> dict[str, str]:
    """python, and torch, torch-mlir and numpy where they can be imported (version or 'unknown (...)')."""
    found = {dist: version_text(dist) for dist in ("torch", "torch-mlir", "numpy")}
    return {"python": platform.python_version(), **{d: v for d, v in found.items() if v}}


class Runner:
    def __init__(self, settings: Settings, families: Mapping[str, Family], start_worker: bool = False):
        """`families`: the run's family table (harness.families.plugins.load_families). start_worker:
        start the first worker as soon as the backends are known, so that it imports torch and the
        backends while this process loads cases and expectations and pytest collects."""
        self.settings = settings
        self.families = dict(families)
        self._pool: WorkerPool | None = None
        configs = load_configs(settings.configs_dirs)
        self.configs = {name: select_backend(configs, name) for name in settings.backends}
        if start_worker:
            self.pool.start()
        try:
            self._load(configs)
        except BaseException:  # a bad cases or expectations file: the worker must not outlive the error
            self.close()
            raise

    def _load(self, configs: dict[str, BackendConfig]) -> None:
        settings = self.settings
        self.versions = installed_versions()
        options = settings.family_options
        modules = case_modules(settings.cases_dirs)
        self.module_cases = {path: load_case_module(path, options) for path in modules}
        self.discovered = discover_all(self.families, options)   # cases from outside the case modules
        self.module_cases.update(self.discovered.cases)
        self._add_cases_files()
        check_unique(self.all_cases)
        # What expectation entries may name: every case of the modules, selected or not
        self.known_ids = sorted({i for path in modules for i in case_module_ids(path, options)}
                                | {c.id for c in self.all_cases})
        self.expectations = self._load_expectations(configs)

    def _add_cases_files(self) -> None:
        """--cases-file cases join the first case module of their family (collected with it), or,
        for a family no module declares (a module case in a bug report), the first case module;
        where there is none (a reduced case's folder), the cases file is collected itself."""
        homes: dict[str, list[Case]] = {}
        for cases in self.module_cases.values():
            for case in cases:
                homes.setdefault(case.family, cases)
        first = next(iter(self.module_cases.values()), None)
        for path in self.settings.cases_files:
            for case in load_cases_file(path, self.families):
                home = homes.get(case.family, first)
                if home is None:
                    home = self.module_cases.setdefault(Path(path).resolve(), [])
                home.append(case)

    def _load_expectations(self, all_configs: dict[str, BackendConfig]) -> dict[str, Expectations]:
        """Each selected backend's expectations, checked against every case id."""
        self.conditions = expectation_conditions(all_configs, self.settings.assumed_versions, self.versions)
        return {name: load_expectations(name, self.settings.xfail_dir, self.settings.crash_sets_dir,
                                        self.known_ids, self.conditions, self.discovered.missing)
                for name in self.configs}

    def expectation_files(self, backend: str) -> tuple[Path, Path]:
        return self.settings.xfail_dir / f"{backend}.yaml", self.settings.crash_sets_dir / f"{backend}.yaml"

    @property
    def all_cases(self) -> list[Case]:
        return [c for cases in self.module_cases.values() for c in cases]

    def run(self, case: Case, backend: str, nodeid: str) -> Record:
        config = self.configs[backend]
        entry = self.expectations[backend].lookup(case.id)
        expected = entry.kind if entry else Expected.PASS
        rerun = repro_command(backend, nodeid, expected)
        bundle = None
        started = time.monotonic()
        if expected is Expected.CRASH and not self.settings.run_crash_set:
            result = CaseResult(Outcome.NOT_RUN, None, f"in the crash set ({entry.source}): {entry.reason}; "
                                                       "run it with --run-crash-set")
        else:
            if self.settings.artifacts_dir is not None:
                bundle = bundle_path(self.settings.artifacts_dir, backend, case.id)
            result = self._attempt(case, config, entry, bundle, rerun)
        phase = result.phase and result.phase.value
        judged = functools.partial(decide, result.outcome, expected, result.phase, entry and entry.phase,
                                   nondeterministic=bool(entry and entry.nondeterministic))
        attempts = self._reruns(case, config, entry, result, rerun) if judged().is_unexpected else []
        flaky = len({a.outcome for a in attempts}) > 1
        verdict = judged(reruns_disagree=flaky, flaky_ok=self.settings.flaky_ok)
        record = Record(case=case.id, backend=backend, nodeid=nodeid, params=dict(case.params),
                        tags=list(case.tags), outcome=result.outcome, phase=result.phase, expected=expected,
                        verdict=verdict, duration_s=round(time.monotonic() - started, 3),
                        message=result.message, expectation_source=entry.source if entry else None,
                        phase_durations=result.durations, notes=result.notes,
                        signature=signature(result.outcome.value, phase, result.message, result.frame),
                        backend_versions=result.versions or {},
                        subject=self.families[case.family].subject(case.params), attempts=attempts, flaky=flaky)
        if bundle is not None:
            self._keep_or_drop(bundle, record, rerun)
        return record

    def _attempt(self, case: Case, config: BackendConfig, entry: Entry | None, bundle: Path | None,
                 rerun: str) -> CaseResult:
        return run_case(self.pool, case, self.families[case.family], config, entry=entry,
                        given_timeout=self.settings.case_timeout, memory_limit_mb=self.settings.memory_limit_mb,
                        bundle=bundle, rerun=rerun)

    def _reruns(self, case: Case, config: BackendConfig, entry: Entry | None, first: CaseResult,
                rerun: str) -> list[Attempt]:
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
            again = self._attempt(case, config, entry, None, rerun)   # the first attempt's bundle stays
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
        write_readme(bundle, record.to_json(), rerun)
        record.artifacts = shown(bundle)

    def timeout(self, case: Case, backend: str) -> float:
        """The case's timeout on the backend (harness.controller.run_case.case_timeout)."""
        return case_timeout(case, self.configs[backend], self.expectations[backend].lookup(case.id),
                            self.settings.case_timeout)

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:
            self._pool = WorkerPool(self.settings.rootdir, self.settings.recycle_after, self.settings.recycle_rss_mb,
                                    preload=[config.to_json() for config in self.configs.values()],
                                    env=worker_env(self.families))
        return self._pool

    def backend_environment(self) -> dict:
        """Per selected backend: its config file, the versions of what it requires and where each is
        imported from, its expectation files."""
        return {name: {"config": shown(c.source), **_required_packages(c),
                       "xfail_file": shown(self.expectation_files(name)[0]),
                       "crash_set_file": shown(self.expectation_files(name)[1])}
                for name, c in self.configs.items()}

    def backends_for(self, case: Case) -> list[str]:
        """The selected backends that take the case's kind of program (a front-end connects them)."""
        kind = self.families[case.family].program
        return [name for name, config in self.configs.items() if config.takes(kind)]

    def uncollected(self) -> list[str]:
        """One line per (family, backend) whose cases are not collected: no front-end connects them."""
        counts = collections.Counter((case.family, name) for case in self.all_cases for name, config in
                                     self.configs.items() if not config.takes(self.families[case.family].program))
        return [f"{n:,} {family} case{'s' * (n != 1)} not collected for {backend}: it takes "
                f"{self.configs[backend].takes_only()}" for (family, backend), n in counts.items()]

    def notices(self) -> list[str]:
        """What this run cannot do or decided for the user, one line each, for the run's summary."""
        notes = list(self.discovered.notices) + self.uncollected()
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

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


def _required_packages(config: BackendConfig) -> dict:
    """The versions of what a config requires, and the folder each is imported from."""
    found = {d: locate(d, config.module_of(d)) for d in config.requires}
    return {"versions": {d: p and p.version_text for d, p in found.items()},
            "imported_from": {d: p and p.path for d, p in found.items()}}


def _attempt_of(result: CaseResult, seconds: float | None = None) -> Attempt:
    phase = result.phase and result.phase.value
    return Attempt(outcome=result.outcome, phase=result.phase,
                   signature=signature(result.outcome.value, phase, result.message, result.frame),
                   duration_s=round(seconds if seconds is not None else sum(result.durations.values()), 3))
