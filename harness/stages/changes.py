"""What a compiler change changed in one result: the first stage, in its backend's stage order, whose
fingerprint differs between two results of the same (case, backend). The report diff and the run
history both ask it; a result with no stage fingerprinted on one side (a report older than
fingerprints, a failure before the first stage) cannot be compared, and is not "changed".

A record holds its fingerprints in its backend's stage order (Backend.STAGES: the worker puts them
so, whatever order they were taken in), so the controller, which imports no backend, reads the
order from the record itself.
"""
from __future__ import annotations

from typing import Mapping, Sequence


def in_stage_order(fingerprints: Mapping[str, str], stages: Sequence[str]) -> dict[str, str]:
    """The fingerprints in the order of `stages` (a backend's STAGES); a stage it does not name
    after those, in the order taken."""
    named = {stage: fingerprints[stage] for stage in stages if stage in fingerprints}
    return {**named, **fingerprints}


def comparable(old: Mapping[str, str], new: Mapping[str, str]) -> bool:
    """Whether the two results fingerprinted any stage in common."""
    return not old.keys().isdisjoint(new.keys())


def first_changed_stage(old: Mapping[str, str], new: Mapping[str, str]) -> str | None:
    """The first stage, in the newer record's order, that both fingerprinted with different
    fingerprints; None when none does (a stage one side did not reach is not a change: its outcome
    change says more)."""
    return next((stage for stage in new if stage in old and old[stage] != new[stage]), None)
