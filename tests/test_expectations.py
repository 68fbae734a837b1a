"""xfail/ and crash_sets/ entries: parsing and validation (unit), and their effect on a run (end to end)."""
from __future__ import annotations

import math
import textwrap

import pytest
from e2e_support import TINY_IDS

from harness.errors import HarnessInputError
from harness.expectations import Entry, Expectations, load_expectations
from harness.outcomes import Expected, Phase

IDS = ["conv_backward/2d/basic", "conv_backward/2d/transposed", "conv_backward/3d/basic", "conv_forward/2d/basic"]
VERSIONS = {"python": "3.11.7", "torch": "2.13.0+cpu", "torch-mlir": "20261001"}


@pytest.fixture
def dirs(tmp_path):
    (tmp_path / "xfail").mkdir()
    (tmp_path / "crash_sets").mkdir()
    return tmp_path


def write(dirs, kind, text, backend="be"):
    path = dirs / kind / f"{backend}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def load(dirs, ids=IDS, versions=VERSIONS, backend="be"):
    return load_expectations(backend, dirs / "xfail", dirs / "crash_sets", ids, versions)


def error(dirs, **kw) -> str:
    with pytest.raises(HarnessInputError) as info:
        load(dirs, **kw)
    return str(info.value)


# ------------------------------------------------------------------------------------- parsing

def test_no_files_means_no_entries(dirs):
    assert load(dirs).entries == []
    assert load(dirs).lookup("conv_backward/2d/basic") is None


def test_empty_file_and_empty_list_mean_no_entries(dirs):
    write(dirs, "xfail", "# nothing yet\n")
    write(dirs, "crash_sets", "[]\n")
    assert load(dirs).entries == []


def test_entry_fields_are_parsed_with_file_and_line(dirs):
    path = write(dirs, "xfail", """\
        # a comment line
        - id: conv_backward/2d/basic
          reason: "  fails to legalize  "
        - id: conv_backward/*transposed*
          reason: transposed
          issue: https://example.invalid/1
          phase: lower
          timeout: 7.5
          when: {torch: ">=2.13,<2.14", torch-mlir: "==20261001", python: ">=3.11"}
        """)
    first, second = load(dirs).entries
    assert (first.pattern, first.reason, first.kind, first.source) == \
        ("conv_backward/2d/basic", "fails to legalize", Expected.XFAIL, f"{path}:2")
    assert (first.phase, first.issue, first.timeout, first.active) == (None, None, None, True)
    assert second.source == f"{path}:4"
    assert (second.phase, second.issue, second.timeout, second.active) == \
        (Phase.LOWER, "https://example.invalid/1", 7.5, True)


def test_crash_set_entries_have_kind_crash(dirs):
    write(dirs, "crash_sets", "- id: conv_backward/3d/basic\n  reason: segfaults\n")
    (entry,) = load(dirs).entries
    assert entry.kind is Expected.CRASH
    assert entry.source.endswith("crash_sets/be.yaml:1")


def test_files_are_per_backend(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n", backend="other")
    assert load(dirs).entries == []
    assert len(load(dirs, backend="other").entries) == 1


# ------------------------------------------------------------------------------------- lookup

def test_lookup_exact_id_and_glob(dirs):
    write(dirs, "xfail", """\
        - id: conv_backward/2d/basic
          reason: exact
        - id: "*/2d/*"
          reason: glob, '*' crosses '/'
        """)
    exp = load(dirs)
    assert exp.lookup("conv_backward/2d/basic").reason == "exact"  # first matching entry wins
    assert exp.lookup("conv_backward/2d/transposed").reason == "glob, '*' crosses '/'"
    assert exp.lookup("conv_forward/2d/basic").reason == "glob, '*' crosses '/'"
    assert exp.lookup("conv_backward/3d/basic") is None


def test_lookup_is_case_sensitive(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n")
    assert load(dirs).lookup("conv_backward/2d/BASIC") is None


def test_lookup_prefers_the_crash_set():
    # The loader forbids overlaps (test_case_in_both_sets), so build the entries directly.
    xfail = Entry("conv_backward/*", "xf", Expected.XFAIL, "xfail/be.yaml:1")
    crash = Entry("conv_backward/2d/*", "crash", Expected.CRASH, "crash_sets/be.yaml:1")
    inactive = Entry("conv_backward/2d/basic", "old", Expected.CRASH, "crash_sets/be.yaml:3", active=False)
    exp = Expectations("be", [inactive, xfail, crash])
    assert exp.lookup("conv_backward/2d/basic") is crash
    assert exp.lookup("conv_backward/3d/basic") is xfail
    assert exp.lookup("conv_forward/2d/basic") is None


def test_overlap_is_allowed_when_the_when_conditions_exclude_each_other(dirs):
    # An xfail on old versions and a crash-set entry on new ones describe one case over time.
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: xf\n  when: {torch: '<1'}\n")
    write(dirs, "crash_sets", "- id: conv_backward/2d/basic\n  reason: crash\n  when: {torch: '>=2'}\n")
    assert load(dirs).lookup("conv_backward/2d/basic").reason == "crash"


def test_overlap_of_active_entries_is_rejected(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: xf\n  when: {torch: '>=2'}\n")
    write(dirs, "crash_sets", "- id: conv_backward/2d/basic\n  reason: crash\n")
    assert "is also in the crash set" in error(dirs)


def test_inactive_entry_is_skipped_by_lookup(dirs):
    write(dirs, "xfail", """\
        - id: conv_backward/2d/basic
          reason: old torch only
          when: {torch: "<2.13"}
        - id: conv_backward/2d/basic
          reason: this torch
          when: {torch: ">=2.13"}
        """)
    exp = load(dirs)
    assert [e.active for e in exp.entries] == [False, True]
    assert exp.lookup("conv_backward/2d/basic").reason == "this torch"


@pytest.mark.parametrize("when, active", [
    ({"torch": ">=2.13"}, True),
    ({"torch": "==2.13.*"}, True),            # a local version (+cpu) matches a wildcard
    ({"torch": ">=2.13,<2.14"}, True),
    ({"torch": "<2.13"}, False),
    ({"torch-mlir": "==20261001"}, True),
    ({"torch-mlir": ">20261001"}, False),
    ({"python": ">=3.11"}, True),
    ({"python": "<3"}, False),
    ({"torch": ">=2", "python": "<3"}, False),  # every condition must hold
    ({}, True),
])
def test_when_conditions(dirs, when, active):
    write(dirs, "xfail", f"- id: conv_backward/2d/basic\n  reason: r\n  when: {when!r}\n")
    assert load(dirs).entries[0].active is active


def test_when_on_a_package_that_is_not_installed_is_inactive(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  when: {torch-mlir: '>=1'}\n")
    versions = {"python": "3.11.7", "torch": "2.13.0", "torch-mlir": None}
    assert load(dirs, versions=versions).entries[0].active is False


def test_when_may_name_a_distribution_a_backend_requires(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  when: {iree-base-compiler: '==3.13.0'}\n")
    versions = {**VERSIONS, "iree-base-compiler": "3.13.0"}
    assert load(dirs, versions=versions).entries[0].active is True
    assert "unknown condition 'iree-base-compiler'" in error(dirs)


# ------------------------------------------------------------------------------------- validation

def test_malformed_yaml_names_file_and_line(dirs):
    path = write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: [unclosed\n")
    message = error(dirs)
    assert message.startswith(f"{path}:")
    assert "malformed YAML" in message


def test_malformed_yaml_line_is_the_bad_line(dirs):
    path = write(dirs, "crash_sets", "- id: conv_backward/2d/basic\n  reason: ok\n- id: x\n   reason: bad indent\n")
    assert error(dirs).startswith(f"{path}:4: malformed YAML")


def test_not_a_list(dirs):
    path = write(dirs, "xfail", "id: conv_backward/2d/basic\nreason: r\n")
    assert error(dirs).startswith(f"{path}: an expectation file must be a YAML list")


def test_entry_not_a_mapping(dirs):
    path = write(dirs, "xfail", "- conv_backward/2d/basic\n")
    assert error(dirs).startswith(f"{path}: entry 'conv_backward/2d/basic' is not a mapping")


def test_unknown_key_names_file_line_and_key(dirs):
    path = write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n- id: conv_backward/3d/basic\n"
                                "  reason: r\n  resaon: typo\n")
    message = error(dirs)
    assert message.startswith(f"{path}:3: unknown key 'resaon'")
    assert "allowed keys are id, issue, nondeterministic, phase, reason, signature, timeout, when" in message


@pytest.mark.parametrize("text, problem", [
    ("- id: conv_backward/2d/basic\n", "missing required key 'reason'"),
    ("- reason: r\n", "missing required key 'id'"),
    ("- id: conv_backward/2d/basic\n  reason: '  '\n", "'reason' must be a non-empty string"),
    ("- id: conv_backward/2d/basic\n  reason:\n", "'reason' must be a non-empty string"),
    ("- id: 42\n  reason: r\n", "'id' must be a non-empty string"),
])
def test_missing_or_empty_id_and_reason(dirs, text, problem):
    path = write(dirs, "xfail", text)
    assert error(dirs) == f"{path}:1: {problem}"


def test_id_matching_no_case(dirs):
    path = write(dirs, "crash_sets",
                 "- id: conv_backward/2d/basic\n  reason: r\n- id: conv_backward/9d/*\n  reason: r\n")
    message = error(dirs)
    assert message.startswith(f"{path}:3: id 'conv_backward/9d/*' matches no case")
    assert "--collect-only" in message


def test_inactive_entry_must_still_match_a_case(dirs):
    path = write(dirs, "xfail", "- id: conv_backward/2d/nope\n  reason: r\n  when: {torch: '<1'}\n")
    assert error(dirs).startswith(f"{path}:1: id 'conv_backward/2d/nope' matches no case")


def test_entries_of_a_family_not_installed_do_not_apply(dirs):
    xfail = write(dirs, "xfail", "- id: onnx_node/test_abs\n  reason: r\n- id: onnx_node/test_a*\n  reason: r\n"
                                 "- id: conv_backward/2d/basic\n  reason: r\n")
    crash = write(dirs, "crash_sets", "- id: onnx_node/test_acos\n  reason: r\n")
    why = {"onnx_node": "the onnx package is not installed (pip install x)"}
    expectations = load_expectations("be", dirs / "xfail", dirs / "crash_sets", IDS, VERSIONS, why)
    assert [e.missing_family for e in expectations.entries] == ["onnx_node", "onnx_node", None, "onnx_node"]
    assert expectations.lookup("onnx_node/test_abs") is None
    assert expectations.lookup("conv_backward/2d/basic").source == f"{xfail}:5"
    assert expectations.not_installed_lines(why) == [
        f"{xfail}: 2 entries for onnx_node do not apply: the onnx package is not installed (pip install x)",
        f"{crash}: 1 entry for onnx_node does not apply: the onnx package is not installed (pip install x)"]


def test_an_unknown_id_of_an_installed_family_is_still_an_error(dirs):
    path = write(dirs, "xfail", "- id: onnx_node/test_abs\n  reason: r\n- id: conv_backward/2d/nope\n  reason: r\n")
    with pytest.raises(HarnessInputError, match=f"{path}:3: id 'conv_backward/2d/nope' matches no case"):
        load_expectations("be", dirs / "xfail", dirs / "crash_sets", IDS, VERSIONS, {"onnx_node": "why"})


def test_case_in_both_sets(dirs):
    xfail = write(dirs, "xfail", "- id: conv_backward/3d/basic\n  reason: r\n- id: conv_backward/2d/*\n  reason: r\n")
    crash = write(dirs, "crash_sets", "- id: conv_backward/*/transposed\n  reason: r\n")
    assert error(dirs) == (f"{xfail}:3: case 'conv_backward/2d/transposed' is also in the crash set at "
                           f"{crash}:1; keep it in one of the two files")


@pytest.mark.parametrize("when, problem", [
    ('{torch: ">>2"}', "bad version condition torch: '>>2'"),
    ('{torch: 2.13}', "bad version condition torch: 2.13"),  # a YAML float is no specifier
    ('{numpy: ">=1"}', "unknown condition 'numpy'"),
    ('">=2.13"', "'when' must be a mapping"),
])
def test_bad_when(dirs, when, problem):
    path = write(dirs, "xfail", f"- id: conv_backward/2d/basic\n  reason: r\n  when: {when}\n")
    message = error(dirs)
    assert message.startswith(f"{path}:1: {problem}"), message


def test_unknown_phase(dirs):
    path = write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  phase: linking\n")
    message = error(dirs)
    assert message.startswith(f"{path}:1: unknown phase 'linking'")
    assert "setup, export, decompose, import, lower, compile, run, compare" in message


@pytest.mark.parametrize("value", ["0", "-3", "soon", "true", "[1]"])
def test_bad_timeout(dirs, value):
    path = write(dirs, "xfail", f"- id: conv_backward/2d/basic\n  reason: r\n  timeout: {value}\n")
    assert error(dirs).startswith(f"{path}:1: timeout must be a positive, finite number of seconds")


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_non_finite_timeout_is_rejected(dirs, value):
    write(dirs, "xfail", f"- id: conv_backward/2d/basic\n  reason: r\n  timeout: {value}\n")
    assert "timeout must be a positive, finite number" in error(dirs)


def test_yaml_timeout_integer_is_a_float(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  timeout: 2\n")
    timeout = load(dirs).entries[0].timeout
    assert timeout == 2.0 and isinstance(timeout, float) and math.isfinite(timeout)


# ======================================================================================= end to end

def raise_backend(project, name, phase="lower", only="conv_backward/2d/tiny"):
    return project.add_fake(name, "raise", phase, only)


@pytest.fixture
def ok_run(e2e_project, run_cache):
    """Expectations that make every failure expected: the run exits 0."""
    if "expectations_ok" not in run_cache:
        p = e2e_project
        raise_backend(p, "xf-raise")
        p.xfail("xf-raise", "- id: conv_backward/2d/tiny\n  reason: injected\n  phase: lower\n")
        p.add_fake("cs-exit", "exit", "export", "conv_backward/2d/tiny")
        p.crash_set("cs-exit", "# the first line\n- id: conv_backward/2d/tiny\n  reason: exits the worker\n")
        p.add_fake("to-hang", "hang", "compile", "conv_forward/2d/tiny", timeout=60)
        p.xfail("to-hang", "- id: conv_forward/2d/tiny\n  reason: hangs\n  timeout: 2\n  phase: compile\n")
        raise_backend(p, "when-on")
        p.xfail("when-on", "- id: conv_backward/2d/tiny\n  reason: r\n  when: {torch: '>=2', python: '>=3'}\n")
        run_cache["expectations_ok"] = p.run("--backend=xf-raise,cs-exit,to-hang,when-on", "-rA")
    return run_cache["expectations_ok"]


@pytest.fixture
def failing_run(e2e_project, run_cache):
    """Expectations that do not hold: the run exits 1."""
    if "expectations_failing" not in run_cache:
        p = e2e_project
        p.xfail("eager", "- id: conv_forward/2d/tiny\n  reason: believed broken\n")
        raise_backend(p, "ph-raise")
        p.xfail("ph-raise", "- id: conv_backward/2d/tiny\n  reason: r\n  phase: run\n")
        raise_backend(p, "when-off")
        p.xfail("when-off", "- id: conv_backward/2d/tiny\n  reason: r\n  when: {torch: '<1'}\n")
        run_cache["expectations_failing"] = p.run("--backend=eager,ph-raise,when-off", "-rA")
    return run_cache["expectations_failing"]


def test_expected_outcomes_exit_0(ok_run):
    assert ok_run.ret == 0, ok_run.output[-3000:]
    assert ok_run.report["complete"] is True
    assert {r["verdict"] for r in ok_run.results} == {"ok", "skipped"}


def test_xfail_entry_makes_a_failing_case_xfail(ok_run):
    record = ok_run.record("xf-raise", "conv_backward/2d/tiny")
    assert (record["outcome"], record["phase"], record["expected"], record["verdict"]) == \
        ("compile_error", "lower", "xfail", "ok")
    assert record["expectation_source"].endswith("xfail/xf-raise.yaml:1")
    assert "XFAIL cases/tiny.py::conv_backward/2d/tiny[xf-raise] - compile_error in lower" in ok_run.stdout
    for case in TINY_IDS[1:]:  # not matched by the entry: expected to pass, and they do
        assert ok_run.record("xf-raise", case)["expected"] == "pass"
        assert ok_run.record("xf-raise", case)["verdict"] == "ok"


def test_active_when_keeps_the_entry(ok_run):
    record = ok_run.record("when-on", "conv_backward/2d/tiny")
    assert (record["outcome"], record["expected"], record["verdict"]) == ("compile_error", "xfail", "ok")


def test_crash_set_case_is_not_run(ok_run):
    record = ok_run.record("cs-exit", "conv_backward/2d/tiny")
    assert (record["outcome"], record["phase"], record["expected"], record["verdict"]) == \
        ("not_run", None, "crash", "skipped")
    assert record["expectation_source"].endswith("crash_sets/cs-exit.yaml:2")
    assert "exits the worker" in record["message"] and "--run-crash-set" in record["message"]
    # never started: a run would have crashed the worker (the fake exits in export)
    assert record["phase_durations"] == {} and record["duration_s"] < 0.5
    assert "SKIPPED" in ok_run.stdout and "in the crash set" in ok_run.stdout
    for case in TINY_IDS[1:]:
        assert ok_run.record("cs-exit", case)["outcome"] == "passed"


def test_entry_timeout_overrides_the_backend_timeout(ok_run):
    record = ok_run.record("to-hang", "conv_forward/2d/tiny")
    assert (record["outcome"], record["phase"], record["verdict"]) == ("timed_out", "compile", "ok")
    assert record["message"].startswith("timed out after 2 s in phase compile")
    assert record["duration_s"] < 20  # the backend's timeout is 60 s


def test_run_crash_set_attempts_the_case(e2e_project):
    e2e_project.add_fake("cs-exit", "exit", "export", "conv_backward/2d/tiny")
    e2e_project.crash_set("cs-exit", "- id: conv_backward/2d/tiny\n  reason: exits the worker\n")
    result = e2e_project.run("--backend=cs-exit", "--run-crash-set", "-rA")
    assert result.ret == 0, result.output[-3000:]
    record = result.record("cs-exit", "conv_backward/2d/tiny")
    assert (record["outcome"], record["phase"], record["expected"], record["verdict"]) == \
        ("crashed", "export", "crash", "ok")
    assert "exited with status 3" in record["message"]
    assert result.report["environment"]["run_crash_set"] is True
    assert [result.record("cs-exit", c)["outcome"] for c in TINY_IDS[1:]] == ["passed", "passed"]


def test_unexpected_results_exit_1(failing_run):
    assert failing_run.ret == 1, failing_run.output[-3000:]
    assert "3 failed, 6 passed" in failing_run.stdout


def test_xfail_entry_on_a_passing_case_fails_strictly_naming_the_entry(failing_run):
    record = failing_run.record("eager", "conv_forward/2d/tiny")
    assert (record["outcome"], record["expected"], record["verdict"]) == ("passed", "xfail", "unexpected_pass")
    source = record["expectation_source"]
    assert source.endswith("xfail/eager.yaml:1")
    assert f"{source} expects a failure, but it passed: delete that entry" in failing_run.stdout
    # pytest's short summary line shows the entry, and so does the e2e summary's
    assert f"FAILED cases/tiny.py::conv_forward/2d/tiny[eager] - {source}" in failing_run.stdout
    assert f"UNEXPECTED_PASS: conv_forward/2d/tiny on eager: delete the entry at {source}" in failing_run.stdout


def test_xfail_entry_with_another_phase_is_an_unexpected_failure(failing_run):
    record = failing_run.record("ph-raise", "conv_backward/2d/tiny")
    assert (record["outcome"], record["phase"], record["expected"], record["verdict"]) == \
        ("compile_error", "lower", "xfail", "unexpected_failure")
    assert record["expected_phase"] == "run"   # the entry's, for the views (the HTML cell shows both)
    assert (f"compile_error in phase lower (expected xfail at {record['expectation_source']}, "
            f"in a different phase)") in failing_run.stdout


def test_inactive_when_makes_the_entry_ignored(failing_run):
    record = failing_run.record("when-off", "conv_backward/2d/tiny")
    assert (record["outcome"], record["expected"], record["verdict"], record["expectation_source"]) == \
        ("compile_error", "pass", "unexpected_failure", None)


def test_nondeterministic_is_a_flag_of_xfail_entries(dirs):
    write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  nondeterministic: true\n")
    assert load(dirs).lookup("conv_backward/2d/basic").nondeterministic is True
    path = write(dirs, "xfail", "- id: conv_backward/2d/basic\n  reason: r\n  nondeterministic: sometimes\n")
    assert error(dirs) == f"{path}:1: nondeterministic must be true or false, not 'sometimes'"
    write(dirs, "xfail", "[]\n")
    path = write(dirs, "crash_sets", "- id: conv_backward/2d/basic\n  reason: r\n  nondeterministic: true\n")
    assert error(dirs) == (f"{path}:1: a crash-set entry cannot be nondeterministic (its case is not run); "
                           "move the entry to the xfail file")
