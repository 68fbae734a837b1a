"""The HTML report: escaping, self-containment, completeness of the embedded data, the matrix's shape,
and (when /usr/bin/chromium exists) that a real browser renders it and runs its script."""
from __future__ import annotations

import html.parser
import json
import struct
import subprocess
import sys
import urllib.parse
import zlib
from pathlib import Path

import pytest

from harness.record import Record
from harness.reports import summarise
from harness.views import html as html_report
from harness.views.html import DATA_ELEMENT_ID, decode_payload, render_html

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(not CHROMIUM.exists(),
                                    reason="/usr/bin/chromium is not installed (apt-get install chromium)")

INJECTION = "</script><img src=x onerror=alert(1)>"
EVIL_CASE = "evil/" + INJECTION
QUOTE_CASE = "quote/a\"b'c&d<e>"
BACKENDS = ["eager", "linalg-on-tensors", "tosa"]


def _record(case: str, backend: str, outcome: str = "passed", *, expected: str = "pass",
            verdict: str = "ok", phase: str | None = None, message: str = "", **extra) -> dict:
    record = {
        "case": case, "backend": backend,
        "nodeid": f"cases/{case.split('/')[0]}.py::{case}[{backend}]",
        "params": {"input_shape": [2, 3, 8, 8], "groups": 1, "dtype": "float32"},
        "tags": ["rank2", "static"], "outcome": outcome, "phase": phase, "expected": expected,
        "verdict": verdict, "duration_s": 0.25, "message": message,
        "expectation_source": f"xfail/{backend}.yaml:3" if expected != "pass" else None,
        "phase_durations": {"setup": 0.01, "export": 0.1234567}, "notes": {},
        "signature": None, "artifacts": None,
    }
    record.update(extra)
    return record


def _fixture_report(complete: bool = True) -> dict:
    records = []
    for backend in BACKENDS:
        records.append(_record("conv_forward/2d/basic", backend))
        records.append(_record("conv_forward/2d/groups2", backend))
        records.append(_record("conv_backward/2d/basic", backend))
    records += [
        _record("conv_backward/2d/transposed", "eager"),
        _record("conv_backward/2d/transposed", "linalg-on-tensors", "compile_error", expected="xfail",
                phase="lower", message="failed to legalize 'torch.aten.convolution_backward'\n"
                                       "  %0 = linalg.generic : tensor<2x3xf32> & \"quotes\" 'single'",
                signature="compile_error@lower:failed to legalize <op>"),
        # tosa has no result for the transposed case: a missing cell.
        _record(EVIL_CASE, "eager", "mismatch", phase="compare", verdict="unexpected_failure",
                message=f"mismatch {INJECTION} tensor<2x3xf32> & \"quotes\" <!-- comment --> ]]> \u2028",
                params={"evil": INJECTION, "nested": {"k": "<b>bold</b>"}},
                notes={"<script>": "</script>"}, signature=INJECTION, artifacts="/tmp/<a>&b"),
        _record(EVIL_CASE, "tosa", "crashed", phase="run", verdict="unexpected_failure",
                message="SIGSEGV " + INJECTION),
        _record(QUOTE_CASE, "tosa", "passed", expected="xfail", verdict="unexpected_pass"),
        _record(QUOTE_CASE, "eager", "timed_out", phase="compile", expected="crash", verdict="ok",
                message="timed out after 60 s"),
        _record("conv_forward/2d/skipme", "eager", "not_run", verdict="skipped"),
    ]
    env = {"python": "3.11.7", "torch": "2.13.0+cpu", "torch_mlir": "20261001", "numpy": "2.4.6",
           "platform": "Linux-x86_64 <glibc>", "run_crash_set": False,
           "backends": {b: {"config": f"configs/{b}.yaml", "versions": {"torch": "2.13.0+cpu"}, "reported": {}}
                        for b in BACKENDS}}
    return {"schema_version": 1, "complete": complete, "created": 1764460000.5, "environment": env,
            "results": records, "summary": summarise(records)}


class _Page(html.parser.HTMLParser):
    """Every start tag with its attributes, the text of script and style elements, and the matrix."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[tuple[dict, str]] = []
        self.styles: list[str] = []
        self._raw: tuple[str, dict] | None = None
        self._chunks: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if tag in ("script", "style"):
            self._raw, self._chunks = (tag, attributes), []

    def handle_endtag(self, tag):
        if self._raw and tag == self._raw[0]:
            body = "".join(self._chunks)
            if tag == "script":
                self.scripts.append((self._raw[1], body))
            else:
                self.styles.append(body)
            self._raw = None

    def handle_data(self, data):
        if self._raw:
            self._chunks.append(data)
        else:
            self.text.append(data)


def _parse(page: str) -> _Page:
    parser = _Page()
    parser.feed(page)
    parser.close()
    return parser


def _payload(page: str) -> dict:
    blocks = [(attrs, body) for attrs, body in _parse(page).scripts if attrs.get("id") == DATA_ELEMENT_ID]
    assert len(blocks) == 1 and blocks[0][0].get("type") == "application/json"
    return json.loads(blocks[0][1])


@pytest.fixture(scope="module")
def page() -> str:
    return render_html(_fixture_report())


def test_report_text_cannot_inject_markup(page):
    parsed = _parse(page)
    assert not [t for t, _ in parsed.tags if t in ("img", "iframe", "object", "embed", "link", "base")]
    # Exactly the two scripts of the page: the data block and the inline code, neither with a src.
    assert [(a.get("type"), "src" in a) for a, _ in parsed.scripts] == [("application/json", False), (None, False)]
    handlers = [(t, name) for t, attrs in parsed.tags for name in attrs if name.lower().startswith("on")]
    assert handlers == []
    assert INJECTION not in page and "<img" not in page
    assert "tensor<2x3xf32>" not in page      # the server-side matrix escapes it, the JSON writes \u003c
    data_block = next(body for attrs, body in parsed.scripts if attrs.get("id") == DATA_ELEMENT_ID)
    assert "<" not in data_block and ">" not in data_block and "&" not in data_block
    # The case id is visible as text, escaped in the markup.
    assert INJECTION in "".join(parsed.text)
    assert html_report._escaped(QUOTE_CASE.split("/", 1)[1]) in page


def test_the_inline_script_never_writes_markup():
    assert "innerHTML" not in html_report._JS and "outerHTML" not in html_report._JS
    assert "insertAdjacentHTML" not in html_report._JS and "document.write" not in html_report._JS
    assert "</script" not in html_report._JS.lower()  # the asset is inlined into a script element as it is


def test_page_is_self_contained(page):
    parsed = _parse(page)
    for tag, attrs in parsed.tags:
        for name in ("src", "href", "action", "poster", "data"):
            value = (attrs.get(name) or "").strip().lower()
            assert not value.startswith(("http:", "https:", "//")), (tag, name, value)
        assert not (tag == "link" and "stylesheet" in (attrs.get("rel") or "")), attrs
    code = "".join(parsed.styles) + "".join(body for attrs, body in parsed.scripts if not attrs.get("type"))
    assert "http://" not in code and "https://" not in code
    assert "@import" not in code and "url(" not in code and "@font-face" not in code
    assert "fetch(" not in code and "XMLHttpRequest" not in code


def test_every_record_is_in_the_embedded_data(page):
    report = _fixture_report()
    payload = _payload(page)
    decoded = {(r["case"], r["backend"]): r for r in decode_payload(payload)}
    assert len(decoded) == len(report["results"])
    for original in report["results"]:
        got = decoded[(original["case"], original["backend"])]
        for key, value in original.items():
            if key == "phase_durations":
                assert got[key] == pytest.approx(value, abs=1e-4)
            else:
                assert got[key] == value, key
        assert got["repro"] == Record.from_json(original).rerun


def test_matrix_has_one_row_per_case_and_one_column_per_backend(page):
    report = _fixture_report()
    cases = {r["case"] for r in report["results"]}
    parsed = _parse(page)
    header = [a for t, a in parsed.tags if t == "th" and "data-sort" in a]
    assert [a["data-sort"] for a in header] == ["case"] + [str(j) for j in range(len(BACKENDS))]
    payload = _payload(page)
    assert payload["backends"] == BACKENDS
    rows = [a for t, a in parsed.tags if t == "tr" and "data-c" in a]
    assert sorted(payload["cases"][int(a["data-c"])]["id"] for a in rows) == sorted(cases)
    # Every case row has len(BACKENDS) cells: count td tags between consecutive rows.
    counts, current = [], None
    for tag, attrs in parsed.tags:
        if tag == "tr":
            if current is not None:
                counts.append(current)
            current = 0 if "data-c" in attrs else None
        elif tag == "td" and current is not None:
            current += 1
    if current is not None:
        counts.append(current)
    assert counts == [len(BACKENDS)] * len(cases)
    cells = [a for t, a in parsed.tags if t == "td" and "data-r" in a]
    assert len(cells) == len(report["results"])
    missing = [a for t, a in parsed.tags if t == "td" and "o-missing" in (a.get("class") or "").split()]
    assert len(missing) == len(cases) * len(BACKENDS) - len(report["results"])
    # Families group the rows: one header row each.
    families = [a["data-family"] for t, a in parsed.tags if t == "tr" and "fam" in (a.get("class") or "").split()]
    assert families == sorted({c.split("/")[0] for c in cases})


def test_cases_sharing_an_id_up_to_the_last_slash_are_a_group(page):
    """An OpInfo op's samples (opinfo/topk/default/float32/<k>) get a header row with their totals;
    a case alone in its group is a row alone."""
    parsed = _parse(page)
    headers = [a["data-g"] for t, a in parsed.tags if t == "tr" and "grp" in (a.get("class") or "").split()]
    assert headers == ["conv_backward/2d", "conv_forward/2d"]
    payload = _payload(page)
    members = {payload["cases"][int(a["data-c"])]["id"]: a.get("data-g") for t, a in parsed.tags
               if t == "tr" and "data-c" in a}
    assert members["conv_forward/2d/groups2"] == "conv_forward/2d" and members[EVIL_CASE] is None
    assert not [a for t, a in parsed.tags if t == "tr" and "hidden" in a]      # a small family starts open


def test_a_large_family_starts_with_its_groups_collapsed(monkeypatch):
    monkeypatch.setattr(html_report, "COLLAPSE_GROUPS_OVER", 2)
    parsed = _parse(render_html(_fixture_report()))
    folded = [a for t, a in parsed.tags if t == "tr" and "collapsed" in (a.get("class") or "").split()]
    assert [a["data-g"] for a in folded] == ["conv_forward/2d"]                 # 3 cases; conv_backward has 2
    hidden = [a.get("data-g") for t, a in parsed.tags if t == "tr" and "hidden" in a]
    assert hidden == ["conv_forward/2d"] * 3


def test_unexpected_cells_stand_out_from_expected_failures(page):
    payload = _payload(page)
    parsed = _parse(page)
    by_class = {}
    for tag, attrs in parsed.tags:
        if tag == "td" and "data-r" in attrs:
            record = decode_payload(payload)[int(attrs["data-r"])]
            by_class[(record["case"], record["backend"])] = set(attrs["class"].split())
    assert {"o-mismatch", "un"} <= by_class[(EVIL_CASE, "eager")]
    assert {"o-passed", "un"} <= by_class[(QUOTE_CASE, "tosa")]
    assert {"o-compile_error", "xf"} <= by_class[("conv_backward/2d/transposed", "linalg-on-tensors")]
    assert "un" not in by_class[("conv_backward/2d/transposed", "linalg-on-tensors")]
    assert by_class[("conv_forward/2d/basic", "eager")] == {"o-passed"}


def test_partial_run_banner():
    partial = render_html(_fixture_report(complete=False))
    text = " ".join(_parse(partial).text).lower()
    assert "partial run" in text
    assert any(t == "div" and a.get("role") == "alert" for t, a in _parse(partial).tags)
    complete = render_html(_fixture_report(complete=True))
    assert not any(a.get("role") == "alert" for _, a in _parse(complete).tags)
    assert "partial run" not in " ".join(_parse(complete).text).lower()


def test_header_shows_environment_and_counts(page):
    text = " ".join(_parse(page).text)
    for fact in ("3.11.7", "2.13.0+cpu", "20261001", "Linux-x86_64 <glibc>", "2025-11-29"):
        assert fact in text
    assert "unexpected" in text and "expected" in text


def test_old_and_sparse_reports_render():
    # No signature/artifacts/notes keys, no environment, no summary: still a page.
    record = _record("a/b", "eager", "compile_error", expected="xfail", phase="export", message="boom")
    for key in ("signature", "artifacts", "notes"):
        del record[key]
    page = render_html({"schema_version": 1, "complete": True, "results": [record]})
    decoded = decode_payload(_payload(page))
    assert decoded[0]["case"] == "a/b" and decoded[0]["signature"] is None
    empty = render_html({"schema_version": 1, "complete": False, "results": []})
    assert "no results" in empty


def test_a_later_duplicate_wins():
    first = _record("a/b", "eager", "crashed", phase="run", verdict="unexpected_failure")
    second = _record("a/b", "eager")
    decoded = decode_payload(_payload(render_html({"complete": True, "results": [first, second]})))
    assert [r["outcome"] for r in decoded] == ["passed"]


def test_identical_messages_are_stored_once():
    records = [_record(f"f/c{i}", b, "compile_error", expected="xfail", phase="lower", message="same " * 100)
               for i in range(20) for b in BACKENDS]
    payload = _payload(render_html({"complete": True, "results": records}))
    assert payload["messages"] == ["same " * 100]
    assert all("params" not in r and "tags" not in r for r in payload["records"])


def test_command_line_writes_the_page(tmp_path):
    source = tmp_path / "r.json"
    source.write_text(json.dumps(_fixture_report()))
    assert html_report.main([str(source)]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8") == render_html(_fixture_report())


# ---------------------------------------------------------------------------------------------------
# A real browser


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
               "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=180)


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the rows (unfiltered, RGB or RGBA bytes) of an 8-bit non-interlaced PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        rows.append(bytes(line))
        previous = line
    return width, height, rows


@needs_chromium
def test_chromium_renders_a_screenshot(tmp_path):
    """Through the script that took the docs' picture (tools/screenshot_report.py)."""
    report = tmp_path / "report.json"
    report.write_text(json.dumps(_fixture_report(complete=False)), encoding="utf-8")
    shot = tmp_path / "shot.png"
    result = subprocess.run([sys.executable, str(REPO / "tools" / "screenshot_report.py"), str(report), str(shot),
                             "--window-size=1400,900", f"--chromium={CHROMIUM}"], capture_output=True, text=True)
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    width, height, rows = _png_pixels(shot.read_bytes())
    assert (width, height) == (1400, 900)
    bpp = len(rows[0]) // width
    colours = {row[x:x + 3] for row in rows[::4] for x in range(0, len(row), 4 * bpp)}
    assert len(colours) > 50          # text, cells and badges, not a blank page
    # Flat fills from the stylesheet: the dark header, the partial-run banner, a passed cell.
    for name, rgb in (("header", "1f2933"), ("banner", "fff8c5"), ("passed cell", "d7f2de")):
        assert bytes.fromhex(rgb) in colours, name


@needs_chromium
def test_chromium_runs_the_script_and_opens_the_linked_cell(tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render_html(_fixture_report()), encoding="utf-8")
    link = page.as_uri() + "#cell=" + urllib.parse.quote("eager/" + EVIL_CASE, safe="")
    result = _chromium(tmp_path, "--dump-dom", link)
    dom = result.stdout
    assert 'data-ready="1"' in dom, result.stderr[-2000:]
    parsed = _parse(dom)
    details = next(a for t, a in parsed.tags if a.get("id") == "details")
    assert "hidden" not in details                                   # the link opened the panel
    n_cases = len({r["case"] for r in _fixture_report()["results"]})
    assert f"Showing {n_cases} of {n_cases} cases" in dom              # written by the filters
    text = "".join(parsed.text)
    assert INJECTION in text                                          # shown as text ...
    assert not [t for t, _ in parsed.tags if t == "img"]              # ... never as markup
    record = next(r for r in _fixture_report()["results"] if r["case"] == EVIL_CASE and r["backend"] == "eager")
    assert Record.from_json(record).rerun in text
    assert any(t == "td" and "sel" in (a.get("class") or "").split() for t, a in parsed.tags)


@needs_chromium
def test_chromium_filters_a_link_into_collapsed_groups(tmp_path, monkeypatch):
    """#q=TEXT filters on load, and matching rows of a collapsed group show; the page says how long
    opening and filtering took (benchmarks/html_scale.py reads these)."""
    monkeypatch.setattr(html_report, "COLLAPSE_GROUPS_OVER", 2)
    page = tmp_path / "report.html"
    page.write_text(render_html(_fixture_report()), encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri() + "#q=groups2").stdout
    n_cases = len({r["case"] for r in _fixture_report()["results"]})
    assert f"Showing 1 of {n_cases} cases" in dom
    rows = {a.get("data-c"): a for t, a in _parse(dom).tags if t == "tr" and "data-c" in a}
    ids = {c: case["id"] for c, case in enumerate(_payload(render_html(_fixture_report()))["cases"])}
    shown = [ids[int(c)] for c, a in rows.items() if "hidden" not in a]
    assert shown == ["conv_forward/2d/groups2"]
    body = next(a for t, a in _parse(dom).tags if t == "body")
    assert int(body["data-ready-ms"]) > 0 and int(body["data-filter-ms"]) >= 0


def test_flat_ids_with_subjects_are_grouped_by_subject():
    """ONNX's node tests (onnx_node/test_abs, ...) have flat ids; their records name the op type,
    so each op is a group (one row per op, even of one test), in the op types' order."""
    records = [_record(f"onnx_node/{test}", backend, outcome, phase=phase, subject=op)
               for test, op in (("test_add", "Add"), ("test_add_bcast", "Add"), ("test_abs", "Abs"))
               for backend, outcome, phase in (("eager", "passed", None), ("tosa", "compile_error", "import"))]
    records.append(_record("module/mlp", "eager", subject=None))
    parsed = _parse(render_html({"schema_version": 1, "complete": True, "environment": {}, "results": records}))
    headers = [a["data-g"] for t, a in parsed.tags if t == "tr" and "grp" in (a.get("class") or "").split()]
    assert headers == ["onnx_node: Abs", "onnx_node: Add"]   # module/mlp has no subject: its row alone


@needs_chromium
def test_chromium_colours_cells_by_speedup(tmp_path):
    """--perf's speedups: #speed (or the toggle) colours a cell green where the compiled code beat
    eager, red where it lost, grey where the difference is not significant; the page carries each
    side's summary without its samples."""
    def timed(value: float, low: float, high: float) -> dict:
        side = {"count": 3, "median": 1e-4, "samples": [1e-4, 1e-4, 1e-4]}
        return {"threads": 1, "compiled": side, "eager": side, "speedup": {"value": value, "low": low, "high": high}}

    records = [_record("conv_forward/2d/a", "fast", perf=timed(2.0, 1.9, 2.1)),
               _record("conv_forward/2d/b", "fast", perf=timed(0.5, 0.45, 0.55)),
               _record("conv_forward/2d/c", "fast", perf=timed(1.01, 0.95, 1.07))]
    html = render_html({"schema_version": 1, "complete": True, "environment": {}, "results": records})
    assert "samples" not in json.dumps(_payload(html)) and 'id="f-speed"' in html
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri() + "#speed").stdout
    cells = {a.get("data-r"): a.get("style", "") for t, a in _parse(dom).tags if t == "td" and "data-r" in a}
    by_case = {_payload(html)["cases"][r["c"]]["id"]: cells[str(k)] for k, r in enumerate(_payload(html)["records"])}
    assert "rgba(34, 139, 34" in by_case["conv_forward/2d/a"]     # green: faster than eager
    assert "rgba(200, 40, 40" in by_case["conv_forward/2d/b"]     # red: slower
    assert "rgba(128, 128, 128" in by_case["conv_forward/2d/c"]   # grey: not significant


# ---------------------------------------------------------------------------------------------------
# The badge, the signature summary, a failure in another phase than its entry's (issue 42, item 8)


class _Cells(html.parser.HTMLParser):
    """The text of every cell of the rows under the element with id `scope` (a table or a tbody),
    as [(row's attributes, [(cell's attributes, its text, its links)])]."""

    def __init__(self, scope: str):
        super().__init__(convert_charrefs=True)
        self.scope, self.depth, self.rows = scope, 0, []
        self._cell: list | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if self.depth or attributes.get("id") == self.scope:
            self.depth += tag not in ("br", "input", "img")
        if not self.depth:
            return
        if tag == "tr":
            self.rows.append((attributes, []))
        elif tag in ("td", "th") and self.rows:
            self._cell = [attributes, "", []]
            self.rows[-1][1].append(self._cell)
        elif tag == "a" and self._cell is not None:
            self._cell[2].append(attributes.get("href"))

    def handle_endtag(self, tag):
        if self.depth:
            self.depth -= tag not in ("br", "input", "img")
            if tag in ("td", "th"):
                self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1] += data


def _cells(page: str, scope: str) -> list[tuple[dict, list]]:
    parser = _Cells(scope)
    parser.feed(page)
    return parser.rows


def _badge(page: str) -> tuple[str, str]:
    badge = next(a for t, a in _parse(page).tags if a.get("id") == "badge")
    text = page.split('id="badge">', 1)[1].split("<", 1)[0]
    return badge["class"], text


def test_the_badge_counts_the_unexpected_results_or_says_all_as_expected():
    """Not "complete": on a failing run that reads as "passed". A partial run still says so."""
    assert _badge(render_html(_fixture_report())) == ("pill bad", "3 unexpected")   # 2 failures, 1 pass
    fine = [_record("a/b", "eager"), _record("a/c", "tosa", "compile_error", expected="xfail", phase="lower")]
    page = render_html({"schema_version": 1, "complete": True, "results": fine})
    assert _badge(page) == ("pill ok", "all as expected")
    assert "complete" not in " ".join(_parse(page).text).lower() and "partial run" not in page
    partial = render_html({"schema_version": 1, "complete": False, "results": fine})
    assert _badge(partial) == ("pill ok", "all as expected") and '<span class="pill warn">partial run</span>' in partial
    partial = render_html(_fixture_report(complete=False))
    assert _badge(partial) == ("pill bad", "3 unexpected") and '<span class="pill warn">partial run</span>' in partial


def _signature_report() -> dict:
    legalize = "failed to legalize operation 'torch.aten.convolution_backward'"
    records = [_record(f"conv_backward/2d/c{i}", backend, "compile_error", expected="xfail", phase="lower",
                       signature=legalize) for i in range(3) for backend in ("linalg-on-tensors", "tosa")]
    records += [_record("conv_backward/2d/c9", "tosa", "compile_error", phase="lower", verdict="unexpected_failure",
                        signature=legalize),
                _record("conv_forward/2d/a", "tosa", "mismatch", phase="compare", verdict="unexpected_failure",
                        signature="mismatch: grad_input: 3 of 96 elements differ"),
                _record("conv_forward/2d/b", "eager", "crashed", phase="run", verdict="unexpected_failure"),
                _record("conv_forward/2d/c", "eager", "passed"),
                _record("conv_forward/2d/d", "eager", "passed", expected="xfail", verdict="unexpected_pass")]
    return {"schema_version": 1, "complete": True, "results": records,
            "environment": {"backends": {b: {} for b in BACKENDS}}}


def test_failures_are_summarised_by_signature_with_an_example_that_links_to_its_cell():
    page = render_html(_signature_report())
    head, *rows = _cells(page, "signatures")
    assert [text for _, text, _ in head[1]] == ["results", "unexpected", "outcome", "phase", "backends", "signature",
                                               "example"]
    table = [[text.strip() for _, text, _ in cells] for _, cells in rows]
    # Unexpected ones first, then by count; an old record without a signature is its outcome and phase.
    assert [row[:6] for row in table] == [
        ["7", "1", "compile", "lower", "linalg-on-tensors, tosa", "failed to legalize operation "
                                                                  "'torch.aten.convolution_backward'"],
        ["1", "1", "crash", "run", "eager", "crashed in run"],
        ["1", "1", "mismatch", "compare", "tosa", "mismatch: grad_input: 3 of 96 elements differ"]]
    # The example is an unexpected result of the group, when it has one, with its cell's link.
    assert table[0][6] == "conv_backward/2d/c9 on tosa"
    assert rows[0][1][6][2] == ["#cell=" + urllib.parse.quote("tosa/conv_backward/2d/c9", safe="")]
    assert [attrs.get("class") for attrs, _ in rows] == ["hot"] * 3
    assert "and 1 unexpected pass" in page
    # Every result of the report is counted once, passes in none.
    assert sum(int(row[0]) for row in table) == sum(r["outcome"] not in ("passed", "not_run")
                                                    for r in _signature_report()["results"])
    assert 'id="signatures"' not in render_html({"schema_version": 1, "complete": True,
                                                 "results": [_record("a/b", "eager")]})


def _cell_of(page: str, case: str, backend: str) -> tuple[set, str]:
    payload = _payload(page)
    k = next(k for k, r in enumerate(decode_payload(payload)) if r["case"] == case and r["backend"] == backend)
    for _, cells in _cells(page, "matrix"):
        for attrs, text, _ in cells:
            if attrs.get("data-r") == str(k):
                return set(attrs["class"].split()), text
    raise AssertionError((case, backend))


def test_a_failure_in_another_phase_than_its_entry_shows_both_phases_and_stands_apart():
    records = [
        _record("f/other", "tosa", "compile_error", expected="xfail", phase="compile", expected_phase="lower",
                verdict="unexpected_failure"),
        _record("f/import", "tosa", "compile_error", expected="xfail", phase="import", expected_phase="lower",
                verdict="unexpected_failure"),
        _record("f/same", "tosa", "compile_error", expected="xfail", phase="lower", expected_phase="lower"),
        _record("f/plain", "tosa", "compile_error", phase="lower", verdict="unexpected_failure"),
        # A report older than expected_phase: only "another phase" can be said.
        _record("f/old", "tosa", "compile_error", expected="xfail", phase="compile", verdict="unexpected_failure"),
    ]
    page = render_html({"schema_version": 1, "complete": True, "results": records})
    assert _cell_of(page, "f/other", "tosa") == ({"o-compile_error", "un", "pm"}, "compile(expected: lower)")
    assert _cell_of(page, "f/import", "tosa") == ({"o-compile_error", "un", "pm"}, "compileimport(expected: lower)")
    assert _cell_of(page, "f/same", "tosa") == ({"o-compile_error", "xf"}, "compilelower")
    assert _cell_of(page, "f/plain", "tosa") == ({"o-compile_error", "un"}, "compilelower")     # an ordinary red cell
    assert _cell_of(page, "f/old", "tosa") == ({"o-compile_error", "un", "pm"}, "compile(expected: another phase)")
    # The dashed frame and its mark are the stylesheet's; the details panel gets the entry's phase.
    assert ".un.pm{" in html_report._CSS and "expected_phase" in html_report._JS
    decoded = {r["case"]: r for r in decode_payload(_payload(page))}
    assert decoded["f/other"]["expected_phase"] == "lower" and decoded["f/plain"]["expected_phase"] is None


def test_a_record_keeps_its_entrys_phase():
    record = Record.from_json(_record("f/x", "tosa", "compile_error", expected="xfail", phase="compile",
                                      expected_phase="lower", verdict="unexpected_failure"))
    assert record.expected_phase.value == "lower" and record.to_json()["expected_phase"] == "lower"
    assert Record.from_json(_record("f/x", "tosa")).to_json()["expected_phase"] is None   # an older report


@needs_chromium
def test_chromium_puts_the_badge_the_signatures_and_the_matrix_on_the_first_screen(tmp_path):
    """On a 1280x800 window the first case rows are visible without scrolling (the phase times are
    folded), and the example link of a signature opens its cell."""
    page = tmp_path / "report.html"
    report = _signature_report()
    report["results"] = [dict(r, phase_durations={p: 0.1 for p in ("setup", "export", "import", "lower", "compile",
                                                                    "run", "compare")}) for r in report["results"]]
    page.write_text(render_html(report), encoding="utf-8")
    probe = ("<script>addEventListener('load',function(){var r=document.querySelector('#matrix tr[data-c]')"
             ".getBoundingClientRect();document.body.setAttribute('data-first-row',Math.round(r.bottom));"
             "document.body.setAttribute('data-folded',String(!document.getElementById('phase-times').open))})"
             "</script></body>")
    page.write_text(page.read_text(encoding="utf-8").replace("</body>", probe), encoding="utf-8")
    example = next(a["href"] for t, a in _parse(render_html(report)).tags if t == "a" and a.get("href", "")
                   .startswith("#cell="))
    dom = _chromium(tmp_path, "--window-size=1280,800", "--dump-dom", page.as_uri()).stdout
    body = next(a for t, a in _parse(dom).tags if t == "body")
    assert body.get("data-ready") == "1" and body.get("data-folded") == "true"
    assert 0 < int(body["data-first-row"]) <= 800
    dom = _chromium(tmp_path, "--window-size=1280,800", "--dump-dom", page.as_uri() + example).stdout
    selected = [a for t, a in _parse(dom).tags if t == "td" and "sel" in (a.get("class") or "").split()]
    assert len(selected) == 1
    assert decode_payload(_payload(dom))[int(selected[0]["data-r"])]["case"] == "conv_backward/2d/c9"


# ---------------------------------------------------------------------------------------------------
# The history page: a run without a figure, a version named once


def test_a_run_without_a_figure_is_a_gap_in_the_line_not_a_point_at_zero():
    from harness.views.history_html import line_chart, trend_points

    trends = [{"run": run, "backend": "b", "speedup": speedup, "compile_s": compile_s, "peak_mb": None}
              for run, speedup, compile_s in ((1, 2.0, 1.5), (2, None, 0.0), (3, 2.2, 1.6), (4, 2.1, 1.7))]
    runs = [{"run": run} for run in range(1, 5)]
    compile_points = trend_points(trends, "compile_s", "{:.2g} s")
    assert compile_points[(2, "b")] == (None, "")                       # nothing compiled in run 2: no figure
    line, = line_chart(compile_points, runs, 2.0, "{:.2g} s")["lines"]
    assert len(line["segments"]) == 1 and line["segments"][0].count(",") == 2   # runs 3 and 4; run 1 is a dot
    assert [d["title"] for d in line["dots"]] == ["b, run 1: 1.5 s", "b, run 3: 1.6 s", "b, run 4: 1.7 s"]
    bottom = line_chart(compile_points, runs, 2.0, "{:.2g} s")["bottom_y"]
    assert all(d["y"] < bottom for d in line["dots"])                    # no point on the axis
    # The speedup line joins its timed runs across a run without --perf.
    speed, = line_chart(trend_points(trends, "speedup", "{:.2g}x"), runs, 3.0, "{:.2g}x")["lines"]
    assert len(speed["segments"]) == 1 and speed["segments"][0].count(",") == 3
    assert trend_points(trends, "peak_mb", "{:.0f} MiB") == {(r, "b"): (None, "") for r in range(1, 5)}


def test_a_version_change_is_named_once_not_per_distribution_and_import_name():
    from harness.views.history_text import describe_changes

    changed = {"torch": ["2.13.0", "2.14.0"], "torch-mlir": ["20261001", "20261002"],
               "torch_mlir": ["20261001", "20261002"]}
    assert describe_changes(changed, "->") == "torch 2.13.0 -> 2.14.0, torch-mlir 20261001 -> 20261002"
    # Two names that moved differently are two changes.
    assert describe_changes({"torch-mlir": ["1", "2"], "torch_mlir": ["1", "3"]}, "->") == \
        "torch-mlir 1 -> 2, torch_mlir 1 -> 3"


@needs_chromium
def test_chromium_shows_a_results_margins_and_ulps_in_its_details(tmp_path):
    report = _fixture_report()
    record = next(r for r in report["results"] if r["case"] == "conv_backward/2d/basic" and r["backend"] == "tosa")
    record.update(margins={"grad_input": 0.42, "grad_weight": 1.5}, ulps={"grad_input": {"max": 12.0, "p99": 3.5}})
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    link = page.as_uri() + "#cell=" + urllib.parse.quote("tosa/conv_backward/2d/basic", safe="")
    dom = _chromium(tmp_path, "--dump-dom", link).stdout
    text = "".join(_parse(dom).text)
    assert "Margins (error over tolerance)" in text
    assert "0.42 \u00B7 ULPs max 12, p99 3.5" in text and "1.5" in text
    assert 'class="pbar over"' in dom   # the margin past 1.0 stands out
