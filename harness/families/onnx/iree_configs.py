"""A run of ONNX's node tests written back into an iree-test-suites JSON config
(`onnx_ops/configs/<name>.json`), as a patch `git apply` takes: `python -m harness
export-iree-configs REPORT --iree-test-suites CHECKOUT --config onnx_ops_cpu_llvm_sync`.

A test that failed in a compile phase joins `expected_compile_failures`, one that failed running
or comparing `expected_run_failures`, one that passed leaves both; one that crashed or hung joins
`skip_compile_tests` or `skip_run_tests` by its phase. Tests the run did not attempt, and the
skip lists' other names (a skip may be for a flake the run did not see), stay. A list is
rewritten only when its names change, so a run that agrees with the config gives the file back
byte for byte."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness.errors import HarnessInputError
from harness.files import display_path, git_patch, print_or_write
from harness.outcomes import COMPILE_PHASES, Outcome, Phase
from harness.reports import read_report

CONFIGS = Path("onnx_ops") / "configs"
TEST_PREFIX = "onnx/node/generated/"   # a test's name in the configs: its folder in the checkout
FAMILY = "onnx_node/"   # the node tests' case ids
LISTS = ("skip_compile_tests", "skip_run_tests", "expected_compile_failures", "expected_run_failures")


def config_file(checkout: Path, config: str) -> Path:
    path = checkout / CONFIGS / f"{config.removesuffix('.json')}.json"
    if not path.is_file():
        found = sorted(p.stem for p in (checkout / CONFIGS).glob("*.json"))
        raise HarnessInputError(display_path(path), "no such config",
                                f"use one of {', '.join(found)}" if found else "pass an iree-test-suites checkout")
    return path


def edited_config(path: Path, text: str, results: dict[str, dict]) -> str:
    try:
        data = json.loads(text)
    except ValueError as e:
        raise HarnessInputError(display_path(path), f"is not JSON ({e})") from None
    lists = {key: list(data.get(key) or []) for key in LISTS}
    wanted = {key: set(names) for key, names in lists.items()}
    for case, record in results.items():
        test = TEST_PREFIX + case.removeprefix(FAMILY)
        outcome = Outcome(record["outcome"])
        if outcome in (Outcome.NOT_RUN, Outcome.WRONG_LOWERING):
            continue
        in_compile = record.get("phase") is not None and Phase(record["phase"]) in COMPILE_PHASES
        for key in ("expected_compile_failures", "expected_run_failures"):
            wanted[key].discard(test)
        if outcome.is_crash:
            wanted["skip_compile_tests" if in_compile else "skip_run_tests"].add(test)
        elif outcome.is_failure:
            wanted["expected_compile_failures" if in_compile else "expected_run_failures"].add(test)
    if all(wanted[key] == set(lists[key]) for key in LISTS):
        return text
    for key in LISTS:
        if wanted[key] != set(lists[key]):
            data[key] = sorted(wanted[key])
    return json.dumps(data, indent=2) + "\n"


def add_commands(commands: argparse._SubParsersAction) -> None:
    sub = commands.add_parser("export-iree-configs", help="a run of ONNX's node tests as a patch of an "
                                                          "iree-test-suites JSON config (git apply takes it)")
    sub.add_argument("report", type=Path, metavar="REPORT_JSON", help="a --report-json of -m onnx_node")
    sub.add_argument("--iree-test-suites", type=Path, required=True, metavar="CHECKOUT",
                     help="an iree-test-suites checkout")
    sub.add_argument("--config", required=True, help="its onnx_ops config, e.g. onnx_ops_cpu_llvm_sync")
    sub.add_argument("--backend", help="whose results to read (default: the report's only backend)")
    sub.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the patch here (default: stdout)")
    sub.set_defaults(run=export_command)


def export_command(args: argparse.Namespace) -> None:
    path = config_file(args.iree_test_suites, args.config)
    mine = [r for r in read_report(args.report)["results"] if r["case"].startswith(FAMILY)]
    backends = sorted({r["backend"] for r in mine})
    backend = args.backend or (backends[0] if len(backends) == 1 else None)
    if backend is None or backend not in backends:
        held = ", ".join(backends) or "no backend"
        raise HarnessInputError(str(args.report), f"holds ONNX node test results of {held}",
                                "run -m onnx_node on one backend, or say which with --backend")
    source = path.read_text(encoding="utf-8")
    text = edited_config(path, source, {r["case"]: r for r in mine if r["backend"] == backend})
    print(f"{backend} -> {display_path(path)}: {'changed' if text != source else 'no change'}", file=sys.stderr)
    print_or_write(git_patch(path, source, text), args.output)
