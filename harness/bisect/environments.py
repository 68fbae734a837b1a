"""Where a bisection probes a version: a venv that holds the probed distributions at that version
and shares everything else with the current environment, cached from one bisection to the next.

The venv has no packages of its own beyond the probed ones (installed by this interpreter's pip,
`--python`, without dependencies); a .pth file adds the current environment's site-packages
after its own, so the probed version shadows the current one and every other package (torch,
the harness itself) is the current one. A subpackage that only the current version has would
still be found there: the probes of a namespace package such as `iree` see the probed version's
iree.compiler and iree.runtime, which is what the backends import.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from packaging.version import Version

from harness.bisect.versions import index_options
from harness.files import user_cache_dir
from harness.helper_process import Interpreter

DEFAULT_CACHE = user_cache_dir() / "bisect"
INSTALLED = "installed.json"   # written last: a venv without it is a failed or interrupted install


class NotInstallable(Exception):
    """pip could not install the version here; the message is pip's error line."""


@dataclasses.dataclass
class Probe:
    label: str                  # "3.10.0", or a source build's folder
    interpreter: Interpreter
    cached: bool = False


def venv_probe(dists: list[str], version: Version, cache: Path, index_url: str | None,
               find_links: Path | None) -> Probe:
    """The venv with `dists` at `version` (made and installed unless cached)."""
    shared = _shared_site_packages()
    key = hashlib.sha1("\0".join([sys.prefix, *shared]).encode()).hexdigest()[:8]
    folder = cache / f"{'+'.join(dists)}-{version}-py{sys.version_info.major}{sys.version_info.minor}-{key}"
    python = folder / "bin" / "python"
    if (folder / INSTALLED).is_file():
        return Probe(str(version), Interpreter(str(python)), cached=True)
    shutil.rmtree(folder, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, capture_output=True)
    own = Path(sysconfig.get_path("purelib", vars={"base": str(folder), "platbase": str(folder)}))
    (own / "_shared_environment.pth").write_text(
        "".join(f"import site; site.addsitedir({path!r})\n" for path in shared))
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                           "--disable-pip-version-check", "--no-input", *(f"{d}=={version}" for d in dists),
                           *index_options(index_url, find_links)], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
        raise NotInstallable((errors or done.stderr.strip().splitlines() or ["pip failed"])[0])
    (folder / INSTALLED).write_text(json.dumps({"dists": dists, "version": str(version)}) + "\n")
    return Probe(str(version), Interpreter(str(python)))


def source_probe(folder: Path) -> Probe:
    """A source build: this interpreter, the folder first on the path."""
    return Probe(str(folder), Interpreter(sys.executable, (str(folder),)))


def _shared_site_packages() -> list[str]:
    """The current environment's site-packages (a venv's, else the interpreter's)."""
    return [path for path in site.getsitepackages() if Path(path).is_dir()]
