"""torch-mlir's own e2e suite, from a checkout, as the family `torch_mlir`: its option
`--torch-mlir-suite`, the discovery of its tests, and `python -m harness import-xfail-sets` and
`check-xfail-sets`.

Pure Python (the pytest process imports it); the builder lives in .build, the test lister in
.manifest, both run in workers.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from harness.families.interface import Discovery, Family, Option
from harness.families.torch_mlir import params
from harness.families.torch_mlir.commands import add_commands
from harness.families.torch_mlir.manifest import PACKAGE

SUITE = Option("torch-mlir-suite", "run torch-mlir's e2e suite from a checkout: DIR is the checkout or the folder "
               "that holds the torch_mlir_e2e_test package (projects/pt1/python); its tests are cases "
               "torch_mlir/<TestName> (marker torch_mlir)",
               metavar="DIR", path=True, parse=params.suite_dir)


def discover(options: Mapping[str, Any]) -> Discovery | None:
    """The suite's tests, collected under their test_suite modules, when a suite is given."""
    suite: Path | None = options.get(SUITE.dest)
    if suite is None:
        return None
    by_file, notices = params.suite_tests(suite)
    cases = {path: [TORCH_MLIR.case(t["name"], t["params"], timeout=t["timeout"]) for t in tests]
             for path, tests in by_file.items()}
    # Its package directories are plain directories to pytest: a Package would import
    # test_suite/__init__.py (which needs torch_mlir._version, and torch) into the pytest process.
    return Discovery(cases=cases, notices=notices, plain_dirs=[suite / PACKAGE])


TORCH_MLIR = Family(name=params.FAMILY, validate=params.validate, builder="harness.families.torch_mlir.build:build",
                    derive_tags=params.derive_tags, markers=("torch_mlir",), options=(SUITE,), discover=discover,
                    commands=add_commands)
FAMILIES = [TORCH_MLIR]
