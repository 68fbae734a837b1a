"""The pytest process itself: how long collection takes and how much memory the controller uses.

  collection   `pytest --collect-only -q` over the whole suite, --repeat times: median wall time
               (target 1.5 s: the controller never imports torch or a backend)
  memory       the controller's peak resident memory (VmHWM, read at the end of the session by
               a small plugin, so the workers' memory does not count) during collection and
               during a run of the conv_backward family with -n 2 (target: under 150 MB)

    python benchmarks/controller.py [--backend linalg-on-tensors] [--repeat 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def pytest(args: list[str], rss_file: Path) -> float:
    """Wall seconds of one pytest run from the repository root, with the peak-RSS probe loaded."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "benchmarks"), os.environ.get("PYTHONPATH", "")]),
               E2E_RSS_FILE=str(rss_file))
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-p", "rss_probe", *args], cwd=ROOT, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def peak_mib(rss_file: Path) -> float:
    """The largest VmHWM any pytest process of the run wrote (the controller, or an xdist worker)."""
    return max(json.loads(line)["vm_hwm_mib"] for line in rss_file.read_text().splitlines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        collect_rss = Path(tmp) / "collect.jsonl"
        times = [pytest(["--collect-only", "-q", f"--backend={args.backend}"], collect_rss)
                 for _ in range(args.repeat)]
        print(f"collection of the whole suite: median {statistics.median(times):.2f} s "
              f"(min {min(times):.2f}, max {max(times):.2f}; target 1.5 s); "
              f"controller peak RSS {peak_mib(collect_rss):.0f} MiB")
        run_rss = Path(tmp) / "run.jsonl"
        seconds = pytest(["-q", "-n", "2", f"--backend={args.backend}", "-k", "conv_backward"], run_rss)
        print(f"conv_backward on {args.backend} with -n 2: {seconds:.1f} s; peak RSS of the pytest processes "
              f"(controller and xdist workers, not the case workers) {peak_mib(run_rss):.0f} MiB (target 150 MB)")


if __name__ == "__main__":
    main()
