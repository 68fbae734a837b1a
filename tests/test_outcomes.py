"""harness.outcomes: the vocabulary and the `decide` truth table, written out in full."""
from __future__ import annotations

import itertools
import json

import pytest

from harness.case_findings import Findings
from harness.outcomes import COMPILE_PHASES, Expected, Outcome, Phase, Verdict, decide, outcome_for_exception
from harness.record import Attempt, Record

OUT, E, V = Outcome, Expected, Verdict
OK, FAIL, XPASS, SKIP = V.OK, V.UNEXPECTED_FAILURE, V.UNEXPECTED_PASS, V.SKIPPED

# The phase a result of each outcome is recorded with (None when it did not fail).
PHASE_OF = {OUT.PASSED: None, OUT.MISMATCH: Phase.COMPARE, OUT.COMPILE_ERROR: Phase.LOWER,
            OUT.RUNTIME_ERROR: Phase.RUN, OUT.CRASHED: Phase.COMPILE, OUT.TIMED_OUT: Phase.LOWER,
            OUT.WRONG_LOWERING: Phase.LOWER, OUT.NOT_RUN: None}

# outcome -> verdict for expected = pass / xfail / crash, when the entry names no phase.
TABLE = {
    #                  pass   xfail   crash
    OUT.PASSED:        (OK,    XPASS,  XPASS),
    OUT.MISMATCH:      (FAIL,  OK,     OK),
    OUT.COMPILE_ERROR: (FAIL,  OK,     OK),
    OUT.RUNTIME_ERROR: (FAIL,  OK,     OK),
    OUT.CRASHED:       (FAIL,  OK,     OK),
    OUT.TIMED_OUT:     (FAIL,  OK,     OK),
    OUT.WRONG_LOWERING: (FAIL, FAIL,   FAIL),   # a broken lowering claim: no entry excuses it
    OUT.NOT_RUN:       (SKIP,  SKIP,   SKIP),
}
# ... and when the entry names the phase the result was recorded in (same verdicts), or another phase:
TABLE_OTHER_PHASE = {
    OUT.PASSED:        (XPASS, XPASS),
    OUT.MISMATCH:      (FAIL,  FAIL),
    OUT.COMPILE_ERROR: (FAIL,  FAIL),
    OUT.RUNTIME_ERROR: (FAIL,  FAIL),
    OUT.CRASHED:       (FAIL,  FAIL),
    OUT.TIMED_OUT:     (FAIL,  FAIL),
    OUT.WRONG_LOWERING: (FAIL, FAIL),
    OUT.NOT_RUN:       (SKIP,  SKIP),
}


def test_vocabulary_is_fixed():
    assert [o.value for o in Outcome] == ["passed", "mismatch", "compile_error", "runtime_error", "crashed",
                                          "timed_out", "wrong_lowering", "not_run"]
    assert [e.value for e in Expected] == ["pass", "xfail", "crash"]
    assert [v.value for v in Verdict] == ["ok", "unexpected_failure", "unexpected_pass", "skipped", "flaky"]
    assert [p.value for p in Phase] == ["setup", "export", "decompose", "import", "lower", "compile", "run", "compare",
                                        "time"]


def test_tables_cover_every_outcome():
    assert set(TABLE) == set(Outcome) == set(TABLE_OTHER_PHASE)


@pytest.mark.parametrize("outcome, expected", list(itertools.product(Outcome, Expected)),
                         ids=lambda v: v.value)
def test_decide_without_expected_phase(outcome, expected):
    column = list(Expected).index(expected)
    assert decide(outcome, expected, PHASE_OF[outcome], None) is TABLE[outcome][column]


@pytest.mark.parametrize("outcome, expected", list(itertools.product(Outcome, [E.XFAIL, E.CRASH])),
                         ids=lambda v: v.value)
def test_decide_with_the_matching_expected_phase(outcome, expected):
    phase = PHASE_OF[outcome] or Phase.LOWER  # PASSED / NOT_RUN have no phase: any entry phase
    column = list(Expected).index(expected)
    assert decide(outcome, expected, PHASE_OF[outcome], phase) is TABLE[outcome][column]


@pytest.mark.parametrize("outcome, expected", list(itertools.product(Outcome, [E.XFAIL, E.CRASH])),
                         ids=lambda v: v.value)
def test_decide_with_another_expected_phase(outcome, expected):
    other = Phase.EXPORT  # never the phase in PHASE_OF
    column = [E.XFAIL, E.CRASH].index(expected)
    assert decide(outcome, expected, PHASE_OF[outcome], other) is TABLE_OTHER_PHASE[outcome][column]


@pytest.mark.parametrize("phase", list(Phase), ids=lambda p: p.value)
def test_every_phase_can_be_the_expected_one(phase):
    assert decide(OUT.COMPILE_ERROR, E.XFAIL, phase, phase) is OK
    others = [p for p in Phase if p is not phase]
    assert all(decide(OUT.COMPILE_ERROR, E.XFAIL, phase, p) is FAIL for p in others)


def test_expected_pass_ignores_an_expected_phase():
    assert decide(OUT.PASSED, E.PASS, None, Phase.LOWER) is OK
    assert decide(OUT.MISMATCH, E.PASS, Phase.COMPARE, Phase.COMPARE) is FAIL


@pytest.mark.parametrize("phase, outcome", [
    (Phase.SETUP, OUT.COMPILE_ERROR), (Phase.EXPORT, OUT.COMPILE_ERROR), (Phase.IMPORT, OUT.COMPILE_ERROR),
    (Phase.LOWER, OUT.COMPILE_ERROR), (Phase.COMPILE, OUT.COMPILE_ERROR), (Phase.RUN, OUT.RUNTIME_ERROR),
    (Phase.COMPARE, OUT.MISMATCH),
], ids=lambda v: v.value)
def test_outcome_for_exception(phase, outcome):
    assert outcome_for_exception(phase) is outcome


def test_compile_phases():
    assert COMPILE_PHASES == {Phase.SETUP, Phase.EXPORT, Phase.DECOMPOSE, Phase.IMPORT, Phase.LOWER, Phase.COMPILE}


def test_each_outcome_and_verdict_carries_its_labels_and_kind():
    assert {o.value for o in Outcome if o.is_crash} == {"crashed", "timed_out"}
    assert {o.value for o in Outcome if o.is_failure} == {"mismatch", "compile_error", "runtime_error", "crashed",
                                                          "timed_out", "wrong_lowering"}
    assert all(o.label and o.description for o in Outcome) and Outcome.COMPILE_ERROR.label == "compile"
    assert {v.value for v in Verdict if v.is_unexpected} == {"unexpected_failure", "unexpected_pass"}
    assert Outcome("crashed") is Outcome.CRASHED and Outcome.CRASHED == "crashed"  # still the JSON strings


def test_expected_names_its_file_and_the_other_one():
    assert [(k.folder, k.file_title) for k in Expected.files()] == [("xfail", "the xfail file"),
                                                                     ("crash_sets", "the crash set")]
    assert Expected.XFAIL.other_file_kind is Expected.CRASH and Expected.CRASH.other_file_kind is Expected.XFAIL
    assert Expected.PASS.folder is None and Expected("crash") is Expected.CRASH == "crash"


RERUN = [Attempt(OUT.CRASHED, Phase.LOWER, "SIGSEGV in f", 1.4), Attempt(OUT.PASSED, None, None, 2.0)]


def test_a_record_reads_back_from_its_json():
    record = Record(case="conv_backward/2d/x", backend="be", nodeid="cases/c.py::conv_backward/2d/x[be]",
                    params={"dtype": "float32"}, tags=["rank2"], outcome=OUT.CRASHED, phase=Phase.LOWER,
                    expected=Expected.CRASH, verdict=Verdict.OK, duration_s=1.5, message="boom",
                    expectation_source="crash_sets/be.yaml:3",
                    findings=Findings(phase_durations={"lower": 1.4}, notes={"a": 1}, ops={"aten.add": 1}),
                    signature="SIGSEGV in f", artifacts="artifacts/x", backend_versions={"torch": "2"},
                    attempts=RERUN, flaky=True)
    assert Record.from_json(record.to_json()) == record
    assert Record.from_json(json.loads(json.dumps(record.to_json()))) == record
    older = {k: v for k, v in record.to_json().items() if k not in ("signature", "artifacts", "backend_versions")}
    assert Record.from_json(older).signature is None   # a report written before the key existed


def test_a_records_json_is_plain_strings_with_the_keys_reports_have_always_had():
    """The enums go out as the strings reports held before them: xdist sends no enum, and a report
    written now reads as one written then (the phase, each attempt's keys and order)."""
    record = Record(case="c", backend="be", nodeid="n", params={}, tags=[], outcome=OUT.CRASHED, phase=Phase.LOWER,
                    expected=E.PASS, verdict=FAIL, duration_s=1.5, message="", expectation_source=None,
                    attempts=RERUN, flaky=True)
    data = record.to_json()
    assert json.dumps(data["attempts"]) == ('[{"outcome": "crashed", "phase": "lower", "signature": "SIGSEGV in f", '
                                            '"duration_s": 1.4}, {"outcome": "passed", "phase": null, '
                                            '"signature": null, "duration_s": 2.0}]')
    plain = (str, int, float, bool, type(None), list, dict)

    def builtins_only(value) -> bool:
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return type(value) in plain and all(builtins_only(v) for v in items)

    assert data["phase"] == "lower" and builtins_only(data)
    assert Record.from_json({**data, "phase": None, "attempts": []}).phase is None


def test_an_attempt_of_a_hand_made_report_needs_only_its_outcome():
    assert Attempt.from_json({"outcome": "mismatch", "phase": "compare"}) == Attempt(OUT.MISMATCH, Phase.COMPARE,
                                                                                    None, 0.0)
    with pytest.raises(ValueError, match="result 'c': an attempt is str, not an object"):
        Record.from_json({"case": "c", "backend": "be", "outcome": "passed", "attempts": ["passed"]})
    with pytest.raises(ValueError, match="'sideways' is not a valid Phase"):
        Record.from_json({"case": "c", "backend": "be", "outcome": "passed", "phase": "sideways"})


def test_a_phase_shows_as_its_name():
    assert f"in phase {Phase.LOWER}" == "in phase lower" and str(Phase.RUN) == "run" == Phase.RUN


@pytest.mark.parametrize("outcome, phase, verdict", [
    (OUT.PASSED, None, Verdict.FLAKY), (OUT.MISMATCH, Phase.COMPARE, Verdict.FLAKY),
    (OUT.MISMATCH, Phase.RUN, FAIL),            # a failure in another phase than the entry's
    (OUT.CRASHED, Phase.COMPARE, OK), (OUT.TIMED_OUT, Phase.COMPARE, OK),   # as any xfail entry: not "varying"
    (OUT.NOT_RUN, None, Verdict.SKIPPED),
], ids=lambda v: getattr(v, "value", v))
def test_a_nondeterministic_entry_accepts_a_pass_or_its_failure_as_flaky(outcome, phase, verdict):
    assert decide(outcome, E.XFAIL, phase, Phase.COMPARE, nondeterministic=True) is verdict


def test_reruns_that_disagree_make_an_unexpected_result_flaky_only_with_flaky_ok():
    assert decide(OUT.MISMATCH, E.PASS, Phase.COMPARE, None, reruns_disagree=True) is FAIL
    assert decide(OUT.MISMATCH, E.PASS, Phase.COMPARE, None, reruns_disagree=True, flaky_ok=True) is Verdict.FLAKY
    assert decide(OUT.PASSED, E.XFAIL, None, None, reruns_disagree=True, flaky_ok=True) is Verdict.FLAKY
    assert decide(OUT.PASSED, E.PASS, None, None, reruns_disagree=True, flaky_ok=True) is OK
