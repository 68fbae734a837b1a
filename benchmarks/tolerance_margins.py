"""How far correct results sit from the configured tolerances, per backend and dtype.

Runs every passing case in this process (no isolation: use it on backends that do not crash),
and prints, per dtype, the worst normalised error (see harness.worker.compare.normalised_error), the
case it came from, the configured tolerance, the margin between them, and PyTorch's own default
for the dtype (torch.testing.assert_close's rtol, against a reference at that dtype).

    python benchmarks/tolerance_margins.py eager linalg-on-tensors [--skip-slow]
    python benchmarks/tolerance_margins.py eager --dtypes=float32,float16,bfloat16 -k conv_backward/
"""
from __future__ import annotations

import argparse
from pathlib import Path

from harness.backend_interface import case_context, create_backend
from harness.families.interface import load_builder
from harness.project import Project, settings_from_args
from harness.worker.compare import normalised_error
from harness.worker.execute import as_outputs, golden

ROOT = Path(__file__).resolve().parent.parent


def worst_errors(project: Project, config, cases) -> dict[str, tuple[float, str]]:
    backend = create_backend(config.name, config.class_path, config.options)
    worst: dict[str, tuple[float, str]] = {}
    for case in cases:
        family = project.families[case.family]
        built = load_builder(family.worker_request(case.params))(case)
        try:
            context = case_context(case.to_json(), lambda phase: None)
            artifact = backend.compile(built.program, context)
            got = as_outputs(built.program.output_names,
                             backend.run(artifact, built.input_sets[0], context))
        except Exception:  # noqa: BLE001 - failing cases have no numbers to calibrate with
            continue
        sizes = family.reduction_sizes(case.params)
        for g, w in zip(got, golden(built.program, built.input_sets[0])):
            error = normalised_error(g.values, w.values, sizes.get(w.name, 1))
            dtype = case.params["dtype"]
            if error >= worst.get(dtype, (-1.0, ""))[0]:
                worst[dtype] = (error, f"{case.id}:{w.name}")
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("backends", nargs="+")
    parser.add_argument("--skip-slow", action="store_true", help="leave out cases tagged slow")
    parser.add_argument("--dtypes", default="", help="every case at these dtypes (the run option's)")
    parser.add_argument("-k", dest="keyword", default="", help="only the case ids that contain this")
    args = parser.parse_args()
    dtypes = [args.dtypes] if args.dtypes else []
    project = Project(settings_from_args(argparse.Namespace(dtypes=dtypes), ROOT))   # as pytest sees the repository
    cases = [c for c in project.cases if not (args.skip_slow and "slow" in c.tags) and args.keyword in c.id]
    for name in args.backends:
        config = project.config(name)
        for dtype, (error, where) in sorted(worst_errors(project, config, cases).items()):
            tolerance = config.tolerances[dtype].rtol
            margin = f"{tolerance / error:.0f}x" if error else "exact"
            print(f"{name:20} {dtype:9} worst {error:.2e} at {where}; tolerance {tolerance:.0e}; margin {margin}; "
                  f"torch.testing's rtol {pytorch_rtol(dtype):.1e}")


def pytorch_rtol(dtype: str) -> float:
    """torch.testing.assert_close's default rtol for the dtype."""
    import torch
    from torch.testing._comparison import default_tolerances

    return default_tolerances(getattr(torch, dtype))[0]


if __name__ == "__main__":
    main()
