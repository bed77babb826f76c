"""Release hygiene (issue 40, item 7): one version everywhere (queueing/version.py, the
package metadata, CHANGELOG.md, the README's wheel names, every command's --version),
and the licence in the repository and the metadata."""
import re
import subprocess
import tomllib
from pathlib import Path

from django.core.management import get_commands, load_command_class

from queueing.version import PRODUCT, __version__
from tests.conftest import manage_command, subprocess_env

ROOT = Path(__file__).resolve().parents[2]
OURS = ("queueing", "horizon", "standalone")


def test_every_command_of_the_product_prints_its_version():
    ours = {name: app for name, app in get_commands().items() if app.split(".")[0] in OURS}
    assert {"runworker", "horizon", "queue_restart", "horizon_status"} <= set(ours)
    for name, app in ours.items():
        assert load_command_class(app, name).get_version().startswith(
            f"{PRODUCT} {__version__} "), name
    done = subprocess.run(manage_command("runworker", "--version"), env=subprocess_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith(f"horizon-django {__version__} ")


def test_one_version_and_a_licence():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "version" in project["dynamic"] and "version" not in project
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert re.search(r"^## (\S+)", changelog, re.M).group(1) == __version__
    for document in ("README.md", *(p.relative_to(ROOT) for p in (ROOT / "docs").glob("*.md"))):
        for wheel in re.findall(r"horizon_django-([\d.]+)-py3", (ROOT / document).read_text()):
            assert wheel == __version__, document
