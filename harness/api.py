"""torch-backend-e2e's public interface: what another project's case modules and case families
import, all from here (examples/external_project does).

    from harness.api import Family, module_case

* Cases: `Case` (plain data: id, family, params, tags, timeout) and the built-in families'
  constructors `conv_backward_case`, `conv_forward_case` and `module_case`; any family's
  `Family.case(name, params)`. `DTYPES`: the floating dtypes a case's params["dtype"] names.
* Families: `Family` and its extension points (each says when it is called, and on which side),
  `Option` (a command-line option and ini key a family declares), `Discovery` (cases a family
  finds outside the case modules), `Built` and `Program` (what a family's builder returns in a
  worker), `check_keys` (the one unknown-key check and wording), `no_reductions`, `no_tags`.

A family is registered through the entry-point group `torch_backend_e2e.families` (or a line of
the ini key `e2e_families`), as the built-in families are; see harness.families.interface.
"""
from harness.backend import Program
from harness.families.conv import conv_backward_case, conv_forward_case
from harness.families.interface import Built, Discovery, Family, Option, no_reductions, no_tags
from harness.families.module import module_case
from harness.spec import DTYPES, Case, check_keys

__all__ = ["Built", "Case", "DTYPES", "Discovery", "Family", "Option", "Program", "check_keys",
           "conv_backward_case", "conv_forward_case", "module_case", "no_reductions", "no_tags"]
