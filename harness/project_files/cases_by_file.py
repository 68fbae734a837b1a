"""The cases by the file pytest collects them under, each file's loaded when it is first asked
for. A run that collects one family does not load the others. For example, a run of torch-mlir's
suite does not list PyTorch's op database or ONNX's node tests, which took 46 s on a first run.
A case id is checked unique against every file loaded before it. `python -m harness check`
loads them all, so it checks every id."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping

from harness.case_data import Case
from harness.errors import HarnessInputError


class CasesByFile(Mapping[Path, list[Case]]):
    """`load(path)`: a file's cases, called once per file, when a run first asks for them."""

    def __init__(self, paths: Iterable[Path], load: Callable[[Path], list[Case]]):
        self._paths = list(dict.fromkeys(paths))
        self._known = set(self._paths)
        self._load = load
        self._loaded: dict[Path, list[Case]] = {}
        self._owners: dict[str, Path] = {}

    def __getitem__(self, path: Path) -> list[Case]:
        if path not in self._loaded:
            if path not in self._known:
                raise KeyError(path)
            cases = self._load(path)
            for case in cases:
                if case.id in self._owners:
                    raise HarnessInputError(case.id, "two cases share this id", "rename one (ids must be unique)")
                self._owners[case.id] = path
            self._loaded[path] = cases
        return self._loaded[path]

    def __contains__(self, path: object) -> bool:
        return path in self._known

    def __iter__(self) -> Iterator[Path]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)
