"""The layering check (.ci/layers.py, run by `make lint`): it passes on the repository
and fails on an upward import, a cycle and a module on no floor, however the import is
written (deferred in a function, or for types only)."""
from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / ".ci" / "layers.py"


def check(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECK), str(root)], capture_output=True,
                          text=True, timeout=60)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_the_repository_keeps_its_floors():
    result = check(ROOT)
    assert result.returncode == 0, result.stdout
    assert "every import goes down a floor" in result.stdout


def test_a_deferred_upward_import_in_the_repository_fails_the_check(tmp_path):
    for package in ("queueing", "horizon", "standalone"):
        shutil.copytree(ROOT / package, tmp_path / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    payload = tmp_path / "queueing" / "entries" / "payload.py"
    payload.write_text(payload.read_text() + textwrap.dedent("""

        def _beating():
            from queueing.worker import heartbeat  # the ground floor reaching up
            return heartbeat
        """))
    result = check(tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "upward import: queueing.entries.payload (floor 1 ground) imports "
        "queueing.worker.heartbeat (floor 4 worker)"]


def test_type_only_imports_count_and_cycles_and_strays_fail(tmp_path):
    write(tmp_path, {
        "queueing/__init__.py": "",
        "queueing/errors.py": "",
        "queueing/entries/__init__.py": "",
        "queueing/entries/a.py": """\
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from queueing.dispatching.jobs import Job
            """,
        "queueing/dispatching/__init__.py": "",
        "queueing/dispatching/jobs.py": "from . import registry\n",  # relative, read too
        "queueing/dispatching/registry.py": "import queueing.dispatching.jobs\n",
        "queueing/stray.py": "from queueing import errors\n",
    })
    lines = check(tmp_path).stdout.splitlines()
    assert lines == [
        f"queueing.stray: on no floor; place it in FLOORS ({CHECK})",
        "upward import: queueing.entries.a (floor 1 ground) imports queueing.dispatching.jobs "
        "(floor 3c core: dispatching)",
        "import cycle: queueing.dispatching.jobs <-> queueing.dispatching.registry",
    ]
