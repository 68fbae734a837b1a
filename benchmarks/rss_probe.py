"""A pytest plugin for benchmarks/controller.py: at the end of a session, append this pytest
process's peak resident memory (VmHWM) to the file named by E2E_RSS_FILE, one JSON line each."""
from __future__ import annotations

import json
import os


def pytest_unconfigure(config) -> None:
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(os.environ["E2E_RSS_FILE"], "a") as out:
        out.write(json.dumps({"vm_hwm_mib": kib / 1024, "pid": os.getpid()}) + "\n")
