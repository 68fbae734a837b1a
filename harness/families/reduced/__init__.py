"""The `reduced` family: a program saved as Python by `python -m harness reduce` (harness.reduce),
rerun as a case of its own. Pure Python (the pytest process imports it); the builder lives in
.build. The params, as the reducer writes them into case.yaml:

    module        the model.py file: an nn.Module `Model` (relative to the cases file)
    inputs        the inputs.pt file: the list of input tensors (relative to the cases file)
    dtype         the dtype of the case it was reduced from (its tolerance)
    output_names  the outputs' names: the original program's where it still returns them
    dynamic       input position -> its dynamic dims ({"0": [0]}), as the original exported them
    tolerance     {rtol, atol} of the original case, or none
    ratio         [multiplier, floor]: the original family's ratio rule (RatioGolden: a model's
                  outputs judged by eager's own error), or none: the default comparison
    reductions    output name -> terms summed into each element, as the original's family said

Ids read `reduced/<the original case id>`.
"""
from __future__ import annotations

from typing import Any, Mapping

from harness.case_data import DTYPES, check_keys, check_ratio
from harness.families.interface import Family

PARAM_KEYS = ("module", "inputs", "dtype", "output_names", "dynamic", "tolerance", "ratio", "reductions")


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    for key, suffix in (("module", ".py"), ("inputs", ".pt")):
        if not (isinstance(params.get(key), str) and params[key].endswith(suffix)):
            raise ValueError(f"{key} must be the path of a {suffix} file written by harness reduce, "
                             f"not {params.get(key)!r}")
    if params.get("dtype") not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, not {params.get('dtype')!r}")
    names = params.get("output_names", [])
    if not (isinstance(names, list) and all(isinstance(n, str) for n in names)):
        raise ValueError(f"output_names must be a list of names, not {names!r}")
    dynamic = params.get("dynamic") or {}
    if not (isinstance(dynamic, dict) and all(isinstance(d, list) and all(isinstance(i, int) for i in d)
                                              for d in dynamic.values())):
        raise ValueError(f"dynamic must map input positions to lists of dims, not {dynamic!r}")
    tolerance = params.get("tolerance")
    if tolerance is not None and not (isinstance(tolerance, dict) and set(tolerance) == {"rtol", "atol"}):
        raise ValueError(f"tolerance must be {{rtol, atol}} or none, not {tolerance!r}")
    ratio = check_ratio(params.get("ratio"))
    reductions = params.get("reductions") or {}
    if not (isinstance(reductions, dict) and all(isinstance(v, int) for v in reductions.values())):
        raise ValueError(f"reductions must map output names to ints, not {reductions!r}")
    return {"module": params["module"], "inputs": params["inputs"], "dtype": params["dtype"],
            "output_names": list(names), "dynamic": {str(k): v for k, v in dynamic.items()},
            "tolerance": tolerance, "ratio": ratio, "reductions": dict(reductions)}


REDUCED = Family(name="reduced", validate=validate, builder="harness.families.reduced.build:build",
                 reduction_sizes=lambda params: dict(params["reductions"]),
                 path_params=("module", "inputs"), reruns="torch")   # python -m harness reduce's candidates
FAMILIES = [REDUCED]
