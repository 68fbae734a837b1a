"""torch-backend-e2e's public interface: everything another project's case modules, case families
and backends import, and all of it from here (examples/external_project and the README's backend
example do; tests/test_api.py keeps it so).

    from harness.api import Backend, Family, family

Stable: the names below and what their docstrings promise. A new keyword with a default may be
added to them; nothing is removed or changes meaning without a release note. Everything else
under `harness.` is internal and may change.

* Cases: `Case` (plain data: id, family, params, tags, timeout); `family(name)`, an installed
  family by name, whose `Family.case(name, params)` makes a validated case of it; `DTYPES`, the
  floating dtypes a case's params["dtype"] may name.
* Families: `Family` and its extension points (each field's docstring says when it is called and
  on which side); `Option` (a command-line option and ini key a family declares); `Discovery`
  (cases a family finds outside the case modules); `FuzzSpace` (its parameter space for `python -m
  harness fuzz`); `Built`, `Program` and `OnnxProgram` (what its builder returns, in a worker);
  the validation helpers `check_keys`, `no_reductions`, `no_tags`.
* Goldens (what a case's outputs are compared with, and how): `Golden`, whose subclasses are the
  kinds, `Float64Golden` (the default), `GivenGolden`, `EagerGolden`, `FamilyGolden`,
  `RatioGolden`, and a family's own; `GoldenContext` (what a golden is handed in a worker).
* Backends: `Backend` (compile, run, versions, standalone), `CaseContext` (what a backend is
  handed per case), `Phase` (the stage a case is in: `case.enter(Phase.LOWER)`), `Standalone` (a
  backend's half of a bundle's repro.py), `export_program` (torch.export with the program's
  dynamic shapes).
* Report formats: `ReportFormat` (a name, what it writes, and `render(report, context)` from the
  JSON report to the file's text), `ReportContext` (the file's path and, on demand, the
  expectation `Proposals`, the run's history and its reduced programs).

A family is registered through the entry-point group `torch_backend_e2e.families` (or a line of
the ini key `e2e_families`), as the built-in families are; a backend through a config file's
`class: package.module:Name`; a report format through the entry-point group
`torch_backend_e2e.report_formats`, as the built-in formats are (docs/how-to/add-a-report-format.md).
"""
from harness.backend_interface import Backend, CaseContext, OnnxProgram, Program, Standalone, export_program
from harness.case_data import DTYPES, Case, check_keys
from harness.families.built import (
    Built,
    EagerGolden,
    FamilyGolden,
    Float64Golden,
    GivenGolden,
    Golden,
    GoldenContext,
    RatioGolden,
)
from harness.families.interface import Discovery, Family, FuzzSpace, Option, no_reductions, no_tags
from harness.families.loader import family
from harness.outcomes import Phase
from harness.views.formats import Proposals, ReportContext, ReportFormat

__all__ = ["Backend", "Built", "Case", "CaseContext", "DTYPES", "Discovery", "EagerGolden", "Family", "FamilyGolden",
           "Float64Golden", "FuzzSpace", "GivenGolden", "Golden", "GoldenContext", "OnnxProgram", "Option", "Phase",
           "Program", "Proposals", "RatioGolden", "ReportContext", "ReportFormat", "Standalone",
           "check_keys", "export_program", "family", "no_reductions", "no_tags"]
