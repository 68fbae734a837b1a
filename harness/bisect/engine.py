"""One bisection: probes a case at each version (or source build) in a worker of that version's
environment, and halves the range towards the first version with the bad failure
(`python -m harness bisect`, harness.bisect.command)."""
from __future__ import annotations

import time
from typing import Literal

from harness.bisect.environments import NotInstallable, Probe
from harness.case_data import Case
from harness.controller.signature import Failure
from harness.controller.workers import Role, case_workers
from harness.errors import HarnessInputError
from harness.project import Project
from harness.project_files.configs import BackendConfig


class Bisection:
    def __init__(self, case: Case, project: Project, config: BackendConfig, labels: list[str], make_probe,
                 what: str):
        """make_probe(index): the Probe of labels[index] (its environment's Python); what: "version"
        or "source build", for the lines printed."""
        self.case, self.project, self.config = case, project, config
        self.labels, self.make_probe, self.what = labels, make_probe, what
        # index -> failure, False (passed), None (skipped)
        self.results: dict[int, Failure | Literal[False] | None] = {}

    def probe(self, index: int) -> Failure | Literal[False] | None:
        if index in self.results:
            return self.results[index]
        label, started = self.labels[index], time.monotonic()
        try:
            probe: Probe = self.make_probe(index)
        except NotInstallable as e:
            print(f"{self.what} {label}: skipped, it does not install here ({e})", flush=True)
            self.results[index] = None
            return None
        workers = case_workers(self.project, [self.config], Role.BISECT, probe.interpreter)
        try:
            result = workers.run(self.case, self.config)
        finally:
            workers.close()
        failure = Failure.of(result)
        told = f"{result.outcome.value} in phase {failure.phase}: {failure.signature}" if failure else "passed"
        ran = ", ".join(f"{k} {v}" for k, v in sorted((result.versions or {}).items()))
        print(f"{self.what} {label}: {told}  [{time.monotonic() - started:.1f} s"
              f"{', cached environment' if probe.cached else ''}{'; ran ' + ran if ran else ''}]", flush=True)
        self.results[index] = failure or False
        return self.results[index]

    def run(self) -> str:
        """The verdict line."""
        last = len(self.labels) - 1
        bad = self.probe(last)
        if bad is None:
            raise HarnessInputError(f"--bad={self.labels[last]}", "does not install here, so nothing is known to fail")
        if bad is False:
            return f"no change: {self.case.id} passes at {self.labels[last]} (the bad end); nothing to bisect"
        good = self.probe(0)
        if good is None:
            raise HarnessInputError(f"--good={self.labels[0]}", "does not install here")
        if bad.kept_by(good or None):
            return f"no change: {self.labels[0]} (the good end) already fails with {bad.signature}"
        low, high = 0, last
        while high - low > 1:
            index = self._next_installable(low, high)
            if index is None:
                skipped = ", ".join(self.labels[low + 1:high])
                return (f"first bad {self.what}: {self.labels[high]} or one of {skipped}, which do not install "
                        f"(last good: {self.labels[low]}); bad signature: {bad.signature}")
            if bad.kept_by(self.results[index] or None):
                high = index
            else:
                low = index
        return (f"first bad {self.what}: {self.labels[high]} (last good: {self.labels[low]}); "
                f"bad signature: {bad.signature}")

    def _next_installable(self, low: int, high: int) -> int | None:
        """The untried version nearest the middle of (low, high) that installs, probed."""
        middle = (low + high) // 2
        for index in sorted(range(low + 1, high), key=lambda i: (abs(i - middle), i)):
            if self.probe(index) is not None:
                return index
        return None
