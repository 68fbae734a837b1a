"""The harness run by pytest on a tiny project with misbehaving fake backends.

One pytest run covers every fault: eager plus one FaultyBackend per fault, each armed for one case
id only. The run is shared by the tests of this module (`fault_run`); each test checks one aspect
of its JSON report or terminal output.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from xml.etree import ElementTree

import pytest
from e2e_support import TINY_IDS

REQUIRED_RESULT_KEYS = {"case", "backend", "nodeid", "params", "tags", "outcome", "phase", "expected",
                        "verdict", "duration_s", "message", "expectation_source", "phase_durations"}


@dataclasses.dataclass(frozen=True)
class Fault:
    backend: str
    fault: str
    phase: str          # where the fault is injected (the FaultyBackend option)
    only: str           # the one case id it hits
    outcome: str        # what the harness must record
    recorded_phase: str
    message: tuple[str, ...]   # fragments the message must contain
    signature: str             # the whole signature (harness.controller.signature)
    timeout: float = 60


FAULTS = [
    Fault("fake-hang", "hang", "lower", "conv_backward/2d/tiny", "timed_out", "lower",
          ("timed out after 3 s in phase lower", "hang_in_native_code", "fake_backends.py"),
          "hang in hang_in_native_code (fake_backends.py) during phase lower", timeout=3),
    Fault("fake-segfault", "segfault", "run", "conv_backward/2d/tiny", "crashed", "run",
          ("worker killed by SIGSEGV in ", " during phase run", "Segmentation fault",
           "--- native stack at the crash (py-spy) ---"), "SIGSEGV in string_at (ctypes/__init__.py)"),
    Fault("fake-abort", "abort", "compile", "conv_forward/2d/tiny", "crashed", "compile",
          ("worker killed by SIGABRT in ", " during phase compile"), "SIGABRT in <lambda> (fake_backends.py)"),
    Fault("fake-exit", "exit", "import", "conv_backward/2d/tiny_stride2", "crashed", "import",
          ("worker exited with status 3 during phase import",), "exit status 3 during phase import"),
    Fault("fake-raise", "raise", "lower", "conv_backward/2d/tiny", "compile_error", "lower",
          ("RuntimeError: injected compiler failure: 'fake.op' failed to legalize", "fake_backends.py:"),
          "RuntimeError: injected compiler failure: 'fake.op' failed to legalize"),
    Fault("fake-raise-run", "raise", "run", "conv_forward/2d/tiny", "runtime_error", "run",
          ("RuntimeError: injected compiler failure",),
          "RuntimeError: injected compiler failure: 'fake.op' failed to legalize"),
    Fault("fake-wrong-values", "wrong_values", "compile", "conv_backward/2d/tiny", "mismatch", "compare",
          ("grad_input: ", " of 32 elements differ beyond tolerance", "max abs error", "max rel error",
           "worst at index", "tolerance rtol=0.0003, atol=0.0004"),  # from the config
          "mismatch: grad_input: N of N elements differ beyond tolerance"),
    # Every output wrong: each is named with its own detail; the signature is still grad_input's alone.
    Fault("fake-wrong-values-all", "wrong_values_all", "compile", "conv_backward/2d/tiny", "mismatch", "compare",
          ("3 of 3 outputs differ: grad_input, grad_weight, grad_bias\n", "\ngrad_input: ", "\ngrad_weight: ",
           "\ngrad_bias: "),
          "mismatch: grad_input: N of N elements differ beyond tolerance"),
    Fault("fake-nan", "nan", "compile", "conv_forward/2d/tiny", "mismatch", "compare",
          ("output: ", "1 NaN and 0 Inf where the golden value is finite", "first at index [0, 0, 0, 0]: got nan"),
          "mismatch: output: N NaN and N Inf where the golden value is finite, N finite where it is not, "
          "N Inf of the wrong sign"),
    Fault("fake-wrong-shape", "wrong_shape", "compile", "conv_backward/2d/tiny", "mismatch", "compare",
          ("grad_input: shape [2, 2, 4, 4] differs from expected [1, 2, 4, 4]",),
          "mismatch: grad_input: shape [N, N, N, N] differs from expected [N, N, N, N]"),
    Fault("fake-wrong-dtype", "wrong_dtype", "compile", "conv_backward/2d/tiny_stride2", "mismatch", "compare",
          ("grad_input: dtype float64 differs from expected float32",),
          "mismatch: grad_input: dtype float64 differs from expected float32"),
]
BY_BACKEND = {f.backend: f for f in FAULTS}
# A backend that prints a megabyte to stdout in every case: the protocol must survive it.
FLOOD = "fake-print-flood"
BACKENDS = ["eager", *BY_BACKEND, FLOOD]


def make_fault_project(project):
    for f in FAULTS:
        project.add_fake(f.backend, f.fault, f.phase, f.only, timeout=f.timeout,
                         tolerances={"float32": {"rtol": 0.0003, "atol": 0.0004}})
    project.add_fake(FLOOD, "print_flood", "compile", "*")
    return project


def fault_ids():
    return [f.backend for f in FAULTS]


@pytest.fixture
def fault_run(e2e_project, run_cache):
    """The serial run of every fault backend (run once per session)."""
    if "faults" not in run_cache:
        make_fault_project(e2e_project)
        result = e2e_project.run(f"--backend={','.join(BACKENDS)}", "-rA", "--junitxml=junit.xml")
        junit = e2e_project.path / "junit.xml"
        result.junit = ElementTree.parse(junit).getroot() if junit.exists() else None
        run_cache["faults"] = (result, e2e_project.probes())
    return run_cache["faults"][0]


# ---------------------------------------------------------------------------------------- faults

@pytest.mark.parametrize("fault", FAULTS, ids=fault_ids())
def test_fault_is_recorded_with_outcome_phase_verdict_and_message(fault_run, fault):
    record = fault_run.record(fault.backend, fault.only)
    assert (record["outcome"], record["phase"]) == (fault.outcome, fault.recorded_phase), record["message"]
    assert record["verdict"] == "unexpected_failure"
    assert record["expected"] == "pass"
    assert record["expectation_source"] is None
    for fragment in fault.message:
        assert fragment in record["message"], f"{fragment!r} not in:\n{record['message']}"
    assert record["signature"] == fault.signature


@pytest.mark.parametrize("fault", FAULTS, ids=fault_ids())
def test_fault_hits_only_its_case_the_other_cases_still_pass(fault_run, fault):
    others = [case for case in TINY_IDS if case != fault.only]
    assert len(others) == 2
    for case in others:
        record = fault_run.record(fault.backend, case)
        assert (record["outcome"], record["verdict"], record["phase"]) == ("passed", "ok", None), record
        assert record["message"] == ""


@pytest.mark.parametrize("fault", FAULTS, ids=fault_ids())
def test_fault_fails_its_pytest_item_with_the_harness_message(fault_run, fault):
    nodeid = f"cases/tiny.py::{fault.only}[{fault.backend}]"
    assert f"FAILED {nodeid}" in fault_run.stdout
    # The failure section is the harness's text, not a Python traceback.
    header = re.search(rf"_ {re.escape(fault.only)} on {re.escape(fault.backend)} _+\n", fault_run.stdout)
    assert header, f"no failure section for {nodeid}"
    section = fault_run.stdout[header.end():].split("\n___", 1)[0]
    assert f"{fault.outcome} in phase {fault.recorded_phase}" in section
    assert "params: {'input_shape':" in section
    assert "Traceback" not in section and "runtest" not in section


def test_every_wrong_output_has_its_own_line_with_its_worst_element(fault_run):
    message = fault_run.record("fake-wrong-values-all", "conv_backward/2d/tiny")["message"]
    lines = message.splitlines()
    assert len(lines) == 4, message
    for line, (name, size) in zip(lines[1:], [("grad_input", 32), ("grad_weight", 36), ("grad_bias", 2)]):
        assert re.match(rf"{name}: \d+ of {size} elements differ beyond tolerance; max abs error ", line), message
        assert "worst at index [" in line and "tolerance rtol=0.0003, atol=0.0004" in line, message


def test_hang_is_killed_near_its_timeout(fault_run):
    record = fault_run.record("fake-hang", "conv_backward/2d/tiny")
    # 3 s timeout + at most 1 s for the stack dump + start-up slack; far below the 60 s default
    assert 3 <= record["duration_s"] < 20


def test_case_timeout_on_the_command_line_beats_the_configs(e2e_project):
    """The config says 60 s; --case-timeout=2 is what the user asked for."""
    e2e_project.add_fake("fake-hang", "hang", "lower", "conv_backward/2d/tiny", timeout=60)
    result = e2e_project.run("--backend=fake-hang", "-k", "conv_backward/2d/tiny[", "--case-timeout=2")
    record = result.record("fake-hang", "conv_backward/2d/tiny")
    assert record["outcome"] == "timed_out"
    assert "timed out after 2 s in phase lower" in record["message"]
    assert record["duration_s"] < 20


def test_pytest_timeouts_outer_guard_is_over_the_cases_own_timeout_and_its_reruns(e2e_project):
    """Each case item carries pytest-timeout's mark, set when the run starts: the case's timeout
    times the attempts it may take, plus slack for a worker's start (a stuck controller still ends)."""
    e2e_project.write("conftest.py", (e2e_project.path / "conftest.py").read_text() + (
        "\ndef pytest_runtest_setup(item):\n"
        "    with open('guards.txt', 'a') as out:\n"
        "        out.write(f\"{item.name} {item.get_closest_marker('timeout').args[0]}\\n\")\n"))
    result = e2e_project.run("--case-timeout=7", "--rerun-failures=2", "-k", "conv_backward/2d/tiny[")
    assert result.ret == 0, result.output
    assert (e2e_project.path / "guards.txt").read_text() == "conv_backward/2d/tiny[eager] 381.0\n"   # 7 x 3 + 360


def test_eager_and_print_flood_pass_everything(fault_run):
    for backend in ("eager", FLOOD):
        for case in TINY_IDS:
            record = fault_run.record(backend, case)
            assert (record["outcome"], record["verdict"]) == ("passed", "ok"), record


def test_exit_code_is_1_and_pytest_counts_match(fault_run):
    assert fault_run.ret == 1
    passed = len(BACKENDS) * len(TINY_IDS) - len(FAULTS)
    assert re.search(rf"\b{len(FAULTS)} failed, {passed} passed\b", fault_run.stdout), fault_run.stdout[-2000:]


def test_terminal_summary_counts_outcomes_and_lists_unexpected_results(fault_run):
    out = fault_run.stdout
    assert "e2e summary" in out
    assert "eager: 3 cases  passed=3" in out
    assert "fake-segfault: 3 cases  passed=2  crashed=1" in out
    assert "fake-hang: 3 cases  passed=2  timed_out=1" in out
    assert re.search(r"\n  1 x crashed in run \[fake-segfault\] SIGSEGV.*\n      e\.g\. conv_backward/2d/tiny on "
                     r"fake-segfault\n", out), out[-3000:]
    assert re.search(r"\n  1 x runtime_error in run \[fake-raise-run\] RuntimeError", out), out[-3000:]


def test_json_report_schema(fault_run):
    report = fault_run.report
    assert report["schema_version"] == 1
    assert report["complete"] is True
    assert isinstance(report["created"], float)
    env = report["environment"]
    assert env["python"].count(".") == 2 and env["torch"].startswith("2.")
    assert env["platform"] and env["run_crash_set"] is False
    assert sorted(env["backends"]) == sorted(BACKENDS)
    assert env["backends"]["fake-hang"]["config"].endswith("configs/fake-hang.yaml")
    assert env["backends"]["fake-hang"]["versions"] == {}  # requires nothing
    assert env["backends"]["eager"]["versions"] == {"torch": env["torch"]}  # requires: [torch]
    assert env["backends"]["eager"]["reported"] == {"torch": env["torch"]}  # EagerBackend.versions()
    assert all("backend_versions" not in r for r in report["results"])  # moved into the environment
    results = report["results"]
    assert len(results) == len(BACKENDS) * len(TINY_IDS)
    assert [(r["backend"], r["case"]) for r in results] == sorted((r["backend"], r["case"]) for r in results)
    for r in results:
        assert REQUIRED_RESULT_KEYS <= set(r), REQUIRED_RESULT_KEYS - set(r)
        assert r["nodeid"] == f"cases/tiny.py::{r['case']}[{r['backend']}]"
        assert r["outcome"] in {"passed", "mismatch", "compile_error", "runtime_error", "crashed", "timed_out"}
        assert r["verdict"] in {"ok", "unexpected_failure"}
        assert isinstance(r["duration_s"], float) and r["duration_s"] >= 0
        assert isinstance(r["message"], str)
        assert isinstance(r["phase_durations"], dict)
        assert "rank2" in r["tags"] and "static" in r["tags"]
    tiny = fault_run.record("eager", "conv_backward/2d/tiny")
    assert tiny["params"] == {"input_shape": [1, 2, 4, 4], "weight_shape": [2, 2, 3, 3], "stride": [1, 1],
                              "padding": [0, 0], "dilation": [1, 1], "output_padding": [0, 0],
                              "transposed": False, "groups": 1, "output_mask": [True, True, True],
                              "bias": True, "unsized_grad_bias": False, "dtype": "float32",
                              "dynamic_dims": []}
    assert set(tiny["phase_durations"]) == {"setup", "compile", "run", "compare"}
    summary = report["summary"]
    assert summary["fake-abort"] == {"total": 3, "outcomes": {"passed": 2, "crashed": 1},
                                     "verdicts": {"ok": 2, "unexpected_failure": 1}}
    assert summary["eager"] == {"total": 3, "outcomes": {"passed": 3}, "verdicts": {"ok": 3}}
    assert sum(s["total"] for s in summary.values()) == len(results)


def test_junitxml_carries_the_e2e_properties(fault_run):
    assert fault_run.junit is not None
    cases = {(c.get("classname"), c.get("name")): c for c in fault_run.junit.iter("testcase")}
    assert len(cases) == len(BACKENDS) * len(TINY_IDS)
    (segfault,) = [c for (_, name), c in cases.items() if name == "conv_backward/2d/tiny[fake-segfault]"]
    props = {p.get("name"): p.get("value") for p in segfault.iter("property")}
    assert props == {"e2e_outcome": "crashed", "e2e_phase": "run", "e2e_verdict": "unexpected_failure"}
    assert segfault.find("failure") is not None
    (passed,) = [c for (_, name), c in cases.items() if name == "conv_forward/2d/tiny[eager]"]
    props = {p.get("name"): p.get("value") for p in passed.iter("property")}
    assert props == {"e2e_outcome": "passed", "e2e_phase": "", "e2e_verdict": "ok"}


def test_controller_never_imports_torch_even_after_running_cases(fault_run, run_cache):
    probes = run_cache["faults"][1]
    assert probes and all(p["torch"] is False for p in probes), probes


# ---------------------------------------------------------------------------------------- xdist

def test_xdist_gives_the_same_outcomes_and_reports_each_case_once(e2e_project, fault_run):
    make_fault_project(e2e_project)
    result = e2e_project.run(f"--backend={','.join(BACKENDS)}", "-n", "2")
    assert result.ret == 1, result.output[-3000:]
    assert result.report["complete"] is True
    seen = collections.Counter((r["backend"], r["case"]) for r in result.results)
    assert set(seen) == {(b, c) for b in BACKENDS for c in TINY_IDS}
    assert set(seen.values()) == {1}
    for serial in fault_run.results:
        parallel = result.record(serial["backend"], serial["case"])
        assert ((parallel["outcome"], parallel["phase"], parallel["verdict"])
                == (serial["outcome"], serial["phase"], serial["verdict"])), (serial, parallel)
    probes = e2e_project.probes()
    assert sorted(p["xdist_worker"] for p in probes) == [False, True, True]
    assert not any(p["torch"] for p in probes), probes


def test_every_core_by_default_and_one_process_when_told(e2e_project):
    """Without -n, the run takes pytest-xdist workers (ini e2e_workers, default auto: one per core);
    -n 0 and -p no:xdist run in the pytest process; --collect-only starts no worker."""
    parallel = e2e_project.run(serial=False)
    assert parallel.ret == 0, parallel.output[-3000:]
    assert sorted(r["case"] for r in parallel.results) == TINY_IDS
    assert sum(p["xdist_worker"] for p in e2e_project.probes()) >= 1   # as many as xdist's auto finds cores
    for told in (("-n", "0"), ("-p", "no:xdist"), ("--collect-only", "-q")):
        result = e2e_project.run(*told, serial=False, report=None)
        assert result.ret == 0, result.output[-3000:]
        assert not any(p["xdist_worker"] for p in e2e_project.probes()), told
    e2e_project.write("pytest.ini", "[pytest]\ntestpaths = cases\ne2e_backends = eager\ne2e_workers = 2\n")
    e2e_project.run(serial=False)
    assert sum(p["xdist_worker"] for p in e2e_project.probes()) == 2
    e2e_project.write("pytest.ini", "[pytest]\ntestpaths = cases\ne2e_backends = eager\ne2e_workers = 0\n")
    e2e_project.run(serial=False)
    assert not any(p["xdist_worker"] for p in e2e_project.probes())


# ---------------------------------------------------------------------------------------- exit codes

def test_all_passing_run_exits_0(e2e_project):
    result = e2e_project.run("-q")
    assert result.ret == 0, result.output
    assert [(r["case"], r["outcome"], r["verdict"]) for r in result.results] == \
        [(case, "passed", "ok") for case in TINY_IDS]


# ---------------------------------------------------------------------------------------- collection

def test_collect_only_lists_one_item_per_case_and_backend_without_starting_workers(e2e_project):
    e2e_project.add_fake("fake-exit", "exit", "export")  # would crash any case it ran
    result = e2e_project.run("--collect-only", "-q", "--backend=eager,fake-exit", report=None)
    assert result.ret == 0, result.output
    items = [line for line in result.stdout.splitlines() if line.startswith("cases/")]
    assert items == [f"cases/tiny.py::{case}[{b}]" for case in TINY_IDS for b in ("eager", "fake-exit")]


def test_collect_only_checks_no_backend_class_a_run_would_refuse(e2e_project):
    """Listing cases creates no backend: a class that does not import is the run's error, not --co's."""
    e2e_project.write("configs/gone.yaml", "name: gone\nclass: no_such_module:Backend\n")
    listed = e2e_project.run("--collect-only", "-q", "--backend=gone", report=None)
    assert listed.ret == 0, listed.output
    assert "3 tests collected" in listed.stdout
    run = e2e_project.run("-q", "--backend=gone", report=None)
    assert run.ret == pytest.ExitCode.USAGE_ERROR and "no_such_module" in run.stderr, run.output


def test_backends_from_an_extra_configs_dir_and_repeated_backend_options(e2e_project):
    e2e_project.write("more/extra.yaml", "name: extra\nclass: fake_backends:FaultyBackend\n"
                                         "options: {fault: none}\n")
    result = e2e_project.run("--collect-only", "-q", "--configs-dir=more", "--backend=extra,eager",
                             "--backend=extra", report=None)
    assert result.ret == 0, result.output
    items = [line for line in result.stdout.splitlines() if line.startswith("cases/")]
    assert items == [f"cases/tiny.py::{case}[{b}]" for case in TINY_IDS for b in ("extra", "eager")]


def test_tags_are_keywords_for_k_selection(e2e_project):
    # "strided" and "rank2" are tags (derived from the params), not parts of the node ids.
    result = e2e_project.run("--collect-only", "-q", "-k", "rank2 and not strided", report=None)
    assert result.ret == 0, result.output
    items = [line for line in result.stdout.splitlines() if line.startswith("cases/")]
    assert items == ["cases/tiny.py::conv_backward/2d/tiny[eager]", "cases/tiny.py::conv_forward/2d/tiny[eager]"]


def test_plugin_loads_with_plugin_autoload_disabled(e2e_project, monkeypatch):
    """`-p harness.plugin` alone is enough (no entry point needed), and with the entry point
    present (a `pip install -e .`) the plugin is still registered once (no duplicate options)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = e2e_project.run("--collect-only", "-q", report=None)
    assert result.ret == 0, result.output
    assert "3 tests collected" in result.stdout
    monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    result = e2e_project.run("--collect-only", "-q", report=None)
    assert result.ret == 0, result.output
    assert "3 tests collected" in result.stdout
