"""The key of a stage's entry: a hash of everything that determines the stage's output.

    stage_key(stage, source, builds, options)

`source`: the fingerprint of the stage's input (harness.worker fingerprints), or for the first
stage the case's parameters; `builds`: a digest per package that computes the stage; `options`:
the backend config's options. The harness's own code is in every key (harness.stages.reuse.HARNESS),
so an edit to a family or a backend misses.

A package's build digest is its version as harness.installation.packages.locate finds it (a source
build without one: "unknown (source build)") and, for the packages whose builds change under one
version (a compiler its developer rebuilds, the harness itself), the content of its files: a hash
per file, remembered by size, modification time and inode in a memo file, so that a rerun reads
only the files that changed (a rebuild that rewrote a library byte for byte still hits). torch's
12,000 files are left to its version: a build of torch from source carries its commit there."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from harness.files import write_text_atomically
from harness.installation.packages import locate, module_paths

FORMAT = 1
BUILDS_MEMO = "builds"   # the folder of the stage cache where build_digest keeps its memo files
SKIPPED_FOLDERS = {"__pycache__"}


def stage_key(stage: str, source: str, builds: Mapping[str, str], options: Mapping[str, Any]) -> str:
    text = json.dumps({"format": FORMAT, "stage": stage, "source": source, "builds": dict(builds),
                       "options": options}, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


@functools.cache
def build_digest(distribution: str, module: str | None = None, *, memo_dir: Path | None = None,
                 files: bool = True) -> str:
    """The version of `distribution` (imported as `module`, by default the name its own suggests)
    and, with `files`, the hash of its files' contents (memoised under memo_dir). Computed once per
    process: a worker sees the build it imported."""
    package = locate(distribution, module)
    if package is None:
        return "absent"
    folders = sorted(module_paths(package.module)) if files else []
    if not folders:
        return package.known_version
    where = hashlib.sha256("\0".join(map(str, folders)).encode()).hexdigest()[:12]   # one memo per build folder
    hashes = _file_hashes(folders, memo_dir / f"{package.module}-{where}.json" if memo_dir else None)
    return hashlib.sha256(json.dumps([package.known_version, hashes], sort_keys=True).encode()).hexdigest()


def file_digest(path: Path) -> str:
    """One file's content hash, read again only when its size or time changed (in this process);
    "" for no file (a module without one)."""
    try:
        stat = path.stat()
    except OSError:
        return ""
    return _file_digest(path, stat.st_size, stat.st_mtime_ns) or ""


@functools.cache
def _file_digest(path: Path, size: int, mtime_ns: int) -> str | None:
    return _content_hash(path)


def _file_hashes(folders: list[Path], memo_path: Path | None) -> dict[str, str]:
    """{folder's position: path within it: SHA-256} of every file under the folders (a namespace
    package has several; two checkouts of one commit hash alike); a file whose size, time and
    inode the memo knows is not read again."""
    memo = _read_memo(memo_path)
    hashes, fresh = {}, {}
    for folder, path in _files(folders):
        try:
            stat = path.stat()
        except OSError:
            continue
        seen = [stat.st_size, stat.st_mtime_ns, stat.st_ino]
        known = memo.get(str(path))
        digest = known[3] if known and known[:3] == seen else _content_hash(path)
        if digest is None:
            continue
        hashes[f"{folders.index(folder)}:{path.name if path == folder else path.relative_to(folder)}"] = digest
        fresh[str(path)] = [*seen, digest]
    if memo_path is not None and fresh != memo:
        with contextlib.suppress(OSError):   # a read-only cache folder: the next run reads the files again
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(memo_path, json.dumps(fresh))
    return hashes


def _files(folders: list[Path]) -> Iterator[tuple[Path, Path]]:
    """(its folder, the file) of every file under the folders (a module's file is its own folder)."""
    for folder in folders:
        if folder.is_file():
            yield folder, folder
            continue
        for root, dirs, names in os.walk(folder, followlinks=True):   # a build tree links its files
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED_FOLDERS)
            for name in sorted(names):
                if not name.endswith(".pyc"):
                    yield folder, Path(root) / name


def _content_hash(path: Path) -> str | None:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    return digest.hexdigest()


def _read_memo(path: Path | None) -> dict[str, list]:
    if path is None:
        return {}
    try:
        memo = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}   # absent or damaged: every file is read again
    return memo if isinstance(memo, dict) else {}
