"""`make test`'s first step (.ci/system-deps): with Chromium missing it installs it when it
may (apt-get as root), and otherwise stops with one line saying what to install."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

SCRIPT = ROOT / ".ci" / "system-deps"


def bin_dir(tmp_path: Path, *tools: str) -> Path:
    """A PATH holding only these tools (the real ones), so Chromium is not on it."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in tools:
        (folder / tool).symlink_to(shutil.which(tool))
    return folder


def run(folder: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {"PATH": str(folder), "HOME": os.environ.get("HOME", "/tmp"), **env}
    return subprocess.run(["/bin/sh", str(SCRIPT), sys.executable], env=environment,
                          capture_output=True, text=True, timeout=60)


def test_without_chromium_or_a_way_to_install_it_stops_with_one_line(tmp_path):
    result = run(bin_dir(tmp_path, "id"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines == ["make test needs chromium: run 'sudo apt-get install chromium' (or set "
                     "HORIZON_CHROMIUM=/path/to/chromium), then 'make test' again"]


def test_with_apt_get_as_root_it_installs_chromium(tmp_path):
    folder = bin_dir(tmp_path, "cat", "chmod")
    calls = tmp_path / "apt-calls"
    # Stand-ins: `id` says root, `apt-get` records its arguments and "installs" chromium.
    (folder / "id").write_text("#!/bin/sh\necho 0\n")
    (folder / "env").write_text('#!/bin/sh\nwhile [ "${1#*=}" != "$1" ]; do shift; done\nexec "$@"\n')
    (folder / "apt-get").write_text(
        f'#!/bin/sh\necho "$*" >> {calls}\n'
        f'case "$*" in *install*) printf "#!/bin/sh\\n" > {folder}/chromium; '
        f'chmod +x {folder}/chromium;; esac\n')
    for tool in ("id", "env", "apt-get"):
        (folder / tool).chmod(0o755)
    result = run(folder)
    assert result.returncode == 0, result.stderr
    assert calls.read_text().splitlines() == ["update -qq", "install -y -qq chromium"]
    assert (folder / "chromium").exists()
    assert "installing chromium" in result.stderr


def test_horizon_chromium_names_a_browser_outside_path(tmp_path):
    browser = tmp_path / "my-chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    assert run(bin_dir(tmp_path, "id"), HORIZON_CHROMIUM=str(browser)).returncode == 0
