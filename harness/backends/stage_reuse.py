"""A backend's stages taken from the stage cache (harness.stage_cache) inside a worker: a stage
whose key is in the cache is loaded instead of computed, and checked by its fingerprint; one that
is not is computed, fingerprinted and written. Either way the case's record is the same (its
fingerprints, sizes and notes), and it says per stage `hit`, `miss` or `off` (CaseContext.cache),
with the seconds the hits saved.

The controller hands the cache's settings to the workers in TORCH_BACKEND_E2E_STAGE_CACHE (JSON:
mode, folder, size cap; harness.controller.workers). Without it, or with `--cache=off`, every stage
is computed and says `off`."""
from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from harness.backend_interface import CaseContext, Program
from harness.stage_cache.entries import ENVIRONMENT, WARNINGS_NOTE, CacheMode, StageCache
from harness.stage_cache.keys import build_digest, file_digest, stage_key
from harness.stage_fingerprints import digest, fingerprint_of, tensor_bytes


@dataclasses.dataclass(frozen=True)
class Stage:
    """One cacheable stage: its fingerprint's name, what determines its output, how to store it."""

    name: str
    source: Callable[[], str]            # the fingerprint of its input, or the program's identity ("":
                                         # unknown, the stage is not cached); asked only with a cache
    builds: Callable[[], Mapping[str, str]]   # the packages that compute it: their build digests
    options: Mapping[str, Any]           # the backend's options that change it
    dump: Callable[[Any], bytes]         # its output as bytes (may raise: then it is not cached)
    load: Callable[[bytes], Any]         # and back
    shown: Callable[[Any], Any] = lambda output: output   # what its fingerprint hashes (an IR's text)
    fingerprinted: bool = True           # False: the machine's, not the compiler's (the JIT's machine
                                         # code): cached, never compared between two runs


@functools.cache
def worker_cache() -> StageCache | None:
    """This worker's cache, from the controller's settings; None: off."""
    spec = os.environ.get(ENVIRONMENT)
    if not spec:
        return None
    settings = json.loads(spec)
    mode = CacheMode(settings["mode"])
    if mode is CacheMode.OFF:
        return None
    return StageCache(Path(settings["dir"]), mode, int(settings["size"]), _pending.append)


_pending: list[str] = []   # warnings of the cache, until the case they happened in takes them


def cached(case: CaseContext, stage: Stage, compute: Callable[[], Any]) -> Any:
    """The stage's output: loaded from the cache when its key is there and its fingerprint holds,
    else computed (and written, when the mode writes)."""
    cache = worker_cache()
    if cache is None:
        return _computed(case, stage, compute, "off")
    source = stage.source()
    if not source:   # what determines it could not be read: computed, never cached
        return _computed(case, stage, compute, "uncacheable")
    key = stage_key(stage.name, source, stage.builds(), stage.options)
    entry = cache.get(key)
    _take_warnings(case)
    if entry is not None:
        value = _loaded(stage, entry.payload)
        if value is not None:
            if stage.fingerprinted:
                case.fingerprints[stage.name] = value[0]
            case.cache[stage.name] = "hit"
            case.cache_saved_s += entry.seconds
            return value[1]
    started = time.perf_counter()
    value = _computed(case, stage, compute, "miss")
    seconds = time.perf_counter() - started
    if cache.mode.writes:
        try:
            payload = case.fingerprints.get(stage.name, "").encode() + b"\n" + stage.dump(value)
        except Exception:  # noqa: BLE001 - a stage that does not serialise is computed each time
            case.cache[stage.name] = "uncacheable"
            return value
        cache.put(key, payload, seconds)
        _take_warnings(case)
    return value


def _computed(case: CaseContext, stage: Stage, compute: Callable[[], Any], status: str) -> Any:
    value = compute()
    if stage.fingerprinted:
        case.fingerprint(stage.name, stage.shown(value))
    case.cache[stage.name] = status
    return value


def _loaded(stage: Stage, payload: bytes) -> tuple[str, Any] | None:
    """(fingerprint, output) of an entry, or None when it does not load or its output is not what
    was written (a loader that is not faithful: never a wrong result, the stage is computed)."""
    fingerprint, _, data = payload.partition(b"\n")
    try:
        value = stage.load(data)
    except Exception:  # noqa: BLE001 - whatever the loader raises, the stage is computed instead
        return None
    if fingerprint and fingerprint_of(stage.shown(value)) != fingerprint.decode():
        return None
    return fingerprint.decode(), value


def _take_warnings(case: CaseContext) -> None:
    if _pending:
        case.notes.setdefault(WARNINGS_NOTE, []).extend(_pending)
        _pending.clear()


# ---- what the PyTorch stages need

def torch_build() -> dict[str, str]:
    return {"torch": build_digest("torch", files=False)}


def compiler_build(package: str) -> dict[str, str]:
    """torch's build and a compiler's: its version and its files' contents (a rebuild under one
    version counts)."""
    return {**torch_build(), **package_builds(package)}


def package_builds(*packages: str) -> dict[str, str]:
    """These packages' builds: each one's version and its files' contents."""
    cache = worker_cache()
    return {package: build_digest(package, cache.root / "builds" if cache else None) for package in packages}


def fingerprint_source(case: CaseContext, *stages: str) -> Callable[[], str]:
    """The source of a stage computed from these stages' outputs: their fingerprints."""
    return lambda: digest(*(case.fingerprints.get(stage, "") for stage in stages)) if all(
        case.fingerprints.get(stage) for stage in stages) else ""


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
                  json.dumps(compiler_build("harness")), repr(program.dynamic_shapes), *classes, *files,
                  *(tensor_bytes(t) for t in tensors if hasattr(t, "dtype")))


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
