"""The family seam: everything a case family provides, ours or another project's. The built-in
families (harness/families/<family>/) plug in here exactly as an outside package does, through
the entry-point group `torch_backend_e2e.families` (harness.families.loader).

A family's module-level `FAMILIES` (a Family or a list of them) is what its entry point names.
Each extension point below says when it is called and on which side:

* the controller side is the pytest process and `python -m harness`: it never imports torch,
  so everything a Family holds directly is pure Python;
* the worker side is a worker process (harness.worker): only `builder` is imported there. What
  it returns, a `Built` and the `Golden` its outputs are compared with, is harness.families.built.

Case params are JSON-able. Whatever else a family puts in them, the harness reads one key:
`dtype`, the case's floating dtype (one of harness.case_data.DTYPES), which picks the backend's
tolerance; `case()` checks that `validate` returns it (a family whose outputs have dtypes of
their own names the dtype their tolerance is at, float32 when nominal).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from harness.backend_interface import load_object
from harness.case_data import DTYPES, Case
from harness.families.built import Built
from harness.program_kinds import PROGRAM_KINDS, TORCH, TRAIN_STEP
from harness.training.params import is_train_step


@dataclasses.dataclass(frozen=True)
class Option:
    """A command-line option and its ini key, declared by a family (controller side, read once
    at start-up). `name` "opinfo-samples" is `--opinfo-samples`, ini `e2e_opinfo_samples`, and
    `options["opinfo_samples"]` in what the family's case modules and hooks receive."""

    name: str
    help: str
    default: str | None = None    # as it would be typed; None: the value is None unless given
    metavar: str = "VALUE"
    # The text as typed (for a path option, the path it names, resolved) -> its value. A ValueError
    # says what to write instead; the harness prefixes it with where the value came from.
    parse: Callable[[Any], Any] = str
    path: bool = False            # relative to the working directory when typed, to the rootdir in the ini

    @property
    def dest(self) -> str:
        return self.name.replace("-", "_")

    @property
    def ini(self) -> str:
        return f"e2e_{self.dest}"


@dataclasses.dataclass(frozen=True)
class FuzzSpace:
    """A family's parameter space for `python -m harness fuzz` (harness.fuzz): what to generate,
    and how a generated configuration is written back as the shortest cases-file entry."""

    strategy: Callable[[], Any]              # a Hypothesis strategy of validated params (imports hypothesis)
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # values an entry leaves out
    per_dim: tuple[str, ...] = ()            # list params an entry writes as one value when all are equal
    size: Callable[[Mapping[str, Any]], float] = lambda params: 0   # smaller first when no shrink ran


@dataclasses.dataclass
class Discovery:
    """Cases a family found outside the case modules (a checkout's suite), at start-up."""

    cases: dict[Path, list[Case]]                   # collected under these files (which pytest must collect)
    notices: list[str] = dataclasses.field(default_factory=list)  # one line each in the run's summary
    # Directories under which pytest must not import a package's __init__.py (a suite's, which
    # would import torch into the pytest process): they are collected as plain directories.
    plain_dirs: list[Path] = dataclasses.field(default_factory=list)
    # Families that are not installed here (their package is missing) -> why, with the command that
    # installs them: their expectation entries do not apply (counted in the summary), not errors.
    missing: dict[str, str] = dataclasses.field(default_factory=dict)


def no_reductions(params: Mapping[str, Any]) -> dict:
    """`reduction_sizes` of a family whose outputs sum nothing the harness knows of (1 per element)."""
    return {}


def no_tags(params: Mapping[str, Any]) -> list:
    return []


def no_subject(params: Mapping[str, Any]) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class Family:
    """A case family: its pure half, loaded in the pytest process and the tools (which never import
    torch), and the names of what runs elsewhere. Each field below is an extension point; it says
    when it is called and on which side.

    Identity
      `name`: the first part of every case id of the family (`conv_backward/1d/...`).
      `program`: the kind of program `builder` builds (harness.program_kinds), "torch" (a Program) or
        "onnx" (an OnnxProgram).
      `default`: a cases-file entry without `family:` belongs to the family marked default (at most one).

    Controller side, per case (making a case, reading a cases file or a report)
      `validate(params) -> dict`: the complete params, defaults filled; ValueError with one sentence
        naming the key and the fix.
      `derive_tags(params) -> list`: structural tags of validated params (pytest keywords: -k grouped).
      `markers`: tags that are pytest markers too (-m opinfo).
      `path_params`: params that name files (a path or a list of paths): a cases file's relative
        paths are read from the cases file's folder, and `validate` gets them absolute.
      `at_dtype(params, dtype) -> dict`: a case's params at another floating dtype, for `--dtypes`
        (harness.precision.axis): the case runs at each dtype it names, `<id>/<dtype>` at one not its
        own; ValueError when this case cannot. None: its cases keep their dtype.
      `lists_dtypes`: its case module lists its cases per dtype itself, from `options["dtypes"]`
        (the run's --dtypes; empty: its default), as OpInfo's samples differ by dtype.

    Controller side, per case run
      `reduction_sizes(params) -> dict`: output name -> terms summed into each element (the float
        comparison's tolerance grows with the square root of it); 1 for an output not named.
      `subject(params) -> str | None`: what the case tests (an op's name), kept in its result; the
        triage report counts a failure group's cases by it. None: the case id up to its last "/".

    Reports
      `coverage`: what `python -m harness coverage` makes of its cases beyond the ops each covers:
        "ops" (each case tests one op, as PyTorch's OpInfo: a program's ops that pass in these are
        "covered"), "programs" (each case is a whole program, a model: the matrix counts its ops
        that pass in the "ops" families), or "" (nothing more).

    Controller side, at start-up
      `options`: the options and ini keys this family reads, declared before any case module is read.
        Only entry-point families may declare them (pytest reads the command line before the ini's
        `e2e_families` are loaded).
      `discover(options) -> Discovery | None`: once, after the options are read: cases from outside
        the case modules (None when there are none to find, e.g. its option is not given).
      `commands(subparsers)`: when `python -m harness` builds its parser: add this family's
        subcommands; each sets `run=function(args)` (returning an exit status or None).

    Worker side
      `builder`: "package.module:function", imported in a worker only; build(case) -> Built.
      `worker_env`: at a worker's start, environment variables its builder needs (the same for
        every family of the run; two families asking different values is an error).

    Tools
      `graph`: for `python -m harness reduce` (which imports torch): "package.module:function" taking
        (Built, case params) and returning the program as a graph to cut (see
        harness.reduce.torch_graph for what it offers). None: the default of the program kind
        (ProgramKind.graph: a PyTorch program's exported FX graph; an ONNX model's graph).
      `reruns`: for `python -m harness reduce`: a program kind ("torch" or "onnx") whose cut-down
        programs this family runs as cases: the reducer writes each candidate of a program of that
        kind as a case of this family, with the params the kind's default graph writes (at most one
        installed family per kind). None: the family runs no reducer's candidates.
      `isolates`: for `python -m harness isolate`: a program kind ("torch" or "onnx") whose ops, cut
        out with the float64 reference values of their arguments (by the kind's
        ProgramKind.reference_process), this family runs as cases (at most one installed family per
        kind). None: it runs no isolated ops.
      `fuzz_space`: for `python -m harness fuzz`: "package.module:NAME" of the family's FuzzSpace.
        None: the family is not fuzzed.
    """

    name: str
    validate: Callable[[Mapping[str, Any]], dict]
    builder: str
    reduction_sizes: Callable[[Mapping[str, Any]], dict] = no_reductions
    derive_tags: Callable[[Mapping[str, Any]], list] = no_tags
    markers: tuple[str, ...] = ()
    subject: Callable[[Mapping[str, Any]], str | None] = no_subject
    program: str = TORCH
    options: tuple[Option, ...] = ()
    discover: Callable[[Mapping[str, Any]], Discovery | None] | None = None
    commands: Callable[[argparse._SubParsersAction], None] | None = None
    worker_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    default: bool = False
    path_params: tuple[str, ...] = ()
    at_dtype: Callable[[Mapping[str, Any], str], dict] | None = None
    lists_dtypes: bool = False
    coverage: str = ""
    graph: str | None = None
    fuzz_space: str | None = None
    reruns: str | None = None
    isolates: str | None = None

    def __post_init__(self) -> None:
        tools = {"reruns": self.reruns, "isolates": self.isolates}
        kinds = {"program": self.program, **{field: kind for field, kind in tools.items() if kind is not None}}
        for field, kind in kinds.items():
            if kind not in PROGRAM_KINDS:
                raise ValueError(f"family {self.name}: {field} {kind!r} is not one of {', '.join(PROGRAM_KINDS)}")

    def kind(self, params: Mapping[str, Any]) -> str:
        """The kind of program a case of this family is (what a backend's `programs:` must take): a
        training step when its params say `train_step` (harness.training), else the family's own."""
        return TRAIN_STEP if is_train_step(params) else self.program

    def graph_cutter(self) -> str | None:
        return self.graph or PROGRAM_KINDS[self.program].graph

    def case(self, name: str, params: Mapping[str, Any], *, tags: Iterable[str] = (),
             timeout: float | None = None, errors_named: bool = True) -> Case:
        """The Case `<family>/<name>`: params validated, structural tags derived, then `tags`.
        ValueError says what is wrong, after the case id unless not `errors_named` (a cases file's
        errors name its file and line instead). The one way every family makes a case."""
        case_id = f"{self.name}/{name}"
        try:
            if params.get("train_step") and not PROGRAM_KINDS[self.program].pytorch:
                raise ValueError(f"train_step: {self.name} cases are {PROGRAM_KINDS[self.program].description}, not "
                                 f"{PROGRAM_KINDS[TORCH].description}; a training step is one of a PyTorch module "
                                 "(leave train_step out)")
            normalised = self.validate(params)
            if normalised.get("dtype") not in DTYPES:
                raise ValueError(f"the family's validate gave dtype {normalised.get('dtype')!r}, not one of "
                                 f"{', '.join(DTYPES)} (every case names the dtype its tolerance is at)")
            derived = list(self.derive_tags(normalised))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{case_id}: {e}" if errors_named else str(e)) from None
        return Case(id=case_id, family=self.name, params=normalised,
                    tags=tuple(dict.fromkeys(derived + [t for t in tags if t])), timeout=timeout)

    def worker_request(self, params: Mapping[str, Any]) -> dict:
        """What a worker needs of this family for one case (it never loads the family table, so a
        family from another package needs no registration there): the builder and the reductions."""
        return {"builder": self.builder, "reduction_sizes": self.reduction_sizes(params)}


def load_builder(request: Mapping[str, Any]) -> Callable[[Any], "Built"]:
    """The builder a worker request names (imports torch: call it in a worker only)."""
    return load_object(request["builder"])
