"""The one way every entry point builds the workers that run a project's cases: pytest's run, a
reduction, a bisection's probe and a fuzz run all call `case_workers` with the project, the
backends and their role.

The workers start in the project's rootdir (on their import path: a backend class in a local
module) with the families' environment (Family.worker_env), create the backends up front and use
the stage cache the settings name (both in the protocol's Start message). A
case runs on them with its timeout (harness.controller.run_case.case_timeout: the expectation
entry's first) and the memory limit of the backend's config or the settings. A Role says only what
follows from what the workers are for.
"""
from __future__ import annotations

import enum
import os
from pathlib import Path

from harness.case_data import Case
from harness.controller.pool import WorkerPool
from harness.controller.run_case import case_timeout, run_case
from harness.expectations import Entry
from harness.families.loader import worker_env
from harness.helper_process import THIS_PYTHON, Interpreter
from harness.project import Project
from harness.project_files.configs import BackendConfig
from harness.protocol import CacheSettings, CaseResult, PerfRequest


class Role(enum.Enum):
    """What the workers are for."""

    RUN = "run"         # pytest's cases
    REDUCE = "reduce"   # a reduction's candidates
    BISECT = "bisect"   # one probe of a version, in that version's Python
    FUZZ = "fuzz"       # generated configurations
    ISOLATE = "isolate"   # a mismatching case's ops, cut out and run alone (python -m harness isolate)

    @property
    def recycles(self) -> bool:
        """Whether a worker is replaced after --recycle-after cases or past --recycle-rss: a
        bisection's pool runs one case, and a replacement would only start two more workers."""
        return self is not Role.BISECT


def worker_environment(project: Project) -> dict[str, str]:
    """What every worker's environment adds: the families' variables, and with --perf the OpenMP
    threads of --perf-threads (not a share of the cores)."""
    settings = project.settings
    threads = {"OMP_NUM_THREADS": str(settings.perf_threads)} if settings.perf else {}
    return {**worker_env(project.families), **threads}


class CaseWorkers:
    """A pool of workers and how a project's case runs on it."""

    def __init__(self, project: Project, pool: WorkerPool):
        self.project, self.pool = project, pool

    def entry(self, case: Case, config: BackendConfig) -> Entry | None:
        """The case's expectation entry on the backend (the project's expectation files)."""
        return self.project.expectations(config.name).lookup(case.id)

    def timeout(self, case: Case, config: BackendConfig) -> float:
        return case_timeout(case, config, self.entry(case, config), self.project.settings.case_timeout)

    def run(self, case: Case, config: BackendConfig, *, bundle: Path | None = None, rerun: str = "",
            perf: PerfRequest | None = None) -> CaseResult:
        """Run the case in a worker; a crash, hang or memory overrun comes back as a CaseResult too."""
        settings = self.project.settings
        return run_case(self.pool, case, self.project.families[case.family], config, entry=self.entry(case, config),
                        given_timeout=settings.case_timeout, memory_limit_mb=settings.memory_limit_mb,
                        bundle=bundle, rerun=rerun, perf=perf)

    def close(self) -> None:
        self.pool.close()


def case_workers(project: Project, backends: list[BackendConfig], role: Role,
                 interpreter: Interpreter | None = None, run: str | None = None) -> CaseWorkers:
    """Workers for `role` that create `backends` before they say ready; `interpreter`: the Python
    they run (a bisection's probed version), this one by default; `run`: the id of the xdist run
    this process is a worker of, whose pools share a fork server. No worker starts until asked."""
    settings = project.settings
    recycle_after, recycle_rss = (settings.recycle_after, settings.recycle_rss) if role.recycles else (None, None)
    cache = CacheSettings(settings.cache, str(settings.cache_dir), settings.cache_size)
    pool = WorkerPool(settings.rootdir, recycle_after, recycle_rss, preload=[config.to_json() for config in backends],
                      env=worker_environment(project), interpreter=interpreter or THIS_PYTHON, cache=cache,
                      warm=settings.warm_server == "on" or (settings.warm_server == "auto" and os.isatty(1)),
                      run=run)
    return CaseWorkers(project, pool)
