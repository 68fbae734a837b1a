"""The commands the harness prints to run a case again: a bundle's README.md and repro.py, the
reports' "rerun" lines, `python -m harness reduce`'s. Each runs as printed, from any folder:

    cd PROJECT && PYTHON -m pytest [-c INI] --rootdir=PROJECT [FLAGS] -o e2e_workers=0 --backend=NAME NODEID

PROJECT is the rootdir of the run (a node id is relative to it); the ini, named with -c when
there is one, gives the project's settings even when the path collected lies outside PROJECT (a
reduced case's case.yaml); FLAGS are the project's settings typed on the run's command line
(configs, cases, expectations, families and their options), their paths made absolute, with
the run's `-p` plugins and `-o` overrides; one case runs without pytest-xdist's workers. The
interpreter is the running one, so a shell that activated no venv runs it too. The worker puts
PROJECT on its import path, so a backend class in a local module imports as in the run.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.families.interface import Option
from harness.installation.executables import python_command
from harness.outcomes import Expected
from harness.settings import declarations

SERIAL = ("-o", "e2e_workers=0")   # the harness's own key, so valid with or without pytest-xdist

# Settings beside the project's (`shared`) that change what a case does, so a rerun keeps them.
_OUTCOME_SETTINGS = ("memory_limit_mb",)


@dataclasses.dataclass(frozen=True)
class Place:
    """Where and how a run happened: what every rerun command of it repeats."""

    rootdir: Path
    inifile: Path | None = None
    flags: tuple[str, ...] = ()       # the project's typed settings and -p plugins, ready for the shell

    def pytest(self, *args: str) -> str:
        """`cd PROJECT && PYTHON -m pytest ...ARGS`, quoted for a POSIX shell."""
        ini = ["-c", str(self.inifile)] if self.inifile else []
        words = [*ini, f"--rootdir={self.rootdir}", *self.flags, *args]
        return f"cd {shlex.quote(str(self.rootdir))} && {python_command()} -m pytest {shlex.join(words)}"

    def case(self, backend: str, nodeid: str, expected: Expected) -> str:
        """The command that runs one (case, backend) result again, in this process (one case gains
        nothing from pytest-xdist's workers, which would only hide its output)."""
        crash_set = ["--run-crash-set"] if expected is Expected.CRASH else []
        return self.pytest(*SERIAL, f"--backend={backend}", *crash_set, nodeid)

    def cases_file(self, backend: str, path: Path, home: Path, case_id: str) -> str:
        """The command that runs one case of a cases file (a reduced case's case.yaml): `home` is
        the file it is collected under, the project's case module it joins or the cases file itself."""
        return self.pytest(*SERIAL, f"--cases-file={self._path(path)}", f"--backend={backend}",
                           f"{self._path(home)}::{case_id}[{backend}]")

    def _path(self, path: Path) -> str:
        """Relative to the rootdir when under it (as node ids are), else absolute."""
        return os.path.relpath(path, self.rootdir) if self.rootdir in Path(path).parents else str(path)


def typed_flags(typed: Callable[[str], Any], here: Path, options: Iterable[Option] = (),
                leave_out: Iterable[str] = ()) -> tuple[str, ...]:
    """The project's settings typed on a command line (`typed(dest)`: pytest's getoption, or a
    tool's argparse namespace), as flags; a path typed relative to `here` becomes absolute, since
    the rerun starts in the rootdir. `leave_out`: dests the rerun gives itself."""
    flags: list[str] = []
    for name, declared in declarations():
        if not declared.flag or name in leave_out or not (declared.shared or name in _OUTCOME_SETTINGS):
            continue
        value = typed(name)
        for one in (value if isinstance(value, list) else [value]):
            if one is None or one is False:
                continue
            if declared.path:
                one = os.path.abspath(here / one)
            flags.append(f"{declared.flag}={one:g}" if isinstance(one, float) else f"{declared.flag}={one}")
    for option in options:
        value = typed(option.dest)
        if value is not None and option.dest not in leave_out:
            flags.append(f"--{option.name}={os.path.abspath(here / value) if option.path else value}")
    return tuple(flags)


def plugin_flags(args: Iterable[str]) -> tuple[str, ...]:
    """The `-p NAME` plugins a pytest command line named: a run without plugin autoloading
    (PYTEST_DISABLE_PLUGIN_AUTOLOAD, `-p harness.plugin`) needs them again."""
    args = list(args)
    plugins = []
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args):
            plugins.append(args[i + 1])
        elif arg.startswith("-p") and len(arg) > 2:
            plugins.append(arg[2:])
    return tuple(word for name in plugins for word in ("-p", name))
