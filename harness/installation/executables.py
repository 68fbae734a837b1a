"""Where the programs the harness runs are: found from the running interpreter's installation first,
then PATH.

A virtual environment that is not activated (`venv/bin/python -m pytest`, an IDE, tox, a Makefile)
keeps its tools in venv/bin, which is not on PATH; a torch-mlir source build keeps torch-mlir-opt
in build/bin. Commands the harness writes (bundles, reports, messages) name the full paths found
here, or the interpreter itself (`python_command`), so they run in a shell that activated nothing.
Nothing here imports the packages it looks into: the controller stays free of torch.
"""
from __future__ import annotations

import functools
import importlib.metadata
import os
import shlex
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Iterator

from harness.installation.packages import module_paths

SOURCE_BUILD_LEVELS = 5  # how far above a package folder to look for a build tree's bin/


@functools.cache
def find_tool(name: str, distribution: str | None = None, module: str | None = None) -> str | None:
    """The full path of the executable `name`, or None. In order: inside the folder of `module` as the
    worker would import it, or in a bin/ above it (a source build); among the files `distribution`
    installed, its package's own binary before a console script; the interpreter's scripts
    directory; PATH."""
    for candidate in _candidates(name, distribution, module):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


def torch_mlir_opt() -> str | None:
    """torch-mlir-opt beside the torch_mlir the worker imports (wheel or source build), else on PATH."""
    return find_tool("torch-mlir-opt", distribution="torch-mlir", module="torch_mlir")


def python_command() -> str:
    """The running interpreter, quoted for a shell: `python` may not be this one outside a venv."""
    return shlex.quote(sys.executable)


def _candidates(name: str, distribution: str | None, module: str | None) -> Iterator[Path]:
    for path in module_paths(module) if module else ():
        folder = path if path.is_dir() else path.parent
        yield folder / name
        yield from sorted(folder.glob(f"*/{name}"))
        yield from (parent / "bin" / name for parent in folder.parents[:SOURCE_BUILD_LEVELS])
    if distribution:
        yield from _distribution_files(distribution, name)
    yield Path(sysconfig.get_path("scripts")) / name
    yield Path(sys.executable).parent / name


def _distribution_files(distribution: str, name: str) -> list[Path]:
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        return []
    mine = [f for f in files if f.name == name]
    mine.sort(key=lambda f: f.parts[0] == "..")  # the package's own binary, then a script in bin/
    return [Path(os.path.normpath(f.locate())) for f in mine]
