"""Where a case hung or crashed: native stacks (py-spy) reduced to the culprit frame, and the
signatures built from them. End to end with a fake compiler library that deadlocks in a named
rewrite pattern and segfaults in a named pass (tests/native/fake_compiler.cpp)."""
from __future__ import annotations

import pytest
from e2e_support import PASS, PATTERN, build_fake_compiler

from harness import native_stacks

HANG_DUMP = """\
Process 4242: python -m harness.worker
Python v3.11.7 (/usr/bin/python3.11)

Thread 4243 (idle): "pool-worker"
    pthread_cond_wait (libc.so.6)

Thread 4242 (idle): "MainThread"
    0x7f025e8a412b (libc.so.6)
    pthread_mutex_lock (libc.so.6)
    mlir::(anonymous namespace)::ConvolutionBackwardPattern::matchAndRewrite (_mlir.so)
    mlir::PatternApplicator::matchAndRewrite (_mlir.so)
    _PyEval_EvalFrameDefault (libpython3.11.so.1.0)
    compile (harness/backends/mlir.py:85)
"""

CRASH_DUMP = """\
Thread 77 (idle): "MainThread"
    clock_nanosleep (libc.so.6)
    Popen._wait (subprocess.py:2040)
    install_crash_dump.<locals>.on_fatal_signal (harness/native_stacks.py:107)
    _CallPythonObject (callbacks.c:217)
    0x7f42ffc5a050 (libc.so.6)
    raise (libc.so.6)
    mlir::(anonymous namespace)::FakeLoweringPass::runOnOperation (libfake.so)
    fake_pass_crash (libfake.so)
"""


def test_the_culprit_of_a_hang_is_the_innermost_frame_outside_the_runtime():
    frames = native_stacks.main_thread(HANG_DUMP)
    assert frames[0].startswith("0x7f025e8a412b") and frames[-1].startswith("compile (")
    assert native_stacks.culprit(frames) == "mlir::(anonymous namespace)::ConvolutionBackwardPattern::matchAndRewrite"


def test_the_culprit_of_a_crash_is_found_below_the_crash_handler():
    frames = native_stacks.below_handler(native_stacks.main_thread(CRASH_DUMP))
    assert native_stacks.culprit(frames) == "mlir::(anonymous namespace)::FakeLoweringPass::runOnOperation"


def test_an_address_in_no_library_is_jit_compiled_code_and_python_frames_keep_their_file():
    assert native_stacks.culprit(["0x7f0000001234", "invokePacked (libMLIRExecutionEngine.so)"]) == "JIT-compiled code"
    assert native_stacks.culprit(["nanosleep (libc.so.6)", "slow_pass (passes.py:12)"]) == "slow_pass (passes.py)"
    assert native_stacks.culprit(["pthread_mutex_lock (libc.so.6)"]) is None


def test_the_crash_dump_is_split_from_the_output_before_it():
    output, dump = native_stacks.split_crash_dump(
        f"compiler output\n{native_stacks.CRASH_BEGIN}\n{CRASH_DUMP}{native_stacks.CRASH_END}\n")
    assert output == "compiler output\n"
    assert native_stacks.main_thread(dump)[0] == "clock_nanosleep (libc.so.6)"
    assert native_stacks.split_crash_dump("no dump here") == ("no dump here", None)


# ------------------------------------------------------------------ end to end, real py-spy


@pytest.fixture
def native_run(e2e_project):
    if native_stacks.PY_SPY is None:
        pytest.fail("py-spy is a dependency of the harness (pyproject.toml) but was not found")
    build_fake_compiler(e2e_project.path)
    e2e_project.add_fake("native-hang", "native_hang", "lower", "conv_backward/2d/tiny", timeout=3)
    e2e_project.add_fake("native-crash", "native_crash", "lower", "conv_forward/2d/tiny")
    return e2e_project.run("--backend=native-hang,native-crash")


def test_a_hang_in_native_code_is_reported_with_the_pattern_it_is_stuck_in(native_run):
    record = native_run.record("native-hang", "conv_backward/2d/tiny")
    assert (record["outcome"], record["phase"]) == ("timed_out", "lower")
    assert record["signature"] == f"hang in {PATTERN} during phase lower"
    assert record["message"].startswith(f"timed out after 3 s in phase lower; hung in {PATTERN}\n")
    assert "--- native stack of the stuck worker (py-spy) ---" in record["message"]
    assert "FaultyBackend.compile (fake_backends.py:" in record["message"]  # the Python frames too


def test_a_crash_in_native_code_is_reported_with_the_pass_it_crashed_in(native_run):
    record = native_run.record("native-crash", "conv_forward/2d/tiny")
    assert (record["outcome"], record["phase"]) == ("crashed", "lower")
    assert record["signature"] == f"SIGSEGV in {PASS}"
    assert record["message"].startswith(f"worker killed by SIGSEGV in {PASS} during phase lower")
    assert "--- native stack at the crash (py-spy) ---" in record["message"]
    assert "on_fatal_signal" not in record["message"]  # the handler's own frames are cut off
    others = [native_run.record(b, c) for b in ("native-hang", "native-crash")
              for c in ("conv_backward/2d/tiny_stride2",)]
    assert [r["outcome"] for r in others] == ["passed", "passed"]  # the replacement worker ran on
