"""Per-worker limits end to end: a runaway case costs one crashed result that names the limit."""
from __future__ import annotations

CASE = "conv_backward/2d/tiny"


def test_the_configs_memory_limit_turns_a_runaway_case_into_a_crash(e2e_project):
    e2e_project.add_fake("hog", "memory_hog", "compile", CASE, memory_limit_mb=500)
    result = e2e_project.run("--backend=hog")
    record = result.record("hog", CASE)
    assert (record["outcome"], record["phase"]) == ("crashed", "compile")
    assert record["signature"] == "memory limit exceeded during phase compile"
    assert "memory limit of 500 MiB exceeded" in record["message"]
    assert [r["outcome"] for r in result.results if r["case"] != CASE] == ["passed", "passed"]


def test_the_command_line_sets_the_limit_when_the_config_does_not(e2e_project):
    e2e_project.add_fake("hog", "memory_hog", "compile", CASE)
    record = e2e_project.run("--backend=hog", "--memory-limit=400").record("hog", CASE)
    assert "memory limit of 400 MiB exceeded" in record["message"]


def test_recycling_options_run_every_case(e2e_project):
    result = e2e_project.run("--backend=eager", "--recycle-after=1", "--recycle-rss=100000")
    assert [r["outcome"] for r in result.results] == ["passed"] * 3
