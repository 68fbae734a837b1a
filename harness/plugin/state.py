"""What the plugin's modules share through the pytest config's stash."""
from __future__ import annotations

import pytest

from harness.controller.runner import Runner

RUNNER = pytest.StashKey[Runner]()
DURATIONS = pytest.StashKey[dict]()   # nodeid -> seconds of an earlier run: longest cases first
