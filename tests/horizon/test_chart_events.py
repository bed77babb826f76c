"""Issue 51, item 2: deploys and masters' lives are written as events for the charts by
the processes that act: ``manage.py horizon_terminate`` and ``manage.py queue_restart``
run as real processes, a real master started and terminated; a master that sees its
Redis go away and come back (through a TCP proxy closed and opened again); a Sentinel
switch noticed by two masters. Real Redis."""
import io
import subprocess
import sys
import time

import pytest
import redis

from horizon.configuration.settings import parse
from horizon.primary_switches import PrimarySwitch, PrimaryWatch
from horizon.repositories import events
from horizon.supervisor.master import Master
from tests.conftest import ROOT, manage_command, subprocess_env
from tests.helpers import publish
from tests.tcp_proxy import TcpProxy
from tests.workers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def manage(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run(manage_command(*args), cwd=ROOT, capture_output=True, text=True,
                          env=subprocess_env(), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_horizon_terminate_records_a_terminate_event(rclient):
    publish(rclient)  # a running master "web-1", as the command finds masters
    before = time.time()
    manage("horizon_terminate")
    (event,) = events.recent(rclient)
    assert event.kind == "terminate" and event.title == "Terminate"
    assert "web-1" in event.text and "(cli)" in event.text
    assert before - 1 <= event.at <= time.time()


def test_queue_restart_records_a_restart_event(rclient):
    manage("queue_restart")
    (event,) = events.recent(rclient)
    assert event.kind == "restart" and "queue_restart" in event.text


def test_a_master_records_its_start_and_its_stop(rclient):
    master = subprocess.Popen([sys.executable, str(ROOT / "manage.py"), "horizon"], cwd=ROOT,
                              env=subprocess_env(), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        # a master's start (Django, then its workers spawned) takes a few seconds; 60 s
        # leaves room for a loaded 2-CPU machine
        wait_until(lambda: [e.kind for e in events.recent(rclient)] == ["master_start"],
                   timeout=60, message="the master's start event")
        manage("horizon_terminate", "--wait", "--wait-timeout", "90")
        assert master.wait(timeout=30) == 0
    finally:
        if master.poll() is None:
            master.kill()
            master.wait()
    assert [e.kind for e in events.recent(rclient)] == ["master_stop", "terminate",
                                                         "master_start"]


def proxied(rclient):
    """A TcpProxy in front of the test Redis, and a client through it."""
    kwargs = rclient.connection_pool.connection_kwargs
    if kwargs.get("path"):
        proxy = TcpProxy(upstream_unix=kwargs["path"])
    else:
        proxy = TcpProxy(upstream_tcp=(kwargs.get("host", "127.0.0.1"), kwargs["port"]))
    client = redis.Redis(host="127.0.0.1", port=proxy.port, db=kwargs.get("db", 0),
                         socket_timeout=2, socket_connect_timeout=2)
    return proxy, client


def test_a_master_records_an_outage_of_its_redis_once_it_answers_again(rclient, monkeypatch):
    proxy, client = proxied(rclient)
    monkeypatch.setenv("HORIZON_NAME", "outage-test")
    master = Master(parse({"connection": "redis",
                           "supervisors": {"s1": {"queues": ["default"]}}}), client,
                    stdout=io.StringIO())
    try:
        master.publish()
        assert master.redis_away_since is None
        proxy.close()  # Redis away: connections refused
        began = time.time()
        master.publish()
        master.publish()
        assert master.redis_away_since is not None
        assert events.recent(rclient) == [], "nothing can be written while it is away"
        proxy = TcpProxy(upstream_tcp=proxy.upstream_tcp, upstream_unix=proxy.upstream_unix,
                         port=proxy.port)
        time.sleep(0.5)
        master.publish()
        ended = time.time()
    finally:
        proxy.close()
        client.close()
    (event,) = events.recent(rclient)
    assert event.kind == "outage" and "outage-test" in event.text
    # stored to the millisecond (events.member rounds), hence the 1 ms of slack
    assert began - 3 <= event.at <= event.until <= ended + 0.001  # type: ignore[operator]
    assert master.redis_away_since is None
    master.publish()
    assert len(events.recent(rclient)) == 1, "one outage, one event"


def test_a_sentinel_switch_is_one_event_however_many_masters_notice_it(rclient):
    switched_at = time.time() - 4
    switch = PrimarySwitch("sentinel-conn", "10.0.0.2:6379", "10.0.0.1:6379", switched_at)
    for watch in (PrimaryWatch(print), PrimaryWatch(print)):
        watch.record_event(switch)
        watch.record_event(switch)
    (event,) = events.recent(rclient)
    assert event.kind == "sentinel" and event.at == round(switched_at, 3)
    assert "10.0.0.2:6379" in event.text and "was 10.0.0.1:6379" in event.text
