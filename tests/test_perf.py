"""--perf: the statistics (harness.perf.stats), the worker's timing loop, `perf compare`, and a run
where a backend twice as slow as eager on purpose is found significantly slower on every case."""
from __future__ import annotations

import json
import math
import os
import random

import pytest

from harness.cli import main
from harness.errors import HarnessInputError
from harness.perf import stats
from harness.perf.ratios import Side, compare
from harness.perf.rounds import merge as merge_rounds
from harness.protocol import PerfRequest, RunRequest, decode, encode
from harness.views.html import render_html
from harness.views.markdown import render_markdown
from tests.e2e_support import TINY_IDS


def lognormal(rng: random.Random, centre: float, n: int, spread: float = 0.2) -> list[float]:
    return [centre * rng.lognormvariate(0, spread) for _ in range(n)]


# ------------------------------------------------------------------------------------ statistics

@pytest.mark.parametrize("n, rank", [(5, 0), (6, 0), (20, 5), (100, 39)])
def test_the_median_interval_takes_the_binomial_order_statistics(n, rank):
    # ranks from the exact binomial: P(Bin(20, 1/2) <= 5) = 2.07% <= 2.5% < P(<= 6) = 5.77%
    values = [float(i) for i in range(n)]
    assert stats.median_interval(values) == (rank, n - 1 - rank)


def test_the_median_interval_covers_the_median_95_times_in_100():
    rng = random.Random(7)
    covered = sum(lo <= 1.0 <= hi for lo, hi in (stats.median_interval(lognormal(rng, 1.0, 30)) for _ in range(2000)))
    assert 0.94 <= covered / 2000 <= 0.99   # the order statistics' coverage is at least 95%, discretely above


def test_the_normal_approximation_is_at_most_one_rank_wider_than_the_exact_interval():
    values = [float(i) for i in range(101)]
    assert stats.median_interval(values) == (39, 61)   # exact: ranks 40 and 60


def test_a_bootstrap_is_seeded_so_the_same_samples_give_the_same_interval():
    rng = random.Random(1)
    pairs = list(zip(lognormal(rng, 1.0, 50), lognormal(rng, 0.5, 50)))
    assert stats.speedup(pairs) == stats.speedup(pairs)
    figure = stats.speedup(pairs)
    assert figure["low"] < figure["value"] < figure["high"] and 1.7 < figure["value"] < 2.3


def test_a_ratio_finds_a_doubling_and_calls_equal_samples_not_significant():
    rng = random.Random(2)
    a, same, double = lognormal(rng, 1.0, 60), lognormal(rng, 1.0, 60), lognormal(rng, 2.0, 60)
    found = stats.ratio(a, double, stats.median)
    assert found["significant"] and found["low"] > 1.5 and found["high"] < 2.6
    assert not stats.ratio(a, same, stats.median)["significant"]


def test_a_change_within_min_change_is_not_significant_however_narrow_its_interval():
    a = [1.0 + i * 1e-4 for i in range(50)]
    b = [1.06 * x for x in a]   # 6% slower, the interval a fraction of a percent wide
    assert stats.ratio(a, b, stats.median)["significant"]
    assert not stats.ratio(a, b, stats.median, min_change=0.1)["significant"]
    assert stats.ratio(a, b, stats.median, min_change=0.05)["significant"]


def test_a_geomean_combines_the_cases_uncertainties_in_log_space():
    figures = [{"value": 2.0, "low": 1.8, "high": 2.2}, {"value": 0.5, "low": 0.45, "high": 0.55}]
    g = stats.geomean(figures)
    assert g["value"] == 1.0 and g["count"] == 2 and g["low"] < 1 < g["high"]
    one = (math.log(2.2) - math.log(1.8)) / (2 * stats.Z95)
    assert g["high"] == stats.figure(math.exp(stats.Z95 * math.sqrt(2 * one ** 2) / 2))


# ------------------------------------------------------------------------------------ the worker's loop

def test_rounds_take_students_t_over_their_figures():
    # three rounds, logs -0.1, 0, 0.1: sd 0.1, t(2) = 4.303, half-width 4.303 * 0.1 / sqrt(3)
    figures = stats.over_rounds([math.exp(-0.1), 1.0, math.exp(0.1)])
    assert figures["value"] == 1.0
    assert figures["high"] == pytest.approx(math.exp(4.303 * 0.1 / math.sqrt(3)), rel=1e-3)
    assert figures["low"] == pytest.approx(1 / figures["high"], rel=1e-3)


def test_rounds_that_differ_by_process_noise_compare_as_equal_95_times_in_100():
    """Each round (a process) shifts its figure by 20% typically: the samples within a round
    cannot show it, Welch's t over three rounds a side can."""
    rng = random.Random(11)
    trials = [stats.ratio_of_rounds(lognormal(rng, 1.0, 3), lognormal(rng, 1.0, 3)) for _ in range(2000)]
    assert sum(not t["significant"] for t in trials) / len(trials) >= 0.95
    doubled = [stats.ratio_of_rounds(lognormal(rng, 1.0, 3, 0.05), lognormal(rng, 2.0, 3, 0.05))
               for _ in range(200)]
    assert all(t["significant"] and t["low"] > 1.25 for t in doubled)


def test_the_timing_loop_interleaves_the_sides_and_stops_at_the_budget_or_the_target(monkeypatch):
    """On a clock of its own, which only the two sides advance: the loop's logic, not the machine's load
    (on a busy machine one preempted 0.2 ms call made eager's calibration a single loop)."""
    import types

    from harness.worker import timing

    now = [0.0]

    def side(seconds):
        return lambda: now.__setitem__(0, now[0] + seconds)

    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    figures = timing.measure({"compiled": side(4e-4), "eager": side(2e-4)},
                             PerfRequest(threads=1, budget_s=1.0, target=0.05))
    assert figures["stopped"] in ("target", "budget")
    assert figures["compiled"]["count"] == figures["eager"]["count"] >= 5
    assert figures["compiled"]["loops"] < figures["eager"]["loops"] <= 5   # a sample lasts about 1 ms
    assert figures["speedup"]["value"] == pytest.approx(0.5)   # eager's median over the compiled side's
    assert len(figures["compiled"]["samples"]) == figures["compiled"]["count"]


def test_a_perf_request_crosses_the_wire():
    request = RunRequest(case={"id": "x"}, backend={"name": "eager"}, perf=PerfRequest(2, 1.5, 0.1))
    assert decode(encode(request)) == request


# ------------------------------------------------------------------------------------ perf compare

def side(label: str, centres: dict[str, tuple[float, float]], seed: int) -> Side:
    """Timed figures per case: (eager's centre, the compiled side's), 40 interleaved samples."""
    rng = random.Random(seed)
    timed = {}
    for case, (eager, compiled) in centres.items():
        e, c = lognormal(rng, eager, 40), lognormal(rng, compiled, 40)
        timed[case] = {"eager": stats.summary(e), "compiled": stats.summary(c)}
    return Side(label, timed)


def test_compare_takes_each_side_against_its_own_eager_so_a_slower_machine_cancels():
    a = side("A", {"c1": (1.0, 0.5), "c2": (1.0, 1.0)}, seed=3)
    b = side("B", {"c1": (3.0, 1.5), "c2": (3.0, 6.0)}, seed=4)   # the machine 3x slower; c2 twice as slow
    result = compare(a, b)
    by_case = {c["case"]: c for c in result["cases"]}
    assert not by_case["c1"]["significant"] and by_case["c1"]["against_eager"]
    assert by_case["c2"]["significant"] and 1.6 < by_case["c2"]["ratio"] < 2.5
    assert (result["faster"], result["slower"], result["not_significant"]) == (0, 1, 1)


def rounds_side(label: str, shifts: list[float], seed: int) -> Side:
    """One case timed in one round per shift: the round's compiled side off by that factor."""
    rng = random.Random(seed)
    rounds = [{"eager": stats.summary(lognormal(rng, 1.0, 40, 0.02)),
               "compiled": stats.summary([x * shift for x in lognormal(rng, 1.0, 40, 0.02)]), "stopped": "target"}
              for shift in shifts]
    return Side(label, {"c": merge_rounds([{"threads": 1, **r} for r in rounds], len(shifts))})


def test_compare_takes_the_round_as_its_unit_when_both_sides_have_several():
    """The rounds of each side disagree by 30% (processes), far beyond their samples' intervals:
    round by round the difference between the sides is not significant; pooled, it would be."""
    a, b = rounds_side("A", [0.8, 1.0, 1.25], seed=1), rounds_side("B", [1.25, 1.3, 1.0], seed=2)
    by_rounds = compare(a, b, min_change=0)["cases"][0]
    assert by_rounds["rounds"] == [3, 3] and not by_rounds["significant"]
    pooled = compare(Side("A", {"c": a.timed["c"]["rounds"][0] | {"threads": 1}}), b, min_change=0)["cases"][0]
    assert pooled["rounds"] == [1, 3] and pooled["significant"]   # one round: the samples' interval only
    merged = b.timed["c"]
    assert merged["compiled"]["count"] == 120 and "samples" not in merged["compiled"]
    assert merged["speedup"]["low"] < merged["speedup"]["value"] < merged["speedup"]["high"]


def test_compare_with_no_case_in_common_is_one_line():
    with pytest.raises(HarnessInputError, match="no timed case in common"):
        compare(side("A", {"c1": (1, 1)}, 1), side("B", {"c2": (1, 1)}, 2))


# ------------------------------------------------------------------------------------ a --perf run

def test_a_backend_twice_as_slow_is_significantly_slower_on_every_case(e2e_project, capsys):
    slow = e2e_project.add_fake("slow", "twice_as_slow", phase="run")
    result = e2e_project.run(f"--backend=eager,{slow}", "--perf", "--perf-budget=1")
    assert result.ret == 0, result.output
    timed = [r for r in result.results if r["perf"]]
    assert len(timed) == 2 * len(TINY_IDS) and all("speedup" in r["perf"] for r in timed)
    assert "perf: geomean speedup over eager" in result.output
    capsys.readouterr()   # pytester's echo of the run
    assert main(["perf", "compare", "report.json", "--backends", f"eager,{slow}", "--format=json"]) == 0
    cases = json.loads(capsys.readouterr().out)["cases"]
    assert [c["case"] for c in cases] == sorted(TINY_IDS)
    assert all(c["significant"] and 1.5 < c["ratio"] < 2.6 for c in cases), cases
    markdown, page = render_markdown(result.report), render_html(result.report)
    assert "## Speed against eager (--perf)" in markdown and "Speed against eager (--perf)" in page
    assert f"| `{slow}` | 0." in markdown   # its geomean speedup over eager is about a half


def test_perf_rounds_time_a_case_again_in_fresh_workers(e2e_project, capsys):
    slow = e2e_project.add_fake("slow", "twice_as_slow", phase="run")
    result = e2e_project.run(f"--backend=eager,{slow}", "-k", TINY_IDS[0], "--perf", "--perf-budget=0.5",
                             "--perf-rounds=3")
    assert result.ret == 0, result.output
    perf = result.record(slow, TINY_IDS[0])["perf"]
    assert len(perf["rounds"]) == 3 and "rounds_missing" not in perf
    assert perf["compiled"]["count"] == sum(r["compiled"]["count"] for r in perf["rounds"])
    assert 0.3 < perf["speedup"]["value"] < 0.7 and perf["speedup"]["high"] < 1
    capsys.readouterr()
    assert main(["perf", "compare", "report.json", "--backends", f"eager,{slow}"]) == 0
    out = capsys.readouterr().out
    assert "95% interval: t over the rounds" in out and "0 faster" in out and " 0 not significant" in out, out


def test_perf_fixes_the_threads_of_every_case_and_times_only_those_expected_to_pass(e2e_project):
    """A worker's runtime (IREE's task system) is set up by its first case: an expected failure
    gets the threads too, or a later timed case would run on the default."""
    fake = e2e_project.add_fake("fake", "wrong_values", phase="run", only="conv_backward/2d/tiny")
    e2e_project.xfail(fake, "- id: conv_backward/2d/tiny\n  reason: wrong on purpose\n")
    result = e2e_project.run(f"--backend={fake}", "--perf", "--perf-threads=2", "--perf-budget=0.5")
    assert result.ret == 0, result.output
    failed, passed = result.record(fake, "conv_backward/2d/tiny"), result.record(fake, "conv_forward/2d/tiny")
    assert failed["notes"]["threads"] == passed["notes"]["threads"] == 2
    assert failed["perf"] is None and passed["perf"]["threads"] == 2 and "speedup" in passed["perf"]


def test_perf_compare_of_a_report_without_timings_is_one_line(e2e_project, capsys):
    assert e2e_project.run("--backend=eager").ret == 0
    capsys.readouterr()
    assert main(["perf", "compare", "report.json", "report.json"]) == 2
    assert capsys.readouterr().err == "error: report.json: has no timed results; run pytest with --perf to time cases\n"


def test_perf_with_more_threads_than_cores_warns_before_the_run(e2e_project):
    threads = (os.cpu_count() or 1) + 1
    result = e2e_project.run("--backend=eager", "--perf", f"--perf-threads={threads}", "--collect-only", report=None)
    assert (f"WARNING: --perf: 1 workers x {threads} threads on {os.cpu_count()} cores: timing under contention "
            "is noise; run with -n 1 or fewer") in result.output
