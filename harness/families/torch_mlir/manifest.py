"""Worker-side half of the torch-mlir suite adapter: import the suite, list its registered tests.

`python -m harness.families.torch_mlir.manifest SUITE_DIR OUT.json` imports torch-mlir's registry
from SUITE_DIR (the directory holding the `torch_mlir_e2e_test` package, `projects/pt1/python` in a
checkout), then each test_suite module on its own, as `register_all_tests()` would but without
running test_suite/__init__.py, which needs `torch_mlir._version` (a source build's file; the
wheel has none). A module that fails to import costs only its own tests: it is listed with its
error, the missing package if that was the cause, and how many tests its source registers.
"""
from __future__ import annotations

import ast
import importlib
import json
import sys
import types
from pathlib import Path
from typing import Any

PACKAGE = "torch_mlir_e2e_test"
SUITE_PACKAGE = f"{PACKAGE}.test_suite"


def import_registry(suite_dir: str) -> Any:
    """torch_mlir_e2e_test.registry from SUITE_DIR, with test_suite importable module by module."""
    if suite_dir not in sys.path:
        sys.path.insert(0, suite_dir)
    registry = importlib.import_module(f"{PACKAGE}.registry")
    if SUITE_PACKAGE not in sys.modules:   # the package, without running its __init__.py
        package = types.ModuleType(SUITE_PACKAGE)
        package.__path__ = [str(Path(suite_dir) / PACKAGE / "test_suite")]
        package.__package__ = SUITE_PACKAGE
        sys.modules[SUITE_PACKAGE] = package
    return registry


def import_test_module(name: str) -> Any:
    return importlib.import_module(f"{SUITE_PACKAGE}.{name}")


def suite_modules(suite_dir: str) -> list[Path]:
    return sorted(p for p in (Path(suite_dir) / PACKAGE / "test_suite").glob("*.py") if p.name != "__init__.py")


def registrations(source: str) -> dict[str, dict]:
    """Test name -> what its source says: line, explicit timeout_seconds, dims annotated dynamic (-1);
    for the tests of a module that did not import, this is all there is."""
    tree = ast.parse(source)
    dynamic = {node.name: _annotated_dynamic(node) for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _name(decorator.func) == "register_test_case":
                    keywords = {k.arg: k.value for k in decorator.keywords}
                    factory = keywords.get("module_factory", decorator.args[0] if decorator.args else None)
                    timeout = keywords.get("timeout_seconds")
                    found[node.name] = {
                        "line": node.lineno,
                        "timeout": timeout.value if isinstance(timeout, ast.Constant) else None,
                        "dynamic": dynamic.get(_factory_class(factory), False),
                    }
    return found


def _name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def _factory_class(factory: ast.AST | None) -> str:
    """`lambda: Name(...)` -> Name."""
    if isinstance(factory, ast.Lambda) and isinstance(factory.body, ast.Call):
        return _name(factory.body.func)
    return ""


def _annotated_dynamic(cls: ast.ClassDef) -> bool:
    """Whether the class's forward has an annotate_args shape with a -1 in it."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "forward":
            for decorator in node.decorator_list:
                if isinstance(decorator, ast.Call) and _name(decorator.func) == "annotate_args":
                    return any(isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub)
                               and getattr(n.operand, "value", None) == 1 for n in ast.walk(decorator))
    return False


def write_manifest(suite_dir: str, out: Path) -> None:
    registry = import_registry(suite_dir)
    tests, failed = [], []
    for path in suite_modules(suite_dir):
        declared = registrations(path.read_text(encoding="utf-8"))
        before = len(registry.GLOBAL_TEST_REGISTRY)
        try:
            import_test_module(path.stem)
        except Exception as e:  # noqa: BLE001 - any failure is the module's: it costs only its tests
            del registry.GLOBAL_TEST_REGISTRY[before:]
            failed.append({"module": path.stem, "error": f"{type(e).__name__}: {e}",
                           "missing": getattr(e, "name", None) if isinstance(e, ImportError) else None,
                           "tests": len(declared), "declared": sorted(declared)})
            continue
        for test in registry.GLOBAL_TEST_REGISTRY[before:]:
            facts = declared.get(test.unique_name, {"line": None, "timeout": None, "dynamic": False})
            # the registry's timeout, its default (120 s upstream) included: the case gets what upstream gives
            timeout = getattr(test, "timeout_seconds", getattr(test, "timeout", None))
            tests.append({"name": test.unique_name, "module": path.stem, **facts,
                          "timeout": timeout if isinstance(timeout, (int, float)) else facts["timeout"]})
    out.write_text(json.dumps({"tests": tests, "failed_modules": failed}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # python -m harness.families.torch_mlir.manifest SUITE_DIR OUT.json
    write_manifest(sys.argv[1], Path(sys.argv[2]))
