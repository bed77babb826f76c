"""The README's "add it to your project" path, run as a newcomer would.

Builds the wheel from a copy of this checkout, installs it into a fresh virtualenv, makes
a project with Django's ``startproject``, and applies the README's snippets verbatim
(each marked ``<!-- newcomer-test: NAME -->`` in README.md): settings, urls, migrate,
the first job, its dispatch, a worker, the dashboard permission. The project is a new one:
no mail backend or other setting beyond the README's. The worker is started first, as
the README says, and the job must be DONE in it within a second of its dispatch (an idle
worker blocks on Redis rather than polling); `check` must report no issues; the
dashboard must render from the wheel's own templates and static files.

The virtualenv reuses the dependencies already installed for the suite (one ``.pth``
line naming this interpreter's site-packages, whose own ``.pth`` files, such as the
editable install of this checkout, are not processed), so the test needs no network.
Only the wheel is installed into it, so ``queueing`` and ``horizon`` come from the wheel.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import threading
import time
import zipfile
from pathlib import Path

import pytest

from queueing.drivers.redis.embedded import EmbeddedRedis
from tests.conftest import ROOT

SNIPPET = re.compile(r"<!-- newcomer-test: (?P<name>[\w-]+) -->\s*```\w*\n(?P<code>.*?)```", re.S)


def readme_snippets() -> dict[str, str]:
    return {m["name"]: m["code"] for m in SNIPPET.finditer((ROOT / "README.md").read_text())}


def run(command: list[str], *, cwd: Path, env: dict, timeout: float = 120) -> str:
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, (
        f"{' '.join(map(str, command))} exited {result.returncode}:\n"
        f"{result.stdout}\n{result.stderr}")
    return result.stdout + result.stderr


def build_wheel(into: Path) -> Path:
    """`pip wheel --no-deps .` on a copy of the checkout (so no build/ lands in it)."""
    source = into / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "var", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache"))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(into), "."],
        cwd=source, env=dict(os.environ), timeout=300)
    (wheel,) = into.glob("horizon_django-*.whl")
    return wheel


def make_venv(path: Path, wheel: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "suite_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", purelib, str(wheel)], cwd=path, env=dict(os.environ))
    return python


class StampedOutput:
    """A long-running command (the README's worker) whose output lines are stamped with
    the wall clock as they arrive, so a test can tell how soon after a dispatch a job ran."""

    def __init__(self, command: list[str], *, cwd: Path, env: dict) -> None:
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[tuple[float, str]] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append((time.time(), line))

    def text(self) -> str:
        return "".join(line for _, line in self.lines)

    def wait_for(self, *words: str, timeout: float) -> float:
        """When the first line holding every one of `words` arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if all(word in line for word in words):
                    return at
            assert self.proc.poll() is None, f"exited {self.proc.returncode}:\n{self.text()}"
            time.sleep(0.02)
        raise AssertionError(f"no line with {words} after {timeout} s:\n{self.text()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # Ctrl-C's twin: finish, then exit 0
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(5)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_carries_templates_static_files_and_lua(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in (("templates", "*.html"), ("static", "*.*")):
        for file in (ROOT / folder).rglob(pattern):
            assert f"horizon/{folder}/{file.relative_to(ROOT / folder)}" in names, file
    for package in ("queueing", "horizon"):
        for script in (ROOT / package / "lua").glob("*.lua"):
            assert f"{package}/lua/{script.name}" in names, script
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


def test_readme_snippets_work_in_a_fresh_startproject(wheel, tmp_path):
    snippets = readme_snippets()
    assert {"settings", "urls", "migrate", "job", "dispatch", "worker",
            "permission"} <= set(snippets), "a README snippet lost its newcomer-test marker"

    python = make_venv(tmp_path / "venv", wheel)
    redis_server = EmbeddedRedis(tmp_path / "redis", persistent=False)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DJANGO_", "PYTHONPATH", "HORIZON_"))}
    env.update(QUEUE_REDIS_URL=redis_server.ensure_running(), PYTHONUNBUFFERED="1")
    try:
        project = tmp_path / "project"
        project.mkdir()
        run([str(python), "-m", "django", "startproject", "mysite", str(project)],
            cwd=tmp_path, env=env)
        run([str(python), "manage.py", "startapp", "myapp"], cwd=project, env=env)
        settings = project / "mysite" / "settings.py"
        settings.write_text(settings.read_text() + "\n" + snippets["settings"] + textwrap.dedent("""
            # The test's own addition: the app holding the README's job (no mail backend,
            # nothing else: a new project's defaults).
            INSTALLED_APPS += ["myapp"]
            """))
        urls = project / "mysite" / "urls.py"
        urls.write_text(urls.read_text() + "\n" + snippets["urls"])
        (project / "myapp" / "jobs.py").write_text(snippets["job"])

        # The README's bash lines, with "python" meaning the new virtualenv's interpreter.
        for line in snippets["migrate"].splitlines():
            words = line.split("#")[0].split()
            if words:
                assert words[0] == "python"
                out = run([str(python), *words[1:]], cwd=project, env=env)
        assert "System check identified no issues" in out, out  # no W004 on a new project

        # The worker first (the README starts it before dispatching), then the dispatch.
        worker_words = snippets["worker"].split()
        assert worker_words[:3] == ["python", "manage.py", "runworker"]
        worker = StampedOutput([str(python), *worker_words[1:]], cwd=project, env=env)
        try:
            worker.wait_for("jobs loaded from: myapp.jobs (1)", timeout=60)
            time.sleep(2.0)  # idle past a --sleep poll's worth: the job must not wait for one
            shell = textwrap.dedent("""
                import time
                from django.contrib.auth.models import User
                user = User.objects.create_user("ada", "ada@example.com")
                User.objects.create_user("ops")
                """) + snippets["dispatch"] + textwrap.dedent("""
                print("DISPATCHED", repr(time.time()))
                """) + snippets["permission"] + textwrap.dedent("""
                import horizon, queueing
                print("FROM", horizon.__file__, queueing.__file__)
                """)
            out = run([str(python), "manage.py", "shell", "-c", shell], cwd=project, env=env)
            venv = str(tmp_path / "venv")
            assert f"FROM {venv}" in out and out.count(venv) == 2, out
            dispatched = float(out.split("DISPATCHED ", 1)[1].split()[0])
            done_at = worker.wait_for("myapp.jobs.welcome", "DONE", timeout=30)
            assert "Welcome, ada!" in worker.text(), worker.text()
            assert done_at - dispatched < 1.0, (
                f"DONE {done_at - dispatched:.2f} s after the dispatch:\n{worker.text()}")
        finally:
            worker.stop()

        dashboard = textwrap.dedent("""
            from django.contrib.auth.models import User
            from django.contrib.staticfiles import finders
            from django.test import Client
            from django.test.utils import setup_test_environment
            setup_test_environment()
            client = Client()
            assert client.get("/horizon/").status_code == 302  # anonymous: to the login page
            assert client.get("/accounts/login/").status_code == 200
            client.force_login(User.objects.get(username="ops"))
            for path in ("/horizon/", "/horizon/jobs/completed/", "/horizon/failed/",
                         "/horizon/workers/", "/horizon/metrics/"):
                response = client.get(path)
                assert response.status_code == 200, (path, response.status_code)
                print("PAGE", path, response.content.decode().count("horizon/htmx.min.js"))
            completed = client.get("/horizon/jobs/completed/").content.decode()
            print("COMPLETED", completed.count(">welcome</a>"))
            for asset in ("horizon/htmx.min.js", "horizon/horizon.css"):
                print("ASSET", finders.find(asset))
            """)
        out = run([str(python), "manage.py", "shell", "-c", dashboard], cwd=project, env=env)
        assert out.count("PAGE") == 5 and all(
            line.endswith(" 1") for line in out.splitlines() if line.startswith("PAGE")), out
        assert "COMPLETED 1" in out, out
        assets = [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("ASSET")]
        assert len(assets) == 2 and all(a.startswith(venv) for a in assets), out
    finally:
        redis_server.stop()


INSTALL = re.compile(r"pip install (?P<target>(?:'[^']*'|\"[^\"]*\"|[^\s`]+))")


def test_install_lines_name_a_clone_or_the_wheel_never_an_index():
    """The package is not on an index: every `pip install` of it in the README and docs/
    names a path (a clone) or the wheel's file, and each extra it asks for exists."""
    import tomllib

    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
                 ["optional-dependencies"])
    seen = 0
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for match in INSTALL.finditer(doc.read_text()):
            target = match["target"].strip("'\"")
            if target.startswith("-") or "horizon" not in target:
                continue  # -r requirements.txt, -e '.[bench]', another package
            seen += 1
            base, _, extra = target.partition("[")
            assert base.startswith(("/", "./", "../")) or base.endswith(".whl"), (
                f"{doc.name}: `pip install {target}` names the package on an index")
            if extra:
                assert extra.rstrip("]") in extras, f"{doc.name}: no extra {extra!r}"
    assert seen >= 5
