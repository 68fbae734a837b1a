"""harness.expectations.update: proposed xfail / crash-set edits that make a run match.

Records are produced by `simulate`, which judges a "world" (case -> outcome and phase) against the
expectation files with the harness's own loader and `decide`, as the runner does. `settle` applies
a proposal, reruns the same world, checks that nothing is unexpected any more and that a second
update proposes nothing (idempotence).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from harness.errors import HarnessInputError
from harness.expectations import apply, load_expectations, propose
from harness.outcomes import Expected, Outcome, Phase, decide
from harness.record import Record

BACKEND = "be"
VERSIONS = {"python": "3.11.7", "torch": "2.13.0+cpu", "torch-mlir": "20261001"}
IDS = ["conv_backward/1d/groups2", "conv_backward/2d/basic", "conv_backward/2d/crashy", "conv_backward/2d/groups2",
       "conv_backward/2d/groups4", "conv_backward/2d/transposed_a", "conv_backward/2d/transposed_b",
       "conv_backward/3d/groups2", "conv_backward/3d/groups4", "conv_backward/3d/old", "conv_forward/2d/basic",
       "conv_forward/2d/slow"]

XFAIL = """\
# Expected failures of be.
# Globs use fnmatch: '*' also matches '/'.

- id: conv_backward/2d/transposed_a
  phase: lower
  reason: &legalize >-
    failed to legalize operation 'torch.aten.convolution_backward'
    that was explicitly marked illegal
  issue: https://github.com/llvm/torch-mlir/issues/1
  when: {torch-mlir: "==20261001"}
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: *legalize
  when: {torch-mlir: "==20261001"}

# Grouped cases fail in the decomposition.
- id: "conv_backward/*/groups*"   # every grouped case
  phase: lower
  reason: grouped decomposition builds a bad shape
- {id: conv_forward/2d/basic, phase: compile, reason: *legalize}

- id: conv_backward/3d/old
  reason: only on an old torch-mlir
  when: {torch-mlir: "<20250101"}
"""

CRASH = """\
# Cases be must not attempt.
- id: conv_forward/2d/slow
  reason: hangs in the lowering
  issue: https://example.com/2
  timeout: 5
"""

# How every case behaves when the files above were measured: the run matches them.
MEASURED = {
    "conv_backward/1d/groups2": ("compile_error", "lower"),
    "conv_backward/2d/basic": ("passed", None),
    "conv_backward/2d/crashy": ("passed", None),
    "conv_backward/2d/groups2": ("compile_error", "lower"),
    "conv_backward/2d/groups4": ("compile_error", "lower"),
    "conv_backward/2d/transposed_a": ("compile_error", "lower"),
    "conv_backward/2d/transposed_b": ("compile_error", "lower"),
    "conv_backward/3d/groups2": ("compile_error", "lower"),
    "conv_backward/3d/groups4": ("compile_error", "lower"),
    "conv_backward/3d/old": ("passed", None),
    "conv_forward/2d/basic": ("compile_error", "compile"),
    "conv_forward/2d/slow": ("timed_out", "lower"),
}


class Project:
    def __init__(self, root: Path, xfail: str = XFAIL, crash: str = CRASH):
        self.xfail, self.crash = root / "xfail" / f"{BACKEND}.yaml", root / "crash_sets" / f"{BACKEND}.yaml"
        for path, text in ((self.xfail, xfail), (self.crash, crash)):
            path.parent.mkdir(parents=True, exist_ok=True)
            if text is not None:
                path.write_text(text)

    def load(self):
        return load_expectations(BACKEND, self.xfail.parent, self.crash.parent, IDS, VERSIONS)

    def simulate(self, world: dict, run_crash_set: bool = False, signatures: dict | None = None) -> list[dict]:
        """The records a run of `world`'s cases would give against the files as they are now."""
        expectations = self.load()
        records = []
        for case, (outcome, phase) in sorted(world.items()):
            entry = expectations.lookup(case)
            expected = entry.kind if entry else Expected.PASS
            if expected is Expected.CRASH and not run_crash_set:
                outcome, phase = "not_run", None
            verdict = decide(Outcome(outcome), expected, phase and Phase(phase), entry.phase if entry else None)
            signature = (signatures or {}).get(case)
            records.append({"case": case, "backend": BACKEND, "nodeid": f"cases/x.py::{case}[{BACKEND}]",
                            "outcome": outcome, "phase": phase, "expected": expected.value,
                            "verdict": verdict.value, "expectation_source": entry.source if entry else None,
                            "message": f"{outcome} of {case}\nsecond line" if outcome != "passed" else "",
                            "signature": signature})
        return records

    def propose(self, records, **kw):
        return propose([Record.from_json(r) for r in records], self.xfail, self.crash, **kw)

    def text(self, which: str) -> str:
        return (self.xfail if which == "xfail" else self.crash).read_text()


def world(**changes) -> dict:
    """MEASURED with some cases changed: world(conv_backward__2d__basic=("mismatch", "compare"))."""
    result = dict(MEASURED)
    for key, value in changes.items():
        result[key.replace("__", "/")] = value
    return result


def settle(project: Project, now: dict, run_crash_set: bool = False, case_ids=None, signatures=None) -> dict:
    """Propose from a run of `now`, apply, rerun: nothing unexpected, and nothing more to change."""
    records = project.simulate(now, run_crash_set, signatures)
    proposals = project.propose(records, case_ids=case_ids)
    apply(proposals)
    project.load()  # loads with the harness's own checks
    rerun = project.simulate(now, run_crash_set, signatures)
    unexpected = [(r["case"], r["verdict"]) for r in rerun if r["verdict"] not in ("ok", "skipped")]
    assert unexpected == []
    assert project.propose(rerun, case_ids=case_ids) == {}
    return proposals


@pytest.fixture
def project(tmp_path) -> Project:
    return Project(tmp_path)


# -------------------------------------------------------------------------- nothing to change

def test_a_matching_run_changes_nothing(project):
    records = project.simulate(MEASURED, run_crash_set=True)
    assert {r["verdict"] for r in records} == {"ok"}
    assert project.propose(records) == {}
    assert project.propose(project.simulate(MEASURED)) == {}  # crash set not run


def test_crash_set_entries_not_run_stay_untouched(project):
    now = world(conv_forward__2d__slow=("passed", None))
    records = project.simulate(now)  # without --run-crash-set: not_run
    assert [r["outcome"] for r in records if r["case"] == "conv_forward/2d/slow"] == ["not_run"]
    assert project.propose(records) == {}


def test_entries_the_run_did_not_exercise_stay_untouched(project):
    # deselected: only the 2d backward cases ran, and the grouped glob's other cases were not judged
    now = {c: v for c, v in world(conv_backward__2d__transposed_a=("passed", None)).items()
           if c.startswith("conv_backward/2d/transposed")}
    proposals = settle(project, now)
    text = proposals[project.xfail]
    untouched = XFAIL[XFAIL.index("# Grouped cases"):]
    assert text.endswith(untouched) and "transposed_a" not in text


# ------------------------------------------------------------------------- unexpected passes

def test_a_passing_exact_entry_is_removed_and_everything_else_kept(project):
    proposals = settle(project, world(conv_backward__2d__transposed_b=("passed", None)))
    assert set(proposals) == {project.xfail}
    expected = XFAIL.replace("""\
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: *legalize
  when: {torch-mlir: "==20261001"}
""", "")
    assert project.text("xfail") == expected


def test_a_removed_entry_takes_the_comment_directly_above_it(project):
    now = world(**{f"conv_backward__{d}__groups{g}": ("passed", None) for d in ("1d", "2d", "3d") for g in (2, 4)})
    settle(project, now)
    text = project.text("xfail")
    assert "Grouped cases" not in text and "groups*" not in text
    assert text.startswith("# Expected failures of be.\n# Globs use fnmatch")  # the header stays
    assert "\n\n\n" not in text
    assert text.index("transposed_b") < text.index("conv_forward/2d/basic") < text.index("3d/old")


def test_the_anchor_of_a_removed_entry_moves_to_its_first_alias(project):
    settle(project, world(conv_backward__2d__transposed_a=("passed", None)))
    text = project.text("xfail")
    assert "transposed_a" not in text and "issues/1" not in text
    assert """\
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: &legalize >-
    failed to legalize operation 'torch.aten.convolution_backward'
    that was explicitly marked illegal
  when: {torch-mlir: "==20261001"}
""" in text
    assert "- {id: conv_forward/2d/basic, phase: compile, reason: *legalize}" in text  # a later alias stays


def test_an_anchor_moving_into_a_flow_mapping_is_written_as_flow(project):
    now = world(conv_backward__2d__transposed_a=("passed", None), conv_backward__2d__transposed_b=("passed", None))
    settle(project, now)
    text = project.text("xfail")
    [line] = [line for line in text.splitlines() if "conv_forward/2d/basic" in line]
    assert line.startswith("- {id: conv_forward/2d/basic, phase: compile, reason: &legalize ") and line.endswith("}")
    entry = next(e for e in project.load().entries if e.pattern == "conv_forward/2d/basic")
    assert entry.reason == ("failed to legalize operation 'torch.aten.convolution_backward' "
                            "that was explicitly marked illegal")


def test_an_entry_less_file_becomes_an_empty_list_with_its_comments(tmp_path):
    project = Project(tmp_path, xfail="""\
# Header.

# about a
- id: conv_backward/2d/basic
  reason: x
""", crash="[]\n")
    proposals = settle(project, {"conv_backward/2d/basic": ("passed", None)})
    assert proposals == {project.xfail: "# Header.\n\n[]\n"}


# ------------------------------------------------------------------------------------- globs

def test_a_partly_passing_glob_becomes_exact_copies_of_its_failing_cases(project):
    now = world(conv_backward__2d__groups2=("passed", None), conv_backward__3d__groups4=("passed", None))
    settle(project, now)
    text = project.text("xfail")
    assert """\
# Grouped cases fail in the decomposition.
# review: narrowed from conv_backward/*/groups* by --update-expectations (2 now pass)
- id: conv_backward/1d/groups2   # every grouped case
  phase: lower
  reason: &conv_backward_groups grouped decomposition builds a bad shape
- id: conv_backward/2d/groups4   # every grouped case
  phase: lower
  reason: *conv_backward_groups
- id: conv_backward/3d/groups2   # every grouped case
  phase: lower
  reason: *conv_backward_groups
- {id: conv_forward/2d/basic""" in text
    assert {e.reason for e in project.load().entries if "groups" in e.pattern} == {
        "grouped decomposition builds a bad shape"}


def test_copies_of_an_anchored_glob_refer_to_the_first_copy(tmp_path):
    project = Project(tmp_path, xfail="""\
- id: conv_backward/*/groups*
  phase: lower
  reason: &grouped >-
    grouped decomposition
  when: {torch-mlir: "==20261001"}
- id: conv_backward/2d/basic
  reason: *grouped
""", crash="[]\n")
    now = {c: v for c, v in world(conv_backward__2d__groups2=("passed", None),
                                  conv_backward__2d__basic=("mismatch", "compare")).items()
           if "groups" in c or c == "conv_backward/2d/basic"}
    settle(project, now)
    text = project.text("xfail")
    assert text.count("&grouped") == 1 and text.count("*grouped") == 4
    assert text.index("&grouped") < text.index("- id: conv_backward/2d/groups4")
    assert [e.reason for e in project.load().entries] == ["grouped decomposition"] * 5


def test_with_the_registry_a_glob_keeps_the_cases_the_run_did_not_exercise(project):
    # `-k 2d`: only the 2d grouped cases ran; 1d and 3d ones are unknown, so they stay expected to fail
    now = {c: v for c, v in world(conv_backward__2d__groups2=("passed", None)).items() if "/2d/" in c}
    settle(project, now, case_ids=IDS)
    text = project.text("xfail")
    ids = [e.pattern for e in project.load().entries if "groups" in e.pattern]
    assert ids == ["conv_backward/1d/groups2", "conv_backward/2d/groups4", "conv_backward/3d/groups*"]
    assert "(1 now pass)" in text
    full = project.simulate(world(conv_backward__2d__groups2=("passed", None)))
    assert {r["verdict"] for r in full} == {"ok", "skipped"}  # the full run matches too


def test_without_the_registry_a_glob_narrows_to_what_the_run_saw(project):
    now = {c: v for c, v in world(conv_backward__2d__groups2=("passed", None)).items() if "/2d/" in c}
    settle(project, now)
    assert [e.pattern for e in project.load().entries if "groups" in e.pattern] == ["conv_backward/2d/groups4"]


# ------------------------------------------------------------------------------------ phases

# A failure in another phase is another failure: the entry's reason, measured on the old one, would
# now be false, so the reason and signature are rewritten from the new one (issue 42).

def test_a_changed_phase_rewrites_the_entry_in_place(project):
    settle(project, world(conv_backward__2d__transposed_b=("compile_error", "compile")),
           signatures={"conv_backward/2d/transposed_b": "linalg.generic op has a bad operand"})
    assert project.text("xfail") == XFAIL.replace("""\
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: *legalize
""", """\
# review: reason rewritten by --update-expectations (phase lower -> compile); check it
- id: conv_backward/2d/transposed_b
  phase: compile
  reason: linalg.generic op has a bad operand
  signature: linalg.generic op has a bad operand
""")


def test_a_phase_in_a_flow_mapping_is_rewritten_in_place(project):
    settle(project, world(conv_forward__2d__basic=("runtime_error", "run")),
           signatures={"conv_forward/2d/basic": "boom"})
    assert ("# review: reason rewritten by --update-expectations (phase compile -> run); check it\n"
            "- {id: conv_forward/2d/basic, phase: run, reason: boom, signature: boom}\n") in project.text("xfail")


def test_a_glob_whose_cases_all_moved_to_one_failure_keeps_its_id(project):
    grouped = [f"conv_backward/{d}/groups{g}" for d in ("1d", "2d", "3d") for g in (2, 4)]
    now = {**MEASURED, **{c: ("compile_error", "compile") for c in grouped}}
    settle(project, now, signatures={c: "grouped compile fails" for c in grouped})
    assert XFAIL.replace('- id: "conv_backward/*/groups*"   # every grouped case\n  phase: lower\n'
                         '  reason: grouped decomposition builds a bad shape\n',
                         '# review: reason rewritten by --update-expectations (phase lower -> compile); check it\n'
                         '- id: "conv_backward/*/groups*"   # every grouped case\n  phase: compile\n'
                         '  reason: grouped compile fails\n  signature: grouped compile fails\n') \
        == project.text("xfail")


def test_a_glob_with_mixed_phases_is_split_and_the_moved_case_gets_its_own_reason(project):
    settle(project, world(conv_backward__2d__groups4=("mismatch", "compare")),
           signatures={"conv_backward/2d/groups4": "mismatch: grad_input: N of N elements differ"})
    entries = {e.pattern: (e.phase, e.reason) for e in project.load().entries if "groups" in e.pattern}
    old = "grouped decomposition builds a bad shape"
    assert entries == {"conv_backward/1d/groups2": (Phase.LOWER, old), "conv_backward/2d/groups2": (Phase.LOWER, old),
                       "conv_backward/2d/groups4": (Phase.COMPARE, "mismatch: grad_input: N of N elements differ"),
                       "conv_backward/3d/groups2": (Phase.LOWER, old), "conv_backward/3d/groups4": (Phase.LOWER, old)}
    assert "(1 failed in another phase)" in project.text("xfail")


# ------------------------------------------------------------- a changed failure (issue 42)

DILATION = "unsupported: dilation"
DILATED = ["conv_backward/2d/groups2", "conv_backward/2d/groups4"]


def test_a_fixed_cause_leaves_no_reason_that_describes_it(tmp_path):
    # The measured bug: a backend's dilation refusal was fixed, the cases then failed in compare,
    # and the update changed the phase but kept "unsupported: dilation".
    project = Project(tmp_path, xfail="[]\n", crash="[]\n")
    refused = {c: ("compile_error", "lower") for c in DILATED}
    settle(project, refused, signatures={c: DILATION for c in DILATED})
    assert project.text("xfail").count(f"reason: '{DILATION}'") == 2
    fixed = {c: ("mismatch", "compare") for c in DILATED}
    settle(project, fixed, signatures={c: "mismatch: grad_input: N of N elements differ" for c in DILATED})
    assert "dilation" not in project.text("xfail")
    assert [(e.phase, e.reason, e.signature) for e in project.load().entries] == [
        (Phase.COMPARE, "mismatch: grad_input: N of N elements differ", "mismatch: grad_input: N of N elements differ")
    ] * 2


def test_a_changed_signature_in_the_same_phase_rewrites_the_reason(tmp_path):
    project = Project(tmp_path, xfail=f"""\
- id: conv_backward/2d/groups2
  phase: lower
  reason: dilation is refused   # measured on 20261001
  signature: '{DILATION}'
  issue: https://example.com/7
""", crash="[]\n")
    settle(project, {"conv_backward/2d/groups2": ("compile_error", "lower")},
           signatures={"conv_backward/2d/groups2": "failed to legalize 'torch.aten.convolution'"})
    assert project.text("xfail") == """\
# review: reason rewritten by --update-expectations (another signature); check it and the issue
- id: conv_backward/2d/groups2
  phase: lower
  reason: failed to legalize 'torch.aten.convolution'   # measured on 20261001
  signature: failed to legalize 'torch.aten.convolution'
  issue: https://example.com/7
"""


def test_a_hand_written_reason_stays_while_its_failure_is_unchanged(tmp_path):
    xfail = f"""\
# written by --update-expectations, then its reason by hand
- id: conv_backward/2d/groups2
  phase: lower
  reason: the backend refuses dilated convolutions (see the issue)
  signature: '{DILATION}'
"""
    project = Project(tmp_path, xfail=xfail, crash="[]\n")
    records = project.simulate({"conv_backward/2d/groups2": ("compile_error", "lower")},
                               signatures={"conv_backward/2d/groups2": DILATION})
    assert project.propose(records) == {}


def test_without_a_signature_only_a_changed_phase_tells_a_changed_failure(project):
    # Nothing says what a hand-written reason was measured on: it stays, and gets no signature
    # (which would rewrite every hand-written file on its first update).
    same_phase = project.simulate(MEASURED, signatures={c: "something else" for c in MEASURED})
    assert project.propose(same_phase) == {}


def test_an_anchored_reason_rewritten_moves_its_anchor_to_the_first_alias(project):
    settle(project, world(conv_backward__2d__transposed_a=("mismatch", "compare")),
           signatures={"conv_backward/2d/transposed_a": "mismatch: grad_weight: N of N elements differ"})
    text = project.text("xfail")
    assert text.count("&legalize") == 1 and text.index("transposed_b") < text.index("&legalize")
    reasons = {e.pattern: e.reason for e in project.load().entries}
    assert reasons["conv_backward/2d/transposed_a"] == "mismatch: grad_weight: N of N elements differ"
    assert reasons["conv_backward/2d/transposed_b"] == reasons["conv_forward/2d/basic"] == (
        "failed to legalize operation 'torch.aten.convolution_backward' that was explicitly marked illegal")


def test_a_glob_case_with_another_signature_gets_an_entry_of_its_own(tmp_path):
    project = Project(tmp_path, xfail="""\
- id: conv_backward/*/groups*
  phase: lower
  reason: grouped decomposition
  signature: bad shape
""", crash="[]\n")
    grouped = [c for c in IDS if "groups" in c]
    signatures = {c: "bad shape" for c in grouped} | {"conv_backward/3d/groups4": "bad stride"}
    settle(project, {c: ("compile_error", "lower") for c in grouped}, signatures=signatures, case_ids=IDS)
    entries = {e.pattern: (e.reason, e.signature) for e in project.load().entries}
    assert entries == {"conv_backward/1d/groups2": ("grouped decomposition", "bad shape"),
                       "conv_backward/2d/groups*": ("grouped decomposition", "bad shape"),
                       "conv_backward/3d/groups2": ("grouped decomposition", "bad shape"),
                       "conv_backward/3d/groups4": ("bad stride", "bad stride")}
    assert "(1 failed with another signature)" in project.text("xfail")


def test_a_signature_must_be_a_non_empty_string(tmp_path):
    project = Project(tmp_path, xfail="- {id: conv_backward/2d/basic, reason: r, signature: ''}\n", crash="[]\n")
    with pytest.raises(HarnessInputError, match="'signature' must be a non-empty string"):
        project.load()


# ------------------------------------------------------------------------------ new failures

def test_new_failures_are_appended_for_review(project):
    signatures = {"conv_backward/2d/basic": "grad_input: 3 of 72 elements differ",
                  "conv_backward/2d/crashy": "grad_input: 3 of 72 elements differ"}
    now = world(conv_backward__2d__basic=("mismatch", "compare"), conv_backward__2d__crashy=("mismatch", "compare"))
    proposals = settle(project, now, signatures=signatures)
    assert proposals[project.xfail] == XFAIL + """
# review: added by --update-expectations from a run on be; check the reason
- id: conv_backward/2d/basic
  phase: compare
  reason: 'grad_input: 3 of 72 elements differ'
  signature: 'grad_input: 3 of 72 elements differ'

# review: added by --update-expectations from a run on be; check the reason
- id: conv_backward/2d/crashy
  phase: compare
  reason: 'grad_input: 3 of 72 elements differ'
  signature: 'grad_input: 3 of 72 elements differ'
"""


def test_a_reason_without_signature_is_the_message_first_line_safely_quoted(tmp_path):
    project = Project(tmp_path, xfail="# nothing yet\n[]  # measured empty\n", crash=None)
    tricky = "*oops: it's a \"quote\" # not a comment | [x] {y} " + "word " * 30
    records = project.simulate({"conv_backward/2d/basic": ("compile_error", "lower")})
    records[0]["message"] = "\n" + tricky + "\nstack..."
    proposals = project.propose(records)
    text = proposals[project.xfail]
    assert text.startswith("# nothing yet\n\n# review: added")
    assert text.endswith("# measured empty\n")
    assert "  reason: >-\n" in text and max(len(line) for line in text.splitlines()) <= 100
    apply(proposals)
    [entry] = project.load().entries
    assert entry.reason == " ".join(tricky.split()) and entry.phase is Phase.LOWER


def test_a_crash_of_an_expected_pass_goes_to_the_crash_set(project):
    now = world(conv_backward__2d__crashy=("crashed", "lower"))
    proposals = settle(project, now, run_crash_set=True,
                       signatures={"conv_backward/2d/crashy": "SIGSEGV in mlir::Operation::verify"})
    assert set(proposals) == {project.crash}
    assert project.text("crash") == CRASH + """
# review: added by --update-expectations from a run on be; check the reason
- id: conv_backward/2d/crashy
  phase: lower
  reason: SIGSEGV in mlir::Operation::verify
  signature: SIGSEGV in mlir::Operation::verify
"""


def test_an_xfail_case_that_hangs_moves_to_the_crash_set(project):
    settle(project, world(conv_backward__2d__transposed_a=("timed_out", "lower")))
    xfail, crash = project.text("xfail"), project.text("crash")
    assert "transposed_a" not in xfail and "reason: &legalize >-" in xfail  # anchor moved to transposed_b
    assert crash.endswith("""\
# review: moved from the xfail file by --update-expectations (it crashed or hung); check the reason
- id: conv_backward/2d/transposed_a
  phase: lower
  reason: timed_out of conv_backward/2d/transposed_a
  issue: https://github.com/llvm/torch-mlir/issues/1
  when: {torch-mlir: "==20261001"}
""")


# ------------------------------------------------------------------------- crash-set entries

def test_a_crash_set_entry_that_now_passes_is_removed(project):
    proposals = settle(project, world(conv_forward__2d__slow=("passed", None)), run_crash_set=True)
    assert proposals == {project.crash: "# Cases be must not attempt.\n[]\n"}


def test_a_crash_set_entry_that_fails_without_crashing_moves_to_the_xfail_file(project):
    settle(project, world(conv_forward__2d__slow=("compile_error", "compile")), run_crash_set=True)
    assert project.text("crash") == "# Cases be must not attempt.\n[]\n"
    assert project.text("xfail").endswith("""\
- id: conv_backward/3d/old
  reason: only on an old torch-mlir
  when: {torch-mlir: "<20250101"}

# review: moved from the crash set by --update-expectations (it failed without crashing); check the reason
- id: conv_forward/2d/slow
  phase: compile
  reason: compile_error of conv_forward/2d/slow
  issue: https://example.com/2
""")


def test_a_crash_set_entry_without_phase_accepts_a_crash_in_any_phase(project):
    records = project.simulate(world(conv_forward__2d__slow=("crashed", "compile")), run_crash_set=True)
    assert project.propose(records) == {}


def test_a_crash_set_entry_that_crashes_in_another_phase_gets_it(tmp_path):
    crash = CRASH.replace("  reason: hangs", "  phase: lower  # where it hung\n  reason: hangs")
    project = Project(tmp_path, crash=crash)
    settle(project, world(conv_forward__2d__slow=("crashed", "compile")), run_crash_set=True,
           signatures={"conv_forward/2d/slow": "SIGSEGV during phase compile"})
    assert project.text("crash") == crash.replace("- id: conv_forward/2d/slow", "# review: reason rewritten by "
                                                  "--update-expectations (phase lower -> compile); check it and the "
                                                  "issue\n- id: conv_forward/2d/slow").replace(
        "phase: lower", "phase: compile").replace(
        "reason: hangs in the lowering",
        "reason: SIGSEGV during phase compile\n  signature: SIGSEGV during phase compile")


# ----------------------------------------------------------------------------- files, inputs

def test_missing_files_are_created(tmp_path):
    project = Project(tmp_path, xfail=None, crash=None)
    now = {"conv_backward/2d/basic": ("mismatch", "compare"), "conv_backward/2d/crashy": ("crashed", "run")}
    proposals = settle(project, now, run_crash_set=True)
    assert project.text("xfail").startswith("# Expected failures of be;")
    assert "- id: conv_backward/2d/crashy\n  phase: run\n" in project.text("crash")
    assert set(proposals) == {project.xfail, project.crash}


def test_an_inactive_entry_stays_and_an_active_one_is_added(project):
    settle(project, world(conv_backward__3d__old=("mismatch", "compare")))
    text = project.text("xfail")
    assert text.count("- id: conv_backward/3d/old\n") == 2 and text.index("only on an old") < text.index("# review")


def test_a_record_naming_a_changed_file_is_refused(project):
    records = project.simulate(world(conv_backward__2d__transposed_b=("passed", None)))
    project.xfail.write_text("\n\n" + XFAIL)  # every entry moved down two lines
    with pytest.raises(HarnessInputError, match="changed since the run"):
        project.propose(records)


def test_records_of_another_file_are_not_judged_here(project, tmp_path):
    records = project.simulate(world(conv_backward__2d__transposed_b=("passed", None)))
    other = Project(tmp_path / "elsewhere")
    records = [Record.from_json(r) for r in records]
    assert propose(records, tmp_path / "elsewhere" / "xfail" / "be.yaml", other.crash)  # xfail/be.yaml: same
    renamed = Project(tmp_path / "renamed")
    (tmp_path / "renamed" / "xfail" / "be.yaml").rename(tmp_path / "renamed" / "xfail" / "other.yaml")
    assert propose(records, tmp_path / "renamed" / "xfail" / "other.yaml", renamed.crash) == {}


def test_indented_trailing_comments_belong_to_their_entry(tmp_path):
    project = Project(tmp_path, xfail=textwrap.dedent("""\
        - id: conv_backward/2d/basic
          reason: a
          # measured twice
        # about groups
        - id: conv_backward/2d/groups2
          reason: b
        """), crash="[]\n")
    records = project.simulate({"conv_backward/2d/basic": ("passed", None)})
    assert project.propose(records)[project.xfail] == "# about groups\n- id: conv_backward/2d/groups2\n  reason: b\n"


def test_odd_layouts_dash_on_its_own_line_and_a_taken_anchor_name(tmp_path):
    project = Project(tmp_path, xfail=textwrap.dedent("""\
        -
          id: conv_backward/2d/basic
          phase: lower
          reason: r1
        - id: conv_backward/*/groups*
          reason: r
        - {id: conv_forward/2d/basic, phase: compile, reason: &conv_backward_groups r2}
        """), crash="[]\n")
    now = {"conv_backward/2d/basic": ("crashed", None), "conv_backward/2d/groups2": ("passed", None),
           "conv_backward/2d/groups4": ("mismatch", "compare"), "conv_backward/3d/groups2": ("mismatch", "compare"),
           "conv_forward/2d/basic": ("runtime_error", None)}
    settle(project, now, run_crash_set=True)
    assert project.text("xfail") == textwrap.dedent("""\
        # review: narrowed from conv_backward/*/groups* by --update-expectations (1 now pass)
        - id: conv_backward/2d/groups4
          reason: &conv_backward_groups_2 r
        - id: conv_backward/3d/groups2
          reason: *conv_backward_groups_2
        # review: reason rewritten by --update-expectations (phase compile -> none); check it
        - {id: conv_forward/2d/basic, reason: runtime_error of conv_forward/2d/basic}
        """)
    assert project.text("crash").endswith("- id: conv_backward/2d/basic\n  reason: crashed of conv_backward/2d/basic\n")


def test_a_hash_line_in_a_folded_reason_is_text_and_an_item_comment_goes_with_its_item(tmp_path):
    project = Project(tmp_path, xfail=textwrap.dedent("""\
        - id: conv_backward/2d/basic
          reason: >-
            first part
            # still the reason
        - {id: conv_backward/2d/groups2, reason: b}  # measured on 20261001
        # about groups4
        - id: conv_backward/2d/groups4
          reason: c
        """), crash="[]\n")
    now = {"conv_backward/2d/basic": ("mismatch", "compare"), "conv_backward/2d/groups2": ("passed", None),
           "conv_backward/2d/groups4": ("mismatch", "compare")}
    settle(project, now)
    assert project.text("xfail") == textwrap.dedent("""\
        - id: conv_backward/2d/basic
          reason: >-
            first part
            # still the reason
        # about groups4
        - id: conv_backward/2d/groups4
          reason: c
        """)
    assert project.load().entries[0].reason == "first part # still the reason"


def test_a_new_reason_the_loader_would_read_as_another_type_is_quoted(tmp_path):
    project = Project(tmp_path, xfail="[]\n", crash="[]\n")
    settle(project, {"conv_backward/2d/basic": ("mismatch", "compare")}, signatures={"conv_backward/2d/basic": "yes"})
    assert "  reason: 'yes'\n" in project.text("xfail") and project.load().entries[0].reason == "yes"


# ---------------------------------------------------------------- outcomes that vary between runs

def with_attempts(records: list[dict], case: str, *outcomes: str) -> list[dict]:
    """The records, the case's with the attempts its reruns (--rerun-failures) gave."""
    for r in records:
        if r["case"] == case:
            r["attempts"] = [{"outcome": o, "phase": None if o == "passed" else "lower"} for o in outcomes]
            r["flaky"] = len(set(outcomes)) > 1
    return records


def verdicts_of(project: Project, now: dict, case: str) -> list[str]:
    """The case's verdict for each outcome `now` gives it and for a pass, against the files as they are."""
    entry = project.load().lookup(case)
    return [decide(Outcome(o), entry.kind, p and Phase(p), entry.phase, nondeterministic=entry.nondeterministic).value
            for o, p in (now[case], ("passed", None))]


def test_an_entry_whose_reruns_disagree_is_marked_nondeterministic(project):
    case = "conv_backward/2d/transposed_b"
    records = with_attempts(project.simulate(world(conv_backward__2d__transposed_b=("passed", None))), case,
                            "passed", "compile_error")
    apply(project.propose(records))
    assert project.text("xfail") == XFAIL.replace("""\
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: *legalize
  when: {torch-mlir: "==20261001"}
""", """\
# review: marked nondeterministic by --update-expectations (its reruns gave passed, compile_error)
- id: conv_backward/2d/transposed_b
  phase: lower
  reason: *legalize
  when: {torch-mlir: "==20261001"}
  nondeterministic: true
""")
    assert verdicts_of(project, MEASURED, case) == ["flaky", "flaky"]
    again = project.simulate(world(conv_backward__2d__transposed_b=("passed", None)))
    assert project.propose(again) == {}   # a marked entry stays, whichever outcome came


def test_a_case_no_entry_names_whose_reruns_disagree_gets_a_marked_entry(project):
    case = "conv_backward/2d/basic"
    now = world(conv_backward__2d__basic=("mismatch", "compare"))
    apply(project.propose(with_attempts(project.simulate(now), case, "mismatch", "passed")))
    entry = project.load().lookup(case)
    assert (entry.pattern, entry.phase, entry.nondeterministic) == (case, None, True)
    assert verdicts_of(project, now, case) == ["flaky", "flaky"]


def test_a_failure_that_repeats_is_never_marked(project):
    case = "conv_backward/2d/basic"
    now = world(conv_backward__2d__basic=("mismatch", "compare"))
    apply(project.propose(with_attempts(project.simulate(now), case, "mismatch", "mismatch")))
    entry = project.load().lookup(case)
    assert (entry.phase, entry.nondeterministic) == (Phase.COMPARE, False)
    assert "nondeterministic" not in project.text("xfail")


def test_a_glob_gives_its_varying_case_an_entry_of_its_own(project):
    case = "conv_backward/2d/groups4"
    now = world(conv_backward__2d__groups4=("passed", None))
    apply(project.propose(with_attempts(project.simulate(now), case, "passed", "compile_error"), case_ids=IDS))
    expectations = project.load()
    assert expectations.lookup(case).nondeterministic and expectations.lookup(case).pattern == case
    assert not expectations.lookup("conv_backward/2d/groups2").nondeterministic
    assert verdicts_of(project, MEASURED, case) == ["flaky", "flaky"]


def test_a_crash_set_case_whose_reruns_disagree_moves_to_the_xfail_file_marked(project):
    case = "conv_forward/2d/slow"
    now = world(conv_forward__2d__slow=("passed", None))
    records = with_attempts(project.simulate(now, run_crash_set=True), case, "passed", "compile_error")
    apply(project.propose(records))
    entry = project.load().lookup(case)
    assert (entry.kind, entry.nondeterministic, entry.issue, entry.phase) == (Expected.XFAIL, True,
                                                                                "https://example.com/2", None)


# ------------------------------------------------------------------ end to end (pytest, a worker)

def test_an_update_after_a_fix_names_the_new_failure_end_to_end(e2e_project):
    # Run 1: the backend refuses the backward cases in lower; the update writes their entries.
    backward = "conv_backward/*"
    e2e_project.add_fake("fake", "raise", "lower", backward)
    first = e2e_project.run("--backend=fake", "--update-expectations")
    path = e2e_project.path / "xfail" / "fake.yaml"
    assert "--update-expectations: rewrote xfail/fake.yaml" in first.output, first.output
    assert path.read_text().count("failed to legalize") == 4   # reason and signature of each

    # A reviewer words one reason by hand; a run whose failures are unchanged keeps it.
    hand = "fake.op has no lowering (hand-written)"
    text = path.read_text()
    start = text.index("- id: conv_backward/2d/tiny\n")
    reason = text.index("  reason:", start)
    path.write_text(text[:reason] + f"  reason: {hand}\n" + text[text.index("\n", reason) + 1:])
    second = e2e_project.run("--backend=fake", "--update-expectations")
    assert second.ret == 0 and "the expectation files already match this run" in second.output, second.output
    assert hand in path.read_text()

    # The refusal is fixed: the same cases now give wrong values, a mismatch in compare.
    e2e_project.add_fake("fake", "wrong_values", "run", backward)
    third = e2e_project.run("--backend=fake", "--update-expectations")
    assert "--update-expectations: rewrote xfail/fake.yaml" in third.output, third.output
    text = path.read_text()
    assert "legalize" not in text and hand not in text
    entries = {e["id"]: e for e in yaml.safe_load(text)}
    for case in ("conv_backward/2d/tiny", "conv_backward/2d/tiny_stride2"):
        signature = third.record("fake", case)["signature"]
        assert signature.startswith("mismatch: ")
        assert (entries[case]["phase"], entries[case]["reason"], entries[case]["signature"]) == (
            "compare", signature, signature)


def test_a_pattern_stands_for_an_id_it_matches_or_for_itself_when_none_is_found():
    """Without the registry, each entry's id pattern is checked through an id it matches; a negated
    class that none of the tried characters fits leaves the pattern as it is."""
    from harness.expectations.update import _witness

    assert _witness("conv_backward/[12]d/*_stride?") == "conv_backward/1d/_stridex"
    assert _witness("conv_backward/[!x0_az]d") == "conv_backward/[!x0_az]d"
