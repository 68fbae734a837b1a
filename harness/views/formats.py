"""The report formats: each is a view of the JSON report, registered as a `ReportFormat` through
the entry-point group `torch_backend_e2e.report_formats`, the built-in ones (json, md, html,
summary) as another package's would be. pytest writes every format asked for at the end of a run
(`--report-NAME=PATH`, ini `e2e_report_NAME`), and `python -m harness report REPORT.json
--NAME=PATH` from a saved report; both go through `write_reports` here.

A format renders from the report and a `ReportContext`: where its file goes and, computed only
when a format asks for them, the expectation proposals, the run's history and the reduced
programs. JUnit XML is pytest's own `--junitxml`, not a format of this registry.
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
from pathlib import Path
from typing import Callable, Iterable, Mapping

from harness.entry_points import distribution, installed_entry_points
from harness.errors import HarnessInputError
from harness.files import write_text_atomically, writing
from harness.settings import Declared, output_file

ENTRY_POINT_GROUP = "torch_backend_e2e.report_formats"

Links = Mapping[tuple[str, str], tuple[str, str]]   # (backend, signature) -> (link, text)


@dataclasses.dataclass(frozen=True)
class Proposals:
    """The expectation files that would make the run match: {path as shown: proposed text}, and
    {path as shown: current text} where the writer read them (a diff is shown above each)."""

    files: Mapping[str, str]
    originals: Mapping[str, str] = dataclasses.field(default_factory=dict)


def _nothing(*_: object) -> None:
    return None


@dataclasses.dataclass(frozen=True)
class ReportContext:
    """What a format may read beside the report. Each `find_*` runs when a format calls for it,
    so a run that writes JSON alone never proposes expectations or opens the history; the writer
    caches what is costly."""

    page: Path | None = None   # the file being written: links in it are relative to its folder
    find_proposals: Callable[[], Proposals | None] = _nothing
    find_history: Callable[[], list[dict] | None] = _nothing      # harness.history.status.case_statuses
    find_reductions: Callable[[Path], Links | None] = _nothing    # harness.views.reductions.reduction_links

    def proposals(self) -> Proposals | None:
        return self.find_proposals()

    def history(self) -> list[dict] | None:
        return self.find_history()

    def reductions(self) -> Links | None:
        return self.find_reductions(self.page) if self.page is not None else None


@dataclasses.dataclass(frozen=True)
class ReportFormat:
    """One report format. Its setting comes from its name: the flag `--report-NAME=PATH` (and
    `--NAME=PATH` of `python -m harness report`) and the ini key `e2e_report_NAME`, a path checked
    writable as the run starts, relative to where the command started (the ini's: to the rootdir)."""

    name: str                                        # lower case, words joined by '-'
    help: str                                        # what it writes: "a Markdown triage report"
    render: Callable[[dict, ReportContext], str]     # the report (harness.reports) -> the file's text
    terminal: bool = False                           # its text is also pytest's "e2e summary"

    @property
    def dest(self) -> str:
        return "report_" + self.name.replace("-", "_")

    @property
    def declared(self) -> Declared:
        return output_file(f"--report-{self.name}", f"write {self.help} here", f"e2e_{self.dest}")


_loaded: dict[str, ReportFormat] | None = None   # once per process


def report_formats() -> dict[str, ReportFormat]:
    """Every installed format by name, the built-in ones first; a broken entry point is one error line."""
    global _loaded
    if _loaded is None:
        table: dict[str, ReportFormat] = {}
        for point, where in installed_entry_points(ENTRY_POINT_GROUP, "report formats"):
            _register(table, point, where)
        _loaded = table
    return dict(_loaded)


def _register(table: dict[str, ReportFormat], point: importlib.metadata.EntryPoint, where: str) -> None:
    try:
        loaded = point.load()
    except Exception as e:   # any error of another package's module: one line naming the entry point
        raise HarnessInputError(where, f"does not load ({type(e).__name__}: {e})",
                                f"fix {distribution(point)} or uninstall it") from None
    if not isinstance(loaded, ReportFormat):
        raise HarnessInputError(where, f"is a {type(loaded).__name__}, not a ReportFormat",
                                "name a harness.api.ReportFormat")
    if loaded.name in table:
        raise HarnessInputError(where, f"registers the format {loaded.name!r} a second time",
                                "rename one of the two formats")
    table[loaded.name] = loaded


def write_reports(report: dict, paths: Mapping[str, Path], context: ReportContext,
                  formats: Mapping[str, ReportFormat] | None = None) -> None:
    """Render each format asked for (name -> file) and write it atomically."""
    formats = report_formats() if formats is None else formats
    for name, path in paths.items():
        with writing(path):
            write_text_atomically(path, formats[name].render(report, dataclasses.replace(context, page=path)))


def terminal_lines_of(report: dict, formats: Iterable[ReportFormat]) -> list[str]:
    """The lines of the formats shown in pytest's terminal summary."""
    return [line for f in formats if f.terminal for line in f.render(report, ReportContext()).splitlines()]
