"""runworker's start-up checks (issue 52): every check but those of the site a worker
does not serve (the URL conf's imports every view; django.contrib.auth's middleware check
imports every MIDDLEWARE class) and Django's 'commands' check (migrate and makemigrations,
which a worker runs neither of, share an autodetector)."""
import pytest
from django.core import checks
from django.core.management.base import SystemCheckError
from django.test import override_settings

from queueing.management.commands.runworker import (
    SITE_CHECK_TAGS,
    SITE_CHECKS,
    Command,
    worker_checks,
)


@pytest.fixture
def registered():
    """Checks registered for one test, then taken out of Django's registry again."""
    added = []

    def register(*tags):
        def add(check):
            checks.register(*tags)(check)
            added.append(check)
            return check
        return add

    yield register
    for check in added:
        checks.registry.registry.registered_checks.discard(check)


def test_a_worker_runs_every_check_but_the_sites(registered):
    ran = []

    @registered()
    def untagged(app_configs, **kwargs):
        ran.append("untagged")
        return []

    @registered("queueing")
    def ours(app_configs, **kwargs):
        ran.append("queueing")
        return []

    @registered("urls")
    def site(app_configs, **kwargs):
        ran.append("urls")
        return []

    Command().check()
    assert sorted(ran) == ["queueing", "untagged"]
    assert "urls" in SITE_CHECK_TAGS and {"queueing", "models"}.isdisjoint(SITE_CHECK_TAGS)
    checks.run_checks()  # `manage.py check` still runs the site's
    assert ran.count("urls") == 1
    assert site in checks.registry.registry.registered_checks  # put back


def test_a_worker_leaves_out_the_migration_commands_and_middleware_checks(registered):
    ran = []

    @registered("commands")
    def commands(app_configs, **kwargs):
        ran.append("commands")
        return []

    Command().check()
    assert ran == []
    every = checks.registry.registry.registered_checks
    left_out = {f"{c.__module__}.{c.__qualname__}" for c in every - worker_checks(every)}
    assert SITE_CHECKS == {"django.contrib.auth.checks.check_middleware",
                           "django.core.checks.security.csrf.check_csrf_failure_view"}
    assert SITE_CHECKS <= left_out
    assert "commands" in SITE_CHECK_TAGS
    checks.run_checks()  # `manage.py check` still runs them
    assert ran == ["commands"]


def test_a_worker_leaves_the_schedules_check_to_the_scheduler(monkeypatch):
    """horizon.E009 (a schedule that cannot run) is the scheduler's: `manage.py horizon`
    and `manage.py check` report it; a worker, which runs no schedule, leaves it out."""
    from horizon.schedules import definitions

    def broken():
        raise definitions.ScheduleError("schedule 'nightly': no such job")

    monkeypatch.setattr(definitions, "all_schedules", broken)
    Command().check()  # does not raise
    assert [e.id for e in checks.run_checks()
            if e.id == "horizon.E009"] == ["horizon.E009"]
    assert "schedules" in SITE_CHECK_TAGS


def test_a_worker_still_refuses_a_misconfigured_tasks_backend():
    with override_settings(TASKS={"default": {"BACKEND": "queueing.tasks.RedisBackend",
                                              "OPTIONS": {"connection": "nope"}}}):
        with pytest.raises(SystemCheckError, match="queueing.E101"):
            Command().check()
