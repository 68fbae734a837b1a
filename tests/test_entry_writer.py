"""A worker's stage cache writes its entries from a thread (harness.stages.writer): `put` returns
before the entry is written, a lookup of a queued key waits for it, `flush` waits for all, an
entry that cannot be made (a link refused) leaves none, an unexpected failure is one warning and
the thread goes on, and a write a killed process left half done is removed once it is stale."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from harness.stages.entries import STALE_WRITE_S, CacheMode, StageCache

KEY, OTHER = "ab" + "0" * 62, "cd" + "1" * 62


def background(tmp_path: Path) -> tuple[StageCache, list[str]]:
    warnings: list[str] = []
    return StageCache(tmp_path / "c", CacheMode.ON, 1 << 30, warnings.append, background=True), warnings


def gated(gate: threading.Event, data: bytes):
    """A payload made only once `gate` is set (a link that has not finished)."""
    def make() -> bytes:
        assert gate.wait(30)
        return data
    return make


def test_put_returns_before_the_entry_is_written_and_flush_waits_for_it(tmp_path):
    store, warnings = background(tmp_path)
    gate = threading.Event()
    store.put(KEY, gated(gate, b"linked"), 2.0)
    time.sleep(0.2)
    assert not store.path(KEY).exists()   # the writer waits on the gate; the case went on
    gate.set()
    store.flush()
    assert store.path(KEY).exists() and warnings == []


def test_a_lookup_of_a_queued_key_waits_for_its_entry(tmp_path):
    store, _ = background(tmp_path)
    gate = threading.Event()
    store.put(KEY, gated(gate, b"linked"), 2.0)
    threading.Timer(0.3, gate.set).start()
    entry = store.get(KEY)   # another backend of the same worker asks for the same export, say
    assert entry is not None and entry.payload == b"linked"
    assert store.get(OTHER) is None   # a key never put: no wait, a miss


def test_an_entry_that_cannot_be_made_leaves_none_and_the_next_is_written(tmp_path):
    store, warnings = background(tmp_path)

    def refused() -> bytes:
        raise subprocess.CalledProcessError(1, ["cc"], stderr=b"undefined reference to `nowhere'")

    store.put(KEY, refused, 1.0)
    store.put(OTHER, b"next", 1.0)
    store.flush()
    assert (store.path(KEY).exists(), store.path(OTHER).exists(), warnings) == (False, True, [])


def test_an_unexpected_failure_is_one_warning_and_the_writer_goes_on(tmp_path):
    store, warnings = background(tmp_path)

    def broken() -> bytes:
        raise ValueError("not bytes")

    store.put(KEY, broken, 1.0)
    store.put(OTHER, b"next", 1.0)
    store.flush()
    assert store.path(OTHER).exists() and not store.path(KEY).exists()
    assert len(warnings) == 1 and KEY in warnings[0] and "ValueError: not bytes" in warnings[0]


def test_a_write_left_half_done_goes_once_stale(tmp_path):
    store, _ = background(tmp_path)
    store.put(KEY, b"x", 1.0)
    store.flush()
    folder = store.path(KEY).parent
    old, fresh = folder / ".old.partial", folder / ".fresh.partial"
    for partial in (old, fresh):
        partial.write_bytes(b"cut short")
    os.utime(old, (time.time() - STALE_WRITE_S - 60,) * 2)
    assert store.info()["entries"] == 1   # neither counts as an entry
    assert (old.exists(), fresh.exists()) == (False, True)   # a write still in progress stays
