"""The fixed result vocabulary and the one function that turns (outcome, expectation) into a verdict."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING


class Outcome(str, enum.Enum):
    """What happened when a case ran on a backend. Each carries its labels and what kind of
    result it is (as lit's ResultCode does), so no view keeps its own list of strings."""

    label: str            # what a matrix cell shows
    description: str      # what a legend or a details panel says
    is_failure: bool      # the backend did not produce the right answer
    is_crash: bool        # it crashed or hung: the crash set's business

    # value, the short label a matrix cell shows, the description, is_failure, is_crash
    PASSED = "passed", "pass", "passed", False, False
    MISMATCH = "mismatch", "mismatch", "mismatch (wrong numbers)", True, False
    COMPILE_ERROR = "compile_error", "compile", "compile error", True, False
    RUNTIME_ERROR = "runtime_error", "runtime", "runtime error", True, False
    CRASHED = "crashed", "crash", "crashed", True, True
    TIMED_OUT = "timed_out", "timeout", "timed out", True, True    # a hang: a crash for every purpose
    # An op took another lowering path than the backend's config claims (its `lowering:` key): the
    # author's claim, so always an unexpected failure, whatever the expectation files say.
    WRONG_LOWERING = "wrong_lowering", "lowering", "took another lowering path than its config claims", True, False
    NOT_RUN = "not_run", "not run", "not run", False, False

    def __new__(cls, value: str, label: str, description: str, is_failure: bool, is_crash: bool) -> Outcome:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        member.description = description
        member.is_failure = is_failure
        member.is_crash = is_crash
        return member

    if TYPE_CHECKING:   # Outcome("passed") looks a member up by its value: mypy reads a call as __new__'s
        def __init__(self, value: str) -> None: ...


class Expected(str, enum.Enum):
    """What the expectation files say should happen. An expected failure names the file that
    says so: its folder (xfail/<backend>.yaml, crash_sets/<backend>.yaml) and how a message
    calls it."""

    label: str
    folder: str | None       # None: no file says "pass"
    file_title: str | None

    # value, label, the folder of its files, the file as a message names it
    PASS = "pass", "expected to pass", None, None
    XFAIL = "xfail", "expected failure", "xfail", "the xfail file"
    CRASH = "crash", "in the crash set", "crash_sets", "the crash set"

    def __new__(cls, value: str, label: str, folder: str | None, file_title: str | None) -> Expected:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        member.folder = folder
        member.file_title = file_title
        return member

    if TYPE_CHECKING:   # as Outcome's
        def __init__(self, value: str) -> None: ...

    @property
    def other_file_kind(self) -> "Expected":
        """The other expectation file's kind: where a case that now crashes (or only fails) moves."""
        return {Expected.XFAIL: Expected.CRASH, Expected.CRASH: Expected.XFAIL}[self]

    @classmethod
    def files(cls) -> tuple["Expected", ...]:
        """The kinds that have files: xfail, then the crash set."""
        return cls.XFAIL, cls.CRASH


class Verdict(str, enum.Enum):
    """Whether the outcome agrees with the expectation."""

    label: str
    is_unexpected: bool   # fails the run, and views single it out

    OK = "ok", "as expected", False
    UNEXPECTED_FAILURE = "unexpected_failure", "unexpected failure", True
    UNEXPECTED_PASS = "unexpected_pass", "unexpected pass", True
    SKIPPED = "skipped", "skipped", False
    FLAKY = "flaky", "flaky: its outcome varies (its entry says so, or its reruns disagreed with --flaky-ok)", False

    def __new__(cls, value: str, label: str, is_unexpected: bool) -> Verdict:
        member = str.__new__(cls, value)
        member._value_ = value
        member.label = label
        member.is_unexpected = is_unexpected
        return member

    if TYPE_CHECKING:   # as Outcome's
        def __init__(self, value: str) -> None: ...


class Phase(enum.StrEnum):
    """Where in the pipeline a case was when it failed, hung or crashed. A StrEnum: a phase shows
    as its name in every message and report ("in phase lower"), as the plain strings it replaced."""

    SETUP = "setup"      # building the module and inputs (a case bug, not a backend one)
    EXPORT = "export"
    DECOMPOSE = "decompose"   # the exported program's decompositions (torch.export's run_decompositions)
    IMPORT = "import"
    LOWER = "lower"
    COMPILE = "compile"
    RUN = "run"          # the first run, whose outputs are compared
    COMPARE = "compare"
    TIME = "time"        # --perf: a passed case timed against eager


# Phases whose exceptions are compile errors; anything raised while running is a runtime error.
COMPILE_PHASES = frozenset({Phase.SETUP, Phase.EXPORT, Phase.DECOMPOSE, Phase.IMPORT, Phase.LOWER, Phase.COMPILE})
# A result's compile cost (--perf's figures, the history): export to compile, the build left out.
COMPILE_COST_PHASES = tuple(p.value for p in (Phase.EXPORT, Phase.DECOMPOSE, Phase.IMPORT, Phase.LOWER, Phase.COMPILE))


def outcome_for_exception(phase: Phase) -> Outcome:
    if phase in COMPILE_PHASES:
        return Outcome.COMPILE_ERROR
    if phase is Phase.COMPARE:
        return Outcome.MISMATCH
    return Outcome.RUNTIME_ERROR


def decide(outcome: Outcome, expected: Expected, phase: Phase | None, expected_phase: Phase | None, *,
           nondeterministic: bool = False, reruns_disagree: bool = False, flaky_ok: bool = False) -> Verdict:
    """The single place that maps expectation onto actual outcome (strict, phase-aware).

    `nondeterministic`: the case's entry says its outcome varies, so a pass or the entry's failure
    is flaky. `reruns_disagree`: its reruns (--rerun-failures) gave different outcomes, which makes
    an unexpected result flaky when `flaky_ok` (--flaky-ok)."""
    if outcome is Outcome.NOT_RUN:
        return Verdict.SKIPPED
    if outcome is Outcome.WRONG_LOWERING:   # no entry foresees a broken claim: --update-expectations writes none
        return Verdict.UNEXPECTED_FAILURE
    in_phase = expected_phase is None or phase is expected_phase
    if nondeterministic and (outcome is Outcome.PASSED or (not outcome.is_crash and in_phase)):
        return Verdict.FLAKY
    if expected is Expected.PASS:
        verdict = Verdict.OK if outcome is Outcome.PASSED else Verdict.UNEXPECTED_FAILURE
    elif outcome is Outcome.PASSED:
        verdict = Verdict.UNEXPECTED_PASS
    else:
        verdict = Verdict.OK if in_phase else Verdict.UNEXPECTED_FAILURE
    return Verdict.FLAKY if verdict.is_unexpected and reruns_disagree and flaky_ok else verdict
