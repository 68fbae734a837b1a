"""The fixed result vocabulary and the one function that turns (outcome, expectation) into a verdict."""
from __future__ import annotations

import enum


class Outcome(str, enum.Enum):
    """What happened when a case ran on a backend."""

    PASSED = "passed"
    MISMATCH = "mismatch"
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    CRASHED = "crashed"
    TIMED_OUT = "timed_out"
    NOT_RUN = "not_run"


class Expected(str, enum.Enum):
    """What the expectation files say should happen."""

    PASS = "pass"
    XFAIL = "xfail"
    CRASH = "crash"


class Verdict(str, enum.Enum):
    """Whether the outcome agrees with the expectation."""

    OK = "ok"
    UNEXPECTED_FAILURE = "unexpected_failure"
    UNEXPECTED_PASS = "unexpected_pass"
    SKIPPED = "skipped"


class Phase(str, enum.Enum):
    """Where in the pipeline a case was when it failed, hung or crashed."""

    SETUP = "setup"      # building the module and inputs (a case bug, not a backend one)
    EXPORT = "export"
    IMPORT = "import"
    LOWER = "lower"
    COMPILE = "compile"
    RUN = "run"
    COMPARE = "compare"


# Phases whose exceptions are compile errors; anything raised while running is a runtime error.
COMPILE_PHASES = frozenset({Phase.SETUP, Phase.EXPORT, Phase.IMPORT, Phase.LOWER, Phase.COMPILE})


def outcome_for_exception(phase: Phase) -> Outcome:
    if phase in COMPILE_PHASES:
        return Outcome.COMPILE_ERROR
    if phase is Phase.COMPARE:
        return Outcome.MISMATCH
    return Outcome.RUNTIME_ERROR


def decide(outcome: Outcome, expected: Expected, phase: Phase | None,
           expected_phase: Phase | None) -> Verdict:
    """The single place that maps expectation onto actual outcome (strict, phase-aware)."""
    if outcome is Outcome.NOT_RUN:
        return Verdict.SKIPPED
    if expected is Expected.PASS:
        return Verdict.OK if outcome is Outcome.PASSED else Verdict.UNEXPECTED_FAILURE
    if outcome is Outcome.PASSED:
        return Verdict.UNEXPECTED_PASS
    if expected_phase is not None and phase is not expected_phase:
        return Verdict.UNEXPECTED_FAILURE
    return Verdict.OK
