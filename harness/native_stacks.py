"""Where a worker hangs or crashes in native code: py-spy's native + Python stacks, reduced to
the innermost frame that names the culprit (a rewrite pattern, a pass, the JIT-compiled code).

Hang: the controller dumps the stuck worker before killing it (`dump(pid)`).
Crash: the worker's fatal-signal handler (harness.worker.crash_handler) dumps itself into its own
log, between the markers below, and then dies of the original signal; the controller splits the
dump from the log (`split_crash_dump`).
"""
from __future__ import annotations

import re
import signal
import subprocess

from harness.installation.executables import find_tool

PY_SPY = find_tool("py-spy", distribution="py-spy")  # None: stacks unavailable, said in the run's summary


DUMP_TIMEOUT = 15.0         # seconds; py-spy reads the symbol tables of every loaded library


CRASH_BEGIN = "--- native stack at the crash (py-spy) ---"


CRASH_END = "--- end of native stack ---"


FATAL_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)


JIT_CODE = "JIT-compiled code"


_FRAME = re.compile(r"^\s+(?P<name>.+?)(?: \((?P<where>[^()]*)\))?$")


# Frames that never explain a hang or a crash: the C and C++ runtimes, libffi, the interpreter.
_RUNTIME_LIBS = re.compile(r"^(?:libc|libm|libpthread|ld-linux[\w-]*|libffi|libstdc\+\+|libgcc_s|"
                           r"libpython[\d.]*|python[\d.]*)\.so")


_RUNTIME_NAMES = re.compile(r"^(?:_?_?Py|_Py|__|std::|pthread_|clock_nanosleep|nanosleep|epoll_wait|poll|"
                            r"select|syscall|raise|abort|gsignal|ffi_call|_call_function_pointer|"
                            r"_ctypes_callproc|PyCFuncPtr_call|closure_fcn|_CallPythonObject)")


def dump(pid: int) -> str | None:
    """py-spy's native and Python stacks of a live process, or None when it cannot tell."""
    if PY_SPY is None:
        return None
    try:
        done = subprocess.run([PY_SPY, "dump", "--native", "--pid", str(pid)], capture_output=True,
                              text=True, timeout=DUMP_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 and "Thread" in done.stdout else None


def main_thread(dump_text: str) -> list[str]:
    """The frame lines of the thread that runs the case, innermost first."""
    lines = dump_text.splitlines()
    start = next((i for i, text in enumerate(lines) if text.startswith("Thread ") and '"MainThread"' in text), None)
    if start is None:
        return []
    frames = []
    for line in lines[start + 1:]:
        if not line.startswith(" "):
            break
        frames.append(line.strip())
    return frames


def below_handler(frames: list[str]) -> list[str]:
    """A crash dump's frames below our own fatal-signal handler: the crash site and its callers."""
    handler = next((i for i, f in enumerate(frames) if "on_fatal_signal " in f), None)
    return frames if handler is None else frames[handler + 1:]


def culprit(frames: list[str]) -> str | None:
    """The innermost frame that is neither a runtime library nor the interpreter."""
    for frame in frames:
        match = _FRAME.match(" " + frame)
        if match is None:   # an empty line
            continue
        name, where = match.group("name"), match.group("where") or ""
        if name.startswith("0x"):
            if not where:  # an address in no library: code the ExecutionEngine generated
                return JIT_CODE
            continue
        if _RUNTIME_LIBS.match(where) or _RUNTIME_NAMES.match(name) or re.search(r"\.c(:\d+)?$", where):
            continue
        python = re.match(r"(.+\.py):\d+$", where)  # a Python frame: keep its file, drop the line
        return f"{name} ({python.group(1)})" if python else name
    return None


def split_crash_dump(log_text: str) -> tuple[str, str | None]:
    """A crashed worker's output, and the native stack its handler wrote at the end, if any."""
    start = log_text.rfind(CRASH_BEGIN)
    if start < 0:
        return log_text, None
    end = log_text.find(CRASH_END, start)
    return log_text[:start], log_text[start + len(CRASH_BEGIN):end if end >= 0 else None]

