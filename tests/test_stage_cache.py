"""The stage cache's store and keys (harness.stages): entries round-trip under each mode, a
damaged entry is a miss with one warning, least recently used entries go first past the cap,
processes writing one key at once never leave a partial entry, and a key changes with each thing
that determines a stage (a comment added to a file of a package included); `python -m harness
cache info|clear` and bad settings."""
from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e_support import python_path_env

from harness.stages.entries import CacheMode, StageCache
from harness.stages.keys import build_digest, stage_key

KEY = "ab" + "0" * 62


def cache(tmp_path: Path, mode: CacheMode = CacheMode.ON, cap: int = 1 << 30) -> tuple[StageCache, list[str]]:
    warnings: list[str] = []
    return StageCache(tmp_path / "c", mode, cap, warnings.append), warnings


def test_an_entry_comes_back_as_written_with_its_cost(tmp_path):
    store, warnings = cache(tmp_path)
    assert store.get(KEY) is None
    store.put(KEY, b"module {}\n", 1.25)
    entry = store.get(KEY)
    assert (entry.payload, entry.seconds, warnings) == (b"module {}\n", 1.25, [])


@pytest.mark.parametrize("mode, reads, writes", [
    (CacheMode.OFF, False, False), (CacheMode.READ, True, False), (CacheMode.WRITE, False, True),
    (CacheMode.ON, True, True)])
def test_each_mode_reads_and_writes_as_it_says(tmp_path, mode, reads, writes):
    cache(tmp_path)[0].put(KEY, b"old", 1.0)
    store, _ = cache(tmp_path, mode)
    assert (store.get(KEY) is not None) == reads
    store.put("cd" + "1" * 62, b"new", 1.0)
    assert store.path("cd" + "1" * 62).exists() == writes


@pytest.mark.parametrize("damage", ["cut", "flipped", "empty", "header"])
def test_a_damaged_entry_is_a_miss_and_one_warning_then_gone(tmp_path, damage):
    store, warnings = cache(tmp_path)
    store.put(KEY, b"x" * 1000, 1.0)
    path = store.path(KEY)
    data = path.read_bytes()
    damaged = {"cut": data[:len(data) // 2], "flipped": data[:-1] + b"y", "empty": b"",
               "header": b"not json\n" + data.partition(b"\n")[2]}[damage]
    path.write_bytes(damaged)
    assert store.get(KEY) is None
    assert len(warnings) == 1 and "is damaged" in warnings[0] and str(path) in warnings[0]
    assert not path.exists()


def test_past_the_cap_the_least_recently_used_entries_go_first(tmp_path):
    store, _ = cache(tmp_path, cap=10_000)
    keys = [f"{i:02d}" + "0" * 62 for i in range(12)]
    for age, key in enumerate(keys[:11]):
        store.put(key, b"z" * 1000, 1.0)
        os.utime(store.path(key), (1000 + age, 1000 + age))
    store.get(keys[0])   # used now: the newest
    removed = store.evict()
    kept = [k for k in keys[:11] if store.path(k).exists()]
    assert removed == 4 and kept == [keys[0], *keys[5:11]]   # down to 80% of the cap
    assert store.info()["bytes"] <= 8_000


def _writer(root: str, rounds: int) -> None:
    store = StageCache(Path(root), CacheMode.ON, 1 << 30, print)
    for i in range(rounds):
        store.put(KEY, (b"%d" % (i % 7)) * 100_000, 1.0)


def test_processes_writing_one_key_at_once_never_leave_a_partial_entry(tmp_path):
    root = tmp_path / "c"
    writers = [multiprocessing.get_context("spawn").Process(target=_writer, args=(str(root), 40)) for _ in range(3)]
    for w in writers:
        w.start()
    reader, warnings = StageCache(root, CacheMode.ON, 1 << 30, print), []
    reader.warn = warnings.append
    seen = 0
    while any(w.is_alive() for w in writers):
        entry = reader.get(KEY)
        if entry is not None:
            assert len(entry.payload) in (100_000, 100_000 * 1) and len(set(entry.payload)) == 1
            seen += 1
    for w in writers:
        w.join()
    assert seen and not warnings and not [p for p in (root / "entries" / "ab").iterdir() if p.name != KEY]


def test_a_key_changes_with_each_thing_that_determines_the_stage():
    base = dict(stage="import", source="f" * 16, builds={"torch_mlir": "1"}, options={"pipeline": "a"})
    keys = {stage_key(**base)}
    for change in ({"stage": "lower"}, {"source": "e" * 16}, {"builds": {"torch_mlir": "2"}},
                   {"options": {"pipeline": "b"}}):
        keys.add(stage_key(**{**base, **change}))
    assert len(keys) == 5 and stage_key(**base) in keys


def test_a_build_digest_sees_a_comment_but_not_a_touch(tmp_path, monkeypatch):
    package = tmp_path / "site" / "fake_compiler"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("LOWERING = 1\n")
    (package / "lib.so").write_bytes(b"\x7fELF" + b"\0" * 5000)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    digest = lambda: build_digest.__wrapped__("fake_compiler", memo_dir=tmp_path / "memo")  # noqa: E731 - uncached
    first = digest()
    os.utime(package / "lib.so", (time.time() + 10, time.time() + 10))   # rebuilt byte for byte
    assert digest() == first
    (package / "__init__.py").write_text("LOWERING = 1  # a comment\n")
    assert digest() != first
    memo = json.loads(next((tmp_path / "memo").glob("fake_compiler-*.json")).read_text())
    assert sorted(Path(p).name for p in memo) == ["__init__.py", "lib.so"]


def test_two_checkouts_of_one_build_digest_alike(tmp_path, monkeypatch):
    for checkout in ("a", "b"):
        package = tmp_path / checkout / "same_build"
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("X = 1\n")
    digests = []
    for checkout in ("a", "b"):
        monkeypatch.syspath_prepend(str(tmp_path / checkout))
        sys.modules.pop("same_build", None)
        digests.append(build_digest.__wrapped__("same_build", memo_dir=tmp_path / "memo"))
    assert digests[0] == digests[1] and len(list((tmp_path / "memo").glob("same_build-*.json"))) == 2


def harness(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": python_path_env()}, timeout=120)


@pytest.mark.e2e
def test_the_cache_commands_report_and_clear(tmp_path):
    store, _ = cache(tmp_path)
    store.put(KEY, b"x" * 2048, 1.0)
    inductor_cache = store.compiler_cache("inductor") / "fxgraph"
    inductor_cache.mkdir(parents=True)
    shown = harness(tmp_path, "cache", "info", "--cache-dir=c", "--cache-size=1M")
    assert shown.returncode == 0 and shown.stdout.startswith("c: 1 entries, 2.1 KiB of 1.0 MiB, the least recently")
    figures = json.loads(harness(tmp_path, "cache", "info", "--cache-dir=c", "--format=json").stdout)
    assert figures["entries"] == 1 and figures["cap_bytes"] == 20 << 30
    assert harness(tmp_path, "cache", "clear", "--cache-dir=c").stdout == "c: 1 entries removed\n"
    assert not store.path(KEY).exists() and not inductor_cache.exists()


@pytest.mark.e2e
def test_bad_cache_settings_are_one_line(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\ne2e_cache_size = lots\n")
    run = harness(tmp_path, "cache", "info")
    assert run.returncode == 2 and run.stderr.strip().splitlines() == [
        "error: e2e_cache_size = lots: not a valid size"], run.stderr
    (tmp_path / "pytest.ini").write_text("[pytest]\ne2e_cache = sometimes\n")
    run = harness(tmp_path, "cache", "info")
    assert run.returncode == 2 and "error: e2e_cache = sometimes: must be one of on, read, write, off" in run.stderr


def test_a_loaded_program_imports_as_the_computed_one_did():
    """torch.export.load gives an op's `Tensor[]` result (split_with_sizes) as a tuple, which
    torch-mlir's FX importer cannot type: a case whose decomposition came from another case's entry
    (the same program) failed its import. The loader gives the list back."""
    torch = pytest.importorskip("torch")
    fx_importer = pytest.importorskip("torch_mlir.extras.fx_importer")
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect

    from harness.stages.reuse import load_exported, save_exported

    class Split(torch.nn.Module):
        def forward(self, x):
            return torch.split_with_sizes(x, [1, 3, 1])

    computed = torch.export.export(Split(), (torch.randn(5, 5, 5),)).run_decompositions()
    loaded = load_exported(save_exported(computed))
    def values(program):
        return [type(n.meta["val"]) for n in program.graph.nodes if n.op == "call_function"]

    assert values(loaded) == values(computed) and list in values(computed)
    context = ir.Context()
    torch_dialect.register_dialect(context)
    fx_importer.FxImporter(context=context).import_frozen_program(loaded)


@pytest.fixture
def worker_cache_in(tmp_path):
    """A worker's stage cache in tmp_path, as the controller's Start message gives it."""
    from harness.protocol import CacheSettings
    from harness.stages import reuse

    reuse.use_cache(CacheSettings("on", str(tmp_path / "c"), 1 << 30))
    yield reuse
    reuse.use_cache(None)


def test_a_hit_is_loaded_only_when_its_output_is_asked_for(worker_cache_in):
    """Its fingerprint and facts come with the entry: a warm run whose next stage hits too never
    loads it (the tiny models' programs); a loader that gives something else is not believed."""
    from harness.backend_interface import CaseContext

    reuse, loads = worker_cache_in, []

    def stage(load):
        return reuse.Stage("text", lambda: "its input", dict, {}, str.encode, load, facts=lambda t: {"n": len(t)})

    def computed(text: str):
        case = CaseContext(enter=lambda phase: None)
        return case, reuse.deferred(case, stage(lambda data: loads.append(data) or data.decode()), lambda: text)

    cold_case, cold = computed("twelve chars")
    warm_case, warm = computed("not computed")   # a hit: the compute is not called
    assert warm.facts == cold.facts == {"n": 12} and loads == []
    assert warm_case.fingerprints == cold_case.fingerprints and warm_case.cache == {"text": "hit"}
    assert warm.value == "twelve chars" and len(loads) == 1
    unfaithful_case = CaseContext(enter=lambda phase: None)
    unfaithful = reuse.deferred(unfaithful_case, stage(lambda data: "something else"), lambda: "twelve chars")
    assert unfaithful.value == "twelve chars" and unfaithful_case.cache == {"text": "miss"}


def test_a_stage_kept_as_its_facts_gives_them_and_computes_its_output_when_asked(worker_cache_in):
    """The MLIR backends' decomposed program: its entry holds the fingerprint and facts the import's
    key and the record need, not the program; a case that needs the program computes it (a miss)."""
    from harness.backend_interface import CaseContext

    reuse, computed = worker_cache_in, []
    stage = reuse.Stage("text", lambda: "its input", dict, {}, str.encode, bytes.decode, facts=lambda t: {"n": len(t)},
                        kept=False)

    def run(text: str):
        case = CaseContext(enter=lambda phase: None)
        return case, reuse.deferred(case, stage, lambda: computed.append(text) or text)

    cold_case, cold = run("twelve chars")
    warm_case, warm = run("twelve chars")
    assert (warm.facts, warm_case.fingerprints, warm_case.cache) == ({"n": 12}, cold_case.fingerprints, {"text": "hit"})
    assert computed == ["twelve chars"]   # the hit computed nothing
    (entry,) = [path.read_bytes() for path in (reuse.worker_cache().root / "entries").glob("*/*")]
    assert entry.endswith(b'{"n": 12}\n')   # the fingerprint and facts, then no output
    assert warm.value == "twelve chars" and warm_case.cache == {"text": "miss"} and len(computed) == 2


def test_a_golden_is_loaded_for_the_same_program_and_inputs_only(worker_cache_in):
    """The float64 golden's entry (harness.stages.goldens) is keyed on the program and on the input
    set's bytes, shapes and dtypes: another input set, of the same values in another shape, or
    another case's parameters computes it."""
    import torch

    from harness.backend_interface import CaseContext, Program
    from harness.stages.goldens import cached_golden

    def golden(inputs: tuple, params: dict | None = None) -> tuple[str, list]:
        case = CaseContext(enter=lambda phase: None, family="f", params=params or {"n": 1})
        program = Program(name="p", module=torch.nn.ReLU(), example_inputs=inputs)
        value = cached_golden(case, program, inputs, lambda: (program.module(*inputs).double(),))
        return case.cache["golden"], value

    values = torch.tensor([[-1.0, 2.0], [3.0, -4.0]])
    assert golden((values,))[0] == "miss"
    status, loaded = golden((values.clone(),))
    assert status == "hit" and torch.equal(loaded[0], torch.tensor([[0.0, 2.0], [3.0, 0.0]], dtype=torch.float64))
    assert golden((values + 1,))[0] == "miss"
    assert golden((values.reshape(4),))[0] == "miss"
    assert golden((values,), {"n": 2})[0] == "miss"
