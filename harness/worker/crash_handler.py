"""The worker's fatal-signal handler: its own native stack (py-spy) into its log, between the
markers of harness.native_stacks, then death by the original signal."""
from __future__ import annotations

import ctypes
import os
import subprocess

from harness.native_stacks import CRASH_BEGIN, CRASH_END, DUMP_TIMEOUT, FATAL_SIGNALS, PY_SPY

_KEPT_ALIVE: list[object] = []   # the installed callback: freed, it would crash the handler


def install_crash_dump() -> None:
    """In a worker: on a fatal signal, write our own native stack to stderr, then die of it.

    Registered before faulthandler, which chains to it after printing the Python stack. The
    handler runs Python in a dying process; if that fails the process still dies of the signal.
    """
    if PY_SPY is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(0x59616D61, ctypes.c_ulong(-1 & 0xFFFFFFFFFFFFFFFF), 0, 0, 0)  # PR_SET_PTRACER_ANY:
    # under Yama ptrace_scope=1 a child may not trace its parent unless the parent allows it
    libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.signal.restype = ctypes.c_void_p

    def on_fatal_signal(signum: int) -> None:
        os.write(2, f"\n{CRASH_BEGIN}\n".encode())
        try:
            subprocess.run([PY_SPY, "dump", "--native", "--pid", str(os.getpid())], stdout=2, stderr=2,
                           timeout=DUMP_TIMEOUT)
        except Exception:  # noqa: BLE001 - best effort in a dying process
            pass
        os.write(2, f"\n{CRASH_END}\n".encode())
        libc.signal(signum, None)  # SIG_DFL: die of the original signal, so the controller sees it
        os.kill(os.getpid(), signum)

    handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(on_fatal_signal)
    _KEPT_ALIVE.append(handler)  # the callback lives as long as the process
    for signum in FATAL_SIGNALS:
        libc.signal(int(signum), ctypes.cast(handler, ctypes.c_void_p))

