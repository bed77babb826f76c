"""The first hour: setup mistakes are named by `manage.py check`, not by a 500."""
import subprocess

import pytest
from django.core.checks import run_checks

from tests.conftest import manage_command, subprocess_env


def ids(settings) -> set[str]:
    return {message.id for message in run_checks()}


def test_missing_htmx_middleware_is_a_check_error(settings):
    assert "horizon.E010" not in ids(settings)
    settings.MIDDLEWARE = [m for m in settings.MIDDLEWARE if "django_htmx" not in m]
    errors = [m for m in run_checks() if m.id == "horizon.E010"]
    assert errors and "django_htmx.middleware.HtmxMiddleware" in errors[0].msg
    assert "MIDDLEWARE +=" in errors[0].hint


def test_missing_htmx_app_is_a_check_error(settings):
    settings.INSTALLED_APPS = [a for a in settings.INSTALLED_APPS if a != "django_htmx"]
    assert "horizon.E011" in ids(settings)


def test_manage_py_check_reports_it(tmp_path):
    settings_file = tmp_path / "no_htmx_settings.py"
    settings_file.write_text(
        "from tests.settings import *  # noqa\n"
        "MIDDLEWARE = [m for m in MIDDLEWARE if 'django_htmx' not in m]\n")
    env = subprocess_env(DJANGO_SETTINGS_MODULE="no_htmx_settings",
                         PYTHONPATH=f"{tmp_path}:{subprocess_env().get('PYTHONPATH', '')}")
    done = subprocess.run(manage_command("check"), env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0
    assert "horizon.E010" in done.stderr and "HtmxMiddleware" in done.stderr


@pytest.mark.django_db
def test_first_admin_prints_a_password_once_and_it_logs_in():
    from io import StringIO

    from django.contrib.auth import authenticate
    from django.core.management import call_command

    out = StringIO()
    call_command("first_admin", url="http://127.0.0.1:8000", stdout=out)
    text = out.getvalue()
    assert "username: admin" in text and "http://127.0.0.1:8000/login/" in text
    password = text.split("password: ", 1)[1].split()[0]
    assert authenticate(username="admin", password=password).is_superuser
    again = StringIO()
    call_command("first_admin", stdout=again)
    assert again.getvalue() == "", "never shown (or reset) a second time"


@pytest.mark.django_db
def test_first_admin_with_a_plain_user_named_admin_picks_another_name():
    """Issue 32: a non-superuser 'admin' made first_admin crash (IntegrityError)."""
    from io import StringIO

    from django.contrib.auth import authenticate
    from django.contrib.auth.models import User
    from django.core.management import call_command

    User.objects.create_user("admin", password="theirs")
    out = StringIO()
    call_command("first_admin", stdout=out)
    password = out.getvalue().split("password: ", 1)[1].split()[0]
    assert "username: admin2" in out.getvalue()
    assert authenticate(username="admin2", password=password).is_superuser
    assert not User.objects.get(username="admin").is_superuser, "left as it was"
