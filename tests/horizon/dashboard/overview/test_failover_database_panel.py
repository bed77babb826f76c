"""Issue 35, item 4: operators see a failover. Each switch is published to the fallback
database (not to the Redis that is away), once per switch; the overview and the page
served while Horizon's own Redis is away show it with what waits in the fallback and
the oldest one's age; Prometheus has the same numbers; the long-wait alert counts the
fallback. Real Redis (and a proxy in front of it to take it away and bring it back),
real PostgreSQL and SQLite."""
import json
import logging
import re
import time
from urllib.parse import urlparse

import pytest
from django.conf import settings as django_settings
from django.db import transaction
from django.test import override_settings

from horizon.waits import Notifier, WaitMonitor
from queueing import connections
from queueing.failover.state import read_all, state_key
from queueing.models import ControlValue
from tests.conftest import WORKER_DATABASES
from tests.helpers import queue_with
from tests.tcp_proxy import TcpProxy
from tests.testapp import jobs

pytestmark = pytest.mark.django_db(transaction=True, databases=WORKER_DATABASES)


def published(conn):
    alias = connections.queue_driver(conn).alias
    row = ControlValue.objects.using(alias).filter(key=state_key("fo", "dead")).first()
    return None if row is None else json.loads(row.value)


def metric(body: str, name: str, **labels) -> float:
    for line in body.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} {labels} not in the scrape")


def test_a_switch_is_published_to_the_fallback_once_and_the_overview_shows_it(
        failover, admin_client, caplog):
    caplog.set_level(logging.WARNING, logger="queueing")
    before = time.time()
    for i in range(40):
        jobs.record.using(connection="fo").delay(f"p{i}")
    state = published(failover)
    assert state["open"] is True and state["to"] == failover
    assert before <= state["since"] <= time.time()
    assert "127.0.0.1:1" in state["error"] and "s3cret" not in state["error"]
    switches = [r for r in caplog.records if "go to" in r.getMessage()]
    assert len(switches) == 1  # logged once, not per job

    [status] = read_all()
    assert status.failing_over and status.waiting == 40 and status.oldest >= 0
    page = admin_client.get("/").content.decode()
    assert "Dispatches on &#x27;fo&#x27; are failing over" in page
    assert "jobs go to &#x27;%s&#x27;" % failover in page
    assert re.search(r'class="failover-waiting">40<', page)
    assert "Failing over since" in page and "s3cret" not in page


def test_a_switch_rolled_back_with_its_request_is_published_by_the_next_dispatch(failover):
    alias = connections.queue_driver(failover).alias
    with pytest.raises(RuntimeError), transaction.atomic(using=alias):
        jobs.record.using(connection="fo").delay("rolled-back")
        raise RuntimeError("the view failed")
    assert published(failover) is None  # went with the transaction
    jobs.record.using(connection="fo").delay("after")
    assert published(failover)["open"] is True


def test_the_close_is_published_when_a_probe_finds_redis_back(settings, dbconn, rclient,
                                                              admin_client):
    proxy = TcpProxy(upstream_unix=urlparse(django_settings.TEST_REDIS_URL).path)
    try:
        with queue_with(settings, near={"driver": "redis", "url": proxy.url, "queues": "*"},
                        fo={"driver": "failover", "connections": ["near", dbconn],
                            "retry_primary_after": 0.5}):
            connections.reset()
            proxy.freeze()  # a dead link: only the dispatch deadline ends the wait
            jobs.record.using(connection="fo").delay("during")
            alias = connections.queue_driver(dbconn).alias
            row = ControlValue.objects.using(alias).get(key=state_key("fo", "near"))
            assert json.loads(row.value)["open"] is True
            proxy.thaw()
            time.sleep(0.6)
            jobs.record.using(connection="fo").delay("after")  # the probe: it answers
            row.refresh_from_db()
            assert json.loads(row.value)["open"] is False
            [status] = read_all()
            assert not status.failing_over and status.waiting == 1  # until the drain
            page = admin_client.get("/").content.decode()
            assert "are failing over" not in page
            assert "1 job dispatched on &#x27;fo&#x27; waits in the fallback" in page
    finally:
        proxy.close()
        connections.reset()
    assert rclient.llen("queues:{default}") == 1


def test_prometheus_has_the_same_numbers_and_answers_them_while_redis_is_away(
        failover, admin_client, settings):
    for i in range(7):
        jobs.record.using(connection="fo").delay(f"m{i}")
    body = admin_client.get("/metrics").content.decode()
    assert metric(body, "horizon_failover_active", connection="fo", skipped="dead") == 1
    assert metric(body, "horizon_failover_waiting_jobs", connection="fo") == 7
    assert metric(body, "horizon_failover_since_timestamp_seconds", connection="fo") > 0
    # 'dead' is a Redis connection the scrape reads too: only the failover numbers answer
    assert metric(body, "horizon_redis_up") == 0
    assert "horizon_jobs_processed" not in body
    # Horizon's own Redis away: the scrape still has the failover numbers
    with override_settings(HORIZON={**settings.HORIZON, "connection": "dead"}):
        connections.reset()
        body = admin_client.get("/metrics").content.decode()
    assert metric(body, "horizon_failover_waiting_jobs", connection="fo") == 7
    assert metric(body, "horizon_redis_up") == 0


def test_the_page_served_while_horizons_redis_is_away_shows_the_failover(
        failover, admin_client, settings):
    for i in range(3):
        jobs.record.using(connection="fo").delay(f"u{i}")
    with override_settings(HORIZON={**settings.HORIZON, "connection": "dead"}):
        connections.reset()
        response = admin_client.get("/")
    page = response.content.decode()
    assert response.status_code == 503 and "Redis is not answering" in page
    assert "are failing over" in page and re.search(r'class="failover-waiting">3<', page)
    assert "s3cret" not in page


def test_the_long_wait_alert_counts_jobs_waiting_in_the_fallback(settings, dbconn, rclient,
                                                                  admin_client):
    with queue_with(settings, fo={"driver": "failover", "connections": ["redis", dbconn]}):
        connections.reset()
        jobs.record.using(connection=dbconn).delay("waits-in-the-fallback")
        body = admin_client.get("/metrics").content.decode()
        assert metric(body, "horizon_redis_up") == 1 and "horizon_jobs_processed" in body
        assert metric(body, "horizon_failover_active", connection="fo") == 0
        assert metric(body, "horizon_failover_waiting_jobs", connection="fo") == 1
        monitor = WaitMonitor({"redis:default": 30}, rclient, Notifier([], None))
        assert monitor.tick(time.time(), force=True) == []  # just dispatched
        [notice] = monitor.tick(time.time() + 120, force=True)
    connections.reset()
    assert notice.kind == "long" and notice.queue == "redis:default" and notice.seconds > 100
    rclient.delete("{horizon}:waits:redis:default")


def test_a_switch_no_process_stands_behind_is_closed_by_the_master_once_redis_answers(
        settings, dbconn, rclient):
    from horizon.supervisor.failover_draining import FailoverDrainer

    with queue_with(settings, fo={"driver": "failover", "connections": ["redis", dbconn], "retry_primary_after": 5}):
        connections.reset()
        alias = connections.queue_driver(dbconn).alias
        stale = {"open": True, "since": time.time() - 60, "checked_at": time.time() - 30,
                 "to": dbconn, "error": "ConnectionError: refused", "by": "gone:1"}
        ControlValue.objects.using(alias).create(key=state_key("fo", "redis"),
                                                 value=json.dumps(stale))
        said = []
        FailoverDrainer(said.append).tick()
        [status] = read_all()
        # a fresh one (a process still probing) is left alone
        fresh = {**stale, "checked_at": time.time()}
        ControlValue.objects.using(alias).filter(key=state_key("fo", "redis")).update(
            value=json.dumps(fresh))
        FailoverDrainer(said.append).tick()
        [still] = read_all()
    connections.reset()
    assert not status.failing_over and still.failing_over
    assert said == ["failover 'fo': no process fails over from 'redis' any more; its "
                    "published switch is closed"]
