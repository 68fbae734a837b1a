"""Fuzzing the lowering: generated configurations of a family, each distinct failure shrunk.

    python -m harness fuzz FAMILY --backend=NAME [--max-examples=N] [--time-budget=SECONDS] [--seed=S]
                           [--out=findings.json] [--against=OTHER]

The configurations come from the family's FuzzSpace (Family.fuzz_space).

Every example is a `harness.case_data.Case` built from the cases-file entry it is reported as (id
`<family>/cases_file/fuzz_<hash of its params>`, the id a pasted entry gets, so the inputs are
the same too), run on the project's workers (`harness.controller.workers`) like a test-suite case: the
same worker protocol, timeouts, crash handling and golden comparison. A configuration runs at most once per
fuzz run: results are cached by the normalised params. A failure's group is its signature
(`harness.controller.signature.signature`, the triage reports' normalisation).

A run has three steps, all against one time budget:

1. replay: the minimal configurations of the last run's findings (kept in the example database,
   DATABASE/<backend>-<family>/) run first, so known failures are seen again whatever the search.
2. search: a seeded Hypothesis @given run over the space's strategy that runs each example and files
   it under its signature. It ends after --max-examples examples or SEARCH_SHARE of the budget
   (the whole budget while nothing has failed).
3. shrink: per group, in the order they were found, `hypothesis.find` looks for the minimal
   configuration with the group's signature. It is seeded and sized like the search, so its
   generation replays the search's examples from the cache up to the group's first hit and then
   shrinks; its database key is the signature, so a rerun starts from the last minimal example.
   Each group gets an equal share of the time left (what one leaves goes to the next). A shrink
   cut short keeps the smallest configuration it reached; a group it could not start on keeps
   the smallest configuration seen.

With `against`, every example runs on both backends and a finding is a disagreement: the two
results differ in signature (one passes and the other fails, or both fail differently). Each
backend's outputs are checked against the float64 golden, which is the arbiter: "passed" means
within the backend's tolerance of it, so two backends that both pass cannot disagree beyond
tolerance by more than their tolerances add up to, and a mismatch on one side only is reported.

Deterministic for a given seed, Hypothesis version and example database, as long as the search
ends on --max-examples and shrinks finish within the budget (a budget that cuts in is a clock).
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from harness.backend_interface import load_object
from harness.controller.pool import WorkerPool
from harness.controller.signature import signature
from harness.controller.workers import CaseWorkers, Role, case_workers
from harness.errors import HarnessInputError
from harness.fuzz.examples import Examples, canonical
from harness.fuzz.findings import Evaluation, Group, finding
from harness.project import Project

DEFAULT_MAX_EXAMPLES = 100        # search length when neither --max-examples nor --time-budget is given
UNBOUNDED_EXAMPLES = 100_000      # search length when only the time budget ends it
SEARCH_SHARE = 0.4                # of --time-budget for the search; the rest (and what it leaves) shrinks
DATABASE_DIR = Path(".hypothesis-fuzz")
FINDINGS_KEY = b"torch-backend-e2e fuzz: minimal configurations of the last run's findings"


# --------------------------------------------------------------------------- what to fuzz

@dataclasses.dataclass
class FuzzPlan:
    """What one fuzz run searches and for how long (the project's settings give the rest)."""

    backend: str
    family: str
    max_examples: int | None = None
    time_budget: float | None = None       # seconds for the whole run (replay, search, shrinking)
    seed: int = 0
    against: str | None = None
    database_dir: Path | None = DATABASE_DIR   # None: no example database

    def check(self) -> None:
        if self.max_examples is not None and self.max_examples < 1:
            raise HarnessInputError(f"--max-examples={self.max_examples}", "must be at least 1")
        if self.time_budget is not None and not (math.isfinite(self.time_budget) and self.time_budget > 0):
            raise HarnessInputError(f"--time-budget={self.time_budget:g}", "must be a positive, finite number "
                                    "of seconds")
        if self.against is not None and self.against == self.backend:
            raise HarnessInputError(f"--against={self.against}", "is the backend under test",
                                    "name another backend to compare with")

    @property
    def search_examples(self) -> int:
        """Hypothesis's max_examples for the search and for every shrink's find (they must match)."""
        if self.max_examples is not None:
            return self.max_examples
        return DEFAULT_MAX_EXAMPLES if self.time_budget is None else UNBOUNDED_EXAMPLES


class _OutOfTime(BaseException):
    """Raised inside a Hypothesis run to leave it: a BaseException, so Hypothesis does not take it
    for a failure of the example."""


# --------------------------------------------------------------------------- the fuzzer

def fuzz_examples(project: Project, family: str) -> Examples:
    """The named family's fuzz space, or one error line naming the families that have one."""
    fuzzed = {name: f.fuzz_space for name, f in project.families.items() if f.fuzz_space}
    if family not in fuzzed:
        raise HarnessInputError(f"--family={family}", "no fuzz strategy for this family",
                                f"use one of {', '.join(fuzzed)}")
    return Examples(project.families[family], load_object(fuzzed[family]))


class Fuzzer:
    def __init__(self, options: FuzzPlan, project: Project, pool: WorkerPool | None = None,
                 log: TextIO | None = None):
        options.check()
        self.options = options
        self.space = fuzz_examples(project, options.family)
        self.backends = {options.backend: project.config(options.backend, "--backend")}
        if options.against is not None:
            self.backends[options.against] = project.config(options.against, "--against")
        self.family = options.family
        self.strategy = self.space.strategy()
        self.database = self._open_database()
        self._own_pool = pool is None   # a caller's pool (the self-tests share one) is the caller's to close
        self.workers = case_workers(project, list(self.backends.values()), Role.FUZZ) if pool is None else \
            CaseWorkers(project, pool)
        self.log_stream = log if log is not None else sys.stderr
        self.cache: dict[str, Evaluation] = {}
        self.groups: dict[str, Group] = {}
        self.examples = 0
        self.outcomes: Counter = Counter()
        self.replayed = 0
        self.interrupted = False
        self.started = time.monotonic()
        self.end = math.inf

    # ---- plumbing

    def log(self, message: str) -> None:
        print(f"[{time.monotonic() - self.started:7.1f}s] {message}", file=self.log_stream, flush=True)

    def _open_database(self):
        if self.options.database_dir is None:
            return None
        from hypothesis.database import DirectoryBasedExampleDatabase

        name = self.options.backend + (f"-vs-{self.options.against}" if self.options.against else "")
        path = Path(self.options.database_dir) / f"{name}-{self.family}"
        try:
            fresh = not Path(self.options.database_dir).exists()
            path.mkdir(parents=True, exist_ok=True)
            if fresh:  # a folder of local state, kept out of git as Hypothesis keeps its .hypothesis/
                (Path(self.options.database_dir) / ".gitignore").write_text("# python -m harness fuzz's example "
                                                                            "database\n*\n")
        except OSError as e:
            raise HarnessInputError(str(path), f"cannot create the example database ({e.strerror or e})",
                                    "pass --database-dir=DIR with a writable DIR") from None
        return DirectoryBasedExampleDatabase(str(path))

    def _settings(self, **overrides):
        from hypothesis import HealthCheck, Verbosity, settings

        values: dict[str, Any] = dict(max_examples=self.options.search_examples, deadline=None, derandomize=False,
                      database=None, suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
                      print_blob=False, report_multiple_bugs=False)
        values.update(overrides)
        return settings(**values)

    def _hypothesis_seed(self) -> int:
        """The search's seed: the value hypothesis.find draws from random.Random(seed), so each
        shrink's generation retraces the search."""
        return random.Random(self.options.seed).getrandbits(64)

    # ---- running one configuration

    def evaluate(self, params: dict[str, Any], deadline: float, found_in: str) -> Evaluation | None:
        """The configuration's (cached) results; None when it has not run and `deadline` has passed."""
        key = canonical(params)
        if key in self.cache:
            return self.cache[key]
        if time.monotonic() >= deadline:
            return None
        case = self.space.case(params)
        results = {}
        for name, config in self.backends.items():
            result = self.workers.run(case, config)
            phase = result.phase and result.phase.value
            results[name] = {"outcome": result.outcome.value, "phase": phase, "message": result.message,
                             "signature": signature(result.outcome.value, phase, result.message, result.frame)}
        evaluation = Evaluation(dict(case.params), case, results, self._group_of(results))
        self.cache[key] = evaluation
        if evaluation.signature is not None:
            group = self.groups.get(evaluation.signature)
            if group is None:
                group = self.groups[evaluation.signature] = Group(evaluation.signature, found_in)
                self.log(f"new signature ({found_in}): {self._headline(evaluation)}")
            group.keys.append(key)
        return evaluation

    def _group_of(self, results: dict[str, dict]) -> str | None:
        signatures = [r["signature"] for r in results.values()]
        if self.options.against is None:
            return signatures[0]
        if signatures[0] == signatures[1]:
            return None  # both pass, or both fail the same way: no disagreement
        return " | ".join(f"{name}: {r['signature'] or 'passed'}" for name, r in results.items())

    def _headline(self, evaluation: Evaluation) -> str:
        first = evaluation.results[self.options.backend]
        return f"{first['outcome']} in phase {first['phase']}: {evaluation.signature}"

    # ---- the three steps

    def run(self) -> dict[str, Any]:
        budget = self.options.time_budget
        self.started = time.monotonic()
        self.end = math.inf if budget is None else self.started + budget
        against = f" against {self.options.against}" if self.options.against else ""
        limits = [f"{self.options.max_examples} examples"] if self.options.max_examples else []
        limits += [f"{budget:g} s"] if budget else []
        self.log(f"fuzzing {self.options.backend}{against}, {self.family}, seed {self.options.seed}"
                 f"{' (' + ', '.join(limits) + ')' if limits else ''}")
        try:
            try:
                self.replay()
                search_end = math.inf if budget is None else self.started + SEARCH_SHARE * budget
                self.search(search_end)
                self.log(f"search done: {self.examples} examples, {len(self.groups)} distinct signatures")
                self.shrink_all()
            except KeyboardInterrupt:  # a long run stopped by hand still reports what it found
                self.interrupted = True
                self.log("interrupted: no more examples; the findings so far follow")
                self.end = time.monotonic()
                self.shrink_all()  # each group not shrunk yet keeps its smallest configuration seen
            self.remember()
        finally:
            if self._own_pool:
                self.workers.close()
        return self.report()

    def replay(self) -> None:
        if self.database is None:
            return
        known = sorted(self.database.fetch(FINDINGS_KEY))
        for value in known:
            try:
                params = self.space.family.validate(json.loads(value))
            except (ValueError, TypeError):
                self.database.delete(FINDINGS_KEY, value)  # written by another version: drop it
                continue
            if self.evaluate(params, self.end, "replay") is None:
                break
            self.replayed += 1
        if known:
            self.log(f"replayed {self.replayed} of {len(known)} known findings")

    def search(self, search_end: float) -> None:
        from hypothesis import Phase, given, seed

        @seed(self._hypothesis_seed())
        @self._settings(phases=[Phase.generate])
        @given(self.strategy)
        def example(params):
            if self.examples >= self.options.search_examples:
                raise _OutOfTime  # Hypothesis may call once more than max_examples; not counted
            # The search gives up its time to shrinking only once there is something to shrink.
            evaluation = self.evaluate(params, search_end if self.groups else self.end, "search")
            if evaluation is None:
                raise _OutOfTime
            self.examples += 1
            self.outcomes[evaluation.results[self.options.backend]["outcome"]] += 1
            if evaluation.signature is not None:
                group = self.groups[evaluation.signature]
                group.hits += 1
                group.first_hit = group.first_hit or self.examples

        try:
            example()
        except _OutOfTime:
            pass

    def shrink_all(self) -> None:
        while True:
            waiting = [g for g in self.ordered() if g.shrink is None]
            if not waiting:
                return
            group = waiting[0]
            now = time.monotonic()
            if now >= self.end:
                for g in waiting:
                    self._keep_smallest_seen(g, "none")
                    why = "the run was interrupted" if self.interrupted else "the time budget is spent"
                    self.log(f"not shrunk, {why}: {g.signature}")
                return
            self.shrink(group, min(self.end, now + (self.end - now) / len(waiting)))

    def shrink(self, group: Group, deadline: float) -> None:
        from hypothesis import Phase, find
        from hypothesis.errors import NoSuchExample

        started, runs_before = time.monotonic(), len(self.cache)
        state = {"found": False, "refused": False}
        why = ""

        def has_signature(params) -> bool:
            evaluation = self.evaluate(params, deadline, "shrink")
            if evaluation is None:
                if not state["found"]:
                    raise _OutOfTime  # still looking for the first example: give up
                state["refused"] = True
                return False          # shrinking on with what has run: converges quickly
            if evaluation.signature == group.signature:
                state["found"] = True
                return True
            return False

        key = f"{self.options.backend}|{self.options.against}|{self.family}|{group.signature}".encode()
        try:
            minimal = find(self.strategy, has_signature, random=random.Random(self.options.seed),
                           database_key=key,
                           settings=self._settings(database=self.database,
                                                   phases=[Phase.reuse, Phase.generate, Phase.shrink]))
            group.minimal = self.cache[canonical(minimal)]
            group.shrink = "partial" if state["refused"] else "complete"
        except _OutOfTime:
            self._keep_smallest_seen(group, "none")
            why = "its time ran out before find met an example"
        except NoSuchExample:  # a signature first seen in replay or shrinking may be rare in generation
            self._keep_smallest_seen(group, "none")
            why = f"find met no example in {self.options.search_examples} generated ones"
        group.shrink_runs = len(self.cache) - runs_before
        group.shrink_s = round(time.monotonic() - started, 1)
        how = {"complete": "shrunk", "partial": "shrunk until its time ran out"}.get(group.shrink or "",
                                                                                     f"not shrunk ({why})")
        assert group.minimal is not None, "found or kept above"
        self.log(f"{how} in {group.shrink_s:g} s, {group.shrink_runs} configurations run: "
                 f"{self.space.describe(group.minimal.params)}: {group.signature}")

    def _keep_smallest_seen(self, group: Group, how: str) -> None:
        group.minimal = min((self.cache[k] for k in group.keys), key=lambda e: self.space.size_order(e.params))
        group.shrink = how

    def ordered(self) -> list[Group]:
        """Groups in the order the search first hit them, then the others (replay, shrinking) by signature:
        the same order on a rerun that replays known findings first."""
        return sorted(self.groups.values(), key=lambda g: (g.first_hit is None, g.first_hit or 0, g.signature))

    def remember(self) -> None:
        """Keep this run's minimal configurations as the findings the next run replays first."""
        if self.database is None:
            return
        keep = {canonical(g.minimal.params).encode() for g in self.groups.values() if g.minimal is not None}
        for value in set(self.database.fetch(FINDINGS_KEY)) - keep:
            self.database.delete(FINDINGS_KEY, value)
        for value in sorted(keep):
            self.database.save(FINDINGS_KEY, value)

    # ---- output

    def report(self) -> dict[str, Any]:
        import hypothesis

        return {"backend": self.options.backend, "against": self.options.against, "family": self.family,
                "seed": self.options.seed, "max_examples": self.options.max_examples,
                "time_budget_s": self.options.time_budget, "hypothesis_version": hypothesis.__version__,
                "examples_run": self.examples, "outcomes": dict(sorted(self.outcomes.items())),
                "configs_run": len(self.cache), "replayed": self.replayed,
                "elapsed_s": round(time.monotonic() - self.started, 1), "interrupted": self.interrupted,
                "findings": [finding(g, self.space, self.options.backend, self.options.against)
                             for g in self.ordered()]}


def run(options: FuzzPlan, project: Project, pool: WorkerPool | None = None,
        log: TextIO | None = None) -> dict[str, Any]:
    """Fuzz one backend (and, with options.against, compare it with another); the JSON report."""
    return Fuzzer(options, project, pool, log).run()
