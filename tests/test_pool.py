"""harness.pool on its own: a case interrupted from outside must not poison the next one."""
from __future__ import annotations

import shutil
import signal

import pytest

from e2e_support import REPO
from harness.families.conv_params import conv_forward_case
from harness.pool import WorkerPool

CASE = conv_forward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]).to_json()
EAGER = {"name": "eager", "class": "harness.backends.eager:EagerBackend", "options": {}, "tolerances": {}}
HANG = {"name": "hang", "class": "fake_backends:FaultyBackend", "tolerances": {},
        "options": {"fault": "hang", "phase": "compile"}}


def request(backend: dict) -> dict:
    return {"type": "run", "case": CASE, "backend": backend}


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
    assert first["outcome"] == "passed", first["message"]  # the worker is warm now
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)  # what pytest-timeout does to a stuck item
    try:
        with pytest.raises(Interrupted):
            pool.run(request(HANG), timeout=60)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    # The hung worker must be gone: a fresh one answers the next case.
    assert pool.run(request(EAGER), timeout=30)["outcome"] == "passed"


def test_hang_is_timed_out_and_the_replacement_serves_the_next_case(pool):
    result = pool.run(request(HANG), timeout=2)
    assert (result["outcome"], result["phase"]) == ("timed_out", "compile")
    assert "hang_in_native_code" in result["message"]
    assert pool.spare is not None  # started ahead after the first loss
    assert pool.run(request(EAGER), timeout=60)["outcome"] == "passed"
