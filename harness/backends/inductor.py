"""The `inductor` backend: torch.compile(module, fullgraph=True) with TorchInductor on CPU.

torch.compile is lazy, so `compile` calls the compiled module once on the example inputs, and
the stages of that first call report their phases through the backend callable handed to
torch.compile, which is Inductor's own entry point (what backend="inductor" calls) wrapped:
  export   TorchDynamo captures the graph (graph breaks, fake-tensor and meta-function errors)
  lower    AOT Autograd: functionalisation and decomposition to the ATen ops Inductor consumes
  compile  Inductor: lowering, scheduling, C++ code generation, gcc, loading the kernels
  run      entered when compilation returns, so that the first execution counts as a run
`run` calls the same compiled module again (under torch.no_grad, like the first call).

A training step (Program.train_step) is compiled as torch.compile's users train: the loss module
compiled, then autograd asked for the gradients, which runs the backward graph AOT Autograd made
and Inductor compiled at the first call (fingerprints aot_graph_backward and inductor_code_backward).

Dynamic shapes: the dims that Program.dynamic_shapes makes dynamic are marked with
torch._dynamo.mark_dynamic on the example inputs, so the graph is compiled once with a symbolic
batch. `run` executes under torch.compiler.set_stance("fail_on_recompile"): if a later input set
would make Dynamo recompile (the dynamic dim was specialised after all), the case fails in phase
run with Dynamo's guard-failure reason instead of silently compiling a second graph.

What it exercises (torch 2.13 CPU): Inductor keeps aten.convolution_backward as an extern call of
ATen's own kernel, so convolution-gradient cases test capture, AOT Autograd and Inductor's wrapper code
but generate no C++. So do 1-D and 3-D forward cases (extern convolution); only the 2-D forward
cases add generated C++ kernels (channels-last layout conversions around the extern convolution).

Dynamo keys its caches on the code object, which every case of a family shares
(ConvolutionBackward.forward), so `compile` resets Dynamo first; otherwise the ninth case of a
worker would hit the recompile limit (8) and fail with FailOnRecompileLimitHit.

Inductor's own caches (its FX graph cache: the compiled graph and its kernels, keyed by Inductor
on the graph, its inputs' shapes, its config, torch's build and the C++ compiler) follow the stage
cache: with --cache on (or read, write: Inductor has no such modes) TORCHINDUCTOR_CACHE_DIR is
`compilers/inductor` in --cache-dir, so a rerun loads what an earlier run compiled, and a record
says `cache: {inductor_code: hit|miss}` from Inductor's counters; with --cache=off the FX graph
cache is off and the folder is a fresh one per worker process (see fresh_cache_dir), so every case
really compiles. AOT Autograd's cache stays off either way: a hit of it skips Inductor's compile
and the record would lose its aot_graph and inductor_code fingerprints.

Options (configs/inductor.yaml):
  cache_dir        Inductor's cache directory (TORCHINDUCTOR_CACHE_DIR), whatever --cache says.
                   Default: as above. A fresh folder's first C++ kernel of each worker pays the
                   cold cost (CPU ISA probes built with g++ and the first kernel): about 13 s on an
                   idle 2-core machine, 2 s after.
  compile_threads  Inductor's parallel compile workers (default 1: the harness already runs cases
                   in parallel, and a pool of compile subprocesses per worker costs start-up time)
"""
from __future__ import annotations

import atexit
import getpass
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Sequence

import torch
import torch._dynamo
import torch._functorch.config
import torch._inductor.config
from torch._dynamo.utils import counters
from torch._inductor import cpp_builder
from torch._inductor.compile_fx import compile_fx, compile_fx_inner

from harness.backend_interface import STANDALONE_SCRIPTS, Backend, CaseContext, Program, Standalone
from harness.ops.names import graph_op_counts
from harness.ops.paths import new_ops
from harness.outcomes import Phase
from harness.stages.reuse import worker_cache


def dynamic_dims(program: Program) -> list[tuple[int, ...]]:
    """Per example input, the dims that Program.dynamic_shapes makes dynamic."""
    specs = program.dynamic_shapes or [None] * len(program.example_inputs)
    return [tuple(spec or ()) for spec in specs]


def fresh_cache_dir() -> Path:
    """An empty <tmp>/torchinductor-e2e-<user>/<pid>. The pool SIGKILLs its workers, so atexit
    cannot be relied on: the directories of processes that no longer exist are removed here."""
    root = Path(tempfile.gettempdir()) / f"torchinductor-e2e-{getpass.getuser()}"
    for old in root.glob("*"):
        if old.name.isdigit() and (old.name == str(os.getpid()) or not _alive(int(old.name))):
            shutil.rmtree(old, ignore_errors=True)
    path = root / str(os.getpid())
    path.mkdir(parents=True)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def train_step_with(step: Any, compiled_loss: Any) -> Any:
    """The training step's module run around the compiled loss: what `run` calls."""
    return lambda *inputs: step.step(compiled_loss, inputs)


# The wrapper code Inductor generates calls a fallback as `torch.ops.aten.<op>.<overload>(...)` and
# an ATen kernel it chose as `extern_kernels.<name>(...)` (convolution, mm, addmm, bmm); whatever
# else reached it became generated kernels. The code is there on an FX graph cache hit too.
FALLBACK_CALL = re.compile(r"\btorch\.ops\.aten\.(\w+)\.")
EXTERN_CALL = re.compile(r"\bextern_kernels\.(\w+)\(")
INDUCTOR_PATHS = ("decomposed", "generated", "extern", "fallback")


def inductor_paths(program_ops: dict[str, int], reached: list[tuple[dict[str, int], str]]
                   ) -> tuple[dict[str, str], dict[str, int]]:
    """Each op's path (INDUCTOR_PATHS): a program op that no compiled graph holds was decomposed by
    AOT Autograd; an op that reached Inductor fell back to ATen, became an extern ATen kernel, or
    was generated. Every op that reached Inductor is named (which of a decomposition's ops fall
    back is what Inductor's users ask), with the new ones counted apart."""
    after: dict[str, int] = {}
    fallbacks: set[str] = set()
    externs: set[str] = set()
    for ops, source in reached:
        for op, count in ops.items():
            after[op] = after.get(op, 0) + count
        fallbacks.update(f"aten.{name}" for name in FALLBACK_CALL.findall(source))
        externs.update(f"aten.{name}" for name in EXTERN_CALL.findall(source))
    paths = {op: "decomposed" for op in program_ops if op not in after}
    for op in after:
        paths[op] = "fallback" if op in fallbacks else "extern" if op in externs else "generated"
    return dict(sorted(paths.items())), new_ops(program_ops, after)


class InductorBackend(Backend):
    LISTS_OPS = False   # the harness exports the program to list them: Dynamo's graph is torch's, not ATen's
    LOWERING_PATHS = INDUCTOR_PATHS
    # a training step's backward graph after its forward one (AOT Autograd's, compiled when autograd asks)
    STAGES = ("captured", "aot_graph", "inductor_code", "aot_graph_backward", "inductor_code_backward")
    OPTIONS = {"cache_dir": "TORCHINDUCTOR_CACHE_DIR; null: in --cache-dir, or a fresh one per worker with --cache=off",
               "compile_threads": "Inductor's parallel compile workers (default 1)"}

    def __init__(self, name, options):
        super().__init__(name, options)
        stage_cache = worker_cache()
        self.caching = stage_cache is not None
        cache_dir = self.options.get("cache_dir") or (stage_cache.compiler_cache("inductor") if stage_cache
                                                      else fresh_cache_dir())
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir)  # read by Inductor at each cache access
        torch._inductor.config.fx_graph_cache = self.caching
        torch._functorch.config.enable_autograd_cache = False   # its hits skip inner_compile: see above
        torch._inductor.config.compile_threads = int(self.options.get("compile_threads", 1))

    def compile(self, program: Program, case: CaseContext):
        torch._dynamo.reset()
        case.enter(Phase.EXPORT)
        inputs = [t.detach() for t in program.example_inputs]  # new tensor objects to mark
        for tensor, dims in zip(inputs, dynamic_dims(program)):
            for dim in dims:
                torch._dynamo.mark_dynamic(tensor, dim)

        reached: list[tuple[dict[str, int], str]] = []   # per graph Inductor compiled: its ops, its code

        def inner_compile(graph, *args, **kwargs):
            half = "_backward" if kwargs.get("is_backward") else ""   # a training step's second graph
            case.fingerprint(f"aot_graph{half}", graph)
            case.enter(Phase.COMPILE)
            before = dict(counters["inductor"])
            compiled = compile_fx_inner(graph, *args, **kwargs)
            case.cache[f"inductor_code{half}"] = self.cache_status(before)
            if source := getattr(compiled, "source_code", None):   # the Python and C++ Inductor generated
                case.fingerprint(f"inductor_code{half}", source)
            reached.append((graph_op_counts(graph.graph), source or ""))
            return compiled

        def backend(graph, example_inputs):
            case.sizes["export_ops"] = sum(node.op == "call_function" for node in graph.graph.nodes)
            case.fingerprint("captured", graph)
            case.enter(Phase.LOWER)
            compiled = compile_fx(graph, example_inputs, inner_compile=inner_compile)
            case.enter(Phase.RUN)
            return compiled

        if program.train_step is None:
            module = torch.compile(program.graph_module(), backend=backend, fullgraph=True)
        else:   # as its users train: the loss compiled, its backward compiled by AOT Autograd when autograd asks
            module = train_step_with(program.train_step, torch.compile(program.train_step.loss, backend=backend,
                                                                       fullgraph=True))
        with torch.no_grad():
            module(*inputs)
        case.lowering, case.decomposed_into = inductor_paths(case.ops, reached)
        return module

    def cache_status(self, before: dict) -> str:
        """What Inductor's FX graph cache did in one compile, from its counters."""
        if not self.caching:
            return "off"
        for counter, status in (("fxgraph_cache_hit", "hit"), ("fxgraph_cache_miss", "miss")):
            if counters["inductor"][counter] > before.get(counter, 0):
                return status
        return "uncacheable"   # a bypass: Inductor would not cache this graph

    def run(self, artifact, inputs: Sequence[Any], case: CaseContext):
        case.enter(Phase.RUN)
        with torch.no_grad(), torch.compiler.set_stance("fail_on_recompile"):
            return artifact(*inputs)

    def versions(self) -> dict[str, str]:
        compiler = cpp_builder.get_cpp_compiler()
        found = re.search(r"[a-z+]+ version [^_]+", cpp_builder.get_compiler_version_info(compiler))
        return {"torch": torch.__version__,
                "c++ compiler": f"{compiler}: {found.group(0).strip() if found else 'unknown'}"}

    def standalone(self, program: Program) -> Standalone | None:
        if program.train_step is not None:
            return None   # the bundle's repro.py gives the harness command instead (a training step: not yet)
        return Standalone(STANDALONE_SCRIPTS / "inductor.py", {})
