"""The documentation names only what exists. Every command block of the docs (```bash, ```sh,
```shell, and the `$ ` lines of ```console; docs/hooks.py, command_lines) is read command by
command: a pytest command's options must be pytest's own, its plugins' (xdist, timeout, split) or
the harness's (the declared settings and the families' options, as pytest registers them); a
`python -m harness SUB` command's subcommand and options must be in harness.cli.build_parser(); a
`python -m MODULE`, `-p MODULE` or `python SCRIPT.py` must name a module or a file that exists,
and a script's options must appear in its source; an extra in `pip install ".[EXTRA]"` must be
one of pyproject.toml's. Every `harness.x.y` name and repository path the pages mention must exist
(the same check the site's build makes), and the reference pages' vocabulary (outcomes, config and
expectation keys, case parameters) must be the code's. Nothing is run: no subprocess, no mkdocs."""
from __future__ import annotations

import argparse
import ast
import importlib.util
import re
import shlex
import tomllib
from functools import cache
from pathlib import Path

import pytest
from e2e_support import REPO
from self_test_options import add_options

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md")) + [REPO / "README.md", REPO / "benchmarks" / "RESULTS.md"]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()


def _name(page: Path) -> str:
    return page.relative_to(DOCS).as_posix() if page.is_relative_to(DOCS) else page.relative_to(REPO).as_posix()


# --------------------------------------------------------------------------- the parsers

@cache
def pytest_parser() -> argparse.ArgumentParser:
    """pytest's own argument parser with every installed plugin's options, the harness's included."""
    from _pytest.config import get_config

    config = get_config()
    config.pluginmanager.load_setuptools_entrypoints("pytest11")
    if not config.pluginmanager.has_plugin("harness.plugin"):   # a checkout that is not installed
        config.pluginmanager.import_plugin("harness.plugin")
    add_options(config._parser)   # the self-tests' own: --run-nightly
    return config._parser.optparser


@cache
def harness_parser() -> argparse.ArgumentParser:
    from harness.cli import build_parser

    return build_parser()


@cache
def extras() -> set[str]:
    return set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"])


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})


def _flag_problems(words: list[str], parser: argparse.ArgumentParser, what: str) -> tuple[list[str], list[str]]:
    """Problems with the options in `words` (unknown to `parser`), and the positional words left."""
    known = _options(parser)
    problems, positionals = [], []
    words = iter(words)
    for word in words:
        if word in ("...", "|"):
            continue
        if not word.startswith("-") or word == "-":
            positionals.append(word)
            continue
        flag = word.split("=", 1)[0]
        action = known.get(flag)
        if action is None and not flag.startswith("--") and known.get(flag[:2]) is not None:
            continue   # a short option with its value or another short option attached: -n2, -qx
        if action is None:
            problems.append(f"{what}: no option {flag}")
        elif "=" not in word and action.nargs != 0:
            for _ in range(1 if action.nargs in (None, 1, "?") else 0):
                next(words, None)
    return problems, positionals


# --------------------------------------------------------------------------- one command

PYTHON = re.compile(r"(?:^|/)python3?(?:\.\d+)?$")
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")


def _simple_commands(command: str) -> list[list[str]]:
    """The command's simple commands (split at &&, ||, ;, |), each as words; brackets of an
    optional part ([--markdown]) dropped."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands, current = [], []
    for word in lexer:
        if word in (";", "&&", "||", "|", "&"):
            commands.append(current)
            current = []
        else:
            current.append(_unbracketed(word))
    commands.append(current)
    return [[w for w in c if w] for c in commands if c]


def _unbracketed(word: str) -> str:
    """A word of a usage line's optional part as typed: `[--markdown]` -> `--markdown`."""
    if word.startswith("["):
        word = word[1:]
    return word[:-1] if word.endswith("]") and "[" not in word else word


def _module_exists(name: str) -> bool:
    if name.split(".")[0] == "harness":
        return hooks.module_file(name.split(".")) is not None
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def command_problems(command: str) -> list[str]:
    """What the command names that does not exist: options, subcommands, modules, scripts, extras."""
    problems = []
    for words in _simple_commands(command):
        while words and ASSIGNMENT.match(words[0]):          # VAR=value command
            words = words[1:]
        if not words:
            continue
        program, args = words[0], words[1:]
        if PYTHON.search(program) and args[:1] == ["-m"] and len(args) > 1:
            module, args = args[1], args[2:]
            if not _module_exists(module):
                problems.append(f"python -m {module}: no such module")
            elif module == "pytest":
                problems += _pytest_problems(args)
            elif module == "harness":
                problems += _harness_problems(args)
        elif PYTHON.search(program) and args and args[0].endswith(".py"):
            problems += _script_problems(args[0], args[1:])
        elif program.rsplit("/", 1)[-1] in ("pytest", "py.test"):
            problems += _pytest_problems(args)
        elif program.rsplit("/", 1)[-1] in ("pip", "pip3") and args[:1] == ["install"]:
            for word in args[1:]:
                found = re.search(r"\[([\w,-]+)\]", word)
                unknown = sorted(set(found.group(1).split(",")) - extras()) if found else []
                problems += [f"pip install {word}: no extra {name!r} in pyproject.toml" for name in unknown]
    return problems


def _pytest_problems(args: list[str]) -> list[str]:
    problems, _ = _flag_problems(args, pytest_parser(), "pytest")
    plugins = [args[i + 1] for i, word in enumerate(args[:-1]) if word == "-p"]
    problems += [f"pytest -p {name}: no such module" for name in plugins
                 if not name.startswith("no:") and not _module_exists(name)]
    return problems


def _harness_problems(args: list[str]) -> list[str]:
    parser, name = harness_parser(), "python -m harness"
    while True:
        subparsers = _subparsers(parser)
        if not subparsers:
            return _flag_problems(args, parser, name)[0]
        first = next((i for i, word in enumerate(args) if not word.startswith("-")), None)
        if first is None:
            return [f"{name}: no subcommand given"]
        if args[first] not in subparsers:
            return [f"{name}: no subcommand {args[first]!r} (known: {', '.join(subparsers)})"]
        problems = _flag_problems(args[:first], parser, name)[0]
        if problems:
            return problems
        parser, name, args = subparsers[args[first]], f"{name} {args[first]}", args[first + 1:]


def _script_problems(script: str, args: list[str]) -> list[str]:
    path = REPO / script
    if not path.is_file():
        return [f"python {script}: no such file in the repository"]
    source = path.read_text(encoding="utf-8")
    return [f"python {script}: its source names no option {flag}"
            for flag in (w.split("=", 1)[0] for w in args if w.startswith("--")) if flag not in source]


def _commands() -> list[tuple[str, str]]:
    return [(f"{_name(page)}:{line}", command) for page in PAGES
            for line, command in hooks.command_lines(page.read_text(encoding="utf-8"))]


# --------------------------------------------------------------------------- the tests

def test_the_docs_have_command_blocks_of_each_kind():
    commands = [command for _, command in _commands()]
    assert len(commands) > 80
    assert any(c.startswith("pytest") for c in commands)
    assert any(c.startswith("python -m harness ") for c in commands)


def test_every_command_names_options_modules_and_extras_that_exist():
    problems = [f"{where}: {problem}\n    {command}" for where, command in _commands()
                for problem in command_problems(command)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("command, problem", [
    ("pytest --bakend=eager", "pytest: no option --bakend"),
    ("pytest -m opinfo --opinfo-sample=all", "pytest: no option --opinfo-sample"),
    ("python -m pytest -p harness.plugn -n 2", "pytest -p harness.plugn: no such module"),
    ("python -m harness diff OLD.json NEW.json --markdwn", "python -m harness diff: no option --markdwn"),
    ("python -m harness check --family ENTRY", "python -m harness check: no option --family"),
    ("python -m harness history show DB --formt=json", "python -m harness history show: no option --formt"),
    ("python -m harness rundiff A.json B.json", "python -m harness: no subcommand 'rundiff'"),
    ("python -m harness.tools.cli diff A B", "python -m harness.tools.cli: no such module"),
    ("python benchmarks/overhead.py --filtr opinfo", "benchmarks/overhead.py: its source names no option --filtr"),
    ('pip install -e ".[onxx]"', "no extra 'onxx'"),
])
def test_a_wrong_name_in_a_command_is_found(command, problem):
    found = command_problems(command)
    assert any(problem in p for p in found), found


def test_right_commands_pass():
    for command in ('pytest --backend=eager,tosa -n 2 -k "conv and not slow" --opinfo-samples=all --splits 6 --group 1',
                    "python -m harness check --add-family families/mine.py:FAMILY --torch-mlir-suite=DIR",
                    "python -m harness history show DB --format=json --all",
                    'cd examples/external_project && python -m pytest -q && pip install -e ".[docs,onnx]"'):
        assert command_problems(command) == [], command


def test_command_lines_read_blocks_as_marked():
    page = ("```bash\n# a comment\npytest \\\n    --backend=eager\n```\n"
            "```console\n$ python -m harness check\nsome output --not-an-option\n```\n"
            "```text\npytest --bakend=eager\n```\n")
    assert list(hooks.command_lines(page)) == [(3, "pytest --backend=eager"), (7, "python -m harness check")]


def test_every_harness_name_and_path_the_docs_mention_exists():
    problems = [p for page in PAGES for p in hooks.reference_problems(page.read_text(encoding="utf-8"), _name(page))]
    assert not problems, "\n".join(problems)


def test_a_missing_module_name_or_path_is_found():
    text = ("`harness.tools.rundiff` and `harness.files.shown` are gone; `harness/plugin/session.py` too;\n"
            "`harness.files.display_path`, `harness.api.Family.case` and `harness/cli.py` are not.")
    problems = hooks.reference_problems(text, "page.md")
    assert [p.split(": ")[1] for p in problems] == ["harness.tools.rundiff", "harness.files.shown",
                                                   "harness/plugin/session.py"], problems


def test_every_name_the_python_blocks_import_from_the_harness_exists():
    problems = []
    for page in PAGES:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                    problems += [f"{_name(page)}: from {node.module} import {alias.name}: {problem}"
                                 for alias in node.names
                                 if (problem := hooks.dotted_problem(f"{node.module}.{alias.name}"))]
    assert not problems, "\n".join(problems)


def test_every_link_of_the_readme_reaches_a_file():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", readme)
    assert targets and not [t for t in targets if not (REPO / t).exists()]


def test_the_readme_is_one_screen_or_two_and_its_dated_tables_live_in_the_results_pages():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250, "README.md: at most 250 lines; a dated table goes to docs/results/"
    for page in sorted((DOCS / "results").glob("*.md")):
        assert f"(docs/results/{page.name})" in readme, f"README.md does not link {_name(page)}"
        text = page.read_text(encoding="utf-8")   # each table says when it was measured, and how again
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", text) and "```bash\n" in text, _name(page)


def _codes(page: str, section: str | None = None) -> set[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    if section is not None:
        text = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([\w.-]+)`", text))


def test_the_vocabulary_pages_name_every_member_the_code_has():
    from harness.outcomes import Expected, Outcome, Phase, Verdict

    for section, members in (("Outcome", Outcome), ("Phase", Phase), ("Expected", Expected), ("Verdict", Verdict)):
        table = re.findall(r"^\| `(\w+)` \|", (DOCS / "reference/outcomes.md").read_text(encoding="utf-8")
                           .split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0], re.M)
        assert table == [m.value for m in members], section


def test_the_key_tables_name_every_key_the_code_accepts():
    from harness.expectations import ENTRY_KEYS
    from harness.families.conv.params import BACKWARD_KEYS, FORWARD_KEYS
    from harness.families.model.params import PARAM_KEYS as TRANSFORMERS_KEYS
    from harness.families.module.params import PARAM_KEYS as MODULE_KEYS
    from harness.families.onnx.model_params import PARAM_KEYS as MODEL_KEYS
    from harness.families.onnx.params import PARAM_KEYS as NODE_KEYS
    from harness.families.opinfo.params import PARAM_KEYS as OPINFO_KEYS
    from harness.families.torch_mlir.params import PARAM_KEYS as SUITE_KEYS
    from harness.project_files.configs import CONFIG_KEYS

    table = re.compile(r"^\| `(\w+)` \|", re.M)
    assert set(table.findall((DOCS / "reference/configs.md").read_text(encoding="utf-8"))) == CONFIG_KEYS
    assert set(table.findall((DOCS / "reference/expectations.md").read_text(encoding="utf-8"))) == ENTRY_KEYS
    for section, keys in (("Convolution", {*BACKWARD_KEYS, *FORWARD_KEYS}), ("nn.Module", MODULE_KEYS),
                          ("OpInfo", OPINFO_KEYS), ("ONNX node tests", NODE_KEYS), ("ONNX models", MODEL_KEYS),
                          ("Transformers models", TRANSFORMERS_KEYS), ("torch-mlir's suite", SUITE_KEYS)):
        assert set(keys) <= _codes("reference/case-params.md", section), section
