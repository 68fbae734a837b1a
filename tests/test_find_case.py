"""Project.find_case, the tools' way to a case by id: the same answer whichever of the project's
stages was asked for first (it reads the --cases-file cases itself, not as a side effect of loading
the case modules)."""
from __future__ import annotations

import pytest
from e2e_support import TINY_IDS
from e2e_support import Project as TinyProject

from harness.errors import HarnessInputError
from harness.project import Project
from harness.settings import Settings

EXTRA = """\
- family: conv_backward
  name: extra
  input_shape: [1, 2, 4, 4]
  weight_shape: [2, 2, 3, 3]
- family: conv_forward
  name: extra
  input_shape: [1, 2, 4, 4]
  weight_shape: [2, 2, 3, 3]
"""
FIRST_STEPS = {"nothing": lambda project: None, "the cases": lambda project: project.cases,
               "the known ids": lambda project: project.known_ids}


@pytest.fixture
def settings(tmp_path, monkeypatch) -> Settings:
    monkeypatch.chdir(tmp_path)   # the error line names the cases file from here
    tiny = TinyProject(tmp_path)
    extra = tiny.write("extra.yaml", EXTRA)
    root = tiny.path
    return Settings(rootdir=root, cases_dirs=[root / "cases"], configs_dirs=[root / "configs"],
                    cases_files=[extra], builtin_cases=False)


def answers(project: Project) -> tuple:
    found = project.find_case("conv_forward/cases_file/extra")
    with pytest.raises(HarnessInputError) as missing:
        project.find_case("conv_forward/cases_file/extar")
    return found, str(missing.value)


@pytest.mark.parametrize("first", list(FIRST_STEPS))
def test_find_case_gives_the_same_answer_whatever_ran_first(settings, first):
    project = Project(settings)
    FIRST_STEPS[first](project)
    found, missing = answers(project)
    assert found == Project(settings).find_case("conv_forward/cases_file/extra")
    assert found.params["input_shape"] == [1, 2, 4, 4]
    # Named by the cases file the user pointed at, with its own cases only.
    assert missing == ("conv_forward/cases_file/extar: no such case in extra.yaml (2 cases); "
                       "did you mean conv_forward/cases_file/extra?")
    assert len(project.cases) == len(TINY_IDS) + 2   # each cases-file case once, in its family's module
