"""A headless-Chromium screenshot of the HTML report of a JSON report (the picture in docs/reference/reports.md).

    python tools/screenshot_report.py REPORT.json OUT.png [--window-size=1280,800] [--fragment=q=TEXT]
                                      [--chromium=PATH]

The page is the harness's own (harness.views.html.render_html), written to a temporary folder with
a fresh browser profile, so the picture is what `python -m harness.views.html REPORT.json` shows on
first opening, without the reader's settings; `--fragment` opens a link into it as the page's
own links do (`q=TEXT` filters the case ids, `cell=BACKEND/CASE` opens a cell's details).
Exit status: 0 with the screenshot written, 2 when the report cannot be read or Chromium is
missing or wrote nothing.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

from harness.errors import HarnessInputError
from harness.reports import read_report
from harness.views.html import render_html

# Flags that work as root in a container: no sandbox or GPU, and nothing that reaches the network
# (the page itself fetches nothing).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--hide-scrollbars"]


def find_chromium(given: str | None) -> str | None:
    if given:
        return given
    return next((found for name in ("chromium", "chromium-browser", "google-chrome") if (found := shutil.which(name))),
                None)


def screenshot(report: dict, out: Path, window_size: str = "1280,800", chromium: str = "chromium",
               fragment: str = "", timeout_s: float = 120) -> subprocess.CompletedProcess:
    """Render `report` and let Chromium write `out` (PNG); returns Chromium's process for its stderr."""
    with tempfile.TemporaryDirectory(prefix="report-shot-") as folder:
        page = Path(folder) / "report.html"
        page.write_text(render_html(report), encoding="utf-8")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)   # so an old picture cannot pass for a new one
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={Path(folder) / 'profile'}",
                   f"--screenshot={out.resolve()}", f"--window-size={window_size}",
                   page.as_uri() + (f"#{urllib.parse.quote(fragment, safe='=/')}" if fragment else "")]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/screenshot_report.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="a JSON report (--report-json)")
    parser.add_argument("out", type=Path, help="the PNG to write")
    parser.add_argument("--window-size", default="1280,800", help="WIDTH,HEIGHT of the window (default 1280,800)")
    parser.add_argument("--fragment", default="", help="open the page at #FRAGMENT: q=TEXT or cell=BACKEND/CASE")
    parser.add_argument("--chromium", help="the browser to run (default: chromium on PATH)")
    args = parser.parse_args(argv)
    try:
        report = read_report(args.report)   # every command reads a report through this, with one error line
    except HarnessInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("no chromium on PATH: apt-get install -y --no-install-recommends chromium, or give --chromium=PATH",
              file=sys.stderr)
        return 2
    done = screenshot(report, args.out, args.window_size, chromium, args.fragment)
    if not args.out.exists():
        print(f"{chromium} wrote no screenshot (exit {done.returncode}):\n{done.stderr[-2000:]}", file=sys.stderr)
        return 2
    print(f"{args.out} ({args.out.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
