"""The cache's directory of entries: one file per key, written atomically (a temporary file in
the same folder, then a rename: safe for pytest-xdist's processes, two pytest runs and a
network file system), read back only when its checksum holds (a damaged entry is a miss and one
warning line, then removed), touched on every hit and evicted least recently used first once the
directory passes its size cap.

Compilers that keep caches of their own (Inductor's FX graph and kernel caches) keep them under
`compilers/<name>` beside the entries, with their own keys; `clear` removes them too, the size cap
does not count them.

An entry is a header line of JSON (the format, the payload's length and SHA-256, what computing
it cost in seconds), then the payload's bytes."""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterator

from harness.settings import Settings

FORMAT = 1
ENTRIES = "entries"
COMPILER_CACHES = "compilers"   # compilers' own caches, one folder each
WARNINGS_NOTE = "stage_cache_warnings"   # a case's notes: what the cache warned of while it ran
EVICT_TO = 0.8       # eviction stops once the entries take this share of the cap
CHECK_EVERY = 16     # puts between two measurements of the directory's size (the first put measures)


class CacheMode(enum.Enum):
    """--cache: what a run does with the cache."""

    OFF = "off"       # neither reads nor writes
    READ = "read"     # reuses entries, writes none (a shared cache a run must not change)
    WRITE = "write"   # computes every stage and writes its entry (refreshes the cache)
    ON = "on"         # reuses entries and writes the missing ones

    @property
    def reads(self) -> bool:
        return self in (CacheMode.READ, CacheMode.ON)

    @property
    def writes(self) -> bool:
        return self in (CacheMode.WRITE, CacheMode.ON)


@dataclasses.dataclass(frozen=True)
class Entry:
    payload: bytes
    seconds: float   # what computing the stage cost when it was written: what a hit saves


class StageCache:
    """The entries under `root`, used as `mode` says, kept under `cap_bytes`; `warn` gets the one
    line a damaged entry or an unwritable directory is worth."""

    def __init__(self, root: Path, mode: CacheMode, cap_bytes: int, warn: Callable[[str], None]):
        self.root, self.mode, self.cap_bytes, self.warn = root, mode, cap_bytes, warn
        self.puts = 0
        self.broken = False   # the directory could not be written: said once, then no more writes

    @classmethod
    def of(cls, settings: Settings, warn: Callable[[str], None]) -> "StageCache":
        """The cache the settings name (--cache, --cache-dir, --cache-size)."""
        return cls(settings.cache_dir, CacheMode(settings.cache), settings.cache_size, warn)

    def path(self, key: str) -> Path:
        return self.root / ENTRIES / key[:2] / key

    def compiler_cache(self, compiler: str) -> Path:
        """The folder of a compiler's own cache."""
        return self.root / COMPILER_CACHES / compiler

    def get(self, key: str) -> Entry | None:
        """The entry, or None: a miss (absent, damaged, or the mode does not read)."""
        if not self.mode.reads:
            return None
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        entry = _decode(data)
        if entry is None:
            self.warn(f"stage cache: {path} is damaged (cut short or overwritten): recomputed, and the entry removed")
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)   # its last use: eviction goes least recently used first
        return entry

    def put(self, key: str, payload: bytes, seconds: float) -> None:
        if not self.mode.writes or self.broken:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, _encode(payload, seconds))
        except OSError as e:
            self.broken = True
            self.warn(f"stage cache: cannot write under {self.root} ({e.strerror or e}): this run writes no entries")
            return
        self.puts += 1
        if self.puts % CHECK_EVERY == 1:
            self.evict()

    def evict(self) -> int:
        """Remove the least recently used entries while the entries pass the cap; how many went."""
        entries = sorted(self._entries(), key=lambda e: e[1])   # oldest use first
        total = sum(size for _, _, size in entries)
        if total <= self.cap_bytes:
            return 0
        removed = 0
        for path, _, size in entries:
            if total <= self.cap_bytes * EVICT_TO:
                break
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
            total -= size
        return removed

    def info(self) -> dict:
        entries = list(self._entries())
        oldest = min((used for _, used, _ in entries), default=None)
        return {"directory": str(self.root), "entries": len(entries), "bytes": sum(s for _, _, s in entries),
                "cap_bytes": self.cap_bytes, "oldest_use": oldest}

    def clear(self) -> int:
        """Remove every entry and the compilers' own caches; how many entries there were."""
        removed = 0
        for path, _, _ in self._entries():
            with contextlib.suppress(OSError):
                path.unlink()
                removed += 1
        shutil.rmtree(self.root / COMPILER_CACHES, ignore_errors=True)
        return removed

    def _entries(self) -> Iterator[tuple[Path, float, int]]:
        """(path, last use, bytes) of every entry; files that vanish meanwhile are skipped."""
        with contextlib.suppress(FileNotFoundError):
            for folder in os.scandir(self.root / ENTRIES):
                if not folder.is_dir():
                    continue
                for item in os.scandir(folder.path):
                    with contextlib.suppress(FileNotFoundError):
                        if item.name.startswith("."):   # a write in progress
                            continue
                        stat = item.stat()
                        yield Path(item.path), stat.st_mtime, stat.st_size


def _encode(payload: bytes, seconds: float) -> bytes:
    header = {"format": FORMAT, "bytes": len(payload), "sha256": hashlib.sha256(payload).hexdigest(),
              "seconds": round(seconds, 6)}
    return json.dumps(header).encode() + b"\n" + payload


def _decode(data: bytes) -> Entry | None:
    """The entry, or None when its header or checksum does not hold."""
    line, _, payload = data.partition(b"\n")
    try:
        header = json.loads(line)
        good = (header["format"] == FORMAT and header["bytes"] == len(payload)
                and header["sha256"] == hashlib.sha256(payload).hexdigest())
        return Entry(payload, float(header["seconds"])) if good else None
    except (ValueError, KeyError, TypeError):
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    """A temporary file beside `path` (hidden: a listing skips it), then one rename."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".", suffix=".partial")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
