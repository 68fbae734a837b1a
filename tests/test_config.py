"""Backend configs (harness.project_files.configs) and backend selection (harness.controller.runner)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from e2e_support import REPO, TINY_CASES

from harness.controller.runner import Runner
from harness.errors import HarnessInputError
from harness.families.loader import load_families
from harness.project import Project
from harness.project_files.configs import BackendConfig, Tolerance, load_configs
from harness.settings import Settings

FAMILY_TABLE = load_families([], Path(__file__).resolve().parents[1])

BUILTIN = set(load_configs([]))  # the configs the package carries, found from any project


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def error(*dirs) -> str:
    with pytest.raises(HarnessInputError) as info:
        load_configs(dirs)
    return str(info.value)


def test_repo_configs_load():
    configs = load_configs([REPO / "configs"])
    assert "eager" in configs
    eager = configs["eager"]
    assert eager.class_path == "harness.backends.eager:EagerBackend"
    assert eager.source == REPO / "configs" / "eager.yaml"
    assert "torch" in eager.requires


def test_full_config_is_parsed(tmp_path):
    path = write(tmp_path, "my-compiler", """\
        name: my-compiler
        description: one line
        class: my_package.backend:MyBackend
        timeout: 90
        requires: [my-wheel]
        tolerances:
          float32: {rtol: 1.0e-6, atol: 2.0e-6}
          float16: {rtol: 0.001, atol: 0}
        options: {level: 3, passes: [a, b]}
        """)
    config = load_configs([tmp_path])["my-compiler"]
    assert config == BackendConfig(
        name="my-compiler", description="one line", class_path="my_package.backend:MyBackend",
        options={"level": 3, "passes": ["a", "b"]},
        tolerances={"float32": Tolerance(1e-6, 2e-6), "float16": Tolerance(0.001, 0.0)},
        timeout=90.0, memory_limit_mb=None, requires=("my-wheel",), source=path, install='pip install -e "."')
    assert config.to_json() == {"name": "my-compiler", "class": "my_package.backend:MyBackend",
                                "options": {"level": 3, "passes": ["a", "b"]},
                                "tolerances": {"float32": {"rtol": 1e-6, "atol": 2e-6},
                                               "float16": {"rtol": 0.001, "atol": 0.0}}, "lowering": {}}


def test_minimal_config_defaults(tmp_path):
    write(tmp_path, "m", "name: m\nclass: a.b:C\n")
    config = load_configs([tmp_path])["m"]
    assert (config.description, config.options, config.tolerances, config.timeout, config.requires) == \
        ("", {}, {}, None, ())


def test_only_yaml_files_are_configs(tmp_path):
    write(tmp_path, "m", "name: m\nclass: a.b:C\n")
    (tmp_path / "notes.txt").write_text("name: x\n")
    (tmp_path / "old.yml").write_text("name: old\nclass: a:B\n")
    assert set(load_configs([tmp_path])) - BUILTIN == {"m"}


@pytest.mark.parametrize("text, problem", [
    ("name: other\nclass: a.b:C\n", "name 'other' differs from the file name; rename the file to other.yaml"),
    ("name: bad\nclass: a.b.C\n", "class 'a.b.C' is not of the form 'module:Class'"),
    ("name: bad\nclass: [a, b]\n", "is not of the form 'module:Class'"),
    ("name: bad\n", "missing required key 'class'"),
    ("class: a:B\n", "missing required key 'name'"),
    ("name: bad\nclass: a:B\ntimeout: 0\n", "timeout must be a positive, finite number"),
    ("name: bad\nclass: a:B\ntimeout: -5\n", "timeout must be a positive, finite number of seconds, not -5"),
    ("name: bad\nclass: a:B\ntimeout: soon\n", "timeout must be a positive, finite number of seconds, not 'soon'"),
    ("name: bad\nclass: a:B\noptions: [1, 2]\n", "'options' must be a mapping"),
    ("name: bad\nclass: a:B\ntolerances: {int8: {rtol: 0, atol: 0}}\n", "tolerance for unknown dtype 'int8'"),
    ("name: bad\nclass: a:B\ntolerances: {float32: 0.1}\n", "tolerances.float32 must be a mapping"),
    ("name: bad\nclass: a:B\ntolerances: {float32: {rtol: 0.1}}\n", "missing required key 'atol'"),
    ("name: bad\nclass: a:B\ntolerances: {float32: {rtol: -1.0, atol: 0}}\n",
     "tolerances.float32.rtol must be a non-negative, finite number"),
    ("- name: bad\n", "a backend config must be a mapping"),
    ("name: bad\nclass: a:B\nlowering: [aten.add]\n", "'lowering' must be a mapping"),
    ("name: bad\nclass: a:B\nlowering:\n  convolution_backward: kept\n",
     ":4: lowering: 'convolution_backward' is not an op name; name it as records do"),
    ("name: bad\nclass: a:B\nlowering:\n  aten.add: [kept]\n", ":4: lowering.aten.add must be one word"),
])
def test_bad_config(tmp_path, text, problem):
    path = write(tmp_path, "bad", text)
    message = error(tmp_path)
    assert message.startswith(str(path)), message
    assert problem in message, message


def test_exponent_without_a_dot_is_a_number(tmp_path):
    write(tmp_path, "m", "name: m\nclass: a:B\ntolerances: {float32: {rtol: 1e-6, atol: 1e-6}}\n")
    assert load_configs([tmp_path])["m"].tolerances["float32"] == Tolerance(1e-6, 1e-6)


def test_unknown_key_names_line(tmp_path):
    path = write(tmp_path, "bad", "name: bad\nclass: a:B\ntimout: 3\n")
    message = error(tmp_path)
    assert message.startswith(f"{path}:3: unknown key 'timout'; did you mean 'timeout'? allowed keys are ")
    assert ("allowed keys are class, description, extends, extras, install, lowering, memory_limit_mb, name, "
            "options, programs, requires, timeout, tolerances") in message


def test_an_unknown_key_is_reported_at_its_own_line_at_every_level(tmp_path):
    path = write(tmp_path, "bad", "name: bad\nclass: a:B\ntolerances:\n  float32:\n    rtol: 1\n    atl: 2\n")
    assert error(tmp_path) == f"{path}:6: unknown key 'atl'; did you mean 'atol'? allowed keys are atol, rtol"
    write(tmp_path, "bad", "name: bad\nclass: a:B\nzzz: 1\ntolerances: {float32: {rtol: 1, atol: 1}}\n")
    assert error(tmp_path).startswith(f"{path}:3: unknown key 'zzz'; allowed keys are class, ")   # no close match


def test_options_and_class_are_placed_where_they_are_written_through_extends(tmp_path):
    base = write(tmp_path, "base", "name: base\nclass: a:B\noptions:\n  level: 1\n  mode: x\n")
    mine = write(tmp_path, "mine", "name: mine\nextends: base\noptions:\n\n  level: 2\n")
    config = load_configs([tmp_path])["mine"]
    assert config.options == {"level": 2, "mode": "x"}
    assert (config.place("class"), config.place("options.level"), config.place("options.mode")) == (
        f"{base}:2", f"{mine}:5", f"{base}:5")


def test_a_class_problem_is_one_line_at_the_line_of_the_class_or_the_option(tmp_path):
    from harness.project_files.configs import backend_problem

    path = write(tmp_path, "mine", "name: mine\nclass: a:B\noptions:\n  levl: 1\n  other: 2\n")
    config = load_configs([tmp_path])["mine"]
    unknown = {"stage": "options", "unknown": ["other", "levl"], "accepted": ["level"]}
    assert str(backend_problem(config, unknown)) == (
        f"{path}:4: unknown option 'levl' of a:B; did you mean 'level'? it takes level")   # the first in the file
    missing = {"stage": "import", "error": "ModuleNotFoundError: No module named 'a'"}
    assert str(backend_problem(config, missing)) == (
        f"{path}:2: class a:B does not import (ModuleNotFoundError: No module named 'a'); fix the class, or install "
        "the package that has it")


def test_the_worker_side_check_reads_the_classes_options(tmp_path, monkeypatch):
    from harness.worker.backend_check import backend_problem

    (tmp_path / "declared.py").write_text(
        "from harness.backend_interface import Backend\n"
        "class Declared(Backend):\n    OPTIONS = {'level': 'how much'}\n"
        "class Old(Backend):\n    pass\n"
        "class Refuses(Backend):\n    def __init__(self, name, options):\n        raise ValueError('no level')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert backend_problem({"name": "x", "class": "declared:Declared", "options": {"level": 1}}) is None
    assert backend_problem({"name": "x", "class": "declared:Declared", "options": {"lvl": 1}}) == {
        "stage": "options", "unknown": ["lvl"], "accepted": ["level"]}
    assert backend_problem({"name": "x", "class": "declared:Old", "options": {"anything": 1}}) is None
    assert backend_problem({"name": "x", "class": "declared:Refuses"}) == {"stage": "create",
                                                                           "error": "ValueError: no level"}
    assert backend_problem({"name": "x", "class": "declared:Nope"})["stage"] == "import"


def test_every_builtin_backend_declares_the_options_its_configs_set():
    """The classes' OPTIONS read without importing them (they import torch): each config's options,
    its own and inherited, are among the keys the class's module declares."""
    import ast

    for config in load_configs([]).values():
        module, _, name = config.class_path.partition(":")
        tree = ast.parse((REPO / (module.replace(".", "/") + ".py")).read_text())
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
        declared = next(ast.literal_eval(n.value) for n in cls.body
                        for target in (n.targets if isinstance(n, ast.Assign) else [getattr(n, "target", None)])
                        if isinstance(target, ast.Name) and target.id == "OPTIONS")
        assert set(config.options) <= set(declared), config.name


def test_malformed_yaml_names_line(tmp_path):
    path = write(tmp_path, "bad", "name: bad\nclass: a:B\noptions: {a: [1, 2}\n")
    message = error(tmp_path)
    assert message.startswith(f"{path}:3: malformed YAML"), message


def test_a_bad_config_breaks_loading_even_when_not_selected(tmp_path):
    write(tmp_path, "good", "name: good\nclass: a:B\n")
    write(tmp_path, "zbad", "name: wrong\nclass: a:B\n")
    assert "differs from the file name" in error(tmp_path)


def test_later_directory_may_not_redefine_a_name(tmp_path):
    first = write(tmp_path / "one", "eager", "name: eager\nclass: a:B\n")
    second = write(tmp_path / "two", "eager", "name: eager\nclass: c:D\n")
    assert error(tmp_path / "one", tmp_path / "two") == \
        f"{second}: backend 'eager' is already defined in {first}; rename one of them"


@pytest.mark.parametrize("value", [".nan", ".inf"])
def test_non_finite_timeout_is_rejected(tmp_path, value):
    write(tmp_path, "bad", f"name: bad\nclass: a:B\ntimeout: {value}\n")
    assert "timeout" in error(tmp_path)


# ------------------------------------------------------------------------------------- selection

def settings(root: Path, backends: list[str], **kw) -> Settings:
    (root / "cases").mkdir(exist_ok=True)
    (root / "cases" / "tiny.py").write_text(TINY_CASES)
    return Settings(rootdir=root, backends=backends, cases_dirs=[root / "cases"],
                    configs_dirs=[root / "configs"], xfail_dir=root / "xfail",
                    crash_sets_dir=root / "crash_sets", cases_files=[], run_crash_set=False,
                    case_timeout=kw.pop("case_timeout", None), **kw)


def test_unknown_backend_lists_the_known_ones(tmp_path):
    write(tmp_path / "configs", "alpha", "name: alpha\nclass: a:B\n")
    write(tmp_path / "configs", "beta", "name: beta\nclass: a:B\n")
    with pytest.raises(HarnessInputError) as info:
        Runner(Project(settings(tmp_path, ["alpha", "gamma"])))
    known = ", ".join(sorted(BUILTIN | {"alpha", "beta"}))
    assert str(info.value) == (f"--backend=gamma: unknown backend (known: {known}); "
                               "add configs/<name>.yaml or pass --configs-dir=DIR")


def test_backend_requiring_a_missing_distribution(tmp_path):
    write(tmp_path / "configs", "needy", "name: needy\nclass: a:B\nrequires: [no-such-dist-e2e-test]\n"
                                         "install: pip install -e '.[needy]'\n")
    write(tmp_path / "configs", "fine", "name: fine\nclass: a:B\n")
    with pytest.raises(HarnessInputError) as info:
        Runner(Project(settings(tmp_path, ["needy"])))
    assert str(info.value) == ("--backend=needy: needs the package 'no-such-dist-e2e-test', which is not "
                               "installed; install it with: pip install -e '.[needy]'")
    # Not selected: no problem.
    runner = Runner(Project(settings(tmp_path, ["fine"])))
    assert list(runner.configs) == ["fine"]


def test_selected_backends_keep_their_order(tmp_path):
    for name in ("a", "b", "c"):
        write(tmp_path / "configs", name, f"name: {name}\nclass: x:Y\n")
    assert list(Runner(Project(settings(tmp_path, ["c", "a"]))).configs) == ["c", "a"]


def test_extends_inherits_and_overrides(tmp_path):
    write(tmp_path, "base", "name: base\nclass: m:C\ntimeout: 30\nrequires: [torch]\n"
                            "tolerances: {float32: {rtol: 1.0e-6, atol: 1.0e-6}}\noptions: {a: 1, b: [x]}\n")
    write(tmp_path, "child", "name: child\nextends: base\noptions: {b: [y], c: 3}\n"
                             "tolerances: {float16: {rtol: 1.0e-3, atol: 1.0e-3}}\n")
    child = load_configs([tmp_path])["child"]
    assert (child.class_path, child.timeout, child.requires) == ("m:C", 30.0, ("torch",))
    assert child.options == {"a": 1, "b": ["y"], "c": 3}
    assert set(child.tolerances) == {"float32", "float16"}


def test_a_replacement_extends_the_built_in_it_replaces(tmp_path):
    """A project's `linalg-on-tensors` that extends `linalg-on-tensors`: the built-in one with its
    changes (a build's options under the built-in's name, to compare its reports case by case)."""
    write(tmp_path, "linalg-on-tensors", "name: linalg-on-tensors\nextends: linalg-on-tensors\n"
                                         "options: {backend_legal_ops: [aten.convolution_backward]}\n")
    builtin, replaced = load_configs([])["linalg-on-tensors"], load_configs([tmp_path])["linalg-on-tensors"]
    assert replaced.options == {**builtin.options, "backend_legal_ops": ["aten.convolution_backward"]}
    assert (replaced.class_path, replaced.tolerances) == (builtin.class_path, builtin.tolerances)
    assert not any("built-in" in name for name in load_configs([tmp_path]))


@pytest.mark.parametrize("child, problem", [
    ("name: child\nextends: nobody\n", "extends unknown backend 'nobody'"),
    ("name: child\nextends: child\nclass: m:C\n", "extends 'child', which extends it back"),
])
def test_bad_extends(tmp_path, child, problem):
    write(tmp_path, "base", "name: base\nclass: m:C\n")
    write(tmp_path, "child", child)
    with pytest.raises(HarnessInputError, match=problem):
        load_configs([tmp_path])
