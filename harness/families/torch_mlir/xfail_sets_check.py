"""torch-mlir's xfail_sets.py checked against a run: which entries are stale on the installed wheels.

    python -m harness check-xfail-sets XFAIL_SETS_PY --suite DIR --set NAME [--crash-set NAME] REPORT.json
                                       [--backend NAME] [--markdown] [-o PATH]

The file is evaluated as `import-xfail-sets` evaluates it; the report is a run of the suite on one
backend (with `--run-crash-set`, so that crash-set entries are attempted too). Per set:
- xfail set: stale entries (the test passed), and missing ones (it failed but no set lists it);
- crash set: entries that no longer crash (the test passed, or failed without crashing or hanging),
  and tests that crashed or hung but are not in it.
Names come out as lines of a Python set literal with the file's line and the outcome as a comment,
ready to paste into an upstream pull request. A test the run did not attempt is counted as unchecked.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from harness.errors import HarnessInputError
from harness.families.torch_mlir.xfail_sets_import import Origin, _torch_version, import_sets, project_suite
from harness.outcomes import Outcome
from harness.reports import read_report

FAMILY_PREFIX = "torch_mlir/"


@dataclasses.dataclass
class Finding:
    name: str
    origin: Origin | None     # where the file lists it, None for a missing name
    outcome: str
    message: str

    def line(self) -> str:
        where = f"{self.origin.at}: " if self.origin else ""
        detail = f" in {self.message}" if self.message else ""
        return f'    "{self.name}",  # {where}{self.outcome}{detail}'


@dataclasses.dataclass
class SetCheck:
    """One set's findings, each a list of Finding, headed by what to do with them."""

    name: str
    sections: list[tuple[str, list[Finding]]]
    unchecked: int


def results_of(records: list[dict], backend: str | None, where: str) -> tuple[str, dict[str, dict]]:
    """The backend and its suite results by test name; the backend may be left out when only one ran."""
    suite = [r for r in records if r["case"].startswith(FAMILY_PREFIX)]
    backends = sorted({r["backend"] for r in suite})
    if not backends:
        raise HarnessInputError(where, "holds no result of torch-mlir's suite",
                                "pass the --report-json of a run with --torch-mlir-suite=DIR")
    if backend is None:
        if len(backends) > 1:
            raise HarnessInputError(where, f"has suite results of {len(backends)} backends ({', '.join(backends)})",
                                    "say which with --backend NAME")
        backend = backends[0]
    elif backend not in backends:
        raise HarnessInputError(f"--backend={backend}", f"{where} has no suite result of it",
                                f"use one of {', '.join(backends)}")
    return backend, {r["case"][len(FAMILY_PREFIX):]: r for r in suite if r["backend"] == backend}


def _finding(name: str, origin: Origin | None, record: dict) -> Finding:
    first_line = (record.get("message") or "").strip().splitlines()[:1]
    phase = f"phase {record['phase']}: " if record.get("phase") else ""
    return Finding(name, origin, record["outcome"], phase + first_line[0][:160] if first_line else "")


def check_sets(xfail: dict[str, Origin], crash: dict[str, Origin], results: dict[str, dict],
               xfail_name: str, crash_name: str | None) -> list[SetCheck]:
    """Compare the chosen sets with what the run measured."""
    def outcome(name: str) -> Outcome | None:
        record = results.get(name)
        return None if record is None or record["outcome"] == Outcome.NOT_RUN else Outcome(record["outcome"])

    def findings(names, keep, origins) -> list[Finding]:
        return [_finding(n, origins.get(n), results[n]) for n in sorted(names) if outcome(n) and keep(outcome(n))]

    checks = [SetCheck(xfail_name, [
        ("Stale: these pass here; remove them from the set", findings(xfail, lambda o: not o.is_failure, xfail)),
        ("Missing: these fail here and no set lists them; add them",
         findings(set(results) - set(xfail) - set(crash), lambda o: o.is_failure and not o.is_crash, {})),
    ], sum(outcome(n) is None for n in xfail))]
    if crash_name:
        checks.append(SetCheck(crash_name, [
            ("No longer crash: these pass here; remove them from the set",
             findings(crash, lambda o: not o.is_failure, crash)),
            ("No longer crash: these fail without crashing or hanging; move them to the xfail set",
             findings(crash, lambda o: o.is_failure and not o.is_crash, crash)),
            ("Missing: these crash or hang here and are not in the set; add them",
             findings(set(results) - set(crash), lambda o: o.is_crash, {})),
        ], sum(outcome(n) is None for n in crash)))
    return checks


def render(checks: list[SetCheck], path: Path, backend: str, versions: str, markdown: bool) -> str:
    lines = []
    for check in checks:
        title = f"{check.name} ({path.name}) against {backend}, {versions}"
        lines += [f"## {title}" if markdown else title, ""]
        for heading, found in check.sections:
            lines.append(f"{heading}: {len(found)}")
            if found:
                lines += (["```python"] if markdown else []) + [f.line() for f in found] + (["```"] if markdown else [])
            lines.append("")
        if check.unchecked:
            lines += [f"Unchecked: {check.unchecked} entries were not run (a crash set is run with --run-crash-set)",
                      ""]
    return "\n".join(lines)


def _versions(environment: dict, backend: str) -> str:
    found = (environment.get("backends") or {}).get(backend, {}).get("versions") or {}
    shown = {name: found[name] for name in ("torch", "torch-mlir") if name in found}
    return ", ".join(f"{name} {version}" for name, version in shown.items()) or "versions unknown"


def check_command(args) -> str:
    """python -m harness check-xfail-sets: the findings as text (or Markdown), whatever they are."""
    from harness.families.torch_mlir.params import load_manifest

    suite = project_suite(args.project)
    report = read_report(args.report)
    records, environment = report["results"], report.get("environment") or {}
    backend, results = results_of(records, args.backend, str(args.report))
    imported = import_sets(args.path, args.set, args.crash_set, _torch_version(None), suite, load_manifest(suite))
    checks = check_sets(imported.xfail, imported.crash, results, args.set, args.crash_set)
    return render(checks, args.path, backend, _versions(environment, backend), args.markdown)
