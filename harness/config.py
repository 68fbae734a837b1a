"""Backend configs: one YAML file per backend in each configs directory."""
from __future__ import annotations

import dataclasses
import importlib.metadata
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.errors import HarnessInputError
from harness.spec import is_positive_finite
from harness.yamlio import check_keys, load_yaml, shown

DTYPES = ("float64", "float32", "float16", "bfloat16")
CONFIG_KEYS = {"name", "description", "class", "extends", "options", "tolerances", "timeout", "memory_limit_mb",
               "requires", "install"}
TOLERANCE_KEYS = {"rtol", "atol"}


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

    def to_json(self) -> dict[str, Any]:
        """What a worker needs to instantiate and check this backend."""
        return {"name": self.name, "class": self.class_path, "options": dict(self.options),
                "tolerances": {k: dataclasses.asdict(v) for k, v in self.tolerances.items()}}


def load_configs(dirs: Iterable[Path]) -> dict[str, BackendConfig]:
    """All backend configs of the given directories; a later directory may not redefine a name."""
    documents: dict[str, tuple[Path, dict]] = {}
    for directory in dirs:
        for path in sorted(Path(directory).glob("*.yaml")):
            data = _read(path)
            if data["name"] in documents:
                raise HarnessInputError(shown(path), f"backend {data['name']!r} is already defined in "
                                        f"{shown(documents[data['name']][0])}", "rename one of them")
            documents[data["name"]] = (path, data)
    return {name: _parse(path, _inherit(name, documents)) for name, (path, _) in documents.items()}


def _read(path: Path) -> dict:
    data = load_yaml(path)
    if not isinstance(data, dict):
        raise HarnessInputError(shown(path), "a backend config must be a mapping", "see configs/eager.yaml")
    check_keys(path, data, CONFIG_KEYS, required={"name"})
    if data["name"] != path.stem:
        raise HarnessInputError(shown(path), f"name {data['name']!r} differs from the file name",
                                f"rename the file to {data['name']}.yaml or fix the name")
    return data


def _inherit(name: str, documents: dict[str, tuple[Path, dict]], chain: tuple[str, ...] = ()) -> dict:
    """A config with `extends: BASE` takes BASE's keys; its own keys, options and tolerances win."""
    path, data = documents[name]
    base_name = data.get("extends")
    if base_name is None:
        return data
    if base_name not in documents:
        raise HarnessInputError(shown(path), f"extends unknown backend {base_name!r}",
                                f"use one of {', '.join(sorted(documents))}")
    if base_name in chain + (name,):
        raise HarnessInputError(shown(path), f"extends {base_name!r}, which extends it back", "break the cycle")
    base = _inherit(base_name, documents, chain + (name,))
    merged = {**base, **data}
    for key in ("options", "tolerances"):
        merged[key] = {**(base.get(key) or {}), **(data.get(key) or {})}
    del merged["extends"]
    return merged


def _parse(path: Path, data: dict) -> BackendConfig:
    class_path = data.get("class")
    if class_path is None:
        raise HarnessInputError(shown(path), "missing required key 'class'",
                                "name the backend class as module:Class, or extend a config that does")
    if not isinstance(class_path, str) or ":" not in class_path:
        raise HarnessInputError(shown(path), f"class {class_path!r} is not of the form 'module:Class'")
    return BackendConfig(
        name=data["name"], description=str(data.get("description", "")), class_path=class_path,
        options=_mapping(path, data, "options"), tolerances=_tolerances(path, data),
        timeout=_positive(path, data.get("timeout"), "timeout", "seconds"),
        memory_limit_mb=_positive(path, data.get("memory_limit_mb"), "memory_limit_mb", "MiB"),
        requires=_names(path, data.get("requires")), source=path,
        install=str(data.get("install") or 'pip install -e "."'))


def _names(path: Path, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise HarnessInputError(shown(path), f"requires must be a list of distribution names, not {value!r}",
                                "write requires: [torch, torch-mlir]")
    return tuple(value)


def _mapping(path: Path, data: dict, key: str) -> dict:
    value = data.get(key) or {}
    if not isinstance(value, dict):
        raise HarnessInputError(shown(path), f"{key!r} must be a mapping")
    return dict(value)


def _tolerances(path: Path, data: dict) -> dict[str, Tolerance]:
    result = {}
    for dtype, tol in _mapping(path, data, "tolerances").items():
        if dtype not in DTYPES:
            raise HarnessInputError(shown(path), f"tolerance for unknown dtype {dtype!r}",
                                    f"use one of {', '.join(DTYPES)}")
        if not isinstance(tol, dict):
            raise HarnessInputError(shown(path), f"tolerances.{dtype} must be a mapping with rtol and atol")
        check_keys(path, tol, TOLERANCE_KEYS, required=TOLERANCE_KEYS)
        result[dtype] = Tolerance(_number(path, tol["rtol"], f"tolerances.{dtype}.rtol"),
                                  _number(path, tol["atol"], f"tolerances.{dtype}.atol"))
    return result


def _number(path: Path, value: Any, what: str) -> float:
    if not (is_positive_finite(value) or value == 0):  # the same test: a non-negative, finite number
        raise HarnessInputError(shown(path), f"{what} must be a non-negative, finite number, not {value!r}")
    return float(value)


def _positive(path: Path, value: Any, what: str, unit: str) -> float | None:
    if value is not None and not is_positive_finite(value):
        raise HarnessInputError(shown(path), f"{what} must be a positive, finite number of {unit}, not {value!r}")
    return value if value is None else float(value)


def distribution_version(dist: str) -> str | None:
    """The installed version of a distribution, read without importing it."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def select_backend(configs: Mapping[str, BackendConfig], name: str, option: str = "--backend") -> BackendConfig:
    """The named config, or one error line naming the option: unknown, or a package it needs is missing."""
    if name not in configs:
        known = ", ".join(sorted(configs)) or "none"
        raise HarnessInputError(f"{option}={name}", f"unknown backend (known: {known})",
                                "add configs/<name>.yaml or pass --configs-dir=DIR")
    for dist in configs[name].requires:
        if distribution_version(dist) is None:
            raise HarnessInputError(f"{option}={name}", f"needs the package {dist!r}, which is not installed",
                                    f"install it with: {configs[name].install}")
    return configs[name]
