"""harness.api is the whole public interface: the README's backend example and the example
project import nothing else, it exports no built-in family's own helper, and every hook of
`Family` and `Backend` is documented where help() shows it."""
from __future__ import annotations

import ast
import importlib
import re

from e2e_support import REPO

import harness.api


def _imports(source: str) -> set[str]:
    tree = ast.parse(source)
    return ({node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
            | {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names})


def _readme_blocks() -> dict[str, str]:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    return {f"README.md python block {i}": block for i, block in enumerate(blocks)}


def test_the_example_project_and_the_readme_backend_import_only_harness_api():
    sources = {str(p.relative_to(REPO)): p.read_text() for p in (REPO / "examples").rglob("*.py")}
    sources.update({name: block for name, block in _readme_blocks().items() if "(Backend)" in block})
    assert any("class MyBackend" in text for text in sources.values())
    wrong = {name: sorted(m for m in _imports(text) if m.startswith("harness") and m != "harness.api")
             for name, text in sources.items()}
    assert not {name: modules for name, modules in wrong.items() if modules}


def test_every_harness_name_the_readme_imports_exists():
    for name, block in _readme_blocks().items():
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module.startswith("harness"):
                module = importlib.import_module(node.module)
                assert all(hasattr(module, alias.name) for alias in node.names), (name, node.module)


def test_the_api_exports_every_extension_point_and_no_family_of_its_own():
    wanted = {"Case", "Family", "Option", "Discovery", "Built", "Golden", "Program", "OnnxProgram", "Backend",
              "CaseContext", "Phase", "Standalone", "FuzzSpace", "check_keys", "family"}
    assert wanted <= set(harness.api.__all__)
    assert all(hasattr(harness.api, name) for name in harness.api.__all__)
    assert not [name for name in harness.api.__all__ if name.endswith("_case")]


def test_family_by_name():
    case = harness.api.family("conv_backward").case("x", {"input_shape": [1, 1, 4], "weight_shape": [1, 1, 2]})
    assert case.id == "conv_backward/x" and case.params["dtype"] == "float32"


def test_help_documents_every_hook():
    import dataclasses
    import pydoc

    family_help = pydoc.render_doc(harness.api.Family, renderer=pydoc.plaintext)
    missing = [f.name for f in dataclasses.fields(harness.api.Family) if f"`{f.name}" not in family_help]
    assert not missing, missing
    for method in ("compile", "run", "versions", "standalone"):
        assert getattr(harness.api.Backend, method).__doc__, method
    kinds = [obj for obj in vars(harness.api).values()
             if isinstance(obj, type) and issubclass(obj, harness.api.Golden) and obj is not harness.api.Golden]
    assert {kind.kind for kind in kinds} == {"float64", "given", "eager", "family", "ratio"}
    for kind in kinds:   # each kind says what it compares with, and the base names each one
        assert kind.__doc__ and f"`{kind.__name__}`" in harness.api.Golden.__doc__, kind
    for method in ("check", "compute", "judge"):
        assert getattr(harness.api.Golden, method).__doc__, method
