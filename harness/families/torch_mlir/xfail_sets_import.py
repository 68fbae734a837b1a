"""torch-mlir's xfail_sets.py as the harness's expectation files, evaluated without running it.

The file is Python: sets of test names, combined with `|`, `-`, `&` and `^` (and their augmented
forms), `set(...)`, names imported from the suite's test_suite/__init__.py, and `if` blocks on
`torch_version_for_comparison()` against `version.parse("...")`. This module reads it with `ast`
and evaluates only those forms, for a stated torch version (the installed one by default);
anything else is an error naming the line. Each name keeps the comment that explains it
(its own line's, else the comment block above it in the same set literal, until a blank line), which
becomes the entry's reason.
"""
from __future__ import annotations

import ast
import dataclasses
import io
import json
import operator
import tokenize
from pathlib import Path

from packaging.version import InvalidVersion, Version

from harness.errors import HarnessInputError
from harness.files import display_path

SET_OPERATORS = {ast.BitOr: operator.or_, ast.Sub: operator.sub, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}
COMPARISONS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Eq: operator.eq, ast.NotEq: operator.ne}
SUITE_IMPORT = "torch_mlir_e2e_test.test_suite"


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a name is listed: file and line, the set it was written into, and its comment."""

    path: Path
    line: int
    owner: str
    comment: str

    @property
    def at(self) -> str:
        return f"{self.path.name}:{self.line}"

    def reason(self) -> str:
        return self.comment or f"listed in {self.owner} ({self.at}) without a comment"


class NameSet(dict):
    """Test name -> every Origin that listed it into this set; set operators keep what they keep."""

    def combine(self, op, other: "NameSet") -> "NameSet":
        names = op(set(self), set(other))
        return NameSet({name: self.get(name, ()) + other.get(name, ()) if op is not operator.sub else self[name]
                        for name in names})

    def first(self, name: str) -> Origin:
        """The listing that explains the name best: the first with a comment, else the first."""
        return next((o for o in self[name] if o.comment), self[name][0])


@dataclasses.dataclass
class Evaluation:
    sets: dict[str, NameSet]
    decisions: list[str]                       # "xfail_sets.py:57: torch < 2.5.0.dev is false for torch 2.13.0"


class SetsFile:
    """One file's statements evaluated in order (`imports`: what `from test_suite import ...` gives)."""

    def __init__(self, path: Path, torch_version: Version, imports: dict[str, NameSet] | None = None):
        self.path, self.torch_version = path, torch_version
        self.imports = imports or {}
        try:
            self.source = path.read_text(encoding="utf-8")
            self.tree = ast.parse(self.source, filename=str(path))
        except (OSError, SyntaxError, ValueError) as e:
            raise HarnessInputError(display_path(path), f"cannot read it as Python ({e})") from None
        self.comments = _comments(self.source)
        self.lines = self.source.splitlines()
        self.result = Evaluation({}, [])

    def evaluate(self) -> Evaluation:
        self._run(self.tree.body)
        return self.result

    def _error(self, node: ast.AST, problem: str) -> HarnessInputError:
        return HarnessInputError(f"{display_path(self.path)}:{getattr(node, 'lineno', '?')}", problem,
                                 "only sets of names, set operators and `if` on the torch version are evaluated")

    def _run(self, statements: list[ast.stmt]) -> None:
        env = self.result.sets
        for node in statements:
            if isinstance(node, (ast.Import, ast.Expr, ast.Pass)):   # imports, print(...), docstrings
                continue
            if isinstance(node, ast.ImportFrom):
                if node.module == SUITE_IMPORT:
                    for alias in node.names:
                        if alias.name not in self.imports:
                            raise self._error(node, f"the suite's test_suite/__init__.py defines no set {alias.name}")
                        env[alias.asname or alias.name] = self.imports[alias.name]
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                env[node.targets[0].id] = self._value(node.value, node.targets[0].id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) \
                    and type(node.op) in SET_OPERATORS:
                name = node.target.id
                env[name] = self._lookup(node.target, name).combine(SET_OPERATORS[type(node.op)],
                                                                    self._value(node.value, name))
            elif isinstance(node, ast.If):
                holds = self._condition(node.test)
                self.result.decisions.append(f"{self.path.name}:{node.lineno}: {ast.unparse(node.test)} is "
                                             f"{str(holds).lower()} for torch {self.torch_version}")
                self._run(node.body if holds else node.orelse)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue   # a function (register_all_tests) is not a set
            else:
                raise self._error(node, f"cannot evaluate this {type(node).__name__} statement without running it")

    def _lookup(self, node: ast.AST, name: str) -> NameSet:
        if name not in self.result.sets:
            raise self._error(node, f"{name} is not defined above this line")
        return self.result.sets[name]

    def _value(self, node: ast.expr, owner: str) -> NameSet:
        if isinstance(node, ast.Set):
            return self._literal(node, owner)
        if isinstance(node, ast.Name):
            return self._lookup(node, node.id)
        if isinstance(node, ast.BinOp) and type(node.op) in SET_OPERATORS:
            return self._value(node.left, owner).combine(SET_OPERATORS[type(node.op)], self._value(node.right, owner))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("set", "frozenset"):
            if not node.args:
                return NameSet()
            if len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple, ast.Set)):
                return self._literal(node.args[0], owner)
            return self._value(node.args[0], owner)
        raise self._error(node, f"cannot evaluate {ast.unparse(node)!r} as a set of test names")

    def _literal(self, node: ast.Set | ast.List | ast.Tuple, owner: str) -> NameSet:
        found = NameSet()
        for element in node.elts:
            if not (isinstance(element, ast.Constant) and isinstance(element.value, str)):
                raise self._error(element, f"{ast.unparse(element)} is not a test name (a string)")
            origin = Origin(self.path, element.lineno, owner, self._comment_for(node, element.lineno))
            found[element.value] = found.get(element.value, ()) + (origin,)
        return found

    def _comment_for(self, literal: ast.expr, line: int) -> str:
        """The element's own comment; else the nearest comment block above it in the literal with no
        blank line between (a comment heads the group of names that follows it)."""
        if line in self.comments and not self._comment_only(line):
            return self.comments[line]
        number = line - 1
        while number > literal.lineno and self.lines[number - 1].strip():
            if self._comment_only(number):
                end = number
                while number - 1 > literal.lineno and self._comment_only(number - 1):
                    number -= 1
                text = " ".join(self.comments[n] for n in range(number, end + 1))
                # upstream's comments head a group of names, or only the next one: say which line it is
                return text if end == line - 1 else f"{text} (the comment at {self.path.name}:{number}, above)"
            number -= 1
        return ""

    def _comment_only(self, line: int) -> bool:
        return self.lines[line - 1].lstrip().startswith("#")

    def _condition(self, node: ast.expr) -> bool:
        if isinstance(node, ast.BoolOp):
            values = [self._condition(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self._condition(node.operand)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARISONS:
            left, right = self._version(node.left), self._version(node.comparators[0])
            return COMPARISONS[type(node.ops[0])](left, right)
        raise self._error(node, f"cannot evaluate the condition {ast.unparse(node)!r}")

    def _version(self, node: ast.expr) -> Version:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == "torch_version_for_comparison":
            return self.torch_version
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "version.parse" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.Constant):
            try:
                return Version(str(node.args[0].value))
            except InvalidVersion:
                pass
        raise self._error(node, f"{ast.unparse(node)} is neither torch_version_for_comparison() nor "
                                "version.parse('X.Y')")


def _comments(source: str) -> dict[int, str]:
    """Line -> the text of the comment on it, without '#'."""
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string.lstrip("#").strip()
    return found


# ------------------------------------------------------------------------------------- the import

@dataclasses.dataclass
class Imported:
    xfail: dict[str, Origin]
    crash: dict[str, Origin]
    dead: dict[str, Origin]            # names no test of the suite has
    unimportable: dict[str, str]       # names of tests whose module did not import -> that module's error
    twice: dict[str, tuple[Origin, ...]]   # names listed more than once into a chosen set
    overlap: list[str]                 # in both sets: kept in the crash set
    evaluation: Evaluation


def import_sets(path: Path, xfail_set: str, crash_set: str | None, torch_version: Version,
                suite_dir: Path, manifest: dict) -> Imported:
    """Evaluate the file and split the chosen sets' names into the suite's tests and the rest."""
    init = suite_dir / SUITE_IMPORT.replace(".", "/") / "__init__.py"
    imports = SetsFile(init, torch_version).evaluate().sets if init.is_file() else {}
    evaluation = SetsFile(path, torch_version, imports).evaluate()
    for name in (xfail_set, crash_set):
        if name and name not in evaluation.sets:
            raise HarnessInputError(display_path(path), f"defines no set {name}",
                                    f"use one of {', '.join(sorted(evaluation.sets))}")
    tests = {t["name"] for t in manifest["tests"]}
    unimportable = {name: f"{m['module']}.py did not import: {m['error']}"
                    for m in manifest["failed_modules"] for name in m["declared"]}
    chosen = [evaluation.sets[xfail_set], evaluation.sets[crash_set] if crash_set else NameSet()]
    overlap = sorted(set(chosen[0]) & set(chosen[1]))
    listed = {name: names for names in chosen for name in names}
    twice = {name: origins for names in chosen for name, origins in names.items() if len(origins) > 1}
    xfail, crash = ({n: names.first(n) for n in names if n in tests and not (kind == 0 and n in overlap)}
                    for kind, names in enumerate(chosen))
    return Imported(
        xfail, crash, dead={n: s.first(n) for n, s in listed.items() if n not in tests and n not in unimportable},
        unimportable={n: unimportable[n] for n in listed if n in unimportable}, twice=twice, overlap=overlap,
        evaluation=evaluation)


def expectation_text(entries: dict[str, Origin], header: list[str]) -> str:
    """A YAML list of entries, sorted by id, reasons JSON-quoted (valid YAML, whatever they hold)."""
    lines = [f"# {line}" for line in header]
    for name in sorted(entries):
        lines += [f"- id: torch_mlir/{name}", f"  reason: {json.dumps(entries[name].reason())}"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------- the command

def import_command(args) -> None:
    """python -m harness import-xfail-sets: write the two files, then say what was left out and why."""
    from harness.families.torch_mlir.params import load_manifest

    suite = project_suite(args.project)
    version = _torch_version(args.torch_version)
    args.project.config(args.backend)   # a backend of the project's configs, or one error line
    manifest = load_manifest(suite)
    imported = import_sets(args.path, args.set, args.crash_set, version, suite, manifest)
    xfail, crash = args.project.expectation_files(args.backend)
    targets = [(xfail, imported.xfail, args.set), (crash, imported.crash, args.crash_set)]
    for target, _, set_name in targets:
        if set_name and target.exists() and not args.force:
            raise HarnessInputError(display_path(target), "exists",
                                    "pass --force to replace it, or --xfail-dir / --crash-sets-dir")
    for target, entries, set_name in targets:
        if set_name:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(expectation_text(entries, [
                f"Imported from {set_name} of {args.path} by python -m harness import-xfail-sets,",
                f"evaluated for torch {version}; reasons are upstream's comments. Review before relying on it."]),
                encoding="utf-8")
            print(f"{set_name}: {len(entries)} tests -> {display_path(target)}")
    for line in report_lines(imported, _dead_anywhere(imported.evaluation, manifest)):
        print(line)


def _dead_anywhere(evaluation: Evaluation, manifest: dict) -> int:
    known = {t["name"] for t in manifest["tests"]} | {n for m in manifest["failed_modules"] for n in m["declared"]}
    return len({name for names in evaluation.sets.values() for name in names} - known)


def report_lines(imported: Imported, dead_anywhere: int) -> list[str]:
    lines = [f"evaluated: {d}" for d in imported.evaluation.decisions]
    lines += [f"dead (no test of the suite has the name): {n} ({o.at})" for n, o in sorted(imported.dead.items())]
    lines += [f"not written (its module did not import here): {n} ({why})"
              for n, why in sorted(imported.unimportable.items())]
    lines += [f"listed {len(origins)} times: {n} ({', '.join(o.at for o in origins)})"
              for n, origins in sorted(imported.twice.items())]
    lines += [f"in both sets, kept in the crash set: {n}" for n in imported.overlap]
    lines.append(f"across every set of the file, {dead_anywhere} names match no test of the suite")
    return lines


def project_suite(project) -> Path:
    """The suite the project names (--torch-mlir-suite DIR, or the ini's e2e_torch_mlir_suite)."""
    suite = project.settings.family_options.get("torch_mlir_suite")
    if suite is None:
        raise HarnessInputError("--torch-mlir-suite", "no suite given",
                                "pass --torch-mlir-suite DIR (projects/pt1/python of a torch-mlir checkout)")
    return suite


def _torch_version(given: str | None) -> Version:
    """The stated version, else the installed torch's (read from its metadata: torch is not imported)."""
    import importlib.metadata

    try:
        text = given or importlib.metadata.version("torch")
        return Version(Version(text).public)
    except importlib.metadata.PackageNotFoundError:
        raise HarnessInputError("--torch-version", "torch is not installed", "state one: --torch-version=2.13.0") \
            from None
    except InvalidVersion:
        raise HarnessInputError(f"--torch-version={given}", "not a PEP 440 version", "write e.g. 2.13.0") from None
