"""Backend configs: one YAML file per backend in each configs directory.

The built-in ones are the repository's configs/, which the package carries as harness/configs (a
symlink in git, real files in the wheel), so a project that pip-installed the harness has them
without copying anything; its own configs add backends and may replace a built-in one by name.

What can be checked without the class is checked here, each key at its own line; the class and the
`options` it accepts (Backend.OPTIONS) only where the class can be imported, a worker-side process
(harness.worker.backend_check), whose report `backend_problem` turns into the error line.
"""
from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.case_data import DTYPES, is_positive_finite
from harness.errors import HarnessInputError
from harness.files import display_path
from harness.installation.extras import install_command
from harness.installation.packages import default_module, locate
from harness.program_kinds import PROGRAM_KINDS, default_programs
from harness.project_files.yamlio import check_node_keys, key_line, load_yaml

CONFIG_KEYS = {"name", "description", "class", "extends", "options", "tolerances", "timeout", "memory_limit_mb",
               "requires", "install", "extras", "programs", "lowering"}
TOLERANCE_KEYS = {"rtol", "atol"}
BUILTIN_CONFIGS = Path(__file__).parents[1] / "configs"  # harness/configs
BUILTIN_SUFFIX = " (built-in)"   # a replaced built-in's name, while its replacement extends it


@dataclasses.dataclass(frozen=True)
class Tolerance:
    rtol: float
    atol: float


@dataclasses.dataclass(frozen=True)
class BackendConfig:
    name: str
    description: str
    class_path: str                       # "module:Class", imported in the worker only
    options: Mapping[str, Any]
    tolerances: Mapping[str, Tolerance]   # per dtype name
    timeout: float | None
    memory_limit_mb: float | None         # a worker's resident memory limit for this backend's cases
    requires: tuple[str, ...]             # distributions the backend needs, e.g. ("torch-mlir",)
    install: str                          # how to install them, shown when one is missing
    source: Path
    modules: Mapping[str, str] = dataclasses.field(default_factory=dict)  # import names that differ from
    # the distribution's (iree-base-compiler: iree.compiler): what is imported counts, metadata or not
    # The kinds of program it takes (harness.program_kinds), each with its front-end
    programs: Mapping[str, str] = dataclasses.field(default_factory=default_programs)
    # Where "class" and each "options.KEY" were written (file, line): a config that extends another
    # takes them from that file, so an error names the file that has the line.
    places: Mapping[str, tuple[Path, int]] = dataclasses.field(default_factory=dict, compare=False)
    # The lowering path each op must take, {"aten.convolution_backward": "kept"}, in the words of the
    # class's Backend.LOWERING_PATHS: the author's claim, checked on every case that holds the op.
    lowering: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def place(self, key: str) -> str:
        """'file:line' of a key ("class", "options.opt_level"), else this config's file."""
        path, line = self.places.get(key, (self.source, 0))
        return f"{display_path(path)}:{line}" if line else display_path(path)

    def takes(self, kind: str) -> bool:
        return kind in self.programs

    def takes_only(self) -> str:
        """`PyTorch programs only`, `PyTorch programs and ONNX models`: for the run's summary."""
        # a form of another kind's programs (a training step of a PyTorch program) is said with that kind
        names = [PROGRAM_KINDS[kind].description for kind in self.programs if not PROGRAM_KINDS[kind].variant_of]
        return " and ".join(names) + (" only" if len(names) == 1 else "")

    def module_of(self, distribution: str) -> str:
        return self.modules.get(distribution) or default_module(distribution)

    def to_json(self) -> dict[str, Any]:
        """What a worker needs to instantiate and check this backend."""
        return {"name": self.name, "class": self.class_path, "options": dict(self.options),
                "tolerances": {k: dataclasses.asdict(v) for k, v in self.tolerances.items()},
                "lowering": dict(self.lowering)}


def load_configs(dirs: Iterable[Path]) -> dict[str, BackendConfig]:
    """The built-in configs, then those of the given directories. A given directory's config
    replaces a built-in one of its name, and may extend it (`extends:` its own name: the built-in plus
    its changes); two given directories may not define the same name."""
    builtin, given = _config_dirs(dirs)
    documents: dict[str, tuple[Path, dict]] = {}
    for path in sorted(builtin.glob("*.yaml")):
        data = _read(path)
        documents[data["name"]] = (path, data)
    replaceable = set(documents)
    for directory in given:
        for path in sorted(directory.glob("*.yaml")):
            data = _read(path)
            if data["name"] in documents and data["name"] not in replaceable:
                raise HarnessInputError(display_path(path), f"backend {data['name']!r} is already defined in "
                                        f"{display_path(documents[data['name']][0])}", "rename one of them")
            if data["name"] in replaceable and data.get("extends") == data["name"]:   # the built-in it replaces
                documents[_builtin(data["name"])] = documents[data["name"]]
                data = {**data, "extends": _builtin(data["name"])}
            replaceable.discard(data["name"])
            documents[data["name"]] = (path, data)
    return {name: _parse(path, _inherit(name, documents), _places(name, documents))
            for name, (path, _) in documents.items() if not name.endswith(BUILTIN_SUFFIX)}


def _builtin(name: str) -> str:
    """The name a replaced built-in config keeps, for its replacement's `extends: <its own name>`."""
    return name + BUILTIN_SUFFIX


def _config_dirs(dirs: Iterable[Path]) -> tuple[Path, list[Path]]:
    """The built-in directory and the others, in order; a given directory that is the built-in one
    (the repository's own configs/) stands for it, so its files are shown by that path."""
    given = list(dict.fromkeys(Path(d) for d in dirs))
    home = BUILTIN_CONFIGS.resolve()
    builtin = next((d for d in given if d.resolve() == home), BUILTIN_CONFIGS)
    return builtin, [d for d in given if d.resolve() != home]


def _read(path: Path) -> dict:
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise HarnessInputError(display_path(path), "a backend config must be a mapping", "see configs/eager.yaml")
    check_node_keys(path, data, CONFIG_KEYS, required={"name"}, at_key=True)
    tolerances = data.get("tolerances")
    for dtype, tol in tolerances.items() if isinstance(tolerances, dict) else ():   # its own, at their lines
        if dtype not in DTYPES:
            raise HarnessInputError(f"{display_path(path)}:{key_line(tolerances, dtype)}",
                                    f"tolerance for unknown dtype {dtype!r}", f"use one of {', '.join(DTYPES)}")
        if isinstance(tol, dict):
            check_node_keys(path, tol, TOLERANCE_KEYS, required=TOLERANCE_KEYS, at_key=True)
    if data["name"] != path.stem:
        raise HarnessInputError(display_path(path), f"name {data['name']!r} differs from the file name",
                                f"rename the file to {data['name']}.yaml or fix the name")
    return data


def _inherit(name: str, documents: dict[str, tuple[Path, dict]], chain: tuple[str, ...] = ()) -> dict:
    """A config with `extends: BASE` takes BASE's keys; its own keys, options and tolerances win."""
    path, data = documents[name]
    base_name = data.get("extends")
    if base_name is None:
        return data
    if base_name not in documents:
        raise HarnessInputError(display_path(path), f"extends unknown backend {base_name!r}",
                                f"use one of {', '.join(sorted(documents))}")
    if base_name in chain + (name,):
        raise HarnessInputError(display_path(path), f"extends {base_name!r}, which extends it back", "break the cycle")
    base = _inherit(base_name, documents, chain + (name,))
    merged = {**base, **data}
    for key in ("options", "tolerances", "lowering"):
        merged[key] = {**(base.get(key) or {}), **(data.get(key) or {})}
    del merged["extends"]
    return merged


def _places(name: str, documents: dict[str, tuple[Path, dict]]) -> dict[str, tuple[Path, int]]:
    """(file, line) of each key and option as _inherit merges them: the extending config's win."""
    path, data = documents[name]
    places = _places(data["extends"], documents) if data.get("extends") else {}   # _inherit rejected cycles
    places.update({key: (path, key_line(data, key)) for key in data})
    for section in ("options", "lowering"):
        keys = data.get(section)
        places.update({f"{section}.{key}": (path, key_line(keys, key)) for key in keys}
                      if isinstance(keys, dict) else {})
    return places


def _parse(path: Path, data: dict, places: dict[str, tuple[Path, int]] | None = None) -> BackendConfig:
    class_path = data.get("class")
    if class_path is None:
        raise HarnessInputError(display_path(path), "missing required key 'class'",
                                "name the backend class as module:Class, or extend a config that does")
    if not isinstance(class_path, str) or ":" not in class_path:
        raise HarnessInputError(display_path(path), f"class {class_path!r} is not of the form 'module:Class'")
    modules = _requirements(path, data.get("requires"))
    return BackendConfig(
        name=data["name"], description=str(data.get("description", "")), class_path=class_path,
        options=_mapping(path, data, "options"), tolerances=_tolerances(path, data),
        timeout=_positive(path, data.get("timeout"), "timeout", "seconds"),
        memory_limit_mb=_positive(path, data.get("memory_limit_mb"), "memory_limit_mb", "MiB"),
        requires=tuple(modules), modules={d: m for d, m in modules.items() if m}, source=path,
        install=_install(path, data), programs=_programs(path, data), places=places or {},
        lowering=_lowering(path, data, places or {}))


def _install(path: Path, data: dict) -> str:
    """How to install what it requires: `install:` as written, else the harness's `extras:` (a list
    of the extras of torch-backend-e2e, said as this installation was made)."""
    if data.get("install"):
        return str(data["install"])
    extras = data.get("extras") or []
    if not isinstance(extras, list) or not all(isinstance(e, str) for e in extras):
        raise HarnessInputError(display_path(path), f"extras must be a list of the harness's extras, not {extras!r}",
                                "write e.g. extras: [onnx], or install: followed by a command")
    return install_command(extras)


def _programs(path: Path, data: dict) -> dict[str, str]:
    """`programs:` kind -> its front-end (what turns that kind into the backend's input)."""
    value = data.get("programs", default_programs())
    kinds = ", ".join(PROGRAM_KINDS)
    if not isinstance(value, dict) or not value or not all(isinstance(v, str) for v in value.values()):
        raise HarnessInputError(display_path(path), f"programs must map a program kind ({kinds}) to its front-end",
                                "write e.g. programs: {torch: torch.export, onnx: its ONNX importer}")
    unknown = sorted(set(value) - set(PROGRAM_KINDS))
    if unknown:
        raise HarnessInputError(display_path(path), f"programs names unknown kind {unknown[0]!r}", f"use {kinds}")
    return dict(value)


def _requirements(path: Path, value: Any) -> dict[str, str | None]:
    """`requires:` as {distribution: import name, or None for the default}; an item is a name or,
    where the import name differs, a one-key mapping such as {iree-base-compiler: iree.compiler}."""
    if value is None:
        return {}
    found: dict[str, str | None] = {}
    for item in value if isinstance(value, list) else [None]:
        dist, module = next(iter(item.items())) if isinstance(item, dict) and len(item) == 1 else (item, None)
        if not (isinstance(dist, str) and dist and (module is None or isinstance(module, str) and module)):
            raise HarnessInputError(display_path(path), f"requires must be a list of distribution names, not {value!r}",
                                    "write requires: [torch, torch-mlir], or {distribution: module} where the "
                                    "import name differs")
        found[dist] = module
    return found


def _lowering(path: Path, data: dict, places: Mapping[str, tuple[Path, int]]) -> dict[str, str]:
    """`lowering: {aten.convolution_backward: kept}`: op names as records spell them, one word each."""
    claims = _mapping(path, data, "lowering")
    for op, word in claims.items():
        written, line = places.get(f"lowering.{op}", (path, 0))
        at = f"{display_path(written)}:{line}" if line else display_path(written)
        if not (isinstance(op, str) and "." in op.strip(".")):
            raise HarnessInputError(at, f"lowering: {op!r} is not an op name",
                                    "name it as records do, namespace.op: aten.convolution_backward")
        if not isinstance(word, str):
            raise HarnessInputError(at,
                                    f"lowering.{op} must be one word, the path it must take", "kept, decomposed, ...")
    return dict(claims)


def _mapping(path: Path, data: dict, key: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise HarnessInputError(display_path(path), f"{key!r} must be a mapping")
    return dict(value)


def _tolerances(path: Path, data: dict) -> dict[str, Tolerance]:
    result = {}
    for dtype, tol in _mapping(path, data, "tolerances").items():
        if dtype not in DTYPES:
            raise HarnessInputError(display_path(path), f"tolerance for unknown dtype {dtype!r}",
                                    f"use one of {', '.join(DTYPES)}")
        if not isinstance(tol, dict):
            raise HarnessInputError(display_path(path), f"tolerances.{dtype} must be a mapping with rtol and atol")
        check_node_keys(path, tol, TOLERANCE_KEYS, required=TOLERANCE_KEYS)
        result[dtype] = Tolerance(_number(path, tol["rtol"], f"tolerances.{dtype}.rtol"),
                                  _number(path, tol["atol"], f"tolerances.{dtype}.atol"))
    return result


def _number(path: Path, value: Any, what: str) -> float:
    if not (is_positive_finite(value) or value == 0):  # the same test: a non-negative, finite number
        raise HarnessInputError(display_path(path), f"{what} must be a non-negative, finite number, not {value!r}")
    return float(value)


def _positive(path: Path, value: Any, what: str, unit: str) -> float | None:
    if value is not None and not is_positive_finite(value):
        raise HarnessInputError(display_path(path),
                                f"{what} must be a positive, finite number of {unit}, not {value!r}")
    return value if value is None else float(value)


def select_backend(configs: Mapping[str, BackendConfig], name: str, option: str = "--backend") -> BackendConfig:
    """The named config, or one error line naming the option: unknown, or a package it needs is missing."""
    if name not in configs:
        known = ", ".join(sorted(configs)) or "none"
        raise HarnessInputError(f"{option}={name}", f"unknown backend (known: {known})",
                                "add configs/<name>.yaml or pass --configs-dir=DIR")
    dist = missing_requirement(configs[name])
    if dist is not None:
        raise HarnessInputError(f"{option}={name}", f"needs the package {dist!r}, which is not installed",
                                f"install it with: {configs[name].install}")
    return configs[name]


def missing_requirement(config: BackendConfig) -> str | None:
    """The first distribution of `requires:` that is not installed (nor importable), else None."""
    return next((d for d in config.requires if locate(d, config.module_of(d)) is None), None)


def backend_problem(config: BackendConfig, problem: Mapping[str, Any]) -> HarnessInputError:
    """The error line of what a worker-side check (harness.worker.backend_check) found wrong with the
    config's class: at the line of `class:`, or of the first option the class does not declare."""
    if problem["stage"] == "options":
        unknown = min(problem["unknown"], key=lambda key: config.places.get(f"options.{key}", (config.source, 0)))
        accepted = list(problem["accepted"])
        close = difflib.get_close_matches(unknown, accepted, n=1)
        guess = f"did you mean {close[0]!r}? " if close else ""
        return HarnessInputError(config.place(f"options.{unknown}"),
                                 f"unknown option {unknown!r} of {config.class_path}",
                                 f"{guess}it takes {', '.join(accepted) or 'no options'}")
    if problem["stage"] == "lowering":
        return HarnessInputError(config.place(f"lowering.{problem['op']}"),
                                 f"lowering.{problem['op']}: {problem['path']!r} is not a path {config.class_path} "
                                 "reports", f"it reports {', '.join(problem['paths']) or 'no lowering paths'}")
    if problem["stage"] == "import":
        return HarnessInputError(config.place("class"),
                                 f"class {config.class_path} does not import ({problem['error']})",
                                 "fix the class, or install the package that has it")
    return HarnessInputError(config.place("class"), f"{config.class_path} does not create the backend "
                             f"{config.name!r} ({problem['error']})", "fix its options or the class")
