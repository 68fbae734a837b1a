"""How long collecting every OpInfo sample takes: with the manifest in the cache, and the first time.

    python benchmarks/collection.py [--runs 5] [--samples all] [--backend eager] [--families opinfo,opinfo_grad]
    python benchmarks/collection.py --marker onnx_node --backend onnxruntime   # ONNX's node tests (issue 21)

Each run is a fresh `pytest --collect-only -q -m opinfo --opinfo-samples=SAMPLES` process on the
repository (so the times include Python start-up, the plugin and the case registry). `warm` runs
read the manifest from a cache directory filled before them; `cold` runs each start from an empty
cache directory, so a worker lists op_db first. With --families, a case module in a temporary
directory declares only those families (`-o e2e_cases_dirs=...`): `--families opinfo` collects the
forward cases alone. Prints the median and every run of each, the
number of items, and the difference of the medians: what the first collection costs on top.
Targets (issue 12): warm median at most 1.5 s for all 18,687 float32 samples, cold at most 15 s more;
(issue 21) warm at most 1.5 s for ONNX's 1,884 node tests (`--marker onnx_node`: every case module is
still read, as in any run, with OpInfo's default selection unless --samples says otherwise; the cold
runs list both op_db and the node tests).
"""
from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


CASE_MODULE = """from harness.families.opinfo.params import opinfo_case_ids, opinfo_cases
FAMILIES = {families!r}
def cases(options): return opinfo_cases(options, FAMILIES)
def case_ids(options): return opinfo_case_ids(options, FAMILIES)
"""


def collect(cache: Path, samples: str | None, backend: str, cases_dir: Path | None, marker: str) -> tuple[float, int]:
    env = dict(os.environ, TORCH_BACKEND_E2E_CACHE=str(cache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # as a user's machine runs: bytecode written once, then read
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker,
               f"--backend={backend}"] + ([f"--opinfo-samples={samples}"] if samples else [])
    if cases_dir is not None:
        command += ["-o", f"e2e_cases_dirs={cases_dir}", str(cases_dir)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"collection failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    found = re.search(r"(\d+)/\d+ tests collected|(\d+) tests? collected", done.stdout)
    return elapsed, int(next(g for g in found.groups() if g)) if found else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--samples", help="--opinfo-samples (default: all with -m opinfo, else the default "
                        "selection, as a user's run of another marker has)")
    parser.add_argument("--backend", default="eager")
    parser.add_argument("--families", help="comma list, e.g. opinfo (default: the repository's cases/)")
    parser.add_argument("--marker", default="opinfo", help="the items to collect (-m), e.g. onnx_node")
    args = parser.parse_args()
    if args.samples is None and args.marker == "opinfo":
        args.samples = "all"
    with tempfile.TemporaryDirectory() as tmp:
        cases_dir = None
        if args.families:
            cases_dir = Path(tmp) / "cases"
            cases_dir.mkdir()
            (cases_dir / "opinfo_only.py").write_text(CASE_MODULE.format(families=tuple(args.families.split(","))))
        warm_cache = Path(tmp) / "warm"
        collect(warm_cache, args.samples, args.backend, cases_dir, args.marker)  # fills the cache
        warm = [collect(warm_cache, args.samples, args.backend, cases_dir, args.marker) for _ in range(args.runs)]
        cold = [collect(Path(tmp) / f"cold{i}", args.samples, args.backend, cases_dir, args.marker)
                for i in range(max(1, args.runs // 2))]
    items = warm[0][1]
    for name, runs in (("warm", warm), ("cold", cold)):
        times = [t for t, _ in runs]
        print(f"{name}: median {statistics.median(times):.2f} s over {len(times)} runs "
              f"({', '.join(f'{t:.2f}' for t in times)}), {items} items")
    extra = statistics.median(t for t, _ in cold) - statistics.median(t for t, _ in warm)
    print(f"the first collection costs {extra:.1f} s more")


if __name__ == "__main__":
    main()
