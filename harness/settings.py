"""Every setting of the harness, declared once, as a field of `Settings`: its command-line flag,
its ini key, its default, its check, and how a command line and an ini combine.

pytest (harness.plugin) and the `python -m harness` tools read the same declarations: pytest from
its Config, the tools from their argparse namespace plus the project's ini, found as pytest finds
it (harness.project_files.ini). Precedence: the command line, then the ini, then the default; a
repeatable setting marked `extend` adds its command-line values to the ini's (or the default's).
A path typed on the command line is relative to where the command started; one in the ini, or a
default, to the rootdir. Bad values are one HarnessInputError line naming the flag or the ini key.
"""
from __future__ import annotations

import dataclasses
import os
import shlex
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from packaging.version import InvalidVersion, Version

from harness.case_data import is_positive_finite, parse_dtypes
from harness.errors import HarnessInputError
from harness.files import user_cache_dir

DEFAULT_MEMORY_LIMIT_MB = 8192.0  # a runaway case becomes a crashed result, not a machine out of memory


@dataclasses.dataclass(frozen=True)
class Declared:
    """How one setting is given: see `setting()`."""

    default: Any                  # as an ini would give it: text, or a list of texts
    flag: str | None
    help: str
    ini: str | None
    ini_type: str                 # pytest's addini type: "string", "args", "linelist" or "paths"
    many: bool                    # repeatable on the command line: its value is a list
    extend: bool                  # command-line values add to the ini's (or the default's)
    path: bool                    # values name files or folders (resolved; see the module docstring)
    type: Callable[[str], Any]    # text -> value, as argparse's type (its error text when it fails)
    check: Callable[[Any], str | None] | None  # the problem with a value, or None
    convert: Callable[[Any], Any] | None       # the checked value -> what the field holds
    shared: bool                  # also an option of the tools that load the project (`harness.project.tool_arguments`)
    kind: dict[str, Any]          # further add_argument keywords: metavar, choices, action


def setting(default: Any, flag: str | None, help: str, *, ini: str | None = None, ini_type: str = "string",
            many: bool = False, extend: bool = False, path: bool = False, type: Callable[[str], Any] = str,
            check: Callable[[Any], str | None] | None = None, convert: Callable[[Any], Any] | None = None,
            shared: bool = False, **kind: Any) -> Any:
    """A field of Settings and its declaration. `default` is as an ini would give it (text)."""
    declared = Declared(default, flag, help, ini, ini_type, many, extend, path, type, check, convert, shared, kind)
    return dataclasses.field(default_factory=lambda: _default(declared, Path.cwd()), metadata={"declared": declared})


def output_file(flag: str, help: str, ini: str) -> Declared:
    """The declaration of a file a run writes (a report format's): a path checked writable, none by default."""
    return Declared(None, flag, help, ini, "string", False, False, True, str, _writable_file, None, False,
                    {"metavar": "PATH"})


def _default(declared: Declared, root: Path) -> Any:
    value: Any
    if declared.many:
        value = [_one(declared, text, root, None) for text in declared.default]
    else:
        value = None if declared.default is None else _one(declared, declared.default, root, None)
    return declared.convert(value) if declared.convert else value


# --------------------------------------------------------------------------- checks

def _positive_seconds(value: float) -> str | None:
    return None if is_positive_finite(value) else "must be a positive, finite number of seconds"


def _positive(value: float) -> str | None:
    return None if is_positive_finite(value) else "must be a positive, finite number"


CACHE_MODES = ("on", "read", "write", "off")   # harness.stages.entries.CacheMode
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def size(text: str) -> int:
    """"20G", "500M", "1048576": a size with an optional binary unit (K, M, G, T, an optional "iB" or "B")."""
    value = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    number, unit = (value[:-1], value[-1]) if value[-1:] in _SIZE_UNITS else (value, "")
    try:
        size = float(number) * _SIZE_UNITS[unit]
    except ValueError:
        raise ValueError(f"{text!r} is not a size: give bytes or a number with K, M, G or T (20G)") from None
    if not is_positive_finite(size):
        raise ValueError(f"{text!r} must be a positive size")
    return int(size)


def _cache_mode(value: str) -> str | None:
    return None if value in CACHE_MODES else f"must be one of {', '.join(CACHE_MODES)}"


def _not_negative(value: int) -> str | None:
    return None if value >= 0 else "must be 0 or more reruns"


def _fraction(value: float) -> str | None:
    return None if 0 < value < 1 else "must be a fraction between 0 and 1, e.g. 0.05"


def _directory(path: Path) -> str | None:
    return None if path.is_dir() else "no such directory"


def _writable_file(path: Path) -> str | None:
    usable = path.parent.is_dir() and os.access(path.parent, os.W_OK) and not path.is_dir()
    return None if usable else "cannot write there; create the directory or pick another path"


def _history_file(path: Path) -> str | None:
    return None if path.is_file() else _writable_file(path)


def _creatable_directory(path: Path) -> str | None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create it ({e.strerror}); pick another directory"
    return None if os.access(path, os.W_OK) else "not writable; pick another directory"


def _version_pair(value: str) -> str | None:
    try:
        Version(value.partition("=")[2])
    except InvalidVersion:
        return "not NAME=VERSION with a PEP 440 version; write e.g. --assume-version=torch-mlir=20261001"
    return None


def boolean(text: str) -> bool:
    """An ini's truth value, as pytest reads a "bool" ini key (its error names the type: "boolean")."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false", "yes", "no", "on", "off", "1", "0"):
        raise ValueError(text)
    return lowered in ("true", "yes", "on", "1")


def _versions(pairs: list[str]) -> dict[str, str]:
    """NAME=VERSION pairs; the names are checked against the expectations' conditions later."""
    return {name.strip(): version.strip() for name, _, version in (p.partition("=") for p in pairs)}


def _dtype_list(text: str) -> str | None:
    try:
        parse_dtypes([text])
    except ValueError as e:
        return str(e)
    return None


def _names(values: list[str]) -> list[str]:
    """Backend names, from repeated flags or comma lists, each once."""
    return list(dict.fromkeys(n.strip() for value in values for n in value.split(",") if n.strip()))


# --------------------------------------------------------------------------- the settings

@dataclasses.dataclass
class Settings:
    """A run's settings. The fields marked `shared` describe the project (the tools take them too);
    the others only a pytest run."""

    # ---- the project: which families, configs, cases and expectations
    families: list[str] = setting(
        [], "--add-family", "a case family beside the built-in and entry-point ones: package.module:NAME or "
        "path/to/file.py:NAME (a Family or a list of them; repeatable)", ini="e2e_families", ini_type="linelist",
        many=True, extend=True, shared=True, metavar="ENTRY")
    cases_dirs: list[Path] = setting(
        ["cases"], "--cases-dir", "a directory of case modules, in place of the ini's e2e_cases_dirs "
        "(repeatable; default: cases)", ini="e2e_cases_dirs", ini_type="paths", many=True, path=True,
        check=_directory, shared=True, metavar="DIR")
    builtin_cases: bool = setting(
        "true", None, "whether the harness's built-in cases (the package harness.cases: pytest --pyargs harness.cases "
        "runs them) are cases of this project, which its expectation files may name (default: true)",
        ini="e2e_builtin_cases", type=boolean, shared=True)
    configs_dirs: list[Path] = setting(
        ["configs"], "--configs-dir", "an extra directory of backend configs, beside the ini's e2e_configs_dirs "
        "(repeatable; default: configs)", ini="e2e_configs_dirs", ini_type="paths", many=True, extend=True,
        path=True, check=_directory, shared=True, metavar="DIR")
    xfail_dir: Path = setting(
        "xfail", "--xfail-dir", "the directory of xfail/<backend>.yaml files (default: xfail)",
        ini="e2e_xfail_dir", path=True, check=_directory, shared=True, metavar="DIR")
    crash_sets_dir: Path = setting(
        "crash_sets", "--crash-sets-dir", "the directory of crash_sets/<backend>.yaml files (default: crash_sets)",
        ini="e2e_crash_sets_dir", path=True, check=_directory, shared=True, metavar="DIR")
    cases_files: list[Path] = setting(
        [], "--cases-file", "YAML or JSON list of parameter sets (any family's, e.g. family: module) to add as "
        "cases (repeatable)", many=True, path=True, shared=True, metavar="FILE")
    case_timeout: float | None = setting(
        None, "--case-timeout", "per-case timeout; an expectation entry's or a case's own timeout beats it, and "
        "it beats the backend config's default", type=float, check=_positive_seconds, shared=True, metavar="SECONDS")
    assumed_versions: dict[str, str] = setting(
        [], "--assume-version", "the version `when:` conditions see for NAME, e.g. torch-mlir=20261001 for a source "
        "build whose version cannot be read (repeatable)", many=True, check=_version_pair, convert=_versions,
        shared=True, metavar="NAME=VERSION")

    # ---- a pytest run
    backends: list[str] = setting(
        ["linalg-on-tensors"], "--backend", "backend(s) to run the cases on (repeatable or comma list; "
        "default: ini e2e_backends)", ini="e2e_backends", ini_type="args", many=True, convert=_names,
        metavar="NAME[,NAME...]")
    dtypes: tuple[str, ...] = setting(
        [], "--dtypes", "run every case at each of these floating dtypes, a comma list (float64, float32, "
        "float16, bfloat16): <id>/<dtype> where it is not the case's own, for the families with a dtype axis "
        "(default: each case at its own)", ini="e2e_dtypes", ini_type="args", many=True, check=_dtype_list,
        convert=parse_dtypes, shared=True, metavar="DTYPE[,DTYPE...]")
    run_crash_set: bool = setting(False, "--run-crash-set", "attempt crash-set cases instead of not running them",
                                  action="store_true")
    memory_limit_mb: float = setting(
        DEFAULT_MEMORY_LIMIT_MB, "--memory-limit", "a worker's resident memory limit (default 8192, or the "
        "config's memory_limit_mb)", type=float, check=_positive, metavar="MIB")
    recycle_after: int | None = setting(None, "--recycle-after", "replace each worker after N cases", type=int,
                                        check=_positive, metavar="N")
    recycle_rss_mb: float | None = setting(
        None, "--recycle-rss", "replace a worker whose resident memory after a case exceeds MIB (default: half "
        "of --memory-limit)", type=float, check=_positive, metavar="MIB")
    rerun_failures: int = setting(
        0, "--rerun-failures", "run an unexpected failure again, up to N times, each in a fresh worker; attempts "
        "that disagree make the case flaky (default 0)", type=int, check=_not_negative, metavar="N")
    flaky_ok: bool = setting(False, "--flaky-ok", "a flaky case (its reruns disagreed) does not fail the run",
                             action="store_true")
    history: Path | None = setting(
        None, "--history", "record this run in a history database (created when missing; python -m harness "
        "history show DB)", path=True, check=_history_file, metavar="DB")
    update_expectations: bool = setting(
        False, "--update-expectations", "rewrite xfail/ and crash_sets/ files of the selected backends to match "
        "this run", action="store_true")
    artifacts_dir: Path | None = setting(
        None, "--artifacts-dir", "write a repro bundle (inputs, IR per stage, repro.py) per unexpected result "
        "here", path=True, check=_creatable_directory, metavar="DIR")
    artifacts: str = setting("unexpected", "--artifacts", "which results keep their bundle (default: unexpected)",
                             choices=("unexpected", "all"))
    durations_from: Path | None = setting(
        None, "--durations-from", "run the longest cases first, by the durations in this JSON report or "
        "pytest-split durations file (default under xdist: the --report-json file of the last run, if any)",
        path=True, metavar="PATH")
    cache: str = setting("on", "--cache", "the stage cache: on (reuse its entries, write the missing ones), read "
                         "(reuse, write none), write (compute every stage, refresh its entry), off", ini="e2e_cache",
                         check=_cache_mode, choices=CACHE_MODES, shared=True)
    cache_dir: Path = setting(str(user_cache_dir() / "stages"), "--cache-dir", "the stage cache's folder (default: "
                              "the user's cache folder, ~/.cache/torch-backend-e2e/stages)", ini="e2e_cache_dir",
                              path=True, shared=True, metavar="DIR")
    cache_size: int = setting("20G", "--cache-size", "the stage cache's size cap: the least recently used entries go "
                              "first past it (default 20G)", ini="e2e_cache_size", type=size, shared=True,
                              metavar="SIZE")
    warm_server: str = setting(
        "auto", "--warm-server", "fork the workers from a server kept between runs, with torch imported "
        "(docs/how-to/stage-cache.md): on, off, or auto, on when the run writes to a terminal (default auto)",
        ini="e2e_warm_server", choices=("auto", "on", "off"))
    isolate: bool = setting(False, "--isolate", "isolate each case that fails as a mismatch to the ops that make it "
                            "(python -m harness isolate's search, on the run's workers): the reports name them",
                            action="store_true")
    perf: bool = setting(False, "--perf", "time every case that passes against eager, in the worker that "
                         "compiled it (docs/how-to/performance.md)", action="store_true")
    perf_rounds: int = setting(
        1, "--perf-rounds", "with --perf, time a passed case in N workers, each further one fresh and compiling "
        "it again: the intervals then hold the noise between processes (default 1)", type=int, check=_positive,
        metavar="N")
    perf_threads: int = setting(1, "--perf-threads", "with --perf, the threads of every runtime: torch, IREE's task "
                                "system, onnxruntime (default 1)", type=int, check=_positive, metavar="N")
    perf_budget_s: float = setting(
        3.0, "--perf-budget", "with --perf, the seconds of repeats a case may take at most (default 3)", type=float,
        check=_positive_seconds, metavar="SECONDS")
    perf_target: float = setting(
        0.05, "--perf-target", "with --perf, the repeats stop once each side's median has a 95-percent "
        "interval within this fraction of it (default 0.05)", type=float, check=_fraction, metavar="FRACTION")
    workers: str = setting(
        "auto", None, "pytest-xdist workers when no -n is given: auto (one per core), or N; 0 runs serially",
        ini="e2e_workers")

    # ---- set by the resolution, not declared
    rootdir: Path = dataclasses.field(default_factory=Path.cwd)   # the ini's folder: ini paths are relative to it
    # The families' own options by dest name (harness.families.loader.resolve): what case modules'
    # cases(options) and the families' discover(options) see.
    family_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    # The report formats asked for (harness.views.formats), by name: the file each is written to.
    reports: dict[str, Path] = dataclasses.field(default_factory=dict)

    @property
    def recycle_rss(self) -> float:
        """A worker that runs thousands of cases grows (JIT code, compiled kernels): replaced by default
        once it holds half the memory limit, before a case pays for the growth."""
        return self.recycle_rss_mb or self.memory_limit_mb / 2

    @property
    def artifacts_all(self) -> bool:
        return self.artifacts == "all"


def declarations(shared_only: bool = False) -> Iterator[tuple[str, Declared]]:
    """(field name, declaration) of every declared setting, in the order of the fields."""
    for field in dataclasses.fields(Settings):
        declared = field.metadata.get("declared")
        if declared is not None and (declared.shared or not shared_only):
            yield field.name, declared


def default_of(name: str) -> Any:
    """A setting's default, as an ini would give it (text)."""
    return dict(declarations())[name].default


# --------------------------------------------------------------------------- resolution

def resolve(typed: Mapping[str, Any], ini: Mapping[str, Any], here: Path, root: Path,
            family_options: dict[str, Any] | None = None, shared_only: bool = False,
            reports: dict[str, Path] | None = None) -> Settings:
    """Settings from the command line's values by field name (None or [] where not typed) and the
    ini's (text, or a list of texts, where set), each checked. `family_options` and `reports` come
    resolved (harness.families.loader.resolve, resolve_outputs)."""
    values = {name: _value(declared, typed.get(name), ini.get(declared.ini) if declared.ini else None,
                           here, root)
              for name, declared in declarations(shared_only)}
    return Settings(**values, rootdir=root, family_options=family_options or {}, reports=reports or {})


def resolve_outputs(declared: Mapping[str, Declared], typed: Mapping[str, Any], ini: Mapping[str, Any],
                    here: Path, root: Path) -> dict[str, Path]:
    """The files asked for, by name, of settings declared outside Settings (`output_file`): typed
    and ini values as `resolve` takes them, keyed by the same names and ini keys."""
    values = {name: _value(one, typed.get(name), ini.get(one.ini or ""), here, root) for name, one in declared.items()}
    return {name: path for name, path in values.items() if path is not None}


_Source = tuple[Any, Path, "str | None"]   # a value as given, the folder it is relative to, where it was given


def _value(declared: Declared, typed: Any, ini: Any, here: Path, root: Path) -> Any:
    value: Any
    if declared.many:
        given: list[_Source] = [(t, here, f"{declared.flag}={t}") for t in typed or []]
        configured: list[_Source] = [(t, root, f"{declared.ini} = {t}") for t in _texts(ini, declared.ini_type)]
        if not configured and (declared.extend or not given):
            configured = [(t, root, None) for t in declared.default]
        chosen = configured + given if declared.extend or not given else given
        value = [_one(declared, text, base, source) for text, base, source in chosen]
    elif typed is not None and typed is not False:   # not `in (None, False)`: 0.0 == False
        value = _one(declared, typed, here, f"{declared.flag}={typed:g}" if isinstance(typed, float)
                     else f"{declared.flag}={typed}")
    elif ini not in (None, ""):
        value = _one(declared, ini, root, f"{declared.ini} = {ini}")
    else:
        return _default(declared, root)
    return declared.convert(value) if declared.convert else value


def _one(declared: Declared, text: Any, base: Path, source: str | None) -> Any:
    """One value: typed (argparse has applied `type`), from the ini or the default (text)."""
    try:
        value = declared.type(text) if isinstance(text, str) and declared.type is not str else text
    except ValueError:
        where = source or declared.flag or f"{declared.ini}"
        raise HarnessInputError(where, f"not a valid {declared.type.__name__}") from None
    if declared.path and value is not None:
        value = base / value
    problem = declared.check(value) if declared.check and source is not None else None
    if problem and source is not None:
        raise HarnessInputError(source, problem)
    return value


def _texts(ini: Any, ini_type: str) -> list[str]:
    """An ini value as pytest's addini type splits it (a TOML list is already split)."""
    if ini is None or ini == "":
        return []
    if isinstance(ini, (list, tuple)):
        return [str(v) for v in ini]
    if ini_type == "linelist":
        return [line.strip() for line in str(ini).splitlines() if line.strip()]
    if ini_type in ("args", "paths"):
        return shlex.split(str(ini))
    return [str(ini)]


# --------------------------------------------------------------------------- the two front ends

def add_arguments(add: Callable[..., Any], shared_only: bool = False) -> None:
    """Each declared flag, through `add` (argparse's add_argument, or a pytest option group's addoption)."""
    for name, declared in declarations(shared_only):
        if declared.flag is None:
            continue
        keywords = dict(declared.kind)
        if declared.many:
            keywords.update(action="append", default=[])
        elif declared.type is not str:
            keywords["type"] = declared.type
        add(declared.flag, dest=name, help=declared.help, **keywords)
