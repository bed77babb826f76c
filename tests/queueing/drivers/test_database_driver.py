"""The database driver's moves on real PostgreSQL and SQLite (no worker process)."""
import dataclasses
import json
import threading
import time

import pytest
from django.db import connections as db_connections
from django.db import transaction

from queueing import connections
from queueing.drivers.database.delivery import parse_token, stamp
from queueing.drivers.database.driver import DatabaseDriver
from queueing.entries import payload as payload_lib
from queueing.models import QueuedJob
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def entry(label, **fields) -> str:
    return payload_lib.encode({"attempts": 0, "uuid": f"u-{label}", "job": "x", **fields})


def label_of(reservation) -> str:
    return payload_lib.peek(reservation.raw)["uuid"][2:]


def short_lease(name, seconds) -> DatabaseDriver:
    config = dataclasses.replace(connections.driver(name).config, retry_after=seconds)
    return DatabaseDriver(config)


def test_fifo_order_and_attempts_counted_on_every_delivery(dbconn):
    driver = connections.driver(dbconn)
    for label in "abc":
        driver.push("default", entry(label))
    first = driver.pop("default", owner="w1")
    assert label_of(first) == "a"
    data = payload_lib.peek(first.raw)
    assert data["attempts"] == 1 and data["reservation"] == first.token
    assert data["reservedBy"] == "w1"
    assert driver.release(first, time.time() - 1)
    again = [driver.pop("default") for _ in range(3)]
    assert [label_of(r) for r in again] == ["a", "b", "c"]
    assert payload_lib.peek(again[0].raw)["attempts"] == 2
    assert again[0].token != first.token
    assert driver.pop("default") is None


def test_higher_priority_first_then_oldest(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", entry("low"))
    driver.push("default", entry("high"), priority=5)
    driver.push("default", entry("low2"))
    assert [label_of(driver.pop("default")) for _ in range(3)] == ["high", "low", "low2"]


def test_acknowledge_in_the_pop_deletes_only_that_delivery(dbconn):
    driver = connections.driver(dbconn)
    driver.push_many("default", [entry(i) for i in range(3)])
    held = driver.pop("default")
    nxt = driver.pop("default", finished=held)
    assert label_of(nxt) == "1"
    assert QueuedJob.objects.using(driver.alias).count() == 2
    assert not driver.delete(held)  # already gone
    driver.acknowledge(nxt)
    assert driver.sizes("default").total == 1


def test_delayed_jobs_wait_and_can_be_promoted_or_forgotten(dbconn):
    driver = connections.driver(dbconn)
    driver.later("default", entry("soon"), time.time() + 60)
    driver.later("default", entry("gone"), time.time() + 60)
    driver.later("default", entry("due"), time.time() - 1)
    assert driver.sizes("default") == type(driver.sizes("default"))(1, 2, 0)
    assert label_of(driver.pop("default")) == "due"
    assert driver.pop("default") is None
    listed = driver.delayed("default")
    assert [payload_lib.peek(raw)["uuid"] for raw, _ in listed] == ["u-soon", "u-gone"]
    assert listed[0][1] > time.time() + 50
    assert driver.forget_delayed("default", listed[1][0])
    assert driver.promote_delayed("default", listed[0][0])
    assert not driver.promote_delayed("default", listed[0][0])  # no longer delayed
    assert label_of(driver.pop("default")) == "soon"


def test_expired_reservation_is_delivered_again_and_the_old_one_is_void(dbconn):
    driver = short_lease(dbconn, 1.0)
    driver.push("default", entry("a"))
    first = driver.pop("default")
    assert driver.pop("default") is None
    assert driver.sizes("default").reserved == 1
    time.sleep(1.1)
    assert driver.sizes("default").pending == 1
    second = driver.pop("default")
    assert label_of(second) == "a" and payload_lib.peek(second.raw)["attempts"] == 2
    assert not driver.delete(first) and not driver.release(first, time.time())
    assert not driver.renew(first, time.time() + 60)
    assert driver.delete(second)
    driver.close()


def test_renew_extends_the_lease(dbconn):
    driver = short_lease(dbconn, 1.0)
    driver.push("default", entry("a"))
    held = driver.pop("default")
    assert driver.renew(held, time.time() + 60)
    time.sleep(1.1)
    assert driver.pop("default") is None
    (raw, until), = driver.reserved("default")
    assert until > time.time() + 50 and payload_lib.peek(raw)["reservation"] == held.token
    driver.close()


def test_release_can_store_a_new_payload(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", entry("a"))
    held = driver.pop("default")
    assert driver.release(held, time.time() - 1, payload=entry("a", note="changed"))
    data = payload_lib.peek(driver.pop("default").raw)
    assert data["note"] == "changed" and data["attempts"] == 2


def test_malformed_rows_are_delivered_wrapped_with_attempts(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", "not json at all")
    driver.push("default", '{"job":"x"}')
    for original in ("not json at all", '{"job":"x"}'):
        data = json.loads(driver.pop("default").raw)
        assert data["attempts"] == 1 and data["wrapped"] == original


def test_pause_is_checked_inside_the_pop(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", entry("a"))
    driver.pause("default")
    assert driver.is_paused("default") and driver.paused_queues() == {"default"}
    assert driver.pop("default") is None
    driver.resume("default")
    assert label_of(driver.pop("default")) == "a"


def test_listings_clear_and_forget(dbconn):
    driver = connections.driver(dbconn)
    driver.push_many("default", [entry(i) for i in range(5)])
    held = driver.pop("default")
    pending = driver.pending("default", 1, 2)
    assert [payload_lib.peek(raw)["uuid"] for raw in pending] == ["u-2", "u-3"]
    assert driver.forget_pending("default", pending[0])
    assert not driver.forget_pending("default", pending[0])
    assert [payload_lib.peek(r)["uuid"] for r, _ in driver.reserved("default")] == ["u-0"]
    assert [payload_lib.peek(r)["uuid"] for r in driver.find("pending", "default", "u-4")] \
        == ["u-4"]
    assert driver.clear("default") == 3  # the reserved job is left to its worker
    assert driver.sizes_many(["default", "other"])["default"].reserved == 1
    assert driver.delete(held)


def test_rollback_drops_the_job_and_commit_keeps_it(dbconn):
    driver = connections.driver(dbconn)
    with pytest.raises(RuntimeError):
        with transaction.atomic(using=driver.alias):
            jobs.record.using(connection=dbconn).delay("rolled back")
            assert driver.sizes("default").pending == 1  # written in the transaction
            raise RuntimeError("undo")
    assert driver.sizes("default").total == 0
    with transaction.atomic(using=driver.alias):
        jobs.record.using(connection=dbconn).delay("kept")
        assert not db_connections[driver.alias].run_on_commit  # no after-commit hook
    assert payload_lib.peek(driver.pop("default").raw)["args"] == ["kept"]


def test_concurrent_pops_never_deliver_a_job_twice(dbconn):
    driver = connections.driver(dbconn)
    driver.push_many("default", [entry(i) for i in range(300)])
    seen, errors = [], []

    def take():
        try:
            while (held := driver.pop("default")) is not None:
                seen.append(parse_token(held.token)[0])
                driver.delete(held)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            driver._drop_private()

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(seen) == 300 and len(set(seen)) == 300


def test_stamp_replaces_an_earlier_delivery_stamp():
    once = stamp('{"attempts":0,"uuid":"u"}', 1, "7.1", "w:1")
    assert once == '{"attempts":1,"reservation":"7.1","reservedBy":"w:1","uuid":"u"}'
    assert stamp(once, 2, "7.2") == '{"attempts":2,"reservation":"7.2","uuid":"u"}'
    assert stamp('[1]', 3) == '{"attempts":3,"wrapped":"[1]"}'


def test_notify_wakes_a_listener_for_its_queue_only(dbconn):
    driver = connections.driver(dbconn)
    if driver.vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    listener = DatabaseDriver(driver.config)
    assert listener.wait_for_jobs(["default"], 0.1)  # first call: LISTEN, then look again
    assert not listener.wait_for_jobs(["default"], 0.1)
    driver.push("other", entry("elsewhere"))
    assert not listener.wait_for_jobs(["default"], 0.3)
    timer = threading.Timer(0.2, lambda: (driver.push("default", entry("a")),
                                          driver._shared().close()))
    timer.start()
    assert listener.wait_for_jobs(["default"], 20)
    timer.join()
    listener.close()


def test_sqlite_commits_wake_a_waiter_for_a_ready_job_of_its_queues_only(dbconn):
    """SQLite's wake-up (commit_watch.py): a wait ends once another connection commits a
    job ready in a queue it watches; other commits (a job elsewhere, a delayed one, a
    control row) do not end it."""
    driver = connections.driver(dbconn)
    if driver.vendor != "sqlite":
        pytest.skip("SQLite's own wake-up (PostgreSQL: NOTIFY)")
    waiter = DatabaseDriver(driver.config)
    assert waiter.config.block_for == 5.0  # idle workers wait on the watch, not --sleep
    assert waiter.wait_for_jobs(["default"], 0.1)  # no pop yet: look once more
    assert waiter.pop("default") is None
    assert not waiter.wait_for_jobs(["default"], 0.2)
    driver.push("other", entry("elsewhere"))
    driver.later("default", entry("later"), time.time() + 60)
    driver.broadcast_restart(1.0)
    assert not waiter.wait_for_jobs(["default"], 0.3)
    timer = threading.Timer(0.2, lambda: (driver.push("default", entry("a")),
                                          driver._shared().close()))
    timer.start()
    started = time.monotonic()
    assert waiter.wait_for_jobs(["default"], 20)
    assert time.monotonic() - started < 1.0
    timer.join()
    waiter.close()


def test_a_sqlite_wait_sees_a_job_pushed_between_its_queues_pops(dbconn):
    """A worker pops its queues in turn, then waits: a job committed to the first queue
    after its pop, while the second was popped, ends the wait at once (the count it
    compares with is the one read before the round's first pop, not its last)."""
    driver = connections.driver(dbconn)
    if driver.vendor != "sqlite":
        pytest.skip("SQLite's own wake-up (PostgreSQL: NOTIFY)")
    waiter = DatabaseDriver(driver.config)
    assert waiter.pop("high") is None
    driver.push("high", entry("between"))
    assert waiter.pop("default") is None
    started = time.monotonic()
    assert waiter.wait_for_jobs(["high", "default"], 2.0)
    assert time.monotonic() - started < 0.5
    assert label_of(waiter.pop("high")) == "between"
    waiter.close()


def test_restart_stamp_and_exception_counts_live_in_the_database(dbconn):
    driver = connections.driver(dbconn)
    assert driver.last_restart() is None
    driver.broadcast_restart(123.5)
    assert driver.last_restart() == 123.5
    assert [driver.count_exception("u-1") for _ in range(3)] == [1, 2, 3]
    driver.forget_exceptions("u-1")
    assert driver.count_exception("u-1") == 1


def test_pop_batch_reserves_in_queue_order_and_acknowledges_a_list(dbconn):
    driver = connections.driver(dbconn)
    driver.push_many("default", [entry(i) for i in range(6)])
    driver.push("default", entry("urgent"), priority=9)
    first = driver.pop_batch("default", 3)
    expected = ["urgent", "0", "1"] if driver.vendor != "sqlite" else ["urgent"]
    assert [label_of(r) for r in first] == expected  # SQLite reserves one per call
    nxt = driver.pop_batch("default", 2, finished=first)
    assert QueuedJob.objects.using(driver.alias).count() == 7 - len(first)
    assert driver.renew_many([*nxt, first[0]], time.time() + 60) == [True] * len(nxt) + [False]
    assert driver.unreserve(nxt) == len(nxt)
    again = driver.pop("default")
    assert label_of(again) == label_of(nxt[0])
    assert json.loads(again.raw)["attempts"] == 1  # handed back uncounted
