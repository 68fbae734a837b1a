"""Per-worker limits end to end: a runaway case costs one crashed result that names the limit."""
from __future__ import annotations

import psutil
from e2e_support import wait_for

CASE = "conv_backward/2d/tiny"


def test_the_configs_memory_limit_turns_a_runaway_case_into_a_crash(e2e_project):
    e2e_project.add_fake("hog", "memory_hog", "compile", CASE, memory_limit_mb=500)
    result = e2e_project.run("--backend=hog")
    record = result.record("hog", CASE)
    assert (record["outcome"], record["phase"]) == ("crashed", "compile")
    assert record["signature"] == "memory limit exceeded during phase compile"
    assert "memory limit of 500 MiB exceeded" in record["message"]
    assert [r["outcome"] for r in result.results if r["case"] != CASE] == ["passed", "passed"]


def test_the_limit_counts_the_workers_children_and_kills_the_whole_tree(e2e_project):
    """A child that grows past the limit (iree-compile, an Inductor compile worker) crashes the case,
    and no process of the tree survives: not the child, nor a grandchild in a session of its own."""
    e2e_project.add_fake("child-hog", "child_memory_hog", "compile", CASE, memory_limit_mb=800)
    result = e2e_project.run("--backend=child-hog")
    record = result.record("child-hog", CASE)
    assert (record["outcome"], record["phase"]) == ("crashed", "compile")
    assert "memory limit of 800 MiB exceeded" in record["message"]
    assert "MiB of it in child processes" in record["message"]
    pids = [int(p) for p in (e2e_project.path / "tree_pids.txt").read_text().split()]
    assert len(pids) == 2
    def gone(pid: int) -> bool:  # SIGKILL is sent; a big process takes a moment to be torn down
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait_for(lambda: all(gone(pid) for pid in pids), 10, f"the killed tree {pids} to be gone")
    assert [r["outcome"] for r in result.results if r["case"] != CASE] == ["passed", "passed"]


def test_the_command_line_sets_the_limit_when_the_config_does_not(e2e_project):
    e2e_project.add_fake("hog", "memory_hog", "compile", CASE)
    record = e2e_project.run("--backend=hog", "--memory-limit=400").record("hog", CASE)
    assert "memory limit of 400 MiB exceeded" in record["message"]


def test_recycling_options_run_every_case(e2e_project):
    result = e2e_project.run("--backend=eager", "--recycle-after=1", "--recycle-rss=100000")
    assert [r["outcome"] for r in result.results] == ["passed"] * 3
