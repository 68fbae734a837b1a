"""The documentation site's generator and guard: an mkdocs hook (mkdocs.yml `hooks:`).

Generated, at every build, from the code itself, so that no page can drift from it: a page holds a
line `<!-- generated: NAME -->` and the hook puts in its place

    pytest-options   every setting of harness.settings.Settings (flag, ini key, default, help)
    family-options   the options the installed families declare (harness.families.loader)
    tool-commands    every subcommand of `python -m harness` (harness.cli.build_parser), the
                     families' own included, with its arguments
    api              harness.api: each public name with its signature, fields and docstring
    modules          every module of the package with the first paragraph of its docstring

Guarded, page by page, before anything is generated: every dotted name `harness.x.y` must be a
module of the package, or a name such a module defines, and every repository path
(`harness/x/y.py`, `tests/...`, `benchmarks/...`, `.ci/...`) must exist; anything else fails the
build with the page and line. mkdocs.yml's strict mode and `validation:` fail it on a broken link
or anchor. tests/test_docs.py uses the same functions (it needs no mkdocs) and checks the command
blocks: every ```bash, ```sh or ```console block (in a console block, the lines after `$ `) is a
command block, and each pytest or `python -m harness` command in it must name options that exist.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import enum
import inspect
import re
from pathlib import Path
from typing import Any, Callable, Iterator

REPO = Path(__file__).resolve().parents[1]

GENERATED = re.compile(r"^<!-- generated: ([\w-]+) -->$", re.M)
# A dotted name of the package: `harness.cli`, `harness.outcomes.decide`, `harness.api.Family.case`.
DOTTED = re.compile(r"(?<![\w./-])harness(?:\.[A-Za-z_]\w*)+")
# A path in the repository. cases/, configs/, xfail/ and crash_sets/ are left out: the docs name
# those folders' files in a user's project as often as in this one.
REPO_PATH = re.compile(r"(?<![\w./$~-])((?:harness|tests|benchmarks|examples|tools|\.ci|\.github)/[\w./-]*)")
# The pages whose example paths are those of a user's project: only harness/ paths are checked there.
EXAMPLE_PATH_PAGES = {"reference/bad-input.md"}
FENCE = re.compile(r"^(`{3,})([\w-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}


# --------------------------------------------------------------------------- references

def module_file(parts: list[str]) -> Path | None:
    """The file of the module `.`.join(parts) in the repository, or None."""
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _bindings(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """The names a module or class body binds, each to the statement that binds it."""
    found: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found[name.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.If, ast.Try)):
            found.update(_bindings(node.body))
    return found


def _lookup(path: Path, names: list[str], module: list[str]) -> str | None:
    """None when `names` is defined in the module at `path`, else what is missing."""
    bindings = _bindings(ast.parse(path.read_text(encoding="utf-8")).body)
    node = bindings.get(names[0])
    if node is None:
        submodule = module_file(module + names[:1])   # a package's submodule, imported or not
        if submodule is not None:
            return _lookup(submodule, names[1:], module + names[:1]) if names[1:] else None
        return f"{'.'.join(module)} defines no {names[0]!r}"
    if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness") and not node.level:
        original = next(a.name for a in node.names if (a.asname or a.name) == names[0])
        source = node.module.split(".")
        target = module_file(source + [original])
        if target is not None:   # `from harness import reports`: a module
            return _lookup(target, names[1:], source + [original]) if names[1:] else None
        return _lookup(module_file(source), [original, *names[1:]], source)
    if len(names) > 1 and isinstance(node, ast.ClassDef):
        if names[1] not in _bindings(node.body):
            return f"{'.'.join(module)}.{names[0]} has no {names[1]!r}"
    return None


def dotted_problem(name: str) -> str | None:
    """None when the dotted name is a module of the repository or a name one defines."""
    parts = name.split(".")
    for split in range(len(parts), 0, -1):
        path = module_file(parts[:split])
        if path is not None:
            return _lookup(path, parts[split:], parts[:split]) if parts[split:] else None
    return "no such module"


def reference_problems(markdown: str, page: str) -> list[str]:
    """Every dotted name of the package and every repository path the page names that does not
    exist, as 'page:line: problem'."""
    problems = []
    for number, line in enumerate(markdown.splitlines(), 1):
        for name in dict.fromkeys(DOTTED.findall(line)):
            problem = dotted_problem(name)
            if problem:
                problems.append(f"{page}:{number}: {name}: {problem}")
        for path in dict.fromkeys(REPO_PATH.findall(line)):
            if page in EXAMPLE_PATH_PAGES and not path.startswith("harness/"):
                continue
            if not (REPO / path.rstrip(".")).exists():
                problems.append(f"{page}:{number}: {path}: no such file or folder in the repository")
    return problems


# --------------------------------------------------------------------------- command blocks

def command_lines(markdown: str) -> Iterator[tuple[int, str]]:
    """(line number, command) of every command in the page's command blocks: ```bash, ```sh,
    ```shell and ```console blocks; in a console block only the lines after a `$ ` prompt.
    Comment lines go; a line ending in a backslash goes on with the next."""
    for block in FENCE.finditer(markdown):
        if block.group(2) not in COMMAND_LANGUAGES:
            continue
        first = markdown.count("\n", 0, block.start(3)) + 1
        console = block.group(2) == "console"
        pending, start, continuing = "", 0, False
        for offset, line in enumerate(block.group(3).splitlines()):
            if continuing:
                text = line.strip()
            elif console:
                if not line.startswith("$ "):
                    continue
                text, start = line[2:].strip(), first + offset
            else:
                text, start = line.strip(), first + offset
                if not text or text.startswith("#"):
                    continue
            continuing = text.endswith("\\")
            pending += " " + text.rstrip("\\").strip()
            if not continuing:
                yield start, pending.strip()
                pending = ""


# --------------------------------------------------------------------------- generated pages

def _text(text: Any, pipes: bool = False) -> str:
    """Docstring or help text as Markdown: outside code spans, `<` escaped (`xfail/<backend>.yaml`
    is no HTML tag) and, for a table cell, `|` too; a code span is kept as written."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:   # an unclosed code span: escape it all
        parts = ["\\`".join(parts)]

    def escaped(part: str) -> str:
        part = part.replace("<", "&lt;")
        return part.replace("|", "\\|") if pipes else part

    return "`".join(part if i % 2 else escaped(part) for i, part in enumerate(parts))


def _cell(text: Any) -> str:
    """Text for a table cell: one line, escaped as `_text` escapes it."""
    return _text(str(text).replace("\n", " "), pipes=True)


def _default(value: Any) -> str:
    if value in (None, [], (), ""):
        return "none"
    if value is False:
        return "off"
    if isinstance(value, (list, tuple)):
        return ", ".join(f"`{v}`" for v in value)
    return f"`{value}`"


def pytest_options() -> str:
    from harness.settings import declarations

    rows = ["| option | ini key | default | what it does |", "| --- | --- | --- | --- |"]
    for _, declared in declarations():
        if declared.flag is None:
            flag = "`-n N` (pytest-xdist), when not given"
        else:
            metavar = declared.kind.get("metavar") or (
                "|".join(declared.kind["choices"]) if "choices" in declared.kind else None)
            flag = f"`{declared.flag}={metavar}`" if metavar and declared.kind.get("action") is None else \
                f"`{declared.flag}`"
        notes = [declared.help]
        if declared.many:
            notes.append("repeatable" + (": adds to the ini's" if declared.extend and declared.ini else ""))
        if declared.shared:
            notes.append("also taken by the `python -m harness` tools that load the project")
        ini = f"`{declared.ini}`" if declared.ini else ""
        rows.append(f"| {_cell(flag)} | {ini} | {_cell(_default(declared.default))} | {_cell('; '.join(notes))} |")
    return "\n".join(rows)


def family_options() -> str:
    from harness.families.loader import declared_options, entry_point_families

    families = entry_point_families()
    rows = ["| option | ini key | default | family | what it does |", "| --- | --- | --- | --- | --- |"]
    for option in declared_options(families):
        owners = ", ".join(f"`{f.name}`" for f in families.values() if option in f.options)
        rows.append(f"| `--{option.name}={option.metavar}` | `{option.ini}` | {_cell(_default(option.default))} "
                    f"| {owners} | {_cell(option.help)} |")
    return "\n".join(rows)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _subcommand_help(parser: argparse.ArgumentParser) -> dict[str, str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {choice.dest: choice.help or "" for choice in action._choices_actions}
    return {}


def _argument(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest
        return f"`{name} ...`" if action.nargs in ("+", "*") else f"`{name}`"
    flags = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{flags}`"
    metavar = action.metavar or ("{" + ",".join(action.choices) + "}" if action.choices else action.dest.upper())
    return f"`{flags} {metavar}{' ...' if action.nargs in ('+', '*') else ''}`"


def _arguments_table(parser: argparse.ArgumentParser, leave_out: set[str]) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.dest in leave_out:
            continue
        default = "" if action.default in (None, False, argparse.SUPPRESS) or action.required else \
            _default(action.default)
        if action.required and action.option_strings:
            default = "required"
        rows.append(f"| {_argument(action)} | {_cell(default)} | {_cell(action.help or '')} |")
    return ["| argument | default | what it is |", "| --- | --- | --- |", *rows] if rows else []


def tool_commands() -> str:
    from harness.cli import build_parser
    from harness.families.loader import declared_options, entry_point_families
    from harness.settings import declarations

    project = {name for name, _ in declarations(shared_only=True)}
    project |= {option.dest for option in declared_options(entry_point_families())}
    parser = build_parser()
    lines: list[str] = []

    def describe(name: str, sub: argparse.ArgumentParser, summary: str, depth: int) -> None:
        takes_project = any(action.dest in project for action in sub._actions)
        lines.extend([f"{'#' * depth} `python -m harness {name}`", "", _cell(summary), ""])
        usage = sub.format_usage().strip().removeprefix("usage: ").splitlines()
        usage = usage[:1] + [line.removeprefix(" " * len("usage: ")) for line in usage[1:]]
        lines.extend(["```text", *usage, "```", ""])
        table = _arguments_table(sub, project)
        lines.extend(table + ([""] if table else []))
        if takes_project:
            lines.extend(["It takes the [project options](#project-options) too.", ""])
        helps = _subcommand_help(sub)
        for child, child_parser in _subparsers(sub).items():
            describe(f"{name} {child}", child_parser, helps.get(child, ""), depth + 1)

    helps = _subcommand_help(parser)
    for name, sub in _subparsers(parser).items():
        describe(name, sub, helps.get(name, ""), 3)
    return "\n".join(lines)


def project_options() -> str:
    """The options every tool that loads the project takes: the shared settings and the families'."""
    from harness.families.loader import declared_options, entry_point_families
    from harness.settings import declarations

    rows = ["| option | ini key | what it does |", "| --- | --- | --- |"]
    for _, declared in declarations(shared_only=True):
        rows.append(f"| `{declared.flag}={declared.kind.get('metavar', 'VALUE')}` | "
                    f"{'`' + declared.ini + '`' if declared.ini else ''} | {_cell(declared.help)} |")
    for option in declared_options(entry_point_families()):
        rows.append(f"| `--{option.name}={option.metavar}` | `{option.ini}` | {_cell(option.help)} |")
    return "\n".join(rows)


def docstring_markdown(doc: str | None) -> str:
    """A docstring of this package as Markdown: `* ` bullets stay, a two-space-indented line that
    opens with a code span (a field's description) becomes a list item and its deeper lines its
    continuation, and a short unindented title over an indented block becomes bold."""
    lines = inspect.cleandoc(doc or "").splitlines()
    out: list[str] = []
    in_star_bullet = False   # inside a `* ` item, whose continuation lines are indented by two
    in_code = False          # an indented block after a blank line: Markdown's code block
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        in_code = bool(line.strip()) and indent >= 4 and (in_code or i == 0 or not lines[i - 1].strip()) \
            or (not line.strip() and in_code)
        if not in_code:
            line = _text(line)
        stripped = line.strip()
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if indent == 0:
            in_star_bullet = stripped.startswith("* ")
        if (indent == 0 and stripped and len(stripped) < 80 and not stripped.endswith((".", ":", ","))
                and following.startswith("  ") and not following.startswith("    ")
                and (not out or not out[-1].strip())):
            out.extend([f"**{stripped}**", ""])
        elif indent == 2 and stripped.startswith("`") and not in_star_bullet:
            out.append(f"- {stripped}")
        elif indent > 2 and out and out[-1].startswith(("- ", "  ")) and not (i and not lines[i - 1].strip()):
            out.append(f"  {stripped}")
        else:
            out.append(line)
    return "\n".join(out)


class _Annotation(str):
    """An annotation kept as text (the package uses postponed annotations): shown without quotes."""

    def __repr__(self) -> str:
        return str(self).strip("'\"")   # a forward reference written as a string: 'Golden'



def _signature(obj: Any, name: str) -> str:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return name

    def bare(annotation: Any) -> Any:
        return _Annotation(annotation) if isinstance(annotation, str) else annotation

    signature = signature.replace(
        parameters=[p.replace(annotation=bare(p.annotation)) for p in signature.parameters.values()],
        return_annotation=bare(signature.return_annotation))
    return f"{name}{signature}"


def _fields_table(cls: type) -> list[str]:
    rows = ["| field | type | default |", "| --- | --- | --- |"]
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            default = f"`{field.default!r}`" if not callable(field.default) else f"`{field.default.__name__}`"
        elif field.default_factory is not dataclasses.MISSING:
            default = f"`{field.default_factory()!r}`"
        else:
            default = "required"
        kind = field.type if isinstance(field.type, str) else getattr(field.type, "__name__", str(field.type))
        rows.append(f"| `{field.name}` | `{_cell(kind)}` | {_cell(default)} |")
    return rows


def _methods(cls: type) -> Iterator[tuple[str, Any]]:
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    for name, member in vars(cls).items():
        if name.startswith("_") or name in fields:   # a field's default function is no method
            continue
        if isinstance(member, (classmethod, staticmethod)):
            yield name, getattr(cls, name)
        elif isinstance(member, property):
            yield name, member
        elif inspect.isfunction(member):
            yield name, member


def api() -> str:
    import harness.api

    lines = [docstring_markdown(harness.api.__doc__), ""]
    for name in sorted(harness.api.__all__, key=str.lower):
        obj = getattr(harness.api, name)
        lines.extend([f"### `{name}`", ""])
        if inspect.isclass(obj) and issubclass(obj, enum.Enum):
            lines.extend([f"`{obj.__module__}.{obj.__qualname__}`, an enumeration: "
                          + ", ".join(f"`{m.value}`" for m in obj) + ".", "", docstring_markdown(obj.__doc__), ""])
        elif inspect.isclass(obj):
            shown = name if dataclasses.is_dataclass(obj) else _signature(obj, name)   # fields: the table below
            lines.extend([f"```python\nclass {shown}\n```", "", f"Defined in `{obj.__module__}`.", ""])
            if obj.__doc__ and not obj.__doc__.startswith(f"{name}("):   # not the dataclass's generated one
                lines.extend([docstring_markdown(obj.__doc__), ""])
            if dataclasses.is_dataclass(obj):
                lines.extend([*_fields_table(obj), ""])
            for method_name, method in _methods(obj):
                title = f"{name}.{method_name}" if isinstance(method, property) else \
                    _signature(method, f"{name}.{method_name}")
                lines.extend([f"#### `{title}`", "", docstring_markdown(method.__doc__) or "(no docstring)", ""])
        elif callable(obj):
            lines.extend([f"```python\n{_signature(obj, name)}\n```", "", f"Defined in `{obj.__module__}`.", "",
                          docstring_markdown(obj.__doc__), ""])
        else:
            lines.extend([f"`{name} = {obj!r}`", ""])
    return "\n".join(lines)


def modules() -> str:
    """Every module of the package, folder by folder, with the first paragraph of its docstring."""
    lines: list[str] = []
    root = REPO / "harness"
    folders = sorted({p.parent for p in root.rglob("*.py") if "__pycache__" not in p.parts})
    for folder in folders:
        relative = folder.relative_to(REPO).as_posix()
        lines.extend([f"### `{relative}/`", ""])
        for path in sorted(folder.glob("*.py")):
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
            first = " ".join(doc.strip().split("\n\n")[0].split())
            if first or path.name != "__init__.py":
                lines.append(f"- `{path.name}`: {_text(first) or '(no docstring)'}")
        lines.append("")
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {
    "pytest-options": pytest_options, "family-options": family_options, "project-options": project_options,
    "tool-commands": tool_commands, "api": api, "modules": modules,
}


# --------------------------------------------------------------------------- the hook

def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Check the page as written, then fill in its generated parts."""
    from mkdocs.exceptions import PluginError

    problems = reference_problems(markdown, page.file.src_uri)
    unknown = [name for name in GENERATED.findall(markdown) if name not in GENERATORS]
    problems += [f"{page.file.src_uri}: unknown generated part {name!r}; use one of {', '.join(GENERATORS)}"
                 for name in unknown]
    if problems:
        raise PluginError("the docs name what does not exist:\n  " + "\n  ".join(problems))
    return GENERATED.sub(lambda found: GENERATORS[found.group(1)](), markdown)
