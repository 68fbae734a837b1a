"""The cache's directory of entries: one file per key, written atomically (a temporary file in
the same folder, then a rename: safe for pytest-xdist's processes, two pytest runs and a
network file system), read back only when its checksum holds (a damaged entry is a miss and one
warning line, then removed), touched on every hit and evicted least recently used first once the
directory passes its size cap. A worker's cache writes from a thread of its own
(harness.stages.writer): a case does not wait for its entries.

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
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from harness.settings import Settings
from harness.stages.writer import EntryWriter, Payload

FORMAT = 1
ENTRIES = "entries"
COMPILER_CACHES = "compilers"   # compilers' own caches, one folder each
WARNINGS_NOTE = "stage_cache_warnings"   # a case's notes: what the cache warned of while it ran
EVICT_TO = 0.8       # eviction stops once the entries take this share of the cap
CHECK_EVERY = 16     # puts between two measurements of the directory's size (the first put measures)
STALE_WRITE_S = 3600   # a write in progress this old was a killed process's: its file is removed


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
    line a damaged entry or an unwritable directory is worth. `background`: entries are written by
    a thread of their own (a worker's), `flush` waits for them."""

    def __init__(self, root: Path, mode: CacheMode, cap_bytes: int, warn: Callable[[str], None],
                 background: bool = False):
        self.root, self.mode, self.cap_bytes, self.warn = root, mode, cap_bytes, warn
        self.puts = 0
        self.broken = False   # the directory could not be written: said once, then no more writes
        self.writer = EntryWriter(self._store, warn) if background else None

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
        if self.writer is not None and self.writer.holds(key):   # written by this worker a moment ago
            self.writer.flush()
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

    def put(self, key: str, payload: Payload, seconds: float) -> None:
        """Write the entry: now, or queued for the writer thread. A payload given as a function is
        made where the entry is written (a function that raises: no entry)."""
        if not self.mode.writes or self.broken:
            return
        if self.writer is not None:
            self.writer.submit(key, payload, seconds)
        else:
            self._store(key, payload, seconds)

    def flush(self) -> None:
        """Wait until every entry put so far is written."""
        if self.writer is not None:
            self.writer.flush()

    def _store(self, key: str, payload: Payload, seconds: float) -> None:
        if self.broken:
            return
        try:
            data = payload if isinstance(payload, bytes) else payload()
        except (OSError, subprocess.SubprocessError):   # an entry that cannot be made (a link refused): none
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_atomically(path, _encode(data, seconds))
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
        """(path, last use, bytes) of every entry; files that vanish meanwhile are skipped, and a
        write in progress for an hour (its process was killed mid-write) is removed."""
        stale = time.time() - STALE_WRITE_S
        with contextlib.suppress(FileNotFoundError):
            for folder in os.scandir(self.root / ENTRIES):
                if not folder.is_dir():
                    continue
                for item in os.scandir(folder.path):
                    with contextlib.suppress(FileNotFoundError):
                        stat = item.stat()
                        if item.name.startswith("."):   # a write in progress
                            if stat.st_mtime < stale:
                                os.unlink(item.path)
                            continue
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
