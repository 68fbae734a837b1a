"""The package keeps its shape: ruff (style, import order) is clean, and import-linter's contracts
in pyproject.toml hold (the controller side never imports torch, numpy, a backend or the worker;
views import no controller, worker or tool; the worker imports no view, controller or tool; each
floor imports only the floors below it), no module is over 400 lines, and no core module names a
family (they plug in through harness.families.interface)."""
from __future__ import annotations

import re
import subprocess
import sys

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


CORE = ["harness/plugin", "harness/spec.py", "harness/controller",
        "harness/inputs", "harness/worker", "harness/installation"]
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
