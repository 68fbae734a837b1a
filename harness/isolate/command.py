"""`python -m harness isolate`: the op that makes a mismatching case's numbers wrong.

    python -m harness isolate CASE --backend NAME [--cases-file FILE | --report REPORT] [--out DIR]
                              [--format text|json]

Each op of the case's PyTorch program (or node of its ONNX model) runs alone on the backend, fed
the float64 reference values of its arguments, and is judged against its float64 result relative
to eager's (onnxruntime's) own error on the same op (harness.isolate.engine); the culprits print
ranked, the most likely first, each with its module path, source line, errors, input shapes and
dtypes, and a repro bundle under DIR.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.bundle_layout import bundle_path
from harness.errors import HarnessInputError
from harness.families.loader import declared_options, entry_point_families
from harness.files import display_path
from harness.isolate.engine import Isolation
from harness.project import tool_arguments
from harness.rerun import typed_flags


def isolate_command(args: argparse.Namespace) -> int:
    project = args.project   # harness.cli gives every command that takes the project its Project
    case = project.find_case(args.case, args.report)
    config = project.config(args.backend)
    out = args.out or bundle_path(Path("isolation"), config.name, case.id)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise HarnessInputError(str(out), f"cannot create the output folder ({e.strerror or e})") from None
    flags = typed_flags(lambda dest: getattr(args, dest, None), Path.cwd(), declared_options(entry_point_families()))
    result = Isolation(case, project, config, out.resolve(), flags=tuple(flags)).run()
    print(json.dumps(result, indent=1) if args.format == "json" else isolation_text(result))
    return 0


def isolation_text(result: dict) -> str:
    """The culprits, the most likely first, then the ops the backend failed on, then the cut."""
    culprits = result["culprits"]
    lines = [f"{result['case']} on {result['backend']}: {len(culprits)} culprit op{'s' * (len(culprits) != 1)} "
             f"of {result['ops']} ({result['compiles']} programs compiled, {result['seconds']} s)"]
    for rank, c in enumerate(culprits, 1):
        lines += [f"{rank}. {c['op']} (node {c['node']}): {_errors(c)}",
                  f"   module: {c['module'] or '(the program itself)'}",
                  f"   source: {c['source'] or '(not recorded)'}",
                  "   inputs: " + ", ".join(f"{shape} {dtype}" for shape, dtype in zip(c["shapes"], c["dtypes"]))]
        if c.get("bundle"):
            lines.append(f"   bundle: {display_path(Path(c['bundle']))} (python repro.py there)")
        elif any(o["op"] == c["op"] and o.get("bundle") for o in culprits):
            lines.append("   bundle: the same op's above")
    for failed in result["failed_ops"]:
        lines.append(f"the backend fails {failed['op']} (node {failed['node']}, {failed['module']}) alone: "
                     f"{failed['failure']}")
    if result["cut"]:
        lines.append(result["cut"]["text"])
    elif not culprits and not result["failed_ops"]:
        lines.append("no op is off alone, and no prefix of the program diverges")
    return "\n".join(lines)


def _errors(culprit: dict) -> str:
    reference = culprit.get("reference", "eager")
    if culprit["error"] is None:
        return f"results of another shape or dtype than {reference}'s"
    error = f"error {culprit['error']:.3g}" + (" tolerances" if culprit.get("measure") == "tolerances" else "")
    if culprit.get("against", "float64") != "float64":   # an op with no float64 run: its tolerance failed
        return f"{error} against {reference}'s results (it has no float64 run)"
    ratio = f"{culprit['ratio']:.3g}x {reference}'s" if culprit["ratio"] is not None else f"{reference}'s is"
    return f"{error} against float64, {ratio} {culprit['eager_error']:.3g}"


def add_isolate_command(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("isolate", parents=[tool_arguments()],
                              help="the op that makes a mismatching case wrong: each op run alone on the backend, "
                                   "fed float64 reference values, judged relative to eager's own error")
    sub.add_argument("case", help="the case id, <family>/<name>; it must fail as a mismatch on the backend")
    sub.add_argument("--backend", required=True, help="the backend it mismatches on")
    sub.add_argument("--report", type=Path, help="a JSON report holding the case (its params are read there)")
    sub.add_argument("--out", type=Path, help="the folder for the ops' programs and the culprits' repro bundles "
                                              "(default isolation/<backend>/<case>)")
    sub.add_argument("--format", choices=("text", "json"), default="text",
                     help="json: {case, backend, culprits: [{op, node, module, error, eager_error, shapes, dtypes, "
                          "bundle}, ...], seconds, ...}")
    sub.set_defaults(run=isolate_command)
