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
    "horizon.repositories.events",  # loaded with the first operator action's event
    "queueing.failover.driver",  # loaded with the first failover connection
    "cryptography.fernet",  # loaded with the first encrypted payload
    "django.core.management.commands.makemigrations",  # Django's 'commands' check
    "django.db.migrations.autodetector",
    "django.contrib.auth.middleware",  # django.contrib.auth's middleware check
    "django.views.csrf",  # Django's CSRF failure view check
    "django.contrib.auth.admin",  # the admin's autodiscover (standalone/urls.py runs it)
)
# Modules a worker loads after its first job starts, with their first use: Horizon's
# metrics (and the dozen modules they import) with the first batch of finished jobs.
AFTER_FIRST_JOB = (
    "horizon.repositories.metrics",
    "horizon.repositories.snapshot_extras",
)
# Loaded with a job that reads its batch or sends a workflow's next step, or by a job
# module that imports them (tests/testapp's do): the workflows' own jobs are registered
# without them (queueing/workflows/jobs.py), and Job.batch reads through a reader that
# imports the batch record with its first call (queueing/apps.py).
BATCHES = ("queueing.batches.record", "queueing.batches.members", "queueing.batches.pending",
           "queueing.workflows.canvas", "queueing.workflows.once")
# Loaded by a worker only where a job module declares a schedule (tests/testapp's does;
# the standalone site's do not): the schedules' check is the scheduler's (runworker
# leaves it out), and it imports them when it runs.
SCHEDULES = ("horizon.schedules", "horizon.schedules.cron", "horizon.schedules.definitions")


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
    # the workflows' own jobs, registered by queueing's ready(): every worker knows them
    assert "queueing.workflows.jobs" in modules
    assert [m for m in modules if m.startswith("horizon.dashboard")] == []  # nor its counts
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


def run_on_standalone_settings(code: str, settings, tmp_path) -> str:
    """Run `code` in a fresh process on the standalone site's settings; its stdout."""
    env = subprocess_env(DJANGO_SETTINGS_MODULE="standalone.settings",
                         QUEUE_REDIS_URL=settings.TEST_REDIS_URL, HORIZON_VAR_DIR=str(tmp_path),
                         DJANGO_SECRET_KEY="startup-imports-" * 4)
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_worker_without_our_tasks_backend_loads_none_of_it(settings, tmp_path):
    stdout = run_on_standalone_settings(LIST_MODULES_AT_EXIT, settings, tmp_path)
    modules = {line[len("module "):] for line in stdout.splitlines()
               if line.startswith("module ")}
    assert {"queueing.worker.loop", "queueing.workflows.jobs"} <= modules
    assert [m for m in modules if m.startswith("queueing.tasks")] == []
    assert [name for name in NEVER + SCHEDULES + BATCHES if name in modules] == []
    assert [m for m in modules if m.startswith("horizon.dashboard")] == []


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


# A worker's Job.batch reads through queueing's ready() reader, which imports the batch
# record with its first read; the record then reads through its own.
READ_A_BATCH = """
import sys, django
django.setup()
from queueing.entries import context
from queueing.entries.shapes import Payload
assert "queueing.batches.record" not in sys.modules
job = Payload(uuid="u", job="j", display_name="j", args=[], kwargs={}, attempts=1,
              deliveries=1, max_tries=None, max_exceptions=None, backoff=None,
              timeout=None, retry_until=None, fail_on_timeout=False, pushed_at=None,
              tags=[], chain=[], data={})
token = context.enter(job)
try:
    print(context.current_batch())
finally:
    context.leave(token)
from queueing.batches import record
print(context._batch_reader is record.batch_of)
"""


def test_a_jobs_batch_is_read_with_the_batch_record_loaded_at_its_first_read(settings,
                                                                             tmp_path):
    stdout = run_on_standalone_settings(READ_A_BATCH, settings, tmp_path)
    assert stdout.split() == ["None", "True"]


# Python 3.11's @dataclass compiles each method it writes, at every import (no bytecode
# cache covers it): about an eighth of a worker's start, once (docs/benchmarks.md). Ours
# are @record (queueing/contract/records.py), which compiles none. Counted by wrapping
# dataclasses' own (private) helpers: the class being built, for each method compiled.
COUNT_COMPILED_METHODS = """
import atexit, dataclasses, runpy, sys
compiled = set()
process = dataclasses._process_class
def counted_process(cls, *args, **kwargs):
    # a method @dataclass generated was compiled from a string: its code's file is
    # "<string>" (Python 3.11's _create_fn and 3.13's _FuncBuilder alike)
    made = process(cls, *args, **kwargs)
    for value in vars(made).values():
        code = getattr(getattr(value, "__wrapped__", value), "__code__", None)
        if code is not None and code.co_filename == "<string>":
            compiled.add(f"{made.__module__}.{made.__qualname__}")
    return made
dataclasses._process_class = counted_process
atexit.register(lambda: print("\\n".join("compiled " + name for name in sorted(compiled))))
sys.argv = ["manage.py", "runworker", "--queue=default", "--stop-when-empty", "--quiet"]
runpy.run_path("manage.py", run_name="__main__")
"""


def test_a_workers_start_compiles_no_dataclass_method_of_ours(settings, tmp_path):
    stdout = run_on_standalone_settings(COUNT_COMPILED_METHODS, settings, tmp_path)
    compiled = [line[len("compiled "):] for line in stdout.splitlines()
                if line.startswith("compiled ")]
    assert [name for name in compiled if name.startswith(("queueing.", "horizon."))] == []
