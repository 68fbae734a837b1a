"""A mismatch's culprit ops as the reports show them (Record.isolation, from pytest --isolate):
each distinct aten op once, in rank order, with the module path of its most likely instance."""
from __future__ import annotations

from typing import Any, NamedTuple

from harness.record import Record
from harness.views.markdown_text import code, escape_text, row

SHOWN_OPS = 3   # distinct culprit ops named in one line; the rest are counted


class CulpritOp(NamedTuple):
    op: str
    module: str | None   # the nn.Module path of its most likely instance; None: the program itself
    ratio: float | None  # its error over the reference's own on the same op; None: that is 0, or no error
    places: int          # how many nodes of the program it is off at
    bundle: str | None   # the repro bundle of its most likely instance
    reference: str       # whose own error the ratio is over: eager (PyTorch) or onnxruntime (ONNX)
    against: str         # what its error is measured against: float64, or the reference's results


def culprit_ops(isolation: dict[str, Any]) -> list[CulpritOp]:
    """The distinct culprit ops, the most likely first."""
    ops: dict[str, CulpritOp] = {}
    for c in isolation.get("culprits") or []:
        first = ops.get(c["op"])
        ops[c["op"]] = (first._replace(places=first.places + 1) if first else
                        CulpritOp(c["op"], c.get("module"), c.get("ratio"), 1, c.get("bundle"),
                                  c.get("reference", "eager"), c.get("against", "float64")))
    return list(ops.values())


def isolated(records: list[Record]) -> list[Record]:
    """The records an isolation was tried on, by case and backend."""
    return sorted((r for r in records if r.isolation is not None), key=lambda r: (r.case, r.backend))


def isolation_line(isolation: dict[str, Any]) -> str:
    """What the isolation found, in one line."""
    if "error" in isolation:
        return f"not isolated: {isolation['error']}"
    ops = culprit_ops(isolation)
    if ops:
        named = "; ".join(culprit_text(c) for c in ops[:SHOWN_OPS])
        more = f"; and {len(ops) - SHOWN_OPS} more ops" if len(ops) > SHOWN_OPS else ""
        return f"culprit{'s' * (len(ops) > 1)}: {named}{more}"
    failed = isolation.get("failed_ops") or []
    if failed:
        return (f"no op is off alone; the backend fails {len(failed)} op{'s' * (len(failed) > 1)} alone, "
                f"first {failed[0]['op']}: {failed[0]['failure']}")
    return isolation.get("cut") or "no op is off alone, and no prefix of the program diverges"


def culprit_text(c: CulpritOp) -> str:
    where = f" in {c.module}" if c.module else ""
    places = f" at {c.places} nodes" if c.places > 1 else ""
    return f"{c.op}{where}{places} ({ratio_text(c)})"


def ratio_text(c: CulpritOp) -> str:
    if c.ratio is not None:
        return f"{c.ratio:.3g}x {c.reference}'s error"
    if c.against != "float64":
        return f"off {c.against}'s results beyond the tolerance"
    return f"{c.reference}'s error 0"


def isolation_markdown(records: list[Record]) -> list[str]:
    """The Markdown report's section: each isolated mismatch, its culprit ops as a table."""
    chosen = isolated(records)
    if not chosen:
        return []
    out = ["## Isolated mismatches", "",
           f"{len(chosen)} mismatch{'es' * (len(chosen) > 1)} isolated with `--isolate`: each op run alone on the "
           "backend, fed float64 reference values, its error against float64 over eager's (or onnxruntime's) own "
           "on the same op.", ""]
    for r in chosen:
        out += [f"### {code(r.case)} on {code(r.backend)}", ""]
        isolation = r.isolation or {}   # isolated() chose records that have one
        ops = culprit_ops(isolation) if "error" not in isolation else []
        if not ops:
            out += [escape_text(isolation_line(isolation)), ""]
            continue
        out += [row(["op", "module", "nodes", "error", "repro bundle"]), row(["---"] * 5)]
        out += [row([code(c.op), code(c.module) if c.module else "(the program)", str(c.places), ratio_text(c),
                     code(c.bundle) if c.bundle else ""]) for c in ops]
        out.append("")
    return out
