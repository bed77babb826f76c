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


def check_with(tmp_path, change: str) -> subprocess.CompletedProcess:
    """`manage.py check` in a process whose settings are the tests' plus one `change`."""
    (tmp_path / "changed_settings.py").write_text(
        f"from tests.settings import *  # noqa\n{change}\n")
    env = subprocess_env(DJANGO_SETTINGS_MODULE="changed_settings",
                         PYTHONPATH=f"{tmp_path}:{subprocess_env().get('PYTHONPATH', '')}")
    return subprocess.run(manage_command("check"), env=env, capture_output=True, text=True,
                          timeout=120)


def test_manage_py_check_reports_it(tmp_path):
    done = check_with(tmp_path, "MIDDLEWARE = [m for m in MIDDLEWARE if 'django_htmx' not in m]")
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


# -- issue 31: settings mistakes told all at once, with the nearest valid key ---------------
def messages(ids_prefix: str) -> list[str]:
    return [m.msg for m in run_checks() if m.id.startswith(ids_prefix)]


def test_every_queue_setting_mistake_is_listed_at_once_with_the_nearest_key(settings):
    settings.QUEUE = {
        **settings.QUEUE, "after_comit": True,
        "connections": {**settings.QUEUE["connections"],
                        "typo": {"driver": "redis", "url": "redis://h/0", "queus": ["a"]},
                        "bad": {"driver": "redsi"}}}
    found = messages("queueing.E001")
    assert len(found) == 3, found
    assert any("QUEUE has unknown key 'after_comit' (did you mean 'after_commit'?)" in m
               for m in found), found
    assert any("['typo'] has unknown key 'queus' (did you mean 'queues'?); valid keys: "
               in m and "block_for" in m for m in found), found
    assert any("['bad']['driver'] must be one of" in m for m in found), found


def told(found: list[str], *parts: str) -> None:
    """One of the check messages `found` holds every one of `parts`."""
    assert any(all(part in message for part in parts) for message in found), found


def test_every_supervisor_mistake_is_listed_at_once(settings):
    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "one": {"queues": ["default"], "max_proceses": 2},
        "two": {"queues": ["default"], "min_processes": 3, "max_processes": 1},
        "three": {"queues": ["default"], "connection": "redsi"}}}
    found = messages("horizon.E00")
    assert len(found) == 3, found
    told(found, "'one' has unknown key 'max_proceses' (did you mean 'max_processes'?)")
    told(found, "'two': min_processes (3) is above max_processes (1)")
    told(found, "'three'", "unknown queue connection 'redsi' (did you mean 'redis'?)")


def test_one_supervisor_block_lists_each_of_its_mistakes(settings):
    """Issue 31: one block's first mistake hid the next ones until it was fixed."""
    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "one": {"queues": ["default"], "max_proceses": 2, "min_processes": 3,
                "max_processes": 1, "connection": "redsi", "timeout": -5}}}
    found = messages("horizon.E00")
    assert len(found) == 4, found
    told(found, "'one' has unknown key 'max_proceses' (did you mean 'max_processes'?)")
    told(found, "'one': min_processes (3) is above max_processes (1)")
    told(found, "'one'", "unknown queue connection 'redsi' (did you mean 'redis'?)")
    told(found, "'one': timeout must be a number >= 0, got -5")


def test_one_queue_connection_lists_each_of_its_mistakes(settings):
    settings.QUEUE = {**settings.QUEUE, "connections": {
        **settings.QUEUE["connections"],
        "typo": {"driver": "redis", "url": "redis://h/0", "queus": ["a"], "retyr_after": 5,
                 "retry_after": -1, "keep_result": -1}}}
    found = messages("queueing.E001")
    assert len(found) == 3, found
    assert any("['typo'] has unknown keys 'queus' (did you mean 'queues'?), 'retyr_after' "
               "(did you mean 'retry_after'?)" in m for m in found), found
    assert any("['typo']['retry_after'] must be a number >= 0, got -1" in m for m in found)
    assert any("['typo']['keep_result'] must be a number >= 0" in m for m in found)


def test_the_rest_of_horizon_lists_each_of_its_mistakes(settings):
    # The current forms (the retired audit_keep / audit_days / trim caps / webhook keys'
    # own checks are tests/horizon/test_retired_keys.py's)
    settings.HORIZON = {**settings.HORIZON, "trim": {"completed": 0, "audit": -1},
                        "notifications": ["ftp://x"]}
    # trim: E001; notifications: E016; audit retention: E017 (each check its own id)
    found = messages("horizon.E001") + messages("horizon.E016") + messages("horizon.E017")
    assert len(found) == 3, found
    for text in ("trim completed", "trim audit",
                 "HORIZON['notifications'] must list e-mail addresses"):
        assert any(text in m for m in found), (text, found)


def test_a_supervisor_takes_queues_as_well_as_queue(settings):
    from horizon.configuration.settings import horizon_settings

    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "plural": {"queues": ["high", "default"], "max_processes": 1}}}
    assert messages("horizon.E00") == []
    [supervisor] = horizon_settings().supervisors
    assert supervisor.queues == ("high", "default")
    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "both": {"queue": ["high"], "queues": ["default"]}}}
    [message] = messages("horizon.E00")
    assert "both 'queue' and 'queues'" in message


def test_a_horizon_key_typo_names_the_nearest_key(settings):
    settings.HORIZON = {**settings.HORIZON, "supervisor": {}}
    [message] = messages("horizon.E001")
    assert "HORIZON has unknown key 'supervisor' (did you mean 'supervisors'?)" in message


def test_horizon_without_the_queueing_app_says_so(tmp_path):
    done = check_with(tmp_path, "INSTALLED_APPS = [a for a in INSTALLED_APPS "
                                "if a not in ('queueing', 'tests.testapp')]")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured: 'horizon' needs the 'queueing' app" in last, done.stderr
    assert 'INSTALLED_APPS += ["django_htmx", "queueing", "horizon"]' in last


def test_the_sqlite_hint_needs_no_file_outside_the_wheel(settings):
    from queueing.observability import store_checks

    original = settings.DATABASES["default"]["OPTIONS"]
    settings.DATABASES["default"]["OPTIONS"] = {}  # a new project's (restored below)
    try:
        [warning] = store_checks.check_failed_store(None)
    finally:
        settings.DATABASES["default"]["OPTIONS"] = original
    assert "standalone" not in warning.hint and ".py" not in warning.hint
    assert '"transaction_mode": "IMMEDIATE"' in warning.hint


# -- issue 31: commands that delete ask first, and work without a terminal ------------------
def failed_rows(n: int) -> list:
    from queueing.models import FailedJob

    return [FailedJob.objects.create(
        uuid=f"u-{i}", connection="redis", queue="default", job="app.jobs.charge",
        payload="{}", exception=(f"ValueError: card {i} declined\nTraceback (most recent "
                                 f"call last):\n  File \"app/jobs.py\", line {i}, in charge\n"
                                 "password=hunter2\n")) for i in range(n)]


@pytest.mark.django_db
def test_queue_flush_asks_first_and_needs_force_without_a_terminal(monkeypatch):
    from io import StringIO

    from django.core.management import CommandError, call_command

    from queueing.models import FailedJob

    failed_rows(2)
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    out = StringIO()
    call_command("queue_flush", stdout=out)
    assert "Nothing deleted." in out.getvalue() and FailedJob.objects.count() == 2

    def no_terminal(prompt):
        raise EOFError

    monkeypatch.setattr("builtins.input", no_terminal)
    with pytest.raises(CommandError, match="Pass --force"):
        call_command("queue_flush", stdout=StringIO())
    assert FailedJob.objects.count() == 2
    call_command("queue_flush", "--force", stdout=StringIO())
    assert FailedJob.objects.count() == 0


def test_queue_clear_without_a_terminal_says_to_pass_force(rclient):
    from tests.testapp import jobs

    jobs.record.delay("kept")
    done = subprocess.run(manage_command("queue_clear", "--queue=default"),
                          env=subprocess_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert "EOFError" not in done.stderr and "Pass --force" in done.stderr, done.stderr
    assert rclient.llen("queues:{default}") == 1


@pytest.mark.django_db
def test_queue_failed_traceback_prints_each_masked_traceback():
    from io import StringIO

    from django.core.management import call_command

    failed_rows(2)
    plain = StringIO()
    call_command("queue_failed", stdout=plain)
    assert "Traceback" not in plain.getvalue()
    out = StringIO()
    call_command("queue_failed", "--traceback", stdout=out)
    text = out.getvalue()
    assert text.count("Traceback (most recent call last):") == 2
    assert "== u-1  app.jobs.charge" in text and 'line 1, in charge' in text
    assert "hunter2" not in text
