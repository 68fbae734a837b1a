"""The one way a helper process starts (harness.helper_process): the rootdir first on its PYTHONPATH,
the caller's variables added, a one-shot helper's reply read from its last line of stdout, and a
helper that dies or hangs turned into one HarnessInputError line. The helpers here are tiny modules
of a tmp rootdir, not the harness: these are unit tests."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.errors import HarnessInputError
from harness.helper_process import Interpreter, ask_helper, helper_env, run_helper

# A one-shot helper as the harness's are: a JSON request on stdin, noise, then one JSON reply line
ECHO = """import json, os, sys
request = json.load(sys.stdin)
print("a library's chatter")
print(json.dumps({"request": request, "cwd": os.getcwd(), "flag": os.environ.get("HELPER_FLAG")}))
"""
DIES = "import sys\nprint('Traceback (most recent call last):', file=sys.stderr)\nraise SystemExit('boom: it broke')\n"
HANGS = "import sys, time\nsys.stdin.read()\ntime.sleep(60)\n"
WRITES = "import pathlib, sys\npathlib.Path(sys.argv[1]).write_text('listed')\n"
SILENT_EXIT = "raise SystemExit(3)\n"


def _rootdir(tmp_path: Path, **modules: str) -> Path:
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    return tmp_path


def test_the_environment_has_the_interpreters_folders_then_the_rootdir_then_pythonpath(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/given")
    env = helper_env(tmp_path, {"HELPER_FLAG": "1"}, Interpreter(path_first=("/build",)))
    assert env["PYTHONPATH"] == os.pathsep.join(["/build", str(tmp_path), "/given"])
    assert env["HELPER_FLAG"] == "1" and env["PATH"] == os.environ["PATH"]


def test_a_one_shot_helper_answers_its_request_in_the_rootdir_with_the_callers_variables(tmp_path):
    root = _rootdir(tmp_path, echo=ECHO)
    reply = ask_helper("echo", {"case": "x"}, rootdir=root, what="echoing", where="here", timeout=60,
                       env={"HELPER_FLAG": "on"})
    assert reply == {"request": {"case": "x"}, "cwd": str(root), "flag": "on"}


def test_a_helper_that_dies_before_replying_is_one_line_with_its_last_words(tmp_path):
    root = _rootdir(tmp_path, dies=DIES)
    with pytest.raises(HarnessInputError) as raised:
        ask_helper("dies", {}, rootdir=root, what="building it", where="case/1", timeout=60)
    assert str(raised.value) == "case/1: building it failed: boom: it broke"


def test_a_helper_past_its_timeout_is_killed_and_said_with_the_fix(tmp_path):
    root = _rootdir(tmp_path, hangs=HANGS)
    with pytest.raises(HarnessInputError) as raised:
        ask_helper("hangs", {}, rootdir=root, what="building it", where="case/1", timeout=0.5,
                   timeout_fix="raise the case's timeout")
    assert str(raised.value) == "case/1: building it took over 0.5 s; raise the case's timeout"


def test_a_helper_whose_work_is_its_files_runs_in_the_given_folder(tmp_path):
    (root := tmp_path / "root").mkdir()
    (elsewhere := tmp_path / "elsewhere").mkdir()
    _rootdir(root, writes=WRITES)
    run_helper("writes", ["out.txt"], rootdir=root, cwd=elsewhere, what="listing", where="lister", timeout=60)
    assert (elsewhere / "out.txt").read_text() == "listed"


def test_a_helper_that_exits_silently_with_a_status_is_said_by_its_status(tmp_path):
    root = _rootdir(tmp_path, silent=SILENT_EXIT)
    with pytest.raises(HarnessInputError) as raised:
        run_helper("silent", [], rootdir=root, what="listing the tests", where="lister", timeout=60)
    assert raised.value.problem == "listing the tests failed: exit status 3"
