"""One case on one backend through the worker pool: the one place that sets a case's timeout and
memory limit, used through harness.controller.workers by the pytest plugin's runner and every tool."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.case_data import Case
from harness.controller.pool import WorkerPool
from harness.expectations import Entry
from harness.project_files.configs import BackendConfig
from harness.protocol import BundleRequest, CaseResult, PerfRequest, RunRequest
from harness.settings import DEFAULT_MEMORY_LIMIT_MB

DEFAULT_TIMEOUT = 60.0


def case_timeout(case: Case, config: BackendConfig, entry: Entry | None = None,
                 given: float | None = None) -> float:
    """The expectation entry's timeout, else the case's, else the one `given` on the command line
    (--case-timeout), else the backend config's default, else DEFAULT_TIMEOUT: as pytest-timeout's
    --timeout beats its ini value, the user's word beats a config's default."""
    for value in (entry and entry.timeout, case.timeout, given, config.timeout):
        if value:
            return float(value)
    return DEFAULT_TIMEOUT


def run_case(pool: WorkerPool, case: Case, family: Any, config: BackendConfig, *, entry: Entry | None = None,
             given_timeout: float | None = None, memory_limit_mb: float | None = DEFAULT_MEMORY_LIMIT_MB,
             bundle: Path | None = None, rerun: str = "", perf: PerfRequest | None = None) -> CaseResult:
    """Run the case in a worker; a crash, hang or memory overrun comes back as a CaseResult too.
    `family`: the case's harness.families.interface.Family. The config's memory_limit_mb wins over
    `memory_limit_mb` (--memory-limit). With `perf`, a pass is timed: the timeout grows by twice
    the timing budget (a case times at most its budget plus one slow pair of calls)."""
    request = RunRequest(case=case.to_json(), backend=config.to_json(),
                         family=family.worker_request(case.params),
                         bundle=BundleRequest(str(bundle), rerun) if bundle is not None else None, perf=perf)
    timing = 2 * perf.budget_s if perf and perf.timed else 0.0
    return pool.run(request, case_timeout(case, config, entry, given_timeout) + timing,
                    config.memory_limit_mb or memory_limit_mb)
