"""A worker's stage-cache entries written off the case's critical path: the case hands each entry
to one background thread and goes on with its next stage. The thread hashes and writes the
entry and waits for the C compiler that links the machine code, all of which release the
interpreter lock. (The serialising of a stage's output stays on the case's path: torch.export.save
is Python, and would only contend for the lock. Measured on 2026-12-07, a first run of the
convolution-backward family gains about 0.6 s of 46: benchmarks/RESULTS.md.)

Nothing is lost on the way out: the pool asks a worker to flush before it ends or recycles it
(harness.protocol's Flush), and a lookup of a key still queued waits for it. A worker killed
mid-case (a crash, a hang, a memory overrun) loses the entries still queued; they are computed
and written again by the next run that needs them."""
from __future__ import annotations

import queue
import threading
from typing import Callable

# What an entry's payload is: its bytes, or a function making them in the thread (a link).
Payload = bytes | Callable[[], bytes]


class EntryWriter:
    """Calls `store(key, payload, seconds)` for each `submit`ted entry, in order, in one thread;
    `warn` gets the line an unexpected failure is worth."""

    def __init__(self, store: Callable[[str, Payload, float], None], warn: Callable[[str], None]):
        self.store, self.warn = store, warn
        self.queue: queue.Queue[tuple[str, Payload, float]] = queue.Queue()
        self.queued: dict[str, int] = {}   # key: how many of its entries are not written yet
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def submit(self, key: str, payload: Payload, seconds: float) -> None:
        with self.lock:
            self.queued[key] = self.queued.get(key, 0) + 1
        if self.thread is None:   # started on the first entry: after the worker's fork
            self.thread = threading.Thread(target=self._write, name="stage-cache-writer", daemon=True)
            self.thread.start()
        self.queue.put((key, payload, seconds))

    def holds(self, key: str) -> bool:
        """Whether an entry of this key is queued, not written yet."""
        with self.lock:
            return key in self.queued

    def flush(self) -> None:
        """Wait until every entry submitted so far is written (or failed to be)."""
        self.queue.join()

    def _write(self) -> None:
        while True:
            key, payload, seconds = self.queue.get()
            try:
                self.store(key, payload, seconds)
            except Exception as e:  # noqa: BLE001 - the thread must outlive one entry's failure
                self.warn(f"stage cache: the entry {key} was not written ({type(e).__name__}: {e})")
            finally:
                with self.lock:
                    left = self.queued.pop(key) - 1
                    if left:
                        self.queued[key] = left
                self.queue.task_done()
