"""How long the HTML matrix takes to open and to filter in headless Chromium, for large reports.

    python benchmarks/html_scale.py REPORT.json [REPORT.json ...] [--runs 5] [--filter topk]

For each report (a `--report-json` file or a merge of several): the page is rendered once, then
opened `--runs` times in a fresh headless Chromium (/usr/bin/chromium), each time with the link
`#q=FILTER`, which types FILTER into the case filter once the page is ready. The page itself
records, on its <body>, `data-ready-ms` (from the start of navigation to the matrix laid out and
its script done, the link's filter applied: parsing the HTML and the embedded JSON included) and
`data-filter-ms` (that filter pass alone, with its layout). Prints the medians and every run,
with the page's size, its rows and cells, and the wall time of the browser process (which adds
Chromium's own start-up and the DOM dump).
Target (issue 12): open and filter within 2 s at 700 op rows x 7 backends and at 18,762 rows x 1.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.views.html import render_html  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")


def open_page(page: Path, profile: Path, text: str) -> tuple[int, int, float]:
    """(ready ms, filter ms, browser wall s) of one headless Chromium load of `page`#q=text."""
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               f"--user-data-dir={profile}", "--window-size=1400,900", "--dump-dom", f"{page.as_uri()}#q={text}"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    wall = time.perf_counter() - started
    body = re.search(r"<body([^>]*)>", done.stdout)
    timings = dict(re.findall(r'data-(ready-ms|filter-ms)="(\d+)"', body.group(1) if body else ""))
    if len(timings) != 2:
        sys.exit(f"{page}: the page did not report its timings:\n{done.stderr[-2000:]}")
    return int(timings["ready-ms"]), int(timings["filter-ms"]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--filter", default="topk", help="the text the link filters by (default: topk)")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        for path in args.reports:
            report = json.loads(path.read_text(encoding="utf-8"))
            started = time.perf_counter()
            html = render_html(report)
            render_s = time.perf_counter() - started
            page = Path(tmp) / (path.stem + ".html")
            page.write_text(html, encoding="utf-8")
            cases = {r["case"] for r in report["results"]}
            backends = {r["backend"] for r in report["results"]}
            runs = [open_page(page, Path(tmp) / f"profile{k}", args.filter) for k in range(args.runs)]
            ready, filtered, wall = ([run[i] for run in runs] for i in range(3))
            print(f"{path.name}: {len(cases)} case rows x {len(backends)} backends "
                  f"({len(report['results'])} cells), page {len(html) / 1e6:.1f} MB, rendered in {render_s:.2f} s")
            print(f"  open, the link's filter applied and laid out: median {statistics.median(ready)} ms  "
                  f"runs {ready}")
            print(f"  of which the filter '{args.filter}': median {statistics.median(filtered)} ms  runs {filtered}")
            print(f"  Chromium process wall (its start-up and the DOM dump included): median "
                  f"{statistics.median(wall):.2f} s")


if __name__ == "__main__":
    main()
