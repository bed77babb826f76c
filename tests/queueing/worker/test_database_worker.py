"""The same worker on a database connection: in-process drains and real processes,
on real PostgreSQL and SQLite."""
import io
import json
import signal
import time

import pytest
from django.core.management import call_command

from queueing import chain, connections
from queueing.models import FailedJob, QueuedJob
from queueing.worker.loop import Worker
from queueing.worker.options import WorkerOptions
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def drain(conn, **options) -> tuple[int, str]:
    out = io.StringIO()
    opts = WorkerOptions(connection=conn, queues=options.pop("queues", ("default",)),
                         stop_when_empty=True, sleep=0, memory=0, **options)
    code = Worker(connections.driver(conn), opts, stdout=out, stderr=io.StringIO()).run()
    return code, out.getvalue()


def labels(phase=None):
    return [n["label"] for n in jobs.notes() if phase is None or n.get("phase") == phase]


def rows(conn):
    return QueuedJob.objects.using(connections.driver(conn).alias)


def test_jobs_run_in_order_and_are_deleted(dbconn):
    for label in range(5):
        jobs.record.using(connection=dbconn).delay(label)
    code, out = drain(dbconn)
    assert code == 0 and labels() == [0, 1, 2, 3, 4]
    assert [n["attempts"] for n in jobs.notes()] == [1] * 5
    assert rows(dbconn).count() == 0 and "DONE" in out


def test_chain_runs_in_order_and_stops_at_a_failure(dbconn):
    chain(jobs.record.s(1).using(connection=dbconn), jobs.record.s(2).using(connection=dbconn))
    drain(dbconn)
    assert labels() == [1, 2]
    chain(jobs.record.s("x").using(connection=dbconn),
          jobs.explode.s("y").using(connection=dbconn),
          jobs.record.s("never").using(connection=dbconn))
    drain(dbconn)
    assert labels() == [1, 2, "x", "y"]
    row = FailedJob.objects.get()
    assert row.connection == dbconn and row.job == "tests.testapp.jobs.explode"


def test_release_with_backoff_then_failure_then_retry(dbconn):
    uuid = jobs.explode_with_backoff.using(connection=dbconn).delay("b")  # tries 3, [5, 30]
    now = time.time()
    drain(dbconn)
    (raw, due), = connections.driver(dbconn).delayed("default")
    assert json.loads(raw)["attempts"] == 1 and now + 4 < due < now + 6.5
    rows(dbconn).update(available_at=0)
    drain(dbconn)
    rows(dbconn).update(available_at=0)
    drain(dbconn)
    assert labels() == ["b", "b", "b"]
    row = FailedJob.objects.get(uuid=uuid)
    assert "attempts exhausted (3 of 3)" in row.exception
    assert json.loads(row.payload)["attempts"] == 3 and rows(dbconn).count() == 0
    call_command("queue_retry", uuid, stdout=io.StringIO())
    assert rows(dbconn).get().attempts == 0
    drain(dbconn)
    assert labels() == ["b"] * 4


def test_max_exceptions_counts_across_deliveries(dbconn):
    jobs.explode_max_exceptions.using(connection=dbconn).delay()
    drain(dbconn)
    drain(dbconn)
    assert "max exceptions reached (2 of 2)" in FailedJob.objects.get().exception


def test_malformed_rows_fail_at_first_delivery_and_good_jobs_still_run(dbconn):
    driver = connections.driver(dbconn)
    driver.push("default", "{not json")
    driver.push("default", '{"attempts":0,"job":"nope"}')
    jobs.record.using(connection=dbconn).delay("good")
    drain(dbconn)
    assert labels() == ["good"]
    assert FailedJob.objects.count() == 2 and rows(dbconn).count() == 0


def test_a_job_past_its_tries_fails_without_running(dbconn):
    jobs.record.using(connection=dbconn, tries=1).delay("once")
    row = rows(dbconn).get()  # as if its one run had timed out or lost its worker
    payload = json.loads(row.payload)
    rows(dbconn).update(attempts=1, payload=json.dumps({**payload, "runs": 1}))
    drain(dbconn)
    assert labels() == []
    assert "max attempts exceeded" in FailedJob.objects.get().exception


def test_paused_queue_is_skipped_while_others_run(dbconn):
    call_command("queue_pause", "default", connection=dbconn, stdout=io.StringIO())
    jobs.record.using(connection=dbconn).delay("paused")
    jobs.record.using(connection=dbconn, queue="high").delay("open")
    drain(dbconn, queues=("high", "default"))
    assert labels() == ["open"]
    call_command("queue_continue", "default", connection=dbconn, stdout=io.StringIO())
    drain(dbconn, queues=("high", "default"))
    assert labels() == ["open", "paused"]


def test_queue_size_and_clear_commands(dbconn):
    for i in range(3):
        jobs.record.using(connection=dbconn).delay(i)
    jobs.record.using(connection=dbconn, delay=60).delay("later")
    out = io.StringIO()
    call_command("queue_size", dbconn, queue="default", stdout=out)
    assert out.getvalue().split("\n")[1].split() == ["default", "3", "1", "0"]
    call_command("queue_clear", dbconn, queue="default", force=True, stdout=out)
    assert "Cleared 4 job(s)" in out.getvalue() and rows(dbconn).count() == 0


# -- real processes ----------------------------------------------------------------------
def test_four_workers_drain_5000_jobs_and_none_runs_twice(dbconn, spawn_worker):
    count = 5000
    jobs.record.using(connection=dbconn)  # warm the registry
    from queueing import dispatch_many

    dispatch_many([jobs.record.s(i).using(connection=dbconn) for i in range(count)])
    workers = [spawn_worker(dbconn, "--stop-when-empty", "--quiet",
                            f"--name=w{i}") for i in range(4)]
    for worker in workers:
        assert worker.wait(timeout=120) == 0, worker.output()
    ran = jobs.notes()
    assert sorted(n["label"] for n in ran) == list(range(count))
    assert len({n["pid"] for n in ran}) > 1  # the work was shared
    assert rows(dbconn).count() == 0 and FailedJob.objects.count() == 0


def test_kill_9_mid_job_comes_back_after_its_lease(dbconn, spawn_worker):
    """A worker SIGKILLed mid-job: its sidecar charges the run (WorkerLost, released),
    so the job's next run is its attempt 2.

    Only a sidecar can charge it: a job that comes back because its lease lapsed comes
    back uncounted, as after a host crash (docs/reservation-contract.md). On SQLite the
    sidecar is a freshly started interpreter that loads Django, which took 3 s beside two
    CPU hogs: a worker killed before then left nobody to renew the 2 s lease, the next
    worker took the lapsed row, and its run said attempt 1 (about 1 run in 3). So the kill
    waits for the sidecar's first renewal (the row's lease moves past the pop's), and
    --timeout is long enough that the worker's own timeout cannot settle the job first.
    """
    env = {"TEST_RETRY_AFTER": "2"}
    first = spawn_worker(dbconn, "--timeout=60", env=env)
    jobs.sleep_then_record.using(connection=dbconn, tries=3).delay(30, "killed")
    wait_until(lambda: labels("start") == ["killed"], timeout=15)
    popped = rows(dbconn).get().reserved_until
    wait_until(lambda: rows(dbconn).get().reserved_until > popped, timeout=30,
               message="the sidecar's first renewal")
    first.send(signal.SIGKILL)
    first.wait()
    assert connections.driver(dbconn).sizes("default").reserved == 1  # held by the dead one
    second = spawn_worker(dbconn, "--timeout=60", env=env)
    runs = wait_until(lambda: [n for n in jobs.notes() if n.get("phase") == "start"][1:],
                      timeout=15, message="second run")
    assert runs[0]["attempts"] == 2, first.output()
    assert "the worker running it died" in first.output()  # the sidecar's RELEASED line
    second.send(signal.SIGKILL)


def test_queue_restart_stops_a_database_worker(dbconn, spawn_worker, settings):
    worker = spawn_worker(dbconn, "--sleep=0.2")
    jobs.record.using(connection=dbconn).delay("before")
    wait_until(lambda: labels() == ["before"], timeout=15)
    settings.QUEUE = {**settings.QUEUE, "connections": {  # only this test's databases
        name: block for name, block in settings.QUEUE["connections"].items()
        if block.get("database", "default") in WORKER_DATABASES}}
    call_command("queue_restart", stdout=io.StringIO())
    assert worker.wait(timeout=15) == 0
    assert "queue_restart requested" in worker.output()


def test_an_idle_postgresql_worker_is_woken_by_notify(dbconn, spawn_worker):
    if connections.driver(dbconn).vendor != "postgresql":
        pytest.skip("LISTEN/NOTIFY is PostgreSQL's")
    worker = spawn_worker(dbconn, "--sleep=30")
    time.sleep(1.5)  # idle, waiting on its LISTEN connection
    jobs.record.using(connection=dbconn).delay("woken")
    wait_until(lambda: labels() == ["woken"], timeout=10, message="the notified worker")
    worker.send(signal.SIGTERM)
    assert worker.wait() == 0


def test_a_job_longer_than_its_lease_runs_once_while_its_lease_is_renewed(dbconn,
                                                                          spawn_worker):
    # A 6 s lease tolerates a 4.4 s stall of renewals (policy.lease_timing); a 2 s one
    # tolerated 0.8 s, which a loaded 2-CPU machine's SQLite write lock, shared with the
    # other worker's polls, exceeded (the sidecar then rightly fenced the job, and the
    # second worker ran it). The job still outlives its lease, here by 4 s.
    env = {"TEST_RETRY_AFTER": "6"}
    workers = [spawn_worker(dbconn, "--timeout=30", env=env) for _ in range(2)]
    jobs.sleep_then_record.using(connection=dbconn).delay(10, "long")
    wait_until(lambda: labels("end") == ["long"], timeout=40, message="the long job")
    assert labels("start") == ["long"]  # never handed to the second worker
    for worker in workers:
        worker.send(signal.SIGTERM)
        assert worker.wait() == 0


def test_timeout_releases_with_backoff_and_exits_1(dbconn, spawn_worker):
    worker = spawn_worker(dbconn, "--timeout=1")
    jobs.sleep_forever.using(connection=dbconn).delay()
    started = time.time()
    assert worker.wait(timeout=20) == 1
    (raw, due), = connections.driver(dbconn).delayed("default")
    assert json.loads(raw)["attempts"] == 1
    assert started + 6 < due < time.time() + 7.5  # the job's backoff [7] for attempt 1
    assert FailedJob.objects.count() == 0
