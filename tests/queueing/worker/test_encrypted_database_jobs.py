"""Encrypted jobs on a database connection (issue 37, item 4): the jobs table, the batch
tables and the failed store hold ciphertext only; the worker runs the job with its
arguments (PostgreSQL, then SQLite)."""
import io

import pytest

from queueing import connections
from queueing.models import FailedJob, QueuedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.testapp.encrypted_jobs import digest, keep_secret, refuse_secret

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)

SECRET = "heron-mortgage-6120"


def drain(conn) -> str:
    out = io.StringIO()
    opts = WorkerOptions(connection=conn, queues=("default",), stop_when_empty=True,
                         sleep=0, memory=0)
    Worker(connections.driver(conn), opts, stdout=out, stderr=io.StringIO()).run()
    return out.getvalue()


def test_the_jobs_table_and_the_failed_store_hold_ciphertext_only(dbconn):
    keep_secret.using(connection=dbconn).delay(SECRET, "ran")
    refuse_secret.using(connection=dbconn).delay(SECRET, "refused")
    alias = connections.driver(dbconn).alias
    payloads = list(QueuedJob.objects.using(alias).values_list("payload", flat=True))
    assert len(payloads) == 2 and all('"encrypted"' in p and SECRET not in p for p in payloads)
    out = drain(dbconn)
    assert [n["digest"] for n in jobs.notes()] == [digest(SECRET)] and SECRET not in out
    row = FailedJob.objects.get()
    assert SECRET not in row.payload and SECRET not in row.exception
