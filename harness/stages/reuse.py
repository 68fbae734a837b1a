"""A backend's stages taken from the stage cache (harness.stages.entries) inside a worker: a stage
whose key is in the cache is loaded instead of computed, and checked by its fingerprint; one that
is not is computed, fingerprinted and written. Either way the case's record is the same (its
fingerprints, sizes and notes), and it says per stage `hit`, `miss` or `off` (CaseContext.cache),
with the seconds the hits saved.

The controller hands the cache's settings to each worker in the protocol's Start message (mode,
folder, size cap; harness.controller.workers), which the worker passes to `use_cache` before it
creates a backend. Without them (a backend outside a worker), or with `--cache=off`, every stage
is computed and says `off`."""
from __future__ import annotations

import dataclasses
import io
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.backend_interface import CaseContext, Program, user_output_count
from harness.entry_points import DISTRIBUTION
from harness.ops.names import graph_op_counts
from harness.protocol import CacheSettings
from harness.stages.entries import WARNINGS_NOTE, CacheMode, StageCache
from harness.stages.fingerprinting import digest, fingerprint_of, tensor_bytes
from harness.stages.keys import BUILDS_MEMO, build_digest, file_digest, stage_key
from harness.stages.writer import Payload


@dataclasses.dataclass(frozen=True)
class Stage:
    """One cacheable stage: its fingerprint's name, what determines its output, how to store it."""

    name: str
    source: Callable[[], str]            # the fingerprint of its input, or the program's identity ("":
                                         # unknown, the stage is not cached); asked only with a cache
    builds: Callable[[], Mapping[str, str]]   # the packages that compute it: their build digests
    options: Mapping[str, Any]           # the backend's options that change it
    dump: Callable[[Any], Payload]       # its output as bytes (may raise: then it is not cached), or a
                                         # function making them off the case's path (harness.stages.writer)
    load: Callable[[bytes], Any]         # and back
    shown: Callable[[Any], Any] = lambda output: output   # what its fingerprint hashes (an IR's text)
    fingerprinted: bool = True           # False: the machine's, not the compiler's (the JIT's machine
                                         # code): cached, never compared between two runs
    facts: Callable[[Any], Mapping[str, Any]] = lambda output: {}   # what later stages record of it (JSON)
    kept: bool = True                    # False: its entry holds the fingerprint and facts alone (the next
                                         # stage's key and records need no more); its output, asked for
                                         # when the next stage misses, is computed then (a miss)


_cache: StageCache | None = None
_pending: list[str] = []   # warnings of the cache, until the case they happened in takes them


def use_cache(settings: CacheSettings | None, background: bool = False) -> None:
    """Use the cache the controller's settings name from now on; None, or mode off: none.
    `background` (a worker's): entries are written by a thread of their own."""
    global _cache
    if settings is None or CacheMode(settings.mode) is CacheMode.OFF:
        _cache = None
    else:
        _cache = StageCache(Path(settings.dir), CacheMode(settings.mode), settings.size, _pending.append, background)


def flush_cache() -> None:
    """Wait until this worker's entries are written (before it ends: harness.protocol's Flush)."""
    if _cache is not None:
        _cache.flush()


def worker_cache() -> StageCache | None:
    """This worker's cache; None: off."""
    return _cache


class Output:
    """A stage's output and the facts about it that the stages after it record (op and output
    counts). A hit loads the output only when `value` is first asked for: in a warm run whose next
    stage hits too, it is never loaded (the tiny models' programs, weights and all)."""

    def __init__(self, facts: Mapping[str, Any], load: Callable[[], Any]):
        self.facts, self._load, self._loaded = facts, load, False

    @classmethod
    def of(cls, value: Any, stage: Stage) -> Output:
        return cls(stage.facts(value), lambda: value)

    @property
    def value(self) -> Any:
        if not self._loaded:
            self._value, self._loaded = self._load(), True
        return self._value


def cached(case: CaseContext, stage: Stage, compute: Callable[[], Any]) -> Any:
    """The stage's output: loaded from the cache when its key is there and its fingerprint holds,
    else computed (and written, when the mode writes)."""
    return deferred(case, stage, compute).value


def deferred(case: CaseContext, stage: Stage, compute: Callable[[], Any]) -> Output:
    """As `cached`, but a hit's output is loaded when first asked for; its fingerprint and facts
    come with the entry."""
    cache = worker_cache()
    if cache is None:
        return Output.of(_computed(case, stage, compute, "off"), stage)
    source = stage.source()
    if not source:   # what determines it could not be read: computed, never cached
        return Output.of(_computed(case, stage, compute, "uncacheable"), stage)
    key = stage_key(stage.name, source, stage.builds(), stage.options)
    entry = cache.get(key)
    _take_warnings(case)
    if entry is not None:
        fingerprint, facts, data = _parts(entry.payload)
        if facts is not None:
            if stage.fingerprinted and fingerprint:   # none: written with fingerprints off
                case.fingerprints[stage.name] = fingerprint
            case.cache[stage.name] = "hit"
            case.cache_saved_s += entry.seconds
            return Output(facts, lambda: _loaded_else_computed(case, stage, compute, cache, key, entry.seconds,
                                                                data))
    return Output.of(_written(case, stage, compute, cache, key), stage)


def stored(case: CaseContext, stage: Stage) -> Any | None:
    """The stage's output when the cache holds it and it loads, its status `hit`; else None, and
    nothing noted. The hit's seconds are not counted: the caller's stretch counts them."""
    cache = worker_cache()
    source = stage.source() if cache is not None else ""
    entry = cache.get(stage_key(stage.name, source, stage.builds(), stage.options)) if cache and source else None
    if entry is None:
        return None
    fingerprint, facts, data = _parts(entry.payload)
    value = _faithful(stage, data, fingerprint) if facts is not None else _UNLOADED
    if value is _UNLOADED:
        return None
    case.cache[stage.name] = "hit"
    return value


def _loaded_else_computed(case: CaseContext, stage: Stage, compute: Callable[[], Any], cache: StageCache, key: str,
                          seconds: float, data: bytes) -> Any:
    """A hit's output, loaded; computed (and written again) when it does not load or is not what
    was written (a loader that is not faithful: never a wrong result)."""
    value = _faithful(stage, data, case.fingerprints.get(stage.name, ""))
    if value is not _UNLOADED:
        return value
    case.cache_saved_s -= seconds
    return _written(case, stage, compute, cache, key)


_UNLOADED = object()   # an entry's output that did not load, or is not what was written


def _faithful(stage: Stage, data: bytes, fingerprint: str) -> Any:
    """An entry's output loaded, when it loads and its fingerprint (if the stage has one) is the
    one written with it; else _UNLOADED."""
    if not stage.kept:
        return _UNLOADED
    try:
        value = stage.load(data)
        if not (stage.fingerprinted and fingerprint) or fingerprint_of(stage.shown(value)) == fingerprint:
            return value
    except Exception:  # noqa: BLE001 - whatever the loader raises, the stage is computed instead
        pass
    return _UNLOADED


def _written(case: CaseContext, stage: Stage, compute: Callable[[], Any], cache: StageCache, key: str) -> Any:
    """The stage computed, and its entry written when the mode writes."""
    started = time.perf_counter()
    value = _computed(case, stage, compute, "miss")
    seconds = time.perf_counter() - started
    if cache.mode.writes:
        try:
            facts = json.dumps(stage.facts(value), sort_keys=True)
            head = f"{case.fingerprints.get(stage.name, '')}\n{facts}\n".encode()
            data = stage.dump(value) if stage.kept else b""
        except Exception:  # noqa: BLE001 - a stage that does not serialise is computed each time
            case.cache[stage.name] = "uncacheable"
            return value
        cache.put(key, _after(head, data), seconds)
        _take_warnings(case)
    return value


def _after(head: bytes, data: Payload) -> Payload:
    """An entry's payload: its head lines, then the stage's bytes (made later, when a function)."""
    if isinstance(data, bytes):
        return head + data
    make = data
    return lambda: head + make()


def _computed(case: CaseContext, stage: Stage, compute: Callable[[], Any], status: str) -> Any:
    value = compute()
    if stage.fingerprinted:
        case.fingerprint(stage.name, stage.shown(value))
    case.cache[stage.name] = status
    return value


def _parts(payload: bytes) -> tuple[str, dict | None, bytes]:
    """An entry's fingerprint line, facts line (None when it is not a JSON mapping) and output."""
    fingerprint, _, rest = payload.partition(b"\n")
    facts, _, data = rest.partition(b"\n")
    try:
        parsed = json.loads(facts)
    except ValueError:
        return fingerprint.decode(errors="replace"), None, data
    return fingerprint.decode(errors="replace"), parsed if isinstance(parsed, dict) else None, data


def _take_warnings(case: CaseContext) -> None:
    if _pending:
        case.notes.setdefault(WARNINGS_NOTE, []).extend(_pending)
        _pending.clear()


# ---- what the PyTorch stages need

# A package a stage's key depends on, as its backend names it: the distribution, with its import
# name where the distribution's name does not suggest it (("iree-base-compiler", "iree.compiler")).
Distribution = str | tuple[str, str]
HARNESS = (DISTRIBUTION, "harness")   # the harness's own code, in every key


def torch_build() -> dict[str, str]:
    return {"torch": build_digest("torch", files=False)}


def compiler_build(package: Distribution) -> dict[str, str]:
    """torch's build and a compiler's: its version and its files' contents (a rebuild under one
    version counts)."""
    return {**torch_build(), **package_builds(package)}


def package_builds(*packages: Distribution) -> dict[str, str]:
    """These packages' builds, by distribution: each one's version and its files' contents."""
    cache = worker_cache()
    memo_dir = cache.root / BUILDS_MEMO if cache else None
    named = [(package, None) if isinstance(package, str) else package for package in packages]
    return {name: build_digest(name, module, memo_dir=memo_dir) for name, module in named}


def fingerprint_source(case: CaseContext, *stages: str) -> Callable[[], str]:
    """The source of a stage computed from these stages' outputs: their fingerprints, as the case
    has them when asked."""
    return lambda: source_of(case.fingerprints, *stages)


def source_of(fingerprints: Mapping[str, str], *stages: str) -> str:
    """The source of a stage computed from these stages' outputs, of these fingerprints ("": one is unknown)."""
    return digest(*(fingerprints.get(stage, "") for stage in stages)) if all(
        fingerprints.get(stage) for stage in stages) else ""


def program_identity(case: CaseContext, program: Program) -> str:
    """What determines a program's export: the case (family and parameters), the harness's code
    and torch's build, the source files of its module classes (a project's own), and the bytes of
    its weights and example inputs. "" when those cannot be read (the export is not cached)."""
    try:
        return _identity(case, program)
    except Exception:  # noqa: BLE001 - a tensor without plain bytes, a module without a file
        return ""


def _identity(case: CaseContext, program: Program) -> str:
    module = program.module
    classes = sorted({type(m).__module__ for m in module.modules()})
    files = [file_digest(Path(getattr(sys.modules.get(name), "__file__", "") or "")) for name in classes]
    tensors = [*module.state_dict().values(), *program.example_inputs]
    return digest(case.family, json.dumps(dict(case.params), sort_keys=True, default=repr),
                  json.dumps(compiler_build(HARNESS)), repr(program.dynamic_shapes), *classes, *files,
                  *(tensor_bytes(t) for t in tensors if hasattr(t, "dtype")))


def program_facts(exported: Any) -> dict[str, Any]:
    """What the stages after an exported program record of it: its op count and its ops (the
    record's `ops`), how many of its outputs are the program's own."""
    return {"ops": graph_ops(exported), "outputs": user_output_count(exported),
            "aten_ops": graph_op_counts(exported.graph)}


def graph_ops(exported: Any) -> int:
    """The calls in an exported program's FX graph (its aten ops)."""
    return sum(node.op == "call_function" for node in exported.graph.nodes)


def exported_ops(exported: Output) -> dict[str, int]:
    """An exported program's ops (CaseContext.ops): from its entry's facts, or counted (an entry
    written before the facts held them)."""
    ops = exported.facts.get("aten_ops")
    return dict(ops) if isinstance(ops, dict) else graph_op_counts(exported.value.graph)


def save_exported(exported: Any) -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    return buffer.getvalue()


def load_exported(data: bytes) -> Any:
    import torch

    exported = torch.export.load(io.BytesIO(data))
    for node in exported.graph.nodes:   # an op's `Tensor[]` result comes back as a tuple: the FX importer takes lists
        value = node.meta.get("val")
        if isinstance(value, tuple) and _returns_a_list(node.target, torch):
            node.meta["val"] = list(value)
    return exported


def _returns_a_list(target: Any, torch: Any) -> bool:
    """Whether an op returns one list of tensors (split_with_sizes, unbind): torch.export.load gives
    its value as a tuple, which torch-mlir's FX importer cannot type ("Could not deduce type from
    value info"), so a program loaded from the cache failed an import the computed one passed."""
    returns: Any = getattr(getattr(target, "_schema", None), "returns", ())
    return len(returns) == 1 and isinstance(returns[0].type, torch.ListType)


def save_mlir(module: Any) -> bytes:
    """An MLIR module as bytecode, every constant in full (the fingerprint's print elides them)."""
    buffer = io.BytesIO()
    module.operation.write_bytecode(buffer)
    return buffer.getvalue()


def same_bytes(data: bytes) -> bytes:
    """A stage whose output is bytes already (a compiled artifact) is stored as it is."""
    return data
