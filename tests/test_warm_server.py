"""harness.controller.warm_server: a fork server kept between runs. A second pool's worker comes from
the first pool's server, with its own run's environment; another key, a killed server or a folder
open to others gives another server (or none); an idle one leaves; a worker dies with its run."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from e2e_support import REPO

from harness.controller import warm_server
from harness.controller.pool import WorkerPool
from harness.families.conv import CONV_FORWARD, conv_forward_case
from harness.protocol import RunRequest

pytestmark = pytest.mark.e2e   # every test starts workers

CASE = conv_forward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]).to_json()
PROBE_BACKEND = '''\
import os

from fake_backends import FaultyBackend


class ProbeBackend(FaultyBackend):
    def versions(self):
        return {"server": str(os.getppid()), "cwd": os.getcwd(), "columns": os.environ.get("COLUMNS", "")}
'''


def probe(fault: str = "none", phase: str = "compile") -> dict:
    return {"name": "probe", "class": "probe_backend:ProbeBackend", "tolerances": {},
            "options": {"fault": fault, "phase": phase}}


def request(backend: dict) -> RunRequest:
    return RunRequest(case=CASE, backend=backend, family=CONV_FORWARD.worker_request(CASE["params"]))


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project with the probe backend, and a folder of servers of its own: its servers killed after."""
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    (tmp_path / "probe_backend.py").write_text(PROBE_BACKEND)
    runtime = Path(tempfile.mkdtemp(prefix="warm-"))   # short: a socket's address has 108 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    (tmp_path / "runtime").symlink_to(runtime)
    yield tmp_path
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(runtime) in part for part in proc.info["cmdline"] or []):
            proc.kill()
    shutil.rmtree(runtime)


def ran(project, env: dict | None = None, backend: dict | None = None) -> dict:
    """One case in a new warm pool, closed after it: the probe's versions and the outcome."""
    pool = WorkerPool(project, env=env, warm=True)
    try:
        result = pool.run(request(backend or probe()), timeout=60)
        return {**(result.versions or {}), "outcome": result.outcome, "message": result.message}
    finally:
        pool.close()


def test_a_second_run_forks_its_worker_from_the_first_runs_server_with_its_own_environment(project):
    first = ran(project, env={"COLUMNS": "81"})
    second = ran(project, env={"COLUMNS": "82"})   # a variable of the shell that torch does not read
    assert (first["outcome"], second["outcome"]) == ("passed", "passed"), (first, second)
    assert first["server"] == second["server"] and psutil.pid_exists(int(first["server"]))
    assert "--listen" in psutil.Process(int(first["server"])).cmdline()   # a warm server, not the pool's own
    assert (first["columns"], second["columns"]) == ("81", "82")
    assert second["cwd"] == str(project)


def test_another_environment_is_served_by_another_server(project):
    first = ran(project, env={"SOME_SETTING": "1"})
    second = ran(project, env={"SOME_SETTING": "2"})
    assert first["outcome"] == second["outcome"] == "passed"
    assert first["server"] != second["server"]


def test_the_key_holds_the_harness_code_and_torchs_install(monkeypatch, tmp_path):
    key = warm_server.server_key(sys.executable, {}, tmp_path, [], None)
    monkeypatch.setattr(warm_server, "build_digest", lambda *args, **kwargs: "another harness")
    edited = warm_server.server_key(sys.executable, {}, tmp_path, [], None)
    monkeypatch.setattr(warm_server, "_torch_install", lambda: ["another torch"])
    assert len({key, edited, warm_server.server_key(sys.executable, {}, tmp_path, [], None)}) == 3


def test_a_killed_server_is_replaced(project):
    first = ran(project)
    killed = psutil.Process(int(first["server"]))
    killed.kill()   # its socket file stays, with no one listening
    killed.wait(timeout=30)
    second = ran(project)
    assert second["outcome"] == "passed", second["message"]
    assert second["server"] != first["server"]


def test_a_crash_costs_the_case_and_the_server_stays(project):
    crashed = ran(project, backend=probe("segfault"))
    assert crashed["outcome"] == "crashed" and "SIGSEGV" in crashed["message"], crashed
    assert ran(project)["outcome"] == "passed"


def test_an_idle_server_leaves_and_takes_its_socket(project, monkeypatch):
    monkeypatch.setattr(warm_server, "IDLE_S", 1.0)
    server = int(ran(project)["server"])
    deadline = time.monotonic() + 30
    while psutil.pid_exists(server) and psutil.Process(server).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the idle server is still there"
        time.sleep(0.1)
    assert not list((project / "runtime").glob("*/*.sock"))


def test_a_folder_open_to_others_gets_no_server(project):
    folder = (project / "runtime").resolve() / f"torch-backend-e2e-{os.getuid()}"
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    pool = WorkerPool(project, warm=True)
    try:
        assert pool.run(request(probe()), timeout=60).outcome == "passed"
        assert pool.forks.proc is not None   # the pool's own server, which dies with it
    finally:
        pool.close()
    assert not list(folder.iterdir())


RUN_AND_HANG = '''\
import sys
from pathlib import Path

sys.path[:0] = sys.argv[2:]   # not PYTHONPATH: the run's environment must be the test's, for its key

from harness.controller.pool import WorkerPool
from test_warm_server import probe, request

pool = WorkerPool(Path(sys.argv[1]), warm=True)
pool.run(request(probe("hang")), timeout=600)
'''


def test_a_worker_dies_with_its_run_and_the_server_stays(project):
    """The run killed mid-case (SIGKILL: nothing of it runs after): its worker, a fork of the warm
    server and not its child, goes too; the server stays, listening."""
    (project / "run_and_hang.py").write_text(RUN_AND_HANG)
    run = subprocess.Popen([sys.executable, "run_and_hang.py", str(project), str(REPO), str(REPO / "tests")],
                           cwd=project)
    deadline = time.monotonic() + 60
    while not (workers := _forked_workers(project)):
        assert time.monotonic() < deadline and run.poll() is None, "no worker forked for the run"
        time.sleep(0.1)
    time.sleep(1.0)   # into the case
    run.kill()
    run.wait()
    gone, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, "the worker outlived its run"
    (server,) = _servers(project)   # still there, listening
    assert list((project / "runtime").glob("*/*.sock"))


def _servers(project) -> list[int]:
    """The warm servers of the project's folder of servers (its path is on their command lines)."""
    folder = str((project / "runtime").resolve())
    return [p.pid for p in psutil.process_iter(["cmdline", "ppid"])
            if "--listen" in (p.info["cmdline"] or []) and any(folder in part for part in p.info["cmdline"])
            and not any(folder in part for part in _cmdline(p.info["ppid"]))]


def _forked_workers(project) -> list[psutil.Process]:
    """The live workers those servers forked (a fork keeps its server's command line)."""
    return [child for server in _servers(project) for child in psutil.Process(server).children()
            if child.status() != psutil.STATUS_ZOMBIE]


def _cmdline(pid: int) -> list[str]:
    try:
        return psutil.Process(pid).cmdline()
    except psutil.Error:
        return []


def test_a_folder_too_deep_for_a_sockets_address_gets_no_server(project, monkeypatch):
    deep = project / ("d" * 100)
    deep.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(deep))
    pool = WorkerPool(project, warm=True)
    try:
        assert pool.run(request(probe()), timeout=60).outcome == "passed"
        assert pool.forks.proc is not None   # the pool's own server
    finally:
        pool.close()


def test_the_servers_command_lists_and_stops_them(project):
    server = ran(project)["server"]
    listed = subprocess.run([sys.executable, "-m", "harness", "servers"], capture_output=True, text=True)
    assert listed.returncode == 0 and f"pid {server}, " in listed.stdout, listed.stdout + listed.stderr
    stopped = subprocess.run([sys.executable, "-m", "harness", "servers", "stop"], capture_output=True, text=True)
    assert stopped.stdout.strip() == "1 warm server stopped", stopped.stdout + stopped.stderr
    assert not psutil.pid_exists(int(server)) or psutil.Process(int(server)).status() == psutil.STATUS_ZOMBIE
    assert ran(project)["server"] != server


def test_an_environment_too_large_for_a_request_gets_no_server(project):
    pool = WorkerPool(project, env={"LARGE": "x" * 40_000}, warm=True)
    try:
        assert pool.run(request(probe()), timeout=60).outcome == "passed"
        assert pool.forks.proc is not None   # the pool's own server
    finally:
        pool.close()


COMPILING_BACKEND = '''\
import sys

from fake_backends import FaultyBackend


class CompilingBackend(FaultyBackend):
    COMPILER_MODULES = ("its_compiler",)

    def versions(self):
        return {"server": str(__import__("os").getppid()), "compiler imported": str("its_compiler" in sys.modules)}
'''
COMPILING = {"name": "compiling", "class": "compiling_backend:CompilingBackend", "tolerances": {},
             "options": {"fault": "none"}}


def test_the_pools_of_one_run_share_its_server_which_leaves_with_them(project):
    """As two xdist workers' pools: one server, which imports the compilers' modules before the
    second pool's first worker, and exits once both pools have closed."""
    (project / "compiling_backend.py").write_text(COMPILING_BACKEND)
    (project / "its_compiler.py").write_text("")
    pools = [WorkerPool(project, preload=[COMPILING], run="a run's id") for _ in range(2)]
    try:
        first, second = (pool.run(request(COMPILING), timeout=60) for pool in pools)
        assert (first.outcome, second.outcome) == ("passed", "passed"), (first.message, second.message)
        assert first.versions["server"] == second.versions["server"]
        assert (first.versions["compiler imported"], second.versions["compiler imported"]) == ("False", "True")
        assert ran(project)["server"] != first.versions["server"]   # a warm server is another
    finally:
        for pool in pools:
            pool.close()
    server = psutil.Process(int(first.versions["server"]))
    deadline = time.monotonic() + 30
    while server.is_running() and server.status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the run's server outlived its pools"
        time.sleep(0.1)
    left = sorted(p.suffix for p in (project / "runtime").glob("*/*"))
    assert left == [".lock", ".log", ".sock"], left   # the warm server's: the run's server took its own
