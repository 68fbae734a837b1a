"""Real architectures from transformers, built from their configs with random weights, offline:
the registry cases/models/transformers.yaml (harness.families.model.registry says how an entry
becomes cases). --model-tiers picks the tiers (tiny by default; small: realistic sizes).

Ids read `model/<name>/<tier>` and `model/<name>/<tier>/<variant>`, e.g. `model/bert/tiny`.
"""
from pathlib import Path

from harness.families.model import MODEL, transformers_installed
from harness.families.model.registry import registry_cases, registry_ids

FAMILIES = ("model",)
REGISTRY = Path(__file__).parent / "models" / "transformers.yaml"


def cases(options):
    return registry_cases(MODEL, REGISTRY, options.get("model_tiers") or ("tiny",)) if transformers_installed() else []


def case_ids(options):
    return registry_ids(MODEL, REGISTRY) if transformers_installed() else []
