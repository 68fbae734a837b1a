"""harness.settings and harness.project: every setting declared once, resolved the same way from a
pytest Config and from a tool's command line plus the project's ini; every entry point sees the
same case universe."""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import textwrap

import pytest
from e2e_support import REPO, python_path_env

from harness.errors import HarnessInputError
from harness.project import settings_from_args, tool_arguments
from harness.project_files.ini import find_ini
from harness.settings import Settings, declarations, resolve

# ------------------------------------------------------------------------------------- resolution


def test_the_command_line_beats_the_ini_which_beats_the_default(tmp_path):
    root = tmp_path / "root"
    (tmp_path / "mine").mkdir()
    (root / "x").mkdir(parents=True)
    assert resolve({}, {}, tmp_path, root).xfail_dir == root / "xfail"
    assert resolve({}, {"e2e_xfail_dir": "x"}, tmp_path, root).xfail_dir == root / "x"   # ini: from the rootdir
    typed = resolve({"xfail_dir": "mine"}, {"e2e_xfail_dir": "x"}, tmp_path, root)
    assert typed.xfail_dir == tmp_path / "mine"                                       # typed: from where it ran


def test_configs_dirs_extend_the_ini_and_cases_dirs_replace_it(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
    ini = {"e2e_configs_dirs": "a b", "e2e_cases_dirs": "a b"}
    settings = resolve({"configs_dirs": ["c"], "cases_dirs": ["c"]}, ini, tmp_path, tmp_path)
    assert settings.configs_dirs == [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    assert settings.cases_dirs == [tmp_path / "c"]
    assert resolve({}, {}, tmp_path, tmp_path).cases_dirs == [tmp_path / "cases"]


def test_converted_values(tmp_path):
    settings = resolve({"backends": ["eager,tosa", "eager"], "assumed_versions": ["torch-mlir=20261001"]},
                       {}, tmp_path, tmp_path)
    assert settings.backends == ["eager", "tosa"]
    assert settings.assumed_versions == {"torch-mlir": "20261001"}
    assert resolve({}, {"e2e_backends": "tosa stablehlo"}, tmp_path, tmp_path).backends == ["tosa", "stablehlo"]
    assert settings.recycle_rss == settings.memory_limit_mb / 2   # the documented default


@pytest.mark.parametrize(("typed", "ini", "line"), [
    ({"case_timeout": 0.0}, {}, "--case-timeout=0: must be a positive, finite number of seconds"),
    ({"xfail_dir": "nope"}, {}, "--xfail-dir=nope: no such directory"),
    ({}, {"e2e_configs_dirs": "gone"}, "e2e_configs_dirs = gone: no such directory"),
    ({"assumed_versions": ["torch-mlir"]}, {}, "--assume-version=torch-mlir: not NAME=VERSION"),
])
def test_a_bad_value_is_one_line_naming_where_it_came_from(tmp_path, typed, ini, line):
    with pytest.raises(HarnessInputError) as error:
        resolve(typed, ini, tmp_path, tmp_path)
    assert str(error.value).startswith(line)


def test_every_setting_is_declared_once_with_help():
    flags = [d.flag for _, d in declarations() if d.flag]
    inis = [d.ini for _, d in declarations() if d.ini]
    assert len(flags) == len(set(flags)) and len(inis) == len(set(inis))
    assert all(d.help for _, d in declarations())
    shared = {d.flag for _, d in declarations(shared_only=True)}
    assert {"--configs-dir", "--cases-dir", "--case-timeout"} <= shared


def test_no_module_declares_a_shared_flag_again():
    """The shared settings are declared in harness/settings.py alone: pytest and the tools take them from there."""
    flags = [d.flag for _, d in declarations(shared_only=True)]
    again = [f"{path.relative_to(REPO)}: {flag}" for path in (REPO / "harness").rglob("*.py")
             if path.name != "settings.py" for flag in flags if f'"{flag}"' in path.read_text()]
    assert not again, again


def test_tools_take_the_shared_settings_as_pytest_does(tmp_path):
    args = argparse.ArgumentParser(parents=[tool_arguments()]).parse_args(["--case-timeout=5"])
    settings = settings_from_args(args, tmp_path)
    assert settings.case_timeout == 5.0 and settings.rootdir == tmp_path
    assert settings.family_options   # the families' options, at their defaults
    assert Settings().memory_limit_mb == 8192.0


# ------------------------------------------------------------------------------------- the ini


@pytest.mark.parametrize(("name", "text"), [
    ("pytest.ini", "[pytest]\ne2e_xfail_dir = x\n"),
    ("pyproject.toml", "[tool.pytest.ini_options]\ne2e_xfail_dir = \"x\"\n"),
    ("pyproject.toml", "[tool.pytest]\ne2e_xfail_dir = \"x\"\n"),
    ("tox.ini", "[pytest]\ne2e_xfail_dir = x\n"),
    ("setup.cfg", "[tool:pytest]\ne2e_xfail_dir = x\n"),
])
def test_the_ini_is_found_as_pytest_finds_it(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    assert find_ini(below) == (tmp_path, {"e2e_xfail_dir": "x"})


def test_a_file_without_a_pytest_section_is_passed_over(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "setup.cfg").write_text("[metadata]\nname = x\n")
    assert find_ini(tmp_path / "sub") == (tmp_path, {})


# ------------------------------------------------------------------------------------- one universe

PROBE_CASES = """\
    from harness.families.conv import conv_backward_case


    def cases(options):
        # one case per dtype the ini's e2e_dtypes names: a universe only the ini can give
        return [conv_backward_case(f"probe_{dtype}", input_shape=[1, 1, 4], weight_shape=[1, 1, 2], dtype=dtype)
                for dtype in options["dtypes"]]
"""


@pytest.mark.e2e
def test_every_entry_point_sees_the_ini_case_universe(tmp_path):
    """e2e_cases_dirs and e2e_dtypes in the ini: pytest collects the case, `check` counts it,
    `reduce` and `bisect` find it (reduce runs it: it passes, the xfail entry aside; bisect stops at
    its missing --package: after finding the case)."""
    case = "conv_backward/1d/probe_float64"
    (tmp_path / "pytest.ini").write_text("[pytest]\ne2e_cases_dirs = mycases\ne2e_dtypes = float64\n"
                                         "e2e_backends = eager\n")
    (tmp_path / "mycases").mkdir()
    (tmp_path / "mycases" / "probe.py").write_text(textwrap.dedent(PROBE_CASES))
    (tmp_path / "xfail").mkdir()
    (tmp_path / "crash_sets").mkdir()
    (tmp_path / "xfail" / "eager.yaml").write_text(f"- id: {case}\n  reason: an id only the ini's universe holds\n")
    work = tmp_path / "mycases"   # every tool finds the ini from below the rootdir, as pytest does

    def run(*args: str) -> subprocess.CompletedProcess:
        env = {"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"}
        return subprocess.run([sys.executable, *args], cwd=work, capture_output=True, text=True, env=env,
                              timeout=300)

    collected = run("-m", "pytest", "-p", "harness.plugin", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    ids = re.findall(r"::(\S+)\[eager\]", collected.stdout)
    assert case in ids, collected.stdout
    checked = run("-m", "harness", "check")   # an entry naming a case it does not know is an error
    assert checked.returncode == 0 and checked.stdout.startswith("ok:"), checked.stderr
    reduced = run("-m", "harness", "reduce", case, "--backend=eager", "--out", str(tmp_path / "out"))
    assert reduced.returncode == 0 and f"{case} passes on eager" in reduced.stdout, reduced.stderr
    bisected = run("-m", "harness", "bisect", case, "--backend=eager")
    assert bisected.returncode == 2 and "needs --package DIST --good V --bad V" in bisected.stderr, bisected.stderr


@pytest.mark.e2e
def test_check_loads_the_whole_project_without_torch():
    code = ("import sys; from harness.cli import main; code = main(['check']); "
            "print(code, sorted(m for m in ('torch', 'numpy', 'onnx') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": python_path_env(), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stdout + done.stderr
