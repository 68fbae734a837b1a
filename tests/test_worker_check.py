"""Under pytest-xdist the selected backends are checked by the workers (harness.plugin.worker_check):
a class that does not import stops the run before any case with the one error line of `-n 0`,
and the folder the answers went through is gone."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from e2e_support import python_path_env


@pytest.mark.e2e
def test_under_xdist_a_class_that_does_not_import_is_one_line_before_any_case(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "broken.yaml").write_text("name: broken\nclass: not_a_module:Backend\n")
    (temporary := tmp_path / "tmp").mkdir()   # the run's own: other runs make such folders meanwhile
    done = subprocess.run([sys.executable, "-m", "pytest", "--pyargs", "harness.cases.conv_backward",
                           "--backend=broken", "-n", "2", "-k", "conv_backward/1d/basic", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path),
                               "TMPDIR": str(temporary),   # and the collection's caches, built once a session:
                               "TORCH_BACKEND_E2E_CACHE": os.environ["TORCH_BACKEND_E2E_CACHE"]})
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "ERROR: configs/broken.yaml:2: class not_a_module:Backend does not import (ModuleNotFoundError: No module "
        "named 'not_a_module'); fix the class, or install the package that has it")
    assert "no tests ran" in done.stdout
    assert not list(temporary.glob("torch-backend-e2e-check-*"))
