"""Job controls on a database connection (PostgreSQL and SQLite): the middleware runs
the same, its state and unique locks live on the Redis connection, and a job held back
by middleware gets its attempt back in the jobs table too."""
import io

import pytest

from queueing import connections
from queueing.middleware.keys import unique_key
from queueing.models import FailedJob, QueuedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.conftest import WORKER_DATABASES
from tests.testapp import control_jobs, jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def drain(conn) -> str:
    out = io.StringIO()
    opts = WorkerOptions(connection=conn, queues=("default",), stop_when_empty=True, sleep=0,
                         memory=0)
    Worker(connections.driver(conn), opts, stdout=out, stderr=io.StringIO()).run()
    return out.getvalue()


def test_middleware_and_unique_jobs_on_a_database_connection(dbconn, rclient):
    alias = connections.driver(dbconn).alias
    first = control_jobs.unique_record.using(connection=dbconn).delay("k", "unique")
    assert control_jobs.unique_record.using(connection=dbconn).delay("k", "dropped") is None
    assert rclient.get(unique_key(control_jobs.unique_record.name, "k")).decode() == first
    control_jobs.skippable.using(connection=dbconn).delay("skipped", True)
    for index in range(12):
        control_jobs.rate_limited.using(connection=dbconn).delay(index)
    out = drain(dbconn)
    ran = [n["label"] for n in jobs.notes()]
    assert ran.count("rate") == 10 and "unique" in ran and "skipped" not in ran
    assert "DEFERRED" in out and "SKIPPED" in out
    assert not rclient.exists(unique_key(control_jobs.unique_record.name, "k"))
    held_back = QueuedJob.objects.using(alias).all()
    assert held_back.count() == 2, "the 2 over the limit wait, released"
    assert {row.attempts for row in held_back} == {0}, "and their attempt was given back"
    assert FailedJob.objects.count() == 0
