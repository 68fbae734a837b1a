"""`python -m harness bisect`: the first version at which a case fails with its bad signature.

    python -m harness bisect CASE --backend NAME --package DIST[,DIST] --good V --bad V
                             [--find-links DIR] [--index-url URL] [--venvs DIR] [--cases-file FILE | --report REPORT]
    python -m harness bisect CASE --backend NAME --pythonpath DIR DIR [DIR ...] [--package DIST]

The bad version is probed first: its failure (phase and signature, harness.controller.signature)
is what the search looks for. Then the good one, which must not have it, then the versions
between, by halves: a version whose result has the bad failure is bad, any other (a pass, or
another failure, printed as such) is good. A version that will not install is skipped with pip's
reason, as `git bisect skip` does. Every probe runs the case in a harness worker of that
version's environment (harness.bisect.environments) with the case's timeout, so a crash or a
hang is a probe's result.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from harness.bisect.environments import DEFAULT_CACHE, NotInstallable, Probe, source_probe, venv_probe
from harness.bisect.versions import between
from harness.controller.pool import WorkerPool
from harness.controller.run_case import case_timeout, run_case
from harness.controller.signature import Failure
from harness.errors import HarnessInputError
from harness.families.plugins import load_families, worker_env
from harness.inputs.configs import BackendConfig, load_configs, select_backend
from harness.reduce.command import find_case
from harness.spec import Case


class Bisection:
    def __init__(self, case: Case, config: BackendConfig, families: dict, labels: list[str], make_probe,
                 timeout: float | None, what: str):
        self.case, self.config, self.families = case, config, families
        self.labels, self.make_probe, self.what = labels, make_probe, what
        self.timeout = case_timeout(case, config, given=timeout)
        self.results: dict[int, Failure | bool | None] = {}   # index -> failure, False (passed), None (skipped)

    def probe(self, index: int) -> Failure | bool | None:
        if index in self.results:
            return self.results[index]
        label, started = self.labels[index], time.monotonic()
        try:
            probe: Probe = self.make_probe(index)
        except NotInstallable as e:
            print(f"{self.what} {label}: skipped, it does not install here ({e})", flush=True)
            self.results[index] = None
            return None
        pool = WorkerPool(Path.cwd(), preload=[self.config.to_json()], env=worker_env(self.families),
                          interpreter=probe.interpreter)
        try:
            result = run_case(pool, self.case, self.families[self.case.family], self.config,
                              given_timeout=self.timeout)
        finally:
            pool.close()
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


def bisect_command(args: argparse.Namespace) -> int:
    families = load_families([], Path.cwd())
    if args.case is None or args.backend is None:
        raise HarnessInputError("bisect", "needs a CASE and --backend=NAME")
    config = select_backend(load_configs(args.configs_dir or [Path("configs")]), args.backend)
    case = find_case(args.case, families, args.cases_file, args.report, args.cases_dir or [Path("cases")])
    dists = [d.strip() for d in (args.package or "").split(",") if d.strip()]
    if args.pythonpath:
        modules = [config.module_of(d) for d in dists or config.requires]
        if not modules:
            raise HarnessInputError("--pythonpath", f"which package do the builds hold? {config.name} requires none",
                                    "name it with --package DIST")
        folders = [_source_build(Path(d), modules) for d in args.pythonpath]
        if len(folders) < 2:
            raise HarnessInputError("--pythonpath", "needs at least two source builds, good first and bad last")
        bisection = Bisection(case, config, families, [str(f) for f in folders],
                              lambda i: source_probe(folders[i]), args.case_timeout, "source build")
    else:
        if not (dists and args.good and args.bad):
            raise HarnessInputError("bisect", "needs --package DIST --good V --bad V, or --pythonpath DIR DIR ...")
        versions = between(dists, args.good, args.bad, args.index_url, args.find_links)
        print(f"{' and '.join(dists)}: {len(versions)} versions from {args.good} to {args.bad}: "
              f"{', '.join(str(v) for v in versions)}", file=sys.stderr, flush=True)
        bisection = Bisection(case, config, families, [str(v) for v in versions],
                              lambda i: venv_probe(dists, versions[i], args.venvs, args.index_url, args.find_links),
                              args.case_timeout, "version")
    print(bisection.run())
    return 0


def _source_build(folder: Path, modules: list[str]) -> Path:
    """A folder that holds the bisected package (torch_mlir, for torch-mlir's builds)."""
    if not folder.is_dir():
        raise HarnessInputError(f"--pythonpath={folder}", "is not a folder")
    if not any(_holds(folder, module) for module in modules):
        raise HarnessInputError(f"--pythonpath={folder}", f"holds no {' or '.join(modules)} package",
                                "pass the folder a source build puts its Python packages in (torch-mlir: "
                                "build/tools/torch-mlir/python_packages/torch_mlir)")
    return folder.resolve()


def _holds(folder: Path, module: str) -> bool:
    path = folder.joinpath(*module.split("."))
    return path.is_dir() or path.with_suffix(".py").is_file()


def add_bisect_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("bisect", help="the first version of a package at which a case fails "
                                             "with its bad signature")
    sub.add_argument("case", nargs="?", help="the case id")
    sub.add_argument("--backend", help="the backend it fails on")
    sub.add_argument("--package", metavar="DIST[,DIST]", help="the distribution(s) to bisect, moving together")
    sub.add_argument("--good", metavar="V", help="a version where the case does not fail so")
    sub.add_argument("--bad", metavar="V", help="a later version where it does")
    sub.add_argument("--find-links", type=Path, metavar="DIR", help="a folder of wheels (nightly wheels, say)")
    sub.add_argument("--index-url", metavar="URL", help="the package index, in place of pip's configured one")
    sub.add_argument("--pythonpath", nargs="+", metavar="DIR",
                     help="bisect over these source builds instead, in the order given (good first)")
    sub.add_argument("--venvs", type=Path, default=DEFAULT_CACHE, metavar="DIR",
                     help=f"where the probed versions' environments are kept (default {DEFAULT_CACHE})")
    sub.add_argument("--cases-file", type=Path, help="the cases file that holds the case")
    sub.add_argument("--report", type=Path, help="a JSON report holding the case")
    sub.add_argument("--case-timeout", type=float, help="seconds per probe, in place of the backend's")
    sub.add_argument("--cases-dir", type=Path, action="append", help="default: cases")
    sub.add_argument("--configs-dir", type=Path, action="append", help="default: configs")
    sub.set_defaults(run=bisect_command)
