"""Batches on a database connection (PostgreSQL and SQLite): the counting rules of
queueing/entries/batch_counting.py in one transaction with the settled rows' deletion and the
callbacks' insert; in-process drains and real worker processes."""
import collections

import pytest

from queueing import Batch, batch, connections
from queueing.batches.retry import retry_batch
from queueing.models import BatchMember, BatchRecord, FailedJob, QueuedJob
from tests.conftest import WORKER_DATABASES
from tests.helpers import batch_ends, drain_database
from tests.testapp.jobs import (
    BATCH_CALLBACKS,
    BATCH_HEALED,
    BATCH_RAN,
    batch_callback,
    batch_member,
    failing_until_healed,
    notes,
)
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)






def members(conn, labels, **kw):
    return [batch_member.s(label, **kw).using(connection=conn) for label in labels]


def test_then_and_finally_run_once(dbconn):
    found = (batch(members(dbconn, range(30))).then(batch_callback.s("then"))
             .catch(batch_callback.s("catch")).finally_(batch_callback.s("finally"))
             .using(connection=dbconn).name("db batch").dispatch())
    alias = connections.driver(dbconn).alias
    assert BatchRecord.objects.using(alias).get(id=found.id).pending == 30
    drain_database(dbconn)
    done = Batch.find(found.id)
    assert (done.total, done.pending, done.succeeded, done.failed) == (30, 0, 30, 0)
    assert done.state == "finished" and done.connection == dbconn
    assert len(batch_ends("then")) == 1 and len(batch_ends("finally")) == 1 and batch_ends("catch") == []
    assert batch_ends("then")[0]["batch"] == found.id
    assert QueuedJob.objects.using(alias).count() == 0


def test_a_chain_member_and_failures_without_allow_failures(dbconn):
    found = (batch([batch_member.s("c1").using(connection=dbconn),
                    batch_member.s("c2").using(connection=dbconn)],
                   *members(dbconn, ["bad"], fail=True))
             .then(batch_callback.s("then")).catch(batch_callback.s("catch"))
             .finally_(batch_callback.s("finally")).using(connection=dbconn).dispatch())
    drain_database(dbconn)
    done = Batch.find(found.id)
    assert done.failed == 1 and done.pending == 0 and done.cancelled
    assert len(batch_ends("catch")) == 1 and len(batch_ends("finally")) == 1 and batch_ends("then") == []
    assert done.failed_job_ids() == [FailedJob.objects.get().uuid]


def test_cancel_skips_every_pending_member(dbconn):
    found = (batch(members(dbconn, range(40))).finally_(batch_callback.s("finally"))
             .then(batch_callback.s("then")).using(connection=dbconn).dispatch())
    assert found.cancel() is True
    drain_database(dbconn)
    done = Batch.find(found.id)
    assert notes(BATCH_RAN) == []
    assert (done.cancelled_jobs, done.pending, done.state) == (40, 0, "cancelled")
    assert len(batch_ends("finally")) == 1 and batch_ends("then") == []


def test_retry_batch_then_finishes(dbconn):
    found = (batch(*members(dbconn, ["ok"]),
                   failing_until_healed.s("f1").using(connection=dbconn),
                   failing_until_healed.s("f2").using(connection=dbconn))
             .allow_failures().then(batch_callback.s("then"))
             .finally_(batch_callback.s("finally")).using(connection=dbconn).dispatch())
    drain_database(dbconn)
    assert Batch.find(found.id).failed == 2 and batch_ends("then") == []
    connections.redis_driver("redis").client.set(BATCH_HEALED, "1")
    assert retry_batch(found.id) == 2
    assert Batch.find(found.id).pending == 2
    drain_database(dbconn)
    done = Batch.find(found.id)
    assert (done.succeeded, done.failed, done.state) == (3, 0, "finished")
    assert len(batch_ends("then")) == 1 and len(batch_ends("finally")) == 1


def test_an_acknowledgement_sent_twice_counts_once(dbconn):
    driver = connections.driver(dbconn)
    found = (batch(members(dbconn, [1, 2])).then(batch_callback.s("then"))
             .using(connection=dbconn).dispatch())
    held = []
    while len(held) < 2:
        held += driver.pop_batch("default", 2, owner="t")
    driver.acknowledge(held[:1])
    driver.acknowledge(held[:1])
    assert Batch.find(found.id).succeeded == 1
    driver.acknowledge(held)
    driver.acknowledge(held)
    done = Batch.find(found.id)
    assert (done.succeeded, done.pending) == (2, 0)
    callbacks = [r.payload for r in QueuedJob.objects.using(driver.alias)]
    assert len(callbacks) == 1 and "batch_callback" in callbacks[0]
    assert BatchMember.objects.using(driver.alias).filter(batch_id=found.id).count() == 2


def test_two_worker_processes_race_on_the_last_members(dbconn, spawn_worker):
    ids = [batch(members(dbconn, [f"{i}-a", f"{i}-b"])).then(batch_callback.s("then"))
           .finally_(batch_callback.s("finally")).using(connection=dbconn).dispatch().id
           for i in range(40)]
    for _ in range(2):
        spawn_worker(dbconn, "--queue=default", "--quiet", "--prefetch=1")
    wait_until(lambda: len(batch_ends("then")) >= 40 and len(batch_ends("finally")) >= 40, timeout=60,
               message="every batch's callbacks")
    import time
    time.sleep(1.0)
    per_batch = collections.Counter((n["kind"], n["batch"]) for n in notes(BATCH_CALLBACKS)
                                    if n["phase"] == "end")
    assert all(per_batch[("then", b)] == 1 and per_batch[("finally", b)] == 1 for b in ids)
