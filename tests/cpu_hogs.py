"""CPU hogs for the heavy runs of issue 53: busy processes beside the workers under test.

HORIZON_TEST_HOGS=N starts N busy processes for the length of a test that asks for the
`cpu_hogs` fixture (issue 53 asks for four per CPU: 8 on a 2-CPU machine); unset or 0,
the test runs quiet. Each hog spins until its parent (the test process) is gone, and is
killed when the test ends."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

HOG = "import os\nwhile os.getppid() != 1:\n    pass\n"


def hog_count() -> int:
    return int(os.environ.get("HORIZON_TEST_HOGS", "0") or 0)


@pytest.fixture
def cpu_hogs():
    """The hogs asked for by HORIZON_TEST_HOGS (a list of processes, empty when quiet)."""
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(hog_count())]
    try:
        yield hogs
    finally:
        for hog in hogs:
            hog.kill()
        for hog in hogs:
            hog.wait()
