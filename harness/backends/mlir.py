"""The MLIR backends: torch.export -> torch-mlir's decompositions -> its FX import -> Torch backend
IR -> (configured pipelines) -> Linalg-on-Tensors -> LLVM, run by the MLIR ExecutionEngine
(harness.backends.mlir_jit).

One class serves every path into Linalg; the configs differ only in options:
  linalg-on-tensors         to_linalg_pipelines: [torch-backend-to-linalg-on-tensors-backend-pipeline]
  linalg-on-tensors-direct  the same, with backend_legal_ops: [aten.convolution_backward]
  tosa / stablehlo          [torch-backend-to-<x>-backend-pipeline, <x> -> Linalg passes]

Options:
  torch_backend_pipeline  Torch IR -> Torch backend IR; `@BACKEND_LEGAL_OPS@` in it becomes the
                          comma-joined `backend_legal_ops`
  to_linalg_pipelines     Torch backend IR -> Linalg-on-Tensors: pass-pipeline strings (module
                          level, without `builtin.module(...)`), run in order, each on its own so
                          a failure names its stage
  llvm_lowering_passes    list of passes, Linalg-on-Tensors -> LLVM
  runtime_verification    keep `generate-runtime-verification` of that list (default true)
  backend_legal_ops       ops left undecomposed (default none)
  strict_export           torch.export with strict=True, as torch-mlir's FX importer configs do (default false)
  import_symbolic_shape_expressions
                          import the exported program's shape expressions, as those configs do (default false)
  opt_level, shared_libs  ExecutionEngine settings (default 2, none)
  onnx_backend_pipeline   Torch ONNX IR -> Torch backend IR, for ONNX models (`programs: {onnx: ...}`);
                          `@BACKEND_LEGAL_OPS@` as above
  torch_front_end         how PyTorch programs come in: `fx_importer` (the default) or `onnx`:
                          torch.onnx.export(dynamo=True) at `onnx_export_opset` (phase export),
                          then the ONNX front-end, as torch-mlir's `onnx` e2e config does
"""
from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import ml_dtypes
import torch

from harness.backend_interface import (
    STANDALONE_SCRIPTS,
    Backend,
    CaseContext,
    OnnxProgram,
    Program,
    Standalone,
    export_program,
    own_outputs,
)
from harness.backends.mlir_jit import Entry, JitModule, LlvmModule, pipeline_of, run_pipeline
from harness.backends.mlir_text import generic_asm, note_linalg_ops, unsigned_results
from harness.backends.onnx_front import export_to_onnx, import_onnx
from harness.backends.sizes import mlir_ops
from harness.installation.packages import version_text
from harness.ops.listing import program_ops
from harness.ops.names import torch_ir_op_counts
from harness.ops.paths import DECOMPOSING_PATHS, decomposition_paths, new_ops
from harness.outcomes import Phase
from harness.stages.native_code import SharedLibrary, host_cpu, library_later, linker
from harness.stages.reuse import (
    HARNESS,
    Output,
    Stage,
    cached,
    compiler_build,
    deferred,
    exported_ops,
    fingerprint_source,
    load_exported,
    program_facts,
    program_identity,
    save_exported,
    save_mlir,
    source_of,
    stored,
    torch_build,
)
from harness.stages.stretches import Stretch

if TYPE_CHECKING:
    from torch_mlir import ir

# torch-mlir is imported only where a stage is computed: a warm rerun, whose lowerings the stage
# cache remembers with their machine code, never waits for its import. A fork server imports these
# before its second worker, so that the workers after the first have them (Backend.COMPILER_MODULES).
TORCH_MLIR_MODULES = ("torch_mlir.fx", "torch_mlir.extras.fx_decomp_util", "torch_mlir.compiler_utils",
                      "torch_mlir.execution_engine", "harness.backends.literals")
LEGAL_OPS_PLACEHOLDER = "@BACKEND_LEGAL_OPS@"
REQUIRED_OPTIONS = ("torch_backend_pipeline", "to_linalg_pipelines", "llvm_lowering_passes")
RUNTIME_VERIFICATION = "generate-runtime-verification"


@dataclasses.dataclass
class MlirArtifact:
    jit: JitModule
    func_name: str
    outputs: int = 0               # how many of the results are the program's own (the last ones)
    unsigned: dict[int, str] = dataclasses.field(default_factory=dict)  # results unsigned in Torch IR: their dtype
    numpy_results: bool = False    # every result as numpy (an ONNX model's)


def torch_mlir_build() -> dict[str, str]:
    """What computes the decomposition and the import: torch, torch-mlir by its files, and the
    harness's own code (the import's hooks, this backend's calls)."""
    return {**compiler_build("torch-mlir"), **compiler_build(HARNESS)}


def machine_code_build() -> dict[str, str]:
    """What the JIT's machine code depends on beyond its LLVM IR: torch-mlir's LLVM, the harness's
    rewrite of the consume function, and the CPU it is compiled for."""
    return {**torch_mlir_build(), "host cpu": host_cpu()}


def machine_code_source(llvm_ir: Callable[[], str], shared_libs: Sequence[str]) -> Callable[[], str]:
    """The `llvm_ir` fingerprint, or "" (not cached) when the code cannot become a shared library
    here: no C compiler, an unknown CPU, or runtime libraries the JIT links from the process."""
    return lambda: llvm_ir() if linker() and host_cpu() and not shared_libs else ""


def _imported(exported: Any, func_name: str, symbolic: bool) -> ir.Module:
    """torch-mlir's FX import: Torch IR, named for torch-mlir's failure repro file."""
    import torch_mlir.fx
    from torch_mlir import ir

    from harness.backends.literals import BufferLiterals

    module = torch_mlir.fx.export_and_import(exported, output_type="raw", func_name=func_name, hooks=BufferLiterals(),
                                             decomposition_table={}, import_symbolic_shape_expressions=symbolic)
    with module.context:   # torch-mlir names its failure repro file (in the temp dir) after this attribute
        module.operation.attributes["torch.debug_module_name"] = ir.StringAttr.get(func_name)
    return module


def _load_torch_mlir(data: bytes) -> ir.Module:
    """A module of the stage cache (bytecode), in a context that knows the torch dialect."""
    from torch_mlir import ir
    from torch_mlir.dialects import torch as torch_dialect

    context = ir.Context()
    torch_dialect.register_dialect(context)
    return ir.Module.parse(data, context=context)


def _op_count(module: ir.Module) -> int:
    from torch_mlir import ir

    return mlir_ops(module, ir)


def _decomposition_table() -> dict:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    return get_decomposition_table()


def symbol_name(case_name: str) -> str:
    """A case id ("myfamily/2d/x") as an MLIR/C symbol name ("myfamily_2d_x")."""
    name = re.sub(r"\W", "_", case_name) or "main"
    return name if not name[0].isdigit() else "f_" + name


class MlirBackend(Backend):
    LISTS_OPS = True                      # from its own export
    LOWERING_PATHS = DECOMPOSING_PATHS    # an op of the program that reaches Torch backend IR is kept
    COMPILER_MODULES = TORCH_MLIR_MODULES
    # a PyTorch program from `exported`, an ONNX model (or torch_front_end: onnx) from `onnx`
    STAGES = ("exported", "decomposed", "torch_ir", "onnx", "torch_backend_ir", "linalg_ir", "llvm_ir")
    OPTIONS = {   # the module docstring says more of each
        "torch_backend_pipeline": "Torch IR -> Torch backend IR; @BACKEND_LEGAL_OPS@ becomes backend_legal_ops",
        "onnx_backend_pipeline": "Torch ONNX IR -> Torch backend IR, for ONNX models",
        "to_linalg_pipelines": "Torch backend IR -> Linalg-on-Tensors: pass-pipeline strings, run in order",
        "llvm_lowering_passes": "the passes Linalg-on-Tensors -> LLVM",
        "runtime_verification": "keep generate-runtime-verification of that list (default true)",
        "backend_legal_ops": "ops left undecomposed (default none)",
        "strict_export": "torch.export with strict=True (default false)",
        "import_symbolic_shape_expressions": "import the exported program's shape expressions (default false)",
        "opt_level": "the ExecutionEngine's LLVM optimisation level (default 2)",
        "shared_libs": "extra runtime libraries for the ExecutionEngine (default none)",
        "torch_front_end": "fx_importer (the default) or onnx: PyTorch programs through torch.onnx",
        "onnx_export_opset": "the opset of torch_front_end: onnx",
    }

    def __init__(self, name: str, options: Mapping[str, Any]):
        super().__init__(name, options)
        missing = [k for k in REQUIRED_OPTIONS if k not in self.options]
        if missing:
            raise ValueError(f"backend {name}: options {missing} are missing from the config")
        stages = self.options["to_linalg_pipelines"]
        if not isinstance(stages, list) or not stages or not all(isinstance(s, str) for s in stages):
            raise ValueError(f"backend {name}: to_linalg_pipelines must be a non-empty list of "
                             f"pass-pipeline strings")

    def torch_backend_pipeline(self, option: str = "torch_backend_pipeline") -> str:
        if option not in self.options:
            raise ValueError(f"backend {self.name}: its config takes ONNX models but has no {option} option")
        pipeline = self.options[option]
        legal_ops = list(self.options.get("backend_legal_ops") or [])
        if LEGAL_OPS_PLACEHOLDER not in pipeline and legal_ops:
            raise ValueError(f"backend_legal_ops is set but torch_backend_pipeline has no "
                             f"{LEGAL_OPS_PLACEHOLDER} to put them in")
        return pipeline.replace(LEGAL_OPS_PLACEHOLDER, ",".join(legal_ops))

    def llvm_lowering_passes(self) -> list[str]:
        """The configured Linalg -> LLVM passes, without runtime verification when it is off."""
        verify = bool(self.options.get("runtime_verification", True))
        return [p for p in self.options["llvm_lowering_passes"] if verify or p.strip() != RUNTIME_VERIFICATION]

    def compile(self, program: Program | OnnxProgram, case: CaseContext) -> MlirArtifact:
        if isinstance(program, OnnxProgram):
            return self.compile_onnx(program.model, case, numpy_results=True)
        front_end = self.options.get("torch_front_end", "fx_importer")
        if front_end == "onnx":
            case.ops = program_ops(program, case.notes)   # what torch.onnx exports, as the other backends list it
            return self.compile_onnx(export_to_onnx(program, self.options.get("onnx_export_opset"), case), case)
        if front_end != "fx_importer":
            raise ValueError(f"backend {self.name}: torch_front_end must be fx_importer or onnx, not {front_end!r}")
        func_name = symbol_name(program.name)
        decomposed = self.exported(program, case)
        case.sizes["decomposed_ops"] = decomposed.facts["ops"]
        # From the import to LLVM IR, passes alone: their end is the same each time they run. A
        # success is remembered with the machine code the JIT made of it (a JIT failure, never:
        # it is the machine's own).
        lowering = Stretch(case, "lowering", fingerprint_source(case, "decomposed"), torch_mlir_build,
                           {**self.options, "func_name": func_name})
        if (artifact := self.remembered(case, lowering)) is not None:
            return artifact
        with lowering.failure_remembered():
            lowered, outputs, unsigned = self.lowered(decomposed, func_name, case)
        artifact = MlirArtifact(self.jit(case, lowered), func_name, outputs, unsigned)
        if case.cache.get("machine_code") in ("hit", "miss"):   # the code is kept: a rerun needs only the entry
            lowering.remember({"entry": lowered.entry.as_json(), "outputs": outputs, "unsigned": unsigned})
        return artifact

    def remembered(self, case: CaseContext, lowering: Stretch) -> MlirArtifact | None:
        """The artifact of a lowering the stage cache remembers, from its entry function and the
        machine code the cache holds; None when either is missing (then it is computed)."""
        if (known := lowering.success()) is None:
            return None
        try:
            entry, outputs = Entry.from_json(known.value["entry"]), int(known.value["outputs"])
            unsigned = {int(i): str(t) for i, t in known.value["unsigned"].items()}
            llvm_ir = source_of(known.noted["fingerprints"], "llvm_ir")
        except (AttributeError, KeyError, TypeError, ValueError):   # an entry of another shape: computed
            return None
        if (code := stored(case, self.machine_code_stage(lambda: llvm_ir))) is None:
            return None
        lowering.replay(known)
        return MlirArtifact(JitModule(entry, code), entry.func_name, outputs, unsigned)

    def lowered(self, decomposed: Output, func_name: str, case: CaseContext) -> tuple[LlvmModule, int, dict]:
        """The decomposed program imported (phase import) and lowered to LLVM IR (phases lower and
        compile), with its own outputs' count and its unsigned results."""
        case.enter(Phase.IMPORT)
        symbolic = bool(self.options.get("import_symbolic_shape_expressions", False))
        printed = functools.cache(generic_asm)   # printed once, when a fingerprint or an entry needs it
        module = cached(case, Stage("torch_ir", fingerprint_source(case, "decomposed"), torch_mlir_build,
                                    {"func_name": func_name, "symbolic": symbolic}, save_mlir, _load_torch_mlir,
                                    shown=printed),
                        lambda: _imported(decomposed.value, func_name, symbolic))
        case.sizes["torch_ops"] = _op_count(module)

        case.enter(Phase.LOWER)
        self.run_stage(case, module, "torch-import", self.torch_backend_pipeline(),
                       "Lowering TorchFX IR -> Torch Backend IR")
        backend_ir = str(module)
        case.fingerprint("torch_backend_ir", backend_ir)
        after = torch_ir_op_counts(backend_ir)   # what reached the backend
        case.lowering, case.decomposed_into = decomposition_paths(case.ops, after), new_ops(case.ops, after)
        return (self.lower_to_llvm(case, module, func_name), decomposed.facts["outputs"],
                unsigned_results(backend_ir, func_name))

    def exported(self, program: Program, case: CaseContext) -> Output:
        """The program exported and decomposed (phases export and decompose), each stage from the
        stage cache when it holds it: torch's work, which a rebuild of torch-mlir leaves alone but
        for the decomposition table torch-mlir gives. A stage the cache holds is loaded only when
        the next one is computed (then in that one's phase)."""
        strict = bool(self.options.get("strict_export", False))
        identity = functools.cache(lambda: program_identity(case, program))
        # torch.export and the decomposition fail alike for the same program and builds: remembered.
        with Stretch(case, "export", identity, torch_mlir_build, {"strict_export": strict}).failure_remembered():
            case.enter(Phase.EXPORT)
            exported = deferred(case, Stage("exported", identity, torch_build, {"strict_export": strict},
                                            save_exported, load_exported, facts=program_facts),
                                lambda: export_program(program, strict=strict))
            case.sizes["export_ops"] = exported.facts["ops"]
            case.ops = exported_ops(exported)
            case.enter(Phase.DECOMPOSE)   # what export_and_import would do first, as a phase of its own
            # Kept as its fingerprint and facts: the import's entry has the same builds in its key, so
            # the program is needed only when the import is computed anyway (its options changed).
            return deferred(case, Stage("decomposed", fingerprint_source(case, "exported"), torch_mlir_build, {},
                                        save_exported, load_exported, facts=program_facts, kept=False),
                            lambda: exported.value.run_decompositions(_decomposition_table()))

    def compile_onnx(self, model: Any, case: CaseContext, numpy_results: bool = False) -> MlirArtifact:
        """The ONNX front-end, as torch-mlir's onnx configs: shape inference with data propagation,
        the ONNX importer (phase import), the ONNX-to-Torch-backend pipeline, then the same stages.
        An ONNX model's results are numpy's; those of a PyTorch program exported to ONNX, torch's."""
        case.enter(Phase.IMPORT)
        case.fingerprint("onnx", model.SerializeToString())   # the one print of an ONNX path: no text exists
        from torch_mlir import ir

        module = import_onnx(model)
        func_name = ir.StringAttr(module.body.operations[0].attributes["sym_name"]).value
        case.sizes["torch_ops"] = _op_count(module)

        case.enter(Phase.LOWER)
        self.run_stage(case, module, "torch-onnx", self.torch_backend_pipeline("onnx_backend_pipeline"),
                       "Lowering Torch ONNX IR -> Torch Backend IR")
        backend_ir = str(module)
        case.fingerprint("torch_backend_ir", backend_ir)
        unsigned = unsigned_results(backend_ir, func_name)
        return MlirArtifact(self.lower_to_jit(case, module, func_name), func_name, 0, unsigned, numpy_results)

    def lower_to_jit(self, case: CaseContext, module: ir.Module, func_name: str) -> JitModule:
        """Torch backend IR through the configured stages to Linalg, then LLVM and the ExecutionEngine."""
        return self.jit(case, self.lower_to_llvm(case, module, func_name))

    def lower_to_llvm(self, case: CaseContext, module: ir.Module, func_name: str) -> LlvmModule:
        """Torch backend IR through the configured stages to Linalg (phase lower), then to LLVM IR
        (phase compile)."""
        stages = self.options["to_linalg_pipelines"]
        case.sizes["torch_backend_ops"] = _op_count(module)
        for index, stage in enumerate(stages, 1):
            self.run_stage(case, module, "torch-backend" if index == 1 else f"to-linalg-stage{index - 1}", stage,
                           f"Lowering Torch Backend IR -> Linalg-on-Tensors, stage {index} of {len(stages)}")
            if index == 1 < len(stages):   # TOSA's or StableHLO's IR, on its way to Linalg
                case.sizes["backend_ops"] = _op_count(module)
        case.sizes["linalg_ops"] = _op_count(module)
        linalg_ir = generic_asm(module)
        note_linalg_ops(case.notes, linalg_ir)
        case.fingerprint("linalg_ir", linalg_ir)

        case.enter(Phase.COMPILE)
        passes = self.llvm_lowering_passes()
        if case.bundle is not None:
            case.bundle.stage("linalg-on-tensors", str(module), pipeline_of(passes), opt_runs_it=False)
        lowered = LlvmModule(module, func_name, passes)
        case.sizes["llvm_ir_bytes"] = len(lowered.llvm_ir)
        case.fingerprint("llvm_ir", lowered.llvm_ir)
        if case.bundle is not None:
            case.bundle.stage("llvm", lowered.llvm_ir, None)  # what the ExecutionEngine JIT-compiles
        return lowered

    def jit(self, case: CaseContext, lowered: LlvmModule) -> JitModule:
        """The LLVM IR compiled to machine code by the ExecutionEngine (phase compile), or the
        machine code the stage cache holds for it. Not remembered when it fails: the machine's own."""
        opt_level, shared_libs = int(self.options.get("opt_level", 2)), self.options.get("shared_libs") or ()
        code = cached(case, self.machine_code_stage(fingerprint_source(case, "llvm_ir")),
                      lambda: lowered.jit(opt_level, shared_libs))
        return JitModule(lowered.entry, code)

    def machine_code_stage(self, llvm_ir: Callable[[], str]) -> Stage:
        """The JIT's machine code of the LLVM IR with this fingerprint, as a shared library."""
        opt_level, shared_libs = int(self.options.get("opt_level", 2)), self.options.get("shared_libs") or ()
        return Stage("machine_code", machine_code_source(llvm_ir, shared_libs), machine_code_build,
                     {"opt_level": opt_level}, library_later, SharedLibrary, fingerprinted=False)

    def run_stage(self, case: CaseContext, module: ir.Module, input_name: str, pipeline: str,
                  description: str) -> None:
        """One pass pipeline on the module in place; with a bundle, its input IR is saved first."""
        pipeline = f"builtin.module({pipeline})"
        if case.bundle is not None:
            case.bundle.stage(input_name, str(module), pipeline)
        run_pipeline(module, pipeline, description)

    def run(self, artifact: MlirArtifact, inputs: Sequence[Any], case: CaseContext) -> list:
        case.enter(Phase.RUN)
        results = artifact.jit(inputs)  # Linalg integers are signless: uint8 comes back as int8
        results = [r.view(artifact.unsigned[i]) if i in artifact.unsigned else r for i, r in enumerate(results)]
        if artifact.numpy_results:   # an ONNX model's: bfloat16 as ml_dtypes, not a torch tensor
            results = [r.view(torch.int16).numpy().view(ml_dtypes.bfloat16) if isinstance(r, torch.Tensor) else r
                       for r in results]
        return own_outputs(results, artifact.outputs)

    def versions(self) -> dict[str, str]:
        return {"torch": torch.__version__, "torch-mlir": version_text("torch-mlir") or "unknown"}  # a source build too

    def standalone(self, program: Program | OnnxProgram) -> Standalone | None:
        to_llvm = [*self.options["to_linalg_pipelines"], ",".join(self.llvm_lowering_passes())]
        if isinstance(program, OnnxProgram):
            return Standalone(STANDALONE_SCRIPTS / "mlir.py", {
                "opt_level": int(self.options.get("opt_level", 2)),
                "pipelines": [self.torch_backend_pipeline("onnx_backend_pipeline"), *to_llvm]})
        if self.options.get("torch_front_end", "fx_importer") != "fx_importer" or program.train_step is not None:
            return None   # the bundle's repro.py gives the harness command instead (a joint graph: not yet)
        return Standalone(STANDALONE_SCRIPTS / "mlir.py", {
            "func_name": symbol_name(program.name), "opt_level": int(self.options.get("opt_level", 2)),
            "strict_export": bool(self.options.get("strict_export", False)),
            "import_symbolic_shape_expressions": bool(self.options.get("import_symbolic_shape_expressions", False)),
            "pipelines": [self.torch_backend_pipeline(), *to_llvm]})   # Torch backend, Linalg..., LLVM
