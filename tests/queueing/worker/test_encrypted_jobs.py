"""Encrypted jobs on real `runworker` processes (issue 37, item 4): the argument is in no
Redis key, no failed row and no worker output; a SECRET_KEY rotated the Django way keeps
queued jobs running; a worker without the old key fails the job with the cause, keeps
it, and a retry once the key is back runs it."""
import json

import pytest

from queueing.models import FailedJob
from queueing.state import failed
from tests.conftest import subprocess_env
from tests.redis_scan import everything
from tests.testapp import jobs
from tests.testapp.encrypted_jobs import digest, keep_secret, refuse_secret
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "narwhal-invoice-5829"
NEW_KEY = "rotated-secret-key-" + "k" * 40


def run(spawn_worker, **env) -> str:
    """One worker that stops when the queue is empty; its whole output (stdout and
    stderr: the log records too, at debug level)."""
    worker = spawn_worker("--queue=default", "--stop-when-empty", "--log-level=debug",
                          env=env)
    assert worker.wait(30) == 0, worker.output()  # a bad job never stops a worker
    return worker.output()


def logging_everything(tmp_path, log_file) -> dict[str, str]:
    """Settings that send every record of the product's loggers, the per-job records
    with their tracebacks included, as JSON to a file and as text to stderr."""
    (tmp_path / "log_all_settings.py").write_text(
        "from tests.settings import *  # noqa\n"
        "LOGGING = {'version': 1, 'disable_existing_loggers': False,\n"
        "  'formatters': {'json': {'()': 'queueing.observability.log_json.JsonFormatter'}},\n"
        "  'handlers': {'file': {'class': 'logging.FileHandler',\n"
        f"                          'filename': {str(log_file)!r}, 'formatter': 'json'}},\n"
        "               'stderr': {'class': 'logging.StreamHandler'}},\n"
        "  'loggers': {name: {'handlers': ['file', 'stderr'], 'level': 'DEBUG',\n"
        "                     'propagate': False} for name in ('queueing', 'horizon')}}\n")
    return {"DJANGO_SETTINGS_MODULE": "log_all_settings",
            "PYTHONPATH": f"{tmp_path}:{subprocess_env().get('PYTHONPATH', '')}"}


def test_the_argument_is_nowhere_but_in_the_job(spawn_worker, rclient, tmp_path):
    keep_secret.delay(SECRET, "ran")
    refuse_secret.delay(SECRET, "refused")
    assert SECRET.encode() not in everything(rclient)
    log_file = tmp_path / "records.jsonl"
    output = run(spawn_worker, **logging_everything(tmp_path, log_file))
    assert "DONE" in output and "FAILED" in output and SECRET not in output
    records = log_file.read_text()
    assert "refused refused" in records and "Traceback" in records  # the failure, logged
    assert SECRET not in records
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]  # the right argument
    row = FailedJob.objects.get()
    assert SECRET not in row.payload and SECRET not in row.exception
    assert SECRET.encode() not in everything(rclient)


def test_a_rotation_with_the_old_key_in_the_fallbacks_runs_jobs_queued_before(
        spawn_worker, settings):
    keep_secret.delay(SECRET, "queued before the rotation")
    output = run(spawn_worker, DJANGO_SECRET_KEY=NEW_KEY,
                 DJANGO_SECRET_KEY_FALLBACKS=settings.SECRET_KEY)
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)], output
    assert not FailedJob.objects.exists()


def test_a_worker_without_the_old_key_fails_the_job_and_keeps_it_for_a_retry(
        spawn_worker, settings, rclient, driver):
    old = settings.SECRET_KEY
    keep_secret.delay(SECRET, "stranded")
    output = run(spawn_worker, DJANGO_SECRET_KEY=NEW_KEY)
    assert "FAILED" in output and "cannot decrypt the job's arguments" in output
    assert jobs.notes() == []
    row = wait_until(lambda: FailedJob.objects.first(), message="the failed row")
    assert "SECRET_KEY changed and the old key is not in SECRET_KEY_FALLBACKS" in \
        row.exception
    assert "encrypted" in json.loads(row.payload) and SECRET not in row.payload

    failed.retry(row)  # the old key is back, as a fallback: the job runs
    assert SECRET.encode() not in everything(rclient)
    run(spawn_worker, DJANGO_SECRET_KEY=NEW_KEY, DJANGO_SECRET_KEY_FALLBACKS=old)
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)]
    assert not FailedJob.objects.exists()
