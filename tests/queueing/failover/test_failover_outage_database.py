"""Issue 35, the outage tests: what the failover connection keeps while its Redis is
away, end to end with real processes. A unique job dispatched twice during the outage
is queued (and run) once: its lock is taken in the fallback database while Redis is
away, moves to Redis with the job when the drain moves it, and is released by the worker
that runs it. Two masters draining at once move each job once. Real Redis behind a
proxy that refuses and comes back, real PostgreSQL and SQLite, real processes."""
import json
import threading
import time

import pytest
from django import db

from queueing import connections
from queueing.failover.drain import drain
from queueing.failover.locks import row_key
from queueing.middleware.keys import unique_key
from queueing.models import ControlValue, QueuedJob
from tests.conftest import WORKER_DATABASES
from tests.helpers import redis_outage
from tests.testapp import control_jobs, jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


@pytest.fixture
def outage(settings, dbconn):
    """'fo': Redis through a proxy first, then the database connection."""
    with redis_outage(settings, dbconn) as found:
        yield found


def rows(conn):
    return QueuedJob.objects.using(connections.queue_driver(conn).alias)


def test_a_unique_job_dispatched_twice_during_the_outage_runs_once(outage, rclient,
                                                                   spawn_worker):
    unique = control_jobs.unique_record.using(connection="fo")
    outage.away()
    first = unique.delay("k1", "first")
    assert first and unique.delay("k1", "second") is None  # the fallback's lock
    other = unique.delay("k2", "other")
    assert other and rows(outage.conn).count() == 2
    alias = connections.queue_driver(outage.conn).alias
    key = unique_key(control_jobs.unique_record.name, "k1")
    assert ControlValue.objects.using(alias).filter(pk=row_key(key)).exists()

    outage.back()
    # Redis answers, the job still waits in the fallback: its lock is still seen there
    assert unique.delay("k1", "third") is None
    assert drain("fo") == 2
    assert rclient.get(key) == first.encode()  # the lock moved with the job
    assert not ControlValue.objects.using(alias).filter(pk=row_key(key)).exists()
    assert unique.delay("k1", "fourth") is None  # now held in Redis

    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0")
    assert worker.wait(timeout=60) == 0, worker.output()
    assert sorted(n["label"] for n in jobs.notes()) == ["first", "other"]
    assert rclient.get(key) is None  # released by the worker that ran it
    assert unique.delay("k1", "after") is not None


def test_two_masters_draining_at_once_move_each_job_once(outage, rclient):
    """Two drains at once, each on its own database connections (a thread each, as two
    masters' duties are: the database's reservation, not the process, keeps them apart)."""
    outage.away()
    for i in range(400):
        jobs.record.using(connection="fo").delay(f"j{i}")
    assert rows(outage.conn).count() == 400
    outage.back()
    moved: list[int] = []
    start = threading.Barrier(2)

    def master():
        start.wait()
        total = 0
        try:
            for _ in range(40):
                total += drain("fo", limit=20)
        finally:
            db.connections.close_all()
        moved.append(total)

    masters = [threading.Thread(target=master) for _ in range(2)]
    for thread in masters:
        thread.start()
    for thread in masters:
        thread.join(timeout=120)
    assert sum(moved) == 400 and len(moved) == 2, moved  # each job moved once
    entries = [json.loads(raw)["args"][0] for raw in rclient.lrange("queues:{default}", 0, -1)]
    assert sorted(entries) == sorted(f"j{i}" for i in range(400))
    assert rows(outage.conn).count() == 0
    rclient.delete("queues:{default}", "queues:{default}:notify")


def test_a_chain_dispatched_during_the_outage_completes_in_order(outage, rclient,
                                                                 spawn_worker):
    from queueing import chain

    outage.away()
    first = chain(jobs.record.using(connection="fo").s("c1"),
                  jobs.record.using(connection="fo").s("c2"),
                  jobs.record.using(connection="fo").s("c3"))
    assert first and rows(outage.conn).count() == 1  # the chain's head waits there
    outage.back()
    assert drain("fo") == 1
    # the worker knows the failover connection (its next links are dispatched on it)
    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0", env=outage.worker_env)
    assert worker.wait(timeout=60) == 0, worker.output()
    assert [n["label"] for n in jobs.notes()] == ["c1", "c2", "c3"]


@pytest.mark.slow
def test_redis_killed_in_the_middle_of_a_dispatch_many_of_ten_thousand(outage, rclient,
                                                                       spawn_worker):
    """Each of the 10,000 runs exactly once: the chunks Redis took stay there, the rest
    go to the database (chunk by chunk: a failed one alone), and the drain brings those
    back, skipping any Redis already holds (a chunk whose reply was lost)."""
    from queueing import dispatch_many

    n = 10_000
    signatures = [jobs.record.using(connection="fo").s(f"m{i}") for i in range(n)]
    def kill_after_the_first_chunk():
        deadline = time.monotonic() + 60
        while rclient.llen("queues:{default}") == 0 and time.monotonic() < deadline:
            time.sleep(0.001)
        outage.away()

    killer = threading.Thread(target=kill_after_the_first_chunk)
    killer.start()
    uuids = dispatch_many(signatures)
    killer.join()
    assert len(uuids) == n and all(uuids)
    in_redis = rclient.llen("queues:{default}")
    in_database = rows(outage.conn).count()
    # at most the chunk whose reply was lost as Redis went away is in both
    assert n <= in_redis + in_database <= n + 1000, (in_redis, in_database)
    assert in_redis and in_database, (in_redis, in_database)  # killed mid-way
    outage.back()
    while drain("fo", limit=5000):
        pass
    workers = [spawn_worker("redis", "--stop-when-empty", "--sleep=0") for _ in range(2)]
    for worker in workers:
        assert worker.wait(timeout=300) == 0, worker.output()
    labels = [note["label"] for note in jobs.notes()]
    assert len(labels) == n and sorted(labels) == sorted(f"m{i}" for i in range(n))


def _fo_batch(label):
    from queueing import batch

    return (batch(*(jobs.record.s(f"{label}{i}") for i in range(3)))
            .then(jobs.record.s(f"{label}-then")).using(connection="fo").dispatch())


def test_a_batch_dispatched_during_the_outage_completes_with_its_callback(outage, rclient,
                                                                        spawn_worker):
    """The whole batch (record and members) goes to the database; the drain moves the
    record to Redis with its members, and the callback runs once there."""
    from queueing.batches.record import Batch
    from queueing.models import BatchRecord

    outage.away()
    found = _fo_batch("b")
    assert found.connection == outage.conn and rows(outage.conn).count() == 3
    alias = connections.queue_driver(outage.conn).alias
    assert BatchRecord.objects.using(alias).filter(id=found.id).exists()
    outage.back()
    assert drain("fo") == 3
    assert not BatchRecord.objects.using(alias).filter(id=found.id).exists()
    assert found.refresh().connection == "near"
    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0", env=outage.worker_env)
    assert worker.wait(timeout=60) == 0, worker.output()
    labels = sorted(n["label"] for n in jobs.notes())
    assert labels == ["b-then", "b0", "b1", "b2"]  # the callback once
    done = Batch.find(found.id)
    assert done is not None and done.finished and done.succeeded == 3


def test_a_batch_on_a_failover_connection_goes_to_redis_while_it_answers(outage, rclient,
                                                                        spawn_worker):
    found = _fo_batch("r")
    assert found.connection == "near" and rows(outage.conn).count() == 0
    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0", env=outage.worker_env)
    assert worker.wait(timeout=60) == 0, worker.output()
    assert sorted(n["label"] for n in jobs.notes()) == ["r-then", "r0", "r1", "r2"]
    assert found.refresh().finished


def test_a_batch_dispatched_during_the_outage_in_a_rolled_back_transaction_leaves_nothing(
        outage, rclient):
    from django.db import transaction

    from queueing.models import BatchRecord

    outage.away()
    alias = connections.queue_driver(outage.conn).alias

    class Rollback(Exception):
        pass

    with pytest.raises(Rollback), transaction.atomic(using=alias):
        found = _fo_batch("x")
        raise Rollback
    assert rows(outage.conn).count() == 0
    assert not BatchRecord.objects.using(alias).filter(id=found.id).exists()
    with transaction.atomic(using=alias):
        kept = _fo_batch("y")
    assert rows(outage.conn).count() == 3  # written at the commit
    assert kept.refresh().connection == outage.conn


def test_the_drain_leaves_a_batch_whose_member_a_fallback_worker_holds(outage, rclient,
                                                                       spawn_worker):
    """A worker on the fallback runs a member while the drain looks: the drain leaves
    that batch where it is (moving its record would lose the member's count, and the
    batch would never finish), then moves the rest with the record, counters and all,
    once the member is settled; the callback runs once."""
    from queueing import batch
    from queueing.batches.record import Batch
    from queueing.models import BatchRecord

    outage.away()
    found = (batch(jobs.sleep_then_record.s(2.0, "slow"), jobs.record.s("h1"),
                   jobs.record.s("h2"))
             .then(jobs.record.s("h-then")).using(connection="fo").dispatch())
    alias = connections.queue_driver(outage.conn).alias
    outage.back()
    fallback_worker = spawn_worker(outage.conn, "--max-jobs=1", "--sleep=0",
                                   env=outage.worker_env)
    wait_until(lambda: any(n["label"] == "slow" for n in jobs.notes()), timeout=30,
               message="the fallback worker to start the slow member")
    assert drain("fo") == 0  # a member is held there: the batch stays whole
    assert BatchRecord.objects.using(alias).filter(id=found.id).exists()
    assert rows(outage.conn).count() == 3
    assert fallback_worker.wait(timeout=30) == 0, fallback_worker.output()
    assert drain("fo") == 2  # settled: the rest move, with the record
    assert not BatchRecord.objects.using(alias).filter(id=found.id).exists()
    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0", env=outage.worker_env)
    assert worker.wait(timeout=60) == 0, worker.output()
    ran = [n["label"] for n in jobs.notes() if n.get("phase") != "start"]
    assert sorted(ran) == ["h-then", "h1", "h2", "slow"]  # the callback once
    done = Batch.find(found.id)
    assert done is not None and done.finished and done.succeeded == 3
