"""A registry of architectures as data (the built-in one: cases/models/transformers.yaml), read in
the pytest process, and how each entry becomes cases.

The file is a mapping: `models`, the list of entries; optionally `timeout`, every case's timeout
in seconds unless its entry gives one (a whole model compiles for far longer than an op: LLVM at
-O2 and Inductor's C++ take minutes on a loaded machine); and optionally `shared`, anything the
entries refer to with YAML anchors (sizes several share). An entry is the model family's params
(harness.families.model.params) shared by its cases, plus:

    name      the case ids' stem: `model/<name>/<tier>` and `model/<name>/<tier>/<variant>`
    kind      what the architecture is (encoder, decoder, encoder_decoder, vision, audio): a tag
    tiers     tier name (tiny, small) -> a patch of the params: that tier's sizes
    variants  variant name -> a patch of the params, applied on every tier (or those of its
              `tiers:` list), with `tags:` of its own; the variant's name is a tag too
    tags      more tags for every case of the entry
    timeout   seconds, for each of its cases

A patch merges into what it patches: a mapping (config, inputs, one input) key by key, anything
else replaced.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.case_data import Case, check_keys
from harness.errors import HarnessInputError
from harness.families.interface import Family
from harness.families.model.params import PARAM_KEYS, TIERS
from harness.files import display_path, where
from harness.project_files.yamlio import load_yaml

OWN_KEYS = ("name", "kind", "tiers", "variants", "tags", "timeout")   # the entry's, not its cases' params
SHARED_KEYS = tuple(k for k in PARAM_KEYS if k != "tier")             # params every tier and variant patches
ENTRY_KEYS = (*OWN_KEYS, *SHARED_KEYS)
VARIANT_KEYS = ("tiers", "tags", *SHARED_KEYS)


def registry_cases(family: Family, path: Path, tiers: Iterable[str]) -> list[Case]:
    """The cases of the registry's entries in these tiers; HarnessInputError names the entry's line."""
    wanted, (entries, timeout) = set(tiers), _entries(path)
    return [case for entry in entries for case in _entry_cases(family, path, entry, wanted, timeout)]


def registry_ids(family: Family, path: Path) -> list[str]:
    """Every id the registry can give, in every tier (an expectation entry may name any)."""
    return [case.id for case in registry_cases(family, path, TIERS)]


def _entries(path: Path) -> tuple[list[dict], float | None]:
    """The entries, and the default timeout."""
    document = load_yaml(path)
    entries = document.get("models") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries) \
            or not set(document) <= {"models", "shared", "timeout"}:
        raise HarnessInputError(display_path(path), "a model registry is a mapping of `models`, a list of "
                                "entries each with a name, and optionally `timeout` and `shared` (YAML anchors)")
    try:
        return entries, _seconds(document.get("timeout"))
    except ValueError as e:
        raise HarnessInputError(display_path(path), str(e), "give seconds, e.g. timeout: 300") from None


def _seconds(value: Any) -> float | None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0):
        return value
    raise ValueError(f"timeout must be a positive number of seconds, not {value!r}")


def _entry_cases(family: Family, path: Path, entry: dict, wanted: set[str], timeout: float | None) -> list[Case]:
    at = where(path, entry)
    try:
        check_keys(entry, ENTRY_KEYS)
        name, tiers, variants = entry.get("name"), entry.get("tiers"), entry.get("variants") or {}
        if not (isinstance(name, str) and name):
            raise ValueError(f"name must be a non-empty string, not {name!r}")
        if not isinstance(tiers, dict) or not tiers or not set(tiers) <= set(TIERS):
            raise ValueError(f"tiers must map some of {', '.join(TIERS)} to their params, not {tiers!r}")
        if not isinstance(variants, dict):
            raise ValueError(f"variants must map names to params, not {variants!r}")
        shared = {k: v for k, v in entry.items() if k not in OWN_KEYS}
        tags = [entry.get("kind", "")] + list(entry.get("tags", []))
        timeout = _seconds(entry.get("timeout", timeout))
        cases = []
        for tier in (t for t in TIERS if t in tiers and t in wanted):
            params = merged(merged(shared, tiers[tier] or {}), {"tier": tier})
            cases.append(family.case(f"{name}/{tier}", params, tags=tags, timeout=timeout))
            cases += [family.case(f"{name}/{tier}/{variant}", merged(params, own), tags=tags + more, timeout=timeout)
                      for variant, own, more in _variants(variants, tier)]
        return cases
    except (ValueError, TypeError) as e:
        raise HarnessInputError(at, str(e), "fix the registry entry") from None


def _variants(variants: Mapping[str, Any], tier: str) -> list[tuple[str, dict, list[str]]]:
    """(name, patch of the params, tags) of each variant applied on this tier."""
    found = []
    for variant, patch in variants.items():
        check_keys(patch, VARIANT_KEYS, f"variants.{variant}")
        if tier in patch.get("tiers", TIERS):
            own = {k: v for k, v in patch.items() if k not in ("tiers", "tags")}
            found.append((variant, own, [variant, *patch.get("tags", [])]))
    return found


def merged(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict:
    """`patch` over `base`: mappings merge key by key, anything else is replaced."""
    result = dict(base)
    for key, value in patch.items():
        old = result.get(key)
        result[key] = merged(old, value) if isinstance(old, Mapping) and isinstance(value, Mapping) else value
    return result
