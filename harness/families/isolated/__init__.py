"""The `isolated` family: the sub-programs `python -m harness isolate` hands a backend, each a batch
of ops cut out of a case's program, every op fed the float64 reference values of its arguments
(harness.isolate.reference writes one folder per op). It is installed as every family is, and
says it runs the isolated ops of PyTorch programs (Family.isolates), so the tool finds it in the
registry; no case module holds its cases. `isolated_onnx` is its twin for ONNX models, whose ops
are nodes (harness.isolate.reference_onnx writes their folders), with the same params. Pure Python;
the builders live in .build and .build_onnx. The params:

    ops         the ops' folders (model.py, inputs.pt, references.pt each), in the program's order
    dtype       the dtype of the case the ops come from (its tolerance)
    ratio       [multiplier, floor]: the family's ratio rule (RatioGolden), or none: the default comparison
    tolerance   {rtol, atol} of the original case, or none
    reductions  output name -> terms summed into each element (the default comparison's tolerance)

Ids read `isolated/<the original case id>/<the first op's node>[-and-<n>-more]` (`isolated_onnx/...`).
"""
from __future__ import annotations

from typing import Any, Mapping

from harness.case_data import DTYPES, check_keys, check_ratio
from harness.families.interface import Family

PARAM_KEYS = ("ops", "dtype", "ratio", "tolerance", "reductions")


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    ops = params.get("ops")
    if not (isinstance(ops, list) and ops and all(isinstance(o, str) for o in ops)):
        raise ValueError(f"ops must be a non-empty list of the folders harness isolate wrote, not {ops!r}")
    if params.get("dtype") not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {params.get('dtype')!r}")
    ratio = check_ratio(params.get("ratio"))
    tolerance = params.get("tolerance")
    if tolerance is not None and not (isinstance(tolerance, dict) and set(tolerance) == {"rtol", "atol"}):
        raise ValueError(f"tolerance must be {{rtol, atol}} or none, not {tolerance!r}")
    return {"ops": list(ops), "dtype": params["dtype"], "ratio": ratio, "tolerance": tolerance,
            "reductions": dict(params.get("reductions") or {})}


ISOLATED = Family(name="isolated", validate=validate, builder="harness.families.isolated.build:build",
                  reduction_sizes=lambda params: dict(params["reductions"]), path_params=("ops",), isolates="torch")
# The same for ONNX models: a family of its own, as a family builds one kind of program (Family.program,
# which picks the backends that take its cases); its ops' folders hold one-node models (.build_onnx).
ISOLATED_ONNX = Family(name="isolated_onnx", validate=validate, builder="harness.families.isolated.build_onnx:build",
                       path_params=("ops",), program="onnx", isolates="onnx")

FAMILIES = [ISOLATED, ISOLATED_ONNX]
