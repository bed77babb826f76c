"""Issue 35: the drain with two real masters. Two `manage.py horizon` processes (told
apart by HORIZON_NAME) share one fallback database and one Redis; the jobs a failover
connection left in the fallback are each moved back once (the database's reservation
keeps the two drains apart) and each runs once, on the masters' own workers. Real
Redis, real PostgreSQL and SQLite, real processes."""
import json
import re
import time

import pytest

from queueing import connections, dispatch_many
from queueing.models import QueuedJob
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
JOBS = 3000  # more than one master moves in a look (PER_TICK 2000): both take part


def moved(output: str) -> int:
    return sum(int(n) for n in re.findall(r"failover 'fo': moved (\d+) job\(s\) back", output))


@pytest.mark.slow
def test_two_masters_move_each_waiting_job_once_and_each_runs_once(dbconn, rclient,
                                                                  spawn_worker):
    # what a failover connection wrote to the fallback while its Redis was away
    dispatch_many([jobs.record.using(connection=dbconn).s(f"j{i}") for i in range(JOBS)])
    alias = connections.queue_driver(dbconn).alias
    assert QueuedJob.objects.using(alias).count() == JOBS
    env = {"TEST_QUEUE_CONNECTIONS": json.dumps({"fo": {
        "driver": "failover", "connections": ["redis", dbconn]}})}
    masters = [spawn_worker(command="horizon", env={**env, "HORIZON_NAME": name})
               for name in ("host-a", "host-b")]
    started = time.monotonic()
    wait_until(lambda: len(jobs.notes()) >= JOBS, timeout=120,
               message=f"the {JOBS} jobs to run")
    time.sleep(1.0)  # a job moved or run twice would show by now
    labels = [note["label"] for note in jobs.notes()]
    assert len(labels) == JOBS and sorted(labels) == sorted(f"j{i}" for i in range(JOBS))
    assert QueuedJob.objects.using(alias).count() == 0
    counts = [moved(master.output()) for master in masters]
    assert sum(counts) == JOBS, counts  # each moved once
    assert all(counts), counts  # both masters drained
    print(f"moved {counts}, all run in {time.monotonic() - started:.1f} s")
