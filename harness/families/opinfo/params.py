"""The OpInfo families' pure half: params, tags, and the case manifest, read without torch.

A case is one OpInfo sample: params `op`, `variant` ("" for none), `dtype`, `sample_index` and
`fingerprint` (the sample's shapes, dtypes, strides and a hash of its values, as
harness.families.opinfo.manifest.fingerprint writes it; optional in a cases file, checked when given).
Ids read `opinfo/<op>/<variant or "default">/<dtype>/<k>` (`opinfo_grad/...` for gradients).

The cases come from a manifest that a worker-side script writes once per torch installation
(`harness.files.user_cache_dir()`/<key>-<dtype>.json, key from torch's version and
location); collection reads it.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from harness.case_data import DTYPES, Case, check_keys
from harness.errors import HarnessInputError
from harness.families.manifest_cache import ManifestError, locked, run_lister
from harness.files import user_cache_dir

MANIFEST_FORMAT = 4
SIZE_CAP = 1_000_000     # elements over a sample's tensors; only grid_sampler_3d's 5 M sample is above it
NO_VARIANT = "default"   # the variant part of an id when the OpInfo has no variant name
MANIFEST_TIMEOUT_S = 900
RULES = {                # why a sample is not a case: `python -m harness opinfo-stats` counts them
    "no_cpu": "the op has no CPU kernel for any dtype",
    "cuda_only": "the OpInfo is marked onlyCUDA (PyTorch's own tests never run it on CPU)",
    "dtype": "the op does not support the dtype on CPU",
    "samples_error": "making the op's samples raised on CPU",
    "sparse": "a sparse tensor in the sample (backends take strided tensors)",
    "size": f"more than {SIZE_CAP:,} elements in the sample's tensors",
    "no_autograd": "gradient cases only: the op does not support autograd",
    "no_grad_input": "gradient cases only: no tensor of the sample requires grad",
}
PARAM_KEYS = {"op", "variant", "dtype", "sample_index", "fingerprint"}


def validate(params: Mapping[str, Any]) -> dict:
    check_keys(params, PARAM_KEYS)
    op = params.get("op")
    if not isinstance(op, str) or not op:
        raise ValueError("opinfo cases need 'op', an OpInfo name such as 'abs' or 'nn.functional.conv2d'")
    variant = params.get("variant", "")
    if not isinstance(variant, str):
        raise ValueError(f"'variant' must be a string ('' for none), not {variant!r}")
    dtype = params.get("dtype", "float32")
    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    index = params.get("sample_index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"'sample_index' must be a non-negative integer, not {index!r}")
    given = params.get("fingerprint")
    if given is not None and not isinstance(given, str):
        raise ValueError("'fingerprint' must be a string as the report shows it")
    return {"op": op, "variant": variant, "dtype": dtype, "sample_index": index,
            "fingerprint": _manifest_fingerprint(op, variant, dtype, index, given)}


def _manifest_fingerprint(op: str, variant: str, dtype: str, index: int, given: str | None) -> str:
    """The sample's fingerprint from the manifest; a sample it does not have, or another fingerprint
    than `given`, is an error naming the sample."""
    try:
        manifest = load_manifests((dtype,))[dtype]
    except (ManifestError, OSError) as e:
        raise ValueError(f"cannot check the sample against PyTorch's OpInfo database: {e}") from None
    entry = next((o for o in manifest["ops"] if (o["name"], o["variant"]) == (op, variant)), None)
    where = f"OpInfo {op!r}" + (f" variant {variant!r}" if variant else "")
    if entry is None:
        known = {o["name"] for o in manifest["ops"]}
        close = difflib.get_close_matches(op, known, n=3) if op not in known else [
            repr(o["variant"]) for o in manifest["ops"] if o["name"] == op]
        hint = f"; did you mean {' or '.join(close)}?" if op not in known else f"; its variants: {', '.join(close)}"
        raise ValueError(f"torch {manifest['torch']} has no {where}" + (hint if close else ""))
    found = entry["samples"].get(dtype, [])
    if index >= len(found):
        raise ValueError(f"{where} has {len(found)} samples at {dtype} on torch {manifest['torch']}, "
                         f"not sample {index}")
    if given is not None and given != found[index]:
        raise ValueError(f"{where} sample {index} at {dtype} has changed: torch {manifest['torch']} gives "
                         f"fingerprint {found[index]!r}, not {given!r}")
    return found[index]


def op_tag(op: str) -> str:
    """The op's name as a pytest keyword (`-k nn_functional_conv2d`)."""
    return re.sub(r"\W", "_", op)


def derive_tags(params: Mapping[str, Any]) -> list[str]:
    return ["opinfo", op_tag(params["op"])]


def subject(params: Mapping[str, Any]) -> str:
    """The op and its variant: `nn.functional.pad.reflect`."""
    return params["op"] + (f".{params['variant']}" if params.get("variant") else "")


def derive_grad_tags(params: Mapping[str, Any]) -> list[str]:
    return derive_tags(params) + ["grad"]


def case_id(family: str, op: str, variant: str, dtype: str, index: int) -> str:
    return f"{family}/{op}/{variant or NO_VARIANT}/{dtype}/{index}"


# ------------------------------------------------------------------------------------- selection

@dataclasses.dataclass(frozen=True)
class Sample:
    family: str
    op: dict                            # the manifest's entry of the op
    dtype: str
    index: int
    fingerprint: str

    @property
    def id(self) -> str:
        return case_id(self.family, self.op["name"], self.op["variant"], self.dtype, self.index)

    @property
    def params(self) -> dict:
        return {"op": self.op["name"], "variant": self.op["variant"], "dtype": self.dtype,
                "sample_index": self.index, "fingerprint": self.fingerprint}

    @property
    def tags(self) -> list[str]:
        tags = ["opinfo", op_tag(self.op["name"])] + ["grad"] * (self.family == "opinfo_grad")
        return tags + [t for t in ("random", "inplace") if self.op[t]]


def samples(manifests: Mapping[str, dict], families: tuple[str, ...], first: int | None = None) -> Iterator[Sample]:
    """Every sample of the manifests that is a case of `families` (excluded ones are not); with
    `first`, only those among each op's first samples (what --opinfo-samples=first reads of 65,000)."""
    for dtype, manifest in manifests.items():
        for op in manifest["ops"]:
            for family in families:
                if family == "opinfo_grad" and not op["autograd"]:
                    continue
                excluded = op["excluded"].get(dtype, {})
                no_grad = set(op["no_grad_input"].get(dtype, ())) if family == "opinfo_grad" else set()
                for index, print_ in enumerate(op["samples"].get(dtype, ())[:first]):
                    if str(index) not in excluded and index not in no_grad:
                        yield Sample(family, op, dtype, index, print_)


def exclusions(manifests: Mapping[str, dict], family: str) -> dict[str, dict[str, int]]:
    """rule -> {"ops": n, "samples": n}: what the manifests hold that is not a case of `family`, and why."""
    counts: dict[str, dict[str, int]] = {rule: {"ops": 0, "samples": 0} for rule in RULES}

    def count(rule: str, n_samples: int) -> None:
        counts[rule]["ops"] += 1
        counts[rule]["samples"] += n_samples

    for dtype, manifest in manifests.items():
        for op in manifest["ops"]:
            if not op["dtypes"]:
                count("no_cpu", 0)
            elif dtype not in op["dtypes"]:
                count("dtype", 0)
            elif dtype in op["errors"]:
                count("samples_error", 0)
            elif family == "opinfo_grad" and not op["autograd"]:
                count("no_autograd", len(op["samples"].get(dtype, ())))
            else:
                rules = list(op["excluded"].get(dtype, {}).values())
                if family == "opinfo_grad":
                    excluded = {int(k) for k in op["excluded"].get(dtype, {})}
                    rules += ["no_grad_input"] * len(set(op["no_grad_input"].get(dtype, ())) - excluded)
                for rule in sorted(set(rules)):
                    count(rule, rules.count(rule))
    return counts


# ------------------------------------------------------------------------------------- manifest

def manifest_key() -> str:
    """torch's version and location, and this manifest format: a new torch gets a new manifest."""
    from harness.installation.packages import locate

    torch = locate("torch", "torch")
    if torch is None:
        raise ManifestError("torch is not installed: pip install -e . installs the pinned version")
    text = f"{torch.version_text}|{Path(torch.path).resolve()}|{MANIFEST_FORMAT}"  # a linked venv shares it
    return f"opinfo-torch{torch.version or 'unknown'}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def load_manifests(dtypes: tuple[str, ...], directory: Path | None = None) -> dict[str, dict]:
    """dtype -> manifest, writing the missing ones first (a worker process imports torch for that)."""
    directory = directory or user_cache_dir()
    key = manifest_key()
    paths = {dtype: directory / f"{key}-{dtype}.json" for dtype in dtypes}
    with locked(directory, key):
        missing = [dtype for dtype, path in paths.items() if not path.exists()]
        if missing:
            _write(directory, key, missing)
    return {dtype: _parsed(path) for dtype, path in paths.items()}


@functools.cache
def _parsed(path: Path) -> dict:
    """A manifest, parsed once per process: a cases file validates each of its entries against it."""
    return json.loads(path.read_text(encoding="utf-8"))


def _write(directory: Path, key: str, dtypes: list[str]) -> None:
    try:
        run_lister("harness.families.opinfo.manifest", [str(directory), key, *dtypes],
                   f"PyTorch's OpInfo samples ({', '.join(dtypes)}) into {directory}", "15 s per torch installation",
                   MANIFEST_TIMEOUT_S, env={"PYTHONHASHSEED": "0"})
    except ManifestError as e:
        hint = "; pip install expecttest (it is in the project's dependencies)" if "expecttest" in str(e) else ""
        raise ManifestError(f"{e}{hint}") from None


# ------------------------------------------------------------------------------------- case sources

DEFAULT_SAMPLES, DEFAULT_DTYPES = "first", ("float32",)   # without the options (a case module run outside pytest)


def parse_samples(text: str) -> str:
    """--opinfo-samples: first, all, or a positive number of samples per op and dtype."""
    text = str(text).strip()
    if not (text in ("first", "all") or (text.isdigit() and int(text) > 0)):
        raise ValueError("use first, all, or a positive number")
    return text


def sample_limit(samples_option: str) -> int | None:
    """How many of each op's first samples (per dtype) --opinfo-samples selects; None: all."""
    if samples_option == "all":
        return None
    return 1 if samples_option == "first" else int(samples_option)


def manifests_for(dtypes: tuple[str, ...]) -> dict[str, dict]:
    try:
        return load_manifests(tuple(dtypes))
    except (ManifestError, OSError) as e:
        raise HarnessInputError("opinfo cases", str(e),
                                f"set TORCH_BACKEND_E2E_CACHE to a writable directory (now {user_cache_dir()})"
                                if isinstance(e, OSError) else "") from None


def opinfo_cases(options: Mapping[str, Any], families: tuple[str, ...]) -> list[Case]:
    """The selected samples of the installed torch's op_db as cases (a case module's `cases`)."""
    first = sample_limit(options.get("opinfo_samples") or DEFAULT_SAMPLES)
    return [Case(s.id, s.family, s.params, tuple(s.tags))
            for s in samples(manifests_for(_dtypes(options)), families, first)]


def opinfo_case_ids(options: Mapping[str, Any], families: tuple[str, ...]) -> list[str]:
    """Every sample's id at the selected dtypes and the default ones (a case module's `case_ids`):
    an expectation entry at float32 holds in a run at other dtypes too."""
    dtypes = tuple(dict.fromkeys(DEFAULT_DTYPES + _dtypes(options)))
    return [s.id for s in samples(manifests_for(dtypes), families)]


def _dtypes(options: Mapping[str, Any]) -> tuple[str, ...]:
    """The run's --dtypes (each op at those its OpInfo lists for CPU), else DEFAULT_DTYPES."""
    return tuple(options.get("dtypes") or DEFAULT_DTYPES)
