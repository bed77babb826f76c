"""What a worker loads before its first job (issue 52): none of the site (the dashboard's
pages, the URL conf, the login throttle), nor the failover driver, the cipher, or the
migration commands a worker's checks used to import; and the Tasks backend only where
settings.TASKS uses it. A `runworker` process starts with the cyclic collector off and
runs its jobs with it on, the start's objects frozen (queueing/worker/early_gc.py)."""
import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT, subprocess_env
from tests.testapp import jobs

# Modules a worker never needs to take and run a job; each was loaded by its start once.
NEVER = (
    "standalone.urls",  # the URL conf: every view of the site
    "horizon.dashboard.views",
    "horizon.dashboard.access.auth",
    "horizon.dashboard.failed.failures",
    "horizon.dashboard.jobs.facet_counts",
    "horizon.login.throttle",
    "horizon.prometheus",
    "queueing.failover.driver",  # loaded with the first failover connection
    "cryptography.fernet",  # loaded with the first encrypted payload
    "django.core.management.commands.makemigrations",  # Django's 'commands' check
    "django.db.migrations.autodetector",
    "django.contrib.auth.middleware",  # django.contrib.auth's middleware check
)
# Modules a worker loads after its first job starts, with their first use: Horizon's
# metrics (and the dozen modules they import) with the first batch of finished jobs.
AFTER_FIRST_JOB = (
    "horizon.repositories.metrics",
    "horizon.repositories.snapshot_extras",
)
# Loaded by a worker only where a job module declares a schedule (tests/testapp's does;
# the standalone site's do not): the schedules' check is the scheduler's (runworker
# leaves it out), and it imports them when it runs.
SCHEDULES = ("horizon.schedules", "horizon.schedules.cron", "horizon.schedules.definitions")
# Of the dashboard, only what Horizon's app connects at start (a request's kept counts).
DASHBOARD_AT_START = {"horizon.dashboard", "horizon.dashboard.jobs",
                      "horizon.dashboard.jobs.kept_counts"}


def first_job_sees(spawn_worker, **env) -> dict:
    jobs.what_the_worker_loaded.delay()
    worker = spawn_worker("--queue=default", "--once", env=env)
    assert worker.wait(60) == 0, worker.output()
    return json.loads(jobs.redis_driver("redis").client.get(jobs.STARTUP))


@pytest.mark.django_db(transaction=True)
def test_a_worker_takes_its_first_job_without_the_site(spawn_worker):
    seen = first_job_sees(spawn_worker)
    modules = set(seen["modules"])
    assert "queueing.worker.loop" in modules  # the list is the worker's
    assert [name for name in NEVER + AFTER_FIRST_JOB if name in modules] == []
    # what the eager public API used to load for its effects, loaded by queueing's ready()
    assert {"queueing.workflows.jobs", "queueing.batches.record"} <= modules
    assert {m for m in modules if m.startswith("horizon.dashboard")} <= DASHBOARD_AT_START
    # the test settings' TASKS uses queueing.tasks.RedisBackend: its tasks are loaded
    assert "queueing.tasks.backend" in modules
    assert seen["gc_enabled"] and seen["frozen"] > 10_000


# The standalone site's settings have no TASKS: a project that does not use our backend.
LIST_MODULES_AT_EXIT = """
import atexit, runpy, sys
atexit.register(lambda: print("\\n".join("module " + name for name in sorted(sys.modules))))
sys.argv = ["manage.py", "runworker", "--queue=default", "--stop-when-empty", "--quiet"]
runpy.run_path("manage.py", run_name="__main__")
"""


def test_a_worker_without_our_tasks_backend_loads_none_of_it(settings, tmp_path):
    env = subprocess_env(DJANGO_SETTINGS_MODULE="standalone.settings",
                         QUEUE_REDIS_URL=settings.TEST_REDIS_URL, HORIZON_VAR_DIR=str(tmp_path),
                         DJANGO_SECRET_KEY="startup-imports-" * 4)
    done = subprocess.run([sys.executable, "-c", LIST_MODULES_AT_EXIT], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    modules = {line[len("module "):] for line in done.stdout.splitlines()
               if line.startswith("module ")}
    assert {"queueing.worker.loop", "queueing.workflows.jobs"} <= modules
    assert [m for m in modules if m.startswith("queueing.tasks")] == []
    assert [name for name in NEVER + SCHEDULES if name in modules] == []


def collector_after_import(*argv: str) -> bool:
    """gc.isenabled() right after `import queueing` in a fresh process run as `argv`."""
    code = (f"import sys; sys.argv = {['manage.py', *argv]!r}; import gc, queueing; "
            "print(gc.isenabled())")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=subprocess_env(),
                         capture_output=True, text=True, check=True).stdout
    return out.strip() == "True"


def test_only_a_worker_starts_with_the_collector_off():
    assert collector_after_import("runworker", "--queue=default") is False
    assert collector_after_import("horizon") is True
    assert collector_after_import("check") is True
