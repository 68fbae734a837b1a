"""What a hang or a crash costs the run, measured on the worker pool with misbehaving fake backends.

For each fault: the time the faulty case takes beyond its own budget (the timeout for a hang,
nothing for a crash), and the time the next, healthy case then takes compared with a healthy
case on a warm worker. Medians over --repeat rounds. The spare worker is given time to start
between rounds; the very first loss of a run has no spare yet and pays a worker start-up
(about 3 s here) on the next case. The faulty worker first imports --preload (default: the
torch-mlir modules a linalg-on-tensors worker has loaded), so that py-spy, which dumps the stacks
of a stuck or crashing worker, reads as many symbol tables as it would in a real run.

    python benchmarks/recovery.py [--repeat 5] [--hang-timeout 2] [--preload MODULES]
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.controller.pool import WorkerPool
from harness.families.conv import CONV_FORWARD, conv_forward_case
from harness.protocol import RunRequest

ROOT = Path(__file__).resolve().parent.parent
CASE = conv_forward_case("tiny", input_shape=[1, 2, 4, 4], weight_shape=[2, 2, 3, 3]).to_json()
FAMILY = CONV_FORWARD.worker_request(CASE["params"])
EAGER = {"name": "eager", "class": "harness.backends.eager:EagerBackend", "options": {}, "tolerances": {}}


def faulty(fault: str, preload: list[str]) -> dict:
    return {"name": f"fake-{fault}", "class": "fake_backends:FaultyBackend", "tolerances": {},
            "options": {"fault": fault, "phase": "compile", "preload": preload}}


def timed(pool: WorkerPool, backend: dict, timeout: float) -> tuple[float, str]:
    started = time.monotonic()
    result = pool.run(RunRequest(case=CASE, backend=backend, family=FAMILY), timeout)
    return time.monotonic() - started, result.outcome.value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hang-timeout", type=float, default=2.0)
    parser.add_argument("--preload", default="torch_mlir.fx,torch_mlir.execution_engine",
                        help="modules the faulty worker imports first: py-spy reads their symbols ('' for none)")
    args = parser.parse_args()
    preload = [m for m in args.preload.split(",") if m]
    with tempfile.TemporaryDirectory() as root:
        shutil.copy(ROOT / "tests" / "fake_backends.py", root)
        pool = WorkerPool(Path(root))
        try:
            timed(pool, EAGER, 120)  # start-up is not what is measured here
            healthy = statistics.median(timed(pool, EAGER, 60)[0] for _ in range(args.repeat))
            print(f"healthy case on a warm worker: median {healthy:.3f} s")
            timed(pool, faulty("none", preload), 120)  # the preload is not what is measured either
            for fault, budget in (("hang", args.hang_timeout), ("segfault", 0.0), ("abort", 0.0)):
                costs, nexts = [], []
                for _ in range(args.repeat):
                    elapsed, outcome = timed(pool, faulty(fault, preload), args.hang_timeout)
                    assert outcome in ("timed_out", "crashed"), outcome
                    costs.append(elapsed - budget)
                    nexts.append(timed(pool, EAGER, 60)[0])
                    timed(pool, faulty("none", preload), 120)  # the replacement imports the preload now
                    time.sleep(5)  # let the new spare finish starting, as it would during other cases
                print(f"{fault:9} costs its budget + median {statistics.median(costs):.3f} s; "
                      f"the next case then takes median {statistics.median(nexts):.3f} s")
        finally:
            pool.close()


if __name__ == "__main__":
    main()
