"""`--dtypes=float16,bfloat16` (ini `e2e_dtypes`): every case at each of these dtypes, for the
families that can honour it.

A family honours the axis one of two ways (harness.families.interface.Family):
  * `at_dtype(params, dtype) -> params`: a case's params at another dtype. The case at its own
    dtype keeps its id; at another it is `<id>/<dtype>` (`<family>/2d/basic/float16`), with the
    original's written tags (a case written with that id wins: a registry's own bfloat16 entry).
    ValueError: this case cannot be at that dtype (said in a notice).
  * `lists_dtypes`: its case module lists its cases per dtype itself, from `options["dtypes"]`
    (a database whose samples differ by dtype).
The cases of other families keep their own dtypes, and the run says so once.

Without `--dtypes` every case runs at its own dtype; with it, only at the dtypes it names (list
float64 and float32 too to keep the cases written at them).
"""
from __future__ import annotations

from typing import Iterable, Mapping

from harness.case_data import DTYPES, Case
from harness.families.interface import Family


def variant_id(case_id: str, own: str, dtype: str) -> str:
    return case_id if dtype == own else f"{case_id}/{dtype}"


def at_dtypes(cases: Iterable[Case], families: Mapping[str, Family],
              dtypes: tuple[str, ...]) -> tuple[list[Case], dict[str, list[str]]]:
    """The cases at `dtypes` (every case as it is when there are none), and the notices by family:
    its cases keep their dtype (no axis), or some could not be put at a dtype."""
    cases = list(cases)
    if not dtypes:
        return cases, {}
    written = {c.id for c in cases}   # a written case wins over a variant of another with its id
    out: list[Case] = []
    kept: set[str] = set()
    refused: dict[tuple[str, str], list[str]] = {}
    for case in cases:
        family = families[case.family]
        if family.lists_dtypes or family.at_dtype is None:
            out.append(case)
            if not family.lists_dtypes:
                kept.add(family.name)
            continue
        for dtype in dtypes:
            try:
                variant = at_dtype(case, family, dtype)
            except ValueError as e:
                refused.setdefault((family.name, dtype), []).append(f"{case.id} ({e})")
                continue
            if variant is case or variant.id not in written:
                out.append(variant)
    notices: dict[str, list[str]] = {name: [f"--dtypes: the {name} cases run at their own dtypes (the family "
                                            "has no dtype axis)"] for name in sorted(kept)}
    for (name, dtype), which in refused.items():
        notices.setdefault(name, []).append(
            f"--dtypes: {len(which)} {name} case{'s' * (len(which) > 1)} cannot run at {dtype}: "
            + "; ".join(which[:3]) + (f"; and {len(which) - 3} more" if len(which) > 3 else ""))
    return out, notices


def at_dtype(case: Case, family: Family, dtype: str) -> Case:
    """The case at `dtype`: itself at its own, else `<id>/<dtype>` with the family's params for it."""
    own = case.params["dtype"]
    if dtype == own:
        return case
    assert family.at_dtype is not None
    derived = set(family.derive_tags(case.params))
    written = [t for t in case.tags if t not in derived]
    name = variant_id(case.id, own, dtype).partition("/")[2]
    return family.case(name, family.at_dtype(case.params, dtype), tags=written, timeout=case.timeout,
                       errors_named=False)


def variant_ids(cases: Iterable[Case], families: Mapping[str, Family]) -> list[str]:
    """Every id a case has at some dtype, for the families with `at_dtype`: what expectation
    entries may name whether or not this run says --dtypes."""
    return [variant_id(c.id, c.params["dtype"], d) for c in cases
            if families[c.family].at_dtype is not None for d in DTYPES if d != c.params["dtype"]]
