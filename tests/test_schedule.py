"""Longest cases first (harness.controller.schedule): the durations an earlier run measured, read
from its JSON report or a pytest-split file, order the cases of the next run; the nightly's shards
take their durations file from `python -m harness durations`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from e2e_support import REPO, TINY_IDS, Project

from harness.controller.schedule import durations_of, longest_first, read_durations, write_durations
from harness.errors import HarnessInputError

pytest_plugins = ["pytester"]

NODEIDS = [f"cases/tiny.py::{case}[eager]" for case in TINY_IDS]

# Records the order of the items each pytest process (xdist workers too) will run.
ORDER_CONFTEST = '''
def pytest_collection_finish(session):
    import json, os
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(os.path.join(str(session.config.rootpath), f"order-{name}.json"), "w") as out:
        json.dump([item.nodeid for item in session.items], out)
'''


def report_of(durations: dict[str, float]) -> dict:
    return {"schema_version": 1, "complete": True, "environment": {},
            "results": [{"nodeid": n, "case": n.split("::")[1].split("[")[0], "backend": "eager",
                         "outcome": "passed", "duration_s": d} for n, d in durations.items()]}


def test_the_longest_go_first_and_the_unknown_before_them():
    durations = {"a": 1.0, "b": 5.0, "c": 3.0}
    assert longest_first(["a", "new", "b", "c", "new2"], durations, nodeid=str) == ["new", "new2", "b", "c", "a"]


def test_durations_come_from_a_report_or_a_pytest_split_file(tmp_path):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(report_of({NODEIDS[0]: 2.5, NODEIDS[1]: 0.5})))
    assert read_durations(report) == {NODEIDS[0]: 2.5, NODEIDS[1]: 0.5}
    split = tmp_path / ".test_durations"
    assert write_durations([json.loads(report.read_text()), report_of({NODEIDS[1]: 4.0})], split) == 2
    assert json.loads(split.read_text()) == {NODEIDS[0]: 2.5, NODEIDS[1]: 4.0}   # the later report wins
    assert read_durations(split) == {NODEIDS[0]: 2.5, NODEIDS[1]: 4.0}
    (tmp_path / "list.json").write_text("[1]")
    with pytest.raises(HarnessInputError, match="neither a JSON report nor a durations file"):
        read_durations(tmp_path / "list.json")
    assert durations_of({"results": [{"nodeid": "x"}, "junk"]}) == {}


@pytest.mark.e2e
def test_the_durations_command_writes_what_pytest_split_reads(tmp_path):
    report = tmp_path / "all.json"
    report.write_text(json.dumps(report_of({NODEIDS[2]: 7.0})))
    done = subprocess.run([sys.executable, "-m", "harness", "durations", str(report), "-o", str(tmp_path / "d.json")],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{tmp_path / 'd.json'}: durations of 1 tests"
    assert json.loads((tmp_path / "d.json").read_text()) == {NODEIDS[2]: 7.0}


def test_durations_from_orders_the_collection(pytester):
    project = Project(pytester.path, pytester)
    project.write("durations.json", json.dumps({NODEIDS[0]: 1.0, NODEIDS[1]: 3.0}))
    result = pytester.runpytest_subprocess("-p", "harness.plugin", "--collect-only", "-q",
                                           "--durations-from=durations.json")
    assert [line for line in result.outlines if "::" in line] == [NODEIDS[2], NODEIDS[1], NODEIDS[0]]


def test_under_xdist_the_last_report_orders_the_next_run(pytester):
    """Without --durations-from, each xdist worker reads the --report-json file the last run left."""
    project = Project(pytester.path, pytester)
    project.write("conftest.py", (project.path / "conftest.py").read_text() + ORDER_CONFTEST)
    first = project.run("-n", "2", "--report-json=last.json", report=None)
    assert first.ret == 0, first.output
    assert json.loads((project.path / "order-gw0.json").read_text()) == NODEIDS     # no report yet
    (project.path / "last.json").write_text(json.dumps(report_of({NODEIDS[0]: 0.1, NODEIDS[1]: 0.2,
                                                                   NODEIDS[2]: 9.0})))
    second = project.run("-n", "2", "--report-json=last.json", report=None)
    assert second.ret == 0, second.output
    want = [NODEIDS[2], NODEIDS[1], NODEIDS[0]]
    assert [json.loads((project.path / f"order-gw{k}.json").read_text()) for k in (0, 1)] == [want, want]
