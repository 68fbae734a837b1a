"""Soak: 400 cases through a backend that hangs, segfaults, aborts, floods its output, runs slowly,
raises and returns wrong values at random (seeded), under `-n 2`.

Every case must appear exactly once in the JSON report with the outcome its fault implies, the
report must be complete and valid JSON, and no process of the run may be left afterwards. The
fault of each case is `fake_backends.fault_for(case id, seed)`, so this test knows every outcome.
"""
from __future__ import annotations

import collections
import json
import re

import pytest
from e2e_support import TINY_IDS
from fake_backends import FLOOD_BYTES, RANDOM_FAULTS, fault_for
from reliability_support import ProcessWatch, finish, kill_all, needs_proc, run_processes, start_pytest

pytestmark = needs_proc

SEED = 20261001
N_CASES = 400
HANG_TIMEOUT = 2  # seconds: the backend config's timeout, so hangs stay cheap
RUN_LIMIT = 600   # seconds for the whole soak run (about 2 minutes on 2 cores)

# fault -> (outcome, phase) the harness must record
EXPECTED = {
    "pass": ("passed", None),
    "slow": ("passed", None),
    "flood_stdout": ("passed", None),
    "flood_stderr": ("passed", None),
    "raise_lower": ("compile_error", "lower"),
    "raise_run": ("runtime_error", "run"),
    "wrong_values": ("mismatch", "compare"),
    "segfault": ("crashed", "compile"),
    "abort": ("crashed", "run"),
    "hang": ("timed_out", "lower"),
}
MESSAGE = {  # a fragment each non-passing fault's message must hold
    "raise_lower": "RuntimeError: injected compiler failure",
    "raise_run": "RuntimeError: injected compiler failure",
    "wrong_values": "elements differ beyond tolerance",
    "segfault": "worker killed by SIGSEGV",
    "abort": "worker killed by SIGABRT",
    "hang": f"timed out after {HANG_TIMEOUT} s in phase lower",
}


def soak_cases_module(n: int) -> str:
    """A case module of n tiny convolution cases with distinct ids, half forward, half backward,
    1d and 2d, with a few strides and paddings."""
    rows = []
    for i in range(n):
        size, stride, padding = 4 + i % 3, 1 + (i // 3) % 2, (i // 6) % 2
        spatial = [size] if i % 4 < 2 else [size, size]
        kernel = [3] * len(spatial)
        maker = "conv_forward_case" if i % 2 else "conv_backward_case"
        rows.append(f"    {maker}('s{i:03d}', input_shape={[1, 2, *spatial]}, weight_shape={[2, 2, *kernel]}, "
                    f"stride={stride}, padding={padding}),")
    return ("from harness.families.conv import conv_backward_case, conv_forward_case\n\n"
            "CASES = [\n" + "\n".join(rows) + "\n]\n")


def soak_ids(n: int) -> list[str]:
    return [f"{'conv_forward' if i % 2 else 'conv_backward'}/{1 if i % 4 < 2 else 2}d/s{i:03d}" for i in range(n)]


def test_soak_case_ids_cover_every_fault():
    """The seed gives a useful mix: every fault kind, hangs rare (each costs the timeout)."""
    kinds = collections.Counter(fault_for(case, SEED) for case in soak_ids(N_CASES) + TINY_IDS)
    assert set(kinds) == set(RANDOM_FAULTS) == set(EXPECTED)
    assert kinds["hang"] <= 12 and kinds["pass"] > N_CASES // 2
    assert len(set(soak_ids(N_CASES))) == N_CASES


@pytest.fixture
def soak_project(e2e_project):
    e2e_project.write("cases/soak.py", soak_cases_module(N_CASES))
    e2e_project.write("configs/soak.yaml", json.dumps({
        "name": "soak", "class": "fake_backends:RandomFaultBackend", "timeout": HANG_TIMEOUT,
        "options": {"seed": SEED}}))
    return e2e_project


@pytest.mark.soak
def test_soak_400_random_faults_under_xdist(soak_project):
    project = soak_project
    before = run_processes(project.path)
    assert not before, f"processes already running in the project: {before}"
    watch = ProcessWatch(project.path)
    proc = start_pytest(project, "-n", "2", "-q", "--backend=soak", "--report-json=report.json")
    watch.start(proc.pid)
    try:
        result = finish(project, proc, RUN_LIMIT)
    finally:
        watch.stop()
        left = watch.leftovers()
        kill_all(left)

    # No process of the run is left: workers, spares, xdist workers, py-spy.
    assert not left, f"{len(left)} processes of the run still alive:\n" + "\n".join(
        f"{pid}: {line}" for (pid, _), line in left.items())
    workers = [line for line in watch.seen.values() if "harness.worker" in line]
    assert workers, "the watch saw no harness worker: it is not watching the run"

    # The report is valid JSON, complete, and has every (case, backend) exactly once.
    shown_text = result.report_text and result.report_text[:2000]
    assert result.report is not None, f"report missing or invalid JSON:\n{shown_text}" \
                                      f"\n{result.output[-3000:]}"
    report = result.report
    assert report["complete"] is True
    ids = soak_ids(N_CASES) + TINY_IDS
    counts = collections.Counter((r["case"], r["backend"]) for r in report["results"])
    assert sorted(counts) == sorted((case, "soak") for case in ids)
    assert set(counts.values()) == {1}, [k for k, v in counts.items() if v != 1]

    # Each case has the outcome and phase its injected fault implies.
    wrong = []
    for record in report["results"]:
        fault = fault_for(record["case"], SEED)
        want = EXPECTED[fault]
        got = (record["outcome"], record["phase"])
        if got != want or MESSAGE.get(fault, "") not in record["message"]:
            wrong.append(f"{record['case']}: fault {fault}, want {want}, got {got}: {record['message'][:300]!r}")
        elif want[0] == "passed" and record["message"] != "":
            wrong.append(f"{record['case']}: passed with a message {record['message'][:300]!r}")
    assert not wrong, f"{len(wrong)} wrong outcomes:\n" + "\n".join(wrong[:20])

    # The floods passed without bloating anything: records stay small.
    assert max(len(r["message"]) for r in report["results"]) < 20_000
    assert len(result.report_text) < 4 * 2**20 < FLOOD_BYTES * 2

    kinds = collections.Counter(fault_for(case, SEED) for case in ids)
    failed = sum(n for kind, n in kinds.items() if EXPECTED[kind][0] != "passed")
    summary = report["summary"]["soak"]
    assert summary["total"] == len(ids)
    assert summary["verdicts"] == {"ok": len(ids) - failed, "unexpected_failure": failed}
    assert result.ret == 1
    assert re.search(rf"\b{failed} failed, {len(ids) - failed} passed\b", result.output), result.output[-3000:]
    assert "INTERNALERROR" not in result.output and "Traceback" not in result.output
    print(f"soak: {len(ids)} cases {dict(kinds)} in {result.seconds:.1f} s; "
          f"peak {watch.peak} processes of the run, {len(watch.seen)} seen, {len(workers)} harness workers")
