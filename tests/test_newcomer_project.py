"""The README's "add it to your project" path, run as a newcomer would.

Builds the wheel from a copy of this checkout, installs it into a fresh virtualenv, makes
a project with Django's ``startproject``, and applies the README's snippets verbatim
(each marked ``<!-- newcomer-test: NAME -->`` in README.md): settings, urls, migrate,
the first job, its dispatch, a worker, the dashboard permission. Then the job must have
run in a real worker process (its e-mail is on disk) and the dashboard must render from
the wheel's own templates and static files.

The virtualenv reuses the dependencies already installed for the suite (one ``.pth``
line naming this interpreter's site-packages, whose own ``.pth`` files, such as the
editable install of this checkout, are not processed), so the test needs no network.
Only the wheel is installed into it, so ``queueing`` and ``horizon`` come from the wheel.
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

from queueing.drivers.redis.embedded import EmbeddedRedis

ROOT = Path(__file__).resolve().parent.parent
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
        outbox = tmp_path / "outbox"
        settings = project / "mysite" / "settings.py"
        generated = settings.read_text()
        if "MAILERS" in generated:  # Django 6.1+: the EMAIL_* settings may not be mixed in
            mail = f"""
            MAILERS = {{"default": {{"BACKEND": "django.core.mail.backends.filebased.EmailBackend",
                                   "OPTIONS": {{"file_path": {str(outbox)!r}}}}}}}
            """
        else:
            mail = f"""
            EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
            EMAIL_FILE_PATH = {str(outbox)!r}
            """
        settings.write_text(generated + "\n" + snippets["settings"] + textwrap.dedent("""
            # The test's own additions: the app holding the README's job, mail to files.
            INSTALLED_APPS += ["myapp"]
            """) + textwrap.dedent(mail))
        urls = project / "mysite" / "urls.py"
        urls.write_text(urls.read_text() + "\n" + snippets["urls"])
        (project / "myapp" / "jobs.py").write_text(snippets["job"])

        # The README's bash lines, with "python" meaning the new virtualenv's interpreter.
        for line in snippets["migrate"].splitlines():
            words = line.split("#")[0].split()
            if words:
                assert words[0] == "python"
                run([str(python), *words[1:]], cwd=project, env=env)

        shell = textwrap.dedent("""
            from django.contrib.auth.models import User
            user = User.objects.create_user("ada", "ada@example.com")
            User.objects.create_user("ops")
            """) + snippets["dispatch"] + snippets["permission"] + textwrap.dedent("""
            import horizon, queueing
            print("FROM", horizon.__file__, queueing.__file__)
            """)
        out = run([str(python), "manage.py", "shell", "-c", shell], cwd=project, env=env)
        venv = str(tmp_path / "venv")
        assert f"FROM {venv}" in out and out.count(venv) == 2, out

        worker_words = snippets["worker"].split()
        assert worker_words[:3] == ["python", "manage.py", "runworker"]
        out = run([str(python), *worker_words[1:], "--stop-when-empty"], cwd=project, env=env)
        assert "jobs loaded from: myapp.jobs (1)" in out, out
        assert "DONE" in out and "myapp.jobs.send_welcome" in out, out
        mails = [p.read_text() for p in outbox.iterdir()]
        assert len(mails) == 1 and "Hello ada!" in mails[0] and "ada@example.com" in mails[0]

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
            print("COMPLETED", completed.count(">send_welcome</a>"))
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
