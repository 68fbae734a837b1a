"""Which machine a run's timings come from: the history compares a case's timings only with the
runs of the same machine."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """The processor's model and its logical cores, e.g. 'AMD EPYC 7B13 x2' (Linux reads
    /proc/cpuinfo; elsewhere platform.processor())."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    return f"{model or platform.processor() or platform.machine() or 'unknown processor'} x{os.cpu_count() or 1}"
