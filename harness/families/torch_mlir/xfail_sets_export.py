"""A run of torch-mlir's suite written back into its `xfail_sets.py`, for one e2e config's two sets:
`python -m harness export-xfail-sets REPORT --torch-mlir-suite CHECKOUT --config fx_importer`
prints a patch of the file that `git apply` takes (nothing when the run agrees with it).

What the sets must become, from the run's outcomes (tests the run did not attempt stay as they
are): a test that passed leaves both sets; one that crashed or hung joins the crash set (and
leaves the xfail set); one that failed otherwise joins the xfail set (and leaves the crash set).
torch-mlir's runner then expects exactly what the run measured.

How the file changes, the least that does it: a name leaves a set by its own line in a literal
the set's own assignment wrote; a name joins the last literal of that assignment, before its
closing brace, with the run's outcome as its comment. What that cannot do (a name that another
set lends, a literal closed on a name's line) becomes one `SET -= {...}` / `SET |= {...}` after
the set's last assignment. The edited file is evaluated again: the two sets must be what the run
says, and every other set as it was."""
from __future__ import annotations

import ast
import dataclasses
import re
import tempfile
from pathlib import Path

from packaging.version import Version

from harness.errors import HarnessInputError
from harness.families.torch_mlir.xfail_sets_check import results_of
from harness.families.torch_mlir.xfail_sets_import import SUITE_IMPORT, NameSet, SetsFile, _torch_version, project_suite
from harness.files import display_path, git_patch
from harness.outcomes import Outcome
from harness.reports import read_report

# torch-mlir's e2e configs (projects/pt1/e2e_testing/main.py --config) and the sets each reads.
CONFIG_SETS = {
    "linalg": ("LINALG_XFAIL_SET", "LINALG_CRASHING_SET"),
    "fx_importer": ("FX_IMPORTER_XFAIL_SET", "FX_IMPORTER_CRASHING_SET"),
    "fx_importer_stablehlo": ("FX_IMPORTER_STABLEHLO_XFAIL_SET", "FX_IMPORTER_STABLEHLO_CRASHING_SET"),
    "fx_importer_tosa": ("FX_IMPORTER_TOSA_XFAIL_SET", "FX_IMPORTER_TOSA_CRASHING_SET"),
    "onnx": ("ONNX_XFAIL_SET", "ONNX_CRASHING_SET"),
    "onnx_tosa": ("ONNX_TOSA_XFAIL_SET", "ONNX_TOSA_CRASHING_SET"),
}


@dataclasses.dataclass
class SetChange:
    name: str                                              # the set's variable
    added: dict[str, str] = dataclasses.field(default_factory=dict)   # test -> the comment it gets
    removed: set[str] = dataclasses.field(default_factory=set)

    def summary(self) -> str:
        return f"{self.name}: {len(self.added)} added, {len(self.removed)} removed"


def sets_file_of(suite: Path) -> Path:
    """projects/pt1/e2e_testing/xfail_sets.py beside the suite (projects/pt1/python)."""
    for candidate in (suite.parent / "e2e_testing" / "xfail_sets.py", suite / "e2e_testing" / "xfail_sets.py"):
        if candidate.is_file():
            return candidate
    raise HarnessInputError(display_path(suite), "has no e2e_testing/xfail_sets.py beside it",
                            "pass the checkout (or its projects/pt1/python), or --xfail-sets PATH")


def planned_changes(sets: dict[str, NameSet], xfail: str, crash: str, results: dict[str, dict]
                    ) -> tuple[SetChange, SetChange]:
    """What each of the two sets gains and loses for the run's outcomes to be expected."""
    xfails, crashes = SetChange(xfail), SetChange(crash)
    for test, record in sorted(results.items()):
        outcome = Outcome(record["outcome"])
        if outcome in (Outcome.NOT_RUN, Outcome.WRONG_LOWERING):   # not attempted; a claim upstream has not
            continue
        joins, leaves = (None, (xfails, crashes)) if outcome is Outcome.PASSED else \
            (crashes, (xfails,)) if outcome.is_crash else (xfails, (crashes,))
        for change in leaves:
            if test in sets[change.name]:
                change.removed.add(test)
        if joins is not None and test not in sets[joins.name]:
            joins.added[test] = _comment(record)
    return xfails, crashes


def _comment(record: dict) -> str:
    phase = f" in {record['phase']}" if record.get("phase") else ""
    detail = (record.get("signature") or record.get("message") or "").strip().splitlines()
    text = f"{record['outcome']}{phase}" + (f": {detail[0]}" if detail else "")
    return text if len(text) <= 100 else text[:97] + "..."


def edited(path: Path, source: str, torch_version: Version, imports: dict[str, NameSet],
           changes: tuple[SetChange, SetChange]) -> str:
    """The file's new text; HarnessInputError when no edit gives the sets the run asks for."""
    before = _evaluate(path, source, torch_version, imports)
    wanted = {c.name: (set(before[c.name]) - c.removed) | set(c.added) for c in changes}
    text = _in_literals(source, before, changes)
    after = _evaluate(path, text, torch_version, imports)
    rest = [c for c in changes if set(after[c.name]) != wanted[c.name]]
    if rest:
        text = _with_statements(text, rest, after, wanted)
        after = _evaluate(path, text, torch_version, imports)
    changed = sorted(name for name in before if name not in wanted and set(after.get(name, ())) != set(before[name]))
    wrong = sorted(name for name in wanted if set(after[name]) != wanted[name])
    if changed or wrong:
        raise HarnessInputError(display_path(path), f"no edit gives {', '.join(wrong or sorted(wanted))} the run's "
                                f"tests without changing {', '.join(changed) or 'the other sets'}",
                                "edit the file by hand from `check-xfail-sets`'s lists")
    return text


def _evaluate(path: Path, text: str, torch_version: Version, imports: dict[str, NameSet]) -> dict[str, NameSet]:
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name
        copy.write_text(text, encoding="utf-8")
        return SetsFile(copy, torch_version, imports).evaluate().sets


def _in_literals(source: str, sets: dict[str, NameSet], changes: tuple[SetChange, SetChange]) -> str:
    """Removals by deleting a name's own line in its set's own literal; additions into the set's last
    literal, before a closing brace on a line of its own."""
    lines = source.splitlines(keepends=True)
    dropped: set[int] = set()
    inserts: dict[int, list[str]] = {}
    tree = ast.parse(source)
    for change in changes:
        for test in change.removed:
            for origin in sets[change.name].get(test, ()):
                if origin.owner == change.name and re.fullmatch(rf'\s*"{re.escape(test)}",?\s*(#.*)?\n?',
                                                                lines[origin.line - 1]):
                    dropped.add(origin.line)
        closing = _closing_line(tree, change.name, lines)
        if closing is not None and change.added:
            indent = _indent(lines[closing - 2])
            inserts.setdefault(closing, []).extend(f'{indent}"{test}",  # {comment}\n'
                                                   for test, comment in sorted(change.added.items()))
    out = []
    for number, line in enumerate(lines, 1):
        out.extend(inserts.get(number, []))
        if number not in dropped:
            out.append(line)
    return "".join(out)


def _indent(line: str) -> str:
    """A literal's element indent, from the line above its closing brace."""
    return line[:len(line) - len(line.lstrip())] or "    "


def _closing_line(tree: ast.Module, name: str, lines: list[str]) -> int | None:
    """The line of the closing brace of the last set literal a top-level assignment of `name`
    writes, when that brace stands alone on its line."""
    literals = [node for statement in tree.body if _assigns(statement, name)
                for node in ast.walk(statement) if isinstance(node, ast.Set)]
    if not literals or literals[-1].end_lineno is None:
        return None
    end = literals[-1].end_lineno
    return end if lines[end - 1].strip().startswith("}") and end > literals[-1].lineno else None


def _assigns(statement: ast.stmt, name: str) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else \
        [statement.target] if isinstance(statement, ast.AugAssign) else []
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _with_statements(text: str, changes: list[SetChange], sets: dict[str, NameSet],
                     wanted: dict[str, set[str]]) -> str:
    """`SET -= {...}` and `SET |= {...}` after each set's last top-level assignment, for what the
    literals could not do."""
    lines = text.splitlines(keepends=True)
    tree = ast.parse(text)
    inserts: dict[int, list[str]] = {}
    for change in changes:
        now = set(sets[change.name])
        touching = [s for s in tree.body if any(isinstance(n, ast.stmt) and _assigns(n, change.name)
                                                for n in ast.walk(s))]   # an `if` block that assigns it too
        last = max((s.end_lineno or s.lineno for s in touching), default=len(lines))
        statements = [f"{change.name} {op} {{\n" + "".join(f'    "{t}",\n' for t in sorted(names)) + "}\n"
                      for op, names in (("-=", now - wanted[change.name]), ("|=", wanted[change.name] - now)) if names]
        inserts.setdefault(last, []).extend(["\n", "# torch-backend-e2e export-xfail-sets:\n", *statements])
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    out = []
    for number, line in enumerate(lines, 1):
        out.append(line)
        out.extend(inserts.get(number, []))
    return "".join(out)


def suite_imports(suite: Path, torch_version: Version) -> dict[str, NameSet]:
    """The sets test_suite/__init__.py defines, which xfail_sets.py imports."""
    init = suite / SUITE_IMPORT.replace(".", "/") / "__init__.py"
    return SetsFile(init, torch_version).evaluate().sets if init.is_file() else {}


def export_command(args) -> tuple[str, str]:
    """python -m harness export-xfail-sets: the patch, and one line saying what it changes."""
    if args.config not in CONFIG_SETS:
        raise HarnessInputError(f"--config={args.config}", "not one of torch-mlir's e2e configs",
                                f"use one of {', '.join(CONFIG_SETS)}")
    suite = project_suite(args.project)
    path = args.xfail_sets or sets_file_of(suite)
    version = _torch_version(args.torch_version)
    backend, results = results_of(read_report(args.report)["results"], args.backend, str(args.report))
    imports = suite_imports(suite, version)
    source = path.read_text(encoding="utf-8")
    sets = SetsFile(path, version, imports).evaluate().sets
    xfail, crash = args.set or CONFIG_SETS[args.config][0], args.crash_set or CONFIG_SETS[args.config][1]
    for name in (xfail, crash):
        if name not in sets:
            raise HarnessInputError(display_path(path), f"defines no set {name}",
                                    f"use one of {', '.join(sorted(sets))} (--set, --crash-set)")
    changes = planned_changes(sets, xfail, crash, results)
    patch = git_patch(path, source, edited(path, source, version, imports, changes))
    return patch, f"{backend} -> {args.config}: " + "; ".join(c.summary() for c in changes)
