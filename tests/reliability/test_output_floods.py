"""Output floods: a case that prints 50 MB to stdout and 50 MB to stderr neither blocks nor bloats
the run. Its record keeps a bounded tail that ends with the last line printed (when the worker
dies after the flood), the report stays small, the pytest process's memory does not grow with
the output, and the worker's output goes through a pipe, never a growing file.
"""
from __future__ import annotations

import json

import pytest
from e2e_support import PROBE_CONFTEST
from fake_backends import FLOOD_LAST_LINE
from reliability_support import needs_proc

pytestmark = needs_proc

FLOOD = 50_000_000              # bytes per stream
MESSAGE_BOUND = 10_000          # characters of a record's message
CONTROLLER_RSS_BOUND = 100      # MiB: the pytest process peaks at about 37 MiB, with or without a flood

# The controller's peak resident memory, written at the end of the session.
RSS_PROBE = PROBE_CONFTEST + '''_probe_modules = pytest_sessionfinish


def pytest_sessionfinish(session):
    _probe_modules(session)
    # VmHWM, not getrusage: ru_maxrss keeps the high-water mark of the process before exec (the
    # forking pytest that started this one, with torch imported)
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(os.path.join(str(session.config.rootpath), "controller_rss.json"), "w") as out:
        json.dump({"max_rss_mib": kib / 1024}, out)
'''

FORCED = {  # case -> (kind, outcome, phase)
    "conv_forward/2d/tiny": ("big_flood", "passed", None),
    "conv_backward/2d/tiny": ("big_flood_abort", "crashed", "run"),
}


@pytest.fixture
def flood_run(e2e_project, run_cache):
    """One run (shared by this module's tests): a 50 + 50 MB flood that passes, one that aborts
    after it, and a quiet case."""
    if "flood" not in run_cache:
        project = e2e_project
        project.write("conftest.py", RSS_PROBE)
        project.write("configs/flood.yaml", json.dumps({
            "name": "flood", "class": "fake_backends:RandomFaultBackend", "timeout": 120,
            "options": {"force": {case: kind for case, (kind, _, _) in FORCED.items()} | {"*": "pass"},
                        "flood_bytes": FLOOD}}))
        result = project.run("--backend=flood")
        result.report_size = (project.path / "report.json").stat().st_size
        result.controller_rss = json.loads((project.path / "controller_rss.json").read_text())["max_rss_mib"]
        run_cache["flood"] = result
    return run_cache["flood"]


def test_flood_neither_blocks_nor_bloats_the_run(flood_run):
    result = flood_run
    for case, (_kind, outcome, phase) in FORCED.items():
        record = result.record("flood", case)
        assert (record["outcome"], record["phase"]) == (outcome, phase), record["message"][:3000]
        assert len(record["message"]) < MESSAGE_BOUND, len(record["message"])
        assert record["duration_s"] < 60, record["duration_s"]  # 100 MB of output costs seconds
    assert result.record("flood", "conv_backward/2d/tiny_stride2")["outcome"] == "passed"
    assert result.ret == 1  # the aborted case
    assert result.report_size < 100_000
    assert len(result.output) < 200_000
    assert result.controller_rss < CONTROLLER_RSS_BOUND, f"pytest's peak RSS {result.controller_rss:.0f} MiB"
    print(f"flood: report {result.report_size} B, pytest output {len(result.output)} B, controller peak RSS "
          f"{result.controller_rss:.0f} MiB, durations {[result.record('flood', c)['duration_s'] for c in FORCED]}")


def test_a_worker_dying_after_a_flood_keeps_the_tail(flood_run):
    message = flood_run.record("flood", "conv_backward/2d/tiny")["message"]
    assert "worker killed by SIGABRT" in message and " during phase run" in message
    tail = message.split("--- last output of the worker ---\n", 1)[1]
    assert f"{FLOOD_LAST_LINE} of conv_backward/2d/tiny" in tail  # the last line printed
    assert "Fatal Python error: Aborted" in tail                   # and what came after it


def test_captured_output_goes_through_a_pipe_and_only_its_tail_is_kept(flood_run):
    """Nothing the worker prints lands in a file that could grow: the controller drains a pipe into
    a buffer of the last harness.controller.worker_process.OUTPUT_CAP_BYTES (the controller's RSS is checked above)."""
    notes = flood_run.record("flood", "conv_forward/2d/tiny")["notes"]
    print(f"flood: {2 * FLOOD} bytes written in {notes['flood_seconds']} s")
    assert notes["output_is_pipe"] is True
