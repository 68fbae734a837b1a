"""The `json` report format: the JSON report itself (harness.reports), the record every other
view, tool and the history read; `--report-json=PATH`."""
from __future__ import annotations

from harness.reports import report_text
from harness.views.formats import ReportContext, ReportFormat


def render_json(report: dict, context: ReportContext) -> str:
    return report_text(report)


FORMAT = ReportFormat("json", "the JSON result report", render_json)
