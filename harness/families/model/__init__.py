"""The `model` family: transformers' architectures built from their config classes with random
weights, offline, their inputs described as data (harness.families.model.params), and the
registry of built-in architectures (harness.families.model.registry, cases/models/transformers.yaml),
and `python -m harness model-table`, the matrix of models and backends (harness.families.model.table).

Pure Python (the pytest process imports it, never torch or transformers); the builder lives in
.build, imported in workers.
"""
from __future__ import annotations

import functools
from typing import Any, Mapping

from harness.families.interface import Discovery, Family, Option
from harness.families.model import params
from harness.families.model.commands import add_commands
from harness.installation.extras import install_command
from harness.program_kinds import TRAIN_STEP

OPTIONS = (
    Option("model-tiers", "size tiers of the registry's models, a comma list: tiny (default), small",
           default="tiny", metavar="TIER[,TIER...]", parse=params.parse_tiers),
)
# Nothing is ever downloaded: every model is built from its config, and a stray hub lookup fails fast.
WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


def not_installed() -> str:
    return f"transformers is not installed ({install_command(['models'])})"


@functools.cache
def transformers_installed() -> bool:
    from harness.installation.packages import locate

    return locate("transformers") is not None


def discover(options: Mapping[str, Any]) -> Discovery | None:
    """No cases to find, only, without transformers, that there are none (and that the family's
    expectation entries do not apply)."""
    if transformers_installed():
        return None
    return Discovery({}, notices=[f"{params.FAMILY}: the registry's models are not collected: {not_installed()}"],
                     missing={params.FAMILY: not_installed()})


MODEL = Family(name=params.FAMILY, validate=params.validate, builder="harness.families.model.build:build",
               derive_tags=params.derive_tags, subject=params.subject, markers=(params.FAMILY, TRAIN_STEP),
               options=OPTIONS, discover=discover, worker_env=WORKER_ENV, commands=add_commands,   # -m train_step
               at_dtype=params.at_dtype, coverage="programs")
FAMILIES = [MODEL]
