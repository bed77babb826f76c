"""Issue 35: a `failover` connection. With its Redis away, `.delay()` writes the job to
the database connection after it (in the caller's transaction), a circuit keeps later
dispatches from waiting on the dead Redis, and the master's drain moves the jobs back to
Redis once it answers, each once. Without failover, `.delay()` raises the project's own
error naming the connection. Real Redis, real PostgreSQL and SQLite, real workers."""
import copy
import json

import pytest
from django.db import transaction

from queueing import connections
from queueing.errors import ConfigurationError, StoreUnavailable
from queueing.failover.drain import drain
from queueing.models import QueuedJob
from tests.conftest import WORKER_DATABASES
from tests.helpers import DEAD_REDIS, drain_database, queue_with
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def rows(conn):
    return QueuedJob.objects.using(connections.queue_driver(conn).alias)


def test_with_redis_away_each_dispatch_lands_in_the_database_and_runs_once(failover):
    uuids = [jobs.record.using(connection="fo").delay(f"f{i}") for i in range(200)]
    assert all(uuids) and rows(failover).count() == 200
    # one try of the dead Redis: the circuit sent the other 199 straight to the database
    [dead, database] = connections.driver("fo").state()
    assert dead == {"connection": "dead", "open": True, "failures": 1}
    assert database["failures"] == 0
    drain_database(failover)
    ran = [n["label"] for n in jobs.notes()]
    assert sorted(ran) == sorted(f"f{i}" for i in range(200))


def test_a_rolled_back_request_leaves_no_job(failover, settings):
    with pytest.raises(RuntimeError), transaction.atomic(using=connections.queue_driver(
            failover).alias):
        for i in range(5):
            jobs.record.using(connection="fo").delay(f"r{i}")
        raise RuntimeError("the view failed")
    assert rows(failover).count() == 0


def test_without_failover_a_dead_redis_is_named_in_the_projects_own_error(settings):
    with queue_with(settings, dead={"driver": "redis", "url": DEAD_REDIS, "queues": "*"}):
        connections.reset()
        with pytest.raises(StoreUnavailable) as caught:
            jobs.record.using(connection="dead").delay("x")
    connections.reset()
    text = str(caught.value)
    assert "'dead'" in text and "127.0.0.1:1" in text and "s3cret" not in text


def test_the_drain_moves_each_waiting_job_back_to_redis_once(settings, dbconn, rclient,
                                                             driver):
    with queue_with(settings, fo={"driver": "failover", "connections": ["redis", dbconn]}):
        connections.reset()
        # written to the database while Redis was away (as the failover would have)
        for i in range(30):
            jobs.record.using(connection=dbconn).delay(f"d{i}")
        jobs.record.using(connection=dbconn, tries=7).delay("tries")
        assert drain("fo", limit=20) == 20  # bounded per call
        assert drain("fo") == 11
        assert drain("fo") == 0
        assert rows(dbconn).count() == 0
        entries = [json.loads(raw) for raw in rclient.lrange("queues:{default}", 0, -1)]
    connections.reset()
    labels = [e["args"][0] for e in entries]
    assert labels == [f"d{i}" for i in range(30)] + ["tries"]  # once each, in order
    assert all(e["attempts"] == 0 and "reservation" not in e for e in entries)
    assert entries[-1]["maxTries"] == 7


def test_the_drain_takes_nothing_while_the_first_connection_is_away(failover):
    jobs.record.using(connection="fo").delay("waits")
    with pytest.raises(Exception):
        drain("fo")
    assert rows(failover).count() == 1


@pytest.mark.parametrize("block, message", [
    ({"driver": "failover", "connections": ["redis"]}, "two or more"),
    ({"driver": "failover", "connections": ["redis", "nowhere"]}, "unknown connection"),
    ({"driver": "failover", "connections": ["redis", "sync"]}, "tries redis and database"),
    ({"driver": "failover", "connections": ["redis", "db-lite"], "retry_primary_after": 0},
     "retry_primary_after"),
    ({"driver": "failover", "connections": ["redis", "db-lite"], "retry_after": 3},
     "retry_after"),
])
def test_a_failover_block_is_checked(settings, block, message):
    from queueing.settings.config import parse_settings

    queue = copy.deepcopy(settings.QUEUE)
    queue["connections"]["sync"] = {"driver": "sync"}
    queue["connections"]["fo"] = block
    with pytest.raises(ConfigurationError, match=message):
        parse_settings(queue)


def test_the_masters_duty_says_each_switch_once_and_moves_the_jobs(settings, dbconn,
                                                                     rclient):
    from horizon.supervisor.failover_draining import EVERY, FailoverDrainer

    said, now = [], [0.0]
    drainer = FailoverDrainer(said.append, clock=lambda: now[0])
    for i in range(3):
        jobs.record.using(connection=dbconn).delay(f"m{i}")
    with queue_with(settings, dead={"driver": "redis", "url": DEAD_REDIS, "queues": "*"},
                    fo={"driver": "failover", "connections": ["dead", dbconn]}):
        connections.reset()
        for _ in range(3):
            drainer.tick()
            now[0] += EVERY
    assert len(said) == 1 and "'dead' is away" in said[0] and "s3cret" not in said[0]
    with queue_with(settings, fo={"driver": "failover", "connections": ["redis", dbconn]}):
        connections.reset()
        drainer.away.add("fo")  # the same connection name, its first one back
        drainer.tick()
    connections.reset()
    assert said[1:] == ["failover 'fo': 'redis' answers again",
                        "failover 'fo': moved 3 job(s) back to 'redis'"]
    assert rclient.llen("queues:{default}") == 3 and rows(dbconn).count() == 0
