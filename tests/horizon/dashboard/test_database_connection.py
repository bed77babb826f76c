"""Horizon and the dashboard over a database connection, beside a Redis one."""
import json
import time

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from horizon.repositories import state
from queueing import connections, dispatch_many
from tests.conftest import WORKER_DATABASES
from tests.testapp import jobs
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)
DB = settings.DB_TEST_CONNECTION


def labels(phase=None):
    return [n["label"] for n in jobs.notes() if phase is None or n.get("phase") == phase]


def supervisor(rclient, name):
    return next((s for s in state.supervisors(rclient) if s.name == name), None)


def processes(rclient, name):
    found = supervisor(rclient, name)
    return sum(found.processes.values()) if found else 0


@pytest.fixture
def empty_db_queue():
    from queueing.models import PausedQueue, QueuedJob

    alias = connections.driver(DB).alias
    QueuedJob.objects.using(alias).all().delete()
    PausedQueue.objects.using(alias).all().delete()


def test_one_master_runs_redis_and_database_supervisors_and_balances_the_database_one(
        spawn_worker, rclient, empty_db_queue):
    master = spawn_worker(command="horizon", env={"HORIZON_ENV": "mixed"})
    wait_until(lambda: processes(rclient, "supervisor-db") == 1 and
               processes(rclient, "supervisor-1") == 1, timeout=20, message="both supervisors")
    jobs.record_high.delay("on redis")
    jobs.record.using(connection=DB).delay("on the database")
    wait_until(lambda: sorted(labels()) == ["on redis", "on the database"], timeout=15)

    dispatch_many([jobs.sleep_then_record.s(0.1, f"j{i}").using(connection=DB)
                   for i in range(60)])
    wait_until(lambda: processes(rclient, "supervisor-db") == 3, timeout=20,
               message="the database supervisor to grow under its backlog")
    wait_until(lambda: len(labels("end")) == 60, timeout=40, message="backlog drained")
    # the last job's acknowledgement follows its "end" label by a round trip
    wait_until(lambda: connections.driver(DB).sizes("default").total == 0, timeout=10,
               message="the last acknowledgement")

    assert spawn_worker("default", "--connection", DB, command="queue_pause").wait() == 0
    time.sleep(0.5)
    jobs.record.using(connection=DB).delay("while paused")
    jobs.record_high.delay("redis still runs")
    wait_until(lambda: "redis still runs" in labels(), timeout=10)
    time.sleep(1.0)
    assert "while paused" not in labels()
    assert spawn_worker("default", "--connection", DB, command="queue_continue").wait() == 0
    wait_until(lambda: "while paused" in labels(), timeout=10)
    assert master.running()


@pytest.fixture
def staff():
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_dashboard_pages_and_actions_for_a_database_connection(staff, settings,
                                                               empty_db_queue):
    settings.HORIZON = {**settings.HORIZON, "supervisors": {
        "supervisor-db": {"connection": DB, "queues": ["default"]}}}
    driver = connections.driver(DB)
    label = f"{DB}:default"
    held_uuid = jobs.record.using(connection=DB).delay("held one")
    pending_uuid = jobs.record.using(connection=DB).delay("pending one")
    gone_uuid = jobs.record.using(connection=DB).delay("deleted one")
    delayed_uuid = jobs.record.using(connection=DB, delay=600).delay("delayed one")
    soon_uuid = jobs.record.using(connection=DB, delay=600).delay("run now")
    assert driver.pop("default", owner="host:1:w") is not None  # "held one" is reserved

    overview = staff.get("/").content.decode()
    assert label in overview
    for state_name, present, absent in (
            ("pending", [pending_uuid, gone_uuid], [held_uuid, delayed_uuid]),
            ("delayed", [delayed_uuid, soon_uuid], [pending_uuid]),
            ("reserved", [held_uuid], [pending_uuid])):
        page = staff.get(f"/jobs/{state_name}/")
        body = page.content.decode()
        assert page.status_code == 200
        assert all(u in body for u in present) and not any(u in body for u in absent), \
            state_name
    for state_name, uuid in (("pending", pending_uuid), ("delayed", delayed_uuid),
                             ("reserved", held_uuid)):
        page = staff.get(f"/jobs/{state_name}/{uuid}/", {"queue": label})
        assert page.status_code == 200 and uuid in page.content.decode(), state_name
    assert "host:1:w" in staff.get(f"/jobs/reserved/{held_uuid}/", {"queue": label}
                                   ).content.decode()

    staff.post(f"/jobs/pending/{gone_uuid}/delete/", {"job_queue": label, "at": "1"})
    staff.post(f"/jobs/delayed/{delayed_uuid}/delete/", {"job_queue": label})
    staff.post(f"/jobs/delayed/{soon_uuid}/run/", {"job_queue": label})
    remaining = [json.loads(raw)["uuid"] for raw in driver.pending("default")]
    assert remaining == [pending_uuid, soon_uuid] and driver.delayed("default") == []

    staff.post(f"/queues/{label}/pause/")
    assert driver.is_paused("default") and driver.pop("default") is None
    assert "paused" in staff.get("/").content.decode().lower()
    staff.post(f"/queues/{label}/continue/")
    assert not driver.is_paused("default")
    for path in ("/metrics/", "/jobs/completed/", "/failed/", "/workers/"):
        assert staff.get(path).status_code == 200, path
