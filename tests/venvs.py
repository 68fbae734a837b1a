"""Fresh virtual environments for the set-up tests, made in a second and without a download: a venv
whose site-packages and bin/ hold symlinks to the running environment's entries, less those a test
hides (a distribution's metadata, a package, a tool). Run unactivated, as CI scripts and IDEs do:
its python by full path, PATH reduced to the system's."""
from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Callable

SYSTEM_PATH = "/usr/bin:/bin"  # what a shell that activated nothing has of PATH, at least


def linked_venv(dest: Path, hide: Callable[[str], bool] = lambda name: False) -> Path:
    """A venv at dest with the running environment's packages and scripts linked in, except the
    entries (file or folder names) `hide` is true of; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    target_site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                      capture_output=True, text=True, check=True).stdout.strip())
    _link_entries(_site_dirs(), target_site, hide)
    _link_entries([Path(sysconfig.get_path("scripts"))], dest / "bin",
                  lambda name: hide(name) or name.startswith(("python", "activate")))
    return python


def unactivated_env(**extra: str) -> dict[str, str]:
    """The environment of a shell that activated nothing: this one with PATH cut to the system's
    and no PYTHONPATH or VIRTUAL_ENV, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTEST_XDIST_WORKER")}
    return {**env, "PATH": SYSTEM_PATH, **extra}


def _site_dirs() -> list[Path]:
    dirs = [*site.getsitepackages(), sysconfig.get_path("purelib"), sysconfig.get_path("platlib")]
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [Path(d) for d in dict.fromkeys(dirs) if Path(d).is_dir()]


def _link_entries(sources: list[Path], target: Path, hide: Callable[[str], bool]) -> None:
    for source in sources:
        for entry in source.iterdir():
            link = target / entry.name
            if entry.name != "__pycache__" and not hide(entry.name) and not os.path.lexists(link):
                link.symlink_to(entry)


def harness_wheel(tmp: Path, repo: Path) -> Path:
    """A wheel of the harness, built without a download from a copy of the repository (a build
    leaves build/ behind)."""
    wheels, source = tmp / "wheels", tmp / "source"
    shutil.copytree(repo, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "node_modules", "reports", ".hypothesis*", "__pycache__", "examples"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *OFFLINE_BUILD, "-q", "-w", str(wheels),
                    str(source)], check=True, capture_output=True)
    return next(wheels.glob("torch_backend_e2e-*.whl"))


def venv_with_harness(dest: Path, wheel: Path) -> Path:
    """A linked venv without this checkout's harness, the wheel pip-installed into it; its python."""
    python = linked_venv(dest, hide=lambda name: name == "harness" or "torch_backend_e2e" in name
                         or "e2e_example" in name)
    pip_install(python, wheel)
    return python


def pip_install(python: Path, *what: Path) -> None:
    """pip install, no dependencies, no download (setuptools from this environment builds a source tree)."""
    subprocess.run([python, "-m", "pip", "install", "--no-deps", *OFFLINE_BUILD, "-q", *map(str, what)],
                   check=True, capture_output=True)


OFFLINE_BUILD = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []  # else pip fetches it
