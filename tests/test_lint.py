"""The package keeps its shape: ruff (style, import order) is clean, and import-linter's contracts
in pyproject.toml hold (the controller side never imports torch, numpy, a backend or the worker;
views import no controller, worker or tool; the worker imports no view, controller or tool)."""
from __future__ import annotations

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
    assert "Contracts: 3 kept, 0 broken." in done.stdout
