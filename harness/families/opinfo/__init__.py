"""PyTorch's OpInfo database as two families: `opinfo` (an op's forward on one sample) and
`opinfo_grad` (its gradient), their options, and `python -m harness opinfo-stats`.

Pure Python (the pytest process imports it); the builders live in .build, the manifest lister
in .manifest, both run in workers.
"""
from __future__ import annotations

from harness.families.interface import Family, Option
from harness.families.opinfo import params
from harness.families.opinfo.commands import add_commands

OPTIONS = (
    Option("opinfo-samples", "OpInfo samples per op and dtype: the first (default), all, or the first N",
           default=params.DEFAULT_SAMPLES, metavar="first|all|N", parse=params.parse_samples),
)
# The manifest was listed with this seed: a set's iteration order (some samples' arguments) is the
# same in the worker that builds a case.
WORKER_ENV = {"PYTHONHASHSEED": "0"}
OPINFO = Family(name="opinfo", validate=params.validate, builder="harness.families.opinfo.build:build_forward",
                derive_tags=params.derive_tags, subject=params.subject, markers=("opinfo", "random", "inplace"),
                options=OPTIONS, commands=add_commands, worker_env=WORKER_ENV, lists_dtypes=True,
                coverage="ops")
OPINFO_GRAD = Family(name="opinfo_grad", validate=params.validate,
                     builder="harness.families.opinfo.build:build_gradient", derive_tags=params.derive_grad_tags,
                     subject=params.subject,
                     markers=("opinfo", "grad", "random", "inplace"), worker_env=WORKER_ENV, lists_dtypes=True,
                     coverage="ops")
FAMILIES = [OPINFO, OPINFO_GRAD]
