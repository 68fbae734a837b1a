"""The stage cache's rerun against a cold run: the same selection run with the cache off, cold
(its entries cleared first: the build digests' memo stays, as on a developer's machine after the
first run) and warm (right after a cold run), in interleaved rounds, each run a fresh pytest.
Prints each kind's median wall, warm over cold and cold over off with their ranges over the
rounds, the hits per stage, the stage work saved, whether the three kinds gave the same verdicts
and fingerprints (issue 45's goal: warm at most 0.4x cold, identical verdicts), and the peak memory
of a case's worker in the cold run (issue 53's goal for the tiny tier's training steps: warm at
most 0.3x cold).

    python benchmarks/stage_cache.py [--backend linalg-on-tensors] [-m conv_backward] [-k EXPR] [-n 2] [--rounds 3]
    python benchmarks/stage_cache.py -m model -k train_step     # the tiny tier's training steps
"""
from __future__ import annotations

import argparse
import collections
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(command: list[str], report: Path) -> tuple[float, dict]:
    started = time.monotonic()
    done = subprocess.run([*command, f"--report-json={report}"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode not in (0, 1):   # 1: some verdict was unexpected, which is data here
        sys.exit(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return time.monotonic() - started, json.loads(report.read_text())


def verdicts(report: dict) -> dict:
    return {(r["case"], r["backend"]): (r["outcome"], r["verdict"], r.get("fingerprints")) for r in report["results"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="linalg-on-tensors")
    parser.add_argument("-m", dest="marker", default="conv_backward")
    parser.add_argument("-k", dest="keyword", help="pytest's -k, within the marker's cases")
    parser.add_argument("-n", dest="workers", default="2")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="stage-cache-bench-"))
    command = [sys.executable, "-m", "pytest", "-m", args.marker, f"--backend={args.backend}", "-n", args.workers,
               "-q", "-p", "no:cacheprovider", f"--cache-dir={folder / 'stages'}",
               *(["-k", args.keyword] if args.keyword else [])]
    walls: dict[str, list[float]] = collections.defaultdict(list)
    reports: dict[str, dict] = {}
    for round_ in range(args.rounds):
        subprocess.run([sys.executable, "-m", "harness", "cache", "clear", f"--cache-dir={folder / 'stages'}"],
                       cwd=ROOT, check=True, capture_output=True)
        for kind, mode in (("cold", "on"), ("warm", "on"), ("off", "off")):
            wall, reports[kind] = run([*command, f"--cache={mode}"], folder / f"{kind}.json")
            walls[kind].append(wall)
            print(f"round {round_ + 1} {kind}: {wall:.1f} s", flush=True)
    medians = {kind: statistics.median(values) for kind, values in walls.items()}
    for kind in ("off", "cold", "warm"):
        print(f"{kind:5}: median {medians[kind]:.1f} s of {[round(w, 1) for w in walls[kind]]}")
    for a, b in (("warm", "cold"), ("cold", "off")):
        ratios = [x / y for x, y in zip(walls[a], walls[b])]
        print(f"{a}/{b}: {medians[a] / medians[b]:.2f} (per round {min(ratios):.2f} to {max(ratios):.2f})")
    hits = collections.Counter((stage, status) for r in reports["warm"]["results"]
                               for stage, status in (r.get("cache") or {}).items())
    print("warm hits:", ", ".join(f"{stage} {hits[(stage, 'hit')]}/{sum(n for (s, _), n in hits.items() if s == stage)}"
                                  for stage in dict.fromkeys(s for s, _ in hits)),
          f"saved {sum(r.get('cache_saved_s', 0) for r in reports['warm']['results']):.1f} s of stage work")
    same = verdicts(reports["off"]) == verdicts(reports["cold"]) == verdicts(reports["warm"])
    print("same verdicts and fingerprints off, cold and warm:", same)
    phases = collections.Counter()
    for r in reports["warm"]["results"]:
        phases.update(r.get("phase_durations") or {})
    print("warm phase sums:", ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    peaks = sorted(max((r.get("phase_peak_mb") or {0: 0}).values()) for r in reports["cold"]["results"])
    print(f"cold peak memory of a case's worker: median {statistics.median(peaks):.0f} MiB, "
          f"largest {peaks[-1]:.0f} MiB, over {len(peaks)} cases")


if __name__ == "__main__":
    main()
