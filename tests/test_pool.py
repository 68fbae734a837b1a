"""harness.controller.pool on its own: a case interrupted from outside must not poison the next one."""
from __future__ import annotations

import shutil
import signal
import time
from pathlib import Path

import psutil
import pytest
from e2e_support import REPO

from harness.controller.forks import ForkedProcess
from harness.controller.pool import WorkerPool
from harness.families.conv import CONV_FORWARD, conv_forward_case
from harness.protocol import CacheSettings, RunRequest

pytestmark = pytest.mark.e2e   # every test starts workers

CASE = conv_forward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]).to_json()
EAGER = {"name": "eager", "class": "harness.backends.eager:EagerBackend", "options": {}, "tolerances": {}}
HANG = {"name": "hang", "class": "fake_backends:FaultyBackend", "tolerances": {},
        "options": {"fault": "hang", "phase": "compile"}}


def request(backend: dict) -> RunRequest:
    return RunRequest(case=CASE, backend=backend, family=CONV_FORWARD.worker_request(CASE["params"]))


class Interrupted(Exception):
    pass


def _interrupt(signum, frame):
    raise Interrupted


@pytest.fixture
def pool(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    pool = WorkerPool(tmp_path)
    yield pool
    pool.close()


def test_case_interrupted_by_the_outer_guard_leaves_no_stale_answer(pool):
    first = pool.run(request(EAGER), timeout=60)
    assert first.outcome == "passed", first.message  # the worker is warm now
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # what pytest-timeout does to a stuck item
    try:
        with pytest.raises(Interrupted):
            pool.run(request(HANG), timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The hung worker must be gone: a fresh one answers the next case.
    assert pool.run(request(EAGER), timeout=30).outcome == "passed"


def test_hang_is_timed_out_and_the_replacement_serves_the_next_case(pool):
    result = pool.run(request(HANG), timeout=2)
    assert (result.outcome, result.phase) == ("timed_out", "compile")
    assert "hang_in_native_code" in result.message
    assert pool.spare is not None  # started ahead after the first loss
    assert pool.run(request(EAGER), timeout=60).outcome == "passed"


def faulty(fault: str) -> dict:
    return {"name": fault, "class": "fake_backends:FaultyBackend", "tolerances": {},
            "options": {"fault": fault, "phase": "compile"}}


def test_a_worker_past_its_memory_limit_is_killed_and_the_case_is_crashed(pool):
    result = pool.run(request(faulty("memory_hog")), timeout=60, memory_limit_mb=600)
    assert (result.outcome, result.phase) == ("crashed", "compile")
    assert result.message.startswith("worker killed by the harness: memory limit of 600 MiB exceeded (resident ")
    assert pool.run(request(EAGER), timeout=60).outcome == "passed"  # the spare took over


def test_workers_are_recycled_after_n_cases(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    pool = WorkerPool(tmp_path, recycle_after=2)
    try:
        pids = []
        for _ in range(5):
            assert pool.run(request(EAGER), timeout=60).outcome == "passed"
            pids.append(pool.worker.proc.pid)
        assert pids[0] != pids[1] == pids[2] != pids[3] == pids[4]  # replaced after cases 2 and 4
    finally:
        pool.close()


def test_a_worker_over_the_rss_threshold_is_recycled(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    pool = WorkerPool(tmp_path, recycle_rss_mb=1)  # every worker is over 1 MiB: replaced after each case
    try:
        assert pool.run(request(EAGER), timeout=60).outcome == "passed"
        first = pool.worker.proc.pid
        assert pool.run(request(EAGER), timeout=60).outcome == "passed"
        assert pool.worker.proc.pid != first
    finally:
        pool.close()


def test_captured_output_keeps_only_its_tail(pool):
    from harness.controller.worker_process import OUTPUT_CAP_BYTES
    result = pool.run(request(faulty("big_print")), timeout=60)  # 30 MiB, line by line
    assert result.outcome == "passed", result.message
    assert len(pool.worker.output) <= OUTPUT_CAP_BYTES


def test_a_backend_that_kills_the_worker_while_preloading_costs_only_its_own_cases(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    (tmp_path / "dies_on_import.py").write_text("import os\nos._exit(7)\n")
    broken = {"name": "broken", "class": "fake_backends:FaultyBackend", "tolerances": {},
              "options": {"fault": "none", "preload": ["dies_on_import"]}}
    pool = WorkerPool(tmp_path, preload=[EAGER, broken])
    try:
        assert pool.run(request(EAGER), timeout=60).outcome == "passed"
        result = pool.run(request(broken), timeout=60)
        assert result.outcome == "crashed" and "exited with status 7" in result.message
        assert pool.run(request(EAGER), timeout=60).outcome == "passed"
    finally:
        pool.close()


def test_the_first_worker_says_which_preloaded_backends_it_could_not_create(tmp_path):
    broken = {"name": "broken", "class": "not_a_module:Backend", "tolerances": {}, "options": {}}
    pool = WorkerPool(tmp_path, preload=[EAGER, broken])
    try:
        assert pool.preload_problems() == {
            "broken": {"stage": "import", "error": "ModuleNotFoundError: No module named 'not_a_module'"}}
    finally:
        pool.close()


def test_preloaded_backends_are_ready_before_the_first_case(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    (tmp_path / "slow_import.py").write_text("import time\ntime.sleep(3)\n")
    slow = {"name": "slow", "class": "fake_backends:FaultyBackend", "tolerances": {},
            "options": {"fault": "none", "preload": ["slow_import"]}}
    pool = WorkerPool(tmp_path, preload=[slow])
    try:
        pool.start()
        pool.worker.wait_ready()  # start-up includes the 3 s import
        result = pool.run(request(slow), timeout=60)
        assert result.outcome == "passed" and sum(result.findings.phase_durations.values()) < 2
        assert result.versions == {}  # still reported with the backend's first result
    finally:
        pool.close()


# ------------------------------------------------------------------------------------- the fork server

SLOW_BACKEND = '''\
import time

import torch
from fake_backends import FaultyBackend

time.sleep(3)   # a compiler's libraries, slow to load


class SlowBackend(FaultyBackend):
    def versions(self):
        return {"threads": str(torch.get_num_threads())}
'''
SLOW = {"name": "slow", "class": "slow_backend:SlowBackend", "tolerances": {}, "options": {"fault": "none"}}


@pytest.fixture
def slow_project(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    (tmp_path / "slow_backend.py").write_text(SLOW_BACKEND)
    return tmp_path


def test_a_recycled_worker_is_a_fork_of_the_server_and_skips_its_imports(slow_project):
    """The server imports the preloaded backend's module once (3 s); a worker forked after that
    is ready in well under it, and computes with its pool's threads, not the server's one."""
    pool = WorkerPool(slow_project, recycle_after=1, preload=[SLOW], env={"OMP_NUM_THREADS": "3"})
    try:
        first = pool.run(request(SLOW), timeout=60)
        assert first.outcome == "passed" and first.versions == {"threads": "3"}, first.message
        started = time.monotonic()
        second = pool.run(request(SLOW), timeout=60)   # in the worker that replaced the recycled one
        assert second.outcome == "passed", second.message
        assert time.monotonic() - started < 2.5
        assert psutil.Process(pool.worker.proc.pid).ppid() == pool.forks.proc.pid
    finally:
        pool.close()


COMPILING_BACKEND = '''\
import sys

from fake_backends import FaultyBackend


class CompilingBackend(FaultyBackend):
    COMPILER_MODULES = ("its_compiler",)   # imported where it compiles: here never

    def versions(self):
        return {"compiler imported": str("its_compiler" in sys.modules)}
'''
COMPILING = {"name": "compiling", "class": "compiling_backend:CompilingBackend", "tolerances": {},
             "options": {"fault": "none"}}


def test_the_compilers_modules_come_after_the_first_worker_and_before_the_next(slow_project):
    """The first worker starts without the backend's compiler modules (a warm rerun needs none);
    the server imports them before its second fork, so the next worker has them."""
    (slow_project / "compiling_backend.py").write_text(COMPILING_BACKEND)
    (slow_project / "its_compiler.py").write_text("")
    pool = WorkerPool(slow_project, recycle_after=1, preload=[COMPILING])
    try:
        first, second = (pool.run(request(COMPILING), timeout=60) for _ in range(2))
        assert (first.outcome, second.outcome) == ("passed", "passed"), (first.message, second.message)
        assert (first.versions, second.versions) == ({"compiler imported": "False"}, {"compiler imported": "True"})
        assert psutil.Process(pool.worker.proc.pid).ppid() == pool.forks.proc.pid
    finally:
        pool.close()


def test_a_pool_whose_fork_server_died_goes_on(slow_project):
    """The server killed: the workers it forked die with it (a case they were given crashes); the
    pool goes on with workers that are not its (a fresh server's, or processes of its own)."""
    pool = WorkerPool(slow_project, recycle_after=1, preload=[SLOW])
    try:
        assert pool.run(request(SLOW), timeout=60).outcome == "passed"
        dead = pool.forks.proc
        dead.kill()
        dead.wait()
        outcomes = [pool.run(request(SLOW), timeout=60).outcome for _ in range(3)]
        assert outcomes[-1] == "passed" and set(outcomes) <= {"passed", "crashed"}, outcomes
        assert psutil.Process(pool.worker.proc.pid).ppid() != dead.pid
    finally:
        pool.close()


def test_a_forked_worker_that_segfaults_is_reported_with_its_signal(tmp_path):
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    pool = WorkerPool(tmp_path)
    try:
        result = pool.run(request(faulty("segfault")), timeout=60)
        assert (result.outcome, result.phase) == ("crashed", "compile")
        assert result.message.startswith("worker killed by SIGSEGV"), result.message
        assert isinstance(pool.worker.proc, ForkedProcess)   # the replacement: a fork too
        assert pool.run(request(EAGER), timeout=60).outcome == "passed"
    finally:
        pool.close()


def test_a_server_that_goes_before_forking_the_worker_costs_no_case(tmp_path):
    """Killed while it imports (or a warm server leaving as the run connects): the worker never
    existed, so the case runs in a worker of the pool's own, not as a crash."""
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    pool = WorkerPool(tmp_path)
    try:
        pool.start()   # asks the server for the first worker, which it forks once torch is imported
        pool.forks.proc.kill()
        result = pool.run(request(EAGER), timeout=60)
        assert result.outcome == "passed", result.message
        assert not isinstance(pool.worker.proc, ForkedProcess)
    finally:
        pool.close()


SLOW_ENTRY = {"name": "slow-entry", "class": "fake_backends:SlowEntryBackend", "tolerances": {},
              "options": {"seconds": 4}}


def slow_entry_written(cache: CacheSettings) -> bool:
    """Whether the cache holds SlowEntryBackend's entry (fake_backends.SLOW_ENTRY)."""
    entries = Path(cache.dir).glob("entries/*/*")
    return any(b"the slow entry of " in path.read_bytes() for path in entries if not path.name.startswith("."))


@pytest.mark.parametrize("recycle_after", [None, 1])
def test_a_case_does_not_wait_for_its_entries_and_its_worker_writes_them_before_it_ends(tmp_path, recycle_after):
    """The entry takes 4 s to make: the case's result comes before it is written (the worker's
    writer thread makes it), and the pool's close, or the worker's recycling, waits for it."""
    shutil.copy(REPO / "tests" / "fake_backends.py", tmp_path)
    cache = CacheSettings("on", str(tmp_path / "stages"), 1 << 30)
    pool = WorkerPool(tmp_path, recycle_after=recycle_after, cache=cache)
    try:
        assert pool.run(request(SLOW_ENTRY), timeout=60).outcome == "passed"
        assert slow_entry_written(cache) == (recycle_after == 1)   # recycled: written before the result returns
    finally:
        pool.close()
    assert slow_entry_written(cache)
