"""The one pool factory (harness.controller.workers): fuzz, reduce and bisect workers start in the
project's rootdir with the families' environment, and run a case with its expectation entry's timeout.

The project: the tiny cases (tests/e2e_support.py), a family `needs_env` whose workers need
POOL_PROBE (probe_family.py), and two backends of probe_backend.py: `probe`, whose lowering fails
with the worker's POOL_PROBE in its message, and `probe-hang`, whose lowering hangs.
xfail/probe-hang.yaml gives every conv_backward case ENTRY_TIMEOUT seconds, where its config gives
CONFIG_TIMEOUT. The tests run from another folder: a worker started there could not import the
backends.
"""
from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from e2e_support import Project as TinyProject
from e2e_support import python_path_env

from harness.bisect.engine import Bisection
from harness.bisect.environments import Probe
from harness.controller.workers import Role, case_workers
from harness.fuzz.engine import Fuzzer, FuzzPlan
from harness.helper_process import Interpreter
from harness.project import Project
from harness.reduce.engine import Reduction
from harness.settings import Settings

ENTRY_TIMEOUT = 2
CONFIG_TIMEOUT = 30
SEEN = "the worker sees POOL_PROBE=from-the-family"

FAMILY = """\
from harness.families.interface import Family

FAMILIES = [Family(name="needs_env", validate=dict, builder="probe_family:never_built",
                   worker_env={"POOL_PROBE": "from-the-family"})]
"""
BACKEND = """\
import os
import time

from harness.backend_interface import Backend
from harness.outcomes import Phase


class EnvProbe(Backend):
    OPTIONS = {"hang": "hang in lower (after writing the time it started to hang_started.txt)"}

    def compile(self, program, case):
        case.enter(Phase.LOWER)
        if self.options.get("hang"):
            with open("hang_started.txt", "w") as out:   # the worker's folder: the rootdir
                out.write(repr(time.time()))
            time.sleep(600)
        raise RuntimeError(f"the worker sees POOL_PROBE={os.environ.get('POOL_PROBE')}")
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    tiny = TinyProject(tmp_path_factory.mktemp("pool_factory"))
    tiny.write("probe_family.py", FAMILY)
    tiny.write("probe_backend.py", BACKEND)
    for name, options in (("probe", {}), ("probe-hang", {"hang": True})):
        tiny.write(f"configs/{name}.yaml", f"name: {name}\nclass: probe_backend:EnvProbe\n"
                                           f"timeout: {CONFIG_TIMEOUT}\noptions: {json.dumps(options)}\n")
    tiny.write("xfail/probe-hang.yaml", f"- id: conv_backward/*\n  reason: hangs in lower\n"
                                        f"  timeout: {ENTRY_TIMEOUT}\n")
    (tiny.path / "crash_sets").mkdir()
    root = tiny.path
    return Project(Settings(rootdir=root, families=["probe_family.py:FAMILIES"], cases_dirs=[root / "cases"],
                            configs_dirs=[root / "configs"], xfail_dir=root / "xfail",
                            crash_sets_dir=root / "crash_sets", builtin_cases=False))


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # not the project's rootdir
    monkeypatch.setenv("PYTHONPATH", python_path_env())
    monkeypatch.delenv("POOL_PROBE", raising=False)


def hung_for(project: Project) -> float:
    """Seconds from the hang's start to now: the case's time without the worker's start-up."""
    return time.time() - float((project.settings.rootdir / "hang_started.txt").read_text())


@pytest.mark.parametrize("role", list(Role))
def test_every_role_starts_its_workers_in_the_rootdir_with_the_families_environment(project, role):
    workers = case_workers(project, [project.config("probe")], role)
    assert workers.pool.rootdir == project.settings.rootdir != Path.cwd()
    assert workers.pool.env["POOL_PROBE"] == "from-the-family"
    assert [spec["name"] for spec in workers.pool.preload] == ["probe"]
    assert (workers.pool.recycle_rss_mb is None) == (role is Role.BISECT)   # a probe's pool runs one case
    tiny = project.find_case("conv_backward/2d/tiny")
    assert workers.timeout(tiny, project.config("probe-hang")) == ENTRY_TIMEOUT
    assert workers.timeout(tiny, project.config("probe")) == CONFIG_TIMEOUT
    assert workers.pool.worker is None   # nothing starts until a case runs


@pytest.mark.e2e
def test_fuzz_workers_get_the_families_environment_and_the_entrys_timeout(project):
    plan = FuzzPlan(backend="probe", against="probe-hang", family="conv_backward", database_dir=None)
    fuzzer = Fuzzer(plan, project)
    params = project.families["conv_backward"].validate({"input_shape": [1, 2, 4], "weight_shape": [2, 2, 3]})
    try:
        results = fuzzer.evaluate(params, math.inf, "test").results
    finally:
        fuzzer.workers.close()
    assert SEEN in results["probe"]["message"]
    assert results["probe-hang"]["outcome"] == "timed_out"
    assert results["probe-hang"]["message"].startswith(f"timed out after {ENTRY_TIMEOUT} s in phase lower")


@pytest.mark.e2e
def test_reduce_workers_get_the_families_environment_and_the_entrys_timeout(project, tmp_path):
    case = project.find_case("conv_backward/2d/tiny")
    reduction = Reduction(case, project, project.config("probe"), tmp_path / "seen")
    try:
        assert SEEN in reduction._original_failure().signature
    finally:
        reduction.workers.close()

    reduction = Reduction(case, project, project.config("probe-hang"), tmp_path / "hung")
    assert reduction.timeout == ENTRY_TIMEOUT   # the candidates' timeout too
    try:
        failure = reduction._original_failure()
    finally:
        reduction.workers.close()
    assert (failure.phase, failure.signature.startswith(("timeout", "hang"))) == ("lower", True)
    assert hung_for(project) < CONFIG_TIMEOUT / 2


@pytest.mark.e2e
def test_bisect_workers_get_the_families_environment_and_the_entrys_timeout(project):
    case = project.find_case("conv_backward/2d/tiny")

    def bisection(backend: str) -> Bisection:
        return Bisection(case, project, project.config(backend), ["this Python"],
                         lambda index: Probe("this Python", Interpreter()), "version")

    assert SEEN in bisection("probe").probe(0).signature
    failure = bisection("probe-hang").probe(0)
    assert (failure.phase, failure.signature.startswith(("timeout", "hang"))) == ("lower", True)
    assert hung_for(project) < CONFIG_TIMEOUT / 2
