"""The package keeps its shape: ruff (style, import order) is clean, and import-linter's contracts
in pyproject.toml hold (the controller side never imports torch, numpy, a backend or the worker;
views import no controller, worker or tool; the worker imports no view, controller or tool; each
floor imports only the floors below it) with no exception but one explained, no two modules import
each other (even through a chain or inside a function), no module is over 400 lines, and no core
module names a family (they plug in through harness.families.interface)."""
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


CORE = ["harness/plugin", "harness/case_data.py", "harness/controller", "harness/project.py", "harness/settings.py",
        "harness/project_files", "harness/worker", "harness/installation"]
FAMILY_WORDS = ("opinfo", "conv_backward", "conv_forward", "module_case", "torch_mlir_e2e_test", "torch-mlir-suite",
                "torch_mlir_suite", "harness.families.conv", "harness.families.module", "harness.families.opinfo",
                "harness.families.torch_mlir")
FAMILY_WORD = re.compile("|".join(rf"\b{re.escape(word)}\b" for word in FAMILY_WORDS))


def test_no_core_module_names_a_family():
    """The built-in families plug in through the seam: the plugin, the spec, the controller, the
    inputs, the worker and the installation code name none of them (nor their options)."""
    paths = [p for entry in CORE for p in ([REPO / entry] if entry.endswith(".py") else (REPO / entry).rglob("*.py"))]
    named = [f"{path.relative_to(REPO)}:{number}: {line.strip()}" for path in paths
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if FAMILY_WORD.search(line)]
    assert len(paths) > 20 and not named, "\n".join(named)


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "harness").rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long
