"""A deterministic stretch remembered (harness.stages.stretches): the stretch that failed is not run
again on a warm cache; its phases, findings and message come back as they were. Out of memory, a
bundle, another build or a damaged entry: computed. A success comes back with its value, its
phases and its findings."""
from __future__ import annotations

import pytest

from harness.backend_interface import case_context
from harness.errors import describe_error
from harness.outcomes import Phase
from harness.protocol import CacheSettings
from harness.stages import reuse
from harness.stages.entries import ENTRIES
from harness.stages.stretches import Stretch

CASE = {"id": "fam/a", "family": "fam", "params": {}}


@pytest.fixture
def cache(tmp_path):
    reuse.use_cache(CacheSettings("on", str(tmp_path / "stages"), 1 << 30))
    yield tmp_path / "stages"
    reuse.use_cache(None)


def stretch(case, build: str = "1") -> Stretch:
    return Stretch(case, "lowering", lambda: case.fingerprints["decomposed"], lambda: {"c": build}, {"pipeline": "x"})


def attempt(runs: list, build: str = "1", bundle=None, error: BaseException | None = None):
    """One case through a stretch that enters lower, notes findings and fails; its entered phases,
    its context and its error's description."""
    phases: list = []
    case = case_context(CASE, phases.append)
    case.bundle = bundle
    case.fingerprints["decomposed"] = "f00d"
    try:
        with stretch(case, build).failure_remembered():
            runs.append(1)
            case.enter(Phase.LOWER)
            case.sizes["torch_ops"] = 7
            case.fingerprint("torch_backend_ir", "module {}")
            case.notes.setdefault("seen", []).append("a")
            case.cache["torch_ir"] = "miss"
            raise error or ValueError("failed to legalize operation 'torch.aten.x'")
    except BaseException as raised:   # noqa: BLE001 - MemoryError too
        return phases, case, describe_error(raised) if not isinstance(raised, MemoryError) else "MemoryError"
    return phases, case, None


def test_a_failure_is_written_once_then_given_again_without_running(cache):
    runs: list = []
    phases, cold, message = attempt(runs)
    assert message.startswith("ValueError: failed to legalize operation 'torch.aten.x' (at ")
    assert cold.cache["lowering_failure"] == "miss"
    phases_again, warm, again = attempt(runs)
    assert runs == [1]   # the second attempt ran nothing of the stretch
    assert (phases_again, again) == (phases, message) == ([Phase.LOWER], message)
    for field in ("sizes", "fingerprints", "notes"):
        assert getattr(warm, field) == getattr(cold, field)
    assert warm.cache == {"torch_ir": "hit", "lowering_failure": "hit"} and warm.cache_saved_s >= 0


def test_another_build_a_bundle_or_running_out_of_memory_runs_the_stretch(cache, tmp_path):
    runs: list = []
    attempt(runs)
    attempt(runs, build="2")   # a rebuilt compiler: its own key
    attempt(runs, bundle=object())   # --artifacts-dir: its bundle needs each stage's IR, so it runs
    assert runs == [1, 1, 1]
    attempt(runs, build="3", error=MemoryError())
    attempt(runs, build="3", error=MemoryError())
    assert runs == [1] * 5   # out of memory says nothing of the program: never remembered


def damage(cache) -> None:
    """Every entry of the cache cut short."""
    for entry in (cache / ENTRIES).rglob("*"):
        if entry.is_file():
            entry.write_bytes(entry.read_bytes()[:-5])


def test_a_damaged_entry_is_run_again_and_written_anew(cache):
    runs: list = []
    attempt(runs)
    damage(cache)
    phases, _, message = attempt(runs)
    assert runs == [1, 1] and phases == [Phase.LOWER] and message.startswith("ValueError")
    attempt(runs)
    assert runs == [1, 1]


def test_without_a_cache_or_a_fingerprint_nothing_is_remembered(tmp_path):
    runs: list = []
    attempt(runs)
    attempt(runs)
    assert runs == [1, 1]


def succeed(runs: list, build: str = "1"):
    """One case through a stretch that goes well: its phases, its context and the value it gave,
    remembered or computed."""
    phases: list = []
    case = case_context(CASE, phases.append)
    case.fingerprints["decomposed"] = "f00d"
    lowering = stretch(case, build)
    if (known := lowering.success()) is not None:
        lowering.replay(known)
        return phases, case, known.value
    with lowering.failure_remembered():
        runs.append(1)
        case.enter(Phase.IMPORT)
        case.sizes["torch_ops"] = 7
        case.enter(Phase.COMPILE)
        case.fingerprint("llvm_ir", "llvm.func @f()")
        case.cache["torch_ir"] = "miss"
    case.cache["machine_code"] = "miss"   # after the block: still the stretch's
    lowering.remember({"entry": "f", "outputs": 1})
    return phases, case, {"entry": "f", "outputs": 1}


def test_a_success_is_written_once_then_given_back_with_its_value_phases_and_findings(cache):
    runs: list = []
    phases, cold, value = succeed(runs)
    assert cold.cache == {"torch_ir": "miss", "machine_code": "miss", "lowering": "miss"}
    phases_again, warm, again = succeed(runs)
    assert runs == [1] and again == value and phases_again == phases == [Phase.IMPORT, Phase.COMPILE]
    for field in ("sizes", "fingerprints", "notes"):
        assert getattr(warm, field) == getattr(cold, field)
    assert warm.cache == {"torch_ir": "hit", "machine_code": "hit", "lowering": "hit"}
    succeed(runs, build="2")   # a rebuilt compiler: its own key
    assert runs == [1, 1]


def test_a_damaged_success_or_no_cache_runs_the_stretch(cache):
    runs: list = []
    succeed(runs)
    damage(cache)
    assert succeed(runs)[1].cache["lowering"] == "miss" and runs == [1, 1]
    reuse.use_cache(None)
    assert "lowering" not in succeed(runs)[1].cache and runs == [1, 1, 1]
