"""Issue 35: the Tasks backend and debounced jobs through a failover connection. A task
enqueued while Redis is away lands in the fallback database (its result reads READY
from there), and runs once after the drain, its result readable; a burst of debounced
dispatches during the outage runs once, with the last arguments. Real Redis behind a
proxy that refuses and comes back, real PostgreSQL and SQLite, real worker processes."""
import json
import time

import pytest
from django.db import transaction
from django.test import override_settings

from queueing import connections
from queueing.failover.debounce import row_key
from queueing.failover.drain import drain
from queueing.models import ControlValue, QueuedJob
from queueing.tasks.framework import PRIMARY as FW
from tests.conftest import WORKER_DATABASES
from tests.helpers import redis_outage
from tests.testapp import control_jobs, jobs, tasks

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
FO_BACKEND = {"fo": {"BACKEND": "queueing.tasks.RedisBackend", "QUEUES": ["default"],
                     "OPTIONS": {"connection": "fo"}}}


@pytest.fixture
def outage(settings, dbconn):
    """'fo': Redis through a proxy first, then the database connection; TASKS["fo"] on it."""
    with redis_outage(settings, dbconn) as found, \
            override_settings(TASKS={**settings.TASKS, **FO_BACKEND}):
        found.worker_env = {**found.worker_env, "TEST_TASKS": json.dumps(FO_BACKEND)}
        yield found


def rows(conn):
    return QueuedJob.objects.using(connections.queue_driver(conn).alias)


def worker_run(spawn_worker, outage):
    worker = spawn_worker("redis", "--stop-when-empty", "--sleep=0", env=outage.worker_env)
    assert worker.wait(timeout=60) == 0, worker.output()


@pytest.mark.skipif(FW is None, reason="no Tasks framework")
def test_a_task_enqueued_while_redis_is_away_runs_once_after_the_drain(outage, rclient,
                                                                        spawn_worker):
    backend = FW.task_backends["fo"]
    outage.away()
    started = time.monotonic()
    away = tasks.add.using(backend="fo").enqueue(2, 3)
    assert time.monotonic() - started < 2  # one dispatch timeout (0.5 s), not a connect's
    assert rows(outage.conn).count() == 1
    waiting = backend.get_result(away.id)  # Redis away: read from the fallback
    assert waiting.status == FW.TaskResultStatus.READY and waiting.args == [2, 3]
    with pytest.raises(RuntimeError), transaction.atomic(
            using=connections.queue_driver(outage.conn).alias):
        tasks.add.using(backend="fo").enqueue(7, 7)
        raise RuntimeError("the view failed")
    assert rows(outage.conn).count() == 1  # the rolled-back one left nothing

    outage.back()
    assert backend.get_result(away.id).status == FW.TaskResultStatus.READY  # still there
    up = tasks.add.using(backend="fo").enqueue(1, 1)  # Redis takes it: result and job
    assert backend.get_result(up.id).status == FW.TaskResultStatus.READY
    assert rows(outage.conn).count() == 1
    assert drain("fo") == 1
    worker_run(spawn_worker, outage)
    done = backend.get_result(away.id)
    assert done.status == FW.TaskResultStatus.SUCCESSFUL and done.return_value == 5
    assert len(done.worker_ids) == 1  # ran once
    first = backend.get_result(up.id)
    assert first.status == FW.TaskResultStatus.SUCCESSFUL and first.return_value == 2
    assert rows(outage.conn).count() == 0


def debounce_rows(outage):
    alias = connections.queue_driver(outage.conn).alias
    return ControlValue.objects.using(alias).filter(key__startswith="debounce:")


def ran_labels():
    return sorted(n["label"] for n in jobs.notes())


def test_two_debounced_dispatches_during_the_outage_run_once_with_the_last_arguments(
        outage, rclient, spawn_worker):
    debounced = control_jobs.debounced.using(connection="fo")  # debounce_for=0.5
    outage.away()
    debounced.delay("k", "first")
    debounced.delay("k", "second")
    debounced.delay("other", "other")
    assert rows(outage.conn).count() == 2  # "first" was replaced in the fallback
    assert debounce_rows(outage).count() == 2
    outage.back()  # 0.6 s: both windows have passed
    assert drain("fo") == 2
    assert debounce_rows(outage).count() == 0  # the drain ended their bursts
    worker_run(spawn_worker, outage)
    assert ran_labels() == ["other", "second"]


def test_a_burst_begun_in_the_outage_and_ended_after_it_runs_once(outage, rclient,
                                                                  spawn_worker):
    debounced = control_jobs.debounced.using(connection="fo")
    outage.away()
    debounced.delay("k", "during")
    assert rows(outage.conn).count() == 1
    outage.back()
    debounced.delay("k", "after")  # Redis again: the fallback's entry is removed
    assert rows(outage.conn).count() == 0 and debounce_rows(outage).count() == 0
    assert drain("fo") == 0
    time.sleep(0.6)
    worker_run(spawn_worker, outage)
    assert ran_labels() == ["after"]


def test_a_debounced_dispatch_in_a_rolled_back_transaction_leaves_nothing(outage):
    debounced = control_jobs.debounced.using(connection="fo")
    outage.away()
    alias = connections.queue_driver(outage.conn).alias
    debounced.delay("k", "kept")
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        debounced.delay("k", "rolled back")
        raise RuntimeError("the view failed")
    [kept] = rows(outage.conn)
    assert json.loads(kept.payload)["args"] == ["k", "kept"]  # not removed by the rollback
    [row] = debounce_rows(outage)
    assert row.key == row_key(json.loads(row.value)["key"])
    assert json.loads(row.value)["uuid"] == json.loads(kept.payload)["uuid"]


def test_a_kept_result_dispatched_in_the_outage_is_kept_on_the_first_redis(outage, rclient,
                                                                           spawn_worker):
    """Issue 50: results follow the failover rule of Task results (and job controls): a
    job that keeps its result waits in the fallback while Redis is away, and once the
    drain moved it and it ran, its result is on the first connection's Redis, where
    result_of(uuid, connection) reads it."""
    from queueing import result_of
    from queueing.results import store
    from tests.testapp.result_jobs import add_later

    outage.away()
    uuid = add_later.using(connection="fo").delay(0, 2, 3)
    assert rows(outage.conn).count() == 1
    outage.back()
    handle = result_of(uuid, connection="fo")
    assert handle.status == "pending"  # waiting in the fallback: nothing kept yet
    assert drain("fo") == 1
    worker_run(spawn_worker, outage)
    assert handle.get(timeout=10) == {"sum": 5}
    assert rclient.hget(store.record_key(uuid), "status") == b"succeeded"
