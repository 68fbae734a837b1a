"""The triage options and commands end to end, through pytest and `python -m harness`:
--report-md, --report-html, --update-expectations, the crash-set section, `check` and `report`."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from e2e_support import REPO, python_path_env

from harness.cli import main
from harness.installation.executables import python_command
from harness.project_files.configs import load_configs

RAISE = "conv_backward/2d/tiny"     # fake-raise fails this case in phase lower
CRASH = "conv_forward/2d/tiny"      # fake-segfault crashes on this one in phase run


@pytest.fixture
def project(e2e_project):
    e2e_project.add_fake("fake-raise", "raise", "lower", RAISE)
    e2e_project.add_fake("fake-segfault", "segfault", "run", CRASH)
    return e2e_project


def test_markdown_and_html_reports_of_a_run(project):
    result = project.run("--backend=eager,fake-raise,fake-segfault", "--report-md=triage.md",
                         "--report-html=matrix.html")
    assert result.ret == 1
    markdown = (project.path / "triage.md").read_text()
    crashes, failures = markdown.index("## Crashes and hangs (1)"), markdown.index("## Unexpected failures (1)")
    assert crashes < failures  # crashes first
    assert "`SIGSEGV in " in markdown[crashes:failures]
    assert "injected compiler failure: 'fake.op' failed to legalize" in markdown[failures:]
    rerun = result.record("fake-raise", RAISE)["rerun_command"]
    assert rerun.startswith(f"cd {project.path} && {python_command()} -m pytest ") and rerun in markdown
    assert rerun.endswith("--backend=fake-raise 'cases/tiny.py::conv_backward/2d/tiny[fake-raise]'")
    assert "```yaml" in markdown  # the expectation files that would make the run match
    html = (project.path / "matrix.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "fake-segfault" in html


def test_update_expectations_makes_the_next_run_match_and_is_idempotent(project):
    first = project.run("--backend=eager,fake-raise,fake-segfault", "--update-expectations")
    assert first.ret == 1  # this run still reports its unexpected failures
    assert "--update-expectations: rewrote xfail/fake-raise.yaml" in first.output
    xfail = (project.path / "xfail" / "fake-raise.yaml").read_text()
    assert f"- id: {RAISE}\n  phase: lower\n" in xfail and "# review:" in xfail
    crash_set = (project.path / "crash_sets" / "fake-segfault.yaml").read_text()
    assert f"- id: {CRASH}\n  phase: run\n" in crash_set and "SIGSEGV in " in crash_set

    second = project.run("--backend=eager,fake-raise,fake-segfault", "--update-expectations")
    assert second.ret == 0, second.output
    assert "the expectation files already match this run" in second.output
    assert (project.path / "xfail" / "fake-raise.yaml").read_text() == xfail
    assert second.record("fake-segfault", CRASH)["outcome"] == "not_run"


def test_an_interrupted_run_changes_no_expectation_file(project):
    result = project.run("--backend=fake-raise", "--update-expectations", "-x")
    assert "the run was interrupted; no file changed" in result.output
    assert result.report["complete"] is False  # -x stopped it: cases were left out
    assert not (project.path / "xfail" / "fake-raise.yaml").exists()


def test_crash_set_entries_that_now_pass_are_listed(e2e_project):
    e2e_project.crash_set("eager", f"- id: {RAISE}\n  reason: it used to crash\n")
    skipped = e2e_project.run("--backend=eager", "--report-md=a.md")
    markdown = (e2e_project.path / "a.md").read_text()
    assert "1 crash-set case was not attempted; `--run-crash-set` re-checks them." in markdown
    rerun = e2e_project.run("--backend=eager", "--run-crash-set", "--report-md=b.md")
    assert rerun.record("eager", RAISE)["verdict"] == "unexpected_pass"
    section = (e2e_project.path / "b.md").read_text().split("## Crash-set entries that now pass")[1]
    assert "`crash_sets/eager.yaml:1`" in section and RAISE in section
    assert skipped.ret == 0 and rerun.ret == 1


def test_check_validates_every_expectation_file_without_running(e2e_project, monkeypatch, capsys):
    monkeypatch.chdir(e2e_project.path)
    e2e_project.xfail("eager", f"- id: {RAISE}\n  reason: fine\n")
    assert main(["check"]) == 0
    backends = len(load_configs([e2e_project.path / "configs"]))  # the built-in ones and the project's
    assert capsys.readouterr().out.startswith(f"ok: 1 expectation entries of {backends} backends match the 3 cases")
    e2e_project.xfail("eager", "- id: conv_backward/no_such_case\n  reason: stale\n")
    e2e_project.xfail("no-such-backend", f"- id: {RAISE}\n  reason: orphan\n")
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "xfail/eager.yaml:1: id 'conv_backward/no_such_case' matches no case" in err
    assert "xfail/no-such-backend.yaml: no backend is named 'no-such-backend'" in err
    assert "Traceback" not in err


def test_check_imports_every_config_class_and_gives_a_bad_one_in_one_line(e2e_project, monkeypatch, capsys):
    monkeypatch.chdir(e2e_project.path)
    e2e_project.write("configs/needy.yaml", "name: needy\nclass: not_a_module:B\nrequires: [not-a-real-dist]\n"
                                            "install: pip install not-a-real-dist\n")
    assert main(["check"]) == 0   # a class whose package is not installed is not broken: not checked here
    out, err = capsys.readouterr()
    assert "needy: class not checked: it needs 'not-a-real-dist', which is not installed" in err
    # the built-in backends whose extra is missing here are skipped too
    assert re.search(r"take their options \((\d+) skipped, above\)$", out.rstrip()), out
    assert err.count("class not checked: it needs") == int(re.search(r"\((\d+) skipped", out).group(1)), err
    (e2e_project.path / "configs" / "needy.yaml").unlink()
    for text, line in [
            ("name: broken\nclass: not_a_module:Backend\n",
             "configs/broken.yaml:2: class not_a_module:Backend does not import (ModuleNotFoundError: No module named "
             "'not_a_module'); fix the class, or install the package that has it"),
            ("name: broken\nextends: eager\noptions:\n  fault: none\n",
             "configs/broken.yaml:4: unknown option 'fault' of harness.backends.eager:EagerBackend; "
             "it takes no options"),
            ("name: broken\nclass: a:B\ntimout: 3\n",
             "configs/broken.yaml:3: unknown key 'timout'; did you mean 'timeout'? allowed keys are class, "
             "description, extends, extras, install, lowering, memory_limit_mb, name, options, programs, requires, "
             "timeout, tolerances")]:
        e2e_project.write("configs/broken.yaml", text)
        assert main(["check"]) == 4
        err = capsys.readouterr().err   # beside the notices of what this install lacks, one error line
        assert [x for x in err.splitlines() if x.startswith("error:")] == [f"error: {line}"], err
        assert "Traceback" not in err


def test_report_command_renders_a_saved_report(project, monkeypatch):
    project.run("--backend=eager,fake-raise")
    monkeypatch.chdir(project.path)
    assert main(["report", "report.json", "--md=r.md", "--html=r.html"]) == 0
    assert "## Unexpected failures (1)" in (project.path / "r.md").read_text()
    assert json.loads((project.path / "report.json").read_text())["results"][0]["signature"] is None
    assert "fake-raise" in (project.path / "r.html").read_text()


def test_unwritable_report_paths_are_usage_errors(e2e_project):
    for option in ("--report-md", "--report-html"):
        result = e2e_project.run("--backend=eager", f"{option}=missing/dir/x", report=None)
        assert result.ret == 4
        assert f"{option}=missing/dir/x: cannot write there" in result.output
        assert "Traceback" not in result.output


@pytest.mark.e2e
def test_python_m_harness_without_its_dependencies_says_so_in_one_line(tmp_path):
    """An interpreter the harness was not installed into (psutil shadowed by a module that fails as
    a missing one does): one line naming the module and the fix, no traceback."""
    (tmp_path / "psutil.py").write_text("raise ModuleNotFoundError(\"No module named 'psutil'\", name='psutil')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), python_path_env()]))
    done = subprocess.run([sys.executable, "-m", "harness", "check"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"python -m harness: psutil is not installed for {sys.executable}; install the harness with its "
        "dependencies (pip install -e . in the checkout) or run the interpreter of the venv that has it"]
