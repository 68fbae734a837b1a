"""The in-process loops benchmarks/overhead.py measures the harness against, one per process:

  compiler  torch.export, the decomposition, torch-mlir's FX importer, the configured pass
            pipelines, the ExecutionEngine (harness.backends.mlir_jit.JitModule) and a plain
            allclose, called directly: no harness around them (an MLIR backend taking PyTorch
            programs through the FX importer only; others print `n/a`)
  worker    what a worker does for each case (harness.worker.session.Session.run: the phase clock,
            execute, the result's message), without the pipes: the compiler's work plus what the
            harness adds inside the worker, whose parts it times (fingerprints, the IR prints made
            for them and the notes, the size figures, the phase clock's readings)

Both build each case with its family's builder and compute the float64 golden the same way. The
stage cache is off in both (no Start message opens it: harness.stages.reuse.use_cache). Each
prints one JSON line: the cases, how many did not pass, and the worker's timed parts in seconds.

    python benchmarks/overhead_loops.py compiler|worker ROOT BACKEND FILTER
"""
from __future__ import annotations

import argparse
import functools
import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from harness.backend_interface import create_backend, signature_shapes, user_output_count
from harness.families.interface import load_builder
from harness.outcomes import Expected
from harness.project import Project, settings_from_args


def project_cases(root: Path, backend_name: str, pattern: str) -> tuple[Project, Any, list]:
    """The project as pytest sees it under `root`, the backend's config, and the cases whose ids
    contain `pattern`, but for the backend's crash set (it would kill the loop; the harness does not
    attempt those cases either)."""
    project = Project(settings_from_args(argparse.Namespace(), root))
    config = project.config(backend_name)
    expectations = project.expectations(config.name)
    cases = [c for c in project.cases if pattern in c.id
             and not ((entry := expectations.lookup(c.id)) and entry.kind is Expected.CRASH)]
    return project, config, cases


# ---- the compiler alone

def compiler_loop(project: Project, config: Any, cases: list) -> dict:
    import torch
    import torch_mlir.fx
    from torch_mlir.compiler_utils import run_pipeline_with_repro_report
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    from harness.backends.mlir import MlirBackend, symbol_name
    from harness.backends.mlir_jit import JitModule
    from harness.worker.compare import DEFAULT_TOLERANCES

    backend = create_backend(config.name, config.class_path, config.options)
    options = backend.options
    if not isinstance(backend, MlirBackend) or options.get("torch_front_end", "fx_importer") != "fx_importer":
        return {"n/a": f"{config.name} is no MLIR backend with the FX importer"}
    pipelines = [backend.torch_backend_pipeline(), *options["to_linalg_pipelines"]]
    passes, opt_level = backend.llvm_lowering_passes(), int(options.get("opt_level", 2))
    strict = bool(options.get("strict_export", False))

    def one(case: Any) -> bool:
        built = load_builder(project.families[case.family].worker_request(case.params))(case)
        program, name = built.program, symbol_name(case.id)
        wants = [_float64_run(program.module, inputs) for inputs in built.input_sets]
        module = program.graph_module()
        exported = torch.export.export(module, tuple(program.example_inputs), strict=strict,
                                       dynamic_shapes=signature_shapes(module.forward, program.dynamic_shapes))
        decomposed = exported.run_decompositions(get_decomposition_table())
        mlir = torch_mlir.fx.export_and_import(decomposed, output_type="raw", func_name=name, decomposition_table={})
        for pipeline in pipelines:
            run_pipeline_with_repro_report(mlir, f"builtin.module({pipeline})", "lowering")
        jit = JitModule.compile(mlir, name, passes, opt_level=opt_level)
        rtol, atol = DEFAULT_TOLERANCES[case.params["dtype"]]
        count = user_output_count(exported)
        return all(_close(got, want, rtol, atol) for inputs, want in zip(built.input_sets, wants)
                   for got, want in zip(jit(inputs)[-count:], want))

    return {"failed": sum(not _passes(one, case) for case in cases)}


def _float64_run(module: Any, inputs: tuple) -> tuple:
    import torch

    with torch.no_grad():
        outputs = module(*(t.to(torch.float64) if t.is_floating_point() else t for t in inputs))
    return outputs if isinstance(outputs, tuple) else (outputs,)


def _close(got: Any, want: Any, rtol: float, atol: float) -> bool:
    import torch

    got = torch.as_tensor(got).to(torch.float64)
    return got.shape == want.shape and bool(torch.allclose(got, want.to(torch.float64), rtol, atol, equal_nan=True))


def _passes(one: Callable[[Any], bool], case: Any) -> bool:
    try:
        return one(case)
    except Exception:  # noqa: BLE001 - a compile error is a case that did not pass, as in the harness
        return False


# ---- what a worker does, its extra parts timed

# What the harness adds inside a worker beyond the compiler's work: {label: [(module, function)]}.
EXTRAS = {
    "fingerprints": [("harness.backend_interface", "fingerprint_of")],
    "IR prints for fingerprints and notes": [("harness.backends.mlir", "_generic_asm")],
    "size figures": [("harness.backends.mlir", "mlir_ops"), ("harness.backends.mlir", "graph_ops")],
    "notes": [("harness.backends.mlir", "note_lowering_paths"), ("harness.backends.mlir", "note_linalg_ops")],
    "phase clock readings": [("harness.worker.session", "PhaseClock.stop")],
}


def worker_loop(project: Project, config: Any, cases: list) -> dict:
    from harness.protocol import RunRequest, encode
    from harness.worker.execute import execute
    from harness.worker.session import Session

    spent = {label: 0.0 for label in EXTRAS}
    for label, places in EXTRAS.items():
        for place, attribute in places:
            _time_calls(place, attribute, spent, label)
    session = Session(encode, execute)   # each message encoded, as on the pipe, and dropped
    failed = 0
    for case in cases:
        request = RunRequest(case=case.to_json(), backend=config.to_json(),
                             family=project.families[case.family].worker_request(case.params))
        failed += session.run(request).outcome.value != "passed"
    return {"failed": failed, "extras_s": {label: round(seconds, 3) for label, seconds in spent.items()}}


def _time_calls(module_name: str, path: str, spent: dict[str, float], label: str) -> None:
    """Replace the function at `path` in the module (a method: "Class.name") by a wrapper adding
    the seconds of each call to spent[label]; a name the harness lacks is left alone (an older
    checkout)."""
    *owners, name = path.split(".")
    owner = importlib.import_module(module_name)
    for part in owners:
        owner = getattr(owner, part)
    original = getattr(owner, name, None)
    if original is None:
        return

    @functools.wraps(original)
    def timed(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - started

    setattr(owner, name, timed)


def main() -> None:
    kind, root, backend_name, pattern = sys.argv[1:5]
    project, config, cases = project_cases(Path(root), backend_name, pattern)
    loop = {"compiler": compiler_loop, "worker": worker_loop}[kind]
    print(json.dumps({"cases": len(cases), **loop(project, config, cases)}))


if __name__ == "__main__":
    main()
