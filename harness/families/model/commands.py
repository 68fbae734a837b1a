"""The model family's subcommand: `python -m harness model-table`, its matrix of models and backends."""
from __future__ import annotations

import argparse

from harness.families.model.table import BEGIN, END, model_table
from harness.outcome_matrix import add_matrix_command


def add_commands(commands: argparse._SubParsersAction) -> None:
    add_matrix_command(commands, "model-table", "the model family's matrix of JSON reports: per model and backend, "
                       "passed or the phase it failed in", "docs/results/models.md", model_table, (BEGIN, END))
