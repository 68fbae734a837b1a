"""Performance changes in the history: does it flag exactly the cases that got slower or faster,
from the night they did, and nothing else?

    python benchmarks/history_perf.py [--nights 40] [--cases 300] [--step-night 25] [--noise 0.08] [--seed 1]
                                      [--versions-every-night]

Feeds the history one synthetic --perf report per night (the harness's report shape: one backend,
every case timed, each with a speedup over eager and its 95% interval) and asks
harness.history.perf_changes after each night which cases it flags. Each case has its own true
speedup (log-normal around 1.5x). Each night every case's measured speedup moves by the night's
noise: a log-normal factor of --noise (8%: the spread of one case's speedup over eager from run to
run, each side against the eager calls interleaved with it), plus, on one case-night in 20, a
hit of 15 to 30% either way (the machine was busy during that case alone). Each measurement's
interval is 5% either side. On --step-night torch-mlir's version changes and 2% of the cases get
1.5x slower and 1% 1.5x faster, for good. With --versions-every-night the harness's commit
changes every night instead (a tree that changes daily), so that every night is a possible step.

Prints, per night, the cases flagged; then the false positives (a flag on a case that did not
change, or before its step), the misses (a changed case not flagged on a night from its CONFIRMth
run on), the flags dated off the step, and the false-positive rate over every judged case-night.
Exit status 1 unless there are none of any.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.history.perf_changes import CONFIRM, MIN_BASELINE, perf_changes  # noqa: E402
from harness.history.store import open_history  # noqa: E402
from harness.reports import build_report  # noqa: E402

BACKEND = "linalg-on-tensors"
INTERVAL = 0.05          # each measurement's 95% interval, either side
BUSY_SHARE = 1 / 20      # case-nights hit by a busy machine
STEP = 1.5


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=40)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--step-night", type=int, default=25)
    parser.add_argument("--noise", type=float, default=0.08, help="night-to-night spread of a speedup (log sd)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--versions-every-night", action="store_true",
                        help="the harness's commit changes every night, not only torch-mlir's version once")
    return parser.parse_args()


def night_report(night: int, speeds: dict[str, float], rng: random.Random, args: argparse.Namespace) -> dict:
    version = "20261001" if night < args.step_night else "20261015"
    records = []
    for case, truth in speeds.items():
        measured = truth * math.exp(rng.gauss(0, args.noise))
        if rng.random() < BUSY_SHARE:
            measured *= rng.uniform(1.15, 1.30) ** rng.choice((-1, 1))
        records.append({"case": case, "backend": BACKEND, "outcome": "passed", "phase": None, "signature": None,
                        "expected": "pass", "verdict": "ok", "duration_s": 1.0,
                        "perf": {"threads": 1, "speedup": {"value": measured, "low": measured / (1 + INTERVAL),
                                                           "high": measured * (1 + INTERVAL)},
                                 "compiled": {"median": 1e-4 / measured}, "eager": {"median": 1e-4}}})
    environment = {"torch": "2.13.0", "machine": "benchmark machine x2",
                   "harness_commit": f"{night:040x}" if args.versions_every_night else "0" * 40,
                   "backends": {BACKEND: {"versions": {"torch-mlir": version}}}}
    return build_report(environment, records, True, run_id=f"night-{night}", created=1.8e9 + night * 86400)


def main() -> int:
    args = arguments()
    rng = random.Random(args.seed)
    cases = [f"conv_backward/synthetic/case{i:04d}" for i in range(args.cases)]
    truth = {case: 1.5 * math.exp(rng.gauss(0, 0.5)) for case in cases}
    slower = set(rng.sample(cases, max(1, args.cases // 50)))
    faster = set(rng.sample(sorted(set(cases) - slower), max(1, args.cases // 100)))
    false_flags, misses, misdated, judged = [], [], [], 0
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "history.db"
        for night in range(args.nights):
            speeds = {c: s / STEP if c in slower and night >= args.step_night
                      else s * STEP if c in faster and night >= args.step_night else s for c, s in truth.items()}
            path = Path(folder) / "report.json"
            path.write_text(json.dumps(night_report(night, speeds, rng, args)), encoding="utf-8")
            with open_history(db, write=True) as store:
                store.ingest(path)
                flagged = {c["case"]: c for c in perf_changes(store)}
            if night >= MIN_BASELINE + CONFIRM - 1:
                judged += len(cases)
            confirmed = night >= args.step_night + CONFIRM - 1   # a step is reported from its CONFIRMth run
            expected = {c: ("slower" if c in slower else "faster") for c in slower | faster} if confirmed else {}
            for case, change in flagged.items():
                if expected.get(case) != change["status"]:
                    false_flags.append((night + 1, case, change["status"], change["since"]))
                elif change["since"] != args.step_night + 1:
                    misdated.append((night + 1, case, change["since"]))
            misses += [(night + 1, case) for case in expected if case not in flagged]
            print(f"night {night + 1}: {len(flagged)} flagged", flush=True)
        with open_history(db, write=False) as store:
            example = next((c for c in perf_changes(store)), None)
    print(f"\n{args.cases} cases, {args.nights} nights, noise {args.noise:.0%} a night plus a busy machine on "
          f"{BUSY_SHARE:.0%} of case-nights; {len(slower)} cases {STEP}x slower and {len(faster)} {STEP}x faster "
          f"from night {args.step_night + 1}")
    print(f"false positives: {len(false_flags)} of {judged:,} judged case-nights "
          f"({len(false_flags) / max(judged, 1):.3%}); misses: {len(misses)}; flags of a changed case dated "
          f"off its step: {len(misdated)} ({', '.join(sorted({f'since run {m[2]}' for m in misdated}))})")
    for flag in false_flags[:10]:
        print(f"  false: night {flag[0]} {flag[1]} {flag[2]} since run {flag[3]}")
    for miss in misses[:10]:
        print(f"  missed: night {miss[0]} {miss[1]}")
    if example:
        print(f"as history show says it: since run {example['since']} {example['case']} {example['status']} "
              f"{example['baseline']:.3g}x -> {example['latest']:.3g}x; changed: {example['changed']}")
    return 1 if false_flags or misses or misdated else 0


if __name__ == "__main__":
    sys.exit(main())
