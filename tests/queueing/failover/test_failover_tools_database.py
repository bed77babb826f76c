"""Issue 47, part 4: the operator tools with a failover connection configured. The
Locks page lists each lock once (the failover connection's locks are its first
connection's); queue_monitor counts a failover connection's queues (on every
connection it names) instead of failing, and leaves it out of "every queue" (its jobs
are counted on the connections it names). Real Redis, real databases."""
import copy
import io
import json
import re

import pytest
from django.core.management import call_command
from django.test import override_settings

from queueing import connections
from tests.conftest import WORKER_DATABASES
from tests.helpers import client_with, redis_outage
from tests.testapp import control_jobs, jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


@pytest.fixture
def failover(settings, dbconn):
    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"]["fo"] = {"driver": "failover", "connections": ["redis", dbconn]}
    with override_settings(QUEUE=queue):
        connections.reset()
        yield dbconn
    connections.reset()


def test_the_locks_page_lists_each_lock_once(failover, rclient):
    uuid = control_jobs.unique_record.using(connection="fo", after_commit=False).delay(
        "k1", "held")
    page = client_with("operate_dashboard").get("/locks/").content.decode()
    rows = re.findall(r"<tr>.*?</tr>", page, re.S)[1:]
    assert len(rows) == 1 and uuid in rows[0], rows


def test_queue_monitor_counts_a_failover_connection(settings, dbconn):
    with redis_outage(settings, dbconn) as outage:
        jobs.record.using(connection="fo").delay("on redis")
        outage.away()
        jobs.record.using(connection="fo").delay("in the database")
        outage.back()
        out = io.StringIO()
        call_command("queue_monitor", "fo:default", "--json", stdout=out)
        [reading] = json.loads(out.getvalue())["queues"]
        assert (reading["connection"], reading["ready"]) == ("fo", 2)
        out = io.StringIO()
        call_command("queue_monitor", "--json", stdout=out)  # every queue: fo left out
        names = [f"{r['connection']}:{r['queue']}" for r in json.loads(out.getvalue())["queues"]]
        assert "fo:default" not in names and "near:default" in names
