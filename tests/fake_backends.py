"""Misbehaving backends for the harness's own tests (never used by the product).

`FaultyBackend` runs the case in eager PyTorch but, for case ids matching the `only` glob,
injects the fault named by its `fault` option in the phase named by `phase` (`twice_as_slow`:
its run does the work twice, for --perf; `scaled`: every floating output x (1 + its `relative`
option, or half its dtype's default rtol), a known error for margins and drift).
`RandomFaultBackend` injects a fault per case chosen at random, seeded (`fault_for`): the soak.
"""
from __future__ import annotations

import ctypes
import fnmatch
import hashlib
import importlib
import os
import random
import stat
import subprocess
import sys
import time

import torch

from harness.backend_interface import Backend
from harness.outcomes import Phase
from harness.worker.compare import DEFAULT_TOLERANCES

_libc = ctypes.CDLL(None)


def hang_in_native_code() -> None:
    """Lock a non-recursive mutex twice: a deadlock no Python signal handler can interrupt."""
    mutex = ctypes.create_string_buffer(64)  # all-zero bytes: PTHREAD_MUTEX_INITIALIZER on glibc
    _libc.pthread_mutex_lock(mutex)
    _libc.pthread_mutex_lock(mutex)


def _perturb(outputs, how, relative=None):
    outputs = [o.clone() if isinstance(o, torch.Tensor) else o for o in outputs]
    first = outputs[0]
    if how == "wrong_values":
        first.mul_(1.01).add_(0.5)
    elif how == "wrong_values_all":   # every floating output: the message must name each one
        for o in outputs:
            if isinstance(o, torch.Tensor) and o.is_floating_point():
                o.mul_(1.01).add_(0.5)
    elif how == "scaled":   # every floating output x (1 + `relative`, or half its dtype's rtol)
        for o in outputs:
            if isinstance(o, torch.Tensor) and o.is_floating_point():
                o.mul_(1 + (relative or DEFAULT_TOLERANCES[str(o.dtype).removeprefix("torch.")][0] / 2))
    elif how == "nan":
        first.view(-1)[0] = float("nan")
    elif how == "wrong_shape":
        outputs[0] = torch.cat([first, first], dim=0)
    elif how == "wrong_dtype":
        outputs[0] = first.to(torch.float64 if first.dtype != torch.float64 else torch.float32)
    return outputs


def native_fault(entry_point: str):
    """Call into tests/native/fake_compiler.cpp, built into the project as libfake_compiler.so."""
    return lambda: getattr(ctypes.CDLL(os.path.abspath("libfake_compiler.so")), entry_point)()


# A child process that starts a grandchild in a session of its own (out of the worker's process
# group), writes both pids to tree_pids.txt, then grows past any memory limit 64 MiB at a time.
CHILD_HOG = """
import os, subprocess, sys, time
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
with open("tree_pids.txt", "w") as out:
    out.write(f"{os.getpid()} {grandchild.pid}")
hog = []
while True:
    hog.append(bytearray(64 * 2**20))
    time.sleep(0.01)
"""


def child_memory_hog() -> None:
    """What iree-compile or an Inductor compile worker can do: the memory is the child's, not the worker's."""
    subprocess.run([sys.executable, "-c", CHILD_HOG], check=True)


FAULTS = {
    "hang": hang_in_native_code,
    "segfault": lambda: ctypes.string_at(0),
    "abort": lambda: _libc.abort(),
    "exit": lambda: os._exit(3),
    "raise": lambda: (_ for _ in ()).throw(RuntimeError("injected compiler failure: 'fake.op' failed to legalize")),
    "print_flood": lambda: print("x" * 1_000_000, flush=True),
    "child_memory_hog": child_memory_hog,
    "memory_hog": lambda: [bytearray(64 * 2**20) for _ in range(10**6)],  # 64 MiB a step, pages touched
    "big_print": lambda: [print("y" * 1023, flush=True) for _ in range(30 * 1024)],  # 30 MiB, line by line
    "native_hang": native_fault("fake_pattern_hang"),
    "native_crash": native_fault("fake_pass_crash"),
}
RESULT_FAULTS = {"wrong_values", "wrong_values_all", "scaled", "nan", "wrong_shape", "wrong_dtype"}


class FaultyBackend(Backend):
    def __init__(self, name, options):
        super().__init__(name, options)
        for module in self.options.get("preload", []):  # to be stuck or die with a compiler's libraries
            importlib.import_module(module)                # loaded (benchmarks/recovery.py)

    def _armed(self, program, phase_name) -> bool:
        return (fnmatch.fnmatchcase(program.name, self.options.get("only", "*"))
                and self.options.get("phase", "compile") == phase_name)

    def compile(self, program, case):
        case.notes["threads"] = case.threads   # what a runtime would be given (--perf fixes it)
        for name in ("export", "import", "lower", "compile"):
            case.enter(Phase(name))
            if self._armed(program, name) and self.options["fault"] in FAULTS:
                FAULTS[self.options["fault"]]()
        return program

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        if self._armed(program, "run") and self.options["fault"] in FAULTS:
            FAULTS[self.options["fault"]]()
        with torch.no_grad():
            outputs = program.module(*inputs)
            if self._armed(program, "run") and self.options["fault"] == "twice_as_slow":   # the same work again
                program.module(*inputs)
        if fnmatch.fnmatchcase(program.name, self.options.get("only", "*")) and self.options["fault"] in RESULT_FAULTS:
            return _perturb(outputs, self.options["fault"], self.options.get("relative"))
        return outputs


# --------------------------------------------------------------------------- random faults (the soak)

# What RandomFaultBackend does to a case, with its weight out of 1000 and the phase it happens in.
RANDOM_FAULTS = {           # kind: (weight, phase)
    "pass": (775, None),
    "slow": (40, "run"),            # sleeps SLOW_SECONDS, then passes
    "flood_stdout": (20, "compile"),  # prints FLOOD_BYTES to stdout, then passes
    "flood_stderr": (20, "run"),      # ... to stderr
    "raise_lower": (30, "lower"),
    "raise_run": (20, "run"),
    "wrong_values": (30, "compile"),  # results perturbed: a mismatch in phase compare
    "segfault": (25, "compile"),
    "abort": (25, "run"),
    "hang": (15, "lower"),            # a native deadlock: only the timeout stops it
}
SLOW_SECONDS = 0.5
FLOOD_BYTES = 3_000_000
FLOOD_LAST_LINE = "flood: last line"
# Only when named by RandomFaultBackend's `force` option (kind: phase).
ON_REQUEST_FAULTS = {
    "await_signal": "run",       # write the worker's pid to pids/<case id, '/' as '_'>.pid, then wait
    "await_with_child": "run",   # start a child process (a compiler's stand-in), then as await_signal
    "big_flood": "compile",      # write the `flood_bytes` option's worth to fd 1, then to fd 2; pass
    "big_flood_abort": "run",    # the same, then abort
}


def fault_for(case_id: str, seed: int) -> str:
    """The fault RandomFaultBackend injects into a case: a pure function of the case id and the seed,
    so a test can compute every case's expected outcome."""
    rng = random.Random(hashlib.sha256(f"{seed}:{case_id}".encode()).digest())
    kinds = list(RANDOM_FAULTS)
    return rng.choices(kinds, weights=[RANDOM_FAULTS[k][0] for k in kinds])[0]


def _flood(stream) -> None:
    line = "f" * 99 + "\n"
    stream.write(line * (FLOOD_BYTES // len(line)))
    stream.write(FLOOD_LAST_LINE + "\n")
    stream.flush()


def _big_flood(case_id: str, nbytes: int, notes: dict) -> None:
    """Write nbytes of numbered lines to fd 1 and to fd 2 (as native code would print), then a last
    line naming the case. Notes whether fd 2 is a pipe (nothing on disk can grow) and the time."""
    started = time.monotonic()
    for fd in (1, 2):
        chunk = b"".join(b"%07d %s\n" % (i, b"f" * 91) for i in range(10_000))  # 1 MB
        for _ in range(max(1, nbytes // len(chunk))):
            os.write(fd, chunk)
    os.write(2, f"{FLOOD_LAST_LINE} of {case_id}\n".encode())
    notes.update(output_is_pipe=stat.S_ISFIFO(os.fstat(2).st_mode),
                 flood_seconds=round(time.monotonic() - started, 3))


def _await_signal(case_id: str) -> None:
    os.makedirs("pids", exist_ok=True)
    path = os.path.join("pids", case_id.replace("/", "_") + ".pid")
    with open(path + ".tmp", "w") as out:
        out.write(str(os.getpid()))
    os.replace(path + ".tmp", path)  # the test never reads a half-written pid
    time.sleep(3600)


def _await_with_child(case_id: str) -> None:
    """A child that would sleep for an hour (its pid in pids/<case>.child), then wait as await_signal."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    os.makedirs("pids", exist_ok=True)
    path = os.path.join("pids", case_id.replace("/", "_") + ".child")
    with open(path + ".tmp", "w") as out:
        out.write(str(child.pid))
    os.replace(path + ".tmp", path)
    _await_signal(case_id)


RANDOM_ACTIONS = {
    "slow": lambda case_id: time.sleep(SLOW_SECONDS),
    "flood_stdout": lambda case_id: _flood(sys.stdout),
    "flood_stderr": lambda case_id: _flood(sys.stderr),
    "raise_lower": lambda case_id: FAULTS["raise"](),
    "raise_run": lambda case_id: FAULTS["raise"](),
    "segfault": lambda case_id: FAULTS["segfault"](),
    "abort": lambda case_id: FAULTS["abort"](),
    "hang": lambda case_id: hang_in_native_code(),
    "await_signal": _await_signal,
    "await_with_child": _await_with_child,
}


class RandomFaultBackend(Backend):
    """Eager PyTorch with a fault per case chosen by `fault_for(case id, options.seed)`.

    Options: `seed` (int, default 0); `force` ({glob: kind}, the first matching glob wins over
    the random choice; kinds are those of RANDOM_FAULTS and ON_REQUEST_FAULTS); `flood_bytes`
    (per stream, for the big_flood kinds; default FLOOD_BYTES).
    """

    def _fault(self, program) -> tuple[str, str | None]:
        for pattern, kind in (self.options.get("force") or {}).items():  # noqa: B007 - kind is used after it
            if fnmatch.fnmatchcase(program.name, pattern):
                break
        else:
            kind = fault_for(program.name, int(self.options.get("seed", 0)))
        phase = ON_REQUEST_FAULTS[kind] if kind in ON_REQUEST_FAULTS else RANDOM_FAULTS[kind][1]
        return kind, phase

    def _inject(self, program, phase_name: str, case) -> None:
        kind, phase = self._fault(program)
        if phase != phase_name:
            return
        if kind.startswith("big_flood"):
            _big_flood(program.name, int(self.options.get("flood_bytes", FLOOD_BYTES)), case.notes)
            if kind == "big_flood_abort":
                FAULTS["abort"]()
        elif kind in RANDOM_ACTIONS:
            RANDOM_ACTIONS[kind](program.name)

    def compile(self, program, case):
        case.notes["threads"] = case.threads   # what a runtime would be given (--perf fixes it)
        for name in ("export", "import", "lower", "compile"):
            case.enter(Phase(name))
            self._inject(program, name, case)
        return program

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        self._inject(program, "run", case)
        with torch.no_grad():
            outputs = program.module(*inputs)
        if self._fault(program)[0] == "wrong_values":
            return _perturb(outputs, "wrong_values")
        return outputs


# --------------------------------------------------------------------------- history (tests/test_history.py)

class VersionedBackend(Backend):
    """Eager PyTorch whose verdict on a case depends on the case's name and on what changed, for
    the history's five kinds of case: `*always_fail*` always fails; `*flip*` fails on every other
    attempt (flip_attempts.txt in the project lists them); `*regress*` fails, and `*fixed*`
    passes, when the torch-mlir the worker would import is not the `baseline` version."""

    def compile(self, program, case):
        case.enter(Phase.COMPILE)
        name = program.name
        moved = self.versions()["torch-mlir"] != self.options["baseline"]
        if ("always_fail" in name or ("regress" in name and moved) or ("fixed" in name and not moved)
                or ("flip" in name and self._flip_fails())):
            raise RuntimeError(f"{name} fails on torch-mlir {self.versions()['torch-mlir']}")
        return program

    @staticmethod
    def _flip_fails() -> bool:
        """Each attempt adds the worker's pid to flip_attempts.txt; the odd ones fail."""
        with open("flip_attempts.txt", "a+") as attempts:
            attempts.write(f"{os.getpid()}\n")
            attempts.seek(0)
            return len(attempts.read().split()) % 2 == 1

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        with torch.no_grad():
            return program.module(*inputs)

    def versions(self):
        from harness.installation.packages import version_text

        return {"torch-mlir": version_text("torch-mlir")}   # a source build's from its version file


class PackageVersionBackend(Backend):
    """Eager PyTorch that fails to lower from a version of the package `fakecc` on (the option
    `broken_from`), as a compiler release that breaks a lowering would: for the bisection's tests,
    which install fakecc's versions from a folder of wheels built in the test."""

    def compile(self, program, case):
        import fakecc
        from packaging.version import Version

        case.enter(Phase.LOWER)
        if Version(fakecc.__version__) >= Version(self.options["broken_from"]):
            raise RuntimeError("error: fakecc cannot lower aten.convolution_backward")
        return program

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        with torch.no_grad():
            return program.module(*inputs)

    def versions(self):
        import fakecc

        return {"fakecc": fakecc.__version__}


# --------------------------------------------------------------------------- a slow cache entry (tests/test_pool.py)

class SlowEntryBackend(Backend):
    """Eager PyTorch whose compile is one cached stage, `slow`, whose entry takes `seconds` to make
    (as a link of machine code does, in the worker's writer thread): what a worker still holds
    when its pool ends."""

    def compile(self, program, case):
        from harness.stages.reuse import Stage, cached

        case.enter(Phase.COMPILE)
        seconds = float(self.options.get("seconds", 2))
        stage = Stage("slow", lambda: program.name, lambda: {}, {}, lambda value: lambda: _slowly(value, seconds),
                      lambda data: data.decode(), fingerprinted=False)
        cached(case, stage, lambda: SLOW_ENTRY + program.name)
        return program

    def run(self, program, inputs, case):
        case.enter(Phase.RUN)
        with torch.no_grad():
            return program.module(*inputs)


SLOW_ENTRY = "the slow entry of "


def _slowly(value: str, seconds: float) -> bytes:
    time.sleep(seconds)
    return value.encode()
