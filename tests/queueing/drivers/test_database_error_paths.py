"""Issue 26, item 5: the database driver's error paths and mixed-driver dispatch, on real
PostgreSQL and SQLite (sessions ended by the server, real transactions and rollbacks)."""
import io
import json
import time

import pytest
from django.conf import settings
from django.db import transaction

from queueing import connections, dispatch_many
from queueing.drivers.redis.keys import QueueKeys
from queueing.models import FailedJob, QueuedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def drain(conn: str, **options) -> str:
    out = io.StringIO()
    opts = WorkerOptions(connection=conn, queues=("default",), stop_when_empty=True,
                         sleep=0, memory=0, **options)
    Worker(connections.driver(conn), opts, stdout=out, stderr=io.StringIO()).run()
    return out.getvalue()


@pytest.fixture
def pgconn(dbconn):
    if dbconn != "db-pg":
        pytest.skip("a server that ends sessions on demand: PostgreSQL")
    return dbconn


def test_a_transient_error_on_release_is_retried_and_the_job_keeps_its_exception(pgconn):
    alias = connections.driver(pgconn).alias
    uuid = jobs.lose_the_queue_session_then_raise.using(connection=pgconn).delay(alias, "r")
    started = time.time()
    out = drain(pgconn)
    assert not FailedJob.objects.filter(connection=pgconn).exists(), \
        FailedJob.objects.values_list("uuid", "exception").first()
    row = QueuedJob.objects.using(alias).get()
    assert json.loads(row.payload)["uuid"] == uuid
    assert row.reserved_until is None and row.available_at > started + 25, "released"
    assert "RELEASED" in out and "the job's own error r" in out


def test_a_transient_error_on_delete_after_failing_keeps_the_jobs_own_record(pgconn):
    alias = connections.driver(pgconn).alias
    uuid = jobs.lose_the_queue_session_then_fail.using(connection=pgconn).delay(alias, "f")
    drain(pgconn)
    failed = FailedJob.objects.get(connection=pgconn)
    assert failed.uuid == uuid, "the job's own uuid, not a fresh one"
    assert failed.exception.startswith("ValueError: the job's own error f")
    assert "OperationalError" not in failed.exception
    assert not QueuedJob.objects.using(alias).exists(), "the failed row was deleted"


def test_a_handed_back_row_gets_a_fresh_token_on_its_next_delivery(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", json.dumps({"attempts": 0, "uuid": "u-1", "job": "x"}))
    first = driver.pop("default", owner="paused-worker")
    assert driver.unreserve([first]) == 1
    second = driver.pop("default", owner="other-worker")
    assert json.loads(second.raw)["attempts"] == 1, "handed back uncounted"
    assert second.token != first.token, "the handed-back delivery's token was reused"
    lease_end = time.time() + 3600
    assert not driver.renew(first, lease_end), "the first worker's sidecar renews nothing"
    assert not driver.release(first, time.time()) and not driver.delete(first)
    assert driver.renew(second, time.time() + 60) and driver.delete(second)


def default_alias_connection() -> str:
    for name, block in settings.QUEUE["connections"].items():
        if block.get("driver") == "database" and block.get("database") == "default":
            return name
    pytest.skip("no database connection on the default database")


class Rollback(Exception):
    pass


def test_dispatch_many_with_mixed_drivers_inside_atomic_then_rollback_queues_nothing(
        dbconn, rclient):
    conn = default_alias_connection()
    ready = QueueKeys.for_queue("default").ready
    with pytest.raises(Rollback):
        with transaction.atomic():
            dispatch_many([jobs.record.s("database").using(connection=conn),
                           jobs.record.s("redis")])
            assert rclient.llen(ready) == 0, "the Redis job was pushed before the commit"
            raise Rollback
    assert rclient.llen(ready) == 0
    assert not QueuedJob.objects.exists()
    with transaction.atomic():
        dispatch_many([jobs.record.s("database").using(connection=conn),
                       jobs.record.s("redis")])
    assert rclient.llen(ready) == 1 and QueuedJob.objects.count() == 1


def test_a_database_listing_shows_a_large_payload_cut(dbconn):
    from queueing.dispatching.preview import PREVIEW_BYTES, peek_entry

    driver = connections.driver(dbconn)
    uuid = jobs.record.using(connection=dbconn).delay("big", blob="q" * 3 * 2 ** 20)
    [listed] = driver.pending("default", preview=PREVIEW_BYTES)
    assert len(listed) < PREVIEW_BYTES + 200, "the listing read the whole payload"
    shown = peek_entry(listed)
    assert shown["uuid"] == uuid and shown["job"] == "tests.testapp.jobs.record"
    assert shown["preview"]["bytes"] > 3 * 2 ** 20
    assert driver.forget_pending("default", listed), "actions still name the row"
