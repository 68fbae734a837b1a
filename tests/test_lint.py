"""The package keeps its shape: ruff (style, import order) is clean, and import-linter's contracts
in pyproject.toml hold (the controller side never imports torch, numpy, a backend or the worker;
views import no controller, worker or tool; the worker imports no view, controller or tool; each
floor imports only the floors below it) with no exception but one explained, no two modules import
each other (even through a chain or inside a function), no module is over 400 lines, and no module
outside harness/families/ names a built-in family (they plug in through harness.families.interface)."""
from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import grimp
from e2e_support import REPO


def test_ruff_is_clean():
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "."], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_import_contracts_hold():
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 4 kept, 0 broken." in done.stdout


def test_the_contracts_make_no_exceptions_but_torch_in_harness_backend():
    """Wildcards over folders, not lists of modules: a new module needs no edit, and nothing is waived
    except export_program's function-level torch import (explained beside it)."""
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    waived = [i for contract in contracts for i in contract.get("ignore_imports", [])]
    assert waived == ["harness.backend_interface -> torch"]


def test_no_import_cycles():
    """No module reaches itself through the modules it imports (function-level imports count)."""
    graph = grimp.build_graph("harness")
    cycles = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back:
                cycles.add(" -> ".join((module, *back)))
    assert graph.modules, "no modules found"
    assert not cycles, cycles


# Names that are also ordinary words, or the names of what the core rightly names: "module" and
# "model" (prose, and the keys of a program's files), "reduced" (a reduction's status), torch_mlir
# (torch-mlir's own import name), "isolated" (prose). Such a family name counts only where it is
# plainly the family's.
ORDINARY_NAMES = {"module", "model", "reduced", "isolated", "torch_mlir"}
# What the registry cannot give: the package of torch-mlir's e2e suite, which the torch_mlir family runs.
UNREGISTERED_WORDS = ("torch_mlir_e2e_test",)


def _built_in_families() -> tuple[list, list]:
    """The built-in entry points of group torch_backend_e2e.families and the families they load."""
    from importlib.metadata import entry_points

    from harness.entry_points import DISTRIBUTION
    from harness.families.loader import ENTRY_POINT_GROUP

    points = [p for p in entry_points(group=ENTRY_POINT_GROUP) if p.dist.name == DISTRIBUTION]
    loaded = [p.load() for p in points]
    return points, [f for each in loaded for f in (each if isinstance(each, list) else [each])]


def family_words() -> list[tuple[str, re.Pattern]]:
    """(word, pattern) for every way a module can name a built-in family, from the registry: the
    family's name (as a case id's prefix `name/`, a marker `-m name`, a constructor `name_case`, a
    quoted string on a line that speaks of a family; anywhere, any case, and with `-` for `_`, when
    it is no ordinary name), its package `harness.families.<entry point>` (or its path), and its
    options (`--opinfo-samples`, its dest and its ini key)."""
    points, families = _built_in_families()
    words = []
    for name in sorted({f.name for f in families}):
        word = re.escape(name)
        if name in ORDINARY_NAMES:
            plain = [rf"(?<![\w./-]){word}/", rf"-m {word}\b", rf"\b{word}_case\b", rf"(?i:family).*[\"']{word}[\"']"]
        else:
            plain = [rf"(?i:(?<![\w.]){re.escape(spelt)}(?![a-z0-9]))" for spelt in {name, name.replace("_", "-")}]
        words.append((name, re.compile("|".join(plain))))
    for point in points:
        package = point.value.split(":")[0]
        words.append((package, re.compile(rf"\b({re.escape(package)}|{re.escape(package.replace('.', '/'))})\b")))
    for option in {o for f in families for o in f.options}:
        words.append((option.name, re.compile(rf"{re.escape(option.name)}|\b({option.dest}|{option.ini})\b")))
    words += [(word, re.compile(rf"\b{re.escape(word)}\b")) for word in UNREGISTERED_WORDS]
    return words


def test_no_module_outside_the_families_names_one():
    """The built-in families plug in through the seam (harness.families.interface), so no module
    under harness/ outside harness/families/ names one, in code, strings, docstrings or comments
    (harness/cases and harness/configs are the built-in cases and configs, data, not modules here).
    The words come from the registry (family_words says which forms count), so a new built-in
    family is covered without an edit here. A family name that is an ordinary word counts only in
    the forms that mean the family ("model/..." as a case id, `family == "model"`), so prose about a
    module or a model is left alone; a name of a new family that is one needs ORDINARY_NAMES."""
    words = family_words()
    paths = [p for p in sorted((REPO / "harness").rglob("*.py"))
             if p.relative_to(REPO).parts[1] not in ("families", "cases", "configs")]
    named = [f"{where}:{number}: names {word}: {line.strip()}" for path in paths
             for where in [str(path.relative_to(REPO))]
             for number, line in enumerate(path.read_text().splitlines(), 1)
             for word, pattern in words if pattern.search(line)]
    assert len(paths) > 100 and len(words) > 15, (len(paths), len(words))
    assert not named, "\n".join(named)


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "harness").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


# Role names a tool folder repeats on purpose (harness/fuzz/command.py beside harness/reduce/command.py).
ROLE_NAMES = {"__init__.py", "__main__.py", "command.py", "engine.py"}


def test_no_two_modules_outside_the_families_share_a_name():
    """A name says where a thing lives: outside the families (each a package of its own) no two
    modules share a file name, but for the tool folders' role names and the backends' standalone
    twins (harness/backends/standalone/<backend>.py is the script of harness/backends/<backend>.py)."""
    owners: dict[str, list[str]] = {}
    for path in (REPO / "harness").rglob("*.py"):
        parts = path.relative_to(REPO / "harness").parts
        if parts[0] in ("families", "cases", "configs") or path.name in ROLE_NAMES or "standalone" in parts:
            continue
        owners.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    shared = {name: paths for name, paths in owners.items() if len(paths) > 1}
    assert len(owners) > 80 and not shared, shared
