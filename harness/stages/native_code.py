"""The ExecutionEngine's machine code kept between runs: the object file the JIT compiled, linked
into a shared library by the system's C compiler, and loaded back with ctypes (the stage cache's
`machine_code`, harness.backends.mlir).

The JIT compiles for the host's CPU (its model and features), so an entry is keyed on them
(`host_cpu`): a library built on another CPU is never loaded. The library is linked with
`-z defs`, so one that needs a symbol the JIT took from the process (a runtime library of
`shared_libs`, a libgcc conversion this machine's libgcc lacks) does not link and is not cached.
The link runs where the entry is written, in a worker's writer thread (harness.stages.writer),
so a refused link leaves no entry and the case says `miss` (each run). Where there is no C
compiler the stage is computed every time (`uncacheable`).
"""
from __future__ import annotations

import _ctypes
import ctypes
import functools
import os
import platform
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Callable, Protocol

from harness.stages.fingerprinting import digest

# The /proc/cpuinfo fields that tell which CPU LLVM detects and which features it may use.
_CPU_FIELDS = ("vendor_id", "model", "model name", "cpu family", "flags",   # x86
               "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "Features")   # Arm


class ObjectCode(Protocol):
    def object_file(self, path: Path) -> None: ...


@functools.cache
def host_cpu() -> str:
    """A digest of the machine and its first CPU's model and features; "" when they cannot be read."""
    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return ""
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    values = {name.strip(): value.strip() for name, value in fields.items()}
    known = [values.get(name, "") for name in _CPU_FIELDS]
    return digest(platform.machine(), *known) if any(known) else ""


@functools.cache
def linker() -> str | None:
    """The C compiler that links the library (`$CC`, else `cc`), or None when there is none."""
    return shutil.which(os.environ.get("CC") or "cc")


def shared_library(code: ObjectCode) -> bytes:
    """The JIT's object file linked into a shared library, as bytes. Raises when it does not link."""
    return linked(object_code(code))


def library_later(code: ObjectCode) -> Callable[[], bytes]:
    """The machine code's stage-cache payload: the object file taken now (the engine is the case's),
    linked when the entry is written (by the worker's writer thread, while the case goes on)."""
    return functools.partial(linked, object_code(code))


def object_code(code: ObjectCode) -> bytes:
    with tempfile.TemporaryDirectory(prefix="harness-jit-") as folder:
        path = Path(folder, "code.o")
        code.object_file(path)
        return path.read_bytes()


def linked(objects: bytes) -> bytes:
    """An object file linked into a shared library, as bytes. Raises when it does not link."""
    compiler = linker()
    if compiler is None:
        raise FileNotFoundError("no C compiler to link the JIT's object file")
    with tempfile.TemporaryDirectory(prefix="harness-jit-") as folder:
        source, library = Path(folder, "code.o"), Path(folder, "code.so")
        source.write_bytes(objects)
        subprocess.run([compiler, "-shared", "-Wl,-z,defs", "-o", str(library), str(source), "-lm"],
                       check=True, capture_output=True)
        return library.read_bytes()


class SharedLibrary:
    """A shared library from `shared_library`, loaded; closed when this object goes."""

    def __init__(self, data: bytes):
        with tempfile.NamedTemporaryFile(prefix="harness-jit-", suffix=".so") as file:
            file.write(data)
            file.flush()
            self._library = ctypes.CDLL(file.name)   # mapped: the file may go
        weakref.finalize(self, _ctypes.dlclose, self._library._handle)

    def packed(self, name: str) -> int:
        """The address of the packed wrapper of function `name` (the ExecutionEngine's `_mlir_<name>`), 0 if none."""
        try:
            return ctypes.cast(self._library["_mlir_" + name], ctypes.c_void_p).value or 0
        except AttributeError:
            return 0
